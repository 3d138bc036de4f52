"""The trajectory encoder's statistics against hand-computed values, the GeoPhys signals, and its features
identical through every door: the feature cache, ``phyprobe score``, ``Scorer.score_frames`` and the service."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import run_cli
from test_scorer_frames import read_all_frames, write_lossless

from phyprobe import Scorer
from phyprobe.data.manifest import Manifest
from phyprobe.encoders import from_config
from phyprobe.encoders.trajectory import STATS, TrajectoryEncoder, geophys_score, geophys_signals, trajectory_kinematics
from phyprobe.features.extract import extract_features
from phyprobe.serve import ServeConfig, build_app, serve_in_thread
from phyprobe.testing.scorers import make_scorer
from phyprobe.testing.serve_load import post

T = 10
U = torch.tensor([3.0, 4.0, 0.0])  # step length 5
W = torch.tensor([0.0, 0.0, 1.0])  # orthogonal to U


def path(points: list[torch.Tensor]) -> torch.Tensor:
    """One path (1, T, 1, C) from its points."""
    return torch.stack(points)[None, :, None, :]


def kin(z: torch.Tensor, **kw) -> dict[str, np.ndarray]:
    k = trajectory_kinematics(z, **kw)[0, :, 0]
    return {name: k[:, i].numpy() for i, name in enumerate(STATS)}


def test_a_straight_line_at_constant_speed_has_no_turn_acceleration_or_residual():
    k = kin(path([t * U for t in range(T)]))
    np.testing.assert_allclose(k["speed"], 5.0, atol=1e-6)
    np.testing.assert_allclose(k["turn"], 0.0, atol=1e-3)  # arccos near 1 loses precision: 1e-3 rad
    np.testing.assert_allclose(k["accel"], 0.0, atol=1e-6)
    np.testing.assert_allclose(k["residual"], 0.0, atol=1e-5)


def test_a_jump_gives_a_speed_spike_and_turns_where_hand_computation_puts_them():
    jump = 12.0  # at frame 5 the point is displaced sideways by 12 and stays displaced
    z = path([t * U + (jump * W if t >= 5 else 0 * W) for t in range(T)])
    k = kin(z, order=1, window=1, ridge=0.0)
    speed = np.full(T, 5.0)
    speed[5] = math.hypot(5.0, jump)  # 13: the step into frame 5 carries the jump
    np.testing.assert_allclose(k["speed"], speed, atol=1e-5)
    turn = np.zeros(T)
    turn[5] = turn[6] = math.atan2(jump, 5.0)  # into the jump and back out of it
    np.testing.assert_allclose(k["turn"], turn, atol=1e-3)
    accel = np.zeros(T)
    accel[5] = accel[6] = jump  # |v_t - v_{t-1}|: the sideways step appears, then disappears
    np.testing.assert_allclose(k["accel"], accel, atol=1e-5)
    # order 1, window 1, no ridge: v_t is predicted as a v_{t-1}, a = <v_{t-1}, v_{t-2}> / |v_{t-2}|^2
    residual = np.zeros(T)
    residual[5] = jump  # a = 1: predicts U, sees U + jump W
    residual[6] = jump  # a = 1 again (<U + jW, U> / |U|^2): predicts U + jW, sees U
    residual[7] = 5.0 * jump**2 / (25.0 + jump**2)  # a = 25 / 169: predicts U a, sees U
    np.testing.assert_allclose(k["residual"], residual, atol=1e-4)


def test_the_residual_is_zero_for_decelerating_motion_that_acceleration_still_sees():
    """A geometric slow-down (friction) is exactly linear-predictable, while its second difference is not zero:
    the residual and the acceleration measure different things."""
    z = path([sum((0.5**s * U for s in range(t)), torch.zeros(3)) for t in range(T)])
    k = kin(z, order=1, window=3, ridge=0.0)
    np.testing.assert_allclose(k["residual"], 0.0, atol=1e-5)
    assert k["accel"][2] == pytest.approx(5.0 * 0.5, abs=1e-5)  # |v_2 - v_1| = |0.5 U - U|


def test_geophys_signals_are_the_paper_statistics_of_the_per_step_values():
    jump = 12.0
    z = path([t * U + (jump * W if t >= 5 else 0 * W) for t in range(T)])
    k = trajectory_kinematics(z, order=1, window=1, ridge=0.0)[:, :, 0]
    sig = geophys_signals(k, STATS, order=1)
    speeds = np.array([5.0] * 4 + [13.0] + [5.0] * 4)  # the T - 1 steps
    assert float(sig["speed_std"]) == pytest.approx(speeds.std(), rel=1e-5)
    turns = np.zeros(T - 2)
    turns[3] = turns[4] = math.atan2(jump, 5.0)
    assert float(sig["curvature"]) == pytest.approx(turns.mean(), abs=1e-3)
    assert float(sig["angle_std"]) == pytest.approx(turns.std(), abs=1e-3)
    assert float(sig["accel"]) == pytest.approx(2 * jump**2 / (T - 2), rel=1e-5)
    smooth = trajectory_kinematics(path([t * U for t in range(T)]), order=1, window=1, ridge=0.0)[:, :, 0]
    assert float(geophys_score(sig)) > float(geophys_score(geophys_signals(smooth, STATS, order=1)))


def test_features_are_ordered_layer_then_cell_then_statistic():
    enc = from_config(
        "trajectory",
        frames={"name": "efficientnet_lite0", "weights": None, "image_size": 32},
        layers=[1, -1],
        grids=[1, 2],
    )
    assert isinstance(enc, TrajectoryEncoder) and enc.feature_dim == 2 * 5 * 4
    assert enc.columns(1, 0) == [20, 21, 22, 23]  # the final map's global cell
    assert enc.columns(0, 4, ("residual",)) == [19]  # the first layer's last 2 x 2 cell
    clips = torch.randn(2, 6, 3, 32, 32)
    paths = enc.paths(clips)
    assert [z.shape[:3] for z in paths] == [(2, 6, 5), (2, 6, 5)]  # per layer: the global cell and 2 x 2
    for z in paths:
        torch.testing.assert_close(z.norm(dim=-1), torch.ones(2, 6, 5))  # l2: paths on the unit sphere
    feats = enc(clips)
    torch.testing.assert_close(feats[..., enc.columns(1, 0)], trajectory_kinematics(paths[1][:, :, 0:1])[:, :, 0])


def test_unknown_options_are_refused():
    frames = {"name": "efficientnet_lite0", "weights": None, "image_size": 32}
    with pytest.raises(ValueError, match="unknown statistics"):
        from_config("trajectory", frames=frames, stats=["speed", "jerk"])
    with pytest.raises(ValueError, match="no feature maps"):
        from_config("trajectory", frames={"name": "flow_stats", "image_size": 32})
    with pytest.raises(ValueError, match="normalise"):
        from_config("trajectory", frames=frames, normalise="z")


ENCODER = {
    "name": "trajectory",
    "frames": {"name": "efficientnet_lite0", "image_size": 32, "weights": "package", "resize": "squash"},
    "layers": [2, -1],
    "grids": [1, 2],
}


def test_features_are_identical_through_the_cache_the_cli_score_frames_and_the_service(tiny_world, tmp_path, capsys):
    scorer_dir = make_scorer(tmp_path / "scorer", num_frames=8, encoder=ENCODER)
    scorer = Scorer.from_pretrained(scorer_dir)
    m = Manifest.load(tiny_world)
    m = m.keep(m.videos["id"].isin(m.videos["id"].iloc[:4]).to_numpy())
    files = [m.video_path(p) for p in m.videos["path"]]
    cache = extract_features(m, scorer.encoder, scorer.clip, tmp_path / "cache", dtype="float16", batch_size=3)
    cached = {s["id"]: torch.from_numpy(s["feats"]).float() for s in cache.iter_samples()}
    direct = {v: scorer.encode(scorer.load_clip(f)[None])[0] for v, f in zip(m.videos["id"], files)}
    for v in cached:  # the cache holds the encoder's forward on the file, rounded to its float16 storage
        torch.testing.assert_close(cached[v], direct[v].half().float(), atol=2e-3, rtol=1e-3)
    from_cache = np.array([float(scorer.head_scores(cached[v][None])[0]) for v in m.videos["id"]])
    from_files = np.array(scorer.score_raw_many(files))
    np.testing.assert_allclose(from_files, from_cache, atol=1e-3)
    assert np.ptp(from_files) > 1e-4  # the videos are told apart: agreement is not a constant

    code, out, _ = run_cli(["score", scorer_dir, *files, "--json"], capsys)
    assert code == 0
    cli = {Path(r["video"]).name: r["raw_score"] for r in map(json.loads, out.strip().splitlines())}
    np.testing.assert_allclose([cli[f.name] for f in files], from_files, atol=1e-4)

    for i, f in enumerate(files):  # frames in memory, against the same pixels in a lossless file
        frames = read_all_frames(f)
        want = scorer.score_raw_many([write_lossless(tmp_path / f"{i}.mkv", frames)])[0]
        assert scorer.score_frames(frames[None], raw=True)[0] == pytest.approx(want, abs=1e-3)
        as_float = torch.from_numpy(frames[None]).permute(0, 1, 4, 2, 3).float() / 255.0  # (B, T, 3, H, W)
        assert scorer.score_frames(as_float, raw=True)[0] == pytest.approx(want, abs=1e-3)

    with serve_in_thread(build_app(scorer, ServeConfig(max_batch=4, spool_dir=tmp_path / "spool"))) as url:
        for f, want in zip(files, from_files):
            status, res, _ = post(url, f.read_bytes())
            assert status == 200 and res["raw_score"] == pytest.approx(want, abs=1e-4)


def test_log_scale_reads_the_same_kinematics_on_a_log_scale_directly_and_from_a_wider_cache():
    frames = {"name": "efficientnet_lite0", "weights": None, "image_size": 32}
    sub = from_config(
        "trajectory", frames=frames, layers=[2], grids=[1], log_scale=1e-3, within={"layers": [1, 2], "grids": [1, 2]}
    )
    plain = TrajectoryEncoder(sub.base.frames, (2,), (1,), STATS, 2, 8, 1e-2, "l2", "avg")
    logged = TrajectoryEncoder(sub.base.frames, (2,), (1,), STATS, 2, 8, 1e-2, "l2", "avg", log_scale=1e-3)
    clips = torch.randn(2, 7, 3, 32, 32)
    raw = plain(clips)
    torch.testing.assert_close(logged(clips), torch.log(raw + 1e-3))
    from_cache = sub.derive(sub.base(clips))  # the wide encoder's float16 cache, its columns, then the log
    torch.testing.assert_close(from_cache, torch.log(raw.half().float() + 1e-3))
    assert "log_scale" not in from_config("trajectory", frames=frames).options  # off: cache keys as before
    with pytest.raises(ValueError, match="log_scale"):
        from_config("trajectory", frames=frames, log_scale=0.0)


def test_frame_size_runs_the_frame_encoder_on_shrunk_frames_and_lets_a_concatenation_share_the_read():
    frames = {"name": "efficientnet_lite0", "weights": None, "image_size": 48, "resize": "squash"}
    small = from_config("trajectory", frames=frames, layers=[2], grids=[1], frame_size=32)
    clips = torch.rand(2, 6, 3, 48, 48)
    shrunk = torch.nn.functional.interpolate(clips.flatten(0, 1), size=(32, 32), mode="bilinear", antialias=True)
    direct = TrajectoryEncoder(small.frames, (2,), (1,), STATS, 2, 8, 1e-2, "l2", "avg")
    torch.testing.assert_close(small(clips), direct(shrunk.view(2, 6, 3, 32, 32)))
    assert not torch.allclose(small(clips), direct(clips))  # the size reaches the encoder
    assert small.preprocess.size == (48, 48) and small.describe()["options"]["frame_size"] == 32
    assert "frame_size" not in from_config("trajectory", frames=frames).options  # off: cache keys as before
    concat = from_config(  # reads 48 px as the flow part does: one decode serves both
        "concat",
        parts=[
            {"name": "flow_stats", "image_size": 48, "resize": "squash"},
            {"name": "trajectory", "frames": frames, "layers": [2], "grids": [1], "frame_size": 32},
        ],
    )
    assert concat.feature_dim == small.feature_dim + concat.parts[0].feature_dim
    with pytest.raises(ValueError, match="frame_size"):
        from_config("trajectory", frames=frames, frame_size=4)
