"""A second ``train.py`` run on a warm feature cache against the cold run that filled it.

Both are the real command line (fresh processes, imports included) on the same manifest of real
mp4s: the cold run decodes and encodes every video, the warm one only trains the head.

    python bench/bench_warm_cache.py            # 64 mp4s, default encoder (efficientnet_lite0 @ 160)
    python bench/bench_warm_cache.py --quick    # 16 mp4s
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_extract import make_videos

REPO = Path(__file__).resolve().parents[1]


def train_run(manifest: Path, cache: Path, out: Path, epochs: int) -> float:
    cmd = [
        sys.executable,
        str(REPO / "train.py"),
        "data=manifest",
        f"data.source.path={manifest}",
        f"paths.cache_dir={cache}",
        f"hydra.run.dir={out}",
        f"trainer.max_epochs={epochs}",
        "trainer.enable_progress_bar=false",
        "eval.report=false",
        "eval.baselines=[]",
    ]
    t = time.perf_counter()
    subprocess.run(cmd, check=True, cwd=REPO, capture_output=True)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--videos", type=int, default=64)
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--data", type=Path, default=Path(tempfile.gettempdir()) / "phyprobe-bench-videos")
    ap.add_argument("--quick", action="store_true", help="16 videos")
    args = ap.parse_args()
    n = 16 if args.quick else args.videos
    manifest = make_videos(args.data / f"n{n}", n)
    work = Path(tempfile.mkdtemp(prefix="bench-warm-"))
    try:
        cold = train_run(manifest.root, work / "cache", work / "cold", args.epochs)
        warm = train_run(manifest.root, work / "cache", work / "warm", args.epochs)
        same = (work / "cold" / "scores.csv").read_bytes() == (work / "warm" / "scores.csv").read_bytes()
    finally:
        shutil.rmtree(work)
    print(
        f"train.py on {n} mp4s, {args.epochs} epochs: cold cache {cold:.1f} s, warm cache {warm:.1f} s, "
        f"warm/cold {warm / cold:.3f} ({cold / warm:.1f}x faster); identical scores: {same}"
    )


if __name__ == "__main__":
    main()
