"""The learned part of PhyProbe: pooled clip vector -> standardise -> 3-layer GELU MLP -> scalar.

Input standardisation statistics are fitted once on the training set's pooled features and stored
as buffers, so they are exported with the weights and a scorer needs nothing else to reproduce them.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from .pooling import TemporalStatsPool


class MLPHead(nn.Module):
    """3 linear layers with GELU between them. Width 256 on a 3×1280 input is ~1.05M parameters."""

    def __init__(self, in_dim: int, hidden: int = 256, dropout: float = 0.1):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(in_dim, hidden),
            nn.GELU(),
            nn.Dropout(dropout),
            nn.Linear(hidden, hidden),
            nn.GELU(),
            nn.Dropout(dropout),
            nn.Linear(hidden, 1),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)


class PhyProbeHead(nn.Module):
    """Per-step features (B, T, D) -> raw violation score s (B,). Report ``s.clamp(0, 1)``."""

    def __init__(self, feature_dim: int, stats=("mean", "std", "max"), hidden: int = 256, dropout: float = 0.1):
        super().__init__()
        self.pool = TemporalStatsPool(stats)
        in_dim = self.pool.out_dim(feature_dim)
        self.feature_dim = feature_dim
        self.register_buffer("in_mean", torch.zeros(in_dim))
        self.register_buffer("in_std", torch.ones(in_dim))
        self.mlp = MLPHead(in_dim, hidden, dropout)

    @torch.no_grad()
    def fit_normalisation(self, feats, rows=None, batch: int = 256) -> None:
        """Standardisation statistics of the pooled training clips.

        ``feats``: (N, T, D) tensor or a streamed feature table; ``rows``: the training rows (all by
        default). Moments are merged chunk by chunk in float64 (Chan et al.), so a table larger
        than memory is never loaded whole and the result does not depend on the chunk size.
        """
        rows = np.arange(len(feats)) if rows is None else np.asarray(rows, dtype=np.int64)
        n, mean, m2 = 0, None, None
        for i in range(0, len(rows), batch):
            x = self.pool(feats[rows[i : i + batch]].float()).double()
            k, mu = len(x), x.mean(0)
            sq = ((x - mu) ** 2).sum(0)
            if mean is None:
                n, mean, m2 = k, mu, sq
            else:
                delta = mu - mean
                mean = mean + delta * k / (n + k)
                m2 = m2 + sq + delta**2 * n * k / (n + k)
                n += k
        self.in_mean.copy_(mean.float())
        self.in_std.copy_((m2 / n).sqrt().float().clamp_min(1e-4))

    def forward(self, feats: torch.Tensor) -> torch.Tensor:
        x = (self.pool(feats) - self.in_mean) / self.in_std
        return self.mlp(x)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())
