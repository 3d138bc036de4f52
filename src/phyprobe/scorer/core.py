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
import pickle
import shutil
from pathlib import Path
from typing import Iterable, Iterator

import numpy as np
import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from ..encoders import FrozenEncoder, available_configs, from_config
from ..encoders.base import option_at, with_option
from ..errors import UserError, json_error_reason
from ..head import HEAD_KINDS, PhyProbeHead, resolve_hidden
from ..io.video import ClipSpec, FrameStream, VideoDecodeError, probe
from ..pooling import STATS
from ..runinfo import atomic_write_json, code_version
from .names import BUNDLE, CONFIG, FORMAT, WEIGHTS
from .reading import Reading, window_frames, windows


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
    for key in encoder.bundled_paths():
        src = option_at(kwargs, key)
        if not isinstance(src, str) or not Path(src).is_dir():
            continue
        rel = f"{BUNDLE}/{key}"
        dst = out / rel
        if not (dst.exists() and dst.resolve() == Path(src).resolve()):  # re-saving a scorer onto itself keeps it
            tmp = out / f"{rel}.tmp"
            shutil.rmtree(tmp, ignore_errors=True)
            shutil.copytree(src, tmp)
            shutil.rmtree(dst, ignore_errors=True)
            tmp.replace(dst)
        kwargs = with_option(kwargs, key, rel)
        bundled.append(key)
    return kwargs, bundled


# What a scorer directory may hold, checked field by field before anything is built or allocated: bounds far above
# any real scorer (clips of 4-64 frames, encoders reading 32-518 px, features <= 2048 wide, heads of ~1M parameters)
# and far below what would exhaust a machine, so a tampered or corrupted directory is one line naming its file and
# field, never a traceback, an allocation of terabytes or a pickle run.
# Encoder input per forward on a CPU (where activations are the process's memory): two 16-frame windows at 128 px,
# one 16-frame clip at 224 px alone. Batching many clips buys a CPU little speed and costs ~20x their input in RAM.
CPU_BATCH_BYTES = 8 * 2**20
MAX_CONFIG_BYTES = 16 * 2**20
MAX_NESTING = 32  # of the encoder's options
MAX_CLIP_FRAMES = 1024
MAX_FPS = 1000.0
MAX_IMAGE_SIZE = 4096
MAX_GRID = 256
MAX_OPTION = 1e6  # any other number among the encoder's options
MAX_FEATURE_DIM = 65536
MAX_HIDDEN = 65536
MAX_HEAD_PARAMETERS = 2**26  # 64x the paper's head: 256 MB of float32
MAX_BUNDLE_ENTRIES = 10_000
FEATURE_DTYPES = ("float16", "bfloat16", "float32")
NAMED_WEIGHTS = ("package", "hub")  # an encoder's weights by name rather than by path
SIZE_OPTIONS = {"image_size": MAX_IMAGE_SIZE, "grid": MAX_GRID}
PATH_OPTIONS = ("weights", "checkpoint")


def _bad(cfg_file: Path, field: str, why: str, value=None) -> ScorerLoadError:
    got = "" if value is None else f", got {_short(value)}"
    return ScorerLoadError(f"{cfg_file}: field {field!r} {why}{got}")


def _short(value, limit: int = 80) -> str:
    text = repr(value) if not isinstance(value, (dict, list)) else type(value).__name__
    return text if len(text) <= limit else text[:limit] + "..."


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _get(cfg: dict, field: str, cfg_file: Path, default=...):
    """The value at a dotted ``field``; a missing one is ``default`` (required when none is given)."""
    node = cfg
    for part in field.split("."):
        if not isinstance(node, dict) or part not in node:
            if default is not ...:
                return default
            raise ScorerLoadError(f"{cfg_file}: missing field {field!r}")
        node = node[part]
    return node


def _want_int(v, field: str, cfg_file: Path, lo: int, hi: int) -> int:
    if not _is_int(v) or not lo <= v <= hi:
        raise _bad(cfg_file, field, f"must be a whole number in [{lo}, {hi}]", v)
    return v


def _want_object(v, field: str, cfg_file: Path, keys: tuple[str, ...] | None = None) -> dict:
    if not isinstance(v, dict):
        raise _bad(cfg_file, field, "must be a JSON object", v)
    unknown = sorted(set(v) - set(keys)) if keys is not None else []
    if unknown:
        raise _bad(cfg_file, field, f"has unknown field(s) {unknown}; allowed: {list(keys)}")
    return v


