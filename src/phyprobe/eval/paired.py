"""Paired statistics for several systems measured on the same units: generators on shared prompts (the
leaderboard), evaluators on shared benchmark pairs (``phyprobe judge compare``).

Every figure comes from one set of bootstrap resamples of the units, drawn by
:func:`phyprobe.eval.metrics.bootstrap_resamples`, so the systems are resampled together (paired) and every
interval, p-value and rank interval is about the same resamples:

- each system's mean with a percentile interval;
- every pairwise difference of means with a percentile interval and a two-sided p-value,
  ``2 min(P*(d <= 0), P*(d >= 0))`` with the +1 correction, so the interval excludes 0 exactly when p < alpha;
  the family of differences is corrected by Holm (``statsmodels.stats.multitest``);
- win rates per unit (ties half credit) and Bradley-Terry strengths fitted to the per-unit comparisons
  (``choix``), each with an interval;
- rank intervals: the 2.5 and 97.5 percentiles of each system's rank over the resamples ("rank 1-2").

Means, win rates and the comparison counts the Bradley-Terry fit reads are linear in the resample counts, so a
block of resamples is one matrix product; only the Bradley-Terry fit runs once per resample.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from .metrics import bootstrap_resamples

BT_ALPHA = 0.01  # choix's regulariser, in comparisons: keeps a system that never wins finite, negligible otherwise


def resample_counts(n: int, n_boot: int, seed: int = 0) -> Iterator[np.ndarray]:
    """How often each of ``n`` units is drawn in each resample, as (k, n) blocks: the resamples of
    :func:`bootstrap_resamples` (same seed, same draws) in the form a matrix product reads."""
    for block in bootstrap_resamples(n, n_boot, seed):
        k = len(block)
        flat = (block + n * np.arange(k)[:, None]).ravel()
        yield np.bincount(flat, minlength=k * n).reshape(k, n).astype(np.float64)


def unit_wins(values: np.ndarray, higher_is_better: bool, tie_tol: float = 0.0) -> np.ndarray:
    """(n, k, k): 1 where system i beats system j on a unit, 0.5 on a tie (values within ``tie_tol``), 0 where it
    loses; 0 on the diagonal."""
    d = values[:, :, None] - values[:, None, :]  # v_i - v_j
    if not higher_is_better:
        d = -d
    w = np.where(d > tie_tol, 1.0, np.where(d >= -tie_tol, 0.5, 0.0))
    w[:, np.arange(values.shape[1]), np.arange(values.shape[1])] = 0.0
    return w


def bradley_terry(wins: np.ndarray, start: np.ndarray | None = None) -> np.ndarray:
    """Log-strengths (mean 0) from a (k, k) matrix of wins (row beat column; ties counted half to each), fitted by
    ``choix.ilsr_pairwise_dense`` (from ``start``, e.g. the full sample's fit for a resample); nan where the fit
    does not converge."""
    import choix

    try:
        return choix.ilsr_pairwise_dense(wins, alpha=BT_ALPHA, initial_params=start, max_iter=500, tol=1e-6)
    except RuntimeError:
        return np.full(len(wins), np.nan)


def _percentiles(boots: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-nan column gives nan
        lo, hi = np.nanpercentile(boots, [100 * alpha / 2, 100 * (1 - alpha / 2)], axis=0)
    return lo, hi


def bootstrap_p(boot_diffs: np.ndarray) -> np.ndarray:
    """Two-sided percentile-bootstrap p-value of each column: ``2 min((1 + #{d* <= 0}), (1 + #{d* >= 0})) / (B + 1)``,
    capped at 1. Under the normal approximation it is the z-test's p-value, and it is below alpha exactly when the
    percentile interval at level 1 - alpha leaves 0 out."""
    b = len(boot_diffs)
    below = 1 + (boot_diffs <= 0).sum(axis=0)
    above = 1 + (boot_diffs >= 0).sum(axis=0)
    return np.minimum(1.0, 2 * np.minimum(below, above) / (b + 1))


def holm(p: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Holm-adjusted p-values and rejections (``statsmodels.stats.multitest.multipletests``)."""
    import gc

    from statsmodels.stats.multitest import multipletests

    if len(p) == 0:
        return np.zeros(0), np.zeros(0, dtype=bool)
    gc.freeze()  # multipletests calls gc.collect(): 0.2 s a call in a process holding torch, unless nothing is new
    try:
        reject, adjusted, _, _ = multipletests(p, alpha=alpha, method="holm")
    finally:
        gc.unfreeze()
    return adjusted, reject


@dataclass
class PairedResult:
    """The figures of :func:`paired_statistics`; ``table`` has one row per system (best first), ``pairs`` one row
    per pair of systems (a listed before b in ``table``), ``wins[i, j]`` the share of units where system i beats j."""

    names: list[str]
    n_units: int
    higher_is_better: bool
    n_boot: int
    alpha: float
    table: pd.DataFrame
    pairs: pd.DataFrame
    wins: np.ndarray
    summary: str = "mean"

    def to_json(self) -> dict:
        return {
            "summary": self.summary,
            "n_units": self.n_units,
            "higher_is_better": self.higher_is_better,
            "n_boot": self.n_boot,
            "alpha": self.alpha,
            "systems": _records(self.table),
            "pairs": _records(self.pairs),
            "win_matrix": {a: dict(zip(self.names, map(float, row))) for a, row in zip(self.names, self.wins)},
        }


def _records(df: pd.DataFrame) -> list[dict]:
    out = []
    for row in df.to_dict(orient="records"):
        out.append({k: (None if isinstance(v, float) and not np.isfinite(v) else v) for k, v in row.items()})
    return out


SUMMARIES = ("mean", "median")


def paired_statistics(
    values,
    names: Sequence[str],
    higher_is_better: bool = False,
    n_boot: int = 10_000,
    seed: int = 0,
    alpha: float = 0.05,
    strengths: bool = True,
    tie_tol: float = 0.0,
    summary: str = "mean",
) -> PairedResult:
    """Paired figures for ``values``, an (n units, k systems) array with no missing entries (a unit some system
    lacks is the caller's to leave out and report). ``higher_is_better`` says which way "better" points (False for
    violation scores). ``strengths``: fit Bradley-Terry (once per resample; the slowest part). ``tie_tol``: values this
    close count as a tie in win rates and Bradley-Terry (e.g. a scorer's float32 rounding, which moves with the batch a
    video was scored in). ``summary``: what ranks the systems and their pairwise differences, the ``mean`` or the
    ``median`` over units (the lower median, in every resample too), which one unit far out cannot move."""
    if summary not in SUMMARIES:
        raise ValueError(f"summary must be one of {SUMMARIES}, got {summary!r}")
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 2 or v.shape[1] != len(names):
        raise ValueError(f"values must be (units, {len(names)} systems), got shape {v.shape}")
    if not np.isfinite(v).all():
        raise ValueError("values must be finite: leave out the units a system lacks before the paired statistics")
    n, k = v.shape
    if n == 0:
        raise ValueError("no unit is shared by every system: nothing to compare")
    wins_u = unit_wins(v, higher_is_better, tie_tol)  # (n, k, k)
    x = np.concatenate([v, wins_u.reshape(n, k * k)], axis=1)  # every linear statistic, one column each
    point = x.mean(axis=0)
    bt = bradley_terry(point[k:].reshape(k, k) * n) if strengths else None
    start = bt if strengths and np.isfinite(bt).all() else None
    boot_chunks, bt_chunks, median_chunks = [], [], []
    by_value = np.argsort(v, axis=0, kind="stable")  # each system's units in order of value, for its medians
    for counts in resample_counts(n, n_boot, seed):
        sums = counts @ x  # (b, k + k*k)
        boot_chunks.append(sums / n)
        if summary == "median":
            median_chunks.append(_lower_medians(v, by_value, counts))
        if strengths:
            bt_chunks.extend(bradley_terry(s.reshape(k, k), start) for s in sums[:, k:])
    boot = np.concatenate(boot_chunks)
    means, boot_means = point[:k], boot[:, :k]
    if summary == "median":
        medians, boot_medians = _lower_medians(v, by_value, np.ones((1, n)))[0], np.concatenate(median_chunks)
    wins = point[k:].reshape(k, k)
    boot_wins = boot[:, k:].reshape(-1, k, k)
    win_rate = wins.sum(axis=1) / max(k - 1, 1)
    boot_win_rate = boot_wins.sum(axis=2) / max(k - 1, 1)

    centre, boot_centre = (medians, boot_medians) if summary == "median" else (means, boot_means)
    sign = -1.0 if higher_is_better else 1.0  # rank 1 = best
    ranks = stats.rankdata(sign * centre, method="min")
    boot_ranks = stats.rankdata(sign * boot_centre, method="min", axis=1)
    lo, hi = _percentiles(boot_means, alpha)
    wlo, whi = _percentiles(boot_win_rate, alpha)
    rlo, rhi = np.percentile(boot_ranks, [100 * alpha / 2, 100 * (1 - alpha / 2)], axis=0)
    table = pd.DataFrame(
        {
            "system": list(names),
            "mean": means,
            "low": lo,
            "high": hi,
            "rank": ranks.astype(int),
            "rank_low": np.floor(rlo).astype(int),
            "rank_high": np.ceil(rhi).astype(int),
            "win_rate": win_rate,
            "win_low": wlo,
            "win_high": whi,
        }
    )
    if summary == "median":
        mlo, mhi = _percentiles(boot_medians, alpha)
        table["median"], table["median_low"], table["median_high"] = medians, mlo, mhi
    if strengths:
        blo, bhi = _percentiles(np.asarray(bt_chunks), alpha)
        table["bt"], table["bt_low"], table["bt_high"] = bt, blo, bhi
    order = np.lexsort((-win_rate, ranks))
    table = table.iloc[order].reset_index(drop=True)

    rows = []
    for ii, i in enumerate(order):
        for j in order[ii + 1 :]:
            d = boot_centre[:, i] - boot_centre[:, j]
            rows.append((names[i], names[j], centre[i] - centre[j], *_percentiles(d[:, None], alpha), d, wins[i, j]))
    p = bootstrap_p(np.stack([r[5] for r in rows], axis=1)) if rows else np.zeros(0)
    p_holm, reject = holm(p, alpha)
    pairs = pd.DataFrame(
        {
            "a": [r[0] for r in rows],
            "b": [r[1] for r in rows],
            "diff": [r[2] for r in rows],
            "low": [float(r[3][0]) for r in rows],
            "high": [float(r[4][0]) for r in rows],
            "p": p,
            "p_holm": p_holm,
            "significant": reject,
            "a_wins": [r[6] for r in rows],
        }
    )
    return PairedResult(list(names), n, higher_is_better, n_boot, alpha, table, pairs, wins, summary)


def _lower_medians(v: np.ndarray, order: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """(b, k): each system's lower median over units drawn ``counts`` (b, n) times, from ``v`` (n, k) and its
    per-system sort order: the first value, in order, at which half the draws are reached."""
    n = v.shape[0]
    out = np.empty((counts.shape[0], v.shape[1]))
    for j in range(v.shape[1]):
        reached = np.cumsum(counts[:, order[:, j]], axis=1) >= n / 2
        out[:, j] = v[order[:, j], j][reached.argmax(axis=1)]
    return out
