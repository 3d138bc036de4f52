"""What every public-dataset converter shares: finding the published files, reading them as
published, resolving their videos in place, and streaming the pair manifest to disk.

A converter reads its source's files and hands this module DataFrames of videos and pairs; the
writer checks that each video exists (a missing one is reported and left out together with the
pairs that need it, never silently dropped), removes repeated videos, and appends both tables in
chunks, so that a 400k-pair source converts in bounded memory. Whatever was left out is written
to ``conversion_report.json`` beside the manifest.
"""

from __future__ import annotations

import ast
import json
import logging
import math
import os
import shutil
import zipfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Iterable
from urllib.parse import unquote, urlsplit

import numpy as np
import pandas as pd
import yaml

from ..magnitudes import MagnitudeMap
from ..manifest import PAIR_FIELDS, PAIRS_FILE, VIDEO_FIELDS, VIDEOS_FILE

log = logging.getLogger(__name__)

REPORT_FILE = "conversion_report.json"
VIDEO_EXTENSIONS = (".mp4", ".webm", ".mov", ".mkv", ".avi", ".gif", ".m4v")


class ConversionError(ValueError):
    """A published file cannot be converted; the message names the file, the row and the field."""


def fail(file: str | os.PathLike, msg: str, row: int | None = None, field: str | None = None) -> None:
    where = str(file) + (f": row {row}" if row is not None else "") + (f", field {field!r}" if field else "")
    raise ConversionError(f"{where}: {msg}")


# ---------------------------------------------------------------------------------------------
# finding and reading the published files


def find_file(root: Path, names: Iterable[str], what: str, required: bool = True) -> Path | None:
    """The one file under ``root`` whose name is one of ``names`` (glob patterns allowed).

    Searching the tree, not one fixed place, lets ``root`` be the download folder, an unpacked
    archive or a Hugging Face hub cache (``datasets--org--name/snapshots/<rev>/...``). Two matches
    are an error rather than a guess.
    """
    root = Path(root)
    if not root.exists():
        raise FileNotFoundError(f"{root}: dataset root does not exist")
    hits = sorted({p.resolve(): p for n in names for p in root.rglob(n) if p.is_file()}.values())
    if len(hits) > 1:
        raise ConversionError(f"{root}: several files could be the {what}: {[str(h) for h in hits]}; "
                              "point --root at the folder that holds the one you mean")
    if not hits:
        if required:
            raise FileNotFoundError(f"{root}: no {what} found (looked for {list(names)})")
        return None
    return hits[0]


EXTRACTED = ".complete"  # written last into an extracted archive's folder: its absence means a rerun extracts again
MAX_EXPANSION = 50  # an archive's members may add up to this many times its own size (videos barely compress)
FREE_SHARE = 0.9  # of the destination's free disk space, at most, for an archive's members


def check_expansion(zpath: Path, z: zipfile.ZipFile, dest: Path) -> int:
    """The bytes ``z``'s members expand to, refused when they pass :data:`MAX_EXPANSION` times the archive's size
    (a "zip bomb": a 1 MB file declaring a gigabyte) or :data:`FREE_SHARE` of the free space where they would go."""
    total = sum(i.file_size for i in z.infolist())
    size = max(1, zpath.stat().st_size)
    if total > MAX_EXPANSION * size:
        raise ConversionError(
            f"{zpath}: its members expand to {total} bytes, {total / size:.0f} times the archive's {size}; more than "
            f"{MAX_EXPANSION} times is refused (unzip it yourself and point --root at the folder)"
        )
    dest.parent.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(dest.parent).free
    if total > FREE_SHARE * free:
        raise ConversionError(f"{zpath}: its members need {total} bytes and {dest.parent} has {free} free")
    return total


