"""train: data -> cached encoder features -> head fit -> exported scorer -> evaluation.

``train.py`` only composes the Hydra config and calls :func:`train`; everything else lives here so
that tests, sweeps and notebooks run exactly what the command line runs.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from hydra.utils import instantiate
from lightning.pytorch.callbacks import ModelCheckpoint
from omegaconf import DictConfig, ListConfig, OmegaConf

from ..baselines.motion import motion_scores
from ..baselines.vjepa2_surprisal import uses_own_predictor, vjepa2_surprisal_scores
from ..data.magnitudes import normalise_magnitudes
from ..data.manifest import PAIRS_FILE, Manifest
from ..data.sampling import sampling_weights
from ..encoders import FrozenEncoder
from ..errors import InvalidOption, UserError
from ..eval.protocols import same_scene_margins
from ..eval.shortcuts import shortcut_diagnostics
from ..features.extract import TooManyToExtract, extract_features, launcher_share
from ..features.table import load_feature_table
from ..head import PhyProbeHead, score_features
from ..instantiate import FIT_IN_RUN, build_encoder, fits_in_run, instantiate_or_user_error
from ..io.video import ClipSpec, VideoDecodeError, probe
from ..lightning_setup import L
from ..runinfo import atomic_write_json, save_run_info
from ..scorer import export_scorer
from ..scorer.reading import Reading, trained_reading
from .data import PairFeatureDataModule
from .evaluation import (
    distribution_labels,
    evaluate_run,
    own_data_benchmarks,
    restrict_all,
    surprisal_scores,
    write_run_report,
)
from .module import PhyProbeModule

log = logging.getLogger(__name__)


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


def fit_backbone_in_run(cfg: DictConfig, out: Path) -> DictConfig:
    """The backbone config to build. A ``dynamics`` backbone (or a ``concat`` part) with ``checkpoint: fit`` first
    gets its model fitted on this run's own plausible training clips (training sources and splits; validation splits
    pick the epoch), written to ``<run>/dynamics`` with the backbone's ``fit`` settings, so no violation and no
    held-out clip is ever seen by it; the ``fit`` block is not an encoder option and is dropped."""
    backbone = OmegaConf.to_container(cfg.backbone, resolve=True)
    if backbone.get("parts"):
        backbone.pop("fit", None)  # a composite fits nothing itself; its parts carry their own fit blocks
        fitted = [p for p in backbone["parts"] if p.get("checkpoint") == FIT_IN_RUN]
        if len(fitted) > 1:
            raise InvalidOption("backbone: at most one part can be fitted in the run (checkpoint: fit)")
        backbone["parts"] = [_fit_in_run(cfg, p, out) for p in backbone["parts"]]
        return OmegaConf.create(backbone)
    return OmegaConf.create(_fit_in_run(cfg, backbone, out))


def _fit_in_run(cfg: DictConfig, backbone: dict, out: Path) -> dict:
    fit = backbone.pop("fit", None)
    if backbone.get("checkpoint") != FIT_IN_RUN:
        return backbone
    if fit is None:
        raise InvalidOption(
            f"backbone {backbone.get('name')!r}: checkpoint: {FIT_IN_RUN} needs a 'fit' block "
            "(base encoder and predictor settings; see configs/backbone/flow_dynamics.yaml)"
        )
    from .dynamics import train_dynamics  # imports this module

    target = out / "dynamics"
    train_dynamics(
        OmegaConf.create(
            {
                # the base features are cached in the dtype the encoder reads them in, so extraction reuses them
                "seed": cfg.seed,
                "clip": OmegaConf.to_container(cfg.clip, resolve=True),
                "feature_dtype": backbone.get("base_dtype", "float16"),
                "base": {"_target_": "phyprobe.encoders.from_config", "_convert_": "all", **fit["base"]},
                "predictor": fit["predictor"],
                "data": OmegaConf.to_container(cfg.data, resolve=True),
                "extract": OmegaConf.to_container(cfg.extract, resolve=True),
                "paths": {"cache_dir": cfg.paths.cache_dir, "output_dir": str(target)},
            }
        )
    )
    backbone["checkpoint"] = str(target)
    return backbone


def video_frames(m: Manifest) -> list[int]:
    """Each video's frame count: from its metadata (world builds record it), else probed from the file."""
    out = []
    for path, md in zip(m.videos["path"], m.videos["metadata"]):
        n = (md or {}).get("num_frames")
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
        )
    except (TypeError, ValueError) as e:
        raise InvalidOption(f"reading: {e}") from None


