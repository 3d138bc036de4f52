"""Load on ``phyprobe serve``: N concurrent requests mixing good and bad videos, on 127.0.0.1.

Prints how many were answered and with which status, p50/p99 latency and videos/s, measured in one
run. The server runs in this process (uvicorn in a thread) on an ephemeral port; the load client is
phyprobe.testing.serve_load, the one tests/test_serve.py uses.

    python bench/bench_serve.py                    # 200 requests, a tiny scorer
    python bench/bench_serve.py --scorer DIR -n 500
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from phyprobe.testing.serve_load import fire, mixed_bodies, post, summary


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scorer", help="scorer directory (default: a tiny one written here)")
    ap.add_argument("-n", type=int, default=200)
    ap.add_argument("--concurrency", type=int, default=200)
    ap.add_argument("--max-batch", type=int, default=8)
    args = ap.parse_args()
    from phyprobe.serve import ServeConfig, build_app, serve_in_thread

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        scorer = args.scorer
        if scorer is None:
            from phyprobe.testing.scorers import make_scorer

            scorer = make_scorer(tmp / "scorer")
        bodies = mixed_bodies(args.n, tmp)
        with serve_in_thread(build_app(scorer, ServeConfig(max_batch=args.max_batch))) as url:
            post(url, bodies[1][0])  # warm-up
            answers, seconds = fire(url, bodies, args.concurrency)
        print(summary(answers, seconds))


if __name__ == "__main__":
    main()
