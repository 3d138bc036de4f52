"""What a run trains, in words: the recipe recorded in run_info.json and metrics.json and stated in report.md."""

from __future__ import annotations

from omegaconf import DictConfig, OmegaConf

from ..encoders import FrozenEncoder
from ..head import PhyProbeHead
from ..instantiate import fits_in_run
from ..io.video import ClipSpec
from ..scorer.reading import Reading


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
