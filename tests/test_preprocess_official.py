"""The encoders' official resize + centre crop, offered beside the project's letterbox."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from phyprobe.encoders import from_config
from phyprobe.encoders.preprocess import Preprocess


def test_crop_keeps_the_centre_and_drops_the_sides():
    """A 32x64 frame into 16x16: short side to 16 (-> 16x32), then the middle 16 columns."""
    frames = np.zeros((1, 32, 64, 3), np.uint8)
    frames[:, :, :8] = 255  # a left edge that the crop must discard
    frames[:, :, 28:36] = 128
    p = Preprocess(size=(16, 16), mean=(0, 0, 0), std=(1, 1, 1), resize="crop")
    x = p(frames)
    full = F.interpolate(
        torch.from_numpy(frames).permute(0, 3, 1, 2).float() / 255,
        size=(16, 32),
        mode="bilinear",
        antialias=True,
        align_corners=False,
    )
    torch.testing.assert_close(x, full[..., 8:24])
    assert x.shape == (1, 3, 16, 16) and x[..., 0].max() < 0.1  # the white left edge is gone
    letterbox = Preprocess(size=(16, 16), mean=(0, 0, 0), std=(1, 1, 1))(frames)
    assert letterbox[..., 4, 0].max() > 0.9  # ...where the letterbox keeps it


@pytest.mark.parametrize(
    "name,kw",
    [("vjepa2", {"size": "L", "weights": None, "tiny": True}), ("clip", {"size": "B", "weights": None, "tiny": True})],
)
def test_official_option_changes_only_the_resize(name, kw):
    torch.manual_seed(0)
    default = from_config(name, **kw)
    official = from_config(name, preprocess="official", **kw)
    assert default.preprocess.resize == "letterbox" and official.preprocess.resize == "crop"
    assert default.fingerprint() != official.fingerprint()  # a different cache key and scorer fingerprint
    assert "preprocess" not in default.options  # existing caches and scorers keep their key
    with pytest.raises(ValueError, match="preprocess"):
        from_config(name, preprocess="center", **kw)
