"""Head training speed on cached features: pairs/s, and FLOP/s against a plain matmul here.

A pair costs the pooled MLP on both clips, forward and backward (~3x forward). The matmul
reference is one fp32 GEMM of the head's first-layer shape at the training batch, i.e. the best
this machine does on the head's dominant operation.

    python bench/bench_head.py            # 4,000 cached videos, 3 epochs, batch 256
    python bench/bench_head.py --quick    # 1,000 videos, 1 epoch
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import torch
from bench_cache import D, T, synthetic_cache, train_head

from phyprobe.head import PhyProbeHead


def head_flops_per_pair(hidden: int = 256) -> float:
    """Multiply-adds of the MLP on two pooled clips, x2 FLOP each, x3 for forward + backward."""
    head = PhyProbeHead(D, hidden=hidden)
    macs = sum(m.in_features * m.out_features for m in head.mlp.net if isinstance(m, torch.nn.Linear))
    return 2 * macs * 2 * 3


def matmul_flops(batch: int, repeat: int = 50) -> float:
    a, b = torch.randn(2 * batch, 3 * D), torch.randn(3 * D, 256)
    a @ b
    t = time.perf_counter()
    for _ in range(repeat):
        a @ b
    return 2 * a.shape[0] * a.shape[1] * b.shape[1] * repeat / (time.perf_counter() - t)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--videos", type=int, default=4000)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--root", type=Path, default=Path(tempfile.gettempdir()) / "phyprobe-bench-cache")
    ap.add_argument("--quick", action="store_true", help="1,000 videos, 1 epoch")
    ap.add_argument("--record", action="store_true", help="write the figures to results/benchmarks.csv")
    args = ap.parse_args()
    n, epochs = (1000, 1) if args.quick else (args.videos, args.epochs)
    cache = synthetic_cache(args.root, n)
    per_pair = head_flops_per_pair()
    peak = matmul_flops(args.batch_size)
    print(
        f"{n} cached videos ({T}x{D} fp16), {n // 2} pairs, {epochs} epochs, batch {args.batch_size}, "
        f"{torch.get_num_threads()} torch threads"
    )
    print(f"head: {per_pair / 1e6:.1f} MFLOP per training pair; plain fp32 matmul here: {peak / 1e9:.1f} GFLOP/s")
    figures = {}
    for streaming in (False, True):
        r = train_head(cache, n, streaming, epochs, args.batch_size)
        achieved = r["pairs_per_s"] * per_pair
        mode = "streaming" if streaming else "in-memory"
        figures |= {
            f"{mode}: pairs/s": (r["pairs_per_s"], "1/s"),
            f"{mode}: of plain matmul": (achieved / peak, "ratio"),
        }
        print(
            f"{'streaming' if streaming else 'in-memory':9s}: {r['pairs_per_s']:8.0f} pairs/s  "
            f"{achieved / 1e9:6.2f} GFLOP/s = {achieved / peak:.2f} of matmul  "
            f"({r['seconds']:.1f} s for {r['num_pairs'] * epochs} pairs, incl. validation)"
        )
    if args.record:
        from phyprobe.eval.bench_record import record_benchmark

        record_benchmark("head", figures)


if __name__ == "__main__":
    main()
