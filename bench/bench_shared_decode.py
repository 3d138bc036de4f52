"""One decode for a concatenation's parts against one decode per part, measured in one run.

The parts of ``flow_dynamics_geophys`` (the flow statistics under the dynamics model, and EfficientNet-Lite0's
path under GeoPhys's statistics) read frames alike. Encoded by ``extract_all`` they share each video's decode and
preprocessing; encoded one after the other (as each part's own ``extract_features``), each decodes every video.
Both fill fresh caches from the same mp4s; the two ways alternate over ``--rounds`` and each keeps its fastest
round, so load from other processes biases neither. Prints seconds per video and the ratio.

    python bench/bench_shared_decode.py            # 48 mp4s of 96x128x32, the default's 112 px
    python bench/bench_shared_decode.py --quick    # 12 mp4s, 1 round
"""

from __future__ import annotations

import argparse
import logging
import shutil
import tempfile
import time
from pathlib import Path

from bench_extract import make_videos

from phyprobe.features.extract import extract_all, extract_features
from phyprobe.instantiate import frozen_inputs
from phyprobe.io.video import ClipSpec
from phyprobe.testing.configs import compose_train

CPU = {"accelerator": "cpu", "enable_progress_bar": False}


def timed(fn, cache: Path) -> float:
    shutil.rmtree(cache, ignore_errors=True)
    start = time.perf_counter()
    fn(cache)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--videos", type=int, default=48)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--record", action="store_true", help="write the figures to results/benchmarks.csv")
    args = ap.parse_args()
    logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)
    n, rounds = (12, 1) if args.quick else (args.videos, args.rounds)
    tmp = Path(tempfile.gettempdir())
    manifest = make_videos(tmp / f"bench-shared-decode-{n}", n, size=(96, 128))
    cfg = compose_train(tmp / "bench-shared-decode-run", ["backbone=flow_dynamics_geophys"])
    encoders, clip = frozen_inputs(cfg.backbone, str(cfg.feature_dtype)), ClipSpec(**cfg.clip)
    opts = {"batch_size": int(cfg.extract.batch_size), "num_workers": 0, "trainer_kwargs": CPU}

    def apart(cache: Path) -> None:
        for enc, dtype in encoders:
            extract_features(manifest, enc, clip, cache, dtype, **opts)

    def together(cache: Path) -> None:
        extract_all(manifest, encoders, clip, cache, **opts)

    best = {"one decode per part": float("inf"), "one decode for the parts": float("inf")}
    for _ in range(rounds):
        best["one decode per part"] = min(best["one decode per part"], timed(apart, tmp / "bench-shared-apart"))
        best["one decode for the parts"] = min(
            best["one decode for the parts"], timed(together, tmp / "bench-shared-together")
        )
    for label, seconds in best.items():
        print(f"{label:>26}: {seconds / n * 1000:7.1f} ms per video ({n} videos of {clip.num_frames} frames)")
    ratio = best["one decode for the parts"] / best["one decode per part"]
    print(f"one decode for the parts / one decode per part: {ratio:.3f}")
    if args.record:
        from phyprobe.eval.bench_record import record_benchmark

        record_benchmark(
            "shared_decode_flow_dynamics_geophys",
            {
                **{f"{k}, seconds per video": (v / n, "s") for k, v in best.items()},
                "one decode for the parts / one decode per part": (ratio, "ratio"),
            },
        )


if __name__ == "__main__":
    main()
