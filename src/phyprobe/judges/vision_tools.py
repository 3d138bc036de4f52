"""VBench's six video-quality dimensions, Sci-VBench's "Vision Tools" (VT) proxy for perceptual fidelity.

Per-video formulas, normalisation constants and the 1-5 mapping follow VBench's per-dimension code and its scripts/constant.py:

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
  ``VT = 1 + 4 mean_d x_d`` (the recommended, unverified mapping of Sci-VBench's VT proxy), and the variant with
  VBench's dynamic-degree weight 0.5 beside it.

``mode="real"`` runs the published models from local weight files (DINO ViT-B/16, CLIP ViT-B/32,
RAFT, LAION aesthetic head on CLIP ViT-L/14, MUSIQ-SPAQ via pyiqa) and fails with the list of files to
fetch when one is missing; AMT-S (motion smoothness) has no packaged implementation, so real mode
says so instead of substituting unless ``standin_dims`` names it. ``mode="standin"`` runs the
model-free substitutes on OpenCV: HOG-style and colour-histogram consistency, flow-warped
midpoint smoothness, Farneback dynamic degree, colourfulness/contrast, Laplacian sharpness. They are
not VBench: every record, summary and report with a stand-in in it says "stand-in".
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

import cv2
import numpy as np

from ..baselines.motion import along_flow, flows
from ..data.manifest import Manifest
from .base import JudgeResult, cost_summary

log = logging.getLogger(__name__)

DIMENSIONS = (
    "subject_consistency",
    "background_consistency",
    "motion_smoothness",
    "dynamic_degree",
    "aesthetic_quality",
    "imaging_quality",
)
NORMALIZE = {
    "subject_consistency": (0.1462, 1.0),
    "background_consistency": (0.2615, 1.0),
    "motion_smoothness": (0.706, 0.9975),
    "dynamic_degree": (0.0, 1.0),
    "aesthetic_quality": (0.0, 1.0),
    "imaging_quality": (0.0, 1.0),
}
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
# stand-ins


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
    return np.stack(
        [
            cv2.calcHist(
                [cv2.cvtColor(f, cv2.COLOR_RGB2HSV)], [0, 1, 2], None, [8, 8, 8], [0, 180, 0, 256, 0, 256]
            ).ravel()
            for f in frames
        ]
    )


def _warp_midpoint(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The frame halfway between ``a`` and ``b``: each warped half-way along Farneback flow, averaged."""
    f = flows(np.stack([a, b]))[0]
    from_a, from_b = along_flow(a, -0.5 * f), along_flow(b, 0.5 * f)
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


def standin_raw(frames: np.ndarray, fps: float, dims=DIMENSIONS) -> dict[str, float]:
    """Raw per-video values of ``dims`` from the stand-ins (imaging already divided by 100)."""
    fns = {
        "subject_consistency": lambda: consistency(_hog(frames)),
        "background_consistency": lambda: consistency(_colour_hist(frames)),
        "motion_smoothness": lambda: interpolation_smoothness(frames, _warp_midpoint),
        "dynamic_degree": lambda: dynamic_degree(frames, fps, flows),
        "aesthetic_quality": lambda: _aesthetic_standin(frames),
        "imaging_quality": lambda: _imaging_standin(frames) / 100.0,
    }
    return {d: fns[d]() for d in dims}


# ---------------------------------------------------------------------------------------------
# real models


_IMAGENET = ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))
_CLIP = ((0.48145466, 0.4578275, 0.40821073), (0.26862954, 0.26130258, 0.27577711))


def _tensor(frames: np.ndarray):
    import torch

    return torch.from_numpy(np.ascontiguousarray(frames)).permute(0, 3, 1, 2).float() / 255.0


def _normalise(x, stats):
    import torch

    mean, std = (torch.tensor(v, dtype=x.dtype).view(1, 3, 1, 1) for v in stats)
    return (x - mean) / std


