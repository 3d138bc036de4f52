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
from .preprocess import Preprocess
from .vit_frames import TimmViTEncoder, create_timm
from .weights import resolve_file

DINOV3 = {
    "S": "vit_small_patch16_dinov3",
    "S+": "vit_small_plus_patch16_dinov3",
    "B": "vit_base_patch16_dinov3",
    "L": "vit_large_patch16_dinov3",
    "H+": "vit_huge_plus_patch16_dinov3",
    "7B": "vit_7b_patch16_dinov3",
}
PRETRAIN = "lvd1689m"  # the web-image release (the sat493m satellite weights need other statistics)
IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
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
    arch = DINOV3[size]
    ckpt, weights_id = (
        (None, "random")
        if weights is None
        else resolve_file(f"dinov3 ({size})", weights, [(hub_repo(size), "model.safetensors")], ("model.safetensors",))
    )
    image_size = image_size or (TINY_IMAGE_SIZE if tiny else 256)
    model = create_timm(arch, ckpt, img_size=image_size, num_classes=0, global_pool="token", **(TINY if tiny else {}))
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
        "tiny": tiny,
    }
    return enc
