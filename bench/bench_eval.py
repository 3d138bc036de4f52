"""Evaluation cost: the bootstrap of AUROC and of a mean, in one run.

Every benchmark of a run bootstraps its figures 1,000 times for each scorer (the model and every
baseline), so the per-resample cost sets much of a run's evaluation time. This times ``bootstrap_ci`` of
the project's rank-based AUROC against scikit-learn's ``roc_auc_score``, and the batched bootstrap (all
resamples of a block at once: AUROC, and the mean that pairwise accuracy is) against the row-by-row
call, on the same resamples; checks they agree and prints the ratios. With ``--run``, it also times a
whole run's evaluation (``evaluate_run`` over the run's benchmarks, from its ``scores.csv``).

    python bench/bench_eval.py                       # 225 videos (a world test split), 1,000 resamples
    python bench/bench_eval.py --run outputs/demo    # and that run's evaluation
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from sklearn.metrics import roc_auc_score

from phyprobe.eval import metrics as M


def timed(fn, *args, **kwargs):
    t = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t


def run_evaluation(run: Path, n_boot: int) -> float:
    import pandas as pd
    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    from phyprobe.training.evaluation import evaluate_run, restrict_all

    cfg = OmegaConf.load(run / ".hydra" / "config.yaml")
    manifest = instantiate(cfg.data.source)
    scores = pd.read_csv(run / "scores.csv")
    restricted = restrict_all(manifest, cfg.eval.benchmarks)
    _, seconds = timed(evaluate_run, restricted, dict(zip(scores["id"], scores["raw_score"])), n_boot)
    return seconds


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--videos", type=int, default=225)
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--run", type=Path, default=None, help="a training run directory (with .hydra/ and scores.csv)")
    ap.add_argument("--record", action="store_true", help="write the figures to results/benchmarks.csv")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    y = rng.random(args.videos) < 0.6
    s = rng.normal(size=args.videos).round(2) + 0.3 * y  # rounded: ties, as raw scores of twins have
    ours, t_ours = timed(M.bootstrap_ci, M.auroc, y, s, n_boot=args.n_boot)
    # sklearn raises on a one-class resample, where the project's AUROC is nan (left out of the interval)
    ref, t_ref = timed(
        M.bootstrap_ci,
        lambda a, b: roc_auc_score(a, b) if 0 < a.sum() < len(a) else float("nan"),
        y,
        s,
        n_boot=args.n_boot,
    )
    if any(abs(ours[k] - ref[k]) > 1e-12 for k in ("value", "low", "high")):
        raise SystemExit(f"AUROC differs from scikit-learn's: {ours} vs {ref}")
    batched, t_batched = timed(M.bootstrap_ci, M.auroc_batched, y, s, n_boot=args.n_boot, batched=True)
    credit = (rng.random(args.videos) < 0.7).astype(float)  # per-pair credits: pairwise accuracy is their mean
    mean_rows, t_mean_rows = timed(M.bootstrap_ci, np.mean, credit, n_boot=args.n_boot)
    mean_batched, t_mean_batched = timed(
        M.bootstrap_ci, lambda v: v.mean(axis=1), credit, n_boot=args.n_boot, batched=True
    )
    if batched != ours or mean_batched != mean_rows:
        raise SystemExit("the batched bootstrap differs from the row-by-row one")
    out = {
        "videos": args.videos,
        "n_boot": args.n_boot,
        "seconds_rank_based": round(t_ours, 3),
        "seconds_sklearn": round(t_ref, 3),
        "speedup": round(t_ref / t_ours, 1),
        "seconds_auroc_batched": round(t_batched, 3),
        "speedup_auroc_batched": round(t_ours / t_batched, 1),
        "seconds_mean_row_by_row": round(t_mean_rows, 3),
        "seconds_mean_batched": round(t_mean_batched, 3),
        "speedup_mean_batched": round(t_mean_rows / t_mean_batched, 1),
    }
    if args.run is not None:
        out["run_evaluation_seconds"] = round(run_evaluation(args.run, args.n_boot), 1)
    print(json.dumps(out, indent=1))
    if args.record:
        from phyprobe.eval.bench_record import record_benchmark

        units = {"videos": "count", "n_boot": "count"}
        record_benchmark(
            "eval", {k: (v, units.get(k, "ratio" if k.startswith("speedup") else "s")) for k, v in out.items()}
        )


if __name__ == "__main__":
    main()