class RealModels:
    """VBench's models from local weight files (``files`` maps a dimension to its file names).

    Construction checks that every needed file is there and names what to fetch otherwise; the models
    themselves load on first use. ``*_arch`` exist so the loading code can be exercised on small
    architectures; the defaults are VBench's.
    """

    def __init__(
        self,
        weights_dir: str | os.PathLike | None,
        dims,
        device: str = "cpu",
        files: dict | None = None,
        dino_arch: str = "vit_base_patch16_224",
        raft_arch: str = "raft_large",
        clip_b_arch: str = "ViT-B-32",
        clip_l_arch: str = "ViT-L-14",
    ):
        self.dims = list(dims)
        self.files = {**WEIGHT_FILES, **(files or {})}
        self.root = Path(weights_dir) if weights_dir else None
        missing = [f for d in self.dims for f in self.files[d] if self.root is None or not (self.root / f).is_file()]
        problems = [f"  {f}: {WHERE.get(f, 'see docs/judges.md')}" for f in missing]
        if "motion_smoothness" in self.dims:
            problems.append(
                "  motion_smoothness needs the AMT-S interpolator, whose code (MCG-NKU/AMT, "
                "cfgs/AMT-S.yaml) is not packaged, so it cannot run here even with amt-s.pth"
            )
        if problems:
            lines = "\n".join(problems)
            raise VisionToolWeightsMissing(
                f"vision tools mode=real cannot run with weights_dir={weights_dir!r}:\n{lines}\n"
                "Use mode=standin (labelled stand-in in every output), or list the dimensions you cannot run "
                "in standin_dims (e.g. standin_dims=[motion_smoothness])."
            )
        if "imaging_quality" in self.dims:
            try:
                import pyiqa  # noqa: F401
            except ImportError:
                raise VisionToolWeightsMissing("imaging_quality (MUSIQ) needs `pip install pyiqa`") from None
        self.device = device
        self.archs = {"dino": dino_arch, "raft": raft_arch, "clip_b": clip_b_arch, "clip_l": clip_l_arch}
        self._models: dict = {}

    def _file(self, dim: str, i: int = 0) -> Path:
        return self.root / self.files[dim][i]

    def _model(self, name: str):
        if name not in self._models:
            self._models[name] = getattr(self, f"_load_{name}")().to(self.device).eval()
        return self._models[name]

    def _load_dino(self):
        import timm
        import torch

        model = timm.create_model(
            self.archs["dino"], pretrained=False, num_classes=0, global_pool="token", dynamic_img_size=True
        )
        state = torch.load(self._file("subject_consistency"), map_location="cpu", weights_only=True)
        model.load_state_dict({k: v for k, v in state.items() if not k.startswith("head.")})
        return model

    def _load_clip(self, arch: str, path: Path):
        import open_clip

        return open_clip.create_model(arch, pretrained=str(path), force_quick_gelu=True)  # OpenAI CLIP uses QuickGELU

    def _load_clip_b(self):
        return self._load_clip(self.archs["clip_b"], self._file("background_consistency"))

    def _load_clip_l(self):
        return self._load_clip(self.archs["clip_l"], self._file("aesthetic_quality"))

    def _load_aesthetic(self):
        import torch

        state = torch.load(self._file("aesthetic_quality", 1), map_location="cpu", weights_only=True)
        head = torch.nn.Linear(state["weight"].shape[1], 1)
        head.load_state_dict(state)
        return head

    def _load_raft(self):
        import torch
        from torchvision.models import optical_flow

        model = getattr(optical_flow, self.archs["raft"])(weights=None, progress=False)
        model.load_state_dict(torch.load(self._file("dynamic_degree"), map_location="cpu", weights_only=True))
        return model

    def _load_musiq(self):
        from pyiqa.archs.musiq_arch import MUSIQ

        return MUSIQ(pretrained_model_path=str(self._file("imaging_quality")))

    # -- per-dimension values ------------------------------------------------------------------

    def _clip_embed(self, name: str, frames):
        import torch
        import torch.nn.functional as F

        x = F.interpolate(
            _tensor(frames),
            scale_factor=224 / min(frames.shape[1:3]),
            mode="bicubic",
            align_corners=False,
            antialias=True,
        ).clamp(0, 1)
        h, w = x.shape[-2:]
        top, left = (h - 224) // 2, (w - 224) // 2
        x = _normalise(x[..., top : top + 224, left : left + 224], _CLIP)
        out, model = [], self._model(name)  # loaded outside inference mode, so its weights are ordinary tensors
        with torch.inference_mode():
            for i in range(0, len(x), 32):
                out.append(model.encode_image(x[i : i + 32].to(self.device)).float().cpu())
        return torch.cat(out)

    @staticmethod
    def dino_input(frames):
        """VBench's ``dino_transform(224)``: shorter side to 224 (no crop), ImageNet normalisation; then the
        remainder beyond a multiple of 16 px dropped, which DINO's stride-16 patch convolution ignores anyway."""
        import torch.nn.functional as F

        x = _tensor(frames)
        x = _normalise(
            F.interpolate(
                x, scale_factor=224 / min(x.shape[-2:]), mode="bilinear", align_corners=False, antialias=True
            ),
            _IMAGENET,
        )
        h, w = x.shape[-2:]
        return x[..., : h // 16 * 16, : w // 16 * 16]

    def subject_consistency(self, frames) -> float:
        import torch

        x, model = self.dino_input(frames), self._model("dino")
        with torch.inference_mode():
            feats = torch.cat([model(x[i : i + 16].to(self.device)).cpu() for i in range(0, len(x), 16)])
        return consistency(feats.numpy())

    def background_consistency(self, frames) -> float:
        return consistency(self._clip_embed("clip_b", frames).numpy())

    def aesthetic_quality(self, frames) -> float:
        import torch

        emb = self._clip_embed("clip_l", frames)
        emb, head = emb / emb.norm(dim=-1, keepdim=True), self._model("aesthetic")
        with torch.inference_mode():
            return float((head(emb.to(self.device)).squeeze(-1) / 10.0).mean())

    def _raft_flows(self, frames) -> np.ndarray:
        import torch
        import torch.nn.functional as F

        x = _tensor(frames) * 2.0 - 1.0
        h, w = x.shape[-2:]
        ph, pw = (-h) % 8, (-w) % 8  # RAFT's InputPadder: pad to a multiple of 8, flow kept padded as in VBench
        x = F.pad(x, [pw // 2, pw - pw // 2, ph // 2, ph - ph // 2], mode="replicate")
        raft = self._model("raft")
        with torch.inference_mode():
            out = [
                raft(a[None].to(self.device), b[None].to(self.device), num_flow_updates=20)[-1][0]
                for a, b in zip(x[:-1], x[1:])
            ]
        return torch.stack(out).permute(0, 2, 3, 1).cpu().numpy()

    def dynamic_degree(self, frames, fps: float) -> float:
        return dynamic_degree(frames, fps, self._raft_flows)

    def imaging_quality(self, frames) -> float:
        import torch
        import torch.nn.functional as F

        x = _tensor(frames)
        if max(x.shape[-2:]) > 512:  # VBench's default preprocessing mode "longer"
            x = F.interpolate(
                x, scale_factor=512 / max(x.shape[-2:]), mode="bilinear", align_corners=False, antialias=True
            )
        musiq = self._model("musiq")
        with torch.inference_mode():
            per_frame = [float(musiq(f[None].to(self.device))) for f in x]
        return float(np.mean(per_frame)) / 100.0

    def raw(self, frames: np.ndarray, fps: float) -> dict[str, float]:
        return {
            d: (self.dynamic_degree(frames, fps) if d == "dynamic_degree" else getattr(self, d)(frames))
            for d in self.dims
        }


# ---------------------------------------------------------------------------------------------
# the judge


class VisionTools:
    """The VT proxy as an evaluator: headline VT on 1-5 (higher = better quality), violation (5 - VT) / 4.

    ``mode="standin"`` runs every dimension on its stand-in; ``mode="real"`` runs VBench's models, except
    the dimensions listed in ``standin_dims``, which use their stand-ins. Any stand-in makes the whole
    evaluator a stand-in in its name and outputs.
    """

    def __init__(
        self,
        mode: str = "standin",
        weights_dir: str | None = None,
        max_frames: int = 64,
        max_side: int | None = 256,
        standin_dims: list[str] | None = None,
        device: str = "cpu",
        name: str | None = None,
        **real_kwargs,
    ):
        if mode not in ("standin", "real"):
            raise ValueError(f"vision tools mode must be 'standin' or 'real', got {mode!r}")
        unknown = set(standin_dims or []) - set(DIMENSIONS)
        if unknown:
            raise ValueError(f"standin_dims: unknown dimension(s) {sorted(unknown)}; known: {list(DIMENSIONS)}")
        self.standin_dims = (
            list(DIMENSIONS) if mode == "standin" else [d for d in DIMENSIONS if d in (standin_dims or [])]
        )
        self.mode, self.max_frames, self.max_side = mode, max_frames, max_side
        self.standin = bool(self.standin_dims)
        real = [d for d in DIMENSIONS if d not in self.standin_dims]
        self.models = RealModels(weights_dir, real, device=device, **real_kwargs) if real else None
        label = "stand-in" if not real else (f"{', '.join(self.standin_dims)} stand-in" if self.standin else "")
        self.name = name or (f"vision_tools ({label})" if label else "vision_tools")

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
        raw = standin_raw(frames, fps, self.standin_dims)
        if self.models is not None:
            raw.update(self.models.raw(frames, fps))
        x = normalise(raw)
        return {"raw": raw, "normalised": x, **vt_scores(raw)}

    def judge_manifest(self, manifest: Manifest) -> JudgeResult:
        from ..io.video import VideoDecodeError

        t0 = time.perf_counter()
        records, scores = {}, {}

        def method(d):
            return STANDIN_METHODS[d] if d in self.standin_dims else "VBench model"

        for vid, rel in zip(manifest.videos["id"], manifest.videos["path"]):
            t = time.perf_counter()
            rec = {
                "id": vid,
                "path": rel,
                "judge": self.name,
                "model": "VBench models" if self.models else "stand-in (OpenCV)",
                "score": None,
                "violation_score": None,
                "dimensions": {},
                "failures": [],
                "cost": {
                    "calls": 0,
                    "cached_calls": 0,
                    "prompt_tokens": 0,
                    "completion_tokens": 0,
                    "model_seconds": 0.0,
                },
            }
            try:
                r = self.score_video(manifest.video_path(rel))
            except VideoDecodeError as e:
                rec["failures"].append({"item": "decode", "seed": None, "kind": "decode", "error": str(e), "raw": None})
            else:
                rec["dimensions"] = {
                    d: {"score": r["raw"][d], "normalised": r["normalised"][d], "method": method(d)} for d in DIMENSIONS
                }
                rec["score"], rec["vt_dd_half"] = r["vt"], r["vt_dd_half"]
                rec["violation_score"] = (5.0 - r["vt"]) / 4.0
                scores[vid] = rec["violation_score"]
            rec["cost"]["model_seconds"] = time.perf_counter() - t
            records[vid] = rec
        return JudgeResult(
            self.name, records, scores, cost_summary(records, time.perf_counter() - t0), standin=self.standin
        )
