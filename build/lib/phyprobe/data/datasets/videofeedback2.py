"""VideoFeedback2 (``TIGER-Lab/VideoFeedback2``): per-video 1-5 human scores, ten generators per prompt.

``phy_score`` (physical / common-sense consistency, higher = more plausible) is the target: it
labels every same-prompt pair (ties where equal) and is each video's magnitude through
``configs/magnitudes/videofeedback2.yaml``. Records are JSON (a list, or JSON lines).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from .base import (ManifestWriter, VideoIndex, fail, find_file, group_pairs, load_magnitude_map, pair_frame,
                   parse_int, read_json_records, video_frame)

NAME = "videofeedback2"
FILES = {"train": ["data_27k_train*.json", "data_27k_train*.jsonl"], "test": ["data_27k_test*.json", "data_27k_test*.jsonl"]}
EXPECTED_ROWS = {"train": None, "test": None}  # 27,168 videos in all (card); the per-split counts are not published
REQUIRED = ("video_name", "prompt", "phy_score")
SCORES = ("visual_score", "t2v_score", "phy_score")


def read_split(path: Path, split: str, index: VideoIndex, mag_map) -> pd.DataFrame:
    records = read_json_records(path)
    for i, r in enumerate(records):
        for k in REQUIRED:
            if k not in r or r[k] is None or r[k] == "":
                fail(path, "required key missing or empty", row=i, field=k)
    df = pd.DataFrame(records)
    phy = parse_int(df["phy_score"], path, "phy_score", 1, 5, row_offset=0)
    names = df["video_name"].astype(str).str.strip()
    urls = df["video_url"].astype(str) if "video_url" in df else pd.Series([""] * len(df))
    paths = [index.resolve(n) or (index.resolve(u) if u else None) for n, u in zip(names, urls)]
    meta = [{"prompt": r["prompt"], **{k: r[k] for k in SCORES if k in r}, "video_name": r["video_name"],
             **({"video_url": r["video_url"]} if r.get("video_url") else {})} for r in records]
    v = video_frame([f"{NAME}:{n}" for n in names], paths, NAME, False, split, magnitude=mag_map({"phy_score": phy}), metadata=meta)
    return v.assign(ref=names.to_numpy(), file=str(path), row=np.arange(len(df)), prompt=df["prompt"].to_numpy())


def convert(root: Path, out: Path, videos: str | None = None, magnitudes=None, configs=None, check_counts: bool = True) -> Path:
    root = Path(root)
    index = VideoIndex(Path(videos) if videos else root)
    mag_map = load_magnitude_map(NAME, magnitudes, configs)
    found = {s: find_file(root, names, f"VideoFeedback2 {s} JSON", required=False) for s, names in FILES.items()}
    if not any(found.values()):
        raise FileNotFoundError(f"{root}: no VideoFeedback2 JSON found (looked for {FILES})")
    with ManifestWriter(out, NAME) as w:
        for split, path in found.items():
            if path is None:
                w.report.notes.append(f"no {split} JSON under {root}")
                continue
            v = read_split(path, split, index, mag_map)
            w.report.files[str(path)] = len(v)
            dup = v["id"].duplicated()
            w.report.duplicate_videos.extend(v.loc[dup, ["id", "file", "row"]].to_dict("records"))
            v = v[~dup]
            p = group_pairs(v, "prompt", "magnitude", higher_means="violation")
            w.add(v, pair_frame(p["a"], p["b"], p["label"], NAME, "same_prompt", "generated_vs_generated", p["split"]))
        return w.close()
