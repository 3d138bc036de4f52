"""The 3D world engine: plausible runs obey physics, every violation family and subtype is really
there (measured from the simulated state, pybullet's own contact geometry or the rendered frames)
and grows with its severity, severity 0 is the plausible clip byte for byte, nuisance twins change
pixels and not physics, held-out styles stay held out, and frames are identical across processes."""

from __future__ import annotations

import hashlib
import multiprocessing as mp

import numpy as np
import pytest
from scipy.spatial.transform import Rotation
from world_checks import SEVERITIES, assert_grows_with_severity

from phyprobe.world.build import default_worker_signals
from phyprobe.world.seeds import scene_rng
from phyprobe.world.world3d import ENGINE
from phyprobe.world.world3d.scene import FLOORS, GRAVITY, HELDOUT_FLOOR, sample_scene
from phyprobe.world.world3d.violations import FAMILIES, apply_violation, closest_distance

FRAMES = 16


@pytest.fixture(scope="module")
def scenes():
    """A few scenes shared by the tests (their clients, trajectories and plausible frames are cached)."""
    out = [ENGINE.scene(3, i, FRAMES, False) for i in range(6)]
    yield out
    for s in out:
        s.close()


# ---------------------------------------------------------------------------------- measurements


def _window(plan, t_count: int, width: int = 6) -> slice:
    return slice(plan.onset, min(plan.onset + width, t_count))


def _angle(qa: np.ndarray, qb: np.ndarray) -> np.ndarray:
    return (Rotation.from_quat(qa) * Rotation.from_quat(qb).inv()).magnitude()


def measure(sc, plan, severity: float) -> float:
    """The size of the violation, from state, contact geometry or pixels; 0 for the plausible run."""
    ctx = sc.context
    p0, scene = ctx.plausible, ctx.scene
    v = apply_violation(plan, ctx, severity)
    tr, traj = v.track, v.trajectory
    i, w = plan.target, _window(plan, scene.num_frames)
    f = plan.family
    if f == "gravity":
        bodies = range(len(scene.bodies)) if plan.subtype == "wrong_g" else [i]
        return max(
            float(
                np.abs(traj.pos[1:7, b, 2] - p0.pos[1:7, b, 2]).max()
                if plan.subtype == "wrong_g"
                else (traj.pos[w, b, 2] - p0.pos[w, b, 2]).max()
            )
            for b in bodies
        )
    if f == "teleport":
        return float(np.linalg.norm(traj.pos[plan.onset, i] - p0.pos[plan.onset, i]))
    if f == "interpenetration":
        if plan.subtype == "floor":  # how far the drawn body reaches below the floor's surface
            low = p0.low[:, i] + (tr.pos[:, i, 2] - p0.pos[:, i, 2])
            return float(max(0.0, -low.min()))
        depth = 0.0  # pybullet's own signed distance between the drawn poses
        for t in range(plan.onset, scene.num_frames, 2):
            ctx.world.pose(tr.pos[t], tr.quat[t])
            depth = max(depth, -closest_distance(ctx.world, i, plan.partner))
        return depth
    if f in ("non_rigid", "permanence"):
        frames, _ = sc.violated(plan, severity)
        return float(np.abs(frames[plan.onset :].astype(int) - sc.plausible()[plan.onset :]).mean())
    if f == "energy":
        e, e0 = traj.energy().sum(axis=1), p0.energy().sum(axis=1)
        return float(np.max(e[w] - e0[w]) / e0[0])
    if f == "causality":
        return float(
            max(
                np.linalg.norm(traj.vel[t, i] - p0.vel[t, i])
                for t in range(plan.onset, min(plan.onset + 3, scene.num_frames))
            )
        )
    if f == "time_anomaly":  # how far in time the drawn target is from where it should be
        lags = []
        for t in range(plan.onset, scene.num_frames):
            d = np.linalg.norm(p0.pos[:, i] - tr.pos[t, i], axis=1) + 1e-3 * np.abs(np.arange(scene.num_frames) - t)
            lags.append(abs(t - int(np.argmin(d))))
        return float(max(lags))
    if f == "support":  # how much higher the blocks the base held stay than they should
        return float(max((traj.pos[w, g, 2] - p0.pos[w, g, 2]).max() for g in plan.group))
    if f == "momentum":
        return float(
            max(
                np.linalg.norm(traj.vel[t, i] - p0.vel[t, i])
                for t in range(plan.onset, min(plan.onset + 4, scene.num_frames))
            )
        )
    if f == "rolling":  # how far the drawn orientation is turned from the true one
        return float(_angle(tr.quat[plan.onset :, i], p0.quat[plan.onset :, i]).max())
    if f == "brief":
        if plan.subtype == "flicker":
            return float((1 - tr.alpha[:, i]).max())
        return float(
            np.linalg.norm(tr.pos[:, i] - p0.pos[:, i], axis=1).max() + _angle(tr.quat[:, i], p0.quat[:, i]).max()
        )
    raise AssertionError(f)


