"""Which split each scene belongs to. Whole scenes move together, so no scene leaks across splits.

``heldout_family`` scenes carry only the held-out violation families (never seen elsewhere);
``heldout_style`` scenes are drawn in a style no other split uses (each world's own, e.g.
``planar.scene.HELDOUT_BACKGROUND``).
"""

from __future__ import annotations

import numpy as np

SPLITS = ("train", "val", "test", "heldout_family", "heldout_style")
DEFAULT_FRACTIONS = {"val": 0.1, "test": 0.15, "heldout_family": 0.1, "heldout_style": 0.1}


def assign_splits(num_items: int, seed: int, fractions: dict[str, float] | None = None, stream: int = 0) -> list[str]:
    """Exact-count split labels for items 0..num_items-1; the remainder is ``train``."""
    fractions = DEFAULT_FRACTIONS if fractions is None else fractions
    unknown = set(fractions) - set(SPLITS[1:])
    if unknown:
        raise ValueError(f"unknown split(s) {sorted(unknown)}; known: {SPLITS[1:]}")
    if sum(fractions.values()) >= 1.0:
        raise ValueError(f"split fractions {fractions} leave nothing for train")
    order = np.random.default_rng(np.random.SeedSequence([int(seed), 7919, int(stream)])).permutation(num_items)
    labels = ["train"] * num_items
    cursor = 0
    for name in SPLITS[1:]:
        count = int(round(fractions.get(name, 0.0) * num_items))
        for i in order[cursor : cursor + count]:
            labels[int(i)] = name
        cursor += count
    return labels
