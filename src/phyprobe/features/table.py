"""Cached features read in place from the shards: a feature table that is never loaded.

Training pairs reference arbitrary videos, so a sequential stream of shards cannot form them; what
the head needs is random access by row. Shards are uncompressed tars, so each video's
``feats.npy`` payload is one contiguous byte range: an index of (shard, offset) per video turns
any row into one ``pread``. Nothing but the index (a few bytes per video) lives in the process;
the OS page cache keeps hot shards in RAM when it has room and drops them when it does not, so
the process's memory stays flat however many shards the cache holds, and rows come out exactly
as the in-memory table has them (same dtype, same order, same batches).
"""

from __future__ import annotations

import json
import logging
import os
import tarfile
from pathlib import Path
from typing import Iterable

import numpy as np
import torch

from ..data.manifest import Manifest
from .cache import FeatureCache, ManifestCache, sample_key

log = logging.getLogger(__name__)

_MAX_OPEN = 64  # shard file descriptors kept open at once
_HEADER_READERS = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}


def index_shard(tar: Path) -> dict[str, tuple[int, tuple[int, ...], np.dtype]]:
    """id -> (byte offset of the feature array, its shape, its dtype) for one shard."""
    ids = json.loads(tar.with_suffix(".ids.json").read_text())
    by_key = {sample_key(v): v for v in ids}
    out = {}
    with tarfile.open(tar, "r:") as tf, open(tar, "rb") as raw:
        for m in tf:
            key, _, ext = m.name.partition(".")
            if ext != "feats.npy":
                continue
            raw.seek(m.offset_data)
            version = np.lib.format.read_magic(raw)
            if version not in _HEADER_READERS:
                raise ValueError(f"{tar}:{m.name}: unsupported .npy format version {version}")
            shape, fortran, dtype = _HEADER_READERS[version](raw)
            if fortran:
                raise ValueError(f"{tar}:{m.name}: Fortran-ordered array in the feature cache")
            out[by_key[key]] = (raw.tell(), tuple(shape), dtype)
    if len(out) != len(ids):
        raise ValueError(f"{tar}: {len(ids)} ids listed but {len(out)} feature arrays found")
    return out


class ShardFeatureTable:
    """Rows ``ids`` of the cache as an (N, T', D) table indexed like a tensor (int, slice, sequence).

    Safe to use from DataLoader workers: reads are positionless (``preadv``), so forked workers
    can share descriptors, and pickling (spawned workers, DDP) drops them to be reopened.
    """

    def __init__(self, cache: FeatureCache | ManifestCache, ids: Iterable[str]):
        self._fds: dict[int, int] = {}
        ids = list(ids)
        shards = cache.shards()
        where: dict[str, tuple[int, int]] = {}
        shape = dtype = None
        for s, tar in enumerate(shards):
            for vid, (off, shp, dt) in index_shard(tar).items():
                if (shape, dtype) == (None, None):
                    shape, dtype = shp, dt
                elif (shp, dt) != (shape, dtype):
                    raise ValueError(f"{tar}: video {vid} has features {shp} {dt}, others {shape} {dtype}")
                where.setdefault(vid, (s, off))
        keys = [cache.key_of(v) for v in ids]
        missing = [v for v, k in zip(ids, keys) if k not in where]
        if missing:
            raise KeyError(f"{len(missing)} ids not in feature cache {cache.dir}, e.g. {missing[:3]}")
        self.paths = [str(p) for p in shards]
        self.shard = np.array([where[k][0] for k in keys], dtype=np.int32)
        self.offset = np.array([where[k][1] for k in keys], dtype=np.int64)
        self.row_shape = tuple(shape) if shape is not None else (0, 0)
        self.dtype = np.dtype(dtype if dtype is not None else np.float16)
        self.row_bytes = int(np.prod(self.row_shape)) * self.dtype.itemsize

    @property
    def shape(self) -> tuple[int, ...]:
        return (len(self), *self.row_shape)

    def __len__(self) -> int:
        return len(self.shard)

    def __getitem__(self, key) -> torch.Tensor:
        if isinstance(key, torch.Tensor) and key.ndim == 0 or isinstance(key, (int, np.integer)):
            return self._read(np.array([int(key)]))[0]
        rows = np.arange(len(self))[key] if isinstance(key, slice) else np.asarray(key, dtype=np.int64)
        return self._read(rows)

    def _read(self, rows: np.ndarray) -> torch.Tensor:
        out = np.empty((len(rows), *self.row_shape), dtype=self.dtype)
        for j in np.lexsort((self.offset[rows], self.shard[rows])):  # file order: sequential reads where possible
            r = rows[j]
            n = os.preadv(self._fd(int(self.shard[r])), [memoryview(out[j]).cast("B")], int(self.offset[r]))
            if n != self.row_bytes:
                raise OSError(
                    f"{self.paths[self.shard[r]]}: short read at {self.offset[r]} ({n} of {self.row_bytes} bytes)"
                )
        return torch.from_numpy(out)

    def _fd(self, shard: int) -> int:
        fd = self._fds.get(shard)
        if fd is None:
            if len(self._fds) >= _MAX_OPEN:
                self.close()
            fd = self._fds[shard] = os.open(self.paths[shard], os.O_RDONLY)
        return fd

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds = {}

    def __getstate__(self):
        return {**self.__dict__, "_fds": {}}

    def __del__(self):
        self.close()


def load_feature_table(
    cache: ManifestCache, manifest: Manifest, streaming: bool = False
) -> tuple[torch.Tensor | ShardFeatureTable, dict[str, int], Manifest, list[dict]]:
    """The cached features of ``manifest`` as one (N, T', D) table, in the manifest's video order.

    In memory by default; with ``streaming`` the rows are read in place from the cache's shards
    as they are needed, so memory stays flat as the dataset grows. Videos that could not be
    decoded are dropped *loudly*: each is logged and returned in the skipped list, and pairs that
    reference them are removed.
    """
    cached = cache.done_ids()
    failures = cache.failures()
    skipped = []
    for vid, path in zip(manifest.videos["id"], manifest.videos["path"]):
        if vid not in cached:
            reason = failures.get(vid, {}).get("reason", "missing from the feature cache")
            skipped.append({"id": vid, "path": path, "reason": reason})
            log.warning("excluding video %s (%s): %s", vid, path, reason)
    kept = manifest.keep(manifest.videos["id"].isin(cached))
    videos = kept.videos
    if streaming:
        table = ShardFeatureTable(cache, videos["id"])
    else:
        feats = cache.load(videos["id"])
        table = torch.from_numpy(np.stack([feats[v] for v in videos["id"]]))
    row_of = {v: i for i, v in enumerate(videos["id"])}
    return table, row_of, kept, skipped
