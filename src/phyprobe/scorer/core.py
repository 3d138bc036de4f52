"""The exported scorer: a directory anyone can load to turn videos into violation scores in [0, 1].

Layout::

    model.safetensors   head weights and its input-normalisation buffers
    encoder/<option>/   a copy of each local weights directory the encoder was built from (a fitted
                        dynamics model), so the scorer does not depend on the training machine's paths
    config.json         encoder (registry name, factory options, fingerprint), clip spec, reading (how a
                        video longer than the clip is read: phyprobe.scorer.reading), feature dtype,
                        pooling, head size, code version and training summary
    README.md           model card (written by ``save_pretrained``)

The encoder is rebuilt from the registry and its fingerprint checked against the one recorded at
export, so a scorer can never silently run on different encoder weights or preprocessing. Features
pass through the same storage dtype as the training cache, which is what makes the exported scorer
reproduce the scores computed during training.

A score is only ever reported finite: a head that outputs NaN or inf (broken weights) yields a
per-video :class:`NonFiniteScoreError`, never ``NaN`` in a result.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Iterable, Iterator

import numpy as np
import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from ..encoders import FrozenEncoder, from_config
from ..errors import UserError
from ..head import PhyProbeHead
from ..io.video import ClipSpec, VideoDecodeError, decode_clip, probe
from ..runinfo import atomic_write_json, code_version
from .names import BUNDLE, CONFIG, FORMAT, WEIGHTS
from .reading import Reading


class ScorerLoadError(UserError, ValueError):
    """A scorer directory (or Hub repository) cannot be loaded; the message names the file and why."""


class NonFiniteScoreError(RuntimeError):
    """The head gave NaN or inf for a video: reported in its place, like an unreadable video."""

    def __init__(self, path: str, value: float):
        self.path, self.value = str(path), value
        self.reason = f"non-finite score ({value}) from the scorer's head: its weights are broken"
        super().__init__(f"{path}: {self.reason}")


def export_scorer(
    out_dir: str | Path,
    encoder: FrozenEncoder,
    head: PhyProbeHead,
    clip: ClipSpec,
    feature_dtype: str,
    head_config: dict,
    extra: dict | None = None,
    reading: Reading | None = None,
) -> Path:
    """Write a scorer directory; ``reading`` is how its videos are to be read (default: windows of the clip)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tensors = {k: v.detach().cpu().contiguous() for k, v in head.state_dict().items()}
    tmp = out / (WEIGHTS + ".tmp")
    save_file(tensors, str(tmp), metadata={"format": FORMAT})
    tmp.replace(out / WEIGHTS)
    kwargs, bundled = _bundle_encoder_files(out, encoder)
    atomic_write_json(
        out / CONFIG,
        {
            "format": FORMAT,
            "encoder": {
                "name": encoder.name,
                "kwargs": kwargs,
                "bundled": bundled,
                "fingerprint": encoder.fingerprint(),
                "describe": encoder.describe(),
            },
            "clip": clip.to_dict(),
            "reading": (reading or Reading()).to_dict(),
            "feature_dtype": feature_dtype,
            "head": head_config,
            "code": code_version(),
            **(extra or {}),
        },
    )
    return out


def _bundle_encoder_files(out: Path, encoder: FrozenEncoder) -> tuple[dict, list[str]]:
    """Copy each local directory the encoder's options name into ``out/encoder/<option>`` (atomically:
    a copy beside it, then a rename); returns the options pointing at the copies, relative to ``out``."""
    kwargs, bundled = dict(encoder.factory_kwargs), []
    for key in encoder.bundled_kwargs:
        src = kwargs.get(key)
        if src is None or not Path(src).is_dir():
            continue
        rel = f"{BUNDLE}/{key}"
        dst = out / rel
        if not (dst.exists() and dst.resolve() == Path(src).resolve()):  # re-saving a scorer onto itself keeps it
            tmp = out / f"{rel}.tmp"
            shutil.rmtree(tmp, ignore_errors=True)
            shutil.copytree(src, tmp)
            shutil.rmtree(dst, ignore_errors=True)
            tmp.replace(dst)
        kwargs[key] = rel
        bundled.append(key)
    return kwargs, bundled


