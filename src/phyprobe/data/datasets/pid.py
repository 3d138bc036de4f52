"""PhyDetEx (``Zeqing-Wang/PhyDetEx``, data on Hugging Face ``NNaptmn/PhyDetExDatasets``): the PID test
split and the physical-law subset of ImpossibleVideos, as the authors release and read them.

``subset=pid`` (default): ``PID_Test_split.zip``, unzipped into ``PID_test/`` (README) which the authors'
``benchmark_on_pid_test_split.py`` reads as ``./Data/pid_test/{pos,neg}`` and
``infer_llm_score_for_pid_test_lmdeploy.py`` as ``./Data/PID_test/anno_file.json``: the folder name is
matched without regard to case. ``pos/`` holds plausible real videos, ``neg/`` implausible generated
ones, ``anno_file.json`` a JSON list of ``{"video_name", "anno"}`` explaining each ``neg/`` video.
500 videos as published (checked).

``subset=impossible_videos``: ``ImpossibleVideos_Physical_Law_Only.zip``, read by
``benchmark_on_impossible_videos.py`` as ``./Data/ImpossibleVideos/{physical_law_impossible_only,
real_world_videos}`` and by ``infer_llm_score_for_impossible_video_lmdeploy.py`` with
``./Data/ImpossibleVideos/openqa_answer.json``: the folder holding ``physical_law_impossible_only/``
is found whatever it is called. ``physical_law_impossible_only/`` are implausible generated videos,
``real_world_videos/`` plausible real ones; ``openqa_answer.json`` (IPV-Bench's open-QA answers,
``{file name: {"primary_answer", "alternative_answers"}}``) explains implausible videos it names
and may list more videos than the subset holds. No count is stated by the authors.

Either is used unzipped where it is (zipped: extracted once under ``OUT/unzipped/``). Real videos
anchor at 0 (magnitude 0), implausible ones at 1. The benchmark has no pairs; for training, each
implausible video is paired with one real video (round robin, no correspondence).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .base import (
    EXTRACTED,
    VIDEO_EXTENSIONS,
    ConversionError,
    ManifestWriter,
    check_count,
    existing,
    extract_once,
    fail,
    pair_frame,
    read_json_records,
    video_frame,
)

NAME = "pid"
SKIP_DIRS = {"__MACOSX", ".git"}  # macOS zips carry __MACOSX/<same tree>/._name resource forks


@dataclass(frozen=True)
class Layout:
    """One released subset: its zip, its folder and what the folder holds."""

    title: str
    archive: str  # as released; matched without regard to case
    # the folder's names in the authors' README and scripts, matched without regard to case; empty: any name
    folders: tuple[str, ...]
    plausible: str  # sub-folder of plausible real videos (anchor 0)
    implausible: str  # sub-folder of implausible generated videos (anchor 1)
    answers: str  # explanations of the implausible videos, beside the two sub-folders
    expected: int | None  # videos in both sub-folders as the authors state them

    def expected_text(self) -> str:
        folder = " or ".join(f"{f}/" for f in self.folders) if self.folders else "its folder (any name)"
        return (
            f"{self.archive}, or {folder} holding {self.plausible}/ (plausible) and {self.implausible}/ "
            f"(implausible) videos and {self.answers}"
        )


SUBSETS = {
    "pid": Layout(
        "PID test split", "PID_Test_split.zip", ("PID_test", "pid_test"), "pos", "neg", "anno_file.json", 500
    ),
    "impossible_videos": Layout(
        "ImpossibleVideos physical-law subset",
        "ImpossibleVideos_Physical_Law_Only.zip",
        (),
        "real_world_videos",
        "physical_law_impossible_only",
        "openqa_answer.json",
        None,
    ),
}


# ---------------------------------------------------------------------------------------------
# finding the released folder


def _walk(base: Path, exclude: Path | None):
    """``(dir, sub-folder names, file names)`` under ``base``, following links once, without ``exclude``
    (the conversion's own output), archives an earlier conversion extracted (say a train and a test
    conversion written under ``--root``) and macOS resource-fork folders."""
    seen = set()
    skip = os.path.realpath(exclude) if exclude is not None else None
    for dirpath, dirnames, filenames in os.walk(base, followlinks=True):
        real = os.path.realpath(dirpath)
        extracted = dirpath != str(base) and (
            EXTRACTED in filenames or (Path(dirpath).parent.name == "unzipped" and dirpath.endswith(".tmp"))
        )
        if real in seen or real == skip or extracted:
            dirnames[:] = []
            continue
        seen.add(real)
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        yield Path(dirpath), dirnames, filenames


def _is_folder(path: Path, subdirs: list[str], layout: Layout, anywhere: bool) -> bool:
    """``path`` is the released folder: it holds the video sub-folders (the implausible one for a folder of
    any name) and, when the authors' scripts name it, is called so (``anywhere``: ``--root`` itself, or the
    top of an extracted archive, may hold the sub-folders directly)."""
    if not layout.folders:
        return layout.implausible in subdirs
    has = layout.plausible in subdirs or layout.implausible in subdirs
    return has and (anywhere or path.name.lower() in {f.lower() for f in layout.folders})


def _folders(base: Path, layout: Layout, exclude: Path | None) -> list[Path]:
    return [p for p, dirs, _ in _walk(base, exclude) if _is_folder(p, dirs, layout, p == base)]


def _archives(base: Path, name: str, exclude: Path | None) -> list[Path]:
    return [p / f for p, _, files in _walk(base, exclude) for f in sorted(files) if f.lower() == name.lower()]


def _one(paths: list[Path], what: str, root: Path) -> Path | None:
    if len(paths) > 1:
        raise ConversionError(f"{root}: several {what}: {[str(p) for p in paths]}; point --root at the one you mean")
    return paths[0] if paths else None


def locate(root: Path, out: Path, subset: str) -> tuple[Path, Path | None]:
    """The released folder of ``subset`` under ``root`` and the archive it came from (None: unzipped)."""
    layout = SUBSETS[subset]
    root, out = Path(root), Path(out)
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: dataset root does not exist")
    folder = _one(_folders(root, layout, out), f"folders could be the {layout.title}", root)
    if folder is not None:
        return folder, None
    zpath = _one(_archives(root, layout.archive, out), f"archives could be the {layout.title}", root)
    if zpath is None:
        others = [
            f"the {o.title} (--set subset={s})"
            for s, o in SUBSETS.items()
            if s != subset and (_folders(root, o, out) or _archives(root, o.archive, out))
        ]
        hint = f"; found {others[0]} instead" if others else ""
        fail(root, f"no {layout.title} found: expected {layout.expected_text()}{hint}")
    dest = extract_once(zpath, out / "unzipped" / Path(layout.archive).stem)
    folder = _one(_folders(dest, layout, None), f"folders in {zpath.name} could be the {layout.title}", dest)
    if folder is None:
        fail(zpath, f"the archive holds no {layout.title}: expected {layout.expected_text()}")
    return folder, zpath


# ---------------------------------------------------------------------------------------------
# reading it


def _videos_in(folder: Path) -> list[str]:
    """Video files as the authors' scripts list them (``os.listdir``), without hidden and resource-fork files."""
    if not folder.is_dir():
        return []
    return sorted(
        p.name
        for p in folder.iterdir()
        if p.is_file() and not p.name.startswith(".") and p.suffix.lower() in VIDEO_EXTENSIONS
    )


