"""Sparse reads seek to the keyframe before each far-away wanted frame, and give the frames a decode from the start
gives, bit for bit: a clip's frames spread over a long video, windows spread over it, a stream with B-frames, and a
timestamp the demux pass did not see (decoding falls back to the start)."""

from dataclasses import replace
from fractions import Fraction

import av
import numpy as np
import pytest

from phyprobe.io import video as V
from phyprobe.scorer.reading import Reading, window_frames, windows

FRAMES = 600


def _write(path, frames: int, gop: int | None, bframes: int = 2):
    """An H.264 mp4 whose every frame differs (a moving bar, noise), a keyframe every ``gop`` frames."""
    rng = np.random.default_rng(0)
    with av.open(str(path), "w") as out:
        st = out.add_stream("libx264", rate=Fraction(24))
        st.width, st.height, st.pix_fmt = 64, 48, "yuv420p"
        st.options = {
            "threads": "1",
            "bf": str(bframes),
            "x264-params": "scenecut=0",
            **({"g": str(gop)} if gop else {}),
        }
        for t in range(frames):
            f = rng.integers(0, 60, (48, 64, 3), dtype=np.uint8)
            f[:, (t % 60) : (t % 60) + 4, 1] = 255
            f[..., 0] += np.uint8(t % 190)
            for pk in st.encode(av.VideoFrame.from_ndarray(f, format="rgb24")):
                out.mux(pk)
        for pk in st.encode():
            out.mux(pk)
    return path


@pytest.fixture(scope="module")
def gop24(tmp_path_factory):
    path = _write(tmp_path_factory.mktemp("seek") / "gop24.mp4", FRAMES, gop=24)
    stream = V.FrameStream(path)
    every = list(stream)
    assert stream.decoded_frames == FRAMES and len(every) == FRAMES
    assert len({f.tobytes() for f in every}) == FRAMES  # every frame tells which it is
    return path, every


def test_the_plan_seeks_only_past_long_gaps():
    keys = np.array([0, 30, 60, 90])
    assert V.seek_plan(keys, [5, 10]) == [(None, 10)]
    assert V.seek_plan(keys, [5, 70, 75]) == [(None, 5), (60, 75)]
    assert V.seek_plan(keys, [40]) == [(None, 0), (30, 40)]
    # a keyframe within SEEK_MIN_SKIP frames of where decoding is: decode on
    near = np.array([0, V.SEEK_MIN_SKIP, 2 * V.SEEK_MIN_SKIP])
    assert V.seek_plan(near, [V.SEEK_MIN_SKIP + 1]) == [(None, V.SEEK_MIN_SKIP + 1)]
    assert V.seek_plan(keys, [95, 100]) == [(None, 0), (90, 100)]


@pytest.mark.parametrize("num_frames", [8, 16, 32])
def test_a_clip_spread_over_a_long_video_is_the_frames_a_full_decode_gives(gop24, num_frames):
    path, every = gop24
    clip = V.decode_clip(path, V.ClipSpec(num_frames))
    idx = V.sample_indices(V._demux(path).times, V.ClipSpec(num_frames))
    assert len(V.seek_plan(V._demux(path).keys, sorted(set(idx.tolist())))) > 1  # this read seeks
    assert clip.frames.shape[0] == num_frames
    for frame, i in zip(clip.frames, idx):
        np.testing.assert_array_equal(frame, every[i])


def test_windows_spread_over_a_long_video_are_the_slices_of_a_full_decode(gop24):
    path, every = gop24
    starts = Reading("windows", None, "mean", 6).window_starts(FRAMES, 32)
    wanted = window_frames(starts, 32)
    stream = V.FrameStream(path)
    got = list(windows(stream.select(wanted), starts, 32))
    assert len(got) == len(starts) == 6
    for s, w in zip(starts, got):
        np.testing.assert_array_equal(w, np.stack(every[s : s + 32]))
    # only what the windows need, and the keyframe runs up to them: far fewer than the file's frames
    assert len(wanted) <= stream.decoded_frames < FRAMES // 2
    assert stream.decoded_share == 1.0


def test_a_video_with_one_keyframe_is_decoded_through(tmp_path):
    path = _write(tmp_path / "one_key.mp4", 120, gop=1000)
    assert V._demux(path).keys is None  # nothing to seek to
    stream = V.FrameStream(path)
    every = list(stream)
    picked = list(V.FrameStream(path).select([3, 100]))
    assert [i for i, _ in picked] == [3, 100]
    for i, f in picked:
        np.testing.assert_array_equal(f, every[i])


def test_an_unknown_timestamp_after_a_seek_decodes_from_the_start(gop24):
    path, every = gop24
    index = V._demux(path)
    shifted = replace(index, pts=index.pts + 1)  # no decoded frame's timestamp is in the table
    wanted = {5, 300, 301, 599}
    stats: dict = {}
    got = dict(V._decoded(path, shifted, None, wanted, max(wanted), stats))
    assert sorted(got) == sorted(wanted)
    for i, f in got.items():
        np.testing.assert_array_equal(f, every[i])
    assert stats["decoded"] == FRAMES  # the fallback decoded through
