"""Turning a plausible run into a violated one of a chosen family, with a severity in [0, 1].

Every violated variant of a scene shares one ``Plan`` (family, subtype, target body, onset frame,
direction), drawn once, so variants differ only in severity: that is what makes same-scene severity
pairs clean. Each family's effect is a continuous function of severity that is exactly nothing at 0
(severity 0 returns the plausible run itself) and lasts from the onset to the end of the clip, so
16 uniformly sampled frames always see it.

Dynamic families (gravity, teleport, energy, causality) re-simulate with an intervention, so the
rest of the scene reacts to the broken body; kinematic ones (interpenetration, non-rigid change,
permanence, time anomalies) edit what is drawn, because no physics produces them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pymunk

from phyprobe.world.engine import ViolationPlan
from phyprobe.world.planar.render import Track, camera_path
from phyprobe.world.planar.scene import GRAVITY, VIEW_HEIGHT, Scene, lowest_point
from phyprobe.world.planar.simulate import Trajectory, simulate

FAMILIES: dict[str, tuple[str, ...]] = {
    "gravity": ("hover", "rising", "wrong_g"),
    "teleport": ("jump",),
    "interpenetration": ("floor", "wall", "body"),
    "non_rigid": ("grow", "shrink", "stretch", "wobble"),
    "permanence": ("vanish", "appear", "duplicate"),
    "energy": ("bounce_higher", "speed_up"),
    "causality": ("kick", "pull"),
    "time_anomaly": ("rewind", "freeze"),
}

# Full-severity sizes, all in world units (cm; the view is 300 tall) or frames.
TELEPORT_DISTANCE = 120.0
KICK_SPEED = 300.0
PULL_ACCEL = 1.2 * GRAVITY
SPEED_UP_ACCEL = 2.0 * GRAVITY
WRONG_G_UP, WRONG_G_DOWN = 1.5, 0.8  # g * (1 + 1.5 s) or g * (1 - 0.8 s)
SINK_DEPTH = 1.2  # times the body's extent
OVERLAP_DEPTH = 0.8  # times the smaller body's extent
GROW, SHRINK, STRETCH, WOBBLE = 0.8, 0.6, 0.7, 0.4
WOBBLE_HZ = 3.0
REWIND_FRACTION, FREEZE_FRACTION = 0.3, 0.5  # of the clip length
RAMP_FRAMES = 4  # kinematic edits ease in over this many frames (never a one-frame glitch)


@dataclass(frozen=True)
class Plan(ViolationPlan):
    direction: tuple[float, float]
    partner: int = -1


@dataclass
class Violated:
    track: Track  # what is drawn
    trajectory: Trajectory  # the physics that ran (the plausible one for kinematic families)


def _unit(angle: float) -> tuple[float, float]:
    return (math.cos(angle), math.sin(angle))


def _clearance(scene: Scene, traj: Trajectory, t: int) -> np.ndarray:
    """Height of each body's lowest point above the floor at frame t."""
    return np.array(
        [traj.pos[t, i, 1] - lowest_point(b.vertices, b.radius, traj.angle[t, i]) for i, b in enumerate(scene.bodies)]
    )


def _extent(scene: Scene, b: int, angle: float, u: np.ndarray) -> float:
    """How far body b reaches from its centre along unit vector u."""
    spec = scene.bodies[b]
    if spec.kind == "circle":
        return spec.radius
    c, s = math.cos(angle), math.sin(angle)
    v = np.asarray(spec.vertices)
    return float(((v[:, 0] * c - v[:, 1] * s) * u[0] + (v[:, 0] * s + v[:, 1] * c) * u[1]).max())


def _bounce_frames(traj: Trajectory, i: int, min_speed: float = 60.0) -> np.ndarray:
    vy = traj.vel[:, i, 1]
    return np.nonzero((vy[:-1] < -min_speed) & (vy[1:] > 0))[0] + 1