def _plans(scenes, family):
    """Plans of this family over the shared scenes, two per subtype where the scenes allow."""
    found = []
    for sc in scenes:
        for r in range(6):
            plan = sc.plan(family, scene_rng(3, sc.scene.index, 100 + r))
            if sum(p.subtype == plan.subtype for _, p in found) < 1:
                found.append((sc, plan))
    return found


# --------------------------------------------------------------------------------------- tests


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_subtype_is_reachable(family):
    seen = set()
    for index in range(8):
        sc = ENGINE.scene(9, index, FRAMES, False)
        for r in range(8):
            plan = sc.plan(family, scene_rng(9, index, 100 + r))
            assert plan.family == family
            assert plan.subtype in FAMILIES[family]
            seen.add(plan.subtype)
        sc.close()
        if seen == set(FAMILIES[family]):
            break
    assert seen == set(FAMILIES[family]), f"{family}: never planned {set(FAMILIES[family]) - seen}"


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_violation_present_and_monotone(family, scenes):
    for sc, plan in _plans(scenes, family):
        m = [measure(sc, plan, s) for s in SEVERITIES]
        assert_grows_with_severity(m, f"{plan}", tol=1e-6)
        frames, meta = sc.violated(plan, 1.0)
        assert not np.array_equal(frames, sc.plausible()), f"{plan}: nothing visible at severity 1"
        assert meta["brief"] == (family == "brief")
        if family == "brief":  # at most three frames differ from the plausible clip
            changed = np.flatnonzero(np.any(frames != sc.plausible(), axis=(1, 2, 3)))
            assert 1 <= len(changed) <= 3 and changed[-1] - changed[0] < 3, (plan, changed)


def test_severity_zero_is_the_plausible_twin_byte_for_byte(scenes):
    for sc in scenes[:2]:
        reference = sc.plausible()
        for family in FAMILIES:
            plan = sc.plan(family, scene_rng(3, sc.scene.index, 2))
            frames, _ = sc.violated(plan, 0.0)
            assert frames.dtype == np.uint8 and np.array_equal(frames, reference), family
            # and a re-simulated run is exact up to its onset: an intervention acts only from there
            tiny = apply_violation(plan, sc.context, 1e-9).trajectory
            on = max(plan.onset, 1)
            assert np.array_equal(tiny.pos[:on], sc.context.plausible.pos[:on]), family


def test_plausible_bodies_fall_with_gravity_before_contact():
    checked = 0
    for index in range(6):
        sc = ENGINE.scene(4, index, FRAMES, False)
        traj, scene = sc.context.plausible, sc.scene
        for i in scene.role("drop"):
            airborne = traj.low[:4, i] > 0.05
            if airborne.all():
                acc = np.diff(traj.vel[:4, i, 2]) * scene.fps
                assert np.allclose(acc, -GRAVITY, rtol=0.02), f"{scene.key} body {i}: vertical acceleration {acc}"
                checked += 1
        sc.close()
    assert checked >= 3


