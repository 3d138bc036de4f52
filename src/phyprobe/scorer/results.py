"""The results file of ``phyprobe score --out`` (and the leaderboard's scores): a file this package writes and
resumes, and nothing else.

A path is used only when it names no file yet, or a regular file this package wrote: a CSV whose first line is its
header ``video,score,raw_score,error``, or JSON lines whose first record is a results row (``{video, score,
raw_score}`` or ``{video, error}``). An **empty** regular file counts as ours: a kill right after the file was created
leaves one, and writing to it cannot destroy anything. Everything else is refused with one line naming the file and
what it is, before it is opened for writing and after reading at most its first 64 KiB: a video, another tool's CSV
or JSONL, a text file, a directory, a FIFO, a device (``/dev/null``, ``/dev/zero``, ``/dev/stdout`` on a terminal or
pipe), a socket, or a symbolic link to any of them. Only a file recognised as ours has a torn last row (a write cut
off by a kill) removed, and only by the process that holds its lock.

One run writes a results file at a time: :meth:`ResultFile.locked` holds an exclusive ``flock`` on the file itself
for the whole run, and a second run on the same file (by any path or hard link to it) is refused at once, naming the
pid that holds it; waiting silently behind a night-long run is never what the second command's user meant, and the
first run's file is complete when it ends (rerun then to check). The ranks of one DDP run are one run: only the
first process takes the lock, the others append under it.

Writing keeps whole rows: each append is one ``write`` of whole rows, then ``fsync``; when the disk is full (ENOSPC),
the file hits the size limit (EFBIG; SIGXFSZ is ignored by the command) or any other write error happens, the part of
the batch that got in is cut off again and the run ends with one line naming the file, every row finished before
kept, so the same command resumes once there is room.
"""

from __future__ import annotations

import contextlib
import csv
import errno
import io
import json
import logging
import os
import stat
from pathlib import Path

from ..errors import UserError

try:
    import fcntl
except ImportError:  # not POSIX: no locking (and no concurrent runs to serialise in practice)
    fcntl = None

log = logging.getLogger(__name__)

CSV_FIELDS = ("video", "score", "raw_score", "error")
CSV_HEADER = ",".join(CSV_FIELDS).encode()
PREFIX_BYTES = 64 * 1024  # how much of an existing file is read to recognise it
_ROW_KEYS = frozenset(CSV_FIELDS)
_OPEN_READ = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)  # O_NONBLOCK: a FIFO swapped in never hangs


class ResultsFileError(UserError, ValueError):
    """A results file that cannot be used or written: not ours, busy, damaged, or the disk refused a write."""


class NotResultsFile(ResultsFileError):
    """The path names something this package did not write (a video, another tool's file, a device, ...)."""


class ResultsBusy(ResultsFileError):
    """Another run holds the results file's lock."""


class ResultsWriteError(ResultsFileError):
    """A write of results rows failed (disk full, file size limit, I/O error); the rows before it are kept."""


def is_first_process() -> bool:
    """This process is the first (or only) process of its run: not a further DDP rank, node or SLURM task."""
    return all(os.environ.get(k, "0") in ("", "0") for k in ("RANK", "LOCAL_RANK", "NODE_RANK", "SLURM_PROCID"))


