"""Trajectory geometry of a frozen image encoder's embeddings as per-step features (after GeoPhys).

GeoPhys (Internò et al., "GeoPhys: The Geometry of Physical Plausibility", 2026) reads physical plausibility
off the path that a frozen *image* encoder's per-frame embeddings trace over time: plausible motion keeps the
path smooth, a violation makes it jump, stall or bend. This entry wraps any frame encoder that exposes feature
maps (:meth:`frame_maps`: the EfficientNet-Lite CNNs' stages, a ViT's blocks) and returns, per frame, the
kinematics of that path:

- ``speed``: the step length ``|z_t - z_{t-1}|``;
- ``turn``: the turning angle between consecutive steps, ``arccos <v_{t-1}, v_t> / (|v_{t-1}| |v_t|)``;
- ``accel``: the second difference ``|z_t - 2 z_{t-1} + z_{t-2}|``;
- ``residual``: how far ``z_t`` lands from a linear predictor fitted on the recent past: the step ``v_t`` is
  predicted as ``sum_i a_i v_{t-i}`` (``order`` coefficients, shared by every dimension, least squares over the
  ``window`` steps before ``t``, ridge-shrunk towards constant velocity), and the residual is the error's length.

Each is read per layer (``layers``) and per cell of one or more coarse grids over the feature map (``grids``:
1 is the frame's global average, 4 a 4 x 4 grid), so that a small object moving wrongly is not averaged away
with the background. ``frame_size`` shrinks the frames as read before the frame encoder sees them: beside another
encoder in a concatenation the two read frames alike (one decode), and the frame encoder runs at a cheaper size. Cell embeddings are L2-normalised first (``normalise: l2``): paths on the unit sphere have
comparable lengths across layers and cells, whatever each channel's scale.

Every statistic at frame t uses frames <= t only (causal). The steps that have no value yet repeat the first
one that has (as ``flow_stats`` does), so the encoder returns one step per frame: (B, T, D) with
D = len(layers) x sum(g^2 for g in grids) x len(stats), ordered layer, then cell, then statistic.

The five whole-clip signals of the GeoPhys paper are functions of these per-step values
(:func:`geophys_signals`): the training-free baseline ``baseline=geophys`` reads them, and the trained head reads
the per-step values through the unchanged [mean; std; max] pooling.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .base import FrozenEncoder, from_config, register_encoder

STATS = ("speed", "turn", "accel", "residual")
NORMALISATIONS = ("l2", "none")
CELL_POOLS = ("avg", "max")
SIGNALS = ("speed_std", "curvature", "angle_std", "accel", "residual")
EPS = 1e-8


def _first_valid(x: torch.Tensor, missing: int, t: int) -> torch.Tensor:
    """(B, T - missing, ...) -> (B, T, ...) by repeating the first value ``missing`` times."""
    if t <= missing:  # too short a clip for this statistic at all
        return x.new_zeros((x.shape[0], t, *x.shape[2:]))
    return torch.cat([x[:, :1].expand(-1, missing, *x.shape[2:]), x], dim=1)


def linear_prediction_residual(v: torch.Tensor, order: int = 2, window: int = 8, ridge: float = 1e-2) -> torch.Tensor:
    """|v_t - sum_i a_i(t) v_{t-i}| for steps ``v`` (B, S, K, C), coefficients a(t) (``order`` of them, shared
    across the C dimensions) fitted by least squares on the ``window`` steps before t, ridge-shrunk towards
    constant velocity (a = (1, 0, ...)) by ``ridge`` times the mean squared step length. Returns (B, S - order - 1, K)
    for steps ``order + 1 .. S - 1``: each needs ``order`` lags and one earlier step to fit on."""
    b, s, k, _ = v.shape
    if s <= order + 1:
        return v.new_zeros((b, 0, k))
    # lagged copies: lag[i][:, j] = v_{j - i - 1} for target step j in order .. S-1
    target = v[:, order:]  # (B, S - order, K, C)
    lags = torch.stack([v[:, order - i - 1 : s - i - 1] for i in range(order)], dim=-1)  # (B, S-order, K, C, p)
    gram = torch.einsum("bskci,bskcj->bskij", lags, lags)  # per target step
    cross = torch.einsum("bskci,bskc->bski", lags, target)
    # sums over the `window` target steps strictly before each step (cumulative sums, then a difference)
    zero_g, zero_c = gram[:, :1] * 0, cross[:, :1] * 0
    cg = torch.cat([zero_g, gram.cumsum(1)], dim=1)
    cc = torch.cat([zero_c, cross.cumsum(1)], dim=1)
    idx = torch.arange(1, gram.shape[1], device=v.device)  # predicted target steps (each has >= 1 before it)
    lo = (idx - window).clamp(min=0)
    g_win, c_win = cg[:, idx] - cg[:, lo], cc[:, idx] - cc[:, lo]
    scale = g_win.diagonal(dim1=-2, dim2=-1).mean(-1, keepdim=True)[..., None].clamp(min=EPS)
    eye = torch.eye(order, dtype=v.dtype, device=v.device)
    prior = eye[0]  # constant velocity: the next step repeats the last
    a = torch.linalg.solve(g_win + ridge * scale * eye, (c_win + ridge * scale[..., 0] * prior)[..., None])[..., 0]
    pred = torch.einsum("bskci,bski->bskc", lags[:, 1:], a)
    return (target[:, 1:] - pred).norm(dim=-1)


def check_stats(stats) -> None:
    """Refuse statistic names the encoder does not compute, naming the known ones."""
    unknown = set(stats) - set(STATS)
    if unknown:
        raise ValueError(f"trajectory: unknown statistics {sorted(unknown)}; known: {list(STATS)}")


def trajectory_kinematics(
    z: torch.Tensor, order: int = 2, window: int = 8, ridge: float = 1e-2, stats: tuple[str, ...] = STATS
) -> torch.Tensor:
    """Per-frame kinematics of trajectories ``z`` (B, T, K, C): K paths of C-d points. Returns (B, T, K, len(stats)),
    each statistic causal, its first undefined frames repeating its first value (module docstring)."""
    check_stats(stats)
    z = z.float()
    t = z.shape[1]
    v = z[:, 1:] - z[:, :-1]  # v[:, j] is the step into frame j + 1
    out = {}
    speed = v.norm(dim=-1)
    out["speed"] = _first_valid(speed, 1, t)
    if "turn" in stats:
        cos = (v[:, 1:] * v[:, :-1]).sum(-1) / (speed[:, 1:] * speed[:, :-1]).clamp(min=EPS)
        # no motion on either side is no turn
        still = (speed[:, 1:] <= EPS) | (speed[:, :-1] <= EPS)
        angle = torch.arccos(cos.clamp(-1.0, 1.0)).masked_fill(still, 0.0)
        out["turn"] = _first_valid(angle, 2, t)
    if "accel" in stats:
        out["accel"] = _first_valid((v[:, 1:] - v[:, :-1]).norm(dim=-1), 2, t)
    if "residual" in stats:
        out["residual"] = _first_valid(linear_prediction_residual(v, order, window, ridge), order + 2, t)
    return torch.stack([out[name] for name in stats], dim=-1)


def geophys_signals(per_step: torch.Tensor, stats: tuple[str, ...] = STATS, order: int = 2) -> dict[str, torch.Tensor]:
    """GeoPhys's five whole-clip signals from one path's per-step kinematics (B, T, len(stats)), each (B,):
    std of speed, mean turning angle (curvature), std of the turning angle, mean squared acceleration and
    mean prediction residual, over the steps where each is defined (the repeated first steps left out)."""
    col = {name: per_step[..., i] for i, name in enumerate(stats)}
    return {
        "speed_std": col["speed"][:, 1:].std(1, unbiased=False),
        "curvature": col["turn"][:, 2:].mean(1),
        "angle_std": col["turn"][:, 2:].std(1, unbiased=False),
        "accel": col["accel"][:, 2:].pow(2).mean(1),
        "residual": col["residual"][:, order + 2 :].mean(1),
    }


def geophys_score(signals: dict[str, torch.Tensor], use: tuple[str, ...] = SIGNALS) -> torch.Tensor:
    """One training-free score from the signals: the mean of their logarithms. Each signal then counts by its
    relative change, whatever its units, so no reference set or fitted scale is needed; on a pair, the score
    is a vote of the signals weighted by how much each moved (GeoPhys votes the signals unweighted)."""
    return torch.stack([torch.log(signals[name].clamp(min=EPS)) for name in use]).mean(0)


def cell_embeddings(maps: list[torch.Tensor], grids: tuple[int, ...], cell_pool: str) -> list[torch.Tensor]:
    """Feature maps (N, C_l, h, w) per layer -> each layer's cell embeddings (N, K, C_l), K = sum of g^2 over
    ``grids``. Layers stay apart: their widths differ, and a path's geometry never mixes layers."""
    pool = F.adaptive_avg_pool2d if cell_pool == "avg" else F.adaptive_max_pool2d
    return [torch.cat([pool(m, g).flatten(2).transpose(1, 2) for g in grids], dim=1) for m in maps]


