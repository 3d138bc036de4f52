"""Motion-aware encoders on real mp4s: per-step layout, response to motion, cache keys, exported scorers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from phyprobe import Scorer
from phyprobe.encoders import from_config
from phyprobe.encoders.motion import (
    CELL_STATS,
    STILL_LEVELS,
    UNEXPLAINED_LEVELS,
    flow_images,
    halted_pixels,
    normalise_image,
    paused_steps,
    step_speed,
    stopped_pixels,
    unexplained_pixels,
)
from phyprobe.io.video import ClipSpec, decode_clip, write_video
from phyprobe.testing.configs import TOY, compose_train
from phyprobe.testing.scorers import assert_training_scores
from phyprobe.testing.videos import moving_square
from phyprobe.training.pipeline import train

T = 6
SIZE = 64  # encoder input side: small and fast, and the moving square still spans several pixels


def clip_of(enc, path, num_frames: int = T) -> torch.Tensor:
    return enc.preprocess(decode_clip(path, enc.clip_spec(ClipSpec(num_frames))).frames)


@pytest.fixture(scope="module")
def videos(tmp_path_factory):
    """A static clip, a square sliding at constant speed, and its teleporting twin, as PyAV mp4s."""
    d = tmp_path_factory.mktemp("motion_videos")
    return {
        "static": write_video(d / "static.mp4", moving_square(T, 48, 64, 10, 0.0), fps=12),
        "moving": write_video(d / "moving.mp4", moving_square(T, 48, 64, 4, 4.0), fps=12),
        "teleport": write_video(d / "teleport.mp4", moving_square(T, 48, 64, 4, 4.0, jump_at=3, jump=20.0), fps=12),
    }


def encode(enc, *paths) -> torch.Tensor:
    return enc(torch.stack([clip_of(enc, p) for p in paths]))


@pytest.mark.parametrize("name", ["efficientnet_lite0_flow", "efficientnet_lite0_diff"])
def test_two_stream_layout_is_rgb_then_motion_per_step(name, videos):
    """(T, 2 x 1280): the first half is exactly the RGB encoder's features; the second half, the motion
    stream, has one step per frame with step 0 repeating step 1 (no motion into the first frame)."""
    enc = from_config(name, image_size=SIZE)
    rgb = from_config("efficientnet_lite0", image_size=SIZE, spatial_pool="max")
    f = encode(enc, videos["moving"])
    assert f.shape == (1, T, 2560) == (1, enc.num_steps(T), enc.feature_dim)
    torch.testing.assert_close(f[..., :1280], rgb(clip_of(rgb, videos["moving"])[None]), atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(f[0, 0, 1280:], f[0, 1, 1280:])
    assert not torch.allclose(f[0, 1, 1280:], f[0, 2, 1280:])  # later steps are not copies
    assert enc.preprocess == rgb.preprocess  # frames are fed exactly as to the RGB encoder


def _distance(f: torch.Tensor, ref: torch.Tensor) -> torch.Tensor:
    return (f - ref).norm(dim=-1).mean()


def test_flow_stream_sees_motion_and_nothing_else(videos):
    """A static clip's flow image is (up to codec noise) the zero-flow image at every step; a moving
    square's is not, and neither are its features."""
    enc = from_config("efficientnet_lite0_flow", image_size=SIZE)
    x = torch.stack([clip_of(enc, videos["static"]), clip_of(enc, videos["moving"])])
    zero = normalise_image(flow_images(np.zeros((1, SIZE, SIZE, 2), np.float32), 1.0), enc.preprocess)
    img = enc.motion_images(x)
    assert (img[0] - zero).abs().mean() < 0.05 * (img[1] - zero).abs().mean()
    f = enc(x)[..., 1280:]
    still = enc.rgb(zero[None])[0, 0]
    assert _distance(f[0], still) < 0.2 * _distance(f[1], still)


def test_difference_stream_of_a_static_clip_is_the_no_change_image(videos):
    enc = from_config("efficientnet_lite0_diff", image_size=SIZE)
    x = torch.stack([clip_of(enc, videos["static"]), clip_of(enc, videos["moving"])])
    no_change = normalise_image(torch.full((1, 3, SIZE, SIZE), 0.5), enc.preprocess)
    img = enc.motion_images(x)
    assert (img[0] - no_change).abs().mean() < 0.05 * (img[1] - no_change).abs().mean()
    f = enc(x)[..., 1280:]
    still = enc.rgb(no_change[None])[0, 0]
    assert _distance(f[0], still) < 0.2 * _distance(f[1], still)


