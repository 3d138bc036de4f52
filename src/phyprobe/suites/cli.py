"""``phyprobe suite``: build prompt suites from seed paradigms, import the published ones, and count what they hold.

- ``phyprobe suite build SEEDS... --out suite.jsonl``: the three agents behind an OpenAI-compatible server
  (:mod:`.build`); client settings from ``configs/suite/build.yaml`` with ``--set`` overrides, the API key only
  from the environment variable it names. Exit code 0 when every requested prompt was kept, 1 when some were not
  (each in ``suite.failures.jsonl``), 2 when none was, or on a user error.
- ``phyprobe suite import {scivbench,svbench} SRC --out suite.jsonl``: a published benchmark's records as a suite.
- ``phyprobe suite stats SUITE... [--out stats.json]``: counts, and pass rates by stage for builds.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..config_files import add_set_option, merge_sets
from ..errors import InvalidOption, UserError
from ..helptext import for_terminal

IMPORT_TOOL = "phyprobe suite import"
EXIT_SOME_FAILED = 1
EXIT_NONE_KEPT = 2


def _difficulties(text: str) -> list[str]:
    from .format import DIFFICULTIES

    values = [v.strip() for v in text.split(",") if v.strip()]
    bad = [v for v in values if v not in DIFFICULTIES]
    if not values or bad or len(set(values)) != len(values):
        raise argparse.ArgumentTypeError(f"expected distinct values of {','.join(DIFFICULTIES)}, got {text!r}")
    return values


def add_cli(sub) -> None:
    from ..scorer.cli import positive_int

    p = sub.add_parser(
        "suite",
        help="prompt suites: build them from seed paradigms with three agents, import published ones, count them",
        description=for_terminal(__doc__),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ssub = p.add_subparsers(dest="suite_command", required=True)
    b = ssub.add_parser(
        "build",
        help="seed paradigms -> prompts (understanding, synthesis, critic) through an OpenAI-compatible server",
        description="For each paradigm of the seed files and each difficulty, write --per-difficulty prompts with "
        "the experiment-understanding, prompt-synthesis and critic agents, revise each until the critic passes it "
        "(at most --max-rounds rounds), and keep it only if the deterministic leakage check passes it too. Writes "
        "OUT, OUT's .failures.jsonl (every prompt not kept, with why) and .build.json (the counts). A rerun sends "
        "no request twice (the replies are cached under cache_dir). Exit code 0 when every prompt was kept, 1 when "
        "some were not, 2 when none was or on a user error.",
    )
    b.add_argument(
        "seeds",
        nargs="+",
        help="seed files (YAML, or SVBench's seed_experiments.json), or names under configs/suite/seeds/",
    )
    b.add_argument("--out", required=True, type=Path, help="the suite to write (JSONL)")
    b.add_argument("--config", default="build", help="a build config: a name under configs/suite/ or a YAML file")
    b.add_argument("--per-difficulty", type=positive_int, help="prompts per paradigm and difficulty")
    b.add_argument("--difficulties", type=_difficulties, help="comma-separated, e.g. easy,medium,hard")
    b.add_argument("--max-rounds", type=positive_int, help="critic rounds before a prompt is reported as never passing")
    b.add_argument(
        "--stages",
        "--stage",
        dest="stage",
        choices=("full", "synthesis_only", "understanding_off"),
        help="full (default), synthesis_only (no revision; the critic is asked once) or understanding_off "
        "(also no understanding agent: synthesis sees the raw seed)",
    )
    add_set_option(b, "override a config entry, e.g. client.base_url=http://host:8000/v1 client.model=... build.seed=1")
    b.set_defaults(func=_cli_build)
    s = ssub.add_parser("stats", help="counts per paradigm and difficulty, critic rounds, leakage, lengths, stages")
    s.add_argument("suites", nargs="+", type=Path, help="suite JSONL files (a build's failures file is read beside it)")
    s.add_argument("--out", type=Path, help="write the figures as JSON here")
    s.set_defaults(func=_cli_stats)
    i = ssub.add_parser("import", help="a published benchmark's records (Sci-VBench, SVBench) as a suite")
    i.add_argument("kind", help="scivbench or svbench")
    i.add_argument("src", type=Path, help="the released file")
    i.add_argument("--out", required=True, type=Path, help="the suite to write (JSONL)")
    i.set_defaults(func=_cli_import)


def _config_path(name: str) -> Path:
    from ..config_files import config_dir

    path = Path(name)
    if path.is_file():
        return path
    if not path.suffix and len(path.parts) == 1:
        candidate = config_dir() / "suite" / f"{name}.yaml"
        if candidate.is_file():
            return candidate
    raise UserError(f"{name}: no such build config file, nor a name of one under configs/suite/")


def load_build_config(name: str, sets: list[str], flags: dict) -> tuple[dict, str]:
    """The build config as a plain dict (file, then ``--set``, then the explicit flags) and its file's name."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    path = _config_path(name)
    try:
        cfg = OmegaConf.load(path)
    except (OmegaConfBaseException, ValueError) as e:
        raise InvalidOption(f"{path}: not a valid YAML config ({' '.join(str(e).split())})") from None
    cfg = merge_sets(cfg, sets, str(path))
    try:
        plain = OmegaConf.to_container(cfg, resolve=True)
    except OmegaConfBaseException as e:
        raise InvalidOption(f"{path}: {' '.join(str(e).split())}") from None
    if not isinstance(plain, dict):
        raise InvalidOption(f"{path}: a build config is a mapping with client, build and cache_dir")
    build = plain.setdefault("build", {}) or {}
    if not isinstance(build, dict):
        raise InvalidOption(f"{path}: 'build' must be a mapping")
    build.update({k: v for k, v in flags.items() if v is not None})
    plain["build"] = build
    return plain, str(path)


