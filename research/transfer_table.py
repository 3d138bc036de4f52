"""Same-scene accuracy of several runs on the builds no run trains on, with the mean and sd over the runs.

The figures that choose and check the default come from builds no run trains on: the two worlds drawn at
other seeds (new scenes of known worlds), the marbles and rigs worlds (worlds of their own: rigs to choose
unseen-world evidence on, marbles to check it), the footage broken by kinds no build trains on, and real clips the
project does not ship (``o*``: the kinds trained on, ``ou*``: the unseen kinds; their clips are fetched by
``data_prep/footage_sources.py``). This scores
every run given (e.g. one configuration at seeds 0-2) on each and prints one row per run and, when several runs
are given, their mean ± sd:

    python research/transfer_table.py outputs/demo outputs/seeds/demo-s1 outputs/seeds/demo-s2 --builds s1 s2 m0 m1

Same-scene accuracy at severity >= 0.5 as each benchmark's protocol computes it (what `eval.py` reports), raw
scores, ties half credit, every split of each build pooled.
Every build is drawn on first use: the worlds at seeds 1-3 (200 scenes of each world, with the footage) as

    python -c "from phyprobe.data.sources import worlds; worlds('data/worlds-s1-n200-200', seed=1, \\
        planar={'engine': 'planar', 'num_scenes': 200}, world3d={'engine': 'world3d', 'num_scenes': 200, 'include_real': False})"

draws them (about 5 minutes each on 2 cores), the others by their benchmarks.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import pandas as pd

from phyprobe.data.sources import worlds
from phyprobe.eval.protocols import load_benchmark
from phyprobe.eval.run import scorer_scores

WORLDS = ["world_test", "world3d_test", "real_footage_unseen"]
EVERY_SPLIT = ["train", "val", "test"]
# name -> (manifest, benchmarks, splits or None for the benchmark's own, build seed or None for the benchmark's own)
BUILDS = {
    "s1": ("data/worlds-s1-n200-200", WORLDS, EVERY_SPLIT, None),
    "s2": ("data/worlds-s2-n200-200", WORLDS, EVERY_SPLIT, None),
    "s3": ("data/worlds-s3-n200-200", WORLDS, EVERY_SPLIT, None),
    "m0": ("data/marbles-s0-n200", ["marbles"], None, 0),
    "m1": ("data/marbles-s1-n200", ["marbles"], None, 1),
    "r0": ("data/rigs-s0-n200", ["rigs"], None, 0),
    "r1": ("data/rigs-s1-n200", ["rigs"], None, 1),
    "r2": ("data/rigs-s2-n200", ["rigs"], None, 2),
    "u0": ("data/footage-unseen-kinds-s0-n60", ["real_footage_unseen_kinds"], None, 0),
    "u1": ("data/footage-unseen-kinds-s1-n60", ["real_footage_unseen_kinds"], None, 1),
    "u2": ("data/footage-unseen-kinds-s2-n60", ["real_footage_unseen_kinds"], None, 2),
    "o0": ("data/footage-other-sources-s0-n100", ["real_footage_other_sources"], None, 0),
    "o1": ("data/footage-other-sources-s1-n100", ["real_footage_other_sources"], None, 1),
    "ou0": ("data/footage-other-sources-unseen-kinds-s0-n100", ["real_footage_other_sources_unseen_kinds"], None, 0),
    "ou1": ("data/footage-other-sources-unseen-kinds-s1-n100", ["real_footage_other_sources_unseen_kinds"], None, 1),
}
WORLD_SEEDS = {"s1": 1, "s2": 2, "s3": 3}  # builds of both worlds that no run trains on, drawn here if missing
SHORT = {
    "world_test": "2D",
    "world3d_test": "3D",
    "real_footage_unseen": "footage",
    "marbles": "marbles",
    "rigs": "rigs",
    "real_footage_unseen_kinds": "footage, unseen kinds",
    "real_footage_other_sources": "other footage",
    "real_footage_other_sources_unseen_kinds": "other footage, unseen kinds",
}
FIGURE = "same_scene_accuracy_severity_ge_0.5"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", type=Path, help="run directories (their scorer/ is read) or scorer directories")
    ap.add_argument("--builds", nargs="+", choices=sorted(BUILDS), default=sorted(BUILDS))
    ap.add_argument("--cache-dir", default=".cache/features")
    args = ap.parse_args(argv)

    table: dict[str, dict[str, float]] = {str(r): {} for r in args.runs}
    sizes = {}
    for tag in args.builds:
        root, benches, splits, seed = BUILDS[tag]
        if tag in WORLD_SEEDS and not (Path(root) / "videos.jsonl").is_file():
            worlds(
                root,
                seed=WORLD_SEEDS[tag],
                planar={"engine": "planar", "num_scenes": 200},
                world3d={"engine": "world3d", "num_scenes": 200, "include_real": False},
            )
        for name in benches:
            bench = load_benchmark(name)
            changes = {"manifest": root, **({"split": splits} if splits else {})}
            if seed is not None and bench.build is not None:
                changes["build"] = {**bench.build, "seed": seed}
            bench = dataclasses.replace(bench, **changes)
            manifest = bench.load_manifest()
            column = f"{tag} {SHORT[name]}"
            for run in args.runs:
                scorer = run / "scorer" if (run / "scorer").is_dir() else run
                scores = scorer_scores(scorer, manifest, args.cache_dir, {})
                figure = bench.evaluate(scores, manifest=manifest, n_boot=0)["world"][FIGURE]
                table[str(run)][column], sizes[column] = figure["value"], figure["n"]
    df = pd.DataFrame(table).T
    if len(df) > 1:
        df.loc["mean"], df.loc["sd"] = df.mean(), df.std(ddof=1)
    df.loc["n pairs"] = pd.Series(sizes)
    pd.set_option("display.width", 250)
    print("same-scene accuracy at severity >= 0.5, raw scores, ties half credit")
    print(df.round(3).to_string())


if __name__ == "__main__":
    main()