def test_flow_stats_layout_and_response_to_motion(videos):
    enc = from_config("flow_stats", image_size=SIZE, grid=2)
    f = encode(enc, videos["static"], videos["moving"], videos["teleport"])
    assert f.shape == (3, T, 4 * len(CELL_STATS)) and enc.feature_dim == 4 * len(CELL_STATS)
    cells = f.view(3, T, 4, len(CELL_STATS))  # cell-major: (step, cell, statistic)
    # Nothing moves in the static clip: every statistic is ~0 (codec noise aside) next to the moving square's.
    assert f[0].abs().mean() < 0.1 * f[1].abs().mean()
    mag = cells[:, 1:, :, CELL_STATS.index("mag_max")].amax(-1)
    assert (mag[1] > 3.0).all() and (mag[0] < 0.3 * mag[1]).all()  # 4 px/frame at 64 px: ~6 % of the frame
    # Rightward motion lands in the direction bins around angle 0, never in the opposite ones.
    dirs = cells[1, 1:, :, CELL_STATS.index("dir0") : CELL_STATS.index("dir0") + 8].sum((0, 1))
    assert dirs[3:5].sum() > 0.9 * dirs.sum()
    torch.testing.assert_close(f[:, 0], f[:, 1])  # step 0 repeats the first flow's statistics
    acc = cells[..., CELL_STATS.index("acc_max")].amax(-1)
    torch.testing.assert_close(acc[:, 1], acc[:, 2])  # the acceleration starts with the second flow
    # The teleport (frame 3) is an acceleration the constant slide does not have, at steps 3 and 4.
    assert acc[2, 3:5].max() > 2 * acc[1, 3:5].max()


def test_squashed_flow_stats_spend_every_cell_on_the_picture(tmp_path):
    """A wide frame letterboxed leaves whole rows of cells on the padding, where nothing ever moves; squashed,
    every cell of the grid covers part of the picture. A texture scrolling across the whole 4:1 frame
    moves in every cell under ``squash``, and in the middle rows of cells only under ``letterbox``."""
    rng = np.random.default_rng(0)
    texture = rng.integers(0, 256, (6, 48, 3), dtype=np.uint8).repeat(4, 0).repeat(4, 1)  # 24 x 192 blocks of 4 px
    frames = np.stack([np.roll(texture, 3 * t, axis=1)[:, :96] for t in range(T)])  # 24 x 96: aspect 4:1
    path = write_video(tmp_path / "wide.mp4", frames, fps=12)
    moving = {}
    for resize in ("letterbox", "squash"):
        enc = from_config("flow_stats", image_size=SIZE, grid=4, resize=resize)
        cells = encode(enc, path).view(T, 4, 4, len(CELL_STATS))[1:, ..., CELL_STATS.index("mag_mean")].mean(0)
        moving[resize] = cells > 0.2 * cells.max()  # (row, column) of cells
    assert moving["squash"].all()
    assert moving["letterbox"][1:3].all() and not moving["letterbox"][[0, 3]].any()


