"""``phyprobe`` command line: one sub-command per job, each defined beside the code it drives.

Only the sub-command asked for is imported, so ``phyprobe --help``, ``--version`` and a mistake in the
arguments answer at once. A user's mistake ends in one line, ``phyprobe: error: <file>: <reason>``, and exit
code 2; the traceback is shown only with the global ``--debug`` (see :mod:`phyprobe.errors`). SIGTERM stops a
command as Ctrl-C does: what finished is kept (results files, feature shards, judgements), and a rerun resumes.
"""

from __future__ import annotations

import argparse
import sys

# name -> (module whose add_cli(sub) adds the full sub-parser, one-line help for the overview)
SUBCOMMANDS = {
    "score": ("phyprobe.scorer.cli", "score videos with an exported scorer: one score in [0, 1] per video"),
    "serve": ("phyprobe.serve", "serve a scorer over HTTP (POST /score, GET /health, GET /ready)"),
    "extract": ("phyprobe.features.extract", "encode a manifest's videos once into the feature cache"),
    "world": ("phyprobe.world.build", "the procedural physics world (plausible / violated / quality-degraded clips)"),
    "data": (
        "phyprobe.data.datasets.cli",
        "convert public datasets into the pair manifest; describe and check manifests",
    ),
    "summarize": ("phyprobe.eval.summary", "collect a multirun's metrics into one table with intervals and bar plots"),
    "table": (
        "phyprobe.eval.design_table",
        "one design's figures over seeds, across worlds and on builds no run trains on",
    ),
    "leaderboard": (
        "phyprobe.leaderboard.cli",
        "rank generators with paired statistics from the scorer and the judges, and a regression gate",
    ),
    "judge": (
        "phyprobe.judges.run",
        "rubric judges (MLLM servers, vision tools) and their agreement with other raters",
    ),
    "suite": (
        "phyprobe.suites.cli",
        "prompt suites: build them from seed paradigms with three agents, import published ones, count them",
    ),
}
EXIT_STOPPED = 130  # stopped by SIGINT or SIGTERM, as a shell reports Ctrl-C
EXIT_BROKEN_PIPE = 141  # stdout's reader closed the pipe, as a shell reports SIGPIPE


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("phyprobe")
    except PackageNotFoundError:  # run from a source tree that is not installed
        from . import __version__

        return __version__


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser; ``command``: the one sub-command whose module is imported for its full arguments (None: only the
    overview of every sub-command)."""
    import importlib

    parser = argparse.ArgumentParser(
        prog="phyprobe", description="Learned evaluator of physical consistency in videos."
    )
    parser.add_argument("--debug", action="store_true", help="show the full traceback of an error")
    parser.add_argument("--version", action="version", version=f"phyprobe {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module, help_) in SUBCOMMANDS.items():
        if name == command:
            importlib.import_module(module).add_cli(sub)
        else:
            sub.add_parser(name, help=help_, add_help=False)
    return parser


def _command(argv: list[str]) -> str | None:
    """The sub-command named in ``argv`` (the first argument that is not an option), if it is one."""
    first = next((a for a in argv if not a.startswith("-")), None)
    return first if first in SUBCOMMANDS else None


_signalled: list[int] = []  # the stopping signals received


def _stop_on_signals() -> dict:
    """SIGTERM (a scheduler's preemption, ``timeout``, ``kill``) raises KeyboardInterrupt, as SIGINT does, so every
    command stops where Ctrl-C stops it; Lightning keeps a handler installed before its own (and turns the interrupt
    into ``sys.exit(1)``, so the signal is remembered here to report it). Returns the handlers it replaced, which
    :func:`main` puts back, so a program calling ``main`` keeps its own."""
    import signal

    def stop(signum, frame):
        _signalled.append(signum)
        raise KeyboardInterrupt(f"signal {signum}")

    return {signum: signal.signal(signum, stop) for signum in (signal.SIGTERM, signal.SIGINT)}  # the previous ones


def _quiet_libraries() -> None:
    """Library deprecation notices are for this package's developers, not for its users' output."""
    import warnings

    for category in (DeprecationWarning, FutureWarning, PendingDeprecationWarning):
        warnings.filterwarnings("ignore", category=category)
    warnings.filterwarnings("ignore", message=r".*is deprecated.*")


def main(argv: list[str] | None = None) -> int:
    import os

    from .errors import DEBUG_ENV, report_user_errors

    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(_command(argv))
    args = parser.parse_args(argv)
    if args.debug:
        os.environ[DEBUG_ENV] = "1"  # so library code that reports its own errors shows tracebacks too
    previous = _stop_on_signals()
    _quiet_libraries()
    try:
        with report_user_errors(args.debug or None):
            return int(args.func(args) or 0)
    except (KeyboardInterrupt, SystemExit) as e:
        if isinstance(e, SystemExit) and not _signalled:
            raise
        print(f"phyprobe {args.command}: stopped; what finished is kept, and the same command resumes", file=sys.stderr)
        return EXIT_STOPPED
    except BrokenPipeError:
        # the reader of stdout left (`phyprobe ... | head`): as a shell tool does, stop quietly; Python would print a
        # traceback when it flushes stdout at exit, so stdout is pointed at /dev/null first
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    finally:
        import signal

        for signum, handler in previous.items():
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)


def run() -> int:
    """The ``phyprobe`` command itself: :func:`main`, then ``gc.freeze()`` before the interpreter shuts down. Its
    last garbage collection would otherwise walk every object that importing torch and Lightning created: ~2 s of
    the exit of a scoring or extraction command on a loaded 2-core machine against ~0.5 s frozen, after its work or
    after Ctrl-C/SIGTERM (bench/bench_cli.py times a scoring command both ways). A program that calls :func:`main`
    keeps its collector as it was."""
    import gc

    code = main()
    gc.freeze()
    return code


if __name__ == "__main__":
    sys.exit(run())
