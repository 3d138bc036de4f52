"""A load client for ``phyprobe serve``, shared by ``tests/test_serve.py`` and ``bench/bench_serve.py``: uploads
mixing good and bad videos, POSTed concurrently, and a one-line summary of the answers (statuses, latency, rate);
``phyprobe serve`` started as a process of its own; hostile clients (trickling, long uploads) in another process."""

from __future__ import annotations

import contextlib
import http.client
import json
import multiprocessing
import queue
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np


def post(url: str, body: bytes, content_type: str = "video/mp4", timeout: float = 120.0) -> tuple[int, dict, float]:
    """(status, JSON answer, seconds) of one POST /score."""
    u = urlsplit(url)
    t = time.perf_counter()
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
    try:
        conn.request("POST", "/score", body=body, headers={"Content-Type": content_type})
        res = conn.getresponse()
        data = res.read()
    finally:
        conn.close()
    return res.status, json.loads(data), time.perf_counter() - t


def get(url: str, path: str, timeout: float = 30.0) -> tuple[int, dict]:
    """(status, JSON answer) of one GET."""
    u = urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
    try:
        conn.request("GET", path)
        res = conn.getresponse()
        return res.status, json.loads(res.read())
    finally:
        conn.close()


@contextlib.contextmanager
def serve_process(scorer: str | Path, *options: str, ready_timeout: float = 120.0):
    """``phyprobe serve SCORER --port 0 --log-level warning OPTIONS...`` as a process of its own (as deployed: no
    client shares its interpreter); yields its URL once ``/ready`` says 200; stops it (SIGTERM, then SIGKILL) after."""
    cmd = [sys.executable, "-c", "import sys; from phyprobe.cli import main; sys.exit(main())"]
    cmd += ["serve", str(scorer), "--port", "0", "--log-level", "warning", *options]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    lines: queue.Queue = queue.Queue()

    def pump() -> None:  # its stdout, line by line (drained to the end, so it never blocks on a full pipe)
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    try:
        deadline = time.monotonic() + ready_timeout
        url = None
        while url is None:  # the line it prints once its port is bound
            try:
                line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise RuntimeError(f"phyprobe serve did not bind a port within {ready_timeout:g} s") from None
            if line is None:
                raise RuntimeError(f"phyprobe serve stopped before binding its port (exit code {proc.wait()})")
            if line.startswith("phyprobe serve: listening on "):
                url = line.split()[-1]
        while True:
            with contextlib.suppress(OSError):
                if get(url, "/ready", timeout=5)[0] == 200:
                    break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"phyprobe serve at {url} not ready within {ready_timeout:g} s")
            time.sleep(0.05)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def fire(url: str, bodies: list[tuple[bytes, str]], concurrency: int) -> tuple[list[tuple[int, dict, float]], float]:
    """Every (body, content type) POSTed with ``concurrency`` in flight; answers in order and the wall time."""
    t = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        answers = list(pool.map(lambda b: post(url, *b), bodies))
    return answers, time.perf_counter() - t


def summary(answers: list[tuple[int, dict, float]], seconds: float) -> str:
    lat = np.array([a[2] for a in answers]) * 1000
    ok = sum(a[0] == 200 for a in answers)
    codes = {c: sum(a[0] == c for a in answers) for c in sorted({a[0] for a in answers})}
    return (
        f"{len(answers)} requests answered: {codes}; latency p50 {np.percentile(lat, 50):.0f} ms, "
        f"p99 {np.percentile(lat, 99):.0f} ms; {ok / seconds:.1f} videos/s scored, {len(answers) / seconds:.1f} requests/s"
    )