def _check_option(v, field: str, cfg_file: Path, depth: int = 0) -> None:
    """An encoder option: JSON of bounded depth, numbers finite and not absurd, sizes in range, paths strings."""
    if depth > MAX_NESTING:
        raise _bad(cfg_file, field, f"is nested more than {MAX_NESTING} deep")
    key = field.rsplit(".", 1)[-1]
    if key in SIZE_OPTIONS and v is not None:
        sizes = v if isinstance(v, list) and len(v) == 2 else [v]  # a (height, width) pair or one side
        for s in sizes:
            _want_int(s, field, cfg_file, 1, SIZE_OPTIONS[key])
    elif key in PATH_OPTIONS and v is not None and not isinstance(v, str):
        raise _bad(cfg_file, field, "must be a path (a string) or null", v)
    elif isinstance(v, bool) or v is None or isinstance(v, str):
        pass
    elif isinstance(v, (int, float)):
        if not _is_num(v) or abs(v) > MAX_OPTION:
            raise _bad(cfg_file, field, f"must be a finite number of magnitude at most {MAX_OPTION:g}", v)
    elif isinstance(v, list):
        for i, x in enumerate(v):
            _check_option(x, f"{field}[{i}]", cfg_file, depth + 1)
    elif isinstance(v, dict):
        for k, x in v.items():
            _check_option(x, f"{field}.{k}", cfg_file, depth + 1)


def _check_config(cfg: dict, cfg_file: Path) -> None:
    """Every field a scorer is built from, type- and range-checked (one line naming the file and the field)."""
    enc = _want_object(_get(cfg, "encoder", cfg_file), "encoder", cfg_file)
    name = _get(cfg, "encoder.name", cfg_file)
    if not isinstance(name, str) or not name:
        raise _bad(cfg_file, "encoder.name", "must be an encoder's registry name (a non-empty string)", name)
    kwargs = _want_object(_get(cfg, "encoder.kwargs", cfg_file), "encoder.kwargs", cfg_file)
    for k, v in kwargs.items():
        _check_option(v, f"encoder.kwargs.{k}", cfg_file)
    fingerprint = _get(cfg, "encoder.fingerprint", cfg_file)
    if not isinstance(fingerprint, str):
        raise _bad(cfg_file, "encoder.fingerprint", "must be a string", fingerprint)
    bundled = enc.get("bundled", [])
    if not isinstance(bundled, list) or not all(
        isinstance(k, str) and isinstance(option_at(kwargs, k), str) for k in bundled
    ):
        raise _bad(cfg_file, "encoder.bundled", "must list encoder options whose values are paths", bundled)
    for key in _checkpoint_keys(kwargs):
        if key not in bundled:
            raise _bad(
                cfg_file,
                f"encoder.kwargs.{key}",
                "must be bundled inside the scorer directory (listed in encoder.bundled), as export writes it",
                option_at(kwargs, key),
            )

    clip = _want_object(_get(cfg, "clip", cfg_file), "clip", cfg_file, ("num_frames", "mode", "fps"))
    _want_int(_get(cfg, "clip.num_frames", cfg_file), "clip.num_frames", cfg_file, 1, MAX_CLIP_FRAMES)
    if clip.get("mode", "uniform") not in ("uniform", "fps"):
        raise _bad(cfg_file, "clip.mode", "must be 'uniform' or 'fps'", clip.get("mode"))
    fps = clip.get("fps")
    if fps is not None and (not _is_num(fps) or not 0 < fps <= MAX_FPS):
        raise _bad(cfg_file, "clip.fps", f"must be null or a number in (0, {MAX_FPS:g}]", fps)
    if clip.get("mode") == "fps" and fps is None:
        raise _bad(cfg_file, "clip.fps", "must be set when clip.mode is 'fps'")
    reading = cfg.get("reading")
    if reading is not None:
        _want_object(reading, "reading", cfg_file, ("mode", "stride", "combine", "max_windows"))
        try:
            Reading(**reading)
        except (TypeError, ValueError) as e:
            raise _bad(cfg_file, "reading", f"is not a reading ({e})") from e
    dtype = _get(cfg, "feature_dtype", cfg_file)
    if dtype not in FEATURE_DTYPES:
        raise _bad(cfg_file, "feature_dtype", f"must be one of {list(FEATURE_DTYPES)}", dtype)

    h = _want_object(_get(cfg, "head", cfg_file), "head", cfg_file)
    dim = _want_int(_get(cfg, "head.feature_dim", cfg_file), "head.feature_dim", cfg_file, 1, MAX_FEATURE_DIM)
    stats = _get(cfg, "head.stats", cfg_file)
    if not isinstance(stats, list) or not stats or not all(isinstance(s, str) and s in STATS for s in stats):
        raise _bad(cfg_file, "head.stats", f"must be a non-empty list of pooling statistics from {list(STATS)}", stats)
    kind = h.get("kind", "mlp")
    if kind not in HEAD_KINDS:
        raise _bad(cfg_file, "head.kind", f"must be one of {list(HEAD_KINDS)}", kind)
    hidden = _get(cfg, "head.hidden", cfg_file)
    if hidden != "auto":
        _want_int(hidden, "head.hidden", cfg_file, 0 if kind == "monotone" else 1, MAX_HIDDEN)
    dropout = h.get("dropout", 0.0)
    if not _is_num(dropout) or not 0.0 <= dropout < 1.0:
        raise _bad(cfg_file, "head.dropout", "must be a number in [0, 1)", dropout)
    groups = h.get("groups")
    if groups is not None and (
        not isinstance(groups, list)
        or len(groups) > dim
        or not all(isinstance(g, list) and all(_is_int(i) and 0 <= i < dim for i in g) for g in groups)
    ):
        raise _bad(cfg_file, "head.groups", f"must be null or lists of feature columns in [0, {dim})", groups)
    in_dim = dim * len(stats)
    if kind == "mlp":
        width = resolve_hidden(hidden, in_dim)
        parameters = in_dim * width + width * width + 3 * width + 1
        if parameters > MAX_HEAD_PARAMETERS:
            raise _bad(
                cfg_file,
                "head.hidden",
                f"describes a head of {parameters:,} parameters on {in_dim} inputs, over the "
                f"{MAX_HEAD_PARAMETERS:,} any scorer may have",
                hidden,
            )


