"""Every metric against scipy / scikit-learn or a hand-worked case, with one case per tie rule that
an off-by-one (< vs <=, ties moved together, ties counted as C) would change."""

import math

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import f1_score, roc_auc_score

from phyprobe.eval import metrics as M


def reference_calc_accuracy_with_ties(h, m):
    """KwaiVGI/VideoAlign ``calc_accuracy.py`` (formats.md §5.1), transcribed loop for loop."""
    stats_ = dict(zip(("C", "D", "Th", "Tm", "Thm"), M.suff_stats(h, m, -1).values()))
    tau_star, eps = float("-inf"), -1
    for hi, mi in sorted(zip(h, m), key=lambda x: abs(x[1])):
        if hi == 0 and abs(mi) < eps:
            stats_["Thm"] -= 1
        elif hi == 0:
            stats_["Th"] -= 1
        elif abs(mi) < eps:
            stats_["Tm"] -= 1
        elif hi * mi > 0:
            stats_["C"] -= 1
        else:
            stats_["D"] -= 1
        eps = abs(mi)
        if hi == 0 and abs(mi) <= eps:
            stats_["Thm"] += 1
        elif hi == 0:
            stats_["Th"] += 1
        elif abs(mi) <= eps:
            stats_["Tm"] += 1
        elif hi * mi > 0:
            stats_["C"] += 1
        else:
            stats_["D"] += 1
        tau_star = max(tau_star, (stats_["C"] + stats_["Thm"]) / sum(stats_.values()))
    return tau_star


# --- pairwise accuracy ----------------------------------------------------------------------


def test_pairwise_accuracy_hand_cases():
    # a more violating (label 1) and scored higher; b more violating (label 0) and scored higher; wrong
    assert M.pairwise_accuracy([0.9, 0.1, 0.2], [0.1, 0.8, 0.7], [1, 0, 1]) == pytest.approx(2 / 3)


def test_pairwise_accuracy_exact_score_tie_counts_half():
    assert M.pairwise_accuracy([0.5, 0.9], [0.5, 0.1], [1, 1]) == 0.75
    assert M.pairwise_accuracy([0.5, 0.9], [0.5, 0.1], [1, 1], tie_credit=0.0) == 0.5
    assert M.pairwise_accuracy([0.3] * 4, [0.3] * 4, [1, 0, 1, 0]) == 0.5  # constant scorer = chance


def test_pairwise_accuracy_skips_label_ties():
    assert M.pairwise_accuracy([0.9, 0.0], [0.1, 1.0], [1, 0.5]) == 1.0
    assert math.isnan(M.pairwise_accuracy([0.9], [0.1], [0.5]))
    # a soft label just off 0.5 still has an order
    assert M.pairwise_accuracy([0.9], [0.1], [0.49]) == 0.0


# --- VideoAlign / MonetBench ------------------------------------------------------------------


def test_suff_stats_hand_case_and_threshold_is_inclusive():
    h = [1, -1, 0, 0, 1, 1]
    m = [0.3, 0.3, 0.1, 0.5, 0.1, 0.0]
    assert M.suff_stats(h, m, -1) == {"C": 2, "D": 2, "Th": 2, "Tm": 0, "Thm": 0}  # m == 0 -> D
    # |m| <= eps: 0.1 is a model tie at eps = 0.1
    assert M.suff_stats(h, m, 0.1) == {"C": 1, "D": 1, "Th": 1, "Tm": 2, "Thm": 1}


def test_without_ties_counts_model_exact_tie_as_discordant():
    h = [1, 1, -1, 0]
    m = [0.2, 0.0, -0.4, 0.3]
    # pairs with a human preference: C, D (m == 0), C -> 2/3; the human tie is ignored
    assert M.accuracy_without_ties(h, m) == pytest.approx(2 / 3)
    assert math.isnan(M.accuracy_without_ties([0, 0], [1, 2]))


def test_with_ties_moves_equal_abs_m_pairs_one_at_a_time():
    # all |m| equal. Exact loop: prefixes give 2/3, 3/3, 2/3 -> 1.0.
    # Moving equal-|m| pairs together would give max(no-tie 1/3, all-tie 2/3) = 2/3.
    assert M.tie_calibrated_accuracy([0, 0, 1], [0.1, -0.1, 0.1]) == 1.0
    # stable order matters: the human-preferred pair first makes the prefixes 0, 1/3, 2/3
    assert M.tie_calibrated_accuracy([1, 0, 0], [0.1, 0.1, -0.1]) == pytest.approx(2 / 3)


def test_with_ties_never_evaluates_the_no_model_tie_state():
    # no-tie state would be 2/2; the loop's first state already ties the smallest |m|
    assert M.tie_calibrated_accuracy([1, 1], [1.0, 2.0]) == 0.5


def test_with_ties_credits_both_tie_and_uses_all_pairs_as_denominator():
    h = [0, 1, -1, 1]
    m = [0.0, 0.5, -0.7, -0.2]
    # sorted |m|: 0.0(h0), 0.2(D), 0.5(C), 0.7(C); k=1: Thm 1 + C 2 = 3/4 is the best prefix
    assert M.tie_calibrated_accuracy(h, m) == 0.75


