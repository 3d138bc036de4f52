"""LightningModule for the head: the frozen encoder's features come in, never the encoder itself."""

from __future__ import annotations

import torch

from ..head import PhyProbeHead
from ..lightning_setup import L
from ..losses import PhyProbeLoss


class PhyProbeModule(L.LightningModule):
    def __init__(
        self,
        head: PhyProbeHead,
        loss: PhyProbeLoss,
        lr: float = 1e-3,
        weight_decay: float = 1e-2,
        warmup_steps: int = 50,
    ):
        super().__init__()
        self.head, self.loss_fn = head, loss
        self.lr, self.weight_decay, self.warmup_steps = lr, weight_decay, warmup_steps

    def forward(self, feats: torch.Tensor) -> torch.Tensor:
        return self.head(feats)

    def _step(self, batch: dict, stage: str) -> torch.Tensor:
        n = batch["fa"].shape[0]
        s = self.head(torch.cat([batch["fa"], batch["fb"]]))
        s_a, s_b = s[:n], s[n:]
        items = torch.cat([s_a, s_b])
        mag = torch.cat([batch["mag"][:, 0], batch["mag"][:, 1]])
        anchor = torch.cat([batch["anchor"][:, 0], batch["anchor"][:, 1]])
        out = self.loss_fn(s_a, s_b, batch["label"], batch["weight"], mag, anchor, items)
        on_step = stage == "train"
        for k, v in out.items():
            self.log(f"{stage}/{k}", v, on_step=on_step, on_epoch=True, prog_bar=k == "loss", batch_size=n)
        decided = batch["label"] != 0.5
        if decided.any():
            correct = ((s_a - s_b)[decided] > 0) == (batch["label"][decided] > 0.5)
            self.log(
                f"{stage}/pair_acc", correct.float().mean(), on_step=False, on_epoch=True, batch_size=int(decided.sum())
            )
        return out["loss"]

    def training_step(self, batch, batch_idx):
        return self._step(batch, "train")

    def validation_step(self, batch, batch_idx):
        self._step(batch, "val")

    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.head.parameters(), lr=self.lr, weight_decay=self.weight_decay)
        total = max(1, int(self.trainer.estimated_stepping_batches))
        warm = min(self.warmup_steps, total // 10)

        def schedule(step: int) -> float:
            if step < warm:
                return (step + 1) / warm
            progress = (step - warm) / max(1, total - warm)
            return 0.5 * (1 + torch.cos(torch.tensor(progress * torch.pi)).item())

        sched = torch.optim.lr_scheduler.LambdaLR(opt, schedule)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}
