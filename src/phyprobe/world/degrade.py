"""Quality-only nuisances: the plausible frames made worse to look at, physics untouched.

These twins let the evaluation put a number on how much a head confuses image quality with physical
violation: a good head scores them like their clean plausible twin. The builds' codec twins are the same frames
passed through a codec and quality drawn from those generators ship in (``phyprobe.io.codecs.draw_encoding``), so
training learns them as plausible (docs/studies/codec-invariance.md).
"""

from __future__ import annotations

import cv2
import numpy as np

DEGRADATIONS = ("blur", "noise", "compression", "lowres", "colour")


def degrade(frames: np.ndarray, kind: str, strength: float, rng: np.random.Generator) -> np.ndarray:
    """Apply one degradation with ``strength`` in [0, 1] to RGB uint8 frames (T, H, W, 3)."""
    if kind == "blur":
        sigma = 0.6 + 2.0 * strength
        return np.stack([cv2.GaussianBlur(f, (0, 0), sigma) for f in frames])
    if kind == "noise":
        std = 4.0 + 16.0 * strength
        noisy = frames.astype(np.float32) + std * rng.standard_normal(size=frames.shape, dtype=np.float32)
        return np.clip(noisy, 0, 255).astype(np.uint8)
    if kind == "compression":
        quality = int(round(40 - 32 * strength))
        out = []
        for f in frames:
            ok, buf = cv2.imencode(".jpg", f, [cv2.IMWRITE_JPEG_QUALITY, quality])
            out.append(cv2.imdecode(buf, cv2.IMREAD_UNCHANGED))
        return np.stack(out)
    if kind == "lowres":
        factor = 2.0 + 3.0 * strength
        h, w = frames.shape[1:3]
        small = (max(8, int(w / factor)), max(8, int(h / factor)))
        return np.stack(
            [
                cv2.resize(cv2.resize(f, small, interpolation=cv2.INTER_AREA), (w, h), interpolation=cv2.INTER_LINEAR)
                for f in frames
            ]
        )
    if kind == "colour":
        gains = 1.0 + (0.15 + 0.35 * strength) * rng.uniform(-1, 1, size=3)
        gamma = float(np.exp(rng.uniform(-0.4, 0.4) * strength))
        x = (frames.astype(np.float32) / 255.0) ** gamma * gains.astype(np.float32)
        return np.clip(x * 255.0, 0, 255).astype(np.uint8)
    raise ValueError(f"unknown degradation {kind!r}; known: {DEGRADATIONS}")
