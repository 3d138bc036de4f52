"""Which form of the dynamics model's errors to weight: chosen on validation splits, within and across worlds.

For each world's dynamics model (fitted on that world's plausible training clips, e.g. by a
``cross_2d_to_3d`` run or ``train_dynamics.py``) and each variant of the ``dynamics`` encoder's output
(``abs``: |error|; ``signed``: over- and under-predicted parts apart; ``normalised``: |error| relative to
the clip's own motion, per feature; ``signed_normalised``: both; ``flow_dynamics`` uses ``signed``), a monotone
head (the default's: non-negative weights on the standardised time-mean, ``PhyProbeHead(kind="monotone")``)
is fitted with the Bradley–Terry ranking loss on the same-scene pairs of that world's ``train`` split,
then scored on the ``val`` split of every world.
Test splits are never read. The head here ranks only (no L_mag, no L_cal), so its figures are for
comparing variants, not the pipeline's.

    python research/dynamics_variants.py data/worlds-s0-n300-300 \\
        --models world=outputs/<cross_2d_to_3d run>/dynamics world3d=outputs/<cross_3d_to_2d run>/dynamics

Prints same-scene accuracy on val at severity >= 0.5 and over all severities (ties half credit).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from phyprobe.data.manifest import Manifest
from phyprobe.encoders.dynamics import DynamicsEncoder, load_checkpoint
from phyprobe.eval.protocols import load_benchmark
from phyprobe.features.cache import FeatureCache
from phyprobe.head import PhyProbeHead
from phyprobe.io.video import ClipSpec

VARIANTS = {
    "abs": {},
    "signed": {"signed": True},
    "normalised": {"normalise": "feature_motion"},
    "signed_normalised": {"signed": True, "normalise": "feature_motion"},
}
FIGURES = ("same_scene_accuracy_severity_ge_0.5", "same_scene_accuracy")


def fit_head(feats: dict[str, torch.Tensor], pairs, steps: int, seed: int) -> PhyProbeHead:
    torch.manual_seed(seed)
    ids = sorted(set(pairs["a"]) | set(pairs["b"]))
    row = {v: i for i, v in enumerate(ids)}
    x = torch.stack([feats[v] for v in ids])
    head = PhyProbeHead(x.shape[-1], stats=("mean",), kind="monotone")
    head.fit_normalisation(x)
    a = torch.tensor([row[v] for v in pairs["a"]])
    b = torch.tensor([row[v] for v in pairs["b"]])
    y = torch.tensor(pairs["label"].to_numpy(), dtype=torch.float32)
    opt = torch.optim.Adam(head.parameters(), lr=0.05)
    for _ in range(steps):
        s = head(x)
        loss = F.binary_cross_entropy_with_logits(s[a] - s[b], y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return head.eval()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("manifest", type=Path)
    ap.add_argument("--models", nargs="+", required=True, help="SOURCE=CHECKPOINT_DIR, one per training world")
    ap.add_argument("--variants", nargs="+", choices=sorted(VARIANTS), default=list(VARIANTS))
    ap.add_argument("--cache", type=Path, default=Path(".cache/features"))
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    m = Manifest.load(args.manifest)
    models = dict(s.split("=", 1) for s in args.models)
    val = {}
    for source in models:
        bench = load_benchmark(
            {
                "name": f"{source}_val",
                "manifest": str(args.manifest),
                "split": "val",
                "where": {"source": source},
                "protocol": "world",
                "kwargs": {"severe": 0.5, "obvious": 0.8},
            }
        )
        val[source] = (bench, bench.restrict(m))
    loaded = {}  # each model and its base features are read once, then derived per variant
    for source, ck in models.items():
        base, predictor, _ = load_checkpoint(ck)
        clip = ClipSpec(**json.loads((Path(ck) / "config.json").read_text())["clip"])
        stored = FeatureCache(args.cache, base.describe(), clip, m.root, "float16").load(m.videos["id"])
        p = m.pairs
        train = p[(p["source"] == source) & (p["split"] == "train") & (p["correspondence"] == "same_scene")]
        missing = (set(train["a"]) | set(train["b"])) - set(stored)
        if missing:
            raise SystemExit(
                f"{len(missing)} training videos of {source} have no cached {base.name} features in {args.cache}"
            )
        loaded[source] = (base, predictor.eval(), stored, train)
    for variant in args.variants:
        cells = []
        for source, (base, predictor, stored, train) in loaded.items():
            enc = DynamicsEncoder(base, predictor, include_base=False, **VARIANTS[variant])
            feats = {v: enc.derive(torch.from_numpy(f)) for v, f in stored.items()}
            head = fit_head(feats, train, args.steps, args.seed)
            with torch.no_grad():
                for target, (bench, sub) in val.items():
                    ids = list(sub.videos["id"])
                    scores = dict(zip(ids, head(torch.stack([feats[v] for v in ids])).numpy().astype(float)))
                    res = bench.evaluate(scores, manifest=sub, n_boot=1)["world"]
                    cells.append(f"{source}->{target} " + "/".join(f"{res[k]['value']:.3f}" for k in FIGURES))
        print(f"{variant:10s} | " + " | ".join(cells), flush=True)
    sizes = {s: int(np.sum(sub.pairs["correspondence"] == "same_scene")) for s, (_, sub) in val.items()}
    print(
        "cells: trained on -> val of; same-scene accuracy at severity >= 0.5 / all severities; same-scene val pairs: "
        + ", ".join(f"{s} {n}" for s, n in sizes.items())
    )


if __name__ == "__main__":
    main()
