"""V-JEPA 2's own-predictor surprisal, on a random-initialised tiny V-JEPA 2 (real transformers modules)."""

import pytest
import torch

from phyprobe.baselines.vjepa2_surprisal import VJEPA2Surprisal
from phyprobe.encoders import from_config


@pytest.fixture(scope="module")
def tiny_vjepa2():
    torch.manual_seed(0)
    return from_config("vjepa2", size="L", weights=None, tiny=True)


def _contexts(encoder, clip, context=2):
    """Run the baseline and record what the predictor was given, with a forward hook."""
    seen = []
    hook = encoder.model.predictor.register_forward_pre_hook(
        lambda mod, args, kwargs: seen.append(kwargs["encoder_hidden_states"].clone()), with_kwargs=True)
    try:
        s = VJEPA2Surprisal(encoder, context=context).surprise(clip)
    finally:
        hook.remove()
    return s, seen


def test_the_predictor_never_sees_the_tubelet_it_predicts(tiny_vjepa2):
    """8 frames = 4 tubelets; with 2 of context, window 0 predicts tubelet 2 and window 1 tubelet 3.
    Changing tubelet 2 must leave window 0's context untouched and change its surprise; changing
    tubelet 3 must leave window 0 entirely unchanged."""
    g = torch.Generator().manual_seed(1)
    clip = torch.randn(8, 3, 32, 32, generator=g)
    s, ctx = _contexts(tiny_vjepa2, clip)
    assert s.shape == (2,) and len(ctx) == 2 and ctx[0].shape[1] == 2 * 4  # 2 tubelets x 2x2 patches

    third = clip.clone()
    third[4:6] = torch.randn(2, 3, 32, 32, generator=g)
    s3, ctx3 = _contexts(tiny_vjepa2, third)
    assert torch.equal(ctx3[0], ctx[0])
    assert s3[0] != pytest.approx(s[0], abs=1e-6)

    last = clip.clone()
    last[6:8] = torch.randn(2, 3, 32, 32, generator=g)
    s4, _ = _contexts(tiny_vjepa2, last)
    assert s4[0] == pytest.approx(s[0], abs=1e-6) and s4[1] != pytest.approx(s[1], abs=1e-6)


def test_score_is_max_and_mean_of_the_steps(tiny_vjepa2):
    clip = torch.randn(12, 3, 32, 32, generator=torch.Generator().manual_seed(2))
    base = VJEPA2Surprisal(tiny_vjepa2, context=1)
    s = base.surprise(clip)
    assert len(s) == 12 // 2 - 1
    assert base.score(clip) == {"max": pytest.approx(s.max()), "mean": pytest.approx(s.mean())}


def test_bad_setups_are_refused(tiny_vjepa2):
    with pytest.raises(ValueError, match="nothing to predict"):
        VJEPA2Surprisal(tiny_vjepa2, context=2).surprise(torch.zeros(4, 3, 32, 32))
    with pytest.raises(ValueError, match="last block"):
        VJEPA2Surprisal(from_config("vjepa2", size="L", weights=None, tiny=True, layer=0))
    with pytest.raises(TypeError, match="vjepa2 encoder"):
        VJEPA2Surprisal(from_config("efficientnet_lite0", weights=None))
