"""Frame preprocessing that travels with an encoder's registry entry.

Every encoder states its input size, how frames are fitted to it, the interpolation and the
normalisation statistics. Nothing else in the code base re-derives them, so a scorer exported with
one encoder is always fed exactly as that encoder was during training.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import torch
import torch.nn.functional as F

RESIZE_MODES = ("letterbox", "squash", "crop")
# What ``preprocess="official"`` means for encoders whose official transform centre-crops.
PREPROCESS_CHOICES = ("letterbox", "official")
RESIZE_DTYPES = ("float", "uint8")  # what the frames are resized in (Preprocess.resize_in)


@dataclass(frozen=True)
class Preprocess:
    """uint8 RGB frames (T, H, W, 3) -> float tensor (T, 3, size[0], size[1]).

    ``letterbox`` scales the frame to fit inside ``size`` with its aspect ratio kept and pads the
    rest with the mean colour (0 after normalisation): nothing is cropped away, so a violation at
    the frame edge is still seen. ``squash`` resizes to ``size`` regardless of aspect ratio — the
    official recipe of some encoders (Perception Encoder), kept because features depend on it.
    ``crop`` resizes the short side to fit and centre-crops the rest away — the official eval
    transform of V-JEPA 2 and CLIP, offered for comparison (a 16:9 frame loses 44% to it).

    ``resize_in="uint8"`` resizes the decoded uint8 frames (bilinear with antialiasing, as the float path) before
    converting them to float: decoding and preprocessing a 720p clip for a 448 px input takes about half the CPU time
    (``bench/bench_input_path.py``), and the pixels differ from the float path's by at most one level of 255
    (rounding); the features by the tolerance that ``tests/test_preprocess_uint8.py`` states. Other interpolations take the float path. ``"float"`` (the default,
    every figure so far) converts first; it is left out of :meth:`to_dict`, so caches and exported scorers made
    before the option keep their keys.
    """

    size: tuple[int, int]
    mean: tuple[float, float, float]
    std: tuple[float, float, float]
    resize: str = "letterbox"
    interpolation: str = "bilinear"
    value_range: tuple[float, float] = (0.0, 1.0)
    resize_in: str = "float"

    def __post_init__(self):
        if self.resize not in RESIZE_MODES:
            raise ValueError(f"Preprocess.resize must be one of {RESIZE_MODES}, got {self.resize!r}")
        if self.resize_in not in RESIZE_DTYPES:
            raise ValueError(f"Preprocess.resize_in must be one of {RESIZE_DTYPES}, got {self.resize_in!r}")
        object.__setattr__(self, "size", tuple(int(s) for s in self.size))
        object.__setattr__(self, "mean", tuple(float(s) for s in self.mean))
        object.__setattr__(self, "std", tuple(float(s) for s in self.std))
        object.__setattr__(self, "value_range", tuple(float(s) for s in self.value_range))

    def to_dict(self) -> dict:
        d = asdict(self)
        if self.resize_in == "float":
            del d["resize_in"]
        return {k: list(v) if isinstance(v, tuple) else v for k, v in d.items()}

    @classmethod
    def from_dict(cls, d: dict) -> "Preprocess":
        return cls(**d)

    def fit_box(self, h: int, w: int) -> tuple[int, int]:
        """Size (h, w) of the resized content inside the output frame."""
        th, tw = self.size
        if self.resize == "squash":
            return th, tw
        if self.resize == "crop":
            scale = max(th / h, tw / w)
            return max(th, round(h * scale)), max(tw, round(w * scale))
        scale = min(th / h, tw / w)
        return max(1, min(th, round(h * scale))), max(1, min(tw, round(w * scale)))

    @property
    def in_uint8(self) -> bool:
        """Whether the geometry (resize, crop, padding) is done on uint8 frames: ``resize_in="uint8"``, bilinear."""
        return self.resize_in == "uint8" and self.interpolation == "bilinear"

    def __call__(self, frames: np.ndarray | torch.Tensor) -> torch.Tensor:
        x = self.on_host(frames)
        return self.on_device(x) if x.dtype == torch.uint8 else x

    def on_host(self, frames: np.ndarray | torch.Tensor) -> torch.Tensor:
        """What a decode worker does. With :attr:`in_uint8`, the geometry alone, in uint8: a clip then travels to the
        device as uint8 at the encoder's input size (a quarter of float32's bytes through shared memory and the
        bus), and :meth:`on_device` converts and normalises it there. Otherwise the whole preprocessing, in float."""
        x = torch.as_tensor(np.ascontiguousarray(frames) if isinstance(frames, np.ndarray) else frames)
        if x.ndim != 4 or x.shape[-1] != 3:
            raise ValueError(f"expected frames of shape (T, H, W, 3), got {tuple(x.shape)}")
        x = x.permute(0, 3, 1, 2)
        if self.in_uint8 and x.dtype == torch.uint8:
            return self._crop_or_pad(self._resize(x), self._uint8_mean())
        return self._crop_or_pad(self._normalise(self._resize(self._to_unit(x))), 0.0)

    def on_device(self, x: torch.Tensor) -> torch.Tensor:
        """uint8 clips (..., 3, H, W) from :meth:`on_host` -> the encoder's float input, on ``x``'s device."""
        return self._normalise(self._to_unit(x)).contiguous()

    def _to_unit(self, x: torch.Tensor) -> torch.Tensor:
        x = x.float().div_(255.0)
        lo, hi = self.value_range
        return x * (hi - lo) + lo if (lo, hi) != (0.0, 1.0) else x

    def _normalise(self, x: torch.Tensor) -> torch.Tensor:
        mean = torch.tensor(self.mean, device=x.device).view(3, 1, 1)
        std = torch.tensor(self.std, device=x.device).view(3, 1, 1)
        return (x - mean) / std

    def _uint8_mean(self) -> tuple[int, int, int]:
        """The uint8 colour closest to the mean: letterbox padding that normalises to 0 within rounding."""
        lo, hi = self.value_range
        return tuple(min(255, max(0, round((m - lo) / (hi - lo) * 255))) for m in self.mean)

    def _resize(self, x: torch.Tensor) -> torch.Tensor:
        """To the fit box, antialiased (uint8 frames through torch's vectorised channels-last kernel)."""
        h, w = x.shape[-2:]
        ch, cw = self.fit_box(h, w)
        if (ch, cw) == (h, w):
            return x
        mode = self.interpolation
        if x.dtype == torch.uint8:
            return F.interpolate(
                x.contiguous(memory_format=torch.channels_last), size=(ch, cw), mode=mode, antialias=True
            )
        return F.interpolate(
            x, size=(ch, cw), mode=mode, antialias=mode in ("bilinear", "bicubic"), align_corners=False
        )

    def _crop_or_pad(self, x: torch.Tensor, pad) -> torch.Tensor:
        """The fit box centred in ``size``: cropped (``crop``) or padded with ``pad`` (``letterbox``)."""
        ch, cw = x.shape[-2:]
        th, tw = self.size
        if (ch, cw) == (th, tw):
            return x.contiguous()
        if self.resize == "crop":
            top, left = (ch - th) // 2, (cw - tw) // 2
            return x[..., top : top + th, left : left + tw].contiguous()
        top, left = (th - ch) // 2, (tw - cw) // 2
        out = x.new_empty((*x.shape[:-2], th, tw))
        out[...] = torch.tensor(pad, dtype=x.dtype).view(3, 1, 1) if isinstance(pad, tuple) else pad
        out[..., top : top + ch, left : left + cw] = x
        return out
