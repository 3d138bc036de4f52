"""The V-JEPA intuitive-physics baseline with V-JEPA 2's *own* predictor (Garrido et al., 2025).

The feature-surprisal baseline in :mod:`.surprisal` fits a ridge predictor because most encoders
have none. V-JEPA 2 checkpoints ship the predictor they were trained with, which is the baseline the
paper compares against. Two protocols:

``windowed`` (default; the official intuitive-physics evaluation's)
    16-frame windows slide over the clip at a stride of 2 frames. In each window, for every context
    length C of 2, 4, 6, 8 and 10 frames, the encoder sees the first C frames alone, the predictor
    fills in *every* token after them, and the target is the encoder's layer-normalised tokens of the
    whole window there. A window's surprise is the L1 error over those tokens and channels, the
    minimum over context lengths (the official "filtered" figure: the context that explains the
    window best). Positions restart at 0 in every window, as in the clips the predictor saw.
``next_tubelet``
    windows of ``context + 1`` tubelets: the predictor fills in only the next tubelet.

The encoder sees the context alone, so the future cannot leak through attention (the official code
masks the other tokens out of the encoder, which is the same computation). The predictor is given
mask token 0, as V-JEPA 2 is trained and as the official evaluation runs it (its multi-mask wrapper
passes the index of the mask set, 0 for the one set); transformers' ``VJEPA2Predictor`` would use
token 1, so the index is set on its embedding layer's call.

A video's score is the max over windows (V-JEPA's primary: one brief violation is enough) or the mean.
"""

from __future__ import annotations

import logging

import numpy as np
import torch
import torch.nn.functional as F

from ..encoders.vjepa2 import VJEPA2Encoder
from ..errors import InvalidOption
from ..io.video import ClipSpec
from . import score_each_video

STATS = ("max", "mean")
PROTOCOLS = ("windowed", "next_tubelet")
OFFICIAL_WINDOW, OFFICIAL_STRIDE, OFFICIAL_CONTEXTS = 16, 2, (2, 4, 6, 8, 10)
MASK_TOKEN = 0
log = logging.getLogger(__name__)


def uses_own_predictor(encoder) -> bool:
    """Whether ``encoder`` is a V-JEPA 2 whose features are the tokens its predictor was trained on."""
    return isinstance(encoder, VJEPA2Encoder) and encoder.layer == encoder.model.config.num_hidden_layers - 1


def _mask_token_hook(module, args, kwargs):
    return args, {**kwargs, "mask_index": MASK_TOKEN}


