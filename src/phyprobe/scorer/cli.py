"""``phyprobe score``: videos, directories, globs, lists or manifests -> one score in [0, 1] each.

Each video is read as the scorer was trained to read it (its recorded reading: a video longer than the
training clip in windows of the clip's length, their scores combined); ``--reading`` chooses another. Without
``--out`` rows go to stdout as they finish (text: the clipped score, the raw score, the video; rank by the raw
score, which does not tie at 0 or 1); with ``--out`` they are appended, ``score`` and ``raw_score`` both, to a
JSONL or CSV results file that a rerun resumes. ``--out`` takes a new file or a results file this command wrote
(anything else, a video, another tool's file, a device, is refused untouched), and one run writes it at a time.
User errors end in one line naming the file and the reason (``--debug`` shows the traceback); the exit code is 1
when any video failed, 2 when nothing could be scored at all.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from functools import partial
from pathlib import Path

from ..helptext import for_terminal


def positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {v}")
    return v


def workers_arg(text: str) -> int | str:
    if text == "auto":
        return text
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected 'auto' or a whole number >= 0, got {text!r}") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {v}")
    return v


def devices_arg(text: str) -> int | str:
    if text == "auto":
        return text
    return positive_int(text)


def add_cli(sub) -> None:
    p = sub.add_parser(
        "score",
        help="score videos with an exported scorer: one score in [0, 1] per video",
        description=for_terminal(__doc__),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("scorer", help="exported scorer directory, or a Hugging Face Hub repository id (org/name)")
    p.add_argument(
        "videos",
        nargs="+",
        help="video files, directories (searched recursively), glob patterns "
        "(quoted), text lists (.txt, one path a line) or manifests (a directory with videos.jsonl)",
    )
    p.add_argument(
        "--out", type=Path, help="append rows to this .jsonl or .csv file; a rerun skips the videos it answers"
    )
    p.add_argument("--format", choices=("jsonl", "csv"), help="results format (default: from --out's suffix)")
    p.add_argument("--json", action="store_true", help="stdout: JSON lines with 'video' and 'score' (and 'raw_score')")
    p.add_argument("--batch-size", type=positive_int, default=8, help="videos per encoder forward pass")
    p.add_argument(
        "--workers", type=workers_arg, default="auto", help="decode worker processes ('auto': none on CPU, 4 per GPU)"
    )
    p.add_argument("--devices", type=devices_arg, default=1, help="GPUs (or processes) for DDP, e.g. 8 or 'auto'")
    p.add_argument("--revision", help="Hub branch, tag or commit of the scorer")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.add_argument(
        "--reading",
        choices=("windows", "whole"),
        help="how to read a video longer than the training clip (default: the scorer's own, recorded at "
        "training: windows of the clip's length of consecutive frames): windows, or whole (the clip's "
        "frames spread over the video)",
    )
    p.add_argument(
        "--combine", choices=("mean", "max"), help="how a video's windows' scores combine (default: the scorer's)"
    )
    p.add_argument(
        "--stride", type=positive_int, help="frames between window starts (default: the scorer's, half a window)"
    )
    p.add_argument(
        "--max-windows",
        type=int,
        help="read a long video in at most this many windows, spread evenly over it (default: the scorer's, 64); "
        "0: every window, whatever the video's length",
    )
    p.set_defaults(func=_run)


def _run(args) -> int:
    """Scores every input; a user error (a broken scorer, an input naming no videos, an ``--out`` that is not a
    results file of ours or that another run is writing) ends the run in one line through the CLI's error report,
    an unusable video is one error row among the scores."""
    from ..errors import UserError
    from .names import is_repo_id

    if not Path(args.scorer).exists() and not is_repo_id(args.scorer):  # answered before torch loads
        raise UserError(f"{args.scorer}: no such scorer directory")
    if args.out is None:
        return _to_stdout(args)
    from .results import ResultFile, is_first_process

    results = ResultFile(args.out, args.format)
    results.check()  # before torch loads, reading at most its first line: a video, a device, ... is refused
    # One run writes a file at a time (a second is refused at once); a DDP run's further ranks append under the
    # first one's lock.
    with results.locked() if is_first_process() else contextlib.nullcontext(), _file_size_limit_is_an_error():
        return _to_file(args, results)


def _prepare(args):
    """The videos, the scorer read as asked, the scoring function and the per-video error report."""
    from ..errors import UserError, user_error_line
    from .batch import quiet_lightning, resolve_inputs, score_files
    from .core import Scorer
    from .reading import Reading

    def report_error(row):
        if "error" in row:
            print(user_error_line(f"{row['video']}: {row['error']}"), file=sys.stderr)

    quiet_lightning()
    videos = resolve_inputs(args.videos)
    scorer = Scorer.from_pretrained(args.scorer, revision=args.revision)
    r = scorer.reading
    cap = r.max_windows if args.max_windows is None else (args.max_windows or None)
    if args.max_windows is not None and args.max_windows < 0:
        raise UserError(f"--max-windows {args.max_windows}: a number of windows >= 1, or 0 for every window")
    scorer.reading = Reading(args.reading or r.mode, args.stride or r.stride, args.combine or r.combine, cap)
    run = partial(score_files, batch_size=args.batch_size, num_workers=args.workers, devices=args.devices)
    from .training_range import of_config

    return videos, scorer, run, report_error, FarOutside(of_config(scorer.config))


class FarOutside:
    """The videos scored far outside the scorer's training range (:mod:`.training_range`), said once at the end."""

    def __init__(self, rng):
        from .training_range import far_outside

        self.far_outside = far_outside
        self.rng, self.videos = rng, []

    def check(self, row: dict) -> bool:
        far = "raw_score" in row and self.far_outside(row["raw_score"], self.rng)
        if far:
            self.videos.append((row["video"], row["raw_score"]))
        return far

    def report(self) -> None:
        if self.videos:
            v, raw = self.videos[0]
            print(
                f"warning: {len(self.videos)} videos scored far outside the range the scorer gave its training videos "
                f"({self.rng[0]:.3g} to {self.rng[1]:.3g}), e.g. {v} (raw {raw:.6g}): such a score says the video is "
                "unlike the training data; a mean over it is dominated by it (leaderboard --summary median)",
                file=sys.stderr,
            )