def _read_config(path: Path) -> dict:
    if not path.exists():
        raise ScorerLoadError(f"{path}: no such scorer directory")
    if not path.is_dir():
        raise ScorerLoadError(
            f"{path}: is a file, not a scorer directory (a scorer is a directory holding "
            f"{CONFIG} and {WEIGHTS}; was a video passed as the scorer?)"
        )
    cfg_file = path / CONFIG
    if not cfg_file.is_file():
        raise ScorerLoadError(f"{path}: not a phyprobe scorer directory (no {CONFIG})")
    try:
        cfg = json.loads(cfg_file.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ScorerLoadError(f"{cfg_file}: not valid JSON ({e})") from e
    if not isinstance(cfg, dict) or cfg.get("format") != FORMAT:
        got = cfg.get("format") if isinstance(cfg, dict) else type(cfg).__name__
        raise ScorerLoadError(f"{cfg_file}: unsupported scorer format {got!r}, expected {FORMAT!r}")
    for field in (
        "encoder.name",
        "encoder.kwargs",
        "encoder.fingerprint",
        "clip",
        "feature_dtype",
        "head.feature_dim",
        "head.stats",
        "head.hidden",
    ):
        node = cfg
        for part in field.split("."):
            if not isinstance(node, dict) or part not in node:
                raise ScorerLoadError(f"{cfg_file}: missing field {field!r}")
            node = node[part]
    return cfg


def _build_encoder(cfg: dict, cfg_file: Path, check_fingerprint: bool) -> FrozenEncoder:
    e = cfg["encoder"]
    kwargs = dict(e["kwargs"])
    for key in e.get("bundled", []):  # shipped inside the scorer directory
        kwargs[key] = str(cfg_file.parent / kwargs[key])
    try:
        enc = from_config(e["name"], **kwargs)
    except KeyError as err:  # unknown registry name
        raise ScorerLoadError(
            f"{cfg_file}: encoder {e['name']!r} is not in this phyprobe's registry ({err.args[0]})"
        ) from err
    except TypeError as err:
        raise ScorerLoadError(f"{cfg_file}: encoder {e['name']!r} rejects the options {e['kwargs']} ({err})") from err
    if check_fingerprint and enc.fingerprint() != e["fingerprint"]:
        raise ScorerLoadError(
            f"{cfg_file}: encoder {enc.name!r} rebuilt here differs from the one the scorer was trained "
            f"with (fingerprint {enc.fingerprint()} != {e['fingerprint']}): different weights or preprocessing"
        )
    return enc


def _build_head(cfg: dict, weights: Path) -> PhyProbeHead:
    h = cfg["head"]
    try:
        head = PhyProbeHead(
            h["feature_dim"],
            stats=tuple(h["stats"]),
            hidden=h["hidden"],
            dropout=h.get("dropout", 0.0),
            kind=h.get("kind", "mlp"),
            groups=h.get("groups"),
        )
    except ValueError as e:
        raise ScorerLoadError(f"{weights.parent / CONFIG}: its head cannot be built ({e})") from e
    if not weights.is_file():
        raise ScorerLoadError(f"{weights}: missing (the scorer's head weights)")
    try:
        state = load_file(str(weights))
    except (SafetensorError, OSError, ValueError) as e:
        raise ScorerLoadError(f"{weights}: not a readable safetensors file ({e})") from e
    try:
        head.load_state_dict(state)
    except RuntimeError as e:
        first = str(e).strip().splitlines()[-1].strip()
        raise ScorerLoadError(f"{weights}: weights do not fit the head described in {CONFIG} ({first})") from e
    return head


class Scorer:
    """Frozen encoder + trained head. ``score(video)`` -> float in [0, 1] (0 = plausible).

    The one object pipelines hold: files (``score``, ``score_raw_many``), frames already in memory
    (``score_frames``), many files into a resumable results file (:mod:`phyprobe.scorer.batch`),
    and the Hugging Face Hub (``from_pretrained("org/name")``, ``save_pretrained``, ``push_to_hub``).
    """

    def __init__(
        self,
        encoder: FrozenEncoder,
        head: PhyProbeHead,
        clip: ClipSpec,
        feature_dtype: str = "float16",
        config: dict | None = None,
        batch_size: int = 8,
        reading: Reading | None = None,
    ):
        """``reading``: how a video is read (default: the one in ``config``; none recorded: whole)."""
        self.encoder, self.head, self.clip = encoder, head.eval(), clip
        self.feature_dtype = getattr(torch, feature_dtype)
        self.config = config or {}
        self.batch_size = batch_size
        self.reading = reading if reading is not None else Reading.from_dict(self.config.get("reading"))

    @classmethod
    def from_pretrained(
        cls,
        path: str | Path,
        device: str = "cpu",
        check_fingerprint: bool = True,
        revision: str | None = None,
        cache_dir: str | Path | None = None,
    ) -> "Scorer":
        """Load a scorer directory, or a Hub repository id ("org/name") through the local Hub cache.

        ``revision`` pins a branch, tag or commit of a Hub repository; with ``HF_HUB_OFFLINE=1`` only
        the cache is read. Raises :class:`ScorerLoadError` (the message names the file and why).
        """
        from .hub import resolve

        path = resolve(path, revision=revision, cache_dir=cache_dir)
        cfg = _read_config(path)
        enc = _build_encoder(cfg, path / CONFIG, check_fingerprint)
        head = _build_head(cfg, path / WEIGHTS)
        try:
            clip = ClipSpec(**cfg["clip"])
            reading = Reading.from_dict(cfg.get("reading"))
            torch_dtype = getattr(torch, cfg["feature_dtype"])
        except (TypeError, ValueError, AttributeError) as e:
            raise ScorerLoadError(f"{path / CONFIG}: bad clip, reading or feature_dtype ({e})") from e
        if not isinstance(torch_dtype, torch.dtype):
            raise ScorerLoadError(f"{path / CONFIG}: feature_dtype {cfg['feature_dtype']!r} is not a torch dtype")
        return cls(enc.to(device), head.to(device), clip, cfg["feature_dtype"], cfg, reading=reading)

    def save_pretrained(self, out_dir: str | Path, run_dir: str | Path | None = None) -> Path:
        """Write this scorer (weights, config, generated model card) to ``out_dir``.

        ``run_dir``: the training run whose ``scores.csv``, ``run_info.json`` and ``metrics.json`` feed
        the card (default: the run recorded in the config, when it is on this machine).
        """
        from .hub import write_model_card

        own = {"format", "encoder", "clip", "reading", "feature_dtype", "head", "code"}
        out = export_scorer(
            out_dir,
            self.encoder,
            self.head,
            self.clip,
            str(self.feature_dtype).replace("torch.", ""),
            self.config.get("head", {}),
            extra={k: v for k, v in self.config.items() if k not in own},
            reading=self.reading,
        )
        write_model_card(out, run_dir)
        return out

    def push_to_hub(self, repo_id: str, run_dir: str | Path | None = None, **kwargs) -> str:
        """Save to a temporary folder and upload it as one commit; returns the commit URL.
        ``kwargs`` go to :func:`phyprobe.scorer.hub.push` (private, revision, token, commit_message)."""
        from .hub import push

        return push(self, repo_id, run_dir=run_dir, **kwargs)

    @property
    def device(self) -> torch.device:
        return next(self.head.parameters()).device

    def load_clip(self, video: str | Path) -> torch.Tensor:
        """The one preprocessed clip (T, 3, H, W) the encoder sees for a file read whole. Raises VideoDecodeError."""
        return self.encoder.read_clip(video, self.clip)[0]

    @property
    def window_length(self) -> int:
        """Frames per clip the encoder reads: a window's length."""
        return self.encoder.clip_spec(self.clip).num_frames

    def window_starts(self, num_frames: int) -> list[int] | None:
        """Where the reading puts its windows over a video of ``num_frames``; None: the video is one clip. A
        scorer sampling at a fixed rate (``clip.mode='fps'``) already keeps a step's span, so it reads whole."""
        if self.clip.mode != "uniform":
            return None
        return self.reading.window_starts(num_frames, self.window_length)

    def _frames_if_windowed(self, video: str | Path) -> int | None:
        """The file's frame count when the reading cuts it into windows, else None (a file that cannot be probed is
        read as one clip, which then reports why it cannot be read)."""
        if self.reading.mode == "whole" or self.clip.mode != "uniform":
            return None
        try:
            n = probe(video)["num_frames"]
        except VideoDecodeError:
            return None
        return n if self.window_starts(n) is not None else None

    def in_windows(self, video: str | Path) -> bool:
        """Whether the reading cuts this file into windows."""
        return self._frames_if_windowed(video) is not None

    def read(self, video: str | Path) -> Iterator[torch.Tensor]:
        """The preprocessed clips (T, 3, H, W) the reading cuts from a file: one, or each window's, lazily from
        frames decoded once. Raises VideoDecodeError before the first clip."""
        n = self._frames_if_windowed(video)
        if n is None:
            return iter([self.load_clip(video)])
        frames = decode_clip(video, ClipSpec(n), fit=self.encoder.preprocess.size).frames
        length = self.window_length
        return (self.encoder.preprocess(frames[s : s + length]) for s in self.window_starts(len(frames)) or [0])

    @torch.inference_mode()
    def head_scores(self, feats: torch.Tensor) -> torch.Tensor:
        """Raw scores from encoder features, through the storage dtype the head was trained on."""
        return self.head(feats.to(self.feature_dtype).float().to(self.device))

    @torch.inference_mode()
    def encode(self, clips: torch.Tensor) -> torch.Tensor:
        """Encoder features of preprocessed clips (B, T, 3, H, W); bf16 autocast on a GPU, as extraction."""
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=self.device.type == "cuda"):
            return self.encoder(clips.to(self.device)).float()

    def _score_clips(
        self, clips: Iterable[tuple[object, str, torch.Tensor | Exception]]
    ) -> Iterator[tuple[object, float | Exception]]:
        """(key, raw score or error) of each (key, name, preprocessed clip or its error), in order, in batches."""
        batch: list[tuple[str, torch.Tensor]] = []
        pending: list[list] = []
        slots: list[int] = []

        def flush():
            if batch:
                raw = self.head_scores(self.encode(torch.stack([c for _, c in batch]))).cpu().tolist()
                for slot, (name, _), v in zip(slots, batch, raw):
                    pending[slot][1] = v if math.isfinite(v) else NonFiniteScoreError(name, v)
                batch.clear()
                slots.clear()

        for key, name, clip in clips:
            pending.append([key, clip if isinstance(clip, Exception) else None])
            if not isinstance(clip, Exception):
                slots.append(len(pending) - 1)
                batch.append((name, clip))
            if len(batch) >= self.batch_size:
                flush()
                yield from map(tuple, pending)
                pending.clear()
        flush()
        yield from map(tuple, pending)

    def _combined(self, clips: Iterable[tuple[object, str, torch.Tensor | Exception]]) -> Iterator[float | Exception]:
        """One raw score (or error) per key of consecutive clips sharing it: the reading's combination of its windows."""
        key, vals = object(), []
        for k, v in self._score_clips(clips):
            if vals and k != key:
                yield self.combine(vals)
                vals = []
            key = k
            vals.append(v)
        if vals:
            yield self.combine(vals)

    def combine(self, vals: list) -> float | Exception:
        """A video's raw score from its clips' (the reading's combination; the first error if any clip failed)."""
        err = next((v for v in vals if isinstance(v, Exception)), None)
        return err if err is not None else self.reading.reduce(vals)

    def score_raw_many(self, videos: Iterable[str | Path]) -> list[float | Exception]:
        """Raw (unclipped) scores, each video read as the scorer's reading says; an unreadable video yields its
        VideoDecodeError, a broken head its NonFiniteScoreError, in its place."""

        def clips():
            for i, v in enumerate(videos):
                try:
                    for clip in self.read(v):
                        yield i, str(v), clip
                except VideoDecodeError as e:
                    yield i, str(v), e

        return list(self._combined(clips()))

    def score_windows(self, video: str | Path, stride: int | None = None) -> np.ndarray:
        """Raw scores of each window of ``video`` (windows of the clip's length of consecutive frames, ``stride``
        apart, default the reading's), whatever the scorer's reading; a video no longer than a window is one.
        Raises VideoDecodeError and NonFiniteScoreError."""
        if self.clip.mode != "uniform":
            raise ValueError(
                f"score_windows reads consecutive frames; this scorer samples {self.clip.fps} frames/s "
                "(clip.mode='fps'), which already keeps a step's span fixed"
            )
        keep = self.reading
        self.reading = Reading("windows", stride if stride is not None else keep.stride, keep.combine)
        try:
            clips = [(j, str(video), c) for j, c in enumerate(self.read(video))]
        finally:
            self.reading = keep
        raw = [v for _, v in self._score_clips(clips)]
        for r in raw:
            if isinstance(r, Exception):
                raise r
        return np.asarray(raw, dtype=np.float64)

    def score(self, video: str | Path) -> float:
        """The video's score in [0, 1], read as the scorer's reading says (``score_raw_many`` for the raw score)."""
        s = self.score_raw_many([video])[0]
        if isinstance(s, Exception):
            raise s
        return float(np.clip(s, 0.0, 1.0))

    def score_frames(self, frames, fps: float | None = None, raw: bool = False) -> np.ndarray:
        """Scores (B,) of videos already in memory, as a generator emits them.

        ``frames``: (B, T, H, W, 3) uint8 array/tensor, or (B, T, 3, H, W) float tensor in [0, 1].
        They are sampled (or cut into windows), letterboxed and normalised exactly as a file holding the same
        frames would be (``fps`` is needed only when the scorer samples at a fixed rate). ``raw=True`` returns
        the unclipped scores. Raises NonFiniteScoreError rather than return NaN.
        """
        from .frames import clips_from_frames

        out = []
        for s in self._combined(clips_from_frames(frames, self, fps)):
            if isinstance(s, Exception):
                raise s
            out.append(s)
        arr = np.asarray(out, dtype=np.float64)
        return arr if raw else np.clip(arr, 0.0, 1.0)
