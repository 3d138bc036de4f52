"""Each encoder's preprocessing, as its registry entry states it — the traps from docs/backbones.md."""

import numpy as np
import torch
from encoder_fixtures import tiny_encoder


def _frame_with_corner_marker(h=360, w=640):
    f = np.full((1, h, w, 3), 128, np.uint8)
    f[:, : h // 8, -w // 8 :] = 255  # top-right corner, cut away by a centre crop
    return f


def test_pe_squash_keeps_whole_16x9_frame():
    pre = tiny_encoder("perception_encoder", image_size=64).preprocess
    assert (pre.resize, pre.interpolation, pre.mean, pre.std) == ("squash", "bilinear", (0.5,) * 3, (0.5,) * 3)
    x = pre(_frame_with_corner_marker())
    assert x.shape == (1, 3, 64, 64)
    assert x[0, :, :6, -6:].min() > 0.99  # marker (255 -> +1) survives in the corner
    assert abs(x[0, :, -6:, :6].mean()) < 0.01  # grey elsewhere, and no padding band: squash, not letterbox


def test_frame_encoders_letterbox_instead_of_centre_crop():
    """Square-input encoders pad a 16:9 frame top and bottom; the corner marker is still there."""
    for name in ("clip", "dinov2", "dinov3", "vjepa2"):
        pre = tiny_encoder(name).preprocess
        assert pre.resize == "letterbox", name
        x = pre(_frame_with_corner_marker())[0, 0]
        grey, white = (128 / 255 - pre.mean[0]) / pre.std[0], (1 - pre.mean[0]) / pre.std[0]
        assert (x[:2] == 0).all() and (x[-2:] == 0).all(), name
        assert x.max() > (grey + white) / 2, name


def test_siglip2_and_clip_statistics_come_from_open_clip_tags():
    s, c = tiny_encoder("siglip2").preprocess, tiny_encoder("clip").preprocess
    assert (s.resize, s.mean, s.interpolation) == ("squash", (0.5,) * 3, "bicubic")
    assert c.mean[0] == 0.48145466 and c.interpolation == "bicubic"


def test_clip_openai_uses_quick_gelu():
    enc = tiny_encoder("clip")
    assert type(enc.model.transformer.resblocks[0].mlp.gelu).__name__ == "QuickGELU"


def test_vjepa2_square_input_at_crop_size_with_imagenet_stats():
    enc = tiny_encoder("vjepa2")
    pre = enc.preprocess
    assert pre.size == (enc.model.config.crop_size,) * 2 and pre.mean == (0.485, 0.456, 0.406)


def test_wan_vae_input_in_minus_one_one():
    pre = tiny_encoder("wan22_vae").preprocess
    x = pre(np.stack([np.zeros((32, 64, 3), np.uint8), np.full((32, 64, 3), 255, np.uint8)]))
    assert torch.allclose(x[0], torch.full_like(x[0], -1.0)) and torch.allclose(x[1], torch.ones_like(x[1]))
