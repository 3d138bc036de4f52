"""Breaking a plausible rigs run: a plan per scene (family, subtype, target body, onset), then any severity
in (0, 1] of it, continuous and nothing at 0.

Six families re-simulate with an :class:`Intervention` from the onset (gravity, teleport, energy,
causality, inertia, and interpenetration's ``pass_through``); the others only change what is drawn
(permanence, non_rigid, time_anomaly, and interpenetration's ``sink``). The family names are the marbles
world's, so per-family tables line up; what each means in a mechanism is this world's own.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from phyprobe.world.engine import ViolationPlan
from phyprobe.world.rigs.render import Track
from phyprobe.world.rigs.scene import Scene
from phyprobe.world.rigs.simulate import Intervention, Trajectory, simulate

FAMILIES = {
    "gravity": (
        "stronger",
        "weaker",
        "rising",
        "uphill",
    ),  # pendulums: a swinging bob's g grows or fades; slope: a block lifts off or is pulled up the incline
    "teleport": ("jump",),  # a body jumps along its path (its circle, the incline or the floor)
    "interpenetration": (
        "pass_through",
        "sink",
    ),  # the striker passes through the struck body; a block sinks into the ground
    "energy": (
        "speed_up",
        "bounce_faster",
    ),  # a body gains speed along its path; the struck body leaves its contacts faster than it came
    "causality": ("early_start",),  # the struck body sets off before the striker reaches it
    "inertia": ("stops_dead",),  # a moving body stops and stays (a bob hangs at an angle)
    "permanence": ("vanish", "appear"),
    "non_rigid": ("stretch", "shrink"),  # a rod's length (the bob leaves its circle) or a block's size changes
    "time_anomaly": ("fast", "rewind"),  # a stretch of the whole clip runs faster, or backwards
}
RAMP = 3  # frames over which drawn changes (opacity, size, depth) ease in


@dataclass(frozen=True)
class Plan(ViolationPlan):
    partner: int = -1
    magnitude: float = 0.0  # the size of the effect at severity 1, in the family's unit
    direction: float = 1.0  # a sign along the target's path
    spot: tuple[float, float] = (0.0, 0.0)  # appear: where the copy shows
    tie: tuple[float, float] = (math.nan, math.nan)  # appear: the copy's pivot


@dataclass
class Violated:
    track: Track
    trajectory: Trajectory
    clock: np.ndarray  # (T,) the frame of the plausible run each frame shows (time_anomaly; else the identity)


def _speed(scene: Scene, traj: Trajectory, t: int) -> np.ndarray:
    if scene.view == "pendulums":
        return np.abs(traj.qd[t] * np.array([p.length for p in scene.pendulums]))
    return np.abs(traj.qd[t])


def aimed_contact(scene: Scene, traj: Trajectory) -> int | None:
    """The frame of the first contact between the striker and the struck body."""
    pair = {scene.striker, scene.struck}
    return next((t for t, i, j in traj.contacts if {i, j} == pair), None)


def plan_violation(family: str, scene: Scene, traj: Trajectory, rng: np.random.Generator) -> Plan:
    if family not in FAMILIES:
        raise ValueError(f"unknown violation family {family!r}; known: {sorted(FAMILIES)}")
    t_count, n = scene.num_frames, len(scene.bodies)
    onset = int(rng.integers(max(2, round(0.25 * t_count)), round(0.55 * t_count) + 1))
    speed = _speed(scene, traj, onset - 1)  # the state the intervention finds
    fastest = int(np.argmax(speed))
    hit = aimed_contact(scene, traj)
    hit = round(0.4 * t_count) if hit is None else hit
    pend = scene.view == "pendulums"
    striker, struck = scene.striker, scene.struck

    if family == "gravity":
        if pend:
            return Plan(family, str(rng.choice(["stronger", "weaker"])), fastest, onset)
        foot = int(np.argmax(traj.q[:, 0] >= 0)) if (traj.q[:, 0] >= 0).any() else t_count
        if foot >= 4 and rng.uniform() < 0.5:
            return Plan(family, "uphill", 0, int(rng.integers(2, foot)))
        return Plan(family, "rising", int(rng.integers(n)), onset)
    if family == "teleport":
        target = fastest if speed[fastest] > 0.05 else int(rng.integers(n))
        if pend:
            length = scene.pendulums[target].length
            th = float(traj.q[onset - 1, target])
            sign = 1.0 if abs(th + 0.7) < abs(th - 0.7) else -1.0
            return Plan(family, "jump", target, onset, magnitude=0.7 * length, direction=sign)
        u, w = float(traj.q[onset - 1, target]), scene.bodies[target].half[0]
        lo, hi = -scene.slope.top + w, scene.slope.wall_x - w
        sign = 1.0 if hi - u > u - lo else -1.0
        room = (hi - u) if sign > 0 else (u - lo)
        return Plan(family, "jump", target, onset, magnitude=float(min(0.3 * scene.scale, 0.9 * room)), direction=sign)
    if family == "interpenetration":
        if pend or rng.uniform() < 0.5:
            return Plan(family, "pass_through", striker, max(1, hit - int(rng.integers(1, 3))), partner=struck)
        target = int(rng.integers(n))
        return Plan(family, "sink", target, onset, magnitude=1.8 * scene.bodies[target].half[1])
    if family == "energy":
        if hit >= 4 and hit <= t_count - 4 and rng.uniform() < 0.5:
            return Plan(family, "bounce_faster", struck, hit - int(rng.integers(1, 3)), magnitude=1.8)
        mag = 0.6 * scene.gravity if pend else (scene.slope.friction + 0.4) * scene.gravity
        return Plan(family, "speed_up", fastest, onset, magnitude=mag)
    if family == "causality":
        start = int(rng.integers(max(2, hit - round(0.25 * t_count)), max(3, hit - 1)))
        after = min(hit + 1, t_count - 1)
        v = float(traj.qd[after, struck]) * (scene.pendulums[struck].length if pend else 1.0)
        mag = 1.2 * max(abs(v), 0.3 * scene.scale)
        return Plan(family, "early_start", struck, start, magnitude=mag, direction=1.0 if v >= 0 else -1.0)
    if family == "inertia":
        return Plan(family, "stops_dead", fastest, onset)
    if family == "permanence":
        if rng.uniform() < 0.5:
            return Plan(family, "vanish", int(rng.integers(n)), onset)
        target = int(rng.integers(n))
        return replace(_appear_spot(scene, traj, target, onset, rng), onset=onset)
    if family == "non_rigid":
        return Plan(family, str(rng.choice(FAMILIES["non_rigid"])), fastest, onset)
    return Plan(family, str(rng.choice(FAMILIES["time_anomaly"])), fastest, onset)


def _appear_spot(scene: Scene, traj: Trajectory, target: int, onset: int, rng: np.random.Generator) -> Plan:
    """Where a copy of ``target`` can show without touching what moves from the onset on: a pendulum at rest
    from a free point of the bar, or a block on a free stretch of floor."""
    body = scene.bodies[target]
    later = traj.pos[onset:]
    size = np.array([math.hypot(*b.half) for b in scene.bodies])
    r = math.hypot(*body.half)
    best, best_d = None, -np.inf
    x0, _, x1, _ = scene.extent
    for _ in range(40):
        if scene.view == "pendulums":
            length = scene.pendulums[target].length * float(rng.uniform(0.7, 1.0))
            x = float(rng.uniform(x0 + r, x1 - r))
            spot, tie = (x, scene.bar_y - length), (x, scene.bar_y)
        else:
            x = float(rng.uniform(body.half[0] * 1.2, scene.slope.wall_x - body.half[0] * 1.2))
            spot, tie = (x, body.half[1]), (math.nan, math.nan)
        d = float(np.min(np.hypot(later[..., 0] - spot[0], later[..., 1] - spot[1]) - size[None] - r))
        if d > best_d:
            best, best_d = (spot, tie), d
        if d > 0.05 * scene.scale:
            break
    return Plan("permanence", "appear", target, onset, spot=best[0], tie=best[1])


def intervention(plan: Plan, scene: Scene, severity: float) -> Intervention:
    """The physics change of a re-simulated family at ``severity``."""
    s, i = severity, plan.target
    iv = Intervention(target=i, onset=plan.onset)
    if plan.family == "gravity":
        return replace(
            iv,
            gravity={"stronger": 1 + 2.0 * s, "weaker": 1 - 0.9 * s, "uphill": 1 - 2.5 * s, "rising": 1.0}[
                plan.subtype
            ],
            lift=1.0 + s if plan.subtype == "rising" else 0.0,
        )
    if plan.family == "teleport":
        return replace(iv, pos_add=s * plan.magnitude * plan.direction)
    if plan.family == "interpenetration":
        return replace(iv, partner=plan.partner, overlap=s)
    if plan.family == "energy":
        if plan.subtype == "bounce_faster":
            return replace(iv, restitution=scene.restitution + s * (plan.magnitude - scene.restitution))
        return replace(iv, along=s * plan.magnitude)
    if plan.family == "causality":
        return replace(iv, vel_add=s * plan.magnitude * plan.direction)
    if plan.family == "inertia":
        return replace(iv, vel_scale=1.0 - s, force=1.0 - s)
    raise ValueError(f"{plan.family} is drawn, not re-simulated")


def _ramp(t_count: int, onset: int, frames: int = RAMP) -> np.ndarray:
    return np.clip((np.arange(t_count) - onset + 1) / frames, 0.0, 1.0)


def clock(plan: Plan, t_count: int, severity: float) -> np.ndarray:
    """time_anomaly: the frame of the plausible run each frame of the clip shows."""
    t = np.arange(t_count)
    t0, s = plan.onset, severity
    if plan.subtype == "fast":  # from the onset on, time runs 1 + 1.5 s times as fast
        return np.where(t < t0, t, t0 + np.floor((t - t0) * (1.0 + 1.5 * s) + 1e-9).astype(int))
    length = max(1, round(0.3 * s * t_count))  # a stretch of 0.3 s of the clip runs backwards, then jumps back
    out = t.copy()
    for k in range(min(length, t_count - t0)):
        out[t0 + k] = max(0, t0 - 2 - k)
    return out


def apply_violation(plan: Plan, scene: Scene, traj: Trajectory, severity: float) -> Violated:
    s, i, t0 = float(severity), plan.target, plan.onset
    t_count = scene.num_frames
    identity = np.arange(t_count)
    if plan.family == "time_anomaly":
        when = clock(plan, t_count, s)
        source = traj if when.max() < len(traj.pos) else simulate(scene, frames=int(when.max()) + 1)
        full = Track.from_trajectory(source, scene)
        track = Track(full.pos[when], full.angle[when], full.scale[when], full.alpha[when], full.look, full.tie)
        return Violated(track, traj, when)
    if plan.family in ("permanence", "non_rigid") or plan.subtype == "sink":
        track = Track.from_trajectory(traj, scene)  # fresh arrays: edited in place
        ramp = _ramp(t_count, t0)
        body = scene.bodies[i]
        if plan.subtype == "vanish":
            track.alpha[:, i] = 1.0 - s * ramp
        elif plan.subtype == "appear":
            k = track.pos.shape[1] - 1
            track.look = track.look[:k] + (i,)
            track.pos[:, k] = plan.spot
            track.angle[:, k] = 0.0
            track.tie[k] = plan.tie
            track.alpha[:, k] = s * ramp
        elif body.kind == "bob":  # the rod's length eases to 1.5 or 0.6 of itself: the bob leaves its circle
            pivot = np.array(scene.pendulums[i].pivot)
            f = 1.0 + (0.5 if plan.subtype == "stretch" else -0.4) * s * ramp
            track.pos[:, i] = pivot + (track.pos[:, i] - pivot) * f[:, None]
        else:  # a block stretches along its base or shrinks, its bottom staying on the ground; or sinks into it
            normal = np.stack([-np.sin(track.angle[:, i]), np.cos(track.angle[:, i])], -1)
            if plan.subtype == "sink":
                depth = s * plan.magnitude * _ramp(t_count, t0, 2 * RAMP)
            else:
                grow = (0.8, 0.0) if plan.subtype == "stretch" else (-0.5, -0.5)
                track.scale[:, i] = 1.0 + np.outer(s * ramp, grow)
                depth = -(track.scale[:, i, 1] - 1.0) * body.half[1]
            track.pos[:, i] -= normal * depth[:, None]
        return Violated(track, traj, identity)
    broken = simulate(scene, intervention(plan, scene, s))
    return Violated(Track.from_trajectory(broken, scene), broken, identity)
