"""GeoPhys as a training-free baseline: the geometry of a frozen image encoder's embedding trajectory.

GeoPhys (Internò et al., "GeoPhys: The Geometry of Physical Plausibility", 2026) needs no training: a frozen
image encoder maps each frame to a pooled embedding, and five statistics of the path those embeddings trace
(speed variation, curvature, angle consistency, acceleration and the residual of a linear predictor;
:func:`phyprobe.encoders.trajectory.geophys_signals`) rise when a video breaks physics. Here the path is the
global average of one layer of the frame encoder (``layer``), read with the same trajectory encoder the default
recipe uses, so its per-step values are cached and shared like any encoder's features, and one score combines
the five signals: the mean of their logarithms (:func:`phyprobe.encoders.trajectory.geophys_score`).

Which layer: GeoPhys picks the layer with the largest plausible-versus-violated curvature gap on a held-out
split; :func:`curvature_gaps` computes that gap per layer on a manifest's validation split, and the layer of
:data:`DEFAULT` was chosen that way (docs/studies/trajectory-geometry.md).
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import torch

from ..encoders import from_config
from ..encoders.trajectory import SIGNALS, STATS, TrajectoryEncoder, geophys_score, geophys_signals

log = logging.getLogger(__name__)

# EfficientNet-Lite0 with its packaged ImageNet weights, frames squashed to 112 px; the layer index is
# frame_maps' numbering (-1: the final 1280-channel map, whose global average is the network's own feature)
DEFAULT = {
    "frames": {"name": "efficientnet_lite0", "image_size": 112, "weights": "package", "resize": "squash"},
    "layer": -1,
    "num_frames": 32,
    "signals": list(SIGNALS),
}


def geophys_encoder(frames: dict, layer: int) -> TrajectoryEncoder:
    """The trajectory encoder GeoPhys reads: one layer's global average path, every statistic."""
    return from_config("trajectory", frames=dict(frames), layers=[layer], grids=[1])


def shared_columns(encoder, frames: dict, layer: int) -> list[int] | None:
    """Columns of ``encoder``'s features that hold GeoPhys's path (``layer``'s global average, every statistic)
    when ``encoder`` is a trajectory encoder over the same frame encoder reading that path; else None. A
    training run on such an encoder scores the baseline from its own cached features, with no second pass."""
    if not isinstance(encoder, TrajectoryEncoder) or encoder.grids[0] != 1:
        return None
    frames_enc = from_config(frames["name"], **{k: v for k, v in frames.items() if k != "name"})
    if frames_enc.describe() != encoder.frames.describe():
        return None
    n = encoder.frames.num_maps
    positions = [i for i, x in enumerate(encoder.layers) if x % n == layer % n]
    if not positions or set(encoder.stats) != set(STATS):
        return None
    return encoder.columns(positions[0], 0, STATS)


def scores_from_features(feats: dict[str, np.ndarray], columns: list[int], signals=SIGNALS, order: int = 2) -> dict:
    """Video id -> GeoPhys score, from per-step trajectory features (T, D) whose ``columns`` hold one path's
    speed, turn, accel and residual."""
    out = {}
    for vid, f in feats.items():
        steps = torch.as_tensor(np.asarray(f, dtype=np.float32)[:, columns])[None]
        sig = geophys_signals(steps, STATS, order)
        out[vid] = float(geophys_score(sig, tuple(signals))[0])
    return out


def geophys_scores(
    manifest,
    cache_root: str | Path,
    frames: dict | None = None,
    layer: int | None = None,
    num_frames: int | None = None,
    signals=None,
    dtype: str = "float16",
    **extract_kwargs,
) -> dict[str, float]:
    """The GeoPhys score of every readable video of ``manifest``: the trajectory encoder's features are
    extracted into the feature cache under ``cache_root`` (computed once per video, shared with any run that
    reads the same path), then reduced to the five signals and combined."""
    from ..features.extract import extract_features
    from ..io.video import ClipSpec

    frames = dict(frames or DEFAULT["frames"])
    layer = DEFAULT["layer"] if layer is None else layer
    encoder = geophys_encoder(frames, layer)
    clip = ClipSpec(int(num_frames or DEFAULT["num_frames"]))
    cache = extract_features(manifest, encoder, clip, cache_root, dtype=dtype, **extract_kwargs)
    feats = {s["id"]: s["feats"] for s in cache.iter_samples() if s["id"] in set(manifest.videos["id"])}
    return scores_from_features(feats, encoder.columns(0), signals or DEFAULT["signals"], encoder.order)


def curvature_gaps(feats: dict[str, np.ndarray], encoder: TrajectoryEncoder, plausible: dict[str, bool]) -> list:
    """Per layer of ``encoder`` (its global path), the mean curvature of violated clips minus that of plausible
    ones: GeoPhys's rule for the readout layer (the largest gap on a held-out split)."""
    gaps = []
    for pos, layer in enumerate(encoder.layers):
        cols = encoder.columns(pos, 0)
        curv = scores_from_features(feats, cols, ("curvature",), encoder.order)
        good = [curv[v] for v in curv if plausible.get(v)]
        bad = [curv[v] for v in curv if v in plausible and not plausible[v]]
        gaps.append((layer, float(np.mean(np.exp(bad)) - np.mean(np.exp(good))) if good and bad else float("nan")))
    return gaps
