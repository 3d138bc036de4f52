"""The generations a leaderboard ranks: which video each generator (and checkpoint) made for each prompt.

Two ways to name them:

- a folder ``ROOT/<generator>/<prompt_id>.<ext>``, or ``ROOT/<generator>/<checkpoint>/<prompt_id>.<ext>`` for
  checkpoints of one generator (a checkpoint folder named ``step_1000``, ``ckpt-2000`` or ``3000`` gives the step);
- a manifest, JSONL or CSV, one row per video: ``generator``, ``prompt_id``, ``video`` (relative to the manifest),
  optionally ``checkpoint`` and ``step``; every other field is a group field (discipline, subject, dimension, task,
  difficulty, ...) read as it comes, so Sci-VBench and SVBench records can be used as they are.

``--prompts FILE`` adds group fields per prompt (a JSONL or CSV with ``prompt_id`` or ``id``). A prompt suite
(``phyprobe.suites``: JSONL records with ``prompt_id``, ``prompt`` and only suite fields) is read as one: its group
fields are each record's ``groups`` with ``paradigm`` and ``difficulty``, not its prompt text or rubrics. A bad row
stops the read with the file, the line and the reason: a generator folder with no videos, a duplicate prompt id, a
row without ``generator``.
"""

from __future__ import annotations

import csv
import json
import os
import re
from pathlib import Path

import pandas as pd

from ..data.manifest import read_jsonl_objects
from ..errors import UserError
from ..io import VIDEO_SUFFIXES

REQUIRED = ("generator", "prompt_id", "video")
RESERVED = ("generator", "checkpoint", "step", "prompt_id", "video", "id", "entry", "encoding", "bits_per_pixel")
PROMPT_KEYS = ("prompt_id", "id")


class GenerationsError(UserError, ValueError):
    """The generations cannot be read; the message names the file (and line) and what is wrong."""


def _step(checkpoint: str) -> float | None:
    m = re.search(r"(\d+)$", checkpoint)
    return float(m.group(1)) if m else None


def entry_name(generator: str, checkpoint: str | None) -> str:
    """What a leaderboard row is called: the generator, or ``generator@checkpoint``."""
    return f"{generator}@{checkpoint}" if checkpoint else generator


def _videos_in(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in VIDEO_SUFFIXES)


def _add(rows: list[dict], seen: dict, row: dict, where: str) -> None:
    key = (row["generator"], row.get("checkpoint") or "", row["prompt_id"])
    if key in seen:
        what = f"generator {row['generator']!r}" + (
            f" checkpoint {row['checkpoint']!r}" if row.get("checkpoint") else ""
        )
        raise GenerationsError(f"{where}: duplicate prompt id {row['prompt_id']!r} for {what} (first: {seen[key]})")
    seen[key] = where
    rows.append(row)


def read_folder(root: Path) -> list[dict]:
    gens = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    if not gens:
        raise GenerationsError(f"{root}: no generator folders (expected ROOT/<generator>/<prompt_id>.mp4)")
    rows: list[dict] = []
    seen: dict = {}
    for g in gens:
        direct = _videos_in(g)
        ckpts = [c for c in sorted(g.iterdir()) if c.is_dir() and not c.name.startswith(".")]
        if direct:
            parts = [(None, direct)]
        else:
            parts = [(c.name, _videos_in(c)) for c in ckpts]
            for name, vids in parts:
                if not vids:
                    raise GenerationsError(
                        f"{g / name}: no videos ({', '.join(VIDEO_SUFFIXES)}) in this checkpoint folder"
                    )
        if not parts:
            raise GenerationsError(f"{g}: no videos ({', '.join(VIDEO_SUFFIXES)}) in this generator folder")
        for ckpt, vids in parts:
            for v in vids:
                row = {"generator": g.name, "prompt_id": v.stem, "video": str(v)}
                if ckpt is not None:
                    row["checkpoint"], row["step"] = ckpt, _step(ckpt)
                _add(rows, seen, row, str(v))
    return rows


def _read_table(path: Path) -> list[tuple[int, dict]]:
    """(line, row) of a JSONL or CSV file; a line that is not an object is an error naming it."""
    try:
        if path.suffix.lower() == ".csv":
            with open(path, encoding="utf-8-sig", newline="") as f:
                return [
                    (i + 2, {k: v for k, v in r.items() if v not in (None, "")})
                    for i, r in enumerate(csv.DictReader(f))
                ]
        return list(read_jsonl_objects(path, "file"))
    except UnicodeDecodeError:
        raise GenerationsError(f"{path}: not UTF-8 text") from None
    except csv.Error as e:
        raise GenerationsError(f"{path}: not a readable CSV ({e})") from None


def _group_value(v):
    """A group field as it comes, scalars kept and anything nested written as JSON, so it can label a table."""
    return v if isinstance(v, (str, int, float, bool)) or v is None else json.dumps(v, sort_keys=True)


def read_manifest(path: Path) -> list[dict]:
    rows: list[dict] = []
    seen: dict = {}
    for line, raw in _read_table(path):
        missing = [k for k in REQUIRED if raw.get(k) in (None, "")]
        if missing:
            raise GenerationsError(f"{path}:{line}: no {' or '.join(repr(k) for k in missing)} in this row")
        video = Path(str(raw["video"]))
        row = {k: _group_value(v) for k, v in raw.items() if k not in RESERVED}
        row.update(
            generator=str(raw["generator"]),
            prompt_id=str(raw["prompt_id"]),
            video=str(video if video.is_absolute() else path.parent / video),
        )
        if raw.get("checkpoint") not in (None, ""):
            row["checkpoint"] = str(raw["checkpoint"])
            try:
                row["step"] = float(raw["step"]) if raw.get("step") not in (None, "") else _step(row["checkpoint"])
            except (TypeError, ValueError):
                raise GenerationsError(f"{path}:{line}: step {raw['step']!r} is not a number") from None
        _add(rows, seen, row, f"{path}:{line}")
    if not rows:
        raise GenerationsError(f"{path}: no rows: a generations manifest names one video per row")
    return rows


