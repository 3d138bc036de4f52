"""Scoring many videos into a results file that survives a kill: a night's worth of generated samples.

Videos go through the feature extractor's Lightning ``Trainer.predict`` path (decode and
preprocess in DataLoader workers while the encoder runs, bf16 on GPUs, one process per GPU or
node with DDP); the head is applied as each batch finishes and its rows are appended to the
results file with one ``write`` and an ``fsync``. A rerun reads which videos the file already
answers (scored or failed) and does only the rest, so a kill loses at most the batches in flight
and nothing is ever scored twice. A torn last line (killed mid-write) is cut off before resuming. The results file
itself (:class:`ResultFile`: what counts as ours, its one-writer lock, whole rows on a full disk) is in
:mod:`phyprobe.scorer.results`, which imports no torch, so a wrong ``--out`` is refused at once.
"""

from __future__ import annotations

import glob
import logging
import math
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from lightning.pytorch.callbacks import BasePredictionWriter
from torch.utils.data import DataLoader

from ..errors import UserError
from ..features.extract import (
    ClipDataset,
    ExtractionModule,
    _worker_init,
    auto_workers,
    collate_clips,
    default_encoder_threads,
)
from ..io import VIDEO_SUFFIXES
from ..lightning_setup import L
from .core import NonFiniteScoreError, Scorer
from .results import CSV_FIELDS, ResultFile, ResultsFileError  # noqa: F401 - the results file lives beside, light

log = logging.getLogger(__name__)

LIST_SUFFIXES = (".txt", ".lst", ".list")


class InputError(UserError, ValueError):
    """An input that names no videos (empty directory, unmatched glob, unreadable list)."""


def resolve_inputs(inputs: list[str | Path]) -> list[str]:
    """Video paths from directories (recursive), globs, text lists (one path a line, relative to the
    list), manifests (a directory with videos.jsonl, or that file) and plain paths, in order, without
    repeats. A plain path that does not exist is kept: scoring reports it as unreadable; so is a
    directory named like a video (``clip.mp4/``) that holds none, which the user meant as one video."""
    out: list[str] = []
    for item in inputs:
        p = Path(item)
        if p.is_dir() and (p / "videos.jsonl").is_file():
            out += _manifest_paths(p)
        elif p.is_file() and p.name.endswith(".jsonl"):
            out += _manifest_paths(p.parent)
        elif p.is_dir():
            # anything named like a video that is not a folder (a FIFO, a broken link) is kept: scoring reports it
            found = sorted(str(f) for f in p.rglob("*") if f.suffix.lower() in VIDEO_SUFFIXES and not f.is_dir())
            _report_skipped(p)
            if not found and p.suffix.lower() in VIDEO_SUFFIXES:
                found = [str(p)]
            if not found:
                raise InputError(f"{p}: no videos ({', '.join(VIDEO_SUFFIXES)}) in this directory")
            out += found
        elif p.is_file() and p.suffix.lower() in LIST_SUFFIXES:
            out += _list_paths(p)
        elif not p.exists() and glob.has_magic(str(item)):
            found = sorted(glob.glob(str(item), recursive=True))
            if not found:
                raise InputError(f"{item}: the pattern matches no files")
            out += found
        else:
            out.append(str(p))
    return list(dict.fromkeys(out))


def _report_skipped(folder: Path) -> None:
    """One warning naming the files of ``folder`` not scored because their suffix is not a video's, so none is
    dropped without a word (a folder's .json, .txt and .webp thumbnails are common)."""
    skipped = sorted(
        f.relative_to(folder).as_posix()
        for f in folder.rglob("*")
        if f.suffix.lower() not in VIDEO_SUFFIXES and not f.is_dir() and not f.name.startswith(".")
    )
    if skipped:
        more = f" and {len(skipped) - 10} more" if len(skipped) > 10 else ""
        log.warning(
            "%s: %d file(s) not scored, not named as videos (%s): %s%s",
            folder,
            len(skipped),
            ", ".join(VIDEO_SUFFIXES),
            ", ".join(skipped[:10]),
            more,
        )


