"""DINOv2 (self-supervised, no text), frame by frame through timm — a non-CLIP image baseline.

timm's ``vit_*_patch14_dinov2.lvd142m`` weights were trained at 518 px; they run here at 224 by
default (16x16 patches, the resolution of DINOv2's own linear evals) and timm resamples the position
embeddings on load. Frames are letterboxed (never cropped) with ImageNet statistics and bicubic
resizing, as in DINOv2's eval transforms minus the centre crop.
"""

from __future__ import annotations

from .base import FrozenEncoder, register_encoder
from .preprocess import Preprocess
from .vit_frames import TimmViTEncoder, create_timm
from .weights import resolve_file

DINOV2 = {
    "S": "vit_small_patch14_dinov2",
    "B": "vit_base_patch14_dinov2",
    "L": "vit_large_patch14_dinov2",
    "g": "vit_giant_patch14_dinov2",
}
IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
TINY = {"embed_dim": 32, "depth": 2, "num_heads": 2}
TINY_IMAGE_SIZE = 28


@register_encoder("dinov2")
def dinov2(
    size: str = "L",
    weights: str | None = "hub",
    image_size: int | None = None,
    output: str = "pooled",
    layer: int | None = None,
    tiny: bool = False,
) -> FrozenEncoder:
    """``output``: "pooled" (normed class token) or "patch_mean" of block ``layer``."""
    if size not in DINOV2:
        raise ValueError(f"dinov2 size must be one of {sorted(DINOV2)}, got {size!r}")
    arch = DINOV2[size]
    return self_supervised_vit(
        "dinov2",
        size,
        arch,
        f"timm/{arch}.lvd142m",
        weights,
        image_size or (TINY_IMAGE_SIZE if tiny else 224),
        output,
        layer,
        TINY if tiny else None,
    )


def self_supervised_vit(
    family: str,
    size: str,
    arch: str,
    hub_repo: str,
    weights: str | None,
    image_size: int,
    output: str,
    layer: int | None,
    tiny: dict | None,
    **create_kwargs,
) -> FrozenEncoder:
    """A DINO-family ViT through timm (DINOv2, DINOv3): weights from ``hub_repo``'s ``model.safetensors``, a local
    path or None; frames letterboxed with ImageNet statistics and bicubic resizing, as DINO's evals minus the crop;
    ``tiny``: the toy architecture's options (for tests), or None."""
    ckpt, weights_id = (
        (None, "random")
        if weights is None
        else resolve_file(f"{family} ({size})", weights, [(hub_repo, "model.safetensors")], ("model.safetensors",))
    )
    model = create_timm(arch, ckpt, img_size=image_size, num_classes=0, **create_kwargs, **(tiny or {}))
    pre = Preprocess(
        size=(image_size, image_size), mean=IMAGENET_MEAN, std=IMAGENET_STD, resize="letterbox", interpolation="bicubic"
    )
    dims = {"pooled": model.num_features, "patch_mean": model.embed_dim}
    enc = TimmViTEncoder(model, pre, output, layer, num_layers=len(model.blocks), dims=dims)
    enc.weights_id = weights_id
    enc.options = {
        "size": size,
        "timm_model": arch,
        "image_size": image_size,
        "output": output,
        "layer": enc.layer,
        "tiny": tiny is not None,
    }
    return enc
