"""``phyprobe summarize SWEEP_DIR``: collect a Hydra multirun's runs into one table with intervals.

Each run is named by its Hydra overrides (``experiment=no_cal,seed=1``), so the table reads as the
ablation it came from. Writes ``summary.csv`` (long: run, benchmark, metric, value, low, high, n),
``summary.md`` (wide, headline figures) and ``ablation_bars.png``. When runs differ by ``seed``, an arm
is the runs that differ only by it, and ``summary.md`` also gets mean ± sd (min, max) over each arm's
seeds: one test set's bootstrap interval says nothing about how much a figure moves with the seed.
A run's margins over its baselines (``metrics.json`` → ``margins``) are figures like any other, named
``margins.<baseline>.<benchmark>``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import yaml

from ..errors import MissingInput
from ..io.json_input import BadJsonInput, load_json_input
from .report import ablation_bars, summary_table

DEFAULT_FIGURES = (
    "world_test.world.same_scene_accuracy_severity_ge_0.5",
    "world_test.world.cross_scene_accuracy",
    "world_test.world.gen_gen_accuracy",
    "world_test.world.auroc_plausible_vs_violated",
    "world_test.world.score_range.share_outside_01",
    "world_test.world.score_range.p99",
    "world_heldout_family.world.same_scene_accuracy_severity_ge_0.5",
    "world_quality.quality.quality_outscores_violation_severity_ge_0.5",
)


def _overrides(run_dir: Path) -> list[str]:
    ov = run_dir / ".hydra" / "overrides.yaml"
    items = yaml.safe_load(ov.read_text()) if ov.is_file() else []
    return [o for o in items or [] if not o.startswith(("hydra.", "paths."))]


def run_names(run_dirs: list[Path]) -> list[str]:
    """Each run named by the overrides that tell it apart (those shared by every run are dropped)."""
    overrides = [_overrides(r) for r in run_dirs]
    shared = set.intersection(*(set(o) for o in overrides)) if overrides else set()
    names = [",".join(o for o in ov if o not in shared) or r.name for ov, r in zip(overrides, run_dirs)]
    return names if len(set(names)) == len(names) else [r.name for r in run_dirs]


def collect(sweep_dir: str | Path) -> pd.DataFrame:
    runs = sorted(p.parent for p in Path(sweep_dir).rglob("metrics.json") if (p.parent / "run_info.json").is_file())
    if not runs:
        raise MissingInput(f"{sweep_dir}: no finished runs (no metrics.json beside a run_info.json)")
    results = {}
    for name, r in zip(run_names(runs), runs):
        m = load_json_input(r / "metrics.json", "run's metrics.json")
        if not isinstance(m, dict) or not isinstance(m.get("benchmarks"), dict):
            raise BadJsonInput(f"{r / 'metrics.json'}: not a train.py run's metrics (no 'benchmarks' object)")
        margins = m.get("margins") if isinstance(m.get("margins"), dict) else None
        results[name] = {**m["benchmarks"], **({"margins": margins} if margins else {})}
    return summary_table(results)


def arm_of(run: str) -> str:
    """The run's name without its ``seed=N`` override (the arm it is a seed of)."""
    return ",".join(o for o in run.split(",") if not re.fullmatch(r"seed=\d+", o)) or "(all)"


def over_seeds(head: pd.DataFrame) -> pd.DataFrame | None:
    """Arm x figure cells "mean ± sd (min, max) n=seeds", or None when no arm has two seeds."""
    arms = head.assign(arm=head["run"].map(arm_of))
    if arms.groupby("arm")["run"].nunique().max() < 2:
        return None
    g = arms.groupby(["arm", "metric"], sort=False)["value"]
    stats = g.agg(["mean", "std", "min", "max", "count"]).reset_index()
    stats["cell"] = stats.apply(
        lambda r: (
            f"{r['mean']:.3f} ± {0.0 if pd.isna(r['std']) else r['std']:.3f} "
            f"({r['min']:.3f}, {r['max']:.3f}) n={int(r['count'])}"
        ),
        axis=1,
    )
    return stats.pivot(index="metric", columns="arm", values="cell").reindex(list(dict.fromkeys(head["metric"])))


def summarize(sweep_dir: str | Path, figures: tuple[str, ...] = DEFAULT_FIGURES) -> pd.DataFrame:
    sweep_dir = Path(sweep_dir)
    long = collect(sweep_dir)
    long.to_csv(sweep_dir / "summary.csv", index=False)
    head = long[long["metric"].isin(figures)]
    if not head.empty:
        cell = head.apply(
            lambda r: f"{r.value:.3f} [{r.low:.3f}, {r.high:.3f}]" if pd.notna(r.low) else f"{r.value:.3f}", axis=1
        )
        wide = head.assign(cell=cell).pivot(index="run", columns="metric", values="cell")
        wide = wide[[f for f in figures if f in wide.columns]]
        text = wide.to_markdown() + "\n"
        seeds = over_seeds(head)
        if seeds is not None:
            text += "\nOver seeds (mean ± sd (min, max) n=seeds):\n\n" + seeds.to_markdown() + "\n"
        (sweep_dir / "summary.md").write_text(text)
        ablation_bars(head, sweep_dir / "ablation_bars.png")
    return long


def add_cli(sub) -> None:
    p = sub.add_parser("summarize", help="collect a multirun's metrics into one table with intervals and bar plots")
    p.add_argument("sweep_dir", type=Path, help="a sweep's folder (python train.py -m ...): every run under it")
    p.add_argument("--figure", action="append", help="flattened metric name to show (repeatable)")
    p.set_defaults(func=_cli)


def _cli(args) -> int:
    long = summarize(args.sweep_dir, tuple(args.figure) if args.figure else DEFAULT_FIGURES)
    print(f"{long['run'].nunique()} runs -> {args.sweep_dir / 'summary.csv'}, summary.md, ablation_bars.png")
    md = args.sweep_dir / "summary.md"
    if md.exists():
        print(md.read_text())
    return 0
