"""Tiny copies of the PhyDetEx releases with the names, nesting and files a user finds, and real mp4s.

What the authors publish and how their scripts read it (primary sources):

- ``Zeqing-Wang/PhyDetEx`` ``README.md``: download ``PID_Test_split.zip`` from Hugging Face
  ``NNaptmn/PhyDetExDatasets``, place it in ``Data/PID_test`` and organise it as
  ``PID_test/{pos/video_xxx.mp4, neg/video_xxx.mp4, anno_file.json}``; the ImpossibleVideos subset is
  ``ImpossibleVideos_Physical_Law_Only.zip`` from the same dataset.
- ``benchmark_on_pid_test_split.py``: ``./Data/pid_test/neg`` (implausible), ``./Data/pid_test/pos``
  (real), listed with ``os.listdir`` (lower-case ``pid_test``).
- ``infer_llm_score_for_pid_test_lmdeploy.py``: ``./Data/PID_test/anno_file.json``, a list of
  ``{"video_name", "anno"}`` (upper-case ``PID_test``).
- ``benchmark_on_impossible_videos.py`` (and ``PreliminaryInvestigation/*``):
  ``./Data/ImpossibleVideos/physical_law_impossible_only`` (implausible) and
  ``./Data/ImpossibleVideos/real_world_videos`` (real).
- ``infer_llm_score_for_impossible_video_lmdeploy.py``: ``./Data/ImpossibleVideos/openqa_answer.json``,
  read as ``anno_json[video_file_name]['primary_answer']``.
- ``showlab/Impossible-Videos`` ``openqa_answer.json``: ``{<file name>: {"primary_answer": str,
  "alternative_answers": [str, str, str]}}`` over all 899 impossible videos of IPV-Bench (not only
  the physical-law ones); impossible videos are named ``<generator>_<NNNN>_<uuid>.mp4``, real ones
  ``<YouTube id>_<clip>_<start>to<end>.mp4`` (``judgement_answer.json``).
- The Hugging Face dataset card is a license only (``README.md``: ``license: mit``).

The nesting inside each zip is not stated by the authors: ``inner`` chooses it (the README's
``PID_test/`` by default, the scripts' ``ImpossibleVideos/`` for the other).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import zipfile
from pathlib import Path

from dataset_fixtures import clip

CARD = "---\nlicense: mit\n---\n"
PID_ZIP = "PID_Test_split.zip"
IV_ZIP = "ImpossibleVideos_Physical_Law_Only.zip"
GENERATORS = ("hunyuan", "mochi", "sora", "kling")


def _zip(stage: Path, archive: Path) -> Path:
    with zipfile.ZipFile(archive, "w") as z:
        for p in sorted(stage.rglob("*")):
            if p.is_file():
                z.write(p, p.relative_to(stage).as_posix())
    shutil.rmtree(stage)
    return archive


def pid_tree(folder: Path, tag: str = "a", n: int = 2) -> Path:
    """``folder/{pos,neg}/*.mp4`` and ``anno_file.json`` explaining each ``neg/`` video."""
    annos = []
    for i in range(n):
        clip(folder / "pos" / f"video_{tag}{i:03d}.mp4", f"pid/{tag}/pos/{i}")
        name = f"video_{tag}{i + 500:03d}.mp4"
        clip(folder / "neg" / name, f"pid/{tag}/neg/{i}", violate=True)
        annos.append({"video_name": name, "anno": f"The ball {tag}{i} passes through the floor."})
    (folder / "anno_file.json").write_text(json.dumps(annos, indent=4), encoding="utf-8")
    return folder


def iv_tree(folder: Path, tag: str = "a", n: int = 2) -> Path:
    """``folder/{physical_law_impossible_only,real_world_videos}/*.mp4`` and ``openqa_answer.json`` holding
    the subset's videos and one IPV-Bench video outside it (a social-law one, as the full file does)."""
    answers = {}
    for i in range(n):
        clip(folder / "real_world_videos" / f"Yt{tag}Clip{i:03d}_{i + 3}_0to1{i}0.mp4", f"iv/{tag}/real/{i}")
        name = f"{GENERATORS[i % 4]}_{i:04d}_{tag}0000000-0000-4000-8000-00000000000{i}.mp4"
        clip(folder / "physical_law_impossible_only" / name, f"iv/{tag}/imp/{i}", violate=True)
        answers[name] = {
            "primary_answer": f"The cup {tag}{i} moves by itself without any external force.",
            "alternative_answers": [
                f"The cup {tag}{i} slides with nothing pushing it.",
                "No force acts on the cup, yet it moves.",
                "The cup's motion has no cause, which is impossible.",
            ],
        }
    answers[f"sora_9999_{tag}ffffff-0000-4000-8000-000000000000.mp4"] = {
        "primary_answer": "A truck comes out of a hole that then closes.",
        "alternative_answers": [],
    }
    (folder / "openqa_answer.json").write_text(json.dumps(answers, indent=4), encoding="utf-8")
    return folder


def hf_download(root: Path) -> Path:
    """What ``huggingface-cli download NNaptmn/PhyDetExDatasets --local-dir root`` leaves beside the zips."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "README.md").write_text(CARD, encoding="utf-8")
    (root / ".gitattributes").write_text("*.zip filter=lfs diff=lfs merge=lfs -text\n", encoding="utf-8")
    return root


def pid_zip(root: Path, tag: str = "a", n: int = 2, inner: str | None = "PID_test") -> Path:
    """``root/PID_Test_split.zip`` (with the card) holding ``inner/{pos,neg,anno_file.json}`` (None: at the top)."""
    stage = root / "_stage"
    pid_tree(stage / inner if inner else stage, tag, n)
    _zip(stage, hf_download(root) / PID_ZIP)
    return root


def iv_zip(root: Path, tag: str = "a", n: int = 2, inner: str | None = "ImpossibleVideos") -> Path:
    """``root/ImpossibleVideos_Physical_Law_Only.zip`` holding ``inner/{physical_law_impossible_only,
    real_world_videos,openqa_answer.json}`` (None: at the top)."""
    stage = root / "_stage"
    iv_tree(stage / inner if inner else stage, tag, n)
    _zip(stage, hf_download(root) / IV_ZIP)
    return root


def data_dir(
    root: Path, tag: str = "a", n: int = 2, pid_folder: str = "pid_test", nested: bool = False, iv: bool = True
) -> Path:
    """The authors' ``Data/`` unzipped as their scripts read it: ``Data/<pid_folder>/`` (``pid_test`` for
    ``benchmark_on_pid_test_split.py``, ``PID_test`` for the README; ``nested``: the zip extracted where the
    README places it, ``Data/PID_test/PID_test/``) and ``Data/ImpossibleVideos/``."""
    pid_tree(root / "Data" / ("PID_test" if nested else "") / pid_folder, tag, n)
    if iv:
        iv_tree(root / "Data" / "ImpossibleVideos", tag, n)
    return root


def hub_cache(cache: Path, tag: str = "a", n: int = 2) -> Path:
    """A Hugging Face hub cache after ``snapshot_download``: both zips and the card as links from
    ``snapshots/<rev>/`` to content-addressed ``blobs/``. Returns the snapshot folder."""
    staged = hf_download(cache / "_staged")
    pid_zip(staged, tag, n)
    iv_zip(staged, tag, n)
    repo = cache / "datasets--NNaptmn--PhyDetExDatasets"
    snap = repo / "snapshots" / ("e71ca16" + "0" * 33)
    (repo / "blobs").mkdir(parents=True)
    snap.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(snap.name)
    for f in sorted(staged.iterdir()):
        blob = repo / "blobs" / hashlib.sha256(f.read_bytes()).hexdigest()
        shutil.move(f, blob)
        os.symlink(os.path.relpath(blob, snap), snap / f.name)
    shutil.rmtree(staged)
    return snap
