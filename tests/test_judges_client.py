"""The judge client against a real scripted chat-completions server on 127.0.0.1: every kind of reply
ends in a parsed score or a recorded failure, retries honour retry-after, a SIGKILLed run resumes from
its cache without re-sending, and a planted API key appears nowhere."""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from phyprobe.data.manifest import Manifest, write_jsonl
from phyprobe.judges.client import ResponseCache, VideoInput, sample_frames
from phyprobe.judges.run import run_judge
from phyprobe.judges.tasks import TaskFileError, read_tasks
from phyprobe.testing.judge_cases import CASES, case_manifest, physics_cfg
from phyprobe.testing.judge_server import ScriptedServer, expected_score

SRC = Path(__file__).resolve().parents[1] / "src"
REPO = SRC.parent
PARSE_FAILURES = {"malformed", "missing", "out_of_range", "prose"}
REQUEST_FAILURES = {"always_500", "bad_request"}


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    return Manifest.load(case_manifest(tmp_path_factory.mktemp("cases")))


def _server_key(rec: dict) -> str:
    """The server's request key, echoed in every well-formed reply's text."""
    raw = rec["items"]["physical_consistency"][0]["raw"]
    return re.search(r"req ([0-9a-f]{16})", raw).group(1)


def test_every_scripted_reply_ends_in_a_parsed_score_or_a_recorded_failure(cases, tmp_path, caplog):
    caplog.set_level(logging.DEBUG, logger="phyprobe.judges.client")
    with ScriptedServer(timeout_sleep=3.0) as srv:  # the timeout case's first reply: well past the 1 s deadline
        res = run_judge(physics_cfg(srv.base_url, tmp_path / "cache", timeout_s=1.0), cases, tmp_path / "out")
        counts = dict(srv.counts)
    recs = {vid.split("_", 1)[1]: r for vid, r in res.records.items()}
    assert set(recs) == set(CASES)  # the run finished and every video has a record
    for case, rec in recs.items():
        samples = rec["items"]["physical_consistency"]
        assert len(samples) == 1
        if case in PARSE_FAILURES:
            assert rec["score"] is None and rec["violation_score"] is None, case
            assert rec["failures"][0]["kind"] == "parse" and rec["failures"][0]["raw"], case
            assert rec["dimensions"]["physical_consistency"] == {"score": None, "n_valid": 0, "samples": []}
        elif case in REQUEST_FAILURES:
            assert rec["score"] is None and rec["failures"][0]["kind"] == "request", case
            assert rec["failures"][0]["raw"] is None
        else:  # the score is exactly the one the server sent, whatever happened on the way
            assert rec["failures"] == [], (case, rec["failures"])
            want = expected_score(_server_key(rec))
            assert rec["score"] == want and rec["violation_score"] == (5 - want) / 4, case
    assert "score is 7" in recs["out_of_range"]["failures"][0]["error"]
    assert "missing key" in recs["missing"]["failures"][0]["error"]
    # retries: 429 once, 500 twice, a timeout once, a dropped connection once, then success;
    # always-500 uses every retry; a 400 is not retried
    attempts = {case: counts[_server_key(rec)] for case, rec in recs.items() if not rec["failures"]}
    assert attempts == {
        "ok": 1,
        "fenced": 1,
        "think": 1,
        "rate_limited": 2,
        "server_error": 3,
        "timeout": 2,
        "dropped": 2,
    }
    assert sum(counts.values()) == sum(attempts.values()) + len(PARSE_FAILURES) + 4 + 1  # always_500: 1 + 3 retries
    delays = [float(m) for m in re.findall(r"retrying after ([0-9.]+)s", caplog.text)]
    assert delays.count(0.2) == 1 and delays.count(0.1) == 2  # the servers' retry-after values, not backoff
    # outputs: every judged video in judgements.jsonl, only scored ones in scores.csv
    lines = [json.loads(x) for x in (tmp_path / "out" / "judgements.jsonl").read_text().splitlines()]
    assert len(lines) == len(CASES)
    csv_ids = (tmp_path / "out" / "scores.csv").read_text().splitlines()[1:]
    assert len(csv_ids) == len(CASES) - len(PARSE_FAILURES) - len(REQUEST_FAILURES)
    summary = json.loads((tmp_path / "out" / "judge_summary.json").read_text())
    assert summary["failed_calls"] == {"parse": 4, "request": 2} and summary["cost"]["calls_per_video"] == 1.0


