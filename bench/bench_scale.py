"""Per-video work at a simulated million videos: each stage of the path from a manifest to the head's training rows,
at two sizes (100K and 1M videos), with its time and peak memory, each (stage, size) in a fresh process.

A stub encoder of a set forward time (``--forward-ms`` per batch) stands in for decoding and the network, and the
videos' files need not exist: what is measured is everything else the pipeline does per video (manifest parsing,
cache bookkeeping, shard writing, content records, the warm rerun's checks, the training table's index and its
reads). A stage whose time grows ~10x from 100K to 1M is linear in the videos; memory should grow no faster than
the per-video bookkeeping (a few hundred bytes a video), never with the features themselves.

    python bench/bench_scale.py                 # 100K and 1M videos (about 15 minutes on 2 cores)
    python bench/bench_scale.py --quick         # 10K and 100K
    python bench/bench_scale.py --record        # the figures into results/benchmarks.csv

Stages:

- ``manifest``: ``Manifest.load`` of N videos and N/2 pairs;
- ``extract``: ``extract_features`` of every video into an empty cache (the stub's forward: ``--forward-ms``);
- ``warm``: ``extract_features`` again on the full cache: what every later run pays before training;
- ``table``: the streaming feature table a training run builds (the cache read in the manifest's ids, and the
  ``(shard, offset)`` index of every row), then one read of every row, as an epoch does.
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
from types import SimpleNamespace

STAGES = ("manifest", "extract", "warm", "table")


def write_manifest(root: Path, n: int) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    with open(root / "videos.jsonl", "w") as f:
        for i in range(n):
            row = {"id": f"v{i:07d}", "path": f"videos/{i % 1000:03d}/v{i:07d}.mp4", "source": "sim"}
            row |= {"is_real": i % 2 == 0, "split": "train" if i % 10 else "val"}
            f.write(json.dumps(row) + "\n")
    with open(root / "pairs.jsonl", "w") as f:
        for i in range(0, n - 1, 2):
            f.write(json.dumps({"a": f"v{i:07d}", "b": f"v{i + 1:07d}", "label": 1.0, "source": "sim"}) + "\n")
    return root


def stub_encoder(forward_ms: float, dim: int = 16):
    """A frozen encoder whose "decoding" is a zero clip and whose forward sleeps ``forward_ms`` per batch."""
    import numpy as np
    import torch

    from phyprobe.encoders import FrozenEncoder
    from phyprobe.encoders.preprocess import Preprocess

    class Stub(FrozenEncoder):
        def __init__(self):
            super().__init__()
            self.name, self.weights_id, self.feature_dim, self.frames_per_step = "stub", "stub", dim, 1
            self.preprocess = Preprocess(size=(4, 4), mean=(0.0,) * 3, std=(1.0,) * 3)
            self.options = {"forward_ms": forward_ms}

        def read_clip(self, path, clip):
            times = np.arange(clip.num_frames, dtype=np.float32)
            return torch.zeros(clip.num_frames, 3, 4, 4), SimpleNamespace(timestamps=times)

        def forward_features(self, clips):
            time.sleep(forward_ms / 1000)
            return torch.zeros(clips.shape[0], clips.shape[1], dim)

    return Stub().freeze()


def run_stage(stage: str, manifest_dir: Path, cache: Path, forward_ms: float) -> dict:
    """One stage in this process: its seconds and the peak RSS it added over the imports."""
    from phyprobe.data.manifest import Manifest
    from phyprobe.features.extract import extract_features
    from phyprobe.features.table import ShardFeatureTable
    from phyprobe.io.video import ClipSpec

    enc, clip = stub_encoder(forward_ms), ClipSpec(8)
    manifest = Manifest.load(manifest_dir) if stage != "manifest" else None
    base_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t = time.perf_counter()
    kw = dict(batch_size=512, num_workers=0, shard_size=8192)
    trainer = {"accelerator": "cpu", "enable_progress_bar": False}
    if stage == "manifest":
        manifest = Manifest.load(manifest_dir)
    elif stage in ("extract", "warm"):
        extract_features(manifest, enc, clip, cache, trainer_kwargs=trainer, **kw)
    elif stage == "table":
        view = extract_features(manifest, enc, clip, cache, trainer_kwargs=trainer, **kw)
        table = ShardFeatureTable(view, manifest.videos["id"])
        for i in range(0, len(table), 4096):
            table[list(range(i, min(i + 4096, len(table))))]
    seconds = time.perf_counter() - t
    peak_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base_kb) / 1024
    return {"stage": stage, "videos": len(manifest), "seconds": seconds, "added_peak_mb": peak_mb}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="10K and 100K videos")
    ap.add_argument("--forward-ms", type=float, default=0.0, help="the stub encoder's forward time per batch")
    ap.add_argument("--record", action="store_true", help="write the figures to results/benchmarks.csv")
    ap.add_argument("--stage", choices=STAGES, help=argparse.SUPPRESS)  # a child process: one stage
    ap.add_argument("--manifest", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--cache", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.stage:
        print(json.dumps(run_stage(args.stage, args.manifest, args.cache, args.forward_ms)))
        return
    sizes = (10_000, 100_000) if args.quick else (100_000, 1_000_000)
    results: dict[tuple[str, int], dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            manifest = write_manifest(Path(tmp) / f"m{n}", n)
            cache = Path(tmp) / f"cache{n}"
            for stage in STAGES:  # in order: warm and table read what extract wrote
                cmd = [sys.executable, __file__, "--stage", stage, "--manifest", str(manifest), "--cache", str(cache)]
                out = subprocess.run(
                    [*cmd, "--forward-ms", str(args.forward_ms)], capture_output=True, text=True, check=True
                )
                results[stage, n] = json.loads(out.stdout.strip().splitlines()[-1])
                r = results[stage, n]
                print(
                    f"{stage:9s} {n:>9,d} videos  {r['seconds']:8.1f} s  +{r['added_peak_mb']:8.1f} MB peak", flush=True
                )
    small, large = sizes
    print(
        f"\n{'stage':9s} {'time ' + str(large // small) + 'x videos':>16s} {'MB / 1K videos at ' + f'{large:,d}':>26s}"
    )
    figures = {}
    for stage in STAGES:
        a, b = results[stage, small], results[stage, large]
        ratio = b["seconds"] / max(a["seconds"], 1e-9)
        per_k = b["added_peak_mb"] / (large / 1000)
        print(f"{stage:9s} {ratio:16.1f} {per_k:26.3f}")
        for n, r in ((small, a), (large, b)):
            figures[f"{stage}: seconds at {n:,d} videos"] = (r["seconds"], "s")
            figures[f"{stage}: added peak memory at {n:,d} videos"] = (r["added_peak_mb"], "MB")
        figures[f"{stage}: time ratio {large:,d} / {small:,d} videos"] = (ratio, "ratio")
    if args.record:
        from phyprobe.eval.bench_record import record_benchmark

        record_benchmark("scale", figures)


if __name__ == "__main__":
    main()