def _cli_build(args) -> int:
    from .build import run_build
    from .seeds import load_seed_files

    flags = {
        "per_difficulty": args.per_difficulty,
        "difficulties": args.difficulties,
        "max_rounds": args.max_rounds,
        "stage": args.stage,
    }
    sets = args.set
    cfg, where = load_build_config(args.config, sets, flags)
    paradigms = load_seed_files(args.seeds)
    result = run_build(cfg, paradigms, args.out, where)
    s = result.summary
    print(f"suite build ({s['stage']}): {s['kept']} of {s['requested']} prompts kept -> {args.out}")
    req = s["requests"]
    lines = [
        f"phyprobe suite build: requests: {req['sent']} sent, {req['from_cache']} from the cache, {req['failed']} failed"
    ]
    if s["not_kept"]:
        why = {
            "critic_rejected": "the critic never passed",
            "leakage_check": "the critic passed but the deterministic leakage check flagged",
            "malformed_reply": "an agent's reply was malformed",
            "request_failed": "a request got no reply",
        }
        parts = "; ".join(f"{n} {why[r]} ({r})" for r, n in s["not_kept"].items())
        lines.append(f"phyprobe suite build: not kept: {parts}; see {s['outputs']['failures']}")
    print("\n".join(lines), file=sys.stderr)
    if s["kept"] == s["requested"]:
        return 0
    return EXIT_NONE_KEPT if s["kept"] == 0 else EXIT_SOME_FAILED


def _cli_stats(args) -> int:
    from .build import check_writable
    from .stats import TOOL, stats, to_markdown

    if args.out:
        check_writable(args.out, TOOL, whole_json=True)
    res = stats(args.suites)
    print(to_markdown(res["suites"]))
    if args.out:
        from ..runinfo import atomic_write_json

        atomic_write_json(args.out, res)
    return 0


def _cli_import(args) -> int:
    from .build import check_writable
    from .format import write_suite

    check_writable(args.out, IMPORT_TOOL)
    from .published import PUBLISHED, load_published  # lazily: only this command needs the converters

    if args.kind not in PUBLISHED:
        raise InvalidOption(f"suite import: unknown kind {args.kind!r}; known: {sorted(PUBLISHED)}")
    records = load_published(args.kind, args.src)
    for r in records:  # so a rerun may replace the file, and nothing else's
        r.provenance = {**r.provenance, "tool": IMPORT_TOOL}
    write_suite(records, args.out)
    print(f"suite import ({args.kind}): {len(records)} prompts from {args.src} -> {args.out}")
    return 0
