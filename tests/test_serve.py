"""phyprobe serve on 127.0.0.1: a load of concurrent good and bad uploads all answered correctly, uploads
bounded while streaming, paths confined to a root, health and readiness."""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
import time
from urllib.parse import urlsplit

import numpy as np
import pytest
import torch

from phyprobe import Scorer
from phyprobe.serve import ServeConfig, build_app, serve_in_thread
from phyprobe.testing.scorers import make_scorer
from phyprobe.testing.serve_load import fire, mixed_bodies, post, serve_process, summary


@pytest.fixture(scope="module")
def scorer(tmp_path_factory):
    return Scorer.from_pretrained(make_scorer(tmp_path_factory.mktemp("scorer") / "s"))


def get(url: str, path: str) -> tuple[int, dict]:
    u = urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    conn.request("GET", path)
    r = conn.getresponse()
    return r.status, json.loads(r.read())


def test_200_concurrent_requests_mixing_good_and_bad_videos_are_all_answered(scorer, tmp_path):
    bodies = mixed_bodies(200, tmp_path)
    files = sorted(tmp_path.glob("*.mp4"), key=lambda p: int(p.stem))
    want = {f.read_bytes(): scorer.score(f) for f in files}  # the library's score of each good video
    spool = tmp_path / "spool"
    spool.mkdir()
    with serve_in_thread(build_app(scorer, ServeConfig(max_batch=8, spool_dir=spool))) as url:
        assert get(url, "/health") == (200, {"status": "ok"})
        assert get(url, "/ready")[1]["fingerprint"] == scorer.config["encoder"]["fingerprint"]
        answers, seconds = fire(url, bodies, concurrency=200)
    print(summary(answers, seconds))
    assert len(answers) == 200
    for (body, _), (status, res, _) in zip(bodies, answers):
        if body in want:
            assert status == 200 and res["score"] == pytest.approx(want[body], abs=1e-4) and 0 <= res["score"] <= 1
        else:
            assert status in (400, 422) and res["error"], (status, res)
    assert sum(a[0] == 200 for a in answers) == 150 and not list(spool.iterdir())  # no upload left behind


def _raw_request(url: str, head: bytes, chunks: list[bytes]) -> bytes:
    """Send headers and some body, never the rest; return what the server answered meanwhile."""
    u = urlsplit(url)
    with socket.create_connection((u.hostname, u.port), timeout=30) as s:
        s.sendall(head)
        for c in chunks:
            try:
                s.sendall(c)
            except (BrokenPipeError, ConnectionResetError):
                break
        answer = b""
        while b"\r\n\r\n" not in answer:  # the status and headers, then the body they announce
            answer += s.recv(65536)
        head, _, body = answer.partition(b"\r\n\r\n")
        length = int(next(h.split(b":")[1] for h in head.lower().split(b"\r\n") if h.startswith(b"content-length")))
        while len(body) < length:
            body += s.recv(65536)
        return head + b"\r\n\r\n" + body


def test_oversized_uploads_are_refused_before_they_are_read_whole(scorer, tmp_path):
    limit = 64 * 1024
    with serve_in_thread(build_app(scorer, ServeConfig(max_upload_bytes=limit, spool_dir=tmp_path))) as url:
        declared = _raw_request(
            url,
            b"POST /score HTTP/1.1\r\nHost: x\r\nContent-Type: video/mp4\r\nContent-Length: 10000000000\r\n\r\n",
            [b"\0" * 1024],
        )
        assert declared.startswith(b"HTTP/1.1 413") and b"exceeds the limit" in declared
        # No length given: the body is chunked and never ends, so only streaming enforcement can answer.
        chunk = b"4000\r\n" + b"\0" * 0x4000 + b"\r\n"
        streamed = _raw_request(
            url,
            b"POST /score HTTP/1.1\r\nHost: x\r\nContent-Type: video/mp4\r\nTransfer-Encoding: chunked\r\n\r\n",
            [chunk] * 6,
        )
        assert streamed.startswith(b"HTTP/1.1 413")
        assert post(url, b"\0" * 1000)[0] == 422  # under the limit: read, and refused as a video
    assert not list(tmp_path.iterdir())


