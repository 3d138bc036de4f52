"""Encoder features computed once and cached on disk."""

from .cache import FeatureCache

__all__ = ["FeatureCache"]
