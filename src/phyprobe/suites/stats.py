"""``phyprobe suite stats``: what a suite holds, and, for builds, how many prompts each stage let through.

Per suite: prompts per paradigm and difficulty, and per value of each field an imported suite's records carry
(Sci-VBench's discipline, SVBench's category, ...), prompts whose text repeats another's (case and spacing ignored),
for a build what was not kept and why (from the failures file beside it), critic rounds of the kept prompts, the deterministic leakage check run again on every prompt that has a
ground truth or a test point (so an imported suite is checked too), and prompt lengths in words.

The stage table counts, per build, every prompt attempted (kept + failures): how many the critic passed (its last
verdict), how many the deterministic check passed (on the last prompt made), and how many both passed, which are the
ones kept. It needs the failures file of each build: without it the attempts are unknown and no rate is given.
Scripted-server builds give counts of the script, not pass rates of a model.
"""

from __future__ import annotations

import os
import statistics
from collections import Counter
from pathlib import Path

from ..data.manifest import read_jsonl_objects
from ..errors import UserError
from .build import REASONS, output_paths
from .format import DIFFICULTIES, SuiteError, SuiteRecord, read_suite
from .leakage import check

TOOL = "phyprobe suite stats"
NONE = "(none)"


def read_build(path: str | os.PathLike) -> tuple[list[SuiteRecord], list[dict] | None]:
    """The records of a suite (an empty file is a build that kept nothing) and the rows of the failures file beside
    it (None when there is none)."""
    path = Path(path)
    records = [] if path.is_file() and path.stat().st_size == 0 else read_suite(path)
    fpath = output_paths(path)["failures"]
    if not fpath.is_file():
        return records, None
    failures = []
    try:
        for line, row in read_jsonl_objects(fpath, what="failures file"):
            missing = [k for k in ("prompt_id", "reason", "provenance") if k not in row]
            if missing or row["reason"] not in REASONS or not isinstance(row["provenance"], dict):
                raise SuiteError(
                    f"{fpath}:{line}: not a failure row of `phyprobe suite build` (needs prompt_id, a reason in "
                    f"{list(REASONS)} and provenance)"
                )
            failures.append(row)
    except SuiteError:
        raise
    except UserError as e:
        raise SuiteError(str(e)) from None
    return records, failures


def _lengths(values: list[int]) -> dict:
    if not values:
        return {"n": 0}
    return {
        "n": len(values),
        "min": min(values),
        "median": statistics.median(values),
        "mean": round(statistics.fmean(values), 1),
        "max": max(values),
    }


def _stage(records: list[SuiteRecord], failures: list[dict] | None) -> str | None:
    stages = {r.provenance.get("stage") for r in records} | {f.get("stage") for f in failures or []}
    stages.discard(None)
    return stages.pop() if len(stages) == 1 else ("mixed" if stages else None)


def suite_stats(path: str | os.PathLike) -> dict:
    """The counts of one suite (see the module docstring)."""
    records, failures = read_build(path)
    by_paradigm: dict[str, Counter] = {}
    for r in records:
        by_paradigm.setdefault(r.paradigm or NONE, Counter())[r.difficulty or NONE] += 1
    not_kept: dict[str, Counter] = {}
    for f in failures or []:
        not_kept.setdefault(f.get("paradigm") or NONE, Counter())[f["reason"]] += 1
    flagged, by_flag = [], Counter()
    checked = 0
    for r in records:
        if not (r.ground_truth or r.test_point):
            continue
        checked += 1
        rep = check(r.prompt, r.ground_truth, r.test_point)
        if rep.flagged:
            by_flag.update(rep.flags)
            words = rep.ground_truth_shared + rep.test_point_shared + rep.explanatory + rep.mechanism
            flagged.append({"prompt_id": r.prompt_id, "flags": rep.flags, "words": sorted(set(words))})
    lengths = {"all": _lengths([len(r.prompt.split()) for r in records])}
    for d in [*DIFFICULTIES, NONE]:
        vals = [len(r.prompt.split()) for r in records if (r.difficulty or NONE) == d]
        if vals:
            lengths[d] = _lengths(vals)
    rounds = Counter(r.provenance["critic_rounds"] for r in records if "critic_rounds" in r.provenance)
    by_group: dict[str, Counter] = {}
    for r in records:  # an imported suite's own fields (Sci-VBench's discipline, SVBench's category, ...)
        for k, v in r.groups.items():
            by_group.setdefault(k, Counter())[str(v)] += 1
    same_text: dict[str, list[str]] = {}
    for r in records:
        same_text.setdefault(" ".join(r.prompt.casefold().split()), []).append(r.prompt_id)
    reasons = Counter(f["reason"] for f in failures or [])
    return {
        "suite": str(path),
        "stage": _stage(records, failures),
        "prompts": len(records),
        "by_paradigm": {p: dict(c) for p, c in by_paradigm.items()},
        "by_group": {k: dict(sorted(c.items())) for k, c in sorted(by_group.items())},
        "duplicates": [ids for ids in same_text.values() if len(ids) > 1],
        "failures_file": failures is not None,
        "not_kept": {r: reasons[r] for r in REASONS if reasons[r]},
        "not_kept_by_paradigm": {p: dict(c) for p, c in not_kept.items()},
        "critic_rounds": {str(k): v for k, v in sorted(rounds.items())},
        "leakage": {"checked": checked, "flagged": len(flagged), "by_flag": dict(by_flag), "prompts": flagged},
        "prompt_words": lengths,
        "pass_counts": pass_counts(records, failures),
    }


