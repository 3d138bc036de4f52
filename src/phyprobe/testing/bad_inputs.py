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
    return c


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
