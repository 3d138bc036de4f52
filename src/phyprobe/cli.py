"""``phyprobe`` command line: one sub-command per job, each defined beside the code it drives."""

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
        ("phyprobe.data.datasets.cli", "add_cli"),
        ("phyprobe.judges.run", "add_cli"),
        ("phyprobe.serve", "add_cli"),
    ]


def build_parser() -> argparse.ArgumentParser:
    import importlib

    parser = argparse.ArgumentParser(prog="phyprobe", description="Learned evaluator of physical consistency in videos.")
    sub = parser.add_subparsers(dest="command", required=True)
    for mod, fn in _subcommands():
        getattr(importlib.import_module(mod), fn)(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
