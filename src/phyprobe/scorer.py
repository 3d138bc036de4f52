"""The exported scorer: a directory anyone can load to turn videos into violation scores in [0, 1].

Layout::

    model.safetensors   head weights and its input-normalisation buffers
    config.json         encoder (registry name, factory options, fingerprint), clip spec, feature
                        dtype, pooling, head size, code version and training summary

The encoder is rebuilt from the registry and its fingerprint checked against the one recorded at
export, so a scorer can never silently run on different encoder weights or preprocessing. Features
pass through the same storage dtype as the training cache, which is what makes the exported scorer
reproduce the scores computed during training.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Iterable

import numpy as np
import torch
from safetensors.torch import load_file, save_file

from .encoders import FrozenEncoder, from_config
from .head import PhyProbeHead
from .io.video import ClipSpec, VideoDecodeError, decode_clip
from .runinfo import atomic_write_json, code_version

FORMAT = "phyprobe-scorer/1"


def export_scorer(out_dir: str | Path, encoder: FrozenEncoder, head: PhyProbeHead, clip: ClipSpec,
                  feature_dtype: str, head_config: dict, extra: dict | None = None) -> Path:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tensors = {k: v.detach().cpu().contiguous() for k, v in head.state_dict().items()}
    tmp = out / "model.safetensors.tmp"
    save_file(tensors, str(tmp), metadata={"format": FORMAT})
    tmp.replace(out / "model.safetensors")
    atomic_write_json(out / "config.json", {
        "format": FORMAT,
        "encoder": {"name": encoder.name, "kwargs": encoder.factory_kwargs, "fingerprint": encoder.fingerprint(),
                    "describe": encoder.describe()},
        "clip": clip.to_dict(),
        "feature_dtype": feature_dtype,
        "head": head_config,
        "code": code_version(),
        **(extra or {}),
    })
    return out


class Scorer:
    """Frozen encoder + trained head. ``score(video)`` -> float in [0, 1] (0 = plausible)."""

    def __init__(self, encoder: FrozenEncoder, head: PhyProbeHead, clip: ClipSpec, feature_dtype: str = "float16",
                 config: dict | None = None, batch_size: int = 8):
        self.encoder, self.head, self.clip = encoder, head.eval(), clip
        self.feature_dtype = getattr(torch, feature_dtype)
        self.config = config or {}
        self.batch_size = batch_size

    @classmethod
    def from_pretrained(cls, path: str | Path, device: str = "cpu", check_fingerprint: bool = True) -> "Scorer":
        path = Path(path)
        cfg_file = path / "config.json"
        if not cfg_file.is_file():
            raise FileNotFoundError(f"{path}: not a phyprobe scorer directory (no config.json)")
        cfg = json.loads(cfg_file.read_text())
        if cfg.get("format") != FORMAT:
            raise ValueError(f"{cfg_file}: unsupported scorer format {cfg.get('format')!r}, expected {FORMAT!r}")
        enc = from_config(cfg["encoder"]["name"], **cfg["encoder"]["kwargs"])
        if check_fingerprint and enc.fingerprint() != cfg["encoder"]["fingerprint"]:
            raise ValueError(f"{cfg_file}: encoder {enc.name!r} rebuilt here differs from the one the scorer was trained "
                             f"with (fingerprint {enc.fingerprint()} != {cfg['encoder']['fingerprint']}): "
                             f"different weights or preprocessing")
        h = cfg["head"]
        head = PhyProbeHead(h["feature_dim"], stats=tuple(h["stats"]), hidden=h["hidden"], dropout=h.get("dropout", 0.0))
        head.load_state_dict(load_file(str(path / "model.safetensors")))
        return cls(enc.to(device), head.to(device), ClipSpec(**cfg["clip"]), cfg["feature_dtype"], cfg)

    @property
    def device(self) -> torch.device:
        return next(self.head.parameters()).device

    def _clip_frames(self, video: str | Path) -> torch.Tensor:
        return self.encoder.preprocess(decode_clip(video, self.encoder.clip_spec(self.clip)).frames)

    @torch.inference_mode()
    def head_scores(self, feats: torch.Tensor) -> torch.Tensor:
        """Raw scores from encoder features, through the storage dtype the head was trained on."""
        return self.head(feats.to(self.feature_dtype).float().to(self.device))

    @torch.inference_mode()
    def score_raw_many(self, videos: Iterable[str | Path]) -> list[float | VideoDecodeError]:
        """Raw (unclipped) scores; an unreadable video yields its VideoDecodeError in its place."""
        videos = list(videos)
        out: list = [None] * len(videos)
        batch: list[tuple[int, torch.Tensor]] = []

        def flush():
            if batch:
                x = torch.stack([b[1] for b in batch]).to(self.device)
                s = self.head_scores(self.encoder(x)).cpu().tolist()
                for (i, _), v in zip(batch, s):
                    out[i] = v
                batch.clear()

        for i, v in enumerate(videos):
            try:
                batch.append((i, self._clip_frames(v)))
            except VideoDecodeError as e:
                out[i] = e
            if len(batch) >= self.batch_size:
                flush()
        flush()
        return out

    def score(self, video: str | Path) -> float:
        s = self.score_raw_many([video])[0]
        if isinstance(s, Exception):
            raise s
        return float(np.clip(s, 0.0, 1.0))


def add_cli(sub) -> None:
    p = sub.add_parser("score", help="score videos with an exported scorer: one score in [0, 1] per video")
    p.add_argument("scorer", type=Path, help="exported scorer directory")
    p.add_argument("videos", nargs="+", type=Path)
    p.add_argument("--json", action="store_true", help="JSON lines with 'video' and 'score' (and 'raw_score')")
    p.add_argument("--batch-size", type=int, default=8)
    p.set_defaults(func=_cli)


def _cli(args) -> int:
    scorer = Scorer.from_pretrained(args.scorer)
    scorer.batch_size = args.batch_size
    failed = 0
    for video, s in zip(args.videos, scorer.score_raw_many(args.videos)):
        if isinstance(s, Exception):
            failed += 1
            print(f"error: {s}", file=sys.stderr)
            if args.json:
                print(json.dumps({"video": str(video), "error": s.reason}))
            continue
        clipped = float(np.clip(s, 0.0, 1.0))
        if args.json:
            print(json.dumps({"video": str(video), "score": clipped, "raw_score": s}))
        else:
            print(f"{clipped:.4f}\t{video}")
    return 1 if failed else 0
