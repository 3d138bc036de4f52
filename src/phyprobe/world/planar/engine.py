"""The planar engine (pymunk physics, OpenCV drawing) behind the world's engine interface.

Draws from the scene's random streams in the same order as before the interface existed, so a 2D
build is byte-identical to the builds that came before it.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np

from phyprobe.world.planar.render import Renderer, Track
from phyprobe.world.planar.scene import Scene, sample_scene
from phyprobe.world.planar.simulate import Trajectory, simulate
from phyprobe.world.planar.violations import FAMILIES, Plan, apply_violation, plan_violation


class PlanarScene:
    def __init__(self, scene: Scene):
        self.scene = scene
        self.key = scene.key
        self.fps = scene.fps
        self.num_frames = scene.num_frames

    @cached_property
    def trajectory(self) -> Trajectory:
        return simulate(self.scene)

    @cached_property
    def _renderer(self) -> Renderer:
        return Renderer(self.scene, self.trajectory)

    def metadata(self) -> dict:
        st = self.scene.style
        return {
            "engine": "planar",
            "style": st.name,
            "background": st.background,
            "texture": st.texture,
            "lighting": st.lighting,
            "camera": st.camera,
            "aspect": st.aspect,
            "width": st.width,
            "height": st.height,
            "num_bodies": len(self.scene.bodies),
            "shapes": [b.kind for b in self.scene.bodies],
        }

    def plan(self, family: str, rng: np.random.Generator) -> Plan:
        return plan_violation(family, self.scene, self.trajectory, rng)

    def plausible(self) -> np.ndarray:
        if "_frames" not in self.__dict__:
            self._frames = self._renderer.render(Track.from_trajectory(self.trajectory))
        return self._frames

    def violated(self, plan: Plan, severity: float) -> tuple[np.ndarray, dict]:
        return self._renderer.render(apply_violation(plan, self.scene, self.trajectory, severity).track), {}

    def nuisance(self, k: int, rng: np.random.Generator) -> tuple[np.ndarray, dict]:
        raise IndexError("the planar world has no nuisance-only twins (its camera pan is a style)")


class PlanarEngine:
    source = "world"
    families = FAMILIES
    num_nuisance = 0

    def scene(self, seed: int, index: int, num_frames: int, heldout_style: bool) -> PlanarScene:
        return PlanarScene(sample_scene(seed, index, num_frames, heldout_style=heldout_style))
