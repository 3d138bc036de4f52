"""Every number the evaluation reports, each with its tie rule stated, plus the bootstrap that puts an
interval on it.

Conventions shared by all functions here:

- scores are *violation* scores: higher = more physically violating (flip external evaluators first,
  see ``phyprobe.eval.external``);
- a pair label is P(a more violating than b) as in the manifest; 0.5 is a human tie;
- a metric that is undefined on its input (no pairs, one class, constant scores) returns ``nan``
  rather than raising, so a bootstrap resample that happens to be degenerate is simply left out.

Where a library computes the figure (``scipy.stats``) it is used as is; the benchmark-specific
accuracies (VideoAlign / MonetBench tie calibration, PID's F1 with its 1e-7 terms) are written out,
because no library has them, and so is AUROC, from ``scipy.stats.rankdata``: ``sklearn.metrics``' version
gives the same figure (the tests compare them) at 13-22 times the cost per bootstrap resample.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping

import numpy as np
from scipy import stats

# ---------------------------------------------------------------------------------------------
# pairwise accuracy


def pair_credit(score_a, score_b, label, tie_credit: float = 0.5) -> np.ndarray:
    """Per ordered pair, the credit :func:`pairwise_accuracy` averages: 1 where the score order agrees with
    the human order, ``tie_credit`` at an exact model tie, 0 otherwise. Pairs labelled 0.5 are left out."""
    sa, sb, y = (np.asarray(x, dtype=float) for x in (score_a, score_b, label))
    keep = y != 0.5
    d = (sa - sb)[keep] * np.sign(y[keep] - 0.5)
    return np.where(d > 0, 1.0, np.where(d == 0, tie_credit, 0.0))


def pairwise_accuracy(score_a, score_b, label, tie_credit: float = 0.5) -> float:
    """Share of pairs whose score order agrees with the human order.

    Pairs labelled exactly 0.5 carry no order and are skipped (use the VideoAlign / MonetBench
    tie-calibrated accuracy to score them). An exact model tie (``s_a == s_b``) on an ordered pair
    earns ``tie_credit``: 0.5 by default, so a constant scorer lands at chance instead of at 0 %
    (VideoAlign's convention, ``accuracy_without_ties``) or 100 %. Pass 0.0 to get the strict
    ``mean[s(violating) > s(other)]`` that ImplausiBench-style reports use.
    """
    credit = pair_credit(score_a, score_b, label, tie_credit)
    return float(np.mean(credit)) if len(credit) else float("nan")


# ---------------------------------------------------------------------------------------------
# VideoAlign / MonetBench (docs/datasets/videogen_rewardbench.md, docs/datasets/monetbench.md)


def human_preference(label) -> np.ndarray:
    """Manifest label -> VideoAlign ``h``: +1 when a is more violating, -1 when b is, 0 for a tie.

    With ``m = s_a - s_b`` the sign convention of ``h`` and ``m`` agrees, so ``h * m > 0`` means the
    model orders the pair like the humans, exactly as ``reward_A - reward_B`` against A/B/same.
    """
    return np.sign(np.asarray(label, dtype=float) - 0.5)


def suff_stats(h, m, eps: float) -> dict[str, int]:
    """Deutsch et al. (2023) contingency counts at model-tie threshold ``eps`` (docs/datasets/videogen_rewardbench.md).

    Thm: both tie (h == 0, |m| <= eps); Th: human tie only; Tm: model tie only; C: same order;
    D: everything else — including an exact model tie ``m == 0`` when ``eps < 0``.
    """
    h, m = np.asarray(h, dtype=float), np.asarray(m, dtype=float)
    htie, mtie = h == 0, np.abs(m) <= eps
    return {
        "C": int(np.sum(~htie & ~mtie & (h * m > 0))),
        "D": int(np.sum(~htie & ~mtie & ~(h * m > 0))),
        "Th": int(np.sum(htie & ~mtie)),
        "Tm": int(np.sum(~htie & mtie)),
        "Thm": int(np.sum(htie & mtie)),
    }


def accuracy_without_ties(h, m) -> float:
    """VideoAlign "w/o ties" and MonetBench diff** (docs/datasets/videogen_rewardbench.md, docs/datasets/monetbench.md): C / (C + D) over pairs
    with a human preference; an exact model tie counts as D (``suff_stats(h, m, -1)``)."""
    s = suff_stats(h, m, -1.0)
    n = s["C"] + s["D"]
    return s["C"] / n if n else float("nan")


def tie_calibrated_accuracy(h, m) -> float:
    """VideoAlign "w/ ties" and MonetBench tau* (Deutsch et al. 2023, Alg. 1; docs/datasets/videogen_rewardbench.md).

    Replicates ``calc_accuracy_with_ties`` of KwaiVGI/VideoAlign exactly: pairs are stable-sorted by
    |m|, then moved into the model-tie column *one at a time* (pairs with equal |m| are not moved
    together), and after each move acc = (C + Thm) / N is evaluated; the result is the maximum of these
    N prefix states. The state with no model tie at all is never evaluated. The reference loop only
    ever adds the moved pair to the tie column, so prefix k has the first k sorted pairs as model ties
    and the rest classified as at eps = -1; this is that loop written with cumulative sums.
    """
    h, m = np.asarray(h, dtype=float), np.asarray(m, dtype=float)
    n = len(h)
    if n == 0:
        return float("nan")
    order = np.argsort(np.abs(m), kind="stable")
    h, m = h[order], m[order]
    correct = ((h != 0) & (h * m > 0)).astype(int)
    both_tie = (h == 0).astype(int)
    # after moving the first k pairs (k = 1..n): C among pairs k..n-1, Thm among pairs 0..k-1
    c_rest = np.sum(correct) - np.cumsum(correct)
    thm = np.cumsum(both_tie)
    return float(np.max((c_rest + thm) / n))


def tie_calibrated_accuracy_deutsch(h, m) -> float:
    """Tie-calibrated accuracy as Deutsch et al. (2023) define it (google-research/mt-metrics-eval,
    ``tau_optimization`` with ``acc_23``): the maximum of acc = (C + Thm) / N over the model-tie
    thresholds eps = 0 (no tie added: only exact model ties m == 0) and every distinct |m|, all
    pairs with |m| <= eps being model ties together.

    Differs from :func:`tie_calibrated_accuracy` (VideoAlign's loop) in two ways: the no-tie state
    is a candidate, and pairs with equal |m| always change side together, so the result does not
    depend on the order of the pairs.
    """
    h, m = np.asarray(h, dtype=float), np.asarray(m, dtype=float)
    n = len(h)
    if n == 0:
        return float("nan")
    a = np.abs(m)
    order = np.argsort(a, kind="stable")
    a, h, m = a[order], h[order], m[order]
    correct = ((h != 0) & (h * m > 0)).astype(int)
    both_tie = (h == 0).astype(int)
    # thresholds: 0 and each distinct |m|; the model ties at eps are the sorted prefix a <= eps
    eps = np.unique(np.concatenate([[0.0], a]))
    k = np.searchsorted(a, eps, side="right")  # number of model ties at each eps
    c_cum = np.concatenate([[0], np.cumsum(correct)])
    thm_cum = np.concatenate([[0], np.cumsum(both_tie)])
    acc = (c_cum[-1] - c_cum[k] + thm_cum[k]) / n
    return float(np.max(acc))


TIE_CALIBRATIONS = {"videoalign": tie_calibrated_accuracy, "deutsch": tie_calibrated_accuracy_deutsch}


# ---------------------------------------------------------------------------------------------
# correlations, AUROC, PID


def _correlation(fn, x, y) -> float:
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(x) < 2:
        return float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stats.ConstantInputWarning)
        return float(fn(x, y).statistic)


def spearman(x, y) -> float:
    """``scipy.stats.spearmanr`` (average ranks for ties); reported x1, not the x100 of VideoScore2."""
    return _correlation(stats.spearmanr, x, y)


def pearson(x, y) -> float:
    """``scipy.stats.pearsonr``; nan for constant input."""
    return _correlation(stats.pearsonr, x, y)


def kendall(x, y) -> float:
    """``scipy.stats.kendalltau`` tau-b, which corrects for ties in either variable."""
    return _correlation(stats.kendalltau, x, y)


def auroc(is_violating, score) -> float:
    """Area under the ROC curve with violating videos as the positive class; a score tie between a
    positive and a negative counts 0.5. nan when only one class is present.

    Computed as the Mann-Whitney U statistic from average ranks, which equals
    ``sklearn.metrics.roc_auc_score`` (tests/test_metrics.py checks it does) at a fraction of its cost:
    every benchmark bootstraps it a thousand times, and sklearn's input validation made AUROC most of a
    run's evaluation time (``python bench/bench_eval.py``)."""
    y = np.asarray(is_violating).astype(bool)
    n_pos = int(y.sum())
    n_neg = len(y) - n_pos
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    ranks = stats.rankdata(np.asarray(score, dtype=float))
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def auroc_batched(is_violating, score) -> np.ndarray:
    """:func:`auroc` of each row of (k, n) arrays at once (for ``bootstrap_ci(..., batched=True)``): the same
    ranks and sums row by row, so the same figures (ranks are multiples of 0.5: their sums are exact)."""
    y = np.asarray(is_violating).astype(bool)
    n_pos = y.sum(axis=1)
    n_neg = y.shape[1] - n_pos
    ranks = stats.rankdata(np.asarray(score, dtype=float), axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = ((ranks * y).sum(axis=1) - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)
    return np.where((n_pos == 0) | (n_neg == 0), np.nan, out)


def pid_metrics(is_plausible, score, threshold: float = 0.5) -> dict[str, float]:
    """PhyDetEx's binary figures (docs/datasets/pid.md) from a violation score and a threshold.

    A video is *called plausible* iff ``score < threshold`` (a score exactly at the threshold is
    called implausible). F1 takes plausible as the positive class with the official 1e-7 terms:
    TP = correct plausible, FN = N_pos - TP, FP = implausible videos called plausible.
    """
    pos = np.asarray(is_plausible, dtype=bool)
    called_pos = np.asarray(score, dtype=float) < threshold
    n_pos, n_neg = int(pos.sum()), int((~pos).sum())
    tp = int(np.sum(pos & called_pos))
    tn = int(np.sum(~pos & ~called_pos))
    fn, fp = n_pos - tp, n_neg - tn
    p = tp / (tp + fp + 1e-7)
    r = tp / (tp + fn + 1e-7)
    return {
        "acc_real": tp / n_pos if n_pos else float("nan"),
        "acc_implausible": tn / n_neg if n_neg else float("nan"),
        "accuracy": (tp + tn) / (n_pos + n_neg) if n_pos + n_neg else float("nan"),
        "precision": p,
        "recall": r,
        "f1": 2 * p * r / (p + r + 1e-7),
    }


# ---------------------------------------------------------------------------------------------
# score range


PERCENTILES = (0, 1, 5, 25, 50, 75, 95, 99, 100)


def score_range(raw_scores) -> dict[str, float]:
    """Where raw (unclipped) scores fall: percentiles and the share outside [0, 1].

    Reported because clip(s, 0, 1) hides exactly the failure the paper's ablations show — without
    L_mag or L_cal the range explodes while ranking looks fine.
    """
    s = np.asarray(raw_scores, dtype=float)
    if len(s) == 0:
        return {
            **{f"p{q}": float("nan") for q in PERCENTILES},
            "share_below_0": float("nan"),
            "share_above_1": float("nan"),
            "share_outside_01": float("nan"),
        }
    out = {f"p{q}": float(v) for q, v in zip(PERCENTILES, np.percentile(s, PERCENTILES))}
    out["share_below_0"] = float(np.mean(s < 0))
    out["share_above_1"] = float(np.mean(s > 1))
    out["share_outside_01"] = float(np.mean((s < 0) | (s > 1)))
    return out


# ---------------------------------------------------------------------------------------------
# bootstrap


def _json_float(x: float) -> float | None:
    return None if x is None or not np.isfinite(x) else float(x)


def bootstrap_resamples(n: int, n_boot: int, seed: int = 0, max_entries: int = 4_000_000):
    """The row indices of ``n_boot`` resamples of ``n`` rows, as (k, n) blocks of at most ``max_entries``
    indices. One generator draws them in one order, so blocked and row-by-row use see the same resamples."""
    rng = np.random.default_rng(seed)
    per_block = max(1, max_entries // max(n, 1))
    for start in range(0, n_boot, per_block):
        yield rng.integers(0, n, size=(min(per_block, n_boot - start), n))


def bootstrap_ci(
    fn: Callable[..., float | Mapping[str, float]],
    *arrays,
    n_boot: int = 1000,
    seed: int = 0,
    alpha: float = 0.05,
    batched: bool = False,
) -> dict:
    """Percentile bootstrap interval for ``fn(*arrays)``, resampling the rows of all arrays together.

    A row is the unit the benchmark samples: a pair for pairwise metrics, a video for correlations,
    AUROC and score statistics — so the caller passes per-pair or per-video arrays accordingly.
    Returns ``{value, low, high, n}`` (``None`` where undefined, so the result is JSON-able); if ``fn``
    returns a mapping of several figures computed from the same rows, returns one such dict per key,
    all from the same resamples. Degenerate resamples (``fn`` gives nan) are left out of the
    percentiles.

    ``batched=True``: ``fn`` takes a block of resamples stacked on a leading axis, (k, n) arrays, and
    returns one value per resample (e.g. ``lambda v: v.mean(axis=1)``, :func:`auroc_batched`). The
    resamples and figures are those of the row-by-row call; only the Python call per resample goes,
    which is most of an evaluation's time (``python bench/bench_eval.py``).
    """
    arrays = [np.asarray(a) for a in arrays]
    n = len(arrays[0]) if arrays else 0
    if any(len(a) != n for a in arrays):
        raise ValueError(f"bootstrap_ci: arrays differ in length: {[len(a) for a in arrays]}")
    if batched:  # a batched fn gives one figure, never a mapping
        value = float(fn(*(a[None] for a in arrays))[0]) if n else float("nan")
    else:  # every metric here accepts empty input, so the keys are known even then
        value = fn(*arrays)
    keys = list(value) if isinstance(value, Mapping) else None
    samples: list = []
    for block in bootstrap_resamples(n, n_boot, seed) if n else ():
        if batched:
            samples.extend(np.asarray(fn(*(a[block] for a in arrays)), dtype=float).tolist())
        else:
            samples.extend(fn(*(a[idx] for a in arrays)) for idx in block)

    def summarise(v: float, boots: list[float]) -> dict:
        b = np.asarray(boots, dtype=float)
        b = b[np.isfinite(b)]
        lo, hi = np.percentile(b, [100 * alpha / 2, 100 * (1 - alpha / 2)]) if len(b) else (np.nan, np.nan)
        return {"value": _json_float(v) if n else None, "low": _json_float(lo), "high": _json_float(hi), "n": int(n)}

    if keys is None:
        return summarise(value, samples)
    return {k: summarise(value[k], [s[k] for s in samples]) for k in keys}
