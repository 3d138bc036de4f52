"""``phyprobe table``: one design's figures across seeds, worlds and builds no run trains on, read from finished runs.

A design is judged on figures spread over many files: its own held-out scenes and margins (a training run's
``metrics.json``, one per seed), transfer across worlds (runs trained on one world, read on the other), and builds no
run trains on (``eval.py`` outputs on an unseen world and on real footage the project does not ship). This collects
them by role and aggregates each figure over the runs given: mean ± sd over seeds, the first run's 95 % interval,
and for margins over a baseline the lowest interval start of any seed. A new encoder (``backbone=vjepa2`` on a GPU,
say) is read by the same command as the embedded default::

    phyprobe table --default outputs/demo outputs/seeds/demo-s1 outputs/seeds/demo-s2 \\
        --cross outputs/cross/0 outputs/cross/1 ... \\
        --unseen-world outputs/eval/rigs/* --unseen-footage outputs/eval/real_footage_other_sources/* \\
        --require 'unseen_world:same_scene_accuracy_severity_ge_0.5>=0.75' --require 'default:margins.motion.low>0'

There are no bounds of the project's making: ``--require ROLE:FIGURE(>=|<=|>)VALUE`` states one of yours (a
``.low`` suffix reads the lowest interval start instead of the mean), and the command exits 1 when one is not met.
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
class Figure:
    """A figure the table reads for a role: a protocol figure, or ``margins.<baseline>`` for the paired margin over a
    baseline (on every benchmark the run has a margin for when ``every_benchmark``)."""

    role: str
    figure: str
    every_benchmark: bool = False

    @property
    def baseline(self) -> str | None:
        """The baseline a margin is over; None for a protocol figure."""
        return self.figure.split(".", 1)[1] if self.figure.startswith("margins.") else None


FIGURES = (
    Figure("default", SEVERE),
    Figure("default", "cross_scene_accuracy"),
    Figure("default", "auroc_plausible_vs_violated"),
    Figure("default", "real_real_median_gap"),
    Figure("default", "median_score_plausible"),
    Figure("default", "median_score_severity_ge_0.8"),
    Figure("default", "margins.surprisal_max", every_benchmark=True),
    Figure("default", "margins.motion", every_benchmark=True),
    Figure("default", "margins.geophys", every_benchmark=True),
    Figure("cross", SEVERE),
    Figure("cross", "auroc_plausible_vs_violated"),
    Figure("unseen_world", SEVERE),
    Figure("unseen_world", "margins.motion"),
    Figure("unseen_world", "margins.geophys"),
    Figure("unseen_footage", SEVERE),
    Figure("unseen_footage", "margins.motion"),
    Figure("unseen_footage", "margins.geophys"),
)


@dataclass(frozen=True)
class Requirement:
    """A user's bound: ``ROLE:FIGURE(>=|<=|>)VALUE``; ``FIGURE.low`` bounds the lowest interval start of any run."""

    role: str
    figure: str
    sense: str
    bound: float
    on_low: bool = False

    @classmethod
    def parse(cls, text: str) -> "Requirement":
        import re

        m = re.fullmatch(r"\s*(\w+):([\w.]+?)(\.low)?\s*(>=|<=|>)\s*(-?[\d.]+(?:e-?\d+)?)\s*", text)
        if not m or m.group(1) not in ROLES:
            raise InvalidOption(
                f"--require {text!r}: expected ROLE:FIGURE(>=|<=|>)VALUE with ROLE one of {sorted(ROLES)}, "
                "e.g. 'unseen_world:same_scene_accuracy_severity_ge_0.5>=0.75'"
            )
        return cls(m.group(1), m.group(2), m.group(4), float(m.group(5)), bool(m.group(3)))

    @property
    def asked(self) -> str:
        return f"{'lowest interval start ' if self.on_low else ''}{self.sense} {self.bound:g}"


IGNORED_CONFIG = ("paths.", "seed", "trainer.enable_progress_bar", "extract.num_workers", "n_boot", "report")
# what a run is compared against, not what it is: runs made before a baseline joined (GeoPhys) stay one design
IGNORED_CONFIG += ("eval.baselines", "eval.geophys.", "margins_over")


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


def _leaf(run: RunFigures, figure: Figure, bench: str) -> dict | None:
    if figure.baseline:
        return run.margins.get(figure.baseline, {}).get(bench)
    return run.figures.get(bench, {}).get(figure.figure)


COLUMNS = ["role", "figure", "benchmark", "build", "runs", "mean", "sd", "low", "first_interval", "n", "asked", "met"]


