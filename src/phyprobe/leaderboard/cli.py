"""``phyprobe leaderboard GENERATIONS --out DIR``: rank generators (or checkpoints) on the same prompts.

GENERATIONS is a folder ``ROOT/<generator>/<prompt_id>.mp4`` (or ``ROOT/<generator>/<checkpoint>/...``) or a
JSONL/CSV manifest (``generator``, ``prompt_id``, ``video``, optional ``checkpoint``/``step`` and group fields).
Evaluators: ``--scorer`` (each video scored once per scorer, kept by its content in $PHYPROBE_CACHE/scores, default
~/.cache/phyprobe, and reused by any later leaderboard; this run's rows in DIR/scores/), ``--judge`` (the output of
``phyprobe judge run`` on DIR/videos.jsonl, which every run writes), ``--scores NAME=CSV``, ``--geophys`` (the
training-free GeoPhys baseline, its features cached in DIR/features/). Writes
DIR/leaderboard.{md,csv,json} and plots. With ``--baseline`` (an earlier leaderboard.json, or ``@CHECKPOINT`` for
each generator's CHECKPOINT in this run), the exit code is 1 when an entry regressed with an interval that
excludes 0: a gate for CI.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

from ..errors import UserError
from ..helptext import for_terminal

EXIT_REGRESSION = 1
SAFE_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,99}")  # an evaluator's name, used as a file name under --out
EXIT_UNRANKED = 3  # an evaluator ranked nothing (an entry with no scored prompt): a CI job must not read it as a pass
MARKER = ".phyprobe-leaderboard"  # this folder's videos.jsonl, scores/ and tables are the leaderboard's to rewrite
# what a leaderboard writes into --out: a folder holding any of them without MARKER is someone else's
OUTPUTS = ("videos.jsonl", "leaderboard.md", "leaderboard.csv", "leaderboard.json", "scores", "features")


def add_cli(sub) -> None:
    from ..scorer.cli import devices_arg, positive_int, workers_arg

    p = sub.add_parser(
        "leaderboard",
        help="rank generators with paired statistics from the scorer and the judges, and a regression gate",
        description=for_terminal(__doc__),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("generations", type=Path, help="folder of generator folders, or a .jsonl / .csv manifest")
    p.add_argument("--out", type=Path, required=True, help="output folder (scores, tables, plots)")
    p.add_argument(
        "--prompts",
        type=Path,
        help="JSONL/CSV with prompt_id (or id) and group fields per prompt, or a prompt suite (phyprobe suite build / import)",
    )
    p.add_argument(
        "--scorer", action="append", default=[], metavar="[NAME=]DIR", help="an exported scorer (repeatable)"
    )
    p.add_argument("--revision", help="Hub branch, tag or commit of the scorer(s), so every run uses the same model")
    p.add_argument("--judge", action="append", default=[], metavar="DIR", help="a `phyprobe judge run` output folder")
    p.add_argument("--scores", action="append", default=[], metavar="NAME=CSV", help="per-video video,score CSV")
    p.add_argument(
        "--geophys",
        action="store_true",
        help="GeoPhys, the training-free baseline (a frozen image encoder's embedding path), as a column named geophys",
    )
    p.add_argument(
        "--higher-is-better",
        action="append",
        default=[],
        metavar="NAME",
        help="a --scores column where higher is better",
    )
    p.add_argument("--no-dimensions", action="store_true", help="judges' headline scores only, not each dimension")
    p.add_argument(
        "--group", action="append", metavar="FIELD", help="break down by this field (default: the known ones present)"
    )
    p.add_argument(
        "--quality",
        metavar="COLUMN",
        help="quality proxy column for the confound check, e.g. 'vision_tools (stand-in):imaging_quality'",
    )
    p.add_argument("--baseline", help="an earlier leaderboard.json, or @CHECKPOINT: gate on regressions against it")
    p.add_argument(
        "--gate-on", action="append", metavar="NAME", help="evaluators the gate checks (default: all headline ones)"
    )
    p.add_argument("--n-boot", type=positive_int, default=10_000, help="bootstrap resamples of the prompts")
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap resamples")
    p.add_argument("--alpha", type=float, default=0.05, help="1 - the intervals' coverage; the tests' level")
    p.add_argument(
        "--summary",
        choices=("mean", "median"),
        default="mean",
        help="what ranks the entries: the mean score over the shared prompts, or the median, which a few videos "
        "scored far out (flagged in the output) cannot move",
    )
    p.add_argument("--no-plots", action="store_true", help="tables only")
    p.add_argument("--batch-size", type=positive_int, default=8, help="videos per scorer forward pass")
    p.add_argument(
        "--workers", type=workers_arg, default="auto", help="decode worker processes ('auto': none on CPU, 4 per GPU)"
    )
    p.add_argument("--devices", type=devices_arg, default=1, help="GPUs (or processes) to score on")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.set_defaults(func=_run)


def judge_manifest_rows(gens) -> list[dict]:
    """The generations as a phyprobe manifest (videos.jsonl), so `phyprobe judge run` can judge them by their ids."""
    meta_cols = [c for c in gens.columns if c not in ("id", "video")]
    return [
        {
            "id": r["id"],
            "path": str(Path(r["video"]).resolve()),
            "source": str(r["generator"]),
            "is_real": False,
            "split": "test",
            "metadata": {c: r[c] for c in meta_cols if r[c] is not None and r[c] == r[c]},
        }
        for r in gens.to_dict(orient="records")
    ]


def _baseline(arg: str, board: dict) -> tuple[dict, dict]:
    """(current view, baseline) for :func:`compare_to_baseline`."""
    if arg.startswith("@"):
        ckpt = arg[1:]
        latest, entry_map = {}, {}
        for g, points in board["checkpoints"].items():
            names = [p["checkpoint"] for p in points]
            if ckpt not in names:
                raise UserError(f"--baseline {arg}: generator {g!r} has no checkpoint {ckpt!r} (it has {names})")
            last = points[-1]["entry"]
            latest[last], entry_map[last] = True, f"{g}@{ckpt}"
        if not latest:
            raise UserError(f"--baseline {arg}: the generations have no checkpoints")
        current = {
            **board,
            "evaluators": {
                n: {**ev, "per_prompt": {e: s for e, s in ev["per_prompt"].items() if e in latest}}
                for n, ev in board["evaluators"].items()
            },
        }
        return current, {**board, "entry_map": entry_map}
    return board, read_baseline(Path(arg))


def read_baseline(path: Path) -> dict:
    """A baseline ``leaderboard.json``, checked in what the gate reads of it: ``evaluators`` mapping each name to a
    ``per_prompt`` table of entry -> prompt -> a finite number; one line naming the file and the field otherwise."""
    from ..io.json_input import BadJsonInput, finite_number, load_json_input

    base = load_json_input(path, "baseline leaderboard.json")
    if not isinstance(base, dict) or not isinstance(base.get("evaluators"), dict):
        raise BadJsonInput(f"{path}: not a leaderboard.json (no 'evaluators' object)")
    for name, ev in base["evaluators"].items():
        where = f"{path}: evaluators.{name}"
        if not isinstance(ev, dict) or not isinstance(ev.get("per_prompt"), dict):
            raise BadJsonInput(f"{where}: expected an object with a 'per_prompt' object")
        for entry, scores in ev["per_prompt"].items():
            if not isinstance(scores, dict):
                raise BadJsonInput(f"{where}.per_prompt.{entry}: expected an object of prompt -> score")
            for prompt, value in scores.items():
                finite_number(value, f"{where}.per_prompt.{entry}.{prompt}")
    return base


def _run(args) -> int:
    from ..io.owned import one_writer

    if not 0 < args.alpha < 1:
        raise UserError(f"--alpha must be in (0, 1), got {args.alpha}")
    if os.path.lexists(args.out) and not args.out.is_dir():
        raise UserError(f"{args.out}: not a folder; --out names the folder a leaderboard writes into")
    ours = [n for n in OUTPUTS if os.path.lexists(args.out / n)]
    if ours and not (args.out / MARKER).exists():  # before any work: files of the user's are never replaced
        raise UserError(f"{args.out}: holds {', '.join(ours)} that no leaderboard wrote; pass another --out")
    with one_writer(args.out, "leaderboard"):  # a second leaderboard into this --out meanwhile is refused
        return _leaderboard(args)


def _leaderboard(args) -> int:
    from datetime import datetime, timezone

    from ..data.manifest import write_jsonl
    from ..runinfo import code_version
    from .board import build_leaderboard, compare_to_baseline
    from .evaluators import csv_column, geophys_column, judge_columns, parse_named, scorer_column
    from .generations import read_generations, with_encodings
    from .report import write_outputs

    gens = with_encodings(read_generations(args.generations, args.prompts))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / MARKER).touch()
    write_jsonl(args.out / "videos.jsonl", judge_manifest_rows(gens))
    columns = []
    for i, spec in enumerate(args.scorer):
        name, path = parse_named(spec)
        name = name or ("phyprobe" if len(args.scorer) == 1 else f"phyprobe{i + 1}")
        if not SAFE_NAME.fullmatch(name):  # it names files under --out: never a path out of it
            raise UserError(
                f"--scorer {spec}: the name {name!r} must be letters, digits, '.', '_' or '-', not first '.'"
            )
        kw = {"batch_size": args.batch_size, "num_workers": args.workers, "devices": args.devices}
        columns.append(
            scorer_column(path, name, gens, args.out, progress=not args.no_progress, revision=args.revision, **kw)
        )
    for path in args.judge:
        columns += judge_columns(path, gens, dimensions=not args.no_dimensions)
    for spec in args.scores:
        name, path = parse_named(spec)
        if name is None:
            raise UserError(f"--scores {spec}: expected NAME=CSV")
        columns.append(csv_column(name, path, gens, higher_is_better=name in args.higher_is_better))
    if args.geophys:
        kw = {"batch_size": args.batch_size, "num_workers": args.workers}
        columns.append(
            geophys_column(gens, args.out, trainer_kwargs={"enable_progress_bar": not args.no_progress}, **kw)
        )
    if not columns:
        raise UserError(f"{args.generations}: no evaluator given (--scorer, --judge, --scores or --geophys)")
    names = [c.name for c in columns]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise UserError(f"evaluator name(s) {dup} given twice: name them apart (--scorer NAME=DIR, --scores NAME=CSV)")
    unknown = set(args.higher_is_better) - set(names)
    if unknown:
        raise UserError(f"--higher-is-better {sorted(unknown)}: no such evaluator column (known: {names})")
    board = build_leaderboard(gens, columns, args.group, args.quality, args.n_boot, args.seed, args.alpha, args.summary)
    board["run"] = {"code": code_version(), "argv": sys.argv, "created": datetime.now(timezone.utc).isoformat()}
    if board["encodings"]["warning"]:
        print(f"warning: {board['encodings']['warning']}", file=sys.stderr)
    for n, ev in board["evaluators"].items():
        if ev["far_outside"]:
            lo, hi = ev["expected_range"]
            per = ", ".join(
                f"{e}: {len(v)} (e.g. {max(v.values(), key=abs):.6g})" for e, v in ev["far_outside"].items()
            )
            print(
                f"warning: {n} scored videos far outside the range it gave its training videos ({lo:.3g} to {hi:.3g}); "
                f"{per}; ranked by the {args.summary}"
                + (
                    ""
                    if args.summary == "median"
                    else ", which they move: --summary median ranks by what they cannot move"
                ),
                file=sys.stderr,
            )
    for n, ev in board["evaluators"].items():
        short = {e: c["missing"] for e, c in ev["coverage"].items() if c["missing"]}
        if short and ev["kind"] != "dimension":
            lacks = ", ".join(f"{e} ({m})" for e, m in short.items())
            print(f"{n}: prompts without a score, left out of the paired comparisons: {lacks}", file=sys.stderr)
    gate = None
    if args.baseline:
        current, base = _baseline(args.baseline, board)
        gate_on = args.gate_on or [c.name for c in columns if c.kind != "dimension"]
        gate = compare_to_baseline(current, base, args.n_boot, args.seed, args.alpha, gate_on)
    files = write_outputs(board, args.out, plots=not args.no_plots, gate=gate, baseline=args.baseline)
    print(
        f"{files['md']}, {files['csv'].name}, {files['json'].name}: {len(board['entries'])} entries, {board['prompts']} prompts"
    )
    unranked = []
    for n, ev in board["evaluators"].items():
        if ev["kind"] != "dimension" and ev.get("stats"):
            order = ", ".join(f"{s['rank']}. {s['system']}" for s in ev["stats"]["systems"])
            print(f"{n}: {order}")
        elif ev["kind"] != "dimension":
            empty = [e for e, c in ev["coverage"].items() if c["prompts"] == 0]
            why = f"{', '.join(empty)} scored no prompt" if empty else "no prompt is scored for every entry"
            print(f"error: {n} ranks nothing: {why} (their videos' errors: {files['json'].name})", file=sys.stderr)
            unranked.append(n)
    if gate is not None:
        bad = [g for g in gate if g["regression"]]
        for g in bad:
            print(
                f"regression: {g['evaluator']} {g['entry']} vs {g['baseline_entry']}: {g['diff']:+.4f} "
                f"[{g['low']:+.4f}, {g['high']:+.4f}] over {g['prompts']} prompts",
                file=sys.stderr,
            )
        if not gate:
            raise UserError(f"{args.baseline}: shares no evaluator and entry with this leaderboard: nothing to gate on")
        return EXIT_REGRESSION if bad else EXIT_UNRANKED if unranked else 0
    return EXIT_UNRANKED if unranked else 0
