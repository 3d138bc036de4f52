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


COMBINE = ("mean", "max")


class MagnitudeMap:
    """A source's own annotation(s) -> magnitude on the common [0, 1] scale, piecewise linear
    between the configured points and monotone by construction (checked here), so a converter
    keeps the annotators' order. Several annotated fields (VisionRewardDB's "physics law" and
    "movement reality") are each mapped and then combined (``mean`` or ``max``)."""

    def __init__(self, fields: dict[str, dict[float, float]], combine: str = "mean", where: str = "magnitude map"):
        if not fields:
            raise ValueError(f"{where}: 'fields' is empty")
        if combine not in COMBINE:
            raise ValueError(f"{where}: 'combine' must be one of {COMBINE}, got {combine!r}")
        self.points: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for name, pts in fields.items():
            if not isinstance(pts, dict) or len(pts) < 2:
                raise ValueError(f"{where}: field {name!r} needs at least two points value -> magnitude, got {pts!r}")
            x = np.array(sorted(float(k) for k in pts))
            y = np.array([float(pts[k]) for k in sorted(pts, key=float)])
            if ((y < 0) | (y > 1)).any():
                raise ValueError(f"{where}: field {name!r}: magnitudes must lie in [0, 1], got {y.tolist()}")
            d = np.diff(y)
            if not ((d >= 0).all() or (d <= 0).all()):
                raise ValueError(f"{where}: field {name!r} is not monotone: {dict(zip(x.tolist(), y.tolist()))}")
            self.points[name] = (x, y)
        self.combine, self.where = combine, where

    @classmethod
    def from_dict(cls, cfg: dict, where: str = "magnitude map") -> "MagnitudeMap":
        if not isinstance(cfg, dict) or "fields" not in cfg:
            raise ValueError(f"{where}: expected a mapping with 'fields' (and optionally 'combine')")
        return cls(dict(cfg["fields"]), cfg.get("combine", "mean"), where)

    @property
    def fields(self) -> list[str]:
        return list(self.points)

    def map_field(self, name: str, values) -> np.ndarray:
        """Magnitudes of one field's values; NaN stays NaN, a value outside the map's range is an error
        (extrapolating would invent a scale the annotators never used)."""
        x, y = self.points[name]
        v = np.asarray(values, dtype=float)
        out = np.interp(v, x, y)
        outside = ~np.isnan(v) & ((v < x[0]) | (v > x[-1]))
        if outside.any():
            i = int(np.flatnonzero(outside)[0])
            raise ValueError(f"{self.where}: field {name!r} value {v[i]} at position {i} lies outside the map's range [{x[0]}, {x[-1]}]")
        return np.where(np.isnan(v), np.nan, out)

    def __call__(self, columns: dict[str, object]) -> np.ndarray:
        """One magnitude per row from the fields present in ``columns`` (NaN where none is known)."""
        mapped = np.stack([self.map_field(k, columns[k]) for k in self.points if k in columns])
        known = ~np.isnan(mapped)
        if self.combine == "max":
            out = np.where(known, mapped, -np.inf).max(axis=0)
        else:
            out = np.where(known, mapped, 0.0).sum(axis=0) / np.maximum(known.sum(axis=0), 1)
        return np.where(known.any(axis=0), out, np.nan)
