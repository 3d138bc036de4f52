"""On-disk feature cache: per-video (T', D) encoder features in webdataset tar shards.

The encoder is frozen and costs almost all of the compute, so features are computed once and keyed
by everything that changes them (the encoder's ``describe()``: name, weights, layer, input size,
resize mode; the clip spec; the storage dtype). Pooling, loss, head and λ ablations then never touch
a video.

Inside a cache a video is stored under its identity, the resolved path of its file
(:func:`video_key`), never under the id one manifest gives it: ``phyprobe extract`` run on each dataset
and a training mix that lists the same files read one cache, and two manifests that both call a
different file ``0001`` never overwrite each other's features. :meth:`FeatureCache.for_manifest` reads
the cache in a manifest's ids.

Layout of one cache directory::

    spec.json                         what the key was made from
    shard-r00-000000.tar              webdataset shard: <key>.feats.npy, <key>.times.npy, <key>.json
    shard-r00-000000.ids.json         ids in that shard (written before the tar is renamed into place)
    failures-r00.jsonl                videos that could not be decoded, with the reason
    content-r00.jsonl                 sha256 (and size, mtime) of each published video's file when it was encoded:
                                      equal bytes are encoded once, and a file replaced since is encoded again
    lock-r00                          held (flock) by the process writing rank 0's shards

A shard becomes visible only by an atomic rename once complete, so a killed extraction leaves no
half shard and a rerun re-extracts exactly the videos that are missing. The ``.tar.tmp`` a killed
writer leaves behind is deleted by the next writer of that rank, which holds the rank's lock and so
knows nobody else is still writing it. A video whose file changed after it was encoded (a world build
drawn again by new code, under the same ids) is taken out of its shard and encoded again, never served
from the old bytes. Shards are plain (uncompressed) tars, which lets
:mod:`.table` read any one video's features in place with a single ``pread``.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import re
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable

import numpy as np
import torch
import webdataset as wds

from ..io.video import ClipSpec

log = logging.getLogger(__name__)


def cache_key(encoder_desc: dict, clip: ClipSpec, dtype: str) -> str:
    """What changes the features, and nothing else: which manifest lists a video is not part of it."""
    blob = json.dumps({"encoder": encoder_desc, "clip": clip.to_dict(), "dtype": dtype}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def video_key(path: str | os.PathLike) -> str:
    """A video's identity in the cache: its file's path with its folder resolved (symbolic links and ``..``
    followed). A file replaced at that path since it was encoded is noticed by its content record
    (:meth:`FeatureCache.changed_ids`); equal bytes at another path are copied, not encoded again (the content
    index)."""
    return video_keys([path])[0]


def video_keys(paths: Iterable[str | os.PathLike]) -> list[str]:
    """:func:`video_key` of many files, each folder resolved once (a million videos in a thousand folders cost a
    thousand ``realpath`` calls, not a million)."""
    folders: dict[str, str] = {}
    out = []
    for p in paths:
        folder, name = os.path.split(os.path.abspath(p))
        if folder not in folders:
            folders[folder] = os.path.realpath(folder)
        out.append(os.path.join(folders[folder], name))
    return out


def sample_key(video_id: str) -> str:
    """A webdataset-safe key (no dots or slashes), unique per id: the id's end (a stored id is a file's path, whose
    end names it) and a hash, short enough that a member's name fits a plain tar header (100 bytes; a longer
    one costs two extra pax headers per member)."""
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", video_id)[-60:]
    return f"{safe}-{hashlib.sha1(video_id.encode()).hexdigest()[:10]}"


class FeatureCache:
    def __init__(self, root: str | os.PathLike, encoder_desc: dict, clip: ClipSpec, dtype: str = "float16"):
        if dtype not in ("float16", "float32"):
            raise ValueError(f"feature cache dtype must be float16 or float32, got {dtype!r}")
        self.dtype = dtype
        self.key = cache_key(encoder_desc, clip, dtype)
        self.dir = Path(root) / f"{encoder_desc['name']}-{self.key}"
        self.spec = {"encoder": encoder_desc, "clip": clip.to_dict(), "dtype": dtype}

    @classmethod
    def open(cls, directory: str | os.PathLike) -> "FeatureCache":
        """The cache in ``directory`` (one ``<encoder>-<key>`` folder), from the ``spec.json`` it was made with."""
        directory = Path(directory)
        spec = json.loads((directory / "spec.json").read_text())
        cache = cls(directory.parent, spec["encoder"], ClipSpec(**spec["clip"]), spec["dtype"])
        if cache.dir.name != directory.name:
            raise ValueError(f"{directory}: its spec.json gives the key {cache.key}, not the folder's name")
        return cache

    def for_manifest(self, manifest) -> "ManifestCache":
        """This cache read in ``manifest``'s ids."""
        keys = video_keys(manifest.video_path(p) for p in manifest.videos["path"])
        return ManifestCache(self, dict(zip(manifest.videos["id"], keys)))

    def key_of(self, vid: str) -> str:
        """The stored key of ``vid``: itself here; a manifest's id in :class:`ManifestCache`."""
        return vid

    def prepare(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        spec_file = self.dir / "spec.json"
        if not spec_file.exists():
            _atomic_write_text(spec_file, json.dumps(self.spec, indent=2, sort_keys=True))

    def shards(self) -> list[Path]:
        return published_shards(self.dir)

    def done_ids(self) -> set[str]:
        done: set[str] = set()
        for tar in self.shards():
            done.update(json.loads(tar.with_suffix(".ids.json").read_text()))
        return done

    def failures(self) -> dict[str, dict]:
        """id -> {path, reason, stat} for every video that failed to decode (latest record wins)."""
        out: dict[str, dict] = {}
        for f in sorted(self.dir.glob("failures-*.jsonl")):
            for line in f.read_text().splitlines():
                if line.strip():
                    r = json.loads(line)
                    out[r["id"]] = r
        return out

    def known_failures(self, paths: dict[str, Path]) -> set[str]:
        """Ids whose recorded failure still holds: the file is unchanged (or still missing) since.

        A warm run must decode nothing, so a corrupt file is not retried on every run; replacing
        the file (new size or mtime) makes it eligible again.
        """
        return {
            vid for vid, r in self.failures().items() if vid in paths and r.get("stat", False) == file_stat(paths[vid])
        }

    def content_records(self) -> dict[str, dict]:
        """id -> the record of the file it was encoded from (its latest: ``sha256``, and ``stat`` when written)."""
        return {vid: r for vid, (r, _) in self._latest_records().items()}

    def _latest_records(self) -> dict[str, tuple[dict, Path]]:
        """id -> (its latest content record, the content file that holds it)."""
        out: dict[str, tuple[dict, Path]] = {}
        for f in sorted(self.dir.glob("content-*.jsonl")):
            *lines, tail = f.read_text().split("\n")  # tail: a line another process is still appending, if any
            for line in lines:
                if line.strip():
                    r = json.loads(line)
                    out[r["id"]] = (r, f)
        return out

    def content_index(self) -> dict[str, str]:
        """sha256 of a file's bytes -> a published id with those bytes."""
        done = self.done_ids()
        out: dict[str, str] = {}
        for vid, r in self.content_records().items():
            if vid in done and r["sha256"] is not None:
                out.setdefault(r["sha256"], vid)
        return out

    def changed_ids(self, paths: dict[str, Path], digest=None) -> set[str]:
        """Published ids among ``paths`` whose file is not the one they were encoded from: its size or mtime
        moved and its bytes differ, or no record says what it was (a cache written before records were kept).
        A file whose bytes still match has its record renewed with its stat, so the next run need not read it.
        ``digest``: a file's sha256 (default :func:`content_hash`; a dataset's index gives it without a read)."""
        digest = digest or content_hash
        done = self.done_ids() & paths.keys()  # first: a published id's record was written before it was published
        records, changed, renewed = self._latest_records(), set(), {}
        for vid in done:
            r, source = records.get(vid, (None, None))
            stat_now = file_stat(paths[vid])
            if r is None:
                changed.add(vid)
            elif r.get("stat") != stat_now:
                if r["sha256"] != digest(paths[vid]):
                    changed.add(vid)
                else:
                    renewed.setdefault(source, []).append({**r, "stat": stat_now})
        for source, rows in renewed.items():  # appended to the record's own file, so the renewal is the latest
            with rank_lock(self.dir, rank_of(source)):
                with open(source, "a", encoding="utf-8") as f:
                    f.write("".join(json.dumps(r) + "\n" for r in rows))
        return changed

    def forget(self, ids: set[str]) -> None:
        """Take ``ids`` out of the published shards, each shard rewritten without them under its rank's lock
        (tar first, then its id list, each by an atomic rename), so they are encoded again."""
        for tar in self.shards():
            if not ids & set(json.loads(tar.with_suffix(".ids.json").read_text())):
                continue
            with rank_lock(self.dir, rank_of(tar)):
                if not tar.with_suffix(".ids.json").exists():  # another process forgot them first
                    continue
                keep = [v for v in json.loads(tar.with_suffix(".ids.json").read_text()) if v not in ids]
                if keep:
                    tmp = str(tar) + ".tmp"
                    wanted = {sample_key(v) for v in keep}
                    with wds.TarWriter(tmp) as w:
                        for sample in wds.WebDataset([str(tar)], shardshuffle=False, empty_check=False):
                            if sample["__key__"] in wanted:
                                w.write({k: v for k, v in sample.items() if k == "__key__" or not k.startswith("__")})
                    os.replace(tmp, tar)
                    _atomic_write_text(tar.with_suffix(".ids.json"), json.dumps(keep))
                else:
                    tar.with_suffix(".ids.json").unlink()  # unpublished first: a tar without its list is never read
                    tar.unlink()

    def writer(self, rank: int = 0, shard_size: int = 256, flush_seconds: float | None = None) -> "ShardWriter":
        self.prepare()
        return ShardWriter(self.dir, rank, shard_size, self.dtype, flush_seconds)

    def iter_samples(self, shards: Iterable[Path] | None = None) -> Iterable[dict]:
        """Stream samples shard by shard: memory stays flat however large the cache is."""
        urls = [str(p) for p in (self.shards() if shards is None else shards)]
        if not urls:
            return
        ds = wds.WebDataset(urls, shardshuffle=False, empty_check=False).decode()
        for s in ds:
            meta = s["json"]
            yield {"id": meta["id"], "feats": s["feats.npy"], "times": s["times.npy"]}

    def load(self, ids: Iterable[str] | None = None) -> dict[str, np.ndarray]:
        """Features of the given ids (all if None) in memory, as stored (fp16 by default)."""
        want = None if ids is None else set(ids)
        out: dict[str, np.ndarray] = {}
        for s in self.iter_samples():
            if want is None or s["id"] in want:
                out[s["id"]] = s["feats"]
        return out


class ManifestCache:
    """A :class:`FeatureCache` read in one manifest's ids: what training, evaluation and the baselines see.

    Each id stands for its video's stored key (:func:`video_key`); ids of one file share its features. Reading
    only: what writes the cache works in stored keys (:func:`phyprobe.features.extract.extract_features`)."""

    def __init__(self, cache: FeatureCache, keys: dict[str, str]):
        self.cache, self.keys = cache, keys
        self.dir, self.dtype, self.key, self.spec = cache.dir, cache.dtype, cache.key, cache.spec
        self._ids_of: dict[str, list[str]] = {}
        for vid, key in keys.items():
            self._ids_of.setdefault(key, []).append(vid)

    def key_of(self, vid: str) -> str:
        return self.keys[vid]

    def shards(self) -> list[Path]:
        return self.cache.shards()

    def done_ids(self) -> set[str]:
        done = self.cache.done_ids()
        return {vid for vid, key in self.keys.items() if key in done}

    def failures(self) -> dict[str, dict]:
        failed = self.cache.failures()
        return {vid: {**failed[key], "id": vid} for vid, key in self.keys.items() if key in failed}

    def content_records(self) -> dict[str, dict]:
        records = self.cache.content_records()
        return {vid: {**records[key], "id": vid} for vid, key in self.keys.items() if key in records}

    def iter_samples(self, shards: Iterable[Path] | None = None) -> Iterable[dict]:
        for s in self.cache.iter_samples(shards):
            for vid in self._ids_of.get(s["id"], ()):
                yield {**s, "id": vid}

    def load(self, ids: Iterable[str] | None = None) -> dict[str, np.ndarray]:
        want = list(self.keys) if ids is None else [v for v in ids if v in self.keys]
        feats = self.cache.load({self.keys[v] for v in want})
        return {v: feats[self.keys[v]] for v in want if self.keys[v] in feats}


def published_shards(directory: Path) -> list[Path]:
    """Complete shards (tar and id list both present), in name order."""
    return sorted(p for p in directory.glob("shard-*.tar") if p.with_suffix(".ids.json").exists())


def lock_path(directory: Path, rank: str) -> Path:
    """The lock a rank's (``r00``) shard writer holds for its lifetime."""
    return directory / f"lock-{rank}"


def rank_of(path: Path) -> str:
    """The rank (``r00``) a shard, id list or content file belongs to, from its name."""
    return path.name.split("-")[1]


@contextmanager
def rank_lock(directory: Path, rank: str) -> Iterator[None]:
    """Hold ``rank``'s lock, waiting for its writer: what changes that rank's files outside the writer."""
    with open(lock_path(directory, rank), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def content_hash(path: Path) -> str | None:
    """sha256 of a regular file's bytes; None for anything else (a FIFO would block the read) or a
    file that cannot be read — decoding then says why."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        with open(path, "rb") as f:
            return hashlib.file_digest(f, "sha256").hexdigest()
    except OSError:
        return None


def file_stat(path: Path) -> list[int] | None:
    """(size, mtime_ns) of a file, None if it is missing: enough to notice it was replaced."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns]


class ShardWriter:
    """Writes samples for one rank into size-capped shards, each published atomically.

    The writer holds the rank's lock for its lifetime. Ids already published (by an earlier run,
    or by a concurrent job that got the lock first) are not written again, so every id lives in
    exactly one shard. A shard is also published once ``flush_seconds`` have passed since its first
    sample, so a kill never loses more than that, however small the job.
    """

    def __init__(self, directory: Path, rank: int, shard_size: int, dtype: str, flush_seconds: float | None = None):
        if shard_size < 1:
            raise ValueError(f"shard_size must be >= 1, got {shard_size}")
        self.dir, self.rank, self.shard_size, self.dtype = directory, rank, shard_size, dtype
        self.rank_name = f"r{rank:02d}"  # what names this rank's lock, shards, content record and failures
        self.flush_seconds = flush_seconds
        self._opened = 0.0
        self._content: list[dict] = []
        self._lock = open(lock_path(directory, self.rank_name), "a")
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.warning("another process is writing rank %d shards of %s; waiting for it", rank, directory)
            fcntl.flock(self._lock, fcntl.LOCK_EX)
        self._remove_leftovers()
        published = published_shards(directory)
        mine = [p for p in published if rank_of(p) == self.rank_name]
        self._seq = 1 + max((int(p.name.split("-")[2][:6]) for p in mine), default=-1)
        self._published = {v for p in published for v in json.loads(p.with_suffix(".ids.json").read_text())}
        self._sink: wds.TarWriter | None = None
        self._ids: list[str] = []
        self._failures = open(directory / f"failures-{self.rank_name}.jsonl", "a", encoding="utf-8")

    def _remove_leftovers(self) -> None:
        """What a killed writer of this rank left: a half-written tar, or an id list whose tar never landed."""
        prefix = f"shard-{self.rank_name}-"
        for p in self.dir.glob(prefix + "*.tmp"):
            log.info("removing %s left by an interrupted extraction", p.name)
            p.unlink()
        for ids in self.dir.glob(prefix + "*.ids.json"):
            if not ids.with_name(ids.name.replace(".ids.json", ".tar")).exists():
                ids.unlink()

    def _path(self) -> Path:
        return self.dir / f"shard-{self.rank_name}-{self._seq:06d}.tar"

    def write(
        self,
        video_id: str,
        feats: torch.Tensor | np.ndarray,
        times: np.ndarray,
        content: str | None = None,
        stat: list[int] | None = None,
    ) -> None:
        """``content``: sha256 of the video file, and ``stat`` its (size, mtime) when read, recorded so the same
        bytes are never encoded twice and a file replaced since is noticed (:meth:`FeatureCache.changed_ids`)."""
        if video_id in self._published:
            return
        if self._sink is None:
            self._sink = wds.TarWriter(str(self._path()) + ".tmp")
            self._opened = time.monotonic()
        arr = feats.detach().float().cpu().numpy() if isinstance(feats, torch.Tensor) else np.asarray(feats)
        self._sink.write(
            {
                "__key__": sample_key(video_id),
                "feats.npy": arr.astype(self.dtype),
                "times.npy": np.asarray(times, dtype=np.float32),
                "json": {"id": video_id},
            }
        )
        self._ids.append(video_id)
        self._published.add(video_id)
        # Always a record, even without a hash (a file that could not be read whole): without one a video would
        # count as changed on every run and be encoded again each time.
        self._content.append({"id": video_id, "sha256": content, "stat": stat})
        late = self.flush_seconds is not None and time.monotonic() - self._opened >= self.flush_seconds
        if len(self._ids) >= self.shard_size or late:
            self.flush()

    def fail(self, video_id: str, path: str, reason: str) -> None:
        record = {"id": video_id, "path": path, "reason": reason, "stat": file_stat(Path(path))}
        self._failures.write(json.dumps(record) + "\n")
        self._failures.flush()

    def flush(self) -> None:
        if self._sink is None:
            return
        self._sink.close()
        final = self._path()
        if self._content:  # before the ids are published: a reader that sees an id published finds its record
            with open(self.dir / f"content-{self.rank_name}.jsonl", "a", encoding="utf-8") as f:
                f.write("".join(json.dumps(r) + "\n" for r in self._content))
        _atomic_write_text(final.with_suffix(".ids.json"), json.dumps(self._ids))
        os.replace(str(final) + ".tmp", final)
        self._sink, self._ids, self._content = None, [], []
        self._seq += 1

    def close(self) -> None:
        self.flush()
        self._failures.close()
        self._lock.close()  # releases the flock


def _atomic_write_text(path: Path, text: str) -> None:
    """Temp file + rename; the temp name is per process because DDP ranks write spec.json together."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