@pytest.mark.parametrize("seed", range(5))
def test_with_ties_matches_reference_loop_on_tied_data(seed):
    rng = np.random.default_rng(seed)
    n = 60
    h = rng.choice([-1, 0, 1], size=n).astype(float)
    m = rng.choice([-0.2, -0.1, 0.0, 0.1, 0.2, 0.3], size=n)
    assert M.tie_calibrated_accuracy(h, m) == pytest.approx(reference_calc_accuracy_with_ties(list(h), list(m)))


def test_monetbench_tie_labels_count_in_tau_star_and_drop_in_diff():
    label = np.array([1.0, 0.0, 0.5, 0.5])  # video1 more violating, video2 more violating, tie, tie
    sa, sb = np.array([0.9, 0.2, 0.40, 0.7]), np.array([0.1, 0.3, 0.41, 0.1])
    h, m = M.human_preference(label), sa - sb
    assert list(h) == [1, -1, 0, 0]
    # |m| sorted: 0.01 (tie, h0), 0.1 (C), 0.6 (h0), 0.8 (C)
    # k=1: Thm1 + C2 = 3/4; k=2: 1+1; k=3: 2+1 = 3/4; k=4: 2/4 -> 0.75
    assert M.tie_calibrated_accuracy(h, m) == 0.75
    assert M.accuracy_without_ties(h[h != 0], m[h != 0]) == 1.0


# --- correlations, AUROC, PID ------------------------------------------------------------------


def test_correlations_match_scipy():
    rng = np.random.default_rng(0)
    x = rng.integers(1, 6, 40).astype(float)  # 1-5 ratings: many ties
    y = x + rng.normal(0, 1, 40)
    assert M.spearman(x, y) == pytest.approx(stats.spearmanr(x, y).statistic)
    assert M.pearson(x, y) == pytest.approx(stats.pearsonr(x, y).statistic)
    assert M.kendall(x, y) == pytest.approx(stats.kendalltau(x, y).statistic)


def test_kendall_is_tau_b_with_ties_by_hand():
    # concordant 2, discordant 0, one tie in y: (2 - 0) / sqrt(3 * 2)
    assert M.kendall([1, 2, 3], [1, 1, 2]) == pytest.approx(2 / math.sqrt(6))
    # spearman with average ranks: ranks y = [1.5, 1.5, 3]
    assert M.spearman([1, 2, 3], [1, 1, 2]) == pytest.approx(stats.pearsonr([1, 2, 3], [1.5, 1.5, 3]).statistic)


def test_correlations_nan_on_degenerate_input():
    assert math.isnan(M.spearman([1, 2, 3], [2, 2, 2]))
    assert math.isnan(M.pearson([1], [1]))


def test_auroc_matches_sklearn_and_counts_score_ties_half():
    y, s = [0, 0, 1, 1], [0.2, 0.5, 0.5, 0.9]
    assert M.auroc(y, s) == 0.875  # (1 + 0.5 + 2) / 4
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 50)
    s = rng.normal(size=50).round(1)
    assert M.auroc(y, s) == pytest.approx(roc_auc_score(y, s))
    assert math.isnan(M.auroc([1, 1], [0.1, 0.2]))
    assert math.isnan(M.auroc([], []))


@pytest.mark.parametrize("n", [2, 7, 200])
def test_auroc_equals_sklearn_on_heavily_tied_scores_and_boolean_labels(n):
    rng = np.random.default_rng(n)
    for _ in range(20):
        y = rng.random(n) < rng.uniform(0.1, 0.9)
        if y.all() or not y.any():
            continue
        s = rng.integers(0, 4, n) / 3  # four distinct values: most comparisons are ties
        assert M.auroc(y, s) == pytest.approx(roc_auc_score(y.astype(int), s), abs=1e-12)
        assert M.auroc(list(y.astype(int)), list(s)) == M.auroc(y, s)


def test_pid_metrics_hand_case_and_threshold_tie():
    plausible = [True, True, True, False, False]
    score = [0.1, 0.5, 0.7, 0.9, 0.3]  # 0.5 == threshold -> called implausible
    r = M.pid_metrics(plausible, score, threshold=0.5)
    assert r["acc_real"] == pytest.approx(1 / 3)
    assert r["acc_implausible"] == pytest.approx(1 / 2)
    assert r["accuracy"] == pytest.approx(2 / 5)
    tp, fp, fn = 1, 1, 2
    p, rc = tp / (tp + fp + 1e-7), tp / (tp + fn + 1e-7)
    assert r["precision"] == p and r["recall"] == rc
    assert r["f1"] == 2 * p * rc / (p + rc + 1e-7)
    pred = np.array(score) < 0.5
    assert r["f1"] == pytest.approx(f1_score(plausible, pred), abs=1e-6)


def test_pid_metrics_without_any_called_positive():
    r = M.pid_metrics([True, False], [0.9, 0.9])
    assert r["precision"] == 0.0 and r["f1"] == 0.0 and r["acc_implausible"] == 1.0


