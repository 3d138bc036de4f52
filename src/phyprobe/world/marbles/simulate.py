"""The marbles world's own rigid-disc simulator (numpy; no physics engine shared with the other worlds).

Fixed substeps of semi-implicit Euler; ball-ball contacts resolved by an impulse along the normal with
restitution and a mass-weighted positional correction; walls, floor and cushions reflect the normal
velocity with restitution; a ball rolling on the floor (side) or the cloth (table) slows by the scene's
friction and turns without slipping, which is what makes its pattern spin on screen.

An :class:`Intervention` breaks physics for one ball from one frame on, continuously in its parameters,
and is the identity at its defaults, so a violated run equals the plausible one up to its onset.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from phyprobe.world.marbles.scene import Scene

SUBSTEPS = 16
REST_SPEED = 0.12  # m/s: a floor bounce slower than this ends in rest (no endless micro-bounces)
CONTACT_SPEED = 0.05  # m/s: slower approaches are resting contacts, not logged as events


@dataclass(frozen=True)
class Intervention:
    target: int
    onset: int  # the first frame the intervention shows in
    accel: tuple[float, float] = (0.0, 0.0)  # a constant acceleration nothing explains
    along: float = 0.0  # an acceleration along the ball's own velocity
    gravity: float = 1.0  # the scale of gravity on the ball
    vel_scale: float = 1.0  # applied to its velocity once, at the onset
    vel_add: tuple[float, float] = (0.0, 0.0)  # added to its velocity once, at the onset
    pos_add: tuple[float, float] = (0.0, 0.0)  # added to its position once, at the onset
    sink: float = 0.0  # metres its walls, floor and cushions give way before it bounces
    restitution: float | None = None  # its restitution against walls, floor and cushions
    partner: int = -1  # the ball whose contact distance with the target shrinks
    overlap: float = 0.0  # by this fraction (1: they pass through each other)


@dataclass
class Trajectory:
    pos: np.ndarray  # (T, N, 2) metres
    vel: np.ndarray  # (T, N, 2) m/s
    rot: np.ndarray  # (T, N, 3, 3) each ball's orientation (its pattern's frame)
    contacts: list[tuple[int, str, int, int]]  # (frame, "ball" | "wall", i, j): impacts faster than CONTACT_SPEED

    def energy(self, scene: Scene) -> np.ndarray:
        """(T, N) translational kinetic plus potential energy (side view; the cloth is level)."""
        m = np.array([b.mass for b in scene.balls])
        return 0.5 * m * (self.vel**2).sum(-1) + m * scene.gravity * self.pos[..., 1]


def _rotation(axis: np.ndarray, angle: float) -> np.ndarray:
    """Rodrigues' rotation about a unit axis."""
    x, y, z = axis
    k = np.array([[0, -z, y], [z, 0, -x], [-y, x, 0]])
    return np.eye(3) + math.sin(angle) * k + (1 - math.cos(angle)) * (k @ k)