def test_isotropic_flow_stats_measure_a_motion_alike_along_both_axes_and_at_every_aspect(tmp_path):
    """The same texture scrolls 3 px a frame across a 16:9, a 9:16 and a square frame of equal area, along each
    axis: six clips of one motion, 3 px of a 48-px geometric-mean side. ``isotropic`` measures 6.25 % of the side
    in all six (within flow's error at the texture's block edges) and in every cell. ``squash``, which stretches
    each frame to the square input, measures the wide frame's vertical motion 64/36 = 1.8x its horizontal."""
    rng = np.random.default_rng(0)
    texture = rng.integers(0, 256, (40, 40, 3), dtype=np.uint8).repeat(4, 0).repeat(4, 1)  # 160 x 160, blocks of 4 px
    encoders = {
        resize: from_config("flow_stats", image_size=SIZE, grid=4, resize=resize) for resize in ("isotropic", "squash")
    }
    mags = {resize: {} for resize in encoders}
    for h, w in ((36, 64), (64, 36), (48, 48)):
        for axis in (0, 1):
            frames = np.stack([np.roll(texture, 3 * t, axis=axis)[:h, :w] for t in range(T)])
            path = write_video(tmp_path / f"{h}x{w}-{axis}.mp4", frames, fps=12)
            for resize, enc in encoders.items():
                cells = encode(enc, path).view(T, 4, 4, len(CELL_STATS))[1:, ..., CELL_STATS.index("mag_mean")].mean(0)
                assert (cells > 0.5 * cells.max()).all(), (resize, h, w, axis)  # the grid is all picture
                mags[resize][h, w, axis] = float(cells.mean())
    np.testing.assert_allclose(list(mags["isotropic"].values()), 100 * 3 / 48, rtol=0.05)
    assert mags["squash"][36, 64, 0] / mags["squash"][36, 64, 1] > 1.5, mags["squash"]


def test_flow_stats_of_a_batch_on_threads_equal_one_clip_at_a_time(videos):
    """The clips of a batch get their flow on the encoder's threads: the features are each clip's own,
    in order, whatever the thread count."""
    enc = from_config("flow_stats", image_size=SIZE, grid=2)
    x = torch.stack([clip_of(enc, videos[k]) for k in ("teleport", "static", "moving", "teleport")])
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        alone = torch.cat([enc(c[None]) for c in x])
        torch.set_num_threads(4)
        batched = enc(x)
    finally:
        torch.set_num_threads(threads)
    assert (
        torch.equal(batched, alone) and torch.equal(batched[0], batched[3]) and not torch.equal(batched[0], batched[2])
    )


def test_every_entry_and_option_has_its_own_cache_key():
    fps = {
        "rgb": from_config("efficientnet_lite0", image_size=SIZE, weights=None, spatial_pool="max"),
        "flow": from_config("efficientnet_lite0_flow", image_size=SIZE, weights=None),
        "flow_dis": from_config("efficientnet_lite0_flow", image_size=SIZE, weights=None, flow_method="dis"),
        "flow_bound": from_config("efficientnet_lite0_flow", image_size=SIZE, weights=None, flow_bound=0.2),
        "diff": from_config("efficientnet_lite0_diff", image_size=SIZE, weights=None),
        "stats": from_config("flow_stats", image_size=SIZE),
        "stats_grid": from_config("flow_stats", image_size=SIZE, grid=2),
        "stats_dis": from_config("flow_stats", image_size=SIZE, flow_method="dis"),
        "stats_ego": from_config("flow_stats", image_size=SIZE, ego_motion="affine"),
        "stats_squash": from_config("flow_stats", image_size=SIZE, resize="squash"),
        "stats_isotropic": from_config("flow_stats", image_size=SIZE, resize="isotropic"),
        "dyn": from_config("dynamics", checkpoint=None, base={"name": "flow_stats", "image_size": SIZE}),
        "dyn_errors_only": from_config(
            "dynamics", checkpoint=None, base={"name": "flow_stats", "image_size": SIZE}, include_base=False
        ),
        "dyn_context": from_config(
            "dynamics", checkpoint=None, base={"name": "flow_stats", "image_size": SIZE}, context=2
        ),
        "dyn_base": from_config(
            "dynamics", checkpoint=None, base={"name": "flow_stats", "image_size": SIZE, "grid": 2}
        ),
    }
    prints = {k: e.fingerprint() for k, e in fps.items()}
    assert len(set(prints.values())) == len(prints), prints


def test_bad_options_are_refused():
    with pytest.raises(ValueError, match="flow_method"):
        from_config("efficientnet_lite0_flow", weights=None, flow_method="lucas-kanade")
    with pytest.raises(ValueError, match="flow_bound"):
        from_config("efficientnet_lite0_flow", weights=None, flow_bound=0)
    with pytest.raises(ValueError, match="grid"):
        from_config("flow_stats", grid=0)
    with pytest.raises(ValueError, match="ego_motion"):
        from_config("flow_stats", ego_motion="homography")
    with pytest.raises(ValueError, match="resize"):
        from_config("flow_stats", resize="crop")
    with pytest.raises(ValueError, match="at least 3 frames"):
        from_config("flow_stats", image_size=SIZE)(torch.zeros(1, 2, 3, SIZE, SIZE))


