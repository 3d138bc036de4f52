"""The 3D world as an ``Engine`` for the shared world build: scenes drawn from (seed, index), broken
by a plan at a severity, and re-dressed by nuisance-only twins.

A scene opens its pybullet client lazily, simulates the plausible run once and keeps its frames, so
violated twins re-render only from the first frame where they differ and the quality-degraded twins
reuse the plausible frames. ``close()`` disconnects the client (a finaliser does it otherwise).
"""

from __future__ import annotations

import weakref
from dataclasses import replace

import numpy as np

from phyprobe.world.world3d.render import Renderer, Track, render_size, restyle
from phyprobe.world.world3d.scene import (
    CAMERAS,
    FLOORS,
    LIGHTINGS,
    WALLS,
    Scene,
    sample_camera,
    sample_light,
    sample_scene,
)
from phyprobe.world.world3d.simulate import Trajectory, World
from phyprobe.world.world3d.violations import FAMILIES, Context, Plan, apply_violation, plan_violation

NUISANCES = ("camera", "lighting", "texture")
NUM_NUISANCE = 2  # the first always moves the camera; the second relights or re-textures


class World3DScene:
    """One 3D scene behind the ``EngineScene`` interface."""

    def __init__(self, scene: Scene):
        self.scene = scene
        self.key = scene.key
        self.fps = scene.fps
        self.num_frames = scene.num_frames
        self._world: World | None = None
        self._traj: Trajectory | None = None
        self._view: Renderer | None = None
        self._frames: np.ndarray | None = None
        self._finalizer = None

    # ------------------------------------------------------------------------ lazy state

    @property
    def world(self) -> World:
        if self._world is None:
            self._world = World(self.scene)
            self._finalizer = weakref.finalize(self, self._world.close)
        return self._world

    @property
    def context(self) -> Context:
        if self._traj is None:
            self._traj = self.world.simulate()
            self._view = Renderer(self.world, self.scene.style)
        return Context(self.scene, self.world, self._traj, self._view)

    def close(self) -> None:
        """Disconnect the pybullet client (cached frames and trajectory stay usable)."""
        if self._world is not None:
            self._world.close()

    # ---------------------------------------------------------------------- the interface

    def metadata(self) -> dict:
        sc, st = self.scene, self.scene.style
        return {
            "engine": "world3d",
            "style": st.name,
            "floor": st.floor,
            "wall": st.wall,
            "texture": st.floor,
            "camera": st.camera.path,
            "lighting": st.light.name,
            "aspect": st.aspect,
            "width": st.width,
            "height": st.height,
            "render_size": list(render_size(st.width, st.height)),
            "fps": sc.fps,
            "num_frames": sc.num_frames,
            "num_bodies": len(sc.bodies),
            "shapes": [
                b.kind if b.kind != "urdf" else b.urdf.rsplit("/", 1)[-1].removesuffix(".urdf") for b in sc.bodies
            ],
            "roles": [b.role for b in sc.bodies],
            "ramp": sc.ramp is not None,
        }

    def plan(self, family: str, rng: np.random.Generator) -> Plan:
        return plan_violation(family, self.context, rng)

    def plausible(self) -> np.ndarray:
        if self._frames is None:
            ctx = self.context
            self._frames = ctx.view.render(Track.from_trajectory(ctx.plausible))
        return self._frames

    def violated(self, plan: Plan, severity: float) -> tuple[np.ndarray, dict]:
        meta = {"brief": plan.family == "brief"}
        reference = self.plausible()
        if severity == 0.0:
            return reference.copy(), meta
        ctx = self.context
        track = apply_violation(plan, ctx, severity).track
        same = track.same_until(Track.from_trajectory(ctx.plausible))
        if same >= self.num_frames:
            return reference.copy(), meta
        return np.concatenate([reference[:same], ctx.view.render(track, start=same)]), meta

    def nuisance(self, k: int, rng: np.random.Generator) -> tuple[np.ndarray, dict]:
        if not 0 <= k < NUM_NUISANCE:
            raise IndexError(f"nuisance twin {k} out of range: this engine has {NUM_NUISANCE}")
        st = self.scene.style
        kind = "camera" if k == 0 else str(rng.choice(NUISANCES[1:]))
        if kind == "camera":
            # add a motion the scene's camera does not have (orbit, dolly or handheld shake)
            moves = [c for c in CAMERAS[1:] if c not in st.camera.path.split("+")]
            extra = str(rng.choice(moves))
            fresh = sample_camera(rng, st.camera.azimuth, extra)
            path = extra if st.camera.path == "static" else f"{st.camera.path}+{extra}"
            sweep = fresh.sweep if st.camera.path == "static" else st.camera.sweep or fresh.sweep
            style = restyle(st, camera=replace(st.camera, path=path, sweep=sweep, shake=st.camera.shake or fresh.shake))
        elif kind == "lighting":
            style = restyle(st, light=sample_light(rng, str(rng.choice([n for n in LIGHTINGS if n != st.light.name]))))
        else:
            floors = [f for f in FLOORS if f != st.floor]
            walls = [w for w in WALLS if w not in (st.wall, "none")]
            floor = st.floor if self.scene.heldout_style else str(rng.choice(floors))  # the held-out floor stays
            style = replace(
                st,
                floor=floor,
                floor_colour=tuple(float(c) for c in rng.uniform(0.2, 0.95, 3)),
                wall=str(rng.choice(walls)) if st.wall != "none" else "none",
                wall_colour=tuple(float(c) for c in rng.uniform(0.3, 0.95, 3)),
            )
        ctx = self.context
        frames = Renderer(self.world, style).render(Track.from_trajectory(ctx.plausible))
        return frames, {
            "nuisance": kind,
            "camera": style.camera.path,
            "lighting": style.light.name,
            "floor": style.floor,
            "wall": style.wall,
        }


class World3DEngine:
    """pybullet rigid bodies drawn by TinyRenderer: the second world, sharing nothing visual with the
    planar one."""

    source = "world3d"
    families = FAMILIES
    num_nuisance = NUM_NUISANCE

    def scene(self, seed: int, index: int, num_frames: int, heldout_style: bool) -> World3DScene:
        return World3DScene(sample_scene(seed, index, num_frames, heldout_style))
