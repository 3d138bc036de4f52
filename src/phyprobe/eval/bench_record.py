"""Engineering benchmarks as a file: ``results/benchmarks.csv``, one row per (benchmark, figure), written by the
``bench/`` scripts run with ``--record`` (``make bench``). A benchmark run again replaces its own rows, so the file
holds each benchmark's latest figures with the code version and the cores they were measured on. Speed figures are
ratios measured in one run wherever the benchmark has a reference; absolute times move with the machine."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from ..config_files import SOURCE_ROOT
from ..runinfo import code_version

BENCHMARKS_CSV = SOURCE_ROOT / "results" / "benchmarks.csv"
COLUMNS = ["benchmark", "figure", "value", "unit", "version", "cores"]


def version_label() -> str:
    """The code a figure was measured with: ``package+commit`` (``-dirty`` with uncommitted changes)."""
    v = code_version()
    return v["package"] + (f"+{v['git_commit'][:10]}" if v["git_commit"] else "") + ("-dirty" if v["git_dirty"] else "")


def record_benchmark(benchmark: str, figures: dict[str, tuple[float, str]], path: Path = BENCHMARKS_CSV) -> Path:
    """Replace ``benchmark``'s rows of ``path`` with ``figures`` (``{figure: (value, unit)}``)."""
    version = version_label()
    rows = pd.DataFrame(
        [
            {"benchmark": benchmark, "figure": f, "value": float(val), "unit": unit, "version": version}
            for f, (val, unit) in figures.items()
        ],
        columns=COLUMNS,
    ).assign(cores=len(os.sched_getaffinity(0)))
    old = pd.read_csv(path) if path.is_file() else pd.DataFrame(columns=COLUMNS)
    table = pd.concat([old[old["benchmark"] != benchmark], rows], ignore_index=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    table.sort_values(["benchmark"], kind="stable").to_csv(path, index=False, float_format="%.6g")
    return path
