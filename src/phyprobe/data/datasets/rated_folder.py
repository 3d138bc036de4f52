"""A folder of the user's own generated videos with human ratings in a ``video,score`` CSV.

``video`` names a file under the folder (relative path, file name or stem); ``score`` is the
rating, mapped to a magnitude by ``configs/magnitudes/rated_folder.yaml`` (edit it to your scale:
the map's direction says whether a high score means plausible). With a ``prompt`` column, videos of
one prompt are paired (same prompt); without, videos are chained in a fixed hashed order
(no correspondence). Labels come from the magnitudes, ties where equal.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pandas as pd

from .base import (
    ManifestWriter,
    VideoIndex,
    fail,
    find_file,
    group_pairs,
    load_magnitude_map,
    pair_frame,
    read_csv,
    video_frame,
)
from .splits import hash_split

NAME = "rated_folder"


def convert(root: Path, out: Path, csv: str | None = None, split: str = "train", val_fraction: float = 0.0,
            magnitudes=None, configs=None, check_counts: bool = True) -> Path:
    root = Path(root)
    path = Path(csv) if csv else find_file(root, ["*.csv"], "ratings CSV (video,score)")
    df = read_csv(path, ("video", "score"))
    rows = np.arange(2, len(df) + 2)
    score = pd.to_numeric(df["score"], errors="coerce")
    if score.isna().any():
        i = int(np.flatnonzero(score.isna().to_numpy())[0])
        fail(path, f"{df['score'].iloc[i]!r} is not a number", row=int(rows[i]), field="score")
    mag_map = load_magnitude_map(NAME, magnitudes, configs)
    try:
        mag = mag_map({mag_map.fields[0]: score.to_numpy(float)})
    except ValueError as e:
        fail(path, str(e), field="score")
    refs = df["video"].str.strip()
    has_prompt = "prompt" in df.columns
    group = df["prompt"] if has_prompt else refs
    splits = hash_split(group, split, float(val_fraction))
    index = VideoIndex(root)
    meta = [{"score": float(s), **({"prompt": p} if has_prompt else {})} for s, p in zip(score, group)]
    v = video_frame([f"rated:{r}" for r in refs], [index.resolve(r) for r in refs], NAME, False, splits,
                    magnitude=mag, metadata=meta)
    v = v.assign(ref=refs.to_numpy(), file=str(path), row=rows, group=group.to_numpy())
    dup = v["id"].duplicated()
    if dup.any():
        i = int(np.flatnonzero(dup.to_numpy())[0])
        fail(path, f"video {refs.iloc[i]!r} is rated twice", row=int(rows[i]), field="video")
    if has_prompt:
        p = group_pairs(v, "group", "magnitude", higher_means="violation")
        corr = "same_prompt"
    else:
        order = v.assign(h=[hashlib.sha1(r.encode()).hexdigest() for r in refs]).sort_values(["split", "h"])
        same = order["split"].to_numpy()[1:] == order["split"].to_numpy()[:-1]
        ma, mb = order["magnitude"].to_numpy()[:-1][same], order["magnitude"].to_numpy()[1:][same]
        p = pd.DataFrame({"a": order["id"].to_numpy()[:-1][same], "b": order["id"].to_numpy()[1:][same],
                          "label": np.where(ma == mb, 0.5, (ma > mb).astype(float)), "split": order["split"].to_numpy()[:-1][same]})
        corr = "none"
    with ManifestWriter(out, NAME) as w:
        w.report.files[str(path)] = len(df)
        w.add(v, pair_frame(p["a"], p["b"], p["label"], NAME, corr, "generated_vs_generated", p["split"]))
        return w.close()