def _kind(mode: int) -> str | None:
    """What a file that is not a regular file is, in words (None: a regular file)."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a pipe (FIFO)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


_MAGIC = (
    (0, b"\x1aE\xdf\xa3", "a Matroska/WebM video"),
    (4, b"ftyp", "an MP4/MOV video"),
    (0, b"OggS", "an Ogg media file"),
    (0, b"\x00\x00\x01\xba", "an MPEG video"),
    (0, b"\x89PNG", "a PNG image"),
    (0, b"\xff\xd8\xff", "a JPEG image"),
    (0, b"GIF8", "a GIF image"),
    (0, b"PK\x03\x04", "a ZIP archive"),
    (0, b"\x1f\x8b", "a gzip archive"),
    (0, b"%PDF", "a PDF document"),
    (0, b"\x93NUMPY", "a NumPy array"),
)


def _quote(text: str, n: int = 60) -> str:
    return repr(text if len(text) <= n else text[:n] + "...")


def describe(prefix: bytes) -> str:
    """What a regular file is, from its first bytes, in words: for the refusal's one line."""
    for at, magic, what in _MAGIC:
        if prefix[at : at + len(magic)] == magic:
            return what
    if prefix[:4] == b"RIFF" and prefix[8:12] == b"AVI ":
        return "an AVI video"
    first = prefix.split(b"\n", 1)[0].removesuffix(b"\r").removeprefix(b"\xef\xbb\xbf")
    try:
        line = first.decode("utf-8")
    except UnicodeDecodeError:
        return "binary data"
    if "\x00" in line:
        return "binary data"
    if line.lstrip().startswith(("{", "[")):
        try:
            rec = json.loads(line)
        except ValueError:
            return f"a file whose first line is not JSON ({_quote(line)})"
        if isinstance(rec, dict):
            return f"JSON lines of other records (fields {', '.join(map(str, rec)) or 'none'})"
        return "JSON lines whose first record is not an object"
    if "," in line or "\t" in line:
        return f"a CSV file with header {_quote(line)}"
    return f"a text file (first line {_quote(line)})" if line.strip() else "a text file"


def _is_results_row(rec) -> bool:
    if not isinstance(rec, dict) or not isinstance(rec.get("video"), str) or not set(rec) <= _ROW_KEYS:
        return False
    return "error" in rec or ("score" in rec and "raw_score" in rec)


