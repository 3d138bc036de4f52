"""The head kinds: the paper's MLP and the monotone head the dynamics default uses."""

import pytest
import torch

from phyprobe.head import PhyProbeHead


def test_monotone_head_never_lowers_the_score_when_evidence_grows():
    torch.manual_seed(0)
    head = PhyProbeHead(8, stats=("mean", "max"), kind="monotone")
    with torch.no_grad():  # arbitrary trained-looking weights, some pushed far negative before the softplus
        head.monotone.raw_weight.copy_(torch.randn(16) * 3)
        head.monotone.bias.fill_(-0.3)
    feats = torch.rand(64, 6, 8)
    base = head(feats)
    for d in range(8):
        bumped = feats.clone()
        bumped[..., d] += torch.rand(64, 6)
        assert (head(bumped) >= base - 1e-6).all(), d
    assert (head.monotone.weights() >= 0).all()


def test_monotone_head_starts_as_the_plain_mean_of_its_standardised_inputs():
    head = PhyProbeHead(5, stats=("mean",), kind="monotone")
    feats = torch.rand(10, 4, 5)
    assert torch.allclose(head(feats), feats.mean(1).mean(1), atol=1e-6)


def test_unknown_head_kind_is_refused():
    with pytest.raises(ValueError, match="head kind"):
        PhyProbeHead(4, kind="transformer")


def test_the_two_kinds_hold_different_parameters():
    mlp, mono = PhyProbeHead(16), PhyProbeHead(16, kind="monotone")
    assert mlp.num_parameters() > 10 * mono.num_parameters()
    assert mono.num_parameters() == 3 * 16 + 1  # one weight per pooled input, one bias
