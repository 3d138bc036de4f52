"""Write results/*.csv from finished runs, and the README's results table from them.

    python research/judge_design.py --out outputs/judge-paper --world-builds ... --footage-builds ...   # the default
    python train.py -m experiment=no_rank,no_mag,no_cal,pooling_max,pooling_mean seed=0,1,2 ... hydra.sweep.dir=outputs/ablations
    python train.py -m experiment=sweep_lambda seed=0,1,2 ... hydra.sweep.dir=outputs/ablations-lambda
    python research/judge_design.py --out outputs/design/flow_dynamics_bal ...   # the default, balanced draws
    python results/generate.py   # -> results/default.csv, default_over_seeds.csv, ablations.csv, lambda_sweep.csv; README

The commands with every option are in docs/studies/paper-pipeline-default.md and docs/studies/ablations-paper-pipeline.md.
Each run's design comes from where it lies: ``--paper`` (a judge_design output: default/, cross/, unseen_world/,
unseen_footage/), ``--balanced`` (the same, for the default with balanced draws), ``--evidence-head`` (runs of
``experiment=evidence_head`` and their eval/ folders) and ``--ablations`` (a sweep whose runs are named by their
experiment). A design none of whose runs are on this machine keeps its rows of ``results/default.csv``.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pandas as pd

from phyprobe.eval.results import (
    collect,
    detail_markdown,
    over_seeds,
    readme_table,
    table_block,
    with_designs_kept,
    with_table,
)
from phyprobe.eval.summary import run_names

HERE = Path(__file__).resolve().parent
README = HERE.parent / "README.md"
ABLATION_FIGURES = {
    "world_test.world.same_scene_accuracy_severity_ge_0.5": "2D same-scene acc. (sev >= 0.5)",
    "world3d_test.world.same_scene_accuracy_severity_ge_0.5": "3D same-scene acc. (sev >= 0.5)",
    "world_test.world.gen_gen_accuracy": "2D gen-gen acc.",
    "world_test.world.auroc_plausible_vs_violated": "2D AUROC plausible vs violated",
    "world_test.world.score_range.p99": "2D raw score p99",
    "world_test.world.score_range.share_outside_01": "2D share of raw scores outside [0, 1]",
    "world3d_test.world.score_range.share_outside_01": "3D share of raw scores outside [0, 1]",
    "world_test.world.median_score_plausible": "2D median score, plausible",
    "world_test.world.real_real_median_gap": "2D real–real median gap",
}


def paper_runs(root: Path, design: str = "paper") -> dict[tuple[str, str], list[Path]]:
    """The runs of a ``research/judge_design.py`` output, as ``design``'s."""
    runs: dict[tuple[str, str], list[Path]] = {(design, "default"): sorted((root / "default").glob("seed*"))}
    for d in sorted((root / "cross").glob("*")):
        runs.setdefault((design, re.sub(r"-seed\d+$", "", d.name)), []).append(d)
    runs[(design, "unseen")] = sorted([*(root / "unseen_world").glob("*"), *(root / "unseen_footage").glob("*")])
    return {k: [d for d in v if (d / "metrics.json").is_file()] for k, v in runs.items()}


def evidence_runs(dirs: list[Path]) -> dict[tuple[str, str], list[Path]]:
    return {
        ("evidence_head", "default"): [d for d in dirs if (d / "metrics.json").is_file()],
        ("evidence_head", "unseen"): sorted(
            e for d in dirs for e in (d / "eval").glob("*") if (e / "metrics.json").is_file()
        ),
    }


def figure_rows(run: Path, **columns) -> list[dict]:
    """One row per figure of :data:`ABLATION_FIGURES` that ``run`` reports, with its seed and ``columns``."""
    m = json.loads((run / "metrics.json").read_text())
    seed = json.loads((run / "run_info.json").read_text())["seed"]
    rows = []
    for key, label in ABLATION_FIGURES.items():
        bench, protocol, rest = key.split(".", 2)  # figure names hold dots of their own (severity_ge_0.5)
        node = m["benchmarks"].get(bench, {}).get(protocol, {})
        for part in [rest] if rest in node else rest.split("."):
            node = node.get(part, {}) if isinstance(node, dict) else {}
        value = (
            node.get("value")
            if isinstance(node, dict) and "value" in node
            else (node if isinstance(node, float) else None)
        )
        if value is not None:
            leaf = node if isinstance(node, dict) else {}
            rows.append(
                {
                    **columns,
                    "seed": seed,
                    "figure": label,
                    "value": value,
                    "low": leaf.get("low"),
                    "high": leaf.get("high"),
                }
            )
    return rows


def ablation_table(sweep: Path, full: list[Path]) -> pd.DataFrame:
    """One row per (arm, seed, figure): the sweep's arms and the default's seeds as ``full``."""
    runs = sorted(p.parent for p in sweep.rglob("metrics.json"))
    named = [(re.sub(r"(^|,)seed=\d+", "", n).strip(",") or "full", r) for n, r in zip(run_names(runs), runs)]
    named = [(n.removeprefix("experiment="), r) for n, r in named] + [("full", r) for r in full]
    return pd.DataFrame([row for arm, run in named for row in figure_rows(run, arm=arm)])


ARMS = ["full", "no_rank", "no_mag", "no_cal", "pooling_max", "pooling_mean"]


