"""Train / val assignment for users' own folders, which come without published splits."""

from __future__ import annotations

import hashlib

import numpy as np


def hash_split(keys, split: str, val_fraction: float) -> list[str]:
    """``split`` for each key, ``val`` for a fixed share chosen by a hash of the key (the same
    videos whatever the order or the seed; grouped keys such as prompts keep a group together)."""
    if not 0.0 <= val_fraction < 1.0:
        raise ValueError(f"val_fraction must be in [0, 1), got {val_fraction}")
    u = np.array([int(hashlib.sha1(str(k).encode()).hexdigest()[:8], 16) / 2**32 for k in keys])
    return list(np.where(u < val_fraction, "val", split)) if len(u) else []
