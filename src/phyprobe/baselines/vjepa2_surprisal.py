"""The V-JEPA intuitive-physics baseline with V-JEPA 2's *own* predictor (Garrido et al., 2025).

The feature-surprisal baseline in :mod:`.surprisal` fits a ridge predictor because most encoders
have none. V-JEPA 2 checkpoints ship the predictor they were trained with, which is the baseline the
paper compares against. For every window of ``context + 1`` tubelets sliding over the clip:

- the encoder sees the ``context`` tubelets alone (never the future, so nothing leaks through
  attention), and the predictor fills in the next tubelet's tokens from them;
- the encoder sees the whole window, and its tokens of that last tubelet, layer-normalised as
  V-JEPA's training targets are, are what should have been predicted;
- the surprise of the step is the L1 error, averaged over tokens and channels.

A video's score is the max over steps (V-JEPA's primary: one brief violation is enough) or the mean.
Positions restart at 0 in every window, as in the clips the predictor was trained on.
"""

from __future__ import annotations

import logging

import numpy as np
import torch
import torch.nn.functional as F

from ..encoders.vjepa2 import VJEPA2Encoder
from ..io.video import ClipSpec
from . import score_each_video

STATS = ("max", "mean")
log = logging.getLogger(__name__)


def uses_own_predictor(encoder) -> bool:
    """Whether ``encoder`` is a V-JEPA 2 whose features are the tokens its predictor was trained on."""
    return isinstance(encoder, VJEPA2Encoder) and encoder.layer == encoder.model.config.num_hidden_layers - 1


class VJEPA2Surprisal:
    """``VJEPA2Surprisal(encoder, context=2).score(clip) -> {"max", "mean"}`` for one preprocessed clip."""

    def __init__(self, encoder: VJEPA2Encoder, context: int = 2):
        if not isinstance(encoder, VJEPA2Encoder):
            raise TypeError(f"the V-JEPA 2 surprisal needs a vjepa2 encoder, got {type(encoder).__name__}")
        if not uses_own_predictor(encoder):
            raise ValueError(f"the predictor was trained on the last block's tokens; this encoder reads block {encoder.layer}")
        if context < 1:
            raise ValueError(f"context must be >= 1 tubelet, got {context}")
        self.encoder, self.context = encoder.eval(), context

    @torch.inference_mode()
    def surprise(self, clip: torch.Tensor) -> np.ndarray:
        """(T, 3, H, W) preprocessed frames -> per-step surprise, length T / tubelet - context."""
        tub, k = self.encoder.tubelet, self.context
        steps = clip.shape[0] // tub
        if steps <= k:
            raise ValueError(f"a clip of {steps} tubelets has nothing to predict after a context of {k}")
        out = []
        with torch.autocast(clip.device.type, dtype=torch.bfloat16, enabled=clip.device.type == "cuda"):
            for start in range(steps - k):
                out.append(self._window_error(clip[start * tub : (start + k + 1) * tub].unsqueeze(0)))
        return np.asarray(out)

    def _window_error(self, window: torch.Tensor) -> float:
        """L1 error of the predicted last tubelet of ``window`` (1, (k+1)*tubelet, 3, H, W)."""
        k, tub = self.context, self.encoder.tubelet
        target = self.encoder.tokens(window)[:, -1]  # (1, P, D)
        context = self.encoder.tokens(window[:, : k * tub]).flatten(1, 2)  # (1, k*P, D)
        p = target.shape[1]
        pred = self.encoder.model.predictor(
            encoder_hidden_states=context,
            context_mask=[torch.arange(k * p, device=window.device).unsqueeze(0)],
            target_mask=[torch.arange(k * p, (k + 1) * p, device=window.device).unsqueeze(0)],
        ).last_hidden_state
        return float((pred.float() - F.layer_norm(target.float(), target.shape[-1:])).abs().mean())

    def score(self, clip: torch.Tensor) -> dict[str, float]:
        s = self.surprise(clip)
        return {"max": float(s.max()), "mean": float(s.mean())}


def vjepa2_surprisal_scores(manifest, encoder: VJEPA2Encoder, clip: ClipSpec = ClipSpec(16), context: int = 2
                            ) -> dict[str, dict[str, float]]:
    """``{"max": {video: score}, "mean": {...}}`` for every readable video of ``manifest``, sampled by
    ``clip`` (made even by the encoder) and preprocessed as the encoder is, on the device it is on.

    The context shrinks to fit short clips (as the fitted-predictor surprisal's does); a clip of a
    single tubelet leaves nothing to predict, and no scores are returned.
    """
    spec = encoder.clip_spec(clip)
    steps = spec.num_frames // encoder.tubelet
    if steps < 2:
        log.warning("vjepa2 surprisal skipped: %d tubelet(s) per clip, nothing to predict", steps)
        return {}
    if context >= steps:
        log.warning("vjepa2 surprisal: context %d shrunk to %d tubelets to fit %d-frame clips", context, steps - 1, spec.num_frames)
        context = steps - 1
    base = VJEPA2Surprisal(encoder, context=context)
    device = next(encoder.parameters()).device
    per = score_each_video(manifest, spec,
                           lambda frames: base.score(encoder.preprocess(frames).to(device)))
    return {stat: {v: s[stat] for v, s in per.items()} for stat in STATS}
