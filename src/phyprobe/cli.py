"""``phyprobe`` command line: one sub-command per job, each defined beside the code it drives.

A user's mistake ends in one line, ``phyprobe: error: <file>: <reason>``, and exit code 2; the
traceback is shown only with the global ``--debug`` (see :mod:`phyprobe.errors`)."""

from __future__ import annotations

import argparse
import sys


def _subcommands():
    """(module, function) pairs that add a sub-parser; imported lazily so `phyprobe score` stays fast."""
    return [
        ("phyprobe.scorer", "add_cli"),
        ("phyprobe.world.build", "add_cli"),
        ("phyprobe.features.extract", "add_cli"),
        ("phyprobe.eval.summary", "add_cli"),
        ("phyprobe.eval.targets", "add_cli"),
        ("phyprobe.data.datasets.cli", "add_cli"),
        ("phyprobe.judges.run", "add_cli"),
        ("phyprobe.serve", "add_cli"),
    ]


def build_parser() -> argparse.ArgumentParser:
    import importlib

    parser = argparse.ArgumentParser(prog="phyprobe", description="Learned evaluator of physical consistency in videos.")
    parser.add_argument("--debug", action="store_true", help="show the full traceback of an error")
    sub = parser.add_subparsers(dest="command", required=True)
    for mod, fn in _subcommands():
        getattr(importlib.import_module(mod), fn)(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    import os

    from .errors import DEBUG_ENV, report_user_errors

    parser = build_parser()
    args = parser.parse_args(argv)
    if args.debug:
        os.environ[DEBUG_ENV] = "1"  # so library code that reports its own errors shows tracebacks too
    with report_user_errors(args.debug or None):
        return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
