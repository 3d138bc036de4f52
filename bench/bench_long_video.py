"""How long ``phyprobe score`` takes on a two-hour video: 180,000 frames of 32 x 32 at 25 fps, written here, scored
with a scorer whose reading is windows (the embedded default's), capped at 64 windows spread over the file (the
default), beside ``--reading whole``, a 1,000-frame clip of the same kind, and a folder holding the long video among three short
clips (every one must be scored), each as a whole process in one run.
The capped reading decodes the 64 windows' frames alone, seeking to the keyframe before each (x264's default keyframe
interval, 250 frames, as most encoders write); 64 of the 11,249 windows go through the encoder. Beside it, in the
same run, the decoding of those windows' frames with seeking against decoding every frame to cut them from the
stream (the reading before seeking).

    python bench/bench_long_video.py [--record]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def write(path: Path, frames: int) -> Path:
    import av

    rng = np.random.default_rng(0)
    with av.open(str(path), "w") as c:
        s = c.add_stream("libx264", rate=25)
        s.width, s.height, s.pix_fmt = 32, 32, "yuv420p"
        s.options = {"preset": "ultrafast"}
        block = rng.integers(0, 255, (250, 32, 32, 3), dtype=np.uint8)
        for i in range(frames):
            for p in s.encode(av.VideoFrame.from_ndarray(block[i % 250], format="rgb24")):
                c.mux(p)
        for p in s.encode():
            c.mux(p)
    return path


def seconds(*args: str, rows: int = 1) -> float:
    """Wall seconds of ``phyprobe score ARGS --json``, a whole process; it must exit 0 with ``rows`` scores."""
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "phyprobe.cli", "score", *args, "--json"], capture_output=True, text=True
    )
    if done.returncode:
        raise SystemExit(done.stderr[-2000:])
    scored = [line for line in done.stdout.splitlines() if '"raw_score"' in line]
    if len(scored) != rows:
        raise SystemExit(f"expected {rows} scores, got {len(scored)}:\n{done.stdout[-2000:]}")
    return time.perf_counter() - t0


def decoding(path: Path, starts: list[int]) -> dict[str, float]:
    """Seconds to decode the windows' frames by seeking and by decoding every frame, and their ratio (figure:
    (value, unit))."""
    from phyprobe.io.video import FrameStream
    from phyprobe.scorer.reading import window_frames

    wanted = set(window_frames(starts, 32))
    t0 = time.perf_counter()
    sought = sum(1 for _ in FrameStream(path).select(wanted))
    t1 = time.perf_counter()
    through = sum(1 for i, _ in enumerate(FrameStream(path)) if i in wanted)
    t2 = time.perf_counter()
    assert sought == through == len(wanted)
    return {
        "decoding the 64 windows' frames, seeking: s": (t1 - t0, "s"),
        "decoding the 64 windows' frames, every frame decoded: s": (t2 - t1, "s"),
        "decoding the 64 windows' frames, seeking / every frame": ((t1 - t0) / (t2 - t1), "ratio"),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--record", action="store_true", help="write the figures to results/benchmarks.csv")
    args = ap.parse_args()
    from phyprobe.scorer.reading import Reading
    from phyprobe.testing.scorers import make_scorer

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        t0 = time.perf_counter()
        long, short = write(tmp / "two_hours.mp4", 180_000), write(tmp / "short.mp4", 1_000)
        print(f"wrote the videos in {time.perf_counter() - t0:.0f} s")
        scorer = str(make_scorer(tmp / "scorer", num_frames=32, reading=Reading("windows")))
        figures = {
            "2-hour video, 64 windows (default): s": (seconds(scorer, str(long)), "s"),
            **decoding(long, Reading("windows").window_starts(180_000, 32)),
            "2-hour video, --reading whole: s": (seconds(scorer, str(long), "--reading", "whole"), "s"),
            "1,000-frame video, 61 windows: s": (seconds(scorer, str(short)), "s"),
        }
        folder = tmp / "folder"  # the long video among short clips: every one of them is scored
        folder.mkdir()
        os.link(long, folder / long.name)  # the same file, not a copy
        for i in range(3):
            os.link(short, folder / f"short{i}.mp4")
        figures["a folder: the 2-hour video and 3 short clips, every one scored: s"] = (
            seconds(scorer, str(folder), rows=4),
            "s",
        )
    for name, (value, unit) in figures.items():
        print(f"{name:72s} {value:8.2f} {unit}")
    if args.record:
        from phyprobe.eval.bench_record import record_benchmark

        record_benchmark(
            "long_video",
            figures,
        )


if __name__ == "__main__":
    main()
