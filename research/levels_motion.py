"""How far each of flow_stats' levels follows the amount of motion, on the plausible clips of each source.

A level is meant as evidence of one event (a region that stops dead, a change no motion explains). Where it
rises with how much a plausible scene moves, it is also a measure of motion, and then it ranks every violation
that takes motion away (a body that stops, a support that holds) below its plausible twin, and every one that
adds motion above, whatever the event it was meant for. This prints, per manifest and source, the Spearman
correlation over plausible clips between each level's clip mean (over steps and cells) and the clip's mean flow
magnitude (``mag_mean``), read at the scorer's own flow options with every optional level on:

    python research/levels_motion.py outputs/demo data/rigs-s0-n200 data/worlds-s1-n200-200

``--dynamics CKPT ...`` adds each dynamics model's clip-mean |prediction error| (``evidence_kinds.py --beside``'s
``abs``), e.g. the demo's forecaster beside a model that fills a masked step in (``predictor.after``):

    python research/levels_motion.py outputs/demo data/rigs-s0-n200 --dynamics outputs/demo/dynamics .cache/dynamics/infill3

The features go to the feature cache (one extraction per manifest, the one ``evidence_kinds.py --level`` makes).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
from evidence_kinds import Beside, levels_encoder
from scipy.stats import spearmanr

from phyprobe.data.manifest import Manifest
from phyprobe.encoders.dynamics import plausible_mask
from phyprobe.encoders.motion import LEVEL_STATS
from phyprobe.features.extract import extract_features
from phyprobe.scorer import Scorer


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", type=Path, help="a run directory (its scorer/ is read) or a scorer directory")
    ap.add_argument("manifests", nargs="+")
    ap.add_argument("--cache-dir", default=".cache/features")
    ap.add_argument(
        "--dynamics",
        type=Path,
        nargs="+",
        default=[],
        help="dynamics checkpoints whose clip-mean |prediction error| to correlate with the motion too",
    )
    args = ap.parse_args(argv)

    scorer = Scorer.from_pretrained(args.run / "scorer" if (args.run / "scorer").is_dir() else args.run)
    encoder = levels_encoder(scorer)  # the scorer's flow options, every level on
    levels = [s for s in LEVEL_STATS if s in encoder.stats]
    models = {f"errors:{ckpt}": Beside(ckpt, "abs", args.cache_dir) for ckpt in args.dynamics}
    rows = []
    for root in args.manifests:
        manifest = Manifest.load(root)
        manifest = manifest.keep(plausible_mask(manifest.videos))
        feats = extract_features(manifest, encoder, scorer.clip, args.cache_dir).load(manifest.videos["id"])
        means = pd.DataFrame(
            {
                stat: {v: float(np.asarray(f)[:, encoder.columns(stat)].mean()) for v, f in feats.items()}
                for stat in ("mag_mean", *levels)
            }
        )
        for name, model in models.items():
            means[name] = pd.Series(model.raw(manifest))
        means["source"] = manifest.videos.set_index("id")["source"].reindex(means.index)
        for source, g in means.groupby("source"):
            rows.append(
                {
                    "manifest": root,
                    "source": source,
                    "n": len(g),
                    **{stat: spearmanr(g[stat], g["mag_mean"])[0] for stat in (*levels, *models)},
                }
            )
    print(
        "Spearman correlation of each level (and dynamics model's error) with the clip's mean flow magnitude, "
        "plausible clips"
    )
    print(pd.DataFrame(rows).round(2).to_string(index=False))


if __name__ == "__main__":
    main()
