"""Feature-cache footprint and training memory: bytes per video, and peak RSS while training the
head from the cache at two dataset sizes, streaming (rows read in place) against in-memory.

Features are synthetic (random fp16 of the default encoder's shape, 16 x 1280) written through the
real ShardWriter; each training run is a fresh process so its peak RSS is its own.

    python bench/bench_cache.py            # 2,000 and 8,000 videos
    python bench/bench_cache.py --quick    # 500 and 2,000 videos
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from phyprobe.features.cache import FeatureCache
from phyprobe.io.video import ClipSpec

T, D = 16, 1280
DESC = {"name": "synthetic", "feature_dim": D}


def synthetic_cache(root: Path, n: int, seed: int = 0) -> FeatureCache:
    """``n`` videos of random fp16 features in 256-video shards (reused if already there)."""
    cache = FeatureCache(root, DESC, ClipSpec(T), root / f"manifest-{n}", "float16")
    if len(cache.done_ids()) == n if cache.dir.exists() else False:
        return cache
    rng = np.random.default_rng(seed)
    w = cache.writer(shard_size=256)
    for i in range(n):
        w.write(f"v{i:06d}", rng.standard_normal((T, D), dtype=np.float32), np.arange(T, dtype=np.float32))
    w.close()
    return cache


def synthetic_pairs(n: int, seed: int = 0) -> pd.DataFrame:
    """n/2 random pairs over all videos (any video may meet any other), labels random."""
    rng = np.random.default_rng(seed)
    perm = rng.permutation(n)
    a, b = perm[: n // 2], perm[n // 2 : 2 * (n // 2)]
    return pd.DataFrame(
        {
            "a": [f"v{i:06d}" for i in a],
            "b": [f"v{i:06d}" for i in b],
            "label": rng.integers(0, 2, len(a)).astype(float),
            "weight": 1.0,
        }
    )


def train_head(cache: FeatureCache, n: int, streaming: bool, epochs: int, batch_size: int = 256) -> dict:
    """Train the default head on the synthetic cache; returns timings and this process's peak RSS."""
    import lightning as L
    import torch

    from phyprobe.features.table import ShardFeatureTable
    from phyprobe.head import PhyProbeHead
    from phyprobe.losses import PhyProbeLoss
    from phyprobe.training.data import PairFeatureDataModule
    from phyprobe.training.module import PhyProbeModule

    rss_start = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    ids = [f"v{i:06d}" for i in range(n)]
    if streaming:
        feats = ShardFeatureTable(cache, ids)
    else:
        loaded = cache.load(ids)
        feats = torch.from_numpy(np.stack([loaded[v] for v in ids]))
        del loaded
    row_of = {v: i for i, v in enumerate(ids)}
    head = PhyProbeHead(D)
    head.fit_normalisation(feats)
    pairs = synthetic_pairs(n)
    dm = PairFeatureDataModule(
        feats,
        row_of,
        pairs,
        pairs.iloc[:256],
        np.zeros(n, np.float32),
        np.full(n, np.nan, np.float32),
        batch_size=batch_size,
    )
    module = PhyProbeModule(head, PhyProbeLoss(), warmup_steps=0)
    trainer = L.Trainer(
        max_epochs=epochs,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
    )
    t = time.perf_counter()
    trainer.fit(module, datamodule=dm)
    dt = time.perf_counter() - t
    return {
        "pairs_per_s": len(pairs) * epochs / dt,
        "seconds": dt,
        "num_pairs": len(pairs),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "rss_after_imports_mb": rss_start / 1024,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs=2, default=[2000, 8000])
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--root", type=Path, default=Path(tempfile.gettempdir()) / "phyprobe-bench-cache")
    ap.add_argument("--quick", action="store_true", help="500 and 2,000 videos")
    ap.add_argument("--child", nargs=2, metavar=("N", "MODE"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    sizes = [500, 2000] if args.quick else args.sizes
    if args.child:
        n, mode = int(args.child[0]), args.child[1]
        print(json.dumps(train_head(synthetic_cache(args.root, n), n, mode == "streaming", args.epochs)))
        return

    print(f"features: {T} x {D} fp16 = {T * D * 2} payload bytes per video")
    results = {}
    for n in sizes:
        cache = synthetic_cache(args.root, n)
        shard_bytes = sum(p.stat().st_size for p in cache.shards())
        print(
            f"{n:6d} videos: {len(cache.shards())} shards, {shard_bytes / 2**20:7.1f} MiB, "
            f"{shard_bytes / n:8.0f} bytes/video ({shard_bytes / n / (T * D * 2):.3f} x payload)"
        )
        for mode in ("streaming", "in-memory"):
            out = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--child",
                    str(n),
                    mode,
                    "--root",
                    str(args.root),
                    "--epochs",
                    str(args.epochs),
                ],
                capture_output=True,
                text=True,
                check=True,
            )
            results[n, mode] = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"\n{'mode':10s} {'videos':>7s} {'peak RSS MiB':>13s} {'(after imports)':>16s} {'pairs/s':>9s}")
    for (n, mode), r in results.items():
        print(f"{mode:10s} {n:7d} {r['peak_rss_mb']:13.1f} {r['rss_after_imports_mb']:16.1f} {r['pairs_per_s']:9.0f}")
    small, large = sizes
    for mode in ("streaming", "in-memory"):
        grow = results[large, mode]["peak_rss_mb"] - results[small, mode]["peak_rss_mb"]
        print(
            f"{mode}: peak RSS grows {grow:+.1f} MiB from {small} to {large} videos "
            f"(features of the extra videos: {(large - small) * T * D * 2 / 2**20:.1f} MiB)"
        )


if __name__ == "__main__":
    main()
