"""How fast the ``phyprobe`` command answers what needs no model: ``--help``, ``--version``, a sub-command's help and
a one-line user error, each as a whole process, beside the bare interpreter start and ``import torch`` measured in
the same run (this machine's noise moves all of them alike, so the ratios are the figures to read). And one clip
scored by a tiny exported scorer, as the command runs it (``phyprobe.cli:run``: the garbage collector frozen before
the interpreter shuts down) and as ``main()`` alone would, whose difference is the shutdown that freezing saves.

    python bench/bench_cli.py            # 7 runs each; medians and the ratio to the bare interpreter
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMMANDS = {
    "python -c pass (the interpreter alone)": [sys.executable, "-c", "pass"],
    "python -c 'import torch'": [sys.executable, "-c", "import torch"],
    "phyprobe --help": [sys.executable, "-m", "phyprobe.cli", "--help"],
    "phyprobe --version": [sys.executable, "-m", "phyprobe.cli", "--version"],
    "phyprobe score --help": [sys.executable, "-m", "phyprobe.cli", "score", "--help"],
    "phyprobe score (no such scorer: a one-line error)": [
        sys.executable,
        "-m",
        "phyprobe.cli",
        "score",
        "no/such/x",
        "a.mp4",
    ],
}


def scoring_commands(folder: Path) -> dict[str, list[str]]:
    import numpy as np

    from phyprobe.io.video import write_video
    from phyprobe.testing.scorers import make_scorer

    scorer = make_scorer(folder / "scorer")
    clip = write_video(folder / "clip.mp4", np.random.default_rng(0).integers(0, 255, (8, 32, 32, 3), np.uint8))
    args = ["score", str(scorer), str(clip), "--json"]
    unfrozen = "import sys; from phyprobe.cli import main; sys.exit(main(sys.argv[1:]))"
    return {
        "phyprobe score (one clip)": [sys.executable, "-m", "phyprobe.cli", *args],
        "phyprobe score (one clip), main() alone": [sys.executable, "-c", unfrozen, *args],
    }


def seconds(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--record", action="store_true", help="write the figures to results/benchmarks.csv")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        commands = COMMANDS | scoring_commands(Path(tmp))
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.runs):  # interleaved, so a slow moment of the machine touches every command
            for name, cmd in commands.items():
                times[name].append(seconds(cmd))
    base = statistics.median(next(iter(times.values())))
    print(f"{'command':55s} {'median s':>9s} {'max s':>7s} {'x interpreter':>14s}")
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"{name:55s} {med:9.3f} {max(ts):7.3f} {med / base:14.1f}")
    if args.record:
        from phyprobe.eval.bench_record import record_benchmark

        record_benchmark(
            "cli",
            {f"{name}: median": (statistics.median(ts), "s") for name, ts in times.items()}
            | {f"{name}: x interpreter": (statistics.median(ts) / base, "ratio") for name, ts in times.items()},
        )


if __name__ == "__main__":
    main()
