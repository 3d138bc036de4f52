"""Pairs of cached clip features for the head, indexed by row of a feature table.

The table is either an in-memory tensor or a :class:`~phyprobe.features.table.ShardFeatureTable`
reading rows in place from the cache (``data.streaming``); both index the same way, so the pairs,
batches and shuffling are identical.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch
from torch.utils.data import DataLoader, Dataset, WeightedRandomSampler

from ..features.table import ShardFeatureTable
from ..lightning_setup import L


class PairFeatureDataset(Dataset):
    """Item = both clips' features, the pair label and weight, and each clip's magnitude/anchor.

    Magnitude and anchor targets ride along with the pairs: every video of the training data sits
    in at least one pair, so L_mag and L_cal see it without a second data stream.
    """

    def __init__(
        self,
        feats: torch.Tensor | ShardFeatureTable,
        pair_idx: np.ndarray,
        labels: np.ndarray,
        weights: np.ndarray,
        magnitude: np.ndarray,
        anchor: np.ndarray,
    ):
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
        return self.__getitems__([i])

    def __getitems__(self, idx: list[int]) -> dict:
        """A whole batch by fancy indexing: one gather instead of a Python loop over pairs."""
        i = torch.as_tensor(idx, dtype=torch.long)
        a, b = self.a[i], self.b[i]
        return {
            "fa": self.feats[a],
            "fb": self.feats[b],
            "label": self.label[i],
            "weight": self.weight[i],
            "mag": torch.stack([self.mag[a], self.mag[b]], 1),
            "anchor": torch.stack([self.anchor[a], self.anchor[b]], 1),
        }


def _batch_as_is(batch: dict) -> dict:
    return batch


def pair_arrays(pairs: pd.DataFrame, row_of: dict[str, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    idx = np.array([[row_of[a], row_of[b]] for a, b in zip(pairs["a"], pairs["b"])], dtype=np.int64).reshape(-1, 2)
    return idx, pairs["label"].to_numpy(np.float32), pairs["weight"].to_numpy(np.float32)


class PairFeatureDataModule(L.LightningDataModule):
    def __init__(
        self,
        feats: torch.Tensor | ShardFeatureTable,
        row_of: dict[str, int],
        train_pairs: pd.DataFrame,
        val_pairs: pd.DataFrame,
        magnitude: np.ndarray,
        anchor: np.ndarray,
        batch_size: int = 256,
        num_workers: int = 0,
        sampling: np.ndarray | None = None,
    ):
        super().__init__()
        self.sampling = sampling  # per-training-pair draw probabilities (data.sampling); None = uniform shuffle
        self.feats, self.row_of = feats, row_of
        self.train_pairs, self.val_pairs = train_pairs, val_pairs
        self.magnitude, self.anchor = magnitude, anchor
        self.batch_size, self.num_workers = batch_size, num_workers

    def _dataset(self, pairs: pd.DataFrame) -> PairFeatureDataset:
        idx, lab, w = pair_arrays(pairs, self.row_of)
        return PairFeatureDataset(self.feats, idx, lab, w, self.magnitude, self.anchor)

    def train_dataloader(self):
        sampler = (
            None
            if self.sampling is None
            else WeightedRandomSampler(
                torch.as_tensor(self.sampling, dtype=torch.double), num_samples=len(self.train_pairs), replacement=True
            )
        )
        return DataLoader(
            self._dataset(self.train_pairs),
            batch_size=self.batch_size,
            shuffle=sampler is None,
            sampler=sampler,
            collate_fn=_batch_as_is,
            num_workers=self.num_workers,
            drop_last=len(self.train_pairs) > self.batch_size,
        )

    def val_dataloader(self):
        return DataLoader(
            self._dataset(self.val_pairs),
            batch_size=1024,
            shuffle=False,
            collate_fn=_batch_as_is,
            num_workers=self.num_workers,
        )
