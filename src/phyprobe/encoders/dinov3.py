"""DINOv3 (self-supervised, no text), frame by frame through timm: DINOv2's successor, the other backbone GeoPhys reads.

timm (>= 1.0.20) defines the ViT sizes of the LVD-1689M release as ``vit_*_patch16_dinov3``: S, S+, B, L, H+
and 7B, patch 16, RoPE position encoding (so any input size runs without resampling anything), a class token
and 4 register tokens. The weights are timm's re-release ``timm/vit_*_patch16_dinov3.lvd1689m``; a checkpoint
in Meta's original layout (``storage_tokens``, ``ls1.gamma``...) passed as a local file is converted by timm's
filter on load. The checkpoints were trained at 256 px, which is the default here: a 16 x 16 patch grid, the
same as DINOv2 at 224. Frames are letterboxed (never cropped) with ImageNet statistics and bicubic resizing,
as for DINOv2.

timm builds DINOv3 with average pooling by default; upstream DINOv3 represents an image by its normed class
token, so ``pooled`` is built with ``global_pool="token"`` and means the same thing as DINOv2's.
"""

from __future__ import annotations

from .base import FrozenEncoder, register_encoder
from .dinov2 import self_supervised_vit

DINOV3 = {
    "S": "vit_small_patch16_dinov3",
    "S+": "vit_small_plus_patch16_dinov3",
    "B": "vit_base_patch16_dinov3",
    "L": "vit_large_patch16_dinov3",
    "H+": "vit_huge_plus_patch16_dinov3",
    "7B": "vit_7b_patch16_dinov3",
}
PRETRAIN = "lvd1689m"  # the web-image release (the sat493m satellite weights need other statistics)
# Same architecture (class token, 4 registers, RoPE, layer scale), two small blocks.
TINY = {"embed_dim": 32, "depth": 2, "num_heads": 2}
TINY_IMAGE_SIZE = 32


def hub_repo(size: str) -> str:
    return f"timm/{DINOV3[size]}.{PRETRAIN}"


@register_encoder("dinov3")
def dinov3(
    size: str = "L",
    weights: str | None = "hub",
    image_size: int | None = None,
    output: str = "pooled",
    layer: int | None = None,
    tiny: bool = False,
) -> FrozenEncoder:
    """``weights``: "hub" (HF cache), a local file (timm's ``model.safetensors`` or Meta's ``.pth``) or a
    directory holding ``model.safetensors``, or None (random init). ``output``: "pooled" (normed class token)
    or "patch_mean" of block ``layer``. ``image_size``: None is 256 (the checkpoints' own)."""
    if size not in DINOV3:
        raise ValueError(f"dinov3 size must be one of {sorted(DINOV3)}, got {size!r}")
    # global_pool="token": the normed class token, as DINOv2's pooled output (timm's default here averages patches)
    return self_supervised_vit(
        "dinov3",
        size,
        DINOV3[size],
        hub_repo(size),
        weights,
        image_size or (TINY_IMAGE_SIZE if tiny else 256),
        output,
        layer,
        TINY if tiny else None,
        global_pool="token",
    )
