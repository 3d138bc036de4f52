"""Objects built from the project's Hydra configs (``_target_`` nodes), shared by every stage: the encoder pass
(``phyprobe extract`` with train.py's overrides), fitting, training and evaluation, so none imports a later one."""

from __future__ import annotations

from hydra.errors import InstantiationException
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from .encoders import FrozenEncoder
from .errors import InvalidOption, UserError


def instantiate_or_user_error(node: DictConfig, **kwargs):
    """Hydra's ``instantiate`` with its wrapper removed from a user's mistake (a missing weights file,
    a malformed manifest, an option value the factory refuses), so the user sees what is wrong,
    not a trace through Hydra."""
    try:
        return instantiate(node, **kwargs)
    except InstantiationException as e:
        cause = e.__cause__
        if isinstance(cause, UserError):
            raise cause from None
        if isinstance(cause, (ValueError, TypeError, KeyError)):
            raise InvalidOption(f"config {node.get('_target_', '?')}: {cause}") from cause
        raise


def build_encoder(backbone_cfg: DictConfig) -> FrozenEncoder:
    """Instantiate the configured encoder (a missing-weights error says what to download and where)."""
    return instantiate_or_user_error(backbone_cfg)


FIT_IN_RUN = "fit"  # a dynamics backbone's checkpoint value: fit the model in this run


def fits_in_run(backbone) -> bool:
    """Whether the backbone (or one of a ``concat``'s parts) is fitted in the run (``checkpoint: fit``)."""
    b = OmegaConf.to_container(backbone, resolve=True) if isinstance(backbone, DictConfig) else backbone
    return b.get("checkpoint") == FIT_IN_RUN or any(fits_in_run(p) for p in b.get("parts") or [])


def frozen_inputs(backbone, feature_dtype: str) -> list[tuple[FrozenEncoder, str]]:
    """What the encoder pass (the extract stage) encodes for ``backbone``, each with the dtype its cache stores: the
    backbone itself; for one fitted in the run, the frozen encoder its model is fitted on and reads (``fit.base``),
    so the pass needs no fitted model and the fit stage after it encodes nothing; for a ``concat``, each part's."""
    b = OmegaConf.to_container(backbone, resolve=True) if isinstance(backbone, DictConfig) else dict(backbone)
    if not fits_in_run(b):
        return [(build_encoder(OmegaConf.create(b)), feature_dtype)]
    target = {"_target_": "phyprobe.encoders.from_config", "_convert_": "all"}
    if b.get("parts"):
        return [
            pair
            for part in b["parts"]
            for pair in (
                frozen_inputs(part, feature_dtype)
                if fits_in_run(part)
                else [(build_encoder(OmegaConf.create({**target, **part})), b.get("part_dtype", "float16"))]
            )
        ]
    if not isinstance(b.get("fit"), dict) or not isinstance(b["fit"].get("base"), dict):
        raise InvalidOption(f"backbone {b.get('name')!r}: checkpoint: {FIT_IN_RUN} needs a 'fit' block with a 'base'")
    return [(build_encoder(OmegaConf.create({**target, **b["fit"]["base"]})), b.get("base_dtype", "float16"))]
