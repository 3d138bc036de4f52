"""Peak memory to turn one video into encoder input (decode + preprocess + the encoder's forward), at
720p, 4K and 8K, each in a fresh process so its peak RSS is its own.

Two paths are measured on the same files:

- ``reduced``: ``FrozenEncoder.read_clip`` — frames are scaled down to twice the encoder's input box
  while FFmpeg converts them, and decoder threads are capped by the bytes they hold;
- ``full``: ``decode_clip`` without a box, then preprocess — every chosen frame is converted at full
  resolution first (what a caller that does not pass the box pays).

    python bench/bench_memory.py             # 16-frame clips of 24 frames at 720p, 4K, 8K
    python bench/bench_memory.py --quick     # 720p and 4K only
"""

from __future__ import annotations

import argparse
import json
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


def measure(path: Path, mode: str) -> dict:
    r = subprocess.run([sys.executable, "-c", CHILD, str(path), mode], capture_output=True, text=True, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    sizes = {k: v for k, v in SIZES.items() if not (args.quick and k == "8K")}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
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
    worst = max(m["peak_mb"] for name, mode, m in rows if mode == "reduced") / 1024
    print(f"largest reduced-path peak: {worst:.2f} GB (limit {LIMIT_GB} GB): {'OK' if worst <= LIMIT_GB else 'OVER'}")
    for name in sizes:
        red = next(m for n, mo, m in rows if n == name and mo == "reduced")["peak_mb"]
        full = next(m for n, mo, m in rows if n == name and mo == "full")["peak_mb"]
        print(f"{name:>5}: full / reduced peak = {full / red:.2f}x")


if __name__ == "__main__":
    main()