def test_three_samples_are_averaged_and_a_partly_failed_dimension_keeps_its_valid_samples(cases, tmp_path):
    m = cases.keep(cases.videos["id"].str.endswith(("_ok", "_malformed")))
    with ScriptedServer() as srv:
        res = run_judge(physics_cfg(srv.base_url, None, samples=3), m)
    ok = next(r for v, r in res.records.items() if v.endswith("_ok"))
    got = [s["parsed"]["scores"]["physical_consistency"] for s in ok["items"]["physical_consistency"]]
    want = [
        expected_score(re.search(r"req ([0-9a-f]{16})", s["raw"]).group(1)) for s in ok["items"]["physical_consistency"]
    ]
    assert got == want and [s["seed"] for s in ok["items"]["physical_consistency"]] == [0, 1, 2]
    assert ok["score"] == pytest.approx(np.mean(want)) and ok["dimensions"]["physical_consistency"]["n_valid"] == 3
    bad = next(r for v, r in res.records.items() if v.endswith("_malformed"))
    assert bad["score"] is None and len(bad["failures"]) == 3


def test_svbench_eva_reads_its_seven_keys_and_rejects_non_binary_values(tmp_path):
    m = Manifest.load(case_manifest(tmp_path / "m", cases=("eva", "eva_bad", "missing")))
    cfg = {
        "judge": {"_target_": "phyprobe.judges.svbench.EVAJudge"},
        "client": {"base_url": None, "model": "test-vl", "max_retries": 0},
        "video": {"max_frames": 2},
        "cache_dir": None,
    }
    with ScriptedServer() as srv:
        cfg["client"]["base_url"] = srv.base_url
        res = run_judge(cfg, m)
    eva, bad, missing = (res.records[v] for v in m.videos["id"])
    d = {k: v["score"] for k, v in eva["dimensions"].items()}
    assert d["D1_core_experiment"] == 1 and d["D3_social_reasoning"] == 0 and d["D5_video_plausible"] == 1
    assert eva["score"] == pytest.approx(sum(d.values()) / 5) and eva["violation_score"] == pytest.approx(
        1 - eva["score"]
    )
    assert bad["score"] is None and "D3_social_reasoning is 2" in bad["failures"][0]["error"]
    assert missing["score"] is None and "missing key" in missing["failures"][0]["error"]


_CHILD = """
from phyprobe.data.manifest import Manifest
from phyprobe.judges.run import run_judge
from phyprobe.testing.judge_cases import physics_cfg
run_judge(physics_cfg({url!r}, {cache!r}, samples=2, concurrency=2), Manifest.load({manifest!r}), {out!r})
"""


def _run_child(url, cache, manifest, out):
    code = _CHILD.format(url=url, cache=str(cache), manifest=str(manifest), out=str(out))
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    return subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def _comparable(path: Path) -> list[dict]:
    """Judgements without what legitimately differs between runs (timings, cache hits)."""
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    for r in rows:
        r.pop("cost")
    return rows


