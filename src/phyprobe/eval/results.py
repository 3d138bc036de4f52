"""Figures as files: every finished run's headline figures in one long table (``results/*.csv``), their mean ± sd
over seeds, and the README's table rendered from it, so that a figure in the prose can be checked against a file.

A run is a training run (``metrics.json`` with ``benchmarks``: its held-out evaluation) or an ``eval.py`` run (with
``results``: one benchmark, possibly a build no run trains on). Each row is one benchmark of one run: same-scene
accuracy at the benchmark's severity threshold, its 95 % interval and n, the motion heuristic's figure on the same
pairs and the paired margin over it, GeoPhys's (the training-free trajectory-geometry baseline) and the margin over
it, with the design, the seed and the build it was read on. Runs made before GeoPhys was a baseline leave its
columns empty.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..io.json_input import BadJsonInput, load_json_input

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
    "geophys",
    "geophys_margin",
    "geophys_margin_low",
    "geophys_margin_high",
]
# baseline -> the prefix of its columns (the motion heuristic's keep the names they had before GeoPhys joined)
BASELINE_COLUMNS = {"motion": "", "geophys": "geophys_"}


def _read(path: Path) -> dict:
    d = load_json_input(path, path.name)
    if not isinstance(d, dict):
        raise BadJsonInput(f"{path}: expected a JSON object")
    return d


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
    design: str, role: str, benchmark: str, build: str | None, seed, res: dict, baselines: dict, margins: dict
) -> dict | None:
    """``baselines`` / ``margins``: baseline name -> its results / the paired margin over it, on this benchmark."""
    leaf = (res.get("world") or {}).get(FIGURE)
    if not leaf or leaf.get("value") is None:
        return None
    row = {
        "design": design,
        "role": role,
        "benchmark": benchmark,
        "build": build,
        "seed": seed,
        "value": leaf["value"],
        "low": leaf.get("low"),
        "high": leaf.get("high"),
        "n": leaf.get("n"),
    }
    for name, prefix in BASELINE_COLUMNS.items():
        base = (((baselines.get(name) or {}).get("world")) or {}).get(FIGURE) or {}
        margin = margins.get(name) or {}
        row[name] = base.get("value")
        for key in ("value", "low", "high"):
            row[f"{prefix}margin" + ("" if key == "value" else f"_{key}")] = margin.get(key)
    return row


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
                    {b: (m.get("baselines") or {}).get(b, {}).get(name) for b in BASELINE_COLUMNS},
                    {b: (m.get("margins") or {}).get(b, {}).get(name) for b in BASELINE_COLUMNS},
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
                {b: (m.get("baselines") or {}).get(b) for b in BASELINE_COLUMNS},
                {b: (m.get("margins") or {}).get(b) for b in BASELINE_COLUMNS},
            )
        )
    return [r for r in rows if r is not None]


def collect(runs: dict[tuple[str, str], list[str | Path]]) -> pd.DataFrame:
    """``{(design, role): run directories}`` -> the long table, one row per (run, benchmark)."""
    rows = [r for (design, role), dirs in runs.items() for d in dirs for r in run_rows(d, design, role)]
    return pd.DataFrame(rows, columns=COLUMNS)


def with_designs_kept(long: pd.DataFrame, previous: pd.DataFrame) -> pd.DataFrame:
    """``long`` with ``previous``'s rows of every design ``long`` does not have. Runs are large and stay where they
    ran; ``results/default.csv`` is the record, so a design measured on another machine keeps its figures when the
    table is written again from the runs on this one."""
    kept = previous[~previous["design"].isin(set(long["design"]))]
    return pd.concat([kept, long], ignore_index=True) if len(long) else kept.reset_index(drop=True)


def over_seeds(long: pd.DataFrame) -> pd.DataFrame:
    """Mean ± sd over seeds of each (design, role, benchmark, build): the figure, each baseline's (the motion heuristic,
    GeoPhys) and the margin over it, the lowest interval start of that margin, and the seeds read."""
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
        geophys=("geophys", "mean"),
        geophys_margin=("geophys_margin", "mean"),
        geophys_margin_sd=("geophys_margin", "std"),
        lowest_geophys_margin_low=("geophys_margin_low", "min"),
    ).reset_index()
    out["geophys_margin_sd"] = out["geophys_margin_sd"].where(
        out["geophys_margin"].isna(), out["geophys_margin_sd"].fillna(0.0)
    )
    return out.fillna({"sd": 0.0, "margin_sd": 0.0})


def _cell(row: pd.Series | None) -> str:
    if row is None:
        return "—"
    seeds = row["seeds"].split()
    spread = f" ± {row['sd']:.3f}" if len(seeds) > 1 else f" (seed {seeds[0]})" if seeds else ""
    return f"{row['mean']:.3f}{spread}"


def headline_markdown(
    table: pd.DataFrame,
    rows: list[tuple[str, str, str, str]],
    designs: list[tuple[str, str]],
    baseline_of: str | list[str],
) -> str:
    """The README's table: ``rows`` are (label, role, benchmark, build); a column per (design, header), then the motion
    heuristic on the same pairs (read from ``baseline_of``'s runs: of several designs, the first that has the row),
    GeoPhys beside it when those runs measured it, and n."""
    index = {(r.design, r.role, r.benchmark, r.build): r for r in table.itertuples(index=False)}
    order = [baseline_of] if isinstance(baseline_of, str) else list(baseline_of)
    bases = [
        next((index[(d, role, bench, build)] for d in order if (d, role, bench, build) in index), None)
        for _, role, bench, build in rows
    ]

    def figure(base, name: str) -> str:
        value = getattr(base, name, None) if base is not None else None
        return f"{value:.3f}" if value is not None and pd.notna(value) else "—"

    shown = ["motion"] + (["geophys"] if any(figure(b, "geophys") != "—" for b in bases) else [])
    headers = {"motion": "motion heuristic", "geophys": "GeoPhys"}
    head = [
        "| | " + " | ".join(h for _, h in designs) + "".join(f" | {headers[b]}" for b in shown) + " | n pairs |",
        "|---|" + "---|" * (len(designs) + len(shown) + 1),
    ]
    lines = []
    for (label, role, bench, build), base in zip(rows, bases):
        cells = []
        for design, _ in designs:
            r = index.get((design, role, bench, build))
            cells.append(_cell(pd.Series(r._asdict())) if r is not None else "—")
        cells += [figure(base, b) for b in shown]
        n = str(int(base.n)) if base is not None and pd.notna(base.n) else "—"
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {n} |")
    return "\n".join(head + lines)


def detail_markdown(over: pd.DataFrame) -> str:
    """Every (design, role, benchmark, build): the figure, the heuristic's, the margin over it and its lowest interval
    start over the seeds read; GeoPhys's and the margin over it beside them when any run measured it."""
    geophys = "geophys" in over and over["geophys"].notna().any()
    extra = " GeoPhys | margin over it (lowest interval start) |" if geophys else ""
    lines = [
        "| design | role | benchmark (build) | same-scene acc. | motion heuristic | margin over it (lowest interval start) |"
        + extra
        + " seeds |",
        "|---|---|---|---|---|---|" + ("---|---|" if geophys else "") + "---|",
    ]

    def margin(value, low) -> str:
        return "—" if pd.isna(value) else f"{value:+.3f} ({low:+.3f})"

    for r in over.itertuples(index=False):
        acc = f"{r.mean:.3f}" + (f" ± {r.sd:.3f}" if len(str(r.seeds).split()) > 1 else "")
        motion = "—" if pd.isna(r.motion) else f"{r.motion:.3f}"
        cells = [
            f"{r.design}",
            r.role,
            f"{r.benchmark} ({r.build})",
            acc,
            motion,
            margin(r.margin, r.lowest_margin_low),
        ]
        if geophys:
            cells += [
                "—" if pd.isna(r.geophys) else f"{r.geophys:.3f}",
                margin(r.geophys_margin, r.lowest_geophys_margin_low),
            ]
        lines.append("| " + " | ".join(cells) + f" | {r.seeds} |")
    return "\n".join(lines)


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
