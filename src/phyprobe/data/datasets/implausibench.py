"""ImplausiBench (``INSAIT-Institute/ImplausiBench``): 150 (implausible, real) video pairs that share
their first frame and style, listed in ``ImplausiBench-MCQA.json``.

Each record becomes one same-first-frame pair, the implausible video as ``a`` (label 1); real
videos anchor at 0, implausible ones at 1. The multiple-choice question and answers ride along in
the metadata.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .base import (
    ManifestWriter,
    VideoIndex,
    check_count,
    fail,
    find_file,
    pair_frame,
    read_json_records,
    ref_key,
    video_frame,
)

NAME = "implausibench"
FILE = "ImplausiBench-MCQA.json"
EXPECTED_PAIRS = 150
REQUIRED = ("implausible_video", "real_video")


def convert(root: Path, out: Path, split: str = "test", check_counts: bool = True) -> Path:
    path = find_file(Path(root), [FILE], "ImplausiBench MCQA JSON")
    records = read_json_records(path)
    check_count(path, len(records), EXPECTED_PAIRS, "pairs", check_counts)
    index = VideoIndex(path.parent)
    rows = np.arange(len(records))
    for i, r in enumerate(records):
        for k in REQUIRED:
            if not r.get(k):
                fail(path, "required key missing or empty", row=i, field=k)
    real = [r["real_video"] for r in records]
    fake = [r["implausible_video"] for r in records]
    scenario = [Path(f).stem.rsplit("_", 1)[0] for f in fake]
    common = [{k: r[k] for k in ("question", "options", "real_answer", "implausible_answer") if k in r} for r in records]
    v_real = video_frame([f"{NAME}:{ref_key(x)}" for x in real], [index.resolve(x) for x in real], NAME, True, split,
                         magnitude=0.0, anchor=0, metadata=[{"variant": "plausible", "scenario": s, **c} for s, c in zip(scenario, common)])
    v_fake = video_frame([f"{NAME}:{ref_key(x)}" for x in fake], [index.resolve(x) for x in fake], NAME, False, split,
                         anchor=1, metadata=[{"variant": "violated", "scenario": s, **c} for s, c in zip(scenario, common)])
    pairs = pair_frame(v_fake["id"], v_real["id"], np.ones(len(records)), NAME, "same_first_frame", "real_vs_generated", split)
    with ManifestWriter(out, NAME) as w:
        w.report.files[str(path)] = len(records)
        w.add(v_real.assign(ref=real, file=str(path), row=rows))
        w.add(v_fake.assign(ref=fake, file=str(path), row=rows), pairs)
        return w.close()
