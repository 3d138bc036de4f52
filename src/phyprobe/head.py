"""The learned part of PhyProbe: pooled clip vector -> standardise -> 3-layer GELU MLP -> scalar (the paper's head,
~1M parameters with ``hidden="auto"``).

``kind="monotone"`` (an option: ``experiment=evidence_head``) replaces the MLP by a non-negative weighting of the
standardised inputs, for features that are evidence of a violation by construction (the ``dynamics`` encoder's
prediction errors: more surprise never means more plausible). The weights may say which evidence counts, never invert
it (docs/studies/signed-errors.md).

Input standardisation statistics are fitted once on the training set's pooled features and stored
as buffers, so they are exported with the weights and a scorer needs nothing else to reproduce them.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from .pooling import TemporalStatsPool

PAPER_PARAMETERS = 1_000_000  # the paper's head: a ~1M-parameter 3-layer GELU MLP


def mlp_width(in_dim: int, parameters: int = PAPER_PARAMETERS) -> int:
    """The hidden width (a multiple of 8) at which :class:`MLPHead` on ``in_dim`` inputs has about ``parameters``
    weights: h^2 + (in_dim + 3) h + 1 = parameters. Width 256 on EfficientNet's 3x1280 input is the same 1.05M."""
    b = in_dim + 3
    h = (-b + (b * b + 4 * (parameters - 1)) ** 0.5) / 2
    return max(8, int(round(h / 8)) * 8)


def resolve_hidden(hidden: int | str, in_dim: int) -> int:
    """``head.hidden``: a width, or ``auto`` for the paper's ~1M parameters on this input (:func:`mlp_width`)."""
    if hidden == "auto":
        return mlp_width(in_dim)
    if isinstance(hidden, bool) or not isinstance(hidden, int) or hidden < 1:
        raise ValueError(f"head.hidden must be a width >= 1 or 'auto', got {hidden!r}")
    return hidden


class MLPHead(nn.Module):
    """3 linear layers with GELU between them (``hidden`` wide; see :func:`mlp_width` for the paper's ~1M)."""

    def __init__(self, in_dim: int, hidden: int = 256, dropout: float = 0.1):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(in_dim, hidden),
            nn.GELU(),
            nn.Dropout(dropout),
            nn.Linear(hidden, hidden),
            nn.GELU(),
            nn.Dropout(dropout),
            nn.Linear(hidden, 1),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)


class MonotoneHead(nn.Module):
    """s = sum_g softplus(w_g) mean_{i in g} x_i / scale_g + b: non-decreasing in every input. ``groups``
    (lists of input columns, covering every column once) weigh evidence by kind, not feature by feature; one
    group per input by default. ``scale_g`` is the spread of group g's mean over the training clips
    (:meth:`fit_scale`; 1 until fitted), so the head starts as the plain mean of unit-variance kinds.

    Why groups: Adam moves each raw weight by about lr per step, so over a run of a few hundred steps at the
    paper's lr a weight changes by well under a factor of two, and the head ranks clips as its start does.
    Per input, that start counts one extra input among hundreds of errors for nothing; per kind of evidence,
    each kind counts alike from the start, whatever its number of columns.

    Why the scale: the mean of hundreds of standardised errors, which partly cancel, varies far less from clip
    to clip than one standardised level does (about half as much on the project's worlds), so at equal weights
    the single level would outweigh all the errors together. Divided by its spread, each kind of evidence moves
    the score as much as the others."""

    def __init__(self, in_dim: int, groups: list[list[int]] | None = None):
        super().__init__()
        assign = None  # one weight per input: no averaging
        if groups is not None:
            groups = [list(map(int, g)) for g in groups]
            if sorted(i for g in groups for i in g) != list(range(in_dim)) or any(not g for g in groups):
                raise ValueError(
                    f"monotone head: groups must cover each of the {in_dim} inputs exactly once, none empty"
                )
            assign = torch.zeros(in_dim, len(groups))
            for k, g in enumerate(groups):
                assign[g, k] = 1.0 / len(g)
        self.register_buffer("group_mean", assign, persistent=False)  # rebuilt from the groups, not stored
        n = in_dim if groups is None else len(groups)
        # stored with the weights when there are groups; a scorer exported before the scale existed loads as 1
        self.register_buffer("group_scale", torch.ones(n) if groups is not None else None)
        self.raw_weight = nn.Parameter(torch.full((n,), float(torch.tensor(1.0 / n).expm1().log())))  # softplus^-1(1/n)
        self.bias = nn.Parameter(torch.zeros(()))

    def weights(self) -> torch.Tensor:
        return nn.functional.softplus(self.raw_weight)

    def kinds(self, x: torch.Tensor) -> torch.Tensor:
        """(N, in_dim) standardised inputs -> (N, groups) the evidence each weight multiplies."""
        return x if self.group_mean is None else x @ self.group_mean / self.group_scale

    @torch.no_grad()
    def fit_scale(self, x: torch.Tensor) -> None:
        """Each group mean's standard deviation over (N, in_dim) standardised training inputs."""
        if self.group_mean is not None:
            self.group_scale.copy_(
                (x.double() @ self.group_mean.double()).std(0, unbiased=False).float().clamp_min(1e-4)
            )

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        key = prefix + "group_scale"
        if self.group_scale is not None and key not in state_dict:  # exported before group scales existed
            state_dict = {**state_dict, key: torch.ones_like(self.group_scale)}
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.kinds(x) @ self.weights() + self.bias