def pass_counts(records: list[SuiteRecord], failures: list[dict] | None) -> dict | None:
    """Attempted prompts and how many passed the critic, the deterministic check and both (None without failures)."""
    if failures is None:
        return None
    critic = check_ok = both = len(records)  # kept = passed both
    for f in failures:
        prov = f["provenance"]
        c = bool(prov.get("critic_passed"))
        leak = prov.get("leakage")
        d = isinstance(leak, dict) and not leak.get("flagged", True)
        critic += c
        check_ok += d
        both += c and d
    attempted = len(records) + len(failures)
    rate = (lambda n: round(n / attempted, 4)) if attempted else (lambda n: None)
    return {
        "attempted": attempted,
        "critic_passed": critic,
        "check_passed": check_ok,
        "both_passed": both,
        "critic_rate": rate(critic),
        "check_rate": rate(check_ok),
        "both_rate": rate(both),
    }


def stage_table(all_stats: list[dict]) -> list[dict]:
    """One row per build that has a stage and a failures file."""
    rows = []
    for s in all_stats:
        if s["stage"] and s["pass_counts"]:
            rows.append({"stage": s["stage"], "suite": s["suite"], **s["pass_counts"]})
    return rows


def _md(rows: list[dict]) -> str:
    import pandas as pd

    return pd.DataFrame(rows).to_markdown(index=False)


def to_markdown(all_stats: list[dict]) -> str:
    out = []
    for s in all_stats:
        stage = f", stage {s['stage']}" if s["stage"] else ""
        out.append(f"## {s['suite']} ({s['prompts']} prompts{stage})\n")
        diffs = [d for d in (*DIFFICULTIES, NONE) if any(d in c for c in s["by_paradigm"].values())]
        paradigms = sorted(set(s["by_paradigm"]) | set(s["not_kept_by_paradigm"]))
        rows = []
        for p in paradigms:
            kept = s["by_paradigm"].get(p, {})
            row = {"paradigm": p, **{d: kept.get(d, 0) for d in diffs}, "kept": sum(kept.values())}
            if s["failures_file"]:
                row["not kept"] = sum(s["not_kept_by_paradigm"].get(p, {}).values())
            rows.append(row)
        if rows and (len(paradigms) > 1 or paradigms != [NONE] or not s["by_group"]):
            out.append(_md(rows) + "\n")
        for field_, counts in s["by_group"].items():
            out.append(f"By {field_}: " + ", ".join(f"{v} {n}" for v, n in counts.items()) + ".\n")
        if s["duplicates"]:
            out.append(
                f"**{sum(len(d) for d in s['duplicates'])} prompts repeat another's text** (case and spacing "
                "ignored): " + "; ".join(", ".join(d) for d in s["duplicates"]) + ".\n"
            )
        if s["failures_file"]:
            why = ", ".join(f"{n} {r}" for r, n in s["not_kept"].items()) or "none"
            out.append(f"Not kept: {why}.\n")
        if s["critic_rounds"]:
            out.append(
                "Critic rounds of the kept prompts: "
                + ", ".join(f"{n} in {k} round{'s' if k != '1' else ''}" for k, n in s["critic_rounds"].items())
                + ".\n"
            )
        lk = s["leakage"]
        flags = ", ".join(f"{n} {f}" for f, n in lk["by_flag"].items())
        out.append(
            f"Deterministic leakage check on the prompts with a ground truth or test point: {lk['flagged']} of "
            f"{lk['checked']} flagged{' (' + flags + ')' if flags else ''}.\n"
        )
        lengths = [{"difficulty": d, **v} for d, v in s["prompt_words"].items() if v.get("n")]
        if lengths:
            out.append("Prompt length in words:\n\n" + _md(lengths) + "\n")
    rows = stage_table(all_stats)
    if rows:
        out.append("## Pass rates by stage\n")
        out.append(
            "Of the prompts attempted (kept + not kept): passed by the critic's last verdict, by the deterministic "
            "check on the last prompt made, and by both (the kept ones). From a scripted server these are counts of "
            "its script, not results.\n"
        )
        out.append(_md(rows) + "\n")
    return "\n".join(out)


def stats(paths: list[str | os.PathLike]) -> dict:
    all_stats = [suite_stats(p) for p in paths]
    return {"tool": TOOL, "suites": all_stats, "stages": stage_table(all_stats)}
