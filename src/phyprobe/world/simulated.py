"""What the worlds with the project's own numpy simulator and rasteriser (marbles, rigs) share as an ``EngineScene``.

Such a world simulates a scene's plausible run once and keeps its frames; a violated twin re-renders only from
the first frame where its drawn track differs, and a nuisance twin re-draws the same run with another camera
path, light or look. What differs between the worlds (their simulator, renderer, violations, palettes and the
metadata of their bodies) is given by a subclass, so that the twins' rules live in one place.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any, Callable, ClassVar

import numpy as np

NUM_NUISANCE = 2  # the first always moves the camera; the second relights or re-dresses the scene


@dataclass(frozen=True)
class Look:
    """What a nuisance twin may change in a scene's look; a world's ``Style`` adds its palette's colours (named by
    its scene's ``palette_fields``) and whatever else its rasteriser needs."""

    palette: str
    texture: str
    light: Any
    camera: Any  # has ``path`` ("static", "pan", "pan+shake", ...) and ``phase``
    aspect: str
    width: int
    height: int
    texture_seed: int

    @property
    def name(self) -> str:
        return f"{self.palette}-{self.texture}-{self.camera.path}"


class SimulatedScene:
    """One scene of a numpy-simulated world behind the ``EngineScene`` interface.

    A subclass names its world's parts (functions as ``staticmethod``): ``engine`` (the manifest's engine name), ``simulate(scene)``,
    ``renderer(scene, style)``, ``track(trajectory, scene)`` (what is drawn, with ``same_until``), ``plan_violation`` and
    ``apply_violation``, the look's ``cameras`` / ``palettes`` / ``textures`` and ``sample_light``, the ``Style``
    fields a palette sets (``palette_fields``), and how to draw a camera and describe the bodies.
    """

    engine: ClassVar[str]
    simulate: ClassVar[Callable]
    renderer: ClassVar[Callable]
    track: ClassVar[Callable]
    plan_violation: ClassVar[Callable]
    apply_violation: ClassVar[Callable]
    sample_light: ClassVar[Callable]
    cameras: ClassVar[tuple[str, ...]]
    palettes: ClassVar[dict[str, tuple]]
    textures: ClassVar[tuple[str, ...]]
    palette_fields: ClassVar[tuple[str, ...]]

    def __init__(self, scene: Any):
        self.scene = scene
        self.key = scene.key
        self.fps = scene.fps
        self.num_frames = scene.num_frames

    def sample_camera(self, rng: np.random.Generator, path: str) -> Any:
        """A camera on ``path`` for a nuisance twin of this scene."""
        raise NotImplementedError

    def bodies_metadata(self) -> dict:
        """The manifest metadata that describes the scene's bodies (``num_bodies``, ``shapes``, ...)."""
        raise NotImplementedError

    @cached_property
    def trajectory(self) -> Any:
        return self.simulate(self.scene)

    @cached_property
    def _renderer(self) -> Any:
        return self.renderer(self.scene, self.scene.style)

    @cached_property
    def _track(self) -> Any:
        """What the plausible run draws: every twin starts from it."""
        return self.track(self.trajectory, self.scene)

    @cached_property
    def _frames(self) -> np.ndarray:
        return self._renderer.render(self._track)

    def metadata(self) -> dict:
        st = self.scene.style
        return {
            "engine": self.engine,
            "view": self.scene.view,
            "style": st.name,
            "palette": st.palette,
            "texture": st.texture,
            "camera": st.camera.path,
            "aspect": st.aspect,
            "width": st.width,
            "height": st.height,
            **self.bodies_metadata(),
        }

    def plan(self, family: str, rng: np.random.Generator) -> Any:
        return self.plan_violation(family, self.scene, self.trajectory, rng)

    def plausible(self) -> np.ndarray:
        return self._frames

    def violated(self, plan: Any, severity: float) -> tuple[np.ndarray, dict]:
        reference = self._frames
        if severity == 0.0:
            return reference.copy(), {}
        track = self.apply_violation(plan, self.scene, self.trajectory, severity).track
        same = track.same_until(self._track)
        if same >= self.num_frames:
            return reference.copy(), {}
        return np.concatenate([reference[:same], self._renderer.render(track, start=same)]), {}

    def nuisance(self, k: int, rng: np.random.Generator) -> tuple[np.ndarray, dict]:
        if not 0 <= k < NUM_NUISANCE:
            raise IndexError(f"nuisance twin {k} out of range: this engine has {NUM_NUISANCE}")
        st = self.scene.style
        kind = "camera" if k == 0 else str(rng.choice(["lighting", "texture"]))
        if kind == "camera":  # add a motion the scene's camera does not have
            extra = str(rng.choice([c for c in self.cameras[1:] if c not in st.camera.path.split("+")]))
            if st.camera.path == "static":
                style = replace(st, camera=self.sample_camera(rng, extra))
            else:  # the scene's own motion goes on as it was, the new one on top
                camera = self.sample_camera(rng, f"{st.camera.path}+{extra}")
                style = replace(st, camera=replace(camera, phase=st.camera.phase))
        elif kind == "lighting":
            style = replace(st, light=self.sample_light(rng))
        else:  # another texture and the colours of another palette (never the held-out one)
            colours = self.palettes[str(rng.choice([p for p in self.palettes if p != st.palette]))]
            style = replace(
                st,
                texture=str(rng.choice([t for t in self.textures if t != st.texture])),
                texture_seed=int(rng.integers(2**31)),
                **({} if self.scene.heldout_style else dict(zip(self.palette_fields, colours))),
            )
        frames = self.renderer(self.scene, style).render(self._track)
        return frames, {"nuisance": kind, "camera": style.camera.path, "texture": style.texture}
