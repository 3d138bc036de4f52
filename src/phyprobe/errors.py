"""The one exception type for a user's mistake, and how every entry point reports it.

Anything the user can fix — a file that is not a video, a malformed manifest or score CSV, a missing
weights file, a bad option value — raises :class:`UserError` (or a subclass) with a message that
starts with the file it concerns and says what is wrong. Entry points (the ``phyprobe`` CLI,
``train.py``, ``eval.py``) turn it into one line, ``phyprobe: error: <file>: <reason>``, and a
non-zero exit; a traceback is for the developer, shown only with ``--debug`` (or ``PHYPROBE_DEBUG=1``).
Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import json
import os
import sys
from contextlib import contextmanager

EXIT_USER_ERROR = 2
DEBUG_ENV = "PHYPROBE_DEBUG"


class UserError(Exception):
    """A mistake in what the user gave; ``str(e)`` is ``<file>: <reason>`` (or just the reason)."""


def debug_enabled() -> bool:
    return os.environ.get(DEBUG_ENV, "").lower() not in ("", "0", "false", "no")


def user_error_line(e: BaseException) -> str:
    """The single line a user sees: the message, flattened (a message never spans lines)."""
    return "phyprobe: error: " + " ".join(str(e).split())


@contextmanager
def report_user_errors(debug: bool | None = None):
    """Inside: a UserError ends the process with its one-line message and exit code 2 (re-raised with
    its traceback when ``debug``). Errors the user can cause through the OS (a file that vanished,
    a full disk) are reported the same way, since they name their file too."""
    debug = debug_enabled() if debug is None else debug
    try:
        yield
    except (UserError, OSError) as e:
        if debug:
            raise
        if isinstance(e, OSError) and not isinstance(e, UserError) and e.filename is None:
            raise
        print(user_error_line(_with_file(e)), file=sys.stderr)
        sys.exit(EXIT_USER_ERROR)


def _with_file(e: BaseException) -> BaseException | str:
    if isinstance(e, OSError) and not isinstance(e, UserError) and e.filename is not None:
        return f"{e.filename}: {e.strerror or e}"
    return e


class InvalidOption(UserError, ValueError):
    """An option or config value the user gave is out of range or unknown (also a ValueError, as
    callers that validate values expect)."""


class MissingInput(UserError, FileNotFoundError):
    """A file or directory the user pointed at (or that a step needs first) is not there."""


def json_error_reason(e: ValueError | RecursionError) -> str:
    """Why ``json.loads`` refused a text, in a user's words: malformed JSON, and what no reader should accept either,
    nesting past the recursion limit (e.g. 100000 '[') or an integer past Python's digit limit."""
    if isinstance(e, json.JSONDecodeError):
        return f"not valid JSON ({e.msg})"
    if isinstance(e, RecursionError):
        return "not valid JSON here (nested too deeply)"
    if "digits" in str(e):
        return f"not valid JSON here (an integer of more than {sys.get_int_max_str_digits()} digits)"
    return f"not valid JSON here ({e})"
