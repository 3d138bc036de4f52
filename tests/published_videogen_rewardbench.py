"""A tiny VideoGen-RewardBench release in the files, names, nesting, columns and types the authors publish.

What the authors publish (primary sources):

- Hugging Face dataset ``KwaiVGI/VideoGen-RewardBench`` (= ``KlingTeam/...``; file listing):
  ``.gitattributes``, ``README.md``, ``videogen-rewardbench.csv`` (8.13 MB) and ``videos.zip`` (13.4 GB).
- The card (``README.md``): ``license: apache-2.0``, ``configs: default`` with one split ``eval`` from
  ``videogen-rewardbench.csv``; 26.5k (prompt, Video A, Video B) triplets over 12 T2V models; the example
  record ``path_A: videos/kling1.5/kling1.5_00103.mp4, path_B: videos/minimax/minimax_00103.mp4, A_model,
  B_model, prompt, VQ: "A", MQ: "A", ...``.
- ``KwaiVGI/VideoAlign`` ``eval_videogen_rewardbench.py``: reads ``datasets/eval/videogen-rewardbench.csv``
  and opens ``os.path.join("datasets/eval", path)``, so the unzipped ``videos/`` sits beside the CSV; the
  columns it reads: ``path_A, A_model, prompt, fps_A, num_frames_A`` (and ``_B``), labels ``VQ, MQ, TA,
  Overall`` mapped ``{'A': 1, 'B': -1, 'same': 0}``. Its README clones the dataset with ``git clone``.

Not stated: the column order of the CSV (the card's example order, then ``Overall`` and the fps / frame
columns), and whether ``videos.zip`` holds the top folder ``videos/`` (it does here: the paths in the CSV
start with ``videos/`` and the script joins them to the folder the zip was unpacked in).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import zipfile
from pathlib import Path

import pandas as pd
from dataset_fixtures import FRAMES, clip

CSV_NAME, ZIP_NAME = "videogen-rewardbench.csv", "videos.zip"
MODELS = ("kling1.5", "minimax", "gen3", "hunyuan")
COLUMNS = [
    "path_A",
    "path_B",
    "A_model",
    "B_model",
    "prompt",
    "VQ",
    "MQ",
    "TA",
    "Overall",
    "fps_A",
    "num_frames_A",
    "fps_B",
    "num_frames_B",
]
CARD = (
    "---\nlicense: apache-2.0\nconfigs:\n- config_name: default\n  data_files:\n  - split: eval\n"
    '    path: "videogen-rewardbench.csv"\n---\n\n## Introduction\n**VideoGen-RewardBench**: (prompt, Video A, '
    "Video B) triplets with pairwise preference labels on VQ, MQ, TA and Overall "
    "(tiny test copy written by tests/published_videogen_rewardbench.py).\n"
)
GITATTRIBUTES = "*.zip filter=lfs diff=lfs merge=lfs -text\n"
LABELS = ("A", "B", "same")


def video(model: str, pid: str) -> str:
    return f"videos/{model}/{model}_{pid}.mp4"


def rows(tag: str, prompts: int) -> list[dict]:
    out = []
    for p in range(prompts):
        pid = f"{tag}{p:04d}"
        for k, (ma, mb) in enumerate(((0, 1), (0, 2), (1, 3), (2, 3))):
            a, b = MODELS[ma], MODELS[mb]
            out.append(
                {
                    "path_A": video(a, pid),
                    "path_B": video(b, pid),
                    "A_model": a,
                    "B_model": b,
                    "prompt": f"{tag} {p}: Static camera, a metal ball rolls on a smooth tabletop.",
                    "VQ": LABELS[(p + k + 2) % 3],
                    "MQ": LABELS[(p + k) % 3],
                    "TA": "same",
                    "Overall": LABELS[(p + k + 1) % 3],
                    "fps_A": 8.0 if a == "gen3" else 24.0,
                    "num_frames_A": FRAMES,
                    "fps_B": 8.0 if b == "gen3" else 24.0,
                    "num_frames_B": FRAMES,
                }
            )
    return out


def write(root: Path, tag: str = "a", prompts: int = 2, zipped: bool = True, folder: str = ".") -> Path:
    """The dataset download under ``root``: card, .gitattributes, the CSV and ``videos.zip`` (``zipped``)
    or the ``videos/`` it unzips to, all under ``root/folder``. Returns ``root``."""
    base = Path(root) / folder
    base.mkdir(parents=True, exist_ok=True)
    recs = rows(tag, prompts)
    vids = sorted({r[k] for r in recs for k in ("path_A", "path_B")})
    stage = Path(root) / "_stage" if zipped else base
    for v in vids:
        clip(stage / v, f"vgrbpub/{v}", violate="gen3" in v)
    if zipped:
        with zipfile.ZipFile(base / ZIP_NAME, "w") as z:
            for v in vids:
                z.write(stage / v, v)
        shutil.rmtree(stage)
    pd.DataFrame(recs, columns=COLUMNS).to_csv(base / CSV_NAME, index=False)
    (base / "README.md").write_text(CARD, encoding="utf-8")
    (base / ".gitattributes").write_text(GITATTRIBUTES, encoding="utf-8")
    return Path(root)


def videoalign(root: Path, tag: str = "a", prompts: int = 2) -> Path:
    """The layout ``eval_videogen_rewardbench.py`` reads: ``datasets/eval/{videogen-rewardbench.csv,
    videos/<model>/<model>_<id>.mp4}`` in a VideoAlign checkout."""
    return write(root, tag, prompts, zipped=False, folder="datasets/eval")


def git_clone(root: Path, tag: str = "a", prompts: int = 2) -> Path:
    """VideoAlign's README: ``git clone`` of the dataset (with git-lfs) under ``dataset/``: the zip, the CSV
    and the card in ``dataset/VideoGen-RewardBench/``, beside a ``.git/`` holding the LFS object of the zip."""
    write(root, tag, prompts, folder="dataset/VideoGen-RewardBench")
    clone = Path(root) / "dataset" / "VideoGen-RewardBench"
    oid = hashlib.sha256((clone / ZIP_NAME).read_bytes()).hexdigest()
    obj = clone / ".git" / "lfs" / "objects" / oid[:2] / oid[2:4] / oid
    obj.parent.mkdir(parents=True)
    shutil.copy(clone / ZIP_NAME, obj)
    (clone / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    return Path(root)


def hub_cache(cache: Path, tag: str = "a", prompts: int = 2) -> Path:
    """``snapshot_download`` into a hub cache (files as links into ``blobs/``); returns the snapshot folder."""
    staged = write(cache / "_staged", tag, prompts)
    repo = cache / "datasets--KwaiVGI--VideoGen-RewardBench"
    snap = repo / "snapshots" / ("89761f4" + "0" * 33)
    (repo / "blobs").mkdir(parents=True)
    snap.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(snap.name)
    for f in sorted(p for p in staged.iterdir() if p.is_file()):
        blob = repo / "blobs" / hashlib.sha256(f.read_bytes()).hexdigest()
        shutil.move(f, blob)
        os.symlink(os.path.relpath(blob, snap), snap / f.name)
    shutil.rmtree(staged)
    return snap
