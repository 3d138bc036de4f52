"""Where a codec moves the default encoder's features: each feature group's shift from the lossless version, in
units of the group's spread across clips.

The plausible clips of the first ``--scenes`` scenes of a world build that have a severe twin are re-encoded in the codec benchmark's
encodings (``phyprobe.io.codecs.benchmark_encodings``); every version goes through the scorer's frozen encoder, and
for each encoding this prints the mean |feature - FFV1 feature| / (sd of the FFV1 features across clips and steps)
of each group of the flow dynamics encoder (over- and under-predicted flow statistics, the stopped and unexplained
levels), and the levels' means. ``--flow-stats`` instead compares the dynamics model's inputs, the flow statistics
themselves (no fitted model), at several flow methods, sizes and low-passes: the mean shift over all their features,
beside the shift of each clip's severe twin (severity >= 0.8, lossless), the violation's own.
Figures: docs/studies/codec-invariance.md.

    python research/codec_feature_shift.py outputs/demo/scorer --manifest data/leaderboard-world-s1-n200
    python research/codec_feature_shift.py --flow-stats dis:160 dis:80 farneback:160 farneback:80 farneback:160:2
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import torch

from phyprobe.data.manifest import Manifest
from phyprobe.encoders.base import from_config
from phyprobe.io.codecs import benchmark_encodings, decode_all, encode
from phyprobe.io.video import ClipSpec
from phyprobe.scorer import Scorer

SEVERE = "severe twin (FFV1)"  # not an encoding: each plausible clip's most severe violated twin, losslessly
GROUPS = {"over": slice(0, 224), "under": slice(224, 448), "stopped": slice(448, 449), "unexplained": slice(449, 450)}


def encoded_versions(manifest: Path, scenes: int, tmp: Path) -> dict[str, list[Path]]:
    """{encoding: [file of each plausible clip]} for the first ``scenes`` plausible world clips of ``manifest``
    that have a violated twin of severity >= 0.8, and under ``SEVERE`` each one's most severe twin, in FFV1."""
    m = Manifest.load(manifest)
    rows = m.videos.to_dict(orient="records")
    severe: dict[str, dict] = {}
    for r in rows:
        md = r["metadata"]
        if md.get("variant") == "violated" and md.get("severity", 0) >= 0.8:
            if md["scene"] not in severe or md["severity"] > severe[md["scene"]]["metadata"]["severity"]:
                severe[md["scene"]] = r
    plausible = [
        r
        for r in rows
        if r["metadata"].get("variant") == "plausible" and r["source"] == "world" and r["metadata"]["scene"] in severe
    ][:scenes]
    encs, _ = benchmark_encodings()
    ffv1 = next(e for e in encs if e.name == "ffv1")
    out: dict[str, list[Path]] = {}
    for i, r in enumerate(plausible):
        frames = decode_all(m.video_path(r["path"]))
        fps = r["metadata"].get("fps", 30)
        for e in encs:
            out.setdefault(e.name, []).append(encode(frames, fps, e, tmp / f"{i}_{e.name}.{e.ext}"))
        twin = decode_all(m.video_path(severe[r["metadata"]["scene"]]["path"]))
        out.setdefault(SEVERE, []).append(encode(twin, fps, ffv1, tmp / f"{i}_severe.{ffv1.ext}"))
    return out


def shifts(feats: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Per encoding, each feature's mean |shift| from FFV1's, over clips and steps, in units of FFV1's sd."""
    ref = feats["ffv1"]
    sd = ref.reshape(-1, ref.shape[-1]).std(0) + 1e-6
    return {name: np.abs(x - ref).mean((0, 1)) / sd for name, x in feats.items()}


def scorer_features(scorer: Scorer, versions: dict[str, list[Path]]) -> dict[str, np.ndarray]:
    out = {}
    for name, paths in versions.items():
        xs = []
        for p in paths:
            with torch.no_grad():
                clip = next(iter(scorer.read(p)))
                xs.append(scorer.encode(clip[None] if clip.dim() == 4 else clip).float().squeeze(0).numpy())
        out[name] = np.stack(xs)
    return out


def flow_stats_features(
    method: str, size: int, versions: dict[str, list[Path]], denoise: float = 0.0
) -> dict[str, np.ndarray]:
    """The default's flow statistics (4 x 4 grid, squashed, with the unexplained level) at one flow method, size
    and low-pass (``denoise``)."""
    enc = from_config(
        "flow_stats", image_size=size, flow_method=method, grid=4, resize="squash", unexplained=True, denoise=denoise
    )
    spec = ClipSpec(num_frames=32, mode="uniform")
    out = {}
    for name, paths in versions.items():
        with torch.no_grad():
            out[name] = np.stack(
                [enc.eval()(enc.read_clip(p, spec)[0][None]).float().squeeze(0).numpy() for p in paths]
            )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("scorer", nargs="?", help="a scorer on the flow dynamics encoder")
    ap.add_argument("--manifest", type=Path, default=Path("data/leaderboard-world-s1-n200"))
    ap.add_argument("--scenes", type=int, default=12)
    ap.add_argument(
        "--flow-stats",
        nargs="+",
        metavar="METHOD:SIZE[:DENOISE]",
        help="e.g. dis:160 farneback:160 dis:160:1.5 (a Gaussian low-pass of sd 1.5 px first)",
    )
    args = ap.parse_args()
    if not args.scorer and not args.flow_stats:
        ap.error("give a scorer or --flow-stats")
    with tempfile.TemporaryDirectory() as tmp:
        versions = encoded_versions(args.manifest, args.scenes, Path(tmp))
        n = len(versions["ffv1"])
        if args.flow_stats:
            print(
                f"{n} plausible clips of {args.manifest}; mean over the flow statistics of |shift from FFV1| / sd; "
                "the last column: the severe twin's, the violation's own shift; the ratio: the median codec's to it"
            )
            names = [e for e in versions if e not in ("ffv1", SEVERE)]
            print("| flow | " + " | ".join(names) + " | severe twin | ratio |\n" + "|---" * (len(names) + 3) + "|")
            for spec in args.flow_stats:
                method, size, *sigma = spec.split(":")
                z = {
                    e: v.mean()
                    for e, v in shifts(flow_stats_features(method, int(size), versions, *map(float, sigma))).items()
                }
                label = f"{method}, {size} px" + (f", low-pass {sigma[0]} px" if sigma else "")
                ratio = np.median([z[e] for e in names]) / z[SEVERE]
                print(f"| {label} | " + " | ".join(f"{z[e]:.3f}" for e in names + [SEVERE]) + f" | {ratio:.2f} |")
            return
        feats = scorer_features(Scorer.from_pretrained(args.scorer), versions)
    if feats["ffv1"].shape[-1] != 450:
        raise SystemExit(
            f"{args.scorer}: expected the flow dynamics encoder's 450 features, got {feats['ffv1'].shape[-1]}"
        )
    print(f"{n} plausible clips of {args.manifest}; shift = mean |feature - FFV1's| / sd across clips")
    print("| encoding | " + " | ".join(GROUPS) + " | stopped level | unexplained level |")
    print("|---" * (len(GROUPS) + 3) + "|")
    for name, z in shifts(feats).items():
        cells = [f"{z[s].mean():.3f}" for s in GROUPS.values()]
        levels = [f"{feats[name][..., GROUPS[g]].mean():.4f}" for g in ("stopped", "unexplained")]
        print(f"| {name} | " + " | ".join(cells + levels) + " |")


if __name__ == "__main__":
    main()
