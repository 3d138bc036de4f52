"""CLIP (OpenAI) and SigLIP 2 image towers through open_clip, frame by frame.

The architecture comes from open_clip's model config and the preprocessing from its pretrained-tag
config (mean/std, interpolation), so neither is re-typed here. Two deliberate departures:

- resize: tags that centre-crop ("shortest") are **letterboxed** instead, so nothing at the frame
  edge is lost; tags that squash (SigLIP 2) keep squash. ``preprocess="official"`` restores the
  tag's own resize (CLIP: short side + centre crop), for comparison.
- only the image tower is kept. The text tower is built at toy size (its weights are never loaded)
  so that SigLIP 2's 256k-token text embedding costs neither time nor memory.

OpenAI CLIP weights need QuickGELU; open_clip only switches it on for its own tag downloads, so a
checkpoint loaded from a file would silently run with the wrong activation. The tag's ``quick_gelu``
flag is therefore applied explicitly.
"""

from __future__ import annotations

from dataclasses import dataclass

from .base import FrozenEncoder, register_encoder
from .preprocess import PREPROCESS_CHOICES, Preprocess
from .vit_frames import OpenClipVisualEncoder
from .weights import resolve_file


@dataclass(frozen=True)
class OpenClipVariant:
    arch: str
    tag: str


CLIP = {
    "B": OpenClipVariant("ViT-B-16", "openai"),
    "L": OpenClipVariant("ViT-L-14", "openai"),
    "L336": OpenClipVariant("ViT-L-14-336", "openai"),
}
SIGLIP2 = {
    "B": OpenClipVariant("ViT-B-16-SigLIP2-256", "webli"),
    "L": OpenClipVariant("ViT-L-16-SigLIP2-384", "webli"),
    "SO400M": OpenClipVariant("ViT-SO400M-16-SigLIP2-384", "webli"),
    "g": OpenClipVariant("ViT-gopt-16-SigLIP2-384", "webli"),
}
CHECKPOINT_NAMES = ("open_clip_model.safetensors", "open_clip_pytorch_model.bin")
TOY_TEXT = {"context_length": 8, "vocab_size": 64, "width": 16, "heads": 1, "layers": 1}
# Tiny towers for tests. SigLIP 2's tower is a named timm model that open_clip cannot shrink, so its
# tiny variant swaps in timm's toy ViT behind the same MAP-pool, no-projection TimmModel wrapper.
TINY_CLIP = {
    "embed_dim": 16,
    "vision_cfg": {"image_size": 32, "layers": 2, "width": 32, "patch_size": 8, "head_width": 16},
}
TINY_SIGLIP2 = {
    "embed_dim": 64,
    "vision_cfg": {
        "image_size": 160,
        "timm_model_name": "test_vit",
        "timm_model_pretrained": False,
        "timm_pool": "map",
        "timm_proj": "none",
    },
}


def _build(
    family: str,
    variants: dict[str, OpenClipVariant],
    size: str,
    weights: str | None,
    output: str,
    layer: int | None,
    tiny_cfg: dict | None,
    preprocess: str = "letterbox",
) -> FrozenEncoder:
    if size not in variants:
        raise ValueError(f"{family} size must be one of {sorted(variants)}, got {size!r}")
    if preprocess not in PREPROCESS_CHOICES:
        raise ValueError(f"{family} preprocess must be one of {PREPROCESS_CHOICES}, got {preprocess!r}")
    v = variants[size]
    import open_clip
    import torch
    from open_clip.factory import load_state_dict

    tag_cfg = open_clip.get_pretrained_cfg(v.arch, v.tag)
    repo = tag_cfg["hf_hub"].rstrip("/")
    ckpt, weights_id = (
        (None, "random")
        if weights is None
        else resolve_file(
            f"{family} ({v.arch}, {v.tag})", weights, [(repo, n) for n in CHECKPOINT_NAMES], CHECKPOINT_NAMES
        )
    )
    arch_cfg = open_clip.get_model_config(v.arch)
    text_cfg = {**arch_cfg["text_cfg"], **TOY_TEXT}
    model = open_clip.create_model(
        v.arch,
        pretrained=None,
        force_quick_gelu=bool(tag_cfg.get("quick_gelu")),
        text_cfg=text_cfg,
        device=torch.get_default_device(),
        **(tiny_cfg or {}),
    )
    visual = model.visual
    if ckpt is not None:
        state = load_state_dict(str(ckpt))
        visual.load_state_dict(
            {k[len("visual.") :]: t for k, t in state.items() if k.startswith("visual.")}, strict=True
        )
    image_size = (
        tuple(visual.image_size) if hasattr(visual, "image_size") else (arch_cfg["vision_cfg"]["image_size"],) * 2
    )
    pre = Preprocess(
        size=image_size,
        mean=tag_cfg["mean"],
        std=tag_cfg["std"],
        resize="squash"
        if tag_cfg.get("resize_mode") == "squash"
        else ("crop" if preprocess == "official" else "letterbox"),
        interpolation=tag_cfg.get("interpolation", "bicubic"),
    )
    layers = len(visual.trunk.blocks) if hasattr(visual, "trunk") else visual.transformer.layers
    width = visual.trunk.embed_dim if hasattr(visual, "trunk") else visual.transformer.width
    out_dim = (tiny_cfg or arch_cfg)["embed_dim"]
    enc = OpenClipVisualEncoder(
        visual, pre, output, layer, num_layers=layers, dims={"proj": out_dim, "patch_mean": width}
    )
    enc.weights_id = weights_id
    enc.options = {
        "arch": v.arch,
        "tag": v.tag,
        "output": output,
        "layer": enc.layer,
        "tiny": tiny_cfg is not None,
        "size": size,
    }
    return enc


@register_encoder("clip")
def clip(
    size: str = "L",
    weights: str | None = "hub",
    output: str = "proj",
    layer: int | None = None,
    tiny: bool = False,
    preprocess: str = "letterbox",
) -> FrozenEncoder:
    """OpenAI CLIP; ``output``: "proj" (image embedding) or "patch_mean" of block ``layer``;
    ``preprocess``: "letterbox" (the project's) or "official" (short side + centre crop)."""
    return _build("clip", CLIP, size, weights, output, layer, TINY_CLIP if tiny else None, preprocess)


@register_encoder("siglip2")
def siglip2(
    size: str = "SO400M",
    weights: str | None = "hub",
    output: str = "proj",
    layer: int | None = None,
    tiny: bool = False,
) -> FrozenEncoder:
    """SigLIP 2 (WebLI); ``output``: "proj" (MAP-pooled image embedding) or "patch_mean" of block ``layer``."""
    return _build("siglip2", SIGLIP2, size, weights, output, layer, TINY_SIGLIP2 if tiny else None)
