"""The fit stage: an encoder part fitted on the run's own plausible training clips before the head (the dynamics
model of ``backbone=flow_dynamics``), written to ``<run>/dynamics`` and frozen from then on."""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from ..encoders.dynamics import WEIGHTS
from ..errors import InvalidOption, UserError
from ..instantiate import FIT_IN_RUN
from .dynamics import train_dynamics

FITTED_DIR = "dynamics"  # <run>/dynamics: the fitted model, as encoders.dynamics writes and reads it


def fitted_backbone(cfg: DictConfig, out: Path, fit: bool = True) -> DictConfig:
    """The backbone config to build. A ``dynamics`` backbone (or a ``concat`` part) with ``checkpoint: fit`` first
    gets its model fitted on this run's own plausible training clips (training sources and splits; validation splits
    pick the epoch), written to ``<run>/dynamics`` with the backbone's ``fit`` settings, so no violation and no
    held-out clip is ever seen by it; the ``fit`` block is not an encoder option and is dropped. With ``fit`` False
    the model this run's fit stage wrote before is read back (a stage run as its own job)."""
    backbone = OmegaConf.to_container(cfg.backbone, resolve=True)
    if backbone.get("parts"):
        backbone.pop("fit", None)  # a composite fits nothing itself; its parts carry their own fit blocks
        fitted = [p for p in backbone["parts"] if p.get("checkpoint") == FIT_IN_RUN]
        if len(fitted) > 1:
            raise InvalidOption("backbone: at most one part can be fitted in the run (checkpoint: fit)")
        backbone["parts"] = [_fit_in_run(cfg, p, out, fit) for p in backbone["parts"]]
        return OmegaConf.create(backbone)
    return OmegaConf.create(_fit_in_run(cfg, backbone, out, fit))


def _fit_in_run(cfg: DictConfig, backbone: dict, out: Path, fit_now: bool) -> dict:
    fit = backbone.pop("fit", None)
    if backbone.get("checkpoint") != FIT_IN_RUN:
        return backbone
    if fit is None:
        raise InvalidOption(
            f"backbone {backbone.get('name')!r}: checkpoint: {FIT_IN_RUN} needs a 'fit' block "
            "(base encoder and predictor settings; see configs/backbone/flow_dynamics.yaml)"
        )
    target = out / FITTED_DIR
    backbone["checkpoint"] = str(target)
    if not fit_now:
        if not (target / WEIGHTS).is_file():
            raise UserError(f"{target}: no fitted {backbone.get('name')} model; run the fit stage first (stages=[fit])")
        return backbone
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
    return backbone
