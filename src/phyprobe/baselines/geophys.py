"""GeoPhys as a training-free baseline: the geometry of a frozen image encoder's embedding trajectory.

GeoPhys (Internò et al., "GeoPhys: The Geometry of Physical Plausibility", 2026) needs no training: a frozen
image encoder maps each frame to a pooled embedding, and five statistics of the path those embeddings trace
(speed variation, curvature, angle consistency, acceleration and the residual of a linear predictor;
:func:`phyprobe.encoders.trajectory.geophys_signals`) rise when a video breaks physics. Here the path is the
global average of one layer of the frame encoder (``layer``), read with the same trajectory encoder the default
recipe uses, so its per-step values are cached and shared like any encoder's features, and one score combines
the five signals: the mean of their logarithms (:func:`phyprobe.encoders.trajectory.geophys_score`).

It is a baseline wherever the motion heuristic is one: a training run's ``eval.baselines`` (from the run's own
features when its backbone holds the path: :func:`shared_columns`), ``eval.py baseline=geophys`` and its
``margins_over``, and the leaderboard's ``--geophys`` column. :class:`GeoPhys` scores videos in memory or files
with no cache, for a pipeline that picks among candidates without a trained head.

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
from ..encoders.concat import ConcatEncoder
from ..encoders.trajectory import SIGNALS, STATS, TrajectoryEncoder, TrajectorySubset, geophys_score, geophys_signals

log = logging.getLogger(__name__)

# EfficientNet-Lite0 with its packaged ImageNet weights, frames squashed to 112 px; the layer index is
# frame_maps' numbering: 3 is the end of stage 5 (112 channels, stride 16), the layer with the largest
# plausible-versus-violated curvature gap on the validation splits of the training sources, as GeoPhys chooses
# (python research/geophys_layers.py; docs/studies/trajectory-geometry.md)
DEFAULT = {
    "frames": {"name": "efficientnet_lite0", "image_size": 112, "weights": "package", "resize": "squash"},
    "layer": 3,
    "num_frames": 32,
    "signals": list(SIGNALS),
}


def geophys_encoder(frames: dict, layer: int) -> TrajectoryEncoder:
    """The trajectory encoder GeoPhys reads: one layer's global average path, every statistic."""
    return from_config("trajectory", frames=dict(frames), layers=[layer], grids=[1])


def shared_columns(encoder, frames: dict, layer: int) -> list[int] | None:
    """Columns of ``encoder``'s features that hold GeoPhys's path (``layer``'s global average, every statistic)
    when ``encoder`` is a trajectory encoder over the same frame encoder reading that path the way
    :func:`geophys_encoder` reads it (the same normalisation, cell pooling and linear predictor); else None. A
    training run on such an encoder scores the baseline from its own cached features, with no second pass. A
    ``concat`` is searched part by part, and a trajectory subset (``within``) through the wider encoder it reads."""
    if isinstance(encoder, ConcatEncoder):
        offset = 0
        for part in encoder.parts:
            cols = shared_columns(part, frames, layer)
            if cols is not None:
                return [offset + c for c in cols]
            offset += part.feature_dim
        return None
    if getattr(encoder, "log_scale", None) is not None:  # its features are logs of the kinematics, not them
        return None
    if isinstance(encoder, TrajectorySubset):
        wide = shared_columns(encoder.base, frames, layer)
        mine = encoder.cols.tolist()
        return [mine.index(c) for c in wide] if wide is not None and set(wide) <= set(mine) else None
    if not isinstance(encoder, TrajectoryEncoder) or encoder.grids[0] != 1 or set(encoder.stats) != set(STATS):
        return None
    own = geophys_encoder(frames, layer)
    how = ("order", "window", "ridge", "normalise", "cell_pool")
    if any(getattr(encoder, k) != getattr(own, k) for k in how):
        return None
    if own.frames.describe() != encoder.frames.describe():
        return None
    n = encoder.frames.num_maps
    positions = [i for i, x in enumerate(encoder.layers) if x % n == layer % n]
    if not positions:
        return None
    return encoder.columns(positions[0], 0, STATS)


def min_frames(signals=SIGNALS, order: int = 2) -> int:
    """The fewest frames a clip needs for every one of ``signals`` to be defined: the speed's spread needs 2
    steps (3 frames), the turning angle and the acceleration 2 steps, the prediction residual ``order`` + 2
    steps before its first value (``order`` + 3 frames). A shorter clip would give NaN."""
    need = {"speed_std": 3, "curvature": 3, "angle_std": 3, "accel": 3, "residual": order + 3}
    unknown = set(signals) - set(need)
    if unknown:
        raise ValueError(f"geophys: unknown signals {sorted(unknown)}; known: {list(SIGNALS)}")
    return max(need[s] for s in signals)


def signals_from_features(feats: dict[str, np.ndarray], columns: list[int], order: int = 2) -> dict[str, dict]:
    """Video id -> GeoPhys's five signals (floats), from per-step trajectory features (T, D) whose ``columns`` hold
    one path's speed, turn, accel and residual."""
    out = {}
    for vid, f in feats.items():
        steps = torch.as_tensor(np.asarray(f, dtype=np.float32)[:, columns])[None]
        out[vid] = {k: v[0] for k, v in geophys_signals(steps, STATS, order).items()}
    return out


