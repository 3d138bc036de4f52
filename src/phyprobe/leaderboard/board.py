"""The leaderboard's figures: per evaluator, paired statistics over the prompts every entry has, breakdowns by
group field, the quality-confound check and, against a baseline, the regression gate.

An *entry* is a generator, or one checkpoint of it (``generator@checkpoint``). Statistics are paired on the
prompts every entry answers; a prompt some entry lacks (no video, a video that failed to score, a judge that
gave no score) is reported for that entry and left out of the comparisons, never averaged over.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from ..eval.paired import paired_statistics, unit_wins
from .evaluators import Column

GROUP_FIELDS = ("discipline", "domain", "subject", "dimension", "category", "task", "paradigm", "difficulty")
CALIPER_SD = 0.25  # clips within this many pooled standard deviations of the quality proxy count as matched
TIE_TOL = 1e-6  # scores this close are a tie: a float32 scorer's output moves by ~1e-7 with the batch it was in
MATCHED_SHARE = 0.5  # below this share of quality-matched comparisons, an entry's place is flagged as a quality effect


def score_matrix(column: Column, gens: pd.DataFrame, entries: list[str]) -> pd.DataFrame:
    """prompts x entries, NaN where an entry has no score for a prompt."""
    df = pd.DataFrame({"entry": gens["entry"], "prompt_id": gens["prompt_id"], "id": gens["id"]})
    df["score"] = [column.scores.get(v, np.nan) for v in df["id"]]
    return df.pivot(index="prompt_id", columns="entry", values="score").reindex(columns=entries)


def coverage(matrix: pd.DataFrame, column: Column, gens: pd.DataFrame) -> dict[str, dict]:
    """Per entry: prompts scored, and the prompts missing (no video for it, or no score) with why."""
    why = {(e, p): column.failed.get(v, "no score") for e, p, v in zip(gens["entry"], gens["prompt_id"], gens["id"])}
    out = {}
    for e in matrix.columns:
        miss = [p for p in matrix.index[matrix[e].isna()]]
        out[e] = {
            "prompts": int(matrix[e].notna().sum()),
            "missing": len(miss),
            "missing_prompts": {p: why.get((e, p), "no video") for p in miss[:50]},
        }
    return out


def shared(matrix: pd.DataFrame) -> pd.DataFrame:
    return matrix.dropna(axis=0, how="any")


def quality_confound(
    values: pd.DataFrame, quality: pd.DataFrame, higher_is_better: bool, caliper_sd: float = CALIPER_SD
) -> dict:
    """The ranking with each entry's clips compared only to clips of similar quality on the same prompt.

    Two clips of a prompt are *matched* when their quality proxies differ by at most ``caliper_sd`` pooled standard
    deviations. Per entry: the share of its comparisons that are matched, its win rate over all comparisons and
    over matched ones, and the ranks by each. An entry with under half of its comparisons matched is flagged: its
    clips differ from the others' in quality more than in anything else, so its place is a quality ranking.
    """
    prompts = values.index.intersection(quality.dropna(axis=0, how="any").index)
    v = values.loc[prompts].to_numpy(float)
    q = quality.loc[prompts, values.columns].to_numpy(float)
    names = list(values.columns)
    k = len(names)
    if len(prompts) == 0 or k < 2:
        return {"prompts": int(len(prompts)), "entries": {}}
    caliper = caliper_sd * float(np.std(q))
    matched = np.abs(q[:, :, None] - q[:, None, :]) <= caliper
    matched[:, np.arange(k), np.arange(k)] = False
    wins = unit_wins(v, higher_is_better, TIE_TOL)
    n_cmp = len(prompts) * (k - 1)
    share = matched.sum(axis=(0, 2)) / n_cmp
    win_all = wins.sum(axis=(0, 2)) / n_cmp
    with np.errstate(invalid="ignore", divide="ignore"):
        win_matched = (wins * matched).sum(axis=(0, 2)) / matched.sum(axis=(0, 2))
    rank_all = stats.rankdata(-win_all, method="min")
    finite = np.isfinite(win_matched)
    rank_matched = np.full(k, np.nan)
    rank_matched[finite] = stats.rankdata(-win_matched[finite], method="min")
    s = stats.spearmanr(v.ravel(), q.ravel()).statistic if np.ptp(q) > 0 and np.ptp(v) > 0 else float("nan")
    return {
        "prompts": int(len(prompts)),
        "caliper": caliper,
        "spearman_score_quality": float(s),
        "entries": {
            e: {
                "mean_quality": float(q[:, i].mean()),
                "matched_share": float(share[i]),
                "win_rate": float(win_all[i]),
                "matched_win_rate": float(win_matched[i]) if finite[i] else None,
                "rank": int(rank_all[i]),
                "matched_rank": int(rank_matched[i]) if finite[i] else None,
                "flag": bool(share[i] < MATCHED_SHARE),
            }
            for i, e in enumerate(names)
        },
    }


def far_outside(column: Column, gens: pd.DataFrame) -> dict[str, dict[str, float]]:
    """Per entry, its videos a scorer scored far outside its training range (:mod:`phyprobe.scorer.training_range`):
    ``{entry: {generation id: score}}``, entries with none left out."""
    from ..scorer.training_range import far_outside as far

    out: dict[str, dict[str, float]] = {}
    for e, vid in zip(gens["entry"], gens["id"]):
        x = column.scores.get(vid)
        if x is not None and far(x, column.expected):
            out.setdefault(e, {})[vid] = x
    return out


def evaluate_column(
    column: Column,
    gens: pd.DataFrame,
    entries: list[str],
    groups: list[str],
    n_boot: int,
    seed: int,
    alpha: float,
    quality: Column | None = None,
    summary: str = "mean",
) -> dict:
    """Everything the leaderboard reports for one evaluator column; entries ranked by ``summary`` (mean or median
    over the shared prompts)."""
    matrix = score_matrix(column, gens, entries)
    common = shared(matrix)
    out = {
        "kind": column.kind,
        "source": column.source,
        "higher_is_better": column.higher_is_better,
        "cost": column.cost,
        "expected_range": list(column.expected) if column.expected else None,
        "far_outside": far_outside(column, gens),
        "coverage": coverage(matrix, column, gens),
        "shared_prompts": int(len(common)),
        "per_prompt": {e: {p: float(x) for p, x in matrix[e].dropna().items()} for e in entries},
    }
    if len(common) == 0 or len(entries) < 1:
        out["stats"] = None
        return out
    strengths = len(entries) > 1 and column.kind != "dimension"  # one fit per resample: for headline columns only
    res = paired_statistics(
        common.to_numpy(), entries, column.higher_is_better, n_boot, seed, alpha, strengths, TIE_TOL, summary
    )
    out["stats"] = res.to_json()
    prompt_groups = gens.drop_duplicates("prompt_id").set_index("prompt_id")
    out["breakdowns"] = {}
    for g in groups:
        if g not in prompt_groups:
            continue
        labels = prompt_groups.loc[common.index, g]
        per = {}
        for value in sorted(labels.dropna().unique(), key=str):
            sub = common[labels.to_numpy() == value]
            r = paired_statistics(
                sub.to_numpy(), entries, column.higher_is_better, n_boot, seed, alpha, False, TIE_TOL, summary
            )
            per[str(value)] = {"prompts": int(len(sub)), "systems": r.to_json()["systems"]}
        out["breakdowns"][g] = per
    if quality is not None and quality.name != column.name:
        out["confound"] = {
            "quality": quality.name,
            **quality_confound(common, score_matrix(quality, gens, entries), column.higher_is_better),
        }
    return out


def default_groups(gens: pd.DataFrame) -> list[str]:
    return [g for g in GROUP_FIELDS if g in gens.columns and gens[g].nunique() > 1]


def checkpoint_curves(gens: pd.DataFrame) -> dict:
    """Per generator with checkpoints: its entries in step order (for the curve plot and the tables)."""
    ck = gens.dropna(subset=["checkpoint"]).drop_duplicates("entry")
    out = {}
    for g, part in ck.groupby("generator"):
        part = part.assign(order=part["step"].astype(float).fillna(np.inf)).sort_values(["order", "checkpoint"])
        out[str(g)] = [
            {"entry": e, "checkpoint": c, "step": (None if pd.isna(s) else float(s))}
            for e, c, s in zip(part["entry"], part["checkpoint"], part["step"])
        ]
    return out


def encoding_check(gens: pd.DataFrame) -> dict:
    """Per entry, how its videos are encoded (``{encoding: videos}``) and their median bits per pixel per frame;
    ``mixed`` when the readable videos come in more than one encoding, with a one-line ``warning`` naming them.
    Readable videos only: an unreadable one is its evaluators' error, not an encoding."""
    entries = {}
    for e, g in gens.groupby("entry", sort=False):
        bpp = g["bits_per_pixel"].dropna()
        entries[e] = {
            "encodings": {k: int(n) for k, n in g["encoding"].value_counts().items()},
            "bits_per_pixel": float(bpp.median()) if len(bpp) else None,
        }
    seen = sorted(set(gens["encoding"]) - {"unreadable"})
    warning = None
    if len(seen) > 1:
        per = "; ".join(
            f"{e}: " + ", ".join(f"{k} ({n})" for k, n in v["encodings"].items() if k != "unreadable")
            for e, v in entries.items()
        )
        warning = (
            f"the videos come in {len(seen)} encodings ({per}): scores move with the encoding alone, by more than "
            "a plausible clip and its severe twin differ (docs/studies/codec-invariance.md); compare generators "
            "whose outputs come in one codec and quality"
        )
    return {"entries": entries, "mixed": len(seen) > 1, "warning": warning}


