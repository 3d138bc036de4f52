"""The rule for every file a command writes where the user points it (``--out FILE``, ``--json FILE``).

The path must name nothing yet, or a file this command wrote before, recognised by what it holds (a marker line, or
the shape of its records). Anything else - the user's notes, another tool's output, a folder, a device, a link to
one - is refused in one line naming the path, before any work, and left byte-identical. The file is written whole
(a temporary file renamed over it), so a reader never sees half of one.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from collections.abc import Callable
from pathlib import Path

from ..errors import UserError

PREFIX_BYTES = 64 * 1024  # what is read of an existing file to recognise it


class NotOurs(UserError):
    """An output path that names something this command did not write."""


def check_owned(path: str | os.PathLike, ours: Callable[[bytes], bool], what: str) -> None:
    """Refuse ``path`` unless it names nothing or a regular file whose first bytes ``ours`` recognises."""
    p = Path(path)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        if p.is_symlink():
            raise NotOurs(f"{p}: a link to nothing; pass a new path for the {what}") from None
        return
    except OSError as e:
        raise NotOurs(f"{p}: cannot be used for the {what} ({e.strerror})") from None
    if not stat.S_ISREG(st.st_mode):
        raise NotOurs(f"{p}: not a regular file; pass a new path for the {what}")
    fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)
    try:
        head = os.read(fd, PREFIX_BYTES)
    finally:
        os.close(fd)
    if head and not ours(head):
        raise NotOurs(
            f"{p}: holds something other than a {what} this command wrote; it is left as it is: pass a new path"
        )


def write_owned(path: str | os.PathLike, data: bytes) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, p)
    return p


def starts_with(marker: str) -> Callable[[bytes], bool]:
    """Recognises a text file whose first line is ``marker``."""
    return lambda head: head.split(b"\n", 1)[0].decode("utf-8", "replace").strip() == marker


def json_records_with(*keys: str) -> Callable[[bytes], bool]:
    """Recognises a JSON list of records that each hold ``keys`` (read whole: such files are small)."""

    def ours(head: bytes) -> bool:
        try:
            data = json.loads(head)
        except ValueError:
            return False  # not JSON, or longer than what was read: not a small table of ours
        return isinstance(data, list) and all(isinstance(r, dict) and set(keys) <= set(r) for r in data)

    return ours


def json_object_with(*keys: str) -> Callable[[bytes], bool]:
    """Recognises a JSON object holding ``keys``."""

    def ours(head: bytes) -> bool:
        try:
            data = json.loads(head)
        except ValueError:
            return False
        return isinstance(data, dict) and set(keys) <= set(data)

    return ours


@contextlib.contextmanager
def one_writer(folder: str | os.PathLike, what: str):
    """Hold ``folder``'s writer lock (``.lock`` inside it, an advisory ``flock``) for the block: a second command
    writing into the same folder meanwhile is refused in one line at once, instead of mixing its rows with the first's.
    The lock goes with the process, however it ends."""
    import fcntl

    p = Path(folder)
    p.mkdir(parents=True, exist_ok=True)
    fd = os.open(p / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UserError(f"{p}: another {what} is writing into this folder; wait for it, or pass another --out")
        yield p
    finally:
        os.close(fd)
