"""Agreement between two raters of the same videos on the 1-5 scale (a judge, experts, PhyProbe...).

Figures: Pearson and Spearman on the continuous scores (``eval.metrics``, i.e.
``scipy.stats``), and Cohen's kappa and quadratic-weighted kappa on integer labels
(``sklearn.metrics.cohen_kappa_score``) with the label set fixed to 1..5: with the labels inferred
from the data, a rating that neither rater used shifts the quadratic distances (they are computed over
label *indices*), so QWK would change with which scores happen to be absent.

Rounding rule, stated once and used for every rater: a continuous score x (e.g. the mean of three
samples) becomes the label ``clip(floor(x + 0.5), 1, 5)`` — half rounds up, unlike Python's
``round`` (half to even). With three valid samples the mean never falls on .5, with two it can.
A violation score s in [0, 1] (PhyProbe) is first put on the judges' scale, higher = more plausible,
by the monotone map ``1 + 4 (1 - clip(s, 0, 1))``, so it goes through the same rounding.
Intervals are the project's percentile bootstrap over videos (``eval.metrics.bootstrap_ci``).
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Mapping
from pathlib import Path

import numpy as np
from sklearn.exceptions import UndefinedMetricWarning
from sklearn.metrics import cohen_kappa_score

from ..data.manifest import Manifest
from ..eval import metrics as M
from ..eval.external import read_external_scores

LABELS = [1, 2, 3, 4, 5]
ROUNDING_RULE = "label = clip(floor(x + 0.5), 1, 5) (half up); violation s -> 1 + 4(1 - clip(s, 0, 1)) first"


def to_label(x) -> np.ndarray:
    """Continuous 1-5 scores -> integer labels 1..5 by the rounding rule above."""
    return np.clip(np.floor(np.asarray(x, dtype=float) + 0.5), 1, 5).astype(int)


def violation_to_scale(s) -> np.ndarray:
    """A [0, 1] violation score on the 1-5 judge scale (higher = more plausible)."""
    return 1.0 + 4.0 * (1.0 - np.clip(np.asarray(s, dtype=float), 0.0, 1.0))


def kappa(y1, y2, weights: str | None = None, labels=LABELS) -> float:
    """``cohen_kappa_score`` with ``labels`` fixed; nan where kappa is 0/0 (both raters constant)."""
    y1, y2 = np.asarray(y1), np.asarray(y2)
    if len(y1) == 0:
        return float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        return float(cohen_kappa_score(y1, y2, labels=labels, weights=weights))


def figures(a, b) -> dict[str, float]:
    """All four figures for paired continuous 1-5 scores ``a`` and ``b``."""
    la, lb = to_label(a), to_label(b)
    return {
        "pearson": M.pearson(a, b),
        "spearman": M.spearman(a, b),
        "kappa": kappa(la, lb),
        "qwk": kappa(la, lb, weights="quadratic"),
    }


def agreement(a: Mapping[str, float], b: Mapping[str, float], n_boot: int = 1000, seed: int = 0) -> dict:
    """Figures with bootstrap intervals over the videos both raters scored."""
    common = [v for v in a if v in b]
    x = np.array([a[v] for v in common], dtype=float)
    y = np.array([b[v] for v in common], dtype=float)
    out = M.bootstrap_ci(figures, x, y, n_boot=n_boot, seed=seed)
    return {**out, "videos_a": len(a), "videos_b": len(b), "videos_both": len(common), "rounding": ROUNDING_RULE}


def read_ratings(path: str | os.PathLike, manifest: Manifest, scale: str = "1-5") -> dict[str, float]:
    """``{video id: score on 1-5}`` from a judge's ``judgements.jsonl`` (its headline score) or from a
    ``video,score`` CSV. ``scale="violation"`` maps [0, 1] violation scores with ``violation_to_scale``."""
    path = Path(path)
    if path.suffix == ".jsonl":
        raw = {}
        with open(path, encoding="utf-8") as f:
            for line, text in enumerate(f, start=1):
                if text.strip():
                    try:
                        row = json.loads(text)
                        vid = row["id"]
                    except (json.JSONDecodeError, KeyError, TypeError):
                        raise ValueError(f"{path}:{line}: not a judgement line (JSON object with 'id')") from None
                    if row.get("score") is not None:
                        raw[vid] = float(row["violation_score"] if scale == "violation" else row["score"])
    else:
        raw = read_external_scores(path, manifest, higher_means="violation")
    if scale == "violation":
        return {k: float(violation_to_scale(v)) for k, v in raw.items()}
    bad = [k for k, v in raw.items() if not 1.0 <= v <= 5.0]
    if bad:
        raise ValueError(f"{path}: scores of {bad[:5]} are outside 1-5; pass scale='violation' for [0, 1] scores")
    return raw
