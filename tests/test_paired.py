"""Paired statistics over shared units (phyprobe.eval.paired): the intervals hold their level, the Holm-corrected
tests keep the family-wise error, and every figure is the one the definitions give."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from phyprobe.eval.metrics import bootstrap_ci
from phyprobe.eval.paired import bootstrap_p, paired_statistics, resample_counts


@pytest.fixture
def no_gc_scan():
    """statsmodels' Holm calls gc.collect() on every call; with the session's objects frozen it scans only new ones."""
    gc.freeze()
    yield
    gc.unfreeze()


def _prompts(rng, n, k, shift):
    """Per-prompt scores as generated videos give them: a shared prompt difficulty (so the systems are correlated,
    the case a paired test is for) plus skewed per-video noise, and a known shift per system."""
    return rng.beta(2, 3, (n, 1)) + rng.gamma(2, 0.1, (n, k)) + np.asarray(shift)


def test_paired_intervals_cover_the_true_difference(no_gc_scan):
    """1,000 repetitions of 200 prompts: the 95 % interval of the difference covers the true 0.03 in 93-97 %."""
    rng = np.random.default_rng(1)
    hits = 0
    reps = 1000
    for r in range(reps):
        res = paired_statistics(_prompts(rng, 200, 2, [0.0, 0.03]), ["a", "b"], n_boot=1000, seed=r, strengths=False)
        row = res.pairs.iloc[0]
        true = -0.03 if row["a"] == "a" else 0.03
        hits += row["low"] <= true <= row["high"]
    assert 0.93 <= hits / reps <= 0.97


def test_holm_keeps_the_family_wise_error_when_all_systems_are_equal(no_gc_scan):
    """Five equal systems (ten pairwise tests) on 200 prompts, 400 repetitions: some test rejects in at most 5 %;
    uncorrected, the same p-values reject far more often (the correction is doing the work)."""
    rng = np.random.default_rng(2)
    any_holm = any_raw = 0
    reps = 400
    for r in range(reps):
        res = paired_statistics(_prompts(rng, 200, 5, 0.0), list("abcde"), n_boot=500, seed=r, strengths=False)
        any_holm += bool(res.pairs["significant"].any())
        any_raw += bool((res.pairs["p"] < 0.05).any())
    assert any_holm / reps <= 0.05
    assert any_raw / reps > 0.15


def test_means_and_intervals_are_the_projects_bootstrap():
    """The per-system interval is bootstrap_ci's over the same resamples: resample_counts draws what
    bootstrap_resamples draws."""
    rng = np.random.default_rng(0)
    v = _prompts(rng, 57, 3, [0.0, 0.1, 0.2])
    res = paired_statistics(v, ["x", "y", "z"], n_boot=500, seed=4)
    for i, name in enumerate("xyz"):
        ci = bootstrap_ci(lambda a: a.mean(axis=1), v[:, i], n_boot=500, seed=4, batched=True)
        row = res.table.set_index("system").loc[name]
        assert row["mean"] == pytest.approx(ci["value"])
        assert row["low"] == pytest.approx(ci["low"]) and row["high"] == pytest.approx(ci["high"])
    counts = np.concatenate(list(resample_counts(57, 500, seed=4)))
    assert counts.shape == (500, 57) and (counts.sum(axis=1) == 57).all()


def test_p_value_agrees_with_the_interval():
    rng = np.random.default_rng(3)
    v = _prompts(rng, 80, 4, [0.0, 0.01, 0.05, 0.08])
    res = paired_statistics(v, list("abcd"), n_boot=2000, seed=0)
    for row in res.pairs.itertuples():
        assert (row.p < 0.05) == (row.low > 0 or row.high < 0)
    assert bootstrap_p(np.zeros((99, 1)))[0] == 1.0  # identical systems


def test_direction_wins_ties_and_strengths():
    """Lower is better for violation scores: the system with the lowest scores ranks first; a tie per unit is half a
    win; Bradley-Terry strengths order the systems as their win rates do."""
    v = np.array([[0.1, 0.2, 0.2], [0.1, 0.3, 0.2], [0.2, 0.3, 0.1], [0.0, 0.5, 0.4]])
    res = paired_statistics(v, ["good", "bad", "mid"], n_boot=200)
    assert list(res.table["system"]) == ["good", "mid", "bad"]
    i = {n: k for k, n in enumerate(res.names)}
    # good vs bad: better on all 4 units; bad vs mid: tie on unit 0, loses units 1, 2, 3
    assert res.wins[i["good"], i["bad"]] == 1.0
    assert res.wins[i["bad"], i["mid"]] == pytest.approx(0.5 / 4)
    assert np.allclose(res.wins + res.wins.T, 1 - np.eye(3))
    assert list(res.table.sort_values("bt", ascending=False)["system"]) == ["good", "mid", "bad"]
    flipped = paired_statistics(-v, ["good", "bad", "mid"], higher_is_better=True, n_boot=200)
    assert list(flipped.table["system"]) == ["good", "mid", "bad"]


def test_rank_intervals_separate_clear_gaps_and_overlap_close_ones():
    rng = np.random.default_rng(5)
    v = _prompts(rng, 300, 4, [0.0, 0.002, 0.3, 0.6])
    t = paired_statistics(v, list("abcd"), n_boot=1000).table.set_index("system")
    assert (t.loc["a", "rank_low"], t.loc["a", "rank_high"]) == (1, 2)
    assert (t.loc["b", "rank_low"], t.loc["b", "rank_high"]) == (1, 2)
    assert (t.loc["c", "rank_low"], t.loc["c", "rank_high"]) == (3, 3)
    assert (t.loc["d", "rank_low"], t.loc["d", "rank_high"]) == (4, 4)


def test_missing_values_are_refused():
    v = np.array([[0.1, np.nan], [0.2, 0.3]])
    with pytest.raises(ValueError, match="finite"):
        paired_statistics(v, ["a", "b"])
