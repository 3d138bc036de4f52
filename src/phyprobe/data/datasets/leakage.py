"""Leakage guard: a training video that is, or shows the start of, a benchmark test video, or that
was generated from a test prompt, makes that benchmark's figures meaningless.

Three kinds of overlap are looked for between the training manifest and each benchmark's test
split: ``content`` (the same file bytes, under any name or path), ``prompt`` (the same prompt text,
case and spacing ignored) and ``first_frame`` (the same first frame: a perceptual hash, so a
re-encoded copy or a video generated from a test image is caught). Each is an error listing the
videos by id, unless allowed explicitly (``allow``: a kind, a benchmark, or ``benchmark:kind``).
Fingerprints are cached by path, size and modification time, because decoding a first frame of
every video is the slow part.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...errors import UserError
from ..manifest import Manifest
from ..video_index import VideoIndex

log = logging.getLogger(__name__)

KINDS = ("content", "prompt", "first_frame")
BLOCK = 1 << 20  # content fingerprint: file size + three 1 MiB blocks (head, middle, tail)


class LeakageError(UserError, ValueError):
    """Training data overlaps a benchmark's test split; the message lists the overlapping videos."""


@dataclass(frozen=True)
class Overlap:
    kind: str
    benchmark: str
    train_id: str
    test_id: str

    def __str__(self) -> str:
        return f"{self.kind}: training video {self.train_id!r} ~ {self.benchmark} test video {self.test_id!r}"


