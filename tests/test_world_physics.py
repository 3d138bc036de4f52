"""The world's physics: plausible clips obey the invariants, and every violation family is really
there (measured from the simulated state or the rendered frames) and grows with its severity."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from world_checks import SEVERITIES, assert_grows_with_severity

from phyprobe.world.planar.render import Renderer, Track
from phyprobe.world.planar.scene import GRAVITY, lowest_point, sample_scene
from phyprobe.world.planar.simulate import build_space, simulate
from phyprobe.world.planar.violations import FAMILIES, Plan, apply_violation, plan_violation
from phyprobe.world.seeds import scene_rng

# ---------------------------------------------------------------------------------- measurements


def penetration_depths(scene, track: Track, t: int) -> float:
    """Deepest overlap at frame t of the drawn bodies (rigid poses) with the floor and walls (from
    their extents) and with each other and the ramp (from pymunk's contact geometry)."""
    deepest = 0.0
    for m, b in enumerate(track.body):
        spec, (x, y), ang = scene.bodies[b], track.pos[t, m], track.angle[t, m]
        deepest = max(deepest, lowest_point(spec.vertices, spec.radius, ang) - y)
        reach_x = (
            spec.radius
            if spec.kind == "circle"
            else max(abs(math.cos(ang) * vx - math.sin(ang) * vy) for vx, vy in spec.vertices)
        )
        deepest = max(deepest, reach_x - x, x + reach_x - scene.world_width)
    space, bodies = build_space(dataclasses.replace(scene, bodies=tuple(scene.bodies[b] for b in track.body)))
    for m, b in enumerate(bodies):
        b.position, b.angle = tuple(track.pos[t, m]), float(track.angle[t, m])
        space.reindex_shapes_for_body(b)
    floor_and_walls = set(list(space.static_body.shapes)[:3])  # measured above, exactly
    for b in bodies:
        for shape in b.shapes:
            for hit in space.shape_query(shape):
                if hit.shape not in floor_and_walls:
                    deepest = max([deepest] + [-p.distance for p in hit.contact_point_set.points])
    return deepest


def plain_renderer(scene, plausible) -> Renderer:
    """The scene's renderer with black background, floor and walls and even light: only body pixels
    are nonzero (and the floor still hides what sinks into it)."""
    style = dataclasses.replace(
        scene.style,
        background="flat",
        background_colours=((0, 0, 0), (0, 0, 0)),
        floor_colour=(0, 0, 0),
        lighting="even",
        texture="solid",
    )
    return Renderer(dataclasses.replace(scene, style=style), plausible)


def body_masks(renderer: Renderer, track: Track, item: int) -> np.ndarray:
    one = Track(
        track.pos[:, [item]],
        track.angle[:, [item]],
        track.scale[:, [item]],
        track.alpha[:, [item]],
        (track.body[item],),
    )
    return renderer.render(one).max(axis=-1) > 0


def mask_moments(mask: np.ndarray) -> np.ndarray:
    """(eigenvalues of the pixel covariance, area) of one mask; zeros when empty."""
    ys, xs = np.nonzero(mask)
    if len(xs) < 3:
        return np.zeros(3)
    ev = np.linalg.eigvalsh(np.cov(np.stack([xs, ys]).astype(float)))
    return np.array([ev[1], ev[0], len(xs)])


def airborne_accel(traj, i: int, frames: range, fps: int, scene) -> float:
    """Median vertical acceleration of body i over frames where it flies free (no contact spikes)."""
    acc = []
    for t in frames:
        if t + 1 >= traj.num_frames:
            break
        a = (traj.vel[t + 1, i, 1] - traj.vel[t, i, 1]) * fps
        if abs(a) < 4 * GRAVITY and traj.pos[t, i, 1] > scene.bodies[i].radius + 5:
            acc.append(a)
    return float(np.median(acc)) if acc else -GRAVITY


def nearest_time_lag(plausible, track: Track, i: int, onset: int) -> float:
    """How far in time the drawn target is from where it should be: match each frame's pose to the
    nearest plausible pose (ties broken toward the same time)."""
    lags = []
    t_count = plausible.num_frames
    for t in range(onset, t_count):
        d = np.linalg.norm(plausible.pos[:, i] - track.pos[t, i], axis=1) + 20 * np.abs(
            plausible.angle[:, i] - track.angle[t, i]
        )
        d = d + 1e-3 * np.abs(np.arange(t_count) - t)
        lags.append(abs(t - int(np.argmin(d))))
    return float(max(lags))


def measure(plan: Plan, scene, plausible, severity: float, plain: Renderer, full: Renderer) -> float:
    """The size of the violation, from state or pixels; 0 (or a small floor) for the plausible run."""
    v = apply_violation(plan, scene, plausible, severity)
    i, on = plan.target, plan.onset
    if plan.family == "gravity":
        if plan.subtype == "wrong_g":
            acc = [
                airborne_accel(v.trajectory, b, range(1, scene.num_frames), scene.fps, scene)
                for b in range(len(scene.bodies))
            ]
            return abs(float(np.median(acc)) + GRAVITY) / GRAVITY
        return abs(airborne_accel(v.trajectory, i, range(on, scene.num_frames), scene.fps, scene) + GRAVITY) / GRAVITY
    if plan.family == "teleport":
        return float(np.linalg.norm(v.trajectory.pos[on, i] - plausible.pos[on, i]))
    if plan.family == "interpenetration":
        return max(penetration_depths(scene, v.track, t) for t in range(on, scene.num_frames, 2))
    if plan.family == "non_rigid":
        mp, mv = body_masks(plain, Track.from_trajectory(plausible), i), body_masks(plain, v.track, i)
        worst = 0.0
        for t in range(on, scene.num_frames):
            a, b = mask_moments(mp[t]), mask_moments(mv[t])
            if a[2] > 20 and b[2] > 0:
                worst = max(worst, float(np.abs(np.log(np.maximum(b[:2], 1e-6) / a[:2])).sum()))
        return worst
    if plan.family == "permanence":
        fp, fv = full.render(Track.from_trajectory(plausible)), full.render(v.track)
        return float(np.abs(fv[on:].astype(int) - fp[on:]).mean())
    if plan.family == "energy":
        e, e0 = v.trajectory.energy().sum(axis=1), plausible.energy().sum(axis=1)
        early = slice(on, on + 6)  # before later collisions make the runs diverge chaotically
        return float(np.max(e[early] - e0[early]) / e0[0])
    if plan.family == "causality":
        return float(
            max(
                np.linalg.norm(v.trajectory.vel[t, i] - plausible.vel[t, i])
                for t in range(on, min(on + 3, scene.num_frames))
            )
        )
    if plan.family == "time_anomaly":
        return nearest_time_lag(plausible, v.track, i, on)
    raise AssertionError(plan.family)


# --------------------------------------------------------------------------------------- tests

PLAUSIBLE_SCENES = [sample_scene(11, i) for i in range(24)]


def test_a_panning_camera_moves_the_picture_at_every_step_it_moves():
    """The camera eases in and out, so near its ends it moves a fraction of a pixel a frame. A view cut at whole
    pixels would hold still for several frames there and then jump a pixel: a stutter no camera makes, which
    the motion statistics would learn as plausible. Seen on textured backgrounds with no body in shot, every
    step the camera moves by 0.1 px or more changes the picture; a static camera shows the canvas unchanged."""

    def empty(frames: int) -> Track:
        return Track(np.zeros((frames, 0, 2)), np.zeros((frames, 0)), np.ones((frames, 0, 2)), np.ones((frames, 0)), ())

    scenes = [sample_scene(0, i) for i in range(40)]
    pans = [s for s in scenes if s.style.camera == "pan" and s.style.background in ("checker", "stripes", "noise")][:4]
    slow_steps = 0
    for scene in pans:
        r = Renderer(scene, simulate(scene))
        frames = r.render(empty(scene.num_frames)).astype(np.int16)
        changed = (np.abs(np.diff(frames, axis=0)) > 3).any(-1).mean((1, 2))
        step = np.diff(r.cam_px)
        slow_steps += int(((step >= 0.1) & (step < 0.5)).sum())
        assert (changed[step >= 0.1] > 0).all(), (scene.key, changed.round(3), step.round(2))
    assert len(pans) == 4 and slow_steps >= 4  # the eased ends, where whole pixels would hold, are there
    static = next(s for s in scenes if s.style.camera == "static")
    r = Renderer(static, simulate(static))
    r.gain = None  # the canvas as drawn, before the lighting
    expect = np.where(r.fg_mask[:, : r.w, None], r.foreground[:, : r.w], r.background[:, : r.w])
    assert all(np.array_equal(frame, expect) for frame in r.render(empty(2)))


@pytest.mark.parametrize("scene", PLAUSIBLE_SCENES, ids=lambda s: s.key)
def test_plausible_energy_never_increases(scene):
    e = simulate(scene).energy().sum(axis=1)
    gain = np.max(e - np.minimum.accumulate(e))
    assert gain <= 0.03 * e[0], f"energy rose by {gain / e[0]:.3f} of its initial value without a cause"


@pytest.mark.parametrize("scene", PLAUSIBLE_SCENES[:12], ids=lambda s: s.key)
def test_plausible_bodies_do_not_interpenetrate(scene):
    track = Track.from_trajectory(simulate(scene))
    depth = max(penetration_depths(scene, track, t) for t in range(scene.num_frames))
    assert depth <= 2.5, f"bodies overlap by {depth:.2f} cm (about a pixel is tolerated)"


@pytest.mark.parametrize("scene", [s for s in PLAUSIBLE_SCENES if s.style.camera == "static"][:8], ids=lambda s: s.key)
def test_plausible_bodies_keep_their_size(scene):
    traj = simulate(scene)
    track = Track.from_trajectory(traj)
    plain = plain_renderer(scene, traj)
    for i, spec in enumerate(scene.bodies):
        areas = body_masks(plain, track, i).sum(axis=(1, 2)).astype(float)
        clear = traj.pos[:, i, 1] > spec.radius + 3  # clear of the floor band (which hides nothing then)
        if clear.sum() >= 2:
            a = areas[clear]
            assert a.max() / a.min() < 1.25, f"body {i} drawn area varies {a.min()}..{a.max()}"


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_violation_present_and_monotone(family):
    checked = 0
    for index in range(40):
        scene = sample_scene(5, index)
        plausible = simulate(scene)
        plan = plan_violation(family, scene, plausible, scene_rng(5, index, 2))
        plain, full = plain_renderer(scene, plausible), Renderer(scene, plausible)
        m = [measure(plan, scene, plausible, s, plain, full) for s in SEVERITIES]
        assert_grows_with_severity(m, f"{plan}", tol=1e-6)
        checked += 1
        if checked == 3:
            break


@pytest.mark.parametrize("index", range(6))
def test_severity_zero_is_the_plausible_twin_frame_for_frame(index):
    scene = sample_scene(2, index)
    plausible = simulate(scene)
    renderer = Renderer(scene, plausible)
    reference = renderer.render(Track.from_trajectory(plausible))
    for family in FAMILIES:
        plan = plan_violation(family, scene, plausible, scene_rng(2, index, 2))
        frames = renderer.render(apply_violation(plan, scene, plausible, 0.0).track)
        assert np.array_equal(frames, reference), family
        # and the re-simulation path itself is exact: a violation only differs from its onset on
        tiny = apply_violation(plan, scene, plausible, 1e-9)
        assert np.array_equal(renderer.render(tiny.track)[: max(plan.onset, 1)], reference[: max(plan.onset, 1)]), (
            family
        )
