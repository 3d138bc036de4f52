"""Extraction throughput against the encoder's pure forward pass, measured in one run.

End-to-end extraction (decode in DataLoader workers + preprocess + encoder + shard writing through
``extract_features``) is compared with the same encoder's forward on clips decoded beforehand, at
the same batch size. Target: extraction >= 0.85 of pure-forward frames/s.

    python bench/bench_extract.py            # 64 mp4s of 160x120x32, efficientnet_lite0 @ 160 px
    python bench/bench_extract.py --quick    # 16 mp4s
    python bench/bench_extract.py --sweep    # every (workers, encoder threads) combination
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from phyprobe.data.manifest import Manifest, write_jsonl
from phyprobe.encoders import from_config
from phyprobe.features.extract import default_encoder_threads, extract_features
from phyprobe.io.video import ClipSpec, decode_clip, write_video

CPU = {"accelerator": "cpu", "enable_progress_bar": False}


def make_videos(root: Path, n: int, size=(120, 160), frames: int = 32, seed: int = 0) -> Manifest:
    """``n`` textured mp4s (static noise background, a moving square) in a manifest; reused if present.

    Odd-numbered videos teleport their square halfway and are paired with the video before them,
    so the manifest also trains (3/4 of the pairs in ``train``, the rest in ``val``).
    """
    if (root / "videos.jsonl").exists() and len(Manifest.load(root)) == n:
        return Manifest.load(root)
    rng = np.random.default_rng(seed)
    h, w = size
    videos, pairs = [], []
    for i in range(n):
        split = "train" if (i // 2) % 4 else "val"
        bg = rng.integers(0, 255, (h, w, 3), dtype=np.uint8)
        clip = np.repeat(bg[None], frames, axis=0)
        x0, vx = rng.uniform(0, w / 2), rng.uniform(1, 3)
        for t in range(frames):
            x = int(x0 + vx * t + (40 if i % 2 and t >= frames // 2 else 0)) % (w - 24)
            clip[t, h // 3 : h // 3 + 24, x : x + 24] = (220, 60, 30)
        write_video(root / "v" / f"{i:04d}.mp4", clip, fps=25)
        videos.append(
            {
                "id": f"v{i:04d}",
                "path": f"v/{i:04d}.mp4",
                "source": "bench",
                "is_real": i % 2 == 0,
                "magnitude": float(i % 2),
                "anchor": i % 2,
                "split": split,
            }
        )
        if i % 2:
            pairs.append(
                {
                    "a": f"v{i:04d}",
                    "b": f"v{i - 1:04d}",
                    "label": 1.0,
                    "source": "bench",
                    "correspondence": "none",
                    "kind": "synthetic",
                    "split": split,
                }
            )
    write_jsonl(root / "videos.jsonl", videos)
    write_jsonl(root / "pairs.jsonl", pairs)
    return Manifest.load(root)


def pure_forward_fps(encoder, manifest: Manifest, clip: ClipSpec, batch_size: int, threads: int) -> float:
    """Frames/s of the encoder alone on clips decoded and preprocessed beforehand."""
    clips = [encoder.preprocess(decode_clip(p, clip).frames) for p in manifest.paths()]
    batches = [torch.stack(clips[i : i + batch_size]) for i in range(0, len(clips), batch_size)]
    prev = torch.get_num_threads()
    torch.set_num_threads(threads)
    encoder(batches[0])  # warm-up (oneDNN primitive creation)
    t = time.perf_counter()
    for b in batches:
        encoder(b)
    dt = time.perf_counter() - t
    torch.set_num_threads(prev)
    return sum(len(b) for b in batches) * clip.num_frames / dt


def extract_fps(
    encoder, manifest: Manifest, clip: ClipSpec, batch_size: int, workers: int, threads: int | None
) -> float:
    cache = Path(tempfile.mkdtemp(prefix="bench-extract-"))
    try:
        t = time.perf_counter()
        extract_features(
            manifest,
            encoder,
            clip,
            cache,
            batch_size=batch_size,
            num_workers=workers,
            encoder_threads=threads,
            trainer_kwargs=CPU,
        )
        dt = time.perf_counter() - t
    finally:
        shutil.rmtree(cache)
    return len(manifest) * clip.num_frames / dt


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--videos", type=int, default=64)
    ap.add_argument("--frames", type=int, default=16, help="clip length T")
    ap.add_argument("--image-size", type=int, default=160)
    ap.add_argument("--batch-size", type=int, default=16, help="videos per forward (as configs/train.yaml extract)")
    ap.add_argument(
        "--workers", type=int, default=0, help="decode workers (the CPU default of configs/train.yaml is 0)"
    )
    ap.add_argument("--data", type=Path, default=Path(tempfile.gettempdir()) / "phyprobe-bench-videos")
    ap.add_argument("--quick", action="store_true", help="16 videos")
    ap.add_argument("--sweep", action="store_true", help="also try workers 0..2 x encoder threads")
    ap.add_argument("--record", action="store_true", help="write the figures to results/benchmarks.csv")
    args = ap.parse_args()
    logging.getLogger("lightning").setLevel(logging.ERROR)
    n = 16 if args.quick else args.videos
    manifest = make_videos(args.data / f"n{n}", n)
    clip = ClipSpec(args.frames)
    enc = from_config("efficientnet_lite0", image_size=args.image_size)
    cores = len(os.sched_getaffinity(0))
    print(
        f"{n} videos 160x120x32 -> T={clip.num_frames} frames @ {args.image_size}px, batch {args.batch_size} videos, "
        f"{cores} cores, load avg {os.getloadavg()[0]:.2f}"
    )

    pure = 0.0
    for threads in range(1, cores + 1):
        fps = pure_forward_fps(enc, manifest, clip, args.batch_size, threads)
        print(f"pure forward, clips pre-decoded, {threads} threads: {fps:8.1f} frames/s")
        pure = max(pure, fps)
    print(f"reference = best pure forward: {pure:.1f} frames/s")
    configs = [(args.workers, None)]
    if args.sweep:
        configs += [(w, t) for w in (0, 1, 2) for t in range(1, cores + 1) if (w, t) != (args.workers, None)]
    figures = {"pure forward, best thread count": (pure, "frames/s")}
    for workers, threads in configs:
        fps = extract_fps(enc, manifest, clip, args.batch_size, workers, threads)
        used = threads or default_encoder_threads(workers)
        print(
            f"extraction workers={workers} encoder threads={used}{' (default)' if threads is None else ''}: "
            f"{fps:8.1f} frames/s  ratio {fps / pure:.3f}"
        )
        figures[f"extraction workers={workers} threads={used} / pure forward"] = (fps / pure, "ratio")
    if args.record:
        from phyprobe.eval.bench_record import record_benchmark

        record_benchmark("extract_efficientnet_lite0", figures)


if __name__ == "__main__":
    main()