def simulate(scene: Scene, iv: Intervention | None = None) -> Trajectory:
    n, t_count = len(scene.balls), scene.num_frames
    dt = 1.0 / (scene.fps * SUBSTEPS)
    r = np.array([b.radius for b in scene.balls])
    inv_m = 1.0 / np.array([b.mass for b in scene.balls])
    e_wall = np.array(
        [
            min(b.restitution, scene.wall_restitution) if scene.view == "side" else scene.wall_restitution
            for b in scene.balls
        ]
    )
    pos = np.array([b.pos for b in scene.balls], dtype=float)
    vel = np.array([b.vel for b in scene.balls], dtype=float)
    rot = np.stack([np.array(b.orient).reshape(3, 3) for b in scene.balls])
    g = np.array([0.0, -scene.gravity])
    lo = np.stack([r, r], axis=1)
    hi = np.stack([scene.width_m - r, np.full(n, np.inf if scene.view == "side" else scene.height_m) - r], axis=1)
    iu, ju = np.triu_indices(n, 1)
    reach = r[iu] + r[ju]
    own = np.array([b.restitution for b in scene.balls])
    e_pair = np.minimum(own[iu], own[ju]) if scene.view == "side" else np.full(len(iu), scene.ball_restitution)

    out_pos, out_vel, out_rot = [pos.copy()], [vel.copy()], [rot.copy()]
    contacts: list[tuple[int, str, int, int]] = []
    active = False
    for t in range(1, t_count):
        if iv is not None and t == iv.onset:
            active = True
            i = iv.target
            vel[i] = vel[i] * iv.vel_scale + np.array(iv.vel_add)
            pos[i] = pos[i] + np.array(iv.pos_add)
            lo[i] -= iv.sink
            hi[i] += iv.sink
            if iv.restitution is not None:
                e_wall[i] = iv.restitution
            if iv.partner >= 0:
                k = int(np.flatnonzero((iu == min(i, iv.partner)) & (ju == max(i, iv.partner)))[0])
                reach[k] *= 1.0 - iv.overlap
        resting = np.zeros(n, bool)
        for _ in range(SUBSTEPS):
            acc = np.broadcast_to(g, (n, 2)).copy()
            if active:
                i = iv.target
                speed = float(np.hypot(*vel[i]))
                acc[i] = g * iv.gravity + np.array(iv.accel) + (iv.along * vel[i] / speed if speed > 1e-9 else 0.0)
            vel += acc * dt
            # rolling friction on whatever touches the floor (side) or the cloth (table, everything)
            if scene.view == "side":
                on = pos[:, 1] <= lo[:, 1] + 1e-6
                vel[on, 0] = np.sign(vel[on, 0]) * np.maximum(0.0, np.abs(vel[on, 0]) - scene.friction * dt)
            else:
                sp = np.hypot(vel[:, 0], vel[:, 1])
                k = np.where(sp > 1e-12, np.maximum(0.0, sp - scene.friction * dt) / np.maximum(sp, 1e-12), 0.0)
                vel *= k[:, None]
            pos += vel * dt
            # walls, floor, cushions
            for axis in (0, 1):
                below, above = (
                    (pos[:, axis] < lo[:, axis]) & (vel[:, axis] < 0),
                    (pos[:, axis] > hi[:, axis]) & (vel[:, axis] > 0),
                )
                for hit, bound in ((below, lo), (above, hi)):
                    for i in np.flatnonzero(hit):
                        speed = abs(vel[i, axis])
                        pos[i, axis] = bound[i, axis]
                        vel[i, axis] = -e_wall[i] * vel[i, axis]
                        if scene.view == "side" and axis == 1 and speed * e_wall[i] < REST_SPEED and bound is lo:
                            vel[i, 1] = 0.0
                        if speed > CONTACT_SPEED:
                            contacts.append((t, "wall", int(i), -1))
            if scene.view == "side":
                floor = (pos[:, 1] <= lo[:, 1] + 1e-6) & (vel[:, 1] <= 0)
                pos[floor, 1] = lo[floor, 1]
                vel[floor, 1] = 0.0
                resting |= floor
            # ball-ball contacts
            d = pos[ju] - pos[iu]
            dist = np.hypot(d[:, 0], d[:, 1])
            for k in np.flatnonzero((dist < reach) & (dist > 1e-9)):
                a, b = iu[k], ju[k]
                nrm = d[k] / dist[k]
                rel = float((vel[b] - vel[a]) @ nrm)
                w = inv_m[a] + inv_m[b]
                if rel < 0:
                    jimp = -(1 + e_pair[k]) * rel / w
                    vel[a] -= jimp * inv_m[a] * nrm
                    vel[b] += jimp * inv_m[b] * nrm
                    if -rel > CONTACT_SPEED:
                        contacts.append((t, "ball", int(a), int(b)))
                pen = reach[k] - dist[k]
                pos[a] -= pen * inv_m[a] / w * nrm
                pos[b] += pen * inv_m[b] / w * nrm
        # turn each ball that rolled by the distance it rolled (side view: on the floor only; in the air it keeps its pose)
        moved = pos - out_pos[-1]
        for i in range(n):
            if scene.view == "side":
                if resting[i]:
                    rot[i] = _rotation(np.array([0.0, 0.0, -1.0]), moved[i, 0] / r[i]) @ rot[i]
            else:
                step = float(np.hypot(*moved[i]))
                if step > 1e-12:
                    rot[i] = _rotation(np.array([-moved[i, 1], moved[i, 0], 0.0]) / step, step / r[i]) @ rot[i]
        out_pos.append(pos.copy())
        out_vel.append(vel.copy())
        out_rot.append(rot.copy())
    return Trajectory(np.stack(out_pos), np.stack(out_vel), np.stack(out_rot), contacts)