def _pid_annos(path: Path) -> dict[str, dict]:
    """``anno_file.json``: a JSON list of ``{"video_name": <file in neg/>, "anno": <explanation>}``."""
    annos = {}
    for i, r in enumerate(read_json_records(path)):
        if not r.get("video_name"):
            fail(path, "required key missing or empty", row=i, field="video_name")
        annos[str(r["video_name"])] = {"anno": r.get("anno")}
    return annos


def _openqa_answers(path: Path) -> dict[str, dict]:
    """``openqa_answer.json``: ``{<video file name>: {"primary_answer": str, "alternative_answers": [str]}}``,
    the authors' ground truth for the explanation of each impossible video."""
    try:
        data = json.loads(path.read_bytes().decode("utf-8", errors="replace"))
    except json.JSONDecodeError as e:
        fail(path, f"not valid JSON (line {e.lineno}: {e.msg})")
    if not isinstance(data, dict):
        fail(path, f"expected a JSON object keyed by video file name, got {type(data).__name__}")
    answers = {}
    for name, entry in data.items():
        if not isinstance(entry, dict) or not entry.get("primary_answer"):
            fail(path, f"entry {name!r}: required key missing or empty", field="primary_answer")
        answers[str(name)] = {
            "anno": entry["primary_answer"],
            "alternative_answers": entry.get("alternative_answers", []),
        }
    return answers