class TrajectoryEncoder(FrozenEncoder):
    """Kinematics of a frame encoder's embedding trajectories, per layer and grid cell (module docstring)."""

    def __init__(
        self,
        frames: FrozenEncoder,
        layers: tuple[int, ...],
        grids: tuple[int, ...],
        stats: tuple[str, ...],
        order: int,
        window: int,
        ridge: float,
        normalise: str,
        cell_pool: str,
        log_scale: float | None = None,
        frame_size: int | None = None,
    ):
        super().__init__()
        if frame_size is not None and not frame_size >= 16:
            raise ValueError(f"trajectory: frame_size must be >= 16 pixels or null, got {frame_size}")
        if log_scale is not None and not log_scale > 0:
            raise ValueError(f"trajectory: log_scale must be > 0 or null, got {log_scale}")
        if not callable(getattr(frames, "frame_maps", None)):
            raise ValueError(f"trajectory: frame encoder {frames.name!r} exposes no feature maps (frame_maps)")
        if normalise not in NORMALISATIONS:
            raise ValueError(f"trajectory: normalise must be one of {NORMALISATIONS}, got {normalise!r}")
        if cell_pool not in CELL_POOLS:
            raise ValueError(f"trajectory: cell_pool must be one of {CELL_POOLS}, got {cell_pool!r}")
        if not layers or not grids or any(g < 1 for g in grids):
            raise ValueError(f"trajectory: layers and grids must be non-empty, grids >= 1; got {layers}, {grids}")
        n = frames.num_maps
        if any(not -n <= x < n for x in layers):  # frame_maps would wrap them round silently
            raise ValueError(f"trajectory: layers {list(layers)} out of range for {frames.name!r}'s {n} feature maps")
        if order < 1 or window < 1 or ridge < 0:
            raise ValueError(
                f"trajectory: order and window must be >= 1 and ridge >= 0, got {order}, {window}, {ridge}"
            )
        self.frames = frames
        self.layers, self.grids, self.stats = tuple(layers), tuple(grids), tuple(stats)
        self.order, self.window, self.ridge = order, window, ridge
        self.normalise, self.cell_pool, self.log_scale = normalise, cell_pool, log_scale
        self.frame_size = frame_size
        self.preprocess = frames.preprocess
        self.cells_per_layer = sum(g * g for g in self.grids)
        self.feature_dim = len(self.layers) * self.cells_per_layer * len(self.stats)
        check_stats(self.stats)

    def columns(self, layer: int, cell: int = 0, stats: tuple[str, ...] | None = None) -> list[int]:
        """Feature columns of ``stats`` (all by default) for the path of ``cell`` (0: the first grid's first
        cell, the global average when ``grids`` starts with 1) at position ``layer`` of ``layers``."""
        names = self.stats if stats is None else stats
        base = (layer * self.cells_per_layer + cell) * len(self.stats)
        return [base + self.stats.index(n) for n in names]

    def paths(self, clips: torch.Tensor) -> list[torch.Tensor]:
        """(B, T, 3, H, W) -> per layer, the cell embeddings' trajectories (B, T, K, C_l)."""
        b, t = clips.shape[:2]
        x = clips.flatten(0, 1)
        if self.frame_size is not None:  # the frames as read, shrunk for the frame encoder alone (module docstring)
            x = F.interpolate(x, size=(self.frame_size,) * 2, mode="bilinear", antialias=True, align_corners=False)
        maps = self.frames.frame_maps(x, list(self.layers))
        out = []
        for z in cell_embeddings(maps, self.grids, self.cell_pool):
            if self.normalise == "l2":
                z = F.normalize(z, dim=-1, eps=EPS)
            out.append(z.view(b, t, *z.shape[1:]))
        return out

    def forward_features(self, clips: torch.Tensor) -> torch.Tensor:
        k = [trajectory_kinematics(z, self.order, self.window, self.ridge, self.stats) for z in self.paths(clips)]
        return log_scaled(torch.cat(k, dim=2).flatten(2), self.log_scale)


