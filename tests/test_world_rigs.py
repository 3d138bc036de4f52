"""The rigs world engine: plausible runs obey physics (a pendulum keeps its energy and its period, a block on
a frictionless incline accelerates at g sin(angle), energy is never gained, the aimed collision happens a
third to a half of the way in), every violation family plans in both views and grows with its severity
(measured from the simulated state or the drawn track), and severity 0 is the plausible clip byte for byte.
What every numpy-simulated world owes the shared build (nuisance twins, the held-out look,
metadata, frames identical across processes, its benchmark's build) is tested in test_world_simulated.py."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from world_checks import SEVERITIES, assert_grows_with_severity

from phyprobe.world.rigs import ENGINE
from phyprobe.world.rigs.render import Track
from phyprobe.world.rigs.scene import GRAVITY, VIEWS, Pendulum, sample_scene
from phyprobe.world.rigs.simulate import simulate
from phyprobe.world.rigs.violations import FAMILIES, aimed_contact, apply_violation
from phyprobe.world.seeds import scene_rng

FRAMES = 24


def _first(view: str, seed: int = 3, start: int = 0):
    return next(
        sample_scene(seed, i, 32, False)
        for i in range(start, start + 50)
        if sample_scene(seed, i, 32, False).view == view
    )


@pytest.fixture(scope="module")
def scenes():
    """Scenes of both views shared by the tests (their trajectories and frames are cached)."""
    out = [ENGINE.scene(3, i, FRAMES, False) for i in range(6)]
    assert {sc.scene.view for sc in out} == set(VIEWS)
    return out


def test_undamped_pendulum_keeps_its_energy_and_its_period():
    """RK4 at 16 substeps: a free pendulum neither gains nor loses energy to the integrator, and a small swing
    takes 2 pi sqrt(L/g), the check that the angle ODE is the pendulum's."""
    base = _first("pendulums")
    for amplitude in (0.05, 1.2):
        p = Pendulum(base.pendulums[0].pivot, base.pendulums[0].length, amplitude, 0.0)
        scene = replace(base, pendulums=(p,), bodies=base.bodies[:1], reach=((0.0,),), damping=0.0, num_frames=200)
        traj = simulate(scene)
        e = traj.energy[:, 0]
        swing = scene.bodies[0].mass * GRAVITY * p.length * (1 - math.cos(amplitude))  # its energy over the bottom
        assert np.ptp(e) < 1e-5 * swing, np.ptp(e) / swing
        if amplitude < 0.1:  # the period from the upward zero crossings of the angle
            th = traj.q[:, 0]
            up = [t + th[t] / (th[t] - th[t + 1]) for t in range(len(th) - 1) if th[t] < 0 <= th[t + 1]]
            period = np.diff(up).mean() / scene.fps
            expected = 2 * math.pi * math.sqrt(p.length / GRAVITY)
            assert abs(period / expected - 1) < 0.01, (period, expected)


def test_block_on_a_frictionless_incline_accelerates_at_g_sin_angle():
    """The path model's gravity along the incline: with no friction the block gains g sin(angle) per second
    until it reaches the foot."""
    base = _first("slope")
    scene = replace(base, slope=replace(base.slope, friction=0.0))
    traj = simulate(scene)
    on = np.flatnonzero(traj.q[:, 0] < -scene.bodies[0].half[0])
    acc = np.diff(traj.qd[on, 0]) * scene.fps
    assert len(acc) >= 3 and np.allclose(acc, GRAVITY * math.sin(scene.slope.angle), rtol=1e-6), acc


def test_plausible_energy_never_increases_and_the_aimed_collision_happens():
    """No plausible run creates energy (friction, damping and restitution only take it), and every scene has
    its striker-struck collision a third to a half of the way in, so every family can be planned."""
    views = set()
    for index in range(40):
        scene = sample_scene(11, index, 32, False)
        traj = simulate(scene)
        e = traj.energy.sum(axis=1)
        gain = np.max(e - np.minimum.accumulate(e))
        unit = sum(b.mass for b in scene.bodies) * GRAVITY * scene.scale  # lifting every body across the view
        assert gain <= 1e-6 * unit, f"{scene.key} ({scene.view}): energy rose by {gain / unit:.2e}"
        hit = aimed_contact(scene, traj)
        assert hit is not None and 0.3 * 32 <= hit <= 0.55 * 32, (
            f"{scene.key} ({scene.view}): aimed collision at frame {hit}"
        )
        views.add(scene.view)
    assert views == set(VIEWS)


