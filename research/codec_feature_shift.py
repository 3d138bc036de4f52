"""Where a codec moves the default encoder's features: each feature group's shift from the lossless version, in
units of the group's spread across clips.

The plausible clips of the first ``--scenes`` scenes of a world build are re-encoded in the codec benchmark's
encodings (``phyprobe.io.codecs.benchmark_encodings``); every version goes through the scorer's frozen encoder, and
for each encoding this prints the mean |feature - FFV1 feature| / (sd of the FFV1 features across clips and steps)
of each group of the flow dynamics encoder (over- and under-predicted flow statistics, the stopped and unexplained
levels), and the levels' means. Figures: docs/studies/codec-invariance.md.

    python research/codec_feature_shift.py outputs/demo/scorer --manifest data/leaderboard-world-s1-n200
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import torch

from phyprobe.data.manifest import Manifest
from phyprobe.io.codecs import benchmark_encodings, decode_all, encode
from phyprobe.scorer import Scorer

GROUPS = {"over": slice(0, 224), "under": slice(224, 448), "stopped": slice(448, 449), "unexplained": slice(449, 450)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("scorer")
    ap.add_argument("--manifest", type=Path, default=Path("data/leaderboard-world-s1-n200"))
    ap.add_argument("--scenes", type=int, default=12)
    args = ap.parse_args()
    scorer = Scorer.from_pretrained(args.scorer)
    m = Manifest.load(args.manifest)
    plausible = [
        r
        for r in m.videos.to_dict(orient="records")
        if r["metadata"].get("variant") == "plausible" and r["source"] == "world"
    ][: args.scenes]
    encs, _ = benchmark_encodings()
    feats: dict[str, list[np.ndarray]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i, r in enumerate(plausible):
            frames = decode_all(m.video_path(r["path"]))
            fps = r["metadata"].get("fps", 30)
            for e in encs:
                p = encode(frames, fps, e, Path(tmp) / f"{i}_{e.name}.{e.ext}")
                with torch.no_grad():
                    clip = next(iter(scorer.read(p)))
                    f = scorer.encode(clip[None] if clip.dim() == 4 else clip).float()
                feats.setdefault(e.name, []).append(f.squeeze(0).numpy())
    ref = np.stack(feats["ffv1"])
    if ref.shape[-1] != 450:
        raise SystemExit(f"{args.scorer}: expected the flow dynamics encoder's 450 features, got {ref.shape[-1]}")
    sd = ref.reshape(-1, ref.shape[-1]).std(0) + 1e-6
    print(f"{len(plausible)} plausible clips of {args.manifest}; shift = mean |feature - FFV1's| / sd across clips")
    print("| encoding | " + " | ".join(GROUPS) + " | stopped level | unexplained level |")
    print("|---" * (len(GROUPS) + 3) + "|")
    for name, xs in feats.items():
        x = np.stack(xs)
        z = np.abs(x - ref).mean((0, 1)) / sd
        cells = [f"{z[s].mean():.3f}" for s in GROUPS.values()]
        levels = [f"{x[..., GROUPS[g]].mean():.4f}" for g in ("stopped", "unexplained")]
        print(f"| {name} | " + " | ".join(cells + levels) + " |")


if __name__ == "__main__":
    main()