def log_scaled(feats: torch.Tensor, log_scale: float | None) -> torch.Tensor:
    """``log(x + log_scale)``, or ``x`` when ``log_scale`` is None. Step lengths, turns and residuals are
    heavy-tailed (one jump is many times a typical step); on a log scale the head reads relative changes, as
    GeoPhys's score does, and one clip's outliers do not dominate the input normalisation."""
    return feats if log_scale is None else torch.log(feats.clamp(min=0) + log_scale)


class TrajectorySubset(FrozenEncoder):
    """Some layers, grids and statistics of a wider trajectory encoder's features, read from that encoder's
    cache (``derive``): a sweep over layers and grids encodes its videos once. The features equal those of a
    ``trajectory`` entry with the same options (each column is the same computation, rounded to the base's
    storage dtype as the cache stores it)."""

    def __init__(
        self, base: TrajectoryEncoder, columns: list[int], base_dtype: str = "float16", log_scale: float | None = None
    ):
        super().__init__()
        self.base, self.base_dtype, self.log_scale = base, base_dtype, log_scale
        self.register_buffer("cols", torch.as_tensor(columns, dtype=torch.long), persistent=False)
        self.preprocess, self.feature_dim = base.preprocess, len(columns)

    @torch.no_grad()
    def derive(self, base_feats: torch.Tensor) -> torch.Tensor:
        return log_scaled(base_feats.to(getattr(torch, self.base_dtype)).float()[..., self.cols], self.log_scale)

    def forward_features(self, clips: torch.Tensor) -> torch.Tensor:
        return self.derive(self.base.forward_features(clips))


