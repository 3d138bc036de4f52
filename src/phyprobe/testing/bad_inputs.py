"""Every bad input a hostile but realistic user can give, generated in a directory.

Shared by ``tests/test_bad_inputs.py`` (which asserts each outcome) and ``bench/bad_inputs.py``
(which counts them). A case says what must happen: ``ok`` (used as is), ``warn`` (used, with a
warning naming the file that matches ``reason``), or ``error`` with a pattern the one-line reason must match.
The second half runs cases as a user would (in-process through the entry points' functions, or as real
processes, servers and clients) and judges each outcome; the bench counts those, the tests run a sample.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import math
import os
import re
import traceback
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

from phyprobe.data.manifest import write_jsonl
from phyprobe.io.video import write_video
from phyprobe.testing.videos import moving_square

IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0  # root reads any file: no permission case


@dataclass
class Case:
    name: str
    path: Path
    expect: str  # ok | warn | error | either
    reason: str = ""  # regex the error line must match (after the file name)
    extra: dict = field(default_factory=dict)


def write_raw_mp4(
    path: Path, frames: np.ndarray, fps: int = 12, rotation: int | None = None, faststart: bool = False
) -> Path:
    """An H.264 mp4 with the options write_video does not expose: a display matrix (how phones
    store portrait video) and the index at the front (so a truncated file still opens)."""
    with av.open(str(path), "w", format="mp4", options={"movflags": "faststart"} if faststart else {}) as out:
        s = out.add_stream("libx264", rate=Fraction(fps))
        s.width, s.height, s.pix_fmt = frames.shape[2], frames.shape[1], "yuv420p"
        s.options = {"threads": "1"}
        if rotation is not None:
            s.set_display_rotation(rotation)
        for f in frames:
            for p in s.encode(av.VideoFrame.from_ndarray(np.ascontiguousarray(f), format="rgb24")):
                out.mux(p)
        for p in s.encode():
            out.mux(p)
    return path


def portrait_frames(n: int = 12) -> np.ndarray:
    """A portrait (64 x 48) clip with a marker in the top-left corner, so orientation is checkable."""
    f = moving_square(n, 64, 48, 4, 2)
    f[:, :8, :8] = (255, 255, 255)
    return f


def video_cases(root: Path) -> list[Case]:
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    c: list[Case] = []
    good = write_video(root / "good.mp4", moving_square(12, 48, 64, 4, 2), fps=12)
    c.append(Case("good video", good, "ok"))
    up = write_video(root / "portrait_upright.mp4", portrait_frames(), fps=12)
    c.append(Case("portrait video stored upright", up, "ok"))
    # A phone stores the sensor's landscape frames and a display matrix saying "turn -90 deg to view".
    c.append(
        Case(
            "phone video (display matrix -90)",
            write_raw_mp4(root / "phone_rot-90.mp4", np.rot90(portrait_frames(), 1, axes=(1, 2)), rotation=-90),
            "ok",
            extra={"same_as": up},
        )
    )
    c.append(
        Case(
            "video rotated 180 (display matrix)",
            write_raw_mp4(root / "upside_down.mp4", np.rot90(portrait_frames(), 2, axes=(1, 2)), rotation=180),
            "ok",
            extra={"same_as": up},
        )
    )
    noisy = rng.integers(
        0, 255, (60, 48, 64, 3), dtype=np.uint8
    )  # noise: every frame costs bytes, cuts land mid-stream
    full = write_raw_mp4(root / "faststart_full.mp4", noisy, faststart=True).read_bytes()
    for share in (0.3, 0.6):
        p = root / f"truncated_{int(share * 100)}pct.mp4"
        p.write_bytes(full[: int(len(full) * share)])
        c.append(
            Case(f"mp4 truncated at {share:.0%}", p, "error", r"damaged or truncated: \d+ of its 60 frames decode")
        )
    p = root / "truncated_98pct.mp4"
    p.write_bytes(full[: int(len(full) * 0.98)])
    c.append(Case("mp4 truncated at 98%", p, "warn", r"damaged or truncated: \d+ of its 60 frames decode"))
    plain = write_video(root / "plain.mp4", moving_square(12, 48, 64, 4, 2, colour=(10, 200, 10)), fps=12).read_bytes()
    p = root / "truncated_index_lost.mp4"
    p.write_bytes(plain[: len(plain) // 2])  # the index (moov) is at the end: nothing can be found
    c.append(Case("mp4 truncated before its index", p, "error", r"not a video file FFmpeg can read|no frames|damaged"))
    d = bytearray(full)
    mid = len(d) // 2
    d[mid : mid + 2048] = rng.integers(0, 255, 2048, dtype=np.uint8).tobytes()
    (root / "damaged_2kb_mid.mp4").write_bytes(bytes(d))
    c.append(Case("2 KB of damage mid-file", root / "damaged_2kb_mid.mp4", "either", r"damaged or truncated"))
    d = bytearray(full)
    d[len(d) // 4 : len(d) * 3 // 4] = bytes(len(d) // 2)
    (root / "damaged_half_zeroed.mp4").write_bytes(bytes(d))
    c.append(Case("half the file zeroed", root / "damaged_half_zeroed.mp4", "error", r"damaged or truncated|cannot"))
    (root / "empty.mp4").write_bytes(b"")
    c.append(Case("zero-byte file", root / "empty.mp4", "error", r"empty file \(0 bytes\)"))
    import PIL.Image

    PIL.Image.fromarray(moving_square(1, 48, 64, 4, 2)[0]).save(root / "image.png")
    (root / "image_renamed.mp4").write_bytes((root / "image.png").read_bytes())
    c.append(Case("PNG renamed .mp4", root / "image_renamed.mp4", "error", r"still image \(png\), not a video"))
    PIL.Image.fromarray(moving_square(1, 48, 64, 4, 2)[0]).save(root / "photo.jpg")
    (root / "photo_renamed.mp4").write_bytes((root / "photo.jpg").read_bytes())
    c.append(Case("JPEG renamed .mp4", root / "photo_renamed.mp4", "error", r"still image|not a video"))
    (root / "notes.mp4").write_text("this is a text file\n" * 20)
    c.append(Case("text renamed .mp4", root / "notes.mp4", "error", r"not a video file FFmpeg can read"))
    (root / "a_directory.mp4").mkdir(exist_ok=True)
    c.append(Case("directory", root / "a_directory.mp4", "error", r"is a directory"))
    fifo = root / "pipe.mp4"
    if not fifo.exists():
        os.mkfifo(fifo)
    c.append(Case("FIFO", fifo, "error", r"named pipe \(FIFO\)"))
    loop = root / "loop.mp4"
    if not loop.is_symlink():
        os.symlink(loop.name, loop)
    c.append(Case("symlink loop", loop, "error", r"symbolic link loop"))
    dangling = root / "dangling.mp4"
    if not dangling.is_symlink():
        os.symlink("nowhere.mp4", dangling)
    c.append(Case("dangling symlink", dangling, "error", r"broken symbolic link"))
    c.append(Case("missing file", root / "missing.mp4", "error", r"file does not exist"))
    if not IS_ROOT:
        locked = write_video(root / "locked.mp4", moving_square(4, 16, 16, 1, 1), fps=12)
        locked.chmod(0)
        c.append(Case("permission denied", locked, "error", r"permission denied"))
    c.append(Case("1-frame video", write_video(root / "one_frame.mp4", moving_square(1, 48, 64, 4, 2), fps=12), "ok"))
    c.append(
        Case("2x2 pixel video", write_video(root / "tiny.mp4", np.full((6, 2, 2, 3), 128, np.uint8), fps=12), "ok")
    )
    c.append(
        Case(
            "huge aspect ratio (1024 x 8)",
            write_video(root / "sliver.mp4", np.full((6, 8, 1024, 3), 90, np.uint8), fps=12),
            "ok",
        )
    )
    c.append(
        Case(
            "huge aspect ratio (8 x 1024)",
            write_video(root / "tower.mp4", np.full((6, 1024, 8, 3), 90, np.uint8), fps=12),
            "ok",
        )
    )
    c.append(
        Case(
            "audio-only mp4",
            write_audio_only(root / "audio_only.mp4"),
            "error",
            r"no video stream \(the file has audio",
        )
    )
    # Decoded at the first frame's size, every later frame resampled to it (with a warning naming both sizes).
    c.append(
        Case(
            "frame size changes mid-stream (two MPEG-TS joined)",
            write_size_changing_ts(root / "joined.ts"),
            "warn",
            r"frame size changes mid-stream \(64x48, then 160x96\); every frame resampled",
        )
    )
    c.append(
        Case(
            "raw H.264 stream (.h264, no timestamps)",
            write_container(root / "raw.h264", moving_square(12, 48, 64, 4, 2), "h264", "libx264"),
            "ok",
        )
    )
    return c


def write_container(
    path: Path,
    frames: np.ndarray,
    fmt: str,
    codec: str,
    fps: int = 12,
    pix_fmt: str = "yuv420p",
    movflags: str | None = None,
    gop: int | None = None,
) -> Path:
    """``frames`` (T, H, W, 3) in any container / codec pair FFmpeg muxes (mpegts, 3gp, flv, asf, ogg, raw h264...),
    in any pixel format the codec takes (10-bit, 4:4:4, gray...); ``movflags``: an mp4's (fragmented: frag_keyframe+
    empty_moov), ``gop``: frames between keyframes (a fragment each, when fragmented on keyframes)."""
    from phyprobe.io.codecs import Encoding, encode

    options = {"threads": "1", **({"g": str(gop)} if gop else {})} if codec.startswith("lib") else {}
    encode(
        frames,
        fps,
        Encoding(codec, codec, fmt, path.suffix, pix_fmt, options),
        path,
        {"movflags": movflags} if movflags else None,
    )
    return path


def write_size_changing_ts(path: Path, codec: str = "mpeg2video") -> Path:
    """An MPEG-TS whose frame size changes mid-stream, as joining two recordings byte-wise (``cat a.ts b.ts``) or
    an adaptive-bitrate capture gives: 12 frames at 64 x 48 (orange square), then 12 at 160 x 96 (green square)."""
    a = write_container(path.with_name(path.name + ".a.ts"), moving_square(12, 48, 64, 4, 2), "mpegts", codec)
    b = write_container(
        path.with_name(path.name + ".b.ts"), moving_square(12, 96, 160, 8, 4, colour=(10, 200, 10)), "mpegts", codec
    )
    path.write_bytes(a.read_bytes() + b.read_bytes())
    a.unlink()
    b.unlink()
    return path


def write_audio_only(path: Path) -> Path:
    with av.open(str(path), "w", format="mp4") as out:
        s = out.add_stream("aac", rate=16000)
        s.layout = "mono"
        for i in range(8):
            f = av.AudioFrame.from_ndarray(np.zeros((1, 1024), np.float32), format="fltp", layout="mono")
            f.sample_rate, f.pts = 16000, i * 1024
            for p in s.encode(f):
                out.mux(p)
        for p in s.encode():
            out.mux(p)
    return path


def video_row(vid: str, path: str, **kw) -> dict:
    return {
        "id": vid,
        "path": path,
        "source": "corpus",
        "is_real": False,
        "magnitude": None,
        "anchor": None,
        "split": "train",
        "metadata": {},
        **kw,
    }


def video_manifest(root: Path, cases: list[Case]) -> Path:
    """One manifest over every video case: a bad file must not stop the others."""
    root.mkdir(parents=True, exist_ok=True)
    write_jsonl(root / "videos.jsonl", [video_row(f"v{i:02d}", str(c.path)) for i, c in enumerate(cases)])
    write_jsonl(root / "pairs.jsonl", [])
    return root


def manifest_cases(root: Path, video: Path) -> list[Case]:
    """Broken manifests over one good ``video``; the reason must name the table and the line."""
    ok = video_row("a", str(video))
    ok2 = video_row("b", str(video))
    pair = {
        "a": "a",
        "b": "b",
        "label": 1.0,
        "weight": 1.0,
        "source": "corpus",
        "correspondence": "none",
        "kind": "",
        "split": "train",
    }
    raw = lambda rows: "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows)  # noqa: E731
    specs = {
        "no videos.jsonl": (None, None, r"videos\.jsonl: manifest table not found"),
        "empty videos.jsonl": ("", None, r"videos\.jsonl: no videos"),
        "invalid JSON line": (raw([ok, '{"id": "b", "path": ']), None, r"videos\.jsonl:2: not valid JSON"),
        "line is a list": (raw([ok, "[1, 2]"]), None, r"videos\.jsonl:2: expected a JSON object"),
        "missing field": (
            raw([ok, {k: v for k, v in ok2.items() if k != "path"}]),
            None,
            r"videos\.jsonl:2: .*missing.*path",
        ),
        "unknown field": (raw([ok, {**ok2, "colour": "red"}]), None, r"videos\.jsonl:2: .*unknown field"),
        "id is a number": (raw([ok, {**ok2, "id": 7}]), None, r"videos\.jsonl:2: 'id' must be a non-empty string"),
        "duplicate id": (raw([ok, ok]), None, r"videos\.jsonl:2: duplicate video id 'a'"),
        "is_real is a string": (
            raw([ok, {**ok2, "is_real": "yes"}]),
            None,
            r"videos\.jsonl:2: 'is_real' must be true/false",
        ),
        "magnitude NaN": (
            raw([ok, '{"id": "b", "path": "%s", "source": "c", "is_real": false, "magnitude": NaN}' % video]),
            None,
            r"videos\.jsonl:2: 'magnitude' must be",
        ),
        "magnitude 1.5": (raw([ok, {**ok2, "magnitude": 1.5}]), None, r"videos\.jsonl:2: 'magnitude' must be"),
        "anchor true": (
            raw([ok, {**ok2, "anchor": True}]),
            None,
            r"videos\.jsonl:2: 'anchor' must be null, 0 or 1, got true",
        ),
        "anchor 2": (raw([ok, {**ok2, "anchor": 2}]), None, r"videos\.jsonl:2: 'anchor' must be"),
        "metadata is a list": (
            raw([ok, {**ok2, "metadata": [1]}]),
            None,
            r"videos\.jsonl:2: 'metadata' must be an object",
        ),
        "bad UTF-8": (
            raw([ok]).encode() + b'{"id": "caf\xe9", "path": "x"}\n',
            None,
            r"videos\.jsonl:2: not valid UTF-8",
        ),
        "manifest path is a file": ("FILE", None, r"is a file; a manifest is the directory"),
        "dangling pair id": (
            raw([ok, ok2]),
            raw([{**pair, "b": "zz"}]),
            r"pairs\.jsonl:1: pair field 'b' = 'zz' is not a video id",
        ),
        "list-valued pair id": (
            raw([ok, ok2]),
            raw([{**pair, "a": ["a"]}]),
            r"pairs\.jsonl:1: pair field 'a' must be a video id",
        ),
        "pair with itself": (
            raw([ok, ok2]),
            raw([{**pair, "b": "a"}]),
            r"pairs\.jsonl:1: pair compares video 'a' with itself",
        ),
        "label 2": (raw([ok, ok2]), raw([{**pair, "label": 2}]), r"pairs\.jsonl:1: 'label' must be"),
        "label true": (raw([ok, ok2]), raw([{**pair, "label": True}]), r"pairs\.jsonl:1: 'label' must be"),
        "weight 0": (raw([ok, ok2]), raw([{**pair, "weight": 0}]), r"pairs\.jsonl:1: 'weight' must be"),
        "weight 1e308": (raw([ok, ok2]), raw([{**pair, "weight": 1e308}]), r"pairs\.jsonl:1: 'weight' must be"),
        "weight 1e-300": (raw([ok, ok2]), raw([{**pair, "weight": 1e-300}]), r"pairs\.jsonl:1: 'weight' must be"),
        "weight Infinity": (
            raw([ok, ok2]),
            raw([json.dumps(pair).replace('"weight": 1.0', '"weight": Infinity')]),
            r"pairs\.jsonl:1: 'weight' must be",
        ),
        "label NaN": (
            raw([ok, ok2]),
            raw([json.dumps(pair).replace('"label": 1.0', '"label": NaN')]),
            r"pairs\.jsonl:1: 'label' must be",
        ),
        "label -0.1": (raw([ok, ok2]), raw([{**pair, "label": -0.1}]), r"pairs\.jsonl:1: 'label' must be"),
        "magnitude -Infinity": (
            raw([ok, json.dumps({**ok2, "magnitude": 0.5}).replace('"magnitude": 0.5', '"magnitude": -Infinity')]),
            None,
            r"videos\.jsonl:2: 'magnitude' must be",
        ),
        "100000 nested lists on a line": (
            raw([ok, "[" * 100_000]),
            None,
            r"videos\.jsonl:2: not valid JSON here \(nested too deeply\)",
        ),
        "deeply nested pair line": (
            raw([ok, ok2]),
            raw(['{"a": ' + "[" * 100_000 + "]" * 100_000 + "}"]),
            r"pairs\.jsonl:1: not valid JSON here \(nested too deeply\)",
        ),
        "5000-digit magnitude": (
            raw([ok, json.dumps({**ok2, "magnitude": 0.5}).replace("0.5", "9" * 5000)]),
            None,
            r"videos\.jsonl:2: not valid JSON here \(an integer of more than \d+ digits\)",
        ),
        "5000-digit pair weight": (
            raw([ok, ok2]),
            raw([json.dumps(pair).replace('"weight": 1.0', '"weight": ' + "9" * 5000)]),
            r"pairs\.jsonl:1: not valid JSON here \(an integer of more than \d+ digits\)",
        ),
        "unknown correspondence": (
            raw([ok, ok2]),
            raw([{**pair, "correspondence": "same"}]),
            r"pairs\.jsonl:1: 'correspondence'",
        ),
    }
    out = []
    for i, (name, (videos, pairs, reason)) in enumerate(specs.items()):
        d = root / f"m{i:02d}"
        d.mkdir(parents=True, exist_ok=True)
        if videos == "FILE":
            (d / "videos.jsonl").write_text(raw([ok]))
            out.append(Case(name, d / "videos.jsonl", "error", reason))
            continue
        if videos is not None:
            (d / "videos.jsonl").write_bytes(videos if isinstance(videos, bytes) else videos.encode())
        if pairs is not None:
            (d / "pairs.jsonl").write_text(pairs)
        out.append(Case(name, d, "error", reason))
    return out


def csv_cases(root: Path, ids: list[str]) -> list[Case]:
    """Bad external score CSVs for a manifest with video ``ids``."""
    root.mkdir(parents=True, exist_ok=True)
    rows = "".join(f"{v},{0.1 * i}\n" for i, v in enumerate(ids))
    specs = {
        "good CSV": (f"video,score\n{rows}", "ok", ""),
        "CSV with a UTF-8 BOM (Excel)": (b"\xef\xbb\xbf" + f"video,score\n{rows}".encode(), "ok", ""),
        "empty file": ("", "error", r":1: expected columns 'video' and 'score'"),
        "header only": ("video,score\n", "error", r"no score rows \(only a header\)"),
        "wrong columns": (f"name,value\n{rows}", "error", r":1: expected columns 'video' and 'score'"),
        "score not a number": (f"video,score\n{ids[0]},high\n", "error", r":2: score 'high' .* is not a number"),
        "score NaN": (f"video,score\n{ids[0]},nan\n", "error", r":2: score .* not a finite number"),
        "score inf": (f"video,score\n{ids[0]},inf\n", "error", r":2: score .* not a finite number"),
        "unknown video": ("video,score\nnot_a_video,0.5\n", "error", r":2: video 'not_a_video' is not in the manifest"),
        "duplicate video": (
            f"video,score\n{ids[0]},0.5\n{ids[0]},0.6\n",
            "error",
            r":3: video .* already scored on line 2",
        ),
        "row missing its score": (f"video,score\n{ids[0]}\n", "error", r":2: score None .* is not a number"),
        "Latin-1 bytes": (
            f"video,score\n{ids[0]},0.5\n".encode() + "caf\xe9,0.1\n".encode("latin-1"),
            "error",
            r":3: not valid UTF-8",
        ),
        "NUL byte": (f"video,score\n{ids[0]},0.5\x00\n", "error", r"not a readable CSV|not a number"),
    }
    out = []
    for i, (name, (text, expect, reason)) in enumerate(specs.items()):
        p = root / f"scores_{i:02d}.csv"
        p.write_bytes(text if isinstance(text, bytes) else text.encode())
        out.append(Case(name, p, expect, reason))
    out.append(Case("CSV path is a directory", root, "error", r"is a directory, not a CSV file"))
    out.append(Case("CSV missing", root / "missing.csv", "error", r"cannot read \(No such file"))
    # VideoScore2's own output (scores_format=videoscore2): a JSON list of records, or JSON lines
    rec = lambda score, vid=ids[0]: '{"video_name": "%s", "p_score_model": %s}' % (vid, score)  # noqa: E731
    deep = "[" * 100_000 + "]" * 100_000
    specs = {
        "VideoScore2 JSON": ("[" + ", ".join(rec(i + 1, v) for i, v in enumerate(ids)) + "]", "ok", ""),
        "VideoScore2 JSON nested 100000 deep": ("[" * 100_000, "error", r"not valid JSON here \(nested too deeply\)"),
        "VideoScore2 JSON record nesting deeply": (f"[{rec(deep)}]", "error", r"nested too deeply"),
        "VideoScore2 JSON lines, one nesting deeply": (f"{rec(3)}\n{rec(deep)}\n", "error", r"nested too deeply"),
        "VideoScore2 JSON with a 5000-digit score": (
            f"[{rec('9' * 5000)}]",
            "error",
            r"not valid JSON here \(an integer of more than \d+ digits\)",
        ),
        "VideoScore2 JSON with a NaN score": (f"[{rec('NaN')}]", "error", r"record 1: score .* not a finite number"),
        "VideoScore2 JSON a number": ("5", "error", r"expected a JSON list of records"),
    }
    for i, (name, (text, expect, reason)) in enumerate(specs.items()):
        p = root / f"videoscore2_{i:02d}.json"
        p.write_text(text)
        out.append(Case(name, p, expect, reason, extra={"format": "videoscore2"}))
    return out


def out_cases(root: Path, video: Path) -> list[Case]:
    """``phyprobe score ... --out PATH`` targets: ``error`` cases must be refused in one line naming the file and what
    it is, the file left byte-identical (and never read to its end: /dev/zero, a FIFO); ``ok`` cases are results
    files of ours (or new / empty), written to and resumed. ``extra["format"]``: a --format to pass."""
    root.mkdir(parents=True, exist_ok=True)
    c: list[Case] = []

    def file(name: str, data: bytes) -> Path:
        (root / name).write_bytes(data)
        return root / name

    c.append(Case("--out an existing video", file("my_video.mp4", video.read_bytes()), "error", r"an MP4/MOV video"))
    c.append(Case("--out a video named .jsonl", file("clip.jsonl", video.read_bytes()), "error", r"an MP4/MOV video"))
    c.append(Case("--out another tool's CSV", file("scores.csv", b"id,prob\n1,0.5\n2,0.7"), "error", r"CSV.*'id,prob'"))
    c.append(Case("--out a text file", file("notes.txt", b"todo\nlast line"), "error", r"a text file"))
    c.append(
        Case(
            "--out a manifest's videos.jsonl",
            file("videos.jsonl", b'{"id": "a", "path": "a.mp4"}\n{"id": "b", "path": "b.mp4"}'),
            "error",
            r"JSON lines of other records \(fields id, path\)",
        )
    )
    c.append(
        Case(
            "--out another tool's JSONL of scores",
            file("other.jsonl", b'{"video": "a.mp4", "score": 0.5}\n'),
            "error",
            r"JSON lines of other records \(fields video, score\)",
        )
    )
    c.append(Case("--out binary data", file("blob.jsonl", bytes(range(256)) * 4), "error", r"binary data"))
    own = b'{"video": "a.mp4", "score": 0.5, "raw_score": 0.5}\n'
    c.append(
        Case(
            "--out our JSONL results with --format csv",
            file("ours_as_csv.jsonl", own),
            "error",
            r"JSONL results file, not CSV",
            extra={"format": "csv"},
        )
    )
    (root / "a_directory.jsonl").mkdir(exist_ok=True)
    c.append(Case("--out a directory", root / "a_directory.jsonl", "error", r"a directory"))
    fifo = root / "pipe.jsonl"
    if not fifo.exists():
        os.mkfifo(fifo)
    c.append(Case("--out a FIFO", fifo, "error", r"a pipe \(FIFO\)"))
    for dev in ("/dev/null", "/dev/zero"):
        if os.path.exists(dev):
            c.append(Case(f"--out {dev}", Path(dev), "error", r"a character device"))
    link = root / "link_to_video.jsonl"
    if not link.is_symlink():
        os.symlink("my_video.mp4", link)
    c.append(Case("--out a symlink to a video", link, "error", r"a symbolic link to an MP4/MOV video"))
    dangling = root / "dangling.jsonl"
    if not dangling.is_symlink():
        os.symlink("nowhere.jsonl", dangling)
    c.append(Case("--out a dangling symlink", dangling, "error", r"a broken symbolic link"))
    c.append(Case("--out a new file", root / "new" / "scores.jsonl", "ok"))
    c.append(Case("--out an empty file (a kill right after creation)", file("empty.csv", b""), "ok"))
    c.append(Case("--out our results with a torn last row", file("torn.jsonl", own + b'{"video": "b.mp'), "ok"))
    return c


class _OpensAFile:
    """Unpickled, it creates ``path``: the proof that a pickle ran."""

    def __init__(self, path: str):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def scorer_cases(root: Path, scorer: Path) -> list[Case]:
    """Tampered copies of a real exported ``scorer`` directory (phyprobe.testing.scorers.make_scorer): each must be
    refused on load in one line naming the file (``extra["file"]``: config.json or model.safetensors) and matching
    ``reason`` (the field). ``extra["marker"]``: a file that exists only if a pickle ran."""
    import pickle
    import shutil

    root.mkdir(parents=True, exist_ok=True)
    outside = root / "outside"
    shutil.copytree(scorer, outside, dirs_exist_ok=True)  # a directory beside the scorer, for paths leading out
    out: list[Case] = []

    def case(name: str, reason: str, fn, file: str = "config.json", **extra) -> None:
        d = root / f"s{len(out):02d}"
        shutil.rmtree(d, ignore_errors=True)
        shutil.copytree(scorer, d)
        fn(d)
        out.append(Case(name, d, "error", reason, extra={"file": file, **extra}))

    def config(edit):
        def fn(d: Path) -> None:
            cfg = json.loads((d / "config.json").read_text())
            edit(cfg)
            (d / "config.json").write_text(json.dumps(cfg))

        return fn

    def text(t: str):
        return lambda d: (d / "config.json").write_text(t)

    def weights(data: bytes):
        return lambda d: (d / "model.safetensors").write_bytes(data)

    def bundle(path: str, link: bool = False):
        def fn(d: Path) -> None:
            if link:  # a bundled directory that is a symbolic link to one outside
                (d / "encoder").mkdir(exist_ok=True)
                os.symlink(outside, d / "encoder" / "checkpoint")
            cfg = json.loads((d / "config.json").read_text())
            cfg["encoder"]["kwargs"]["checkpoint"] = path
            cfg["encoder"]["bundled"] = ["checkpoint"]
            (d / "config.json").write_text(json.dumps(cfg))

        return fn

    def link_weights(d: Path) -> None:
        (d / "model.safetensors").unlink()
        os.symlink(outside / "model.safetensors", d / "model.safetensors")

    case("config.json is not JSON", r"not valid JSON", text("{not json"))
    case("config.json is a JSON list", r"unsupported scorer format 'list'", text("[1, 2]"))
    case("config.json nests 100000 lists", r"not valid JSON here \(nested too deeply\)", text("[" * 100_000))
    deep = '{"format": "phyprobe-scorer/1", "encoder": ' + "[" * 100_000 + "]" * 100_000 + "}"
    case("config.json nests deeply inside its object", r"nested too deeply", text(deep))
    case("clip.num_frames -4", r"'clip\.num_frames' must be", config(lambda c: c["clip"].update(num_frames=-4)))
    case("clip.num_frames 1e12", r"'clip\.num_frames' must be", config(lambda c: c["clip"].update(num_frames=10**12)))
    case(
        "image_size -32",
        r"'encoder\.kwargs\.image_size' must be",
        config(lambda c: c["encoder"]["kwargs"].update(image_size=-32)),
    )
    case(
        "image_size 1e9",
        r"'encoder\.kwargs\.image_size' must be",
        config(lambda c: c["encoder"]["kwargs"].update(image_size=10**9)),
    )
    case("head.hidden -16", r"'head\.hidden' must be", config(lambda c: c["head"].update(hidden=-16)))
    case("head.hidden 1e7", r"'head\.hidden' must be", config(lambda c: c["head"].update(hidden=10**7)))
    case(
        "head.hidden 60000 (a 3.8e9-parameter head)",
        r"'head\.hidden' describes a head of",
        config(lambda c: c["head"].update(hidden=60_000)),
    )
    case("head.feature_dim -1", r"'head\.feature_dim' must be", config(lambda c: c["head"].update(feature_dim=-1)))
    case("head.feature_dim 1e8", r"'head\.feature_dim' must be", config(lambda c: c["head"].update(feature_dim=10**8)))
    case(
        "head.feature_dim not the encoder's",
        r"'head\.feature_dim' is 1000, but encoder",
        config(lambda c: c["head"].update(feature_dim=1000)),
    )
    case("head.stats a string", r"'head\.stats' must be", config(lambda c: c["head"].update(stats="mean")))
    case("head.hidden a string", r"'head\.hidden' must be", config(lambda c: c["head"].update(hidden="16")))
    case("head.dropout a string", r"'head\.dropout' must be", config(lambda c: c["head"].update(dropout="x")))
    case("clip a list", r"'clip' must be a JSON object", config(lambda c: c.update(clip=[4])))
    case("feature_dtype a number", r"'feature_dtype' must be one of", config(lambda c: c.update(feature_dtype=3)))
    case("feature_dtype int8", r"'feature_dtype' must be one of", config(lambda c: c.update(feature_dtype="int8")))
    case(
        "encoder.kwargs a list",
        r"'encoder\.kwargs' must be a JSON object",
        config(lambda c: c["encoder"].update(kwargs=[1])),
    )
    case("encoder.name a number", r"'encoder\.name' must be", config(lambda c: c["encoder"].update(name=5)))
    case("reading with an unknown field", r"'reading' has unknown field", config(lambda c: c.update(reading={"zz": 1})))
    full = (scorer / "model.safetensors").read_bytes()
    case(
        "model.safetensors truncated",
        r"not a readable safetensors file",
        weights(full[: len(full) // 2]),
        "model.safetensors",
    )
    marker = root / "PICKLE_RAN"
    case(
        "a pickle renamed model.safetensors",
        r"not a readable safetensors file",
        weights(pickle.dumps(_OpensAFile(str(marker)))),
        "model.safetensors",
        marker=marker,
    )
    case(
        "model.safetensors a symlink out of the directory",
        r"leads outside the scorer directory",
        link_weights,
        "model.safetensors",
    )
    case(
        "bundled checkpoint '../outside'", r"'encoder\.kwargs\.checkpoint' must be a path inside", bundle("../outside")
    )
    case("bundled checkpoint absolute", r"'encoder\.kwargs\.checkpoint' must be a path inside", bundle(str(outside)))
    case(
        "bundled checkpoint a symlink out of the directory",
        r"'encoder\.kwargs\.checkpoint' leads outside the scorer directory",
        bundle("encoder/checkpoint", link=True),
    )

    def link_in_bundle(d: Path) -> None:
        (d / "encoder" / "checkpoint").mkdir(parents=True)
        os.symlink(outside / "model.safetensors", d / "encoder" / "checkpoint" / "model.safetensors")
        bundle("encoder/checkpoint")(d)

    case(
        "a file of the bundled checkpoint a symlink out of the directory",
        r"'encoder\.kwargs\.checkpoint \(model\.safetensors\)' leads outside the scorer directory",
        link_in_bundle,
    )
    case(
        "checkpoint outside and not bundled",
        r"'encoder\.kwargs\.checkpoint' must be bundled",
        config(lambda c: c["encoder"]["kwargs"].update(checkpoint=str(outside))),
    )
    if os.path.exists("/dev/zero"):
        case(
            "encoder weights /dev/zero",
            r"'encoder\.kwargs\.weights' names neither a file nor a directory",
            config(lambda c: c["encoder"]["kwargs"].update(weights="/dev/zero")),
        )
    return out


# --- containers and pixel formats ---------------------------------------------------------------------------------


def with_mehd(data: bytes, seconds: float) -> bytes:
    """A fragmented mp4 (fragment offsets relative to their moof) with an ``mvex/mehd`` box declaring ``seconds``, as
    muxers other than FFmpeg's write: the evidence a cut between fragments leaves."""
    import struct

    b = bytearray(data)
    moov, mvex, mvhd = (b.index(k) - 4 for k in (b"moov", b"mvex", b"mvhd"))
    scale = struct.unpack(">I", b[mvhd + 20 : mvhd + 24])[0]
    b[mvex + 8 : mvex + 8] = struct.pack(">I4sII", 16, b"mehd", 0, round(seconds * scale))
    for box in (moov, mvex):
        b[box : box + 4] = struct.pack(">I", struct.unpack(">I", b[box : box + 4])[0] + 16)
    return bytes(b)