def scores_from_features(feats: dict[str, np.ndarray], columns: list[int], signals=SIGNALS, order: int = 2) -> dict:
    """Video id -> GeoPhys score (:func:`geophys_score` of ``signals``), from per-step trajectory features."""
    return {
        vid: float(geophys_score({k: v[None] for k, v in sig.items()}, tuple(signals))[0])
        for vid, sig in signals_from_features(feats, columns, order).items()
    }


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
    signals = list(signals or DEFAULT["signals"])
    clip = ClipSpec(int(num_frames or DEFAULT["num_frames"]))
    if clip.num_frames < min_frames(signals):
        raise ValueError(
            f"geophys: {clip.num_frames} frames per clip leave signals {signals} undefined; "
            f"they need at least {min_frames(signals)}"
        )
    encoder = geophys_encoder(frames, layer)
    cache = extract_features(manifest, encoder, clip, cache_root, dtype=dtype, **extract_kwargs)
    ids = set(manifest.videos["id"])
    feats = {s["id"]: s["feats"] for s in cache.iter_samples() if s["id"] in ids}
    return scores_from_features(feats, encoder.columns(0), signals, encoder.order)


def curvature_gaps(feats: dict[str, np.ndarray], encoder: TrajectoryEncoder, plausible: dict[str, bool]) -> list:
    """Per layer of ``encoder`` (its global path), the mean curvature of violated clips minus that of plausible
    ones: GeoPhys's rule for the readout layer (the largest gap on a held-out split)."""
    gaps = []
    for pos, layer in enumerate(encoder.layers):
        sig = signals_from_features(feats, encoder.columns(pos, 0), encoder.order)
        curv = {v: float(x["curvature"]) for v, x in sig.items()}
        good = [curv[v] for v in curv if plausible.get(v)]
        bad = [curv[v] for v in curv if v in plausible and not plausible[v]]
        gaps.append((layer, float(np.mean(bad) - np.mean(good)) if good and bad else float("nan")))
    return gaps


class GeoPhys:
    """GeoPhys on videos in memory or on files, with no feature cache and no trained head: the score a pipeline
    needs to pick among candidate videos (best-of-n) without training anything. Higher = more implausible.

    >>> geophys = GeoPhys()                    # EfficientNet-Lite0 (packaged weights), the DEFAULT recipe
    >>> raw = geophys.score_frames(videos)     # (B, T, H, W, 3) uint8, or (B, T, 3, H, W) float in [0, 1]
    >>> best = videos[raw.argmin()]

    Frames are chosen and fitted as a file holding them would be (``num_frames`` spread uniformly over the video,
    the frame encoder's own preprocessing), so a score equals that of the same frames written losslessly and read by
    :meth:`score_files` (and by :func:`geophys_scores`, to its float16 storage): float frames are rounded to a
    file's 256 levels and large frames reduced as the decoder reduces them. The options are those of :data:`DEFAULT`.
    """

    def __init__(
        self,
        frames: dict | None = None,
        layer: int | None = None,
        num_frames: int | None = None,
        signals=None,
        device: str | torch.device = "cpu",
    ):
        from ..io.video import ClipSpec

        self.signals = tuple(signals or DEFAULT["signals"])
        self.clip = ClipSpec(int(num_frames or DEFAULT["num_frames"]))
        if self.clip.num_frames < min_frames(self.signals):
            raise ValueError(
                f"geophys: {self.clip.num_frames} frames per clip leave signals {list(self.signals)} undefined; "
                f"they need at least {min_frames(self.signals)}"
            )
        layer = DEFAULT["layer"] if layer is None else layer
        self.encoder = geophys_encoder(dict(frames or DEFAULT["frames"]), layer).to(device)
        self.device = torch.device(device)

    def _score_clips(self, clips: torch.Tensor) -> np.ndarray:
        steps = self.encoder(clips.to(self.device)).float().cpu()[..., self.encoder.columns(0)]
        sig = geophys_signals(steps, STATS, self.encoder.order)
        return geophys_score(sig, self.signals).numpy().astype(np.float64)

    def score_frames(self, frames, batch_size: int = 8) -> np.ndarray:
        """(B,) scores of videos in memory: (B, T, H, W, 3) uint8, or (B, T, 3, H, W) float in [0, 1] (as
        diffusion decoders emit); any T, sampled to ``num_frames`` as a file's frames would be."""
        from ..io.video import sample_indices
        from ..scorer.frames import as_decoded, as_pixels

        x, _ = as_pixels(frames)
        idx = torch.from_numpy(sample_indices(np.arange(x.shape[1], dtype=np.float64), self.clip))
        pre = self.encoder.preprocess
        out = [
            self._score_clips(torch.stack([pre(as_decoded(v[idx], pre.size)) for v in x[i : i + batch_size]]))
            for i in range(0, len(x), batch_size)
        ]
        return np.concatenate(out) if out else np.zeros(0)

    def score_files(self, paths) -> np.ndarray:
        """Scores of video files, decoded as feature extraction decodes them; a file that cannot be read raises
        :class:`~phyprobe.io.video.VideoDecodeError` naming it."""
        return np.array([self._score_clips(self.encoder.read_clip(p, self.clip)[0][None])[0] for p in paths])
