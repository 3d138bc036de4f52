"""The files of a scorer directory and the names that refer to a scorer, with no heavy import: the command line
checks a scorer argument with them before torch loads."""

from __future__ import annotations

import re

FORMAT = "phyprobe-scorer/1"
WEIGHTS, CONFIG, CARD, BUNDLE = "model.safetensors", "config.json", "README.md", "encoder"
_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def is_repo_id(name: str) -> bool:
    """Whether ``name`` reads as a Hugging Face Hub repository id ("org/name") rather than a local path."""
    return bool(_REPO_ID.match(name)) and not name.startswith((".", "/"))
