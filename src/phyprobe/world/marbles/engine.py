"""The marbles world as an ``Engine`` for the shared world build: scenes drawn from (seed, index), broken
by a plan at a severity, and re-dressed by nuisance-only twins (another camera path, light or look).

A scene simulates its plausible run once and keeps its frames; violated twins re-render only from the
first frame where they differ.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cached_property

import numpy as np

from phyprobe.world.marbles.render import Renderer, Track
from phyprobe.world.marbles.scene import CAMERAS, PALETTES, TEXTURES, Scene, sample_camera, sample_light, sample_scene
from phyprobe.world.marbles.simulate import Trajectory, simulate
from phyprobe.world.marbles.violations import FAMILIES, Plan, apply_violation, plan_violation

NUM_NUISANCE = 2  # the first always moves the camera; the second relights or re-dresses the scene


class MarblesScene:
    """One marbles scene behind the ``EngineScene`` interface."""

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
        return Renderer(self.scene, self.scene.style)

    @cached_property
    def _frames(self) -> np.ndarray:
        return self._renderer.render(Track.from_trajectory(self.trajectory, self.scene))

    def metadata(self) -> dict:
        sc, st = self.scene, self.scene.style
        return {
            "engine": "marbles",
            "view": sc.view,
            "style": st.name,
            "palette": st.palette,
            "texture": st.texture,
            "camera": st.camera.path,
            "aspect": st.aspect,
            "width": st.width,
            "height": st.height,
            "num_bodies": len(sc.balls),
            "shapes": [f"ball-{b.look}" for b in sc.balls],
        }

    def plan(self, family: str, rng: np.random.Generator) -> Plan:
        return plan_violation(family, self.scene, self.trajectory, rng)

    def plausible(self) -> np.ndarray:
        return self._frames

    def violated(self, plan: Plan, severity: float) -> tuple[np.ndarray, dict]:
        reference = self._frames
        if severity == 0.0:
            return reference.copy(), {}
        track = apply_violation(plan, self.scene, self.trajectory, severity).track
        same = track.same_until(Track.from_trajectory(self.trajectory, self.scene))
        if same >= self.num_frames:
            return reference.copy(), {}
        return np.concatenate([reference[:same], self._renderer.render(track, start=same)]), {}

    def nuisance(self, k: int, rng: np.random.Generator) -> tuple[np.ndarray, dict]:
        if not 0 <= k < NUM_NUISANCE:
            raise IndexError(f"nuisance twin {k} out of range: this engine has {NUM_NUISANCE}")
        st = self.scene.style
        kind = "camera" if k == 0 else str(rng.choice(["lighting", "texture"]))
        if kind == "camera":  # add a motion the scene's camera does not have
            extra = str(rng.choice([c for c in CAMERAS[1:] if c not in st.camera.path.split("+")]))
            if st.camera.path == "static":
                style = replace(st, camera=sample_camera(rng, extra))
            else:  # the scene's own motion goes on as it was, the new one on top
                style = replace(st, camera=replace(sample_camera(rng, f"{st.camera.path}+{extra}"), phase=st.camera.phase))
        elif kind == "lighting":
            style = replace(st, light=sample_light(rng))
        else:  # another texture and the surfaces' colours of another palette (never the held-out one)
            backdrop, ground, rail = PALETTES[str(rng.choice([p for p in PALETTES if p != st.palette]))]
            style = replace(st, texture=str(rng.choice([t for t in TEXTURES if t != st.texture])), texture_seed=int(rng.integers(2**31)),
                            **({} if self.scene.heldout_style else {"backdrop": backdrop, "ground": ground, "rail": rail}))
        frames = Renderer(self.scene, style).render(Track.from_trajectory(self.trajectory, self.scene))
        return frames, {"nuisance": kind, "camera": style.camera.path, "texture": style.texture}


class MarblesEngine:
    """Rigid discs from the project's own simulator, drawn by its own rasteriser: a third world, sharing
    no physics and no drawing code with the planar and 3D worlds, which no default trains on."""

    source = "marbles"
    families = FAMILIES
    num_nuisance = NUM_NUISANCE

    def scene(self, seed: int, index: int, num_frames: int, heldout_style: bool) -> MarblesScene:
        return MarblesScene(sample_scene(seed, index, num_frames, heldout_style))
