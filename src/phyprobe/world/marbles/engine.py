"""The marbles world as an ``Engine`` for the shared world build: scenes drawn from (seed, index), broken
by a plan at a severity, and re-dressed by nuisance-only twins (another camera path, light or look), by the
rules every numpy-simulated world shares (``phyprobe.world.simulated``).
"""

from __future__ import annotations

import numpy as np

from phyprobe.world.marbles.render import Renderer, Track
from phyprobe.world.marbles.scene import CAMERAS, PALETTES, TEXTURES, Camera, sample_camera, sample_light, sample_scene
from phyprobe.world.marbles.simulate import simulate
from phyprobe.world.marbles.violations import FAMILIES, apply_violation, plan_violation
from phyprobe.world.simulated import NUM_NUISANCE, SimulatedScene


class MarblesScene(SimulatedScene):
    """One marbles scene behind the ``EngineScene`` interface."""

    engine = "marbles"
    simulate = staticmethod(simulate)
    renderer = Renderer
    track = staticmethod(Track.from_trajectory)
    plan_violation = staticmethod(plan_violation)
    apply_violation = staticmethod(apply_violation)
    sample_light = staticmethod(sample_light)
    cameras, palettes, textures = CAMERAS, PALETTES, TEXTURES
    palette_fields = ("backdrop", "ground", "rail")

    def sample_camera(self, rng: np.random.Generator, path: str) -> Camera:
        return sample_camera(rng, path)

    def bodies_metadata(self) -> dict:
        return {"num_bodies": len(self.scene.balls), "shapes": [f"ball-{b.look}" for b in self.scene.balls]}


class MarblesEngine:
    """Rigid discs from the project's own simulator, drawn by its own rasteriser: a third world, sharing
    no physics and no drawing code with the planar and 3D worlds, which no default trains on."""

    source = "marbles"
    families = FAMILIES
    num_nuisance = NUM_NUISANCE

    def scene(self, seed: int, index: int, num_frames: int, heldout_style: bool) -> MarblesScene:
        return MarblesScene(sample_scene(seed, index, num_frames, heldout_style))
