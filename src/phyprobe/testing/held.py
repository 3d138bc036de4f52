"""A run held part way, for tests that stop a run part way (SIGKILL, SIGTERM) and check what it left.

``python -m phyprobe.testing.held MODULE:QUALNAME N -- ARGS...`` runs ``phyprobe ARGS...`` in which the function
``MODULE:QUALNAME`` holds the run for ten minutes once its ``N``-th call has returned. The test sends its signal while
the run is held, however fast or loaded the machine, instead of racing the run to its end (a run of a few small videos
can finish before a poll loop sees its first output). SIGTERM and SIGINT end the hold as they end any wait: the
command's handler raises KeyboardInterrupt in the main thread, where these functions run.
"""

from __future__ import annotations

import functools
import importlib
import sys
import time

HOLD_SECONDS = 600


def hold_after(target: str, calls: int) -> None:
    """Hold the process in ``target`` (``module:Class.method`` or ``module:function``) once its ``calls``-th call
    has returned; every other call runs as it is."""
    module_name, qualname = target.split(":")
    *parents, name = qualname.split(".")
    owner = importlib.import_module(module_name)
    for parent in parents:
        owner = getattr(owner, parent)
    original = getattr(owner, name)
    count = 0

    @functools.wraps(original)
    def held(*args, **kwargs):
        nonlocal count
        result = original(*args, **kwargs)
        count += 1
        if count == calls:
            time.sleep(HOLD_SECONDS)
        return result

    setattr(owner, name, held)


def held_command(target: str, calls: int) -> list[str]:
    """The command line of a ``phyprobe`` run held in ``target`` once its ``calls``-th call has returned; the
    ``phyprobe`` arguments follow it."""
    return [sys.executable, "-m", "phyprobe.testing.held", target, str(calls), "--"]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 3 or argv[2] != "--":
        raise SystemExit("usage: python -m phyprobe.testing.held MODULE:QUALNAME N -- ARGS...")
    hold_after(argv[0], int(argv[1]))
    from phyprobe.cli import main as cli_main

    return cli_main(argv[3:])


if __name__ == "__main__":
    sys.exit(main())
