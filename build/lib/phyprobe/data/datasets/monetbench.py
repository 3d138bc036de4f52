"""MonetBench / VisionRewardDB-Video (``zai-org/VisionRewardDB-Video``), parquet.

``test`` (the MonetBench video preference test, 1,000 pairs): ``standard_answer`` ``video1`` /
``video2`` / ``tie`` -> pair label, the preferred video being the less violating one. ``train``
(40,743 annotated videos): the annotations' "physics law" (1-5) and "movement reality" (0-4) are
mapped to one magnitude per video by ``configs/magnitudes/monetbench.yaml``, and the videos of one
prompt are paired by it (ties where equal). Only paths are published; the videos are fetched
separately and found under ``videos`` (default: the dataset root) by path or file name.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from .base import (ManifestWriter, VideoIndex, check_count, fail, find_file, group_pairs, load_magnitude_map,
                   pair_frame, read_table, require_columns, video_frame)

NAME = "monetbench"
FILES = {"test": ["monetbench/test-*.parquet", "test/test-*.parquet"], "train": ["train/train-*.parquet"]}
EXPECTED_ROWS = {"test": 1000, "train": 40743}
ANSWERS = {"video1": 0.0, "video2": 1.0, "tie": 0.5}  # P(video1 more violating)
TEST_COLUMNS = ("internal_id", "prompt", "standard_answer", "video1_path", "video2_path")
TRAIN_COLUMNS = ("video_path", "prompt", "annotation")


def _test(path: Path, index: VideoIndex, w: ManifestWriter, check_counts: bool) -> None:
    df = read_table(path)
    require_columns(df, TEST_COLUMNS, path)
    check_count(path, len(df), EXPECTED_ROWS["test"], "pairs", check_counts)
    label = df["standard_answer"].astype(str).str.strip().map(ANSWERS)
    if label.isna().any():
        i = int(np.flatnonzero(label.isna().to_numpy())[0])
        fail(path, f"{df['standard_answer'].iloc[i]!r} is not one of {sorted(ANSWERS)}", row=i, field="standard_answer")
    sides = []
    for k in ("video1_path", "video2_path"):
        refs = df[k].astype(str).str.strip()
        meta = [{"prompt": p, "internal_id": str(i)} for p, i in zip(df["prompt"], df["internal_id"])]
        v = video_frame(NAME + ":" + refs, [index.resolve(r) for r in refs], NAME, False, "test", metadata=meta)
        sides.append(v.assign(ref=refs.to_numpy(), file=str(path), row=np.arange(len(df))))
    w.report.files[str(path)] = len(df)
    w.add(pd.concat(sides, ignore_index=True),
          pair_frame(sides[0]["id"], sides[1]["id"], label.to_numpy(), NAME, "same_prompt", "generated_vs_generated", "test"))


def _annotation(value, path: Path, row: int) -> dict:
    """The per-video annotation: a struct column (dict) or its JSON text."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            fail(path, "not a JSON object", row=row, field="annotation")
    if not isinstance(value, dict):
        fail(path, f"expected an object, got {type(value).__name__}", row=row, field="annotation")
    return value


def _train(path: Path, index: VideoIndex, mag_map, w: ManifestWriter, check_counts: bool) -> None:
    df = read_table(path)
    require_columns(df, TRAIN_COLUMNS, path)
    check_count(path, len(df), EXPECTED_ROWS["train"], "rows", check_counts)
    ann = [_annotation(a, path, i) for i, a in enumerate(df["annotation"])]
    cols = {}
    for f in mag_map.fields:
        vals = pd.to_numeric(pd.Series([a.get(f) for a in ann]), errors="coerce")
        bad = vals.isna() & pd.Series([a.get(f) is not None for a in ann])
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            fail(path, f"{ann[i].get(f)!r} is not a number", row=i, field=f"annotation.{f}")
        cols[f] = vals.to_numpy(float)
    try:
        mag = mag_map(cols)
    except ValueError as e:
        fail(path, str(e))
    refs = df["video_path"].astype(str).str.strip()
    meta = [{"prompt": p, "annotation": a, **({"internal_id": str(i)} if "internal_id" in df else {})}
            for p, a, i in zip(df["prompt"], ann, df.get("internal_id", pd.Series([None] * len(df))))]
    v = video_frame(NAME + ":" + refs, [index.resolve(r) for r in refs], NAME, False, "train", magnitude=mag, metadata=meta)
    v = v.assign(ref=refs.to_numpy(), file=str(path), row=np.arange(len(df)), prompt=df["prompt"].to_numpy())
    dup = v["id"].duplicated()
    w.report.duplicate_videos.extend(v.loc[dup, ["id", "file", "row"]].to_dict("records"))
    v = v[~dup]
    known = v[v["magnitude"].notna()]
    p = group_pairs(known, "prompt", "magnitude", higher_means="violation")
    w.report.files[str(path)] = len(df)
    w.add(v, pair_frame(p["a"], p["b"], p["label"], NAME, "same_prompt", "generated_vs_generated", p["split"]))


def convert(root: Path, out: Path, videos: str | None = None, magnitudes=None, configs=None, check_counts: bool = True) -> Path:
    root = Path(root)
    index = VideoIndex(Path(videos) if videos else root)
    found = {s: find_file(root, names, f"VisionRewardDB-Video {s} parquet", required=False) for s, names in FILES.items()}
    if not any(found.values()):
        raise FileNotFoundError(f"{root}: no VisionRewardDB-Video parquet found (looked for {FILES})")
    with ManifestWriter(out, NAME) as w:
        if found["test"]:
            _test(found["test"], index, w, check_counts)
        if found["train"]:
            _train(found["train"], index, load_magnitude_map(NAME, magnitudes, configs), w, check_counts)
        return w.close()
