"""How fast the world builds: scenes per second and the wall time for 1,000 scenes.

Target: 1,000 scenes (default options: 5 clips each, plus the real-footage segments) in at most
2 minutes on 2 cores.

    PYTHONPATH=src python bench/bench_world.py --num-scenes 1000 --workers 2
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from phyprobe.world.build import build_world


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-scenes", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--preset", default="veryfast")
    parser.add_argument("--out", default=None, help="keep the build here (default: a temporary directory, removed)")
    args = parser.parse_args()
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="bench_world_"))
    try:
        start = time.perf_counter()
        build_world(out, args.num_scenes, args.seed, workers=args.workers, progress=True, preset=args.preset)
        elapsed = time.perf_counter() - start
        clips = sum(1 for _ in out.rglob("*.mp4"))
        size = sum(p.stat().st_size for p in out.rglob("*.mp4"))
        start = time.perf_counter()
        build_world(out, args.num_scenes, args.seed, workers=args.workers, progress=False, preset=args.preset)
        again = time.perf_counter() - start
    finally:
        if not args.out:
            shutil.rmtree(out, ignore_errors=True)
    rate = args.num_scenes / elapsed
    print(f"{args.num_scenes} scenes, {clips} clips ({size / 2**20:.1f} MiB) in {elapsed:.1f} s: {rate:.2f} scenes/s, {clips / elapsed:.1f} clips/s")
    print(f"time for 1,000 scenes: {1000 / rate:.1f} s (target <= 120 s); rebuild of a finished build: {again:.3f} s")


if __name__ == "__main__":
    main()