def build_leaderboard(
    gens: pd.DataFrame,
    columns: list[Column],
    groups: list[str] | None = None,
    quality: str | None = None,
    n_boot: int = 10_000,
    seed: int = 0,
    alpha: float = 0.05,
    summary: str = "mean",
) -> dict:
    """The leaderboard as one JSON-able dict (what ``leaderboard.json`` holds)."""
    entries = list(dict.fromkeys(gens["entry"]))
    groups = default_groups(gens) if groups is None else list(groups)
    qcol = None
    if quality is not None:
        qcol = next((c for c in columns if c.name == quality), None)
        if qcol is None:
            from ..errors import UserError

            raise UserError(f"--quality {quality}: no such evaluator column (known: {[c.name for c in columns]})")
    evaluators = {
        c.name: evaluate_column(c, gens, entries, groups, n_boot, seed, alpha, qcol, summary) for c in columns
    }
    return {
        "entries": entries,
        "generators": sorted(set(gens["generator"])),
        "prompts": int(gens["prompt_id"].nunique()),
        "videos": int(len(gens)),
        "groups": groups,
        "quality": quality,
        "n_boot": n_boot,
        "seed": seed,
        "alpha": alpha,
        "summary": summary,
        "checkpoints": checkpoint_curves(gens),
        "encodings": encoding_check(gens) if "encoding" in gens else None,
        "evaluators": evaluators,
    }


