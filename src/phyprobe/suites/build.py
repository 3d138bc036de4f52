"""``phyprobe suite build``: seed paradigms -> a prompt suite, by the three agents of :mod:`.agents`.

For each paradigm: the understanding agent once; then, for each difficulty, ``per_difficulty`` prompts, each
synthesised and sent to the critic, whose violations (type, evidence, fix) go back to synthesis until it passes or
``max_rounds`` rounds are spent. Every round's structured outputs are kept in the record's ``provenance``. The
deterministic check of :mod:`.leakage` runs on every round's prompt; a prompt is kept only when the critic passed it
and the check did not flag it. Everything not kept is a line of ``<out>.failures.jsonl`` with its reason
(``request_failed``, ``malformed_reply``, ``critic_rejected``, ``leakage_check``) and what was made before it
failed; ``<out>.build.json`` counts them.

**Stages** (SVBench's ablation, Table 3, read cumulatively): ``full`` is the above; ``synthesis_only`` keeps the
understanding agent but sends no revision: the critic is asked once, for its verdict only; ``understanding_off``
also drops the understanding agent, so synthesis sees the raw seed. The stage is in every record's provenance, and
``phyprobe suite stats`` puts the pass rates of several builds side by side. The critic sees the seed's test point
and ground truth in every stage, so one prompt gets one verdict whatever the stage.

**Resume.** Every request is deterministic: its text depends only on the seeds and the earlier replies, its seed is
a hash of (build seed, agent, prompt id, round), and its sampling comes from the config. The client's cache
(``cache_dir``) holds every reply that came back, so a rerun after a kill replays the finished work from it and
sends only what never got an answer; a build of another stage reuses the requests they share.

**Outputs** are written only to paths that are free or that this command wrote before (recognised by their
``tool`` field); anything else is refused with one line, before any request is sent.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import queue
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path

from ..data.manifest import write_jsonl
from ..errors import InvalidOption, UserError
from ..judges.base import clipped
from ..judges.client import JudgeClient, JudgeServerError, Reply, Request, Sampling, client_from_config
from ..judges.parsing import ReplyError
from .agents import (
    SETTINGS,
    critic_request,
    parse_critic,
    parse_synthesis,
    parse_understanding,
    synthesis_request,
    understanding_request,
)
from .format import DIFFICULTIES, SuiteRecord, write_suite
from .leakage import check
from .seeds import Paradigm

log = logging.getLogger(__name__)

TOOL = "phyprobe suite build"
STAGES = ("full", "synthesis_only", "understanding_off")
REASONS = ("request_failed", "malformed_reply", "critic_rejected", "leakage_check")
PREFIX_BYTES = 64 * 1024


@dataclass(frozen=True)
class BuildSettings:
    """What to build (the ``build:`` block of ``configs/suite/build.yaml``)."""

    per_difficulty: int = 3
    difficulties: tuple[str, ...] = DIFFICULTIES
    max_rounds: int = 3
    stage: str = "full"
    seed: int = 0
    temperature: float = 0.7
    top_p: float | None = None
    max_tokens: int = 1024

    def __post_init__(self):
        object.__setattr__(self, "difficulties", tuple(self.difficulties))
        bad = [d for d in self.difficulties if d not in DIFFICULTIES]
        if bad or not self.difficulties or len(set(self.difficulties)) != len(self.difficulties):
            raise InvalidOption(
                f"build.difficulties must be distinct values of {list(DIFFICULTIES)}, got {list(self.difficulties)}"
            )
        for k in ("per_difficulty", "max_rounds", "max_tokens"):
            v = getattr(self, k)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise InvalidOption(f"build.{k} must be a whole number >= 1, got {v!r}")
        if self.stage not in STAGES:
            raise InvalidOption(f"build.stage must be one of {list(STAGES)}, got {self.stage!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise InvalidOption(f"build.seed must be a whole number, got {self.seed!r}")

    @classmethod
    def from_mapping(cls, cfg: dict, where: str) -> BuildSettings:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(cfg) - known)
        if unknown:
            raise InvalidOption(f"{where}: unknown build setting(s) {unknown}; known: {sorted(known)}")
        return cls(**cfg)

    @property
    def sampling(self) -> Sampling:
        return Sampling(temperature=self.temperature, top_p=self.top_p, max_tokens=self.max_tokens)


@dataclass
class BuildResult:
    records: list[SuiteRecord]
    failures: list[dict]
    summary: dict = field(default_factory=dict)


def request_seed(base: int, *parts) -> int:
    """A request's sampling seed: a stable hash (not Python's salted ``hash``) of the build seed and its place."""
    digest = hashlib.sha256(json.dumps([base, *parts]).encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


class _Failed(Exception):
    def __init__(self, reason: str, agent: str, error: str, raw: str | None = None):
        super().__init__(error)
        self.reason, self.agent, self.error, self.raw = reason, agent, error, raw


class _Stopped(Exception):
    """The build was interrupted: no further request is sent."""


class _Builder:
    def __init__(self, paradigms: list[Paradigm], client: JudgeClient, settings: BuildSettings):
        self.paradigms, self.client, self.s = paradigms, client, settings
        self.requests: Counter = Counter()
        self._lock = threading.Lock()
        self.stop = threading.Event()

    # -- one request ---------------------------------------------------------------------------------------------

    def _count(self, reply: Reply) -> None:
        with self._lock:
            self.requests["from_cache" if reply.cached else "sent" if reply.ok else "failed"] += 1
        if not reply.ok and self.client.refused:
            raise JudgeServerError(self.client.refused)

    def _call(self, agent: str, text: str, seed: int, parse: Callable[[str], dict]) -> dict:
        if self.stop.is_set():
            raise _Stopped()
        req = Request(None, text, seed, self.s.sampling)
        reply = self.client.ask(req)
        self._count(reply)
        if not reply.ok:
            raise _Failed("request_failed", agent, reply.error or "no reply")
        try:
            return parse(reply.text)
        except ReplyError as e:
            self.client.forget(req)  # never replayed from the cache: a rerun asks again
            raise _Failed("malformed_reply", agent, str(e), clipped(reply.text)) from None

    # -- the pipeline --------------------------------------------------------------------------------------------

    def understand(self) -> dict[str, dict | _Failed]:
        """The understanding agent's output per paradigm id (or why there is none); nothing when it is off."""
        if self.s.stage == "understanding_off":
            return {}

        def one(p: Paradigm) -> dict | _Failed:
            text = understanding_request(p.seed_json())
            try:
                return self._call(
                    "understanding", text, request_seed(self.s.seed, "understanding", p.id), parse_understanding
                )
            except _Failed as f:
                return f

        return dict(zip((p.id for p in self.paradigms), self.parallel(one, [(p,) for p in self.paradigms])))

    def parallel(self, fn: Callable, args: list[tuple]) -> list:
        """``[fn(*a) for a in args]`` on ``concurrency`` daemon threads. On an interrupt (Ctrl-C, SIGTERM) or an
        error, no worker sends another request and the caller returns at once: a daemon thread left in a request
        ends with the process, and the cache it writes to is safe to kill at any instant."""
        results: list = [None] * len(args)
        todo = queue.SimpleQueue()
        for i in range(len(args)):
            todo.put(i)
        errors: list[BaseException] = []

        def work():
            while not self.stop.is_set():
                try:
                    i = todo.get_nowait()
                except queue.Empty:
                    return
                try:
                    results[i] = fn(*args[i])
                except _Stopped:
                    return
                except BaseException as e:  # noqa: BLE001 - handed to the calling thread
                    errors.append(e)
                    self.stop.set()
                    return

        threads = [
            threading.Thread(target=work, daemon=True, name=f"suite-{n}")
            for n in range(min(self.client.config.concurrency, len(args)))
        ]
        try:
            for t in threads:
                t.start()
            for t in threads:
                while t.is_alive():
                    t.join(0.1)
        except BaseException:
            self.stop.set()
            raise
        if errors:
            raise errors[0]
        return results

    def base_provenance(self, p: Paradigm, understanding: dict | None, k: int, setting: str) -> dict:
        return {
            "tool": TOOL,
            "stage": self.s.stage,
            "model": self.client.config.model,
            "seed": self.s.seed,
            "seeds_file": Path(p.source).name,
            "paradigm": {
                key: value
                for key, value in (
                    ("name", p.name),
                    ("family", p.family),
                    ("number", p.number),
                    ("dimension", p.dimension),
                )
                if value is not None
            },
            "variant": k,
            "setting": setting,
            "understanding": understanding,
            "rounds": [],
        }

    def item(self, p: Paradigm, und: dict | _Failed | None, difficulty: str, k: int) -> SuiteRecord | dict:
        pid = f"{p.id}-{difficulty}-{k}"
        setting = SETTINGS[k % len(SETTINGS)]
        prov = self.base_provenance(p, und if isinstance(und, dict) else None, k, setting)
        rounds: list[dict] = prov["rounds"]

        def failure(reason: str, detail: str, agent: str | None = None, raw: str | None = None) -> dict:
            """The failures-file row: why, which agent and round (None: before any round), and what was made."""
            last = rounds[-1] if rounds else None
            prov.update(
                critic_rounds=len(rounds),
                critic_passed=bool(last and last["critic"]["pass"]),
                leakage=last["leakage"] if last else None,
            )
            unfinished = reason in ("request_failed", "malformed_reply")  # the round it failed in has no entry
            at = None if agent == "understanding" else len(rounds) + unfinished
            row = {"tool": TOOL, "prompt_id": pid, "paradigm": p.id, "difficulty": difficulty, "stage": self.s.stage}
            row.update(reason=reason, detail=detail, agent=agent, round=at)
            if raw is not None:
                row["raw"] = raw
            return {**row, "provenance": prov}

        if isinstance(und, _Failed):
            return failure(und.reason, und.error, und.agent, und.raw)
        if und is not None:
            view = {"name": p.name, "family": p.family, **und}
            if p.example_scenario:
                view["example_scenario"] = p.example_scenario
        else:
            view = p.seed_json()
        allowed = self.s.max_rounds if self.s.stage == "full" else 1
        previous = violations = None
        try:
            for r in range(1, allowed + 1):
                text = synthesis_request(view, difficulty, k, setting, previous, violations)
                synth = self._call("synthesis", text, request_seed(self.s.seed, "synthesis", pid, r), parse_synthesis)
                text = critic_request(p.name, p.test_point, p.ground_truth, difficulty, synth["prompt"])
                verdict = self._call(
                    "critic", text, request_seed(self.s.seed, "critic", pid, r), lambda t: parse_critic(t, difficulty)
                )
                leak = check(synth["prompt"], p.ground_truth, p.test_point).to_json()
                rounds.append({"round": r, "synthesis": synth, "critic": verdict, "leakage": leak})
                if verdict["pass"]:
                    break
                previous, violations = synth["prompt"], verdict["violations"]
        except _Failed as f:
            return failure(f.reason, f.error, f.agent, f.raw)
        last = rounds[-1]
        if not last["critic"]["pass"]:
            kinds = sorted({v["type"] for v in last["critic"]["violations"]})
            return failure("critic_rejected", f"the critic rejected it in all {len(rounds)} round(s), last for {kinds}")
        if last["leakage"]["flagged"]:
            return failure(
                "leakage_check", f"the critic passed it but the deterministic check flagged {last['leakage']['flags']}"
            )
        prov.update(critic_rounds=len(rounds), critic_passed=True, leakage=last["leakage"])
        synth = last["synthesis"]
        groups = {"family": p.family, **({"dimension": p.dimension} if p.dimension else {})}
        return SuiteRecord(
            prompt_id=pid,
            prompt=synth["prompt"],
            reference_guide=synth["expected_outcome"],
            paradigm=p.id,
            test_point=p.test_point,
            ground_truth=p.ground_truth,
            question=synth["question"],
            difficulty=difficulty,
            groups=groups,
            provenance=prov,
        )

    def run(self) -> BuildResult:
        understood = self.understand()
        items = [
            (p, understood.get(p.id), d, k)
            for p in self.paradigms
            for d in self.s.difficulties
            for k in range(self.s.per_difficulty)
        ]
        results = self.parallel(self.item, items)
        records = [r for r in results if isinstance(r, SuiteRecord)]
        failures = [r for r in results if isinstance(r, dict)]
        return BuildResult(records, failures, self.summary(len(items), records, failures))

    def summary(self, requested: int, records: list[SuiteRecord], failures: list[dict]) -> dict:
        reasons = Counter(f["reason"] for f in failures)
        return {
            "tool": TOOL,
            "stage": self.s.stage,
            "model": self.client.config.model,
            "seed": self.s.seed,
            "seed_files": sorted({Path(p.source).name for p in self.paradigms}),
            "paradigms": len(self.paradigms),
            "difficulties": list(self.s.difficulties),
            "per_difficulty": self.s.per_difficulty,
            "max_rounds": self.s.max_rounds if self.s.stage == "full" else 1,
            "requested": requested,
            "kept": len(records),
            "not_kept": {r: reasons[r] for r in REASONS if reasons[r]},
            "critic_rounds_of_kept": dict(sorted(Counter(r.provenance["critic_rounds"] for r in records).items())),
            "requests": {k: self.requests[k] for k in ("sent", "from_cache", "failed")},
        }


