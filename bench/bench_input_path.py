"""CPU time to turn one 720p clip into encoder input: decode + preprocess, resizing in float (every figure so far)
against resizing the decoded uint8 frames first (``resize_in="uint8"``), in one run.

A GPU is fed only as fast as its data workers do this; at real scale (PE-Core at 448 px, 16-32 frames) it is the
input path's whole cost per clip. The clip is written here (PyAV, H.264, 1280x720, 96 frames of moving texture);
each configuration reads it ``--runs`` times, interleaved with the others so a slow moment of the machine touches
every one, and the medians and their ratio are printed (process CPU seconds, one thread)::

    python bench/bench_input_path.py            # --record writes the figures to results/benchmarks.csv
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from phyprobe.encoders.preprocess import Preprocess
from phyprobe.io.video import ClipSpec, decode_clip, write_video

# The input sizes of the embedded default's frame encoder and of the paper's encoder.
TARGETS = {
    "EfficientNet-Lite0, 160 px letterbox": dict(size=(160, 160), mean=(0.5,) * 3, std=(0.5,) * 3),
    "PE-Core, 448 px squash": dict(size=(448, 448), mean=(0.5,) * 3, std=(0.5,) * 3, resize="squash"),
}


def write_clip(path: Path, frames: int = 96) -> Path:
    rng = np.random.default_rng(0)
    texture = rng.integers(0, 256, (720 // 8, 1280 // 8 + frames, 3), np.uint8).repeat(8, 0).repeat(8, 1)
    video = np.stack([texture[:, t : t + 1280] for t in range(frames)])  # one pixel a frame
    write_video(path, video, fps=24)
    return path


def cpu_seconds(path: Path, pre: Preprocess, num_frames: int) -> float:
    t = time.process_time()
    clip = decode_clip(path, ClipSpec(num_frames), fit=pre.size)
    pre(clip.frames)
    return time.process_time() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--num-frames", type=int, default=16)
    ap.add_argument("--record", action="store_true", help="write the figures to results/benchmarks.csv")
    args = ap.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        path = write_clip(Path(tmp) / "720p.mp4")
        configs = {
            (target, dtype): Preprocess(**kw, resize_in=dtype)
            for target, kw in TARGETS.items()
            for dtype in ("float", "uint8")
        }
        times: dict[tuple[str, str], list[float]] = {k: [] for k in configs}
        for _ in range(args.runs):
            for k, pre in configs.items():
                times[k].append(cpu_seconds(path, pre, args.num_frames))
    figures = {}
    print(f"{'input':40s} {'float s':>8s} {'uint8 s':>8s} {'uint8/float':>12s}   ({args.num_frames} frames of 720p)")
    for target in TARGETS:
        f, u = statistics.median(times[target, "float"]), statistics.median(times[target, "uint8"])
        print(f"{target:40s} {f:8.3f} {u:8.3f} {u / f:12.2f}")
        figures |= {
            f"{target}: decode+preprocess, float resize (median CPU s per clip)": (f, "s"),
            f"{target}: decode+preprocess, uint8 resize (median CPU s per clip)": (u, "s"),
            f"{target}: uint8/float": (u / f, "ratio"),
        }
    if args.record:
        from phyprobe.eval.bench_record import record_benchmark

        record_benchmark("input_path", figures)


if __name__ == "__main__":
    main()
