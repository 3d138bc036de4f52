"""Per-dataset monotone maps of violation magnitudes onto one common [0, 1] scale.

Each source annotates magnitude on its own scale (a severity parameter, a 1–5 rating, an error's
extent). L_mag regresses all of them with one head, so each source is mapped separately by a
monotone transform; order within a source is preserved, scales across sources are made comparable.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import rankdata

TRANSFORMS = ("identity", "minmax", "rank")


def normalise_magnitudes(videos: pd.DataFrame, transform: str | dict[str, str] = "identity") -> np.ndarray:
    """Magnitudes mapped per ``source``; NaN where unknown. ``transform`` may differ per source."""
    mags = videos["magnitude"].astype(float).to_numpy()
    out = np.full(len(videos), np.nan)
    for source, idx in videos.groupby("source").indices.items():
        how = transform.get(source, "identity") if isinstance(transform, dict) else transform
        if how not in TRANSFORMS:
            raise ValueError(f"magnitude transform for source {source!r} must be one of {TRANSFORMS}, got {how!r}")
        m = mags[idx]
        known = ~np.isnan(m)
        if not known.any():
            continue
        v = m[known]
        if how == "minmax":
            span = v.max() - v.min()
            v = (v - v.min()) / span if span > 0 else np.zeros_like(v)
        elif how == "rank":
            v = (rankdata(v, method="average") - 1) / max(1, len(v) - 1)
        sub = out[idx]
        sub[known] = v
        out[idx] = sub
    return out
