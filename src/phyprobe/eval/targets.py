"""``phyprobe targets``: the figures the default is held to, read from finished runs and judged against their bounds.

The default is accepted on figures spread over many files: its own held-out scenes and margins (a training run's
``metrics.json``, one per seed), transfer across worlds (runs trained on one world, read on the other), and the
stand-ins for an independent holdout (``eval.py`` outputs on a world and on real footage no run trains on). This
collects them by role, aggregates each figure over the runs given (mean ± sd over seeds, with the first run's 95 %
interval; for margins the lowest interval start, since every seed's margin must clear 0), and says of each target
whether it is met, so that a new encoder (``backbone=vjepa2`` on a GPU, say) is judged by the same command as the
embedded default::

    phyprobe targets --default outputs/demo outputs/seeds/demo-s1 outputs/seeds/demo-s2 \\
        --cross outputs/cross/0 outputs/cross/1 ... \\
        --unseen-world outputs/eval/rigs/* --unseen-footage outputs/eval/real_footage_other_sources/*

A role's runs are told apart only by seed: the command stops when two runs of a role differ in anything else of
their configuration (paths and the progress bar aside), because a mean over two designs is no figure. Figures are
what the protocols computed (raw scores, ties half credit); nothing is recomputed here.
"""

from __future__ import annotations

import json
import operator
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..errors import InvalidOption, MissingInput
from ..runinfo import atomic_write_json

SEVERE = "same_scene_accuracy_severity_ge_0.5"
HELD_OUT_SCENES = ("world_test", "world3d_test")  # a training run's test scenes of each world
ROLES = {
    "default": "the default on its held-out scenes",
    "cross": "trained on one world, read on the other",
    "unseen_world": "a world no run trains on (the holdout's world pairs)",
    "unseen_footage": "real footage from sources the project does not ship (the holdout's footage pairs)",
}
SENSES = {">=": operator.ge, "<=": operator.le, ">": operator.gt}


@dataclass(frozen=True)
class Target:
    """One figure's bound. ``figure`` names a protocol figure, or ``margins.<baseline>`` for the paired margin over a
    baseline; ``low_above`` also asks every run's 95 % interval to start above that value."""

    role: str
    figure: str
    sense: str
    bound: float
    low_above: float | None = None
    every_benchmark: bool = False  # margins: on every benchmark the run has a margin for, not only the test scenes

    @property
    def baseline(self) -> str | None:
        """The baseline a margin target is over; None for a protocol figure."""
        return self.figure.split(".", 1)[1] if self.figure.startswith("margins.") else None

    @property
    def asked(self) -> str:
        text = f"{self.sense} {self.bound:g}"
        return text + (f", interval above {self.low_above:g}" if self.low_above is not None else "")


TARGETS = (
    Target("default", SEVERE, ">=", 0.90),
    Target("default", "cross_scene_accuracy", ">=", 0.80),
    Target("default", "auroc_plausible_vs_violated", ">=", 0.80),
    Target("default", "real_real_median_gap", "<=", 0.10),
    Target("default", "median_score_plausible", "<=", 0.15),
    Target("default", "median_score_severity_ge_0.8", ">=", 0.6),
    Target("default", "margins.surprisal_max", ">=", 0.15, low_above=0.0, every_benchmark=True),
    Target("default", "margins.motion", ">", 0.0, low_above=0.0, every_benchmark=True),
    Target("cross", SEVERE, ">=", 0.80),
    Target("cross", "auroc_plausible_vs_violated", ">=", 0.75),
    Target("unseen_world", SEVERE, ">=", 0.75),
    Target("unseen_world", "margins.motion", ">", 0.0, low_above=0.0),
    Target("unseen_footage", SEVERE, ">=", 0.80),
    Target("unseen_footage", "margins.motion", ">", 0.0, low_above=0.0),
)
SEEDS_ASKED = 3
IGNORED_CONFIG = ("paths.", "seed", "trainer.enable_progress_bar", "extract.num_workers", "n_boot", "report")


@dataclass(frozen=True)
class RunFigures:
    """One finished run or evaluation, read once: where it came from, its figures by benchmark, its margins."""

    path: Path
    kind: str  # "train" (train.py's metrics.json) or "eval" (eval.py's)
    figures: dict  # benchmark -> {figure: {value, low, high, n}}
    margins: dict  # baseline -> benchmark -> {value, low, high, n}
    distribution: dict  # benchmark -> "in" | "out" | "out: ..."
    build: str  # the manifest an eval read (its build), or "" for a training run
    config: dict


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise InvalidOption(f"{path}: not JSON ({e})") from e


