"""Frozen encoders by name: ``from_config(name, **options)`` and ``available_configs()``."""

from . import efficientnet  # noqa: F401  (registers the embedded default)
from . import dynamics, motion  # noqa: F401  (register the motion-aware embedded encoders)
from . import dinov2, open_clip_encoders, perception_encoder, vjepa2, wan_vae  # noqa: F401  (register; heavy deps load in the factories)
from .base import FrozenEncoder, WeightsNotFoundError, available_configs, from_config, register_encoder
from .preprocess import Preprocess

__all__ = ["FrozenEncoder", "Preprocess", "WeightsNotFoundError", "available_configs", "from_config", "register_encoder"]
