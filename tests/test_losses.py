import math

import pytest
import torch

from phyprobe.losses import PhyProbeLoss, bradley_terry_loss, calibration_loss, magnitude_loss


def softplus(x):
    return math.log1p(math.exp(x))


def test_bradley_terry_hard_labels_match_hand_computed():
    # -log σ(d) = softplus(-d); -log(1 - σ(d)) = softplus(d)
    s_a, s_b = torch.tensor([1.0, 0.0]), torch.tensor([0.0, 2.0])
    got = bradley_terry_loss(s_a, s_b, torch.tensor([1.0, 0.0]))
    want = (softplus(-1.0) + softplus(-2.0)) / 2
    assert math.isclose(got.item(), want, rel_tol=1e-6)


def test_bradley_terry_tie_label_is_minimised_at_equal_scores():
    # Label 0.5: loss = 0.5·softplus(-d) + 0.5·softplus(d), minimum log 2 at d = 0, zero gradient there.
    s_a = torch.tensor([0.3], requires_grad=True)
    s_b = torch.tensor([0.3])
    loss = bradley_terry_loss(s_a, s_b, torch.tensor([0.5]))
    loss.backward()
    assert math.isclose(loss.item(), math.log(2), rel_tol=1e-6)
    assert abs(s_a.grad.item()) < 1e-7
    # Away from equality the tie loss grows and its gradient pulls the scores back together.
    s_a2 = torch.tensor([1.3], requires_grad=True)
    loss2 = bradley_terry_loss(s_a2, s_b, torch.tensor([0.5]))
    loss2.backward()
    assert math.isclose(loss2.item(), 0.5 * softplus(-1.0) + 0.5 * softplus(1.0), rel_tol=1e-6)
    assert s_a2.grad.item() > 0  # gradient descent lowers s_a towards s_b


def test_bradley_terry_weights():
    s_a, s_b = torch.tensor([1.0, -1.0]), torch.tensor([0.0, 0.0])
    got = bradley_terry_loss(s_a, s_b, torch.tensor([1.0, 1.0]), torch.tensor([3.0, 1.0]))
    want = (3 * softplus(-1.0) + 1 * softplus(1.0)) / 4
    assert math.isclose(got.item(), want, rel_tol=1e-6)


def test_huber_magnitude_masks_unknown_and_switches_regime():
    s = torch.tensor([0.05, 0.3, 0.7])
    mag = torch.tensor([0.0, 0.0, float("nan")])
    got, n = magnitude_loss(s, mag, delta=0.1)
    # |0.05| <= δ: 0.5·0.05² = 0.00125; |0.3| > δ: δ·(0.3 − δ/2) = 0.025
    assert n == 2
    assert math.isclose(got.item(), (0.00125 + 0.025) / 2, rel_tol=1e-6)


def test_calibration_only_on_anchors():
    s = torch.tensor([0.2, 0.9, 5.0])
    anchor = torch.tensor([0.0, 1.0, float("nan")])
    got, n = calibration_loss(s, anchor)
    assert n == 2
    assert math.isclose(got.item(), (0.04 + 0.01) / 2, rel_tol=1e-6)
    empty, n0 = calibration_loss(s, torch.full((3,), float("nan")))
    assert n0 == 0 and empty.item() == 0.0


def test_total_is_weighted_sum_and_lambda_zero_removes_term():
    s_a, s_b = torch.tensor([0.8]), torch.tensor([0.1])
    items = torch.cat([s_a, s_b])
    mag, anchor = torch.tensor([1.0, 0.0]), torch.tensor([1.0, 0.0])
    args = (s_a, s_b, torch.tensor([1.0]), torch.tensor([1.0]), mag, anchor, items)
    full = PhyProbeLoss(1.0, 2.0, 3.0)(*args)
    assert math.isclose(
        full["loss"].item(), full["rank"].item() + 2 * full["mag"].item() + 3 * full["cal"].item(), rel_tol=1e-6
    )
    no_cal = PhyProbeLoss(1.0, 2.0, 0.0)(*args)
    assert math.isclose(no_cal["loss"].item(), no_cal["rank"].item() + 2 * no_cal["mag"].item(), rel_tol=1e-6)


def test_anchor_fraction_keeps_a_fixed_share_of_the_anchors():
    """Sparse anchors: a kept anchor is unchanged, the choice follows the video id (not the row order),
    and the share kept tracks the fraction."""
    import numpy as np
    import pandas as pd

    from phyprobe.training.parts import anchors_of

    n = 2000
    videos = pd.DataFrame(
        {"id": [f"v{i}" for i in range(n)], "anchor": [i % 3 if i % 3 < 2 else None for i in range(n)]}
    )
    full = anchors_of(videos)
    assert np.isnan(full).sum() == (videos["anchor"].isna()).sum()
    sparse = anchors_of(videos, 0.25)
    kept = ~np.isnan(sparse)
    assert np.array_equal(sparse[kept], full[kept])
    assert abs(kept.sum() / (~np.isnan(full)).sum() - 0.25) < 0.05
    shuffled = videos.sample(frac=1.0, random_state=0)
    again = anchors_of(shuffled, 0.25)
    assert np.array_equal(np.isnan(again), np.isnan(sparse[shuffled.index.to_numpy()]))
    assert np.isnan(anchors_of(videos, 0.0)).all()
    with pytest.raises(ValueError, match="anchor_fraction"):
        anchors_of(videos, 1.5)


def test_train_fraction_keeps_whole_scenes_and_nests():
    """A learning curve's subsets: twins of one scene stay together, smaller shares are inside larger
    ones, the share tracks the fraction, and videos without a scene count as their own."""
    import pandas as pd

    from phyprobe.data.manifest import Manifest
    from phyprobe.training.parts import subsample_scenes

    n_scenes, per = 400, 3
    rows = [{"id": f"s{s}/v{k}", "metadata": {"scene": f"s{s}"}} for s in range(n_scenes) for k in range(per)]
    rows += [{"id": f"loose{i}", "metadata": {}} for i in range(200)]
    videos = pd.DataFrame(rows)
    pairs = pd.DataFrame({"a": [f"s{s}/v0" for s in range(n_scenes)], "b": [f"s{s}/v1" for s in range(n_scenes)]})
    m = Manifest(videos=videos, pairs=pairs, root=None)
    assert subsample_scenes(m, 1.0) is m
    half, quarter = subsample_scenes(m, 0.5), subsample_scenes(m, 0.25)
    scene_sizes = half.videos["metadata"].map(lambda md: md.get("scene")).dropna().value_counts()
    assert (scene_sizes == per).all()
    assert set(quarter.videos["id"]) <= set(half.videos["id"])
    assert abs(len(half.videos) / len(videos) - 0.5) < 0.07
    loose = half.videos["id"].str.startswith("loose").sum()
    assert 0 < loose < 200
    assert set(half.pairs["a"]) | set(half.pairs["b"]) <= set(half.videos["id"])
    assert len(half.pairs) == (scene_sizes.size)
    with pytest.raises(ValueError, match="train_fraction"):
        subsample_scenes(m, -0.1)