def build_suite(paradigms: list[Paradigm], client: JudgeClient, settings: BuildSettings) -> BuildResult:
    """Build the prompts of ``paradigms`` through ``client`` (see the module docstring); writes nothing."""
    return _Builder(paradigms, client, settings).run()


# -- outputs ----------------------------------------------------------------------------------------------------


def output_paths(out: str | os.PathLike) -> dict[str, Path]:
    """The suite and the two files beside it: ``X.jsonl`` -> ``X.failures.jsonl``, ``X.build.json``."""
    out = Path(out)
    stem = out.name[: -len(".jsonl")] if out.name.endswith(".jsonl") else out.name
    return {
        "suite": out,
        "failures": out.with_name(stem + ".failures.jsonl"),
        "summary": out.with_name(stem + ".build.json"),
    }


def _first_json(path: Path, whole: bool):
    """The first line (or, with ``whole``, the whole file) of ``path`` as JSON, or None when it is not."""
    with open(path, "rb") as f:
        head = f.read(PREFIX_BYTES + 1)
    if whole:
        if len(head) > PREFIX_BYTES:
            return None
        text = head
    else:
        lines = [x for x in head.split(b"\n") if x.strip()]
        if not lines or (len(lines) == 1 and len(head) > PREFIX_BYTES):
            return None
        text = lines[0]
    try:
        return json.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return None


