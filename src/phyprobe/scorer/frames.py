"""Videos already in memory -> the encoder's preprocessed clips, exactly as their files would give.

A generator's output is scored without writing mp4s: frames are chosen with the same sampler as
decoded files (:func:`phyprobe.io.video.sample_indices` on the frames' times) and fitted with the
encoder's own :class:`~phyprobe.encoders.Preprocess`, so the only difference from scoring a
losslessly written file is the file itself. Frames are pixels: float frames are rounded to the 256 levels a file
holds, and frames far larger than the encoder's input are first reduced as the decoder reduces a file's
(:func:`phyprobe.io.video.reduced_size`, pixel area averaging), so every layout and dtype gives the file's score.
"""

from __future__ import annotations

from typing import Iterator

import numpy as np
import torch

from ..io.video import reduced_size, sample_indices


def as_pixels(frames) -> tuple[torch.Tensor, str]:
    """(B, T, H, W, 3) on the 0..255 scale that Preprocess divides by 255, and a layout name for errors."""
    x = torch.from_numpy(np.ascontiguousarray(frames)) if isinstance(frames, np.ndarray) else torch.as_tensor(frames)
    if x.ndim != 5:
        raise ValueError(f"score_frames: expected a batch of videos with 5 dimensions, got shape {tuple(x.shape)}")
    if x.dtype == torch.uint8:
        if x.shape[-1] != 3:
            raise ValueError(f"score_frames: uint8 frames must be (B, T, H, W, 3), got shape {tuple(x.shape)}")
        return x, "uint8 (B, T, H, W, 3)"
    if not x.is_floating_point():
        raise ValueError(f"score_frames: frames must be uint8 or float, got {x.dtype}")
    if x.shape[2] != 3:
        raise ValueError(f"score_frames: float frames must be (B, T, 3, H, W) in [0, 1], got shape {tuple(x.shape)}")
    lo, hi = float(x.min()), float(x.max())
    if lo < 0.0 or hi > 1.0 or not np.isfinite([lo, hi]).all():
        raise ValueError(f"score_frames: float frames must lie in [0, 1], got values in [{lo:g}, {hi:g}]")
    return (x.permute(0, 1, 3, 4, 2).float().cpu() * 255.0).round().to(torch.uint8), "float (B, T, 3, H, W)"


def as_decoded(frames: torch.Tensor, fit: tuple[int, int]) -> torch.Tensor:
    """uint8 frames (T, H, W, 3) reduced as the decoder reduces a file's frames for an input of size ``fit``
    (the same size rule and the same pixel-area resampling, PyAV's), so the preprocessing then resizes alike."""
    h, w = frames.shape[1:3]
    rh, rw = reduced_size(h, w, fit)
    if (rh, rw) == (h, w):
        return frames
    import av

    out = [
        av.VideoFrame.from_ndarray(f, format="rgb24")
        .reformat(format="rgb24", width=rw, height=rh, interpolation="AREA")
        .to_ndarray()
        for f in frames.numpy()
    ]
    return torch.from_numpy(np.stack(out))


def clips_from_frames(frames, scorer, fps: float | None = None) -> Iterator[tuple[int, str, torch.Tensor]]:
    """(i, "frames[i]", preprocessed clip (T', 3, H', W')) for each clip the scorer's reading cuts from each video
    of the batch (one, or its windows of consecutive frames), lazily."""
    x, _ = as_pixels(frames)
    encoder = scorer.encoder
    spec = encoder.clip_spec(scorer.clip)
    if spec.mode == "fps" and not (fps and fps > 0):
        raise ValueError(f"score_frames: this scorer samples at {spec.fps} frames/s, so pass the frames' fps")
    fit = encoder.preprocess.size
    starts = scorer.window_starts(x.shape[1])
    if starts is None:
        times = np.arange(x.shape[1], dtype=np.float64) / (fps or 1.0)
        idx = torch.from_numpy(sample_indices(times, spec))
    for i in range(x.shape[0]):
        if starts is None:
            yield i, f"frames[{i}]", encoder.preprocess(as_decoded(x[i, idx], fit))
        else:
            for s in starts:
                clip = as_decoded(x[i, s : s + spec.num_frames], fit)
                yield i, f"frames[{i}][{s}:{s + spec.num_frames}]", encoder.preprocess(clip)