def read_run(path: str | Path) -> RunFigures:
    """A run directory (or its ``metrics.json``) as :class:`RunFigures`; a file that is no run's ends in one error."""
    path = Path(path)
    run_dir = path.parent if path.name == "metrics.json" else path
    metrics_file = run_dir / "metrics.json"
    if not metrics_file.is_file():
        raise MissingInput(f"{run_dir}: no metrics.json (not a finished train.py or eval.py run)")
    m = _read_json(metrics_file)
    info_file = run_dir / "run_info.json"
    config = _read_json(info_file).get("config", {}) if info_file.is_file() else {}
    if "benchmarks" in m:
        figures = {name: res["world"] for name, res in m["benchmarks"].items() if "world" in res}
        return RunFigures(run_dir, "train", figures, m.get("margins", {}), m.get("distribution", {}), "", config)
    if "benchmark" in m and "world" in m.get("results", {}):
        name = m["benchmark"]
        margins = {base: {name: margin} for base, margin in m.get("margins", {}).items()}
        build = str(config.get("benchmark", {}).get("manifest") or name)
        return RunFigures(run_dir, "eval", {name: m["results"]["world"]}, margins, {name: "out"}, build, config)
    raise InvalidOption(
        f"{metrics_file}: neither a training run's metrics (no 'benchmarks') nor an evaluation of a "
        "twin-pair benchmark (no 'benchmark' with 'results.world')"
    )


def _benchmarks(run: RunFigures, role: str) -> list[str]:
    """The benchmarks a role judges this run on."""
    if role in ("default", "cross") and run.kind != "train":
        raise InvalidOption(f"{run.path}: --{role} takes training runs (train.py's output), not an evaluation")
    if role == "default":
        return [b for b in HELD_OUT_SCENES if b in run.figures]
    if role == "cross":
        out = [b for b in HELD_OUT_SCENES if str(run.distribution.get(b, "in")).startswith("out") and b in run.figures]
        if not out:
            raise InvalidOption(
                f"{run.path}: no world's test scenes are 'out' of its training, so it is no cross-world "
                f"run (distribution: {run.distribution})"
            )
        return out
    if run.kind != "eval":
        raise InvalidOption(
            f"{run.path}: --{role.replace('_', '-')} takes eval.py outputs (one benchmark each), not a training run"
        )
    return list(run.figures)


def _design(config: dict, skip: tuple[str, ...]) -> dict:
    """A run's configuration without what names or places the run (its own output directory in any value)."""
    flat = pd.json_normalize(config).iloc[0].to_dict() if config else {}
    own = str(flat.get("paths.output_dir") or "\0")
    return {
        k: ("<run dir>" + v[len(own) :] if isinstance(v, str) and v.startswith(own) else v)
        for k, v in flat.items()
        if not k.startswith(skip)
    }


def check_one_design(runs: list[RunFigures], role: str) -> None:
    """Stop when a role's runs differ by more than their seed (for evaluations: by more than the evaluator and seed)."""
    skip = IGNORED_CONFIG + (("run", "scorer") if role.startswith("unseen") else ())
    flats = [_design(r.config, skip) for r in runs]
    if role.startswith("unseen"):  # evaluations of several builds are expected; the evaluator's design is the run's
        flats = [{k: v for k, v in f.items() if not k.startswith("benchmark.")} for f in flats]
    for r, f in zip(runs[1:], flats[1:]):
        keys = sorted(k for k in set(f) | set(flats[0]) if f.get(k) != flats[0].get(k))
        if role == "cross":  # the two directions differ by the world they train on
            keys = [k for k in keys if k not in ("data.train_sources",)]
        if keys:
            raise InvalidOption(
                f"{r.path}: differs from {runs[0].path} in {', '.join(keys[:6])}"
                f"{' ...' if len(keys) > 6 else ''}; one role's runs may differ by seed only"
            )


def _leaf(run: RunFigures, target: Target, bench: str) -> dict | None:
    if target.baseline:
        return run.margins.get(target.baseline, {}).get(bench)
    return run.figures.get(bench, {}).get(target.figure)


