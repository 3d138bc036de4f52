"""Pairs of cached clip features for the head, indexed by row of a feature table.

The table is either an in-memory tensor or a :class:`~phyprobe.features.table.ShardFeatureTable`
reading rows in place from the cache (``data.streaming``); both index the same way, so the pairs,
batches and shuffling are identical.
"""

from __future__ import annotations

import lightning as L
import numpy as np
import pandas as pd
import torch
from torch.utils.data import DataLoader, Dataset

from ..features.table import ShardFeatureTable
from ..head import PhyProbeHead


class PairFeatureDataset(Dataset):
    """Item = both clips' features, the pair label and weight, and each clip's magnitude/anchor.

    Magnitude and anchor targets ride along with the pairs: every video of the training data sits
    in at least one pair, so L_mag and L_cal see it without a second data stream.
    """

    def __init__(self, feats: torch.Tensor | ShardFeatureTable, pair_idx: np.ndarray, labels: np.ndarray, weights: np.ndarray,
                 magnitude: np.ndarray, anchor: np.ndarray):
        self.feats = feats
        self.a = torch.as_tensor(pair_idx[:, 0], dtype=torch.long)
        self.b = torch.as_tensor(pair_idx[:, 1], dtype=torch.long)
        self.label = torch.as_tensor(labels, dtype=torch.float32)
        self.weight = torch.as_tensor(weights, dtype=torch.float32)
        self.mag = torch.tensor(magnitude, dtype=torch.float32)
        self.anchor = torch.tensor(anchor, dtype=torch.float32)

    def __len__(self) -> int:
        return len(self.label)

    def __getitem__(self, i):
        a, b = self.a[i], self.b[i]
        return {
            "fa": self.feats[a], "fb": self.feats[b], "label": self.label[i], "weight": self.weight[i],
            "mag": torch.stack([self.mag[a], self.mag[b]]), "anchor": torch.stack([self.anchor[a], self.anchor[b]]),
        }


def pair_arrays(pairs: pd.DataFrame, row_of: dict[str, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    idx = np.array([[row_of[a], row_of[b]] for a, b in zip(pairs["a"], pairs["b"])], dtype=np.int64).reshape(-1, 2)
    return idx, pairs["label"].to_numpy(np.float32), pairs["weight"].to_numpy(np.float32)


@torch.no_grad()
def fit_normalisation_streamed(head: PhyProbeHead, feats: torch.Tensor | ShardFeatureTable, rows, batch: int = 256) -> None:
    """``head.fit_normalisation`` in chunks: pooled moments merged in float64, never all in memory.

    Same statistics as the in-memory fit up to float rounding (Chan et al.'s pairwise merge).
    """
    rows = np.asarray(rows, dtype=np.int64)
    n, mean, m2 = 0, None, None
    for i in range(0, len(rows), batch):
        x = head.pool(feats[rows[i : i + batch]].float()).double()
        k, mu = len(x), x.mean(0)
        sq = ((x - mu) ** 2).sum(0)
        if mean is None:
            n, mean, m2 = k, mu, sq
        else:
            delta = mu - mean
            mean = mean + delta * k / (n + k)
            m2 = m2 + sq + delta**2 * n * k / (n + k)
            n += k
    head.in_mean.copy_(mean.float())
    head.in_std.copy_((m2 / n).sqrt().float().clamp_min(1e-4))


class PairFeatureDataModule(L.LightningDataModule):
    def __init__(self, feats: torch.Tensor | ShardFeatureTable, row_of: dict[str, int], train_pairs: pd.DataFrame, val_pairs: pd.DataFrame,
                 magnitude: np.ndarray, anchor: np.ndarray, batch_size: int = 256, num_workers: int = 0):
        super().__init__()
        self.feats, self.row_of = feats, row_of
        self.train_pairs, self.val_pairs = train_pairs, val_pairs
        self.magnitude, self.anchor = magnitude, anchor
        self.batch_size, self.num_workers = batch_size, num_workers

    def _dataset(self, pairs: pd.DataFrame) -> PairFeatureDataset:
        idx, lab, w = pair_arrays(pairs, self.row_of)
        return PairFeatureDataset(self.feats, idx, lab, w, self.magnitude, self.anchor)

    def train_dataloader(self):
        return DataLoader(self._dataset(self.train_pairs), batch_size=self.batch_size, shuffle=True,
                          num_workers=self.num_workers, drop_last=len(self.train_pairs) > self.batch_size)

    def val_dataloader(self):
        return DataLoader(self._dataset(self.val_pairs), batch_size=1024, shuffle=False, num_workers=self.num_workers)
