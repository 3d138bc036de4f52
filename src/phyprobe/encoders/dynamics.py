"""A self-supervised dynamics model as a frozen encoder: per-step next-step prediction errors.

Order-free pooling (mean/std/max over time) cannot recover a trajectory, while next-step prediction is
exactly what trajectories need (docs/results.md: the surprisal baseline on position-keeping features beat
every order-free head). Here a small predictor learns, V-JEPA-style, to predict the next step of a frozen
base encoder's features (``flow_stats`` by default) from the previous ``context`` steps, on plausible
clips only; it is then frozen. Its per-step output is the absolute prediction error of every feature (in
the base features' standardised units; or, ``signed``, its over- and under-predicted parts apart;
optionally relative to the clip's own motion, ``normalise``), optionally followed by the standardised base
features, so the head gets order-aware evidence ("this step is not what the last ones predicted") through the unchanged
pooling stack. ``levels`` adds named base statistics as they are, averaged over the frame: evidence that is
in a step's level and not in its surprise, such as a region that has stopped dead.

A checkpoint is a directory: ``model.safetensors`` (predictor and standardisation), ``config.json``
(base encoder name, options and fingerprint, context, hidden size, the clip spec it was fitted on) and
``run_info.json`` (seed, config, code version), written by ``train_dynamics.py``.

Time steps: the base's. The first ``context`` steps have no prediction and repeat the first error.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file, save_file
from torch import nn

from ..runinfo import atomic_write_json
from .base import FrozenEncoder, WeightsNotFoundError, from_config, register_encoder
from .motion import pad_first

FORMAT = "phyprobe-dynamics/1"
WEIGHTS = "model.safetensors"  # the predictor and its standardisation, in a checkpoint directory
DEFAULT_CHECKPOINT = ".cache/dynamics/flow_stats"  # where `python train_dynamics.py` writes by default
DEFAULT_BASE = {"name": "flow_stats"}
FINITE = 6.0e4  # below float16's largest finite value (65504)
# How prediction errors are made comparable across clips that move more or less (``normalise``):
# none: raw |errors|; clip_motion: divided by the clip's mean |step-to-step change| over steps and features;
# feature_motion: each feature's divided by that feature's mean |change| in the clip.
NORMALISATIONS = ("none", "clip_motion", "feature_motion")
MOTION_FLOOR = 0.1  # standardised units added to the motion scale: a still clip's errors are not blown up


class NextStepPredictor(nn.Module):
    """MLP from the ``context`` previous standardised steps to the next one, as a residual on the last; or, with
    ``after`` > 0, from ``context`` steps before a step and ``after`` steps after it to that step, as a residual on
    the mean of its two neighbours (a masked step filled in, V-JEPA's masked prediction in time rather than a
    forecast: a steady ramp, which a forecast misses at every step by its rate, is filled in exactly, and a
    discontinuity is not; on flow statistics the two miss about as much, docs/results.md, "A masked step filled in").

    It reads the base features' ``columns`` (all of them by default): a base may hold statistics that
    describe the clip's history rather than its motion at a step (flow_stats' ``stopped``), which are not
    forecast (:func:`predicted_columns`)."""

    def __init__(self, dim: int, context: int = 3, hidden: int = 256, columns: list[int] | None = None, after: int = 0):
        super().__init__()
        if context < 1 or hidden < 1 or after < 0:
            raise ValueError(
                f"context and hidden must be >= 1 and after >= 0, got context={context}, hidden={hidden}, after={after}"
            )
        if columns is not None and len(columns) != dim:
            raise ValueError(f"dynamics: {len(columns)} columns for a predictor of {dim} features")
        self.dim, self.context, self.hidden, self.after = dim, context, hidden, after
        self.register_buffer(
            "columns", torch.arange(dim) if columns is None else torch.as_tensor(columns, dtype=torch.long)
        )
        self.register_buffer("mean", torch.zeros(dim))
        self.register_buffer("std", torch.ones(dim))
        self.net = nn.Sequential(
            nn.Linear((context + after) * dim, hidden),
            nn.GELU(),
            nn.Linear(hidden, hidden),
            nn.GELU(),
            nn.Linear(hidden, dim),
        )

    def fit_standardisation(self, steps: torch.Tensor) -> None:
        """Per-feature mean and std over (N, D_base) training steps; constant features get std 1."""
        steps = steps[..., self.columns]
        std = steps.std(0)
        self.mean.copy_(steps.mean(0))
        self.std.copy_(torch.where(std > 1e-6, std, torch.ones_like(std)))

    def standardise(self, z: torch.Tensor) -> torch.Tensor:
        """The predicted columns of base features (..., D_base), standardised: (..., dim)."""
        return (z[..., self.columns].float() - self.mean) / self.std

    def errors(self, z: torch.Tensor) -> torch.Tensor:
        """Signed prediction errors (B, T - context - after, dim) of raw base features (B, T, D_base): steps
        ``context`` to ``T - after - 1``."""
        k, a = self.context, self.after
        if z.shape[1] <= k + a:
            raise ValueError(
                f"dynamics: {z.shape[1]} steps leave nothing to predict between a context of {k} "
                f"steps before and {a} after"
            )
        s = self.standardise(z)
        n = s.shape[1] - k - a  # steps predicted
        before = s.unfold(1, k, 1)[:, :n]  # (B, n, dim, k): steps t-k .. t-1 for each target t
        if a:
            later = s[:, k + 1 :].unfold(1, a, 1)  # (B, n, dim, a): steps t+1 .. t+a
            windows = torch.cat([before, later], dim=-1)
            anchor = 0.5 * (s[:, k - 1 : k - 1 + n] + s[:, k + 1 : k + 1 + n])
        else:
            windows, anchor = before, s[:, k - 1 : -1]
        pred = anchor + self.net(windows.transpose(-1, -2).flatten(2))
        return pred - s[:, k : k + n]

    def persistence_errors(self, z: torch.Tensor) -> torch.Tensor:
        """What predicting "no change" would miss, (B, T - context - after, dim): the step-to-step change of the
        standardised features at the steps :meth:`errors` predicts. Its size is how much the clip moves."""
        s = self.standardise(z)
        k, n = self.context, s.shape[1] - self.context - self.after
        return s[:, k - 1 : k - 1 + n] - s[:, k : k + n]

    def pad(self, err: torch.Tensor) -> torch.Tensor:
        """Per-step errors back to every step: the first ``context`` repeat the first error, the last ``after``
        the last one."""
        err = pad_first(err, self.context)
        return torch.cat([err, err[:, -1:].expand(-1, self.after, -1)], dim=1) if self.after else err


def predicted_columns(base: FrozenEncoder) -> list[int]:
    """The base features a dynamics model forecasts: those the base marks as such (``predicted_columns``),
    else all of them."""
    cols = getattr(base, "predicted_columns", None)
    return list(cols()) if cols is not None else list(range(base.feature_dim))


def fit_predictor(
    train: list[torch.Tensor],
    val: list[torch.Tensor],
    context: int = 3,
    hidden: int = 256,
    epochs: int = 200,
    lr: float = 1e-3,
    weight_decay: float = 1e-2,
    batch_size: int = 256,
    seed: int = 0,
    patience: int | None = None,
    columns: list[int] | None = None,
    after: int = 0,
) -> tuple[NextStepPredictor, list[dict]]:
    """Fit on plausible (T, D) sequences with the L1 loss (V-JEPA's); the epoch with the lowest validation
    loss is kept (training loss when there is no validation clip). ``patience``: stop once that many epochs
    have passed without a new lowest loss (None: run every epoch); the epochs before the stop are the same
    computation either way, so the kept model only differs if a later epoch would have been lower.
    ``columns``: which base features to forecast (all by default); ``after``: steps after the predicted one that
    it reads (0: a forecast). Returns the predictor and the history."""
    if patience is not None and patience < 1:
        raise ValueError(f"dynamics: patience must be >= 1 epoch or None, got {patience}")
    if not train:
        raise ValueError("dynamics: no plausible training clips to fit the predictor on")
    g = torch.Generator().manual_seed(seed)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        dim = train[0].shape[-1] if columns is None else len(columns)
        model = NextStepPredictor(dim, context, hidden, columns, after)
    model.fit_standardisation(torch.cat([z.float() for z in train]))
    tr, va = torch.stack([z.float() for z in train]), torch.stack([z.float() for z in val]) if val else None
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    history, best, best_epoch, best_state = [], float("inf"), 0, None
    for epoch in range(epochs):
        model.train()
        perm = torch.randperm(len(tr), generator=g)
        total = 0.0
        for i in range(0, len(tr), batch_size):
            loss = model.errors(tr[perm[i : i + batch_size]]).abs().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * len(perm[i : i + batch_size])
        model.eval()
        with torch.no_grad():
            val_loss = model.errors(va).abs().mean().item() if va is not None else total / len(tr)
        history.append({"epoch": epoch, "train_l1": total / len(tr), "val_l1": val_loss})
        if val_loss < best:
            best, best_epoch, best_state = val_loss, epoch, {k: v.clone() for k, v in model.state_dict().items()}
        elif patience is not None and epoch - best_epoch >= patience:
            break
    model.load_state_dict(best_state)
    return model.eval(), history


def save_checkpoint(
    out_dir: str | Path, predictor: NextStepPredictor, base: FrozenEncoder, clip: dict, extra: dict | None = None
) -> Path:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / (WEIGHTS + ".tmp")
    save_file(
        {k: v.detach().contiguous() for k, v in predictor.state_dict().items()}, str(tmp), metadata={"format": FORMAT}
    )
    tmp.replace(out / WEIGHTS)
    atomic_write_json(
        out / "config.json",
        {
            "format": FORMAT,
            "base": {"name": base.name, "kwargs": base.factory_kwargs, "fingerprint": base.fingerprint()},
            "feature_dim": predictor.dim,
            "context": predictor.context,
            "hidden": predictor.hidden,
            **({"after": predictor.after} if predictor.after else {}),
            "clip": clip,
            **(extra or {}),
        },
    )
    return out


def load_checkpoint(path: str | Path) -> tuple[FrozenEncoder, NextStepPredictor, str]:
    """(base encoder, predictor, weights id) from a checkpoint directory; the base is rebuilt from the
    registry and must have the fingerprint it was fitted with."""
    path = Path(path)
    cfg_file, weights = path / "config.json", path / WEIGHTS
    if not (cfg_file.is_file() and weights.is_file()):
        raise WeightsNotFoundError(
            f"dynamics: no checkpoint at {path} (needs model.safetensors and config.json). Train one on plausible "
            f"clips with `python train_dynamics.py` (writes {DEFAULT_CHECKPOINT} by default; "
            f"`paths.output_dir=<dir>` elsewhere) and pass its directory as checkpoint=<dir>"
        )
    cfg = json.loads(cfg_file.read_text())
    if cfg.get("format") != FORMAT:
        raise ValueError(
            f"{cfg_file}: unsupported dynamics checkpoint format {cfg.get('format')!r}, expected {FORMAT!r}"
        )
    base = from_config(cfg["base"]["name"], **cfg["base"]["kwargs"])
    if base.fingerprint() != cfg["base"]["fingerprint"]:
        raise ValueError(
            f"{cfg_file}: base encoder {base.name!r} rebuilt here differs from the one the predictor was "
            f"fitted on (fingerprint {base.fingerprint()} != {cfg['base']['fingerprint']})"
        )
    predictor = NextStepPredictor(cfg["feature_dim"], cfg["context"], cfg["hidden"], after=cfg.get("after", 0))
    predictor.load_state_dict(load_file(str(weights)))
    if predictor.columns.tolist() != predicted_columns(base):
        raise ValueError(
            f"{cfg_file}: the predictor forecasts base columns other than those {base.name!r} marks as forecast"
        )
    return base, predictor, "sha256:" + hashlib.sha256(weights.read_bytes()).hexdigest()[:16]


class DynamicsEncoder(FrozenEncoder):
    """The base encoder's features, rounded to ``base_dtype`` as its feature cache stores them, then the
    predictor's errors. The rounding makes :meth:`derive` on cached base features and a forward pass on
    the clip the same computation, so extraction encodes the base once (shared by every dynamics model
    fitted on it) and the exported scorer still reproduces the training features."""

    bundled_kwargs = ("checkpoint",)  # the fitted model travels inside an exported scorer

    def __init__(
        self,
        base: FrozenEncoder,
        predictor: NextStepPredictor,
        include_base: bool,
        base_dtype: str = "float16",
        normalise: str = "none",
        signed: bool = False,
        levels: tuple[str, ...] = (),
    ):
        super().__init__()
        if normalise not in NORMALISATIONS:
            raise ValueError(f"dynamics: normalise must be one of {NORMALISATIONS}, got {normalise!r}")
        if levels and not hasattr(base, "columns"):
            raise ValueError(
                f"dynamics: levels {list(levels)} need a base with named statistics (flow_stats); {base.name!r} has none"
            )
        self.base, self.predictor, self.include_base = base, predictor, include_base
        self.base_dtype, self.normalise, self.signed = base_dtype, normalise, signed
        self.levels = tuple(levels)
        self.level_columns = [base.columns(name) for name in self.levels]  # an unknown name fails here
        self.preprocess = base.preprocess
        self.frames_per_step = base.frames_per_step
        self.feature_dim = predictor.dim * ((2 if signed else 1) + (1 if include_base else 0)) + len(self.levels)

    def evidence_groups(self) -> dict[str, list[int]]:
        """The per-step columns by kind of evidence, for a head that weighs kinds rather than features
        (``head.groups: encoder``): the prediction errors (both signs), the standardised base features when
        included, then each level on its own."""
        err = self.predictor.dim * (2 if self.signed else 1)
        groups = {"errors": list(range(err))}
        if self.include_base:
            groups["base"] = list(range(err, err + self.predictor.dim))
        start = err + (self.predictor.dim if self.include_base else 0)
        groups.update({f"level:{name}": [start + i] for i, name in enumerate(self.levels)})
        return groups

    def frames_for(self, num_frames: int) -> int:
        return self.base.frames_for(num_frames)

    def num_steps(self, num_frames: int) -> int:
        return self.base.num_steps(num_frames)

    @torch.no_grad()
    def derive(self, base_feats: torch.Tensor) -> torch.Tensor:
        """Per-step features from the base's stored features, (T, D_base) or (B, T, D_base)."""
        one = base_feats.dim() == 2
        z = (base_feats[None] if one else base_feats).to(getattr(torch, self.base_dtype)).float()
        err = self.predictor.errors(z)
        if self.normalise != "none":
            # errors grow with how much a scene moves, whatever its physics; relative to the clip's own motion
            # they do not (an ablation: it helps the worlds' validation splits and costs on real footage,
            # docs/results.md "A default that transfers")
            moved = self.predictor.persistence_errors(z).abs()
            per_clip = self.normalise == "clip_motion"
            scale = moved.mean(dim=(1, 2), keepdim=True) if per_clip else moved.mean(1, keepdim=True)
            err = err / (scale + MOTION_FLOOR)
        # split: what the model expected and did not happen (a body that should move stops) apart from what
        # happened unexpectedly (a jump): a violation that removes motion is less surprising on average than
        # its plausible twin, and a non-negative head needs the two signs apart to count it
        err = torch.cat([err.clamp(min=0), (-err).clamp(min=0)], dim=-1) if self.signed else err.abs()
        err = self.predictor.pad(err)
        out = torch.cat([err, self.predictor.standardise(z)], dim=-1) if self.include_base else err
        if self.levels:  # each named statistic's mean over the frame's cells, as measured
            out = torch.cat([out, *(z[..., cols].mean(-1, keepdim=True) for cols in self.level_columns)], dim=-1)
        # a feature nearly constant on the plausible clips has a tiny std: far off it, the standardised value
        # would overflow float16 storage; past FINITE it is saturated, not infinite
        out = out.clamp(-FINITE, FINITE)
        return out[0] if one else out

    def forward_features(self, clips: torch.Tensor) -> torch.Tensor:
        return self.derive(self.base.forward_features(clips))


@register_encoder("dynamics")
def dynamics(
    checkpoint: str | None = DEFAULT_CHECKPOINT,
    include_base: bool = True,
    base: dict | None = None,
    context: int = 3,
    hidden: int = 256,
    base_dtype: str = "float16",
    normalise: str = "none",
    signed: bool = False,
    levels: list[str] | tuple[str, ...] = (),
    after: int = 0,
) -> FrozenEncoder:
    """Per step: |next-step prediction error| of the base features (D), or with ``signed`` its over- and
    under-predicted parts (2D: predicted minus actual where positive, then actual minus predicted), then,
    with ``include_base``, the standardised base features (D). ``checkpoint``: a directory written by
    ``train_dynamics.py``; None builds a random-initialised (seeded) predictor over ``base`` ({"name": ..., **options}), for tests,
    as ``weights=None`` does for the other entries. ``base``, ``context`` and ``hidden`` come from the
    checkpoint when there is one, as does ``after`` (steps after the predicted one the predictor reads: 0 forecasts,
    more fills a masked step in). ``base_dtype``: the storage dtype of the base features (the feature
    cache's), which the predictor reads. ``normalise``: how errors are scaled by the clip's own motion
    (:data:`NORMALISATIONS`). ``levels``: names of base statistics (flow_stats' ``CELL_STATS``) appended
    per step as they are, averaged over the cells (1 each)."""
    if base_dtype not in ("float16", "float32"):
        raise ValueError(f"dynamics: base_dtype must be float16 or float32, got {base_dtype!r}")
    if checkpoint is not None:
        if base is not None:
            raise ValueError(
                "dynamics: base comes from the checkpoint's config.json; pass base only with checkpoint=None"
            )
        base_enc, predictor, weights_id = load_checkpoint(checkpoint)
    else:
        spec = dict(base or DEFAULT_BASE)
        base_enc = from_config(spec.pop("name"), **spec)
        cols = predicted_columns(base_enc)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            predictor = NextStepPredictor(len(cols), context, hidden, cols, after)
        weights_id = "random"
    enc = DynamicsEncoder(base_enc, predictor.eval(), include_base, base_dtype, normalise, signed, tuple(levels))
    enc.weights_id = weights_id
    enc.options = {
        "base": base_enc.describe(),
        "context": predictor.context,
        "hidden": predictor.hidden,
        "include_base": include_base,
        "base_dtype": base_dtype,
    }
    # absent when off, so scorers exported and features cached before these options existed stay valid
    enc.options.update(
        {
            k: v
            for k, v in (
                ("normalise", normalise),
                ("signed", signed),
                ("levels", list(levels)),
                ("after", predictor.after),
            )
            if v not in ("none", False, [], 0)
        }
    )
    return enc


def plausible_mask(videos) -> np.ndarray:
    """Videos with no violation: ``is_real`` true and a zero magnitude (world plausible and quality-only
    clips, unperturbed real footage)."""
    return (videos["is_real"].astype(bool) & (videos["magnitude"].astype(float) == 0.0)).to_numpy()
