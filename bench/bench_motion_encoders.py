"""Cost of the motion-aware encoders against the RGB-only embedded encoder, measured in one run.

Every encoder runs on the same clips, decoded and preprocessed beforehand (its own preprocessing), at the
same batch size and thread count. Encoders are timed round-robin, ``--rounds`` times, and each keeps its
fastest round, so load from other processes on a shared machine biases no encoder in particular. Prints
frames/s and the ratio to ``efficientnet_lite0`` (spatial max, the default).

    python bench/bench_motion_encoders.py            # 16 mp4s of 160x120x32, 16 frames, 160 px
    python bench/bench_motion_encoders.py --quick    # 4 mp4s, 1 round
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import torch
from bench_extract import make_videos

from phyprobe.encoders import from_config
from phyprobe.io.video import ClipSpec, decode_clip


def encoders(image_size: int) -> dict:
    px = {"image_size": image_size}
    return {
        "efficientnet_lite0 (RGB)": ("efficientnet_lite0", {**px, "spatial_pool": "max"}),
        "efficientnet_lite0_flow": ("efficientnet_lite0_flow", px),
        "efficientnet_lite0_flow (DIS)": ("efficientnet_lite0_flow", {**px, "flow_method": "dis"}),
        "efficientnet_lite0_diff": ("efficientnet_lite0_diff", px),
        "flow_stats": ("flow_stats", px),
        "flow_stats (DIS)": ("flow_stats", {**px, "flow_method": "dis"}),
        # the same input size as letterboxed, with the picture where the padding was
        "flow_stats (DIS, squash)": ("flow_stats", {**px, "flow_method": "dis", "resize": "squash"}),
        # the picture alone at about the same pixel count, its aspect kept: the padding is cut away per clip
        "flow_stats (DIS, isotropic)": ("flow_stats", {**px, "flow_method": "dis", "resize": "isotropic"}),
        # the default's base: one more warp per step, for the pixels the flow does not explain
        "flow_stats (DIS, squash, unexplained)": (
            "flow_stats",
            {**px, "flow_method": "dis", "resize": "squash", "unexplained": True},
        ),
        # and the halted and paused levels (options): a Sobel map per frame, a splat of the moving texture and a
        # quantile of the flow per step
        "flow_stats (DIS, squash, unexplained, halted, paused)": (
            "flow_stats",
            {**px, "flow_method": "dis", "resize": "squash", "unexplained": True, "halted": True, "paused": True},
        ),
        "flow_stats (ego_motion affine)": ("flow_stats", {**px, "ego_motion": "affine"}),
        # Timing needs no fitted predictor: a seeded random one costs the same.
        "dynamics (flow_stats base)": ("dynamics", {"checkpoint": None, "base": {"name": "flow_stats", **px}}),
    }


def time_once(enc, batches) -> float:
    t = time.perf_counter()
    for b in batches:
        enc(b)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--videos", type=int, default=16)
    ap.add_argument("--num-frames", type=int, default=16)
    ap.add_argument("--image-size", type=int, default=160)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    n, rounds = (4, 1) if args.quick else (args.videos, args.rounds)
    torch.set_num_threads(args.threads)
    root = Path(tempfile.gettempdir()) / f"bench-motion-{n}"
    manifest = make_videos(root, n)
    clip = ClipSpec(args.num_frames)
    built = {}
    for label, (name, kw) in encoders(args.image_size).items():
        enc = from_config(name, **kw)
        clips = [enc.preprocess(decode_clip(p, enc.clip_spec(clip)).frames) for p in manifest.paths()]
        batches = [torch.stack(clips[i : i + args.batch_size]) for i in range(0, len(clips), args.batch_size)]
        enc(batches[0][:1])  # warm-up (oneDNN primitives, OpenCV)
        built[label] = (enc, batches)
    best = {label: float("inf") for label in built}
    for _ in range(rounds):
        for label, (enc, batches) in built.items():
            best[label] = min(best[label], time_once(enc, batches))
    frames = n * args.num_frames
    ref = frames / best["efficientnet_lite0 (RGB)"]
    print(
        f"{n} clips x {args.num_frames} frames at {args.image_size} px, batch {args.batch_size}, "
        f"{args.threads} threads, best of {rounds} round(s)"
    )
    print(f"{'encoder':32s} {'D':>5s} {'frames/s':>9s} {'vs RGB':>7s}")
    for label, (enc, _) in built.items():
        fps = frames / best[label]
        print(f"{label:32s} {enc.feature_dim:5d} {fps:9.1f} {fps / ref:7.2f}")


if __name__ == "__main__":
    main()