def compare_to_baseline(
    current: dict, baseline: dict, n_boot: int, seed: int, alpha: float, evaluators=None
) -> list[dict]:
    """Each entry of ``current`` against the same entry of ``baseline`` (another leaderboard, or another checkpoint
    mapped by the caller), paired on the prompts both scored: the difference current - baseline with its interval,
    and whether it is a regression (worse, with the interval excluding 0)."""
    rows = []
    for name, ev in current["evaluators"].items():
        if evaluators and name not in evaluators:
            continue
        base = baseline["evaluators"].get(name)
        if base is None or ev.get("kind") == "dimension":
            continue
        hib = ev["higher_is_better"]
        for entry, scores in ev["per_prompt"].items():
            b_entry = baseline.get("entry_map", {}).get(entry, entry)
            before = base["per_prompt"].get(b_entry)
            if not before:
                continue
            prompts = [p for p in scores if p in before]
            if not prompts:
                continue
            vals = np.array([[before[p], scores[p]] for p in prompts])
            r = paired_statistics(vals, ["baseline", "current"], hib, n_boot, seed, alpha, strengths=False)
            pair = r.pairs.iloc[0]
            sign = 1.0 if pair["a"] == "current" else -1.0
            diff, lo, hi = sign * pair["diff"] + 0.0, *sorted((sign * pair["low"] + 0.0, sign * pair["high"] + 0.0))
            worse = diff < 0 if hib else diff > 0
            excludes0 = lo > 0 or hi < 0
            rows.append(
                {
                    "evaluator": name,
                    "entry": entry,
                    "baseline_entry": b_entry,
                    "prompts": len(prompts),
                    "baseline_mean": float(vals[:, 0].mean()),
                    "current_mean": float(vals[:, 1].mean()),
                    "diff": float(diff),
                    "low": float(lo),
                    "high": float(hi),
                    "p": float(pair["p"]),
                    "regression": bool(worse and excludes0),
                }
            )
    return rows