@pytest.fixture(scope="module")
def toy_run_factory(toy_manifest, tmp_path_factory):
    def run(backbone: str, extra: list[str]):
        out = tmp_path_factory.mktemp(f"run_{backbone}")
        overrides = [o for o in TOY if not o.startswith("backbone.")] + [f"backbone={backbone}", *extra]
        cfg = compose_train(
            out,
            [
                *overrides,
                "clip.num_frames=6",
                "data=manifest",
                f"data.source.path={toy_manifest}",
                "eval.report=false",
                "eval.n_boot=20",
                f"paths.cache_dir={out / 'cache'}",
            ],
        )
        train(cfg)
        return out

    return run


@pytest.mark.parametrize(
    "backbone, extra",
    [
        ("efficientnet_lite0_flow", [f"backbone.image_size={SIZE}"]),
        ("efficientnet_lite0_diff", [f"backbone.image_size={SIZE}"]),
        ("flow_stats", [f"backbone.image_size={SIZE}"]),
    ],
)
def test_exported_scorer_reproduces_training_scores(backbone, extra, toy_run_factory, toy_manifest):
    run = toy_run_factory(backbone, extra)
    expected = pd.read_csv(run / "scores.csv")
    scorer = Scorer.from_pretrained(run / "scorer")
    assert scorer.encoder.name == backbone
    got = scorer.score_raw_many([toy_manifest / p for p in expected["path"]])
    assert_training_scores(got, expected["raw_score"])


def test_affine_ego_motion_is_removed_and_a_body_moving_against_it_kept():
    """An affine flow field (what a panning, zooming or rotating camera gives a distant or planar scene)
    is removed exactly, while a body covering a small share of the frame keeps its own motion."""
    from phyprobe.baselines.motion import remove_ego_motion

    h, w = 60, 80
    gy, gx = np.mgrid[0:h, 0:w].astype(np.float32)
    flow = np.zeros((2, h, w, 2), np.float32)
    flow[..., 0], flow[..., 1] = 0.02 * gx + 0.01 * gy + 1.5, -0.01 * gx + 0.03 * gy - 0.5
    flow[:, 20:28, 30:38, 0] += 4.0  # the body: 1.3 % of the frame
    out = remove_ego_motion(flow)
    body = np.zeros((h, w), bool)
    body[20:28, 30:38] = True
    assert np.abs(out[:, ~body]).max() < 1e-3
    np.testing.assert_allclose(out[:, body, 0], 4.0, atol=1e-3)


def test_flow_stats_with_ego_motion_reads_a_camera_pan_as_no_motion(tmp_path):
    """A textured scene panned at 2 px/frame: without compensation every cell moves; with it the
    statistics fall to codec noise, while a body moving in a static view is still seen."""
    rng = np.random.default_rng(0)
    world = np.kron(rng.integers(0, 255, (12, 22, 3), dtype=np.uint8), np.ones((4, 4, 1), np.uint8))  # 48 x 88 texture
    pan = np.stack([world[:, 2 * t : 2 * t + 64] for t in range(T)])
    panned = write_video(tmp_path / "pan.mp4", pan, fps=12)
    moving = write_video(tmp_path / "moving.mp4", moving_square(T, 48, 64, 4, 4.0), fps=12)
    plain = from_config("flow_stats", image_size=SIZE, grid=2)
    ego = from_config("flow_stats", image_size=SIZE, grid=2, ego_motion="affine")
    mag = CELL_STATS.index("mag_mean")
    pan_plain = encode(plain, panned).view(T, 4, -1)[1:, :, mag].mean()
    pan_ego = encode(ego, panned).view(T, 4, -1)[1:, :, mag].mean()
    body_ego = encode(ego, moving).view(T, 4, -1)[1:, :, CELL_STATS.index("mag_max")].amax(-1)
    assert pan_ego < 0.2 * pan_plain
    assert (body_ego > 3.0).all()


