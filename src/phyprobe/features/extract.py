"""Encode every video of a manifest once, into the feature cache.

Runs through Lightning's ``Trainer.predict`` so that the same code extracts on one CPU or N GPUs of one node
(``--devices N``: DDP, each rank writes its own shards). Started several times by a launcher (``torchrun`` on
any number of nodes, an ``srun`` step, a job array with ``--share I/N``), each process takes its share of the
videos by a hash of each video's identity and extracts it on its own device, with no process group and no
collective: a process that dies or is preempted costs only its unpublished work, and a rerun takes up exactly what
is missing (the pattern of v-iashin/video_features). Decoding and preprocessing happen in DataLoader workers,
overlapped with the encoder; frames of several videos are batched into one forward pass.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import math
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from lightning.pytorch.callbacks import BasePredictionWriter
from lightning.pytorch.plugins.environments import LightningEnvironment
from torch.utils.data import DataLoader, Dataset

from ..data.manifest import Manifest
from ..data.video_index import VideoIndex
from ..encoders import FrozenEncoder
from ..encoders.base import default_encoder_threads
from ..errors import UserError, debug_enabled, user_error_line
from ..io.video import ClipSpec, VideoDecodeError, set_decoder_threads
from ..lightning_setup import L
from ..machine import usable_cores
from .cache import FeatureCache, ManifestCache, cache_key, content_hash, file_stat

log = logging.getLogger(__name__)


class TooManyToExtract(UserError):
    """More videos to encode than the caller lets this one process encode (``max_todo``); nothing was encoded."""

    def __init__(self, count: int, cache_dir: Path, limit: int):
        super().__init__(f"{count} videos are not in the feature cache {cache_dir} (at most {limit} are encoded here)")
        self.count, self.cache_dir, self.limit = count, cache_dir, limit


class ClipDataset(Dataset):
    """(id, path) -> preprocessed clip, or the reason it could not be read (never a silent drop).

    Whatever goes wrong reading one video (a VideoDecodeError, or anything else the decoder or the
    preprocessing raises on its content) becomes that video's reason, so one file never stops a batch;
    an unexpected error is logged with its traceback (and raised under ``--debug``), as it may be a bug.
    """

    def __init__(self, items: list[tuple[str, Path]], clip: ClipSpec, encoder: FrozenEncoder):
        self.items = items
        self.clip = clip
        self.read_clip = encoder.read_clip

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> dict:
        vid, path = self.items[i]
        try:
            frames, c = self.read_clip(path, self.clip, on_host=True)  # uint8 clips finish on the device
            return {"id": vid, "path": str(path), "frames": frames, "times": torch.from_numpy(c.timestamps)}
        except VideoDecodeError as e:
            return {"id": vid, "path": str(path), "error": e.reason}
        except Exception as e:  # noqa: BLE001 - one video's failure is its row, not the batch's end
            if debug_enabled():
                raise
            log.warning("unexpected error reading %s", path, exc_info=True)
            reason = " ".join(f"cannot read video ({type(e).__name__}: {e})".split())  # one line, as every reason
            return {"id": vid, "path": str(path), "error": reason}


def collate_clips(batch: list[dict]) -> dict:
    """A batch of clips; a clip whose shape differs from the batch's first (which the decoder and the
    preprocessing should never give) fails alone rather than failing the whole stack."""
    batch = list(batch)
    ok = [b for b in batch if "error" not in b]
    for b in ok[1:]:
        if b["frames"].shape != ok[0]["frames"].shape:
            got, want = tuple(b["frames"].shape), tuple(ok[0]["frames"].shape)
            b["error"] = f"clip of shape {got} differs from the other clips' {want}"
    ok = [b for b in ok if "error" not in b]
    return {
        "ids": [b["id"] for b in ok],
        "frames": torch.stack([b["frames"] for b in ok]) if ok else None,
        "times": [b["times"] for b in ok],
        "failed": [(b["id"], b["path"], b["error"]) for b in batch if "error" in b],
    }


def _worker_init(_):
    """A decode worker's share of the cores: one torch thread (it must not fight the encoder), and decoder threads
    split among every worker of every device on the node, not the node's count for each."""
    torch.set_num_threads(1)
    info = torch.utils.data.get_worker_info()
    set_decoder_threads(usable_cores() // max(1, (info.num_workers if info else 1) * node_processes()))


def node_processes() -> int:
    """Processes of this launch on this node, each with a device and its decode workers (torchrun, srun)."""
    return max(1, int(os.environ.get("LOCAL_WORLD_SIZE", os.environ.get("SLURM_NTASKS_PER_NODE", "1"))))


class ExtractionModule(L.LightningModule):
    """Encoders that are fed the same clips (:func:`input_key`), run in turn on each batch: one decode serves them all.
    ``predict_step`` gives ``feats``, one tensor per encoder, in order."""

    def __init__(
        self,
        encoders: FrozenEncoder | list[FrozenEncoder],
        autocast_dtype: str | None = "auto",
        cpu_threads: int | None = None,
    ):
        super().__init__()
        self.encoders = torch.nn.ModuleList([encoders] if isinstance(encoders, FrozenEncoder) else encoders)
        self.autocast_dtype = autocast_dtype
        self.cpu_threads = cpu_threads
        self._threads_before = None

    def on_predict_start(self) -> None:
        if self.device.type == "cpu" and self.cpu_threads:  # set in each rank: spawned ranks start fresh
            self._threads_before = torch.get_num_threads()
            torch.set_num_threads(self.cpu_threads)

    def on_predict_end(self) -> None:
        if self._threads_before:
            torch.set_num_threads(self._threads_before)

    def compute_dtype(self, device: torch.device) -> torch.dtype:
        """bf16 (or fp16) autocast on a GPU, float32 on a CPU."""
        if device.type != "cuda" or self.autocast_dtype is None:
            return torch.float32
        return torch.bfloat16 if self.autocast_dtype in ("auto", "bf16", "bfloat16") else torch.float16

    def predict_step(self, batch: dict, batch_idx: int) -> dict:
        if batch["frames"] is None:
            return {**batch, "feats": None}
        x = batch["frames"]
        if x.dtype == torch.uint8:  # resize_in=uint8: converted and normalised here, on the device
            x = self.encoders[0].preprocess.on_device(x)
        dtype = self.compute_dtype(self.device)
        with torch.autocast(self.device.type, dtype=dtype, enabled=dtype != torch.float32):
            feats = [enc(x) for enc in self.encoders]
        return {**batch, "feats": [f.float().cpu() for f in feats]}  # one device->host copy per batch and encoder


class ShardWriterCallback(BasePredictionWriter):
    """Each rank streams its predictions into its own shards as batches finish: the features of the module's
    ``i``-th encoder into ``targets[i]``.

    ``targets``: (cache, copies) per encoder, ``copies`` mapping each id encoded for that cache to (id, path, content
    hash) of every video with the same bytes, which get the same features (or the same failure) without being
    decoded again. An id missing from a cache's ``copies`` is not written there (that cache already has it).
    """

    def __init__(
        self,
        targets: list[tuple[FeatureCache, dict[str, list[tuple[str, str, str | None]]]]],
        shard_size: int = 256,
        flush_seconds: float = 30.0,
        rank: int | None = None,
    ):
        super().__init__(write_interval="batch")
        self.targets, self.shard_size, self.flush_seconds = targets, shard_size, flush_seconds
        self.rank = rank  # the writer's rank: the trainer's global rank unless a launcher's share says otherwise
        self._writers = []
        self.num_written = 0
        self.num_failed = 0
        self.num_encoded = 0  # videos through the encoders (their copies with the same bytes not counted)

    def on_predict_start(self, trainer, pl_module):
        rank = trainer.global_rank if self.rank is None else self.rank
        self._writers = [
            cache.writer(rank=rank, shard_size=self.shard_size, flush_seconds=self.flush_seconds)
            for cache, _ in self.targets
        ]

    def write_on_batch_end(self, trainer, pl_module, prediction, batch_indices, batch, batch_idx, dataloader_idx=0):
        for vid, path, reason in prediction["failed"]:
            for writer, (_, copies) in zip(self._writers, self.targets):
                for cid, cpath, _ in copies.get(vid, []):
                    writer.fail(cid, cpath, reason)
                    self.num_failed += 1
            log.warning("could not read %s (%s): %s", vid, path, reason)
        if prediction["feats"] is not None:
            self.num_encoded += len(prediction["ids"])
            for writer, (_, copies), feats in zip(self._writers, self.targets, prediction["feats"]):
                for vid, f, t in zip(prediction["ids"], feats, prediction["times"]):
                    for cid, cpath, digest in copies.get(vid, []):
                        writer.write(cid, f, t.numpy(), content=digest, stat=file_stat(Path(cpath)))
                        self.num_written += 1

    def on_predict_end(self, trainer, pl_module):
        for writer in self._writers:
            writer.close()


@dataclass
class PassOptions:
    """How an encoder pass runs (the arguments of :func:`extract_features` after the storage dtype)."""

    batch_size: int = 8
    num_workers: int | str = "auto"
    shard_size: int = 256
    trainer_kwargs: dict | None = None
    encoder_threads: int | None = None
    flush_seconds: float = 30.0
    share: tuple[int, int] | None = None
    max_todo: int | None = None

    def __post_init__(self):
        if self.batch_size < 1 or self.shard_size < 1:
            raise UserError(f"batch_size and shard_size must be >= 1, got {self.batch_size} and {self.shard_size}")

    @property
    def writer_rank(self) -> int:
        return 0 if self.share is None else self.share[0]  # a launcher's processes never share a writer's lock


@dataclass
class Pending:
    """An encoder's cache for a manifest and the videos still to encode into it (stored key, file)."""

    cache: FeatureCache
    view: ManifestCache
    todo: list[tuple[str, Path]]


def pending(
    manifest: Manifest, encoder: FrozenEncoder, clip: ClipSpec, cache_root, dtype: str, opts: PassOptions, digest
) -> Pending:
    """Open ``encoder``'s cache for ``manifest`` and list what is not in it yet: videos never encoded, and videos whose
    file changed since (forgotten first, with a warning), within this process's share. Only the share's videos are
    checked and forgotten: the processes of a launch open the cache while the others publish, and one must never
    take out a video another process has just written and will not encode again."""
    cache = FeatureCache(cache_root, encoder.describe(), clip, dtype)
    view = cache.for_manifest(manifest)
    cache.prepare()
    paths: dict[str, Path] = {}  # stored key -> file, once per file however many ids list it
    for vid, p in zip(manifest.videos["id"], manifest.videos["path"]):
        key = view.key_of(vid)
        if opts.share is None or in_share(key, *opts.share):  # another process checks, forgets and encodes the rest
            paths.setdefault(key, manifest.video_path(p))
    changed = cache.changed_ids(paths, digest)
    if changed:
        log.warning(
            "%s: %d videos changed since they were encoded (%s, ...); encoding them again",
            cache.dir,
            len(changed),
            paths[min(changed)],
        )
        cache.forget(changed)
    skip = cache.done_ids() | cache.known_failures(paths)
    todo = [(k, p) for k, p in paths.items() if k not in skip]
    return Pending(cache, view, todo)


def input_key(encoder: FrozenEncoder, clip: ClipSpec) -> tuple:
    """Encoders with equal keys are fed the same tensors from a file (the same reading code, frames and
    preprocessing), so one decode can feed them all."""
    return (type(encoder).read_clip, encoder.clip_spec(clip), encoder.preprocess)


def leaves(encoder: FrozenEncoder, dtype: str) -> list[tuple[FrozenEncoder, str]]:
    """The encoders that decode videos for ``encoder``'s features, each with its cache's dtype: itself, or for one
    derived from other cached features (a fitted model's base, a concatenation's parts), theirs."""
    if callable(getattr(encoder, "derive_parts", None)):
        return [leaf for part in encoder.parts for leaf in leaves(part, encoder.part_dtype)]
    if callable(getattr(encoder, "derive", None)):
        return leaves(encoder.base, encoder.base_dtype)
    return [(encoder, dtype)]


def extract_features(
    manifest: Manifest,
    encoder: FrozenEncoder,
    clip: ClipSpec,
    cache_root: str | Path,
    dtype: str = "float16",
    batch_size: int = 8,
    num_workers: int | str = "auto",
    shard_size: int = 256,
    trainer_kwargs: dict | None = None,
    encoder_threads: int | None = None,
    flush_seconds: float = 30.0,
    share: tuple[int, int] | None = None,
    max_todo: int | None = None,
) -> ManifestCache:
    """Fill the cache for every video of ``manifest`` not already in it; returns the cache, read in the manifest's
    ids. Videos are stored under their file's identity (:func:`~.cache.video_key`), so a video another manifest
    listed is already there: per-dataset extractions fill the cache a training mix of them reads.

    ``num_workers="auto"``: decode in-process on CPU-only machines (measured on 2 cores: 0.97 of
    the pure-forward throughput against 0.85 with one decode worker, which takes a core from the
    encoder), and on a GPU in as many DataLoader workers as keep it fed, from the decode cost and the device's
    forward measured on a few clips before the pass (:func:`measured_workers`), within this process's cores.

    ``encoder_threads`` (CPU only): torch threads per rank; None leaves each rank's decode workers
    a core of their own (:func:`default_encoder_threads`).

    Finished work is published every ``shard_size`` videos and every ``flush_seconds``, so a kill
    loses at most that much whatever the manifest's size. Each distinct file content is encoded
    once: ids whose bytes equal a cached video's are copied from the cache, and ids sharing bytes
    within the run ride on one decode. Features derived from other cached features (a fitted model's, a
    concatenation's) are computed from those caches, filled first; the encoders under a concatenation that are fed
    alike share one decode of each video (:func:`extract_all`).

    ``share=(i, n)``: extract only the videos of share ``i`` of ``n`` (:func:`in_share`), on one device and under
    writer rank ``i``, as one of ``n`` processes a launcher started; the shares of any ``n`` cover every video once.
    ``max_todo``: raise :class:`TooManyToExtract`, before encoding anything, when more videos than that are to be
    encoded (features derived from other cached features, a fitted model's or a concatenation's, are not counted).

    Leaves the global RNG as it found it (iterating a DataLoader draws a seed), so a run on a warm
    cache trains exactly like the cold run that filled it.
    """
    opts = PassOptions(
        batch_size, num_workers, shard_size, trainer_kwargs, encoder_threads, flush_seconds, share, max_todo
    )
    return _extract(manifest, encoder, clip, cache_root, dtype, opts, Digests(manifest))


def extract_all(
    manifest: Manifest, encoders: list[tuple[FrozenEncoder, str]], clip: ClipSpec, cache_root: str | Path, **options
) -> list[ManifestCache]:
    """:func:`extract_features` for each (encoder, cache dtype) of ``encoders``, options as there, with one decode of
    each video for all the encoders under them that are fed alike (:func:`input_key`): a concatenation's parts,
    or a fitted model's base beside another encoder, cost one decode and one preprocessing per video, not one each."""
    opts, digest = PassOptions(**options), Digests(manifest)
    _encode_together(manifest, [leaf for pair in encoders for leaf in leaves(*pair)], clip, cache_root, opts, digest)
    return [_extract(manifest, enc, clip, cache_root, dtype, opts, digest) for enc, dtype in encoders]


def _extract(
    manifest: Manifest, encoder: FrozenEncoder, clip: ClipSpec, cache_root, dtype: str, opts: PassOptions, digest
) -> ManifestCache:
    p = pending(manifest, encoder, clip, cache_root, dtype, opts, digest)
    if not p.todo:
        return p.view
    cache, view, todo = p.cache, p.view, p.todo
    derived = callable(getattr(encoder, "derive_parts", None)) or callable(getattr(encoder, "derive", None))
    if derived:
        wanted = {k for k, _ in todo}
        sub = manifest.keep(np.array([view.key_of(v) in wanted for v in manifest.videos["id"]]))
    if callable(getattr(encoder, "derive_parts", None)):
        _encode_together(sub, leaves(encoder, dtype), clip, cache_root, opts, digest)
        part_caches = [
            _extract(sub, part, clip, cache_root, encoder.part_dtype, opts, digest).cache for part in encoder.parts
        ]
        _concat_parts(cache, part_caches, encoder, todo, opts.shard_size, opts.flush_seconds, opts.writer_rank)
        return view
    if callable(getattr(encoder, "derive", None)):
        base = _extract(sub, encoder.base, clip, cache_root, encoder.base_dtype, opts, digest).cache
        _derive_from_base(cache, base, encoder, todo, opts.shard_size, opts.flush_seconds, opts.writer_rank)
        return view
    if opts.max_todo is not None and len(todo) > opts.max_todo:  # encoded, not derived: the check is here
        raise TooManyToExtract(len(todo), cache.dir, opts.max_todo)
    todo, copies = _share_content(cache, todo, opts.shard_size, opts.flush_seconds, opts.writer_rank, digest)
    if todo:
        log.info("extracting %d of %d videos into %s", len(todo), len(manifest), cache.dir)
        _encode([encoder], [(cache, copies)], todo, clip, opts)
    return view


def _encode_together(
    manifest: Manifest, encoders: list[tuple[FrozenEncoder, str]], clip: ClipSpec, cache_root, opts: PassOptions, digest
) -> None:
    """One pass over the videos that every encoder of a group fed alike (:func:`input_key`) still lacks, each video
    decoded once for the group. Groups of one encoder, and videos only some of a group lack, are left to
    :func:`_extract`."""
    groups: list[list[tuple[FrozenEncoder, str]]] = []
    for enc, dtype in encoders:
        group = next((g for g in groups if input_key(g[0][0], clip) == input_key(enc, clip)), None)
        if group is None:
            groups.append([(enc, dtype)])
        elif all(cache_key(e.describe(), clip, d) != cache_key(enc.describe(), clip, dtype) for e, d in group):
            group.append((enc, dtype))
    for group in (g for g in groups if len(g) > 1):
        pend = [pending(manifest, enc, clip, cache_root, dtype, opts, digest) for enc, dtype in group]
        common = set.intersection(*({k for k, _ in p.todo} for p in pend))
        if not common:
            continue
        todo = [(k, path) for k, path in pend[0].todo if k in common]
        if opts.max_todo is not None and len(todo) > opts.max_todo:
            raise TooManyToExtract(len(todo), pend[0].cache.dir, opts.max_todo)
        targets, reps = [], {}
        for p in pend:
            mine, copies = _share_content(p.cache, todo, opts.shard_size, opts.flush_seconds, opts.writer_rank, digest)
            targets.append((p.cache, copies))
            reps.update(mine)
        if reps:
            log.info(
                "extracting %d of %d videos into %s, one decode for the %d",
                len(reps), len(manifest), ", ".join(str(p.cache.dir) for p in pend), len(pend),
            )  # fmt: skip
            _encode([enc for enc, _ in group], targets, [(k, reps[k]) for k, _ in todo if k in reps], clip, opts)


def _encode(
    encoders: list[FrozenEncoder],
    targets: list[tuple[FeatureCache, dict]],
    todo: list[tuple[str, Path]],
    clip: ClipSpec,
    opts: PassOptions,
) -> None:
    """Decode each video of ``todo`` once and encode it with every one of ``encoders`` (fed alike), writing each
    encoder's features into its target (:class:`ShardWriterCallback`)."""
    dataset = ClipDataset(todo, clip, encoders[0])
    num_workers = auto_workers(dataset, encoders) if opts.num_workers == "auto" else opts.num_workers
    num_workers, prefetch = loader_memory(batch_bytes(encoders[0], clip, opts.batch_size), num_workers, shm_free())
    loader = DataLoader(
        dataset,
        batch_size=opts.batch_size,
        num_workers=num_workers,
        prefetch_factor=prefetch,
        collate_fn=collate_clips,
        worker_init_fn=_worker_init if num_workers else None,
        persistent_workers=False,
        pin_memory=torch.cuda.is_available(),
    )
    share = opts.share
    writer = ShardWriterCallback(targets, opts.shard_size, opts.flush_seconds, None if share is None else share[0])
    kw = {
        "accelerator": "auto",
        "devices": 1,
        "logger": False,
        "enable_checkpointing": False,
        "enable_model_summary": False,
    }
    kw.update(opts.trainer_kwargs or {})
    if share is not None:  # one of a launcher's processes: its own device, and no process group to wait on
        kw.update(devices=[local_rank()] if torch.cuda.is_available() else 1, plugins=[LightningEnvironment()])
        kw.pop("strategy", None)
        kw.pop("num_nodes", None)
    with torch.random.fork_rng(devices=[]):
        trainer = L.Trainer(callbacks=[writer], **kw)
        threads = opts.encoder_threads or default_encoder_threads(num_workers, processes=trainer.num_devices)
        module = ExtractionModule(encoders, cpu_threads=threads)
        start = time.perf_counter()
        trainer.predict(module, loader, return_predictions=False)
    _log_throughput(trainer, module, writer, clip, time.perf_counter() - start)


def _log_throughput(trainer, module: "ExtractionModule", writer: "ShardWriterCallback", clip: ClipSpec, seconds: float):
    """What the pass ran on and how fast: the device, the dtype the encoder computed in, clips and frames per
    second (this process's, over its share of the videos)."""
    device = trainer.strategy.root_device
    dtype = module.compute_dtype(device)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    n = writer.num_encoded
    log.info(
        "encoded %d videos in %.1f s on %s (%s, %s): %.2f clips/s, %.1f frames/s",
        n, seconds, device, name, dtype, n / max(seconds, 1e-9), n * clip.num_frames / max(seconds, 1e-9),
    )  # fmt: skip


def _derive_from_base(
    cache: FeatureCache,
    base_cache: FeatureCache,
    encoder: FrozenEncoder,
    todo: list[tuple[str, Path]],
    shard_size: int,
    flush_seconds: float,
    rank: int = 0,
) -> None:
    """Features of an encoder computed from another's (``encoder.derive``: a dynamics model on its base),
    read from the base's cache: the base is encoded once for every model fitted on it. A video the base
    could not read fails here too, with the base's reason."""
    want = dict(todo)
    failures, records = base_cache.failures(), base_cache.content_records()
    log.info("deriving %d videos' %s features from %s", len(todo), encoder.name, base_cache.dir)
    w = cache.writer(rank=rank, shard_size=shard_size, flush_seconds=flush_seconds)
    try:
        for s in base_cache.iter_samples():
            if s["id"] in want:
                r = records.get(s["id"], {})  # the video's, so a changed file is noticed here too
                w.write(
                    s["id"],
                    encoder.derive(torch.from_numpy(s["feats"])),
                    s["times"],
                    content=r.get("sha256"),
                    stat=r.get("stat"),
                )
        for vid, path in todo:
            if vid in failures:
                w.fail(vid, str(path), failures[vid]["reason"])
    finally:
        w.close()


def _concat_parts(
    cache: FeatureCache,
    part_caches: list[FeatureCache],
    encoder: FrozenEncoder,
    todo: list[tuple[str, Path]],
    shard_size: int,
    flush_seconds: float,
    rank: int = 0,
) -> None:
    """A ``concat`` encoder's features from its parts' caches (``encoder.derive_parts``): each part is encoded
    once, and shared with any run that uses it alone. The first part is streamed; the others' features for the
    videos to do are held in memory meanwhile. A video any part could not read fails with that part's reason."""
    want = dict(todo)
    others = [{s["id"]: s for s in pc.iter_samples() if s["id"] in want} for pc in part_caches[1:]]
    failures = {}
    for pc in part_caches:
        failures.update({v: f for v, f in pc.failures().items() if v in want and v not in failures})
    records = part_caches[0].content_records()
    log.info("concatenating %d videos' features of %d parts into %s", len(todo), len(part_caches), cache.dir)
    w = cache.writer(rank=rank, shard_size=shard_size, flush_seconds=flush_seconds)
    try:
        for s in part_caches[0].iter_samples():
            vid = s["id"]
            if vid not in want or vid in failures or not all(vid in o for o in others):
                continue
            r = records.get(vid, {})
            feats = [torch.from_numpy(s["feats"])] + [torch.from_numpy(o[vid]["feats"]) for o in others]
            w.write(vid, encoder.derive_parts(feats), s["times"], content=r.get("sha256"), stat=r.get("stat"))
        for vid, path in todo:
            if vid in failures:
                w.fail(vid, str(path), failures[vid]["reason"])
    finally:
        w.close()


def _share_content(
    cache: FeatureCache,
    todo: list[tuple[str, Path]],
    shard_size: int,
    flush_seconds: float,
    rank: int = 0,
    digest=content_hash,
) -> tuple[list[tuple[str, Path]], dict[str, list[tuple[str, str, str | None]]]]:
    """Split ``todo`` into one representative per distinct content (to encode) and its copies;
    ids whose content is already cached under another id get those features now."""
    digests, paths = {v: digest(p) for v, p in todo}, dict(todo)
    cached = cache.content_index()
    reuse = {v: cached[d] for v, d in digests.items() if d is not None and d in cached}
    if reuse:
        sources = set(reuse.values())
        feats = {s["id"]: s for s in cache.iter_samples() if s["id"] in sources}
        w = cache.writer(rank=rank, shard_size=shard_size, flush_seconds=flush_seconds)
        try:
            for v, src in reuse.items():
                w.write(v, feats[src]["feats"], feats[src]["times"], content=digests[v], stat=file_stat(paths[v]))
        finally:
            w.close()
        log.info("%d videos have the same content as cached ones: copied, not encoded", len(reuse))
    first: dict[str, str] = {}
    reps, copies = [], {}
    for v, p in todo:
        if v in reuse:
            continue
        d = digests[v]
        rep = first.setdefault(d, v) if d is not None else v
        if rep == v:
            reps.append((v, p))
        copies.setdefault(rep, []).append((v, str(p), d))
    if len(reps) < len(todo) - len(reuse):
        log.info("%d videos share content with others in the run: encoded once", len(todo) - len(reuse) - len(reps))
    return reps, copies


class Digests:
    """A video file's sha256: from its dataset's index (``phyprobe data index``) when a row describes the file as
    it is now, else read from the file. The index is loaded on the first call: a run with nothing new to encode
    never reads it."""

    def __init__(self, manifest: Manifest):
        self.manifest, self.index = manifest, None

    def __call__(self, path: Path) -> str | None:
        if self.index is None:
            self.index = VideoIndex.for_manifest(self.manifest)
        row = self.index.lookup(path)
        return row["sha256"] if row else content_hash(path)


SHM_SHARE = 0.5  # of /dev/shm's free space, for the batches decode workers hold ready


def batch_bytes(encoder: FrozenEncoder, clip: ClipSpec, batch_size: int) -> int:
    """Bytes of one batch of clips as decode workers hand it over (uint8 with ``resize_in=uint8``, else float32)."""
    pre = encoder.preprocess
    frames = encoder.clip_spec(clip).num_frames
    return batch_size * frames * 3 * pre.size[0] * pre.size[1] * (1 if pre.in_uint8 else 4)


def shm_free() -> int | None:
    """Free bytes in /dev/shm, where DataLoader workers put the batches they hand over; None where there is none."""
    try:
        st = os.statvfs("/dev/shm")
    except OSError:
        return None
    return st.f_bavail * st.f_frsize


def loader_memory(batch: int, num_workers: int, shm: int | None) -> tuple[int, int | None]:
    """(decode workers, batches each holds ready) whose batches fit in :data:`SHM_SHARE` of ``shm`` bytes: two
    each when there is room, else one, else fewer workers. When not even one batch fits (a container's default
    64 MB /dev/shm against ~1 GB of float32 clips), decoding stays in this process, which needs no shared memory,
    and the log says how to give the workers room: this is slow, never a crash."""
    if num_workers == 0 or shm is None:
        return num_workers, (None if num_workers == 0 else 2)
    budget = int(shm * SHM_SHARE)
    for workers in range(num_workers, 0, -1):
        for prefetch in (2, 1):
            if workers * prefetch * batch <= budget:
                if workers < num_workers:
                    log.warning(
                        "/dev/shm has %d MB free: %d decode workers instead of %d (each batch is %d MB); give the "
                        "container more (docker --shm-size) or lower extract.batch_size",
                        shm >> 20, workers, num_workers, batch >> 20,
                    )  # fmt: skip
                return workers, prefetch
    log.warning(
        "/dev/shm has %d MB free, less than one batch of clips (%d MB) needs: decoding in this process, slowly; give "
        "the container more (docker --shm-size), lower extract.batch_size, or use +backbone.resize_in=uint8",
        shm >> 20, batch >> 20,
    )  # fmt: skip
    return 0, None


WORKERS_SAMPLE = 4  # clips decoded in this process to measure what a decode worker delivers


def auto_workers(dataset: "ClipDataset", encoders: list[FrozenEncoder]) -> int:
    """``num_workers="auto"``: none on a CPU (decoding in-process, see :func:`extract`); on a GPU, as many as keep
    this process's device fed (:func:`measured_workers`), within its share of the node's cores."""
    if not torch.cuda.is_available():
        return 0
    cores = max(1, usable_cores() // node_processes())
    return measured_workers(dataset, encoders, torch.device("cuda", local_rank()), cores)


def workers_for(decode_seconds: float, forward_seconds: float, cores: int) -> int:
    """Decode workers that keep pace with the device: a clip's decode and preprocessing over the encoders' forward
    of a clip, rounded up, plus one for the spread between clips' decode times; at least one, at most ``cores``."""
    need = math.ceil(decode_seconds / max(forward_seconds, 1e-9)) + 1
    return max(1, min(int(cores), need))


def measured_workers(dataset: "ClipDataset", encoders: list[FrozenEncoder], device: torch.device, cores: int) -> int:
    """:func:`workers_for` from measurements in this process: the decode and preprocessing of the first
    :data:`WORKERS_SAMPLE` clips of ``dataset``, and the encoders' forward of that batch on ``device`` as the pass
    runs it (its autocast; timed after a warm-up forward). Logged, with the figures it was chosen from; a sample that
    cannot be read gives the decode cost alone no answer, and then ``cores`` workers."""
    t0 = time.perf_counter()
    sample = [dataset[i] for i in range(min(WORKERS_SAMPLE, len(dataset)))]
    decode = (time.perf_counter() - t0) / max(1, len(sample))
    batch = collate_clips(sample)
    if batch["frames"] is None:
        log.info("decode workers: %d (no clip of the sample could be read to measure the pace)", cores)
        return cores
    module = ExtractionModule(encoders).to(device).eval()
    batch["frames"] = batch["frames"].to(device)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    with torch.inference_mode():
        module.predict_step(batch, 0)  # warm-up: kernels chosen, memory allocated
        sync()
        t0 = time.perf_counter()
        module.predict_step(batch, 0)
        sync()
    forward = (time.perf_counter() - t0) / batch["frames"].shape[0]
    workers = workers_for(decode, forward, cores)
    log.info(
        "decode workers: %d per device (decode and preprocessing %.3f s a clip, the encoders' forward %.4f s a clip on "
        "%s; at most %d cores)",
        workers, decode, forward, device, cores,
    )  # fmt: skip
    return workers


def in_share(key: str, index: int, count: int) -> bool:
    """Whether the video stored under ``key`` belongs to share ``index`` of ``count``: a hash of its identity, so
    every process of a launcher agrees without talking, and a rerun takes up the same share."""
    return int(hashlib.sha1(key.encode()).hexdigest()[:12], 16) % count == index


def launcher_share() -> tuple[int, int] | None:
    """(this process's index, the number of processes) when a launcher started several copies of this command:
    ``torchrun`` (``RANK``/``WORLD_SIZE``, any number of nodes) or an ``srun`` step (``SLURM_PROCID``/
    ``SLURM_STEP_NUM_TASKS``, set for a step's tasks and not for the batch script itself); None for one process."""
    env = os.environ
    for rank, size in (("RANK", "WORLD_SIZE"), ("SLURM_PROCID", "SLURM_STEP_NUM_TASKS")):
        if env.get(size, "1").isdigit() and int(env.get(size, "1")) > 1 and env.get(rank, "").isdigit():
            return int(env[rank]), int(env[size])
    return None


def local_rank() -> int:
    """This process's index on its node (the GPU it takes): torchrun's ``LOCAL_RANK`` or SLURM's ``SLURM_LOCALID``."""
    return int(os.environ.get("LOCAL_RANK", os.environ.get("SLURM_LOCALID", "0")))


def add_cli(sub) -> None:
    p = sub.add_parser(
        "extract",
        help="encode a manifest's videos once into the feature cache",
        description="Encode a manifest's videos once into the feature cache. Given train.py's overrides "
        "(phyprobe extract data/prepared/videophy2 backbone=perception_encoder), the encoder, clip and storage "
        "dtype are the ones train.py composes from the same overrides, so a training run on any manifest listing "
        "these files reads the cache and encodes nothing.",
    )
    p.add_argument("manifest", type=Path, help="a manifest folder (videos.jsonl), e.g. data/prepared/videophy2")
    p.add_argument(
        "overrides",
        nargs="*",
        metavar="OVERRIDE",
        help="train.py's config overrides (backbone=..., clip.num_frames=...): extract exactly what it would",
    )
    p.add_argument("--encoder", default=None, help="a registered encoder instead (default efficientnet_lite0)")
    p.add_argument("--image-size", type=_positive_int, default=None, help="with --encoder: its input size in pixels")
    p.add_argument("--num-frames", type=_positive_int, default=None, help="with --encoder (default 16)")
    p.add_argument(
        "--cache", type=Path, default=Path(".cache/features"), help="feature cache root (train.py's paths.cache_dir)"
    )
    p.add_argument("--batch-size", type=_positive_int, default=8, help="clips per encoder forward pass")
    p.add_argument(
        "--shard-size",
        type=_positive_int,
        default=256,
        help="videos per published shard (work is also published every 30 s)",
    )
    p.add_argument(
        "--workers", type=_non_negative_int, default=1, help="decode worker processes per device (0: decode in-process)"
    )
    p.add_argument("--devices", default="1", help="devices of this node for DDP, e.g. 8 or 'auto'")
    p.add_argument(
        "--accelerator",
        choices=("auto", "gpu", "cpu"),
        default="auto",
        help="auto: a GPU when torch sees one; more than one device, or gpu, is refused when it sees none (cpu: that "
        "many CPU processes)",
    )
    p.add_argument(
        "--share",
        type=share_arg,
        default=None,
        metavar="I/N",
        help="extract share I of N (0-based), as one task of a job array; under torchrun or srun the share is "
        "read from the launcher",
    )
    p.set_defaults(func=_cli)


def _check_gpu_asked(accelerator: str, devices) -> None:
    """Refuse to fall back to the CPU when GPUs were asked for (``--accelerator gpu``, or several devices with
    ``auto``): a driver too old for this torch makes ``auto`` pick the CPU, which would take weeks, not say so."""
    if torch.cuda.is_available() or accelerator == "cpu" or (accelerator == "auto" and devices == 1):
        return
    asked = "--accelerator gpu" if accelerator == "gpu" else f"--devices {devices}"
    raise UserError(
        f"{asked}: torch {torch.__version__} sees no GPU (built for CUDA {torch.version.cuda}); check the driver "
        "with nvidia-smi (this torch needs a recent one), or pass --accelerator cpu to run on the CPU"
    )


def share_arg(text: str) -> tuple[int, int]:
    """``I/N`` as a command's ``--share`` takes it: share I (0-based) of N."""
    i, _, n = text.partition("/")
    if not (i.isdigit() and n.isdigit()) or not 0 <= int(i) < int(n):
        raise argparse.ArgumentTypeError(f"{text!r} is not I/N with 0 <= I < N")
    return int(i), int(n)


def _positive_int(text: str) -> int:
    return _int_at_least(text, 1)


def _non_negative_int(text: str) -> int:
    return _int_at_least(text, 0)


def _int_at_least(text: str, lo: int) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if v < lo:
        raise argparse.ArgumentTypeError(f"must be >= {lo}, got {v}")
    return v


def _as_training_composes(overrides: list[str]) -> tuple[list[tuple[FrozenEncoder, str]], ClipSpec]:
    """What train.py's extract stage encodes for ``overrides`` (each frozen encoder with its cache's dtype: for a
    part fitted in the run, the encoder under it) and the clip it reads."""
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException

    from ..config_files import config_dir
    from ..instantiate import frozen_inputs

    try:
        with initialize_config_dir(version_base="1.3", config_dir=str(config_dir())):
            cfg = compose("train", overrides=overrides)
    except HydraException as e:
        raise UserError(f"train.py overrides {' '.join(overrides)}: {str(e).splitlines()[0]}") from None
    return frozen_inputs(cfg.backbone, str(cfg.feature_dtype)), ClipSpec(**cfg.clip)


def _cli(args) -> int:
    from ..encoders import available_configs, from_config

    manifest = Manifest.load(args.manifest)  # the cheap checks first
    if args.overrides and (args.encoder or args.image_size or args.num_frames):
        raise UserError("give either train.py's overrides or --encoder/--image-size/--num-frames, not both")
    if args.overrides:
        encoders, clip = _as_training_composes(args.overrides)
    else:
        name = args.encoder or "efficientnet_lite0"
        if name not in available_configs():
            raise UserError(f"unknown encoder {name!r}; available: {', '.join(available_configs())}")
        encoders = [(from_config(name, **({"image_size": args.image_size} if args.image_size else {})), "float16")]
        clip = ClipSpec(args.num_frames or 16)
    devices = int(args.devices) if args.devices.isdigit() else args.devices
    share = args.share or launcher_share()
    if share is not None and devices != 1:
        raise UserError(f"--devices {args.devices}: a launcher's process (share {share[0]}/{share[1]}) uses one device")
    _check_gpu_asked(args.accelerator, devices)
    tk = {"devices": devices, "accelerator": args.accelerator}
    if devices != 1:
        tk["strategy"] = "ddp"
    failed = False
    caches = extract_all(
        manifest, encoders, clip, args.cache, batch_size=args.batch_size, num_workers=args.workers,
        shard_size=args.shard_size, trainer_kwargs=tk, share=share,
    )  # fmt: skip
    for cache in caches:
        ids = set(manifest.videos["id"])
        if share is not None:  # this process answers for its share; the others report theirs
            ids = {v for v in ids if in_share(cache.key_of(v), *share)}
        done = cache.done_ids() & ids
        fails = {v: r for v, r in cache.failures().items() if v in ids and v not in done}
        part = "" if share is None else f"  share {share[0]}/{share[1]}"
        print(f"cache: {cache.dir}{part}  videos: {len(done)} of {len(ids)}  unreadable: {len(fails)}")
        for r in fails.values():
            print(user_error_line(f"{r['path']}: {r['reason']}"), file=sys.stderr)
        failed = failed or bool(fails)
    return 1 if failed else 0
