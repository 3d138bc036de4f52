"""The two tie-calibrated accuracies (MonetBench tau*, VideoAlign "w/ ties") on hand-worked cases,
including the ones where VideoAlign's loop and Deutsch et al.'s search disagree."""

import numpy as np
import pandas as pd
import pytest

from phyprobe.data.manifest import Manifest
from phyprobe.eval import metrics as M
from phyprobe.eval.protocols import evaluate
from phyprobe.eval.report import _table


def test_perfect_model_without_ties_is_1_only_for_deutsch():
    """h = [1, 1], m = [1, 2]: every pair ordered right and no human tie. Deutsch evaluates the
    no-tie state, (C=2 + Thm=0) / 2 = 1; VideoAlign's first state already ties one pair: 1/2."""
    h, m = [1, 1], [1.0, 2.0]
    assert M.tie_calibrated_accuracy_deutsch(h, m) == 1.0
    assert M.tie_calibrated_accuracy(h, m) == 0.5


def test_equal_margins_move_together_in_deutsch():
    """h = [0, 1], m = [0.5, 0.5]. Deutsch: eps=0 -> C=1 (pair 2), pair 1 is a human-only tie: 1/2;
    eps=0.5 -> both model ties, Thm=1, pair 2 is Tm: 1/2. VideoAlign moves pair 1 alone first
    (Thm=1, C=1: 2/2), so its answer depends on which of the equal-|m| pairs comes first."""
    assert M.tie_calibrated_accuracy_deutsch([0, 1], [0.5, 0.5]) == 0.5
    assert M.tie_calibrated_accuracy_deutsch([1, 0], [0.5, 0.5]) == 0.5
    assert M.tie_calibrated_accuracy([0, 1], [0.5, 0.5]) == 1.0
    assert M.tie_calibrated_accuracy([1, 0], [0.5, 0.5]) == 0.5


def test_both_agree_where_the_best_state_ties_a_distinct_prefix():
    """h = [0, 1, -1], m = [0.1, 0.9, -0.4]: tying the smallest margin (the human tie) gives
    Thm=1 + C=2 = 3/3 in both."""
    h, m = [0, 1, -1], [0.1, 0.9, -0.4]
    assert M.tie_calibrated_accuracy_deutsch(h, m) == 1.0 == M.tie_calibrated_accuracy(h, m)


def test_exact_model_ties_count_as_ties_in_the_no_tie_state():
    """m == 0 is a model tie already at eps = 0 (mt-metrics-eval's natural tie): with h = [0, 1],
    m = [0, 2], the state at eps=0 has Thm=1 and C=1: 1."""
    assert M.tie_calibrated_accuracy_deutsch([0, 1], [0.0, 2.0]) == 1.0


def test_deutsch_equals_a_brute_force_search_over_thresholds():
    rng = np.random.default_rng(0)
    for _ in range(50):
        n = int(rng.integers(1, 12))
        h = rng.integers(-1, 2, n).astype(float)
        m = rng.integers(-3, 4, n) / 2.0  # many equal |m| and exact zeros
        best = max((M.suff_stats(h, m, e)["C"] + M.suff_stats(h, m, e)["Thm"]) / n for e in [0.0, *np.abs(m)])
        assert M.tie_calibrated_accuracy_deutsch(h, m) == pytest.approx(best)


def test_protocol_selects_and_reports_the_implementation(tmp_path):
    videos = pd.DataFrame(
        [
            {
                "id": f"v{i}",
                "path": f"v{i}.mp4",
                "source": "t",
                "is_real": False,
                "magnitude": None,
                "anchor": None,
                "split": "test",
                "metadata": {},
            }
            for i in range(4)
        ]
    )
    pairs = pd.DataFrame(
        [
            {
                "a": "v0",
                "b": "v1",
                "label": 1.0,
                "weight": 1.0,
                "source": "t",
                "correspondence": "none",
                "kind": "",
                "split": "test",
            },
            {
                "a": "v2",
                "b": "v3",
                "label": 1.0,
                "weight": 1.0,
                "source": "t",
                "correspondence": "none",
                "kind": "",
                "split": "test",
            },
        ]
    )
    m = Manifest(videos=videos, pairs=pairs, root=tmp_path)
    scores = {"v0": 1.0, "v1": 0.0, "v2": 2.0, "v3": 0.0}  # h = [1, 1], m = [1, 2]
    va = evaluate(m, scores, "monetbench", n_boot=0)
    de = evaluate(m, scores, "monetbench", n_boot=0, tie_calibration="deutsch")
    assert va["tau_star"]["value"] == 0.5 and va["tau_star"]["implementation"] == "videoalign"
    assert de["tau_star"]["value"] == 1.0 and de["tau_star"]["implementation"] == "deutsch"
    assert any("tau_star` (deutsch tie calibration)" in line for line in _table(de))
    with pytest.raises(ValueError, match="tie_calibration"):
        evaluate(m, scores, "monetbench", n_boot=0, tie_calibration="other")
