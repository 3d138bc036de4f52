"""Evaluate a run's scores on the held-out parts of its own data, one entry per benchmark spec."""

from __future__ import annotations

import logging
from typing import Iterable, Mapping

from ..data.manifest import Manifest

log = logging.getLogger(__name__)


def subset(manifest: Manifest, splits: Iterable[str], sources: Iterable[str] | None = None) -> Manifest:
    m = manifest.split(*splits)
    if sources:
        keep = m.videos["source"].isin(list(sources))
        ids = set(m.videos["id"][keep])
        m = Manifest(videos=m.videos[keep].reset_index(drop=True),
                     pairs=m.pairs[m.pairs["a"].isin(ids) & m.pairs["b"].isin(ids)].reset_index(drop=True), root=m.root)
    return m


def evaluate_splits(manifest: Manifest, scores: Mapping[str, float], benchmarks: Iterable[Mapping]) -> dict:
    """``benchmarks``: dicts with ``name``, ``splits``, ``protocol``, optional ``sources`` and ``kwargs``."""
    from ..eval.protocols import evaluate

    out = {}
    for b in benchmarks:
        m = subset(manifest, b["splits"], b.get("sources"))
        if m.videos.empty:
            log.warning("benchmark %s: no videos in splits %s", b["name"], list(b["splits"]))
            continue
        out[b["name"]] = evaluate(m, {v: scores[v] for v in m.videos["id"]}, b["protocol"], **dict(b.get("kwargs") or {}))
    return out
