"""Batch scoring of a directory against the encoder's pure forward pass, measured in one run.

``phyprobe score SCORER DIR --out FILE`` end to end (listing, decoding, preprocessing, encoder,
head, durable row appends) is compared with the same encoder's forward on clips decoded and
preprocessed beforehand, at the same batch size and thread count, and with the time the encoder's
forward passes took inside the run itself (robust to a shared machine's load). Target on 2 CPU cores: >= 0.9.

    python bench/bench_score_dir.py               # 1,000 clips of 96x64, 16 frames; scorer at 8 frames, 96 px; 1 decode worker
    python bench/bench_score_dir.py --videos 200  # a quicker look
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

from phyprobe import Scorer
from phyprobe.features.extract import default_encoder_threads
from phyprobe.io.video import write_video
from phyprobe.scorer.batch import ResultFile, resolve_inputs, score_videos


def make_clips(root: Path, n: int, frames: int = 16, size=(64, 96)) -> Path:
    """``n`` distinct small mp4s (noise background, a moving square); reused when already there."""
    d = root / f"clips{n}"
    if d.is_dir() and len(list(d.glob("*.mp4"))) == n:
        return d
    rng = np.random.default_rng(0)
    h, w = size
    for i in range(n):
        clip = np.repeat(rng.integers(0, 255, (1, h, w, 3), dtype=np.uint8), frames, axis=0)
        x0 = int(rng.integers(0, w // 2))
        for t in range(frames):
            x = (x0 + 2 * t) % (w - 12)
            clip[t, h // 3 : h // 3 + 12, x : x + 12] = (220, 60, 30)
        write_video(d / f"{i:05d}.mp4", clip, fps=25)
    return d


def pure_forward(scorer: Scorer, videos: list[str], batch_size: int, threads: int) -> float:
    """Videos/s of encoder + head alone on clips decoded beforehand."""
    clips = [scorer.load_clip(v) for v in videos]
    batches = [torch.stack(clips[i : i + batch_size]) for i in range(0, len(clips), batch_size)]
    prev = torch.get_num_threads()
    torch.set_num_threads(threads)
    scorer.head_scores(scorer.encode(batches[0]))  # warm-up
    t = time.perf_counter()
    for b in batches:
        scorer.head_scores(scorer.encode(b))
    dt = time.perf_counter() - t
    torch.set_num_threads(prev)
    return len(clips) / dt


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--videos", type=int, default=1000)
    ap.add_argument("--scorer", help="scorer directory (default: EfficientNet-Lite0 at --image-size, random head)")
    ap.add_argument("--image-size", type=int, default=96)
    ap.add_argument("--frames", type=int, default=8, help="clip length T of the default scorer")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument(
        "--workers",
        type=int,
        default=1,
        help="decode worker processes (1: measured best on a shared 2-core machine; 0 is the CPU default)",
    )
    ap.add_argument("--reference", type=int, default=50, help="clips the pure-forward rate is measured on")
    ap.add_argument("--data", type=Path, default=Path(tempfile.gettempdir()) / "phyprobe-bench-score")
    args = ap.parse_args()
    logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)
    scorer_dir = args.scorer
    if scorer_dir is None:
        from phyprobe.testing.scorers import make_scorer

        scorer_dir = make_scorer(
            args.data / f"scorer{args.image_size}x{args.frames}",
            num_frames=args.frames,
            image_size=args.image_size,
            hidden=256,
        )
    scorer = Scorer.from_pretrained(scorer_dir)
    videos = resolve_inputs([make_clips(args.data, args.videos)])
    threads = default_encoder_threads(args.workers)
    print(
        f"{len(videos)} clips, scorer {scorer.config['encoder']['name']} T={scorer.clip.num_frames}, "
        f"batch {args.batch_size}, decode workers {args.workers}, {len(os.sched_getaffinity(0))} cores, encoder threads {threads}, "
        f"load avg {os.getloadavg()[0]:.2f}"
    )
    before = pure_forward(scorer, videos[: args.reference], args.batch_size, threads)
    print(f"pure forward (encoder + head, clips pre-decoded), measured apart: {before:.1f} videos/s")
    # The same encoder forwards timed inside the run: a reference under the very load the run saw, so a
    # shared machine's drifting load cannot fake or hide an overhead.
    spent = [0.0]
    began = {}
    pre = scorer.encoder.register_forward_pre_hook(lambda m, a: began.__setitem__("t", time.perf_counter()))
    post = scorer.encoder.register_forward_hook(
        lambda m, a, o: spent.__setitem__(0, spent[0] + time.perf_counter() - began["t"])
    )
    out = Path(tempfile.mkdtemp(prefix="bench-score-")) / "scores.jsonl"
    try:
        results = ResultFile(out)
        results.open()
        t = time.perf_counter()
        rep = score_videos(
            scorer,
            videos,
            results.append,
            batch_size=args.batch_size,
            num_workers=args.workers,
            trainer_kwargs={"accelerator": "cpu"},
        )
        dt = time.perf_counter() - t
        assert rep.scored == len(videos) and len(results.finished()) == len(videos)
    finally:
        pre.remove()
        post.remove()
        shutil.rmtree(out.parent)
    inside = len(videos) / spent[0]
    print(f"pure forward inside the run (encoder alone, same batches): {inside:.1f} videos/s")
    print(
        f"phyprobe score DIR --out (start-up + decode + encoder + head + fsync'd rows): {len(videos) / dt:.1f} videos/s "
        f"in {dt:.1f} s  ratio {len(videos) / dt / inside:.3f} (to the forward inside the run), "
        f"{len(videos) / dt / before:.3f} (to the one measured apart)"
    )


if __name__ == "__main__":
    main()