def subset_columns(wide: TrajectoryEncoder, layers, grids, stats) -> list[int]:
    """Columns of ``wide``'s features that hold ``layers`` x ``grids`` x ``stats`` in a trajectory encoder's order."""
    n = wide.frames.num_maps
    wide_layers = [x % n for x in wide.layers]
    starts, at = {}, 0
    for g in wide.grids:
        starts[g], at = at, at + g * g
    cols = []
    for layer in layers:
        if layer % n not in wide_layers:
            raise ValueError(f"trajectory: layer {layer} is not among the wider encoder's layers {list(wide.layers)}")
        for g in grids:
            if g not in starts:
                raise ValueError(f"trajectory: grid {g} is not among the wider encoder's grids {list(wide.grids)}")
            for cell in range(g * g):
                cols += wide.columns(wide_layers.index(layer % n), starts[g] + cell, tuple(stats))
    return cols


@register_encoder("trajectory")
def trajectory(
    frames: dict | None = None,
    layers: list[int] | tuple[int, ...] = (-1,),
    grids: list[int] | tuple[int, ...] = (1,),
    stats: list[str] | tuple[str, ...] = STATS,
    order: int = 2,
    window: int = 8,
    ridge: float = 1e-2,
    normalise: str = "l2",
    cell_pool: str = "avg",
    log_scale: float | None = None,
    within: dict | None = None,
    frame_size: int | None = None,
) -> FrozenEncoder:
    """``frames``: the frame encoder's config ({"name": ..., **options}; EfficientNet-Lite0 with its packaged
    weights by default). ``layers``: which of its feature maps (:meth:`frame_maps` numbering; -1 the last).
    ``grids``: cells per side of each grid read per layer. ``order``/``window``/``ridge``: the linear predictor
    of the residual. ``normalise``: ``l2`` (unit-sphere paths) or ``none``. ``cell_pool``: ``avg`` or ``max``
    over each cell. ``log_scale``: null keeps the kinematics as they are; a positive value gives
    ``log(x + log_scale)`` per value (:func:`log_scaled`). ``within``: the ``layers`` and ``grids`` of a wider trajectory encoder (same other options)
    whose cached features these are read from (:class:`TrajectorySubset`), so that a sweep encodes once.
    ``frame_size``: null runs the frame encoder on the frames as its preprocessing gives them; N shrinks them to
    N x N first (antialiased), so that the encoder beside another in a concatenation reads frames as the other
    does (one decode for both) and still runs at a smaller, cheaper size."""
    if within is not None:
        wide = from_config(
            "trajectory",
            frames=frames,
            layers=within["layers"],
            grids=within["grids"],
            order=order,
            window=window,
            ridge=ridge,
            normalise=normalise,
            cell_pool=cell_pool,
            frame_size=frame_size,
        )
        enc = TrajectorySubset(wide, subset_columns(wide, layers, grids, stats), log_scale=log_scale)
        enc.weights_id = wide.weights_id
        enc.options = {"within": wide.describe(), "layers": list(layers), "grids": list(grids), "stats": list(stats)}
        if log_scale is not None:
            enc.options["log_scale"] = log_scale
        return enc
    spec = dict(frames or {"name": "efficientnet_lite0"})
    frame_enc = from_config(spec.pop("name"), **spec)
    enc = TrajectoryEncoder(
        frame_enc,
        tuple(layers),
        tuple(grids),
        tuple(stats),
        order,
        window,
        ridge,
        normalise,
        cell_pool,
        log_scale,
        frame_size,
    )
    enc.weights_id = frame_enc.weights_id
    enc.options = {
        "frames": frame_enc.describe(),
        "layers": [int(x) for x in layers],
        "grids": [int(g) for g in grids],
        "stats": list(stats),
        "order": order,
        "window": window,
        "ridge": ridge,
        "normalise": normalise,
        "cell_pool": cell_pool,
    }
    if log_scale is not None:  # absent when off: caches and scorers made before the option keep their keys
        enc.options["log_scale"] = log_scale
    if frame_size is not None:  # likewise
        enc.options["frame_size"] = int(frame_size)
    return enc
