"""Feature-space surprisal with the same frozen encoder the probe uses.

The V-JEPA intuitive-physics baseline (Garrido et al. 2025; docs/encoders.md) scores a video by how badly a predictor
trained on natural video predicts the next features. Without V-JEPA's own predictor we fit one:
ridge regression from the ``context`` previous frames' features to the next frame's, on plausible
clips only. Targets are layer-normalised per frame as V-JEPA does (``normalize_targets``), and the
error is L1 averaged over channels, so the surprise is comparable across encoders of different width.
A video's surprise series is smoothed over ``window`` steps, then summarised by its max (the V-JEPA
primary: one brief violation is enough) and its mean.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sklearn.linear_model import Ridge


def _as_array(x) -> np.ndarray:
    """(T, D) float64 from a numpy array or a (CPU or GPU) torch tensor."""
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    a = np.asarray(x, dtype=np.float64)
    if a.ndim != 2:
        raise ValueError(f"expected a (T, D) feature sequence, got shape {a.shape}")
    return a


def _layer_norm(z: np.ndarray) -> np.ndarray:
    return (z - z.mean(axis=1, keepdims=True)) / (z.std(axis=1, keepdims=True) + 1e-6)


class SurprisalBaseline:
    """``SurprisalBaseline(context=2).fit(plausible_sequences).score(sequence) -> {"max", "mean"}``."""

    def __init__(self, context: int = 2, window: int = 1, alpha: float = 1.0):
        if context < 1 or window < 1:
            raise ValueError(f"context and window must be >= 1, got context={context}, window={window}")
        self.context, self.window = context, window
        self.model = Ridge(alpha=alpha)
        self.dim: int | None = None

    def _windows(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Inputs (the ``context`` previous normalised frames, concatenated) and next-frame targets."""
        k = self.context
        if len(z) <= k:
            raise ValueError(f"a sequence of {len(z)} frames has no next frame after a context of {k}")
        z = _layer_norm(z)
        x = np.concatenate([z[i : len(z) - k + i] for i in range(k)], axis=1)
        return x, z[k:]

    def fit(self, sequences: Sequence) -> "SurprisalBaseline":
        """Fit the next-frame predictor on plausible clips' (T, D) feature sequences."""
        xs, ys = zip(*(self._windows(_as_array(s)) for s in sequences))
        self.dim = ys[0].shape[1]
        self.model.fit(np.concatenate(xs), np.concatenate(ys))
        return self

    def surprise(self, sequence) -> np.ndarray:
        """Per-step L1 prediction error, smoothed over ``window`` steps (length T - context - window + 1)."""
        if self.dim is None:
            raise RuntimeError("SurprisalBaseline.fit must be called before scoring")
        x, y = self._windows(_as_array(sequence))
        if y.shape[1] != self.dim:
            raise ValueError(f"feature width {y.shape[1]} differs from the fitted {self.dim}")
        err = np.abs(self.model.predict(x) - y).mean(axis=1)
        w = min(self.window, len(err))
        return np.convolve(err, np.ones(w) / w, mode="valid")

    def score(self, sequence) -> dict[str, float]:
        """Two violation scores for one video: the worst window and the average one."""
        s = self.surprise(sequence)
        return {"max": float(s.max()), "mean": float(s.mean())}
