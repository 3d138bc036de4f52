"""Every bad input a hostile but realistic user can give, generated in a directory.

Shared by ``tests/test_bad_inputs.py`` (which asserts each outcome) and ``bench/bad_inputs.py``
(which counts them). A case says what must happen: ``ok`` (used as is), ``warn`` (used, with a
warning that gives the share decoded), or ``error`` with a pattern the one-line reason must match.
"""

from __future__ import annotations

import json
import os
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
    c.append(Case("mp4 truncated at 98%", p, "warn"))
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
        Case("frame size changes mid-stream (two MPEG-TS joined)", write_size_changing_ts(root / "joined.ts"), "either")
    )
    c.append(
        Case(
            "raw H.264 stream (.h264, no timestamps)",
            write_container(root / "raw.h264", moving_square(12, 48, 64, 4, 2), "h264", "libx264"),
            "ok",
        )
    )
    return c


def write_container(path: Path, frames: np.ndarray, fmt: str, codec: str, fps: int = 12) -> Path:
    """``frames`` (T, H, W, 3) in any container / codec pair FFmpeg muxes (mpegts, 3gp, flv, asf, ogg, raw h264...)."""
    with av.open(str(path), "w", format=fmt) as out:
        s = out.add_stream(codec, rate=Fraction(fps))
        s.width, s.height, s.pix_fmt = frames.shape[2], frames.shape[1], "yuv420p"
        s.options = {"threads": "1"} if codec.startswith("lib") else {}
        for f in frames:
            for p in s.encode(av.VideoFrame.from_ndarray(np.ascontiguousarray(f), format="rgb24")):
                out.mux(p)
        for p in s.encode():
            out.mux(p)
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
