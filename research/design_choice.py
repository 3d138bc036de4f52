"""The default's per-step features chosen by transfer: every design's same-scene accuracy on the validation splits of
the training sources and on the builds no run trains on, beside the two zero-parameter baselines, and the rule.

Each design is a folder written by ``research/judge_design.py --seeds 0 --no-cross`` (its ``default/``,
``unseen_world/`` and ``unseen_footage/`` runs) plus ``val/<benchmark>-seed<s>/``, the run evaluated on each
training source's validation split (``eval.py run=RUN benchmark=B benchmark.split=val``). The rule, fixed before any
figure was read (the one the paper-pipeline study used): the highest mean of the five same-scene accuracies on the
2D, 3D and footage validation splits, the rigs world and the footage broken by kinds no build names. The marbles
world and the real clips from other sources are checks, read after the choice. No test split is read::

    python research/design_choice.py outputs/design/traj_mid outputs/design/traj_23 ... --out results/trajectory_design.csv
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

FIGURE = "same_scene_accuracy_severity_ge_0.5"
RULE = ["2D val", "3D val", "footage val", "rigs", "unseen kinds"]
COLUMNS = {
    "world_test": "2D val",
    "world3d_test": "3D val",
    "real_footage": "footage val",
    "rigs": "rigs",
    "real_footage_unseen_kinds": "unseen kinds",
    "marbles": "marbles",
    "real_footage_other_sources": "other sources",
    "real_footage_other_sources_unseen_kinds": "other sources, unseen kinds",
}


def _read(metrics: Path) -> dict | None:
    if not metrics.is_file():
        return None
    m = json.loads(metrics.read_text())
    out = {"value": m["results"]["world"][FIGURE]["value"], "n": m["results"]["world"][FIGURE]["n"]}
    for base in ("motion", "geophys"):
        b = (m.get("baselines") or {}).get(base)
        if b:
            out[base] = b["world"][FIGURE]["value"]
            margin = m["margins"][base]
            out[f"{base}_margin"], out[f"{base}_low"], out[f"{base}_high"] = (
                margin["value"],
                margin["low"],
                margin["high"],
            )
    return out


def design_rows(design: Path, seed: int = 0) -> list[dict]:
    """One row per (design, benchmark) of seed ``seed``."""
    rows = []
    for bench in ("world_test", "world3d_test", "real_footage"):
        r = _read(design / "val" / f"{bench}-seed{seed}" / "metrics.json")
        if r:
            rows.append({"design": design.name, "seed": seed, "benchmark": COLUMNS[bench], **r})
    for role in ("unseen_world", "unseen_footage"):
        for run in sorted((design / role).glob(f"*-seed{seed}")):
            m = json.loads((run / "metrics.json").read_text()) if (run / "metrics.json").is_file() else None
            r = _read(run / "metrics.json")
            if r and m:
                rows.append({"design": design.name, "seed": seed, "benchmark": COLUMNS[m["benchmark"]], **r})
    return rows


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("designs", nargs="+", type=Path)
    ap.add_argument("--seeds", nargs="+", type=int, default=[0])
    ap.add_argument("--out", type=Path, help="the long table as CSV (results/trajectory_design.csv)")
    args = ap.parse_args(argv)
    long = pd.DataFrame([r for d in args.designs for s in args.seeds for r in design_rows(d, s)])
    if args.out:
        long.to_csv(args.out, index=False, float_format="%.6g")
    wide = long.pivot_table(index="design", columns="benchmark", values="value", aggfunc="mean")
    order = [c for c in COLUMNS.values() if c in wide.columns]
    wide = wide[order]
    wide["rule mean"] = wide[[c for c in RULE if c in wide.columns]].mean(axis=1)
    pd.set_option("display.width", 250)
    print("same-scene accuracy at severity >= 0.5, raw scores, ties half credit; the rule: mean of", RULE)
    print(wide.sort_values("rule mean", ascending=False).round(3).to_string())
    base = long.groupby("benchmark")[["motion", "geophys"]].first().reindex(order)
    print("\nthe zero-parameter baselines on the same pairs:")
    print(base.round(3).to_string())


if __name__ == "__main__":
    main()
