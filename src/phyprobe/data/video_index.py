"""Per-video facts computed once per dataset, in parallel, and read by every stage and every rank.

Three passes over every video used to happen in each process that needed them, one video at a time: the sha256
of each file (the feature cache's content identity, once per new cache), a first-frame decode (the leakage
check) and a probe of the frame count (how the exported scorer reads long videos). ``phyprobe data index DIR``
computes them once, in worker processes (and in shares across machines, ``--share I/N``), into
``DIR/video_index*.jsonl``: one row per video file with its size and modification time, so a row is used only
while the file is the one it describes. Readers fall back to computing a fact themselves when no row matches.
"""

from __future__ import annotations

import json
import logging
import os
from concurrent.futures import ProcessPoolExecutor
from contextlib import nullcontext
from pathlib import Path

from ..features.cache import content_hash, file_stat
from .manifest import Manifest

log = logging.getLogger(__name__)

PREFIX = "video_index"
FACTS = ("sha256", "num_frames", "duration", "first_frame")


def facts_of(path: str) -> dict:
    """Every fact of one video file (None for a fact it does not give, with the reason)."""
    from ..io.video import VideoDecodeError, probe
    from .datasets.leakage import first_frame_hash

    p = Path(path)
    row = {"path": str(p), "stat": file_stat(p), "sha256": content_hash(p)}
    try:
        info = probe(p)
        row.update(num_frames=info["num_frames"], duration=info["duration"])
    except (VideoDecodeError, OSError) as e:
        row.update(num_frames=None, duration=None, error=str(e))
    row["first_frame"] = first_frame_hash(p)
    return row


class VideoIndex:
    """The rows of a folder's index files, by resolved path."""

    def __init__(self, rows: dict[str, dict]):
        self.rows = rows

    @classmethod
    def of(cls, *folders: str | os.PathLike) -> "VideoIndex":
        rows: dict[str, dict] = {}
        for folder in folders:
            for f in sorted(Path(folder).glob(f"{PREFIX}*.jsonl")):
                for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
                    try:
                        r = json.loads(line)
                        rows[r["path"]] = r
                    except (json.JSONDecodeError, KeyError, TypeError):
                        log.warning("%s:%d: not an index row (a write cut short?); its facts are recomputed", f, n)
        return cls(rows)

    @classmethod
    def for_manifest(cls, manifest: Manifest) -> "VideoIndex":
        """The index files of ``manifest``'s folder and of every folder between it and its videos: a mix of
        prepared datasets (``data=paper_mix``) reads each dataset's own index."""
        root = Path(os.path.realpath(manifest.root))
        folders = {root}
        for parent in {p.parent for p in manifest.paths()}:
            parent = Path(os.path.realpath(parent))
            while parent != root and root in parent.parents:
                folders.add(parent)
                parent = parent.parent
        return cls.of(*sorted(folders))

    def lookup(self, path: str | os.PathLike) -> dict | None:
        """The row describing the file at ``path`` as it is now (same size and modification time), or None."""
        p = os.path.realpath(path)  # never raises: a link loop is looked up as itself, and matches no row
        r = self.rows.get(p)
        return r if r is not None and r.get("stat") == file_stat(Path(p)) else None

    def __len__(self) -> int:
        return len(self.rows)


def build(manifest: Manifest, workers: int = 1, share: tuple[int, int] | None = None) -> tuple[int, int, list[dict]]:
    """Index ``manifest``'s videos not yet indexed as they are now (share ``i`` of ``n`` of them with ``share``),
    appending each row as it is computed, so a killed run resumes; returns (indexed now, in this share, errors)."""
    from ..features.extract import in_share

    known = VideoIndex.of(manifest.root)
    paths = sorted({os.path.realpath(p) for p in manifest.paths()})
    if share is not None:
        paths = [p for p in paths if in_share(p, *share)]
    todo = [p for p in paths if known.lookup(p) is None]
    name = f"{PREFIX}.jsonl" if share is None else f"{PREFIX}-{share[0]}of{share[1]}.jsonl"
    errors = []
    pool = ProcessPoolExecutor(workers) if workers > 1 and len(todo) > 1 else None
    with open(manifest.root / name, "a", encoding="utf-8") as out, pool or nullcontext():
        for row in pool.map(facts_of, todo, chunksize=8) if pool else map(facts_of, todo):
            out.write(json.dumps(row) + "\n")
            out.flush()
            if row.get("error"):
                errors.append(row)
    return len(todo), len(paths), errors