def judge(roles: dict[str, list[str | Path]]) -> pd.DataFrame:
    """One row per target and benchmark (and build): the runs' mean ± sd, the first run's interval, the lowest
    interval start where the target asks for one, and whether it is met. ``roles`` maps a role of :data:`ROLES` to its run directories; a role given no runs is left out."""
    unknown = sorted(set(roles) - set(ROLES))
    if unknown:
        raise InvalidOption(f"unknown role(s) {unknown}; known: {sorted(ROLES)}")
    rows = []
    for role, paths in roles.items():
        if not paths:
            continue
        runs = [read_run(p) for p in paths]
        check_one_design(runs, role)
        judged_on = [_benchmarks(run, role) for run in runs]
        for target in (t for t in TARGETS if t.role == role):
            cells: dict[tuple[str, str], list[dict]] = {}
            for run, benches in zip(runs, judged_on):
                if target.every_benchmark:
                    benches = sorted(run.margins.get(target.baseline, {}))
                for bench in benches:
                    leaf = _leaf(run, target, bench)
                    if leaf is not None and leaf.get("value") is not None:
                        cells.setdefault((bench, run.build), []).append(leaf)
            if not cells:
                rows.append(
                    dict(
                        role=role,
                        figure=target.figure,
                        benchmark="-",
                        build="",
                        asked=target.asked,
                        runs=0,
                        mean=None,
                        sd=None,
                        low=None,
                        first_interval=None,
                        n=None,
                        met=None,
                    )
                )
            for (bench, build), leaves in cells.items():
                values = [leaf["value"] for leaf in leaves]
                lows = [leaf.get("low") for leaf in leaves]
                mean = float(pd.Series(values).mean())
                met = SENSES[target.sense](mean, target.bound)
                low = None
                if target.low_above is not None:  # every run's interval must start above the value
                    low = min((x for x in lows if x is not None), default=None)
                    met = met and low is not None and low > target.low_above
                rows.append(
                    dict(
                        role=role,
                        figure=target.figure,
                        benchmark=bench,
                        build=build,
                        asked=target.asked,
                        runs=len(values),
                        mean=mean,
                        sd=float(pd.Series(values).std(ddof=1)) if len(values) > 1 else None,
                        low=low,
                        first_interval=(leaves[0].get("low"), leaves[0].get("high")),
                        n=leaves[0].get("n"),
                        met=bool(met),
                    )
                )
    return pd.DataFrame(
        rows,
        columns=[
            "role",
            "figure",
            "benchmark",
            "build",
            "asked",
            "runs",
            "mean",
            "sd",
            "low",
            "first_interval",
            "n",
            "met",
        ],
    )


def as_markdown(table: pd.DataFrame) -> str:
    def measured(r) -> str:
        if r["runs"] == 0:
            return "not reported by these runs"
        text = f"{r['mean']:.3f}" + (f" ± {r['sd']:.3f}" if r["sd"] is not None and pd.notna(r["sd"]) else "")
        if r["low"] is not None and pd.notna(r["low"]):
            return text + f", lowest interval start {r['low']:+.3f}"
        low, high = r["first_interval"]
        return text + (f" [{low:.3f}, {high:.3f}]" if low is not None and high is not None else "")

    shown = pd.DataFrame(
        {
            "role": table["role"],
            "figure": table["figure"],
            "benchmark": [b + (f" ({build})" if build else "") for b, build in zip(table["benchmark"], table["build"])],
            "asked": table["asked"],
            "measured": table.apply(measured, axis=1),
            "runs": table["runs"],
            "n": table["n"],
            "met": table["met"].map({True: "yes", False: "no"}).fillna("-"),
        }
    )
    return shown.to_markdown(index=False)


def tally(table: pd.DataFrame) -> tuple[int, int]:
    """(met, not met); a target no run reported is neither."""
    return int(table["met"].eq(True).sum()), int(table["met"].eq(False).sum())


def write_json(table: pd.DataFrame, path: str | Path) -> Path:
    return atomic_write_json(path, table.astype(object).where(table.notna(), None).to_dict(orient="records"))


def add_cli(sub) -> None:
    p = sub.add_parser("targets", help="judge finished runs against the targets the default is held to")
    for role, text in ROLES.items():
        p.add_argument(f"--{role.replace('_', '-')}", nargs="+", default=[], type=Path, metavar="RUN", help=text)
    p.add_argument("--json", type=Path, help="also write the table here (atomically)")
    p.add_argument("--strict", action="store_true", help="exit 1 when a target is not met")
    p.set_defaults(func=_cli)


def _cli(args) -> int:
    roles = {role: getattr(args, role) for role in ROLES}
    if not any(roles.values()):
        raise InvalidOption("give the runs to judge: " + ", ".join(f"--{r.replace('_', '-')}" for r in ROLES))
    table = judge(roles)
    print(as_markdown(table))
    trained = table[table["role"].isin(["default", "cross"]) & (table["runs"] > 0)]
    few = trained[trained["runs"] < SEEDS_ASKED].groupby(["role", "benchmark"])["runs"].min()
    if len(few):
        print(
            f"\nnote: the targets ask for {SEEDS_ASKED} seeds of a design (of each direction across worlds); "
            "fewer here: " + ", ".join(f"{role} {bench}: {n}" for (role, bench), n in few.items())
        )
    met, unmet = tally(table)
    print(f"\n{met} met, {unmet} not met")
    if args.json:
        write_json(table, args.json)
    return 1 if args.strict and unmet else 0
