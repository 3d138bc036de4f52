"""V-JEPA 2's own-predictor surprisal, on a random-initialised tiny V-JEPA 2 (real transformers modules)."""

import numpy as np
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
        lambda mod, args, kwargs: seen.append(kwargs["encoder_hidden_states"].clone()), with_kwargs=True
    )
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


def test_predictor_is_given_mask_token_0(tiny_vjepa2):
    """The mask tokens are made distinct; the target tokens the predictor embeds must be token 0's
    (as V-JEPA 2 trains and the official evaluation runs), where transformers' default is token 1."""
    emb = tiny_vjepa2.model.predictor.embeddings
    with torch.no_grad():
        emb.mask_tokens.copy_(torch.randn(emb.mask_tokens.shape, generator=torch.Generator().manual_seed(3)))
    seen = []
    hook = emb.register_forward_hook(lambda mod, args, out: seen.append((args[0].shape[1], out[0].detach().clone())))
    try:
        VJEPA2Surprisal(tiny_vjepa2, context=2).surprise(torch.randn(6, 3, 32, 32))
        n_ctx, out = seen[-1]
        targets = out[0, n_ctx:]
        assert torch.equal(targets, emb.mask_tokens[0, 0].expand_as(targets))
        assert not torch.equal(emb.mask_tokens[0], emb.mask_tokens[1])
        # the library's own default, for contrast: what the baseline would have used without setting it
        ctx = torch.randn(1, 4, tiny_vjepa2.model.config.hidden_size)
        default = emb(ctx, [torch.arange(4).unsqueeze(0)], [torch.arange(4, 8).unsqueeze(0)])[0][0, 4:]
        assert torch.equal(default, emb.mask_tokens[1, 0].expand_as(default))
    finally:
        hook.remove()


def test_windowed_protocol_is_the_official_one(tiny_vjepa2):
    """20 frames -> 16-frame windows at stride 2 start at frames 0, 2, 4; each context of 2..10 frames
    predicts every token after it (4 patches per tubelet here), from the context frames alone."""
    base = VJEPA2Surprisal(tiny_vjepa2, protocol="windowed")
    targets = []
    hook = tiny_vjepa2.model.predictor.register_forward_pre_hook(
        lambda mod, args, kw: targets.append((kw["encoder_hidden_states"].shape[1], kw["target_mask"][0].shape[1])),
        with_kwargs=True,
    )
    clip = torch.randn(20, 3, 32, 32, generator=torch.Generator().manual_seed(4))
    try:
        s = base.surprise_by_context(clip)
    finally:
        hook.remove()
    assert s.shape == (3, 5)
    assert targets[:5] == [(c // 2 * 4, (8 - c // 2) * 4) for c in (2, 4, 6, 8, 10)]
    assert base.score(clip)["max"] == pytest.approx(s.min(axis=1).max())
    # a change after the context (frames 2..15 of window 0) changes the error of the 2-frame context
    # without changing what that context's predictor input was
    later = clip.clone()
    later[8:12] += 1.0
    s2 = base.surprise_by_context(later)
    assert s2[0, 0] != pytest.approx(s[0, 0], abs=1e-6)


def test_windowed_protocol_shrinks_to_short_clips(tiny_vjepa2, toy_manifest):
    from phyprobe.baselines.vjepa2_surprisal import vjepa2_surprisal_scores
    from phyprobe.data.manifest import Manifest
    from phyprobe.io.video import ClipSpec

    m = Manifest.load(toy_manifest)
    m = m.keep(m.videos["id"].isin(["s0_plausible", "s0_violated"]))
    scores = vjepa2_surprisal_scores(m, tiny_vjepa2, ClipSpec(6))
    assert set(scores["max"]) == {"s0_plausible", "s0_violated"}
    assert all(np.isfinite(v) for v in scores["max"].values())