def _manifest_paths(root: Path) -> list[str]:
    from ..data.manifest import Manifest

    return [str(p) for p in Manifest.load(root).paths()]


def _list_paths(file: Path) -> list[str]:
    try:
        lines = file.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as e:
        raise InputError(f"{file}: not a UTF-8 text list of videos ({e})") from e
    paths = [ln.strip() for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]
    if not paths:
        raise InputError(f"{file}: the list names no videos")
    return [str(q if (q := Path(x)).is_absolute() else file.parent / q) for x in paths]


def result_row(video: str, raw: float | Exception) -> dict:
    if isinstance(raw, Exception):
        return {"video": video, "error": getattr(raw, "reason", str(raw))}
    return {"video": video, "score": min(1.0, max(0.0, raw)), "raw_score": raw}


class _RowSink(BasePredictionWriter):
    """Applies the head to each finished batch and hands its rows, in input order, to ``emit``."""

    def __init__(self, scorer: Scorer, order: dict[str, int], emit, progress=None):
        super().__init__(write_interval="batch")
        self.scorer, self.order, self.emit, self.progress = scorer, order, emit, progress
        self.scored = self.failed = 0

    def write_on_batch_end(self, trainer, pl_module, prediction, batch_indices, batch, batch_idx, dataloader_idx=0):
        rows: list[tuple[str, float | Exception]] = [(vid, _Failed(reason)) for vid, _, reason in prediction["failed"]]
        if prediction["feats"] is not None:
            raw = self.scorer.head_scores(prediction["feats"][0]).cpu().tolist()
            for vid, v in zip(prediction["ids"], raw):
                rows.append((vid, v if math.isfinite(v) else NonFiniteScoreError(vid, v)))
        rows.sort(key=lambda r: self.order[r[0]])
        out = [result_row(vid, v) for vid, v in rows]
        self.emit(out)
        n_bad = sum("error" in r for r in out)
        self.failed += n_bad
        self.scored += len(out) - n_bad
        if self.progress is not None:
            self.progress.advance(len(out))


class _Failed(Exception):
    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass
class BatchReport:
    total: int  # videos named by the inputs
    already_done: int  # answered by the results file before this run
    scored: int  # in this process (under ddp_spawn the ranks' rows are in the results, not here)
    failed: int
    failed_before: int  # error rows left by earlier runs
    seconds: float

    @property
    def videos_per_s(self) -> float:
        return (self.scored + self.failed) / self.seconds if self.seconds > 0 else 0.0


def quiet_lightning() -> None:
    """Lightning's start-up notices (accelerators found, tips) are not a scoring command's output."""
    import warnings

    logging.getLogger("lightning.pytorch").setLevel(logging.WARNING)
    warnings.filterwarnings("ignore", message=".*does not have many workers.*")
    warnings.filterwarnings("ignore", message=".*GPU available but not used.*")


def _pending(videos: list[str], done: dict[str, dict] | None) -> tuple[list[str], BatchReport, float]:
    """The videos ``done`` does not answer, a report counting what it does, and the start time."""
    done = done or {}
    todo = [v for v in videos if v not in done]
    report = BatchReport(len(videos), len(videos) - len(todo), 0, 0, sum("error" in r for r in done.values()), 0.0)
    return todo, report, time.perf_counter()