def _inside(root: Path, rel: str, field: str, cfg_file: Path) -> Path:
    """``root / rel``, refused unless it stays inside ``root``: relative, no '..', no symbolic link leading out."""
    p = Path(rel)
    if p.is_absolute() or ".." in p.parts:
        raise _bad(cfg_file, field, "must be a path inside the scorer directory (relative, without '..')", rel)
    return _stays_inside(root, root / p, field, cfg_file)


def _realm(root: Path) -> Path:
    """Where the files of scorer directory ``root`` may really lie: the directory itself, or for a snapshot in a
    Hugging Face Hub cache (``models--org--name/snapshots/<rev>``, whose files are links to ``../../blobs``) its
    repository's folder in the cache."""
    root = root.resolve()
    if root.parent.name == "snapshots" and (root.parent.parent / "blobs").is_dir():
        return root.parent.parent
    return root


def _leads_out(root: Path, full: Path) -> Path | None:
    """Where ``full`` really lies when that is outside ``root``'s realm (through a symbolic link), else None."""
    realm, real = _realm(root), full.resolve()
    return None if real == realm or realm in real.parents else real


def _stays_inside(root: Path, full: Path, field: str, cfg_file: Path) -> Path:
    real = _leads_out(root, full)
    if real is not None:
        raise _bad(cfg_file, field, f"leads outside the scorer directory (to {real}, through a symbolic link)")
    return full


def _check_bundle(root: Path, full: Path, field: str, cfg_file: Path) -> None:
    """A bundled directory, and everything in it, inside the scorer directory."""
    if not full.is_dir():
        raise _bad(cfg_file, field, f"must name a directory inside the scorer directory; {full} is not one")
    for n, entry in enumerate(full.rglob("*")):
        if n >= MAX_BUNDLE_ENTRIES:
            raise _bad(cfg_file, field, f"names a directory of more than {MAX_BUNDLE_ENTRIES} entries")
        _stays_inside(root, entry, f"{field} ({entry.relative_to(full)})", cfg_file)


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
    _stays_inside(path, cfg_file, CONFIG, cfg_file)
    size = cfg_file.stat().st_size
    if size > MAX_CONFIG_BYTES:
        raise ScorerLoadError(f"{cfg_file}: {size:,} bytes, not a scorer's config (at most {MAX_CONFIG_BYTES:,})")
    try:
        cfg = json.loads(cfg_file.read_text(encoding="utf-8"))
    except UnicodeDecodeError as e:
        raise ScorerLoadError(f"{cfg_file}: not valid JSON (not UTF-8: {e})") from e
    except (ValueError, RecursionError) as e:  # malformed, nested past the limit, or a number past the digit limit
        raise ScorerLoadError(f"{cfg_file}: {json_error_reason(e)}") from e
    if not isinstance(cfg, dict) or cfg.get("format") != FORMAT:
        got = cfg.get("format") if isinstance(cfg, dict) else type(cfg).__name__
        raise ScorerLoadError(f"{cfg_file}: unsupported scorer format {_short(got)}, expected {FORMAT!r}")
    _check_config(cfg, cfg_file)
    return cfg


