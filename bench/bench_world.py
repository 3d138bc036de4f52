"""How fast a world builds: scenes per second and the wall time for 1,000 scenes.

Targets on 2 cores: the 2D world, 1,000 scenes (default options: 5 clips each, plus the real-footage
segments) in at most 2 minutes; the 3D world, 1,000 scenes with all their twins (plausible, violated,
quality-degraded and nuisance-only clips) in at most 10 minutes.

    PYTHONPATH=src python bench/bench_world.py --num-scenes 1000 --workers 2
    PYTHONPATH=src python bench/bench_world.py --engine 3d --num-scenes 1000 --workers 2
    PYTHONPATH=src python bench/bench_world.py --engine marbles --num-scenes 200 --workers 2
    PYTHONPATH=src python bench/bench_world.py --engine rigs --num-scenes 200 --workers 2
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from phyprobe.world.build import ENGINES, build_world


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-scenes", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--engine", choices=sorted(ENGINES), default="planar")
    parser.add_argument("--preset", default="veryfast")
    parser.add_argument("--out", default=None, help="keep the build here (default: a temporary directory, removed)")
    parser.add_argument("--record", action="store_true", help="write the figures to results/benchmarks.csv")
    args = parser.parse_args()
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="bench_world_"))
    try:
        start = time.perf_counter()
        build_world(
            out,
            args.num_scenes,
            args.seed,
            workers=args.workers,
            progress=True,
            preset=args.preset,
            engine=args.engine,
            include_real=args.engine == "planar",
        )
        elapsed = time.perf_counter() - start
        clips = sum(1 for _ in out.rglob("*.mp4"))
        size = sum(p.stat().st_size for p in out.rglob("*.mp4"))
        start = time.perf_counter()
        build_world(
            out,
            args.num_scenes,
            args.seed,
            workers=args.workers,
            progress=False,
            preset=args.preset,
            engine=args.engine,
            include_real=args.engine == "planar",
        )
        again = time.perf_counter() - start
    finally:
        if not args.out:
            shutil.rmtree(out, ignore_errors=True)
    rate = args.num_scenes / elapsed
    print(
        f"{args.num_scenes} scenes, {clips} clips ({size / 2**20:.1f} MiB) in {elapsed:.1f} s: {rate:.2f} scenes/s, {clips / elapsed:.1f} clips/s"
    )
    target = {"planar": " (target <= 120 s)", "world3d": " (target <= 600 s)"}.get(args.engine, "")
    print(
        f"{args.engine} world: time for 1,000 scenes: {1000 / rate:.1f} s{target}; rebuild of a finished build: {again:.3f} s"
    )
    if args.record:
        from phyprobe.eval.bench_record import record_benchmark

        record_benchmark(
            f"world_{args.engine}",
            {
                "scenes per second": (rate, "1/s"),
                "time for 1,000 scenes": (1000 / rate, "s"),
                "rebuild of a finished build / first build": (again / elapsed, "ratio"),
            },
        )


if __name__ == "__main__":
    main()
