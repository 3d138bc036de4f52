"""Every registry entry builds, runs, and keeps the shape/dtype contract the feature cache relies on."""

import pytest
import torch
from encoder_fixtures import TINY_BUILDS, tiny_clip, tiny_encoder

from phyprobe.encoders import available_configs, from_config


def test_every_entry_has_a_tiny_build():
    assert set(available_configs()) == set(TINY_BUILDS)


@pytest.mark.parametrize("name", sorted(TINY_BUILDS))
def test_tiny_build_contract(name):
    enc = tiny_encoder(name)
    x = tiny_clip(enc, num_frames=4)
    t = x.shape[1]
    y = enc(x)
    assert y.shape == (2, enc.num_steps(t), enc.feature_dim)
    assert y.dtype == torch.float32 and torch.isfinite(y).all()
    assert not enc.training and not any(p.requires_grad for p in enc.parameters())
    assert enc.fingerprint() == tiny_encoder(name).fingerprint()  # options fully describe the build


@pytest.mark.parametrize(
    "name, kwargs, dim, frames, steps, size",
    [
        ("perception_encoder", {"size": "G"}, 1536, 4, 4, (448, 448)),
        ("perception_encoder", {"size": "G", "output": "proj"}, 1280, 4, 4, (448, 448)),
        ("perception_encoder", {"size": "G", "output": "patch_mean", "layer": 40}, 1536, 4, 4, (448, 448)),
        ("perception_encoder", {"size": "L"}, 1024, 2, 2, (336, 336)),
        ("perception_encoder", {"size": "B", "output": "proj"}, 1024, 2, 2, (224, 224)),
        ("vjepa2", {"size": "H"}, 1280, 16, 8, (256, 256)),
        ("vjepa2", {"size": "L", "layer": 17}, 1024, 4, 2, (256, 256)),
        ("vjepa2", {"size": "g"}, 1408, 4, 2, (256, 256)),
        ("wan22_vae", {}, 48, 17, 5, (352, 640)),
        ("wan22_vae", {"pool": "grid"}, 768, 5, 2, (352, 640)),
        ("clip", {"size": "L"}, 768, 2, 2, (224, 224)),
        ("siglip2", {"size": "SO400M"}, 1152, 2, 2, (384, 384)),
        ("dinov2", {"size": "L"}, 1024, 2, 2, (224, 224)),
        ("dinov3", {"size": "L"}, 1024, 2, 2, (256, 256)),
        ("dinov3", {"size": "H+"}, 1280, 2, 2, (256, 256)),
    ],
)
def test_real_size_shapes_on_meta(name, kwargs, dim, frames, steps, size):
    """Real architectures, no memory: built and run on the meta device (documented dims in docs/encoders.md)."""
    with torch.device("meta"):
        enc = from_config(name, weights=None, **kwargs)
        y = enc(torch.empty(1, frames, 3, *size))
    assert enc.feature_dim == dim and enc.preprocess.size == size
    assert y.shape == (1, steps, dim) and enc.num_steps(frames) == steps


def test_layer_selection_is_validated():
    with pytest.raises(ValueError, match="out of range"):
        tiny_encoder("perception_encoder", output="patch_mean", layer=5)
    with pytest.raises(ValueError, match="for output=.patch_mean. only"):
        tiny_encoder("perception_encoder", layer=0)
    with pytest.raises(ValueError, match="output must be one of"):
        tiny_encoder("dinov2", output="proj")
    a = tiny_encoder("perception_encoder", output="patch_mean", layer=-2)
    assert a.options["layer"] == 0  # negative layers are stored resolved, so the cache key is unique


def test_efficientnet_spatial_pool_reduces_the_frame_map_as_named():
    """avg / max must be the mean / max of each frame's final feature map, and must change the cache
    key: features pooled one way can never be served to a run configured the other way."""
    avg = from_config("efficientnet_lite0", image_size=64, weights=None)
    mx = from_config("efficientnet_lite0", image_size=64, weights=None, spatial_pool="max")
    mx.model.load_state_dict(avg.model.state_dict())
    x = tiny_clip(avg, num_frames=3)
    fmap = avg.model.forward_features(x.flatten(0, 1)).float()
    torch.testing.assert_close(avg(x).flatten(0, 1), fmap.mean((2, 3)))
    torch.testing.assert_close(mx(x).flatten(0, 1), fmap.amax((2, 3)))
    assert avg.fingerprint() != mx.fingerprint()
    with pytest.raises(ValueError, match="spatial_pool"):
        from_config("efficientnet_lite0", weights=None, spatial_pool="gem")


def test_dinov3_pooled_is_the_normed_class_token():
    """timm builds DINOv3 with average pooling; upstream DINOv3 (and this project's DINOv2 ``pooled``) is the
    normed class token, so the entry must ask for it."""
    enc = tiny_encoder("dinov3")
    x = tiny_clip(enc, num_frames=2)
    tokens = enc.model.forward_features(x.flatten(0, 1))  # normed: class, 4 registers, patches
    assert tokens.shape[1] == 1 + 4 + 4  # 32 px at patch 16: 2 x 2 patches
    torch.testing.assert_close(enc(x).flatten(0, 1), tokens[:, 0])
    assert not torch.allclose(tokens[:, 0], tokens[:, 5:].mean(1))
