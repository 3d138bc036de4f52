"""Judge client throughput: N small real mp4s judged against a local scripted chat-completions server.

The server (phyprobe.testing.judge_server, the one the tests use) runs in its own process so it does not share
the client's interpreter; it answers at once, so what is measured is the client: frame sampling, JPEG
encoding, request building, HTTP, parsing, caching and the per-video records. A real judge takes
seconds per call, so the client must finish far faster than that to never be the bottleneck.

    python bench/bench_judge.py                    # 1,000 videos, concurrency 16, 1 sample, 2 frames
    python bench/bench_judge.py --videos 200 --samples 3

Prints the wall time of the judge run (videos are written before the clock starts), requests per
second, and the time of a second run of the same job that is answered entirely from the cache.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import tempfile
import time
from pathlib import Path


def _serve(port_q):
    from phyprobe.testing.judge_server import ScriptedServer

    srv = ScriptedServer()
    port_q.put(srv.httpd.server_address[1])
    srv.httpd.serve_forever()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--videos", type=int, default=1000)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--samples", type=int, default=1)
    ap.add_argument("--frames", type=int, default=2)
    args = ap.parse_args()

    from phyprobe.data.manifest import Manifest
    from phyprobe.judges.run import run_judge
    from phyprobe.testing.judge_cases import case_manifest

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        t = time.perf_counter()
        manifest = Manifest.load(case_manifest(tmp / "m", cases=("ok",) * args.videos, frames=4, size=32))
        print(f"wrote {args.videos} mp4s in {time.perf_counter() - t:.1f} s (not timed below)")
        q = mp.Queue()
        server = mp.Process(target=_serve, args=(q,), daemon=True)
        server.start()
        base_url = f"http://127.0.0.1:{q.get(timeout=60)}/v1"
        cfg = {
            "judge": {
                "_target_": "phyprobe.judges.scivbench.RubricJudge",
                "rubric_set": "physics",
                "samples": args.samples,
            },
            "client": {"base_url": base_url, "model": "bench", "concurrency": args.concurrency, "timeout_s": 30},
            "video": {"max_frames": args.frames, "fps": None, "max_side": 32},
            "cache_dir": str(tmp / "cache"),
        }
        try:
            t = time.perf_counter()
            res = run_judge(cfg, manifest, tmp / "out")
            wall = time.perf_counter() - t
            t = time.perf_counter()
            again = run_judge(cfg, manifest, tmp / "out2")
            cached = time.perf_counter() - t
        finally:
            server.terminate()
    n_req = args.videos * args.samples
    assert len(res.scores) == args.videos and again.cost["cached_calls"] == n_req
    print(
        f"{args.videos} videos x {args.samples} sample(s) = {n_req} requests, concurrency {args.concurrency}, "
        f"{args.frames} frames each"
    )
    print(
        f"judge run: {wall:.1f} s  ({n_req / wall:.0f} requests/s, {args.videos / wall:.0f} videos/s); "
        f"target < 120 s: {'met' if wall < 120 else 'NOT met'}"
    )
    print(f"same job again from the cache: {cached:.1f} s  ({wall / cached:.1f}x faster)")


if __name__ == "__main__":
    main()