# --- score range ---------------------------------------------------------------------------


def test_score_range_boundaries_are_inside():
    s = np.array([0.0, 1.0, -0.01, 1.01, 0.5])
    r = M.score_range(s)
    assert r["share_below_0"] == 0.2 and r["share_above_1"] == 0.2 and r["share_outside_01"] == 0.4
    assert r["p50"] == 0.5 and r["p0"] == -0.01 and r["p100"] == 1.01
    assert r["p25"] == pytest.approx(np.percentile(s, 25))
    assert math.isnan(M.score_range([])["p50"])


# --- bootstrap -----------------------------------------------------------------------------


def test_bootstrap_ci_value_interval_and_determinism():
    rng = np.random.default_rng(0)
    x = rng.normal(1.0, 1.0, 400)
    r = M.bootstrap_ci(np.mean, x, n_boot=500, seed=3)
    assert r["value"] == pytest.approx(x.mean()) and r["n"] == 400
    assert r["low"] < r["value"] < r["high"]
    se = x.std(ddof=1) / np.sqrt(len(x))
    assert r["high"] - r["low"] == pytest.approx(2 * 1.96 * se, rel=0.2)
    assert M.bootstrap_ci(np.mean, x, n_boot=500, seed=3) == r


def test_bootstrap_ci_resamples_rows_of_all_arrays_together():
    a = np.arange(50.0)
    r = M.bootstrap_ci(lambda x, y: float(np.mean(x == y)), a, a.copy(), n_boot=100)
    assert r["low"] == r["high"] == 1.0


def test_bootstrap_ci_mapping_and_empty_and_degenerate():
    r = M.bootstrap_ci(M.score_range, np.linspace(-1, 2, 31), n_boot=50)
    assert set(r) >= {"p50", "share_outside_01"} and r["p50"]["value"] == pytest.approx(0.5)
    empty = M.bootstrap_ci(M.score_range, np.array([]), n_boot=50)
    assert empty["p50"] == {"value": None, "low": None, "high": None, "n": 0}
    # one class in many resamples: those are left out, the interval still exists
    r = M.bootstrap_ci(M.auroc, np.array([1, 0, 0, 0, 0, 0]), np.array([0.9, 0.1, 0.2, 0.3, 0.4, 0.5]), n_boot=200)
    assert r["value"] == 1.0 and r["low"] == 1.0
    with pytest.raises(ValueError, match="differ in length"):
        M.bootstrap_ci(M.auroc, [1, 0], [0.1])


@pytest.mark.parametrize(
    "row_fn, batched_fn, arrays",
    [
        (np.mean, lambda v: v.mean(axis=1), (np.random.default_rng(1).normal(size=301),)),
        (np.median, lambda v: np.median(v, axis=1), (np.random.default_rng(2).normal(size=300),)),
        # rounded scores tie across classes; seven rows make one-class resamples common (nan, left out)
        (M.auroc, M.auroc_batched, (np.array([1, 0, 0, 1, 0, 0, 0]), np.array([0.2, 0.1, 0.2, 0.5, 0.5, 0.0, 0.3]))),
        (
            M.auroc,
            M.auroc_batched,
            (np.random.default_rng(3).random(500) < 0.3, np.random.default_rng(4).normal(size=500).round(1)),
        ),
    ],
)
def test_batched_bootstrap_gives_the_row_by_row_figures(row_fn, batched_fn, arrays):
    """A batched statistic sees the same resamples, so every figure equals the row-by-row call's exactly;
    blocks smaller than n_boot (max_entries) draw them in the same order."""
    rows = M.bootstrap_ci(row_fn, *arrays, n_boot=400, seed=5)
    assert M.bootstrap_ci(batched_fn, *arrays, n_boot=400, seed=5, batched=True) == rows
    blocks = list(M.bootstrap_resamples(len(arrays[0]), 400, seed=5, max_entries=7 * len(arrays[0])))
    assert len(blocks) > 1 and np.array_equal(
        np.concatenate(blocks), np.concatenate(list(M.bootstrap_resamples(len(arrays[0]), 400, seed=5)))
    )
    assert M.bootstrap_ci(batched_fn, *(a[:0] for a in arrays), n_boot=50, batched=True) == {
        "value": None,
        "low": None,
        "high": None,
        "n": 0,
    }


def test_pairwise_accuracy_is_the_mean_of_pair_credits():
    sa, sb = np.array([0.9, 0.2, 0.5, 0.4, 0.1]), np.array([0.1, 0.3, 0.5, 0.4, 0.0])
    y = np.array([1.0, 1.0, 1.0, 0.5, 0.0])  # a right, a wrong, a tie, an unordered pair (left out), a wrong
    assert M.pair_credit(sa, sb, y).tolist() == [1.0, 0.0, 0.5, 0.0]
    assert M.pairwise_accuracy(sa, sb, y) == pytest.approx(1.5 / 4)
    assert math.isnan(M.pairwise_accuracy(sa[3:4], sb[3:4], y[3:4]))
