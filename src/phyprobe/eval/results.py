"""Figures as files: every finished run's headline figures in one long table (``results/*.csv``), their mean ± sd
over seeds, and the README's table rendered from it, so that a figure in the prose can be checked against a file.

A run is a training run (``metrics.json`` with ``benchmarks``: its held-out evaluation) or an ``eval.py`` run (with
``results``: one benchmark, possibly a build no run trains on). Each row is one benchmark of one run: same-scene
accuracy at the benchmark's severity threshold, its 95 % interval and n, the motion heuristic's figure on the same
pairs, and the paired margin over it, with the design, the seed and the build it was read on.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

FIGURE = "same_scene_accuracy_severity_ge_0.5"
COLUMNS = [
    "design",
    "role",
    "benchmark",
    "build",
    "seed",
    "value",
    "low",
    "high",
    "n",
    "motion",
    "margin",
    "margin_low",
    "margin_high",
]


def _read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _seed_and_build(run: Path) -> tuple[int | None, str | None, Path | None]:
    """(seed, build of an eval.py run, the training run it evaluated) from ``run_info.json``."""
    cfg = _read(run / "run_info.json")["config"]
    trained = Path(cfg["run"]) if cfg.get("run") else None
    if trained is not None and (trained / "run_info.json").is_file():
        seed = _read(trained / "run_info.json")["seed"]
    else:
        seed = cfg.get("seed")
    bench = cfg.get("benchmark") or {}
    return seed, Path(bench["manifest"]).name if bench.get("manifest") else None, trained


def _row(
    design: str, role: str, benchmark: str, build: str | None, seed, res: dict, motion: dict | None, margin: dict | None
) -> dict | None:
    leaf = (res.get("world") or {}).get(FIGURE)
    if not leaf or leaf.get("value") is None:
        return None
    m = ((motion or {}).get("world") or {}).get(FIGURE) or {}
    return {
        "design": design,
        "role": role,
        "benchmark": benchmark,
        "build": build,
        "seed": seed,
        "value": leaf["value"],
        "low": leaf.get("low"),
        "high": leaf.get("high"),
        "n": leaf.get("n"),
        "motion": m.get("value"),
        "margin": (margin or {}).get("value"),
        "margin_low": (margin or {}).get("low"),
        "margin_high": (margin or {}).get("high"),
    }


def run_rows(run: str | Path, design: str, role: str) -> list[dict]:
    """The rows of one run directory (see the module docstring)."""
    run = Path(run)
    m = _read(run / "metrics.json")
    seed, build, _ = _seed_and_build(run)
    rows = []
    if "benchmarks" in m:  # a training run: its own held-out benchmarks, on its own data
        data = Path(_read(run / "run_info.json")["config"]["data"]["source"].get("out_dir") or "").name or None
        for name, res in m["benchmarks"].items():
            rows.append(
                _row(
                    design,
                    role,
                    name,
                    data,
                    seed,
                    res,
                    (m.get("baselines") or {}).get("motion", {}).get(name),
                    (m.get("margins") or {}).get("motion", {}).get(name),
                )
            )
    else:
        rows.append(
            _row(
                design,
                role,
                m["benchmark"],
                build,
                seed,
                m["results"],
                (m.get("baselines") or {}).get("motion"),
                (m.get("margins") or {}).get("motion"),
            )
        )
    return [r for r in rows if r is not None]


def collect(runs: dict[tuple[str, str], list[str | Path]]) -> pd.DataFrame:
    """``{(design, role): run directories}`` -> the long table, one row per (run, benchmark)."""
    rows = [r for (design, role), dirs in runs.items() for d in dirs for r in run_rows(d, design, role)]
    return pd.DataFrame(rows, columns=COLUMNS)


def over_seeds(long: pd.DataFrame) -> pd.DataFrame:
    """Mean ± sd over seeds of each (design, role, benchmark, build): the figure, the heuristic's and the margin, the
    lowest interval start of the margin, and the seeds read."""
    g = long.groupby(["design", "role", "benchmark", "build"], sort=False, dropna=False)
    out = g.agg(
        mean=("value", "mean"),
        sd=("value", "std"),
        motion=("motion", "mean"),
        margin=("margin", "mean"),
        margin_sd=("margin", "std"),
        lowest_margin_low=("margin_low", "min"),
        n=("n", "first"),
        seeds=("seed", lambda s: " ".join(str(int(x)) for x in sorted(s.dropna()))),
    )
    return out.reset_index().fillna({"sd": 0.0, "margin_sd": 0.0})


def _cell(row: pd.Series | None) -> str:
    if row is None:
        return "—"
    seeds = row["seeds"].split()
    spread = f" ± {row['sd']:.3f}" if len(seeds) > 1 else f" (seed {seeds[0]})" if seeds else ""
    return f"{row['mean']:.3f}{spread}"


def headline_markdown(
    table: pd.DataFrame, rows: list[tuple[str, str, str, str]], designs: list[tuple[str, str]], baseline_of: str
) -> str:
    """The README's table: ``rows`` are (label, role, benchmark, build); a column per (design, header), then the motion
    heuristic on the same pairs (read from ``baseline_of``'s runs) and n."""
    index = {(r.design, r.role, r.benchmark, r.build): r for r in table.itertuples(index=False)}
    head = [
        "| | " + " | ".join(h for _, h in designs) + " | motion heuristic | n pairs |",
        "|---|" + "---|" * (len(designs) + 2),
    ]
    lines = []
    for label, role, bench, build in rows:
        cells = []
        for design, _ in designs:
            r = index.get((design, role, bench, build))
            cells.append(_cell(pd.Series(r._asdict())) if r is not None else "—")
        base = index.get((baseline_of, role, bench, build))
        motion = f"{base.motion:.3f}" if base is not None and pd.notna(base.motion) else "—"
        n = str(int(base.n)) if base is not None and pd.notna(base.n) else "—"
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {motion} | {n} |")
    return "\n".join(head + lines)


TABLE_START, TABLE_END = "<!-- results table: written by results/generate.py -->", "<!-- end of results table -->"


def readme_table(over: pd.DataFrame, spec: dict) -> str:
    """The README's table from the over-seeds table and its spec (``results/readme_table.json``: designs, rows,
    the design whose runs give the heuristic's column)."""
    return headline_markdown(
        over, [tuple(r) for r in spec["rows"]], [tuple(d) for d in spec["designs"]], spec["baseline_of"]
    )


def table_block(text: str) -> str | None:
    """The table between the README's markers (None without them)."""
    if TABLE_START not in text or TABLE_END not in text:
        return None
    return text[text.index(TABLE_START) + len(TABLE_START) : text.index(TABLE_END)].strip("\n")


def with_table(text: str, table: str) -> str:
    """``text`` with the table between its markers replaced by ``table``."""
    return text[: text.index(TABLE_START) + len(TABLE_START)] + "\n" + table + "\n" + text[text.index(TABLE_END) :]
