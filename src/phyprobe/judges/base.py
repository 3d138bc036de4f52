"""What every rubric judge shares: questions per video, n seeded samples per question, strict parsing,
and a per-video record that keeps everything (scores, justifications, raw replies, failures, cost).

A judge says which questions to ask about a video (``items``), how to read one answer (``parse``,
raising ``ReplyError``), and how its dimension scores make one headline score and a violation score
in [0, 1] (``combine``). A dimension's score is the mean of its valid samples; a video gets a
headline only when every dimension it was asked about has at least one valid sample — a dimension
that failed is never filled in, so a failure cannot masquerade as a score.
"""

from __future__ import annotations

import logging
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np

from ..data.manifest import Manifest
from .client import JudgeClient, Reply, Request, Sampling
from .parsing import ReplyError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Item:
    """One question about one video: the full request text and the dimension(s) its answer scores."""

    name: str
    text: str


@dataclass
class JudgeResult:
    """Per-video records (``records[id]``), violation scores of the judged videos, and the run's cost."""

    name: str
    records: dict[str, dict]
    scores: dict[str, float]
    cost: dict = field(default_factory=dict)
    standin: bool = False


class LLMJudge(ABC):
    """A rubric judge served through ``JudgeClient``."""

    name: str = "judge"
    samples: int = 1
    seed: int = 0
    sampling: Sampling = Sampling()

    @abstractmethod
    def tasks(self, manifest: Manifest) -> dict[str, dict]:
        """``{video id: task}`` for the videos this judge can judge."""

    @abstractmethod
    def items(self, task: dict) -> list[Item]:
        """The questions to ask about the video of ``task``."""

    @abstractmethod
    def parse(self, item: Item, text: str) -> dict:
        """``{"scores": {dimension: number}, ...}`` from one reply; raises ``ReplyError``."""

    def dimensions_of(self, item_name: str) -> list[str]:
        """The dimensions an answer to item ``item_name`` scores (by default the item's own name)."""
        return [item_name]

    @abstractmethod
    def combine(self, dims: dict[str, float]) -> tuple[float, float]:
        """(headline score on the judge's own scale, violation score in [0, 1], higher = worse)."""


RAW_KEPT = 4096  # characters of a reply kept in a failure row: enough to see what went wrong, never 80 MB per row


def clipped(text: str | None) -> str | None:
    """A reply as a failure row keeps it: at most :data:`RAW_KEPT` characters, the cut said."""
    if text is None or len(text) <= RAW_KEPT:
        return text
    return f"{text[:RAW_KEPT]}... [{len(text) - RAW_KEPT} more characters cut]"


def _sample(reply: Reply, seed: int, judge: LLMJudge, item: Item) -> dict:
    s = {"seed": seed, "raw": reply.text, "error": None, "parsed": None}
    if not reply.ok:
        s["error"], s["kind"] = reply.error, reply.kind or "request"  # "timeout": past the total deadline
        return s
    try:
        s["parsed"] = judge.parse(item, reply.text)
    except ReplyError as e:
        s["error"], s["kind"] = str(e), "parse"
    return s


def cost_summary(records: dict[str, dict], wall_seconds: float) -> dict:
    """Calls, tokens and seconds per judged video (the cost column beside every other evaluator)."""
    n = len(records)
    tot = {
        k: sum(r["cost"][k] for r in records.values())
        for k in ("calls", "prompt_tokens", "completion_tokens", "model_seconds", "cached_calls")
    }
    per = (lambda x: x / n) if n else (lambda x: None)
    return {
        "videos": n,
        "calls_per_video": per(tot["calls"]),
        "prompt_tokens_per_video": per(tot["prompt_tokens"]),
        "completion_tokens_per_video": per(tot["completion_tokens"]),
        "model_seconds_per_video": per(tot["model_seconds"]),
        "seconds_per_video": per(wall_seconds),
        "wall_seconds": wall_seconds,
        "cached_calls": tot["cached_calls"],
    }


