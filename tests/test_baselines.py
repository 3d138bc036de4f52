"""Baselines on synthetic inputs whose answer is known: a feature jump is surprising, a teleport is
a motion glitch, constant-speed motion is not."""

import cv2
import numpy as np
import pytest
import torch

from phyprobe.baselines.motion import motion_score
from phyprobe.baselines.surprisal import SurprisalBaseline

# --- feature surprisal -----------------------------------------------------------------------------


def smooth_sequence(rng, t=16, d=32):
    """Features drifting smoothly along a random direction, as a slowly changing scene would give."""
    start, direction = rng.normal(size=d), rng.normal(size=d)
    return start + np.linspace(0, 1, t)[:, None] * direction + 0.01 * rng.normal(size=(t, d))


@pytest.fixture(scope="module")
def fitted():
    rng = np.random.default_rng(0)
    return SurprisalBaseline(context=2).fit([smooth_sequence(rng) for _ in range(40)]), rng


def test_a_feature_jump_is_more_surprising(fitted):
    model, rng = fitted
    smooth = smooth_sequence(rng)
    jump = smooth.copy()
    jump[9:] = smooth_sequence(rng)[9:]  # the scene changes abruptly at t = 9
    s, j = model.score(smooth), model.score(jump)
    assert set(s) == {"max", "mean"}
    assert j["max"] > 2 * s["max"] and j["mean"] > s["mean"]
    surprise = model.surprise(jump)
    assert len(surprise) == 16 - 2 and int(np.argmax(surprise)) == 9 - 2  # first step predicting frame 9


def test_window_smooths_and_brief_glitch_is_diluted_in_mean(fitted):
    model, rng = fitted
    seq = smooth_sequence(rng)
    seq[8] += 3.0 * rng.normal(size=seq.shape[1])  # one corrupted frame
    windowed = SurprisalBaseline(context=2, window=4).fit([smooth_sequence(rng) for _ in range(40)])
    assert len(windowed.surprise(seq)) == 16 - 2 - 4 + 1
    assert windowed.score(seq)["max"] < model.score(seq)["max"]


def test_streamed_fit_is_scikit_learns_ridge_on_every_window_at_once():
    """The fit reads one clip at a time (a generator here) and gives the ridge fitted on all windows stacked."""
    from sklearn.linear_model import Ridge

    rng = np.random.default_rng(0)
    clips = [rng.standard_normal((int(rng.integers(5, 12)), 6)).cumsum(axis=0) for _ in range(30)]
    base = SurprisalBaseline(context=2, alpha=0.5).fit(c for c in clips)
    xs, ys = zip(*(base._windows(c) for c in clips))
    ref = Ridge(alpha=0.5).fit(np.concatenate(xs), np.concatenate(ys))
    x, _ = base._windows(clips[0])
    np.testing.assert_allclose(x @ base.coef + base.intercept, ref.predict(x), rtol=1e-7, atol=1e-9)
    with pytest.raises(ValueError, match="at least one plausible clip"):
        SurprisalBaseline().fit(iter([]))


def test_surprisal_accepts_torch_and_checks_shapes(fitted):
    model, rng = fitted
    seq = smooth_sequence(rng)
    assert model.score(torch.from_numpy(seq).float())["max"] == pytest.approx(model.score(seq)["max"], rel=1e-4)
    with pytest.raises(ValueError, match="no next frame"):
        model.score(seq[:2])
    with pytest.raises(ValueError, match="feature width"):
        model.score(seq[:, :8])
    with pytest.raises(RuntimeError, match="fit"):
        SurprisalBaseline().score(seq)


# --- motion heuristic ---------------------------------------------------------------------------------


def dot_video(xs, h=64, w=96, noise=0.0, seed=0):
    frames = np.zeros((len(xs), h, w, 3), np.uint8)
    for t, x in enumerate(xs):
        cv2.circle(frames[t], (int(x), h // 2), 4, (255, 255, 255), -1)
    frames = np.stack([cv2.GaussianBlur(f, (5, 5), 1) for f in frames]).astype(float)
    frames += np.random.default_rng(seed).normal(0, noise, frames.shape)
    return np.clip(frames, 0, 255).astype(np.uint8)


@pytest.mark.parametrize("noise", [0.0, 8.0])
def test_teleport_scores_above_constant_speed(noise):
    constant = motion_score(dot_video([10 + 3 * t for t in range(16)], noise=noise))
    teleport = motion_score(dot_video([10 + 3 * t + (30 if t >= 8 else 0) for t in range(16)], noise=noise))
    assert teleport > 5 * constant + 0.01
    assert constant < 0.01  # under a pixel of acceleration per frame diagonal


def test_motion_score_edge_cases():
    assert motion_score(dot_video([40] * 8)) == 0.0
    assert motion_score(np.zeros((5, 32, 32, 3), np.uint8)) == 0.0  # no texture at all
    gray = dot_video([10 + 3 * t for t in range(8)])[..., :1]
    assert motion_score(gray) == pytest.approx(motion_score(dot_video([10 + 3 * t for t in range(8)])), abs=1e-3)
    with pytest.raises(ValueError, match="T >= 3"):
        motion_score(np.zeros((2, 8, 8, 3), np.uint8))
