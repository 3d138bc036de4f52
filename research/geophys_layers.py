"""GeoPhys's readout layer, chosen as the paper chooses it: the largest plausible-versus-violated curvature gap on a
held-out split, here the validation splits of the training sources (never a test split).

For every layer of a trajectory encoder (by default the one the trajectory design study encodes once: the
EfficientNet-Lite0 stages at strides 4-32 and its final map, at 112 px squashed), this prints on each benchmark's
validation split the mean curvature gap (violated minus plausible, in radians) and, beside it, the zero-parameter
GeoPhys score (:func:`phyprobe.baselines.geophys.geophys_score`) read at that layer: its same-scene accuracy at
severity >= 0.5 and its AUROC of plausible against violated clips. The features come from the feature cache (one
extraction per manifest, shared with the design study's runs)::

    python research/geophys_layers.py --benchmarks world_test world3d_test real_footage
"""

from __future__ import annotations

import argparse
import dataclasses

import pandas as pd

from phyprobe.baselines.geophys import curvature_gaps, scores_from_features
from phyprobe.encoders import from_config
from phyprobe.eval.protocols import load_benchmark
from phyprobe.features.extract import extract_features
from phyprobe.io.video import ClipSpec

FRAMES = {"name": "efficientnet_lite0", "image_size": 112, "weights": "package", "resize": "squash"}
SEVERE = "same_scene_accuracy_severity_ge_0.5"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--benchmarks", nargs="+", default=["world_test", "world3d_test", "real_footage"])
    ap.add_argument("--split", default="val", help="the held-out split the layer is chosen on")
    ap.add_argument("--layers", nargs="+", type=int, default=[1, 2, 3, 4, -1])
    ap.add_argument("--grids", nargs="+", type=int, default=[1, 2, 4], help="the wide encoder's grids (cache key)")
    ap.add_argument("--cache-dir", default=".cache/features")
    ap.add_argument("--num-frames", type=int, default=32)
    args = ap.parse_args(argv)
    encoder = from_config("trajectory", frames=FRAMES, layers=args.layers, grids=args.grids)
    rows = []
    for name in args.benchmarks:
        bench = dataclasses.replace(load_benchmark(name), split=[args.split])
        manifest = bench.load_manifest()
        cache = extract_features(manifest, encoder, ClipSpec(args.num_frames), args.cache_dir)
        ids = set(manifest.videos["id"])
        feats = {s["id"]: s["feats"] for s in cache.iter_samples() if s["id"] in ids}
        variant = {v: (m or {}).get("variant") for v, m in zip(manifest.videos["id"], manifest.videos["metadata"])}
        plausible = {v: k == "plausible" for v, k in variant.items() if k in ("plausible", "violated")}
        gaps = dict(curvature_gaps(feats, encoder, plausible))
        for pos, layer in enumerate(encoder.layers):
            scores = scores_from_features(feats, encoder.columns(pos, 0), order=encoder.order)
            world = bench.evaluate(scores, manifest=manifest, n_boot=0)["world"]
            rows.append(
                {
                    "benchmark": name,
                    "layer": layer,
                    "curvature gap (rad)": gaps[layer],
                    "geophys same-scene acc.": world[SEVERE]["value"],
                    "geophys AUROC": world["auroc_plausible_vs_violated"]["value"],
                    "n pairs": world[SEVERE]["n"],
                }
            )
    df = pd.DataFrame(rows)
    pd.set_option("display.width", 200)
    print(df.round(3).to_string(index=False))
    mean_gap = df.groupby("layer", sort=False)["curvature gap (rad)"].mean()
    print("\nmean curvature gap over the benchmarks, per layer:")
    print(mean_gap.round(4).to_string())
    print(f"chosen layer (largest mean gap): {mean_gap.idxmax()}")


if __name__ == "__main__":
    main()
