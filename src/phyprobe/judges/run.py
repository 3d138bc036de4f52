"""Run a judge from its config (``configs/judge/*.yaml``) on a manifest and write what it found.

Outputs, in one directory:

``judgements.jsonl``   one line per judged video: headline score, violation score, per-dimension
                       scores with every sample, justifications, raw replies, failures, cost;
``scores.csv``         ``video,score`` with the violation score (higher = more violating), the format
                       ``eval.py scores_csv=`` reads, so a judge can be re-evaluated without calls;
``judge_summary.json`` the judge, model, cost per video and failure counts.

A judge config has ``judge`` (``_target_`` + options), and for model judges ``client``
(``ClientConfig``), ``video`` (``VideoInput``) and ``cache_dir``.
"""

from __future__ import annotations

import csv
import logging
import os
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from ..config_files import add_set_option, merge_sets
from ..data.manifest import Manifest, write_jsonl
from ..errors import UserError
from ..runinfo import atomic_write_json
from .base import JudgeResult, judge_manifest
from .client import VideoInput, client_from_config

log = logging.getLogger(__name__)


def _judge_dir(root: str | os.PathLike | None) -> Path:
    """``<root>/configs/judge``, or the project's own judge configs (found from any working directory)."""
    from ..config_files import config_dir

    return (Path(root) / "configs" if root else config_dir()) / "judge"


def available_configs(root: str | os.PathLike | None = None) -> list[str]:
    return sorted(p.stem for p in _judge_dir(root).glob("*.yaml"))


def load_config(name_or_path: str | os.PathLike, root: str | os.PathLike | None = None) -> DictConfig:
    """A judge config from a YAML path or a name under ``configs/judge/``."""
    path = Path(name_or_path)
    if not path.suffix and not path.exists():
        path = _judge_dir(root) / f"{path}.yaml"
    if not path.is_file():
        raise UserError(
            f"{name_or_path}: no such judge config file, nor a name of one (known: {available_configs(root)})"
        )
    return OmegaConf.load(path)


def _plain(cfg) -> dict:
    return OmegaConf.to_container(cfg, resolve=True) if isinstance(cfg, DictConfig) else dict(cfg or {})


def run_judge(cfg: Mapping | DictConfig, manifest: Manifest, out_dir: str | os.PathLike | None = None) -> JudgeResult:
    """Instantiate the judge of ``cfg``, judge ``manifest``, and (with ``out_dir``) write the outputs."""
    from hydra.utils import instantiate

    cfg = _plain(cfg)
    judge = instantiate(cfg["judge"])
    if hasattr(judge, "judge_manifest"):  # model-free judges (vision tools) run in-process
        result = judge.judge_manifest(manifest)
    else:
        client = client_from_config(cfg, video=VideoInput(**(cfg.get("video") or {})))
        try:
            result = judge_manifest(judge, manifest, client, progress_every=cfg.get("progress_every", 0))
        finally:
            client.close()
    if out_dir is not None:
        write_outputs(result, manifest, out_dir)
    return result