def ablation_markdown(table: pd.DataFrame) -> str:
    """Arm x figure: mean ± sd over seeds, and the lowest and highest 95 % interval bound of any seed."""
    g = table.groupby(["figure", "arm"], sort=False)
    cells = {}
    for (figure, arm), d in g:
        bounds = f" [{d['low'].min():.3f}, {d['high'].max():.3f}]" if d["low"].notna().all() else ""
        cells[(figure, arm)] = f"{d['value'].mean():.3f} ± {d['value'].std(ddof=1):.3f}{bounds}"
    arms = [a for a in ARMS if a in set(table["arm"])]
    lines = ["| figure (seeds 0–2) | " + " | ".join(arms) + " |", "|---|" + "---|" * len(arms)]
    for figure in dict.fromkeys(table["figure"]):
        lines.append(f"| {figure} | " + " | ".join(cells.get((figure, a), "—") for a in arms) + " |")
    return "\n".join(lines)


LAMBDA_FIGURES = [
    "2D same-scene acc. (sev >= 0.5)",
    "3D same-scene acc. (sev >= 0.5)",
    "2D share of raw scores outside [0, 1]",
    "2D real–real median gap",
]


def lambda_table(sweep: Path) -> pd.DataFrame:
    """One row per (λ_mag, λ_cal, seed, figure) of a λ sweep (``experiment=sweep_lambda``), the λs read from each
    run's recorded config."""
    rows = []
    for run in sorted(p.parent for p in sweep.rglob("metrics.json")):
        loss = json.loads((run / "run_info.json").read_text())["config"]["loss"]
        rows += figure_rows(run, lambda_mag=loss["lambda_mag"], lambda_cal=loss["lambda_cal"])
    return pd.DataFrame(rows)


def lambda_markdown(table: pd.DataFrame) -> str:
    """Per figure, a λ_mag x λ_cal grid of mean ± sd over seeds."""
    out = []
    for figure in LAMBDA_FIGURES:
        t = table[table["figure"] == figure]
        cals = sorted(t["lambda_cal"].unique())
        out += [
            f"**{figure}** (seeds 0–2, mean ± sd)",
            "",
            "| λ_mag \\ λ_cal | " + " | ".join(f"{c:g}" for c in cals) + " |",
        ]
        out.append("|---|" + "---|" * len(cals))
        for mag, row in t.groupby("lambda_mag"):
            cells = {c: f"{d['value'].mean():.3f} ± {d['value'].std(ddof=1):.3f}" for c, d in row.groupby("lambda_cal")}
            out.append(f"| {mag:g} | " + " | ".join(cells.get(c, "—") for c in cals) + " |")
        out.append("")
    return "\n".join(out)


def write_readme_table(over: pd.DataFrame, spec_file: Path = HERE / "readme_table.json", readme: Path = README) -> str:
    table = readme_table(over, json.loads(spec_file.read_text()))
    text = readme.read_text()
    if table_block(text) is not None:
        readme.write_text(with_table(text, table))
    return table


def leaderboard_table(out: Path) -> pd.DataFrame:
    """The headline rows of a ``phyprobe leaderboard`` output (docs/leaderboard.md's worked example), with the code
    version it ran at."""
    board = json.loads((out / "leaderboard.json").read_text())
    rows = pd.read_csv(out / "leaderboard.csv", keep_default_na=False)
    heads = [n for n, ev in board["evaluators"].items() if ev["kind"] != "dimension"]
    rows = rows[(rows["group"] == "") & rows["evaluator"].isin(heads)]
    keep = ["evaluator", "direction", "entry", "prompts", "mean", "low", "high", "rank", "rank_low", "rank_high"]
    keep += ["win_rate", "win_low", "win_high", "bt", "bt_low", "bt_high", "quality_matched_share", "quality_flag"]
    code = board["run"]["code"]
    version = code["package"] + (f"+{code['git_commit'][:10]}" if code.get("git_commit") else "")
    rows = rows[keep].copy()
    for c in keep[3:-2]:  # blank in the breakdown rows, so read as text
        rows[c] = pd.to_numeric(rows[c])
    return rows.assign(version=version)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--paper", type=Path, default=Path("outputs/judge-paper"))
    ap.add_argument("--balanced", type=Path, default=Path("outputs/design/flow_dynamics_bal"))
    ap.add_argument(
        "--evidence-head",
        type=Path,
        nargs="*",
        default=[Path("outputs/prev-default"), *sorted(Path("outputs/evidence-head").glob("seed*"))],
    )
    ap.add_argument("--ablations", type=Path, default=Path("outputs/ablations"))
    ap.add_argument("--lambda-sweep", type=Path, default=Path("outputs/ablations-lambda"))
    ap.add_argument("--leaderboard", type=Path, default=Path("outputs/leaderboard-example"))
    args = ap.parse_args()
    runs = {**paper_runs(args.paper), **paper_runs(args.balanced, "balanced"), **evidence_runs(args.evidence_head)}
    long = collect(runs)
    if (HERE / "default.csv").is_file():  # designs none of whose runs are here keep their recorded rows
        long = with_designs_kept(long, pd.read_csv(HERE / "default.csv"))
    long.to_csv(HERE / "default.csv", index=False, float_format="%.6g")
    over = over_seeds(long)
    over.to_csv(HERE / "default_over_seeds.csv", index=False, float_format="%.6g")
    if args.ablations.is_dir():
        ablations = ablation_table(args.ablations, runs[("paper", "default")])
        ablations.to_csv(HERE / "ablations.csv", index=False, float_format="%.6g")
        print(ablation_markdown(ablations), end="\n\n")
    if args.lambda_sweep.is_dir():
        lambdas = lambda_table(args.lambda_sweep)
        lambdas.to_csv(HERE / "lambda_sweep.csv", index=False, float_format="%.6g")
        print(lambda_markdown(lambdas), end="\n\n")
    if (args.leaderboard / "leaderboard.json").is_file():
        leaderboard_table(args.leaderboard).to_csv(
            HERE / "leaderboard_world_generators.csv", index=False, float_format="%.6g"
        )
    print(detail_markdown(over), end="\n\n")
    print(write_readme_table(over))


if __name__ == "__main__":
    main()
