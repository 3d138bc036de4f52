"""Converting a synthetic VideoGen-RewardBench-shaped set of 100k and 400k pairs: time and peak memory.

Twelve generators per prompt and every pair of them (66 pairs per prompt), as the published CSV is
laid out; the videos exist as empty files (converters reference videos, they never decode them).
Each conversion runs in its own process so that its peak resident memory is its own; the import
baseline (Python, pandas, phyprobe) is measured the same way and reported beside it. Then the 400k
manifest is loaded as training loads it (validation, pair index arrays) to show what that costs.

    PYTHONPATH=src python bench/bench_convert.py [--sizes 100000 400000] [--workdir /tmp/bench_convert]
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

MODELS = [f"model{i:02d}" for i in range(12)]

CONVERT = """
import json, resource, sys, time
from phyprobe.data.datasets import prepare
t = time.perf_counter()
if sys.argv[1] != "-":
    prepare("videogen_rewardbench", sys.argv[1], sys.argv[2], check_counts=False)
print(json.dumps({"seconds": time.perf_counter() - t, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

LOAD = """
import json, resource, sys, time
from phyprobe.data.manifest import Manifest
from phyprobe.training.data import pair_arrays
t = time.perf_counter()
m = Manifest.load(sys.argv[1])
row_of = {v: i for i, v in enumerate(m.videos["id"])}
idx, lab, w = pair_arrays(m.pairs, row_of)
print(json.dumps({"seconds": time.perf_counter() - t, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "pairs": len(idx), "videos": len(m.videos)}))
"""


def write_synthetic(root: Path, num_pairs: int) -> None:
    """The published CSV's columns, one row per pair, prompts of 66 pairs; empty files as videos."""
    import pandas as pd

    root.mkdir(parents=True, exist_ok=True)
    combos = list(itertools.combinations(MODELS, 2))
    prompts = -(-num_pairs // len(combos))
    for m in MODELS:
        d = root / "videos" / m
        d.mkdir(parents=True, exist_ok=True)
        for p in range(prompts):
            (d / f"{m}_{p:06d}.mp4").touch()
    rows = [(p, a, b) for p in range(prompts) for a, b in combos][:num_pairs]
    df = pd.DataFrame(rows, columns=["p", "A_model", "B_model"])
    df["path_A"] = "videos/" + df["A_model"] + "/" + df["A_model"] + "_" + df["p"].map("{:06d}".format) + ".mp4"
    df["path_B"] = "videos/" + df["B_model"] + "/" + df["B_model"] + "_" + df["p"].map("{:06d}".format) + ".mp4"
    df["prompt"] = "Static camera, a metal ball rolls on a smooth tabletop, take " + df["p"].astype(str)
    labels = ["A", "B", "same"]
    for k, dim in enumerate(("VQ", "MQ", "TA", "Overall")):
        df[dim] = [labels[(i + k) % 3] for i in range(len(df))]
    for s in ("A", "B"):
        df[f"fps_{s}"], df[f"num_frames_{s}"] = 24.0, 121
    cols = [
        "path_A",
        "path_B",
        "A_model",
        "B_model",
        "prompt",
        "VQ",
        "MQ",
        "TA",
        "Overall",
        "fps_A",
        "num_frames_A",
        "fps_B",
        "num_frames_B",
    ]
    df[cols].to_csv(root / "videogen-rewardbench.csv", index=False)


def run(code: str, *args: str) -> dict:
    out = subprocess.run([sys.executable, "-c", code, *args], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[100_000, 400_000])
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/bench_convert"))
    args = ap.parse_args()
    shutil.rmtree(args.workdir, ignore_errors=True)
    base = run(CONVERT, "-", "-")
    print(f"import baseline: peak {base['peak_mb']:.0f} MB")
    results = {}
    for n in args.sizes:
        raw = args.workdir / f"raw_{n}"
        t = time.perf_counter()
        write_synthetic(raw, n)
        made = time.perf_counter() - t
        r = run(CONVERT, str(raw), str(args.workdir / f"out_{n}"))
        results[n] = r
        print(
            f"{n:>8,d} pairs: convert {r['seconds']:.1f} s, peak {r['peak_mb']:.0f} MB "
            f"(+{r['peak_mb'] - base['peak_mb']:.0f} MB over the import baseline); synthetic set written in {made:.1f} s"
        )
    if len(args.sizes) >= 2:
        lo, hi = args.sizes[0], args.sizes[-1]
        grow = (results[hi]["peak_mb"] - base["peak_mb"]) / max(1e-9, results[lo]["peak_mb"] - base["peak_mb"])
        print(
            f"size x{hi / lo:.0f}: time x{results[hi]['seconds'] / results[lo]['seconds']:.2f}, "
            f"peak memory x{results[hi]['peak_mb'] / results[lo]['peak_mb']:.2f} (above baseline x{grow:.2f})"
        )
    big = args.sizes[-1]
    r = run(LOAD, str(args.workdir / f"out_{big}"))
    print(
        f"training-side load of the {big:,d}-pair manifest (validate + pair index arrays): {r['seconds']:.1f} s, "
        f"peak {r['peak_mb']:.0f} MB, {r['pairs']:,d} pairs over {r['videos']:,d} videos"
    )
    shutil.rmtree(args.workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