def convert(root: Path, out: Path, subset: str = "pid", split: str = "test", check_counts: bool = True) -> Path:
    if subset not in SUBSETS:
        raise ValueError(f"pid: subset must be one of {sorted(SUBSETS)}, got {subset!r}")
    layout = SUBSETS[subset]
    folder, zpath = locate(Path(root), Path(out), subset)
    notes = [f"read {folder}" + (f" extracted from {zpath}" if zpath else "")]
    answers_path = folder / layout.answers
    if subset == "pid":
        answers = _pid_annos(answers_path) if answers_path.is_file() else {}
    else:
        answers = _openqa_answers(answers_path) if answers_path.is_file() else {}
    if not answers_path.is_file():
        notes.append(f"{answers_path} not found: implausible videos carry no explanation")
    pos_dir, neg_dir = folder / layout.plausible, folder / layout.implausible
    pos = _videos_in(pos_dir)
    neg = _videos_in(neg_dir)
    if subset == "pid":  # every annotated video belongs to neg/: one without its file is reported missing
        neg = sorted(set(neg) | set(answers))
    elif answers:  # IPV-Bench's answers cover videos outside the physical-law subset: explain, never require
        notes.append(f"{answers_path}: {sum(n in answers for n in neg)} of {len(neg)} implausible videos explained")
    if not pos and not neg:
        fail(folder, f"no videos in {layout.plausible}/ or {layout.implausible}/")
    check_count(
        folder,
        len(pos) + len(neg),
        layout.expected,
        f"videos ({layout.plausible}/ + {layout.implausible}/)",
        check_counts,
    )
    source = NAME if subset == "pid" else subset
    pl, im = layout.plausible, layout.implausible
    v_pos = video_frame(
        [f"{source}:{pl}/{n}" for n in pos],
        existing(pos_dir / n for n in pos),
        source,
        True,
        split,
        magnitude=0.0,
        anchor=0,
        metadata=[{"variant": "plausible", "file": n} for n in pos],
    )
    v_neg = video_frame(
        [f"{source}:{im}/{n}" for n in neg],
        existing(neg_dir / n for n in neg),
        source,
        False,
        split,
        anchor=1,
        metadata=[{"variant": "violated", "file": n, "anno": None, **answers.get(n, {})} for n in neg],
    )
    refs = {"file": str(folder), "row": None}
    with ManifestWriter(out, source) as w:
        w.report.files[str(folder)] = len(pos) + len(neg)
        w.report.notes.extend(notes)
        if pos and neg:
            partner = [v_pos["id"][i % len(pos)] for i in range(len(neg))]
            pairs = pair_frame(v_neg["id"], partner, np.ones(len(neg)), source, "none", "real_vs_generated", split)
        else:
            pairs = None
        w.add(v_pos.assign(ref=[f"{pl}/{n}" for n in pos], **refs))
        w.add(v_neg.assign(ref=[f"{im}/{n}" for n in neg], **refs), pairs)
        return w.close()