def score_videos(
    scorer: Scorer,
    videos: list[str],
    emit,
    done: dict[str, dict] | None = None,
    batch_size: int = 8,
    num_workers: int | str = "auto",
    devices: int | str = 1,
    trainer_kwargs: dict | None = None,
    encoder_threads: int | None = None,
    progress: bool = False,
) -> BatchReport:
    """Score ``videos`` not in ``done`` through ``Trainer.predict``; ``emit(rows)`` gets each batch's rows."""
    todo, report, t0 = _pending(videos, done)
    if todo:
        dataset = ClipDataset([(v, Path(v)) for v in todo], scorer.clip, scorer.encoder)
        if num_workers == "auto":
            num_workers = auto_workers(dataset, [scorer.encoder])
        loader = DataLoader(
            dataset,
            batch_size=batch_size,
            num_workers=num_workers,
            collate_fn=collate_clips,
            worker_init_fn=_worker_init if num_workers else None,
            pin_memory=torch.cuda.is_available(),
        )
        kw = {
            "accelerator": "auto",
            "devices": devices,
            "logger": False,
            "enable_checkpointing": False,
            "enable_model_summary": False,
            "enable_progress_bar": False,
        }
        if devices not in (1, "1"):
            kw["strategy"] = "ddp"
        kw.update(trainer_kwargs or {})
        with _progress(progress, len(todo)) as bar:
            sink = _RowSink(scorer, {v: i for i, v in enumerate(todo)}, emit, bar)
            with torch.random.fork_rng(devices=[]):
                trainer = L.Trainer(callbacks=[sink], **kw)
                threads = encoder_threads or default_encoder_threads(num_workers, processes=trainer.num_devices)
                trainer.predict(ExtractionModule(scorer.encoder, cpu_threads=threads), loader, return_predictions=False)
        scorer.encoder.to(scorer.device)  # Lightning moved it to its device; keep the scorer whole
        report.scored, report.failed = sink.scored, sink.failed
    report.seconds = time.perf_counter() - t0
    return report


def score_windowed_videos(
    scorer: Scorer, videos: list[str], emit, done: dict[str, dict] | None = None, progress: bool = False
) -> BatchReport:
    """Score ``videos`` not in ``done`` one at a time in this process, each read as the scorer's reading says (a long
    video's windows batched through the encoder, their raw scores combined); ``emit(rows)`` gets each video's row."""
    todo, report, t0 = _pending(videos, done)
    with _progress(progress, len(todo)) as bar:
        for v in todo:
            row = result_row(v, scorer.score_raw_many([v])[0])
            emit([row])
            report.failed += "error" in row
            report.scored += "error" not in row
            if bar is not None:
                bar.advance(1)
    report.seconds = time.perf_counter() - t0
    return report


def score_files(
    scorer: Scorer, videos: list[str], emit, done: dict[str, dict] | None = None, progress: bool = False, **batch_kwargs
) -> BatchReport:
    """Every video read as the scorer's reading says, rows emitted in input order: runs of videos read as one clip
    through :func:`score_videos` (workers, devices, batches across videos), videos cut into windows by
    :func:`score_windowed_videos`."""
    todo, report, t0 = _pending(videos, done)
    runs: list[tuple[bool, list[str]]] = []
    for v in todo:
        windowed = scorer.in_windows(v)
        if runs and runs[-1][0] == windowed:
            runs[-1][1].append(v)
        else:
            runs.append((windowed, [v]))
    for windowed, chunk in runs:
        part = (
            score_windowed_videos(scorer, chunk, emit, progress=progress)
            if windowed
            else score_videos(scorer, chunk, emit, progress=progress, **batch_kwargs)
        )
        report.scored, report.failed = report.scored + part.scored, report.failed + part.failed
    report.seconds = time.perf_counter() - t0
    return report


class _progress:
    """A rich progress bar with videos/s on stderr (only when it is a terminal and asked for)."""

    def __init__(self, enabled: bool, total: int):
        first_rank = os.environ.get("LOCAL_RANK", "0") == "0" and os.environ.get("NODE_RANK", "0") == "0"
        self.enabled, self.total, self.p, self.task = enabled and first_rank and sys.stderr.isatty(), total, None, None

    def __enter__(self):
        if not self.enabled:
            return None
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            ProgressColumn,
            TextColumn,
            TimeRemainingColumn,
        )
        from rich.text import Text

        class Speed(ProgressColumn):
            def render(self, task):
                return Text(f"{task.speed or 0.0:.1f} videos/s")

        self.p = Progress(
            TextColumn("scoring"),
            BarColumn(),
            MofNCompleteColumn(),
            Speed(),
            TimeRemainingColumn(),
            console=Console(stderr=True),
        )
        self.p.start()
        self.task = self.p.add_task("scoring", total=self.total)
        return self

    def advance(self, n: int) -> None:
        self.p.advance(self.task, n)

    def __exit__(self, *exc):
        if self.p is not None:
            self.p.stop()
        return False
