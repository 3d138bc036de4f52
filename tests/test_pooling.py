import pytest
import torch

from phyprobe.head import PhyProbeHead
from phyprobe.pooling import TemporalStatsPool


def test_mean_std_max_values_and_order():
    x = torch.tensor([[[1.0, 10.0], [3.0, 10.0], [5.0, 40.0]]])  # (B=1, T=3, D=2)
    out = TemporalStatsPool(("mean", "std", "max"))(x)
    assert out.shape == (1, 6)
    # population std of (1,3,5) = sqrt(8/3); of (10,10,40) = sqrt(200)
    want = torch.tensor([[3.0, 20.0, (8 / 3) ** 0.5, 200**0.5, 5.0, 40.0]])
    torch.testing.assert_close(out, want)


def test_single_step_has_zero_std_and_delta():
    x = torch.randn(2, 1, 5)
    out = TemporalStatsPool(("std", "delta"))(x)
    assert torch.equal(out, torch.zeros(2, 10))


def test_delta_sees_order_that_mean_std_max_cannot():
    x = torch.tensor([[[0.0], [1.0], [0.0], [1.0]]])
    y = torch.tensor([[[0.0], [0.0], [1.0], [1.0]]])  # same values, other order
    msm = TemporalStatsPool(("mean", "std", "max"))
    assert torch.equal(msm(x), msm(y))
    d = TemporalStatsPool(("delta",))
    assert d(x).item() == 1.0 and d(y).item() == pytest.approx(1 / 3)


@pytest.mark.parametrize("stats", [("mean",), ("max",), ("mean", "std", "max"), ("mean", "std", "max", "delta")])
def test_head_shapes_and_default_size(stats):
    head = PhyProbeHead(1280, stats=stats)
    assert head(torch.randn(4, 16, 1280)).shape == (4,)
    if stats == ("mean", "std", "max"):
        assert 0.9e6 < head.num_parameters() < 1.2e6  # "~1M parameters" at the default width


def test_rejects_unknown_stat():
    with pytest.raises(ValueError, match="pooling stats"):
        TemporalStatsPool(("median",))


def test_std_gradient_is_finite_for_constant_features():
    x = torch.ones(2, 5, 3, requires_grad=True)
    TemporalStatsPool(("std",))(x).sum().backward()
    assert torch.isfinite(x.grad).all()
