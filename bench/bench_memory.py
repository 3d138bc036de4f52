"""Peak memory to turn one video into encoder input (decode + preprocess + the encoder's forward), at
720p, 4K and 8K, each in a fresh process so its peak RSS is its own.

Two paths are measured on the same files:

- ``reduced``: ``FrozenEncoder.read_clip`` — frames are scaled down to twice the encoder's input box
  while FFmpeg converts them, and decoder threads are capped by the bytes they hold;
- ``full``: ``decode_clip`` without a box, then preprocess — every chosen frame is converted at full
  resolution first (what a caller that does not pass the box pays).

A third case is a long video read in windows (``--reading windows --combine mean``): a 20-minute 320x240,
25 fps clip (30,000 frames, written cheaply: x264 ultrafast at a low bitrate) scored by a scorer whose
16-frame windows keep the frames at full size (a 128-pixel input box), in a child process. Windows are
streamed (only a window's frames held) and go through the encoder a few at a time (``Scorer.forward_bytes``: on a
CPU a forward's activations are ~20x its input), so its peak must stay under 1.5 GB, most of it torch and timm
themselves (the "after load" figure); decoding every frame at once held ~6.9 GB of RGB.

    python bench/bench_memory.py             # 16-frame clips of 24 frames at 720p, 4K, 8K; the 20-minute windows
    python bench/bench_memory.py --quick     # 720p and 4K only, and the windowed case on 2 minutes
    python bench/bench_memory.py --windowed-only --stride 400   # only the long video, windows 400 frames apart
    python bench/bench_memory.py --record    # the figures into results/benchmarks.csv
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
from fractions import Fraction
from pathlib import Path

SIZES = {"720p": (720, 1280), "4K": (2160, 3840), "8K": (4320, 7680)}
LIMIT_GB = 1.5


def write_clip(path: Path, h: int, w: int, n: int = 24) -> Path:
    """A moving gradient, generated frame by frame (an 8K clip never sits in memory whole)."""
    import av
    import numpy as np

    y = np.linspace(0, 255, h, dtype=np.float32)[:, None]
    x = np.linspace(0, 255, w, dtype=np.float32)[None, :]
    with av.open(str(path), "w", format="mp4") as out:
        s = out.add_stream("libx264", rate=Fraction(24))
        s.width, s.height, s.pix_fmt = w, h, "yuv420p"
        s.options = {"preset": "ultrafast", "crf": "28"}
        for t in range(n):
            f = np.empty((h, w, 3), np.uint8)
            f[..., 0] = (x + 8 * t) % 256
            f[..., 1] = y
            f[..., 2] = (x + y) / 2
            for p in s.encode(av.VideoFrame.from_ndarray(f, format="rgb24")):
                out.mux(p)
        for p in s.encode():
            out.mux(p)
    return path


CHILD = r"""
import json, resource, sys, torch
from phyprobe.encoders import from_config
from phyprobe.io.video import ClipSpec, decode_clip
torch.set_num_threads(1)
enc = from_config("efficientnet_lite0")
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
path, mode = sys.argv[1], sys.argv[2]
clip = ClipSpec(16)
if mode == "reduced":
    x, c = enc.read_clip(path, clip)
else:
    c = decode_clip(path, enc.clip_spec(clip))
    x = enc.preprocess(c.frames)
feats = enc(x.unsqueeze(0))
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"peak_mb": peak / 1024, "after_import_mb": base / 1024, "decoded": list(c.frames.shape),
                  "input": list(x.shape), "features": list(feats.shape)}))
