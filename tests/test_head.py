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


def test_grouped_monotone_head_weighs_each_group_s_mean_once_per_pooling_statistic():
    """groups over the per-step columns: each (pooling statistic, group) gets one weight on the mean of its
    standardised inputs; at the start every such group counts the same."""
    head = PhyProbeHead(5, stats=("mean", "max"), kind="monotone", groups=[[0, 1, 2, 3], [4]])
    assert head.num_parameters() == 4 + 1
    feats = torch.rand(10, 4, 5)
    mean, mx = feats.mean(1), feats.amax(1)
    start = (mean[:, :4].mean(1) + mean[:, 4] + mx[:, :4].mean(1) + mx[:, 4]) / 4
    torch.testing.assert_close(head(feats), start)
    with torch.no_grad():
        head.monotone.raw_weight.copy_(torch.tensor([0.0, 1.0, -2.0, 3.0]))
    w = torch.nn.functional.softplus(torch.tensor([0.0, 1.0, -2.0, 3.0]))
    torch.testing.assert_close(
        head(feats), w[0] * mean[:, :4].mean(1) + w[1] * mean[:, 4] + w[2] * mx[:, :4].mean(1) + w[3] * mx[:, 4]
    )
    for bad in ([[0, 1], [3, 4]], [[0, 1, 2, 3, 4], [4]], [[0, 1, 2, 3, 4], []]):
        with pytest.raises(ValueError, match="cover each of the 10 inputs exactly once"):
            PhyProbeHead(5, stats=("mean", "max"), kind="monotone", groups=bad)
    with pytest.raises(ValueError, match="groups are for the monotone head"):
        PhyProbeHead(5, kind="mlp", groups=[[0, 1, 2, 3, 4]])


def test_a_grouped_head_counts_a_kind_of_evidence_the_same_however_many_columns_it_has():
    """Repeating the error columns (a finer grid) leaves a grouped head's scores as they were; per input, the
    one extra input weighs less the more errors there are beside it."""
    torch.manual_seed(0)
    errors, level = torch.rand(32, 6, 8), torch.rand(32, 6, 1)
    few, many = torch.cat([errors, level], -1), torch.cat([errors.repeat(1, 1, 4), level], -1)
    grouped = [PhyProbeHead(d, stats=("mean",), kind="monotone", groups=[list(range(d - 1)), [d - 1]]) for d in (9, 33)]
    per_input = [PhyProbeHead(d, stats=("mean",), kind="monotone") for d in (9, 33)]
    for head, x in zip(grouped + per_input, (few, many, few, many)):
        head.fit_normalisation(x)
    torch.testing.assert_close(grouped[0](few), grouped[1](many))
    level_weight = [h.monotone.weights()[-1].item() for h in per_input]
    assert level_weight == pytest.approx([1 / 9, 1 / 33], rel=1e-4)


def test_a_grouped_head_divides_each_kind_by_its_spread_over_the_training_clips():
    """Fitted on the training clips, every kind of evidence the weights multiply has unit spread there, so a
    single level does not outweigh hundreds of errors whose mean varies little (and the scale is stored)."""
    torch.manual_seed(0)
    errors = torch.randn(200, 6, 1).expand(-1, -1, 40) * 0.2 + torch.randn(200, 6, 40)  # a shared part and noise
    level = torch.randn(200, 6, 1) * 3 + 5
    x = torch.cat([errors, level], -1)
    head = PhyProbeHead(41, stats=("mean",), kind="monotone", groups=[list(range(40)), [40]])
    head.fit_normalisation(x, rows=range(150))
    kinds = head.monotone.kinds(head.standardised(x[:150]))
    torch.testing.assert_close(kinds.std(0, unbiased=False), torch.ones(2), rtol=1e-4, atol=1e-4)
    assert head.monotone.group_scale[0] < 0.5 < head.monotone.group_scale[1] == pytest.approx(1.0, rel=1e-4)
    assert "monotone.group_scale" in head.state_dict()
    torch.testing.assert_close(head(x), head.monotone.kinds(head.standardised(x)).mean(1))  # weights 1/2, bias 0


def test_a_grouped_head_exported_before_group_scales_loads_with_scale_one():
    torch.manual_seed(0)
    x = torch.rand(32, 6, 5)
    head = PhyProbeHead(5, stats=("mean",), kind="monotone", groups=[[0, 1, 2, 3], [4]])
    head.fit_normalisation(x)
    old = {k: v for k, v in head.state_dict().items() if k != "monotone.group_scale"}
    loaded = PhyProbeHead(5, stats=("mean",), kind="monotone", groups=[[0, 1, 2, 3], [4]])
    loaded.load_state_dict(old)
    torch.testing.assert_close(loaded.monotone.group_scale, torch.ones(2))
    pooled = (x.mean(1) - head.in_mean) / head.in_std
    torch.testing.assert_close(loaded(x), (pooled[:, :4].mean(1) + pooled[:, 4]) / 2)
    per_input = PhyProbeHead(5, stats=("mean",), kind="monotone")
    assert "monotone.group_scale" not in per_input.state_dict()  # a weight per input has nothing to scale