def plan_violation(family: str, scene: Scene, traj: Trajectory, rng: np.random.Generator) -> Plan:
    """The severity-independent choices for one scene; targets are picked so the effect is visible."""
    t_count, n = scene.num_frames, len(scene.bodies)
    onset = int(rng.integers(t_count // 4, t_count // 2 + 1))
    subtype = str(rng.choice(FAMILIES[family]))
    direction = _unit(float(rng.uniform(-math.pi, math.pi)))
    speed = np.linalg.norm(traj.vel, axis=-1)  # (T, N)
    partner = -1
    if family == "gravity":
        if subtype == "wrong_g":
            return Plan(family, subtype, -1, 1, (0.0, 1.0 if rng.random() < 0.5 else -1.0))
        # a body must be in the air for changed gravity to show: move the onset back until one is
        while onset > 1 and _clearance(scene, traj, onset).max() < 20.0:
            onset -= 1
        target = _best(_clearance(scene, traj, onset), _in_view(scene, traj, onset))
    elif family == "teleport":
        target = _any(rng, _in_view(scene, traj, onset))
        direction = _inside_direction(scene, traj.pos[onset, target], scene.bodies[target].radius, rng)
    elif family == "interpenetration":
        onset, target, subtype, direction, partner = _plan_penetration(scene, traj, subtype)
    elif family == "non_rigid":
        target = _any(rng, _in_view(scene, traj, onset))
    elif family == "permanence":
        target = _any(rng, _in_view(scene, traj, onset))
        x = traj.pos[onset, target, 0]
        direction = (1.0, 0.0) if x < scene.world_width / 2 else (-1.0, 0.0)
    elif family == "energy":
        bouncing = [
            (i, b) for i in range(n) for b in _bounce_frames(traj, i) if b >= 3 and _in_view(scene, traj, int(b) - 2)[i]
        ]
        if subtype == "bounce_higher" and bouncing:
            target, first = bouncing[int(rng.integers(len(bouncing)))]
            onset = int(first) - 2
        else:
            subtype = "speed_up"
            target = _best(speed[onset], _in_view(scene, traj, onset))  # already moving: visibly gains speed
            direction = (1.0 if rng.random() < 0.5 else -1.0, 0.0)  # along the floor if it stops
    elif family == "causality":
        target = _best(-speed[onset], _in_view(scene, traj, onset))  # the stillest: its motion has no excuse
        if subtype == "kick":
            direction = _unit(float(rng.uniform(math.pi / 3, 2 * math.pi / 3)))  # up, off its support
        else:
            others = [i for i in range(n) if i != target]
            partner = int(rng.choice(others)) if others else -1
            if partner < 0:
                subtype = "kick"
                direction = _unit(float(rng.uniform(math.pi / 3, 2 * math.pi / 3)))
    elif family == "time_anomaly":
        window = range(t_count // 4, t_count // 2 + 1)
        onset = max(window, key=lambda t: float(speed[t].max()))  # the most motion to disturb
        target = _best(speed[onset], _in_view(scene, traj, onset))
    else:
        raise ValueError(f"unknown violation family {family!r}; known: {sorted(FAMILIES)}")
    return Plan(family, subtype, int(target), int(onset), (float(direction[0]), float(direction[1])), int(partner))


def _in_view(scene: Scene, traj: Trajectory, onset: int) -> np.ndarray:
    """Bodies the camera shows for most of the clip after the onset (a panning camera loses some);
    all of them if none qualifies."""
    left = camera_path(scene, traj)[onset:, None]
    x = traj.pos[onset:, :, 0]
    seen = ((x > left) & (x < left + scene.view_width)).mean(axis=0) >= 0.6
    return seen if seen.any() else np.ones_like(seen)


def _best(score: np.ndarray, allowed: np.ndarray) -> int:
    return int(np.argmax(np.where(allowed, score, -np.inf)))


def _any(rng: np.random.Generator, allowed: np.ndarray) -> int:
    return int(rng.choice(np.flatnonzero(allowed)))


def _inside_direction(scene: Scene, p: np.ndarray, r: float, rng: np.random.Generator) -> tuple[float, float]:
    """A direction in which the full teleport distance keeps the body inside the world box, so every
    severity of one plan uses the same direction."""
    best, best_room = (0.0, 1.0), -1e9
    for a in rng.permutation(16) * (2 * math.pi / 16):
        u = _unit(float(a))
        q = p + TELEPORT_DISTANCE * np.asarray(u)
        room = min(q[0] - r, scene.world_width - r - q[0], q[1] - r, 0.85 * VIEW_HEIGHT - q[1])
        if room >= 0:
            return u
        if room > best_room:
            best, best_room = u, room
    return best


def _plan_penetration(scene: Scene, traj: Trajectory, subtype: str):
    """Pick a moment and a body already touching what it will pass into, so even low severities
    penetrate; a wall or body contact that never happens falls back to the floor."""
    t_count, n = scene.num_frames, len(scene.bodies)
    frames = range(t_count // 4, 2 * t_count // 3 + 1)
    hold = RAMP_FRAMES + 2  # the contact must last while the push eases in

    def wall_gap(t: int, i: int) -> float:
        x, ang = traj.pos[t, i, 0], traj.angle[t, i]
        return min(
            x - _extent(scene, i, ang, np.array([-1.0, 0.0])),
            scene.world_width - x - _extent(scene, i, ang, np.array([1.0, 0.0])),
        )

    def lasting(gap, t: int, *args) -> float:
        return max(gap(u, *args) for u in range(t, min(t + hold, t_count)))

    if subtype == "body" and n > 1:
        pair_gap = lambda t, a, b: _gap(scene, traj, t, a, b)  # noqa: E731
        gap, t, a, b = min(
            (lasting(pair_gap, t, a, b), t, a, b) for t in frames for a in range(n) for b in range(n) if a != b
        )
        if gap < 3.0:
            return t, a, "body", (0.0, 0.0), b
    if subtype == "wall":
        gap, t, i = min((lasting(wall_gap, t, i), t, i) for t in frames for i in range(n))
        if gap < 3.0:
            return t, i, "wall", ((-1.0, 0.0) if traj.pos[t, i, 0] < scene.world_width / 2 else (1.0, 0.0)), -1
    floor_gap = lambda t, i: float(_clearance(scene, traj, t)[i])  # noqa: E731
    seen = _in_view(scene, traj, t_count // 4)
    gap, t, i = min((lasting(floor_gap, t, i) + (0.0 if seen[i] else 1e6), t, i) for t in frames for i in range(n))
    return t, i, "floor", (0.0, -1.0), -1


def _gap(scene: Scene, traj: Trajectory, t: int, a: int, b: int) -> float:
    d = traj.pos[t, b] - traj.pos[t, a]
    dist = float(np.linalg.norm(d))
    u = d / max(dist, 1e-9)
    return dist - _extent(scene, a, traj.angle[t, a], u) - _extent(scene, b, traj.angle[t, b], -u)


def apply_violation(plan: Plan, scene: Scene, plausible: Trajectory, severity: float) -> Violated:
    if not 0.0 <= severity <= 1.0:
        raise ValueError(f"severity must be in [0, 1], got {severity}")
    if severity == 0.0:
        return Violated(Track.from_trajectory(plausible), plausible)
    fn = _APPLY[plan.family]
    return fn(plan, scene, plausible, float(severity))


# ---------------------------------------------------------------- dynamic families (re-simulated)


class _FromOnset:
    """Runs ``act(space, bodies)`` once at the onset frame."""

    def __init__(self, onset: int, act):
        self.onset, self.act = onset, act

    def before_frame(self, t: int, space: pymunk.Space, bodies: list[pymunk.Body]) -> None:
        if t == self.onset:
            self.act(space, bodies)


def _resimulated(scene: Scene, intervention=None, gravity_scale: float = 1.0) -> Violated:
    traj = simulate(scene, intervention, gravity_scale)
    return Violated(Track.from_trajectory(traj), traj)


def _gravity(plan: Plan, scene: Scene, plausible: Trajectory, s: float) -> Violated:
    if plan.subtype == "wrong_g":
        scale = 1 + WRONG_G_UP * s if plan.direction[1] > 0 else 1 - WRONG_G_DOWN * s
        return _resimulated(scene, gravity_scale=scale)
    scale = 1 - s if plan.subtype == "hover" else 1 - 2 * s

    def act(space, bodies):
        bodies[plan.target].velocity_func = lambda b, g, damping, dt: pymunk.Body.update_velocity(
            b, g * scale, damping, dt
        )

    return _resimulated(scene, _FromOnset(plan.onset, act))


def _teleport(plan: Plan, scene: Scene, plausible: Trajectory, s: float) -> Violated:
    def act(space, bodies):
        b = bodies[plan.target]
        b.position += (TELEPORT_DISTANCE * s * plan.direction[0], TELEPORT_DISTANCE * s * plan.direction[1])
        space.reindex_shapes_for_body(b)

    return _resimulated(scene, _FromOnset(plan.onset, act))


def _energy(plan: Plan, scene: Scene, plausible: Trajectory, s: float) -> Violated:
    if plan.subtype == "bounce_higher":
        last_vy = [0.0]

        def velocity(b, g, damping, dt):
            vy = b.velocity.y
            if last_vy[0] < -60.0 and vy > 0:  # the floor (or anything) just bounced it: add energy
                b.velocity += (0.0, s * abs(last_vy[0]))
            pymunk.Body.update_velocity(b, g, damping, dt)
            last_vy[0] = b.velocity.y
    else:
        fallback = np.asarray(plan.direction)

        def velocity(b, g, damping, dt):
            pymunk.Body.update_velocity(b, g, damping, dt)
            v = np.array(b.velocity)
            speed = float(np.linalg.norm(v))
            u = v / speed if speed > 1.0 else fallback
            b.velocity += (SPEED_UP_ACCEL * s * dt * u[0], SPEED_UP_ACCEL * s * dt * u[1])

    def act(space, bodies):
        bodies[plan.target].velocity_func = velocity

    return _resimulated(scene, _FromOnset(plan.onset, act))


def _causality(plan: Plan, scene: Scene, plausible: Trajectory, s: float) -> Violated:
    if plan.subtype == "kick":

        def act(space, bodies):
            bodies[plan.target].velocity += (KICK_SPEED * s * plan.direction[0], KICK_SPEED * s * plan.direction[1])

    else:

        def act(space, bodies):
            other = bodies[plan.partner]

            def velocity(b, g, damping, dt):
                pymunk.Body.update_velocity(b, g, damping, dt)
                d = np.array(other.position - b.position)
                u = d / max(float(np.linalg.norm(d)), 1e-6)
                b.velocity += (PULL_ACCEL * s * dt * u[0], PULL_ACCEL * s * dt * u[1])

            bodies[plan.target].velocity_func = velocity

    return _resimulated(scene, _FromOnset(plan.onset, act))


# ------------------------------------------------------------ kinematic families (edited drawing)


def _ease(plan: Plan, t_count: int, frames: int = RAMP_FRAMES) -> np.ndarray:
    """0 before the onset, rising linearly to 1 over ``frames`` frames, then 1 to the end."""
    t = np.arange(t_count)
    return np.clip((t - plan.onset + 1) / frames, 0.0, 1.0)


def _interpenetration(plan: Plan, scene: Scene, plausible: Trajectory, s: float) -> Violated:
    track = Track.from_trajectory(plausible)
    ease = _ease(plan, scene.num_frames)
    i = plan.target
    for t in range(plan.onset, scene.num_frames):
        ang = plausible.angle[t, i]
        if plan.subtype == "body":
            d = plausible.pos[t, plan.partner] - plausible.pos[t, i]
            u = d / max(float(np.linalg.norm(d)), 1e-9)
            small = min(_extent(scene, i, ang, u), _extent(scene, plan.partner, plausible.angle[t, plan.partner], -u))
            gap, depth = max(0.0, _gap(scene, plausible, t, i, plan.partner)), OVERLAP_DEPTH * small
        else:
            u = np.asarray(plan.direction)
            reach = _extent(scene, i, ang, u)
            if plan.subtype == "floor":
                gap = plausible.pos[t, i, 1] - reach
            else:
                x = plausible.pos[t, i, 0]
                gap = (x if u[0] < 0 else scene.world_width - x) - reach
            gap, depth = max(0.0, gap), SINK_DEPTH * reach
        track.pos[t, i] += s * ease[t] * (gap + depth) * u
    return Violated(track, plausible)


def _non_rigid(plan: Plan, scene: Scene, plausible: Trajectory, s: float) -> Violated:
    track = Track.from_trajectory(plausible)
    ease = _ease(plan, scene.num_frames, 2 * RAMP_FRAMES)
    k = s * ease
    if plan.subtype == "grow":
        sx = sy = 1 + GROW * k
    elif plan.subtype == "shrink":
        sx = sy = 1 - SHRINK * k
    elif plan.subtype == "stretch":
        sx = 1 + STRETCH * k
        sy = 1 / sx
    else:
        phase = np.sin(2 * np.pi * WOBBLE_HZ * (np.arange(scene.num_frames) - plan.onset) / scene.fps + np.pi / 2)
        sx = 1 + WOBBLE * k * phase
        sy = 1 - WOBBLE * k * phase
    track.scale[:, plan.target, 0] = sx
    track.scale[:, plan.target, 1] = sy
    return Violated(track, plausible)


def _permanence(plan: Plan, scene: Scene, plausible: Trajectory, s: float) -> Violated:
    track = Track.from_trajectory(plausible)
    ease = _ease(plan, scene.num_frames, 2)
    i = plan.target
    if plan.subtype == "vanish":
        track.alpha[:, i] = 1 - s * ease
        return Violated(track, plausible)
    if plan.subtype == "appear":  # a mirror-image twin fades in across the view, where nothing was
        centre = camera_path(scene, plausible)[plan.onset] + scene.view_width / 2
        dx = 2 * (centre - plausible.pos[plan.onset, i, 0])
        if abs(dx) < 2.5 * scene.bodies[i].radius:
            dx = 2.5 * scene.bodies[i].radius * plan.direction[0]
        pos = plausible.pos[:, i] + (dx, 0.0)
        angle = -plausible.angle[:, i]
    else:  # duplicate: a second copy of the target rides beside it
        offset = 2.2 * scene.bodies[i].radius * np.asarray(plan.direction)
        pos, angle = plausible.pos[:, i] + offset, plausible.angle[:, i]
    track.pos = np.concatenate([track.pos, pos[:, None]], axis=1)
    track.angle = np.concatenate([track.angle, angle[:, None]], axis=1)
    track.scale = np.concatenate([track.scale, np.ones_like(track.scale[:, :1])], axis=1)
    track.alpha = np.concatenate([track.alpha, (s * ease)[:, None]], axis=1)
    track.body = track.body + (i,)
    return Violated(track, plausible)


def time_map(plan: Plan, t_count: int, s: float) -> np.ndarray:
    """Which (fractional) plausible moment the target shows at each frame."""
    t = np.arange(t_count, dtype=np.float64)
    d = t - plan.onset
    if plan.subtype == "rewind":
        r = s * REWIND_FRACTION * t_count
        tau = np.where(d < 0, t, np.where(d <= r, plan.onset - d, t - 2 * r))
    else:
        f = s * FREEZE_FRACTION * t_count
        tau = np.where(d < 0, t, np.where(d <= f, plan.onset, t - f))
    return np.clip(tau, 0, t_count - 1)


def _time_anomaly(plan: Plan, scene: Scene, plausible: Trajectory, s: float) -> Violated:
    track = Track.from_trajectory(plausible)
    tau = time_map(plan, scene.num_frames, s)
    lo = np.floor(tau).astype(int)
    hi = np.minimum(lo + 1, scene.num_frames - 1)
    w = tau - lo
    i = plan.target
    track.pos[:, i] = plausible.pos[lo, i] * (1 - w)[:, None] + plausible.pos[hi, i] * w[:, None]
    track.angle[:, i] = plausible.angle[lo, i] * (1 - w) + plausible.angle[hi, i] * w
    return Violated(track, plausible)


_APPLY = {
    "gravity": _gravity,
    "teleport": _teleport,
    "interpenetration": _interpenetration,
    "non_rigid": _non_rigid,
    "permanence": _permanence,
    "energy": _energy,
    "causality": _causality,
    "time_anomaly": _time_anomaly,
}
