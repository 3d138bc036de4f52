"""A tiny ImplausiBench release in the files, names, nesting and record shape the authors publish, with real mp4s.

What the authors publish (primary sources):

- Hugging Face dataset ``INSAIT-Institute/ImplausiBench`` (file listing): ``.gitattributes``, ``README.md``
  (card: ``license: mit``, task Question Answering, modality Video, language English, size < 1K, tags
  video / physics / multimodal / benchmark / plausibility), ``ImplausiBench-MCQA.json`` and the folder
  ``ImplausiBench/`` (not zipped; a ``.DS_Store`` was uploaded into it and deleted again).
- The card: 150 paired scenarios (300 videos), ``ImplausiBench/real/<ID>_real.mp4`` and
  ``ImplausiBench/implausible/<ID>_implausible.mp4`` sharing first frame and style, and the MCQA record
  ``{"implausible_video", "real_video", "question", "options": {"A": ..., "G": "None of the given reasons
  is entirely correct."}, "real_answer", "implausible_answer"}`` with paths relative to the dataset root.
- No loader or evaluation script is published (the project page reports accuracy on the real and the
  implausible videos, graded by human and LLM judges).

Not stated: the JSON's indentation (4 here) and the ID alphabet (``IMP`` + 5 letters and digits, as the
card's ``IMPuq5s7``).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

from dataset_fixtures import clip

JSON_NAME = "ImplausiBench-MCQA.json"
QUESTION = "Do the events in the video appear to follow physics principles (Real) or not (Implausible)? Why?"
CARD = (
    "---\nlicense: mit\ntask_categories:\n- question-answering\nlanguage:\n- en\ntags:\n- video\n- physics\n"
    "- multimodal\n- benchmark\n- plausibility\nsize_categories:\n- n<1K\n---\n\n# ImplausiBench\n\n"
    "150 paired scenarios (300 videos): ImplausiBench/real/<ID>_real.mp4 and "
    "ImplausiBench/implausible/<ID>_implausible.mp4, with ImplausiBench-MCQA.json. "
    "(tiny test copy written by tests/published_implausibench.py)\n"
)
GITATTRIBUTES = "*.mp4 filter=lfs diff=lfs merge=lfs -text\n*.json filter=lfs diff=lfs merge=lfs -text\n"


def scenario(tag: str, i: int) -> str:
    return f"IMP{tag}{hashlib.md5(f'{tag}{i}'.encode()).hexdigest()[:4]}"


def record(tag: str, i: int) -> dict:
    sid = scenario(tag, i)
    return {
        "implausible_video": f"ImplausiBench/implausible/{sid}_implausible.mp4",
        "real_video": f"ImplausiBench/real/{sid}_real.mp4",
        "question": QUESTION,
        "options": {
            "A": f"Real, because the ball {i} rolls off the table and falls.",
            "B": "Real, because the ball bounces on the floor.",
            "C": "Implausible, because the ball passes through the table.",
            "D": "Implausible, because the ball changes colour.",
            "E": "Implausible, because the ball floats upward.",
            "F": "Implausible, because the ball stops in mid-air.",
            "G": "None of the given reasons is entirely correct.",
        },
        "real_answer": "A",
        "implausible_answer": "F",
    }


def write(root: Path, tag: str = "a", n: int = 3, records: int | None = None, ds_store: bool = False) -> Path:
    """The dataset download under ``root``; ``records`` (>= n) adds records whose videos are not there."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    recs = [record(tag, i) for i in range(records or n)]
    for i, r in enumerate(recs[:n]):
        clip(root / r["real_video"], f"ibpub/{tag}/{i}/real")
        clip(root / r["implausible_video"], f"ibpub/{tag}/{i}/implausible", violate=True)
    if ds_store:
        (root / "ImplausiBench" / ".DS_Store").write_bytes(b"\x00\x00\x00\x01Bud1")
    (root / JSON_NAME).write_text(json.dumps(recs, indent=4, ensure_ascii=False), encoding="utf-8")
    (root / "README.md").write_text(CARD, encoding="utf-8")
    (root / ".gitattributes").write_text(GITATTRIBUTES, encoding="utf-8")
    return root


def hub_cache(cache: Path, tag: str = "a", n: int = 3) -> Path:
    """``snapshot_download`` into a hub cache: every file a link from ``snapshots/<rev>/`` into ``blobs/``
    (video links sit in ``ImplausiBench/real/`` and ``.../implausible/`` and point at extension-less blobs).
    Returns the snapshot folder."""
    staged = write(cache / "_staged", tag, n)
    repo = cache / "datasets--INSAIT-Institute--ImplausiBench"
    snap = repo / "snapshots" / ("6f62c1c" + "0" * 33)
    (repo / "blobs").mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(snap.name)
    for f in sorted(p for p in staged.rglob("*") if p.is_file()):
        rel = f.relative_to(staged)
        blob = repo / "blobs" / hashlib.sha256(f.read_bytes()).hexdigest()
        shutil.move(f, blob)
        (snap / rel).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(os.path.relpath(blob, (snap / rel).parent), snap / rel)
    shutil.rmtree(staged)
    return snap
