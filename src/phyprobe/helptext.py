"""A module docstring as a command's ``--help`` shows it: reStructuredText's markup taken out (````x```` -> x,
``:mod:`x``` -> x), so one text serves the API docs and the terminal."""

from __future__ import annotations

import re

_ROLE = re.compile(r":[a-z]+:`~?\.?([^`]+)`")


def for_terminal(doc: str | None) -> str:
    return _ROLE.sub(r"\1", doc or "").replace("``", "")
