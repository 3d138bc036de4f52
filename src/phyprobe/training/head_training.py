"""The train stage: the head on the run's cached features -> ``<run>/head`` (weights, config) and ``scores.csv``.

Reads only what the stages before it wrote (the feature cache, the fitted encoder part); the export and evaluate
stages read what it writes, so each can run as a job of its own."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from hydra.utils import instantiate
from lightning.pytorch.callbacks import ModelCheckpoint
from omegaconf import DictConfig, OmegaConf
from safetensors.torch import load_file, save_file

from ..data.magnitudes import normalise_magnitudes
from ..data.manifest import Manifest
from ..data.sampling import sampling_weights
from ..data.video_index import VideoIndex
from ..encoders import FrozenEncoder
from ..errors import InvalidOption, UserError
from ..head import PhyProbeHead, score_features
from ..io.video import ClipSpec, VideoDecodeError, probe
from ..lightning_setup import L
from ..runinfo import atomic_write_json, save_run_info
from ..scorer.reading import MAX_WINDOWS, Reading, trained_reading
from .data import PairFeatureDataModule
from .module import PhyProbeModule
from .parts import RunData, anchors_of
from .recipe import describe_recipe, recipe_line

log = logging.getLogger(__name__)

HEAD_DIR = "head"  # <run>/head: model.safetensors and config.json, what the export stage bundles
SCORES = "scores.csv"  # every video's raw and clipped score, what the evaluate stage reads


HEAD_GROUPS = ("per_feature", "encoder")


def head_groups(encoder: FrozenEncoder, how: str) -> list[list[int]] | None:
    """The monotone head's weight groups (``head.groups``): None for a weight per input (``per_feature``), or
    the encoder's kinds of evidence (``encoder``; the dynamics encoder's :meth:`evidence_groups`)."""
    if how not in HEAD_GROUPS:
        raise InvalidOption(f"head.groups must be one of {HEAD_GROUPS}, got {how!r}")
    if how == "per_feature":
        return None
    if not hasattr(encoder, "evidence_groups"):
        raise InvalidOption(
            f"head.groups=encoder: encoder {encoder.name!r} does not group its features by evidence (dynamics does)"
        )
    return list(encoder.evidence_groups().values())


def video_frames(m: Manifest) -> list[int]:
    """Each video's frame count: from its metadata (world builds record it), its dataset's index (``phyprobe data
    index``), else probed from the file."""
    index = None
    out = []
    for path, md in zip(m.videos["path"], m.videos["metadata"]):
        n = (md or {}).get("num_frames")
        if n is None:
            index = index or VideoIndex.for_manifest(m)
            row = index.lookup(m.video_path(path))
            n = row["num_frames"] if row else None
        if n is None:
            try:
                n = probe(m.video_path(path))["num_frames"]
            except VideoDecodeError:
                continue  # not read in training either: it was reported as skipped
        out.append(int(n))
    return out


def reading_of(cfg: DictConfig, clip: ClipSpec, train_m: Manifest) -> Reading:
    """``reading``: how the exported scorer reads a video longer than the clip, as the training clips were read
    (``auto``: windows when every training video is at most the clip's length)."""
    r = OmegaConf.to_container(cfg.get("reading") or {}, resolve=True)
    try:
        frames = video_frames(train_m) if r.get("mode", "auto") == "auto" else []
        return trained_reading(
            r.get("mode", "auto"),
            r.get("stride"),
            r.get("combine", "mean"),
            clip.num_frames,
            clip.mode == "uniform",
            frames,
            r.get("max_windows", MAX_WINDOWS),
        )
    except (TypeError, ValueError) as e:
        raise InvalidOption(f"reading: {e}") from None


class DivergedHeadError(UserError):
    """Training ended with a head whose scores are not finite: nothing is exported."""


def check_scores_finite(raw: np.ndarray, ids, head: PhyProbeHead, feats, cfg: DictConfig, head_dir: Path) -> None:
    """Refuse (one line naming the cause) to export a head that scores any video of the run NaN or inf: the exported
    scorer would answer no video, and every metric of the run would be NaN."""
    bad = np.flatnonzero(~np.isfinite(raw))
    if not len(bad):
        return
    first = f"{len(bad)} of {len(raw)} videos (first: {list(ids)[bad[0]]}, {raw[bad[0]]})"
    broken = [n for n, t in head.state_dict().items() if t.is_floating_point() and not torch.isfinite(t).all()]
    rows = torch.as_tensor(bad[:256], dtype=torch.long)
    if broken:
        cause = f"its weights {broken[:3]} are NaN/inf: training diverged; lower optim.lr ({cfg.optim.lr})"
    elif not torch.isfinite(torch.as_tensor(feats[rows]).float()).all():
        cause = "the encoder's features of those videos are NaN/inf (see the feature cache); exclude those videos"
    else:
        big = max(float(t.abs().max()) for t in head.state_dict().values() if t.is_floating_point() and t.numel())
        cause = (
            f"its weights grew to {big:.3g} and its output overflows: training diverged; "
            f"lower optim.lr ({cfg.optim.lr})"
        )
    raise DivergedHeadError(
        f"{head_dir}: not written, nor a scorer: the trained head scores {first} non-finite; {cause}"
    )


@dataclass
class TrainedHead:
    """The train stage's result: the head, its constructor's arguments (the scorer's ``head`` block), how the
    exported scorer reads a video, and what it was trained on."""

    head: PhyProbeHead
    config: dict
    reading: Reading
    training: dict


def train_head(cfg: DictConfig, out: Path, encoder: FrozenEncoder, data: RunData) -> TrainedHead:
    """Train the head described by ``cfg`` on ``data``'s pairs; write ``<out>/head`` and ``<out>/scores.csv``."""
    L.seed_everything(cfg.seed, workers=True)
    if data.skipped:
        atomic_write_json(out / "skipped_videos.json", data.skipped)
        log.warning("%d unreadable videos excluded; see %s", len(data.skipped), out / "skipped_videos.json")
    feats, row_of, manifest, train_m, val_m = data.feats, data.row_of, data.manifest, data.train_m, data.val_m
    clip = ClipSpec(**cfg.clip)
    reading = reading_of(cfg, clip, train_m)
    kind = cfg.head.get("kind", "mlp")  # groups weigh a monotone head's inputs; an MLP has no weights to share
    groups = head_groups(encoder, cfg.head.get("groups", "per_feature")) if kind == "monotone" else None
    head = PhyProbeHead(
        encoder.feature_dim,
        stats=tuple(cfg.pooling.stats),
        hidden=cfg.head.hidden,
        dropout=cfg.head.dropout,
        kind=kind,
        groups=groups,
    )
    train_rows = [row_of[v] for v in train_m.videos["id"]]
    head.fit_normalisation(feats, train_rows)
    recipe = describe_recipe(cfg, encoder, head, clip, reading)
    save_run_info(out, OmegaConf.to_container(cfg, resolve=True), cfg.seed, recipe=recipe)
    log.info("recipe: %s", recipe_line(recipe))

    dm = PairFeatureDataModule(
        feats,
        row_of,
        train_m.pairs,
        val_m.pairs if not val_m.pairs.empty else train_m.pairs,
        normalise_magnitudes(manifest.videos, cfg.data.magnitude_transform),
        anchors_of(manifest.videos, cfg.data.get("anchor_fraction", 1.0)),
        batch_size=cfg.optim.batch_size,
        sampling=sampling_weights(train_m.pairs, cfg.data.get("sampling")),
    )
    module = PhyProbeModule(
        head,
        instantiate(cfg.loss),
        lr=cfg.optim.lr,
        weight_decay=cfg.optim.weight_decay,
        warmup_steps=cfg.optim.warmup_steps,
    )
    ckpt = ModelCheckpoint(
        dirpath=out / "checkpoints",
        monitor=cfg.checkpoint.monitor,
        mode=cfg.checkpoint.mode,
        save_last=True,
        save_top_k=1,
    )
    trainer: L.Trainer = instantiate(cfg.trainer, logger=instantiate(cfg.logger), callbacks=[ckpt])
    trainer.fit(module, datamodule=dm)
    if ckpt.best_model_path:
        state = torch.load(ckpt.best_model_path, map_location="cpu", weights_only=True)["state_dict"]
        module.load_state_dict(state)
    head = module.head.cpu().eval()

    raw = score_features(head, feats)
    check_scores_finite(raw, manifest.videos["id"], head, feats, cfg, out / HEAD_DIR)  # before anything is written
    scores = manifest.videos.assign(raw_score=raw, score=np.clip(raw, 0.0, 1.0))
    # 9 significant digits: every float32 score round-trips exactly
    scores[["id", "path", "split", "source", "raw_score", "score"]].to_csv(
        out / SCORES, index=False, float_format="%.9g"
    )
    trained = TrainedHead(
        head,
        {
            "feature_dim": encoder.feature_dim,
            "stats": list(cfg.pooling.stats),
            "hidden": head.hidden,
            "dropout": cfg.head.dropout,
            "kind": head.kind,
            **({"groups": groups} if groups is not None else {}),
        },
        reading,
        {
            "seed": cfg.seed,
            "num_train_pairs": len(train_m.pairs),
            "trained_on": sorted(train_m.videos["source"].unique()),  # a source without training videos is unseen
            "feature_cache": str(data.cache.dir),
            "recipe": recipe,
            # what the head gives the videos it trained on: a score far outside it is flagged where it is read
            "raw_score_range": [float(raw[train_rows].min()), float(raw[train_rows].max())],
        },
    )
    save_head(out, trained)
    return trained


def save_head(out: Path, trained: TrainedHead) -> None:
    target = out / HEAD_DIR
    target.mkdir(parents=True, exist_ok=True)
    tensors = {k: v.detach().cpu().contiguous() for k, v in trained.head.state_dict().items()}
    save_file(tensors, str(target / "model.safetensors.tmp"))
    (target / "model.safetensors.tmp").replace(target / "model.safetensors")
    atomic_write_json(
        target / "config.json",
        {"head": trained.config, "reading": trained.reading.to_dict(), "training": trained.training},
    )


def load_head(out: Path) -> TrainedHead:
    """The head the train stage wrote to ``<out>/head``, for the export and evaluate stages run as their own jobs."""
    target = out / HEAD_DIR
    if not (target / "config.json").is_file() or not (target / "model.safetensors").is_file():
        raise UserError(f"{target}: no trained head (model.safetensors, config.json); run the train stage first")
    cfg = json.loads((target / "config.json").read_text())
    h = cfg["head"]
    head = PhyProbeHead.from_config(h)
    head.load_state_dict(load_file(str(target / "model.safetensors")))
    return TrainedHead(head.eval(), h, Reading.from_dict(cfg["reading"]), cfg["training"])