def describe_recipe(
    cfg: DictConfig, encoder: FrozenEncoder, head: PhyProbeHead, clip: ClipSpec, reading: Reading
) -> dict:
    """What this run trains, as run_info.json, metrics.json and report.md state it: the frozen encoder (and the
    self-supervised stage fitted before the head, if any), the pooling, the head and its size, the losses, and how
    a video is read."""
    backbone = OmegaConf.to_container(cfg.backbone, resolve=True)
    fitted = fits_in_run(backbone)
    loss = OmegaConf.to_container(cfg.loss, resolve=True)
    return {
        "encoder": {
            "name": encoder.name,
            "feature_dim": encoder.feature_dim,
            "frozen": True,
            "fitted_before_head": (
                "a self-supervised dynamics model, fitted on this run's plausible training clips "
                "and frozen before the head trains (<run>/dynamics)"
            )
            if fitted
            else None,
        },
        "pooling": list(cfg.pooling.stats),
        "head": {
            "kind": head.kind,
            "hidden": head.hidden,
            "input_dim": head.pool.out_dim(encoder.feature_dim),
            "parameters": head.num_parameters(),
        },
        "loss": {k: loss[k] for k in ("lambda_rank", "lambda_mag", "lambda_cal") if k in loss},
        "clip": clip.to_dict(),
        "reading": reading.to_dict(),
    }


def recipe_line(recipe: dict) -> str:
    """The recipe in one line, for train.log and the report."""
    e, h, lam = recipe["encoder"], recipe["head"], recipe["loss"]
    head = f"3-layer GELU MLP, hidden {h['hidden']}" if h["kind"] == "mlp" else "monotone evidence head"
    return (
        f"frozen {e['name']} encoder ({e['feature_dim']}-d per step{', fitted before the head' if e['fitted_before_head'] else ''})"
        f" -> [{'; '.join(recipe['pooling'])}] pooling ({h['input_dim']}-d) -> {head}, {h['parameters']:,} parameters"
        f" -> L_rank x {lam.get('lambda_rank')} + L_mag x {lam.get('lambda_mag')} + L_cal x {lam.get('lambda_cal')};"
        f" {recipe['clip']['num_frames']}-frame clips"
    )


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


class DivergedHeadError(UserError):
    """Training ended with a head whose scores are not finite: nothing is exported."""


def check_scores_finite(raw: np.ndarray, ids, head: PhyProbeHead, feats, cfg: DictConfig, scorer_dir: Path) -> None:
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
    raise DivergedHeadError(f"{scorer_dir}: not exported: the trained head scores {first} non-finite; {cause}")


def one_process(cfg: DictConfig) -> None:
    """Refuse to train as one of several processes. The head (~1M parameters) trains in minutes on one device from
    the feature cache, so a run is one process: under DDP every rank would write the scores, the scorer and the
    report into one folder. The encoder pass is what runs distributed (``phyprobe extract`` under torchrun, srun or
    a job array; docs/scale.md); train.py runs once after it and encodes nothing."""
    share = launcher_share()
    if share is not None:
        raise UserError(
            f"train.py is process {share[0]} of {share[1]} a launcher started: it trains in one process. Run the "
            "encoder pass distributed (phyprobe extract MANIFEST OVERRIDES under the launcher), then train.py once"
        )
    devices, strategy = cfg.trainer.get("devices", 1), str(cfg.trainer.get("strategy", "auto"))
    if devices not in (1, "1") and not (isinstance(devices, (list, ListConfig)) and len(devices) == 1):
        raise InvalidOption(
            f"trainer.devices={devices}: the head trains on one device (the encoder pass is what runs on several: "
            "phyprobe extract --devices N)"
        )
    if "ddp" in strategy:
        raise InvalidOption(f"trainer.strategy={strategy}: the head trains in one process (docs/scale.md)")


