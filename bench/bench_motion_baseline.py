"""The motion heuristic's per-video pass, one video at a time against one per core, in one run.

Every training run scores its benchmarks' videos with the zero-parameter motion heuristic
(``phyprobe.baselines.motion``); OpenCV's flow and PyAV's decoding release the GIL, so threads score
several videos at once. Prints videos/s for each thread count and the ratio, on the same videos,
with no score cache.

    python bench/bench_motion_baseline.py                 # a 40-scene 2D world, built in a temporary directory
    python bench/bench_motion_baseline.py --manifest data/world-s0-n500 --limit 200
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from phyprobe.baselines import score_each_video
from phyprobe.baselines.motion import motion_score
from phyprobe.data.manifest import Manifest
from phyprobe.io.video import ClipSpec
from phyprobe.world.build import build_world


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--manifest", type=Path, default=None, help="default: build a 40-scene 2D world")
    ap.add_argument("--limit", type=int, default=200, help="videos scored per setting")
    ap.add_argument("--num-frames", type=int, default=16)
    args = ap.parse_args()
    tmp = None
    if args.manifest is None:
        tmp = Path(tempfile.mkdtemp(prefix="bench_motion_"))
        args.manifest = build_world(tmp / "world", num_scenes=40, seed=0, workers=1, include_real=False)
    try:
        m = Manifest.load(args.manifest)
        m = m.keep(np.arange(len(m.videos)) < args.limit)
        cores = os.cpu_count() or 1
        rates, scores = {}, {}
        for workers in sorted({1, cores}):
            start = time.perf_counter()
            scores[workers] = score_each_video(m, ClipSpec(args.num_frames), motion_score, workers=workers)
            rates[workers] = len(scores[workers]) / (time.perf_counter() - start)
            print(f"{workers} thread(s): {len(scores[workers])} videos, {rates[workers]:.2f} videos/s")
        assert scores[1] == scores[cores], "threaded scores differ"
        print(f"ratio {cores} threads / 1 thread: {rates[cores] / rates[1]:.2f} (same scores)")
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
