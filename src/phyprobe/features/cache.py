"""On-disk feature cache: per-video (T', D) encoder features in webdataset tar shards.

The encoder is frozen and costs almost all of the compute, so features are computed once and keyed
by everything that changes them (the encoder's ``describe()``: name, weights, layer, input size,
resize mode; the clip spec; the storage dtype) plus the manifest they belong to. Pooling, loss, head
and λ ablations then never touch a video.

Layout of one cache directory::

    spec.json                         what the key was made from
    shard-r00-000000.tar              webdataset shard: <key>.feats.npy, <key>.times.npy, <key>.json
    shard-r00-000000.ids.json         ids in that shard (written before the tar is renamed into place)
    failures-r00.jsonl                videos that could not be decoded, with the reason

A shard becomes visible only by an atomic rename once complete, so a killed extraction leaves no
half shard and a rerun re-extracts exactly the videos that are missing.
"""

from __future__ import annotations

import hashlib

import json
import os
import re
from pathlib import Path
from typing import Iterable

import numpy as np
import torch
import webdataset as wds

from ..io.video import ClipSpec


def cache_key(encoder_desc: dict, clip: ClipSpec, dtype: str, manifest_root: str | os.PathLike) -> str:
    blob = json.dumps(
        {"encoder": encoder_desc, "clip": clip.to_dict(), "dtype": dtype, "manifest": str(Path(manifest_root).resolve())},
        sort_keys=True,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def sample_key(video_id: str) -> str:
    """A webdataset-safe key (no dots or slashes), unique per id."""
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", video_id)[:80]
    return f"{safe}-{hashlib.sha1(video_id.encode()).hexdigest()[:10]}"


class FeatureCache:
    def __init__(self, root: str | os.PathLike, encoder_desc: dict, clip: ClipSpec, manifest_root: str | os.PathLike, dtype: str = "float16"):
        if dtype not in ("float16", "float32"):
            raise ValueError(f"feature cache dtype must be float16 or float32, got {dtype!r}")
        self.dtype = dtype
        self.key = cache_key(encoder_desc, clip, dtype, manifest_root)
        self.dir = Path(root) / f"{encoder_desc['name']}-{self.key}"
        self.spec = {"encoder": encoder_desc, "clip": clip.to_dict(), "dtype": dtype, "manifest": str(Path(manifest_root).resolve())}

    def prepare(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        spec_file = self.dir / "spec.json"
        if not spec_file.exists():
            _atomic_write_text(spec_file, json.dumps(self.spec, indent=2, sort_keys=True))

    def shards(self) -> list[Path]:
        """Complete shards (tar and id list both present), in name order."""
        return sorted(p for p in self.dir.glob("shard-*.tar") if p.with_suffix(".ids.json").exists())

    def done_ids(self) -> set[str]:
        done: set[str] = set()
        for tar in self.shards():
            done.update(json.loads(tar.with_suffix(".ids.json").read_text()))
        return done

    def failures(self) -> dict[str, dict]:
        """id -> {path, reason} for every video that failed to decode (latest record wins)."""
        out: dict[str, dict] = {}
        for f in sorted(self.dir.glob("failures-*.jsonl")):
            for line in f.read_text().splitlines():
                if line.strip():
                    r = json.loads(line)
                    out[r["id"]] = r
        return out

    def writer(self, rank: int = 0, shard_size: int = 256) -> "ShardWriter":
        self.prepare()
        return ShardWriter(self.dir, rank, shard_size, self.dtype)

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


class ShardWriter:
    """Writes samples for one rank into size-capped shards, each published atomically."""

    def __init__(self, directory: Path, rank: int, shard_size: int, dtype: str):
        self.dir, self.rank, self.shard_size, self.dtype = directory, rank, shard_size, dtype
        existing = sorted(directory.glob(f"shard-r{rank:02d}-*.tar*"))
        self._seq = 1 + max((int(p.name.split("-")[2][:6]) for p in existing), default=-1)
        self._sink: wds.TarWriter | None = None
        self._ids: list[str] = []
        self._failures = open(directory / f"failures-r{rank:02d}.jsonl", "a", encoding="utf-8")

    def _path(self) -> Path:
        return self.dir / f"shard-r{self.rank:02d}-{self._seq:06d}.tar"

    def write(self, video_id: str, feats: torch.Tensor | np.ndarray, times: np.ndarray) -> None:
        if self._sink is None:
            self._sink = wds.TarWriter(str(self._path()) + ".tmp")
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
        if len(self._ids) >= self.shard_size:
            self.flush()

    def fail(self, video_id: str, path: str, reason: str) -> None:
        self._failures.write(json.dumps({"id": video_id, "path": path, "reason": reason}) + "\n")
        self._failures.flush()

    def flush(self) -> None:
        if self._sink is None:
            return
        self._sink.close()
        final = self._path()
        _atomic_write_text(final.with_suffix(".ids.json"), json.dumps(self._ids))
        os.replace(str(final) + ".tmp", final)
        self._sink, self._ids = None, []
        self._seq += 1

    def close(self) -> None:
        self.flush()
        self._failures.close()


def _atomic_write_text(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


