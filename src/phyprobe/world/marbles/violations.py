"""Breaking a plausible marbles run: a plan per scene (family, subtype, target ball, onset), then any
severity in (0, 1] of it, continuous and nothing at 0.

Six families re-simulate with an :class:`Intervention` from the onset (gravity, teleport,
interpenetration, energy, causality, inertia); three only change what is drawn (permanence, non_rigid,
time_anomaly). Several remove motion rather than add it (hover, stops_dead, freeze), the kind a
surprise signal ranks the wrong way round.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from phyprobe.world.engine import ViolationPlan
from phyprobe.world.marbles.render import Track
from phyprobe.world.marbles.scene import Scene
from phyprobe.world.marbles.simulate import Intervention, Trajectory, simulate

FAMILIES = {
    "gravity": ("hover", "rising", "drift"),  # side: held up or lifted; table: pulled sideways by nothing
    "teleport": ("jump",),
    "interpenetration": (
        "ball",
        "boundary",
    ),  # two balls overlap or pass; a ball sinks into the floor, a wall or a cushion
    "energy": ("bounce_higher", "speed_up"),
    "causality": ("kick",),  # a still ball starts moving with nothing touching it
    "inertia": ("stops_dead",),  # a moving ball stops (and, in the side view, hangs in the air)
    "permanence": ("vanish", "appear"),
    "non_rigid": ("grow", "shrink"),
    "time_anomaly": ("freeze", "rewind"),
}
RAMP = 3  # frames over which drawn changes (opacity, size) ease in


@dataclass(frozen=True)
class Plan(ViolationPlan):
    direction: tuple[float, float] = (0.0, 0.0)
    partner: int = -1
    magnitude: float = 0.0  # the size of the effect at severity 1, in the family's unit
    spot: tuple[float, float] = (0.0, 0.0)  # appear: where the copy fades in


@dataclass
class Violated:
    track: Track
    trajectory: Trajectory


def _unit(angle: float) -> tuple[float, float]:
    return math.cos(angle), math.sin(angle)


def _inside(scene: Scene, p: np.ndarray, r: float) -> float:
    """How far ``p`` stays inside the box or table (negative: outside)."""
    top = scene.height_m * 0.9 if scene.view == "side" else scene.height_m
    return float(min(p[0] - r, scene.width_m - r - p[0], p[1] - r, top - r - p[1]))


def plan_violation(family: str, scene: Scene, traj: Trajectory, rng: np.random.Generator) -> Plan:
    if family not in FAMILIES:
        raise ValueError(f"unknown violation family {family!r}; known: {sorted(FAMILIES)}")
    t_count, n = scene.num_frames, len(scene.balls)
    onset = int(rng.integers(max(2, round(0.25 * t_count)), round(0.55 * t_count) + 1))
    radius = np.array([b.radius for b in scene.balls])
    speed = np.hypot(*traj.vel[onset].T)
    fastest, slowest = int(np.argmax(speed)), int(np.argmin(speed))
    half_w = scene.width_m / 2
    side = scene.view == "side"
    last = t_count - 4  # a contact later than this leaves too few frames to show what breaks it

    if family == "gravity":
        if not side:
            return Plan(
                family, "drift", int(rng.integers(n)), onset, _unit(rng.uniform(0, 2 * math.pi)), magnitude=1.5 * half_w
            )
        height = traj.pos[onset, :, 1] - radius
        airborne = np.flatnonzero((height > 0.02) | (np.abs(traj.vel[onset, :, 1]) > 0.2))
        if len(airborne) and rng.uniform() < 0.6:
            return Plan(family, "hover", int(airborne[np.argmax(height[airborne])]), onset, magnitude=scene.gravity)
        return Plan(family, "rising", int(rng.integers(n)), onset, magnitude=scene.gravity)
    if family == "teleport":
        target = fastest if speed[fastest] > 0.05 else int(rng.integers(n))
        reach = 0.3 * scene.width_m
        p = traj.pos[onset, target]
        angles = rng.uniform(0, 2 * math.pi, 12)
        best = max(angles, key=lambda a: _inside(scene, p + reach * np.array(_unit(a)), radius[target]))
        return Plan(family, "jump", target, onset, _unit(best), magnitude=reach)
    if family == "interpenetration":
        hits = [(t, i, j) for t, kind, i, j in traj.contacts if kind == "ball" and 3 <= t <= last]
        walls = [(t, i) for t, kind, i, _ in traj.contacts if kind == "wall" and 3 <= t <= last]
        options = (["ball"] if hits else []) + (["boundary"] if walls or side else [])
        subtype = str(rng.choice(options)) if options else "boundary"
        if subtype == "ball":
            t, i, j = hits[0]
            return Plan(family, "ball", i, max(1, t - int(rng.integers(0, 3))), partner=j)
        if walls:
            t, i = walls[int(rng.integers(len(walls)))]
            start = max(1, t - int(rng.integers(0, 3)))
        else:  # the side view's floor always carries the resting ball 0
            i, start = 0, onset
        return Plan(family, "boundary", i, start, magnitude=2.2 * float(radius[i]))
    if family == "energy":
        later = sorted({i for t, kind, i, _ in traj.contacts if kind == "wall" and onset < t <= last})
        if later and rng.uniform() < 0.6:
            return Plan(family, "bounce_higher", int(rng.choice(later)), onset, magnitude=1.25)
        return Plan(family, "speed_up", fastest, onset, magnitude=1.5 * half_w)
    if family == "causality":
        angle = rng.uniform(math.radians(40), math.radians(140)) if side else rng.uniform(0, 2 * math.pi)
        return Plan(family, "kick", slowest, onset, _unit(angle), magnitude=float(rng.uniform(1.2, 2.2)) * half_w)
    if family == "inertia":
        return Plan(family, "stops_dead", fastest, onset)
    if family == "permanence":
        if rng.uniform() < 0.5:
            return Plan(family, "vanish", int(rng.integers(n)), onset)
        target = int(rng.integers(n))
        r = float(radius[target])
        others = traj.pos[onset]
        spot = None
        for _ in range(40):
            x = float(rng.uniform(r, scene.width_m - r))
            y = r if side else float(rng.uniform(r, scene.height_m - r))
            if np.all(np.hypot(others[:, 0] - x, others[:, 1] - y) > radius + r + 0.05):
                spot = (x, y)
                break
        return Plan(family, "appear", target, onset, spot=spot or (float(scene.width_m - r), r))
    if family == "non_rigid":
        return Plan(family, str(rng.choice(FAMILIES["non_rigid"])), fastest, onset)
    return Plan(family, str(rng.choice(FAMILIES["time_anomaly"])), fastest, onset)


def intervention(plan: Plan, scene: Scene, severity: float) -> Intervention:
    """The physics change of a re-simulated family at ``severity``."""
    s, i = severity, plan.target
    iv = Intervention(target=i, onset=plan.onset)
    d = np.array(plan.direction)
    if plan.family == "gravity":
        if plan.subtype == "drift":
            return replace(iv, accel=tuple(s * plan.magnitude * d))
        return replace(iv, gravity=1.0 - s if plan.subtype == "hover" else -s)
    if plan.family == "teleport":
        return replace(iv, pos_add=tuple(s * plan.magnitude * d))
    if plan.family == "interpenetration":
        if plan.subtype == "ball":
            return replace(iv, partner=plan.partner, overlap=s)
        return replace(iv, sink=s * plan.magnitude)
    if plan.family == "energy":
        if plan.subtype == "bounce_higher":
            own = scene.balls[i].restitution if scene.view == "side" else scene.wall_restitution
            base = min(own, scene.wall_restitution)
            return replace(iv, restitution=base + s * (plan.magnitude - base))
        return replace(iv, along=s * plan.magnitude)
    if plan.family == "causality":
        return replace(iv, vel_add=tuple(s * plan.magnitude * d))
    if plan.family == "inertia":
        return replace(iv, vel_scale=1.0 - s, gravity=1.0 - s)
    raise ValueError(f"{plan.family} is drawn, not re-simulated")


def _ramp(t_count: int, onset: int) -> np.ndarray:
    return np.clip((np.arange(t_count) - onset + 1) / RAMP, 0.0, 1.0)


def apply_violation(plan: Plan, scene: Scene, traj: Trajectory, severity: float) -> Violated:
    s, i, t0 = float(severity), plan.target, plan.onset
    if plan.family in ("permanence", "non_rigid", "time_anomaly"):
        track = Track.from_trajectory(traj, scene)  # fresh arrays: edited in place
        t_count = len(track.pos)
        ramp = _ramp(t_count, t0)
        if plan.subtype == "vanish":
            track.alpha[:, i] = 1.0 - s * ramp
        elif plan.subtype == "appear":
            k = track.pos.shape[1] - 1
            track.look = track.look[:k] + (i,)
            track.pos[:, k] = plan.spot
            track.rot[:, k] = traj.rot[t0, i]
            track.radius[:, k] = scene.balls[i].radius
            track.alpha[:, k] = s * ramp
        elif plan.subtype in ("grow", "shrink"):
            track.radius[:, i] *= 1.0 + (0.8 if plan.subtype == "grow" else -0.6) * s * ramp
        else:
            length = max(1, round((0.4 if plan.subtype == "freeze" else 0.3) * s * scene.num_frames))
            for k in range(min(length, t_count - t0)):
                src = t0 - 1 if plan.subtype == "freeze" else max(0, t0 - 2 - k)
                track.pos[t0 + k, i] = traj.pos[src, i]
                track.rot[t0 + k, i] = traj.rot[src, i]
        return Violated(track, traj)
    broken = simulate(scene, intervention(plan, scene, s))
    return Violated(Track.from_trajectory(broken, scene), broken)
