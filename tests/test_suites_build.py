"""``phyprobe suite build`` against a real scripted chat-completions server on 127.0.0.1: a leak is caught by the
critic and revised with its feedback, a prompt that always leaks is reported after the round limit, malformed replies
are recorded failures and never prompts, a leak the critic misses is dropped by the deterministic check, a build
killed halfway resumes without any request answered twice and ends with the same suite, the seed library builds
every paradigm at three difficulties, and outputs never go over a file the command did not write."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter

import pytest

from phyprobe.cli import main
from phyprobe.judges.client import ClientConfig, JudgeClient, Request, ResponseCache
from phyprobe.judges.parsing import ReplyError
from phyprobe.suites.agents import parse_critic, parse_synthesis, parse_understanding
from phyprobe.suites.build import BuildSettings, build_suite, output_paths
from phyprobe.suites.format import read_suite
from phyprobe.suites.seeds import SeedError, load_seed_files, load_seeds
from phyprobe.testing.suite_server import SuiteServer, write_script_seeds

CLI = [sys.executable, "-m", "phyprobe.cli"]
GT = "The cup falls straight down onto the floor below."  # the ground truth of write_script_seeds' paradigms
PHYSICS_FAMILIES = {
    "gravity_support",
    "collisions_momentum",
    "rolling",
    "object_permanence",
    "rigidity",
    "energy",
    "causality",
    "time",
}


def _build(srv, paradigms, tmp_path, **settings):
    client = JudgeClient(
        ClientConfig(base_url=srv.base_url, concurrency=4, max_retries=0),
        cache=ResponseCache(tmp_path / "cache" / "responses.jsonl"),
    )
    try:
        return build_suite(paradigms, client, BuildSettings(**settings))
    finally:
        client.close()


def _args(srv, seeds, out, cache, *extra):
    return [
        "suite",
        "build",
        str(seeds),
        "--out",
        str(out),
        "--per-difficulty",
        "2",
        *extra,
        "--set",
        f"client.base_url={srv.base_url}",
        f"cache_dir={cache}",
        "client.concurrency=4",
        "client.max_retries=0",
    ]


def test_a_leak_is_caught_revised_with_the_critics_feedback_and_passes(tmp_path):
    seeds = load_seeds(write_script_seeds(tmp_path / "s.yaml", ["clean", "leak_once"]))
    with SuiteServer() as srv:
        res = _build(srv, seeds, tmp_path, per_difficulty=1, difficulties=("easy", "hard"), max_rounds=3)
        inputs = list(srv.inputs)
        types = set(srv.content_types)
        roles = {tuple(r) for r in srv.roles}
    assert res.failures == []
    recs = {r.prompt_id: r for r in res.records}
    assert set(recs) == {"clean-easy-0", "clean-hard-0", "script_leak_once-easy-0", "script_leak_once-hard-0"}
    assert all(r.provenance["critic_rounds"] == 1 for r in recs.values() if r.paradigm == "clean")
    for d in ("easy", "hard"):
        rec = recs[f"script_leak_once-{d}-0"]
        first, second = rec.provenance["rounds"]
        # round 1: the synthesis leaked the ground truth; the critic named it, with a fix, and so did the check
        assert GT in first["synthesis"]["prompt"] and first["critic"]["pass"] is False
        (v,) = first["critic"]["violations"]
        assert v["type"] == "ground_truth_leakage" and v["evidence"] == GT and v["fix"]
        assert "ground_truth_overlap" in first["leakage"]["flags"]
        # round 2: the revision request carried exactly that feedback, and its prompt passed both
        revisions = [i for a, i in inputs if a == "synthesis" and i.get("violations") and i["difficulty"] == d]
        assert len(revisions) == 1
        assert revisions[0]["violations"] == first["critic"]["violations"]
        assert revisions[0]["previous_prompt"] == first["synthesis"]["prompt"]
        assert second["critic"]["pass"] and not second["leakage"]["flagged"]
        assert rec.prompt == second["synthesis"]["prompt"] and GT not in rec.prompt
        assert rec.provenance["critic_rounds"] == 2 and rec.provenance["stage"] == "full"
        assert rec.ground_truth == GT and rec.difficulty == d and rec.groups == {"family": "gravity_support"}
    assert types == {"str"} and roles == {("user",)}  # text-only requests: no media part, no system message


def test_an_always_leaking_prompt_is_reported_after_the_round_limit(tmp_path):
    seeds = load_seeds(write_script_seeds(tmp_path / "s.yaml", ["leak_always"]))
    with SuiteServer() as srv:
        res = _build(srv, seeds, tmp_path, per_difficulty=1, difficulties=("medium",), max_rounds=2)
        agents = dict(srv.agents)
    assert res.records == []
    (f,) = res.failures
    assert f["reason"] == "critic_rejected" and f["round"] == 2 and f["prompt_id"] == "script_leak_always-medium-0"
    assert [r["critic"]["pass"] for r in f["provenance"]["rounds"]] == [False, False]
    assert all(GT in r["synthesis"]["prompt"] for r in f["provenance"]["rounds"])
    assert agents == {"understanding": 1, "synthesis": 2, "critic": 2}  # the limit, not one request more
    assert res.summary["not_kept"] == {"critic_rejected": 1} and res.summary["kept"] == 0


def test_malformed_replies_are_recorded_failures_never_prompts(tmp_path):
    cases = ["clean", "malformed", "malformed_critic", "malformed_understanding"]
    seeds = load_seeds(write_script_seeds(tmp_path / "s.yaml", cases))
    with SuiteServer() as srv:
        res = _build(srv, seeds, tmp_path, per_difficulty=2, difficulties=("easy",))
    assert sorted(r.prompt_id for r in res.records) == ["clean-easy-0", "clean-easy-1"]
    by = {f["prompt_id"]: f for f in res.failures}
    assert len(by) == 6 and {f["reason"] for f in by.values()} == {"malformed_reply"}
    for case, agent in (
        ("malformed", "synthesis"),
        ("malformed_critic", "critic"),
        ("malformed_understanding", "understanding"),
    ):
        for k in (0, 1):
            f = by[f"script_{case}-easy-{k}"]
            assert f["agent"] == agent, f
            with pytest.raises(json.JSONDecodeError):  # the raw reply is kept as it came: cut off mid-JSON
                json.loads(f["raw"])
            assert "JSON" in f["detail"] or "unterminated" in f["detail"]
    assert by["script_malformed_critic-easy-0"]["round"] == 1
    assert by["script_malformed_understanding-easy-0"]["round"] is None
    assert res.summary["not_kept"] == {"malformed_reply": 6}


def test_a_malformed_reply_is_never_replayed_from_the_cache(tmp_path):
    """The server cuts a synthesis reply off once and answers whole after (fixed): the first build records the
    failure, and a rerun on the same cache asks again instead of replaying it, and keeps the prompt."""
    seeds = load_seeds(write_script_seeds(tmp_path / "s.yaml", ["malformed_once"]))
    with SuiteServer() as srv:
        first = _build(srv, seeds, tmp_path, per_difficulty=1, difficulties=("easy",))
        again = _build(srv, seeds, tmp_path, per_difficulty=1, difficulties=("easy",))
    assert first.records == [] and [f["reason"] for f in first.failures] == ["malformed_reply"]
    assert [r.prompt_id for r in again.records] == ["script_malformed_once-easy-0"] and again.failures == []
    assert again.summary["requests"]["sent"] >= 1  # the cut reply was asked again, not read back


def test_a_leak_the_critic_misses_is_dropped_by_the_deterministic_check(tmp_path):
    seeds = load_seeds(write_script_seeds(tmp_path / "s.yaml", ["leak_unseen"]))
    with SuiteServer() as srv:
        res = _build(srv, seeds, tmp_path, per_difficulty=1, difficulties=("easy",))
    assert res.records == []
    (f,) = res.failures
    assert f["reason"] == "leakage_check" and f["provenance"]["critic_passed"] is True
    leak = f["provenance"]["leakage"]
    assert leak["flags"] == ["ground_truth_overlap"] and leak["ground_truth_overlap"] == 1.0
    assert set(leak["ground_truth_shared"]) == {"cup", "falls", "straight", "floor"}
    assert res.summary["not_kept"] == {"leakage_check": 1}


def test_agent_replies_are_read_strictly():
    ok = {
        "pass": False,
        "difficulty_assessed": "hard",
        "violations": [{"type": "not_concrete", "evidence": "x", "fix": "y"}],
    }
    assert parse_critic(json.dumps(ok), "hard")["violations"][0]["type"] == "not_concrete"
    bad = [
        {**ok, "pass": "no"},
        {**ok, "pass": True},  # a pass with a violation
        {"pass": True, "difficulty_assessed": "easy", "violations": []},  # graded easy, hard requested
        {**ok, "violations": []},  # a rejection without a reason
        {**ok, "violations": [{"type": "made_up", "evidence": "", "fix": "y"}]},
        {**ok, "violations": [{"type": "other", "evidence": "", "fix": ""}]},
        {**ok, "difficulty_assessed": "extreme"},
    ]
    for obj in bad:
        with pytest.raises(ReplyError):
            parse_critic(json.dumps(obj), "hard")
    with pytest.raises(ReplyError):
        parse_synthesis('{"prompt": "", "cues": [], "expected_outcome": "e", "question": "q"}')
    with pytest.raises(ReplyError):
        parse_synthesis('{"prompt": "p", "cues": "c", "expected_outcome": "e", "question": "q"}')
    with pytest.raises(ReplyError):
        parse_understanding('{"formal_description": "f", "key_concepts": [], "test_point": "t", "ground_truth": "g"}')
    fenced = '```json\n{"formal_description": "f", "key_concepts": ["a"], "test_point": "t", "ground_truth": "g"}\n```'
    assert parse_understanding(fenced)["key_concepts"] == ["a"]


def test_a_killed_build_resumes_without_answering_any_request_twice_and_ends_with_the_same_suite(tmp_path):
    seeds = write_script_seeds(tmp_path / "s.yaml", ["clean", "leak_once", "leak_always"])
    out, cache = tmp_path / "run" / "suite.jsonl", tmp_path / "run" / "cache"
    with SuiteServer(hold_after=12) as srv:
        proc = subprocess.Popen(
            [*CLI, *_args(srv, seeds, out, cache, "--max-rounds", "2")],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        deadline = time.monotonic() + 120
        while len(srv.held) < 4 and time.monotonic() < deadline:  # all four workers wait on a held request
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.02)
        assert len(srv.held) == 4
        first = Counter(srv.answered)
        proc.kill()
        proc.communicate(timeout=30)
        assert not out.exists()  # killed before the end: nothing written but the cache
        srv.release()
        assert main(_args(srv, seeds, out, cache, "--max-rounds", "2")) == 1  # leak_always is never kept
        assert max(srv.answered.values()) == 1  # no request answered twice, over both runs
        assert srv.sent_twice() == set(srv.held)  # resent: only the four that never got an answer
        assert sum(first.values()) >= 12
    summary = json.loads(output_paths(out)["summary"].read_text())
    assert summary["requests"]["from_cache"] == sum(first.values())
    with SuiteServer() as fresh:  # the same build, uninterrupted, on a fresh server and cache
        ref = tmp_path / "ref" / "suite.jsonl"
        assert main(_args(fresh, seeds, ref, tmp_path / "ref" / "cache", "--max-rounds", "2")) == 1
        assert sum(fresh.answered.values()) == sum(srv.answered.values())
    assert out.read_bytes() == ref.read_bytes()
    assert output_paths(out)["failures"].read_bytes() == output_paths(ref)["failures"].read_bytes()
    kept = read_suite(out)
    assert len(kept) == 12 and {r.paradigm for r in kept} == {"clean", "script_leak_once"}


def test_the_seed_library_builds_every_paradigm_at_three_difficulties(tmp_path):
    paradigms = load_seed_files(["physics", "social"])
    physics = [p for p in paradigms if p.source.endswith("physics.yaml")]
    social = [p for p in paradigms if p.source.endswith("social.yaml")]
    assert {p.family for p in physics} == PHYSICS_FAMILIES and 2 <= len(social) <= 3
    assert all(p.description and p.expected_outcome and p.example_scenario for p in paradigms)
    with SuiteServer() as srv:
        res = _build(srv, paradigms, tmp_path, per_difficulty=1)
    assert res.failures == [], res.failures[:1]
    got = Counter((r.paradigm, r.difficulty) for r in res.records)
    assert got == Counter((p.id, d) for p in paradigms for d in ("easy", "medium", "hard"))
    assert {r.groups["family"] for r in res.records} == PHYSICS_FAMILIES | {p.family for p in social}


def test_svbench_seed_json_loads_as_released(tmp_path):
    path = tmp_path / "seed_experiments.json"
    item = {
        "number": 9,
        "dimension": "D2_Goal_Directed_Action",
        "name": "Detour Reaching Task",
        "description": "A target behind a barrier needs an indirect route.",
        "key_concepts": ["path_planning", "inhibition"],
        "test_point": "Does the agent go around the barrier?",
        "ground_truth": "The agent walks around the barrier and takes the toy.",
        "evaluation_criteria": "Curved path, no bumping.",
        "example_scenario": "A toy behind a clear panel.",
    }
    path.write_text(json.dumps([item]), encoding="utf-8")
    (p,) = load_seeds(path)
    assert p.id == "detour_reaching_task" and p.family == "D2_Goal_Directed_Action"
    assert p.expected_outcome == item["ground_truth"] and p.key_concepts == ("path_planning", "inhibition")
    path.write_text(json.dumps([{**item, "test_point": 3}]), encoding="utf-8")
    with pytest.raises(
        SeedError, match=r"seed_experiments.json: paradigm 1 \('Detour Reaching Task'\): field 'test_point'"
    ):
        load_seeds(path)


def test_a_bad_seed_file_is_one_line_naming_file_line_and_field(tmp_path, capsys):
    text = write_script_seeds(tmp_path / "g.yaml", ["clean", "leak_once"]).read_text()
    second = text.index("- name: SCRIPT:leak_once")
    bad = tmp_path / "bad.yaml"
    bad.write_text(text[:second] + text[second:].replace("family: gravity_support", "family: ''", 1))
    line = text[:second].count("\n") + 1
    with SuiteServer() as srv:
        with pytest.raises(SystemExit) as e:
            main(_args(srv, bad, tmp_path / "o.jsonl", tmp_path / "c"))
        assert srv.counts == Counter()
    assert e.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err == f"phyprobe: error: {bad}:{line}: paradigm 2 ('SCRIPT:leak_once'): field 'family' is missing or empty"
    bad.write_text(text.replace("key_concepts:", "key_concept:", 1))
    with pytest.raises(SeedError, match=r"bad.yaml:2: paradigm 1 \('clean'\): unknown field\(s\) \['key_concept'\]"):
        load_seeds(bad)


@pytest.mark.parametrize(
    "name, text, reason",
    [
        (
            "laughs.yaml",
            "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
            + "".join(f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]\n" for p, c in zip("abcdefg", "bcdefgh"))
            + "paradigms: [*h]\n",
            r"laughs.yaml:2: not valid YAML \(aliases \(\*name\) are not allowed in a seed file\)",
        ),
        (
            "deep.yaml",
            "paradigms: " + "[" * 100_000 + "]" * 100_000,
            r"deep.yaml: not valid YAML here \(nested too deeply\)",
        ),
        ("deep.json", "[" * 100_000 + "]" * 100_000, r"deep.json: not valid JSON here \(nested too deeply\)"),
        ("nan.json", '[{"name": NaN}]', r"nan.json: not valid JSON here \(NaN is not a number JSON allows\)"),
    ],
)
def test_seed_files_that_expand_nest_or_hold_nan_are_refused_in_one_line(tmp_path, name, text, reason):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(SeedError, match=reason):
        load_seeds(path)


def test_outputs_never_go_over_a_file_this_command_did_not_write(tmp_path, capsys):
    seeds = write_script_seeds(tmp_path / "s.yaml", ["clean"])
    out = tmp_path / "suite.jsonl"
    with SuiteServer() as srv:
        for victim, content in (
            (out, '{"prompt_id": "mine", "prompt": "hand-written"}\n'),
            (output_paths(out)["failures"], "notes\n"),
        ):
            victim.write_text(content)
            with pytest.raises(SystemExit) as e:
                main(_args(srv, seeds, out, tmp_path / "c"))
            assert e.value.code == 2 and victim.read_text() == content
            err = capsys.readouterr().err.strip()
            assert (
                err
                == f"phyprobe: error: {victim}: exists and was not written by `phyprobe suite build`; it is left as it is, pass another path"
            )
            victim.unlink()
        assert srv.counts == Counter()  # refused before any request
        assert main(_args(srv, seeds, out, tmp_path / "c")) == 0
        assert main(_args(srv, seeds, out, tmp_path / "c")) == 0  # its own files it may rewrite
    assert len(read_suite(out)) == 6
    with pytest.raises(SystemExit) as e:
        main(["suite", "build", str(seeds), "--out", str(tmp_path / "x.jsonl"), "--set", "client.base_ur=http://x"])
    assert e.value.code == 2 and "unknown client setting(s) ['base_ur']" in capsys.readouterr().err


def test_text_only_requests_have_no_video_in_their_key_and_an_optional_system_message(tmp_path):
    with SuiteServer() as srv:
        client = JudgeClient(
            ClientConfig(base_url=srv.base_url, max_retries=0), cache=ResponseCache(tmp_path / "c.jsonl")
        )
        text = "TASK: PROMPT CRITIC\n\nINPUT (JSON):\n" + json.dumps(
            {"paradigm": "p", "test_point": "t", "ground_truth": "g", "requested_difficulty": "easy", "prompt": "a cup"}
        )
        plain, system = Request(None, text, 1), Request(None, text, 1, system="You are terse.")
        assert client.cache_key(plain) != client.cache_key(system)
        replies = [client.ask(plain), client.ask(system), client.ask(plain)]
        client.close()
        assert [r.ok for r in replies] == [True, True, True] and replies[2].cached
        assert srv.roles == [["user"], ["system", "user"]] and srv.content_types == ["str", "str"]
    assert json.loads(replies[0].text)["pass"] is True


def test_import_writes_a_published_file_as_a_suite_and_only_over_its_own(tmp_path, capsys):
    src = tmp_path / "bench_for_short.json"
    experiment = {"experiment_id": 1, "experiment_name": "Gaze Following", "dimension": "D3", "test_point": "t"}
    prompt = {
        "prompt": "A woman turns her head toward a drawer.",
        "difficulty": "easy",
        "ground_truth": "g",
        "question": "q",
    }
    src.write_text(json.dumps([{**experiment, "prompts": [prompt]}]))
    out = tmp_path / "imported.jsonl"
    for _ in range(2):  # a rerun replaces its own file
        assert main(["suite", "import", "svbench", str(src), "--out", str(out)]) == 0
    (rec,) = read_suite(out)
    assert rec.prompt == prompt["prompt"] and rec.provenance["tool"] == "phyprobe suite import"
    built = tmp_path / "built.jsonl"
    built.write_text(out.read_text().replace("phyprobe suite import", "phyprobe suite build"))
    with pytest.raises(SystemExit) as e:
        main(["suite", "import", "svbench", str(src), "--out", str(built)])
    assert e.value.code == 2 and "was not written by `phyprobe suite import`" in capsys.readouterr().err


def test_sigterm_stops_a_build_at_once_and_the_rerun_completes_it(tmp_path):
    seeds = write_script_seeds(tmp_path / "s.yaml", ["clean"])
    out, cache = tmp_path / "suite.jsonl", tmp_path / "cache"
    with SuiteServer(hold_after=5) as srv:
        proc = subprocess.Popen(
            [*CLI, *_args(srv, seeds, out, cache)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        deadline = time.monotonic() + 120
        while len(srv.held) < 4 and time.monotonic() < deadline:
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.02)
        sent = time.monotonic()
        proc.terminate()  # the workers are inside held requests: the command must not wait for them
        _, err = proc.communicate(timeout=30)
        assert time.monotonic() - sent < 5 and proc.returncode == 130, err
        assert "stopped; what finished is kept" in err and "Traceback" not in err
        srv.release()
        assert main(_args(srv, seeds, out, cache)) == 0
        assert max(srv.answered.values()) == 1
    assert len(read_suite(out)) == 6


def test_a_refused_key_stops_the_build_with_one_line(tmp_path, capsys):
    seeds = write_script_seeds(tmp_path / "s.yaml", ["unauthorized"])
    with SuiteServer() as srv:
        with pytest.raises(SystemExit) as e:
            main(_args(srv, seeds, tmp_path / "suite.jsonl", tmp_path / "cache"))
        assert sum(srv.counts.values()) == 1  # a 401 is not retried, and nothing more is sent
    err = capsys.readouterr().err.strip()
    assert e.value.code == 2 and err.startswith(f"phyprobe: error: {srv.base_url} refused") and "\n" not in err
    assert not (tmp_path / "suite.jsonl").exists()
