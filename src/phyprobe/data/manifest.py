"""The one pair-manifest format every data source is converted into.

A manifest is a directory with two JSON-lines tables:

``videos.jsonl`` — one row per video
    ``id`` (str, unique), ``path`` (str, relative to the manifest directory or absolute),
    ``source`` (str), ``is_real`` (bool), ``magnitude`` (float in [0, 1] or null: how severe the
    violation is on the common scale), ``anchor`` (0, 1 or null: calibration target),
    ``split`` (str), ``metadata`` (object, free-form: scene seed, violation family, severity, ...).

``pairs.jsonl`` — one row per supervised comparison
    ``a``, ``b`` (video ids), ``label`` (float in [0, 1] = P(a is more violating than b); 0.5 is a
    tie), ``weight`` (float in [1e-6, 1e6]: see ``MIN_WEIGHT``), ``source`` (str), ``correspondence`` (``same_scene``,
    ``same_prompt``, ``same_first_frame`` or ``none``), ``kind`` (``real_vs_generated``,
    ``generated_vs_generated``, ``real_vs_real``, ...), ``split`` (str).

JSON lines rather than parquet so that manifests diff, stream and stay byte-identical for a seed.
Validation happens on load and names the file, the line and what is wrong: a bad manifest must
never train silently.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import pandas as pd

from ..errors import UserError, json_error_reason

VIDEOS_FILE = "videos.jsonl"
PAIRS_FILE = "pairs.jsonl"

VIDEO_FIELDS = ("id", "path", "source", "is_real", "magnitude", "anchor", "split", "metadata")
PAIR_FIELDS = ("a", "b", "label", "weight", "source", "correspondence", "kind", "split")
CORRESPONDENCES = ("same_scene", "same_prompt", "same_first_frame", "none")
# A pair's weight is its share in a weighted mean of the ranking loss, computed in float32 (the training batches'
# dtype): 1e308 becomes inf there and every loss NaN, and 1e-300 becomes 0. Within [1e-6, 1e6] a weight stays exact
# enough in float32 and a batch's sum stays far from overflow (1e6 x any realistic batch < 1e38), while a ratio of
# 1e12 between two pairs is already far beyond any meaningful re-weighting.
MIN_WEIGHT, MAX_WEIGHT = 1e-6, 1e6


class ManifestError(UserError, ValueError):
    """A manifest row is malformed; the message names the file, the line and the problem."""


def _fail(file: Path, line: int | None, msg: str) -> None:
    where = f"{file}" if line is None else f"{file}:{line}"
    raise ManifestError(f"{where}: {msg}")


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _validate_video(row: dict, file: Path, line: int) -> dict:
    missing = [k for k in ("id", "path", "source", "is_real") if k not in row]
    if missing:
        _fail(file, line, f"video row is missing required field(s) {missing}")
    unknown = set(row) - set(VIDEO_FIELDS)
    if unknown:
        _fail(file, line, f"video row has unknown field(s) {sorted(unknown)}; allowed: {VIDEO_FIELDS}")
    if not isinstance(row["id"], str) or not row["id"]:
        _fail(file, line, f"'id' must be a non-empty string, got {row['id']!r}")
    if not isinstance(row["path"], str) or not row["path"]:
        _fail(file, line, f"'path' must be a non-empty string, got {row['path']!r}")
    if not isinstance(row["is_real"], bool):
        _fail(file, line, f"'is_real' must be true/false, got {row['is_real']!r}")
    mag = row.get("magnitude")
    if mag is not None and (not _is_number(mag) or not 0.0 <= mag <= 1.0):
        _fail(file, line, f"'magnitude' must be null or a number in [0, 1], got {mag!r}")
    anchor = row.get("anchor")
    if anchor is not None and (isinstance(anchor, bool) or anchor not in (0, 1)):  # true == 1 in Python, not here
        _fail(file, line, f"'anchor' must be null, 0 or 1, got {json.dumps(anchor)}")
    meta = row.get("metadata", {})
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        _fail(file, line, f"'metadata' must be an object, got {type(meta).__name__}")
    return {
        "id": row["id"],
        "path": row["path"],
        "source": str(row["source"]),
        "is_real": row["is_real"],
        "magnitude": None if mag is None else float(mag),
        "anchor": None if anchor is None else int(anchor),
        "split": str(row.get("split", "train")),
        "metadata": meta,
    }


def _validate_pair(row: dict, file: Path, line: int, ids: set[str]) -> dict:
    missing = [k for k in ("a", "b", "label") if k not in row]
    if missing:
        _fail(file, line, f"pair row is missing required field(s) {missing}")
    unknown = set(row) - set(PAIR_FIELDS)
    if unknown:
        _fail(file, line, f"pair row has unknown field(s) {sorted(unknown)}; allowed: {PAIR_FIELDS}")
    for k in ("a", "b"):
        if not isinstance(row[k], str):
            _fail(file, line, f"pair field '{k}' must be a video id (a string), got {json.dumps(row[k])}")
        if row[k] not in ids:
            _fail(file, line, f"pair field '{k}' = {row[k]!r} is not a video id in {VIDEOS_FILE}")
    if row["a"] == row["b"]:
        _fail(file, line, f"pair compares video {row['a']!r} with itself")
    label = row["label"]
    if not _is_number(label) or not 0.0 <= label <= 1.0:
        _fail(file, line, f"'label' must be a number in [0, 1] (P(a more violating than b)), got {label!r}")
    weight = row.get("weight", 1.0)
    if not _is_number(weight) or not MIN_WEIGHT <= weight <= MAX_WEIGHT:
        _fail(file, line, f"'weight' must be a positive number in [{MIN_WEIGHT:g}, {MAX_WEIGHT:g}], got {weight!r}")
    corr = row.get("correspondence", "none")
    if corr not in CORRESPONDENCES:
        _fail(file, line, f"'correspondence' must be one of {CORRESPONDENCES}, got {corr!r}")
    return {
        "a": row["a"],
        "b": row["b"],
        "label": float(label),
        "weight": float(weight),
        "source": str(row.get("source", "")),
        "correspondence": corr,
        "kind": str(row.get("kind", "")),
        "split": str(row.get("split", "train")),
    }


def _check_video_file(root: Path, path: str, file: Path, line: int) -> None:
    from ..io.video import VideoDecodeError, check_readable_file

    try:
        check_readable_file(Path(path) if Path(path).is_absolute() else root / path)
    except VideoDecodeError as e:
        _fail(file, line, f"video file {path!r}: {e.reason}")


def read_jsonl_objects(file: Path, what: str = "manifest table") -> Iterable[tuple[int, dict]]:
    """(line number, object) of each non-blank line of a JSON-lines file; a line that is not UTF-8, not JSON or not
    an object stops the read with the file, the line and the reason."""
    if not file.is_file():
        raise ManifestError(f"{file}: {what} not found")
    with open(file, "rb") as f:
        for i, raw in enumerate(f, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                _fail(file, i, f"not valid UTF-8 (byte 0x{raw[e.start]:02x} at column {e.start + 1})")
            if not text.strip():
                continue
            try:
                row = json.loads(text)
            except (ValueError, RecursionError) as e:
                _fail(file, i, json_error_reason(e))
            if not isinstance(row, dict):
                _fail(file, i, f"expected a JSON object, got {type(row).__name__}")
            yield i, row


def metadata_field(videos: pd.DataFrame, key: str, default: Any = None) -> pd.Series:
    """One key of every video's ``metadata`` (``default`` where a video lacks it)."""
    return videos["metadata"].map(lambda d: d.get(key, default) if isinstance(d, dict) else default)