class VJEPA2Surprisal:
    """``VJEPA2Surprisal(encoder).score(clip) -> {"max", "mean"}`` for one preprocessed clip.

    ``protocol="windowed"``: ``window`` frames at ``stride``, contexts ``context_frames`` (frames);
    ``protocol="next_tubelet"``: ``context`` tubelets predict the next one.
    """

    def __init__(
        self,
        encoder: VJEPA2Encoder,
        context: int = 2,
        protocol: str = "next_tubelet",
        window: int = OFFICIAL_WINDOW,
        stride: int = OFFICIAL_STRIDE,
        context_frames: tuple[int, ...] = OFFICIAL_CONTEXTS,
    ):
        if not isinstance(encoder, VJEPA2Encoder):
            raise TypeError(f"the V-JEPA 2 surprisal needs a vjepa2 encoder, got {type(encoder).__name__}")
        if not uses_own_predictor(encoder):
            raise ValueError(
                f"the predictor was trained on the last block's tokens; this encoder reads block {encoder.layer}"
            )
        if protocol not in PROTOCOLS:
            raise InvalidOption(f"vjepa2 surprisal protocol must be one of {PROTOCOLS}, got {protocol!r}")
        if context < 1:
            raise ValueError(f"context must be >= 1 tubelet, got {context}")
        tub = encoder.tubelet
        if (
            window % tub
            or stride < 1
            or any(c % tub or not 0 < c < window for c in context_frames)
            or not context_frames
        ):
            raise InvalidOption(
                f"windowed protocol needs a window and contexts in whole tubelets of {tub} frames, "
                f"contexts shorter than the window and stride >= 1; got window={window}, "
                f"stride={stride}, contexts={tuple(context_frames)}"
            )
        self.encoder, self.context, self.protocol = encoder.eval(), context, protocol
        self.window, self.stride, self.context_frames = window, stride, tuple(context_frames)

    def _predict(self, context: torch.Tensor, num_context: int, num_target: int) -> torch.Tensor:
        """Predictor output for the ``num_target`` tokens after ``num_context`` context tokens, mask token 0."""
        dev = context.device
        hook = self.encoder.model.predictor.embeddings.register_forward_pre_hook(_mask_token_hook, with_kwargs=True)
        try:
            return self.encoder.model.predictor(
                encoder_hidden_states=context,
                context_mask=[torch.arange(num_context, device=dev).unsqueeze(0)],
                target_mask=[torch.arange(num_context, num_context + num_target, device=dev).unsqueeze(0)],
            ).last_hidden_state
        finally:
            hook.remove()

    def _error(self, window: torch.Tensor, context_tubelets: int, target: torch.Tensor) -> float:
        """L1 error of the predicted tokens after ``context_tubelets`` of ``window`` against ``target``
        (the encoder's tokens of those tubelets, (1, n, P, D))."""
        context = self.encoder.tokens(window[:, : context_tubelets * self.encoder.tubelet]).flatten(1, 2)
        t = target.flatten(1, 2)
        pred = self._predict(context, context.shape[1], t.shape[1])
        return float((pred.float() - F.layer_norm(t.float(), t.shape[-1:])).abs().mean())

    @torch.inference_mode()
    def surprise_by_context(self, clip: torch.Tensor) -> np.ndarray:
        """Windowed protocol: (windows, contexts) surprise of (T, 3, H, W) preprocessed frames."""
        if clip.shape[0] < self.window:
            raise ValueError(f"a clip of {clip.shape[0]} frames is shorter than the {self.window}-frame window")
        tub = self.encoder.tubelet
        out = []
        with torch.autocast(clip.device.type, dtype=torch.bfloat16, enabled=clip.device.type == "cuda"):
            for start in range(0, clip.shape[0] - self.window + 1, self.stride):
                w = clip[start : start + self.window].unsqueeze(0)
                full = self.encoder.tokens(w)  # (1, window / tubelet, P, D)
                out.append([self._error(w, c // tub, full[:, c // tub :]) for c in self.context_frames])
        return np.asarray(out)

    @torch.inference_mode()
    def surprise(self, clip: torch.Tensor) -> np.ndarray:
        """(T, 3, H, W) preprocessed frames -> surprise per window (windowed) or per step (next_tubelet)."""
        if self.protocol == "windowed":
            return self.surprise_by_context(clip).min(axis=1)
        tub, k = self.encoder.tubelet, self.context
        steps = clip.shape[0] // tub
        if steps <= k:
            raise ValueError(f"a clip of {steps} tubelets has nothing to predict after a context of {k}")
        out = []
        with torch.autocast(clip.device.type, dtype=torch.bfloat16, enabled=clip.device.type == "cuda"):
            for start in range(steps - k):
                w = clip[start * tub : (start + k + 1) * tub].unsqueeze(0)
                out.append(self._error(w, k, self.encoder.tokens(w)[:, -1:]))
        return np.asarray(out)

    def score(self, clip: torch.Tensor) -> dict[str, float]:
        s = self.surprise(clip)
        return {"max": float(s.max()), "mean": float(s.mean())}


def vjepa2_surprisal_scores(
    manifest, encoder: VJEPA2Encoder, clip: ClipSpec = ClipSpec(32), context: int = 2, protocol: str = "windowed"
) -> dict[str, dict[str, float]]:
    """``{"max": {video: score}, "mean": {...}}`` for every readable video of ``manifest``, sampled by
    ``clip`` (made even by the encoder) and preprocessed as the encoder is, on the device it is on.

    Short clips shrink the protocol to fit, with a warning: the windowed protocol's window becomes
    the clip (contexts longer than it are dropped), the next-tubelet context shrinks (as the
    fitted-predictor surprisal's does). A clip of a single tubelet leaves nothing to predict, and no
    scores are returned.
    """
    spec = encoder.clip_spec(clip)
    tub = encoder.tubelet
    steps = spec.num_frames // tub
    if steps < 2:
        log.warning("vjepa2 surprisal skipped: %d tubelet(s) per clip, nothing to predict", steps)
        return {}
    opts: dict = {"protocol": protocol}
    if protocol == "windowed":
        window = min(OFFICIAL_WINDOW, steps * tub)
        contexts = tuple(c for c in OFFICIAL_CONTEXTS if c < window) or (tub,)
        if window < OFFICIAL_WINDOW:
            log.warning(
                "vjepa2 surprisal: %d-frame clips are shorter than the official %d-frame window; "
                "window %d, contexts %s",
                spec.num_frames,
                OFFICIAL_WINDOW,
                window,
                contexts,
            )
        opts.update(window=window, context_frames=contexts)
    elif context >= steps:
        log.warning(
            "vjepa2 surprisal: context %d shrunk to %d tubelets to fit %d-frame clips",
            context,
            steps - 1,
            spec.num_frames,
        )
        context = steps - 1
    base = VJEPA2Surprisal(encoder, context=context, **opts)
    device = next(encoder.parameters()).device
    per = score_each_video(manifest, spec, lambda frames: base.score(encoder.preprocess(frames).to(device)))
    return {stat: {v: s[stat] for v, s in per.items()} for stat in STATS}
