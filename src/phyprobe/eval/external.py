"""Scores from any other evaluator, read from a ``video,score`` CSV, so that VideoScore2,
VideoPhy2-AutoEval, a VLM judge or a baseline go through exactly the same protocols as ours.

The ``video`` column may hold the manifest id, the manifest path, or the file name (with or without
extension) — whatever the other tool wrote — as long as it names one manifest video unambiguously.
A bad row stops the read with the file and line in the message: a silently dropped row would change
a benchmark figure without anyone noticing. Manifest videos the CSV does not cover are not an error
(evaluate reports coverage) but are logged.
"""

from __future__ import annotations

import csv
import logging
import math
import os
from collections.abc import Mapping
from pathlib import Path

from phyprobe.data.manifest import Manifest
from phyprobe.errors import UserError

log = logging.getLogger(__name__)


class ExternalScoresError(UserError, ValueError):
    """A row of an external score CSV cannot be used; the message names the file and the line."""


def video_lookup(manifest: Manifest) -> dict[str, list[str]]:
    """Every name a video may be given by -> the ids it can mean (ids and paths first, then names)."""
    names: dict[str, list[str]] = {}
    for vid, path in zip(manifest.videos["id"], manifest.videos["path"]):
        p = Path(path)
        for name in dict.fromkeys((vid, path, str(manifest.video_path(path)), p.name, p.stem)):
            names.setdefault(name, []).append(vid)
    return names


def read_external_scores(
    csv_path: str | os.PathLike, manifest: Manifest, higher_means: str = "violation", whole: Manifest | None = None
) -> dict[str, float]:
    """``{video id: violation score}`` from a CSV with columns ``video`` and ``score`` (or ``raw_score``, ranked
    when present). ``whole``: the unrestricted manifest ``manifest`` was cut from, whose other videos may be named.

    ``higher_means="plausible"`` negates the scores (e.g. a 1-5 physical-commonsense rating), so that
    higher = more violating as every protocol expects; ranking figures are unaffected by the scale,
    threshold figures (PID) need a threshold on the flipped scale.
    """
    if higher_means not in ("violation", "plausible"):
        raise UserError(f"higher_means must be 'violation' or 'plausible', got {higher_means!r}")
    sign = -1.0 if higher_means == "plausible" else 1.0
    scores: dict[str, float] = {}
    try:
        with open(csv_path, encoding="utf-8-sig", newline="") as f:
            _read_rows(csv.DictReader(f), csv_path, manifest, sign, scores, whole)
    except UnicodeDecodeError:
        raise ExternalScoresError(
            f"{csv_path}:{_first_non_utf8_line(csv_path)}: not valid UTF-8 (Latin-1 or another "
            "legacy encoding?); save the CSV as UTF-8"
        ) from None
    except csv.Error as e:
        raise ExternalScoresError(f"{csv_path}: not a readable CSV ({e})") from None
    except IsADirectoryError:
        raise ExternalScoresError(f"{csv_path}: is a directory, not a CSV file") from None
    except OSError as e:
        raise ExternalScoresError(f"{csv_path}: cannot read ({e.strerror or e})") from None
    if not scores:
        raise ExternalScoresError(f"{csv_path}: no score rows (only a header): nothing to evaluate")
    missing = missing_videos(scores, manifest)
    if missing:
        log.warning(
            "%s: %d of %d manifest videos have no score (first: %s)",
            csv_path,
            len(missing),
            len(manifest.videos),
            ", ".join(missing[:5]),
        )
    return scores


def _first_non_utf8_line(path) -> int:
    with open(path, "rb") as f:
        for i, raw in enumerate(f, start=1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError:
                return i
    return 1


TIE_WARNING = 0.05  # share of tied scores above which a CSV of clipped scores is flagged


def tie_share(values) -> float:
    """The share of scores equal to another score of the set: ties rank as coin flips (half credit)."""
    values = list(values)
    if not values:
        return 0.0
    counts: dict[float, int] = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    return sum(c for c in counts.values() if c > 1) / len(values)


def _read_rows(
    reader: csv.DictReader,
    csv_path,
    manifest: Manifest,
    sign: float,
    scores: dict[str, float],
    whole: Manifest | None = None,
) -> None:
    """Rows into ``scores``. The ``raw_score`` column is ranked when there is one (``phyprobe score --out`` writes
    it beside the clipped ``score``, which ties at 0 and 1); a row with an ``error`` and no score (a video the
    scorer could not read) is counted and left out, never mistaken for a score; so is a video of ``whole`` (the
    benchmark's unrestricted manifest) outside ``manifest``, e.g. a whole build scored, one split evaluated."""
    names = video_lookup(manifest)
    others = set(video_lookup(whole)) if whole is not None else set()
    ids = set(manifest.videos["id"])
    where: dict[str, int] = {}
    header = reader.fieldnames or []
    if "video" not in header or not {"score", "raw_score"} & set(header):
        raise ExternalScoresError(f"{csv_path}:1: expected columns 'video' and 'score' (or 'raw_score'), got {header}")
    column = "raw_score" if "raw_score" in header else "score"
    failed, outside = 0, []
    for row in reader:
        line = reader.line_num
        if (row.get("error") or "").strip() and not (row.get(column) or "").strip():
            failed += 1
            continue
        video = (row["video"] or "").strip()
        candidates = [video] if video in ids else names.get(video, [])
        if not candidates and video in others:  # another split or source of the benchmark's data: counted, left out
            outside.append((line, video))
            continue
        if not candidates:
            raise ExternalScoresError(f"{csv_path}:{line}: video {video!r} is not in the manifest at {manifest.root}")
        if len(set(candidates)) > 1:
            raise ExternalScoresError(
                f"{csv_path}:{line}: video {video!r} is ambiguous, it may be any of {sorted(set(candidates))}"
            )
        vid = candidates[0]
        try:
            value = float(row[column])
        except (TypeError, ValueError):
            raise ExternalScoresError(
                f"{csv_path}:{line}: {column} {row[column]!r} for {video!r} is not a number"
            ) from None
        if not math.isfinite(value):
            raise ExternalScoresError(f"{csv_path}:{line}: score for {video!r} is {value}, not a finite number")
        if vid in scores:
            raise ExternalScoresError(f"{csv_path}:{line}: video {vid!r} was already scored on line {where[vid]}")
        scores[vid], where[vid] = sign * value, line
    if outside:
        log.warning(
            "%s: %d rows name videos outside the benchmark's (first: line %d, %s): left out",
            csv_path,
            len(outside),
            *outside[0],
        )
    if failed:
        log.warning("%s: %d rows are errors (videos the evaluator could not score): left out", csv_path, failed)
    share = tie_share(scores.values())
    if column == "score" and share > TIE_WARNING:
        log.warning(
            "%s: %.0f %% of the scores tie with another (clipped scores?): ties count half in every pairwise "
            "figure; give a 'raw_score' column (phyprobe score --out writes one) to rank unclipped scores",
            csv_path,
            100 * share,
        )


def missing_videos(scores: Mapping[str, float], manifest: Manifest) -> list[str]:
    """Manifest video ids that ``scores`` does not cover, in manifest order."""
    return [v for v in manifest.videos["id"] if v not in scores]