def test_stopped_pixels_are_the_ones_that_moved_and_then_froze():
    """Causal per step: a background that never changes is not stopped, a pixel that keeps changing is not,
    one that changed and then holds its value is, from the first still step on; changes within the still
    tolerance count as still."""
    g = np.zeros((6, 1, 4), np.uint8)
    g[:, 0, 1] = [0, 50, 100, 150, 200, 250]  # keeps moving
    g[:, 0, 2] = [0, 50, 100, 100, 100, 100]  # moves, then freezes at frame 3
    g[:, 0, 3] = [0, 50, 100, 101, 99, 102]  # freezes within the tolerance (codec noise)
    s = stopped_pixels(g, still_levels=STILL_LEVELS)
    assert s.shape == (5, 1, 4)
    assert not s[:, 0, 0].any() and not s[:, 0, 1].any()
    assert s[:, 0, 2].tolist() == [False, False, True, True, True] == s[:, 0, 3].tolist()


def test_flow_stats_see_a_region_that_freezes_in_moving_footage(tmp_path):
    """A textured scene panning past the camera, and its twin whose centre square is frozen from frame 3 (the
    footage's ``frozen_region``), through PyAV mp4s: the twin's ``stopped`` share rises in the cells the
    square covers after the freeze, and stays near 0 in the plausible clip, where every pixel keeps changing."""
    rng = np.random.default_rng(0)
    texture = np.repeat(rng.integers(0, 256, (64, 160, 1), dtype=np.uint8), 3, axis=2)
    texture = np.repeat(np.repeat(texture[::4, ::4], 4, 0), 4, 1)  # 4 px blocks: texture the codec keeps
    pan = np.stack([texture[:, 4 * t : 4 * t + 64] for t in range(T)])
    frozen = pan.copy()
    frozen[3:, 16:48, 16:48] = pan[3, 16:48, 16:48]
    enc = from_config("flow_stats", image_size=SIZE, grid=2)
    f = encode(
        enc, write_video(tmp_path / "pan.mp4", pan, fps=12), write_video(tmp_path / "frozen.mp4", frozen, fps=12)
    )
    stopped = f[..., enc.columns("stopped")]  # (clip, step, cell): the square covers a quarter of each cell
    assert stopped[0].max() < 0.05
    assert (stopped[1, 4:] > 0.15).all() and (stopped[1, :3] < 0.05).all()
    assert enc.columns("stopped") == [c * len(CELL_STATS) + CELL_STATS.index("stopped") for c in range(4)]
    with pytest.raises(ValueError, match="no statistic 'speed'"):
        enc.columns("speed")