def mixed_bodies(n: int, root: Path, size=(96, 128), frames: int = 24) -> list[tuple[bytes, str]]:
    """Three in four requests a real mp4 (distinct content), the rest junk, empty or a truncated video."""
    from phyprobe.io.video import write_video

    rng = np.random.default_rng(0)
    good = []
    for i in range(8):
        write_video(root / f"{i}.mp4", rng.integers(0, 255, (frames, *size, 3), dtype=np.uint8), fps=12)
        good.append((root / f"{i}.mp4").read_bytes())
    bad = [
        (b"not a video at all", "video/mp4"),
        (good[0][: len(good[0]) // 8], "video/mp4"),
        (b"\x89PNG\r\n\x1a\n" + bytes(200), "video/mp4"),
        (b"", "video/mp4"),
    ]
    return [(good[i % 8], "video/mp4") if i % 4 else bad[(i // 4) % len(bad)] for i in range(n)]


# --- availability under hostile load: slow clients and long videos next to good clips -------------------------------


def long_video(path: Path, repeats: int = 10, size=(480, 640), frames: int = 24) -> Path:
    """A video that is slow to decode but quick to write: a segment of noise (MPEG-TS) repeated ``repeats`` times
    (about 0.4 s of decoding per repeat on one core at the default size)."""
    import av

    seg = path.with_suffix(".seg.ts")
    rng = np.random.default_rng(1)
    with av.open(str(seg), "w", format="mpegts") as out:
        s = out.add_stream("libx264", rate=24)
        s.width, s.height, s.pix_fmt = size[1], size[0], "yuv420p"
        s.options = {"preset": "ultrafast", "crf": "28", "g": str(frames)}
        for _ in range(frames):
            frame = av.VideoFrame.from_ndarray(rng.integers(0, 255, (*size, 3), dtype=np.uint8), format="rgb24")
            for p in s.encode(frame):
                out.mux(p)
        for p in s.encode():
            out.mux(p)
    path.write_bytes(seg.read_bytes() * repeats)
    seg.unlink()
    return path


def trickle(
    url: str, head: bytes, body: bytes = b"", interval: float = 0.5, limit: float = 120.0
) -> tuple[float, bytes]:
    """Send ``head`` then ``body`` one line (headers) or one byte (body) every ``interval`` s, as a slow or hostile
    client does; (seconds until the server answered or closed the connection, what it sent)."""
    import socket

    u = urlsplit(url)
    t = time.perf_counter()
    parts = [line + b"\r\n" for line in head.split(b"\r\n")] if not body else [head, *(bytes([b]) for b in body)]
    with socket.create_connection((u.hostname, u.port), timeout=limit) as s:
        s.settimeout(interval)
        answer = b""
        for part in parts:
            try:
                s.sendall(part)
                chunk = s.recv(65536)  # waits ``interval`` for an answer: the pace of the trickle
                answer += chunk
                if not chunk or time.perf_counter() - t > limit:
                    break  # answered and closed, or gave up
            except TimeoutError:
                continue
            except OSError:
                break
        s.settimeout(max(0.1, limit - (time.perf_counter() - t)))
        with contextlib.suppress(OSError):
            while chunk := s.recv(65536):
                answer += chunk
    return time.perf_counter() - t, answer


SLOW_HEAD = b"POST /score HTTP/1.1\r\nHost: x\r\nContent-Type: video/mp4\r\n" + b"".join(
    b"X-Pad-%d: %d\r\n" % (i, i) for i in range(200)
)


def percentiles(lat: list[float]) -> tuple[float, float]:
    return float(np.percentile(lat, 50)), float(np.percentile(lat, 99))


def _hostile(url, head_body, long_body, slow_clients, long_clients, interval, load, stop, out) -> None:
    """The hostile clients of :func:`availability`, in a process of their own: ``slow_clients`` trickling headers or
    bodies and ``long_clients`` uploading ``long_body`` back to back while ``load`` is set, until ``stop`` is;
    then puts what they saw on ``out``."""
    seen: dict[str, list] = {"slow": [], "long": []}

    def slow(i: int):
        while not stop.is_set():
            if not load.wait(0.1):
                continue
            if i % 2:
                seen["slow"].append(trickle(url, SLOW_HEAD, interval=interval, limit=30)[0])
            else:
                head = b"POST /score HTTP/1.1\r\nHost: x\r\nContent-Type: video/mp4\r\nContent-Length: %d\r\n\r\n"
                seen["slow"].append(trickle(url, head % len(head_body), head_body, interval=interval, limit=30)[0])

    def long(_: int):
        while not stop.is_set():
            if not load.wait(0.1):
                continue
            try:
                status, _, _ = post(url, long_body, timeout=60)
            except OSError:
                status = -1
            seen["long"].append(status)
            stop.wait(0.5 if status in (503, -1) else 0.05)  # a client honouring Retry-After (roughly)

    threads = [threading.Thread(target=slow, args=(i,), daemon=True) for i in range(slow_clients)]
    threads += [threading.Thread(target=long, args=(i,), daemon=True) for i in range(long_clients)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=90)
    out.put(seen)


def availability(
    url: str,
    good: list[bytes],
    long_body: bytes,
    n: int = 40,
    concurrency: int = 2,
    slow_clients: int = 4,
    long_clients: int = 2,
    interval: float = 0.25,
    rounds: int = 2,
    drain_s: float = 6.0,
) -> dict:
    """Good clips POSTed ``n`` per phase, ``concurrency`` in flight, in ``rounds`` of a quiet phase then a loaded one
    (interleaved, so a busy moment of the machine touches both), the loaded one while ``slow_clients`` trickle
    headers or bodies and ``long_clients`` upload ``long_body`` back to back. The hostile clients run in a process of
    their own, so their threads do not slow the measuring client (nor, with the server in a process of its own, the
    server) through a shared interpreter. Returns the good requests' p50/p99 (s) both ways, the p99 ratio
    (``drain_s``: the pause after each loaded phase, longer than the server's read and request timeouts), their
    statuses, and how many failed or timed out (any answer but 200)."""
    bodies = [(good[i % len(good)], "video/mp4") for i in range(n)]

    def timed(body: tuple[bytes, str]) -> tuple[int, dict, float]:
        t = time.perf_counter()
        try:
            return post(url, *body, timeout=60)
        except OSError:  # no answer in time, or the connection dropped: a failure, timed
            return -1, {}, time.perf_counter() - t

    def run_all(bodies):
        with ThreadPoolExecutor(concurrency) as pool:
            return list(pool.map(timed, bodies))

    ctx = multiprocessing.get_context("spawn")  # a fresh interpreter: nothing of this one's threads or imports
    load, stop, out = ctx.Event(), ctx.Event(), ctx.Queue()
    args = (url, good[0][:5000], long_body, slow_clients, long_clients, interval, load, stop, out)
    hostile = ctx.Process(target=_hostile, args=args, daemon=True, name="phyprobe-hostile-clients")
    hostile.start()
    quiet, loaded = [], []
    try:
        run_all(bodies[: 2 * concurrency])  # warm-up
        for _ in range(rounds):
            quiet += run_all(bodies)
            load.set()
            time.sleep(1.0)  # the load is on: long videos decoding, slow clients connected
            loaded += run_all(bodies)
            load.clear()
            time.sleep(drain_s)  # the load drains: slow clients cut off by their deadlines, long videos by theirs
    finally:
        stop.set()
        load.clear()
    try:
        seen = out.get(timeout=120)
    finally:
        hostile.join(timeout=10)
        if hostile.is_alive():
            hostile.kill()
    q = percentiles([a[2] for a in quiet])
    lo = percentiles([a[2] for a in loaded])
    both = quiet + loaded
    return {
        "quiet_p50_s": q[0],
        "quiet_p99_s": q[1],
        "loaded_p50_s": lo[0],
        "loaded_p99_s": lo[1],
        "p99_ratio": lo[1] / q[1],
        "good_failed": sum(a[0] != 200 for a in both),
        "good_statuses": {c: [a[0] for a in both].count(c) for c in sorted({a[0] for a in both})},
        "good_errors": sorted({a[1].get("error", "") for a in both if a[0] != 200}),
        "long_statuses": {c: seen["long"].count(c) for c in sorted(set(seen["long"]))},
        "slow_clients_closed_after_s": max(seen["slow"], default=0.0),
    }