def test_sigkill_halfway_then_resume_sends_no_cached_request_twice_and_matches_an_uninterrupted_run(tmp_path):
    root = case_manifest(tmp_path / "m", cases=("ok",) * 20)
    with ScriptedServer(delay=0.05) as srv:
        child = _run_child(srv.base_url, tmp_path / "cache", root, tmp_path / "out")
        deadline = time.time() + 60
        while sum(srv.served.values()) < 16 and time.time() < deadline:
            time.sleep(0.01)
        child.send_signal(signal.SIGKILL)
        child.wait()
        srv.settle()  # what the killed child had sent is counted before the snapshot below
        assert not (tmp_path / "out" / "judgements.jsonl").exists()  # killed before the end
        cached = [json.loads(x) for x in (tmp_path / "cache" / "responses.jsonl").read_text().splitlines() if x.strip()]
        cached_keys = {re.search(r"req ([0-9a-f]{16})", c["reply"]["text"]).group(1) for c in cached}
        assert 8 <= len(cached_keys) < 40  # halfway: some but not all of the 40 requests were answered
        before = dict(srv.counts)
        resumed = _run_child(srv.base_url, tmp_path / "cache", root, tmp_path / "out")
        assert resumed.wait(timeout=120) == 0, resumed.stdout.read().decode()
        after = dict(srv.counts)
    assert all(after[k] == before[k] for k in cached_keys)  # nothing cached was sent again
    assert sum(after.values()) - sum(before.values()) == 40 - len(cached_keys)
    with ScriptedServer() as srv2:  # the same job, never interrupted
        run_judge(
            physics_cfg(srv2.base_url, tmp_path / "cache2", samples=2, concurrency=2),
            Manifest.load(root),
            tmp_path / "out2",
        )
    assert _comparable(tmp_path / "out" / "judgements.jsonl") == _comparable(tmp_path / "out2" / "judgements.jsonl")
    assert (tmp_path / "out" / "scores.csv").read_text() == (tmp_path / "out2" / "scores.csv").read_text()


def test_a_planted_api_key_appears_nowhere(cases, tmp_path, caplog, monkeypatch, capsys):
    key = "sk-planted-0123456789abcdefSECRET"
    monkeypatch.setenv("PHYPROBE_TEST_KEY", key)
    caplog.set_level(logging.DEBUG)
    m = cases.keep(cases.videos["id"].str.endswith(("_ok", "_always_500", "_bad_request", "_dropped")))
    with ScriptedServer() as srv:
        res = run_judge(
            physics_cfg(srv.base_url, tmp_path / "cache", api_key_env="PHYPROBE_TEST_KEY"), m, tmp_path / "out"
        )
        um = Manifest.load(case_manifest(tmp_path / "u", cases=("unauthorized",)))
        from phyprobe.judges.client import JudgeServerError

        with pytest.raises(JudgeServerError) as exc:
            run_judge(physics_cfg(srv.base_url, None, api_key_env="PHYPROBE_TEST_KEY"), um)
        sent = list(srv.auth_headers)
    assert any(key in h for h in sent)  # the key really was used
    assert "PHYPROBE_TEST_KEY" in str(exc.value) and key not in str(exc.value) and key not in repr(exc.value)
    texts = [caplog.text, *capsys.readouterr(), json.dumps(res.records, default=str), repr(res)]
    texts += [p.read_text(errors="replace") for p in tmp_path.rglob("*") if p.is_file() and p.suffix != ".mp4"]
    from phyprobe.judges.client import ClientConfig, JudgeClient

    texts.append(repr(JudgeClient(ClientConfig(base_url=srv.base_url, api_key_env="PHYPROBE_TEST_KEY"))))
    assert all(key not in t for t in texts)
    assert all("0123456789abcdef" not in t for t in texts)


def test_cache_skips_a_torn_last_line_and_appends_after_it(tmp_path):
    path = tmp_path / "c" / "responses.jsonl"
    c = ResponseCache(path)
    c.put("k1", {"text": "a"})
    c.close()
    with open(path, "ab") as f:
        f.write(b'{"key": "k2", "reply": {"te')  # what a kill in the middle of a write leaves
    c = ResponseCache(path)
    assert c.get("k1") == {"text": "a"} and c.get("k2") is None and c.skipped_lines == [2]
    c.put("k3", {"text": "c"})
    c.close()
    c = ResponseCache(path)
    assert c.get("k3") == {"text": "c"} and len(c) == 2 and c.skipped_lines == [2]


def test_transports_send_frames_as_images_as_one_jpeg_video_or_as_the_file(cases, tmp_path):
    m = cases.keep(cases.videos["id"].str.endswith("_ok"))
    with ScriptedServer() as srv:
        for transport in ("images", "video_frames", "video_url"):
            cfg = physics_cfg(srv.base_url, None)
            cfg["video"] = {"transport": transport, "fps": 2.0, "max_frames": 3}
            assert run_judge(cfg, m).scores
        types, extra = list(srv.part_types), list(srv.extra)
    assert types[0] == ["image_url"] * 2 + ["text"]  # 6 frames at 6 fps = 1 s -> 2 frames at 2 fps
    assert types[1] == ["video_url", "text"] and extra[1] == {"fps": [2.0]}
    assert types[2] == ["video_url", "text"] and extra[2] == {}


