"""A batch never stops for one video: a frame size that changes mid-stream (two MPEG-TS joined byte-wise) is
read at the first frame's size in ``score``, ``extract`` and the service; any other failure reading one video is
that video's error row (``score``), error line (``extract``) or 4xx (service); a folder's .ts / .3gp / .flv /
.wmv / .ogv / raw .h264 files are found by a directory scan."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import numpy as np
import pytest
from conftest import run_cli

from phyprobe.data.manifest import write_jsonl
from phyprobe.io import VIDEO_SUFFIXES
from phyprobe.io.video import ClipSpec, decode_clip, write_video
from phyprobe.scorer.batch import resolve_inputs
from phyprobe.testing.bad_inputs import video_row, write_container, write_size_changing_ts
from phyprobe.testing.scorers import make_scorer
from phyprobe.testing.videos import moving_square

# (suffix, container, codec) of the other formats a folder of videos holds; Ogg carries VP8 because this
# FFmpeg build has no Theora encoder (it decodes Theora), and .webp is not scanned (see phyprobe.io).
OTHER_FORMATS = [
    (".ts", "mpegts", "libx264"),
    (".mts", "mpegts", "libx264"),
    (".m2ts", "mpegts", "mpeg2video"),
    (".3gp", "3gp", "libx264"),
    (".flv", "flv", "flv"),
    (".wmv", "asf", "wmv2"),
    (".ogv", "ogg", "libvpx"),
    (".h264", "h264", "libx264"),
]
POISON = "all input arrays must have the same shape"


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """Two good mp4 clips, the size-changing TS, one clip in each other format, a text file (not scanned)."""
    d = tmp_path_factory.mktemp("videos")
    write_video(d / "good_a.mp4", moving_square(12, 48, 64, 4, 2), fps=12)
    write_video(d / "good_b.mp4", moving_square(12, 48, 64, 30, -2, colour=(20, 20, 220)), fps=12)
    write_size_changing_ts(d / "joined.ts")
    sub = d / "more"
    sub.mkdir()
    for i, (suffix, fmt, codec) in enumerate(OTHER_FORMATS):
        write_container(sub / f"clip{i}{suffix}", moving_square(12, 48, 64, 2 + 3 * i, 2), fmt, codec)
    (d / "notes.txt").write_text("not a video\n")
    return d


@pytest.fixture(scope="module")
def scorer_dir(tmp_path_factory) -> Path:
    return make_scorer(tmp_path_factory.mktemp("scorer") / "s")


@pytest.fixture
def poisoned(monkeypatch):
    """Decoding ``poison.mp4`` (any file with its bytes) raises a plain ValueError, as the unfixed decoder did on
    a size-changing stream: not a VideoDecodeError, so only the per-video guard keeps the batch going."""
    import phyprobe.encoders.base as base

    monkeypatch.delenv("PHYPROBE_DEBUG", raising=False)
    real = base.decode_clip
    state: dict = {}

    def decode(path, *a, **kw):
        if Path(path).read_bytes() == state["bytes"]:
            raise ValueError(POISON)
        return real(path, *a, **kw)

    monkeypatch.setattr(base, "decode_clip", decode)

    def make(where: Path) -> Path:
        p = write_video(where / "poison.mp4", moving_square(6, 32, 32, 1, 1, colour=(1, 2, 3)), fps=12)
        state["bytes"] = p.read_bytes()
        return p

    return make


def test_a_size_changing_ts_decodes_at_its_first_frame_size(folder, caplog):
    with caplog.at_level(logging.WARNING, logger="phyprobe.io.video"):
        clip = decode_clip(folder / "joined.ts", ClipSpec(8))
    assert clip.frames.shape == (8, 48, 64, 3) and clip.frames.dtype == np.uint8
    assert any(
        re.search(r"frame size changes mid-stream \(64x48, then 160x96\)", r.getMessage()) for r in caplog.records
    )
    first, last = clip.frames[0].reshape(-1, 3).max(0), clip.frames[-1].reshape(-1, 3).max(0)
    assert first[0] > 150 and first[1] < 150  # the orange square of the first segment
    assert last[1] > 150 and last[0] < 100  # the green one of the second, resampled
    # a box to fit into changes nothing here (the first frame is already small), nor does the sampling mode
    assert decode_clip(folder / "joined.ts", ClipSpec(4), fit=(32, 32)).frames.shape == (4, 48, 64, 3)
    assert decode_clip(folder / "joined.ts", ClipSpec(4, "fps", 6.0)).frames.shape == (4, 48, 64, 3)


def test_a_directory_scan_finds_every_container_ffmpeg_decodes(folder):
    found = {Path(p).name for p in resolve_inputs([folder])}
    want = {"good_a.mp4", "good_b.mp4", "joined.ts"} | {f"clip{i}{s}" for i, (s, _, _) in enumerate(OTHER_FORMATS)}
    assert found == want  # notes.txt is not a video
    assert ".webp" not in VIDEO_SUFFIXES  # FFmpeg here reads a WebP as a still image only
    for p in sorted((folder / "more").iterdir()):
        assert decode_clip(p, ClipSpec(4)).frames.shape == (4, 48, 64, 3), p.name


def test_a_scan_keeps_what_is_named_like_a_video_and_names_what_it_skips(folder, tmp_path, caplog):
    """A FIFO or a broken link named like a video is kept (scoring reports it as unreadable, never a silent drop);
    every other file is named in one warning, an animated WebP among them, which FFmpeg here cannot decode."""
    import os

    d = tmp_path / "scan"
    d.mkdir()
    (d / "good.mp4").write_bytes((folder / "good_a.mp4").read_bytes())
    os.mkfifo(d / "pipe.mp4")
    (d / "gone.mp4").symlink_to(d / "nowhere.mp4")
    (d / "anim.webp").write_bytes(b"RIFF\x1a\x00\x00\x00WEBPVP8X\x0a\x00\x00\x00\x02" + b"\x00" * 9 + b"ANIM")
    (d / "notes.txt").write_text("x")
    with caplog.at_level(logging.WARNING, logger="phyprobe.scorer.batch"):
        found = {Path(p).name for p in resolve_inputs([d])}
    assert found == {"good.mp4", "pipe.mp4", "gone.mp4"}
    (warning,) = [r.getMessage() for r in caplog.records]
    assert f"{d}: 2 file(s) not scored" in warning and "anim.webp, notes.txt" in warning
    from phyprobe.io.video import VideoDecodeError

    with pytest.raises(VideoDecodeError, match="animated WebP, which this FFmpeg cannot decode"):
        decode_clip(d / "anim.webp", ClipSpec(4))


def test_score_a_folder_scores_every_clip_and_a_bad_one_is_its_error_row(
    folder, scorer_dir, poisoned, tmp_path, capsys
):
    poison = poisoned(tmp_path)
    out = tmp_path / "scores.jsonl"
    argv = ["score", str(scorer_dir), str(folder), str(poison), str(folder / "good_b.mp4"), "--out", str(out)]
    code, _, err = run_cli([*argv, "--workers", "0", "--batch-size", "4", "--no-progress"], capsys)
    assert "Traceback" not in err
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    by = {Path(r["video"]).name: r for r in rows}
    assert len(rows) == len(by) == 3 + len(OTHER_FORMATS) + 1  # every input answered once
    bad = by.pop("poison.mp4")
    assert bad["error"] == f"cannot read video (ValueError: {POISON})"
    assert all("score" in r and 0.0 <= r["score"] <= 1.0 for r in by.values()), by  # joined.ts: resampled, scored
    assert code == 1 and f"phyprobe: error: {poison}: cannot read video (ValueError" in err
    code, _, err = run_cli([*argv, "--workers", "0", "--no-progress"], capsys)  # a rerun answers nothing again
    assert len(out.read_text().splitlines()) == len(rows)
    assert code == 1 and "0 scored, 0 failed" in err and "1 of them errors" in err


def test_extract_caches_every_clip_and_a_bad_one_is_its_error_line(folder, poisoned, tmp_path, capsys):
    files = [folder / "good_a.mp4", folder / "joined.ts", *sorted((folder / "more").iterdir())]
    poison = poisoned(tmp_path)
    m = tmp_path / "m"
    m.mkdir()
    write_jsonl(m / "videos.jsonl", [video_row(f"v{i:02d}", str(p)) for i, p in enumerate([*files, poison])])
    write_jsonl(m / "pairs.jsonl", [])
    argv = ["extract", str(m), "--image-size", "32", "--num-frames", "4", "--cache", str(tmp_path / "cache")]
    code, out, err = run_cli([*argv, "--workers", "0", "--batch-size", "4"], capsys)
    assert "Traceback" not in err
    assert f"videos: {len(files)} of {len(files) + 1}  unreadable: 1" in out, out
    lines = [line for line in err.splitlines() if line.startswith("phyprobe: error: ")]
    assert lines == [f"phyprobe: error: {poison}: cannot read video (ValueError: {POISON})"] and code == 1


def test_the_service_scores_the_joined_ts_and_answers_a_bad_video_with_422(folder, scorer_dir, poisoned, tmp_path):
    from phyprobe import Scorer
    from phyprobe.serve import ServeConfig, build_app, serve_in_thread
    from phyprobe.testing.serve_load import post

    scorer = Scorer.from_pretrained(scorer_dir)
    poison = poisoned(tmp_path)
    with serve_in_thread(build_app(scorer, ServeConfig(spool_dir=tmp_path, decode_workers=0))) as url:
        status, res, _ = post(url, (folder / "joined.ts").read_bytes(), "video/mp2t")
        assert status == 200 and 0.0 <= res["score"] <= 1.0, res
        status, res, _ = post(url, poison.read_bytes())
        assert status == 422 and res["error"] == f"upload: cannot read video (ValueError: {POISON})", res
        assert post(url, (folder / "good_a.mp4").read_bytes())[0] == 200  # the service goes on
