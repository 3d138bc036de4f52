"""How video encoders map frames to feature steps: V-JEPA 2 tubelets, the Wan VAE's causal 1 + 4k."""

import pytest
import torch
from encoder_fixtures import tiny_clip, tiny_encoder


def test_vjepa2_tokens_are_time_major():
    """Perturbing tubelet 1 (frames 2-3) moves step 1's feature far more than any other step's."""
    enc = tiny_encoder("vjepa2")
    x = tiny_clip(enc, num_frames=8, batch=1)
    x2 = x.clone()
    x2[:, 2:4] = torch.randn_like(x2[:, 2:4]) * 2
    d = (enc(x2) - enc(x)).norm(dim=-1)[0]
    assert d.argmax() == 1 and d[1] > 20 * torch.cat([d[:1], d[2:]]).max()


def test_vjepa2_even_frames():
    enc = tiny_encoder("vjepa2")
    assert enc.frames_per_step == 2 and [enc.frames_for(t) for t in (7, 8, 1)] == [8, 8, 2]
    with pytest.raises(ValueError, match="even number of frames"):
        enc(torch.zeros(1, 5, 3, 32, 32))


def test_wan_vae_needs_4k_plus_1_frames():
    enc = tiny_encoder("wan22_vae")
    assert [enc.frames_for(t) for t in (16, 17, 81, 1, 2)] == [17, 17, 81, 1, 5]
    assert [enc.num_steps(t) for t in (1, 5, 17, 81)] == [1, 2, 5, 21]
    with pytest.raises(ValueError, match="4k\\+1"):
        enc(torch.zeros(1, 8, 3, 32, 64))


def test_wan_vae_steps_are_causal_chunks():
    """Step 0 is frame 0 alone, step i covers frames 4i-3..4i: changing frames 5-8 leaves steps 0-1 as they were."""
    enc = tiny_encoder("wan22_vae")
    x = tiny_clip(enc, num_frames=13, batch=1)
    x2 = x.clone()
    x2[:, 5:9] = -x2[:, 5:9]
    y, y2 = enc(x), enc(x2)
    assert y.shape[1] == 4
    torch.testing.assert_close(y[:, :2], y2[:, :2])
    assert (y[:, 2] - y2[:, 2]).abs().max() > 1e-3


@pytest.mark.parametrize("pool, mult", [("mean", 1), ("mean_max", 2), ("grid", 4)])
def test_wan_vae_spatial_pooling(pool, mult):
    enc = tiny_encoder("wan22_vae", pool=pool, grid=2)
    z = enc.vae.config.z_dim
    assert enc.feature_dim == z * mult
    assert enc(tiny_clip(enc, num_frames=5)).shape == (2, 2, z * mult)
