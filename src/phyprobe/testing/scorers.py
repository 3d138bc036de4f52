"""Exported scorers built in a second, for tests and benchmarks: a real encoder entry (EfficientNet-Lite0 with its
packaged weights, at a tiny input size) and a seeded random head, written in the real export format."""

from __future__ import annotations

from pathlib import Path

import torch

from phyprobe.encoders import from_config
from phyprobe.head import PhyProbeHead
from phyprobe.io.video import ClipSpec
from phyprobe.scorer import export_scorer
from phyprobe.scorer.reading import Reading

ENCODER = {"name": "efficientnet_lite0", "image_size": 32}


def make_scorer(
    out: Path,
    seed: int = 0,
    num_frames: int = 4,
    extra: dict | None = None,
    hidden: int = 16,
    reading: Reading = Reading("whole"),
    encoder: dict | None = None,
    **encoder_kwargs,
) -> Path:
    """``reading``: whole by default, as a head trained on videos longer than its few-frame clip records.
    ``encoder``: another entry's config ({"name": ..., **options}) instead of the tiny EfficientNet-Lite0."""
    spec = dict(encoder or ENCODER)
    enc = from_config(spec.pop("name"), **{**spec, **encoder_kwargs})
    torch.manual_seed(seed)
    head = PhyProbeHead(enc.feature_dim, hidden=hidden, dropout=0.0)
    with torch.no_grad():  # a spread of scores around 0.5, so clipping does not hide differences
        head.mlp.net[-1].bias.fill_(0.5)
    head_cfg = {"feature_dim": enc.feature_dim, "stats": ["mean", "std", "max"], "hidden": hidden, "dropout": 0.0}
    return export_scorer(out, enc, head, ClipSpec(num_frames), "float16", head_cfg, extra=extra, reading=reading)
