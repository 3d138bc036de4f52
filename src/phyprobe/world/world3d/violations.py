"""Turning a plausible 3D run into a violated one of a chosen family, with a severity in [0, 1].

As in the planar world: every violated variant of a scene shares one ``Plan`` drawn once, each
family's effect is a continuous function of severity that is exactly nothing at 0, and it lasts from
the onset to the end of the clip (except ``brief``, which lasts one to three frames).

Dynamic families (gravity, teleport, energy, causality, support, momentum) re-simulate with an
intervention from the onset, so the rest of the scene reacts; kinematic ones (interpenetration,
non-rigid change, permanence, time anomalies, rolling without rotation, brief glitches) edit what is
drawn, because no physics produces them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pybullet as p
from scipy.spatial.transform import Rotation

from phyprobe.world.engine import ViolationPlan
from phyprobe.world.world3d.render import Renderer, Track
from phyprobe.world.world3d.scene import GRAVITY, Scene
from phyprobe.world.world3d.simulate import Trajectory, World

FAMILIES: dict[str, tuple[str, ...]] = {
    "gravity": ("hover", "rising", "wrong_g"),
    "teleport": ("jump",),
    "interpenetration": ("floor", "body"),
    "non_rigid": ("grow", "shrink", "stretch", "wobble"),
    "permanence": ("vanish", "appear", "duplicate"),
    "energy": ("bounce_higher", "speed_up"),
    "causality": ("kick", "pull"),
    "time_anomaly": ("rewind", "freeze"),
    "support": ("stays_up",),
    "momentum": ("light_slow", "heavy_bounce"),
    "rolling": ("no_spin", "backspin"),
    "brief": ("jump", "flicker", "freeze"),
}

# Full-severity sizes in metres, m/s, m/s^2 or fractions
TELEPORT_DISTANCE = 0.3
BRIEF_DISTANCE = 0.25
KICK_SPEED = 2.0
PULL_ACCEL = 1.2 * GRAVITY
SPEED_UP_ACCEL = 1.5 * GRAVITY
WRONG_G_UP, WRONG_G_DOWN = 1.5, 0.8
SINK_DEPTH = 1.2  # times the body's height above its lowest point
OVERLAP_DEPTH = 0.7  # times the smaller body's reach
GROW, SHRINK, STRETCH, WOBBLE = 0.8, 0.6, 0.7, 0.4
WOBBLE_HZ = 3.0
REWIND_FRACTION, FREEZE_FRACTION = 0.3, 0.5
LIGHT_SLOWDOWN = 0.85  # the light body leaves with (1 - 0.85 s) of its speed
HEAVY_REBOUND = 1.6  # the heavy body's approach speed is reversed by up to 0.6 of itself
MAX_BRIEF = 3
RAMP_FRAMES = 4
MOMENTUM_DELAY = 2  # substeps after first contact, once the collision impulse has been resolved


@dataclass(frozen=True)
class Plan(ViolationPlan):
    direction: tuple[float, float, float]
    partner: int = -1
    group: tuple[int, ...] = ()  # support: the bodies the removed base was holding up
    frames: int = 0  # brief: how many frames the glitch lasts

    def to_metadata(self) -> dict:
        meta = super().to_metadata()
        if self.family == "brief":
            meta["brief_frames"] = self.frames
        return meta


@dataclass
class Violated:
    track: Track
    trajectory: Trajectory


@dataclass
class Context:
    """What planning and applying need from a scene: its spec, client, plausible run and camera."""

    scene: Scene
    world: World
    plausible: Trajectory
    view: Renderer


# ------------------------------------------------------------------------------------- planning


def _in_view(ctx: Context, onset: int, margin: float = 0.08) -> np.ndarray:
    """Bodies the camera shows for most of the clip after the onset; all of them if none does."""
    st = ctx.view.style
    seen = []
    for i in range(len(ctx.scene.bodies)):
        xy = np.stack(
            [ctx.view.project(ctx.plausible.pos[t, i][None], t)[0] for t in range(onset, ctx.scene.num_frames)]
        )
        inside = (
            (xy[:, 0] > margin * st.width)
            & (xy[:, 0] < (1 - margin) * st.width)
            & (xy[:, 1] > margin * st.height)
            & (xy[:, 1] < (1 - margin) * st.height)
        )
        seen.append(inside.mean() >= 0.6)
    seen = np.array(seen)
    return seen if seen.any() else np.ones_like(seen)


def _best(score: np.ndarray, allowed: np.ndarray) -> int:
    return int(np.argmax(np.where(allowed, score, -np.inf)))


def _any(rng: np.random.Generator, allowed: np.ndarray) -> int:
    return int(rng.choice(np.flatnonzero(allowed)))


def _camera_right(ctx: Context, t: int) -> np.ndarray:
    d = ctx.view.target[t] - ctx.view.eye[t]
    r = np.cross(d, [0.0, 0.0, 1.0])
    return r / np.linalg.norm(r)


def _fits(ctx: Context, point: np.ndarray, t: int, margin: float = 0.1) -> bool:
    x, y = ctx.view.project(point[None], t)[0]
    st = ctx.view.style
    return margin * st.width < x < (1 - margin) * st.width and margin * st.height < y < (1 - margin) * st.height


def _visible_direction(
    ctx: Context, i: int, onset: int, distance: float, rng: np.random.Generator
) -> tuple[float, float, float]:
    """A direction (across the view or up) in which the full displacement keeps the body in shot
    and above the floor, so every severity of one plan uses the same direction."""
    right = _camera_right(ctx, onset)
    p0 = ctx.plausible.pos[onset, i]
    reach = p0[2] - ctx.plausible.low[onset, i]
    for a in rng.permutation(12) * (2 * math.pi / 12):
        u = math.cos(a) * right + math.sin(a) * np.array([0.0, 0.0, 1.0])
        q = p0 + distance * u
        if q[2] - reach >= 0.0 and _fits(ctx, q, onset):
            return tuple(float(v) for v in u)
    return (0.0, 0.0, 1.0)


def _primitive(ctx: Context) -> np.ndarray:
    return np.array([b.kind != "urdf" for b in ctx.scene.bodies])


def _round(ctx: Context) -> np.ndarray:
    return np.array([b.kind in ("sphere", "cylinder") for b in ctx.scene.bodies])


def plan_violation(family: str, ctx: Context, rng: np.random.Generator) -> Plan:
    """The severity-independent choices for one scene; targets are picked so the effect is visible."""
    if family not in FAMILIES:
        raise ValueError(f"unknown violation family {family!r}; known: {sorted(FAMILIES)}")
    scene, traj = ctx.scene, ctx.plausible
    t_count, n = scene.num_frames, len(scene.bodies)
    onset = int(rng.integers(t_count // 4, t_count // 2 + 1))
    subtype = str(rng.choice(FAMILIES[family]))
    speed = np.linalg.norm(traj.vel, axis=-1)
    clearance = traj.low
    direction, partner, group, frames = (0.0, 0.0, 1.0), -1, (), 0
    if family == "gravity":
        if subtype == "wrong_g":
            return Plan(family, subtype, -1, 1, (0.0, 0.0, 1.0 if rng.random() < 0.5 else -1.0))
        while onset > 1 and clearance[onset].max() < 0.1:
            onset -= 1
        target = _best(clearance[onset], _in_view(ctx, onset))
    elif family == "teleport":
        target = _any(rng, _in_view(ctx, onset))
        direction = _visible_direction(ctx, target, onset, TELEPORT_DISTANCE, rng)
    elif family == "interpenetration":
        onset, target, subtype, partner = _plan_penetration(ctx, subtype)
    elif family == "non_rigid":
        target = _any(rng, _in_view(ctx, onset) & _primitive(ctx))
    elif family == "permanence":
        target = _any(rng, _in_view(ctx, onset))
        right = _camera_right(ctx, onset)
        centre = ctx.view.target[onset]
        side = 1.0 if np.dot(centre - traj.pos[onset, target], right) > 0 else -1.0
        direction = tuple(float(v) for v in side * right)
    elif family == "energy":
        bouncing = [
            (i, b) for i in range(n) for b in _bounce_frames(traj, i) if b >= 3 and _in_view(ctx, int(b) - 2)[i]
        ]
        if subtype == "bounce_higher" and bouncing:
            target, first = bouncing[int(rng.integers(len(bouncing)))]
            onset = int(first) - 2
        else:
            subtype = "speed_up"
            target = _best(speed[onset], _in_view(ctx, onset))
            direction = tuple(float(v) for v in _camera_right(ctx, onset) * (1.0 if rng.random() < 0.5 else -1.0))
    elif family == "causality":
        target = _best(-speed[onset], _in_view(ctx, onset))  # the stillest: its motion has no excuse
        others = [i for i in range(n) if i != target]
        if subtype == "pull":
            partner = int(rng.choice(others))
        a, el = float(rng.uniform(0, 2 * math.pi)), float(rng.uniform(math.pi / 4, math.pi / 2.5))
        direction = (math.cos(a) * math.cos(el), math.sin(a) * math.cos(el), math.sin(el))
    elif family == "time_anomaly":
        window = range(t_count // 4, t_count // 2 + 1)
        onset = max(window, key=lambda t: float(speed[t].max()))
        target = _best(speed[onset], _in_view(ctx, onset))
    elif family == "support":
        group = tuple(scene.role("block"))
        onset = support_lost(ctx)
        target = group[0]
    elif family == "momentum":
        striker, base = scene.role("striker")[0], scene.role("base")[0]
        onset = support_lost(ctx)  # the collision's frame
        target, partner = (base, striker) if subtype == "light_slow" else (striker, base)
    elif family == "rolling":
        onset = int(rng.integers(max(1, t_count // 8), t_count // 3 + 1))
        turn = _rotation_after(traj, onset)
        seen = _round(ctx) & _in_view(ctx, onset)
        target = _best(turn, seen if seen.any() else _round(ctx))  # the striker is always round
    else:  # brief
        frames = int(rng.integers(1, MAX_BRIEF + 1))
        target = _best(speed[onset], _in_view(ctx, onset)) if subtype == "freeze" else _any(rng, _in_view(ctx, onset))
        if subtype == "jump":
            direction = _visible_direction(ctx, target, onset, BRIEF_DISTANCE, rng)
    return Plan(
        family,
        subtype,
        int(target),
        int(onset),
        tuple(float(v) for v in direction),
        int(partner),
        tuple(int(g) for g in group),
        frames,
    )


def support_lost(ctx: Context) -> int:
    """The frame in which the striker first touches the base: from then on the base is knocked
    from under the tower (the blocks' support goes while their weight is cancelled, so friction
    cannot drag them along either); a third of the way in if it never touches."""
    hits = np.flatnonzero(ctx.plausible.contact)
    return int(max(1, hits[0])) if len(hits) else ctx.scene.num_frames // 3


def _bounce_frames(traj: Trajectory, i: int, min_speed: float = 0.4) -> np.ndarray:
    vz = traj.vel[:, i, 2]
    return np.nonzero((vz[:-1] < -min_speed) & (vz[1:] > 0))[0] + 1


def _rotation_after(traj: Trajectory, onset: int) -> np.ndarray:
    """(N,) total angle each body turns through from the onset on."""
    t, n = traj.quat.shape[:2]
    out = np.zeros(n)
    for i in range(n):
        r = Rotation.from_quat(traj.quat[onset:, i])
        out[i] = (r[1:] * r[:-1].inv()).magnitude().sum() if len(r) > 1 else 0.0
    return out


def closest_distance(world: World, a: int, b: int, limit: float = 0.3) -> float:
    """Signed distance between bodies a and b as currently posed (negative: overlapping)."""
    pts = p.getClosestPoints(world.ids[a], world.ids[b], limit, physicsClientId=world.cid)
    return min((q[8] for q in pts), default=limit)


def _plan_penetration(ctx: Context, subtype: str):
    """Pick a moment and a body already touching what it will pass into, so even low severities
    penetrate; a body contact that never happens falls back to the floor."""
    scene, traj, world = ctx.scene, ctx.plausible, ctx.world
    t_count, n = scene.num_frames, len(scene.bodies)
    frames = range(t_count // 4, 2 * t_count // 3 + 1)
    hold = RAMP_FRAMES + 2
    seen = _in_view(ctx, t_count // 4)
    if subtype == "body":
        gaps = {}
        for t in range(frames.start, min(frames.stop + hold, t_count)):
            world.pose(traj.pos[t], traj.quat[t])
            for a in range(n):
                for b in range(a + 1, n):
                    if np.linalg.norm(traj.pos[t, a] - traj.pos[t, b]) < world.radius(a) + world.radius(b) + 0.05:
                        gaps[t, a, b] = closest_distance(world, a, b)
        best = None
        for t in frames:
            for a in range(n):
                for b in range(a + 1, n):
                    g = max(gaps.get((u, a, b), 1.0) for u in range(t, min(t + hold, t_count)))
                    if seen[a] and (best is None or g < best[0]):
                        best = (g, t, a, b)
        if best is not None and best[0] < 0.01:
            return best[1], best[2], "body", best[3]
    lasting = [
        (max(traj.low[u, i] for u in range(t, min(t + hold, t_count))) + (0.0 if seen[i] else 1e6), t, i)
        for t in frames
        for i in range(n)
    ]
    _, t, i = min(lasting)
    return t, i, "floor", -1


# -------------------------------------------------------------------------------------- applying


def apply_violation(plan: Plan, ctx: Context, severity: float) -> Violated:
    if not 0.0 <= severity <= 1.0:
        raise ValueError(f"severity must be in [0, 1], got {severity}")
    if severity == 0.0:
        return Violated(Track.from_trajectory(ctx.plausible), ctx.plausible)
    return _APPLY[plan.family](plan, ctx, float(severity))


class _Act:
    """Runs ``fn(world, t, k)`` before every substep from the onset frame on."""

    def __init__(self, onset: int, fn):
        self.onset, self.fn = onset, fn

    def before_substep(self, world: World, t: int, k: int) -> None:
        if t >= self.onset:
            self.fn(world, t, k)


def _resimulated(ctx: Context, act=None, gravity_scale: float = 1.0) -> Violated:
    traj = ctx.world.simulate(act, gravity_scale)
    return Violated(Track.from_trajectory(traj), traj)


def _push(world: World, i: int, force) -> None:
    bid = world.sim_ids[i]
    pos = p.getBasePositionAndOrientation(bid, physicsClientId=world.sim)[0]
    p.applyExternalForce(bid, -1, list(force), pos, p.WORLD_FRAME, physicsClientId=world.sim)


def _position(world: World, i: int) -> np.ndarray:
    return np.array(p.getBasePositionAndOrientation(world.sim_ids[i], physicsClientId=world.sim)[0])


def _velocity(world: World, i: int):
    v, w = p.getBaseVelocity(world.sim_ids[i], physicsClientId=world.sim)
    return np.array(v), np.array(w)


def _set_velocity(world: World, i: int, v, w) -> None:
    p.resetBaseVelocity(world.sim_ids[i], list(map(float, v)), list(map(float, w)), physicsClientId=world.sim)


def _gravity(plan: Plan, ctx: Context, s: float) -> Violated:
    if plan.subtype == "wrong_g":
        return _resimulated(ctx, gravity_scale=1 + WRONG_G_UP * s if plan.direction[2] > 0 else 1 - WRONG_G_DOWN * s)
    lift = s if plan.subtype == "hover" else 2 * s
    m = ctx.world.mass[plan.target]
    return _resimulated(ctx, _Act(plan.onset, lambda w, t, k: _push(w, plan.target, (0.0, 0.0, m * GRAVITY * lift))))


def _teleport(plan: Plan, ctx: Context, s: float) -> Violated:
    def act(world, t, k):
        if t == plan.onset and k == 0:
            bid, c = world.sim_ids[plan.target], world.sim
            pos, quat = p.getBasePositionAndOrientation(bid, physicsClientId=c)
            v, w = _velocity(world, plan.target)
            p.resetBasePositionAndOrientation(
                bid,
                (np.array(pos) + TELEPORT_DISTANCE * s * np.array(plan.direction)).tolist(),
                quat,
                physicsClientId=c,
            )
            _set_velocity(world, plan.target, v, w)

    return _resimulated(ctx, _Act(plan.onset, act))


def _energy(plan: Plan, ctx: Context, s: float) -> Violated:
    i = plan.target
    dt = 1.0 / (ctx.scene.fps * ctx.scene.substeps)
    if plan.subtype == "bounce_higher":
        last = [0.0]

        def act(world, t, k):
            v, w = _velocity(world, i)
            if last[0] < -0.4 and v[2] > 0:  # something just bounced it: add energy
                v[2] += s * abs(last[0])
                _set_velocity(world, i, v, w)
            last[0] = v[2]
    else:
        fallback = np.asarray(plan.direction)

        def act(world, t, k):
            v, w = _velocity(world, i)
            speed = float(np.linalg.norm(v))
            u = v / speed if speed > 0.05 else fallback
            _set_velocity(world, i, v + SPEED_UP_ACCEL * s * dt * u, w)

    return _resimulated(ctx, _Act(plan.onset, act))


def _causality(plan: Plan, ctx: Context, s: float) -> Violated:
    i = plan.target
    if plan.subtype == "kick":

        def act(world, t, k):
            if t == plan.onset and k == 0:
                v, w = _velocity(world, i)
                _set_velocity(world, i, v + KICK_SPEED * s * np.asarray(plan.direction), w)
    else:
        m = ctx.world.mass[i]

        def act(world, t, k):
            a = _position(world, i)
            b = _position(world, plan.partner)
            u = (b - a) / max(float(np.linalg.norm(b - a)), 1e-6)
            _push(world, i, m * PULL_ACCEL * s * u)

    return _resimulated(ctx, _Act(plan.onset, act))


def _support(plan: Plan, ctx: Context, s: float) -> Violated:
    masses = ctx.world.mass

    def act(world, t, k):
        for g in plan.group:
            if t == plan.onset and k == 0:  # what it was already falling with goes too
                v, w = _velocity(world, g)
                _set_velocity(world, g, (1 - s) * v, (1 - s) * w)
            _push(world, g, (0.0, 0.0, masses[g] * GRAVITY * s))

    return _resimulated(ctx, _Act(plan.onset, act))


def _momentum(plan: Plan, ctx: Context, s: float) -> Violated:
    striker, base = ctx.scene.role("striker")[0], ctx.scene.role("base")[0]
    state = {"touch": None, "done": False}

    def act(world, t, k):
        if state["done"]:
            return
        if state["touch"] is None:
            if p.getContactPoints(world.sim_ids[striker], world.sim_ids[base], physicsClientId=world.sim):
                state["touch"] = 0
            return
        state["touch"] += 1
        if state["touch"] < MOMENTUM_DELAY:
            return
        state["done"] = True
        v, w = _velocity(world, plan.target)
        if plan.subtype == "light_slow":
            _set_velocity(world, plan.target, (1 - LIGHT_SLOWDOWN * s) * v, (1 - LIGHT_SLOWDOWN * s) * w)
        else:
            a, b = _position(world, striker), _position(world, base)
            u = (b - a) * np.array([1.0, 1.0, 0.0])
            u /= max(float(np.linalg.norm(u)), 1e-6)
            along = max(float(np.dot(v, u)), 0.0)
            _set_velocity(world, plan.target, v - HEAVY_REBOUND * s * along * u, (1 - 2 * s) * w)

    return _resimulated(ctx, _Act(plan.onset, act))


# ---------------------------------------------------------------------------- kinematic families


def _ease(onset: int, t_count: int, frames: int = RAMP_FRAMES) -> np.ndarray:
    t = np.arange(t_count)
    return np.clip((t - onset + 1) / frames, 0.0, 1.0)


def _interpenetration(plan: Plan, ctx: Context, s: float) -> Violated:
    traj, world = ctx.plausible, ctx.world
    track = Track.from_trajectory(traj)
    ease = _ease(plan.onset, ctx.scene.num_frames)
    i = plan.target
    for t in range(plan.onset, ctx.scene.num_frames):
        if plan.subtype == "body":
            world.pose(traj.pos[t], traj.quat[t])
            gap = max(0.0, closest_distance(world, i, plan.partner, 1.0))
            d = traj.pos[t, plan.partner] - traj.pos[t, i]
            u = d / max(float(np.linalg.norm(d)), 1e-9)
            depth = OVERLAP_DEPTH * min(world.extent[i].min(), world.extent[plan.partner].min())
        else:
            u = np.array([0.0, 0.0, -1.0])
            gap, depth = max(0.0, traj.low[t, i]), SINK_DEPTH * (traj.pos[t, i, 2] - traj.low[t, i])
        track.pos[t, i] += s * ease[t] * (gap + depth) * u
    return Violated(track, traj)


def _non_rigid(plan: Plan, ctx: Context, s: float) -> Violated:
    scene = ctx.scene
    track = Track.from_trajectory(ctx.plausible)
    k = s * _ease(plan.onset, scene.num_frames, 2 * RAMP_FRAMES)
    if plan.subtype == "grow":
        sc = np.repeat((1 + GROW * k)[:, None], 3, axis=1)
    elif plan.subtype == "shrink":
        sc = np.repeat((1 - SHRINK * k)[:, None], 3, axis=1)
    elif plan.subtype == "stretch":
        sx = 1 + STRETCH * k
        sc = np.stack([sx, 1 / np.sqrt(sx), 1 / np.sqrt(sx)], axis=1)
    else:
        phase = np.sin(2 * np.pi * WOBBLE_HZ * (np.arange(scene.num_frames) - plan.onset) / scene.fps + np.pi / 2)
        sc = np.stack([1 + WOBBLE * k * phase, 1 + WOBBLE * k * phase, 1 - WOBBLE * k * phase], axis=1)
    track.scale[:, plan.target] = sc
    return Violated(track, ctx.plausible)


def _add_item(track: Track, body: int, pos: np.ndarray, quat: np.ndarray, alpha: np.ndarray) -> None:
    track.pos = np.concatenate([track.pos, pos[:, None]], axis=1)
    track.quat = np.concatenate([track.quat, quat[:, None]], axis=1)
    track.scale = np.concatenate([track.scale, np.ones_like(track.scale[:, :1])], axis=1)
    track.alpha = np.concatenate([track.alpha, alpha[:, None]], axis=1)
    track.body = track.body + (body,)


def _permanence(plan: Plan, ctx: Context, s: float) -> Violated:
    traj = ctx.plausible
    track = Track.from_trajectory(traj)
    ease = _ease(plan.onset, ctx.scene.num_frames, 2)
    i = plan.target
    u = np.asarray(plan.direction)
    if plan.subtype == "vanish":
        track.alpha[:, i] = 1 - s * ease
        return Violated(track, traj)
    r = ctx.world.radius(i)
    # appear: a twin fades in across the view where nothing was; duplicate: a copy rides beside it
    offset = max(0.35, 3.0 * r) if plan.subtype == "appear" else 2.2 * r
    _add_item(track, i, traj.pos[:, i] + offset * u, traj.quat[:, i], s * ease)
    return Violated(track, traj)


def _slerp(q0: np.ndarray, q1: np.ndarray, w: np.ndarray) -> np.ndarray:
    r0, r1 = Rotation.from_quat(q0), Rotation.from_quat(q1)
    return (Rotation.from_rotvec((r1 * r0.inv()).as_rotvec() * w[:, None]) * r0).as_quat()


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


def _retime(track: Track, traj: Trajectory, i: int, tau: np.ndarray) -> None:
    t_count = traj.num_frames
    lo = np.floor(tau).astype(int)
    hi = np.minimum(lo + 1, t_count - 1)
    w = tau - lo
    track.pos[:, i] = traj.pos[lo, i] * (1 - w)[:, None] + traj.pos[hi, i] * w[:, None]
    track.quat[:, i] = np.where((w == 0)[:, None], traj.quat[lo, i], _slerp(traj.quat[lo, i], traj.quat[hi, i], w))


def _time_anomaly(plan: Plan, ctx: Context, s: float) -> Violated:
    track = Track.from_trajectory(ctx.plausible)
    _retime(track, ctx.plausible, plan.target, time_map(plan, ctx.scene.num_frames, s))
    return Violated(track, ctx.plausible)


def _rolling(plan: Plan, ctx: Context, s: float) -> Violated:
    """From the onset the body keeps moving but turns by (1 - s) (no_spin) or (1 - 2 s) (backspin)
    of each frame's true rotation: at full severity it slides without turning, or spins backwards."""
    traj = ctx.plausible
    track = Track.from_trajectory(traj)
    i = plan.target
    k = s * _ease(plan.onset, ctx.scene.num_frames, 2)
    factor = 1 - k if plan.subtype == "no_spin" else 1 - 2 * k
    q = Rotation.from_quat(traj.quat[:, i])
    current = q[plan.onset - 1]
    for t in range(plan.onset, ctx.scene.num_frames):
        step = (q[t] * q[t - 1].inv()).as_rotvec()
        current = Rotation.from_rotvec(step * factor[t]) * current
        track.quat[t, i] = current.as_quat()
    return Violated(track, traj)


