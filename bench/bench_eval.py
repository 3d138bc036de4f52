"""Evaluation cost: the bootstrap of AUROC, against scikit-learn's ``roc_auc_score``, in one run.

Every benchmark of a run bootstraps its AUROC figures 1,000 times for each scorer (the model and
every baseline), so the per-call cost of AUROC sets much of a run's evaluation time. This times
``bootstrap_ci`` of the project's rank-based AUROC and of scikit-learn's on the same resamples, checks
they agree, and prints the ratio. With ``--run``, it also times a whole run's evaluation
(``evaluate_run`` over the run's benchmarks, from its ``scores.csv``).

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
    out = {
        "videos": args.videos,
        "n_boot": args.n_boot,
        "seconds_rank_based": round(t_ours, 3),
        "seconds_sklearn": round(t_ref, 3),
        "speedup": round(t_ref / t_ours, 1),
    }
    if args.run is not None:
        out["run_evaluation_seconds"] = round(run_evaluation(args.run, args.n_boot), 1)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
