import numpy as np
import pytest
import torch

from phyprobe.encoders import Preprocess


def frame_with_corner_markers(h, w):
    f = np.full((1, h, w, 3), 128, np.uint8)
    f[0, :4, :4] = 255  # top-left marker
    f[0, -4:, -4:] = 0  # bottom-right marker
    return f


def content_box(x: torch.Tensor):
    """Rows/cols where the normalised frame is not exactly the zero padding."""
    nz = (x[0].abs().sum(0) > 0).nonzero()
    return nz[:, 0].min().item(), nz[:, 0].max().item(), nz[:, 1].min().item(), nz[:, 1].max().item()


@pytest.mark.parametrize("h,w", [(72, 128), (128, 72), (100, 100), (33, 201)])
def test_letterbox_keeps_aspect_ratio_and_all_content(h, w):
    pre = Preprocess(size=(64, 64), mean=(0.5,) * 3, std=(0.5,) * 3)
    x = pre(frame_with_corner_markers(h, w))
    assert x.shape == (1, 3, 64, 64)
    top, bottom, left, right = content_box(x)
    ch, cw = bottom - top + 1, right - left + 1
    assert abs(ch / cw - h / w) < 0.08 * (h / w) + 0.05  # aspect kept (up to rounding)
    assert max(ch, cw) == 64  # fitted, not cropped: the long side fills the frame
    # both corner markers survive: bright top-left, dark bottom-right of the content box
    assert x[0, :, top, left].mean() > 0.5 and x[0, :, bottom, right].mean() < -0.5


def test_padding_is_mean_colour():
    pre = Preprocess(size=(32, 32), mean=(0.2, 0.4, 0.6), std=(0.1, 0.1, 0.1))
    x = pre(np.zeros((2, 8, 32, 3), np.uint8))
    assert torch.count_nonzero(x[:, :, 0, :]) == 0  # padded rows are exactly 0 after normalisation


def test_squash_fills_the_frame_without_cropping():
    pre = Preprocess(size=(32, 32), mean=(0.5,) * 3, std=(0.5,) * 3, resize="squash")
    x = pre(frame_with_corner_markers(72, 128))
    assert content_box(x) == (0, 31, 0, 31)
    assert x[0, :, 0, 0].mean() > 0.5 and x[0, :, -1, -1].mean() < -0.5


def test_rejects_bad_shape_and_mode():
    with pytest.raises(ValueError, match="resize"):
        Preprocess(size=(8, 8), mean=(0,) * 3, std=(1,) * 3, resize="zoom")
    with pytest.raises(ValueError, match=r"\(T, H, W, 3\)"):
        Preprocess(size=(8, 8), mean=(0,) * 3, std=(1,) * 3)(np.zeros((4, 4, 3), np.uint8))
