"""Shortcut diagnostics: does the score know physics, or where a clip comes from?

A plausible clip is plausible whatever world, renderer or camera made it, so an evaluator that
scores physics gives the plausible clips of every source the same low score. Two figures show the
shortcut when it is there: the median score of plausible clips per source, and how well the score
*alone* tells two sources' plausible clips apart (AUROC; 0.5 = not at all). ``separability`` folds
the AUROC's direction away (max(A, 1 - A)), so 0.5 is best and 1.0 means the score is a source label.
"""

from __future__ import annotations

from itertools import combinations
from typing import Mapping

import numpy as np
import pandas as pd

from . import metrics as M
from .protocols import _Boot, _median, _variant


def plausible_by_source(videos: pd.DataFrame, scores: Mapping[str, float]) -> pd.DataFrame:
    """``(source, score)`` of every scored, untouched plausible clip among ``videos``."""
    v = videos[videos["id"].isin(scores.keys())]
    v = v[(_variant(v) == "plausible").to_numpy()]
    return pd.DataFrame({"source": v["source"].to_numpy(), "score": v["id"].map(scores).astype(float).to_numpy()})


def separability(auroc):
    """max(A, 1 - A): how well the score tells two sources apart, whichever scores higher (nan stays nan)."""
    return np.fmax(auroc, 1.0 - auroc)


def shortcut_diagnostics(videos: pd.DataFrame, scores: Mapping[str, float], n_boot: int = 1000, seed: int = 0) -> dict:
    """``{"median_score_plausible_by_source": {source: leaf}, "source_auroc": {"a_vs_b": leaf},
    "source_separability": {"a_vs_b": leaf}}`` over the plausible clips of ``videos`` (a manifest's
    videos table, e.g. every evaluated benchmark's videos together). In ``a_vs_b`` the positive class is
    ``b``: above 0.5, b's plausible clips score higher than a's."""
    boot = _Boot(n_boot, seed)
    p = plausible_by_source(videos, scores)
    out: dict = {
        "median_score_plausible_by_source": {
            str(s): _median(boot, g["score"]) for s, g in p.groupby("source", sort=True)
        }
    }
    auroc, sep = {}, {}
    for a, b in combinations(sorted(p["source"].unique()), 2):
        both = p[p["source"].isin([a, b])]
        is_b, score = (both["source"] == b).to_numpy(), both["score"].to_numpy()
        auroc[f"{a}_vs_{b}"] = boot(M.auroc_batched, is_b, score, batched=True)
        sep[f"{a}_vs_{b}"] = boot(lambda y, s: separability(M.auroc_batched(y, s)), is_b, score, batched=True)
    out["source_auroc"], out["source_separability"] = auroc, sep
    return out


def markdown(diagnostics: Mapping[str, Mapping]) -> list[str]:
    """Report rows: per evaluator, the plausible medians per source and the worst source separability."""
    from .report import fmt_leaf

    sources = sorted({s for d in diagnostics.values() for s in d["median_score_plausible_by_source"]})
    pairs = sorted({k for d in diagnostics.values() for k in d["source_separability"]})
    lines = [
        "| evaluator | "
        + " | ".join(f"median plausible: {s}" for s in sources)
        + " | "
        + " | ".join(f"separability {k}" for k in pairs)
        + " |",
        "|---|" + "---|" * (len(sources) + len(pairs)),
    ]
    for name, d in diagnostics.items():
        cells = [fmt_leaf(d["median_score_plausible_by_source"].get(s)) for s in sources]
        cells += [fmt_leaf(d["source_separability"].get(k)) for k in pairs]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines
