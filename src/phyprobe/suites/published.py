"""Sci-VBench's and SVBench's released prompt records as prompt suites: ``load_published(kind, path)``.

**Sci-VBench** (``scivbench``): evaluation-spec records, one JSON object per line or a JSON list, with ``id``,
``domain`` (the discipline), ``subject``, ``pg_specification``, ``scc_specification``, ``sc_specification``,
``lpf_specification``, ``high_level_evaluation_guide`` and the generation prompt ``prompt``. These field names come
from public evaluation code of unknown provenance that matches the paper's four dimensions; the dataset card of
``Sci-VBench/Sci-VBench`` was not readable, so the record layout and the name ``prompt`` are [UNVERIFIED] (that code
has no prompt field at all). ``id`` becomes the prompt id (the videos are ``<model>/<id>.mp4`` there), the guide the
reference guide, each non-empty spec a rubric under the judge's dimension name (an empty spec is "not judged", as in
that code), and ``domain``/``subject`` the groups ``discipline``, ``domain`` and ``subject``.

**SVBench** (``svbench``), as released in ``Gloria2tt/SVBench-Evaluation``: ``data/bench_for_short.json`` and
``data/bench_for_long.json``, a JSON list of experiments ``{experiment_id, experiment_name, dimension, test_point,
prompts: [{prompt, difficulty, ground_truth, question}]}`` (``question`` is missing in some prompts and in the whole
long set); or a ``video_info_matched.json`` of per-video records ``{video_file, experiment_name, test_point,
difficulty, prompt, question, ground_truth}`` (its matching script is not released: [UNVERIFIED] beyond those keys).
A bench prompt's id is ``<experiment_id>-<k>-<difficulty>``, ``k`` its 1-based place in ``prompts``: the names of the
sample videos released with the benchmark (``asset/video/EXP_010-9-easy.mp4``); a per-video record's is its video's
file name without the extension, the same id for a video so named. ``experiment_name`` is the paradigm and the group
``task``; ``dimension`` a group.

Fields these layouts do not name are kept under ``provenance["extra"]``, never dropped. A malformed input (a wrong
top-level type, a record or prompt that is not an object, a missing prompt, an unknown difficulty, a duplicate id)
stops the load with one line naming the file and where in it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path

from ..data.manifest import read_jsonl_objects
from ..errors import UserError
from ..judges.scivbench import LPF_DIMENSION, LPF_FIELD, SPEC_FIELDS
from .format import DIFFICULTIES, SuiteError, SuiteRecord

SCIVBENCH_FIELDS = ("id", "domain", "subject", *SPEC_FIELDS, LPF_FIELD, "high_level_evaluation_guide", "prompt")
SVBENCH_EXPERIMENT_FIELDS = ("experiment_id", "experiment_name", "dimension", "test_point", "prompts")
SVBENCH_PROMPT_FIELDS = ("prompt", "difficulty", "ground_truth", "question")
SVBENCH_VIDEO_FIELDS = (
    "video_file",
    "experiment_name",
    "test_point",
    "difficulty",
    "prompt",
    "question",
    "ground_truth",
)


def read_records(path: Path) -> list[tuple[str, object]]:
    """``(where, item)`` of a JSON list (``where`` = ``file: record i``) or of JSON lines (``file:line``)."""
    if not path.is_file():
        raise SuiteError(f"{path}: no such file")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as e:
        raise SuiteError(f"{path}: not UTF-8 text (byte 0x{e.object[e.start]:02x} at offset {e.start})") from None
    head = text.lstrip()[:1]
    if not head:
        raise SuiteError(f"{path}: an empty file, no records")
    if head == "{":
        try:
            return [(f"{path}:{line}", obj) for line, obj in read_jsonl_objects(path, "file")]
        except UserError as e:
            try:  # one object over several lines: a document of the wrong type, not a bad line
                doc = json.loads(text)
            except json.JSONDecodeError:
                raise SuiteError(str(e)) from None
            raise SuiteError(
                f"{path}: the top level is one JSON {type(doc).__name__}; expected a list of records "
                "or one JSON object per line"
            ) from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise SuiteError(f"{path}:{e.lineno}: not valid JSON ({e.msg})") from None
    except RecursionError:
        raise SuiteError(f"{path}: not valid JSON (nested too deeply)") from None
    if not isinstance(doc, list):
        raise SuiteError(
            f"{path}: the top level is a JSON {type(doc).__name__}; expected a list of records "
            "or one JSON object per line"
        )
    if not doc:
        raise SuiteError(f"{path}: an empty list, no records")
    return [(f"{path}: record {i}", item) for i, item in enumerate(doc, start=1)]


def _text(obj: Mapping, key: str, where: str, required: bool = False) -> str | None:
    """``obj[key]`` as a string (a number id as its text), None when missing or empty; a wrong type names it."""
    v = obj.get(key)
    if isinstance(v, (int, float)) and not isinstance(v, bool) and key in ("id", "experiment_id"):
        v = str(v)
    if v is not None and not isinstance(v, str):
        raise SuiteError(f"{where}: field {key!r} must be a string, got {type(v).__name__}")
    if v is None or not v.strip():
        if required:
            raise SuiteError(f"{where}: no {key!r} (a non-empty string is required)")
        return None
    return v


def _difficulty(obj: Mapping, where: str, required: bool) -> str | None:
    d = _text(obj, "difficulty", where, required)
    if d is not None and d not in DIFFICULTIES:
        raise SuiteError(f"{where}: field 'difficulty' must be one of {list(DIFFICULTIES)}, got {d!r}")
    return d


def _object(item: object, where: str, what: str) -> Mapping:
    if not isinstance(item, Mapping):
        raise SuiteError(f"{where}: {what} must be a JSON object, got {type(item).__name__}")
    return item


def _extra(obj: Mapping, known: tuple[str, ...]) -> dict:
    """The fields of a published object that its layout does not name."""
    return {k: v for k, v in obj.items() if k not in known}


def _provenance(source: str, path: Path, where: str, extra: dict, **more) -> dict:
    """Where a record came from (file name and place, not the full path), and its unnamed fields."""
    prov = {"source": source, "from": where.replace(str(path), path.name, 1), **more}
    return {**prov, "extra": extra} if extra else prov


def _unique(records: list[tuple[str, SuiteRecord]]) -> list[SuiteRecord]:
    """The records, refusing a prompt id given twice (both places named)."""
    seen: dict[str, str] = {}
    for where, rec in records:
        if rec.prompt_id in seen:
            raise SuiteError(f"{where}: duplicate prompt id {rec.prompt_id!r} (first at {seen[rec.prompt_id]})")
        seen[rec.prompt_id] = where
    return [rec for _, rec in records]


def load_scivbench(path: str | os.PathLike) -> list[SuiteRecord]:
    """Sci-VBench evaluation-spec records (JSON lines or a JSON list) as suite records."""
    path = Path(path)
    out = []
    for where, item in read_records(path):
        obj = _object(item, where, "a record")
        pid = _text(obj, "id", where, required=True).strip()
        prompt = _text(obj, "prompt", where)
        if prompt is None:
            raise SuiteError(f"{where}: record {pid!r} has no 'prompt' (the generation prompt a video is made from)")
        rubrics = {}
        for f, dim in (*SPEC_FIELDS.items(), (LPF_FIELD, LPF_DIMENSION)):
            spec = _text(obj, f, where)
            if spec is not None:
                rubrics[dim] = spec
        groups = {}
        domain, subject = _text(obj, "domain", where), _text(obj, "subject", where)
        if domain is not None:
            groups["discipline"] = groups["domain"] = domain
        if subject is not None:
            groups["subject"] = subject
        rec = SuiteRecord(
            prompt_id=pid,
            prompt=prompt,
            reference_guide=_text(obj, "high_level_evaluation_guide", where),
            rubrics=rubrics,
            groups=groups,
            provenance=_provenance("scivbench", path, where, _extra(obj, SCIVBENCH_FIELDS)),
        )
        out.append((where, rec))
    return _unique(out)


def _svbench_experiment(path: Path, where: str, obj: Mapping) -> list[tuple[str, SuiteRecord]]:
    eid = _text(obj, "experiment_id", where, required=True).strip()
    where = f"{where} ({eid})"
    name = _text(obj, "experiment_name", where, required=True)
    dimension, test_point = _text(obj, "dimension", where), _text(obj, "test_point", where)
    prompts = obj.get("prompts")
    if not isinstance(prompts, list) or not prompts:
        got = type(prompts).__name__ if prompts is not None else "nothing"
        raise SuiteError(f"{where}: field 'prompts' must be a non-empty list of prompt objects, got {got}")
    groups = {"dimension": dimension, "task": name} if dimension else {"task": name}
    experiment_extra = _extra(obj, SVBENCH_EXPERIMENT_FIELDS)
    out = []
    for k, item in enumerate(prompts, start=1):
        at = f"{where}, prompt {k}"
        p = _object(item, at, "a prompt")
        difficulty = _difficulty(p, at, required=True)
        rec = SuiteRecord(
            prompt_id=f"{eid}-{k}-{difficulty}",
            prompt=_text(p, "prompt", at, required=True),
            paradigm=name,
            test_point=test_point,
            ground_truth=_text(p, "ground_truth", at),
            question=_text(p, "question", at),
            difficulty=difficulty,
            groups=dict(groups),
            provenance=_provenance(
                "svbench",
                path,
                at,
                {**experiment_extra, **_extra(p, SVBENCH_PROMPT_FIELDS)},
                experiment_id=eid,
            ),
        )
        out.append((at, rec))
    return out


def _svbench_video(path: Path, where: str, obj: Mapping) -> tuple[str, SuiteRecord]:
    video = _text(obj, "video_file", where, required=True)
    name = _text(obj, "experiment_name", where, required=True)
    pid = Path(video.replace("\\", "/")).stem
    if not pid:
        raise SuiteError(f"{where}: field 'video_file' {video!r} names no file")
    rec = SuiteRecord(
        prompt_id=pid,
        prompt=_text(obj, "prompt", where, required=True),
        paradigm=name,
        test_point=_text(obj, "test_point", where),
        ground_truth=_text(obj, "ground_truth", where),
        question=_text(obj, "question", where),
        difficulty=_difficulty(obj, where, required=False),
        groups={"task": name},
        provenance=_provenance("svbench", path, where, _extra(obj, SVBENCH_VIDEO_FIELDS), video_file=video),
    )
    return where, rec


def load_svbench(path: str | os.PathLike) -> list[SuiteRecord]:
    """SVBench's ``bench_for_{short,long}.json`` experiments or ``video_info_matched.json`` video records as suite
    records; which of the two a file is follows from its first record (``prompts`` or ``video_file``)."""
    path = Path(path)
    items = read_records(path)
    out: list[tuple[str, SuiteRecord]] = []
    shape = None
    for where, item in items:
        obj = _object(item, where, "a record")
        this = "experiment" if "prompts" in obj else "video" if "video_file" in obj else None
        if this is None:
            raise SuiteError(
                f"{where}: neither an SVBench experiment (with 'prompts') nor a video record (with 'video_file')"
            )
        if shape is None:
            shape = this
        elif this != shape:
            raise SuiteError(f"{where}: a{'n' if this == 'experiment' else ''} {this} record in a file of {shape}s")
        if this == "experiment":
            out += _svbench_experiment(path, where, obj)
        else:
            out.append(_svbench_video(path, where, obj))
    return _unique(out)


PUBLISHED: dict[str, Callable[[str | os.PathLike], list[SuiteRecord]]] = {
    "scivbench": load_scivbench,
    "svbench": load_svbench,
}


def load_published(kind: str, path: str | os.PathLike) -> list[SuiteRecord]:
    """The suite records of a published file of ``kind`` (a name in ``PUBLISHED``)."""
    if kind not in PUBLISHED:
        raise SuiteError(f"unknown published suite {kind!r}; known: {sorted(PUBLISHED)}")
    return PUBLISHED[kind](path)