def _is_suite(rows: list[tuple[int, dict]]) -> bool:
    """Whether a JSONL file's first row is a prompt-suite record: ``prompt_id`` and ``prompt``, suite fields only."""
    from ..suites.format import FIELDS

    return bool(rows) and {"prompt_id", "prompt"} <= set(rows[0][1]) and set(rows[0][1]) <= set(FIELDS)


def read_prompts(path: Path) -> dict[str, dict]:
    """``{prompt_id: group fields}`` from a JSONL or CSV file keyed by ``prompt_id`` (or ``id``), or a prompt suite."""
    rows = _read_table(path)
    if path.suffix.lower() != ".csv" and _is_suite(rows):
        from ..suites.format import read_suite

        return {r.prompt_id: {k: v for k, v in r.group_fields().items() if k not in RESERVED} for r in read_suite(path)}
    out: dict[str, dict] = {}
    for line, raw in rows:
        key = next((k for k in PROMPT_KEYS if raw.get(k) not in (None, "")), None)
        if key is None:
            raise GenerationsError(f"{path}:{line}: no prompt id (expected one of {list(PROMPT_KEYS)})")
        pid = str(raw[key])
        if pid in out:
            raise GenerationsError(f"{path}:{line}: duplicate prompt id {pid!r}")
        out[pid] = {k: _group_value(v) for k, v in raw.items() if k not in RESERVED}
    return out


def read_generations(source: str | os.PathLike, prompts: str | os.PathLike | None = None) -> pd.DataFrame:
    """One row per video: ``id`` (``generator[/checkpoint]/prompt_id``), ``entry``, ``generator``, ``checkpoint``,
    ``step``, ``prompt_id``, ``video`` and the group fields."""
    src = Path(source)
    if src.is_dir():
        rows = read_folder(src)
    elif src.is_file() and src.suffix.lower() in (".jsonl", ".csv"):
        rows = read_manifest(src)
    elif not src.exists():
        raise GenerationsError(f"{src}: no such folder or manifest")
    else:
        raise GenerationsError(f"{src}: expected a folder of generator folders or a .jsonl / .csv manifest")
    if prompts is not None:
        groups = read_prompts(Path(prompts))
        unknown = sorted({r["prompt_id"] for r in rows} - set(groups))
        if unknown:
            raise GenerationsError(f"{prompts}: no row for prompt id(s) {unknown[:5]} of the generations")
        rows = [{**groups[r["prompt_id"]], **r} for r in rows]
    df = pd.DataFrame(rows)
    if "checkpoint" not in df:
        df["checkpoint"] = None
    if "step" not in df:
        df["step"] = None
    df["checkpoint"] = df["checkpoint"].astype(object).where(df["checkpoint"].notna(), None)
    for field_ in ("generator", "checkpoint"):  # the separators of entries and ids: names with them would collide
        bad = next((v for v in df[field_] if isinstance(v, str) and ("/" in v or "@" in v)), None)
        if bad is not None:
            raise GenerationsError(
                f"{src}: {field_} {bad!r} holds '/' or '@', which separate a generator, its "
                "checkpoint and a prompt in the leaderboard's ids; rename it"
            )
    df["entry"] = [entry_name(g, c) for g, c in zip(df["generator"], df["checkpoint"])]
    df["id"] = [f"{e.replace('@', '/')}/{p}" for e, p in zip(df["entry"], df["prompt_id"])]
    dup = df["id"][df["id"].duplicated()]
    if len(dup):
        raise GenerationsError(f"{src}: two videos for {dup.iloc[0]!r} (a generator, checkpoint and prompt once each)")
    first = ["id", "entry", "generator", "checkpoint", "step", "prompt_id", "video"]
    return df[first + [c for c in df.columns if c not in first]].reset_index(drop=True)


def with_encodings(gens: pd.DataFrame) -> pd.DataFrame:
    """``gens`` with each video's ``encoding`` (codec and pixel format, e.g. ``h264 yuv420p``; ``unreadable`` when
    the file cannot be probed, which its evaluators report) and ``bits_per_pixel`` (per frame: a quality proxy).
    A scorer's raw score moves with the encoding alone (docs/studies/codec-invariance.md), so a comparison of
    generators that come in different encodings is partly a comparison of encodings."""
    from ..io.video import probe

    enc, bpp = [], []
    for v in gens["video"]:
        try:
            info = probe(v)
        except Exception:  # noqa: BLE001 - any unreadable file: its evaluators give the reason per video
            enc.append("unreadable")
            bpp.append(float("nan"))
            continue
        enc.append(" ".join(x for x in (info["codec"], info["pix_fmt"]) if x))
        bpp.append(info["bits_per_pixel"])
    return gens.assign(encoding=enc, bits_per_pixel=bpp)


def group_fields(df: pd.DataFrame) -> list[str]:
    """The columns that can break a leaderboard down (everything but the reserved fields)."""
    return [c for c in df.columns if c not in RESERVED]
