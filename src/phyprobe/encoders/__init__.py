"""Frozen encoders by name: ``from_config(name, **options)`` and ``available_configs()``."""

# importing each module registers its encoders; heavy dependencies load in the factories
from . import (  # noqa: F401
    concat,
    dinov2,
    dinov3,
    dynamics,
    efficientnet,
    motion,
    open_clip_encoders,
    perception_encoder,
    trajectory,
    vjepa2,
    wan_vae,
)
from .base import FrozenEncoder, WeightsNotFoundError, available_configs, from_config, register_encoder
from .preprocess import Preprocess

__all__ = [
    "FrozenEncoder",
    "Preprocess",
    "WeightsNotFoundError",
    "available_configs",
    "from_config",
    "register_encoder",
]
