"""Train and evaluate one design at three seeds, across worlds and on builds no run trains on, in one resumable command.

A design is a set of ``train.py`` overrides (none: the embedded default). This trains it at each seed on the demo's data,
trains it across worlds (``experiment=cross_2d_to_3d`` and ``cross_3d_to_2d``) at each seed, evaluates every seed of the
default on the builds no run trains on (unseen worlds; real clips the project does not ship), and reads the lot with
``phyprobe table``, writing ``table.md`` and ``table.json`` into ``--out``::

    python research/judge_design.py --out outputs/vjepa2 -- backbone=vjepa2
    python research/judge_design.py --out outputs/judge-default          # the embedded default: about 1.5 h on 2 cores

Every run and evaluation has a directory of its own under ``--out``; one that finished (its ``metrics.json`` exists) is
not run again, so a command that stopped resumes where it stopped. A run that fails stops the command with its
directory and the command that failed. The other-sources footage needs its clips first
(``python data_prep/footage_sources.py data/sources/debian-footage``); the worlds are drawn on first use.

``research/judge_design.py`` is the command; this module is its driver, importable by tests.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from ..config_files import SOURCE_ROOT
from ..eval.design_table import ROLES, as_markdown, table, write_json

ROOT = SOURCE_ROOT  # train.py and eval.py run from here
CROSS = ("cross_2d_to_3d", "cross_3d_to_2d")
# BENCHMARK:MANIFEST[:BUILD SEED], as eval.py reads them (a build is drawn into its manifest on first use)
WORLD_BUILDS = [f"rigs:data/rigs-s{s}-n200:{s}" for s in (0, 1, 2)] + [
    f"marbles:data/marbles-s{s}-n200:{s}" for s in (0, 1)
]
FOOTAGE_BUILDS = [f"real_footage_other_sources:data/footage-other-sources-s{s}-n100:{s}" for s in (0, 1)]


def _run(cmd: list[str], out_dir: Path) -> Path:
    """Run one train.py / eval.py job into ``out_dir`` unless it already finished there."""
    if (out_dir / "metrics.json").is_file():
        print(f"done before: {out_dir}")
        return out_dir
    print(f"running: {out_dir}", flush=True)
    full = [sys.executable, *cmd, f"hydra.run.dir={out_dir}"]
    if subprocess.run(full, cwd=ROOT).returncode != 0:
        raise SystemExit(f"{out_dir}: failed; rerun this command to resume. The job: {' '.join(full)}")
    return out_dir


def _eval_overrides(spec: str) -> tuple[str, list[str]]:
    parts = spec.split(":")
    if len(parts) not in (2, 3) or not all(parts):
        raise SystemExit(f"{spec}: a build is BENCHMARK:MANIFEST or BENCHMARK:MANIFEST:SEED")
    name = f"{parts[0]}-{Path(parts[1]).name}"
    overrides = [f"benchmark={parts[0]}", f"benchmark.manifest={parts[1]}"]
    return name, overrides + ([f"benchmark.build.seed={parts[2]}"] if len(parts) == 3 else [])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True, help="every run, evaluation and the verdict go here")
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--world-builds", nargs="*", default=WORLD_BUILDS, metavar="BENCHMARK:MANIFEST[:SEED]")
    ap.add_argument("--footage-builds", nargs="*", default=FOOTAGE_BUILDS, metavar="BENCHMARK:MANIFEST[:SEED]")
    ap.add_argument("--no-cross", action="store_true", help="leave out the cross-world runs")
    ap.add_argument("overrides", nargs="*", help="train.py overrides that make the design (after --)")
    args = ap.parse_args(argv)
    out = args.out.resolve()
    builds = {
        "unseen_world": [_eval_overrides(b) for b in args.world_builds],
        "unseen_footage": [_eval_overrides(b) for b in args.footage_builds],
    }

    roles: dict[str, list[Path]] = {role: [] for role in ROLES}
    for seed in args.seeds:
        roles["default"].append(_run(["train.py", *args.overrides, f"seed={seed}"], out / "default" / f"seed{seed}"))
    for experiment in () if args.no_cross else CROSS:
        for seed in args.seeds:
            roles["cross"].append(
                _run(
                    ["train.py", f"experiment={experiment}", *args.overrides, f"seed={seed}"],
                    out / "cross" / f"{experiment}-seed{seed}",
                )
            )
    for run in roles["default"]:
        for role, specs in builds.items():
            for name, overrides in specs:
                roles[role].append(
                    _run(["eval.py", f"run={run}", *overrides, "report=false"], out / role / f"{name}-{run.name}")
                )

    out_table = table(roles)
    text = as_markdown(out_table)
    (out / "table.md").write_text(text + "\n")
    write_json(out_table, out / "table.json")
    print(f"{text}\n\n-> {out / 'table.md'}, {out / 'table.json'}")
