"""The rigs world as an ``Engine`` for the shared world build: scenes drawn from (seed, index), broken by a
plan at a severity, and re-dressed by nuisance-only twins (another camera path, light or look), by the rules
every numpy-simulated world shares (``phyprobe.world.simulated``).
"""

from __future__ import annotations

import numpy as np

from phyprobe.world.rigs.render import Renderer, Track
from phyprobe.world.rigs.scene import CAMERAS, PALETTES, TEXTURES, Camera, sample_camera, sample_light, sample_scene
from phyprobe.world.rigs.simulate import simulate
from phyprobe.world.rigs.violations import FAMILIES, apply_violation, plan_violation
from phyprobe.world.simulated import NUM_NUISANCE, SimulatedScene


class RigsScene(SimulatedScene):
    """One rigs scene behind the ``EngineScene`` interface."""

    engine = "rigs"
    simulate = staticmethod(simulate)
    renderer = Renderer
    track = staticmethod(Track.from_trajectory)
    plan_violation = staticmethod(plan_violation)
    apply_violation = staticmethod(apply_violation)
    sample_light = staticmethod(sample_light)
    cameras, palettes, textures = CAMERAS, PALETTES, TEXTURES
    palette_fields = ("paper", "ink", "structure")

    def sample_camera(self, rng: np.random.Generator, path: str) -> Camera:
        return sample_camera(rng, path, roll=self.scene.style.camera.roll)  # a twin keeps the scene's roll

    def bodies_metadata(self) -> dict:
        bodies = self.scene.bodies
        return {
            "mirror": self.scene.style.mirror,
            "num_bodies": len(bodies),
            "shapes": [f"{b.kind}-{b.shape}" for b in bodies],
        }


class RigsEngine:
    """Constrained mechanisms from the project's own simulator, drawn by its own flat rasteriser: a fourth
    world, sharing no physics and no drawing code with the planar, 3D and marbles worlds, which no default
    trains on."""

    source = "rigs"
    families = FAMILIES
    num_nuisance = NUM_NUISANCE

    def scene(self, seed: int, index: int, num_frames: int, heldout_style: bool) -> RigsScene:
        return RigsScene(sample_scene(seed, index, num_frames, heldout_style))
