"""The dynamics model's own prediction error as a violation score, with no head: how far it transfers.

Scores every video of a manifest by a statistic over steps (``--statistic``: mean, the default backbone's
pooling, or max) of its mean |next-step prediction error| (the ``dynamics`` encoder's features with
``--normalise`` as the encoder scales them, averaged over features), and evaluates the named benchmarks on that
score with the project's protocols. ``--level NAME`` scores by a level instead (a base statistic the head
reads beside the errors, such as flow_stats' ``stopped``, averaged over cells), to see what it ranks alone.
The base features are read from the base encoder's feature cache (filled by ``train.py backbone=<base>`` or
``train_dynamics.py``), so this costs seconds; the encoder reads them in the same (float16) precision.

    python research/dynamics_surprise.py .cache/dynamics/flow_stats data/world-s0-n200 \\
        --benchmarks world_test world_heldout_family world_heldout_style real_footage
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import torch
from omegaconf import OmegaConf

from phyprobe.data.manifest import Manifest
from phyprobe.encoders.dynamics import NORMALISATIONS, DynamicsEncoder, load_checkpoint
from phyprobe.eval.protocols import load_benchmark
from phyprobe.features.cache import FeatureCache
from phyprobe.io.video import ClipSpec

CONFIGS = Path(__file__).resolve().parents[1] / "configs" / "benchmark"
FIGURES = ("same_scene_accuracy_severity_ge_0.5", "auroc_plausible_vs_violated", "cross_scene_accuracy")
STATISTICS = {"mean": lambda e: e.mean(), "max": lambda e: e.max()}


def step_errors(encoder: DynamicsEncoder, feats: np.ndarray, columns: slice = slice(None)) -> torch.Tensor:
    """(T - context - after,) the mean of the encoder's error ``columns`` at each step its model predicts, from one
    clip's cached base features; the first ``context`` and last ``after`` steps only repeat an error and are left out."""
    p = encoder.predictor
    err = encoder.derive(torch.from_numpy(feats))
    return err[p.context : len(err) - p.after, columns].mean(-1)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("checkpoint", type=Path)
    ap.add_argument("manifest", type=Path)
    ap.add_argument("--cache", type=Path, default=Path(".cache/features"))
    ap.add_argument(
        "--benchmarks", nargs="+", default=["world_test", "world_heldout_family", "world_heldout_style", "real_footage"]
    )
    ap.add_argument(
        "--split",
        nargs="+",
        default=None,
        help="evaluate every benchmark on these splits (one or more) instead of its own",
    )
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument(
        "--statistic",
        choices=sorted(STATISTICS),
        default="mean",
        help="over steps: mean (what flow_dynamics pools) or max (a single surprising step)",
    )
    ap.add_argument(
        "--normalise",
        choices=NORMALISATIONS,
        default="none",
        help="the encoder's scaling of the errors by the clip's own motion",
    )
    ap.add_argument(
        "--level",
        default=None,
        help="score by this base statistic (a level, e.g. stopped) averaged over cells, not by the errors",
    )
    ap.add_argument(
        "--by-family", action="store_true", help="also same-scene accuracy per violation family (all severities)"
    )
    args = ap.parse_args()
    base, predictor, _ = load_checkpoint(args.checkpoint)
    cfg = json.loads((args.checkpoint / "config.json").read_text())
    m = Manifest.load(args.manifest)
    cache = FeatureCache(args.cache, base.describe(), ClipSpec(**cfg["clip"]), m.root, "float16")
    feats = cache.load(m.videos["id"])
    missing = set(m.videos["id"]) - set(feats)
    if missing:
        raise SystemExit(
            f"{cache.dir}: {len(missing)} videos of {args.manifest} have no cached {base.name} features; "
            f"run train.py backbone={base.name} on this manifest first"
        )
    levels = [args.level] if args.level else []
    encoder = DynamicsEncoder(base, predictor.eval(), include_base=False, normalise=args.normalise, levels=levels)
    stat = STATISTICS[args.statistic]
    # errors are read at the predicted steps only (step_errors); a level (the last column) is measured at every
    # step, and read there as the head reads it
    evidence = (lambda f: encoder.derive(torch.from_numpy(f))[:, -1]) if levels else (lambda f: step_errors(encoder, f))
    scores = {v: float(stat(evidence(f))) for v, f in feats.items()}
    for name in args.benchmarks:
        b = dict(OmegaConf.to_container(OmegaConf.load(CONFIGS / f"{name}.yaml")))
        if args.split:
            b["split"] = args.split  # a list, one split or several: load_benchmark takes either
        bench = load_benchmark(b)
        sub = bench.restrict(m)
        res = bench.evaluate({v: scores[v] for v in sub.videos["id"]}, manifest=sub, n_boot=args.n_boot)["world"]
        cells = [
            f"{k} {res[k]['value']:.3f} [{res[k]['low']:.3f}, {res[k]['high']:.3f}] n={res[k]['n']}"
            for k in FIGURES
            if k in res and res[k].get("value") is not None
        ]
        print(f"{name}: " + "; ".join(cells))
        if args.by_family:
            fam = res["same_scene_accuracy_by_family"]
            print(
                "  by family: "
                + ", ".join(f"{f} {v['value']:.2f} (n={v['n']})" for f, v in fam.items() if v.get("value") is not None)
            )


if __name__ == "__main__":
    main()
