"""Seed paradigms: the classic experiments a suite's prompts are made from, as files a user extends.

A seed file is YAML (``configs/suite/seeds/*.yaml``): a list of paradigms under ``paradigms:`` with SVBench's seed
keys (``number, dimension, name, description, key_concepts, test_point, ground_truth, evaluation_criteria,
example_scenario``) plus ``family`` (the violation family or domain a paradigm belongs to, a group field of the
suite) and ``expected_outcome`` (what a video that gets it right shows, in observable terms). ``name``, ``family``,
``description`` (the formal description), ``key_concepts``, ``test_point``, ``ground_truth`` and ``expected_outcome``
are required. SVBench's own ``seed_experiments.json`` (a JSON list with its nine keys) is read as it is released:
its ``dimension`` stands in for ``family`` and its ``ground_truth`` for ``expected_outcome``.

A paradigm's id (the ``paradigm`` field of its prompts, and the start of their ids) is its name in lower case with
every run of other characters turned into ``_``. A bad file stops the load with one line naming the file, the line
(YAML), the paradigm and the field.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

import yaml

from ..errors import UserError, json_error_reason
from ..io.json_input import read_input_text, reject_constant

SVBENCH_KEYS = (
    "number",
    "dimension",
    "name",
    "description",
    "key_concepts",
    "test_point",
    "ground_truth",
    "evaluation_criteria",
    "example_scenario",
)
KEYS = (*SVBENCH_KEYS, "family", "expected_outcome")
REQUIRED = ("name", "family", "description", "key_concepts", "test_point", "ground_truth", "expected_outcome")
SEED_DIR = ("suite", "seeds")  # under the project's configs/


class SeedError(UserError, ValueError):
    """A seed file that cannot be used; the message names the file, the paradigm and the field."""


@dataclass(frozen=True)
class Paradigm:
    """One seed paradigm (see the module docstring); ``source`` is the file it came from."""

    name: str
    family: str
    description: str
    key_concepts: tuple[str, ...]
    test_point: str
    ground_truth: str
    expected_outcome: str
    number: int | None = None
    dimension: str | None = None
    evaluation_criteria: str | None = None
    example_scenario: str | None = None
    source: str = ""

    @property
    def id(self) -> str:
        return paradigm_id(self.name)

    def seed_json(self) -> dict:
        """The paradigm as its seed file has it (no ``source``), without empty optional keys: what an agent reads."""
        d = asdict(self)
        d.pop("source")
        d["key_concepts"] = list(self.key_concepts)
        return {k: d[k] for k in KEYS if d.get(k) not in (None, "", [])}


def paradigm_id(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def seed_dir() -> Path:
    from ..config_files import config_dir

    return config_dir().joinpath(*SEED_DIR)


def resolve_seed_file(name_or_path: str | os.PathLike) -> Path:
    """A seed file's path: as given, or a name under ``configs/suite/seeds/`` (``physics`` -> ``physics.yaml``)."""
    path = Path(name_or_path)
    if path.is_file():
        return path
    if not path.suffix and len(path.parts) == 1:
        candidate = seed_dir() / f"{path}.yaml"
        if candidate.is_file():
            return candidate
    known = sorted(p.stem for p in seed_dir().glob("*.yaml")) if seed_dir().is_dir() else []
    raise SeedError(f"{name_or_path}: no such seed file, nor the name of one under configs/suite/seeds/ ({known})")


