"""Exported scorers built in a second, for tests and benchmarks: a real encoder entry (EfficientNet-Lite0 with its
packaged weights, at a tiny input size) and a seeded random head, written in the real export format."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
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


def assert_training_scores(got: Sequence[float], expected: Sequence[float]) -> None:
    """An exported scorer's raw scores against those its training run wrote (scores.csv): equal to float32's last
    few places, relative to the score. Scores reach ~30, and the encoder and head run on other batches than in
    training, whose float sums round differently (13 units in the last place of 27.7 in one CI run); a wrong
    preprocessing or weight moves them by 1e-2 and more."""
    np.testing.assert_allclose(np.asarray(got), np.asarray(expected), rtol=1e-5, atol=1e-5)
