"""V-JEPA 2 (Meta's self-supervised video encoder) through transformers' ``VJEPA2Model``.

Unlike the frame encoders, V-JEPA 2 sees time: its Conv3d stem turns every 2 frames (a tubelet)
into one token grid, so features come per tubelet, ``frames_per_step = 2``. The token sequence is
**time-major** — (t, h, w), as the Conv3d ``flatten(2)`` and the RoPE ``ids // tokens_per_frame``
both assume — so per-step features are the mean over each step's (H/16)*(W/16) patch tokens.

Odd frame counts: transformers' Conv3d would silently drop the last frame. Here
:meth:`frames_for` rounds the request up to an even count (the clip sampler then spreads that many
frames over the same clip), and an odd clip reaching :meth:`forward_features` is an error rather
than a silent drop.

Preprocessing: transformers' RoPE takes its grid from ``config.crop_size``, so the input must be
square at exactly that size. The official eval transform centre-crops; here frames are
**letterboxed** into the square (nothing at the edges is lost), bilinear, ImageNet statistics.
``preprocess="official"`` gives the official resize + centre crop instead, and ``resize="squash"``
is available for comparison.

``layer``: features after block ``layer`` (0-based; None = last), always through the final
LayerNorm, as V-JEPA 2's multi-level frozen evals read intermediate layers. Only the encoder runs;
the predictor is loaded with the checkpoint and kept (``model.predictor``) for the surprisal baseline
(:mod:`phyprobe.baselines.vjepa2_surprisal`).
"""

from __future__ import annotations

import torch

from .base import FrozenEncoder, register_encoder
from .preprocess import PREPROCESS_CHOICES, Preprocess
from .weights import resolve_pretrained_dir

# hidden, depth, heads, mlp_ratio (ViT-g uses 48/11) and the released checkpoint.
VJEPA2 = {
    "L": (1024, 24, 16, 4.0, 256, "facebook/vjepa2-vitl-fpc64-256"),
    "H": (1280, 32, 16, 4.0, 256, "facebook/vjepa2-vith-fpc64-256"),
    "g": (1408, 40, 22, 48 / 11, 256, "facebook/vjepa2-vitg-fpc64-256"),
    "g384": (1408, 40, 22, 48 / 11, 384, "facebook/vjepa2-vitg-fpc64-384"),
}
TINY = {
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "crop_size": 32,
    "pred_hidden_size": 16,
    "pred_num_hidden_layers": 1,
    "pred_num_attention_heads": 2,
}
IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


class VJEPA2Encoder(FrozenEncoder):
    frames_per_step = 2

    def __init__(self, model, preprocess: Preprocess, layer: int | None):
        super().__init__()
        depth = model.config.num_hidden_layers
        if layer is not None and not -depth <= layer < depth:
            raise ValueError(f"layer {layer} out of range for {depth} blocks")
        self.model = model
        self.preprocess = preprocess
        self.layer = depth - 1 if layer is None else layer % depth
        self.feature_dim = model.config.hidden_size
        self.patch = model.config.patch_size
        self.tubelet = model.config.tubelet_size

    def frames_for(self, num_frames: int) -> int:
        return num_frames + num_frames % self.tubelet

    def tokens(self, clips: torch.Tensor) -> torch.Tensor:
        """(B, T, 3, H, W) -> patch tokens (B, T / tubelet, (H/16)*(W/16), D) after block ``layer`` and the final LayerNorm."""
        b, t, _, h, w = clips.shape
        if t % self.tubelet:
            raise ValueError(
                f"vjepa2 needs an even number of frames, got {t}; sample frames_for({t}) = "
                f"{self.frames_for(t)} frames instead"
            )
        enc = self.model.encoder
        x = enc.embeddings(clips.to(enc.embeddings.patch_embeddings.proj.weight.dtype))
        for block in enc.layer[: self.layer + 1]:
            x = block(x, None)[0]
        x = enc.layernorm(x)
        return x.view(b, t // self.tubelet, (h // self.patch) * (w // self.patch), -1)

    def forward_features(self, clips: torch.Tensor) -> torch.Tensor:
        return self.tokens(clips).mean(2).float()


def _config(size: str, tiny: bool):
    from transformers import VJEPA2Config

    hidden, depth, heads, mlp, crop, _ = VJEPA2[size]
    kw = dict(hidden_size=hidden, num_hidden_layers=depth, num_attention_heads=heads, mlp_ratio=mlp, crop_size=crop)
    return VJEPA2Config(**{**kw, **(TINY if tiny else {})})


@register_encoder("vjepa2")
def vjepa2(
    size: str = "H",
    weights: str | None = "hub",
    layer: int | None = None,
    resize: str = "letterbox",
    tiny: bool = False,
    preprocess: str = "letterbox",
) -> FrozenEncoder:
    """``weights``: "hub" (HF cache), a local ``save_pretrained`` directory, or None (random init).
    ``preprocess``: "letterbox" (the project's; ``resize`` applies) or "official" (resize + centre crop)."""
    if size not in VJEPA2:
        raise ValueError(f"vjepa2 size must be one of {sorted(VJEPA2)}, got {size!r}")
    if preprocess not in PREPROCESS_CHOICES:
        raise ValueError(f"vjepa2 preprocess must be one of {PREPROCESS_CHOICES}, got {preprocess!r}")
    if preprocess == "official":
        resize = "crop"
    from transformers import VJEPA2Model

    repo = VJEPA2[size][-1]
    if weights is None:
        model, weights_id = VJEPA2Model(_config(size, tiny)), "random"
    else:
        path, weights_id = resolve_pretrained_dir(f"vjepa2 ({size})", weights, repo)
        model = VJEPA2Model.from_pretrained(str(path), local_files_only=True, dtype=torch.float32)
    crop = model.config.crop_size
    pre = Preprocess(size=(crop, crop), mean=IMAGENET_MEAN, std=IMAGENET_STD, resize=resize, interpolation="bilinear")
    enc = VJEPA2Encoder(model, pre, layer)
    enc.weights_id = weights_id
    enc.options = {"size": size, "hf_id": repo, "layer": enc.layer, "tiny": tiny}
    return enc
