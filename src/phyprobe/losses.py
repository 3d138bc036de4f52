"""PhyProbe's training objective: L = L_rank + λ_mag · L_mag + λ_cal · L_cal.

- L_rank: Bradley–Terry. P(a more violating than b) = σ(s_a − s_b), binary cross-entropy against a
  soft label; real–real pairs carry 0.5, which pulls their scores together instead of ordering them.
- L_mag: Huber regression of s on per-dataset normalised magnitudes; without it the ranking loss
  alone leaves the score's scale free and the range drifts.
- L_cal: squared error to anchors (real → 0, obvious violation → 1) that pin the absolute scale.
Each term returns its value and the number of items it saw, so an empty term logs as absent
instead of as a misleading zero.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F


def bradley_terry_loss(
    s_a: torch.Tensor, s_b: torch.Tensor, label: torch.Tensor, weight: torch.Tensor | None = None
) -> torch.Tensor:
    """Weighted mean BCE of σ(s_a − s_b) against ``label`` = P(a more violating than b)."""
    per = F.binary_cross_entropy_with_logits(s_a - s_b, label.to(s_a.dtype), reduction="none")
    if weight is None:
        return per.mean()
    weight = weight.to(per.dtype)
    return (per * weight).sum() / weight.sum().clamp_min(1e-12)


def magnitude_loss(s: torch.Tensor, magnitude: torch.Tensor, delta: float = 0.1) -> tuple[torch.Tensor, int]:
    """Huber(s, magnitude) over items whose magnitude is known (NaN = unknown)."""
    known = ~torch.isnan(magnitude)
    n = int(known.sum())
    if n == 0:
        return s.new_zeros(()), 0
    return F.huber_loss(s[known], magnitude[known].to(s.dtype), delta=delta), n


def calibration_loss(s: torch.Tensor, anchor: torch.Tensor) -> tuple[torch.Tensor, int]:
    """Mean squared error to the anchors (0 = real, 1 = obvious violation) where one is set (NaN = none)."""
    known = ~torch.isnan(anchor)
    n = int(known.sum())
    if n == 0:
        return s.new_zeros(()), 0
    return F.mse_loss(s[known], anchor[known].to(s.dtype)), n


@dataclass
class PhyProbeLoss:
    lambda_rank: float = 1.0
    lambda_mag: float = 1.0
    lambda_cal: float = 1.0
    huber_delta: float = 0.1

    def __call__(self, s_a, s_b, label, weight, mag, anchor, s_items) -> dict[str, torch.Tensor]:
        """``s_items``, ``mag``, ``anchor``: scores and targets of the batch's videos (both pair sides)."""
        rank = bradley_terry_loss(s_a, s_b, label, weight) if len(label) else s_a.new_zeros(())
        mag_l, _ = magnitude_loss(s_items, mag, self.huber_delta)
        cal_l, _ = calibration_loss(s_items, anchor)
        total = self.lambda_rank * rank + self.lambda_mag * mag_l + self.lambda_cal * cal_l
        return {"loss": total, "rank": rank.detach(), "mag": mag_l.detach(), "cal": cal_l.detach()}
