"""The prompt-suite format: one JSON object per line, one prompt per object, read by the judges and the leaderboard.

A record::

    {"prompt_id": "gravity-support-easy-0",            # required, unique in the suite
     "prompt": "A glass marble rolls off ...",         # required: what a video generator is asked to make
     "reference_guide": "...",                         # optional: what a correct video shows (Sci-VBench)
     "rubrics": {"scientific_causal_correctness": "1: ... 5: ..."},   # optional: per-dimension rubric text
     "paradigm": "gravity_support",                    # optional: the paradigm / experiment it instantiates
     "test_point": "...", "ground_truth": "...", "question": "...",   # optional (SVBench)
     "difficulty": "easy",                             # optional: easy | medium | hard
     "groups": {"discipline": "physics", "subject": "mechanics", "task": "support"},   # optional group fields
     "provenance": {...}}                              # optional: how it was made (agents' outputs, critic rounds)

Only ``prompt_id`` and ``prompt`` are required, so a hand-written list of prompts is a suite. ``groups`` are the
fields a leaderboard breaks its table down by (with ``paradigm`` and ``difficulty``, which are group fields too);
``provenance`` is kept as it comes. A bad line stops the read with the file, the line and the field: a prompt dropped
without a word would change every figure computed on the suite.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..data.manifest import read_jsonl_objects
from ..errors import UserError

DIFFICULTIES = ("easy", "medium", "hard")
TEXT_FIELDS = ("reference_guide", "paradigm", "test_point", "ground_truth", "question")
FIELDS = ("prompt_id", "prompt", *TEXT_FIELDS, "rubrics", "difficulty", "groups", "provenance")


class SuiteError(UserError, ValueError):
    """A suite (or a published record being converted to one) cannot be used; the message names the file, the
    line and the field."""


@dataclass
class SuiteRecord:
    """One prompt of a suite; see the module docstring for the fields."""

    prompt_id: str
    prompt: str
    reference_guide: str | None = None
    rubrics: dict[str, str] = field(default_factory=dict)
    paradigm: str | None = None
    test_point: str | None = None
    ground_truth: str | None = None
    question: str | None = None
    difficulty: str | None = None
    groups: dict[str, str] = field(default_factory=dict)
    provenance: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        """The record as one JSON object, without empty optional fields."""
        return {k: v for k, v in asdict(self).items() if v not in (None, {}, "")}

    def group_fields(self) -> dict[str, str]:
        """What a leaderboard can break this prompt down by: ``groups`` plus ``paradigm`` and ``difficulty``."""
        out = dict(self.groups)
        for k in ("paradigm", "difficulty"):
            if getattr(self, k):
                out.setdefault(k, getattr(self, k))
        return out

    def task(self) -> dict:
        """The judge task of a video made from this prompt: the fields the rubric judges read (``prompt``,
        ``reference_guide``, ``rubrics``; ``experiment_name``, ``test_point``, ``question``, ``ground_truth``)."""
        task = {k: v for k, v in self.to_json().items() if k not in ("provenance", "groups")}
        if self.paradigm:
            task.setdefault("experiment_name", self.paradigm)
        return {**self.groups, **task}


def record_from_json(obj: Mapping, where: str) -> SuiteRecord:
    """A ``SuiteRecord`` from one parsed line; ``where`` (``file:line``) starts every error."""
    unknown = sorted(set(obj) - set(FIELDS))
    if unknown:
        raise SuiteError(f"{where}: unknown field(s) {unknown}; a suite record has {list(FIELDS)}")
    out: dict = {}
    for k in ("prompt_id", "prompt"):
        v = obj.get(k)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and k == "prompt_id":
            v = str(v)
        if not isinstance(v, str) or not v.strip():
            raise SuiteError(f"{where}: field {k!r} must be a non-empty string, got {v!r}")
        out[k] = v.strip() if k == "prompt_id" else v
    for k in TEXT_FIELDS:
        v = obj.get(k)
        if v is not None and not isinstance(v, str):
            raise SuiteError(f"{where}: field {k!r} must be a string, got {type(v).__name__}")
        out[k] = v if v else None
    d = obj.get("difficulty")
    if d not in (None, "") and d not in DIFFICULTIES:
        raise SuiteError(f"{where}: field 'difficulty' must be one of {list(DIFFICULTIES)}, got {d!r}")
    out["difficulty"] = d or None
    for k in ("rubrics", "groups"):
        v = obj.get(k) or {}
        if not isinstance(v, Mapping) or not all(isinstance(x, str) and isinstance(y, str) for x, y in v.items()):
            raise SuiteError(f"{where}: field {k!r} must be an object of strings")
        out[k] = dict(v)
    prov = obj.get("provenance") or {}
    if not isinstance(prov, Mapping):
        raise SuiteError(f"{where}: field 'provenance' must be an object, got {type(prov).__name__}")
    out["provenance"] = dict(prov)
    return SuiteRecord(**out)


def read_suite(path: str | os.PathLike) -> list[SuiteRecord]:
    """The records of a suite file, in file order; a duplicate ``prompt_id`` is an error naming both lines."""
    path = Path(path)
    records: list[SuiteRecord] = []
    seen: dict[str, int] = {}
    try:
        for line, obj in read_jsonl_objects(path, what="prompt suite"):
            rec = record_from_json(obj, f"{path}:{line}")
            if rec.prompt_id in seen:
                raise SuiteError(
                    f"{path}:{line}: duplicate prompt_id {rec.prompt_id!r} (first on line {seen[rec.prompt_id]})"
                )
            seen[rec.prompt_id] = line
            records.append(rec)
    except SuiteError:
        raise
    except UserError as e:  # the JSONL reader's one-line error (not JSON, not UTF-8, missing file)
        raise SuiteError(str(e)) from None
    if not records:
        raise SuiteError(f"{path}: no prompts (a suite is one JSON object per line with prompt_id and prompt)")
    return records


def write_suite(records: Iterable[SuiteRecord], path: str | os.PathLike) -> Path:
    """Write ``records`` to ``path`` atomically (a temporary file renamed over it), refusing duplicate ids."""
    path = Path(path)
    seen: set[str] = set()
    lines = []
    for r in records:
        if r.prompt_id in seen:
            raise SuiteError(f"{path}: duplicate prompt_id {r.prompt_id!r}")
        seen.add(r.prompt_id)
        lines.append(json.dumps(r.to_json(), ensure_ascii=False))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("".join(x + "\n" for x in lines))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return path
