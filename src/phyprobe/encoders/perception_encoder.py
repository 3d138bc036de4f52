"""Meta Perception Encoder (PE-Core), the paper's main encoder, through timm's model definitions.

timm (>= 1.0.20) defines every PE-Core size and its checkpoint filter converts all three public
releases on load, so any one of them in the Hugging Face cache (or on disk) works: timm's
``timm/vit_pe_core_*.fb``, open_clip's ``timm/PE-Core-*`` and Meta's ``facebook/PE-Core-*``.
Only the vision tower is built.

Preprocessing is the official one (``core/vision_encoder/transforms.py``): **squash** to the square
input, bilinear, mean = std = 0.5. timm's pretrained config says resize-short-side + centre crop,
which throws away ~44% of a 16:9 frame, edges where violations often happen; it is not used.

Meta's original ``.pt`` layout is converted by timm's filter, which does not resample the position
embedding for it (other layouts it does); :func:`load_meta_checkpoint` converts, resamples to the
requested ``image_size`` and loads, so any ``image_size`` works with every release.

Video is encoded frame by frame, as PE's own ``encode_video`` does (it then averages; we keep the
frames for the temporal statistics). G has no class token, so its global vector is the
attention-pooled one; see :mod:`.vit_frames` for the three outputs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from .base import FrozenEncoder, WeightsNotFoundError, register_encoder
from .preprocess import Preprocess
from .vit_frames import TimmViTEncoder, create_timm
from .weights import resolve_file


@dataclass(frozen=True)
class PEVariant:
    timm_arch: str
    image_size: int
    meta_name: str  # facebook/<name>/<name>.pt
    open_clip_name: str  # timm/<name>/open_clip_model.safetensors

    def hub_files(self) -> list[tuple[str, str]]:
        return [
            (f"timm/{self.timm_arch}.fb", "model.safetensors"),
            (f"timm/{self.open_clip_name}", "open_clip_model.safetensors"),
            (f"facebook/{self.meta_name}", f"{self.meta_name}.pt"),
        ]


PE_CORE = {
    "T": PEVariant("vit_pe_core_tiny_patch16_384", 384, "PE-Core-T16-384", "PE-Core-T-16-384"),
    "S": PEVariant("vit_pe_core_small_patch16_384", 384, "PE-Core-S16-384", "PE-Core-S-16-384"),
    "B": PEVariant("vit_pe_core_base_patch16_224", 224, "PE-Core-B16-224", "PE-Core-B-16"),
    "L": PEVariant("vit_pe_core_large_patch14_336", 336, "PE-Core-L14-336", "PE-Core-L-14-336"),
    "G": PEVariant("vit_pe_core_gigantic_patch14_448", 448, "PE-Core-G14-448", "PE-Core-bigG-14-448"),
}

# Same architecture (prefix tokens, attention pool, projection, RoPE), two small blocks.
TINY = {"embed_dim": 32, "depth": 2, "num_heads": 2, "num_classes": 16}
TINY_IMAGE_SIZE = 32


def load_meta_checkpoint(model, path: Path) -> None:
    """Load a PE-Core checkpoint in Meta's original layout (``conv1``, ``positional_embedding``, ...)
    into timm's tower, resampling the position embedding to the model's patch grid."""
    import torch
    from timm.layers import resample_abs_pos_embed
    from timm.models.eva import checkpoint_filter_fn

    state = checkpoint_filter_fn(torch.load(path, map_location="cpu", weights_only=True), model)
    pos = state.get("pos_embed")
    if pos is not None and pos.shape != model.pos_embed.shape:
        prefix = 0 if getattr(model, "no_embed_class", False) else model.num_prefix_tokens
        side = math.isqrt(pos.shape[1] - prefix)
        if side * side != pos.shape[1] - prefix:
            raise WeightsNotFoundError(
                f"{path}: position embedding of {pos.shape[1] - prefix} patches is not a square grid"
            )
        state["pos_embed"] = resample_abs_pos_embed(
            pos,
            new_size=list(model.patch_embed.grid_size),
            old_size=[side, side],
            num_prefix_tokens=prefix,
            interpolation="bicubic",
            antialias=True,
        )
    model.load_state_dict(state, strict=True)


@register_encoder("perception_encoder")
def perception_encoder(
    size: str = "G",
    weights: str | None = "hub",
    image_size: int | None = None,
    output: str = "pooled",
    layer: int | None = None,
    tiny: bool = False,
) -> FrozenEncoder:
    """``weights``: "hub" (HF cache), a local file/directory, or None (random init).

    ``output``: "pooled" (attention-pooled, pre-projection; 1536-d for G), "proj" (CLIP space; 1280-d
    for G) or "patch_mean" of block ``layer``. ``tiny`` keeps the variant's architecture at toy width
    and depth, for tests.
    """
    if size not in PE_CORE:
        raise ValueError(f"perception_encoder size must be one of {sorted(PE_CORE)}, got {size!r}")
    v = PE_CORE[size]
    ckpt, weights_id = (
        (None, "random")
        if weights is None
        else resolve_file(
            f"perception_encoder (PE-Core-{size})",
            weights,
            v.hub_files(),
            ("model.safetensors", "open_clip_model.safetensors", f"{v.meta_name}.pt"),
        )
    )
    image_size = image_size or (TINY_IMAGE_SIZE if tiny else v.image_size)
    meta_layout = ckpt is not None and ckpt.suffix == ".pt"
    model = create_timm(v.timm_arch, None if meta_layout else ckpt, img_size=image_size, **(TINY if tiny else {}))
    if meta_layout:
        load_meta_checkpoint(model, ckpt)
    pre = Preprocess(
        size=(image_size, image_size),
        mean=(0.5, 0.5, 0.5),
        std=(0.5, 0.5, 0.5),
        resize="squash",
        interpolation="bilinear",
    )
    dims = {"pooled": model.num_features, "proj": model.num_classes, "patch_mean": model.embed_dim}
    enc = TimmViTEncoder(model, pre, output, layer, num_layers=len(model.blocks), dims=dims)
    enc.weights_id = weights_id
    enc.options = {
        "size": size,
        "timm_model": v.timm_arch,
        "image_size": image_size,
        "output": output,
        "layer": enc.layer,
        "tiny": tiny,
    }
    return enc