def write_outputs(result: JudgeResult, manifest: Manifest, out_dir: str | os.PathLike) -> Path:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    order = [v for v in manifest.videos["id"] if v in result.records]
    write_jsonl(out / "judgements.jsonl", ({**result.records[v], "standin": result.standin} for v in order))
    tmp = out / "scores.csv.tmp"
    with open(tmp, "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(["video", "score"])
        for v in order:
            if v in result.scores:
                w.writerow([v, repr(float(result.scores[v]))])
    os.replace(tmp, out / "scores.csv")
    kinds = Counter(f["kind"] for r in result.records.values() for f in r.get("failures", []))
    models = sorted({str(r.get("model")) for r in result.records.values() if r.get("model")})
    atomic_write_json(
        out / "judge_summary.json",
        {
            "judge": result.name,
            "standin": result.standin,
            "models": models,
            "videos": len(result.records),
            "scored": len(result.scores),
            "unscored": len(result.records) - len(result.scores),
            "failed_calls": dict(kinds),
            "cost": result.cost,
        },
    )
    log.info("%s: %d/%d videos scored -> %s", result.name, len(result.scores), len(result.records), out)
    return out


def add_cli(sub) -> None:
    p = sub.add_parser("judge", help="rubric judges (MLLM servers, vision tools) and their agreement with other raters")
    jsub = p.add_subparsers(dest="judge_command", required=True)
    r = jsub.add_parser(
        "run",
        help="judge every video of a manifest",
        description="Judge every video of a manifest and write judgements.jsonl, scores.csv and judge_summary.json. "
        "Exit code (as `phyprobe score`): 0 when every judged video got a score, 1 when some video has none (its "
        "failures are in judgements.jsonl), 2 when no video could be scored at all, or on a user error such as a "
        "server that refused the API key (401/403: one line naming the server, no retries).",
    )
    r.add_argument(
        "config", help="a name under configs/judge/ (physics, scivbench, svbench_eva, vision_tools) or a YAML file"
    )
    r.add_argument("--manifest", required=True, type=Path, help="the videos to judge: a manifest folder")
    r.add_argument(
        "--out", required=True, type=Path, help="output folder: judgements.jsonl, scores.csv, judge_summary.json"
    )
    add_set_option(
        r,
        "override a config entry, e.g. client.base_url=http://host:8000/v1 client.model=... "
        "judge.tasks=rubrics.jsonl (a task file or a prompt suite) client.concurrency=16",
    )
    r.set_defaults(func=_cli_run)
    a = jsub.add_parser("agree", help="agreement (Pearson, Spearman, kappa, QWK) between two raters' 1-5 scores")
    a.add_argument("a", type=Path, help="judgements.jsonl or a video,score CSV")
    a.add_argument("b", type=Path, help="judgements.jsonl or a video,score CSV")
    a.add_argument("--manifest", required=True, type=Path, help="resolves the video names of both files")
    a.add_argument(
        "--scale-a",
        default="1-5",
        choices=("1-5", "violation"),
        help="'violation' maps a [0,1] violation score to 1 + 4(1 - s) first",
    )
    a.add_argument("--scale-b", default="1-5", choices=("1-5", "violation"), help="as --scale-a, for b")
    a.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples of the intervals")
    a.add_argument("--out", type=Path, help="write the figures as JSON here")
    a.set_defaults(func=_cli_agree)
    c = jsub.add_parser(
        "compare",
        help="one table of several eval.py runs (PhyProbe, judges, CSVs) with their cost, then a paired test of "
        "their pairwise accuracy: A - B on the pairs every run scored (paired bootstrap, interval, p, Holm p)",
        description="Prints the figures every run has, one column per evaluator, with their cost; then, for two "
        "runs or more, a paired test of every two evaluators' pairwise accuracy (each pairwise figure of the "
        "benchmark): the per-pair credits of all runs on the pairs every run scored, from the raw scores of "
        "their scores.csv, resampled together, so A - B gets a percentile interval, a two-sided bootstrap p "
        "and a Holm-corrected p. The runs must be of one benchmark on one manifest.",
    )
    c.add_argument(
        "runs", nargs="+", type=Path, help="eval.py output directories of one benchmark (metrics.json, scores.csv)"
    )
    c.add_argument("--out", type=Path, help="write both tables as markdown here")
    c.add_argument("--n-boot", type=int, default=10_000, help="bootstrap resamples of the paired test (default 10000)")
    c.add_argument("--seed", type=int, default=0, help="seed of the paired test's resamples")
    c.set_defaults(func=_cli_compare)


EXIT_SOME_FAILED = 1  # as ``phyprobe score``: some video has no score
EXIT_NONE_SCORED = 2  # nothing could be scored at all (also a user error's code: a refused key, a bad config)


def _cli_run(args) -> int:
    import sys

    cfg = merge_sets(load_config(args.config), args.set, str(args.config))
    result = run_judge(cfg, Manifest.load(args.manifest), args.out)
    scored, total = len(result.scores), len(result.records)
    print(f"{result.name}: {scored}/{total} videos scored -> {args.out}")
    if scored == total and total:
        return 0
    if total:
        why = f"{total - scored} of {total} videos have no score; their failures are in {Path(args.out) / 'judgements.jsonl'}"
    else:
        why = f"no video of {args.manifest} had anything to judge"
    print(f"phyprobe judge run: {why}", file=sys.stderr)
    return EXIT_NONE_SCORED if scored == 0 else EXIT_SOME_FAILED


def _cli_agree(args) -> int:
    import json

    from ..io.owned import check_owned, json_object_with
    from .agreement import agreement, read_ratings

    if args.out:
        check_owned(args.out, json_object_with("videos_both", "rounding"), "judge agreement (JSON)")
    manifest = Manifest.load(args.manifest)
    a = read_ratings(args.a, manifest, args.scale_a)
    b = read_ratings(args.b, manifest, args.scale_b)
    res = agreement(a, b, n_boot=args.n_boot)
    text = json.dumps(res, indent=2)
    print(text)
    if args.out:
        atomic_write_json(args.out, res)
    return 0


COMPARE_MARKER = "<!-- phyprobe judge compare: this file is rewritten by it -->"


def _cli_compare(args) -> int:
    from ..io.owned import check_owned, starts_with, write_owned
    from .compare import comparison_table, paired_accuracy, paired_markdown

    if args.out:  # before any work: a file of the user's is never replaced
        check_owned(args.out, starts_with(COMPARE_MARKER), "judge comparison (markdown)")
    md = comparison_table(args.runs).to_markdown(index=False)
    if len(args.runs) > 1:
        md += "\n\n" + paired_markdown(paired_accuracy(args.runs, n_boot=args.n_boot, seed=args.seed))
    print(md)
    if args.out:
        write_owned(args.out, f"{COMPARE_MARKER}\n\n{md}\n".encode())
    return 0
