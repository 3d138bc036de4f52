"""VBench's six video-quality dimensions, Sci-VBench's "Vision Tools" (VT) proxy for perceptual fidelity.

Per-video formulas, normalisation constants and the 1-5 mapping follow judges.md §1.2-1.4:

- subject / background consistency: ``s_t = (max(0, cos(f_{t-1}, f_t)) + max(0, cos(f_1, f_t))) / 2``,
  mean over t = 2..T, on per-frame features;
- motion smoothness: keep frames 0, 2, 4, ..., predict each dropped odd frame from its two even
  neighbours, score ``(255 - mean |I - I_hat|) / 255``;
- dynamic degree: frames at ~8 fps (``interval = max(1, round(fps / 8))``), per consecutive pair the
  mean of the top 5 % flow magnitudes, dynamic iff at least ``round(4 N / 16)`` pairs exceed
  ``6 min(H, W) / 256``;
- aesthetic quality: per-frame score / 10, mean over frames; imaging quality: per-frame 0-100, mean,
  divided by 100 here (VBench divides only the benchmark aggregate);
- ``x_d = clip((s_d - Min_d) / (Max_d - Min_d), 0, 1)`` with VBench's ``NORMALIZE_DIC``;
  ``VT = 1 + 4 mean_d x_d`` (the recommended, unverified mapping of §1.4), and the variant with
  VBench's dynamic-degree weight 0.5 beside it.

``mode="real"`` runs the published models from local weight files (DINO ViT-B/16, CLIP ViT-B/32,
RAFT, LAION aesthetic head on CLIP ViT-L/14, MUSIQ-SPAQ via pyiqa) and fails with the list of files to
fetch when one is missing; AMT-S (motion smoothness) has no packaged implementation, so real mode
says so instead of substituting. ``mode="standin"`` runs the model-free substitutes of §1.5 on
OpenCV: HOG and colour-histogram consistency, flow-warped midpoint smoothness, Farneback dynamic
degree, colourfulness/contrast, Laplacian sharpness. They are not VBench: every record, summary and
report they produce says "stand-in".
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

import cv2
import numpy as np

from ..baselines.motion import flows
from ..data.manifest import Manifest
from .base import JudgeResult, cost_summary

log = logging.getLogger(__name__)

DIMENSIONS = ("subject_consistency", "background_consistency", "motion_smoothness", "dynamic_degree",
              "aesthetic_quality", "imaging_quality")
NORMALIZE = {"subject_consistency": (0.1462, 1.0), "background_consistency": (0.2615, 1.0),
             "motion_smoothness": (0.706, 0.9975), "dynamic_degree": (0.0, 1.0), "aesthetic_quality": (0.0, 1.0),
             "imaging_quality": (0.0, 1.0)}
DIM_WEIGHT = {d: (0.5 if d == "dynamic_degree" else 1.0) for d in DIMENSIONS}
WEIGHT_FILES = {
    "subject_consistency": ["dino_vitbase16_pretrain.pth"],
    "background_consistency": ["clip_vit_b_32.bin"],
    "motion_smoothness": ["amt-s.pth"],
    "dynamic_degree": ["raft_large_C_T_V2-1bb1363a.pth"],
    "aesthetic_quality": ["clip_vit_l_14.bin", "sa_0_4_vit_l_14_linear.pth"],
    "imaging_quality": ["musiq_spaq_ckpt-358bb6af.pth"],
}
WHERE = {
    "dino_vitbase16_pretrain.pth": "DINO ViT-B/16 (dl.fbaipublicfiles.com/dino/dino_vitbase16_pretrain/)",
    "clip_vit_b_32.bin": "OpenAI CLIP ViT-B/32 as an open_clip checkpoint (hf timm/vit_base_patch32_clip_224.openai, open_clip_pytorch_model.bin)",
    "amt-s.pth": "AMT-S (MCG-NKU/AMT); also needs the AMT code, which is not packaged",
    "raft_large_C_T_V2-1bb1363a.pth": "torchvision RAFT-large C_T_V2 (download.pytorch.org/models/)",
    "clip_vit_l_14.bin": "OpenAI CLIP ViT-L/14 as an open_clip checkpoint (hf timm/vit_large_patch14_clip_224.openai)",
    "sa_0_4_vit_l_14_linear.pth": "LAION aesthetic predictor v1 (LAION-AI/aesthetic-predictor)",
    "musiq_spaq_ckpt-358bb6af.pth": "MUSIQ SPAQ checkpoint for pyiqa (chaofengc/IQA-PyTorch releases); needs `pip install pyiqa`",
}
STANDIN_METHODS = {
    "subject_consistency": "stand-in: HOG-style gradient-orientation consistency",
    "background_consistency": "stand-in: HSV colour-histogram consistency",
    "motion_smoothness": "stand-in: Farneback flow-warped midpoint instead of AMT-S",
    "dynamic_degree": "stand-in: Farneback flow instead of RAFT",
    "aesthetic_quality": "stand-in: colourfulness + RMS contrast instead of the LAION head",
    "imaging_quality": "stand-in: Laplacian sharpness instead of MUSIQ",
}


class VisionToolWeightsMissing(FileNotFoundError):
    """Real-model mode was asked for but weight files are absent; the message lists what to fetch."""


# ---------------------------------------------------------------------------------------------
# VBench's formulas, shared by the real models and the stand-ins


def consistency(features: np.ndarray) -> float:
    """VBench subject/background consistency of per-frame features (T, D)."""
    f = np.asarray(features, dtype=np.float64)
    f = f / np.maximum(np.linalg.norm(f, axis=1, keepdims=True), 1e-12)
    if len(f) < 2:
        return 1.0
    prev = np.maximum(0.0, np.sum(f[1:] * f[:-1], axis=1))
    first = np.maximum(0.0, f[1:] @ f[0])
    return float(np.mean((prev + first) / 2))


def interpolation_smoothness(frames: np.ndarray, interpolate) -> float:
    """VBench motion smoothness: odd frames predicted from even neighbours by ``interpolate(a, b)``."""
    even = frames[0::2]
    odd = frames[1::2][: len(even) - 1]
    if len(odd) == 0:
        return 1.0
    errs = [np.mean(cv2.absdiff(o, interpolate(a, b))) for o, a, b in zip(odd, even[:-1], even[1:])]
    return float((255.0 - np.mean(errs)) / 255.0)


def dynamic_degree(frames: np.ndarray, fps: float, flow_fn) -> float:
    """1.0 if the video is dynamic by VBench's rule, else 0.0; ``flow_fn(frames) -> (N-1, H, W, 2)``."""
    interval = max(1, round(fps / 8))
    sampled = frames[::interval]
    if len(sampled) < 2:
        return 0.0
    h, w = sampled.shape[1:3]
    thres = 6.0 * min(h, w) / 256.0
    count_num = round(4 * len(sampled) / 16.0)
    mags = []
    for flo in flow_fn(sampled):
        rad = np.sqrt(flo[..., 0] ** 2 + flo[..., 1] ** 2).ravel()
        cut = max(1, int(rad.size * 0.05))
        mags.append(float(np.mean(np.sort(rad)[::-1][:cut])))
    return float(sum(m > thres for m in mags) >= count_num)


