"""The judge client against hostile or broken servers, each a real scripted HTTP server on 127.0.0.1 driven
through ``phyprobe judge run``: a server trickling its reply a byte at a time cannot stretch the total
deadline, a malformed ``retry-after`` falls back to the default backoff, a 401/403 stops the run with one
line naming the server and no retries, an API key the server echoes is in no file written, and the exit
code says whether every, some or no video was scored."""

from __future__ import annotations

import json
import logging
import re
import time
from datetime import datetime, timezone
from email.utils import format_datetime
from pathlib import Path
from types import SimpleNamespace

import pytest
from omegaconf import OmegaConf

from phyprobe.cli import main
from phyprobe.judges import client as client_mod
from phyprobe.testing.judge_cases import case_manifest, physics_cfg
from phyprobe.testing.judge_server import BAD_RETRY_AFTER, ScriptedServer

KEY = "sk-echoed-9f8e7d6c5b4a3210TOPSECRET"
DEADLINE = 1.0  # client.timeout_s: the total deadline of one attempt


def _judge_run(tmp_path: Path, cfg: dict, cases: tuple[str, ...], capsys, name: str = "out") -> tuple[int, str, str]:
    """``phyprobe judge run`` on one clip per case: (exit code, stdout, stderr)."""
    root = case_manifest(tmp_path / f"m_{name}", cases=cases)
    config = tmp_path / f"{name}.yaml"
    OmegaConf.save(OmegaConf.create(cfg), config)
    capsys.readouterr()
    try:
        code = main(["judge", "run", str(config), "--manifest", str(root), "--out", str(tmp_path / name)])
    except SystemExit as e:  # a user error: one line on stderr and exit 2
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


def _judgements(out: Path) -> dict[str, dict]:
    rows = [json.loads(x) for x in (out / "judgements.jsonl").read_text().splitlines()]
    return {r["id"].split("_", 1)[1]: r for r in rows}


def test_a_trickling_server_cannot_stretch_the_total_deadline(tmp_path, capsys):
    # the reply comes a byte every 0.2 s, well inside any per-read timeout: without a total deadline one
    # attempt would take a minute (~300 bytes); with it, each attempt ends at DEADLINE, headers or body
    cfg = physics_cfg(None, tmp_path / "cache", timeout_s=DEADLINE, max_retries=1, concurrency=3)
    with ScriptedServer(trickle_s=0.2) as srv:
        cfg["client"]["base_url"] = srv.base_url
        t0 = time.perf_counter()
        code, out, err = _judge_run(tmp_path, cfg, ("trickle", "trickle_headers", "ok"), capsys)
        elapsed = time.perf_counter() - t0
        counts = sorted(srv.counts.values())
    attempts = 2  # max_retries=1
    # two deadlines, backoff and the run's own work (writing and reading its clips), with room for a loaded machine;
    # without the deadline one attempt alone would take a minute
    assert elapsed < 15, elapsed
    assert counts == [1, 2, 2]  # each trickle was retried once, per the policy, then given up
    assert code == 1 and "2 of 3 videos have no score" in err and "Traceback" not in out + err
    recs = _judgements(tmp_path / "out")
    for case in ("trickle", "trickle_headers"):
        (failure,) = recs[case]["failures"]
        assert failure["kind"] == "timeout" and f"{DEADLINE:g} s deadline" in failure["error"], failure
        assert recs[case]["cost"]["model_seconds"] < attempts * DEADLINE * 3
    assert recs["ok"]["score"] is not None
    summary = json.loads((tmp_path / "out" / "judge_summary.json").read_text())
    assert summary["failed_calls"] == {"timeout": 2}


def test_the_deadline_is_in_the_http_stack_itself():
    # otherwise the test above would pass through the watchdog fallback, which abandons its attempts
    c = client_mod.JudgeClient(client_mod.ClientConfig(base_url="http://127.0.0.1:9/v1", cache_dir=None))
    try:
        assert c._deadline_in_stack
    finally:
        c.close()


def test_the_deadline_holds_with_the_watchdog_fallback_too(tmp_path, monkeypatch):
    # an HTTP stack the client cannot put the deadline into: a watchdog thread bounds the attempt instead
    monkeypatch.setattr(client_mod, "_install_deadline", lambda c: False)
    from phyprobe.data.manifest import Manifest
    from phyprobe.judges.run import run_judge

    m = Manifest.load(case_manifest(tmp_path / "m", cases=("trickle", "ok")))
    with ScriptedServer(trickle_s=0.2) as srv:
        t0 = time.perf_counter()
        res = run_judge(physics_cfg(srv.base_url, None, timeout_s=DEADLINE, max_retries=0), m)
        elapsed = time.perf_counter() - t0
    assert elapsed < 10, elapsed  # one deadline and the run's own work; the trickle alone would take a minute
    trickle, ok = (res.records[v] for v in m.videos["id"])
    assert trickle["failures"][0]["kind"] == "timeout" and ok["score"] is not None