def table(roles: dict[str, list[str | Path]], requirements: tuple[Requirement, ...] = ()) -> pd.DataFrame:
    """One row per figure and benchmark (and build) of each role: the runs' mean ± sd, the lowest interval start of
    any run, the first run's interval and n, and, where a requirement names the figure, what it asks and whether it is
    met. ``roles`` maps a role of :data:`ROLES` to its run directories; a role given no runs is left out."""
    unknown = sorted(set(roles) - set(ROLES))
    if unknown:
        raise InvalidOption(f"unknown role(s) {unknown}; known: {sorted(ROLES)}")
    rows = []
    for role, paths in roles.items():
        if not paths:
            continue
        runs = [read_run(p) for p in paths]
        check_one_design(runs, role)
        read_on = [_benchmarks(run, role) for run in runs]
        for figure in (f for f in FIGURES if f.role == role):
            cells: dict[tuple[str, str], list[dict]] = {}
            for run, benches in zip(runs, read_on):
                if figure.every_benchmark:
                    benches = sorted(run.margins.get(figure.baseline, {}))
                for bench in benches:
                    leaf = _leaf(run, figure, bench)
                    if leaf is not None and leaf.get("value") is not None:
                        cells.setdefault((bench, run.build), []).append(leaf)
            for (bench, build), leaves in cells.items():
                values = [leaf["value"] for leaf in leaves]
                lows = [leaf.get("low") for leaf in leaves if leaf.get("low") is not None]
                rows.append(
                    dict(
                        role=role,
                        figure=figure.figure,
                        benchmark=bench,
                        build=build,
                        runs=len(values),
                        mean=float(pd.Series(values).mean()),
                        sd=float(pd.Series(values).std(ddof=1)) if len(values) > 1 else None,
                        low=min(lows) if lows else None,
                        first_interval=(leaves[0].get("low"), leaves[0].get("high")),
                        n=leaves[0].get("n"),
                        asked=None,
                        met=None,
                    )
                )
    out = pd.DataFrame(rows, columns=COLUMNS)
    for req in requirements:
        hit = (out["role"] == req.role) & (out["figure"] == req.figure)
        if not hit.any():
            raise InvalidOption(
                f"--require {req.role}:{req.figure}: these runs report no such figure for that role "
                f"(it reads: {', '.join(sorted({f.figure for f in FIGURES if f.role == req.role}))})"
            )
        for i in out.index[hit]:
            value = out.at[i, "low"] if req.on_low else out.at[i, "mean"]
            out.at[i, "asked"] = req.asked
            out.at[i, "met"] = bool(value is not None and pd.notna(value) and SENSES[req.sense](value, req.bound))
    return out


def as_markdown(table: pd.DataFrame) -> str:
    def measured(r) -> str:
        text = f"{r['mean']:.3f}" + (f" ± {r['sd']:.3f}" if r["sd"] is not None and pd.notna(r["sd"]) else "")
        low, high = r["first_interval"]
        text += f" [{low:.3f}, {high:.3f}]" if low is not None and high is not None else ""
        if r["figure"].startswith("margins.") and r["low"] is not None and pd.notna(r["low"]):
            text += f", lowest interval start {r['low']:+.3f}"
        return text

    shown = pd.DataFrame(
        {
            "role": table["role"],
            "figure": table["figure"],
            "benchmark": [b + (f" ({build})" if build else "") for b, build in zip(table["benchmark"], table["build"])],
            "mean ± sd [first run's interval]": table.apply(measured, axis=1),
            "runs": table["runs"],
            "n": table["n"],
        }
    )
    if table["asked"].notna().any():
        shown["asked"] = table["asked"].fillna("")
        shown["met"] = table["met"].map({True: "yes", False: "no"}).fillna("")
    return shown.to_markdown(index=False)


def unmet(table: pd.DataFrame) -> int:
    """How many rows a requirement asked for and did not get."""
    return int(table["met"].eq(False).sum())


def write_json(table: pd.DataFrame, path: str | Path) -> Path:
    return atomic_write_json(path, table.astype(object).where(table.notna(), None).to_dict(orient="records"))


def add_cli(sub) -> None:
    p = sub.add_parser("table", help="one design's figures over seeds, across worlds and on builds no run trains on")
    for role, text in ROLES.items():
        p.add_argument(f"--{role.replace('_', '-')}", nargs="+", default=[], type=Path, metavar="RUN", help=text)
    p.add_argument(
        "--require",
        action="append",
        default=[],
        metavar="ROLE:FIGURE>=VALUE",
        help="a bound of yours (repeat; FIGURE.low for the lowest interval start); exit 1 when one is not met",
    )
    p.add_argument("--json", type=Path, help="also write the table here (atomically)")
    p.set_defaults(func=_cli)


def _cli(args) -> int:
    roles = {role: getattr(args, role) for role in ROLES}
    if not any(roles.values()):
        raise InvalidOption("give the runs to read: " + ", ".join(f"--{r.replace('_', '-')}" for r in ROLES))
    if args.json:  # before any work: a file of the user's is never replaced
        from ..io.owned import check_owned, json_records_with

        check_owned(args.json, json_records_with("role", "figure", "benchmark"), "design table (JSON)")
    out = table(roles, tuple(Requirement.parse(r) for r in args.require))
    print(as_markdown(out))
    if args.require:
        print(f"\n{unmet(out)} of the rows you asked about are not met")
    if args.json:
        write_json(out, args.json)
    return 1 if unmet(out) else 0