def cut_at_fragment(data: bytes) -> bytes:
    """A fragmented mp4 up to the first fragment (moof) starting past its middle: a cut between fragments."""
    return data[: data.index(b"moof", len(data) // 2) - 4]


def write_animated_webp(path: Path, frames: np.ndarray, fps: int = 12) -> Path:
    import PIL.Image

    images = [PIL.Image.fromarray(np.ascontiguousarray(f)) for f in frames]
    images[0].save(path, save_all=True, append_images=images[1:], duration=1000 // fps, loop=0)
    return path


# (file name, container, codec, pixel format) of clips FFmpeg decodes that a folder of videos holds
CONTAINERS = [
    ("clip.ts", "mpegts", "libx264", "yuv420p"),
    ("clip.3gp", "3gp", "libx264", "yuv420p"),
    ("clip.flv", "flv", "flv", "yuv420p"),
    ("clip.mkv", "matroska", "libx264", "yuv420p"),
    ("clip.h264", "h264", "libx264", "yuv420p"),
]
PIXEL_FORMATS = [
    ("h264_10bit.mp4", "mp4", "libx264", "yuv420p10le"),
    ("h264_yuv444.mp4", "mp4", "libx264", "yuv444p"),
    ("ffv1_gray.mkv", "matroska", "ffv1", "gray"),
    ("ffv1_gray10.mkv", "matroska", "ffv1", "gray10le"),
    ("prores_422_10bit.mov", "mov", "prores_ks", "yuv422p10le"),
]


def format_cases(root: Path) -> list[Case]:
    """Containers and pixel formats beyond 8-bit 4:2:0 H.264 in mp4 (used as they are), an animated WebP (which
    FFmpeg cannot decode: refused saying so), and streams cut where their container keeps no index: a cut that
    leaves evidence (an MPEG-TS ending part-way through a transport packet, a fragmented mp4 whose header declares
    its duration) is used with a warning naming the file; a cut that leaves none (a TS cut at a packet boundary, an
    FFmpeg fragmented mp4, which declares no duration) reads as the shorter video it is."""
    root.mkdir(parents=True, exist_ok=True)
    square = moving_square(12, 48, 64, 4, 2)
    c = [
        Case(f"{pix} {codec} in {fmt}", write_container(root / name, square, fmt, codec, pix_fmt=pix), "ok")
        for name, fmt, codec, pix in CONTAINERS + PIXEL_FORMATS
    ]
    c.append(
        Case(
            "animated WebP",
            write_animated_webp(root / "animated.webp", square),
            "error",
            r"animated WebP",
        )
    )
    noisy = np.random.default_rng(1).integers(0, 255, (48, 48, 64, 3), dtype=np.uint8)  # many packets
    ts = write_container(root / "whole.ts", noisy, "mpegts", "libx264").read_bytes()
    half = len(ts) // 2 // 188 * 188
    (root / "ts_cut_mid_packet.ts").write_bytes(ts[: half + 94])
    c.append(
        Case(
            "MPEG-TS cut at half its length (mid-packet)",
            root / "ts_cut_mid_packet.ts",
            "warn",
            r"part-way through a transport packet .*: a partial file\?",
        )
    )
    (root / "ts_cut_at_packet.ts").write_bytes(ts[:half])
    c.append(
        Case("MPEG-TS cut at half its length (a packet boundary: no evidence)", root / "ts_cut_at_packet.ts", "ok")
    )
    frag = write_container(root / "frag.mp4", square, "mp4", "libx264", movflags="frag_keyframe+empty_moov", gop=3)
    (root / "frag_cut.mp4").write_bytes(cut_at_fragment(frag.read_bytes()))
    c.append(
        Case("fragmented mp4 (FFmpeg's, no declared duration) cut at a fragment boundary", root / "frag_cut.mp4", "ok")
    )
    src = write_container(
        root / "frag_mehd_src.mp4",
        square,
        "mp4",
        "libx264",
        movflags="frag_keyframe+empty_moov+default_base_moof",
        gop=3,
    ).read_bytes()
    declared = with_mehd(src[: src.rindex(b"mfra") - 4], 1.0)  # 12 frames at 12 fps
    (root / "frag_mehd.mp4").write_bytes(declared)
    c.append(Case("fragmented mp4 declaring its duration (mehd)", root / "frag_mehd.mp4", "ok"))
    (root / "frag_mehd_cut.mp4").write_bytes(cut_at_fragment(declared))
    c.append(
        Case(
            "fragmented mp4 declaring its duration, cut at a fragment boundary",
            root / "frag_mehd_cut.mp4",
            "warn",
            r"video ends at [\d.]+ s of the 1\.0 s its header declares: a partial file\?",
        )
    )
    return c


def scan_folder(root: Path) -> Path:
    """A folder of clips in every container a directory scan must find (.ts .3gp .flv .mkv .h264), an animated .webp
    and a good mp4: each must be scored, or named on stderr (refused, or skipped by the scan); never dropped silently."""
    root.mkdir(parents=True, exist_ok=True)
    square = moving_square(12, 48, 64, 4, 2)
    for name, fmt, codec, pix in CONTAINERS:
        write_container(root / name, square, fmt, codec, pix_fmt=pix)
    write_animated_webp(root / "animated.webp", square)
    write_video(root / "good.mp4", square, fps=12)
    return root


# --- one bad video among good ones ----------------------------------------------------------------------------------


def batch_folder(root: Path, video: list[Case]) -> tuple[Path, list[Path], list[Case]]:
    """A folder of three good clips and the video corpus's refused files (copied, and the links and pipes made
    again inside it): (folder, good clips, bad cases with their paths in the folder). ``score FOLDER`` must score every
    good clip and answer every bad file with its error, by name."""
    import shutil

    root.mkdir(parents=True, exist_ok=True)
    good = [
        write_video(root / f"good_{i}.mp4", moving_square(12, 48, 64, 4 + 9 * i, 2, colour=(200, 40 * i, 10)), fps=12)
        for i in range(3)
    ]
    bad: list[Case] = []
    for c in video:
        if c.expect != "error" or c.name in ("permission denied", "missing file"):
            continue
        p = root / f"bad_{len(bad):02d}_{c.path.name}"
        if c.path.is_symlink():
            os.symlink(os.readlink(c.path) if c.name != "symlink loop" else p.name, p)
        elif c.name == "FIFO":
            os.mkfifo(p)
        elif c.path.is_dir():
            continue  # a directory named like a video inside a scanned folder is a folder, not an input
        else:
            shutil.copyfile(c.path, p)
        bad.append(Case(c.name, p, "error", c.reason))
    return root, good, bad


# --- training sets ------------------------------------------------------------------------------------------------


def training_cases(root: Path, toy: Path) -> list[Case]:
    """Training sets (copies of a toy manifest, ``phyprobe.testing.videos.write_toy_manifest``, with its videos by
    absolute path) that must stop ``train`` in one line naming ``extra["file"]`` (relative to the case's folder, or
    the run's output for ``scorer``) and matching ``reason``, with nothing exported; ``extra["overrides"]``: config
    overrides of the run, ``extra["before_work"]``: refused before any feature is extracted."""
    videos = [json.loads(line) for line in (toy / "videos.jsonl").read_text().splitlines()]
    videos = [{**v, "path": str(toy / v["path"])} for v in videos]
    pairs = [json.loads(line) for line in (toy / "pairs.jsonl").read_text().splitlines()]
    out: list[Case] = []

    def case(name: str, file: str, reason: str, vids=None, prs=None, before_work: bool = True, **extra) -> None:
        d = root / f"t{len(out):02d}"
        d.mkdir(parents=True, exist_ok=True)
        for table, rows in (("videos.jsonl", vids or videos), ("pairs.jsonl", prs or pairs)):
            (d / table).write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
        out.append(Case(name, d, "error", reason, extra={"file": file, "before_work": before_work, **extra}))

    def every_pair(**fields):
        return [{**p, **fields} for p in pairs]

    case(
        "every pair weighted 1e308",
        "pairs.jsonl",
        r":1: 'weight' must be a positive number",
        prs=every_pair(weight=1e308),
    )
    case("every label NaN", "pairs.jsonl", r":1: 'label' must be", prs=every_pair(label=float("nan")))
    case("every label Infinity", "pairs.jsonl", r":1: 'label' must be", prs=every_pair(label=float("inf")))
    case("every weight -Infinity", "pairs.jsonl", r":1: 'weight' must be", prs=every_pair(weight=float("-inf")))
    case(
        "a magnitude Infinity",
        "videos.jsonl",
        r":1: 'magnitude' must be",
        vids=[{**videos[0], "magnitude": float("inf")}, *videos[1:]],
    )
    case(
        "a magnitude NaN",
        "videos.jsonl",
        r":2: 'magnitude' must be",
        vids=[videos[0], {**videos[1], "magnitude": float("nan")}, *videos[2:]],
    )
    case(
        "metadata nested 100000 deep",
        "videos.jsonl",
        r":1: not valid JSON here \(nested too deeply\)",
        vids=[json.dumps({**videos[0], "metadata": None})[:-1] + ', "x": ' + "[" * 100_000 + "]" * 100_000 + "}"]
        + videos[1:],
    )
    case(
        "every label 0.5 (no informative pair)",
        "pairs.jsonl",
        r": all \d+ training pairs .*ties \(label 0\.5\)",
        prs=every_pair(label=0.5),
    )
    case(
        "every validation label 0.5",
        "pairs.jsonl",
        r"checkpoint\.monitor=val/pair_acc needs a validation pair",
        prs=[{**p, "label": 0.5} if p["split"] == "val" else p for p in pairs],
    )
    case(
        "a learning rate of 1e30 (the head diverges to NaN)",
        "head",
        r"not written, nor a scorer: the trained head scores \d+ of \d+ .*training diverged",
        before_work=False,
        overrides=["optim.lr=1e30"],
        slow=True,
    )
    return out


# --- running a case as a user would, and judging what they see ----------------------------------------------------
#
# Shared by bench/bad_inputs.py (which counts every case) and tests/test_bad_inputs.py (which runs a sample): a
# command runs in-process through the function its entry point calls (``phyprobe.cli.main``; ``train`` / ``run_eval``
# inside ``report_user_errors``, all train.py / eval.py add), or as a real process where the process is what is
# checked (a pipe, a signal, a file size limit, two writers). Its outcome is
#
# - clean: used correctly (a score in [0, 1], cached, trained), or refused with a non-zero exit and one line
#   ``phyprobe: error: <file>: <reason>`` naming the file and matching the case's reason;
# - traceback: an exception escaped (a raw traceback for the user); hang: still running past its deadline;
# - wrong answer: exit 0 where the input should have failed, a score outside [0, 1] or not JSON, a refusal of an
#   input that should have been used, a file dropped silently, a 5xx from the service;
# - unclear: refused, but the message does not name the file or the reason;
#
# and apart from it, the user files it altered: every file that existed before the run and that the run was not
# asked to write, hashed before and after.

ERROR = "phyprobe: error: "


@dataclass
class Ran:
    """What a user saw of one run: exit code, stdout, stderr, the traceback that escaped (or "hang"), warnings logged."""

    code: int | None
    out: str
    err: str
    tb: str | None = None
    warnings: list[str] = field(default_factory=list)


@dataclass
class Outcome:
    cls: str
    command: str
    case: str
    outcome: str  # clean | traceback | hang | wrong answer | unclear
    code: int | None = None
    altered: list[str] = field(default_factory=list)
    detail: str = ""

    @property
    def clean(self) -> bool:
        return self.outcome == "clean" and not self.altered


class _Hang(BaseException):
    """Raised by the deadline's alarm; a BaseException so that no ``except Exception`` in the command swallows it."""


@contextlib.contextmanager
def deadline(seconds: float):
    """Inside, a command still running after ``seconds`` (reading a FIFO, /dev/zero) raises instead of stalling
    (on the main thread; elsewhere it is not bounded)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expired(signum, frame):
        raise _Hang(f"still running after {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class _Warnings(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def run(fn, seconds: float = 120.0) -> Ran:
    """``fn()`` (returning an exit code, or raising SystemExit) with stdout, stderr and warnings captured."""
    out, err, warned = io.StringIO(), io.StringIO(), _Warnings()
    logging.getLogger().addHandler(warned)
    tb = None
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                with deadline(seconds):
                    code = fn()
            except SystemExit as e:
                code = e.code
            except _Hang as e:
                code, tb = None, f"hang: {e}"
            except Exception:  # noqa: BLE001 - what the user would see as a raw traceback
                code, tb = None, traceback.format_exc()
    finally:
        logging.getLogger().removeHandler(warned)
    return Ran(0 if code is None and tb is None else code, out.getvalue(), err.getvalue(), tb, warned.messages)


def cli(argv: list[str], seconds: float = 120.0) -> Ran:
    from phyprobe.cli import main

    return run(lambda: main([str(a) for a in argv]), seconds)


def reporting(fn, *args, seconds: float = 300.0) -> Ran:
    """``fn(*args)`` as train.py / eval.py run it: a user error is one line and exit 2."""
    from phyprobe.errors import report_user_errors

    def go():
        with report_user_errors(debug=False):
            fn(*args)
        return 0

    return run(go, seconds)


def process(argv: list[str], seconds: float = 300.0, **kw) -> Ran:
    """A real process (``python -m phyprobe.cli ...`` when ``argv`` starts with a phyprobe command)."""
    import subprocess
    import sys

    cmd = [sys.executable, "-m", "phyprobe.cli", *map(str, argv)] if argv[0] in ("score", "extract") else argv
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds, stdin=subprocess.DEVNULL, **kw)
    except subprocess.TimeoutExpired as e:
        return Ran(None, str(e.stdout or ""), str(e.stderr or ""), f"hang: still running after {seconds:g} s")
    tb = p.stderr if "Traceback (most recent call last)" in p.stderr else None
    return Ran(p.returncode, p.stdout, p.stderr, tb)


def error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith(ERROR)]


def refusal(ran: Ran, name: str | Path, reason: str) -> str:
    """A refusal judged: a non-zero exit and an error line naming ``name`` that matches ``reason``."""
    if ran.tb:
        return "hang" if ran.tb.startswith("hang") else "traceback"
    if ran.code in (0, None):
        return "wrong answer"
    named = [line for line in error_lines(ran.err) if str(name) in line]
    return "clean" if named and re.search(reason, named[0]) else "unclear"


def one_line_refusal(ran: Ran, start: str | Path, reason: str, code: int = 2) -> str:
    """As :func:`refusal`, and stricter: exit ``code``, exactly one error line, starting with ``start``."""
    outcome = refusal(ran, start, reason)
    if outcome != "clean":
        return outcome
    lines = error_lines(ran.err)
    if ran.code != code or len(lines) != 1 or not lines[0].startswith(f"{ERROR}{start}"):
        return "unclear"
    return "clean"


def fingerprint(paths) -> dict[str, object]:
    """What must not change under each path (folders walked, links not followed): a regular file's SHA-256, a
    link's target, anything else's kind. A path that does not exist maps to None."""
    import hashlib
    import stat

    found: dict[str, object] = {}

    def one(p: Path) -> None:
        try:
            st = os.lstat(p)
        except OSError:
            found[str(p)] = None
            return
        if stat.S_ISLNK(st.st_mode):
            found[str(p)] = ("link", os.readlink(p))
        elif stat.S_ISREG(st.st_mode):
            try:
                found[str(p)] = ("file", hashlib.sha256(p.read_bytes()).hexdigest())
            except OSError as e:  # unreadable (mode 0): its size and mode stand in
                found[str(p)] = ("unreadable", st.st_size, st.st_mode, e.errno)
        elif stat.S_ISDIR(st.st_mode):
            found[str(p)] = ("dir",)
            for child in sorted(p.iterdir()):
                one(child)
        else:
            found[str(p)] = ("other", stat.S_IFMT(st.st_mode))

    for p in paths:
        one(Path(p))
    return found


def altered(before: dict[str, object]) -> list[str]:
    """The paths of ``before`` (a :func:`fingerprint`) that changed or went away; new files do not count."""
    after = fingerprint(before)
    return [p for p, v in before.items() if v is not None and after.get(p) != v]


def _no_constant(c):
    raise ValueError(f"non-JSON constant {c}")


def json_rows(text: str) -> dict[str, dict] | None:
    """``--json`` output by video, or None when a line is not strict JSON (NaN, a stray print)."""
    try:
        rows = [json.loads(line, parse_constant=_no_constant) for line in text.splitlines()]
    except ValueError:
        return None
    return {str(Path(d["video"])): d for d in rows if isinstance(d, dict) and "video" in d}


def _in_unit(d: dict) -> bool:
    return "score" not in d or (isinstance(d["score"], float | int) and 0.0 <= d["score"] <= 1.0)


def warned_as(case: Case, ran: Ran) -> bool:
    """A ``warn`` case's warning: naming the file and matching the case's reason."""
    return any(str(case.path) in w and re.search(case.reason, w) for w in ran.warnings + ran.err.splitlines())


@dataclass
class Setting:
    """What the runners share: a scratch folder, a scorer, a good video and a toy manifest (made by :meth:`make`)."""

    root: Path
    scorer: Path
    good: Path
    toy: Path
    quick: bool = False

    @classmethod
    def make(cls, root: Path, quick: bool = False) -> Setting:
        from phyprobe.testing.scorers import make_scorer
        from phyprobe.testing.videos import write_toy_manifest

        root.mkdir(parents=True, exist_ok=True)
        good = write_video(root / "good.mp4", moving_square(12, 48, 64, 4, 2), fps=12)
        toy = root / "toy"
        write_toy_manifest(toy, num_scenes=6, frames=6, size=(32, 32))
        return cls(root, make_scorer(root / "scorer"), good, toy, quick)

    def scratch(self, name: str) -> Path:
        d = self.root / name
        d.mkdir(parents=True, exist_ok=True)
        return d


def _wanted(cases, names):
    return [c for c in cases if names is None or c.name in names]


# --- videos and formats: phyprobe score and phyprobe extract, a bad file beside a good one --------------------------


def score_video(s: Setting, case: Case) -> Outcome:
    before = fingerprint([case.path, s.good])
    ran = cli(["score", s.scorer, case.path, s.good, "--json", "--workers", "0"], 60)
    outcome = _score_video(case, ran, s.good)
    return Outcome("", "phyprobe score", case.name, outcome, ran.code, altered(before), (ran.tb or ran.err)[-2000:])


def _score_video(case: Case, ran: Ran, good: Path) -> str:
    if ran.tb:
        return "hang" if ran.tb.startswith("hang") else "traceback"
    rows = json_rows(ran.out)
    if rows is None or not all(map(_in_unit, rows.values())) or "score" not in rows.get(str(good), {}):
        return "wrong answer"
    mine = rows.get(str(case.path), {})
    if case.expect in ("ok", "warn") or (case.expect == "either" and "score" in mine):
        if "score" not in mine or ran.code != 0:
            return "wrong answer"
        return "clean" if case.expect != "warn" or warned_as(case, ran) else "unclear"
    return "wrong answer" if "score" in mine else refusal(ran, case.path, case.reason)


def extract_video(s: Setting, case: Case, tag: str) -> Outcome:
    from phyprobe.data.manifest import write_jsonl

    m = s.scratch(f"extract_{tag}")
    write_jsonl(m / "videos.jsonl", [video_row("bad", str(case.path)), video_row("good", str(s.good))])
    before = fingerprint([case.path, s.good])
    argv = ["extract", m, "--image-size", "32", "--num-frames", "4", "--workers", "0", "--cache", s.root / "cache"]
    ran = cli(argv, 60)
    outcome = "hang" if (ran.tb or "").startswith("hang") else "traceback" if ran.tb else None
    if outcome is None:
        done = re.search(r"videos: (\d+) of 2", ran.out)
        n = int(done.group(1)) if done else -1
        if case.expect in ("ok", "warn") or (case.expect == "either" and n == 2):
            outcome = "wrong answer" if n != 2 or ran.code != 0 else "clean"
            if outcome == "clean" and case.expect == "warn" and not warned_as(case, ran):
                outcome = "unclear"
        else:
            outcome = "wrong answer" if n != 1 else refusal(ran, case.path, case.reason)
    return Outcome("", "phyprobe extract", case.name, outcome, ran.code, altered(before), (ran.tb or ran.err)[-2000:])


def video_runs(s: Setting, cls: str, cases: list[Case]) -> list[Outcome]:
    out = []
    for i, c in enumerate(cases):
        for o in (score_video(s, c), extract_video(s, c, f"{cls}_{i:03d}")):
            o.cls = cls
            out.append(o)
    return out


def scan_runs(s: Setting) -> list[Outcome]:
    """``phyprobe score FOLDER``: every video-looking file scored or named on stderr (refused, or skipped)."""
    folder = scan_folder(s.root / "scan")
    before = fingerprint([folder])
    ran = cli(["score", s.scorer, folder, "--json", "--workers", "0"], 120)
    rows = json_rows(ran.out) or {}
    out = []
    for f in sorted(folder.iterdir()):
        named = any(f.name in line for line in [*ran.err.splitlines(), *ran.warnings])  # a warning is on stderr too
        scored = "score" in rows.get(str(f), {})
        if ran.tb:
            outcome = "traceback"
        elif scored:
            outcome = "clean" if _in_unit(rows[str(f)]) else "wrong answer"
        else:
            outcome = "clean" if named else "wrong answer"  # dropped without a word
        detail = "" if scored or named else f"{f.name}: neither scored nor named on stderr; stderr: {ran.err[-500:]}"
        out.append(Outcome("format", "phyprobe score DIR", f"directory scan: {f.name}", outcome, ran.code, [], detail))
    out[0].altered = altered(before)
    return out


# --- one bad video never stops a batch ------------------------------------------------------------------------------


def batch_runs(s: Setting, video: list[Case]) -> list[Outcome]:
    """``score FOLDER`` to stdout and to ``--out``, and ``extract`` over a manifest of the same files: every good clip
    scored (cached) once, every bad file one error row and one error line naming it, exit 1."""
    from phyprobe.data.manifest import write_jsonl

    folder, good, bad = batch_folder(s.root / "batch", video)
    files = sorted([*good, *(c.path for c in bad)])
    before = fingerprint([folder])
    out = []

    def judge(command: str, ran: Ran, rows: dict[str, dict] | None, lines: list[str]) -> None:
        if ran.tb:
            outcome, detail = ("hang" if ran.tb.startswith("hang") else "traceback"), ran.tb[-2000:]
        elif rows is None:
            outcome, detail = "wrong answer", "output not JSON lines"
        else:
            missing = [str(g) for g in good if "score" not in rows.get(str(g), {}) or not _in_unit(rows[str(g)])]
            unanswered = [
                c.name
                for c in bad
                if "score" in rows.get(str(c.path), {})
                or not any(line.startswith(f"{ERROR}{c.path}: ") and re.search(c.reason, line) for line in lines)
            ]
            outcome = "clean" if ran.code == 1 and not missing and not unanswered else "wrong answer"
            if ran.code == 1 and not missing and unanswered:
                outcome = "unclear"
            detail = f"exit {ran.code}; good not scored: {missing}; bad not answered by name: {unanswered}"
        out.append(
            Outcome("batch", command, f"{len(bad)} bad files among {len(good)} good", outcome, ran.code, [], detail)
        )

    ran = cli(["score", s.scorer, folder, "--json", "--workers", "0", "--batch-size", "4"], 180)
    judge("phyprobe score DIR", ran, json_rows(ran.out), error_lines(ran.err))
    results = s.root / "batch_scores.jsonl"
    ran = cli(
        ["score", s.scorer, folder, "--out", results, "--workers", "0", "--batch-size", "4", "--no-progress"], 180
    )
    rows = json_rows(results.read_text()) if results.is_file() else None
    if rows is not None and len(results.read_text().splitlines()) != len(rows):
        rows = None  # a video answered twice
    judge("phyprobe score DIR --out", ran, rows, error_lines(ran.err))
    m = s.scratch("batch_manifest")
    write_jsonl(m / "videos.jsonl", [video_row(f"v{i:02d}", str(p)) for i, p in enumerate(files)])
    write_jsonl(m / "pairs.jsonl", [])
    argv = ["extract", m, "--image-size", "32", "--num-frames", "4", "--workers", "0", "--cache", s.root / "bcache"]
    ran = cli([*argv, "--batch-size", "4"], 180)
    done = re.search(r"videos: (\d+) of (\d+)", ran.out)
    cached = done is not None and (int(done.group(1)), int(done.group(2))) == (len(good), len(files))
    # extract has no rows: a good clip cached is in the count, a bad one is its error line
    rows = {str(g): {"score": 0.5} for g in good} if cached else {}
    judge("phyprobe extract", ran, rows, error_lines(ran.err))
    out[0].altered = altered(before)
    return out


# --- --out hazards ---------------------------------------------------------------------------------------------------


def out_runs(s: Setting, names=None) -> list[Outcome]:
    """Every ``--out`` target of :func:`out_cases` in-process; then, as real processes where the process is what
    is checked: ``--out /dev/stdout`` on a pipe, two runs on one file, the file size limit (EFBIG) and a closed
    stdout pipe (left out by ``quick`` unless named); and a full disk (ENOSPC) in-process, from the results file's
    own writes."""
    from phyprobe.scorer.results import ResultFile

    out = []
    for c in _wanted(out_cases(s.root / "outs", s.good), names):
        before = fingerprint([s.good] + ([] if c.expect == "ok" else [c.path]))
        fmt = ["--format", c.extra["format"]] if "format" in c.extra else []
        ran = cli(["score", s.scorer, s.good, "--out", c.path, "--no-progress", "--workers", "0", *fmt], 30)
        if c.expect == "ok":
            ok = not ran.tb and ran.code == 0 and str(s.good) in ResultFile(c.path).finished()
            outcome = "clean" if ok else ("traceback" if ran.tb else "wrong answer")
        else:
            outcome = one_line_refusal(ran, c.path, c.reason)
        out.append(Outcome("out", "phyprobe score --out", c.name, outcome, ran.code, altered(before), ran.err[-1000:]))
    for name, fn, in_process in (
        ("--out /dev/stdout, stdout a pipe", _out_dev_stdout, False),
        ("two runs on one --out at once", _out_two_writers, False),
        ("--out past the file size limit (EFBIG)", _out_file_size_limit, False),
        ("--out on a full disk (ENOSPC)", _out_full_disk, True),
        ("stdout a pipe closed by its reader (| head -1)", _out_closed_pipe, False),
    ):
        if (names is not None and name not in names) or (s.quick and names is None and not in_process):
            continue
        outcome, code, changed, detail = fn(s)
        out.append(Outcome("out", "phyprobe score --out", name, outcome, code, changed, detail))
    return out


def _folder_of_four(s: Setting) -> Path:
    d = s.root / "four"
    if not d.exists():
        d.mkdir()
        for i in range(4):
            write_video(d / f"v{i}.mp4", moving_square(6, 32, 32, 2 + 3 * i, 2), fps=12)
    return d


FAST = ["--workers", "0", "--batch-size", "1", "--no-progress"]


def _out_dev_stdout(s: Setting):
    ran = process(["score", s.scorer, s.good, "--out", "/dev/stdout"], 120)
    outcome = one_line_refusal(ran, "/dev/stdout", r"a pipe \(FIFO\), not a results file")
    if outcome == "clean" and ran.out:
        outcome = "wrong answer"
    return outcome, ran.code, [], ran.err[-1000:]


def _results_rows(path: Path) -> list[dict] | None:
    try:
        return [json.loads(line) for line in path.read_text().splitlines()]
    except (OSError, ValueError):
        return None


def _out_two_writers(s: Setting):
    import subprocess
    import sys

    folder = _folder_of_four(s)
    target = s.root / "two_writers.jsonl"
    argv = [sys.executable, "-m", "phyprobe.cli", "score", str(s.scorer), str(folder), "--out", str(target), *FAST]
    procs = [subprocess.Popen(argv, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True) for _ in range(2)]
    got = [(p.communicate(timeout=300)[1], p.returncode) for p in procs]
    codes = sorted(c for _, c in got)
    rows = _results_rows(target) or []
    videos = sorted(r.get("video") for r in rows)
    refused = [e for e, c in got if c == 2]
    ok = (
        codes == [0, 2]
        and videos == sorted(str(p) for p in folder.iterdir())
        and len(error_lines(refused[0])) == 1
        and f"another phyprobe score is writing {target}" in refused[0]
    )
    tb = any("Traceback" in e for e, _ in got)
    detail = (
        f"exit codes {codes}; {len(rows)} rows for {len(videos and set(videos))} videos; {[e[-300:] for e, _ in got]}"
    )
    return ("traceback" if tb else "clean" if ok else "wrong answer"), max(codes), [], detail


def _out_file_size_limit(s: Setting):
    """A results file of ours with one row already, and room for one more: the run ends in one line, the first row
    intact, whole rows only; the same command with room finishes, each video once."""
    import resource
    import signal

    folder = _folder_of_four(s)
    target = s.root / "efbig.jsonl"
    first = process(["score", s.scorer, folder / "v0.mp4", "--out", target, *FAST], 300)
    kept = target.read_bytes() if target.is_file() else b""
    row = max(len(kept), 1)

    def limited():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (2 * row + row // 2, 2 * row + row // 2))

    ran = process(["score", s.scorer, folder, "--out", target, *FAST], 300, preexec_fn=limited)
    data = target.read_bytes()
    outcome = one_line_refusal(ran, target, r"cannot write results \(File too large, EFBIG\)")
    if outcome == "clean" and (first.code != 0 or not data.startswith(kept) or not data.endswith(b"\n")):
        outcome = "wrong answer"
    again = cli(["score", s.scorer, folder, "--out", target, *FAST], 120)
    rows = _results_rows(target) or []
    if outcome == "clean" and (
        again.code != 0 or sorted(r["video"] for r in rows) != sorted(map(str, folder.iterdir()))
    ):
        outcome = "wrong answer"
    return outcome, ran.code, [] if data.startswith(kept) else [str(target)], ran.err[-1000:]


def _out_full_disk(s: Setting):
    """ENOSPC on the results file's own writes after its first row: a short write, then the disk is full (this
    process's ``os.write`` on that one file made to fail as a full disk fails; no other file is touched)."""
    import errno

    folder = _folder_of_four(s)
    target = s.root / "enospc.jsonl"
    real_write = os.write
    state = {"rows": 0}

    def full_disk(fd, data):
        try:
            ours = os.path.samefile(f"/proc/self/fd/{fd}", target)
        except OSError:
            ours = False
        if not ours:
            return real_write(fd, data)
        state["rows"] += 1
        if state["rows"] == 1:
            return real_write(fd, data)
        if state["rows"] == 2:
            return real_write(fd, bytes(data[:10]))
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    os.write = full_disk
    try:
        ran = cli(["score", s.scorer, folder, "--out", target, *FAST], 120)
    finally:
        os.write = real_write
    rows = _results_rows(target)
    outcome = one_line_refusal(ran, target, r"cannot write results \(No space left on device, ENOSPC")
    if outcome == "clean" and (rows is None or len(rows) != 1 or not target.read_bytes().endswith(b"\n")):
        outcome = "wrong answer"
    return outcome, ran.code, [], ran.err[-1000:]


def _out_closed_pipe(s: Setting):
    import shlex
    import subprocess
    import sys

    folder = _folder_of_four(s)
    score = shlex.join([sys.executable, "-m", "phyprobe.cli", "score", str(s.scorer), str(folder), *FAST])
    p = subprocess.run(
        ["bash", "-c", f"{score} | head -1; echo ${{PIPESTATUS[0]}} >&2"], capture_output=True, text=True, timeout=300
    )
    *noise, code = p.stderr.strip().splitlines() or ["?"]
    ok = p.stdout == "score\traw_score\tvideo\n" and code == "141" and not noise
    outcome = "traceback" if "Traceback" in p.stderr else "clean" if ok else "wrong answer"
    return outcome, int(code) if code.isdigit() else None, [], p.stderr[-1000:]


# --- manifests, score CSVs, options ------------------------------------------------------------------------------------


def manifest_runs(s: Setting, names=None) -> list[Outcome]:
    from phyprobe.testing.configs import TOY, compose_train
    from phyprobe.training.pipeline import train

    out = []
    for c in _wanted(manifest_cases(s.root / "manifests", s.good), names):
        before = fingerprint([c.path, s.good])
        ran = cli(["extract", c.path, "--image-size", "32", "--cache", s.root / "cache"], 60)
        out.append(Outcome("manifest", "phyprobe extract", c.name, one_line_refusal(ran, c.path, c.reason), ran.code))
        cfg = compose_train(
            s.root / "run",
            [
                *TOY,
                "data=manifest",
                f"data.source.path={c.path}",
                "backbone=efficientnet_lite0",  # the default backbone fits a dynamics model first: slow
                "backbone.weights=null",
                f"paths.cache_dir={s.root / 'cache'}",
            ],
        )
        ran = reporting(train, cfg)
        out.append(Outcome("manifest", "train.py", c.name, one_line_refusal(ran, c.path, c.reason), ran.code))
        out[-1].altered = altered(before)
    return out


def csv_runs(s: Setting, names=None) -> list[Outcome]:
    from phyprobe.eval.run import run_eval
    from phyprobe.testing.configs import compose_eval

    out = []
    ids = [f"s5_{v}" for v in ("plausible", "violated")]  # the toy manifest's test scene
    for c in _wanted(csv_cases(s.root / "csv", ids), names):
        before = fingerprint([c.path, s.toy])
        cfg = compose_eval(
            s.root / "eval",
            [
                "benchmark=world_test",
                f"benchmark.manifest={s.toy}",
                "benchmark.where.source=toy",
                f"scores_csv={c.path}",
                *([f"scores_format={c.extra['format']}"] if "format" in c.extra else []),
                "report=false",
                "n_boot=0",
            ],
        )
        ran = reporting(run_eval, cfg)
        if c.expect == "ok":
            outcome = "traceback" if ran.tb else "clean" if ran.code == 0 else "wrong answer"
        else:
            outcome = one_line_refusal(ran, c.path, c.reason)
        out.append(Outcome("csv", "eval.py", c.name, outcome, ran.code, altered(before), ran.err[-500:]))
    return out


# bad `phyprobe extract` options and the reason each one-line error must give
EXTRACT_OPTION_CASES = [
    (["--batch-size", "0"], r"--batch-size: must be >= 1"),
    (["--shard-size", "0"], r"--shard-size: must be >= 1"),
    (["--num-frames", "0"], r"--num-frames: must be >= 1"),
    (["--workers", "-1"], r"--workers: must be >= 0"),
    (["--image-size", "big"], r"--image-size: 'big' is not an integer"),
    (["--encoder", "resnet"], r"unknown encoder 'resnet'"),
]


def option_runs(s: Setting) -> list[Outcome]:
    ex = ["extract", s.toy, "--cache", s.root / "cache"]
    cases = [(f"extract {' '.join(a)}", ex + a, r) for a, r in EXTRACT_OPTION_CASES] + [
        ("score --batch-size 0", ["score", s.scorer, s.good, "--batch-size", "0"], r"--batch-size: must be >= 1")
    ]
    out = []
    for name, argv, reason in cases:
        ran = cli(argv, 60)
        outcome = "traceback" if ran.tb else "wrong answer" if ran.code in (0, None) else None
        outcome = outcome or ("clean" if ran.code == 2 and re.search(reason, ran.err) else "unclear")
        out.append(Outcome("options", "phyprobe " + name.split()[0], name, outcome, ran.code, [], ran.err[-500:]))
    return out


# --- scorer directories ------------------------------------------------------------------------------------------------


def broken_scorers(root: Path, scorer: Path, video: Path) -> list[Case]:
    """Scorer arguments beyond :func:`scorer_cases`' tampered fields: a missing directory, a video given as the
    scorer, zeroed weights, an unknown encoder, and a head whose weights are NaN (loads; must never print a score
    outside [0, 1] nor exit 0). ``extra["file"]``: what the error line names."""
    import shutil

    from safetensors.torch import load_file, save_file

    out = [
        Case("missing scorer directory", root / "no_scorer", "error", r"no such scorer directory", {"file": ""}),
        Case("video passed as the scorer", video, "error", r"", {"file": ""}),
    ]
    for name, edit, file, reason in [
        (
            "zeroed model.safetensors",
            lambda d: (d / "model.safetensors").write_bytes(b"\0" * 100),
            "model.safetensors",
            r"",
        ),
        (
            "encoder name changed",
            lambda d: (d / "config.json").write_text(
                (d / "config.json").read_text().replace('"efficientnet_lite0"', '"efficientnet_lite9"')
            ),
            "config.json",
            r"",
        ),
        (
            "config.json holds a 5000-digit integer",
            lambda d: (d / "config.json").write_text(
                (d / "config.json").read_text().replace('"hidden": 16', '"hidden": ' + "9" * 5000)
            ),
            "config.json",
            r"not valid JSON here \(an integer of more than \d+ digits\)",
        ),
    ]:
        d = root / name.replace(" ", "_")
        shutil.rmtree(d, ignore_errors=True)
        shutil.copytree(scorer, d)
        edit(d)
        out.append(Case(name, d, "error", reason, {"file": file}))
    nan = root / "nan_head"
    shutil.rmtree(nan, ignore_errors=True)
    shutil.copytree(scorer, nan)
    w = load_file(str(nan / "model.safetensors"))
    w = {k: v.clone().fill_(float("nan")) if v.is_floating_point() else v for k, v in w.items()}
    save_file(w, str(nan / "model.safetensors"))
    out.append(Case("head with NaN weights", nan, "error", r"", {"file": "", "nan": True}))
    return out


def scorer_runs(s: Setting, names=None) -> list[Outcome]:
    """Each broken or tampered scorer directory through ``phyprobe score``: one line naming the file (and field), exit
    2, no pickle run, the directory (and the one beside it that paths lead out to) unchanged."""
    root = s.root / "scorers"
    cases = broken_scorers(root / "broken", s.scorer, s.good) + scorer_cases(root / "tampered", s.scorer)
    out = []
    for c in _wanted(cases, names):
        before = fingerprint([c.path, s.good, root / "tampered" / "outside"])
        ran = cli(["score", c.path, s.good, "--json", "--workers", "0"], 60)
        if c.extra.get("nan"):
            rows = json_rows(ran.out)
            bad = rows is None or not all(map(_in_unit, rows.values())) or ran.code in (0, None)
            outcome = "traceback" if ran.tb else "wrong answer" if bad else "clean"
        else:
            outcome = one_line_refusal(ran, c.path / c.extra["file"] if c.extra["file"] else c.path, c.reason)
        if "marker" in c.extra and c.extra["marker"].exists():
            outcome = "wrong answer"  # a pickle ran
        out.append(Outcome("scorer", "phyprobe score", c.name, outcome, ran.code, altered(before), ran.err[-500:]))
    return out


# --- training sets -----------------------------------------------------------------------------------------------------


def training_runs(s: Setting, names=None) -> list[Outcome]:
    """Each :func:`training_cases` set through ``train`` as train.py runs it: one line, exit 2, no scorer exported,
    nothing extracted where the set is refused before work."""
    from phyprobe.testing.configs import TOY, compose_train
    from phyprobe.training.pipeline import train

    out = []
    for c in _wanted(training_cases(s.root / "training", s.toy), names):
        if c.extra.get("slow") and s.quick:
            continue
        run_dir, cache = s.root / "train_runs" / c.path.name, s.root / "train_caches" / c.path.name
        cfg = compose_train(
            run_dir,
            [
                *TOY,
                "backbone=efficientnet_lite0",
                "backbone.image_size=32",
                "data=manifest",
                f"data.source.path={c.path}",
                "eval.report=false",
                f"paths.cache_dir={cache}",
                *c.extra.get("overrides", []),
            ],
        )
        before = fingerprint([c.path, s.toy])
        ran = reporting(train, cfg)
        named = run_dir / c.extra["file"] if c.extra["file"] in ("scorer", "head") else c.path / c.extra["file"]
        outcome = one_line_refusal(ran, named, c.reason)
        exported = (run_dir / "scorer").exists() or (run_dir / "scores.csv").exists()
        if outcome == "clean" and (exported or (c.extra["before_work"] and cache.exists())):
            outcome = "wrong answer"
        out.append(Outcome("training", "train.py", c.name, outcome, ran.code, altered(before), ran.err[-800:]))
    return out


# --- the service ---------------------------------------------------------------------------------------------------------


def _http(url: str, body, content_type: str | None, chunked: bool = False) -> tuple[int | None, dict | str]:
    """(status, JSON answer or the raw text) of one POST /score; ``body`` an iterable of bytes when ``chunked``. The
    server may answer and close before the body is sent (413): the answer is still read."""
    import http.client
    from urllib.parse import urlsplit

    u = urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    try:
        headers = {"Content-Type": content_type} if content_type else {}
        try:
            conn.request("POST", "/score", body=body, headers=headers, encode_chunked=chunked)
        except (BrokenPipeError, ConnectionResetError):
            pass
        try:
            r = conn.getresponse()
            data = r.read()
        except (ConnectionError, http.client.HTTPException) as e:
            return None, f"no answer ({type(e).__name__}: {e})"
    finally:
        conn.close()
    try:
        return r.status, json.loads(data)
    except ValueError:
        return r.status, data.decode(errors="replace")


def service_runs(s: Setting, names=None) -> list[Outcome]:
    """``phyprobe serve`` (on 127.0.0.1, the files it may read under a root): every bad request a 4xx with a one-line
    JSON error, never a 5xx, the files under its root unchanged, and a good clip still scored after them."""
    import shutil

    from phyprobe import Scorer
    from phyprobe.serve import ServeConfig, build_app, serve_in_thread

    root = s.scratch("served")
    shutil.copyfile(s.good, root / "ok.mp4")
    (root / "notes.txt").write_text("not a video\n")
    (root / "image.mp4").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(200))
    (root / "folder.mp4").mkdir(exist_ok=True)
    if not (root / "pipe.mp4").exists():
        os.mkfifo(root / "pipe.mp4")
    if not (root / "out.mp4").is_symlink():
        os.symlink(s.good, root / "out.mp4")  # a link leading out of the root
    good = s.good.read_bytes()
    limit = 256 * 1024
    js = "application/json"
    path = lambda p: json.dumps({"path": p}).encode()  # noqa: E731
    cases = [  # (name, body, content type, chunked, allowed statuses)
        ("JSON path with a NUL byte", path("ok\0.mp4"), js, False, {400}),
        ("JSON path to a text file", path("notes.txt"), js, False, {422}),
        ("JSON path to a PNG named .mp4", path("image.mp4"), js, False, {422}),
        ("JSON path to a directory", path("folder.mp4"), js, False, {400, 404, 422}),
        ("JSON path to a FIFO", path("pipe.mp4"), js, False, {400, 422}),
        ("JSON path to a missing file", path("missing.mp4"), js, False, {404, 422}),
        ("JSON path out of the root", path("../good.mp4"), js, False, {403}),
        ("JSON path a symlink out of the root", path("out.mp4"), js, False, {403}),
        ("JSON path absolute, outside the root", path("/etc/passwd"), js, False, {403}),
        ("malformed JSON", b'{"path": ', js, False, {400}),
        ("JSON a list", b'["ok.mp4"]', js, False, {400}),
        ("JSON path a number", b'{"path": 5}', js, False, {400}),
        ("JSON not UTF-8", b'{"path": "caf\xe9.mp4"}', js, False, {400}),
        ("JSON nested 30000 deep", b"[" * 30_000 + b"]" * 30_000, js, False, {400}),
        ("JSON path a 5000-digit integer", b'{"path": ' + b"9" * 5000 + b"}", js, False, {400}),
        ("JSON body over 64 KiB", path("x" * 70_000), js, False, {413}),
        ("upload over the size limit (Content-Length)", bytes(limit + 1), "video/mp4", False, {413}),
        ("upload over the size limit (chunked)", iter([bytes(64 * 1024)] * 6), "video/mp4", True, {413}),
        ("empty upload", b"", "video/mp4", False, {400}),
        ("upload a text file", b"not a video\n" * 100, "video/mp4", False, {422}),
        ("upload a truncated mp4", good[: len(good) // 3], "video/mp4", False, {422}),
        ("upload without a content type", b"not a video\n" * 100, None, False, {422}),
        ("upload as a multipart form", b"--x\r\n\r\nabc\r\n--x--\r\n", "multipart/form-data; boundary=x", False, {415}),
        ("a good clip after the bad requests", good, "video/mp4", False, {200}),
    ]
    cfg = ServeConfig(
        paths_root=root,
        max_upload_bytes=limit,
        decode_workers=0 if s.quick else 1,
        spool_dir=s.scratch("spool"),
        timeout_s=30,
    )
    out = []
    with serve_in_thread(build_app(Scorer.from_pretrained(s.scorer), cfg)) as url:
        for name, body, ctype, chunked, want in cases:
            if names is not None and name not in names:
                continue
            before = fingerprint([root, s.good])
            status, answer = _http(url, body, ctype, chunked)
            error = answer.get("error", "") if isinstance(answer, dict) else ""
            if status is None or status >= 500 or (status in range(200, 300) and 200 not in want):
                outcome = "wrong answer"
            elif status == 200:
                outcome = "clean" if 200 in want and 0.0 <= answer.get("score", -1) <= 1.0 else "wrong answer"
            else:
                outcome = "clean" if status in want and error and "\n" not in error else "unclear"
            detail = f"HTTP {status}: {answer if isinstance(answer, dict) else answer[:300]}"
            out.append(Outcome("service", "phyprobe serve", name, outcome, status, altered(before), detail))
    return out


# --- the judge client ---------------------------------------------------------------------------------------------------

KEY = "sk-echoed-0f1e2d3c4b5a69788TOPSECRET"  # an API key the scripted server echoes back


def _hostile_server():
    """The scripted judge server with two more replies: ``deep_json`` (a score nested 100000 lists deep) and
    ``huge_number`` (a 5000-digit score); each must be that video's recorded parse failure."""
    from phyprobe.testing.judge_server import ScriptedServer

    class Hostile(ScriptedServer):
        def respond(self, h, case, key, attempt, body, auth=""):
            if case == "deep_json":
                return self._completion(h, '{"score": ' + "[" * 100_000 + "]" * 100_000 + "}", key, body)
            if case == "huge_number":
                return self._completion(h, '{"score": ' + "9" * 5000 + ', "reasoning": "x"}', key, body)
            return super().respond(h, case, key, attempt, body, auth)

    return Hostile()


def judge_runs(s: Setting, names=None) -> list[Outcome]:
    """``phyprobe judge run`` against a scripted OpenAI-compatible server (phyprobe.testing.judge_server): a refused
    key (401/403) stops the run in one line naming the server, with no retry; a malformed ``retry-after`` means the
    default backoff; a key the server echoes is in no file written; no video scored is a non-zero exit."""
    from omegaconf import OmegaConf

    from phyprobe.testing.judge_cases import case_manifest, physics_cfg
    from phyprobe.testing.judge_server import BAD_RETRY_AFTER

    specs = {
        "401 for the API key": (("unauthorized", "ok", "ok"), {"concurrency": 1}),
        "403 for the API key": (("forbidden", "ok", "ok"), {"concurrency": 1}),
        "malformed retry-after": (("bad_retry_after",), {"max_retries": len(BAD_RETRY_AFTER), "max_backoff_s": 0.1}),
        "the server echoes the API key": (
            ("echo_key", "echo_key_error", "echo_key_bad_request", "ok"),
            {"max_retries": 1},
        ),
        "0 of 2 videos scored": (("bad_request", "malformed"), {}),
        "replies nesting deeply or with a 5000-digit score": (("deep_json", "huge_number", "ok"), {"max_retries": 0}),
    }
    out = []
    env = "PHYPROBE_BAD_INPUTS_KEY"
    os.environ[env] = KEY
    try:
        for name, (cases, client) in specs.items():
            if names is not None and name not in names:
                continue
            d = s.scratch(f"judge_{len(out)}")
            manifest = case_manifest(d / "m", cases=cases)
            before = fingerprint([manifest])
            with _hostile_server() as srv:
                cfg = physics_cfg(srv.base_url, d / "cache", api_key_env=env, **client)
                OmegaConf.save(OmegaConf.create(cfg), d / "judge.yaml")
                ran = cli(["judge", "run", d / "judge.yaml", "--manifest", manifest, "--out", d / "out"], 120)
                requests = sum(srv.counts.values())
            outcome, detail = _judge_outcome(name, ran, requests, d, srv.base_url), ran.err[-800:]
            if KEY in ran.out + ran.err + "".join(ran.warnings) or any(
                KEY.encode() in p.read_bytes() for p in d.rglob("*") if p.is_file()
            ):
                outcome, detail = "wrong answer", "the API key is in a file written or in the output"
            out.append(Outcome("judge", "phyprobe judge run", name, outcome, ran.code, altered(before), detail))
    finally:
        os.environ.pop(env, None)
    return out


def _judge_outcome(name: str, ran: Ran, requests: int, d: Path, base_url: str) -> str:
    from phyprobe.testing.judge_server import BAD_RETRY_AFTER

    if ran.tb:
        return "hang" if ran.tb.startswith("hang") else "traceback"
    if name.startswith(("401", "403")):
        if ran.code == 0:
            return "wrong answer"
        status = name[:3]
        ok = (
            one_line_refusal(ran, base_url, rf"refused the API key from \$\w+ with HTTP {status}") == "clean"
            and requests == 1
            and not (d / "out" / "judgements.jsonl").exists()
        )
        return "clean" if ok else "unclear" if ran.code == 2 else "wrong answer"
    if name == "malformed retry-after":
        return "clean" if ran.code == 0 and requests == len(BAD_RETRY_AFTER) + 1 else "wrong answer"
    if name == "the server echoes the API key":
        return "clean" if ran.code == 1 and "2 of 4 videos have no score" in ran.err else "wrong answer"
    if name.startswith("replies nesting"):
        return "clean" if ran.code == 1 and "2 of 3 videos have no score" in ran.err else "wrong answer"
    return "clean" if ran.code == 2 and "2 of 2 videos have no score" in ran.err else "wrong answer"


# --- files handed to a command: baselines, judge folders, score CSVs, seed files, runs, archives ------------------------


def _generations(root: Path, good: Path) -> tuple[Path, Path]:
    """Two generators of two prompts (copies of one real mp4) and a ``video,score`` CSV for them."""
    import shutil

    for gen in ("a", "b"):
        for p in ("p1", "p2"):
            (root / "g" / gen).mkdir(parents=True, exist_ok=True)
            shutil.copyfile(good, root / "g" / gen / f"{p}.mp4")
    scores = root / "scores.csv"
    scores.write_text("video,score\na/p1,0.1\na/p2,0.2\nb/p1,0.3\nb/p2,0.4\n")
    return root / "g", scores


def input_cases(root: Path, good: Path) -> list[Case]:
    """Files a user hands ``leaderboard``, ``suite build``, ``summarize`` and ``data prepare``, broken or tampered:
    each must be refused in one line naming it (``extra["argv"]``: the command; ``path``: the file named)."""
    import copy
    import zipfile

    root.mkdir(parents=True, exist_ok=True)
    gens, scores = _generations(root, good)
    board = ["leaderboard", gens, "--out", root / "board", "--scores", f"x={scores}"]
    base = {"evaluators": {"x": {"per_prompt": {"a": {"p1": 0.1, "p2": 0.2}, "b": {"p1": 0.3, "p2": 0.4}}}}}
    cases = []

    def baseline(name: str, text: str, reason: str) -> None:
        path = root / f"baseline_{len(cases)}.json"
        path.write_text(text)
        cases.append(Case(name, path, "error", reason, {"argv": [*board, "--baseline", path]}))

    def tampered(fn) -> str:
        d = copy.deepcopy(base)
        fn(d["evaluators"]["x"])
        return json.dumps(d)

    baseline(
        "--baseline: a score as a string", tampered(lambda e: e["per_prompt"]["a"].update(p1="0.1")), "not a number"
    )
    baseline("--baseline: a score of -1e308", tampered(lambda e: e["per_prompt"]["a"].update(p1=-1e308)), "finite")
    baseline("--baseline: NaN", json.dumps(base).replace("0.1", "NaN", 1), "NaN is not a number")
    baseline("--baseline: per_prompt a list", tampered(lambda e: e.update(per_prompt=[1, 2])), "per_prompt")
    baseline("--baseline: nested 100,000 deep", "[" * 100_000 + "]" * 100_000, "nested too deeply")
    cases.append(
        Case("--baseline /dev/zero", Path("/dev/zero"), "error", "not a regular file",
             {"argv": [*board, "--baseline", "/dev/zero"]})
    )  # fmt: skip
    judged = root / "judge"
    judged.mkdir(exist_ok=True)
    rows = [{"id": "a/p1", "score": math.inf}, {"id": "b/p1", "score": 3.0}]
    (judged / "judgements.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    cases.append(
        Case("--judge: an infinite score", judged / "judgements.jsonl", "error", "not a finite number",
             {"argv": ["leaderboard", gens, "--out", root / "board", "--judge", judged]})
    )  # fmt: skip
    huge = root / "huge.csv"
    huge.write_text("video,score\na/p1,1e308\na/p2,0.2\nb/p1,0.3\nb/p2,0.4\n")
    cases.append(
        Case("--scores: a finite 1e308", huge, "error", "not a finite number",
             {"argv": ["leaderboard", gens, "--out", root / "board", "--scores", f"x={huge}"]})
    )  # fmt: skip
    laughs = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
        f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]\n" for p, c in zip("abcdefg", "bcdefgh")
    )
    seeds = {
        "seed YAML: a billion laughs": ("laughs.yaml", laughs + "paradigms: [*h]\n", "aliases"),
        "seed YAML: nested 100,000 deep": ("deep.yaml", "paradigms: " + "[" * 100_000 + "]" * 100_000, "too deeply"),
        "SVBench seed JSON: nested 100,000 deep": ("deep.json", "[" * 100_000 + "]" * 100_000, "too deeply"),
    }
    for name, (file, text, reason) in seeds.items():
        (root / file).write_text(text)
        argv = ["suite", "build", root / file, "--out", root / f"{file}.suite.jsonl"]
        cases.append(Case(name, root / file, "error", reason, {"argv": argv}))
    runs = root / "runs"
    for i, text in enumerate(['{"benchmarks": {}}', "[" * 100_000 + "]" * 100_000]):
        (runs / str(i)).mkdir(parents=True, exist_ok=True)
        (runs / str(i) / "run_info.json").write_text("{}")
        (runs / str(i) / "metrics.json").write_text(text)
    cases.append(
        Case("summarize: a metrics.json nested 100,000 deep", runs / "1" / "metrics.json", "error", "too deeply",
             {"argv": ["summarize", runs]})
    )  # fmt: skip
    bomb = root / "bomb"
    bomb.mkdir(exist_ok=True)
    with zipfile.ZipFile(bomb / "PID_Test_split.zip", "w", zipfile.ZIP_DEFLATED) as z:
        with z.open("PID_test/pos/a_real_0.mp4", "w") as f:
            for _ in range(64):
                f.write(bytes(1 << 20))
    cases.append(
        Case("data prepare: a zip expanding 1000-fold", bomb / "PID_Test_split.zip", "error", "times the archive",
             {"argv": ["data", "prepare", "pid", "--root", bomb, "--out", root / "pid_out"], "left": root / "pid_out",
              "code": 1})  # data prepare's exit code for a published file it cannot convert
    )  # fmt: skip
    return cases


def input_runs(s: Setting, names=None) -> list[Outcome]:
    """Each :func:`input_cases` file through its command: exit 2, one line naming the file, nothing written where the
    command would write (an archive's extraction included), the file unchanged."""
    out = []
    for c in _wanted(input_cases(s.root / "inputs", s.good), names):
        before = fingerprint([c.path] if c.path.is_file() else [])
        ran = cli(c.extra["argv"], 120)
        outcome = one_line_refusal(ran, c.path, c.reason, c.extra.get("code", 2))
        if "left" in c.extra and c.extra["left"].exists():
            outcome = "wrong answer"  # an archive refused must leave nothing behind
        command = "phyprobe " + " ".join(str(a) for a in c.extra["argv"][:2] if not str(a).startswith("/"))
        out.append(Outcome("inputs", command, c.name, outcome, ran.code, altered(before), ran.err[-500:]))
    return out
