"""PhyDetEx PID test split (``NNaptmn/PhyDetExDatasets``): ``pos/`` plausible real videos, ``neg/``
implausible generated ones, ``anno_file.json`` explaining each implausible video.

Published as ``PID_Test_split.zip``; the unzipped folder is used in place when it is there. Real
videos anchor at 0 (magnitude 0), implausible ones at 1. The benchmark itself has no pairs; for
training, each implausible video is paired with one real video (round robin, no correspondence).
``subset=impossible_videos`` reads the physical-law subset of ImpossibleVideos shipped beside it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .base import (ManifestWriter, VIDEO_EXTENSIONS, check_count, existing, fail, pair_frame, read_json_records,
                   unpacked, video_frame)

NAME = "pid"
SUBSETS = {"pid": ("PID_test", "PID_Test_split.zip", 500),
           "impossible_videos": ("ImpossibleVideos_Physical_Law_Only", "ImpossibleVideos_Physical_Law_Only.zip", None)}


def _videos_in(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.is_file() and p.suffix.lower() in VIDEO_EXTENSIONS) if folder.is_dir() else []


def convert(root: Path, out: Path, subset: str = "pid", split: str = "test", check_counts: bool = True) -> Path:
    if subset not in SUBSETS:
        raise ValueError(f"pid: subset must be one of {sorted(SUBSETS)}, got {subset!r}")
    folder_name, archive, expected = SUBSETS[subset]
    folder = unpacked(Path(root), folder_name, archive, Path(out))
    anno_path = folder / "anno_file.json"
    annos = {}
    if anno_path.is_file():
        for i, r in enumerate(read_json_records(anno_path)):
            if not r.get("video_name"):
                fail(anno_path, "required key missing or empty", row=i, field="video_name")
            annos[str(r["video_name"])] = r.get("anno")
    pos = _videos_in(folder / "pos")
    neg = sorted(set(_videos_in(folder / "neg")) | set(annos))  # an annotated name with no file is reported missing
    if not pos and not neg:
        fail(folder, "no videos in pos/ or neg/")
    check_count(folder, len(pos) + len(neg), expected, "videos (pos/ + neg/)", check_counts)
    source = NAME if subset == "pid" else subset
    v_pos = video_frame([f"{source}:pos/{n}" for n in pos], existing(folder / "pos" / n for n in pos), source, True, split,
                        magnitude=0.0, anchor=0, metadata=[{"variant": "plausible", "file": n} for n in pos])
    v_neg = video_frame([f"{source}:neg/{n}" for n in neg], existing(folder / "neg" / n for n in neg), source, False, split,
                        anchor=1, metadata=[{"variant": "violated", "file": n, "anno": annos.get(n)} for n in neg])
    refs = {"file": str(folder), "row": None}
    with ManifestWriter(out, source) as w:
        w.report.files[str(folder)] = len(pos) + len(neg)
        if pos and neg:
            partner = [v_pos["id"][i % len(pos)] for i in range(len(neg))]
            pairs = pair_frame(v_neg["id"], partner, np.ones(len(neg)), source, "none", "real_vs_generated", split)
        else:
            pairs = None
        w.add(v_pos.assign(ref=[f"pos/{n}" for n in pos], **refs))
        w.add(v_neg.assign(ref=[f"neg/{n}" for n in neg], **refs), pairs)
        return w.close()
