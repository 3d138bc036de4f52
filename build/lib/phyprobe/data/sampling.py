"""Per-source and per-pair-kind sampling weights for a mix of heterogeneous sources.

The paper's training data mixes sources of very different sizes (tens of thousands of human
judgements beside a few hundred matched real/implausible pairs); drawing pairs uniformly would let
the largest source decide what the head learns. ``data.sampling`` gives each source a share of the
draws, and within a source each pair category (``kind``, or ``kind/correspondence`` to tell
matched from unmatched real-vs-generated pairs) a share of that source's draws.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd


def category(pairs: pd.DataFrame, kind_weights: Mapping[str, float]) -> pd.Series:
    """``kind/correspondence`` where the config names it, else ``kind``."""
    specific = pairs["kind"].astype(str) + "/" + pairs["correspondence"].astype(str)
    return specific.where(specific.isin(list(kind_weights)), pairs["kind"].astype(str))


def sampling_weights(pairs: pd.DataFrame, sampling: Mapping | None) -> np.ndarray | None:
    """Per-pair draw probabilities (summing to 1), or None to draw uniformly (no ``sampling`` given).

    P(pair) = share of its source x share of its category within the source / pairs in that
    (source, category). Every source in ``pairs`` must have a weight (a forgotten source would
    silently get an arbitrary share); categories not named weigh 1.
    """
    if not sampling or pairs.empty:
        return None
    src_w = {str(k): float(v) for k, v in (sampling.get("source") or {}).items()}
    kind_w = {str(k): float(v) for k, v in (sampling.get("kind") or {}).items()}
    if any(w < 0 for w in (*src_w.values(), *kind_w.values())):
        raise ValueError(f"data.sampling weights must be >= 0, got source={src_w} kind={kind_w}")
    sources = pairs["source"].astype(str)
    missing = sorted(set(sources) - set(src_w))
    if missing:
        raise ValueError(f"data.sampling.source has no weight for source(s) {missing}; weights given: {src_w}")
    cat = category(pairs, kind_w)
    df = pd.DataFrame({"s": sources, "c": cat})
    df["ws"] = df["s"].map(src_w)
    df["wc"] = df["c"].map(lambda c: kind_w.get(c, 1.0))
    n = df.groupby(["s", "c"])["s"].transform("size")
    present = df.drop_duplicates(["s", "c"])
    cat_total = present.groupby("s")["wc"].sum()
    src_total = present.drop_duplicates("s")["ws"].sum()
    if src_total <= 0:
        raise ValueError("data.sampling: every source present has weight 0")
    p = df["ws"] / src_total * df["wc"] / df["s"].map(cat_total).replace(0, np.nan) / n
    return p.fillna(0.0).to_numpy()