def normalise(raw: dict[str, float]) -> dict[str, float]:
    return {d: float(np.clip((raw[d] - NORMALIZE[d][0]) / (NORMALIZE[d][1] - NORMALIZE[d][0]), 0.0, 1.0)) for d in raw}


def vt_scores(raw: dict[str, float]) -> dict[str, float]:
    """``VT`` (plain mean) and ``VT_dd_half`` (dynamic degree weighted 0.5) on 1-5."""
    x = normalise(raw)
    plain = 1 + 4 * float(np.mean([x[d] for d in DIMENSIONS]))
    weighted = 1 + 4 * sum(x[d] * DIM_WEIGHT[d] for d in DIMENSIONS) / sum(DIM_WEIGHT.values())
    return {"vt": plain, "vt_dd_half": weighted}


# ---------------------------------------------------------------------------------------------
# stand-ins (judges.md §1.5)


def _gray(frames):
    return np.stack([cv2.cvtColor(f, cv2.COLOR_RGB2GRAY) for f in frames])


def _hog(frames, size: int = 64, cell: int = 8, bins: int = 9) -> np.ndarray:
    """HOG-style descriptor per frame: magnitude-weighted histograms of unsigned gradient orientation in
    8x8-pixel cells of the frame shrunk to 64x64 (OpenCV 5 no longer ships ``HOGDescriptor``)."""
    out = []
    for g in _gray(frames):
        g = cv2.resize(g, (size, size), interpolation=cv2.INTER_AREA).astype(np.float32)
        gx, gy = cv2.Sobel(g, cv2.CV_32F, 1, 0), cv2.Sobel(g, cv2.CV_32F, 0, 1)
        mag, ang = np.hypot(gx, gy), np.mod(np.degrees(np.arctan2(gy, gx)), 180.0)
        b = np.minimum((ang / (180.0 / bins)).astype(int), bins - 1)
        c = size // cell
        cells = (np.arange(size)[:, None] // cell) * c + np.arange(size)[None, :] // cell
        out.append(np.bincount((cells * bins + b).ravel(), weights=mag.ravel(), minlength=c * c * bins))
    return np.stack(out)


def _colour_hist(frames) -> np.ndarray:
    return np.stack([cv2.calcHist([cv2.cvtColor(f, cv2.COLOR_RGB2HSV)], [0, 1, 2], None, [8, 8, 8],
                                  [0, 180, 0, 256, 0, 256]).ravel() for f in frames])


def _warp_midpoint(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The frame halfway between ``a`` and ``b``: each warped half-way along Farneback flow, averaged."""
    f = flows(np.stack([a, b]))[0]
    h, w = f.shape[:2]
    gx, gy = np.meshgrid(np.arange(w, dtype=np.float32), np.arange(h, dtype=np.float32))
    from_a = cv2.remap(a, gx - 0.5 * f[..., 0], gy - 0.5 * f[..., 1], cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    from_b = cv2.remap(b, gx + 0.5 * f[..., 0], gy + 0.5 * f[..., 1], cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    return ((from_a.astype(np.uint16) + from_b) // 2).astype(np.uint8)


def _aesthetic_standin(frames) -> float:
    """Per frame 0.5 min(1, M / 109) + 0.5 min(1, RMS contrast / 0.3), M the Hasler-Süsstrunk colourfulness
    (109 = "extremely colourful" in their scale); mean over frames. A weak proxy, nothing more."""
    vals = []
    for f in frames.astype(np.float64):
        rg = f[..., 0] - f[..., 1]
        yb = 0.5 * (f[..., 0] + f[..., 1]) - f[..., 2]
        m = np.hypot(rg.std(), yb.std()) + 0.3 * np.hypot(rg.mean(), yb.mean())
        contrast = (f.mean(axis=-1) / 255.0).std()
        vals.append(0.5 * min(1.0, m / 109.0) + 0.5 * min(1.0, contrast / 0.3))
    return float(np.mean(vals))


def _imaging_standin(frames) -> float:
    """0-100 per frame: 100 (1 - exp(-var(Laplacian) / 100)), mean over frames (blur lowers it)."""
    return float(np.mean([100.0 * (1.0 - np.exp(-cv2.Laplacian(g, cv2.CV_64F).var() / 100.0)) for g in _gray(frames)]))


def standin_raw(frames: np.ndarray, fps: float) -> dict[str, float]:
    """The six raw per-video values from the stand-ins (imaging already divided by 100)."""
    return {
        "subject_consistency": consistency(_hog(frames)),
        "background_consistency": consistency(_colour_hist(frames)),
        "motion_smoothness": interpolation_smoothness(frames, _warp_midpoint),
        "dynamic_degree": dynamic_degree(frames, fps, flows),
        "aesthetic_quality": _aesthetic_standin(frames),
        "imaging_quality": _imaging_standin(frames) / 100.0,
    }


# ---------------------------------------------------------------------------------------------
# real models


class RealModels:
    """VBench's models loaded from ``weights_dir``; constructing it checks that every file is there."""

    def __init__(self, weights_dir: str | os.PathLike | None, device: str = "cpu"):
        root = Path(weights_dir) if weights_dir else None
        missing = [f for d in DIMENSIONS for f in WEIGHT_FILES[d] if root is None or not (root / f).is_file()]
        if missing or root is None:
            lines = "\n".join(f"  {f}: {WHERE[f]}" for f in missing)
            raise VisionToolWeightsMissing(
                f"vision tools mode=real needs these weight files in weights_dir={weights_dir!r}:\n{lines}\n"
                "Without them use mode=standin (labelled stand-in in every output).")
        raise VisionToolWeightsMissing(
            "motion_smoothness needs the AMT-S interpolator, whose code (MCG-NKU/AMT, cfgs/AMT-S.yaml) is not "
            "packaged; vision tools mode=real cannot run it here. Use mode=standin.")


# ---------------------------------------------------------------------------------------------
# the judge


class VisionTools:
    """The VT proxy as an evaluator: headline VT on 1-5 (higher = better quality), violation (5 - VT) / 4."""

    def __init__(self, mode: str = "standin", weights_dir: str | None = None, max_frames: int = 64,
                 max_side: int | None = 256, name: str | None = None):
        if mode not in ("standin", "real"):
            raise ValueError(f"vision tools mode must be 'standin' or 'real', got {mode!r}")
        self.mode, self.max_frames, self.max_side = mode, max_frames, max_side
        self.standin = mode == "standin"
        self.name = name or ("vision_tools (stand-in)" if self.standin else "vision_tools")
        self.models = None if self.standin else RealModels(weights_dir)

    def _frames(self, path: Path) -> tuple[np.ndarray, float]:
        from ..io.video import ClipSpec, decode_clip, probe

        info = probe(path)
        n = max(2, min(info["num_frames"], self.max_frames))
        frames = decode_clip(path, ClipSpec(n)).frames
        fps = n / max(info["duration"], 1e-6)
        h, w = frames.shape[1:3]
        if self.max_side and max(h, w) > self.max_side:
            s = self.max_side / max(h, w)
            size = (max(2, round(w * s)), max(2, round(h * s)))
            frames = np.stack([cv2.resize(f, size, interpolation=cv2.INTER_AREA) for f in frames])
        return frames, fps

    def score_video(self, path: Path) -> dict:
        frames, fps = self._frames(path)
        raw = standin_raw(frames, fps)
        x = normalise(raw)
        return {"raw": raw, "normalised": x, **vt_scores(raw)}

    def judge_manifest(self, manifest: Manifest) -> JudgeResult:
        from ..io.video import VideoDecodeError

        t0 = time.perf_counter()
        records, scores = {}, {}
        method = (lambda d: STANDIN_METHODS[d]) if self.standin else (lambda d: "VBench model")
        for vid, rel in zip(manifest.videos["id"], manifest.videos["path"]):
            t = time.perf_counter()
            rec = {"id": vid, "path": rel, "judge": self.name, "model": "stand-in (OpenCV)" if self.standin else "VBench",
                   "score": None, "violation_score": None, "dimensions": {}, "failures": [],
                   "cost": {"calls": 0, "cached_calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "model_seconds": 0.0}}
            try:
                r = self.score_video(manifest.video_path(rel))
            except VideoDecodeError as e:
                rec["failures"].append({"item": "decode", "seed": None, "kind": "decode", "error": str(e), "raw": None})
            else:
                rec["dimensions"] = {d: {"score": r["raw"][d], "normalised": r["normalised"][d], "method": method(d)}
                                     for d in DIMENSIONS}
                rec["score"], rec["vt_dd_half"] = r["vt"], r["vt_dd_half"]
                rec["violation_score"] = (5.0 - r["vt"]) / 4.0
                scores[vid] = rec["violation_score"]
            rec["cost"]["model_seconds"] = time.perf_counter() - t
            records[vid] = rec
        return JudgeResult(self.name, records, scores, cost_summary(records, time.perf_counter() - t0),
                           standin=self.standin)