EXIT_BROKEN_PIPE = 128 + 13  # what a shell reports for a tool stopped by SIGPIPE (``score ... | head -1``)


def _to_stdout(args) -> int:
    """Rows on stdout as they finish. When the reader goes away (``| head``), stop quietly as Unix tools do."""
    try:
        videos, scorer, run, report_error, far = _prepare(args)

        def emit(rows):
            for r in rows:
                report_error(r)
                if far.check(r):
                    r = {**r, "far_outside_training": True}
                if args.json:
                    print(json.dumps(r, allow_nan=False))
                elif "error" not in r:
                    print(f"{r['score']:.4f}\t{r['raw_score']:.6f}\t{r['video']}")
            sys.stdout.flush()

        if not args.json:
            print("score\traw_score\tvideo", flush=True)  # score: clipped to [0, 1]; rank by raw_score
        rep = run(scorer, videos, emit)
        far.report()
        return 1 if rep.failed else 0
    except BrokenPipeError:
        _stdout_gone()
        return EXIT_BROKEN_PIPE


def _stdout_gone() -> None:
    """Point stdout at /dev/null, so that flushing what is buffered at exit raises nothing either."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout is not a file descriptor (a program calling main)
        pass


@contextlib.contextmanager
def _file_size_limit_is_an_error():
    """A write past the file size limit (``ulimit -f``) fails with EFBIG, reported in one line with the rows before
    it kept, instead of SIGXFSZ killing the process (and dumping core)."""
    import signal
    import threading

    if not hasattr(signal, "SIGXFSZ") or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGXFSZ, previous)


def _to_file(args, results) -> int:
    """Rows appended to the results file (a torn tail of an interrupted run cut off first), resuming what it
    answers; a full disk or the file size limit ends the run in one line with every finished row kept."""
    videos, scorer, run, report_error, far = _prepare(args)
    done = results.finished()
    results.open()

    def emit(rows):
        results.append(rows)
        for r in rows:
            report_error(r)
            far.check(r)

    rep = run(scorer, videos, emit, done=done, progress=not args.no_progress)
    far.report()
    # Counted from the file, so that rows written by every rank (DDP) are included.
    new = [r for v, r in results.finished().items() if v not in done]
    failed = sum("error" in r for r in new)
    print(
        f"{args.out}: {len(new) - failed} scored, {failed} failed in {rep.seconds:.1f} s "
        f"({len(new) / rep.seconds if rep.seconds else 0.0:.1f} videos/s); {rep.already_done} already answered"
        + (f", {rep.failed_before} of them errors" if rep.failed_before else ""),
        file=sys.stderr,
    )
    return 1 if failed or rep.failed_before else 0
