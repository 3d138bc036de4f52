"""Rigid-body simulation of a scene with pymunk, optionally with an intervention that breaks physics.

The plausible run and every violated run start from the same ``Scene`` and step the same way; an
intervention only acts from its onset frame, so frames before it are bit-identical across runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
import pymunk

from phyprobe.world.planar.scene import GRAVITY, VIEW_HEIGHT, Scene

FLOOR_RADIUS = 20.0
WALL_RADIUS = 20.0
RAMP_RADIUS = 3.0
STATIC_FRICTION = 0.8
STATIC_ELASTICITY = 0.6


@dataclass
class Trajectory:
    """Per-frame state of every body: what the renderer draws and what the invariants are checked on."""

    pos: np.ndarray  # (T, N, 2) world units
    angle: np.ndarray  # (T, N) radians
    vel: np.ndarray  # (T, N, 2)
    angvel: np.ndarray  # (T, N)
    mass: np.ndarray  # (N,)
    moment: np.ndarray  # (N,)

    @property
    def num_frames(self) -> int:
        return self.pos.shape[0]

    def energy(self, gravity: float = GRAVITY) -> np.ndarray:
        """(T, N) kinetic + rotational + potential energy of each body."""
        ke = 0.5 * self.mass * (self.vel**2).sum(-1) + 0.5 * self.moment * self.angvel**2
        return ke + self.mass * gravity * self.pos[..., 1]


class Intervention(Protocol):
    """Something that acts on the running simulation: ``before_frame(t)`` runs before the physics
    that produces frame ``t`` (so its effect first shows in frame ``t``)."""

    def before_frame(self, t: int, space: pymunk.Space, bodies: list[pymunk.Body]) -> None: ...


def build_space(scene: Scene, gravity_scale: float = 1.0) -> tuple[pymunk.Space, list[pymunk.Body]]:
    space = pymunk.Space()
    space.gravity = (0.0, -GRAVITY * gravity_scale)
    space.iterations = 20
    static = space.static_body
    w = scene.world_width
    top = VIEW_HEIGHT * 3
    statics = [
        pymunk.Segment(static, (-w, -FLOOR_RADIUS), (2 * w, -FLOOR_RADIUS), FLOOR_RADIUS),
        pymunk.Segment(static, (-WALL_RADIUS, -FLOOR_RADIUS), (-WALL_RADIUS, top), WALL_RADIUS),
        pymunk.Segment(static, (w + WALL_RADIUS, -FLOOR_RADIUS), (w + WALL_RADIUS, top), WALL_RADIUS),
    ]
    if scene.ramp is not None:
        statics.append(pymunk.Segment(static, scene.ramp[0], scene.ramp[1], RAMP_RADIUS))
    for s in statics:
        s.friction, s.elasticity = STATIC_FRICTION, STATIC_ELASTICITY
    space.add(*statics)
    bodies = []
    for spec in scene.bodies:
        body = pymunk.Body()
        shape = pymunk.Circle(body, spec.radius) if spec.kind == "circle" else pymunk.Poly(body, spec.vertices)
        shape.density, shape.friction, shape.elasticity = spec.density, spec.friction, spec.elasticity
        body.position, body.velocity = spec.position, spec.velocity
        body.angle, body.angular_velocity = spec.angle, spec.angular_velocity
        space.add(body, shape)
        bodies.append(body)
    return space, bodies


def simulate(scene: Scene, intervention: Intervention | None = None, gravity_scale: float = 1.0) -> Trajectory:
    space, bodies = build_space(scene, gravity_scale)
    t_count, n = scene.num_frames, len(bodies)
    pos = np.zeros((t_count, n, 2))
    angle = np.zeros((t_count, n))
    vel = np.zeros((t_count, n, 2))
    angvel = np.zeros((t_count, n))
    dt = 1.0 / (scene.fps * scene.substeps)

    def record(t: int) -> None:
        for i, b in enumerate(bodies):
            pos[t, i] = b.position
            angle[t, i] = b.angle
            vel[t, i] = b.velocity
            angvel[t, i] = b.angular_velocity

    record(0)
    for t in range(1, t_count):
        if intervention is not None:
            intervention.before_frame(t, space, bodies)
        for _ in range(scene.substeps):
            space.step(dt)
        record(t)
    return Trajectory(
        pos=pos,
        angle=angle,
        vel=vel,
        angvel=angvel,
        mass=np.array([b.mass for b in bodies]),
        moment=np.array([b.moment for b in bodies]),
    )
