"""The marbles world engine: plausible runs obey physics (free fall at g, energy never gained, the aimed
collision happens), every violation family and subtype is really there (measured from the simulated
state or the drawn track) and grows with its severity, and severity 0 is the plausible clip byte for byte.
What every numpy-simulated world owes the shared build (nuisance twins, the held-out look,
metadata, frames identical across processes, its benchmark's build) is tested in test_world_simulated.py."""

from __future__ import annotations

import numpy as np
import pytest
from world_checks import SEVERITIES, assert_grows_with_severity

from phyprobe.world.marbles import ENGINE
from phyprobe.world.marbles.render import Track
from phyprobe.world.marbles.scene import GRAVITY, sample_scene
from phyprobe.world.marbles.simulate import simulate
from phyprobe.world.marbles.violations import FAMILIES, apply_violation
from phyprobe.world.seeds import scene_rng

FRAMES = 24


@pytest.fixture(scope="module")
def scenes():
    """Scenes of both views shared by the tests (their trajectories and frames are cached)."""
    out = [ENGINE.scene(3, i, FRAMES, False) for i in range(10)]
    assert {sc.scene.view for sc in out} == {"side", "table"}
    return out


def _depth(traj, scene, i: int) -> float:
    """How far ball i reaches into the floor, a wall or a cushion at its deepest."""
    r, p = scene.balls[i].radius, traj.pos[:, i]
    d = [r - p[:, 0], p[:, 0] - (scene.width_m - r), r - p[:, 1]]
    if scene.view == "table":
        d.append(p[:, 1] - (scene.height_m - r))
    return float(max(0.0, np.max(d)))


def measure(sc, plan, severity: float) -> float:
    """The size of the violation from the simulated state or the drawn track; 0 for the plausible run."""
    scene, p0 = sc.scene, sc.trajectory
    v = apply_violation(plan, scene, p0, severity)
    i, f = plan.target, plan.family
    if f == "interpenetration" and plan.subtype == "ball":
        j = plan.partner
        gap = np.hypot(*(v.trajectory.pos[:, i] - v.trajectory.pos[:, j]).T)
        return float(np.max(scene.balls[i].radius + scene.balls[j].radius - gap))
    if f == "interpenetration":
        return _depth(v.trajectory, scene, i)
    base = Track.from_trajectory(p0, scene)
    if f == "permanence":
        return float(np.abs(v.track.alpha - base.alpha).max())
    if f == "non_rigid":
        return float(np.abs(v.track.radius - base.radius).max())
    if f == "energy" and plan.subtype == "bounce_higher":  # the speed the ball leaves its bounces with
        return float(np.abs(np.hypot(*v.trajectory.vel[:, i].T) - np.hypot(*p0.vel[:, i].T)).max())
    window = slice(plan.onset, min(plan.onset + 3, scene.num_frames))  # short: before collisions scramble it
    return float(np.hypot(*(v.track.pos[window, i] - base.pos[window, i]).T).max())


def test_every_subtype_is_reachable():
    for family, subtypes in FAMILIES.items():
        seen = set()
        for index in range(12):
            sc = ENGINE.scene(9, index, FRAMES, False)
            for r in range(6):
                plan = sc.plan(family, scene_rng(9, index, 100 + r))
                assert plan.family == family and plan.subtype in subtypes
                seen.add(plan.subtype)
        assert seen == set(subtypes), f"{family}: never planned {set(subtypes) - seen}"


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_violation_present_and_monotone(family, scenes):
    for sc in scenes:
        plan = sc.plan(family, scene_rng(3, sc.scene.index, 2))
        m = [measure(sc, plan, s) for s in SEVERITIES]
        assert_grows_with_severity(m, f"{sc.key} {plan}", tol=1e-3)
        frames, _ = sc.violated(plan, 1.0)
        assert not np.array_equal(frames, sc.plausible()), f"{sc.key} {plan}: nothing visible at severity 1"


def test_severity_zero_is_the_plausible_twin_byte_for_byte(scenes):
    for sc in scenes[:4]:
        reference = sc.plausible()
        for family in FAMILIES:
            plan = sc.plan(family, scene_rng(3, sc.scene.index, 2))
            frames, _ = sc.violated(plan, 0.0)
            assert frames.dtype == np.uint8 and np.array_equal(frames, reference), family
            # and a broken run is exact up to its onset: an intervention acts only from there
            tiny = apply_violation(plan, sc.scene, sc.trajectory, 1e-9).trajectory
            assert np.array_equal(tiny.pos[: plan.onset], sc.trajectory.pos[: plan.onset]), family


def test_plausible_balls_fall_at_g_and_the_aimed_collision_happens():
    falls = 0
    for index in range(16):
        scene = sample_scene(4, index, 32, False)
        traj = simulate(scene)
        assert any(kind == "ball" for _, kind, _, _ in traj.contacts), f"{scene.key}: the aimed collision never happens"
        if scene.view != "side":
            continue
        first = min(t for t, _, i, j in traj.contacts if 1 in (i, j))  # ball 1 is thrown: in free flight until then
        if first >= 4:
            acc = np.diff(traj.vel[: first - 1, 1, 1]) * scene.fps
            assert np.allclose(acc, -GRAVITY, rtol=1e-6), f"{scene.key}: vertical acceleration {acc}"
            falls += 1
    assert falls >= 3


def test_plausible_energy_never_increases():
    for index in range(16):
        scene = sample_scene(11, index, 32, False)
        e = simulate(scene).energy(scene).sum(axis=1)
        gain = np.max(e - np.minimum.accumulate(e))
        assert gain <= 1e-3 * e[0], f"{scene.key} ({scene.view}): energy rose by {gain / e[0]:.4f} of its start"


def test_metadata_counts_the_balls(scenes):
    """The shared metadata (tests/test_world_simulated.py) describes this world's bodies: one shape per ball."""
    for sc in scenes:
        assert sc.metadata()["num_bodies"] == len(sc.scene.balls)
    assert set(ENGINE.families) == set(FAMILIES)
