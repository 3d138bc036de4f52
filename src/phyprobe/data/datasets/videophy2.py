"""VideoPhy-2 (``videophysics/videophy2_{train,test}``): per-video human ``pc`` / ``sa`` ratings.

Videos of one caption come from several generators, so every two videos of a caption are a
same-prompt pair, labelled by ``pc`` (higher = more plausible) and a tie where equal. ``pc`` is
also each video's magnitude through ``configs/magnitudes/videophy2.yaml``. The rule lists are
Python list literals in the CSV and are parsed, not kept as strings.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from .base import (
    ManifestWriter,
    VideoIndex,
    check_count,
    fail,
    find_file,
    group_pairs,
    load_magnitude_map,
    pair_frame,
    parse_int,
    parse_list_literal,
    parse_truthy,
    read_csv,
    ref_key,
    ref_parts,
    video_frame,
)

NAME = "videophy2"
FILES = {"train": ["videophy2_training.csv", "videophy2_train.csv"], "test": ["videophy2_test.csv"]}
# test: the rows of the published videophy2_test.csv (the dataset card's viewer: "3.4k rows"; 3,397 by independent
# counts); train: ~3,343 unique rows by third-party counts, not published exactly (docs/datasets/videophy2.md)
EXPECTED_ROWS = {"test": 3397, "train": None}
REQUIRED = ("caption", "video_url", "sa", "pc")
RULE_LISTS = ("physics_rules_followed", "physics_rules_unfollowed", "physics_rules_cannot_be_determined")
TEXT = ("action", "category", "metadata_rules", "upsampled_caption")


def _human_rules(value, path: Path, row: int) -> list:
    """``human_violated_rules`` is a list literal in most rows and free text in some."""
    text = str(value).strip()
    if text.startswith("["):
        return parse_list_literal(text, path, row, "human_violated_rules")
    return [text] if text else []


def read_split(path: Path, split: str, index: VideoIndex, mag_map) -> pd.DataFrame:
    df = read_csv(path, REQUIRED)
    rows = np.arange(2, len(df) + 2)  # line numbers: the header is line 1 (no multi-line fields in these CSVs)
    pc = parse_int(df["pc"], path, "pc", 1, 5, row_offset=2)
    sa = parse_int(df["sa"], path, "sa", 1, 5, row_offset=2)
    refs = df["video_url"].str.strip()
    empty = refs == ""
    if empty.any():
        fail(path, "empty video reference", row=int(rows[np.flatnonzero(empty.to_numpy())[0]]), field="video_url")
    meta = []
    for i, r in enumerate(df.to_dict("records")):
        m = {
            "prompt": r["caption"],
            "pc": int(pc[i]),
            "sa": int(sa[i]),
            "joint": int(sa[i] >= 4 and pc[i] >= 4),
            "video_url": r["video_url"],
        }
        parts = ref_parts(r["video_url"])
        m["model"] = r.get("model_name") or (parts[-2] if len(parts) > 1 else None)
        for c in RULE_LISTS:
            if c in r:
                m[c] = parse_list_literal(r[c], path, int(rows[i]), c)
        if "human_violated_rules" in r:
            m["human_violated_rules"] = _human_rules(r["human_violated_rules"], path, int(rows[i]))
        if "is_hard" in r:
            m["is_hard"] = parse_truthy(r["is_hard"])
        m.update({c: r[c] for c in TEXT if c in r})
        meta.append(m)
    v = video_frame(
        [f"{NAME}:{ref_key(u)}" for u in refs],
        [index.resolve(u) for u in refs],
        NAME,
        False,
        split,
        magnitude=mag_map({"pc": pc}),
        metadata=meta,
    )
    return v.assign(ref=refs.to_numpy(), file=str(path), row=rows, caption=df["caption"].to_numpy())


def convert(
    root: Path, out: Path, videos: str | None = None, magnitudes=None, configs=None, check_counts: bool = True
) -> Path:
    root = Path(root)
    index = VideoIndex(Path(videos) if videos else root)
    mag_map = load_magnitude_map(NAME, magnitudes, configs)
    found = {s: find_file(root, names, f"VideoPhy-2 {s} CSV", required=False) for s, names in FILES.items()}
    if not any(found.values()):
        raise FileNotFoundError(f"{root}: neither {FILES['train']} nor {FILES['test']} found")
    with ManifestWriter(out, NAME) as w:
        for split, path in found.items():
            if path is None:
                w.report.notes.append(f"no {split} CSV under {root}")
                continue
            v = read_split(path, split, index, mag_map)
            check_count(path, len(v), EXPECTED_ROWS[split], "rows", check_counts)
            w.report.files[str(path)] = len(v)
            dup = v["id"].duplicated()
            w.report.duplicate_videos.extend(v.loc[dup, ["id", "file", "row"]].to_dict("records"))
            v = v[~dup]
            p = group_pairs(v, "caption", "magnitude", higher_means="violation")
            w.add(v, pair_frame(p["a"], p["b"], p["label"], NAME, "same_prompt", "generated_vs_generated", p["split"]))
        return w.close()
