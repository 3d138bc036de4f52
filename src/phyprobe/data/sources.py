"""Data sources as Hydra targets: each returns a validated :class:`Manifest`."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from .manifest import Manifest


def manifest(path: str | Path, check_files: bool = True) -> Manifest:
    """A manifest directory already on disk (a converted public dataset, say)."""
    return Manifest.load(path, check_files=check_files)


def world(out_dir: str | Path, num_scenes: int, seed: int = 0, workers: int | None = None, **options) -> Manifest:
    """The procedural physics world, built on first use (idempotent for the same arguments)."""
    from ..world.build import build_world

    root = build_world(out_dir, num_scenes=num_scenes, seed=seed, workers=workers, **options)
    return Manifest.load(root)


def merge(*manifests: Manifest, root: str | Path | None = None) -> Manifest:
    """Several sources in one manifest; video paths become absolute so each keeps its own root."""
    videos, pairs = [], []
    for m in manifests:
        v = m.videos.copy()
        v["path"] = [str(m.video_path(p).resolve()) for p in v["path"]]
        videos.append(v)
        pairs.append(m.pairs)
    v = pd.concat(videos, ignore_index=True)
    dup = v["id"][v["id"].duplicated()]
    if len(dup):
        raise ValueError(f"merge: video ids occur in more than one source, e.g. {list(dup[:3])}")
    return Manifest(videos=v, pairs=pd.concat(pairs, ignore_index=True), root=Path(root or manifests[0].root))