"""


WINDOWED_CHILD = r"""
import json, resource, sys, time, torch
from phyprobe import Scorer
torch.set_num_threads(max(1, torch.get_num_threads()))
scorer = Scorer.from_pretrained(sys.argv[1])
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.perf_counter()
raw = scorer.score_raw_many([sys.argv[2]])[0]
if isinstance(raw, Exception):
    raise raw
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"peak_mb": peak / 1024, "after_load_mb": base / 1024, "raw": raw, "seconds": time.perf_counter() - t0}))
"""


def write_long(path: Path, minutes: float, h: int = 240, w: int = 320, fps: int = 25) -> Path:
    """A ``minutes``-long moving gradient, written straight from YUV planes (seconds per minute of video)."""
    import av
    import numpy as np

    base = (np.add.outer(np.arange(h), np.arange(w)) % 256).astype(np.uint8)
    chroma = np.full((h // 2, w), 128, np.uint8)
    with av.open(str(path), "w", format="mp4") as out:
        s = out.add_stream("libx264", rate=Fraction(fps))
        s.width, s.height, s.pix_fmt = w, h, "yuv420p"
        s.options = {"preset": "ultrafast", "b": "60k", "g": str(10 * fps)}
        for t in range(round(minutes * 60 * fps)):
            f = np.concatenate([np.roll(base, 2 * t, axis=1), chroma])
            for p in s.encode(av.VideoFrame.from_ndarray(f, format="yuv420p")):
                out.mux(p)
        for p in s.encode():
            out.mux(p)
    return path


def measure_windowed(tmp: Path, minutes: float, stride: int | None) -> dict:
    """Peak RSS of a child scoring a ``minutes``-long 320x240 video in windows (stride: the scorer's unless given)."""
    from phyprobe.scorer.reading import Reading
    from phyprobe.testing.scorers import make_scorer

    video = write_long(tmp / f"long_{minutes:g}min.mp4", minutes)
    scorer = make_scorer(tmp / "windowed_scorer", num_frames=16, image_size=128, reading=Reading("windows", stride))
    r = subprocess.run([sys.executable, "-c", WINDOWED_CHILD, str(scorer), str(video)], capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(f"windowed child failed:\n{r.stderr[-3000:]}")
    m = json.loads(r.stdout.strip().splitlines()[-1])
    m["children_maxrss_mb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    m["file_mb"] = video.stat().st_size / 2**20
    m["frames"] = round(minutes * 60 * 25)
    m["whole_decode_gb"] = m["frames"] * 240 * 320 * 3 / 2**30  # every frame as RGB at once (the old reading)
    return m


def measure(path: Path, mode: str) -> dict:
    r = subprocess.run([sys.executable, "-c", CHILD, str(path), mode], capture_output=True, text=True, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--windowed-only", action="store_true", help="only the long video read in windows")
    ap.add_argument("--minutes", type=float, default=None, help="length of the windowed video (20; --quick: 2)")
    ap.add_argument("--stride", type=int, default=None, help="frames between windows (default: the scorer's, 8)")
    ap.add_argument("--record", action="store_true", help="write the figures to results/benchmarks.csv")
    args = ap.parse_args()
    sizes = {} if args.windowed_only else {k: v for k, v in SIZES.items() if not (args.quick and k == "8K")}
    minutes = args.minutes or (2.0 if args.quick else 20.0)
    rows = []
    figures: dict[str, tuple[float, str]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        m = measure_windowed(Path(tmp), minutes, args.stride)
        ratio = m["peak_mb"] / 1024 / LIMIT_GB
        print(
            f"windowed {minutes:g} min 320x240 ({m['frames']} frames, {m['file_mb']:.1f} MB file, stride "
            f"{args.stride or 'scorer'}): peak RSS {m['peak_mb']:.0f} MB (after load {m['after_load_mb']:.0f} MB; "
            f"children max {m['children_maxrss_mb']:.0f} MB) = {ratio:.2f} x the {LIMIT_GB} GB limit: "
            f"{'OK' if ratio <= 1 else 'OVER'}; decoding every frame at once would hold {m['whole_decode_gb']:.1f} GB; "
            f"scored in {m['seconds']:.0f} s",
            flush=True,
        )
        case = f"windowed {minutes:g} min 320x240" + (f" stride {args.stride}" if args.stride else "")
        figures[f"{case}: peak RSS"] = (m["peak_mb"], "MB")
        figures[f"{case}: RSS after loading the scorer"] = (m["after_load_mb"], "MB")
        figures[f"{case}: peak / {LIMIT_GB} GB"] = (ratio, "x")
        figures[f"{case}: whole-video decode it avoids"] = (m["whole_decode_gb"] * 1024, "MB")
        for name, (h, w) in sizes.items():
            path = write_clip(Path(tmp) / f"{name}.mp4", h, w)
            for mode in ("reduced", "full"):
                m = measure(path, mode)
                rows.append((name, mode, m))
                print(
                    f"{name:>5} {mode:>8}: peak RSS {m['peak_mb']:7.0f} MB (after imports {m['after_import_mb']:.0f} MB); "
                    f"decoded {m['decoded']} -> input {m['input']}",
                    flush=True,
                )
    if rows:
        worst = max(m["peak_mb"] for name, mode, m in rows if mode == "reduced") / 1024
        print(
            f"largest reduced-path peak: {worst:.2f} GB (limit {LIMIT_GB} GB): {'OK' if worst <= LIMIT_GB else 'OVER'}"
        )
    for name in sizes:
        red = next(m for n, mo, m in rows if n == name and mo == "reduced")["peak_mb"]
        full = next(m for n, mo, m in rows if n == name and mo == "full")["peak_mb"]
        print(f"{name:>5}: full / reduced peak = {full / red:.2f}x")
        figures[f"{name} reduced: peak RSS"] = (red, "MB")
        figures[f"{name}: full / reduced peak"] = (full / red, "x")
    if args.record:
        from phyprobe.eval.bench_record import record_benchmark

        print(f"recorded: {record_benchmark('memory', figures)}")


if __name__ == "__main__":
    main()
