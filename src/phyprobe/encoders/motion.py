"""Motion-aware frozen encoders: every violation in the world is a motion, and globally pooled
ImageNet frame features barely see one (docs/results.md). Three classic ways to give a frozen image
network motion, registered like any other backbone:

- ``efficientnet_lite0_flow``: two streams (Simonyan & Zisserman 2014; TSN 2016). Dense optical flow
  between consecutive sampled frames is rendered as an image (x, y and magnitude, clipped at
  ``flow_bound`` and scaled into the CNN's input range, as TSN does) and passed through the same frozen
  ImageNet EfficientNet-Lite0; its features are concatenated per step with the RGB stream's.
- ``efficientnet_lite0_diff``: the same with frame differences instead of flow (TSN's RGB-diff).
- ``flow_stats``: no CNN; a coarse grid of flow and trajectory statistics per step (magnitude,
  direction histogram, divergence, curl, Lagrangian acceleration as in ``baseline=motion``), and
  frame-difference statistics: the share of pixels that stopped changing after they had changed and,
  optionally, the share whose change the flow does not explain.

All take the preprocessed clip the RGB encoder takes (the preprocessing travels with the entry), and
recover the uint8 frames from it for OpenCV, so extraction, the cache and the exported scorer treat
them like any frame encoder.

Time steps. A clip of T frames has T-1 flows (or differences): step t >= 1 holds the motion *into*
frame t, from frame t-1. Step 0 has no motion of its own and repeats step 1, so features stay (T, D)
with one step per frame: the pooling stack, the surprisal baseline and the dynamics model see T steps,
and a repeated step changes neither max nor the step-to-step deltas. The Lagrangian acceleration needs
two flows; it starts at step 2 and steps 0-1 repeat it the same way. Every statistic at step t uses
frames <= t only (causal), which next-step prediction needs.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import cv2
import numpy as np
import torch
import torch.nn.functional as F

from ..baselines.motion import (
    EGO_MOTION,
    FLOW_METHODS,
    along_flow,
    flows,
    gray,
    lagrangian_acceleration,
    remove_ego_motion,
    textured,
    vector_norm,
)
from .base import FrozenEncoder, register_encoder
from .efficientnet import efficientnet_lite0
from .preprocess import Preprocess

DIRECTION_BINS = 8
# Per grid cell: mean and max flow magnitude, magnitude-weighted direction histogram, mean divergence,
# mean curl, mean and max |Lagrangian acceleration| on textured pixels, and the share of pixels that have
# stopped (see :func:`stopped_pixels`); then, each when asked for and in this order, the share of pixels whose
# change the flow does not explain (``unexplained``, :func:`unexplained_pixels`), the share where a body stopped
# (``halted``, :func:`halted_pixels`) and the steps the whole picture paused (``paused``, :func:`paused_steps`).
CELL_STATS = (
    "mag_mean",
    "mag_max",
    *(f"dir{i}" for i in range(DIRECTION_BINS)),
    "div",
    "curl",
    "acc_mean",
    "acc_max",
    "stopped",
)
OPTIONAL_STATS = ("unexplained", "halted", "paused")
# Statistics that are not a measure of the motion at a step: the clip's history up to it (``stopped``,
# ``halted``, ``paused``) and what the flow leaves out (``unexplained``). A dynamics model does not forecast them
# (``FlowStatsEncoder.predicted_columns``); they can reach its head as levels.
LEVEL_STATS = ("stopped", "unexplained", "halted", "paused")
# A pixel whose grey level moves by at most this much between frames is still. Real footage carries sensor
# and coding noise of a few levels wherever it moves, so only a region copied from frame to frame (a frozen
# patch, a body that stops dead in a rendered world) stays under it; a static background never moved.
STILL_LEVELS = 3
# A step is held when at most this share of its pixels changes by more than STILL_LEVELS: a frame repeated and
# re-encoded is not an exact copy (up to half a percent of the pixels move by up to ~10 levels), filmed motion
# changes a tenth or more of them
HELD_SHARE = 0.01
# A pause counts between steps this fast (px of the frame the flow is measured on; 1.5 % of a 160 px side), the
# step's speed being this quantile of its flow magnitude where the picture changed (a body of 26 px sets it on a
# 160 x 160 frame)
PAUSE_SPEED_PX, SPEED_QUANTILE = 1.5, 0.999
# A pixel is unexplained when its grey level, carried along the flow to the next frame, is off by more than
# this (a tenth of the range): far above coding noise, and what a body that appears, vanishes or changes
# shape leaves, which no displacement of the previous frame can give.
UNEXPLAINED_LEVELS = 24
# A pixel's content is moving when the flow carries it at least this far between frames, and at rest when under
# the second figure (pixels of the squashed frame: 1 px is 0.6 % of the side)
MOVING_PX, RESTING_PX = 1.0, 0.5
# How frames meet the grid: Preprocess' modes less a crop, which would cut motion away, and ``isotropic``
FLOW_RESIZE = ("letterbox", "squash", "isotropic")
# ``isotropic`` letterboxes onto a canvas this much wider than ``image_size``, so that a picture up to 16:9
# still has image_size² pixels of the video's own when its padding is cut away, not an upsampled few
ISOTROPIC_CANVAS = 4 / 3


def changed_pixels(grays: np.ndarray, still_levels: int = STILL_LEVELS) -> np.ndarray:
    """(T-1, H, W) bool per step t >= 1 of a (T, H, W) grey clip: the grey level moved by more than
    ``still_levels`` from frame t-1 to t (the opposite of still)."""
    return np.abs(grays[1:].astype(np.int16) - grays[:-1]) > still_levels


def stopped_pixels(grays: np.ndarray, still_levels: int = STILL_LEVELS) -> np.ndarray:
    """(T-1, H, W) bool per step t >= 1 of a (T, H, W) grey clip: the pixel is still from frame t-1 to t
    and had changed at some earlier step of the clip. Causal (frames <= t only). It is the footprint of a
    region that freezes while it was moving, which flow statistics barely see: a stop adds no surprise to
    the next step's flow, and a frozen square under a moving camera only lowers a cell's mean a little."""
    moving = changed_pixels(grays, still_levels)
    moved_before = np.zeros_like(moving)
    moved_before[1:] = np.logical_or.accumulate(moving[:-1], axis=0)
    return ~moving & moved_before


def halted_pixels(
    grays: np.ndarray,
    flow: np.ndarray,
    edge_fraction: float,
    still_levels: int = STILL_LEVELS,
    moving_px: float = MOVING_PX,
    resting_px: float = RESTING_PX,
) -> np.ndarray:
    """(T-1, H, W) bool per step t >= 1 of a (T, H, W) grey clip and its (T-1, H, W, 2) flow in pixels: texture
    that the flow of the step before carried onto the pixel and that has rested there since, still in grey level
    and in flow. It is where a body stopped. :func:`stopped_pixels` also counts every pixel a body uncovers,
    which a flat-shaded world leaves exactly still behind each moving body: there the share grows with the
    motion, and a body that stops dead lowers it. Only textured pixels count (:func:`textured`), at both ends:
    in a flat region the flow is smeared from the nearest edge, not measured. Causal (frames <= t only)."""
    steps, h, w = flow.shape[:3]
    speed = vector_norm(flow)
    edges = np.stack([textured(g, edge_fraction) for g in grays])
    resting = ~changed_pixels(grays, still_levels) & (speed < resting_px) & edges[1:]
    out = np.zeros((steps, h, w), dtype=bool)
    for t in range(1, steps):
        ys, xs = np.nonzero((speed[t - 1] >= moving_px) & edges[t - 1])
        arrived = np.zeros((h, w), dtype=bool)
        arrived[
            np.clip(np.rint(ys + flow[t - 1, ys, xs, 1]), 0, h - 1).astype(int),
            np.clip(np.rint(xs + flow[t - 1, ys, xs, 0]), 0, w - 1).astype(int),
        ] = True
        out[t] = resting[t] & (arrived | out[t - 1])
    return out


def paused_steps(
    grays: np.ndarray,
    speed: np.ndarray,
    still_levels: int = STILL_LEVELS,
    held_share: float = HELD_SHARE,
    resting_speed: float = RESTING_PX,
    pause_speed: float = PAUSE_SPEED_PX,
) -> np.ndarray:
    """(T-1,) per step t >= 1 of a (T, H, W) grey clip and its steps' (T-1,) speed (px): at the step that ends a
    pause, the number of steps the pause held; 0 elsewhere. A step is held when at most ``held_share`` of the
    pixels change by more than ``still_levels`` and it is slower than ``resting_speed`` (a small body moving
    fast changes a small share of the picture); a pause is held steps between two steps that move at
    ``pause_speed`` or more. The whole picture stopped at speed and went on at speed, which no body does
    without a contact and time does not do in any world (a frozen or stuttering video). A scene that comes to
    rest stays at rest, and a body at the top of its flight, or one that moves too little to change a share of
    the picture, is slow on both sides. Causal: a pause is counted at the step that ends it."""
    changed = changed_pixels(grays, still_levels)
    moving = (changed.reshape(len(changed), -1).mean(1) > held_share) | (speed >= resting_speed)
    out = np.zeros(len(moving), np.float32)
    held, fast_before = 0, False
    for t, m in enumerate(moving):
        if m:
            if held and fast_before and speed[t] >= pause_speed:
                out[t] = held
            held, fast_before = 0, bool(speed[t] >= pause_speed)
        elif fast_before:
            held += 1
    return out


def step_speed(
    flow: np.ndarray, grays: np.ndarray, quantile: float = SPEED_QUANTILE, still_levels: int = STILL_LEVELS
) -> np.ndarray:
    """(T-1,) a step's speed, in px: the ``quantile`` over the picture of its flow magnitude where the grey level
    changed (:func:`changed_pixels`), 0 where it did not. A high quantile, so that a body covering a few hundred
    pixels sets it, and not the maximum, which one smeared pixel would. Only changed pixels count because a
    dense flow also reads motion where nothing moved: on a scene at rest DIS's high quantile jumps between under
    half a pixel and several pixels from step to step, which would bracket a rest with steps that look fast."""
    moved = vector_norm(flow) * changed_pixels(grays, still_levels)
    return np.quantile(moved.reshape(len(flow), -1), quantile, axis=1)


def unexplained_pixels(grays: np.ndarray, flow: np.ndarray, levels: int = UNEXPLAINED_LEVELS) -> np.ndarray:
    """(T-1, H, W) bool per step t >= 1 of a (T, H, W) grey clip and its (T-1, H, W, 2) flow in pixels: frame
    t sampled where the flow carries each pixel of frame t-1 differs from it by more than ``levels``. Flow
    statistics measure where things move; this is the change that is not a motion: a body that vanishes,
    appears or is duplicated, a flicker, a region that changes shape. Occlusion edges and a frame's border
    add a little to every moving clip."""
    g = grays.astype(np.float32)
    carried = np.stack([along_flow(g[t + 1], flow[t]) for t in range(len(flow))])
    return np.abs(carried - g[:-1]) > levels


def to_unit(clips: torch.Tensor, pre: Preprocess) -> torch.Tensor:
    """Preprocessed clips (B, T, 3, H, W) back to RGB in [0, 1] (the preprocessing's inverse, after resizing).
    In place on one new tensor: it runs on every frame of every clip a flow encoder reads."""
    mean = torch.tensor(pre.mean, device=clips.device).view(1, 1, 3, 1, 1)
    std = torch.tensor(pre.std, device=clips.device).view(1, 1, 3, 1, 1)
    lo, hi = pre.value_range
    return (clips.float() * std).add_(mean).sub_(lo).div_(hi - lo)


def to_uint8(clips: torch.Tensor, pre: Preprocess) -> np.ndarray:
    """Preprocessed clips (B, T, 3, H, W) back to uint8 RGB (B, T, H, W, 3): what OpenCV's flow reads."""
    return to_unit(clips, pre).mul_(255).round_().clamp_(0, 255).to(torch.uint8).permute(0, 1, 3, 4, 2).cpu().numpy()


def normalise_image(img01: torch.Tensor, pre: Preprocess) -> torch.Tensor:
    """Images in [0, 1] (N, 3, H, W) into the CNN's input normalisation, as a frame would be."""
    mean = torch.tensor(pre.mean).view(1, 3, 1, 1)
    std = torch.tensor(pre.std).view(1, 3, 1, 1)
    lo, hi = pre.value_range
    return ((img01 * (hi - lo) + lo) - mean) / std


def picture(clip: torch.Tensor, pre: Preprocess, pixels: int) -> np.ndarray:
    """A letterboxed clip (T, 3, H, W) as uint8 RGB (T, h, w, 3) without its padding, resized to about
    ``pixels`` pixels with its aspect kept. Padding is the whole rows and columns that are exactly 0 after
    normalisation in every channel: a uint8 frame never is (0 is grey 127.5), and a resampled one would have
    to land on it all along a row. The padding is the same in every frame, so the first one finds it."""
    picture_px = (clip[0] != 0).any(0)  # (H, W)
    rows, cols = picture_px.any(1).nonzero().squeeze(1), picture_px.any(0).nonzero().squeeze(1)
    if len(rows) and len(cols):
        clip = clip[..., int(rows[0]) : int(rows[-1]) + 1, int(cols[0]) : int(cols[-1]) + 1]
    frames = to_uint8(clip[None], pre)[0]
    h, w = frames.shape[1:3]
    f = np.sqrt(pixels / (h * w))
    size = (max(8, round(w * f)), max(8, round(h * f)))
    if size == (w, h):
        return frames
    return np.stack([cv2.resize(x, size, interpolation=cv2.INTER_AREA if f < 1 else cv2.INTER_LINEAR) for x in frames])


def pad_first(steps: torch.Tensor, missing: int = 1) -> torch.Tensor:
    """(B, T - missing, ...) -> (B, T, ...) by repeating the first step ``missing`` times."""
    return torch.cat([steps[:, :1].expand(-1, missing, *steps.shape[2:]), steps], dim=1)


def clip_flows(frames: np.ndarray, method: str) -> np.ndarray:
    """(B, T-1, H, W, 2) flow of each clip in a (B, T, H, W, 3) uint8 batch."""
    return np.stack([flows(c, method) for c in frames])


def flow_images(flow: np.ndarray, bound: float) -> torch.Tensor:
    """Flows (N, H, W, 2) in pixels -> images (N, 3, H, W) in [0, 1]: x and y mapped from [-bound, bound]
    and the magnitude from [0, bound], each clipped (TSN's rendering, with magnitude as third channel)."""
    f = torch.from_numpy(flow).permute(0, 3, 1, 2)
    xy = (f / bound).clamp(-1, 1) * 0.5 + 0.5
    mag = (f.norm(dim=1, keepdim=True) / bound).clamp(0, 1)
    return torch.cat([xy, mag], dim=1)


class TwoStreamEncoder(FrozenEncoder):
    """RGB features of every frame, concatenated per step with the same CNN's features of a motion image."""

    def __init__(self, rgb: FrozenEncoder, motion: str, flow_method: str = "farneback", flow_bound: float = 0.1):
        super().__init__()
        if motion not in ("flow", "diff"):
            raise ValueError(f"two-stream motion must be 'flow' or 'diff', got {motion!r}")
        if flow_method not in FLOW_METHODS:
            raise ValueError(f"flow_method must be one of {FLOW_METHODS}, got {flow_method!r}")
        if not flow_bound > 0:
            raise ValueError(f"flow_bound must be > 0 (a fraction of the input size), got {flow_bound}")
        self.rgb, self.motion = rgb, motion
        self.flow_method, self.flow_bound = flow_method, flow_bound
        self.preprocess = rgb.preprocess
        self.feature_dim = 2 * rgb.feature_dim

    def motion_images(self, clips: torch.Tensor) -> torch.Tensor:
        """(B, T-1, 3, H, W) motion images, normalised like frames."""
        b, t = clips.shape[:2]
        pre = self.preprocess
        if self.motion == "diff":  # signed difference in [-1, 1], mapped to [0, 1] with no change at 0.5
            frames01 = to_unit(clips, pre).cpu()
            img = ((frames01[:, 1:] - frames01[:, :-1]) * 0.5 + 0.5).flatten(0, 1)
        else:
            flow = clip_flows(to_uint8(clips, pre), self.flow_method)
            img = flow_images(flow.reshape(-1, *flow.shape[2:]), self.flow_bound * max(pre.size))
        return normalise_image(img, pre).view(b, t - 1, *clips.shape[2:])

    def forward_features(self, clips: torch.Tensor) -> torch.Tensor:
        if clips.shape[1] < 2:
            raise ValueError(f"{self.name}: motion needs at least 2 frames per clip, got {clips.shape[1]}")
        rgb = self.rgb.forward_features(clips)
        mot = self.rgb.forward_features(self.motion_images(clips).to(clips.device, clips.dtype))
        return torch.cat([rgb, pad_first(mot)], dim=-1)


def _two_stream(
    motion: str, image_size: int, weights, spatial_pool: str, flow_method: str, flow_bound: float
) -> FrozenEncoder:
    rgb = efficientnet_lite0(image_size=image_size, weights=weights, spatial_pool=spatial_pool)
    enc = TwoStreamEncoder(rgb, motion, flow_method, flow_bound)
    enc.weights_id = rgb.weights_id
    enc.options = {**rgb.options, "spatial_pool": spatial_pool, "motion": motion}
    if motion == "flow":
        enc.options.update(flow_method=flow_method, flow_bound=flow_bound)
    return enc


@register_encoder("efficientnet_lite0_flow")
def efficientnet_lite0_flow(
    image_size: int = 160,
    weights: str | None = "package",
    spatial_pool: str = "max",
    flow_method: str = "farneback",
    flow_bound: float = 0.1,
) -> FrozenEncoder:
    """Two-stream EfficientNet-Lite0: (T, 2560) = RGB (1280) ++ flow image (1280) per step.
    ``flow_bound``: the flow (in fractions of the input side) that saturates the flow image."""
    return _two_stream("flow", image_size, weights, spatial_pool, flow_method, flow_bound)


@register_encoder("efficientnet_lite0_diff")
def efficientnet_lite0_diff(
    image_size: int = 160, weights: str | None = "package", spatial_pool: str = "max"
) -> FrozenEncoder:
    """EfficientNet-Lite0 on frames and on frame differences: (T, 2560) = RGB ++ difference per step."""
    return _two_stream("diff", image_size, weights, spatial_pool, "farneback", 0.1)


class FlowStatsEncoder(FrozenEncoder):
    """A ``grid`` x ``grid`` map of its ``stats`` per step (:data:`CELL_STATS`, then the optional levels asked
    for): (T, grid² · len(stats)), cell-major. With ``picture_pixels`` the letterbox's padding is cut
    away first and the picture resized to that many pixels (``resize="isotropic"``)."""

    def __init__(
        self,
        preprocess: Preprocess,
        grid: int,
        flow_method: str,
        edge_fraction: float,
        ego_motion: str = "none",
        picture_pixels: int | None = None,
        unexplained: bool = False,
        halted: bool = False,
        paused: bool = False,
        denoise: float = 0.0,
    ):
        super().__init__()
        self.preprocess, self.grid, self.picture_pixels = preprocess, grid, picture_pixels
        self.denoise = denoise
        self.flow_method, self.edge_fraction, self.ego_motion = flow_method, edge_fraction, ego_motion
        asked = {"unexplained": unexplained, "halted": halted, "paused": paused}
        self.stats = CELL_STATS + tuple(name for name in OPTIONAL_STATS if asked[name])
        self.feature_dim = grid * grid * len(self.stats)

    def predicted_columns(self) -> list[int]:
        """The motion statistics' columns, which a dynamics model forecasts (not :data:`LEVEL_STATS`)."""
        return sorted(c for stat in self.stats if stat not in LEVEL_STATS for c in self.columns(stat))

    def columns(self, stat: str) -> list[int]:
        """Where statistic ``stat`` sits in a step's feature vector, one column per cell."""
        if stat not in self.stats:
            hint = f" (`{stat}=True` adds it)" if stat in OPTIONAL_STATS else ""
            raise ValueError(f"{self.name}: no statistic {stat!r}{hint}; it has {self.stats}")
        return [c * len(self.stats) + self.stats.index(stat) for c in range(self.grid * self.grid)]

    def _maps(self, frames: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-pixel maps of one clip: averaged ones (T-1, 13 or 14, H, W) and maxed ones (T-1, 2, H, W), with flow
        in percent of the input side (of the picture's geometric-mean side when ``isotropic``), so the
        statistics do not grow with resolution."""
        scale = 100.0 / (
            self.picture_pixels**0.5 if self.picture_pixels else max(self.preprocess.size)
        )  # a Python float
        raw = flows(frames, self.flow_method)
        px = remove_ego_motion(raw) if self.ego_motion == "affine" else raw
        f = px * scale
        grays = gray(frames)
        mag = vector_norm(f)
        ang = np.arctan2(f[..., 1], f[..., 0])
        bins = ((ang + np.pi) / (2 * np.pi) * DIRECTION_BINS).astype(int) % DIRECTION_BINS
        hist = np.stack([mag * (bins == k) for k in range(DIRECTION_BINS)], axis=1)
        div = np.gradient(f[..., 0], axis=2) + np.gradient(f[..., 1], axis=1)
        curl = np.gradient(f[..., 1], axis=2) - np.gradient(f[..., 0], axis=1)
        acc = np.zeros_like(mag)
        for t in range(1, len(f)):  # change of motion seen when frame t+1 arrives, on frame t-1's texture
            a = vector_norm(lagrangian_acceleration(px[t - 1], px[t])) * scale
            acc[t] = a * textured(grays[t - 1], self.edge_fraction)
        optional = {
            "unexplained": lambda: unexplained_pixels(grays, raw),
            "halted": lambda: halted_pixels(grays, raw, self.edge_fraction),
            "paused": lambda: np.broadcast_to(paused_steps(grays, step_speed(raw, grays))[:, None, None], mag.shape),
        }
        shares = [stopped_pixels(grays)] + [optional[name]() for name in OPTIONAL_STATS if name in self.stats]
        mean_maps = np.concatenate(
            [
                mag[:, None],
                hist,
                div[:, None],
                curl[:, None],
                acc[:, None],
                *(x[:, None].astype(np.float32) for x in shares),
            ],
            axis=1,
        )
        max_maps = np.stack([mag, acc], axis=1)
        return torch.from_numpy(mean_maps).float(), torch.from_numpy(max_maps).float()

    def forward_features(self, clips: torch.Tensor) -> torch.Tensor:
        b, t = clips.shape[:2]
        if t < 3:
            raise ValueError(f"{self.name}: flow statistics need at least 3 frames per clip (two flows), got {t}")
        if self.picture_pixels:
            frames = [picture(c, self.preprocess, self.picture_pixels) for c in clips]
        else:
            frames = to_uint8(clips, self.preprocess)
        # OpenCV's flow and most of numpy release the GIL: the clips of a batch go to the threads torch is
        # allowed (what extraction gives the encoder), one clip each, in order
        with ThreadPoolExecutor(max_workers=max(1, min(len(frames), torch.get_num_threads()))) as pool:
            out = list(pool.map(self._cells, frames))
        return pad_first(torch.stack(out)).to(clips.device)

    def _cells(self, frames: np.ndarray) -> torch.Tensor:
        if self.denoise:
            frames = np.stack([cv2.GaussianBlur(f, (0, 0), self.denoise) for f in frames])
        mean_maps, max_maps = self._maps(frames)
        m = F.adaptive_avg_pool2d(mean_maps, self.grid)
        x = F.adaptive_max_pool2d(max_maps, self.grid)
        cell = torch.cat(
            [m[:, :1], x[:, :1], m[:, 1:12], x[:, 1:], m[:, 12:]], dim=1
        )  # (T-1, len(stats), g, g), in order
        acc = [self.stats.index("acc_mean"), self.stats.index("acc_max")]
        cell[0, acc] = cell[1, acc]  # the first flow has no acceleration yet: it repeats the next step's
        return cell.flatten(2).transpose(1, 2).flatten(1)  # cell-major: (T-1, g² · len(stats))


@register_encoder("flow_stats")
def flow_stats(
    image_size: int = 160,
    grid: int = 4,
    flow_method: str = "farneback",
    edge_fraction: float = 0.2,
    ego_motion: str = "none",
    resize: str = "letterbox",
    unexplained: bool = False,
    halted: bool = False,
    paused: bool = False,
    denoise: float = 0.0,
) -> FrozenEncoder:
    """Optical-flow and trajectory statistics on a ``grid`` x ``grid`` grid; no learned weights.
    ``resize="letterbox"`` fits frames into ``image_size`` like the embedded CNN's, aspect kept: a 16:9 frame
    leaves 44 % of the input on padding, where nothing moves (the top and bottom rows of a 4 x 4 grid are 7/8
    padding), and its bodies get 0.56x the pixels.
    ``squash`` stretches every frame over the whole grid: each cell sees picture (docs/results.md, "The grid
    over the whole picture"), but a 16:9 frame's horizontal motion is measured 1.8x shorter than the same
    motion upright, and a rigid rotation's flow (a rolling ball's) is sheared.
    ``isotropic`` letterboxes, cuts the padding away and resizes the picture to ``image_size``² pixels with its
    aspect kept: the grid covers the whole picture, its cells take the picture's aspect, and flow is
    measured in percent of the picture's geometric-mean side, the same along both axes and at every aspect.
    It transferred no better than ``squash`` (docs/results.md, "A second, independent build").
    ``ego_motion="affine"`` measures the bodies' motion relative to the view: each step's affine flow
    field (a moving camera's) is removed first, so an orbit or a handheld shake is not read as motion.
    ``unexplained=True`` adds a 16th statistic per cell, the share of pixels whose change the flow does not
    explain (:func:`unexplained_pixels`): a change that is not a motion. ``halted=True`` adds the share of
    pixels where texture that arrived moving rests (:func:`halted_pixels`: where a body stopped, without the
    trail ``stopped`` counts behind a body on a flat-shaded picture), and ``paused=True`` the length of a pause
    of the whole picture between fast steps, at the step that ends it (:func:`paused_steps`, the same in every
    cell). Both are options, measured and not in the default (docs/results.md, "Where a body stopped, and where
    the picture paused").
    ``denoise`` > 0 low-passes every frame with a Gaussian of that sd (px of the frame the flow is measured on)
    before any statistic, so that a codec's block and ringing noise is not read as motion
    (docs/studies/codec-invariance.md)."""
    if grid < 1:
        raise ValueError(f"flow_stats: grid must be >= 1, got {grid}")
    if not 0 <= denoise <= 8:
        raise ValueError(f"flow_stats: denoise must be a Gaussian sd in [0, 8] px, got {denoise}")
    if flow_method not in FLOW_METHODS:
        raise ValueError(f"flow_stats: flow_method must be one of {FLOW_METHODS}, got {flow_method!r}")
    if ego_motion not in EGO_MOTION:
        raise ValueError(f"flow_stats: ego_motion must be one of {EGO_MOTION}, got {ego_motion!r}")
    if resize not in FLOW_RESIZE:
        raise ValueError(
            f"flow_stats: resize must be one of {FLOW_RESIZE} (a crop would cut motion away), got {resize!r}"
        )
    canvas = round(image_size * ISOTROPIC_CANVAS) if resize == "isotropic" else image_size
    pre = Preprocess(
        size=(canvas, canvas),
        mean=(0.5, 0.5, 0.5),
        std=(0.5, 0.5, 0.5),
        resize="letterbox" if resize == "isotropic" else resize,
    )
    enc = FlowStatsEncoder(
        pre,
        grid,
        flow_method,
        edge_fraction,
        ego_motion,
        picture_pixels=image_size**2 if resize == "isotropic" else None,
        unexplained=unexplained,
        halted=halted,
        paused=paused,
        denoise=denoise,
    )
    enc.weights_id = "none"
    enc.options = {
        "image_size": image_size,
        "grid": grid,
        "flow_method": flow_method,
        "edge_fraction": edge_fraction,
        "cell_stats": list(enc.stats),
        "still_levels": STILL_LEVELS,
    }
    if unexplained:  # absent when off, like the options below
        enc.options["unexplained_levels"] = UNEXPLAINED_LEVELS
    if halted:
        enc.options["halted_px"] = [MOVING_PX, RESTING_PX]
    if paused:
        enc.options["pause"] = {
            "held_share": HELD_SHARE,
            "resting_px": RESTING_PX,
            "speed_px": PAUSE_SPEED_PX,
            "speed_quantile": SPEED_QUANTILE,
            "speed_where": "changed",
        }
    if denoise:
        enc.options["denoise"] = denoise
    if ego_motion != "none":  # absent when off, so the caches of existing runs keep their keys
        enc.options["ego_motion"] = ego_motion
    if resize != "letterbox":
        enc.options["resize"] = resize
    return enc