def extract_once(zpath: Path, dest: Path) -> Path:
    """``zpath`` extracted into ``dest`` once, atomically (into a temporary folder, then renamed), each member's CRC
    checked and their total size bounded (:func:`check_expansion`); a failure leaves nothing behind, and a rerun
    finds the marker and skips it."""
    if not (dest / EXTRACTED).exists():
        tmp = dest.with_name(dest.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            with zipfile.ZipFile(zpath) as z:
                check_expansion(zpath, z, dest)
                bad = z.testzip()
                if bad is not None:
                    raise ConversionError(f"{zpath}: member {bad!r} is corrupt")
                z.extractall(tmp)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        shutil.rmtree(dest, ignore_errors=True)
        os.replace(tmp, dest)
        (dest / EXTRACTED).write_text(str(zpath))
    return dest


def unpacked(root: Path, folder: str, archive: str, out: Path) -> Path:
    """``root/.../folder`` as published inside ``archive``: the folder itself if it was unzipped,
    else the archive extracted once under ``out/unzipped`` (the videos live there, the archive is
    not a video file that could be referenced in place)."""
    for p in sorted(Path(root).rglob(folder)):
        if p.is_dir():
            return p
    zpath = find_file(root, [archive], f"{folder}/ folder or {archive}")
    dest = extract_once(zpath, Path(out) / "unzipped" / Path(archive).stem)
    for p in sorted(dest.rglob(folder)):
        if p.is_dir():
            return p
    raise ConversionError(f"{zpath}: the archive holds no {folder}/ folder")


def read_csv(path: Path, required: Iterable[str], **kw):
    """A published CSV as strings (bad UTF-8 bytes replaced, as the authors' files contain some),
    with its required columns checked up front; with ``chunksize``, an iterator of such frames."""
    df = pd.read_csv(path, encoding="utf-8", encoding_errors="replace", dtype=str, keep_default_na=False, **kw)
    if "chunksize" in kw:
        return _checked_chunks(df, required, path)
    require_columns(df, required, path)
    return df


def _checked_chunks(reader, required: Iterable[str], path: Path):
    for i, chunk in enumerate(reader):
        if i == 0:
            require_columns(chunk, required, path)
        yield chunk


def read_table(path: Path) -> pd.DataFrame:
    """A published table in whichever format it came: parquet, CSV, JSON list or JSON lines."""
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        return pd.read_parquet(path)
    if suffix == ".csv":
        return pd.read_csv(path, encoding="utf-8", encoding_errors="replace")
    if suffix in (".json", ".jsonl"):
        return pd.DataFrame(read_json_records(path))
    raise ConversionError(f"{path}: unsupported table format {suffix!r} (parquet, csv, json, jsonl)")


def read_json_records(path: Path) -> list[dict]:
    """A JSON list of objects or JSON lines; a bad line or a non-object record names its position."""
    text = Path(path).read_bytes().decode("utf-8", errors="replace")
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            records = json.loads(text)
        except json.JSONDecodeError as e:
            fail(path, f"not valid JSON (line {e.lineno}: {e.msg})")
    else:
        records = []
        for i, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                try:
                    records.append(json.loads(line))
                except json.JSONDecodeError as e:
                    fail(path, f"line {i} is not valid JSON ({e.msg})")
    for i, r in enumerate(records):
        if not isinstance(r, dict):
            fail(path, f"expected a JSON object, got {type(r).__name__}", row=i)
    return records


def require_columns(df: pd.DataFrame, required: Iterable[str], path: Path) -> None:
    missing = [c for c in required if c not in df.columns]
    if missing:
        fail(path, f"missing column(s) {missing}; found {list(df.columns)}")


def check_count(path: Path, got: int, want: int | None, what: str, check: bool, tolerance: int = 0,
                stated: str | None = None) -> str | None:
    """The authors' published count: a mismatch means a partial download or a different release.
    ``stated``: a figure the authors give only rounded ("26.5k": ``want`` 26,500, ``tolerance`` 50) or differently
    in different places, as they state it; a count off by more than ``tolerance`` is then a one-line warning
    naming the file and both numbers, not an error, and returned (for the conversion report)."""
    if check and want is not None and abs(got - want) > tolerance and stated is not None:
        msg = f"{path}: found {got} {what}, published: {stated} (partial download or another release?)"
        log.warning("%s", msg)
        return msg
    if check and want is not None and abs(got - want) > tolerance:
        raise ConversionError(f"{path}: expected {want} {what} as published, found {got} "
                              "(partial download or another release? pass --no-check-counts to convert anyway)")
    return None


def parse_int(series: pd.Series, path: Path, field_name: str, lo: int, hi: int, row_offset: int = 1) -> np.ndarray:
    """Integer ratings in [lo, hi]; the first bad value names its row (1-based data row) and field."""
    num = pd.to_numeric(series, errors="coerce")
    bad = num.isna() | (num != num.round()) | (num < lo) | (num > hi)
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        fail(path, f"{series.iloc[i]!r} is not an integer in [{lo}, {hi}]", row=i + row_offset, field=field_name)
    return num.to_numpy(dtype=np.int64)


def parse_list_literal(value: Any, path: Path, row: int, field_name: str) -> list:
    """A Python list literal as the authors wrote it (``"['rule a', 'rule b']"``); empty -> []."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or not str(value).strip():
        return []
    if isinstance(value, list):
        return value
    try:
        parsed = ast.literal_eval(str(value))
    except (ValueError, SyntaxError):
        fail(path, f"not a list literal: {str(value)[:80]!r}", row=row, field=field_name)
    if isinstance(parsed, (tuple, set)):
        parsed = list(parsed)
    if not isinstance(parsed, list):
        fail(path, f"expected a list literal, got {type(parsed).__name__}", row=row, field=field_name)
    return parsed


def parse_truthy(value: Any) -> bool:
    return str(value).strip().lower() in ("1", "true", "yes", "1.0")


# ---------------------------------------------------------------------------------------------
# magnitude maps


def load_magnitude_map(name: str, spec: str | os.PathLike | dict | None, configs: str | os.PathLike | None) -> MagnitudeMap:
    """The source's map from ``spec`` (a YAML path or a mapping), default ``configs/magnitudes/NAME.yaml``."""
    if isinstance(spec, dict):
        return MagnitudeMap.from_dict(spec, where=f"magnitude map {name}")
    if spec is None:
        from ...config_files import config_dir

        spec = (Path(configs) if configs else config_dir()) / "magnitudes" / f"{name}.yaml"
    path = Path(spec)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: magnitude map for {name} not found (pass --magnitudes)")
    with open(path, encoding="utf-8") as f:
        return MagnitudeMap.from_dict(yaml.safe_load(f), where=str(path))


# ---------------------------------------------------------------------------------------------
# videos referenced in place


class VideoIndex:
    """The video files under a folder, findable by a published reference that is not a path.

    Some sources name videos by URL (VideoPhy-2) or by bare file name/stem (VideoFeedback2,
    Rapidata) while the download puts them in folders of its own. A reference resolves to the file
    sharing its name with the longest common trailing path, so ``.../wan_hard/a.mp4`` finds
    ``videos/wan_hard/a.mp4`` and not ``videos/cogvideo/a.mp4``; an unresolvable tie is missing.
    """

    def __init__(self, folder: Path | None):
        self.folder = Path(folder) if folder is not None else None
        self._by_name: dict[str, list[PurePosixPath]] | None = None

    def _index(self) -> dict[str, list[PurePosixPath]]:
        if self._by_name is None:
            self._by_name = defaultdict(list)
            if self.folder is not None and self.folder.is_dir():
                for dirpath, _, files in os.walk(self.folder):
                    rel = PurePosixPath(Path(dirpath).relative_to(self.folder).as_posix())
                    for f in files:
                        if f.lower().endswith(VIDEO_EXTENSIONS):
                            p = rel / f
                            self._by_name[f].append(p)
                            self._by_name.setdefault(Path(f).stem, []).append(p)
        return self._by_name

    def resolve(self, ref: str) -> str | None:
        """Absolute path of the file ``ref`` (URL, relative path, file name or stem) names, or None."""
        if self.folder is None or not ref:
            return None
        parts = ref_parts(ref)
        direct = self.folder.joinpath(*parts)
        if direct.is_file():
            return str(direct.resolve())
        cands = self._index().get(parts[-1], [])
        if not cands:
            return None

        def common_tail(p: PurePosixPath) -> int:
            n = 0
            for x, y in zip(reversed(p.parts), reversed(parts)):
                if x != y and Path(x).stem != y:
                    break
                n += 1
            return n

        scores = [common_tail(c) for c in cands]
        best = max(scores)
        winners = {c for c, s in zip(cands, scores) if s == best}
        return str((self.folder / next(iter(winners))).resolve()) if len(winners) == 1 else None


def ref_parts(ref: str) -> tuple[str, ...]:
    """A published reference split into path parts (a URL's path, URL-decoded). ``urlsplit``, not ``urlparse``:
    published file names are often captions holding ``;`` ("..._table;_it_tilts_...mp4", VideoPhy-2), which
    ``urlparse`` cuts off as URL parameters."""
    if "://" in ref:
        ref = unquote(urlsplit(ref).path)
    parts = tuple(p for p in PurePosixPath(ref.replace("\\", "/")).parts if p not in ("/", ".", ""))
    return parts or (ref,)


def ref_key(ref: str) -> str:
    """A stable id suffix for a published reference: its path without the URL's host."""
    return "/".join(ref_parts(ref))


# ---------------------------------------------------------------------------------------------
# streaming manifest writer


@dataclass
class Report:
    """What a conversion read, wrote and left out; written beside the manifest."""

    dataset: str
    files: dict[str, int] = field(default_factory=dict)
    missing_videos: list[dict] = field(default_factory=list)
    duplicate_videos: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    videos_written: int = 0
    pairs_written: int = 0
    pairs_left_out: int = 0

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in ("dataset", "files", "videos_written", "pairs_written", "pairs_left_out",
                                              "missing_videos", "duplicate_videos", "notes")}