HEAD_KINDS = ("mlp", "monotone")


class PhyProbeHead(nn.Module):
    """Per-step features (B, T, D) -> raw violation score s (B,). Report ``s.clamp(0, 1)``."""

    def __init__(
        self,
        feature_dim: int,
        stats=("mean", "std", "max"),
        hidden: int | str = "auto",
        dropout: float = 0.1,
        kind: str = "mlp",
        groups: list[list[int]] | None = None,
    ):
        """``groups``: for the monotone head, lists of per-step feature columns whose evidence shares a weight
        (each pooling statistic of a group is a group of its own); None: a weight per pooled input."""
        super().__init__()
        if kind not in HEAD_KINDS:
            raise ValueError(f"head kind must be one of {HEAD_KINDS}, got {kind!r}")
        if groups is not None and kind != "monotone":
            raise ValueError(f"head: groups are for the monotone head, not {kind!r}")
        self.pool = TemporalStatsPool(stats)
        in_dim = self.pool.out_dim(feature_dim)
        self.feature_dim, self.kind = feature_dim, kind
        self.register_buffer("in_mean", torch.zeros(in_dim))
        self.register_buffer("in_std", torch.ones(in_dim))
        self.hidden = resolve_hidden(hidden, in_dim) if kind == "mlp" else 0  # a monotone head has no hidden layer
        if kind == "mlp":
            self.mlp = MLPHead(in_dim, self.hidden, dropout)
        else:
            pooled = (
                None
                if groups is None
                else [[k * feature_dim + c for c in g] for k in range(len(stats)) for g in groups]
            )
            self.monotone = MonotoneHead(in_dim, pooled)

    @classmethod
    def from_config(cls, h: dict) -> "PhyProbeHead":
        """The head a recorded ``head`` block describes (a scorer's config.json, a run's ``head/config.json``)."""
        return cls(
            h["feature_dim"],
            stats=tuple(h["stats"]),
            hidden=h["hidden"],
            dropout=h.get("dropout", 0.0),
            kind=h.get("kind", "mlp"),
            groups=h.get("groups"),
        )

    @torch.no_grad()
    def fit_normalisation(self, feats, rows=None, batch: int = 256) -> None:
        """Standardisation statistics of the pooled training clips.

        ``feats``: (N, T, D) tensor or a streamed feature table; ``rows``: the training rows (all by
        default). Moments are merged chunk by chunk in float64 (Chan et al.), so a table larger
        than memory is never loaded whole and the result does not depend on the chunk size. A grouped
        monotone head's group scales are fitted on the same rows.
        """
        rows = np.arange(len(feats)) if rows is None else np.asarray(rows, dtype=np.int64)
        grouped = self.kind == "monotone" and self.monotone.group_mean is not None
        pooled = []  # a grouped head keeps the pooled clips (small: a few hundred values each) for its scales
        n, mean, m2 = 0, None, None
        for i in range(0, len(rows), batch):
            x = self.pool(feats[rows[i : i + batch]].float()).double()
            if grouped:
                pooled.append(x)
            k, mu = len(x), x.mean(0)
            sq = ((x - mu) ** 2).sum(0)
            if mean is None:
                n, mean, m2 = k, mu, sq
            else:
                delta = mu - mean
                mean = mean + delta * k / (n + k)
                m2 = m2 + sq + delta**2 * n * k / (n + k)
                n += k
        self.in_mean.copy_(mean.float())
        self.in_std.copy_((m2 / n).sqrt().float().clamp_min(1e-4))
        if grouped:  # on the clips pooled above, not read again
            self.monotone.fit_scale((torch.cat(pooled).float() - self.in_mean) / self.in_std)

    def standardised(self, feats: torch.Tensor) -> torch.Tensor:
        """Per-step features (B, T, D) -> the pooled, standardised head input (B, in_dim)."""
        return (self.pool(feats) - self.in_mean) / self.in_std

    def forward(self, feats: torch.Tensor) -> torch.Tensor:
        x = self.standardised(feats)
        return self.mlp(x) if self.kind == "mlp" else self.monotone(x)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())


@torch.inference_mode()
def score_features(head: PhyProbeHead, feats: torch.Tensor, batch: int = 1024) -> np.ndarray:
    head.eval()
    return torch.cat([head(feats[i : i + batch].float()) for i in range(0, len(feats), batch)]).numpy()
