"""A folder of the user's own real videos: calibration anchors at 0 and real-real tie pairs.

Each immediate sub-folder is one source (videos directly in the folder form the source ``real``).
Every video anchors at 0 with magnitude 0; real-real pairs are ties (label 0.5), chained within a
source (each video with the next) and across sources (the k-th video of one source with the k-th
of the next), so the head learns that real footage from different cameras and domains scores alike.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .base import VIDEO_EXTENSIONS, ManifestWriter, fail, pair_frame, video_frame
from .splits import hash_split

NAME = "real_folder"


def list_videos(root: Path) -> list[Path]:
    return sorted(p.relative_to(root) for p in root.rglob("*") if p.is_file() and p.suffix.lower() in VIDEO_EXTENSIONS)


def convert(root: Path, out: Path, split: str = "train", val_fraction: float = 0.0, check_counts: bool = True) -> Path:
    root = Path(root)
    rel = list_videos(root)
    if not rel:
        fail(root, f"no video files ({', '.join(VIDEO_EXTENSIONS)}) in the folder")
    sources = [r.parts[0] if len(r.parts) > 1 else "real" for r in rel]
    keys = [r.as_posix() for r in rel]
    splits = hash_split(keys, split, float(val_fraction))
    v = video_frame([f"real:{k}" for k in keys], [str((root / r).resolve()) for r in rel], NAME, True, splits,
                    magnitude=0.0, anchor=0, metadata=[{"variant": "plausible", "real_source": s} for s in sources])
    v = v.assign(real_source=sources)
    a, b = [], []
    for _, g in v.groupby("split", sort=True):
        by_src = [list(x["id"]) for _, x in g.groupby("real_source", sort=True)]
        for ids in by_src:
            a += ids[:-1]
            b += ids[1:]
        if len(by_src) > 1:
            for s, ids in enumerate(by_src):
                nxt = by_src[(s + 1) % len(by_src)]
                if len(by_src) == 2 and s == 1:
                    break  # two sources: one direction is enough
                k = min(len(ids), len(nxt))
                a += ids[:k]
                b += nxt[:k]
    split_of = dict(zip(v["id"], v["split"]))
    pairs = pair_frame(a, b, np.full(len(a), 0.5), NAME, "none", "real_vs_real", [split_of[x] for x in a])
    with ManifestWriter(out, NAME) as w:
        w.report.files[str(root)] = len(v)
        w.add(v.drop(columns="real_source"), pairs)
        return w.close()
