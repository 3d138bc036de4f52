"""Load on ``phyprobe serve``, on 127.0.0.1, in two parts measured in one run:

1. throughput: N concurrent requests mixing good and bad videos; how many were answered with which status,
   p50/p99 latency and videos/s;
2. availability: good clips (``--concurrency-good`` in flight) on a quiet server, then again while slow clients
   trickle headers and bodies and long videos are uploaded back to back. Prints the good requests' p50/p99 both
   ways and the loaded/quiet ratio; the service must keep p99 under 2x its quiet p99 and answer every good request.

As deployed, the server is a process of its own (``phyprobe serve --port 0``, used once ``/ready`` says 200), the
hostile clients run in a second process and the good requests are measured from this one, so no client slows the
server, or the measurement, through a shared interpreter. The load client is phyprobe.testing.serve_load, the one
tests/test_serve.py and tests/test_serve_availability.py use.

    python bench/bench_serve.py                    # a tiny scorer
    python bench/bench_serve.py --scorer DIR -n 500 --record
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from phyprobe.testing.serve_load import availability, fire, long_video, mixed_bodies, post, serve_process, summary


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scorer", help="scorer directory (default: a tiny one written here)")
    ap.add_argument("-n", type=int, default=200)
    ap.add_argument("--concurrency", type=int, default=200)
    ap.add_argument("--max-batch", type=int, default=8)
    ap.add_argument("--good", type=int, default=80, help="good requests per availability phase")
    ap.add_argument("--concurrency-good", type=int, default=2)
    ap.add_argument("--slow-clients", type=int, default=8)
    ap.add_argument("--long-clients", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3, help="quiet/loaded rounds, interleaved")
    ap.add_argument("--record", action="store_true", help="write the figures to results/benchmarks.csv")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        scorer = args.scorer
        if scorer is None:
            from phyprobe.testing.scorers import make_scorer

            scorer = make_scorer(tmp / "scorer")
        bodies = mixed_bodies(args.n, tmp)
        with serve_process(scorer, "--max-batch", str(args.max_batch)) as url:
            post(url, bodies[1][0])  # warm-up
            answers, seconds = fire(url, bodies, args.concurrency)
        print("throughput:", summary(answers, seconds))

        good = [(tmp / f"{i}.mp4").read_bytes() for i in range(8)]  # mixed_bodies' good videos
        long = long_video(tmp / "long.ts", repeats=12).read_bytes()  # ~34 MB, seconds of decoding
        options = {
            "--max-batch": args.max_batch,
            "--timeout": 4.0,
            "--long-video-mb": 8,
            "--light-budget": 1.0,
            "--long-video-workers": 1,
            "--header-timeout": 2.0,
            "--idle-timeout": 2.0,
            "--read-timeout": 5.0,
        }
        with serve_process(scorer, *(str(x) for kv in options.items() for x in kv)) as url:
            r = availability(
                url,
                good,
                long,
                n=args.good,
                concurrency=args.concurrency_good,
                slow_clients=args.slow_clients,
                long_clients=args.long_clients,
                rounds=args.rounds,
            )
    print(
        f"availability: good p50/p99 quiet {1000 * r['quiet_p50_s']:.0f}/{1000 * r['quiet_p99_s']:.0f} ms, "
        f"loaded {1000 * r['loaded_p50_s']:.0f}/{1000 * r['loaded_p99_s']:.0f} ms; p99 ratio {r['p99_ratio']:.2f} "
        f"(must be < 2); good requests failed: {r['good_failed']}; long videos answered {r['long_statuses']}; "
        f"slow clients closed after at most {r['slow_clients_closed_after_s']:.1f} s"
    )
    if args.record:
        from phyprobe.eval.bench_record import record_benchmark

        lat = sorted(a[2] for a in answers)
        record_benchmark(
            "serve",
            {
                "throughput: p50 latency": (lat[len(lat) // 2], "s"),
                "throughput: videos/s": (sum(a[0] == 200 for a in answers) / seconds, "videos/s"),
                "availability: quiet p50": (r["quiet_p50_s"], "s"),
                "availability: loaded p50": (r["loaded_p50_s"], "s"),
                "availability: quiet p99": (r["quiet_p99_s"], "s"),
                "availability: loaded p99": (r["loaded_p99_s"], "s"),
                "availability: loaded/quiet p99": (r["p99_ratio"], "ratio"),
                "availability: good requests failed": (r["good_failed"], "count"),
            },
        )


if __name__ == "__main__":
    main()
