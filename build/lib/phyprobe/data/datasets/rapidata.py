"""Rapidata video preference sets (``Rapidata/*-human-preference*``), parquet, one row per pair of
videos with aggregated crowd votes per dimension.

Two column schemas are published: ``file_name1/2`` with ``weighted_results1_<Dim>`` (older sets)
and ``video1/2`` with ``weighted_results_video1_<Dim>`` (newer sets); both are read. The Coherence
votes (glitches, physical plausibility) become a soft label, the share of the vote weight that went
to the other video: P(video1 more violating) = w2 / (w1 + w2), a tie when no vote was cast.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from .base import ManifestWriter, VideoIndex, check_count, fail, find_file, pair_frame, read_table, video_frame

NAME = "rapidata"
# Published row counts of the sets, recognised by the set's name in the path (hub cache or download folder).
EXPECTED_ROWS = {"image-to-video-human-preference-seedance-1-pro": 198, "image-to-video-human-preference-hailuo-02-marey": 98}
SCHEMAS = {  # schema -> (video columns, weighted-vote column pattern)
    "file_name": (("file_name1", "file_name2"), "weighted_results{i}_{dim}"),
    "video": (("video1", "video2"), "weighted_results_video{i}_{dim}"),
}


def _column(df: pd.DataFrame, name: str) -> str | None:
    """Column names differ in case between releases (``Coherence`` / ``coherence``)."""
    for c in df.columns:
        if c.lower() == name.lower():
            return c
    return None


def detect_schema(df: pd.DataFrame, dim: str, path: Path) -> tuple[tuple[str, str], tuple[str, str]]:
    for videos, pattern in SCHEMAS.values():
        weights = tuple(_column(df, pattern.format(i=i, dim=dim)) for i in (1, 2))
        if all(v in df.columns for v in videos) and all(weights):
            return videos, weights
    fail(path, f"neither published schema found for dimension {dim!r}: expected {SCHEMAS['file_name'][0]} + "
               f"weighted_results1_{dim} or {SCHEMAS['video'][0]} + weighted_results_video1_{dim}; found {list(df.columns)}")


def convert(root: Path, out: Path, videos: str | None = None, dim: str = "Coherence", split: str = "test",
            check_counts: bool = True) -> Path:
    root = Path(root)
    files = sorted(p for p in root.rglob("*.parquet") if p.is_file())
    if not files:
        find_file(root, ["*.parquet"], "Rapidata parquet")  # raises with the root named
    index = VideoIndex(Path(videos) if videos else root)
    set_name = next((s for s in EXPECTED_ROWS if s in str(root.resolve())), None)
    with ManifestWriter(out, NAME) as w:
        total = 0
        for path in files:
            df = read_table(path)
            (c1, c2), (w1c, w2c) = detect_schema(df, dim, path)
            total += len(df)
            w1 = pd.to_numeric(df[w1c], errors="coerce").to_numpy(float)
            w2 = pd.to_numeric(df[w2c], errors="coerce").to_numpy(float)
            for col, x in ((w1c, w1), (w2c, w2)):
                bad = ~np.isfinite(x) | (x < 0)
                if bad.any():
                    i = int(np.flatnonzero(bad)[0])
                    fail(path, f"{df[col].iloc[i]!r} is not a non-negative vote weight", row=i, field=col)
            tot = w1 + w2
            label = np.where(tot > 0, w2 / np.where(tot > 0, tot, 1.0), 0.5)
            if (tot == 0).any():
                w.report.notes.append(f"{path}: {int((tot == 0).sum())} rows without {dim} votes are ties (label 0.5)")
            prompt = df[_column(df, "prompt")] if _column(df, "prompt") else pd.Series([None] * len(df))
            sides = []
            for col, mcol in ((c1, "model1"), (c2, "model2")):
                vals = df[col]
                if vals.map(lambda x: isinstance(x, (bytes, dict))).any():
                    fail(path, "videos embedded as bytes are not supported; download the set's video files", field=col)
                refs = vals.astype(str).str.strip()
                models = df[mcol] if mcol in df else pd.Series([None] * len(df))
                meta = [{"prompt": p, "model": m, "dimension": dim, "set": set_name} for p, m in zip(prompt, models)]
                v = video_frame(NAME + ":" + refs.map(lambda r: re.sub(r"^https?://", "", r)), [index.resolve(r) for r in refs],
                                NAME, False, split, metadata=meta)
                sides.append(v.assign(ref=refs.to_numpy(), file=str(path), row=np.arange(len(df))))
            # image-to-video sets condition both videos on one image (``prompt_asset``): the same first frame
            corr = "same_first_frame" if _column(df, "prompt_asset") else "same_prompt"
            w.report.files[str(path)] = len(df)
            w.add(pd.concat(sides, ignore_index=True),
                  pair_frame(sides[0]["id"], sides[1]["id"], label, NAME, corr, "generated_vs_generated", split))
        check_count(root, total, EXPECTED_ROWS.get(set_name), f"rows of {set_name}", check_counts)
        return w.close()
