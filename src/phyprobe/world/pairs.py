"""Supervised comparisons between the clips of the world (and of the real-footage segments).

Kinds, all within one split and one source:
  same_scene  real_vs_generated       violated vs its plausible twin (label 1 toward the violated)
  same_scene  generated_vs_generated  two severities of one scene's violation, if they differ enough
  same_scene  real_vs_real            plausible vs its quality-degraded twin: a tie (0.5)
  none        real_vs_generated       violated vs the plausible / quality twin of the next scene
  none        real_vs_real            plausible vs the next scene's plausible: a tie (0.5)
Orientation (which clip is ``a``) is drawn at random so labels are balanced; the label always means
P(a is more violating than b).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class SceneGroup:
    """The clips of one scene (or real segment) that pairs are made from."""

    order: int  # position of the scene in the build; fixes pair order
    split: str
    source: str
    plausible: str
    violated: list[tuple[str, float]] = field(default_factory=list)  # (video id, severity)
    quality: list[str] = field(default_factory=list)


def _row(a: str, b: str, label: float, source: str, corr: str, kind: str, split: str, rng: np.random.Generator) -> dict:
    if rng.random() < 0.5:
        a, b, label = b, a, 1.0 - label
    return {
        "a": a,
        "b": b,
        "label": float(label),
        "weight": 1.0,
        "source": source,
        "correspondence": corr,
        "kind": kind,
        "split": split,
    }


def make_pairs(groups: list[SceneGroup], seed: int, min_severity_gap: float = 0.15) -> list[dict]:
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 104729]))
    rows: list[dict] = []
    ordered = sorted(groups, key=lambda g: g.order)
    for g in ordered:
        for vid, _ in g.violated:
            rows.append(_row(vid, g.plausible, 1.0, g.source, "same_scene", "real_vs_generated", g.split, rng))
        for i, (va, sa) in enumerate(g.violated):
            for vb, sb in g.violated[i + 1 :]:
                if abs(sa - sb) >= min_severity_gap:
                    rows.append(
                        _row(
                            va,
                            vb,
                            1.0 if sa > sb else 0.0,
                            g.source,
                            "same_scene",
                            "generated_vs_generated",
                            g.split,
                            rng,
                        )
                    )
        for q in g.quality:
            rows.append(_row(g.plausible, q, 0.5, g.source, "same_scene", "real_vs_real", g.split, rng))
    by_bucket: dict[tuple[str, str], list[SceneGroup]] = {}
    for g in ordered:
        by_bucket.setdefault((g.split, g.source), []).append(g)
    for (split, source), members in by_bucket.items():
        if len(members) < 2:
            continue
        neighbours = zip(members, members[1:] + members[:1]) if len(members) > 2 else [tuple(members)]
        for g, h in neighbours:
            if g.violated:
                rows.append(_row(g.violated[0][0], h.plausible, 1.0, source, "none", "real_vs_generated", split, rng))
                if h.quality:
                    rows.append(
                        _row(g.violated[-1][0], h.quality[0], 1.0, source, "none", "real_vs_generated", split, rng)
                    )
            rows.append(_row(g.plausible, h.plausible, 0.5, source, "none", "real_vs_real", split, rng))
    return rows