def measure(sc, plan, severity: float) -> float:
    """The size of the violation from the simulated state or the drawn track; 0 for the plausible run."""
    scene, p0 = sc.scene, sc.trajectory
    v = apply_violation(plan, scene, p0, severity)
    i, f = plan.target, plan.family
    if f == "time_anomaly":
        return float(np.abs(v.clock - np.arange(len(v.clock))).max())
    if plan.subtype == "pass_through":
        j = plan.partner
        if scene.view == "pendulums":
            gap = np.hypot(*(v.trajectory.pos[:, i] - v.trajectory.pos[:, j]).T)
            return float(np.max(scene.reach[i][j] - gap))
        gap = np.abs(v.trajectory.q[:, i] - v.trajectory.q[:, j])
        return float(np.max(scene.bodies[i].half[0] + scene.bodies[j].half[0] - gap))
    base = Track.from_trajectory(p0, scene)
    if f == "permanence":
        return float(np.abs(v.track.alpha - base.alpha).max())
    if f == "non_rigid" or plan.subtype == "sink":
        return float(max(np.abs(v.track.pos - base.pos).max(), np.abs(v.track.scale - base.scale).max()))
    window = slice(plan.onset, min(plan.onset + 4, scene.num_frames))  # short: before collisions scramble it
    if f == "energy":
        scale = np.array([p.length for p in scene.pendulums]) if scene.view == "pendulums" else 1.0
        fast = np.abs(v.trajectory.qd * scale) - np.abs(p0.qd * scale)
        return float(np.abs(fast[plan.onset : plan.onset + 6, i]).max())
    return float(np.hypot(*(v.track.pos[window, i] - base.pos[window, i]).T).max())


def test_every_family_plans_in_every_view_and_every_subtype_is_reachable():
    """A per-family table needs every family in every scene; a subtype never planned would be dead code."""
    seen = {f: set() for f in FAMILIES}
    for index in range(12):
        sc = ENGINE.scene(9, index, FRAMES, False)
        for family, subtypes in FAMILIES.items():
            for r in range(4):
                plan = sc.plan(family, scene_rng(9, index, 100 + r))
                assert plan.family == family and plan.subtype in subtypes and 1 <= plan.onset < FRAMES
                seen[family].add(plan.subtype)
    for family, subtypes in FAMILIES.items():
        assert seen[family] == set(subtypes), f"{family}: never planned {set(subtypes) - seen[family]}"


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_violation_present_and_monotone(family, scenes):
    """Severity is the size of the break: measurable at 0.25, growing to 1, and visible in the frames."""
    for n, sc in enumerate(scenes):
        plan = sc.plan(family, scene_rng(3, sc.scene.index, 2))
        m = [measure(sc, plan, s) for s in SEVERITIES]
        assert_grows_with_severity(m, f"{sc.key} {plan}", tol=1e-3)
        if n < 3:
            frames, _ = sc.violated(plan, 1.0)
            assert not np.array_equal(frames, sc.plausible()), f"{sc.key} {plan}: nothing visible at severity 1"


def test_severity_zero_is_the_plausible_twin_byte_for_byte(scenes):
    """The build pairs severity 0 with the plausible clip: it must be that clip, and a broken run must be the
    plausible one up to its onset (an intervention acts only from there)."""
    for sc in scenes[:4]:
        reference = sc.plausible()
        for family in FAMILIES:
            plan = sc.plan(family, scene_rng(3, sc.scene.index, 2))
            frames, _ = sc.violated(plan, 0.0)
            assert frames.dtype == np.uint8 and np.array_equal(frames, reference), family
            tiny = apply_violation(plan, sc.scene, sc.trajectory, 1e-9)
            base, n = Track.from_trajectory(sc.trajectory, sc.scene), len(sc.scene.bodies)
            assert np.array_equal(tiny.track.pos[: plan.onset, :n], base.pos[: plan.onset, :n]), family
            assert tiny.track.same_until(base) >= plan.onset, family


def test_metadata_counts_the_bodies_and_families_are_the_marbles_worlds(scenes):
    """The shared metadata (tests/test_world_simulated.py) describes this world's bodies, and the family names are
    the marbles world's, so per-family tables line up."""
    from phyprobe.world.marbles.violations import FAMILIES as MARBLES

    for sc in scenes:
        assert sc.metadata()["num_bodies"] == len(sc.scene.bodies)
    assert set(ENGINE.families) == set(FAMILIES) == set(MARBLES)