def flat_square(num_frames: int, xs: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """A flat-shaded square with a dark outline, at column xs[t] in frame t, on a flat grey ground (what the
    numpy worlds draw), and its exact flow: the square's pixels move by the next step's shift, nothing else."""
    g = np.full((num_frames, 24, 48), 40, np.uint8)
    flow = np.zeros((num_frames - 1, 24, 48, 2), np.float32)
    for t, x in enumerate(xs):
        g[t, 8:16, x : x + 8] = 0
        g[t, 9:15, x + 1 : x + 7] = 200
        if t + 1 < num_frames:
            flow[t, 8:16, x : x + 8, 0] = xs[t + 1] - x
    return g, flow


def test_halted_pixels_are_where_a_body_stopped_not_where_it_passed():
    """A flat square that slides on leaves the ground it uncovers exactly still: ``stopped`` counts that trail,
    growing with the motion, and ``halted`` counts nothing. The same square stopping at frame 3 is halted on its
    edges (the texture the flow carried there) from the first still step on, for as long as it rests; the flat
    ground and the middle of the flat fill never count (the flow there is not measured), nor a body that changes."""
    slide, slide_flow = flat_square(8, [2 + 4 * t for t in range(8)])
    stop, stop_flow = flat_square(8, [2 + 4 * min(t, 3) for t in range(8)])
    assert not halted_pixels(slide, slide_flow, 0.2).any()
    assert stopped_pixels(slide)[1:].sum(axis=(1, 2)).tolist() == sorted(
        stopped_pixels(slide)[1:].sum(axis=(1, 2)).tolist()
    )
    assert stopped_pixels(slide)[-1].sum() > stopped_pixels(stop)[-1].sum()  # the old level reads a stop as less
    h = halted_pixels(stop, stop_flow, 0.2)
    assert not h[:3].any() and h[3:].any()
    assert (h[3:].sum(axis=(1, 2)) == h[3].sum()).all()  # held while it rests
    footprint, edge = np.zeros((24, 48), bool), np.zeros((24, 48), bool)
    footprint[8:16, 14:22] = True
    edge[7:17, 13:23] = True
    edge[10:14, 16:20] = False
    assert h[3].any() and not (h[3] & ~(footprint & edge)).any()  # only texture, where the flow is measured
    moved = stop.copy()
    moved[6:, 9:15, 15:21] = 90  # the body changes in place: no longer at rest
    moved[6:, 8:16, 14:22] = 90
    assert not halted_pixels(moved, stop_flow, 0.2)[5:].any()


def test_flow_stats_see_a_body_that_stops(tmp_path):
    """Through PyAV mp4s and DIS flow: a square that slides on, and its twin that stops dead at frame 3. The
    ``halted`` share rises after the stop and stays near 0 while the square slides. Off (the default), the
    statistic and its option are absent, so the features and cache keys of encoders built before it do not change."""
    frames = moving_square(T, 48, 64, 4, 4.0)
    stop = frames.copy()
    stop[3:] = frames[3]
    enc = from_config("flow_stats", image_size=SIZE, grid=2, halted=True)
    f = encode(
        enc, write_video(tmp_path / "slide.mp4", frames, fps=12), write_video(tmp_path / "stop.mp4", stop, fps=12)
    )
    h = f[..., enc.columns("halted")].sum(-1)  # (clip, step)
    assert enc.stats == (*CELL_STATS, "halted") and enc.options["halted_px"] == [1.0, 0.5]
    assert h[0].max() < 0.01 and (h[1, 4:] > 0.01).all()
    assert not set(enc.columns("halted")) & set(enc.predicted_columns())  # a level, never forecast
    assert "halted_px" not in from_config("flow_stats", image_size=SIZE, grid=2).options


def test_paused_steps_count_a_picture_that_held_between_fast_steps():
    """A pause is counted, by its length, at the step that ends it, when the steps on both sides of it move fast; a
    scene that comes to rest and stays, one that starts at rest, and a pause with a slow step on either side (a
    body at the top of its flight) are no pause. Held means nearly all the picture is still: changes within the
    still tolerance, or beyond it on a few pixels (a repeated frame re-encoded), still hold; more do not."""

    def clip(levels):
        return np.repeat(np.asarray(levels, np.uint8)[:, None, None], 20, 1).repeat(20, 2)

    fast = np.array([3.0, 3.0, 0.0, 0.0, 3.0, 3.0])  # the held steps do not move
    assert paused_steps(clip([0, 10, 20, 20, 20, 30, 40]), fast).tolist() == [0, 0, 0, 0, 2, 0]
    assert paused_steps(clip([0, 10, 20, 22, 20, 30, 40]), fast).tolist() == [0, 0, 0, 0, 2, 0]
    assert not paused_steps(clip([0, 10, 20, 20, 20, 20, 20]), np.array([3.0, 3, 0, 0, 0, 0])).any()  # comes to rest
    assert not paused_steps(clip([20, 20, 20, 30, 40, 50, 60]), np.array([0.0, 0, 3, 3, 3, 3])).any()  # starts at rest
    for slow_step in (1, 4):  # slow into the pause, or out of it
        speed = fast.copy()
        speed[slow_step] = 1.0
        assert not paused_steps(clip([0, 10, 20, 20, 20, 30, 40]), speed).any()
    codec = clip([0, 10, 20, 20, 20, 30, 40])
    codec[3, 0, :4] += 9  # 1 % of the picture off by 9 levels: still held
    assert paused_steps(codec, fast).tolist() == [0, 0, 0, 0, 2, 0]
    codec[3, 0, 4] += 9  # one pixel more: the picture moved into frame 3 and out of it, and did not hold
    assert not paused_steps(codec, fast).any()
    small = clip([0, 10, 20, 20, 20, 30, 40])
    assert not paused_steps(small, np.full(6, 3.0)).any()  # a small body moves fast through the still-looking steps


def test_step_speed_reads_the_flow_only_where_the_picture_changed():
    """A dense flow reads motion where nothing moved; the step's speed ignores it. A scene at rest under a flow
    of 6 px everywhere has speed 0. A flat square of 8 x 8 px that slides 2 px a step changes two strips of
    16 px each (where it arrives and where it leaves), 32 of 1600 pixels, more than the 0.1 % the quantile
    leaves out: the speed is the flow there, 2 px, whatever the flow reads over the still rest."""
    rest = np.zeros((3, 40, 40), np.uint8)
    flow = np.full((2, 40, 40, 2), 6.0 / np.sqrt(2), np.float32)
    assert step_speed(flow, rest).tolist() == [0.0, 0.0]
    slide = rest.copy()
    for t in range(3):
        slide[t, 10:18, 10 + 2 * t : 18 + 2 * t] = 200
    flow[:, 10:18, 8:22] = (2.0, 0.0)  # the square's flow, over its footprint and the strips it changes
    np.testing.assert_allclose(step_speed(flow, slide), [2.0, 2.0])


def test_flow_stats_see_a_picture_that_freezes(tmp_path):
    """A textured pan (4 px a frame) through PyAV mp4s, and its twin holding frame 2 for two more frames before
    going on: the re-encoded repeats are held, so ``paused`` is 2 at the step that moves again, in every cell, and
    0 everywhere in the plain pan, whose every step changes."""
    rng = np.random.default_rng(0)
    texture = np.repeat(rng.integers(0, 256, (64, 160, 1), dtype=np.uint8), 3, axis=2)
    texture = np.repeat(np.repeat(texture[::4, ::4], 4, 0), 4, 1)
    pan = np.stack([texture[:, 4 * t : 4 * t + 64] for t in range(T)])
    frozen = pan[[0, 1, 2, 2, 2, 3]]
    enc = from_config("flow_stats", image_size=SIZE, grid=2, paused=True)
    f = encode(
        enc, write_video(tmp_path / "pan.mp4", pan, fps=12), write_video(tmp_path / "frozen.mp4", frozen, fps=12)
    )
    p = f[..., enc.columns("paused")]  # (clip, step, cell); step t holds the motion into frame t
    assert enc.stats == (*CELL_STATS, "paused") and not p[0].any()
    assert p[1, 5].tolist() == [2.0] * 4 and not p[1, :5].any()


def test_unexplained_pixels_are_the_change_the_flow_does_not_carry():
    """A texture shifted by the flow given is explained everywhere the shift brings texture in from the frame;
    a square that vanishes is unexplained over its footprint under zero flow, and a change within the
    tolerance is not counted."""
    rng = np.random.default_rng(0)
    texture = rng.integers(0, 256, (16, 40), dtype=np.uint8)
    g = np.stack([texture[:, 2 * t : 2 * t + 24] for t in range(3)])  # the view pans right by 2 px a frame
    flow = np.zeros((2, 16, 24, 2), np.float32)
    flow[..., 0] = -2.0  # the texture moves 2 px left in the image
    u = unexplained_pixels(g, flow)
    assert u.shape == (2, 16, 24)
    assert not u[:, :, 2:].any()  # every pixel the flow carries from inside the frame is explained
    assert u.any()  # the two columns the pan brings in from outside the frame are not (their texture is new)
    # and without the flow, most of the texture is unexplained
    assert unexplained_pixels(g, np.zeros_like(flow)).mean() > 0.5
    still = np.full((3, 8, 8), 100, np.uint8)
    still[:2, 2:6, 2:6] = 220  # a bright square that is gone in frame 2
    still[1:, 0, 0] += UNEXPLAINED_LEVELS  # a pixel that changes by no more than the tolerance
    u = unexplained_pixels(still, np.zeros((2, 8, 8, 2), np.float32))
    assert not u[0].any() and u[1, 2:6, 2:6].all() and u[1].sum() == 16


def test_flow_stats_see_a_body_that_vanishes(tmp_path):
    """A square sliding over a still background, and its twin in which it vanishes at frame 3, through PyAV
    mp4s: the ``unexplained`` share jumps at the step the square goes, in the cells it was in, and stays low
    while it slides (the flow carries it). Off (the default), the statistic and its option are absent, so the
    features and cache keys of encoders built before it existed do not change."""
    frames = moving_square(T, 48, 64, 4, 4.0)
    vanish = frames.copy()
    vanish[3:] = 40  # the background's grey: the square is gone
    enc = from_config("flow_stats", image_size=SIZE, grid=2, unexplained=True)
    f = encode(
        enc, write_video(tmp_path / "slide.mp4", frames, fps=12), write_video(tmp_path / "vanish.mp4", vanish, fps=12)
    )
    u = f[..., enc.columns("unexplained")]  # (clip, step, cell)
    assert enc.stats == (*CELL_STATS, "unexplained") and f.shape[-1] == 4 * 16
    assert u[1, 3].max() > 0.05 and u[1, 3].max() > 5 * u[0, 1:].max()
    assert u[1, 4:].max() < 0.01  # once gone, nothing changes
    assert not set(enc.columns("unexplained")) & set(enc.predicted_columns())  # a level, never forecast
    off = from_config("flow_stats", image_size=SIZE, grid=2)
    assert off.options["cell_stats"] == list(CELL_STATS) and "unexplained_levels" not in off.options
    assert off.feature_dim == 4 * len(CELL_STATS) and off.fingerprint() != enc.fingerprint()
    torch.testing.assert_close(encode(off, tmp_path / "vanish.mp4")[0], f[1].view(T, 4, 16)[..., :15].flatten(1))
    with pytest.raises(ValueError, match="unexplained=True"):
        off.columns("unexplained")


def test_vector_norm_is_numpy_s_norm_to_the_bit():
    """The flow encoders and the motion baseline take it in place of ``np.linalg.norm(v, axis=-1)`` for speed;
    cached features and published baseline scores depend on it giving exactly the same numbers."""
    from phyprobe.baselines.motion import vector_norm

    rng = np.random.default_rng(0)
    for dtype in (np.float32, np.float64):
        v = (rng.standard_normal((7, 33, 41, 2)) * rng.choice([1e-3, 1.0, 1e3], (7, 1, 1, 1))).astype(dtype)
        assert np.array_equal(vector_norm(v), np.linalg.norm(v, axis=-1)) and vector_norm(v).dtype == dtype


def test_flow_stats_low_pass_keeps_pixel_noise_out_of_the_levels_and_still_sees_a_body(tmp_path, videos):
    """A still textured scene with pixel noise of sd 8 levels in every frame (written losslessly): noise crosses
    the still tolerance at random, so a quarter of the pixels look as if they had moved and then stopped.
    Low-passed first (``denoise``, a Gaussian of sd 2 px, which divides such noise by about 7), almost none do,
    while the sliding square keeps its speed. The option changes the cache key only when on."""
    from phyprobe.io.codecs import Encoding
    from phyprobe.io.codecs import encode as encode_frames

    rng = np.random.default_rng(0)
    scene = np.kron(rng.integers(0, 255, (8, 8, 3), dtype=np.uint8), np.ones((8, 8, 1), np.uint8))  # 64 x 64
    frames = np.clip(scene[None] + rng.normal(0, 8, (T, 64, 64, 3)), 0, 255).astype(np.uint8)
    noisy = encode_frames(frames, 12, Encoding("ffv1", "ffv1", "matroska", "mkv", "bgr0"), tmp_path / "still.mkv")
    stopped = CELL_STATS.index("stopped")
    plain = from_config("flow_stats", image_size=SIZE, grid=2)
    smooth = from_config("flow_stats", image_size=SIZE, grid=2, denoise=2.0)
    level = {
        e.options.get("denoise", 0): float(encode(e, noisy).view(T, 4, -1)[1:, :, stopped].mean())
        for e in (plain, smooth)
    }
    assert level[0] > 0.1 and level[2.0] < 0.1 * level[0], level
    body = encode(smooth, videos["moving"]).view(T, 4, -1)[1:, :, CELL_STATS.index("mag_max")].amax(-1)
    assert (body > 3.0).all()
    assert "denoise" not in plain.options and smooth.options["denoise"] == 2.0
    assert plain.fingerprint() == from_config("flow_stats", image_size=SIZE, grid=2, denoise=0).fingerprint()
    with pytest.raises(ValueError, match="denoise"):
        from_config("flow_stats", denoise=-1)
