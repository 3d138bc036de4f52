"""VideoGen-RewardBench (``KlingTeam/VideoGen-RewardBench``): one row per (prompt, video A, video B)
with A / B / ``same`` labels per dimension; videos under ``videos/<model>/<model>_<id>.mp4``.

MQ (motion quality) is the physics-closest dimension and the default; ``dim=Overall`` (or VQ, TA)
writes that dimension's labels instead. The CSV is read in chunks and written as it goes, so memory
stays flat in the number of rows: this converter is the one that scales to synthetic 400k-pair sets.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from .base import (
    ManifestWriter,
    check_count,
    existing_under,
    fail,
    find_file,
    pair_frame,
    read_csv,
    unpacked,
    video_frame,
)

NAME = "videogen_rewardbench"
FILE = "videogen-rewardbench.csv"
DIMS = ("MQ", "Overall", "VQ", "TA")
LABELS = {"A": 0.0, "B": 1.0, "same": 0.5}  # P(a more violating): the preferred video is the less violating one
REQUIRED = ("path_A", "path_B", "A_model", "B_model", "prompt")
# The authors publish no exact count: the dataset card says "26.5k" (prompt, A, B) triplets (rows of the CSV); the
# VideoScore2 paper (arXiv 2509.22799), which evaluates on it, gives 25,234 pairs / 4,691 videos. A count off the
# card's rounding is a warning naming both figures (docs/datasets/videogen_rewardbench.md).
EXPECTED_ROWS, ROWS_TOLERANCE = 26_500, 50
STATED = "~26.5k pairs on the dataset card; 25,234 pairs / 4,691 videos in the VideoScore2 paper"


def _video_root(root: Path, csv_path: Path, out: Path, first_ref: str) -> Path:
    """Where ``path_A`` is relative to: the CSV's folder, else ``root``, else ``videos.zip`` unpacked."""
    for base in (csv_path.parent, root):
        if (base / first_ref).is_file():
            return base
    top = Path(first_ref).parts[0]
    if any(root.rglob(top + ".zip")):
        return unpacked(root, top, top + ".zip", out).parent
    return csv_path.parent


def convert(
    root: Path, out: Path, dim: str = "MQ", split: str = "test", chunksize: int = 100_000, check_counts: bool = True
) -> Path:
    if dim not in DIMS:
        raise ValueError(f"videogen_rewardbench: dim must be one of {DIMS}, got {dim!r}")
    root = Path(root)
    path = find_file(root, [FILE], "VideoGen-RewardBench CSV")
    n_rows, n_videos, base = 0, 0, None
    with ManifestWriter(out, NAME) as w:
        for chunk in read_csv(path, (*REQUIRED, dim), chunksize=chunksize):
            rows = np.arange(n_rows + 2, n_rows + 2 + len(chunk))  # line numbers, header = line 1
            n_rows += len(chunk)
            label = chunk[dim].str.strip().map(LABELS)
            if label.isna().any():
                i = int(np.flatnonzero(label.isna().to_numpy())[0])
                fail(path, f"label {chunk[dim].iloc[i]!r} is not one of {sorted(LABELS)}", row=int(rows[i]), field=dim)
            for side in ("A", "B"):
                empty = chunk[f"path_{side}"].str.strip() == ""
                if empty.any():
                    fail(
                        path,
                        "empty video path",
                        row=int(rows[np.flatnonzero(empty.to_numpy())[0]]),
                        field=f"path_{side}",
                    )
            if base is None:
                base = _video_root(root, path, Path(out), chunk["path_A"].iloc[0])
            ids = [NAME + ":" + chunk[f"path_{side}"].str.strip() for side in ("A", "B")]
            pairs = pair_frame(ids[0], ids[1], label.to_numpy(), NAME, "same_prompt", "generated_vs_generated", split)
            # A video recurs in every pair of its prompt: look up, describe and stat each one only once.
            sides = []
            for side, vid in zip(("A", "B"), ids):
                c = pd.DataFrame(
                    {
                        "id": vid,
                        "ref": chunk[f"path_{side}"].str.strip(),
                        "row": rows,
                        "prompt": chunk["prompt"],
                        "model": chunk[f"{side}_model"],
                    }
                )
                for k in ("fps", "num_frames"):
                    if f"{k}_{side}" in chunk:
                        c[k] = pd.to_numeric(chunk[f"{k}_{side}"], errors="coerce")
                sides.append(c)
            new = pd.concat(sides, ignore_index=True)
            new = new[w.unseen(new["id"])]
            n_videos += len(new)
            meta = new.drop(columns=["id", "ref", "row"]).to_dict("records")
            v = video_frame(new["id"], existing_under(base, new["ref"]), NAME, False, split, metadata=meta)
            w.add(v.assign(ref=new["ref"].to_numpy(), file=str(path), row=new["row"].to_numpy()), pairs)
        w.report.files[str(path)] = n_rows
        off = check_count(
            path, n_rows, EXPECTED_ROWS, f"pairs ({n_videos} videos)", check_counts, ROWS_TOLERANCE, STATED
        )
        if off:
            w.report.notes.append(off)
        w.report.notes.append(f"labels from dimension {dim}")
        return w.close()
