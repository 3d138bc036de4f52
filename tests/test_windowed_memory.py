"""Windowed reading streams a long video (memory bounded by a window, the same scores as decoding it whole), and
files without a frame count that end before what their container declares are reported as partial."""

import json
import logging
import subprocess
import sys
from fractions import Fraction

import av
import numpy as np
import pytest

from phyprobe import Scorer
from phyprobe.io.video import ClipSpec, decode_clip, probe, reduced_size
from phyprobe.scorer.reading import Reading, windows
from phyprobe.testing.bad_inputs import cut_at_fragment, with_mehd
from phyprobe.testing.scorers import make_scorer


def _write(path, n: int, size=(48, 64), fmt: str | None = None, movflags: str | None = None, fps: int = 25, gop=25):
    """``n`` frames of a moving gradient, x264 ultrafast with a keyframe every ``gop`` (cheap even for minutes)."""
    h, w = size
    base = (np.add.outer(np.arange(h), np.arange(w)) * 2 % 256).astype(np.uint8)
    with av.open(str(path), "w", format=fmt, options={"movflags": movflags} if movflags else {}) as out:
        s = out.add_stream("libx264", rate=Fraction(fps))
        s.width, s.height, s.pix_fmt = w, h, "yuv420p"
        s.options = {"preset": "ultrafast", "crf": "35", "g": str(gop)}
        for t in range(n):
            y = np.concatenate([np.roll(base, 3 * t, axis=1).ravel(), np.full(h * w // 2, 128 + t % 7, np.uint8)])
            f = av.VideoFrame.from_ndarray(y.reshape(h * 3 // 2, w), format="yuv420p")
            for p in s.encode(f):
                out.mux(p)
        for p in s.encode():
            out.mux(p)
    return path


def _old_read(scorer, video):
    """The windowed reading before streaming: every frame decoded at once, then sliced."""
    n = probe(video)["num_frames"]
    frames = decode_clip(video, ClipSpec(n), fit=scorer.encoder.preprocess.size).frames
    length = scorer.window_length
    return [scorer.encoder.preprocess(frames[s : s + length]) for s in scorer.window_starts(n)]


@pytest.mark.parametrize("reading", [Reading("windows"), Reading("windows", stride=3, combine="max")])
def test_streamed_windows_give_the_scores_of_the_whole_decode(tmp_path, reading):
    scorer = Scorer.from_pretrained(make_scorer(tmp_path / "s", reading=reading))
    scorer.batch_size = 3  # windows span batches
    video = _write(tmp_path / "v.mp4", 23)
    assert scorer.in_windows(video) and len(scorer.window_starts(23)) > 3
    old = _old_read(scorer, video)
    old_raw = list(scorer._combined((0, str(video), c) for c in old))
    assert scorer.score_raw_many([video]) == old_raw  # identical, not close
    old_windows = [v for _, v in scorer._score_clips((j, str(video), c) for j, c in enumerate(old))]
    assert scorer.score_windows(video).tolist() == old_windows


def test_windows_go_through_the_encoder_a_few_at_a_time_and_score_as_each_alone(tmp_path):
    """On a CPU a forward takes at most ``forward_bytes`` of input (here two windows), whatever ``batch_size`` says;
    the windows score as each one encoded alone. Tolerance, not identity: a batch of another shape can make the CPU's
    convolution kernels sum in another order (float32 rounding, ~3e-8 here)."""
    scorer = Scorer.from_pretrained(make_scorer(tmp_path / "s", reading=Reading("windows", stride=2)))
    video = _write(tmp_path / "v.mp4", 30)
    clips = _old_read(scorer, video)
    window = clips[0].element_size() * clips[0].nelement()
    assert scorer.forward_bytes is not None and scorer.forward_bytes >= window  # the default bounds a CPU forward
    scorer.batch_bytes = 2 * window
    seen, encode = [], scorer.encode

    def counted(x):
        seen.append(len(x))
        return encode(x)

    scorer.encode = counted
    raw = scorer.score_windows(video)
    assert len(raw) == len(clips) > 4 and max(seen) == 2 and sum(seen) == len(clips)
    alone = [scorer.head_scores(encode(c[None])).item() for c in clips]  # each window its own forward
    np.testing.assert_allclose(raw, alone, rtol=0, atol=1e-6)
    assert scorer.score_raw_many([video])[0] == pytest.approx(np.mean(alone), abs=1e-6)


def test_windows_of_a_stream_are_the_slices():
    frames = [np.full((2, 2, 3), i, np.uint8) for i in range(11)]
    for starts, length in (([0, 2, 4, 6, 7], 4), ([0, 5, 8], 3), ([0], 11)):
        got = list(windows(enumerate(frames), starts, length))
        assert [w[:, 0, 0, 0].tolist() for w in got] == [list(range(s, s + length)) for s in starts]


CHILD = r"""
import json, resource, sys
from phyprobe import Scorer
import torch
torch.set_num_threads(1)
scorer = Scorer.from_pretrained(sys.argv[1])
warm = scorer.score_raw_many([sys.argv[2]])  # allocator, decoder and encoder warmed on a few windows
rss = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
before = rss()
raw = scorer.score_raw_many([sys.argv[3]])[0]
print(json.dumps({"before": before, "peak": rss(), "raw": float(raw)}))
"""


def test_windowed_memory_is_bounded_by_a_window_not_the_video(tmp_path):
    """Peak memory while scoring a 2-minute video in windows grows by far less than its frames decoded at once."""
    size, n = (120, 160), 2 * 60 * 25
    # windows far apart keep the encoder's work small; every frame is still decoded (the old reading held them all)
    scorer_dir = make_scorer(tmp_path / "s", reading=Reading("windows", stride=50), image_size=64)
    long = _write(tmp_path / "long.mp4", n, size=size)
    short = _write(tmp_path / "short.mp4", 20, size=size)
    r = subprocess.run(
        [sys.executable, "-c", CHILD, str(scorer_dir), str(short), str(long)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    m = json.loads(r.stdout.strip().splitlines()[-1])
    h, w = reduced_size(*size, (64, 64))
    assert (h, w) == size  # nothing reduced: the decode keeps the full frame
    whole = n * h * w * 3  # what decoding every frame at once held (173 MB)
    growth = m["peak"] - m["before"]
    assert np.isfinite(m["raw"])
    assert growth < 0.1 * whole, f"peak grew by {growth / 2**20:.0f} MB; the whole decode is {whole / 2**20:.0f} MB"


# --- partial files -----------------------------------------------------------------------------------------------


def _partial_warnings(caplog, path):
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="phyprobe.io.video"):
        decode_clip(path, ClipSpec(4))
    # a duration FFmpeg reads also sets the expected frame count: the damaged-file rule's warning says it then
    return [r.getMessage() for r in caplog.records if any(k in r.getMessage() for k in ("partial", "truncated"))]


@pytest.fixture(scope="module")
def complete(tmp_path_factory):
    d = tmp_path_factory.mktemp("complete")
    return {
        "ts": _write(d / "a.ts", 200, fmt="mpegts"),
        "mp4": _write(d / "a.mp4", 200),
        "frag": _write(d / "f.mp4", 200, movflags="frag_keyframe+empty_moov"),
        "mkv": _write(d / "a.mkv", 200),
    }


def test_complete_files_give_no_partial_warning(complete, caplog):
    for path in complete.values():
        assert _partial_warnings(caplog, path) == [], path


def test_cut_files_are_reported_once_with_both_ends(complete, tmp_path, caplog):
    ts = complete["ts"].read_bytes()
    half_ts = tmp_path / "half.ts"
    half_ts.write_bytes(ts[: len(ts) // 2 // 188 * 188 + 94])  # cut inside a transport packet
    [msg] = _partial_warnings(caplog, half_ts)
    assert str(half_ts) in msg and "part-way through a transport packet" in msg

    frag = _write(tmp_path / "f20.mp4", 500, movflags="frag_keyframe+empty_moov", gop=50).read_bytes()
    mdat = frag.index(b"mdat", frag.rindex(b"moof")) - 4  # the last 2-second fragment's samples
    inside = tmp_path / "inside.mp4"  # cut inside them: the fragment's header declares samples that are missing
    inside.write_bytes(frag[: mdat + (len(frag) - mdat) // 3])
    [msg] = _partial_warnings(caplog, inside)
    assert str(inside) in msg and "damaged or truncated" in msg

    mkv = complete["mkv"].read_bytes()
    most_mkv = tmp_path / "most.mkv"  # (cut at half, the damaged-file rule rejects it)
    most_mkv.write_bytes(mkv[: len(mkv) * 19 // 20])
    [msg] = _partial_warnings(caplog, most_mkv)
    assert str(most_mkv) in msg and "damaged or truncated" in msg

    # a windowed scorer decodes the file once: one warning
    scorer = Scorer.from_pretrained(make_scorer(tmp_path / "s", reading=Reading("windows", stride=4)))
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="phyprobe.io.video"):
        assert np.isfinite(scorer.score_raw_many([half_ts])[0])
    assert sum("partial file" in r.getMessage() for r in caplog.records) == 1


def test_fragmented_mp4_cut_between_fragments(complete, tmp_path, caplog):
    # FFmpeg's empty_moov writes no mehd and a zero mvhd duration: a cut between fragments leaves no evidence
    plain = tmp_path / "plain.mp4"
    plain.write_bytes(cut_at_fragment(complete["frag"].read_bytes()))
    assert _partial_warnings(caplog, plain) == []
    # with a movie-extends header (as other muxers write) the cut is seen
    src = _write(tmp_path / "d.mp4", 200, movflags="frag_keyframe+empty_moov+default_base_moof").read_bytes()
    data = with_mehd(src[: src.rindex(b"mfra") - 4], 8.0)
    whole, cut = tmp_path / "mehd.mp4", tmp_path / "mehd_cut.mp4"
    whole.write_bytes(data)
    cut.write_bytes(cut_at_fragment(data))
    assert _partial_warnings(caplog, whole) == []
    [msg] = _partial_warnings(caplog, cut)
    assert str(cut) in msg and "video ends at 4.0 s of the 8.0 s its header declares: a partial file?" in msg
