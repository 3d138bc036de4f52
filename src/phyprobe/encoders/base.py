"""The frozen-encoder contract and the named-config registry (``from_config`` / ``available_configs``).

A registry entry is a factory returning a :class:`FrozenEncoder`: the module together with its
preprocessing, feature size and temporal stride. Everything downstream (feature cache keys, exported
scorers) reads these attributes instead of knowing about particular encoders.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Callable

import torch
from torch import nn

from ..errors import UserError
from ..io.video import Clip, ClipSpec, decode_clip
from ..machine import usable_cores
from .preprocess import Preprocess


def default_encoder_threads(num_workers: int, processes: int = 1) -> int:
    """CPU threads for the encoder: the cores each process has left once its decode workers have one
    (never more than torch is already allowed, e.g. by OMP_NUM_THREADS).

    OpenMP threads that share cores with busy decode workers (or each other) wait at every
    barrier; on a small CPU oversubscription costs far more than the idle core it would fill.
    """
    return max(1, min(torch.get_num_threads(), usable_cores() // processes - num_workers))


_REGISTRY: dict[str, Callable[..., "FrozenEncoder"]] = {}


class WeightsNotFoundError(UserError, FileNotFoundError):
    """Pretrained weights are not on this machine; the message says what to download and where."""


class FrozenEncoder(nn.Module):
    """A pretrained video or frame encoder that is never trained.

    Subclasses implement :meth:`forward_features` on preprocessed clips (B, T, 3, H, W) and return
    (B, num_steps(T), feature_dim). The module is put in eval mode, its parameters never
    require gradients, and ``train()`` cannot switch it back: batch-norm statistics of a frozen
    encoder must not drift while the head trains.
    """

    name: str = ""
    feature_dim: int = 0
    frames_per_step: int = 1
    preprocess: Preprocess
    weights_id: str = "random"
    options: dict
    factory_kwargs: dict
    # factory options naming a local directory of the encoder's own weights (a fitted dynamics model):
    # an exported scorer carries a copy, so it does not depend on the training machine's paths
    bundled_kwargs: tuple[str, ...] = ()

    def __init__(self):
        super().__init__()
        self.options = {}
        self.factory_kwargs = {}

    def bundled_paths(self) -> list[str]:
        """Dotted keys into ``factory_kwargs`` whose values name local directories to ship with an exported
        scorer: this encoder's ``bundled_kwargs``, or its parts' (``parts.0.checkpoint``) for a composite."""
        return [k for k in self.bundled_kwargs if k in self.factory_kwargs]

    def freeze(self) -> "FrozenEncoder":
        for p in self.parameters():
            p.requires_grad_(False)
        return super().train(False)

    def train(self, mode: bool = True) -> "FrozenEncoder":  # noqa: ARG002 - frozen by design
        return super().train(False)

    def frames_for(self, num_frames: int) -> int:
        """Frames the encoder must be fed for a clip of ``num_frames`` (some need 4k+1 or even T)."""
        return num_frames

    def clip_spec(self, clip: "ClipSpec") -> "ClipSpec":
        """``clip`` with its frame count raised to what this encoder must be fed (``frames_for``)."""
        n = self.frames_for(clip.num_frames)
        return clip if n == clip.num_frames else ClipSpec(n, clip.mode, clip.fps)

    def read_clip(self, path, clip: "ClipSpec", on_host: bool = False) -> tuple[torch.Tensor, "Clip"]:
        """Decode ``path`` as this encoder is fed (``clip_spec``, frames reduced while decoding to what
        the input size needs) and preprocess it: (T, 3, H, W) and the decoded :class:`Clip`.
        The one path from a file to encoder input, so extraction and scoring cannot drift apart.
        ``on_host``: only what :meth:`Preprocess.on_host` does (uint8 clips are finished on the device)."""
        c = decode_clip(path, self.clip_spec(clip), fit=self.preprocess.size)
        return (self.preprocess.on_host(c.frames) if on_host else self.preprocess(c.frames)), c

    def num_steps(self, num_frames: int) -> int:
        """Feature time steps for ``num_frames`` input frames (not a plain quotient for causal VAEs)."""
        return num_frames // self.frames_per_step

    def forward_features(self, clips: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    @torch.inference_mode()
    def forward(self, clips: torch.Tensor) -> torch.Tensor:
        if clips.ndim != 5:
            raise ValueError(f"{self.name}: expected clips (B, T, 3, H, W), got {tuple(clips.shape)}")
        return self.forward_features(clips)

    def describe(self) -> dict:
        """Everything that changes the features: the feature-cache key and the exported config."""
        return {
            "name": self.name,
            "weights_id": self.weights_id,
            "feature_dim": self.feature_dim,
            "frames_per_step": self.frames_per_step,
            "preprocess": self.preprocess.to_dict(),
            "options": self.options,
        }

    def fingerprint(self) -> str:
        return hashlib.sha256(json.dumps(self.describe(), sort_keys=True).encode()).hexdigest()[:16]


def option_at(kwargs: dict, dotted: str):
    """The value of a dotted key (``parts.0.checkpoint``) in nested options, or None where it leads nowhere."""
    node = kwargs
    for part in dotted.split("."):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def with_option(kwargs: dict, dotted: str, value) -> dict:
    """A deep copy of ``kwargs`` with the dotted key set to ``value`` (the key must exist)."""
    import copy

    out = copy.deepcopy(kwargs)
    *path, last = dotted.split(".")
    node = out
    for part in path:
        node = node[int(part)] if isinstance(node, list) else node[part]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return out


def register_encoder(name: str):
    def deco(factory: Callable[..., FrozenEncoder]):
        if name in _REGISTRY:
            raise ValueError(f"encoder {name!r} registered twice")
        _REGISTRY[name] = factory
        return factory

    return deco


def available_configs() -> list[str]:
    return sorted(_REGISTRY)


def from_config(name: str, resize_in: str | None = None, **kwargs) -> FrozenEncoder:
    """Build the named encoder, frozen. ``kwargs`` are the factory's options (size, weights path...).
    ``resize_in="uint8"``: resize decoded frames before converting them to float (:class:`Preprocess`), an option
    of every encoder's preprocessing rather than of each factory."""
    if name not in _REGISTRY:
        raise KeyError(f"unknown encoder {name!r}; available: {available_configs()}")
    enc = _REGISTRY[name](**kwargs)
    enc.name = name
    enc.factory_kwargs = dict(kwargs)  # what an exported scorer needs to rebuild this encoder
    if resize_in is not None:
        enc.preprocess = dataclasses.replace(enc.preprocess, resize_in=resize_in)
        enc.factory_kwargs["resize_in"] = resize_in
    return enc.freeze()