# what building an encoder from a tampered option or bundled checkpoint raises (torch.load with weights_only=True
# refuses a pickle with UnpicklingError; a file of the wrong kind fails as it may): the scorer cannot be loaded
_BUILD_ERRORS = (
    KeyError,
    TypeError,
    ValueError,
    IndexError,
    RuntimeError,
    EOFError,
    OSError,
    RecursionError,
    pickle.UnpicklingError,
    SafetensorError,
)


def _checkpoint_keys(kwargs: dict, prefix: str = "") -> list[str]:
    """Dotted keys of every ``checkpoint`` option holding a path, the encoder's own or a part's."""
    keys = [f"{prefix}checkpoint"] if isinstance(kwargs.get("checkpoint"), str) else []
    parts = kwargs.get("parts")
    for i, part in enumerate(parts if isinstance(parts, list) else []):
        if isinstance(part, dict):
            keys += _checkpoint_keys(part, f"{prefix}parts.{i}.")
    return keys


def _build_encoder(cfg: dict, cfg_file: Path, check_fingerprint: bool) -> FrozenEncoder:
    e = cfg["encoder"]
    root = cfg_file.parent
    if e["name"] not in available_configs():
        raise ScorerLoadError(
            f"{cfg_file}: field 'encoder.name': encoder {e['name']!r} is not in this phyprobe's registry "
            f"(available: {available_configs()})"
        )
    kwargs = dict(e["kwargs"])
    for key in e.get("bundled", []):  # shipped inside the scorer directory, and nothing there may lead out of it
        full = _inside(root, option_at(kwargs, key), f"encoder.kwargs.{key}", cfg_file)
        _check_bundle(root, full, f"encoder.kwargs.{key}", cfg_file)
        kwargs = with_option(kwargs, key, str(full))
    weights = kwargs.get("weights")
    if isinstance(weights, str) and weights not in NAMED_WEIGHTS and "weights" not in e.get("bundled", []):
        p = Path(weights)
        if p.exists() and not (p.is_file() or p.is_dir()):  # a FIFO or a device would block or never end
            raise _bad(cfg_file, "encoder.kwargs.weights", "names neither a file nor a directory", weights)
    try:
        enc = from_config(e["name"], **kwargs)
    except UserError:
        raise
    except _BUILD_ERRORS as err:
        first = (str(err).strip().splitlines() or [""])[0][:300]
        raise ScorerLoadError(
            f"{cfg_file}: field 'encoder.kwargs': encoder {e['name']!r} rejects the options "
            f"{json.dumps(e['kwargs'])[:200]} ({type(err).__name__}: {first})"
        ) from err
    if enc.feature_dim != cfg["head"]["feature_dim"]:
        raise _bad(
            cfg_file,
            "head.feature_dim",
            f"is {cfg['head']['feature_dim']}, but encoder {e['name']!r} gives {enc.feature_dim} features per step",
        )
    if check_fingerprint and enc.fingerprint() != e["fingerprint"]:
        raise ScorerLoadError(
            f"{cfg_file}: encoder {enc.name!r} rebuilt here differs from the one the scorer was trained "
            f"with (fingerprint {enc.fingerprint()} != {e['fingerprint']}): different weights or preprocessing"
        )
    return enc


