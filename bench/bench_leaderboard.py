"""Leaderboard statistics at benchmark scale: 20 generators x 1,000 prompts from cached per-video scores.

Times, in one run, the paired statistics (10,000 bootstrap resamples of the prompts: means, every pairwise
difference with Holm, win rates, rank intervals, Bradley-Terry strengths) and the whole ``phyprobe leaderboard``
path from cached scores (read the generations manifest and the score file, build the board with a two-value group
breakdown, write the md / csv / json and the plots), against the 30 s budget; and the share of the statistics
spent fitting Bradley-Terry once per resample.

    python bench/bench_leaderboard.py            # 20 x 1,000, 10,000 resamples
    python bench/bench_leaderboard.py --record   # and write the figures to results/benchmarks.csv
"""

from __future__ import annotations

import argparse
import csv
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from phyprobe.eval.paired import paired_statistics
from phyprobe.leaderboard import build_leaderboard, csv_column, read_generations
from phyprobe.leaderboard.report import write_outputs

BUDGET_S = 30.0


def timed(fn, *args, **kwargs):
    t = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--generators", type=int, default=20)
    ap.add_argument("--prompts", type=int, default=1000)
    ap.add_argument("--n-boot", type=int, default=10_000)
    ap.add_argument("--record", action="store_true", help="write the figures to results/benchmarks.csv")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    g, p = args.generators, args.prompts
    scores = rng.beta(2, 3, (p, 1)) + rng.gamma(2, 0.1, (p, g)) + np.linspace(0, 0.05, g)
    names = [f"gen{i:02d}" for i in range(g)]

    _, t_stats = timed(paired_statistics, scores, names, n_boot=args.n_boot)
    _, t_no_bt = timed(paired_statistics, scores, names, n_boot=args.n_boot, strengths=False)

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        with open(tmp / "gens.jsonl", "w") as f:
            for j in range(p):
                for i, n in enumerate(names):
                    row = {"generator": n, "prompt_id": f"p{j:04d}", "video": f"{n}/p{j:04d}.mp4"}
                    f.write(json.dumps({**row, "difficulty": "hard" if j % 3 == 0 else "easy"}) + "\n")
        with open(tmp / "scores.csv", "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["video", "score"])
            w.writerows((f"{n}/p{j:04d}", scores[j, i]) for j in range(p) for i, n in enumerate(names))

        def whole():
            gens = read_generations(tmp / "gens.jsonl")
            col = csv_column("cached", tmp / "scores.csv", gens)
            board = build_leaderboard(gens, [col], n_boot=args.n_boot)
            write_outputs(board, tmp / "out")
            return board

        board, t_whole = timed(whole)
    assert len(board["evaluators"]["cached"]["stats"]["systems"]) == g
    print(f"{g} generators x {p} prompts, {args.n_boot} resamples")
    print(
        f"paired statistics:                 {t_stats:6.2f} s  ({t_stats / BUDGET_S:.2f} of the {BUDGET_S:.0f} s budget)"
    )
    print(f"  of which Bradley-Terry fits:     {t_stats - t_no_bt:6.2f} s  ({(t_stats - t_no_bt) / t_stats:.2f})")
    print(f"whole leaderboard, cached scores:  {t_whole:6.2f} s  ({t_whole / BUDGET_S:.2f} of the budget)")
    if args.record:
        from phyprobe.eval.bench_record import record_benchmark

        print(
            record_benchmark(
                "leaderboard",
                {
                    f"paired statistics, {g} gens x {p} prompts x {args.n_boot} resamples": (t_stats, "s"),
                    "paired statistics: share of the 30 s budget": (t_stats / BUDGET_S, "ratio"),
                    "Bradley-Terry share of the statistics": ((t_stats - t_no_bt) / t_stats, "ratio"),
                    "whole leaderboard from cached scores (read, stats, breakdown, md/csv/json, plots)": (t_whole, "s"),
                    "whole leaderboard: share of the 30 s budget": (t_whole / BUDGET_S, "ratio"),
                },
            )
        )


if __name__ == "__main__":
    main()