def test_a_malformed_retry_after_means_the_default_backoff(tmp_path, capsys, caplog):
    caplog.set_level(logging.DEBUG, logger="phyprobe.judges.client")
    cfg = physics_cfg(None, None, max_retries=len(BAD_RETRY_AFTER), max_backoff_s=0.1)
    with ScriptedServer() as srv:
        cfg["client"]["base_url"] = srv.base_url
        code, out, err = _judge_run(tmp_path, cfg, ("bad_retry_after",), capsys)
        assert list(srv.counts.values()) == [len(BAD_RETRY_AFTER) + 1]  # every 429 retried, then the answer
    assert code == 0 and "1/1 videos scored" in out and "Traceback" not in out + err
    delays = [float(d) for d in re.findall(r"retrying after ([0-9.]+)s", caplog.text)]
    assert len(delays) == len(BAD_RETRY_AFTER) and all(0 < d <= 0.1 for d in delays)  # backoff, capped


@pytest.mark.parametrize(
    "headers, want",
    [
        ({"retry-after": "2"}, 2.0),
        ({"retry-after": "0.5", "retry-after-ms": "250"}, 0.25),
        ({"retry-after-ms": "junk", "retry-after": "3"}, 3.0),
        ({"retry-after": format_datetime(datetime(2000, 1, 1, tzinfo=timezone.utc))}, 0.0),  # a date past: now
        *(({"retry-after": v}, None) for v in BAD_RETRY_AFTER),
        ({"retry-after": "1e999"}, None),
        ({"retry-after-ms": "-1"}, None),
        ({}, None),
    ],
)
def test_retry_after_values(headers, want):
    exc = SimpleNamespace(response=SimpleNamespace(headers=headers))
    assert client_mod._retry_after(exc) == want


@pytest.mark.parametrize("case, status", [("unauthorized", 401), ("forbidden", 403)])
def test_a_refused_key_stops_the_run_with_one_line_naming_the_server(tmp_path, capsys, monkeypatch, case, status):
    monkeypatch.setenv("PHYPROBE_TEST_KEY", KEY)
    cfg = physics_cfg(None, tmp_path / "cache", api_key_env="PHYPROBE_TEST_KEY", concurrency=1)
    with ScriptedServer() as srv:
        cfg["client"]["base_url"] = srv.base_url
        code, out, err = _judge_run(tmp_path, cfg, (case, "ok", "ok"), capsys)
        assert sum(srv.counts.values()) == 1  # not retried, and the run stopped: the other videos were not sent
        assert KEY in srv.auth_headers[0]
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "Traceback" not in out + err, err
    assert lines[0].startswith("phyprobe: error: " + srv.base_url) and f"HTTP {status}" in lines[0]
    assert "refused the API key from $PHYPROBE_TEST_KEY" in lines[0]
    assert KEY not in err and "***" in err  # the server echoed the key; the message shows it redacted
    assert not (tmp_path / "out" / "judgements.jsonl").exists()


def test_an_echoed_api_key_is_in_no_file_written(tmp_path, capsys, monkeypatch, caplog):
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("PHYPROBE_TEST_KEY", KEY)
    cases = ("echo_key", "echo_key_error", "echo_key_bad_request", "ok")
    cfg = physics_cfg(None, tmp_path / "cache", api_key_env="PHYPROBE_TEST_KEY", max_retries=2)
    with ScriptedServer() as srv:
        cfg["client"]["base_url"] = srv.base_url
        code, out, err = _judge_run(tmp_path, cfg, cases, capsys)
        again = _judge_run(tmp_path, cfg, cases, capsys, name="again")  # the echoed reply now comes from the cache
        assert all(KEY in h for h in srv.auth_headers)  # the key really was sent, and so really was echoed
    assert code == 1 and "2 of 4 videos have no score" in err and again[0] == 1
    recs = _judgements(tmp_path / "out")
    echoed = recs["echo_key"]
    assert echoed["score"] is not None  # the answer itself is kept, with the key redacted
    assert "you sent Bearer ***" in echoed["items"]["physical_consistency"][0]["raw"]
    assert "upstream rejected Bearer ***" in recs["echo_key_error"]["failures"][0]["error"]
    assert "bad request from Bearer ***" in recs["echo_key_bad_request"]["failures"][0]["error"]
    assert _judgements(tmp_path / "again")["echo_key"]["cost"]["cached_calls"] == 1
    files = [p for p in tmp_path.rglob("*") if p.is_file() and p.suffix != ".mp4"]
    names = {p.name for p in files}
    assert {"judgements.jsonl", "responses.jsonl", "scores.csv", "judge_summary.json"} <= names
    for p in files:
        assert KEY.encode() not in p.read_bytes(), p
    assert KEY not in caplog.text + out + err + "".join(again[1:])


def test_exit_code_is_2_when_no_video_was_scored(tmp_path, capsys):
    cfg = physics_cfg(None, None)
    with ScriptedServer() as srv:
        cfg["client"]["base_url"] = srv.base_url
        code, out, err = _judge_run(tmp_path, cfg, ("bad_request", "malformed"), capsys)
    assert code == 2 and "0/2 videos scored" in out and "2 of 2 videos have no score" in err
    assert "judgements.jsonl" in err and "Traceback" not in err
