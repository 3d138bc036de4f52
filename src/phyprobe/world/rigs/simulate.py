"""The rigs world's own simulator of constrained mechanisms (numpy; no physics engine shared with the other
worlds).

Pendulums: each angle follows theta'' = -(g/L) sin(theta) - c theta', integrated by classical RK4 at 16
substeps per frame. Two bobs that touch exchange an impulse along their line of centres, with each bob's
effective mass along that line taken through its rod (the rod keeps it on its circle), and restitution.

Slope: each block moves along a path (the incline, then the floor) by one coordinate ``u``: gravity along
the incline, Coulomb friction against the normal force, the velocity's normal part lost at the foot, 1-D
impulses with restitution between neighbours on the floor and against the end wall. A cart on a spring tied
to the wall is advanced exactly (a rotation in phase space), then damped.

An :class:`Intervention` breaks physics for one body from one frame on, continuously in its parameters,
and is the identity at its defaults, so a violated run equals the plausible one up to its onset.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from phyprobe.world.rigs.scene import Scene

SUBSTEPS = 16
CONTACT_SPEED = 0.03  # m/s: slower approaches are resting contacts, not logged as events


@dataclass(frozen=True)
class Intervention:
    target: int
    onset: int  # the first frame the intervention shows in
    gravity: float = 1.0  # the scale of gravity on the target (pendulum: its g; block: its pull along the incline)
    lift: float = 0.0  # block: an upward acceleration in g that lifts it off the floor
    force: float = 1.0  # the scale of every force on the target (friction, spring, gravity)
    along: float = 0.0  # an acceleration along the target's own velocity, m/s^2
    vel_scale: float = 1.0  # applied to its velocity once, at the onset
    vel_add: float = 0.0  # added to its velocity along its path once, at the onset (m/s)
    pos_add: float = 0.0  # added to its position along its path once, at the onset (m)
    partner: int = -1  # the body whose contact distance with the target shrinks
    overlap: float = 0.0  # by this fraction (1: they pass through each other)
    restitution: float | None = None  # the restitution of the target's contacts with other bodies


@dataclass
class Trajectory:
    pos: np.ndarray  # (T, N, 2) centres, metres
    angle: np.ndarray  # (T, N) radians
    vel: np.ndarray  # (T, N, 2) m/s
    q: np.ndarray  # (T, N) the path coordinate: a pendulum's angle, a block's u, the cart's x
    qd: np.ndarray  # (T, N) its rate: angular velocity (rad/s) or speed along the path (m/s)
    energy: np.ndarray  # (T, N) kinetic + potential (+ the spring's) energy of each body, J per unit density
    contacts: list[tuple[int, int, int]]  # (frame, i, j): impacts faster than CONTACT_SPEED; j = -1: the wall


def _pendulum_acc(theta, omega, g, length, damping, along, force):
    acc = -(g / length) * np.sin(theta) - damping * omega + along * np.sign(omega) / length
    return acc * force


def simulate(scene: Scene, iv: Intervention | None = None, frames: int | None = None) -> Trajectory:
    frames = scene.num_frames if frames is None else frames
    return (_pendulums if scene.view == "pendulums" else _slope)(scene, iv, frames)


def _pendulums(scene: Scene, iv: Intervention | None, frames: int) -> Trajectory:
    pend = scene.pendulums
    n = len(pend)
    dt = 1.0 / (scene.fps * SUBSTEPS)
    pivot = np.array([p.pivot for p in pend])
    length = np.array([p.length for p in pend])
    mass = np.array([b.mass for b in scene.bodies])
    reach = np.array(scene.reach)
    theta = np.array([p.theta for p in pend], dtype=float)
    omega = np.array([p.omega for p in pend], dtype=float)
    g = np.full(n, scene.gravity)
    along, force = np.zeros(n), np.ones(n)
    e_pair = np.full((n, n), scene.restitution)
    damping = scene.damping
    iu, ju = np.triu_indices(n, 1)

    def state(th, om):
        s, c = np.sin(th), np.cos(th)
        pos = pivot + length[:, None] * np.stack([s, -c], 1)
        vel = (length * om)[:, None] * np.stack([c, s], 1)
        return pos, vel

    def energy(th, om):
        return 0.5 * mass * (length * om) ** 2 + mass * scene.gravity * (pivot[:, 1] - length * np.cos(th))

    out_q, out_w, out_e = [theta.copy()], [omega.copy()], [energy(theta, omega)]
    contacts: list[tuple[int, int, int]] = []
    for t in range(1, frames):
        if iv is not None and t == iv.onset:
            i = iv.target
            omega[i] = omega[i] * iv.vel_scale + iv.vel_add / length[i]
            theta[i] += iv.pos_add / length[i]
            g[i] *= iv.gravity
            along[i], force[i] = iv.along, iv.force
            if iv.partner >= 0:
                reach[i, iv.partner] = reach[iv.partner, i] = reach[i, iv.partner] * (1.0 - iv.overlap)
            if iv.restitution is not None:
                e_pair[i, :] = e_pair[:, i] = iv.restitution
        for _ in range(SUBSTEPS):
            k1t, k1w = omega, _pendulum_acc(theta, omega, g, length, damping, along, force)
            k2t = omega + 0.5 * dt * k1w
            k2w = _pendulum_acc(theta + 0.5 * dt * k1t, k2t, g, length, damping, along, force)
            k3t = omega + 0.5 * dt * k2w
            k3w = _pendulum_acc(theta + 0.5 * dt * k2t, k3t, g, length, damping, along, force)
            k4t = omega + dt * k3w
            k4w = _pendulum_acc(theta + dt * k3t, k4t, g, length, damping, along, force)
            theta = theta + dt / 6 * (k1t + 2 * k2t + 2 * k3t + k4t)
            omega = omega + dt / 6 * (k1w + 2 * k2w + 2 * k3w + k4w)
            pos, vel = state(theta, omega)
            d = pos[ju] - pos[iu]
            dist = np.hypot(d[:, 0], d[:, 1])
            for k in np.flatnonzero((dist < reach[iu, ju]) & (dist > 1e-9)):
                a, b = int(iu[k]), int(ju[k])
                nrm = d[k] / dist[k]
                rel = float((vel[b] - vel[a]) @ nrm)
                if rel >= 0:
                    continue
                ta = np.array([math.cos(theta[a]), math.sin(theta[a])]) @ nrm
                tb = np.array([math.cos(theta[b]), math.sin(theta[b])]) @ nrm
                w = ta * ta / mass[a] + tb * tb / mass[b]
                if w < 1e-12:
                    continue
                jimp = -(1 + e_pair[a, b]) * rel / w
                omega[a] -= jimp * ta / (mass[a] * length[a])
                omega[b] += jimp * tb / (mass[b] * length[b])
                if -rel > CONTACT_SPEED:
                    contacts.append((t, a, b))
        out_q.append(theta.copy())
        out_w.append(omega.copy())
        out_e.append(energy(theta, omega))
    q, om = np.stack(out_q), np.stack(out_w)
    s, c = np.sin(q), np.cos(q)
    pos = pivot[None] + length[None, :, None] * np.stack([s, -c], -1)
    vel = (length * om)[..., None] * np.stack([c, s], -1)
    return Trajectory(pos, q.copy(), vel, q, om, np.stack(out_e), contacts)


def block_pose(scene: Scene, i: int, u: float, lift: float = 0.0) -> tuple[float, float, float]:
    """(x, y, angle) of block ``i``'s centre with the bottom centre at path coordinate ``u``: on the incline
    for u < 0, on the floor for u > 0, turning from the one to the other over its own width."""
    sl, body = scene.slope, scene.bodies[i]
    hw, hh = body.half
    if body.kind == "cart":
        return u, hh + lift, 0.0
    al = sl.angle
    px, py = (u * math.cos(al), -u * math.sin(al)) if u < 0 else (u, 0.0)
    ang = -al * float(np.clip((hw - u) / (2 * hw), 0.0, 1.0))
    return px - hh * math.sin(ang), py + hh * math.cos(ang) + lift, ang


def _slope(scene: Scene, iv: Intervention | None, frames: int) -> Trajectory:
    sl = scene.slope
    n = len(scene.bodies)
    g = scene.gravity
    dt = 1.0 / (scene.fps * SUBSTEPS)
    sa, ca = math.sin(sl.angle), math.cos(sl.angle)
    mass = np.array([b.mass for b in scene.bodies])
    width = np.array([2 * b.half[0] for b in scene.bodies])
    cart = n == 3 and scene.bodies[2].kind == "cart"
    u = np.array(list(sl.u0) + ([sl.cart_x] if cart else []), dtype=float)
    v = np.array(list(sl.v0) + ([0.0] if cart else []), dtype=float)
    lift, lift_v = np.zeros(n), np.zeros(n)
    pull, up, force, along = np.ones(n), np.zeros(n), np.ones(n), np.zeros(n)
    reach = (width[:, None] + width[None, :]) / 2
    e_pair = np.full((n, n), scene.restitution)
    omega_s = math.sqrt(sl.spring_k / mass[2]) if cart else 0.0

    def energy():
        height = np.where(u < 0, -u * sa, 0.0) + lift
        e = 0.5 * mass * (v**2 + lift_v**2) + mass * g * height
        if cart:
            e[2] += 0.5 * sl.spring_k * (u[2] - sl.spring_rest) ** 2
        return e

    def poses():
        return [block_pose(scene, i, float(u[i]), float(lift[i])) for i in range(n)]

    out_u, out_v, out_p, out_e = [u.copy()], [v.copy()], [poses()], [energy()]
    contacts: list[tuple[int, int, int]] = []
    for t in range(1, frames):
        if iv is not None and t == iv.onset:
            i = iv.target
            v[i] = v[i] * iv.vel_scale + iv.vel_add
            u[i] += iv.pos_add
            pull[i], up[i], force[i], along[i] = iv.gravity, iv.lift, iv.force, iv.along
            if iv.partner >= 0:
                reach[i, iv.partner] = reach[iv.partner, i] = reach[i, iv.partner] * (1.0 - iv.overlap)
            if iv.restitution is not None:
                e_pair[i, :] = e_pair[:, i] = iv.restitution
        for _ in range(SUBSTEPS):
            for i in range(n):
                f = force[i]
                if up[i] > 0 or lift[i] > 0:  # off the ground: only the lift against gravity, no friction
                    lift_v[i] += (up[i] - 1.0) * g * f * dt
                    lift[i] += lift_v[i] * dt
                    if lift[i] <= 0:
                        lift[i], lift_v[i] = 0.0, 0.0
                    drive = 0.0
                elif cart and i == 2:
                    # exact harmonic step about the rest position, then damping
                    x, w = u[i] - sl.spring_rest, omega_s * math.sqrt(f) if f > 0 else 0.0
                    if w > 0:
                        c, s = math.cos(w * dt), math.sin(w * dt)
                        x, v[i] = x * c + v[i] / w * s, -x * w * s + v[i] * c
                        u[i] = sl.spring_rest + x
                    else:
                        u[i] += v[i] * dt
                    v[i] *= math.exp(-sl.cart_damping * f * dt)
                    v[i] += along[i] * np.sign(v[i]) * dt
                    continue
                else:
                    drive = g * sa * pull[i] * f if u[i] < 0 else 0.0
                normal = (ca if u[i] < 0 else 1.0) * g * f * (0.0 if lift[i] > 0 else 1.0)
                drive += along[i] * np.sign(v[i])
                fr = sl.friction * normal
                if v[i] != 0.0:
                    nv = v[i] + (drive - fr * np.sign(v[i])) * dt
                    if nv * v[i] < 0 and abs(drive) <= fr:
                        nv = 0.0
                elif abs(drive) > fr:
                    nv = (drive - fr * np.sign(drive)) * dt
                else:
                    nv = 0.0
                old = u[i]
                v[i] = nv
                u[i] += v[i] * dt
                if (old < 0) != (u[i] < 0):  # over the foot: the velocity's part normal to the new surface is lost
                    v[i] *= ca
                if u[i] < -sl.top + width[i] / 2:
                    u[i], v[i] = -sl.top + width[i] / 2, max(0.0, v[i])
            # 1-D contacts between neighbours on the floor, then the end wall
            order = np.argsort(u, kind="stable")
            for a, b in zip(order[:-1], order[1:]):
                a, b = int(a), int(b)
                if lift[a] > 0 or lift[b] > 0:
                    continue
                gap = u[b] - u[a] - reach[a, b]
                rel = v[a] - v[b]
                if gap < 0 and u[b] > -width[b] / 2:
                    wsum = 1 / mass[a] + 1 / mass[b]
                    if rel > 0:
                        jimp = (1 + e_pair[a, b]) * rel / wsum
                        v[a] -= jimp / mass[a]
                        v[b] += jimp / mass[b]
                        if rel > CONTACT_SPEED:
                            contacts.append((t, min(a, b), max(a, b)))
                    u[a] += gap / mass[a] / wsum
                    u[b] -= gap / mass[b] / wsum
            for i in range(n):
                if u[i] + width[i] / 2 > sl.wall_x and v[i] > 0:
                    if v[i] > CONTACT_SPEED:
                        contacts.append((t, i, -1))
                    u[i] = sl.wall_x - width[i] / 2
                    v[i] = -scene.wall_restitution * v[i]
        out_u.append(u.copy())
        out_v.append(v.copy())
        out_p.append(poses())
        out_e.append(energy())
    q = np.stack(out_u)
    p = np.array(out_p)  # (T, N, 3)
    pos = p[..., :2]
    vel = np.gradient(pos, axis=0) * scene.fps if len(pos) > 1 else np.zeros_like(pos)
    return Trajectory(pos.copy(), p[..., 2].copy(), vel, q, np.stack(out_v), np.stack(out_e), contacts)
