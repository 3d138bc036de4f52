"""Per-video judge tasks (prompt, reference guide, rubric, question...) read from a JSON-lines file.

Each line is one object naming its video by ``video`` (or ``video_file`` / ``id``, the names SVBench
and Sci-VBench records use): a manifest id, path or file name, resolved exactly as external score
CSVs are. A line that is not JSON, names no video, names a video that is not in the manifest, or
names one twice stops the read with the file and line: a task silently dropped would change a
figure.
"""

from __future__ import annotations

import json
import logging
import os

from ..data.manifest import Manifest
from ..eval.external import video_lookup

log = logging.getLogger(__name__)

VIDEO_KEYS = ("video", "video_file", "id")


class TaskFileError(ValueError):
    """A task line cannot be used; the message names the file and the line."""


def read_tasks(path: str | os.PathLike, manifest: Manifest) -> dict[str, dict]:
    """``{manifest video id: task object}`` from a JSONL task file."""
    names = video_lookup(manifest)
    ids = set(manifest.videos["id"])
    tasks: dict[str, dict] = {}
    where: dict[str, int] = {}
    with open(path, encoding="utf-8") as f:
        for line, text in enumerate(f, start=1):
            if not text.strip():
                continue
            try:
                row = json.loads(text)
            except json.JSONDecodeError as e:
                raise TaskFileError(f"{path}:{line}: not valid JSON ({e.msg})") from None
            if not isinstance(row, dict):
                raise TaskFileError(f"{path}:{line}: expected a JSON object, got {type(row).__name__}")
            key = next((k for k in VIDEO_KEYS if row.get(k) not in (None, "")), None)
            if key is None:
                raise TaskFileError(f"{path}:{line}: no video named (expected one of {list(VIDEO_KEYS)})")
            video = str(row[key]).strip()
            candidates = [video] if video in ids else names.get(video, [])
            if not candidates:
                raise TaskFileError(f"{path}:{line}: video {video!r} is not in the manifest at {manifest.root}")
            if len(set(candidates)) > 1:
                raise TaskFileError(
                    f"{path}:{line}: video {video!r} is ambiguous, it may be any of {sorted(set(candidates))}"
                )
            vid = candidates[0]
            if vid in tasks:
                raise TaskFileError(f"{path}:{line}: video {vid!r} already has a task on line {where[vid]}")
            tasks[vid], where[vid] = {**row, "_line": line}, line
    missing = [v for v in manifest.videos["id"] if v not in tasks]
    if missing:
        log.warning(
            "%s: %d of %d manifest videos have no task and will not be judged (first: %s)",
            path,
            len(missing),
            len(manifest.videos),
            ", ".join(missing[:5]),
        )
    return tasks


def manifest_tasks(manifest: Manifest) -> dict[str, dict]:
    """One task per manifest video from its metadata (``prompt`` and whatever else it carries)."""
    return {
        vid: dict(meta) if isinstance(meta, dict) else {}
        for vid, meta in zip(manifest.videos["id"], manifest.videos["metadata"])
    }