def test_frame_sampling_follows_fps_and_spreads_max_frames_over_long_videos(tmp_path):
    from phyprobe.io.video import write_video
    from phyprobe.testing.videos import moving_square

    path = write_video(tmp_path / "a.mp4", moving_square(24, 32, 32, 1, 1), fps=12)  # 2 s
    frames, rate = sample_frames(path, VideoInput(fps=2.0, max_frames=16))
    assert len(frames) == 4 and rate == 2.0
    frames, rate = sample_frames(path, VideoInput(fps=2.0, max_frames=3))
    assert len(frames) == 3 and rate == pytest.approx(1.5)


def test_task_file_errors_name_the_file_and_line(cases, tmp_path):
    f = tmp_path / "tasks.jsonl"
    first = cases.videos["id"][0]
    write_jsonl(f, [{"video": first, "prompt": "p"}, {"video": "nope.mp4", "prompt": "p"}])
    with pytest.raises(TaskFileError, match=r"tasks.jsonl:2: video 'nope.mp4' is not in the manifest"):
        read_tasks(f, cases)
    write_jsonl(f, [{"video": first}, {"video_file": Path(cases.videos["path"][0]).name}])
    with pytest.raises(TaskFileError, match=r"tasks.jsonl:2: .* already has a task on line 1"):
        read_tasks(f, cases)
    f.write_text('{"video": 1\n')
    with pytest.raises(TaskFileError, match=r"tasks.jsonl:1: not valid JSON"):
        read_tasks(f, cases)


def test_scivbench_task_rubrics_one_call_per_dimension(cases, tmp_path):
    ids = [v for v in cases.videos["id"] if v.endswith(("_ok", "_fenced"))]
    f = tmp_path / "tasks.jsonl"
    write_jsonl(
        f,
        [
            {
                "video": ids[0],
                "prompt": "a ball is dropped SCRIPT:ok",
                "reference_guide": "it must fall",
                "rubrics": {"prompt_grounding": "5: all there", "scientific_causal_correctness": "5: falls"},
            },
            {
                "id": ids[1],
                "prompt": "a pendulum SCRIPT:fenced",
                "high_level_evaluation_guide": "g",
                "pg_specification": "5: a pendulum",
                "scc_specification": "",
                "sc_specification": "5: stable",
            },
        ],
    )
    cfg = physics_cfg(None, None, samples=2)
    cfg["judge"].update(rubric_set="tasks", tasks=str(f), headline="mean")
    with ScriptedServer() as srv:
        cfg["client"]["base_url"] = srv.base_url
        res = run_judge(cfg, cases)
        assert sum(srv.counts.values()) == 2 * 2 + 2 * 2  # two dimensions each (an empty rubric is not judged)
    assert set(res.records) == set(ids)
    a, b = res.records[ids[0]], res.records[ids[1]]
    assert set(a["dimensions"]) == {"prompt_grounding", "scientific_causal_correctness"}
    assert set(b["dimensions"]) == {"prompt_grounding", "spatiotemporal_consistency"}
    assert a["score"] == pytest.approx(np.mean([d["score"] for d in a["dimensions"].values()]))
    text = a["items"]["scientific_causal_correctness"][0]["raw"]
    assert text and "Scientific" not in text  # raw is the reply, not the prompt


def test_a_forgotten_reply_stays_forgotten_after_a_reload(tmp_path):
    """A reply its reader could not parse is forgotten (a line saying so): the next run sends the request again,
    while the other replies are still read back."""
    from phyprobe.judges.client import ResponseCache

    cache = ResponseCache(tmp_path / "responses.jsonl")
    cache.put("a", {"text": "{cut"})
    cache.put("b", {"text": "{}"})
    cache.forget("a")
    cache.close()
    again = ResponseCache(tmp_path / "responses.jsonl")
    assert again.get("a") is None and again.get("b") == {"text": "{}"} and len(again) == 1
    again.put("a", {"text": "{}"})  # answered whole this time
    again.close()
    assert ResponseCache(tmp_path / "responses.jsonl").get("a") == {"text": "{}"}
