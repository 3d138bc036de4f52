"""Public datasets and users' own folders, converted into the pair manifest by name.

``phyprobe data prepare NAME --root DIR --out DIR`` runs :func:`prepare`; each converter reads its
source's files as published and references the videos where they are (never copying them). See
``docs/datasets/`` for where each dataset is downloaded and what its files hold.
"""

from __future__ import annotations

import importlib
import inspect
import os
from pathlib import Path

from .base import ConversionError

# name -> module holding ``convert(root, out, **options)``
CONVERTERS = {
    "videophy2": "videophy2",
    "videofeedback2": "videofeedback2",
    "pid": "pid",
    "implausibench": "implausibench",
    "videogen_rewardbench": "videogen_rewardbench",
    "monetbench": "monetbench",
    "rapidata": "rapidata",
    "real_folder": "real_folder",
    "rated_folder": "rated_folder",
}


def available_datasets() -> list[str]:
    return sorted(CONVERTERS)


def converter(name: str):
    if name not in CONVERTERS:
        raise ValueError(f"unknown dataset {name!r}; known: {available_datasets()}")
    return importlib.import_module(f"{__name__}.{CONVERTERS[name]}").convert


def options(name: str) -> list[str]:
    """The converter's own options (beyond root, out and check_counts)."""
    return [p for p in inspect.signature(converter(name)).parameters if p not in ("root", "out", "check_counts")]


def prepare(name: str, root: str | os.PathLike, out: str | os.PathLike, check_counts: bool = True, **kw) -> Path:
    """Convert dataset ``name`` found under ``root`` into a manifest at ``out``; returns ``out``."""
    fn = converter(name)
    unknown = set(kw) - set(options(name))
    if unknown:
        raise ValueError(f"{name}: unknown option(s) {sorted(unknown)}; it takes {options(name)}")
    return fn(Path(root), Path(out), check_counts=check_counts, **kw)


__all__ = ["CONVERTERS", "ConversionError", "available_datasets", "converter", "options", "prepare"]