def one_of(values: pd.Series, want: Any) -> pd.Series:
    """Which ``values`` equal ``want`` (one value) or one of its values (a list); None: all of them."""
    if want is None:
        return pd.Series(True, index=values.index)
    return values.isin([want] if isinstance(want, (str, int, float, bool, np.generic)) else list(want))


@dataclass
class Manifest:
    """Videos and pairs of one data source (or a merge of several), validated."""

    videos: pd.DataFrame
    pairs: pd.DataFrame
    root: Path

    @classmethod
    def load(cls, root: str | os.PathLike, check_files: bool = False) -> "Manifest":
        root = Path(root)
        if root.is_file():
            raise ManifestError(
                f"{root}: is a file; a manifest is the directory that holds {VIDEOS_FILE} and {PAIRS_FILE}"
            )
        vfile, pfile = root / VIDEOS_FILE, root / PAIRS_FILE
        videos, seen = [], set()
        for line, row in read_jsonl_objects(vfile):
            v = _validate_video(row, vfile, line)
            if v["id"] in seen:
                _fail(vfile, line, f"duplicate video id {v['id']!r}")
            seen.add(v["id"])
            if check_files:
                _check_video_file(root, v["path"], vfile, line)
            videos.append(v)
        if not videos:
            _fail(vfile, None, "no videos")
        pairs = (
            [_validate_pair(row, pfile, line, seen) for line, row in read_jsonl_objects(pfile)]
            if pfile.exists()
            else []
        )
        return cls(
            videos=pd.DataFrame(videos, columns=list(VIDEO_FIELDS)),
            pairs=pd.DataFrame(pairs, columns=list(PAIR_FIELDS)),
            root=root,
        )

    def save(self, root: str | os.PathLike | None = None) -> Path:
        """Write both tables atomically (temp file + rename), deterministically ordered as given."""
        root = Path(root) if root is not None else self.root
        root.mkdir(parents=True, exist_ok=True)
        for name, df, fields in ((VIDEOS_FILE, self.videos, VIDEO_FIELDS), (PAIRS_FILE, self.pairs, PAIR_FIELDS)):
            write_jsonl(root / name, (_clean(r, fields) for r in df.to_dict("records")))
        return root

    def video_path(self, video_id_or_path: str) -> Path:
        p = Path(video_id_or_path)
        return p if p.is_absolute() else self.root / p

    def paths(self) -> list[Path]:
        return [self.video_path(p) for p in self.videos["path"]]

    def keep(self, videos) -> "Manifest":
        """The videos selected by the boolean mask ``videos``, and the pairs whose two videos both stay."""
        v = self.videos[np.asarray(videos, dtype=bool)].reset_index(drop=True)
        ids = set(v["id"])
        p = self.pairs[self.pairs["a"].isin(ids) & self.pairs["b"].isin(ids)]
        return Manifest(videos=v, pairs=p.reset_index(drop=True), root=self.root)

    def matching(self, where: dict[str, Any]) -> np.ndarray:
        """Boolean mask of the videos that match every entry of ``where``: a video column or a metadata key
        -> a value or a list of values (a video without that metadata key matches none); None matches all."""
        keep = np.ones(len(self.videos), dtype=bool)
        for key, want in where.items():
            col = self.videos[key] if key in self.videos.columns else metadata_field(self.videos, key)
            keep &= one_of(col, want).to_numpy()
        return keep

    def split(self, *names: str) -> "Manifest":
        """The videos and pairs of the given split(s); pairs keep only videos that stay."""
        m = self.keep(self.videos["split"].isin(names))
        return Manifest(
            videos=m.videos, pairs=m.pairs[m.pairs["split"].isin(names)].reset_index(drop=True), root=self.root
        )

    def __len__(self) -> int:
        return len(self.videos)


def _clean(row: dict, fields: tuple[str, ...]) -> dict:
    out = {}
    for k in fields:
        v = row.get(k)
        if isinstance(v, float) and math.isnan(v):
            v = None
        if k == "anchor" and v is not None:
            v = int(v)  # pandas turns a column with nulls into floats
        out[k] = v
    return out


def write_jsonl(path: Path, rows: Iterable[dict]) -> None:
    """Atomic JSON-lines write: readers never see a half-written table."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, sort_keys=False, separators=(",", ":")) + "\n")
    os.replace(tmp, path)
