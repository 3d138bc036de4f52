"""JSON files a user hands a command (a ``--baseline`` leaderboard, a run's ``metrics.json``), read within bounds.

Each is a regular file (never a device or a pipe a read would not end on, such as ``/dev/zero``), of bounded size,
UTF-8, valid JSON, nested no deeper than Python's parser allows, and holding no ``NaN`` or ``Infinity`` (JSON has
neither; Python's encoder writes them, and a statistic fed one fails far from the file). Each refusal is one line
naming the file, and :func:`finite_number` checks the numbers a reader then takes from it.
"""

from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path

from ..errors import UserError, json_error_reason

MAX_JSON_BYTES = 256 * 2**20  # past this, a JSON file a user hands a command is refused rather than read
MAX_ABS = 1e100  # scores and figures past this magnitude overflow the statistics (their squares pass float's range)


class BadJsonInput(UserError):
    """A JSON input file that cannot be used as it is: the message names the file and what is wrong."""


def reject_constant(name: str):
    """``json.loads``'s ``parse_constant``: ``NaN``, ``Infinity`` and ``-Infinity`` are refused, as JSON has none."""
    raise ValueError(f"{name} is not a number JSON allows")


def read_input_text(path: str | os.PathLike, what: str, max_bytes: int, error: type[UserError] = BadJsonInput) -> str:
    """The UTF-8 text of a file a user hands a command, once it is known to be a regular file of at most
    ``max_bytes``; else ``error`` with one line naming the file (``what`` names the kind of file expected)."""
    p = Path(path)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise error(f"{p}: no such {what}") from None
    except OSError as e:
        raise error(f"{p}: cannot read the {what} ({e.strerror})") from None
    if not stat.S_ISREG(st.st_mode):
        raise error(f"{p}: not a regular file; expected a {what}")
    if st.st_size > max_bytes:
        raise error(f"{p}: {st.st_size} bytes, more than a {what} may have ({max_bytes})")
    try:
        return p.read_bytes().decode("utf-8")
    except UnicodeDecodeError as e:
        raise error(f"{p}: not a {what} (not UTF-8 text at byte {e.start})") from None


def load_json_input(path: str | os.PathLike, what: str, max_bytes: int = MAX_JSON_BYTES) -> object:
    """The JSON value in ``path`` (``what`` names the kind of file in a refusal)."""
    text = read_input_text(path, what, max_bytes)
    try:
        return json.loads(text, parse_constant=reject_constant)
    except (ValueError, RecursionError) as e:
        raise BadJsonInput(f"{path}: not a {what} ({json_error_reason(e)})") from None


def finite_number(value, where: str) -> float:
    """``value`` as a float when it is a JSON number (not a string, a bool or null) of magnitude at most
    :data:`MAX_ABS`; else :class:`BadJsonInput` naming ``where`` (the file and the field)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadJsonInput(f"{where}: {value!r} is not a number")
    try:
        x = float(value)
    except OverflowError:  # an integer past float's range
        x = math.inf
    if not math.isfinite(x) or abs(x) > MAX_ABS:
        raise BadJsonInput(f"{where}: {value!r} is not a finite number of magnitude at most {MAX_ABS:g}")
    return x