class ResultFile:
    """JSONL or CSV rows {video, score, raw_score} or {video, error}, appended durably.

    ``check()`` refuses a path that is not ours without writing to it; ``finished()`` (after ``check``) repairs a
    torn tail and returns every video the file already answers; ``open()`` creates the file; ``append(rows)`` adds
    whole rows; ``locked()`` holds the one-writer lock for a run. See the module's notes for what counts as ours.
    """

    def __init__(self, path: str | Path, fmt: str | None = None):
        self.path = Path(path)
        self.fmt = fmt or ("csv" if self.path.suffix.lower() == ".csv" else "jsonl")
        if self.fmt not in ("jsonl", "csv"):
            raise ValueError(f"results format must be 'jsonl' or 'csv', got {self.fmt!r}")
        self._lock: tuple[int, int] | None = None  # (pid, fd) of the run's lock, held by that process only

    def __getstate__(self):  # a DDP-spawned rank gets the path, never this process's lock
        return {**self.__dict__, "_lock": None}

    def _holds_lock(self) -> bool:
        return self._lock is not None and self._lock[0] == os.getpid()

    # ------------------------------------------------------------------ recognising the file

    def _stat(self) -> os.stat_result | None:
        """The file's stat (following symbolic links), None when no file is there; refuses what is not a regular
        file."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            if os.path.islink(self.path):
                raise NotResultsFile(
                    f"{self.path}: a broken symbolic link (to {os.readlink(self.path)}); pass a new --out"
                ) from None
            return None
        except OSError as e:  # a symlink loop, a parent that is a file, no permission on a parent
            raise NotResultsFile(f"{self.path}: cannot be used as a results file ({e.strerror})") from None
        if (kind := _kind(st.st_mode)) is not None:
            raise NotResultsFile(f"{self.path}: {self._via_link(kind)}, not a results file; pass a new --out")
        return st

    def _open_read(self) -> int | None:
        """A read-only descriptor on our (regular) file, None when there is none; never blocks on a FIFO."""
        if self._stat() is None:
            return None
        try:
            fd = os.open(self.path, _OPEN_READ)
        except FileNotFoundError:
            return None
        except OSError as e:
            raise NotResultsFile(f"{self.path}: cannot read the results file ({e.strerror})") from None
        kind = _kind(os.fstat(fd).st_mode)
        if kind is not None:  # swapped for something else since the stat
            os.close(fd)
            raise NotResultsFile(f"{self.path}: {self._via_link(kind)}, not a results file; pass a new --out")
        return fd

    def _recognise(self, fd: int) -> bytes:
        """Reads at most PREFIX_BYTES and returns them when the file is ours (or empty); refuses anything else."""
        prefix = _read_upto(fd, PREFIX_BYTES)
        if not prefix:
            return prefix  # empty: ours (a kill right after creation leaves one; nothing in it can be lost)
        size = os.fstat(fd).st_size
        nl = prefix.find(b"\n")
        first = prefix if nl < 0 else prefix[:nl]
        if nl < 0 and size > len(prefix):
            raise NotResultsFile(
                f"{self.path}: {self._via_link(describe(prefix))} with a first line over {PREFIX_BYTES // 1024} KiB, "
                "not a phyprobe results file; pass a new --out"
            )
        if first.removesuffix(b"\r") == CSV_HEADER:
            if self.fmt == "csv":
                return prefix
            raise NotResultsFile(f"{self.path}: a phyprobe CSV results file, not JSONL; pass --format csv")
        rec = _json_or_none(first)
        torn_own_row = nl < 0 and rec is None and first.startswith(b'{"video": "')  # killed mid-way through row 1
        if _is_results_row(rec) or (torn_own_row and self.fmt == "jsonl"):
            if self.fmt == "jsonl":
                return prefix
            raise NotResultsFile(f"{self.path}: a phyprobe JSONL results file, not CSV; pass --format jsonl")
        what = describe(prefix)
        if self.fmt == "jsonl" and what.startswith(("JSON", "a file whose", "a text file", "a CSV")):
            raise NotResultsFile(f"{self.path}:1: not a JSON results row: {self._via_link(what)}; pass a new --out")
        what = self._via_link(what)
        raise NotResultsFile(f"{self.path}: {what}, not a phyprobe results file; pass a new --out")

    def _via_link(self, what: str) -> str:
        return f"a symbolic link to {what}" if os.path.islink(self.path) else what

    def check(self) -> bool:
        """Refuses (NotResultsFile, one line naming the file and what it is) anything but a new path or a results
        file of ours in this format, reading at most its first 64 KiB and writing nothing. True when the file
        exists."""
        fd = self._open_read()
        if fd is None:
            return False
        try:
            self._recognise(fd)
        finally:
            os.close(fd)
        return True

    # ------------------------------------------------------------------ reading (and repairing) it

    def finished(self) -> dict[str, dict]:
        """Every video the file answers. A torn last row (a write cut off by a kill) is ignored, and removed from
        the file when this process holds the lock or can take it at once (not while another run writes)."""
        fd = self._open_read()
        if fd is None:
            return {}
        try:
            data = self._recognise(fd)
            data += _read_upto(fd, None)
            cut = data.rfind(b"\n") + 1
            if cut < len(data):  # killed mid-write: the last row never completed
                if self._repair(fd, cut):
                    log.warning(
                        "%s: dropped an incomplete last row (%d bytes) left by an interrupted run",
                        self.path,
                        len(data) - cut,
                    )
                data = data[:cut]
        finally:
            os.close(fd)
        return self._parse(data)

    def _repair(self, read_fd: int, cut: int) -> bool:
        """Cuts the file back to ``cut`` bytes, if this process may (holds the lock, or takes it at once)."""
        with self._exclusive(read_fd) as mine:
            if not mine:
                return False
            wfd = os.open(self.path, os.O_WRONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
            try:
                a, b = os.fstat(read_fd), os.fstat(wfd)
                if (a.st_dev, a.st_ino) != (b.st_dev, b.st_ino) or b.st_size < cut:
                    return False  # replaced or shortened meanwhile: leave it
                os.ftruncate(wfd, cut)
                os.fsync(wfd)
            finally:
                os.close(wfd)
            return True

    @contextlib.contextmanager
    def _exclusive(self, fd: int):
        """True inside when this process holds the file's lock (for the run, or taken here on ``fd`` at once)."""
        if self._holds_lock() or fcntl is None:
            yield True
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False  # another process (a run, or this run's first rank) writes it: hands off
            return
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)

    def _parse(self, data: bytes) -> dict[str, dict]:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            line = data[: e.start].count(b"\n") + 1
            raise ResultsFileError(f"{self.path}:{line}: not valid UTF-8; pass a new --out") from None
        rows: dict[str, dict] = {}
        if self.fmt == "jsonl":
            for n, line in enumerate(text.splitlines(), 1):
                if line.strip():
                    try:
                        r = json.loads(line)
                    except json.JSONDecodeError as e:
                        raise ResultsFileError(
                            f"{self.path}:{n}: not a JSON results row ({e.msg}); pass a new --out"
                        ) from None
                    if not isinstance(r, dict) or "video" not in r:
                        raise ResultsFileError(
                            f"{self.path}:{n}: a results row needs a 'video' field; pass a new --out"
                        )
                    rows[r["video"]] = r
        else:
            reader = csv.DictReader(io.StringIO(text))
            if reader.fieldnames and tuple(reader.fieldnames) != CSV_FIELDS:
                raise ResultsFileError(
                    f"{self.path}: header {reader.fieldnames} is not {list(CSV_FIELDS)}; pass a new --out"
                )
            for r in reader:
                rows[r["video"]] = {k: v for k, v in r.items() if v != ""}
        return rows

    # ------------------------------------------------------------------ creating, locking and writing it

    def open(self) -> bool:
        """Create the file (with the CSV header) if absent; atomic, so concurrent ranks agree. An existing file must
        be ours (see :meth:`check`); an empty CSV of ours gets its header. True when this call created the file."""
        if self.check():
            self._header_if_empty()
            return False
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            tmp.write_bytes(CSV_HEADER + b"\n" if self.fmt == "csv" else b"")
            os.link(tmp, self.path)  # fails if another process created it first
        except FileExistsError:
            self.check()  # whoever created it, it must be ours
            return False
        finally:
            tmp.unlink(missing_ok=True)
        return True

    def _header_if_empty(self) -> None:
        if self.fmt != "csv":
            return
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        try:
            if _kind(os.fstat(fd).st_mode) is None and os.fstat(fd).st_size == 0:
                with self._exclusive(fd) as mine:
                    if mine and os.fstat(fd).st_size == 0:
                        self._write_all(fd, CSV_HEADER + b"\n")
        finally:
            os.close(fd)

    @contextlib.contextmanager
    def locked(self):
        """For a whole run: create the file if absent and hold an exclusive lock on it, or refuse at once
        (ResultsBusy, naming the pid) when another run holds it. A file this call created is removed again when the
        run fails before writing a row (a broken scorer, no videos)."""
        created = self.open()
        if fcntl is None:
            yield self
            return
        for _ in range(10):
            fd = self._open_read()
            if fd is None:  # removed between creating and locking (a failed run's cleanup): create it again
                created = self.open() or created
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as e:
                st = os.fstat(fd)
                os.close(fd)
                if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    raise ResultsFileError(f"{self.path}: cannot lock the results file ({e.strerror})") from None
                pid = _flock_holder(st)
                raise ResultsBusy(
                    f"{self.path}: another phyprobe score is writing {self.path}"
                    + (f" (pid {pid})" if pid else "")
                    + "; wait for it to finish (then rerun to resume) or pass another --out"
                ) from None
            try:
                now = os.stat(self.path)
            except OSError:
                now = None
            st = os.fstat(fd)
            if now is not None and (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino):
                break  # the lock is on the file the path names
            os.close(fd)  # the file was replaced or removed while we locked: lock the one there now
            created = self.open() or created
        else:
            raise ResultsFileError(f"{self.path}: the file keeps being replaced; pass another --out")
        self._lock = (os.getpid(), fd)
        _HELD.add(fd)
        size0 = st.st_size
        ok = False
        try:
            self._header_if_empty()
            size0 = os.fstat(fd).st_size
            yield self
            ok = True
        finally:
            try:
                if not ok and created and os.fstat(fd).st_size == size0:
                    with contextlib.suppress(OSError):
                        os.unlink(self.path)  # still under the lock: a waiting run re-creates it (see above)
            finally:
                self._lock = None
                _HELD.discard(fd)
                os.close(fd)

    def format(self, rows: list[dict]) -> bytes:
        if self.fmt == "jsonl":
            return "".join(json.dumps(r, allow_nan=False) + "\n" for r in rows).encode()
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=CSV_FIELDS, lineterminator="\n")
        w.writerows(rows)
        return buf.getvalue().encode()

    def append(self, rows: list[dict]) -> None:
        """One O_APPEND write of whole rows, then fsync: a kill leaves whole rows or a torn last one. A failed
        write (disk full, file size limit, I/O error) cuts off what part of the rows got in and raises
        ResultsWriteError, one line naming the file; every row written before is kept."""
        if not rows:
            return
        data = self.format(rows)
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        except OSError as e:
            raise ResultsWriteError(f"{self.path}: cannot open the results file to write ({e.strerror})") from None
        try:
            st = os.fstat(fd)
            if (kind := _kind(st.st_mode)) is not None:
                raise NotResultsFile(f"{self.path}: became {kind} while scoring; pass a new --out")
            self._write_all(fd, data, st.st_size)
        finally:
            os.close(fd)

    def _write_all(self, fd: int, data: bytes, start: int | None = None) -> None:
        start = os.fstat(fd).st_size if start is None else start
        done = 0
        try:
            while done < len(data):
                n = os.write(fd, data[done:])
                if n <= 0:
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                done += n
            os.fsync(fd)
        except OSError as e:
            kept = "every row finished before is kept"
            if done:
                now = os.fstat(fd).st_size
                if now == start + done:  # nobody appended after us: cut our partial write off again
                    with contextlib.suppress(OSError):
                        os.ftruncate(fd, start)
                        os.fsync(fd)
                else:
                    kept += " (but a partial row stays between rows another rank wrote after it)"
            code = errno.errorcode.get(e.errno, "")
            hint = {
                errno.ENOSPC: "free some space",
                errno.EDQUOT: "free some space",
                errno.EFBIG: "raise the file size limit (ulimit -f)",
            }.get(e.errno, "fix the cause")
            raise ResultsWriteError(
                f"{self.path}: cannot write results ({e.strerror}{', ' + code if code else ''}); {kept}; "
                f"{hint}, then run the same command to resume"
            ) from None