def local_cost(videos: int, wall_seconds: float) -> dict:
    """The cost summary of an evaluator that calls no model server (PhyProbe, baselines, CSVs)."""
    per = (lambda x: x / videos) if videos else (lambda x: None)
    return {
        "videos": videos,
        "calls_per_video": per(0),
        "prompt_tokens_per_video": per(0),
        "completion_tokens_per_video": per(0),
        "model_seconds_per_video": per(wall_seconds),
        "seconds_per_video": per(wall_seconds),
        "wall_seconds": wall_seconds,
        "cached_calls": 0,
    }


def judge_manifest(
    judge: LLMJudge,
    manifest: Manifest,
    client: JudgeClient,
    tasks: dict[str, dict] | None = None,
    progress_every: int = 0,
) -> JudgeResult:
    """Judge every video of ``manifest`` that has a task; one record per judged video."""
    t0 = time.perf_counter()
    tasks = judge.tasks(manifest) if tasks is None else tasks
    paths = dict(zip(manifest.videos["id"], manifest.videos["path"]))
    plan: list[tuple[str, Item, int]] = []
    requests: list[Request] = []
    for vid, task in tasks.items():
        video = manifest.video_path(paths[vid])
        for item in judge.items(task):
            for k in range(judge.samples):
                plan.append((vid, item, judge.seed + k))
                requests.append(Request(video=video, text=item.text, seed=judge.seed + k, sampling=judge.sampling))
    replies = client.ask_all(requests, progress_every=progress_every)

    records: dict[str, dict] = {}
    for vid in tasks:
        records[vid] = {
            "id": vid,
            "path": paths[vid],
            "judge": judge.name,
            "model": client.config.model,
            "score": None,
            "violation_score": None,
            "dimensions": {},
            "items": {},
            "failures": [],
            "cost": {"calls": 0, "cached_calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "model_seconds": 0.0},
        }
    for (vid, item, seed), req, reply in zip(plan, requests, replies):
        rec = records[vid]
        c = rec["cost"]
        c["calls"] += 1
        c["cached_calls"] += int(reply.cached)
        c["prompt_tokens"] += reply.prompt_tokens
        c["completion_tokens"] += reply.completion_tokens
        c["model_seconds"] += reply.seconds
        s = _sample(reply, seed, judge, item)
        rec["items"].setdefault(item.name, []).append(s)
        if s["error"] is not None:
            if s["kind"] == "parse":
                client.forget(req)  # never replayed from the cache: a rerun asks again
            rec["failures"].append(
                {"item": item.name, "seed": seed, "kind": s["kind"], "error": s["error"], "raw": clipped(s["raw"])}
            )
    for rec in records.values():
        asked: dict[str, list[float]] = {}
        for item_name, samples in rec["items"].items():
            for dim in judge.dimensions_of(item_name):
                asked.setdefault(dim, [])
            for s in samples:
                if s["parsed"] is not None:
                    for dim, v in s["parsed"]["scores"].items():
                        asked.setdefault(dim, []).append(float(v))
        rec["dimensions"] = {
            d: {"score": float(np.mean(v)) if v else None, "n_valid": len(v), "samples": v} for d, v in asked.items()
        }
        if asked and all(v for v in asked.values()):
            rec["score"], rec["violation_score"] = judge.combine({d: float(np.mean(v)) for d, v in asked.items()})
    scores = {vid: r["violation_score"] for vid, r in records.items() if r["violation_score"] is not None}
    failed = len(records) - len(scores)
    if failed:
        log.warning(
            "%s: %d of %d videos have no score (every sample of a dimension failed); see their "
            "'failures' in the judgements",
            judge.name,
            failed,
            len(records),
        )
    return JudgeResult(judge.name, records, scores, cost_summary(records, time.perf_counter() - t0))
