"""Data sources as Hydra targets: each returns a validated :class:`Manifest`."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..errors import UserError
from .manifest import Manifest


def manifest(path: str | Path, check_files: bool = True) -> Manifest:
    """A manifest directory already on disk (a converted public dataset, say)."""
    return Manifest.load(path, check_files=check_files)


def world(out_dir: str | Path, num_scenes: int, seed: int = 0, workers: int | None = None, **options) -> Manifest:
    """The procedural physics world, built on first use (idempotent for the same arguments)."""
    from ..world.build import build_world

    root = build_world(out_dir, num_scenes=num_scenes, seed=seed, workers=workers, **options)
    return Manifest.load(root)


def unseen_footage(out_dir: str | Path, num_segments: int = 60, seed: int = 0, **options) -> Manifest:
    """Footage no run trains on (:mod:`phyprobe.world.footage_unseen`), drawn on first use: the shipped clips
    perturbed by kinds no build trains on, or (``source_dir``, ``kinds``) clips the project does not ship,
    every segment a `test` clip."""
    from ..world.footage_unseen import build_unseen_footage

    return build_unseen_footage(out_dir, num_segments=num_segments, seed=seed, **options)


# The combined tables hold the worlds' rows in the order of their names, except that the 3D world keeps the place
# of its former name, ``bullet``: the rows (and so the pairs a seeded run draws, and the figures published from
# them) stay in the order they were built in.
MERGE_ORDER = {"world3d": "bullet"}


def worlds(out_dir: str | Path, seed: int = 0, workers: int | None = None, **engines: dict) -> Manifest:
    """Several physics worlds in one manifest directory (``out_dir/<engine>/`` each, plus one
    ``videos.jsonl`` / ``pairs.jsonl`` over all of them with paths relative to ``out_dir``).

    ``engines`` maps a world name to its build options, e.g. ``planar={"engine": "planar", "num_scenes":
    300}, world3d={"engine": "world3d", "num_scenes": 300, "include_real": False}``. Each world is built (or
    found built) on its own, so growing one does not rebuild the other. The combined tables are what
    cross-world runs train and evaluate on, and what benchmark configs point at.
    """
    from ..world.build import build_world

    out = Path(out_dir)
    parts = []
    for name, opts in sorted(engines.items(), key=lambda item: MERGE_ORDER.get(item[0], item[0])):
        opts = dict(opts)
        root = build_world(out / name, num_scenes=opts.pop("num_scenes"), seed=seed, workers=workers, **opts)
        m = Manifest.load(root)
        m.videos["path"] = [p if Path(p).is_absolute() else f"{name}/{p}" for p in m.videos["path"]]
        parts.append(Manifest(videos=m.videos, pairs=m.pairs, root=out))
    merge(*parts, root=out, relative=True).save(out)  # atomic and deterministic: rewriting it changes no byte
    return Manifest.load(out)


def merge(*manifests: Manifest, root: str | Path | None = None, relative: bool = False) -> Manifest:
    """Several sources in one manifest; video paths become absolute so each keeps its own root
    (``relative``: the paths are kept as they are, for manifests that already share ``root``)."""
    videos, pairs = [], []
    for m in manifests:
        v = m.videos.copy()
        if not relative:
            v["path"] = [str(m.video_path(p).resolve()) for p in v["path"]]
        videos.append(v)
        pairs.append(m.pairs)
    v = pd.concat(videos, ignore_index=True)
    dup = v["id"][v["id"].duplicated()]
    if len(dup):
        raise ValueError(f"merge: video ids occur in more than one source, e.g. {list(dup[:3])}")
    return Manifest(videos=v, pairs=pd.concat(pairs, ignore_index=True), root=Path(root or manifests[0].root))


def manifests(paths: list[str | Path], leakage: dict | None = None) -> Manifest:
    """Your own prepared manifests as one training manifest (``data=own``, ``data.manifests=[...]``): the folders
    ``phyprobe data prepare`` wrote (real footage, rated generated videos, pairs with preferences, any public
    dataset), each keeping its videos' paths and the magnitudes its converter mapped onto [0, 1]."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    if not paths:
        raise UserError("data.manifests is empty: list the folders `phyprobe data prepare` wrote")
    named = {}
    for p in paths:
        named.setdefault(str(p), p)
    return mix(named, leakage=leakage)


def mix(components: dict, root: str | Path | None = None, leakage: dict | None = None) -> Manifest:
    """Several prepared sources in one training manifest (``data=paper_mix``), checked for leakage.

    ``components`` maps a name to a manifest directory (written by ``phyprobe data prepare``) or to
    an already-built manifest (the world); a null entry switches a component off. ``leakage``
    (``benchmarks``, ``splits``, ``allow``, ``cache_dir``) runs the leakage guard on the splits used
    for training against every listed benchmark's test split before anything is trained.
    """
    loaded = []
    for name, c in components.items():
        if c is None:
            continue
        if isinstance(c, Manifest):
            loaded.append(c)
            continue
        if not (Path(c) / "videos.jsonl").is_file():
            raise FileNotFoundError(
                f"mix component {name!r}: no manifest at {c}; write it with "
                f"`phyprobe data prepare NAME --root DOWNLOAD_DIR --out {c}` or set it to null"
            )
        loaded.append(Manifest.load(c, check_files=True))
    if not loaded:
        raise ValueError("mix: every component is switched off")
    merged = merge(*loaded, root=root)
    if leakage:
        from .datasets.leakage import check_leakage

        check_leakage(
            merged.split(*leakage.get("splits", ["train", "val"])),
            leakage.get("benchmarks", []),
            allow=leakage.get("allow") or (),
            cache_dir=leakage.get("cache_dir"),
            root=leakage.get("root"),
        )
    return merged
