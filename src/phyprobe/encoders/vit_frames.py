"""Image ViTs applied frame by frame, with a choice of which vector represents a frame.

The best frame feature for a physics probe is an open question (the PE paper finds its best features
in intermediate layers), so every ViT entry offers the same three outputs and the choice becomes a
config sweep rather than code:

- ``pooled``: the model's own global vector before any projection (PE: attention-pooled; DINOv2:
  the normed class token);
- ``proj``: the projected embedding (the CLIP / SigLIP / PE-CLIP space);
- ``patch_mean``: the mean over patch tokens (prefix tokens dropped) of the raw output of block
  ``layer`` (0-based, negative counts from the end, ``None`` = last block). It stops the forward
  pass after that block, so early layers are also cheaper.
"""

from __future__ import annotations

from pathlib import Path

import torch

from .base import FrozenEncoder
from .preprocess import Preprocess

OUTPUTS = ("pooled", "proj", "patch_mean")


def check_layers(layers: list[int], num_maps: int) -> None:
    """Map indices must name a map: taken modulo the count, a layer 30 asked of a 24-block model would
    silently read block 6."""
    bad = [layer for layer in layers if not -num_maps <= layer < num_maps]
    if bad:
        raise ValueError(
            f"feature map layers {bad} out of range for {num_maps} maps (0 .. {num_maps - 1}, or negative)"
        )


class ViTFrameEncoder(FrozenEncoder):
    """Frames (B, T, 3, H, W) -> (B, T, D); subclasses say how to reach the global and token outputs."""

    def __init__(
        self,
        model: torch.nn.Module,
        preprocess: Preprocess,
        output: str,
        layer: int | None,
        num_layers: int,
        dims: dict[str, int],
    ):
        super().__init__()
        if output not in dims:
            raise ValueError(f"output must be one of {sorted(dims)}, got {output!r}")
        if output != "patch_mean" and layer is not None:
            raise ValueError("layer selects the block for output='patch_mean' only")
        if layer is not None and not -num_layers <= layer < num_layers:
            raise ValueError(f"layer {layer} out of range for {num_layers} blocks")
        self.model = model
        self.preprocess = preprocess
        self.output = output
        self.layer = (num_layers - 1 if layer is None else layer % num_layers) if output == "patch_mean" else None
        self.feature_dim = dims[output]
        self.num_maps = num_layers

    def global_vector(self, x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def block_tokens(self, x: torch.Tensor, layer: int) -> torch.Tensor:
        """Patch tokens (N, L, C) after block ``layer``, prefix tokens removed."""
        raise NotImplementedError

    def forward_features(self, clips: torch.Tensor) -> torch.Tensor:
        b, t = clips.shape[:2]
        x = clips.flatten(0, 1)
        y = self.block_tokens(x, self.layer).mean(1) if self.output == "patch_mean" else self.global_vector(x)
        return y.float().view(b, t, -1)

    def frame_maps(self, x: torch.Tensor, layers: list[int]) -> list[torch.Tensor]:
        """Patch-token maps (N, C, h, w) of frames ``x`` after blocks ``layers`` (negative counts from the end),
        stopping after the deepest: what a trajectory encoder reads per grid cell."""
        n = self.num_maps
        check_layers(layers, n)
        wanted = sorted({layer % n for layer in layers})
        maps = dict(zip(wanted, self.block_maps(x, wanted)))
        return [maps[layer % n].float() for layer in layers]

    def block_maps(self, x: torch.Tensor, layers: list[int]) -> list[torch.Tensor]:
        raise NotImplementedError


class TimmViTEncoder(ViTFrameEncoder):
    def global_vector(self, x: torch.Tensor) -> torch.Tensor:
        if self.output == "proj":
            return self.model(x)
        return self.model.forward_head(self.model.forward_features(x), pre_logits=True)

    def block_tokens(self, x: torch.Tensor, layer: int) -> torch.Tensor:
        return self.model.forward_intermediates(
            x, indices=[layer], output_fmt="NLC", intermediates_only=True, stop_early=True
        )[0]

    def block_maps(self, x: torch.Tensor, layers: list[int]) -> list[torch.Tensor]:
        return self.model.forward_intermediates(
            x, indices=layers, output_fmt="NCHW", intermediates_only=True, stop_early=True
        )


class OpenClipVisualEncoder(ViTFrameEncoder):
    """The image tower of an open_clip model (native ViT or timm trunk); its output is the projection."""

    def global_vector(self, x: torch.Tensor) -> torch.Tensor:
        return self.model(x)

    def block_tokens(self, x: torch.Tensor, layer: int) -> torch.Tensor:
        out = self.model.forward_intermediates(
            x, indices=[layer], output_fmt="NLC", intermediates_only=True, stop_early=True
        )
        return out["image_intermediates"][0]

    def block_maps(self, x: torch.Tensor, layers: list[int]) -> list[torch.Tensor]:
        out = self.model.forward_intermediates(
            x, indices=layers, output_fmt="NCHW", intermediates_only=True, stop_early=True
        )
        return out["image_intermediates"]


def create_timm(arch: str, checkpoint: Path | None, **kwargs) -> torch.nn.Module:
    """A timm model, with ``checkpoint`` loaded through the architecture's own filter function.

    timm's filters convert foreign layouts on the fly (for PE-Core: the original Meta ``.pt`` and the
    open_clip ``visual.trunk.*`` checkpoints as well as timm's own), and resample position
    embeddings when ``img_size`` differs from the checkpoint's.
    """
    import timm

    if checkpoint is None:
        return timm.create_model(arch, pretrained=False, **kwargs)
    return timm.create_model(arch, pretrained=True, pretrained_cfg_overlay={"file": str(checkpoint)}, **kwargs)