def test_uploads_on_disk_are_bounded_in_total_not_only_each(scorer, tmp_path):
    """Two uploads under the per-request limit whose sum passes max_spool_bytes: the second is answered 503 with
    Retry-After while the first is held open, and taken once the first is done; nothing stays on disk."""
    cfg = ServeConfig(max_upload_bytes=64 * 1024, max_spool_bytes=100 * 1024, spool_dir=tmp_path)
    with serve_in_thread(build_app(scorer, cfg)) as url:
        u = urlsplit(url)
        with socket.create_connection((u.hostname, u.port), timeout=30) as held:
            held.sendall(b"POST /score HTTP/1.1\r\nHost: x\r\nContent-Type: video/mp4\r\nContent-Length: 60000\r\n\r\n")
            held.sendall(b"\0" * 50000)
            deadline = time.monotonic() + 30
            while sum(p.stat().st_size for p in tmp_path.iterdir()) < 50000:  # the server has spooled what came
                assert time.monotonic() < deadline, "the held upload never reached the spool"
                time.sleep(0.01)
            status, answer, _ = post(url, b"\0" * 60000)
            assert status == 503 and "retry later" in answer["error"], answer
            held.sendall(b"\0" * 10000)  # the first upload ends: read, and refused as a video
            assert held.recv(65536).startswith(b"HTTP/1.1 422")
        assert post(url, b"\0" * 60000)[0] == 422  # room again
    assert not list(tmp_path.iterdir())


def test_bad_requests_get_clear_4xx(scorer, tmp_path):
    root = tmp_path / "videos"
    root.mkdir()
    from phyprobe.io.video import write_video

    write_video(root / "ok.mp4", np.random.default_rng(0).integers(0, 255, (8, 48, 64, 3), dtype=np.uint8))
    (tmp_path / "secret.mp4").write_bytes((root / "ok.mp4").read_bytes())
    with serve_in_thread(build_app(scorer, ServeConfig(paths_root=root))) as url:
        ok = post(url, json.dumps({"path": "ok.mp4"}).encode(), "application/json")
        assert ok[0] == 200 and ok[1]["score"] == pytest.approx(scorer.score(root / "ok.mp4"), abs=1e-4)
        assert post(url, json.dumps({"path": "../secret.mp4"}).encode(), "application/json")[0] == 403
        assert post(url, b"{not json", "application/json")[0] == 400
        missing = post(url, json.dumps({"path": "gone.mp4"}).encode(), "application/json")
        assert missing[0] == 422 and "file does not exist" in missing[1]["error"]
        assert post(url, b"--x\r\n", "multipart/form-data; boundary=x")[0] == 415
    with serve_in_thread(build_app(scorer, ServeConfig())) as url:
        assert post(url, json.dumps({"path": "ok.mp4"}).encode(), "application/json")[0] == 403  # paths disabled
    with serve_in_thread(build_app(scorer, ServeConfig(timeout_s=1e-4))) as url:
        slow = post(url, (root / "ok.mp4").read_bytes())
        assert slow[0] == 504 and "timeout" in slow[1]["error"]


def test_phyprobe_serve_as_its_own_process_on_a_free_port(tmp_path):
    scorer_dir = make_scorer(tmp_path / "s")
    mixed_bodies(4, tmp_path)
    clip = tmp_path / "1.mp4"
    want = Scorer.from_pretrained(scorer_dir).score(clip)
    with serve_process(scorer_dir, "--idle-timeout", "5", "--read-timeout", "20") as url:  # --port 0: URL printed
        assert get(url, "/ready")[0] == 200
        status, res, _ = post(url, clip.read_bytes())
        assert status == 200 and res["score"] == pytest.approx(want, abs=1e-4)
    cmd = [sys.executable, "-c", "import sys; from phyprobe.cli import main; sys.exit(main())"]
    bad = subprocess.run([*cmd, "serve", str(scorer_dir), "--idle-timeout", "0"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--idle-timeout" in bad.stderr, bad.stderr


def test_the_forward_runs_on_the_cores_the_decode_workers_leave(scorer, tmp_path):
    from phyprobe.io.video import write_video
    from phyprobe.serve import encoder_threads

    write_video(tmp_path / "ok.mp4", np.random.default_rng(0).integers(0, 255, (8, 48, 64, 3), dtype=np.uint8))
    assert encoder_threads(ServeConfig(decode_workers=10**6)) == 1  # never fewer than one
    assert encoder_threads(ServeConfig(encoder_threads=3)) == 3
    n = 1 if torch.get_num_threads() > 1 else 2  # not what a new thread would get anyway
    app = build_app(scorer, ServeConfig(encoder_threads=n))
    with serve_in_thread(app) as url:
        assert post(url, (tmp_path / "ok.mp4").read_bytes())[0] == 200
        forward = app.state.phyprobe["batcher"].forward
        assert forward.submit(torch.get_num_threads).result() == n  # the forward thread's own setting
