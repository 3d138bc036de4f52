"""train: a run's stages composed, extract -> fit -> train -> export -> evaluate (:mod:`.stages`).

``train.py`` only composes the Hydra config and calls :func:`train`; everything else lives here so that tests,
sweeps and notebooks run exactly what the command line runs. Each stage is a function of its own module that reads
only what the stages before it wrote, so ``stages=[...]`` runs any of them as a job of its own (docs/scale.md).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from omegaconf import DictConfig, ListConfig, OmegaConf

from ..data.manifest import Manifest
from ..errors import InvalidOption, UserError
from ..features.cache import ManifestCache
from ..features.extract import TooManyToExtract, extract_all, extract_features, launcher_share
from ..instantiate import build_encoder, fits_in_run, frozen_inputs, instantiate_or_user_error
from ..io.video import ClipSpec
from ..lightning_setup import L
from ..runinfo import save_run_info
from ..scorer import export_scorer
from ..scorer.hub import write_model_card
from ..scorer.names import CONFIG
from .evaluation import evaluate
from .fit import FITTED_DIR, fitted_backbone
from .head_training import HEAD_DIR, SCORES, TrainedHead, load_head, train_head
from .parts import RunData, load_run_data, training_parts
from .stages import StageRecord, selected

log = logging.getLogger(__name__)


def one_process(cfg: DictConfig, stages: list[str]) -> tuple[int, int] | None:
    """This process's share of the videos when a launcher started several and the job is the extract stage alone;
    otherwise refuse to run as one of several processes. The head (~1M parameters) trains in minutes on one device
    from the feature cache, so everything but the encoder pass is one process: under DDP every rank would write the
    scores, the scorer and the report into one folder. The encoder pass is what runs distributed (``stages=[extract]``
    or ``phyprobe extract`` under torchrun, srun or a job array; docs/scale.md)."""
    share = launcher_share()
    if share is not None and stages != ["extract"]:
        raise UserError(
            f"train.py is process {share[0]} of {share[1]} a launcher started: only stages=[extract] runs in several "
            f"processes, and this job runs {stages}. Run the encoder pass distributed (stages=[extract], or phyprobe "
            "extract MANIFEST OVERRIDES, under the launcher), then train.py once"
        )
    devices, strategy = cfg.trainer.get("devices", 1), str(cfg.trainer.get("strategy", "auto"))
    if devices not in (1, "1") and not (isinstance(devices, (list, ListConfig)) and len(devices) == 1):
        raise InvalidOption(
            f"trainer.devices={devices}: the head trains on one device (the encoder pass is what runs on several: "
            "phyprobe extract --devices N)"
        )
    if "ddp" in strategy:
        raise InvalidOption(f"trainer.strategy={strategy}: the head trains in one process (docs/scale.md)")
    return share


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
    """Run the stages of the training job ``cfg`` describes; returns the evaluation metrics (empty when the job
    ends before the evaluate stage)."""
    stages = selected(cfg)
    share = one_process(cfg, stages)
    out = Path(cfg.paths.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    L.seed_everything(cfg.seed, workers=True)
    if share is None or share[0] == 0:  # a launcher's processes write the run's record once
        save_run_info(out, OmegaConf.to_container(cfg, resolve=True), cfg.seed)
    record = StageRecord(out, cfg)
    frozen = frozen_inputs(cfg.backbone, cfg.feature_dtype)  # first: a missing-weights error must not wait
    manifest: Manifest = instantiate_or_user_error(cfg.data.source)
    training_parts(manifest, cfg)  # before any work: a manifest the head cannot learn from is refused at once
    clip = ClipSpec(**cfg.clip)
    todo = [s for s in stages if s != "extract" and not record.is_done(s)]

    if "extract" in stages and (todo or stages == ["extract"]):
        try:  # the frozen encoders fed alike share one decode of each video
            extract_all(
                manifest, frozen, clip, cfg.paths.cache_dir, max_todo=cfg.get("max_videos_to_extract"), share=share,
                **cfg.extract,
            )  # fmt: skip
        except TooManyToExtract as e:
            raise extract_elsewhere(cfg, manifest, e) from None
    elif "extract" in stages:
        log.info("stage extract: every stage after it is done: skipped")
    if stages[-1] == "extract":
        return {}

    fitted = fits_in_run(cfg.backbone)
    fit_now = "fit" in todo
    if fitted and not fit_now and not record.is_done("fit"):
        raise UserError(
            f"{out / FITTED_DIR}: no {cfg.backbone.get('name')} model fitted with this config; run the fit stage first"
        )
    if fit_now:
        record.start("fit")
    encoder = build_encoder(fitted_backbone(cfg, out, fit_now)) if fitted else frozen[0][0]
    if fit_now:
        record.finish("fit", [f"{FITTED_DIR}/model.safetensors"] if fitted else [])
    elif "fit" in stages:
        log.info("stage fit: done before with the same config and code (%s): skipped", record.path)
    if stages[-1] == "fit":
        return {}

    data: RunData | None = None
    trained: TrainedHead | None = None
    if "train" in todo:
        record.start("train")
        data = load_run_data(cfg, manifest, features_of(cfg, manifest, encoder))
        trained = train_head(cfg, out, encoder, data)
        record.finish("train", [f"{HEAD_DIR}/model.safetensors", f"{HEAD_DIR}/config.json", SCORES])
    elif not record.is_done("train"):
        raise UserError(f"{out / HEAD_DIR}: no head trained with this config; run the train stage first")
    elif "train" in stages:
        log.info("stage train: done before with the same config and code (%s): skipped", record.path)
    trained = trained or load_head(out)

    if "export" in todo:
        record.start("export")
        scorer_dir = export(cfg, out, encoder, trained)
        record.finish("export", ["scorer/config.json"])
        log.info("scorer exported to %s", scorer_dir)
    if "evaluate" not in stages:
        return {}
    if "evaluate" not in todo:
        log.info("stage evaluate: done before with the same config and code (%s): skipped", record.path)
        return json.loads((out / "metrics.json").read_text())
    record.start("evaluate")
    metrics = evaluate(
        cfg, out, encoder, data or load_run_data(cfg, manifest, features_of(cfg, manifest, encoder)), trained
    )
    record.finish("evaluate", ["metrics.json"])
    if (out / "scorer" / CONFIG).is_file():  # the scorer's card, from its run's facts and figures
        write_model_card(out / "scorer", out)
    return metrics


def features_of(cfg: DictConfig, manifest: Manifest, encoder) -> ManifestCache:
    """The run's features from the cache the extract stage filled, derived where they are computed from cached ones
    (a fitted model's, a concatenation's); a video the extract stage has not encoded is an error naming it."""
    try:
        return extract_features(
            manifest, encoder, ClipSpec(**cfg.clip), cfg.paths.cache_dir, dtype=cfg.feature_dtype, max_todo=0,
            **cfg.extract,
        )  # fmt: skip
    except TooManyToExtract as e:
        raise UserError(
            f"{e.cache_dir}: {e.count} of the run's videos are not in the feature cache; run the extract stage "
            "first (stages=[extract], or phyprobe extract with this run's overrides)"
        ) from None


def export(cfg: DictConfig, out: Path, encoder, trained: TrainedHead) -> Path:
    """The export stage: the frozen encoder's config (and any part fitted in the run) with the trained head, as
    one scorer directory (``<run>/scorer``)."""
    return export_scorer(
        out / "scorer",
        encoder,
        trained.head,
        ClipSpec(**cfg.clip),
        cfg.feature_dtype,
        trained.config,
        reading=trained.reading,
        extra={
            "training": {
                "run_dir": str(out),
                **{
                    k: trained.training[k]
                    for k in ("seed", "num_train_pairs", "trained_on", "feature_cache", "raw_score_range")
                    if k in trained.training
                },
            }
        },
    )
