"""A load client for ``phyprobe serve``, shared by ``tests/test_serve.py`` and ``bench/bench_serve.py``: uploads
mixing good and bad videos, POSTed concurrently, and a one-line summary of the answers (statuses, latency, rate)."""

from __future__ import annotations

import http.client
import json
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
