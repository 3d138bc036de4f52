"""The random streams every world draws from: one independent generator per (seed, scene index, purpose).

Shared by the build and all the worlds, so that a scene never depends on its neighbours and a purpose never
depends on another. The streams in use: 0 the scene and 1 its look where a world draws that apart (the
worlds), 2 the violation plan and severities of the scene's clips, 20 + k its k-th quality twin and 40 + k its
k-th nuisance twin, 60 + k its k-th codec twin (the build).
"""

from __future__ import annotations

import numpy as np


def scene_rng(seed: int, index: int, stream: int = 0) -> np.random.Generator:
    """Independent generator per (seed, scene, purpose): scenes never depend on their neighbours."""
    return np.random.default_rng(np.random.SeedSequence([int(seed), int(index), int(stream)]))