_HELD: set[int] = set()  # the lock descriptors this process holds


def _drop_locks_in_child() -> None:
    """A forked child (a DataLoader worker) closes its copies of the run's lock: otherwise a worker outliving a
    killed run would keep the file locked, and the rerun would be refused until it exits."""
    for fd in _HELD:
        with contextlib.suppress(OSError):
            os.close(fd)
    _HELD.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_drop_locks_in_child)


def _read_upto(fd: int, limit: int | None) -> bytes:
    """Up to ``limit`` bytes from ``fd`` (None: to the end)."""
    chunks, n = [], 0
    while limit is None or n < limit:
        b = os.read(fd, (1 << 20) if limit is None else min(1 << 20, limit - n))
        if not b:
            break
        chunks.append(b)
        n += len(b)
    return b"".join(chunks)


def _json_or_none(line: bytes):
    try:
        return json.loads(line)
    except ValueError:  # also UnicodeDecodeError
        return None


def _flock_holder(st: os.stat_result) -> int | None:
    """The pid holding a flock on the file ``st`` describes, from /proc/locks (Linux); None when unknown."""
    want = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    try:
        with open("/proc/locks") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 6 and parts[1] == "FLOCK" and parts[5] == want:
                    return int(parts[4]) or None
    except (OSError, ValueError):
        pass
    return None
