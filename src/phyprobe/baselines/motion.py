"""A motion-smoothness heuristic: physical motion is continuous, so flow changes slowly along a
trajectory; teleports, temporal jumps and shuffles make it change abruptly.

Dense Farneback flow (OpenCV; DIS as an option for the motion encoders) between consecutive frames gives F_t. The acceleration is taken along
trajectories (Lagrangian), a_t(p) = F_{t+1}(p + F_t(p)) - F_t(p): the plain difference at a fixed
pixel would flag every moving edge of an object in uniform motion. Only textured pixels count
(Sobel gradient at least ``edge_fraction`` of the frame's strongest): in flat regions Farneback
smears flow from nearby edges, and the smear's own border reads as a spurious acceleration. Per step
the spatial ``quantile`` of |a_t| over those pixels keeps small objects visible without trusting a
single pixel; the score is its maximum over time divided by the frame diagonal, so it does not grow
with resolution. It measures motion glitches only — no gravity, no contacts, no object permanence.
"""

from __future__ import annotations

import functools
from pathlib import Path

import cv2
import numpy as np

_FARNEBACK = dict(pyr_scale=0.5, levels=3, winsize=15, iterations=3, poly_n=5, poly_sigma=1.2, flags=0)


def gray(frames: np.ndarray) -> np.ndarray:
    if frames.ndim == 3:
        return frames
    if frames.shape[-1] == 1:
        return frames[..., 0]
    return np.stack([cv2.cvtColor(f, cv2.COLOR_RGB2GRAY) for f in frames])


FLOW_METHODS = ("farneback", "dis")


def flows(frames_uint8_thwc: np.ndarray, method: str = "farneback") -> np.ndarray:
    """(T-1, H, W, 2) dense flow between consecutive frames, in pixels. ``dis`` is OpenCV's DIS at
    its ultrafast preset: several times cheaper than Farneback, coarser on small objects."""
    if method not in FLOW_METHODS:
        raise ValueError(f"flow method must be one of {FLOW_METHODS}, got {method!r}")
    g = gray(np.ascontiguousarray(frames_uint8_thwc, dtype=np.uint8))
    if method == "dis":
        dis = cv2.DISOpticalFlow_create(cv2.DISOPTICAL_FLOW_PRESET_ULTRAFAST)
        return np.stack([dis.calc(a, b, None) for a, b in zip(g[:-1], g[1:])])
    return np.stack([cv2.calcOpticalFlowFarneback(a, b, None, **_FARNEBACK) for a, b in zip(g[:-1], g[1:])])


EGO_MOTION = ("none", "affine")


def remove_ego_motion(flow: np.ndarray, stride: int = 4, keep: float = 0.8) -> np.ndarray:
    """(T-1, H, W, 2) flow minus each step's affine motion field, the image motion a moving camera gives
    a scene far away or nearly planar (floor, walls). The field is fitted by least squares on a
    ``stride`` grid, then refitted on the ``keep`` share of points it explains best, so the bodies
    (a small share of the frame) do not pull it. A static camera leaves the flow as it is."""
    t, h, w = flow.shape[:3]
    gy, gx = np.mgrid[0:h, 0:w].astype(np.float32)
    design = np.stack([gx, gy, np.ones_like(gx)], axis=-1)  # (H, W, 3)
    sub = design[::stride, ::stride].reshape(-1, 3)
    out = np.empty_like(flow)
    for i in range(t):
        target = flow[i, ::stride, ::stride].reshape(-1, 2)
        coef = np.linalg.lstsq(sub, target, rcond=None)[0]
        resid = np.linalg.norm(sub @ coef - target, axis=1)
        inliers = resid <= np.quantile(resid, keep)
        coef = np.linalg.lstsq(sub[inliers], target[inliers], rcond=None)[0]
        out[i] = flow[i] - design @ coef.astype(np.float32)
    return out


def vector_norm(v: np.ndarray) -> np.ndarray:
    """(..., 2) -> (...) lengths, bit-identical to ``np.linalg.norm(v, axis=-1)`` and several times faster:
    numpy reduces a trailing axis of 2 slowly, and the flow encoders take this norm on every step of every clip."""
    x, y = v[..., 0], v[..., 1]
    return np.sqrt(x * x + y * y)


@functools.lru_cache(maxsize=16)
def _pixel_grid(h: int, w: int) -> tuple[np.ndarray, np.ndarray]:
    gx, gy = np.meshgrid(np.arange(w, dtype=np.float32), np.arange(h, dtype=np.float32))
    gx.flags.writeable = gy.flags.writeable = False  # shared between calls
    return gx, gy


def along_flow(image: np.ndarray, flow: np.ndarray) -> np.ndarray:
    """``image`` sampled at p + flow(p) for every pixel p (bilinear, edges replicated): what lies where the
    (H, W, 2) flow carries each pixel. One per step of every clip, so the pixel grid is built once per size."""
    gx, gy = _pixel_grid(*flow.shape[:2])
    return cv2.remap(image, gx + flow[..., 0], gy + flow[..., 1], cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)


def lagrangian_acceleration(cur: np.ndarray, nxt: np.ndarray) -> np.ndarray:
    """(H, W, 2) change of flow along trajectories, F_{t+1}(p + F_t(p)) - F_t(p), for (H, W, 2) flows."""
    return along_flow(nxt, cur) - cur


def textured(image: np.ndarray, edge_fraction: float) -> np.ndarray:
    """Pixels whose Sobel gradient is at least ``edge_fraction`` of the image's strongest: where flow is measured, not smeared."""
    g = image.astype(np.float32)
    mag = np.hypot(cv2.Sobel(g, cv2.CV_32F, 1, 0), cv2.Sobel(g, cv2.CV_32F, 0, 1))
    return mag >= edge_fraction * mag.max() if mag.max() > 0 else np.zeros(mag.shape, dtype=bool)


def motion_score(frames_uint8_thwc: np.ndarray, quantile: float = 0.99, edge_fraction: float = 0.2) -> float:
    """Max over time of the ``quantile`` of |Lagrangian flow acceleration| on textured pixels, per
    frame diagonal; 0 for a video with no texture at all."""
    frames = np.ascontiguousarray(frames_uint8_thwc, dtype=np.uint8)
    if frames.ndim not in (3, 4) or len(frames) < 3:
        raise ValueError(f"expected (T, H, W[, C]) frames with T >= 3, got shape {frames.shape}")
    f = flows(frames)
    grays = gray(frames)
    h, w = f.shape[1:3]
    per_step = [0.0]
    for t, (cur, nxt) in enumerate(zip(f[:-1], f[1:])):
        mask = textured(grays[t], edge_fraction)
        if mask.any():
            acc = lagrangian_acceleration(cur, nxt)
            per_step.append(float(np.quantile(vector_norm(acc)[mask], quantile)))
    return max(per_step) / float(np.hypot(h, w))


def motion_scores(manifest, num_frames: int = 16, cache_dir: str | Path | None = None) -> dict[str, float]:
    """:func:`motion_score` on every readable video of ``manifest``; with ``cache_dir``, each video's
    score is kept there and never computed twice (training runs report it on every benchmark)."""
    from ..io.video import ClipSpec
    from ..machine import usable_cores
    from . import ScoreCache, score_each_video

    cache = None if cache_dir is None else ScoreCache(Path(cache_dir) / "motion.jsonl", f"motion-v1-T{num_frames}")
    # OpenCV's flow and PyAV's decoding release the GIL: one thread per core scores that many videos at once.
    return score_each_video(manifest, ClipSpec(num_frames), motion_score, cache, workers=usable_cores())
