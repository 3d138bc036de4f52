"""Temporal statistics pooling: per-step features (B, T, D) -> one clip vector.

The paper concatenates mean, std and max over time: mean says what is in the clip, std how much it
changes, max catches a short-lived event that the mean dilutes. ``delta`` (mean absolute step-to-step
change) is our addition for ablations — it sees *when* things change, which the order-free
statistics cannot.
"""

from __future__ import annotations

import torch
from torch import nn

STATS = ("mean", "std", "max", "delta")


class TemporalStatsPool(nn.Module):
    def __init__(self, stats: tuple[str, ...] | list[str] = ("mean", "std", "max")):
        super().__init__()
        stats = tuple(stats)
        bad = [s for s in stats if s not in STATS]
        if not stats or bad:
            raise ValueError(f"pooling stats must be a non-empty subset of {STATS}, got {stats}")
        self.stats = stats

    def out_dim(self, feature_dim: int) -> int:
        return feature_dim * len(self.stats)

    def forward(self, feats: torch.Tensor) -> torch.Tensor:
        if feats.ndim != 3:
            raise ValueError(f"expected features (B, T, D), got {tuple(feats.shape)}")
        feats = feats.float()
        out = []
        for s in self.stats:
            if s == "mean":
                out.append(feats.mean(1))
            elif s == "std":
                # Population std: a single-step clip has std 0, not NaN.
                out.append(feats.std(1, correction=0))
            elif s == "max":
                out.append(feats.amax(1))
            else:
                d = feats.diff(dim=1).abs().mean(1) if feats.shape[1] > 1 else torch.zeros_like(feats[:, 0])
                out.append(d)
        return torch.cat(out, dim=-1)
