"""Feature-space surprisal with the same frozen encoder the probe uses.

The V-JEPA intuitive-physics baseline (Garrido et al. 2025; docs/encoders.md) scores a video by how badly a predictor
trained on natural video predicts the next features. Without V-JEPA's own predictor we fit one:
ridge regression from the ``context`` previous frames' features to the next frame's, on plausible
clips only. Targets are layer-normalised per frame as V-JEPA does (``normalize_targets``), and the
error is L1 averaged over channels, so the surprise is comparable across encoders of different width.
A video's surprise series is smoothed over ``window`` steps, then summarised by its max (the V-JEPA
primary: one brief violation is enough) and its mean.

The ridge is fitted from streamed sufficient statistics (the windows' Gram matrix and cross-products, summed clip by
clip), the same solution as fitting it on every window at once: memory is ``(context x D)^2`` floats however many
plausible clips there are (a million clips of 32 steps no longer stack ~1 MB of windows each).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import scipy.linalg


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
        self.context, self.window, self.alpha = context, window, alpha
        self.dim: int | None = None
        self.coef: np.ndarray | None = None  # (context x D, D)
        self.intercept: np.ndarray | None = None  # (D,)

    def _windows(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Inputs (the ``context`` previous normalised frames, concatenated) and next-frame targets."""
        k = self.context
        if len(z) <= k:
            raise ValueError(f"a sequence of {len(z)} frames has no next frame after a context of {k}")
        z = _layer_norm(z)
        x = np.concatenate([z[i : len(z) - k + i] for i in range(k)], axis=1)
        return x, z[k:]

    def fit(self, sequences: Iterable) -> "SurprisalBaseline":
        """Fit the next-frame predictor on plausible clips' (T, D) feature sequences, read one at a time (an
        iterator keeps one clip in memory): ridge with an unpenalised intercept, solved on the centred normal
        equations (scikit-learn's ``Ridge`` solution)."""
        gram = cross = sx = sy = None
        n = 0
        for seq in sequences:
            x, y = self._windows(_as_array(seq))
            if gram is None:
                gram, cross = np.zeros((x.shape[1], x.shape[1])), np.zeros((x.shape[1], y.shape[1]))
                sx, sy = np.zeros(x.shape[1]), np.zeros(y.shape[1])
            elif y.shape[1] != cross.shape[1]:
                raise ValueError(f"feature width {y.shape[1]} differs from the first clip's {cross.shape[1]}")
            gram += x.T @ x
            cross += x.T @ y
            sx += x.sum(axis=0)
            sy += y.sum(axis=0)
            n += len(x)
        if n == 0:
            raise ValueError("SurprisalBaseline.fit needs at least one plausible clip")
        mx, my = sx / n, sy / n
        centred = gram - n * np.outer(mx, mx) + self.alpha * np.eye(len(mx))
        self.coef = scipy.linalg.solve(centred, cross - n * np.outer(mx, my), assume_a="pos")
        self.intercept = my - mx @ self.coef
        self.dim = len(my)
        return self

    def surprise(self, sequence) -> np.ndarray:
        """Per-step L1 prediction error, smoothed over ``window`` steps (length T - context - window + 1)."""
        if self.dim is None:
            raise RuntimeError("SurprisalBaseline.fit must be called before scoring")
        x, y = self._windows(_as_array(sequence))
        if y.shape[1] != self.dim:
            raise ValueError(f"feature width {y.shape[1]} differs from the fitted {self.dim}")
        err = np.abs(x @ self.coef + self.intercept - y).mean(axis=1)
        w = min(self.window, len(err))
        return np.convolve(err, np.ones(w) / w, mode="valid")

    def score(self, sequence) -> dict[str, float]:
        """Two violation scores for one video: the worst window and the average one."""
        s = self.surprise(sequence)
        return {"max": float(s.max()), "mean": float(s.mean())}