def _paradigm_lines(text: str) -> list[int]:
    """The 1-based line where each paradigm of a YAML seed file starts (empty when the layout is not the expected
    one; the value check then says what is wrong)."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return []
    if isinstance(root, yaml.MappingNode):
        root = next((v for k, v in root.value if getattr(k, "value", None) == "paradigms"), None)
    if not isinstance(root, yaml.SequenceNode):
        return []
    return [item.start_mark.line + 1 for item in root.value]


def _text(value, where: str, key: str, required: bool) -> str | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            raise SeedError(f"{where}: field {key!r} is missing or empty")
        return None
    if isinstance(value, list) and key == "evaluation_criteria" and all(isinstance(x, str) for x in value):
        return " ".join(x.strip() for x in value)
    if not isinstance(value, str):
        raise SeedError(f"{where}: field {key!r} must be text, got {type(value).__name__}")
    return " ".join(value.split())


def paradigm_from(obj, where: str, svbench: bool, source: str) -> Paradigm:
    """One ``Paradigm`` from a parsed mapping; ``where`` starts every error."""
    if not isinstance(obj, Mapping):
        raise SeedError(f"{where}: a paradigm must be a mapping of {list(KEYS)}, got {type(obj).__name__}")
    name = _text(obj.get("name"), where, "name", True)
    where = f"{where} ({name!r})"
    allowed = SVBENCH_KEYS if svbench else KEYS
    unknown = sorted(str(k) for k in obj if k not in allowed)
    if unknown:
        raise SeedError(f"{where}: unknown field(s) {unknown}; a paradigm has {list(allowed)}")
    required = tuple(k for k in REQUIRED if not (svbench and k in ("family", "expected_outcome")))
    out: dict = {"name": name, "source": source}
    for k in ("description", "test_point", "ground_truth", "expected_outcome", "family", "dimension"):
        out[k] = _text(obj.get(k), where, k, k in required)
    for k in ("evaluation_criteria", "example_scenario"):
        out[k] = _text(obj.get(k), where, k, False)
    concepts = obj.get("key_concepts")
    if isinstance(concepts, str):
        concepts = [c for c in (x.strip() for x in concepts.split(",")) if c]
    if not isinstance(concepts, list) or not concepts or not all(isinstance(c, str) and c.strip() for c in concepts):
        raise SeedError(f"{where}: field 'key_concepts' must be a non-empty list of text, got {concepts!r}")
    out["key_concepts"] = tuple(c.strip() for c in concepts)
    number = obj.get("number")
    if number is not None and (isinstance(number, bool) or not isinstance(number, int)):
        raise SeedError(f"{where}: field 'number' must be a whole number, got {number!r}")
    out["number"] = number
    if svbench:  # SVBench's seeds have neither: its dimension is the group, its ground truth the outcome
        out["family"] = out["family"] or out["dimension"] or "svbench"
        out["expected_outcome"] = out["ground_truth"]
    if not paradigm_id(name):
        raise SeedError(f"{where}: field 'name' has no letter or digit to make an id from")
    return Paradigm(**out)


MAX_SEED_BYTES = 64 * 2**20  # a seed file past this is refused rather than read


class _SeedLoader(yaml.SafeLoader):
    """YAML without aliases: ``*name`` references let a few lines expand into billions of nodes for whatever walks
    them (the "billion laughs"), and a seed file has no use for them."""

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark
            raise yaml.composer.ComposerError(None, None, "aliases (*name) are not allowed in a seed file", mark)
        return super().compose_node(parent, index)


def load_seeds(path: str | os.PathLike) -> list[Paradigm]:
    """The paradigms of one seed file: YAML (this project's format) or SVBench's ``seed_experiments.json``."""
    path = Path(path)
    text = read_input_text(path, "seed file", MAX_SEED_BYTES, error=SeedError)
    svbench = path.suffix.lower() == ".json"
    lines: list[int] = []
    if svbench:
        try:
            data = json.loads(text, parse_constant=reject_constant)
        except json.JSONDecodeError as e:
            raise SeedError(f"{path}:{e.lineno}: not valid JSON ({e.msg})") from None
        except (ValueError, RecursionError) as e:
            raise SeedError(f"{path}: {json_error_reason(e)}") from None
    else:
        try:
            data = yaml.load(text, Loader=_SeedLoader)
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            at = f":{mark.line + 1}" if mark is not None else ""
            raise SeedError(f"{path}{at}: not valid YAML ({getattr(e, 'problem', None) or e})") from None
        except RecursionError:
            raise SeedError(f"{path}: not valid YAML here (nested too deeply)") from None
        lines = _paradigm_lines(text)
    items = data.get("paradigms") if isinstance(data, Mapping) else data
    if not isinstance(items, list) or not items:
        raise SeedError(
            f"{path}: expected a non-empty list of paradigms (YAML: under 'paradigms:'), got {type(items).__name__}"
        )
    out: list[Paradigm] = []
    seen: dict[str, str] = {}
    for i, obj in enumerate(items):
        where = f"{path}:{lines[i]}: paradigm {i + 1}" if i < len(lines) else f"{path}: paradigm {i + 1}"
        p = paradigm_from(obj, where, svbench, str(path))
        if p.id in seen:
            raise SeedError(f"{where}: paradigm id {p.id!r} (from its name) is taken by {seen[p.id]}")
        seen[p.id] = where
        out.append(p)
    return out


def load_seed_files(paths: Iterable[str | os.PathLike]) -> list[Paradigm]:
    """The paradigms of several seed files (names or paths), in order; an id in two files is an error naming both."""
    out: list[Paradigm] = []
    seen: dict[str, str] = {}
    for name in paths:
        path = resolve_seed_file(name)
        for p in load_seeds(path):
            if p.id in seen:
                raise SeedError(f"{path}: paradigm id {p.id!r} ({p.name!r}) is also in {seen[p.id]}")
            seen[p.id] = str(path)
            out.append(p)
    return out