def _brief(plan: Plan, ctx: Context, s: float) -> Violated:
    traj = ctx.plausible
    track = Track.from_trajectory(traj)
    i, on = plan.target, plan.onset
    span = slice(on, min(on + plan.frames, ctx.scene.num_frames))
    if plan.subtype == "jump":
        track.pos[span, i] += BRIEF_DISTANCE * s * np.asarray(plan.direction)
    elif plan.subtype == "flicker":
        track.alpha[span, i] = 1 - s
    else:  # freeze: hold the pose of the frame before, then snap back to where it should be
        held = np.arange(span.start, span.stop)
        w = np.full(len(held), s)
        track.pos[span, i] = traj.pos[held, i] * (1 - w)[:, None] + traj.pos[on - 1, i] * w[:, None]
        track.quat[span, i] = _slerp(traj.quat[held, i], np.repeat(traj.quat[on - 1, i][None], len(held), 0), w)
    return Violated(track, traj)


_APPLY = {
    "gravity": _gravity,
    "teleport": _teleport,
    "interpenetration": _interpenetration,
    "non_rigid": _non_rigid,
    "permanence": _permanence,
    "energy": _energy,
    "causality": _causality,
    "time_anomaly": _time_anomaly,
    "support": _support,
    "momentum": _momentum,
    "rolling": _rolling,
    "brief": _brief,
}
