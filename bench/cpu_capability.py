"""One scorer on the same clips under two of torch's CPU instruction sets: how far a figure moves on another
machine, and what the wider vector units buy in speed (a ratio measured in one run).

Torch picks its CPU kernels by the widest instruction set the machine has (``ATEN_CPU_CAPABILITY`` overrides
it: ``default``, ``avx2``, ``avx512``), and their float results differ in the last bit. Resizing a frame is
one such kernel: a pixel that lands one ulp either side of a half grey level rounds to another uint8 value,
and optical flow carries that into the features. Every figure reproduces bit for bit on one instruction set;
this says how much it moves across them.

    python bench/cpu_capability.py outputs/demo/scorer data/worlds-s1-n200-200 --pairs 150
    python bench/cpu_capability.py outputs/demo/scorer data/worlds-s1-n200-200 --capabilities avx2 avx512
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def worker(scorer_dir: str, videos_file: str, out_file: str) -> None:
    """Score the listed videos in this process, whose instruction set the parent chose."""
    import torch

    from phyprobe import Scorer

    videos = json.loads(Path(videos_file).read_text())
    scorer = Scorer.from_pretrained(scorer_dir)
    start = time.perf_counter()
    raw = scorer.score_raw_many(videos)
    seconds = time.perf_counter() - start
    bad = [(v, str(r)) for v, r in zip(videos, raw) if isinstance(r, Exception)]
    if bad:
        raise SystemExit(f"could not score {len(bad)} videos, first: {bad[0]}")
    Path(out_file).write_text(
        json.dumps(
            {"capability": torch.backends.cpu.get_cpu_capability(), "seconds": seconds, "raw": [float(r) for r in raw]}
        )
    )


def run_under(capability: str, scorer: Path, videos_file: Path, out: Path) -> dict:
    env = {**os.environ, "ATEN_CPU_CAPABILITY": capability}
    cmd = [sys.executable, __file__, "--worker", str(scorer), str(videos_file), str(out)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"scoring under ATEN_CPU_CAPABILITY={capability} failed:\n{done.stderr[-2000:]}")
    result = json.loads(out.read_text())
    if result["capability"].lower() != capability.lower():
        raise SystemExit(f"asked for {capability}, torch used {result['capability']}: this CPU lacks it")
    return result


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--worker":
        return worker(*sys.argv[2:])
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scorer", type=Path)
    ap.add_argument("manifest", type=Path, help="a pair manifest: its same-scene pairs are scored")
    ap.add_argument("--pairs", type=int, default=150, help="same-scene pairs drawn at random (seed 0)")
    ap.add_argument("--capabilities", nargs=2, default=["default", "avx2"])
    args = ap.parse_args()

    from scipy.stats import spearmanr

    from phyprobe.data.manifest import Manifest
    from phyprobe.eval.metrics import pairwise_accuracy

    m = Manifest.load(args.manifest)
    pairs = m.pairs[(m.pairs["correspondence"] == "same_scene") & (m.pairs["label"] != 0.5)]
    pairs = pairs.sample(n=min(args.pairs, len(pairs)), random_state=0)
    ids = sorted(set(pairs["a"]) | set(pairs["b"]))
    path = dict(zip(m.videos["id"], m.videos["path"]))
    with tempfile.TemporaryDirectory() as tmp:
        videos_file = Path(tmp) / "videos.json"
        videos_file.write_text(json.dumps([str(m.video_path(path[i])) for i in ids]))
        runs = [run_under(c, args.scorer, videos_file, Path(tmp) / f"{c}.json") for c in args.capabilities]

    raw = [dict(zip(ids, r["raw"])) for r in runs]
    diff = np.abs(np.array(runs[0]["raw"]) - np.array(runs[1]["raw"]))
    order = [np.sign(pairs["a"].map(r).to_numpy() - pairs["b"].map(r).to_numpy()) for r in raw]
    acc = [pairwise_accuracy(pairs["a"].map(r), pairs["b"].map(r), pairs["label"]) for r in raw]
    names = [r["capability"] for r in runs]
    print(f"{args.scorer} on {len(pairs)} same-scene pairs ({len(ids)} videos) of {args.manifest}")
    print(
        f"  videos whose raw score differs: {np.mean(diff > 0):.1%}; |difference| median {np.median(diff):.2e}, "
        f"max {diff.max():.2e}; Spearman between the two {spearmanr(runs[0]['raw'], runs[1]['raw'])[0]:.4f}"
    )
    print(f"  pairs whose order changes: {int(np.sum(order[0] != order[1]))} of {len(pairs)}")
    print(f"  same-scene accuracy (ties half): {names[0]} {acc[0]:.3f}, {names[1]} {acc[1]:.3f}")
    print(
        f"  seconds per video: {names[0]} {runs[0]['seconds'] / len(ids):.2f}, {names[1]} "
        f"{runs[1]['seconds'] / len(ids):.2f} ({runs[0]['seconds'] / runs[1]['seconds']:.2f}x)"
    )


if __name__ == "__main__":
    main()
