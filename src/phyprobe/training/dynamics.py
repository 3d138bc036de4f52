"""train_dynamics: a base encoder's cached features of plausible clips -> a frozen next-step predictor.

``train_dynamics.py`` composes the Hydra config (configs/dynamics.yaml) and calls :func:`train_dynamics`.
Only plausible clips are encoded and fitted on, from the training splits (validation splits choose the
epoch), so the dynamics model never sees a violation. Base features go through the project's feature
cache under the base encoder's own key, so ``train.py backbone=<base>`` later reuses them.
"""

from __future__ import annotations

import logging
from pathlib import Path

import torch
from omegaconf import DictConfig, OmegaConf

from ..data.manifest import Manifest
from ..encoders.dynamics import fit_predictor, plausible_mask, predicted_columns, save_checkpoint
from ..features.extract import extract_features
from ..instantiate import build_encoder, instantiate_or_user_error
from ..io.video import ClipSpec
from ..lightning_setup import L
from ..runinfo import save_run_info
from .parts import trainable_part

log = logging.getLogger(__name__)


def plausible_features(cache, manifest: Manifest, splits) -> tuple[list[torch.Tensor], list[str]]:
    """(T, D) cached features of the plausible videos in ``splits``; videos that could not be decoded are
    named in the log and left out (the cache records why)."""
    m = manifest.split(*splits)
    ids = list(m.videos["id"][plausible_mask(m.videos)])
    feats = cache.load(ids)
    missing = [v for v in ids if v not in feats]
    for v in missing:
        log.warning("dynamics: plausible video %s has no cached features (unreadable: see %s)", v, cache.dir)
    return [torch.from_numpy(feats[v]).float() for v in ids if v in feats], missing


def train_dynamics(cfg: DictConfig) -> dict:
    """Fit the dynamics model described by ``cfg`` and write its checkpoint; returns the fit summary."""
    out = Path(cfg.paths.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    L.seed_everything(cfg.seed, workers=True)
    save_run_info(out, OmegaConf.to_container(cfg, resolve=True), cfg.seed)

    base = build_encoder(cfg.base)
    manifest: Manifest = instantiate_or_user_error(cfg.data.source)
    clip = ClipSpec(**cfg.clip)
    seen = trainable_part(manifest, cfg.data)  # a cross-world model sees one world; data.exclude keeps videos out
    sources = sorted(seen.videos["source"].unique())
    wanted = seen.keep(
        plausible_mask(seen.videos)
        & seen.videos["split"].isin([*cfg.data.train_splits, *cfg.data.val_splits]).to_numpy()
    )
    cache = extract_features(wanted, base, clip, cfg.paths.cache_dir, dtype=cfg.feature_dtype, **cfg.extract)
    train, skipped_train = plausible_features(cache, wanted, cfg.data.train_splits)
    val, skipped_val = plausible_features(cache, wanted, cfg.data.val_splits)
    p = cfg.predictor
    predictor, history = fit_predictor(
        train,
        val,
        context=p.context,
        hidden=p.hidden,
        epochs=p.epochs,
        lr=p.lr,
        weight_decay=p.weight_decay,
        batch_size=p.batch_size,
        seed=cfg.seed,
        patience=p.get("patience"),
        columns=predicted_columns(base),
        after=p.get("after", 0),
    )
    best = min(history, key=lambda h: h["val_l1"])
    summary = {
        "num_train_clips": len(train),
        "num_val_clips": len(val),
        "skipped": skipped_train + skipped_val,
        "best_epoch": best["epoch"],
        "val_l1": best["val_l1"],
        "train_l1": best["train_l1"],
        "feature_cache": str(cache.dir),
        "manifest": str(manifest.root),
        "sources": sources,
    }
    save_checkpoint(out, predictor, base, clip.to_dict(), extra={"fit": summary, "history": history})
    log.info("dynamics checkpoint written to %s (val L1 %.4f at epoch %d)", out, best["val_l1"], best["epoch"])
    return summary