def extract_elsewhere(cfg: DictConfig, manifest: Manifest, too_many: TooManyToExtract) -> UserError:
    """The error that stops a run about to encode more than ``max_videos_to_extract`` videos in this one process,
    with the commands that encode them on every GPU: at real scale the encoder pass is a distributed job of its own
    (docs/scale.md)."""
    components = cfg.data.source.get("components") or {}
    folders = [str(v) for v in components.values() if isinstance(v, str)] or [str(manifest.root)]
    try:
        from hydra.core.hydra_config import HydraConfig

        overrides = [o for o in HydraConfig.get().overrides.task if not o.startswith(("hydra.", "paths.output"))]
    except ValueError:  # not under Hydra's main (a test, a notebook)
        overrides = []
    command = " ".join(["phyprobe extract {}", *overrides, "--devices 8"])
    return UserError(
        f"{too_many.count} videos are not in the feature cache {too_many.cache_dir} (max_videos_to_extract="
        f"{too_many.limit}): encode them on every GPU first, then rerun this: "
        + "; ".join(command.format(f) for f in folders)
    )


def train(cfg: DictConfig) -> dict:
    """Run one training job described by ``cfg``; returns the evaluation metrics."""
    one_process(cfg)
    out = Path(cfg.paths.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    L.seed_everything(cfg.seed, workers=True)
    save_run_info(out, OmegaConf.to_container(cfg, resolve=True), cfg.seed)

    fitted = fits_in_run(cfg.backbone)
    if fitted:  # fitting a dynamics model is work: the data it and the head learn from is checked first
        manifest: Manifest = instantiate_or_user_error(cfg.data.source)
        training_parts(manifest, cfg)
    encoder = build_encoder(fit_backbone_in_run(cfg, out))  # first: a missing-weights error must not wait for the data
    if not fitted:
        manifest = instantiate_or_user_error(cfg.data.source)
        training_parts(manifest, cfg)  # before extraction: a manifest the head cannot learn from is refused at once
    clip = ClipSpec(**cfg.clip)
    try:
        cache = extract_features(
            manifest, encoder, clip, cfg.paths.cache_dir, dtype=cfg.feature_dtype,
            max_todo=cfg.get("max_videos_to_extract"), **cfg.extract,
        )  # fmt: skip
    except TooManyToExtract as e:
        raise extract_elsewhere(cfg, manifest, e) from None
    streaming = bool(cfg.data.get("streaming", False))
    feats, row_of, manifest, skipped = load_feature_table(cache, manifest, streaming)
    if skipped:
        atomic_write_json(out / "skipped_videos.json", skipped)
        log.warning("%d unreadable videos excluded; see %s", len(skipped), out / "skipped_videos.json")

    trainable, train_m, val_m = training_parts(manifest, cfg)  # again: unreadable videos took their pairs along
    trained_on = sorted(train_m.videos["source"].unique())  # a source without training videos is out of distribution
    excluded = set(manifest.videos["id"][manifest.videos["source"].isin(trained_on)]) - set(trainable.videos["id"])
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
    check_scores_finite(raw, manifest.videos["id"], head, feats, cfg, out / "scorer")  # before anything is written
    scores = manifest.videos.assign(raw_score=raw, score=np.clip(raw, 0.0, 1.0))
    scores_csv = out / "scores.csv"  # 9 significant digits: every float32 score round-trips exactly
    scores[["id", "path", "split", "source", "raw_score", "score"]].to_csv(scores_csv, index=False, float_format="%.9g")

    head_cfg = {
        "feature_dim": encoder.feature_dim,
        "stats": list(cfg.pooling.stats),
        "hidden": head.hidden,
        "dropout": cfg.head.dropout,
        "kind": head.kind,
        **({"groups": groups} if groups is not None else {}),
    }
    scorer_dir = export_scorer(
        out / "scorer",
        encoder,
        head,
        clip,
        cfg.feature_dtype,
        head_cfg,
        reading=reading,
        extra={
            "training": {
                "run_dir": str(out),
                "seed": cfg.seed,
                "num_train_pairs": len(train_m.pairs),
                "trained_on": trained_on,
                "feature_cache": str(cache.dir),
            }
        },
    )
    log.info("scorer exported to %s", scorer_dir)

    restricted = restrict_all(manifest, cfg.eval.benchmarks) or own_data_benchmarks(manifest)
    model_scores = dict(zip(scores["id"], raw))
    metrics = {
        "benchmarks": evaluate_run(restricted, model_scores, cfg.eval.n_boot),
        "distribution": distribution_labels(restricted, trained_on, excluded),
        "trained_on": trained_on,
    }
    baselines = {}
    if "surprisal" in cfg.eval.baselines:
        plausible_train = [
            row_of[v]
            for v, var in zip(train_m.videos["id"], train_m.videos["metadata"])
            if (var or {}).get("variant", "plausible") == "plausible" and v in row_of
        ]
        for stat, vals in surprisal_scores(feats, plausible_train).items():
            baselines[f"surprisal_{stat}"] = dict(zip(manifest.videos["id"], vals))
    bench_videos = manifest.keep(
        manifest.videos["id"].isin(set().union(*(m.videos["id"] for _, m in restricted.values())))
    )
    if "motion" in cfg.eval.baselines and restricted:  # the zero-parameter flow heuristic, on the benchmarks' videos
        baselines["motion"] = motion_scores(
            bench_videos, clip.num_frames, cache_dir=cfg.paths.get("baseline_cache_dir")
        )
    if "geophys" in cfg.eval.baselines and restricted:  # training-free: a frozen image encoder's embedding path
        from ..baselines import geophys

        gp = OmegaConf.to_container(cfg.eval.geophys, resolve=True)
        if clip.num_frames < geophys.min_frames(gp["signals"]):
            log.warning("geophys baseline skipped: %d-frame clips leave its signals undefined", clip.num_frames)
        elif (cols := geophys.shared_columns(encoder, gp["frames"], gp["layer"])) and clip == ClipSpec(clip.num_frames):
            own = {v: feats[row_of[v]] for v in bench_videos.videos["id"]}  # the run's features hold its path
            baselines["geophys"] = geophys.scores_from_features(own, cols, gp["signals"])
        else:
            baselines["geophys"] = geophys.geophys_scores(
                bench_videos, cfg.paths.cache_dir, num_frames=clip.num_frames, **gp, **cfg.extract
            )
    if "surprisal" in cfg.eval.baselines and uses_own_predictor(encoder) and restricted:
        # the paper's baseline: V-JEPA 2's own predictor, on the benchmarks' videos
        own = vjepa2_surprisal_scores(bench_videos, encoder.to("cuda" if torch.cuda.is_available() else "cpu"), clip)
        baselines.update({f"vjepa2_surprisal_{stat}": base for stat, base in own.items()})
    for name, base in baselines.items():
        metrics.setdefault("baselines", {})[name] = evaluate_run(restricted, base, cfg.eval.n_boot)
        metrics.setdefault("margins", {})[name] = same_scene_margins(restricted, model_scores, base, cfg.eval.n_boot)
    metrics["shortcuts"] = {
        name: shortcut_diagnostics(bench_videos.videos, sc, cfg.eval.n_boot)
        for name, sc in {"phyprobe": model_scores, **baselines}.items()
    }
    metrics["recipe"] = recipe
    metrics["run"] = {
        "output_dir": str(out),
        "skipped_videos": len(skipped),
        "num_videos": len(manifest),
        "head_parameters": head.num_parameters(),
        "num_train_pairs": len(train_m.pairs),
    }
    atomic_write_json(out / "metrics.json", metrics)
    if cfg.eval.report and metrics["benchmarks"]:
        write_run_report(out, metrics, scores.assign(metadata=manifest.videos["metadata"]), restricted, cfg.eval.main)
    return metrics