def _hash_ids(ids: pd.Series) -> np.ndarray:
    return pd.util.hash_pandas_object(ids, index=False).to_numpy(np.uint64)


class ManifestWriter:
    """Appends videos and pairs chunk by chunk, keeping only a sorted array of 64-bit id hashes.

    Each ``add`` call takes the videos a chunk of published rows refers to (with ``path`` None when
    the file was not found) and the pairs between them. Videos already written are skipped (a video
    is shared by many pairs); a video whose file is missing is listed in the report with the
    published reference and row, and every pair touching it is left out and counted.
    """

    def __init__(self, out: str | os.PathLike, dataset: str):
        self.out = Path(out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.report = Report(dataset)
        self._seen = np.empty(0, np.uint64)
        self._missing = np.empty(0, np.uint64)
        self._files = {}
        for name in (VIDEOS_FILE, PAIRS_FILE):
            tmp = self.out / (name + ".tmp")
            self._files[name] = open(tmp, "w", encoding="utf-8")

    def unseen(self, ids: pd.Series) -> np.ndarray:
        """Mask of the ids neither written nor reported missing yet, first occurrence only: a converter
        whose videos recur across rows describes and looks up each video once."""
        h = _hash_ids(ids.reset_index(drop=True))
        return ~pd.Series(h).duplicated().to_numpy() & ~np.isin(h, self._seen) & ~np.isin(h, self._missing)

    def add(self, videos: pd.DataFrame, pairs: pd.DataFrame | None = None) -> None:
        """``videos`` has the manifest's video columns, ``path`` None where the file was not found,
        and optionally ``ref``, ``file``, ``row`` (the published reference and where it was read),
        which the report lists for each missing video."""
        videos = videos.reset_index(drop=True)
        h = _hash_ids(videos["id"])
        first = ~pd.Series(h).duplicated().to_numpy()
        new = first & ~np.isin(h, self._seen) & ~np.isin(h, self._missing)
        missing = new & videos["path"].isna().to_numpy()
        if missing.any():
            cols = [c for c in ("id", "ref", "file", "row") if c in videos.columns]
            self.report.missing_videos.extend(videos.loc[missing, cols].to_dict("records"))
            self._missing = np.union1d(self._missing, h[missing])
        keep = new & ~missing
        if keep.any():
            v = videos.loc[keep, list(VIDEO_FIELDS)]
            v = v.assign(anchor=pd.array(v["anchor"], dtype="Int64"))
            v.to_json(self._files[VIDEOS_FILE], orient="records", lines=True, force_ascii=False)
            self._seen = np.union1d(self._seen, h[keep])
            self.report.videos_written += int(keep.sum())
        if pairs is not None and len(pairs):
            ok = ~(np.isin(_hash_ids(pairs["a"]), self._missing) | np.isin(_hash_ids(pairs["b"]), self._missing))
            self.report.pairs_left_out += int((~ok).sum())
            p = pairs.loc[ok, list(PAIR_FIELDS)]
            if len(p):
                p.to_json(self._files[PAIRS_FILE], orient="records", lines=True, force_ascii=False)
                self.report.pairs_written += len(p)

    def close(self) -> Path:
        """Publish both tables and the report atomically; a run that died leaves the old manifest."""
        for name, f in self._files.items():
            f.close()
            os.replace(self.out / (name + ".tmp"), self.out / name)
        rep = self.report
        if rep.missing_videos:
            log.warning("%s: %d videos not found and left out with %d pairs; see %s", rep.dataset,
                        len(rep.missing_videos), rep.pairs_left_out, self.out / REPORT_FILE)
        tmp = self.out / (REPORT_FILE + ".tmp")
        tmp.write_text(json.dumps(rep.to_dict(), indent=1, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, self.out / REPORT_FILE)
        if rep.videos_written == 0:
            raise ConversionError(f"{rep.dataset}: no video was found on disk; nothing converted "
                                  f"(see {self.out / REPORT_FILE} for the references that were looked for)")
        return self.out

    def __enter__(self) -> "ManifestWriter":
        return self

    def __exit__(self, exc_type, *_):
        if exc_type is not None:
            for name, f in self._files.items():
                f.close()
                (self.out / (name + ".tmp")).unlink(missing_ok=True)


def video_frame(ids, paths, source: str, is_real, split, magnitude=None, anchor=None, metadata=None) -> pd.DataFrame:
    """The manifest's video columns from column-like values (scalars broadcast)."""
    n = len(ids)

    def col(x, default=None):
        if x is None:
            return [default] * n
        if np.isscalar(x):
            return [x] * n
        return list(x)

    return pd.DataFrame({
        "id": list(ids), "path": col(paths), "source": source, "is_real": [bool(x) for x in col(is_real)],
        "magnitude": col(magnitude), "anchor": col(anchor), "split": col(split),
        "metadata": col(metadata, {}),
    })


def pair_frame(a, b, label, source: str, correspondence: str, kind: str, split, weight=1.0) -> pd.DataFrame:
    return pd.DataFrame({"a": list(a), "b": list(b), "label": np.asarray(label, dtype=float), "weight": weight,
                         "source": source, "correspondence": correspondence, "kind": kind, "split": split})


def group_pairs(videos: pd.DataFrame, group: str, score: str, higher_means: str = "plausible") -> pd.DataFrame:
    """Every pair of videos sharing ``group`` (e.g. one prompt), in row order, with
    ``label`` = P(a more violating) from ``score``: 1 or 0 by the scores, 0.5 where they are equal."""
    v = videos[["id", group, score, "split"]].reset_index(drop=True).assign(_i=lambda d: np.arange(len(d)))
    m = v.merge(v, on=[group, "split"], suffixes=("_a", "_b"))
    m = m[m["_i_a"] < m["_i_b"]].sort_values(["_i_a", "_i_b"], kind="stable")
    sa, sb = m[f"{score}_a"].to_numpy(float), m[f"{score}_b"].to_numpy(float)
    worse_a = sa < sb if higher_means == "plausible" else sa > sb
    label = np.where(sa == sb, 0.5, worse_a.astype(float))
    return pd.DataFrame({"a": m["id_a"].to_numpy(), "b": m["id_b"].to_numpy(), "label": label, "split": m["split"].to_numpy()})


def existing(paths: Iterable[Path | str | None]) -> list[str | None]:
    """Absolute path per video, None where no file is there."""
    return [os.path.abspath(p) if p is not None and os.path.isfile(p) else None for p in paths]


def existing_under(base: Path, refs: Iterable[str]) -> list[str | None]:
    """``existing`` for paths relative to one folder, without a Path object per video."""
    prefix = os.path.abspath(base) + os.sep
    return existing(prefix + r for r in refs)