def _build_head(cfg: dict, weights: Path) -> PhyProbeHead:
    """The head described in the (checked) config, its weights read from safetensors only: no pickle ever runs."""
    h = cfg["head"]
    try:
        head = PhyProbeHead.from_config(h)
    except (ValueError, TypeError) as e:
        raise ScorerLoadError(f"{weights.parent / CONFIG}: its head cannot be built ({e})") from e
    if not weights.is_file():
        raise ScorerLoadError(f"{weights}: missing (the scorer's head weights)")
    real = _leads_out(weights.parent, weights)
    if real is not None:
        raise ScorerLoadError(f"{weights}: leads outside the scorer directory (to {real}, through a symbolic link)")
    try:
        state = load_file(str(weights))
    except (SafetensorError, OSError, ValueError, RuntimeError, TypeError) as e:
        first = (str(e).strip().splitlines() or [""])[0]
        raise ScorerLoadError(f"{weights}: not a readable safetensors file ({first})") from e
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
        batch_bytes: int | None = None,
    ):
        """``reading``: how a video is read (default: the one in ``config``; none recorded: whole). ``batch_size``
        clips at most per encoder forward, and on a CPU at most ``batch_bytes`` of encoder input (default
        :data:`CPU_BATCH_BYTES`; a clip always goes, alone if it must) - see :attr:`forward_bytes`."""
        self.encoder, self.head, self.clip = encoder, head.eval(), clip
        self.feature_dtype = getattr(torch, feature_dtype)
        self.config = config or {}
        self.batch_size = batch_size
        self.batch_bytes = batch_bytes
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
    def forward_bytes(self) -> int | None:
        """The most bytes of encoder input one forward takes (None: no bound but ``batch_size``). On a CPU the
        encoder's activations are the process's memory, about 20x its input for a convolutional net, so a long
        video's windows go a few at a time (a 16-frame window at 128 px is 3 MB of input, 70 MB of activations);
        on an accelerator they are not, and full batches keep it busy."""
        if self.batch_bytes is not None:
            return self.batch_bytes
        return CPU_BATCH_BYTES if self.device.type == "cpu" else None

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
        """The preprocessed clips (T, 3, H, W) the reading cuts from a file: one, or each window's.

        Windows are streamed: the file is decoded once, in order, only the windows' frames (seeking past the gaps
        between windows spread over a long video), and only the frames of the window being cut are held
        (:meth:`~phyprobe.io.video.FrameStream.select`, :func:`~phyprobe.scorer.reading.windows`), so memory is
        bounded by a window, not by the video's length. A file read as one clip raises VideoDecodeError here; a
        windowed one raises it here when it cannot be read at all, or from the iteration when its frames turn out
        not to decode (the windows already handed out are then to be discarded, as :meth:`combine` does)."""
        if self.reading.mode == "whole" or self.clip.mode != "uniform":
            return iter([self.load_clip(video)])
        try:
            stream = FrameStream(video, fit=self.encoder.preprocess.size)
        except VideoDecodeError:
            stream = None  # read as one clip, which reports why it cannot be read
        starts = None if stream is None else self.window_starts(stream.num_frames)
        if starts is None:
            return iter([self.load_clip(video)])
        frames = stream.select(window_frames(starts, self.window_length))
        return map(self.encoder.preprocess, windows(frames, starts, self.window_length))

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
        """(key, raw score or error) of each (key, name, preprocessed clip or its error), in order, in batches of at
        most ``batch_size`` clips and :attr:`forward_bytes` of input. Only the raw scores of a batch are kept: a
        clip's tensor is dropped once its batch is scored."""
        batch: list[tuple[str, torch.Tensor]] = []
        pending: list[list] = []
        slots: list[int] = []
        cap, held = self.forward_bytes, 0

        def flush():
            nonlocal held
            if batch:
                x = torch.stack([c for _, c in batch])
                batch_names = [name for name, _ in batch]
                batch.clear()  # the stacked copy is all the forward needs
                raw = self.head_scores(self.encode(x)).cpu().tolist()
                del x
                for slot, name, v in zip(slots, batch_names, raw):
                    pending[slot][1] = v if math.isfinite(v) else NonFiniteScoreError(name, v)
                slots.clear()
            held = 0

        for key, name, clip in clips:
            ok = not isinstance(clip, Exception)
            size = clip.element_size() * clip.nelement() if ok else 0
            if ok and batch and cap is not None and held + size > cap:
                flush()
                yield from map(tuple, pending)
                pending.clear()
            pending.append([key, None if ok else clip])
            if ok:
                slots.append(len(pending) - 1)
                batch.append((name, clip))
                held += size
            del clip  # the batch holds it; nothing else should
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
        self.reading = Reading("windows", stride if stride is not None else keep.stride, keep.combine, None)
        try:
            clips = self.read(video)  # the windows are fixed here; they are decoded as they are scored
        finally:
            self.reading = keep
        raw = [v for _, v in self._score_clips((j, str(video), c) for j, c in enumerate(clips))]
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
