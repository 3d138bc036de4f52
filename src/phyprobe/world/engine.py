"""The one small interface between the shared world machinery and a physics engine.

``build`` owns everything the worlds share (severity strata, twins, quality degradations, pairs,
splits, the resumable parallel build and the manifest); an engine only knows how to make a scene
from a seed, break it with a violation of a given family and severity, and draw frames. Each world's
subpackage implements it as ``ENGINE``: ``planar`` (pymunk + OpenCV), ``world3d`` (pybullet + TinyRenderer),
and ``marbles`` and ``rigs`` (the project's own numpy simulators and rasterisers).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np


@dataclass(frozen=True)
class ViolationPlan:
    """What every violated variant of a scene shares (family, subtype, target, onset), drawn once; each engine's
    plan adds the parameters of its families."""

    family: str
    subtype: str
    target: int
    onset: int

    def to_metadata(self) -> dict:
        return {"family": self.family, "subtype": self.subtype, "target": self.target, "onset": self.onset}


class EngineScene(Protocol):
    """One sampled scene, fully determined by (seed, index, options); lazily simulated."""

    key: str  # unique within the engine and seed, e.g. "s0-00042"
    fps: int
    num_frames: int

    def metadata(self) -> dict:
        """Manifest metadata describing the look of the scene (style, camera, size, bodies...)."""

    def plan(self, family: str, rng: np.random.Generator) -> ViolationPlan:
        """The violation of this family that every severity of the scene will share."""

    def plausible(self) -> np.ndarray:
        """(T, H, W, 3) uint8 frames of the physically correct run."""

    def violated(self, plan: ViolationPlan, severity: float) -> tuple[np.ndarray, dict]:
        """Frames of the run broken by ``plan`` at ``severity`` in (0, 1], plus per-clip metadata
        (e.g. ``{"brief": True}``). Severity 0 must give frames identical to ``plausible()``."""

    def nuisance(self, k: int, rng: np.random.Generator) -> tuple[np.ndarray, dict]:
        """The k-th plausible twin that differs only in what is not physics (camera path, lighting,
        textures), plus metadata naming the change. Engines without nuisances raise IndexError."""


class Engine(Protocol):
    source: str  # the manifest ``source`` of its clips ("world", "world3d")
    families: dict[str, tuple[str, ...]]  # family -> subtypes
    num_nuisance: int  # nuisance-only twins per scene (0 where the engine has none)

    def scene(self, seed: int, index: int, num_frames: int, heldout_style: bool) -> EngineScene: ...
