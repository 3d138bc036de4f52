"""One table of several evaluations of the same benchmark: PhyProbe, judges, baselines, external CSVs.

Rows are the figures every run has (``value [low, high]``) followed by the cost rows; columns are the
evaluators, named as their ``metrics.json`` names them, with "(stand-in)" appended when the evaluator
was an offline stand-in, so a stand-in's figure can never be read as the real tool's.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd

from ..eval.protocols import flatten_metrics

COST_ROWS = (
    ("cost: model calls / video", "calls_per_video"),
    ("cost: tokens / video", None),
    ("cost: seconds / video", "seconds_per_video"),
)


def _cell(leaf: dict) -> str:
    v = leaf.get("value")
    if v is None:
        return "—"
    return f"{v:.3f} [{leaf['low']:.3f}, {leaf['high']:.3f}]" if leaf.get("low") is not None else f"{v:.3f}"


def _label(m: dict) -> str:
    name = str(m.get("evaluator"))
    return name if not m.get("standin") or "stand-in" in name else f"{name} (stand-in)"


def comparison_table(run_dirs: list[str | os.PathLike]) -> pd.DataFrame:
    """Figures shared by all runs (first run's order) plus cost rows, one column per evaluator."""
    runs = [json.loads((Path(d) / "metrics.json").read_text()) for d in run_dirs]
    benches = {m["benchmark"] for m in runs}
    if len(benches) > 1:
        raise ValueError(f"runs are on different benchmarks {sorted(benches)}: compare one benchmark at a time")
    flat = [flatten_metrics(m["results"]) for m in runs]
    shared = [k for k in flat[0] if all(k in f for f in flat[1:])]
    cols = [_label(m) for m in runs]
    if len(set(cols)) < len(cols):
        cols = [f"{c} ({Path(d).name})" for c, d in zip(cols, run_dirs)]
    rows = [{"figure": k, **{c: _cell(f[k]) for c, f in zip(cols, flat)}} for k in shared]
    for label, key in COST_ROWS:
        row = {"figure": label}
        for c, m in zip(cols, runs):
            cost = m.get("cost") or {}
            if key is None:
                p, q = cost.get("prompt_tokens_per_video"), cost.get("completion_tokens_per_video")
                val = None if p is None else p + (q or 0)
            else:
                val = cost.get(key)
            row[c] = "—" if val is None else f"{val:.4g}"
        rows.append(row)
    return pd.DataFrame(rows, columns=["figure", *cols])