def content_hash(path: str | os.PathLike) -> str:
    """Size plus the first, middle and last MiB: identical files agree, and compressed videos that
    differ anywhere in practice differ in these blocks too; far cheaper than hashing whole files."""
    size = os.path.getsize(path)
    h = hashlib.blake2b(str(size).encode(), digest_size=16)
    with open(path, "rb") as f:
        for start in sorted({0, max(0, size // 2 - BLOCK // 2), max(0, size - BLOCK)}):
            f.seek(start)
            h.update(f.read(BLOCK))
    return h.hexdigest()


def first_frame_hash(path: str | os.PathLike) -> str | None:
    """A 64-bit difference hash of the first decoded frame (9x8 grey, adjacent-pixel signs); None for a
    near-uniform frame (a black fade-in would make unrelated videos collide) or an unreadable file."""
    import av
    import cv2

    try:
        with av.open(str(path)) as c:
            frame = next(c.decode(video=0)).to_ndarray(format="gray")
    except (av.error.FFmpegError, StopIteration, OSError) as e:
        log.warning("leakage: no first frame from %s (%s)", path, e)
        return None
    if float(frame.std()) < 2.0:
        return None
    small = cv2.resize(frame, (9, 8), interpolation=cv2.INTER_AREA).astype(np.int16)
    bits = (small[:, 1:] > small[:, :-1]).flatten()
    return f"{int(''.join('1' if b else '0' for b in bits), 2):016x}"


def normalise_prompt(text) -> str | None:
    if not isinstance(text, str) or not text.strip():
        return None
    return re.sub(r"\s+", " ", text).strip().casefold()


class FingerprintCache:
    """``(path, size, mtime)`` -> fingerprints, appended to a JSON-lines file as they are computed."""

    def __init__(self, cache_dir: str | os.PathLike | None):
        self.file = Path(cache_dir) / "fingerprints.jsonl" if cache_dir else None
        self.table: dict[str, dict] = {}
        if self.file and self.file.is_file():
            for line in self.file.read_text(encoding="utf-8").splitlines():
                try:
                    r = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line cut by an interrupted run: recomputed
                self.table[r["key"]] = r

    @staticmethod
    def key(path: str) -> str | None:
        try:
            st = os.stat(path)
        except OSError:
            return None
        return f"{os.path.abspath(path)}|{st.st_size}|{st.st_mtime_ns}"

    def get(self, path: str, kind: str) -> str | None:
        key = self.key(path)
        if key is None:
            return None
        rec = self.table.setdefault(key, {"key": key})
        if kind not in rec:
            rec[kind] = content_hash(path) if kind == "content" else first_frame_hash(path)
            if self.file:
                self.file.parent.mkdir(parents=True, exist_ok=True)
                with open(self.file, "a", encoding="utf-8") as f:
                    f.write(json.dumps(rec) + "\n")
        return rec[kind]


def _allowed(o: Overlap, allow: Iterable[str]) -> bool:
    allow = set(allow)
    return bool({o.kind, o.benchmark, f"{o.benchmark}:{o.kind}"} & allow)


def _keys(m: Manifest, kind: str, cache: FingerprintCache, only_sizes: set[int] | None = None) -> dict[str, list[str]]:
    """fingerprint -> video ids of ``m`` for one kind (content hashes only for files of a size in ``only_sizes``)."""
    out: dict[str, list[str]] = {}
    index = VideoIndex.for_manifest(m) if kind == "first_frame" else None  # the first frames decoded once, ahead
    for vid, path, meta in zip(m.videos["id"], m.videos["path"], m.videos["metadata"]):
        if kind == "prompt":
            k = normalise_prompt((meta or {}).get("prompt"))
        else:
            p = str(m.video_path(path))
            if kind == "content" and only_sizes is not None:
                try:
                    if os.path.getsize(p) not in only_sizes:
                        continue
                except OSError:
                    continue
            row = index.lookup(p) if index is not None else None
            k = row["first_frame"] if row else cache.get(p, kind)
        if k is not None:
            out.setdefault(k, []).append(vid)
    return out


def _sizes(m: Manifest) -> set[int]:
    out = set()
    for p in m.paths():
        try:
            out.add(os.path.getsize(p))
        except OSError:
            pass
    return out


def check_leakage(train: Manifest, benchmarks: Iterable[str | Mapping], *, allow: Iterable[str] = (),
                  kinds: Iterable[str] = KINDS, cache_dir: str | os.PathLike | None = None,
                  root: str | os.PathLike | None = None, max_listed: int = 20) -> list[Overlap]:
    """Every overlap between ``train`` and each benchmark's test split; raises :class:`LeakageError`
    listing them if any is not allowed, else returns the (allowed) overlaps. A benchmark whose
    manifest is not on disk cannot be checked: it is logged and skipped."""
    from ...eval.protocols import load_benchmark

    kinds = tuple(kinds)
    unknown = set(kinds) - set(KINDS)
    if unknown:
        raise ValueError(f"leakage kinds must be among {KINDS}, got {sorted(unknown)}")
    cache = FingerprintCache(cache_dir)
    found: list[Overlap] = []
    train_keys: dict[str, dict] = {}
    for b in benchmarks:
        bench = load_benchmark(dict(b) if isinstance(b, Mapping) else b, root=root)
        if bench.manifest is None or not (Path(bench.manifest) / "videos.jsonl").is_file():
            log.warning("leakage: benchmark %s has no manifest on disk (%s); not checked", bench.name, bench.manifest)
            continue
        test = bench.load_manifest()
        for kind in kinds:
            tk = _keys(test, kind, cache)
            if kind == "content":  # content hashes only where a file size matches: stat is cheap, reading is not
                tr = _keys(train, kind, cache, only_sizes=_sizes(test))
            else:
                tr = train_keys.setdefault(kind, _keys(train, kind, cache))
            for k, test_ids in tk.items():
                for tid in tr.get(k, []):
                    found.extend(Overlap(kind, bench.name, tid, x) for x in test_ids)
    bad = [o for o in found if not _allowed(o, allow)]
    if bad:
        listed = "\n  ".join(str(o) for o in bad[:max_listed])
        more = f"\n  ... and {len(bad) - max_listed} more" if len(bad) > max_listed else ""
        raise LeakageError(f"{len(bad)} overlap(s) between the training data and benchmark test splits:\n  {listed}{more}\n"
                           "Remove them from the training data, or allow them explicitly "
                           "(allow: [KIND | BENCHMARK | BENCHMARK:KIND]).")
    for o in found:
        log.warning("leakage allowed: %s", o)
    return found