def test_plausible_energy_never_increases_and_the_striker_hits_the_base():
    for index in range(8):
        sc = ENGINE.scene(11, index, 32, False)
        # support and momentum are planned on this collision: every scene must have it
        assert sc.context.plausible.contact.any(), f"{sc.key}: the striker never reaches the base"
        e = sc.context.plausible.energy().sum(axis=1)
        gain = np.max(e - np.minimum.accumulate(e))
        assert gain <= 0.03 * e[0], f"{sc.key}: energy rose by {gain / e[0]:.3f} of its initial value without a cause"
        sc.close()


def test_nuisance_twins_keep_the_physics_and_change_the_pixels(scenes):
    for sc in scenes[:3]:
        reference = sc.plausible()
        before = sc.context.plausible
        kinds = []
        for k in range(ENGINE.num_nuisance):
            frames, meta = sc.nuisance(k, scene_rng(3, sc.scene.index, 40 + k))
            assert frames.shape == reference.shape and frames.dtype == np.uint8
            assert np.abs(frames.astype(int) - reference).mean() > 1.0, meta
            kinds.append(meta["nuisance"])
        assert kinds[0] == "camera" and set(kinds) <= {"camera", "lighting", "texture"}
        again = sc.world.simulate()  # rendering twins left the physics exactly as it was
        assert np.array_equal(again.pos, before.pos) and np.array_equal(again.quat, before.quat)
        with pytest.raises(IndexError):
            sc.nuisance(ENGINE.num_nuisance, scene_rng(3, 0, 0))


def test_heldout_style_is_never_used_elsewhere():
    assert HELDOUT_FLOOR not in FLOORS
    for index in range(300):
        assert sample_scene(0, index, FRAMES, False).style.floor != HELDOUT_FLOOR
    held = ENGINE.scene(0, 1, FRAMES, True)
    assert held.metadata()["floor"] == HELDOUT_FLOOR
    for r in range(6):  # a texture-swap twin of an ordinary scene never borrows the held-out floor
        ordinary = ENGINE.scene(0, r, FRAMES, False)
        assert ordinary.nuisance(1, np.random.default_rng(r))[1]["floor"] != HELDOUT_FLOOR
        ordinary.close()
    held.close()


def test_metadata_and_frame_shapes(scenes):
    for sc in scenes:
        meta = sc.metadata()
        frames = sc.plausible()
        assert frames.shape == (FRAMES, meta["height"], meta["width"], 3)
        assert meta["width"] % 2 == 0 and meta["height"] % 2 == 0 and meta["engine"] == "world3d"
        assert meta["num_bodies"] == len(meta["shapes"]) == len(sc.scene.bodies)
        assert frames.std() > 5, "frames are (nearly) blank"
    assert ENGINE.source == "world3d" and set(ENGINE.families) == set(FAMILIES)
    with pytest.raises(ValueError, match="unknown violation family"):
        scenes[0].plan("levitation", np.random.default_rng(0))


def _digest(index: int) -> str:
    sc = ENGINE.scene(21, index, FRAMES, index % 2 == 1)
    h = hashlib.sha256(sc.plausible().tobytes())
    families = sorted(FAMILIES)
    plan = sc.plan(families[index % len(families)], scene_rng(21, index, 2))
    h.update(sc.violated(plan, 0.7)[0].tobytes())
    h.update(sc.nuisance(1, scene_rng(21, index, 3))[0].tobytes())
    sc.close()
    return h.hexdigest()


def test_frames_identical_across_processes():
    indices = [0, 1, 2, 3]
    here = [_digest(i) for i in indices]
    with mp.get_context("fork").Pool(2, initializer=default_worker_signals) as pool:
        there = pool.map(_digest, indices)
        pool.close()
        pool.join()
    assert here == there
