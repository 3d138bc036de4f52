"""Judge tasks (prompt, reference guide, rubric, question...) read from a JSON-lines file: per video, or per prompt.

A task file has one object per line naming its video by ``video`` (or ``video_file`` / ``id``, the names SVBench
and Sci-VBench records use): a manifest id, path or file name, resolved exactly as external score
CSVs are. A line that is not JSON, names no video, names a video that is not in the manifest, or
names one twice stops the read with the file and line: a task silently dropped would change a
figure.

A prompt suite (``phyprobe.suites``: lines with ``prompt_id`` and ``prompt`` and no video) is read as well: many
videos (one per generator) share a prompt, so each manifest video gets the task of the record named by its
``metadata.prompt_id``, as the leaderboard's ``videos.jsonl`` carries it. A video without a prompt id, or with one
the suite lacks, stops the read.
"""

from __future__ import annotations

import json
import logging
import os

from ..data.manifest import Manifest
from ..errors import UserError
from ..eval.external import video_lookup

log = logging.getLogger(__name__)

VIDEO_KEYS = ("video", "video_file", "id")


class TaskFileError(UserError, ValueError):
    """A task line cannot be used; the message names the file and the line."""


def is_suite(path: str | os.PathLike) -> bool:
    """Whether the first record of a JSONL file is a prompt-suite record (``prompt_id`` and ``prompt``, no video)."""
    with open(path, encoding="utf-8", errors="replace") as f:
        for text in f:
            if text.strip():
                try:
                    row = json.loads(text)
                except json.JSONDecodeError:
                    return False
                return isinstance(row, dict) and {"prompt_id", "prompt"} <= set(row) and not set(VIDEO_KEYS) & set(row)
    return False


def suite_tasks(path: str | os.PathLike, manifest: Manifest) -> dict[str, dict]:
    """``{manifest video id: the task of the suite record named by its metadata.prompt_id}``."""
    from ..suites.format import read_suite

    records = {r.prompt_id: r for r in read_suite(path)}
    tasks: dict[str, dict] = {}
    unnamed, unknown = [], []
    for vid, meta in zip(manifest.videos["id"], manifest.videos["metadata"]):
        pid = meta.get("prompt_id") if isinstance(meta, dict) else None
        pid = None if pid is None else str(pid).strip()
        if not pid:
            unnamed.append(vid)
        elif pid not in records:
            unknown.append(f"{vid} ({pid})")
        else:
            tasks[vid] = {**records[pid].task(), "_where": f"{path}: prompt_id {pid!r}"}
    total = len(manifest.videos)
    if unnamed:
        raise TaskFileError(
            f"{path}: {len(unnamed)} of {total} videos of {manifest.root} have no metadata.prompt_id, by which a prompt "
            f"suite is matched to videos (first: {', '.join(unnamed[:3])})"
        )
    if unknown:
        raise TaskFileError(
            f"{path}: {len(unknown)} of {total} videos of {manifest.root} have a prompt_id this suite does not hold "
            f"(first: {', '.join(unknown[:3])})"
        )
    return tasks


def read_tasks(path: str | os.PathLike, manifest: Manifest) -> dict[str, dict]:
    """``{manifest video id: task object}`` from a JSONL task file or prompt suite; each task carries ``_where``
    (``file:line``, or the suite and prompt id) for the errors of the judge that reads it."""
    if is_suite(path):
        return suite_tasks(path, manifest)
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
            tasks[vid], where[vid] = {**row, "_line": line, "_where": f"{path}:{line}"}, line
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