def check_writable(path: str | os.PathLike, tool: str, whole_json: bool = False) -> None:
    """Refuse, in one line, a path that holds something ``tool`` did not write: anything but nothing, an empty
    regular file, or a file whose first JSON record (the whole JSON with ``whole_json``) says ``tool`` wrote it
    (a suite record's ``provenance.tool``, a failure or summary's ``tool``)."""
    path = Path(path)
    if not os.path.lexists(path):
        return
    if not path.is_file():
        raise UserError(
            f"{path}: exists and is not a regular file; `{tool}` writes only its own files, pass another path"
        )
    if path.stat().st_size == 0:
        return
    obj = _first_json(path, whole_json)
    prov = obj.get("provenance") if isinstance(obj, dict) else None
    ours = isinstance(obj, dict) and (obj.get("tool") == tool or (isinstance(prov, dict) and prov.get("tool") == tool))
    if not ours:
        raise UserError(f"{path}: exists and was not written by `{tool}`; it is left as it is, pass another path")


def run_build(cfg: dict, paradigms: list[Paradigm], out: str | os.PathLike, where: str = "config") -> BuildResult:
    """Build and write ``out`` (the suite), its failures and its summary; outputs are checked before any request."""
    paths = output_paths(out)
    for kind, path in paths.items():
        check_writable(path, TOOL, whole_json=kind == "summary")
    unknown = sorted(set(cfg) - {"client", "build", "cache_dir"})
    if unknown:
        raise InvalidOption(f"{where}: unknown key(s) {unknown}; a build config has client, build and cache_dir")
    settings = BuildSettings.from_mapping(dict(cfg.get("build") or {}), where)
    client = client_from_config(cfg, where)
    # closed only after a build that ended: an interrupted one may leave a worker in a request, whose reply is
    # still cached if it comes before the process ends (the cache is safe to kill at any instant)
    result = build_suite(paradigms, client, settings)
    client.close()
    write_suite(result.records, paths["suite"])
    write_jsonl(paths["failures"], result.failures)  # beside the suite, whose folder write_suite made
    from ..runinfo import atomic_write_json

    result.summary["outputs"] = {k: str(v) for k, v in paths.items()}
    atomic_write_json(paths["summary"], result.summary)
    return result
