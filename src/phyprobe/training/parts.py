"""What a run trains on: the training sources less exclusions, the training and validation splits, the anchors.

Read by the fit stage (the dynamics model sees the plausible clips of this part) and the train stage (the head),
so both see exactly the same videos."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
from omegaconf import DictConfig, OmegaConf

from ..data.manifest import PAIRS_FILE, Manifest
from ..errors import InvalidOption
from ..features.cache import ManifestCache
from ..features.table import ShardFeatureTable, load_feature_table


def _unit_hash(keys) -> np.ndarray:
    """A fixed number in [0, 1) per key (sha1), so subsets chosen by it do not depend on the seed or row order."""
    return np.array([int(hashlib.sha1(str(k).encode()).hexdigest()[:8], 16) / 2**32 for k in keys])


def _check_fraction(name: str, fraction: float) -> None:
    if not 0.0 <= fraction <= 1.0:
        raise InvalidOption(f"data.{name} must be in [0, 1], got {fraction}")


def anchors_of(videos: pd.DataFrame, fraction: float = 1.0) -> np.ndarray:
    """Calibration targets (NaN = none). With ``fraction`` < 1 only that share of the anchored videos
    keep theirs, chosen by a hash of the video id (the same videos whatever the seed or order): the
    paper anchors a minority of its data, the world anchors every plausible and every obvious clip."""
    _check_fraction("anchor_fraction", fraction)
    anchors = videos["anchor"].astype(float).to_numpy()
    if fraction < 1.0:
        anchors = np.where(_unit_hash(videos["id"]) < fraction, anchors, np.nan)
    return anchors


def subsample_scenes(m: Manifest, fraction: float = 1.0) -> Manifest:
    """The share ``fraction`` of ``m``'s scenes (a scene's videos go together, so twins are never split),
    chosen by a hash of the scene name: a learning curve's smaller sets are nested in its larger ones.
    Videos without a ``scene`` in their metadata count as their own scene."""
    _check_fraction("train_fraction", fraction)
    if fraction == 1.0:
        return m
    scenes = [(md or {}).get("scene", vid) for vid, md in zip(m.videos["id"], m.videos["metadata"])]
    return m.keep(_unit_hash(scenes) < fraction)


def train_sources(manifest: Manifest, wanted) -> list[str]:
    """The sources the head trains (and selects checkpoints) on: ``data.train_sources``, or all of the
    data's sources when it is null. The other sources are then seen only by the evaluation, which is
    how a cross-world or leave-one-source-out run is made."""
    present = sorted(manifest.videos["source"].unique())
    if wanted is None:
        return present
    wanted = [str(s) for s in wanted]
    missing = sorted(set(wanted) - set(present))
    if missing:
        raise InvalidOption(
            f"data.train_sources names source(s) {missing} that {manifest.root} does not have; it has {present}"
        )
    return sorted(wanted)


def trainable_part(manifest: Manifest, data_cfg) -> Manifest:
    """What training may see, in every split: the training sources (:func:`train_sources`) less the videos
    matching ``data.exclude`` (a video column or metadata key -> value(s), as a benchmark's ``where``), so
    that part of a source, e.g. one footage clip, stays unseen by the dynamics fit, the head and checkpoint
    selection alike."""
    sources = train_sources(manifest, data_cfg.get("train_sources"))
    keep = manifest.videos["source"].isin(sources).to_numpy()
    exclude = data_cfg.get("exclude")
    if exclude:
        exclude = OmegaConf.to_container(exclude, resolve=True) if isinstance(exclude, DictConfig) else dict(exclude)
        hit = manifest.matching(exclude)
        if not hit.any():
            raise InvalidOption(
                f"data.exclude {exclude} matches no video of {manifest.root}: check the keys and values"
            )
        keep = keep & ~hit
    return manifest.keep(keep)


TIE = 0.5  # a pair label saying neither video is more violating


def training_parts(manifest: Manifest, cfg: DictConfig) -> tuple[Manifest, Manifest, Manifest]:
    """(trainable part, training set, validation set) of ``manifest`` as the run splits it, refused in one line when
    the head would have nothing to learn from: no training pair, or only ties (label 0.5: they pull scores together
    and never say which video is the more violating), or, when checkpoints are chosen by pair accuracy, no decided
    pair to measure it on. Called on the manifest before any work, and again once unreadable videos are dropped."""
    trainable = trainable_part(manifest, cfg.data)
    train_m = subsample_scenes(trainable.split(*cfg.data.train_splits), cfg.data.get("train_fraction", 1.0))
    val_m = trainable.split(*cfg.data.val_splits)  # checkpoints are chosen on the training sources alone
    pairs_file = manifest.root / PAIRS_FILE
    splits = list(cfg.data.train_splits)
    if train_m.pairs.empty:
        raise InvalidOption(f"{pairs_file}: no training pairs in splits {splits} of {manifest.root}")
    if (train_m.pairs["label"] == TIE).all():
        raise InvalidOption(
            f"{pairs_file}: all {len(train_m.pairs)} training pairs (splits {splits}) are ties (label {TIE}): "
            "no pair says which video is the more violating, so the head has nothing to learn; "
            f"give at least one pair a label other than {TIE}"
        )
    monitor = str(cfg.checkpoint.get("monitor", ""))
    checked = val_m.pairs if not val_m.pairs.empty else train_m.pairs  # the pairs the module validates on
    if monitor.endswith("pair_acc") and (checked["label"] == TIE).all():
        raise InvalidOption(
            f"{pairs_file}: checkpoint.monitor={monitor} needs a validation pair (splits {list(cfg.data.val_splits)}) "
            f"with a label other than {TIE}, and all {len(checked)} are ties; add one, or choose checkpoints by "
            "checkpoint.monitor=val/loss checkpoint.mode=min"
        )
    return trainable, train_m, val_m


@dataclass
class RunData:
    """A run's videos as the train and evaluate stages read them: the manifest less its unreadable videos (and their
    pairs), the cached features in its order, and the run's training parts."""

    manifest: Manifest
    cache: ManifestCache
    feats: torch.Tensor | ShardFeatureTable
    row_of: dict[str, int]
    skipped: list[dict]
    trainable: Manifest
    train_m: Manifest
    val_m: Manifest


def load_run_data(cfg: DictConfig, manifest: Manifest, cache: ManifestCache) -> RunData:
    feats, row_of, manifest, skipped = load_feature_table(cache, manifest, bool(cfg.data.get("streaming", False)))
    trainable, train_m, val_m = training_parts(manifest, cfg)  # again: unreadable videos took their pairs along
    return RunData(manifest, cache, feats, row_of, skipped, trainable, train_m, val_m)
