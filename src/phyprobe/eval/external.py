"""Scores from any other evaluator, read as the evaluator writes them, so that VideoScore2,
VideoPhy-2-AutoEval, VideoAlign, a VLM judge or a baseline go through exactly the same protocols as ours.

By default the file is a ``video,score`` CSV (``raw_score`` ranked when present, as ``phyprobe score --out``
writes it). A named format (``FORMATS``: ``videophy2_autoeval``, ``videoscore2``, ``videoalign``) reads an
evaluator's own output file, with the columns and score direction of its published code; ``video_col``,
``score_col`` and ``higher_means`` set or override the mapping for any other tool.

A video may be named by the manifest id, the manifest path, a path relative to ``root`` (the folder the
evaluator's paths are relative to), a URL or relative path whose tail is a manifest path, or the file name
(with or without extension), as long as it names one manifest video unambiguously: benchmarks such as
VideoPhy-2 hold the same file name in every generator's folder, and there only the path tells them apart.
A bad row stops the read with the file and line (record, for JSON) in the message: a silently dropped row
would change a benchmark figure without anyone noticing. Rows the evaluator marks as failed (an ``error``
column, or its own failure value) are counted and left out. Manifest videos the file does not cover are not
an error (evaluate reports coverage) but are logged.
"""

from __future__ import annotations

import csv
import json
import logging
import math
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from phyprobe.data.datasets.base import ref_parts
from phyprobe.data.manifest import Manifest
from phyprobe.errors import UserError, json_error_reason

log = logging.getLogger(__name__)


class ExternalScoresError(UserError, ValueError):
    """A row of an external score file cannot be used; the message names the file and the line."""


@dataclass(frozen=True)
class ScoreFormat:
    """How one evaluator writes its per-video scores (from its published code, cited in ``source``)."""

    name: str
    video: tuple[str, ...]  # columns naming the video: the first one of a row that names a manifest video is used
    score: tuple[str, ...]  # score columns: the first one the header has is read
    higher_means: str  # violation | plausible
    json: bool = False  # a JSON list of records (or JSON lines) instead of a CSV
    failed: float | None = None  # the value the evaluator writes when it could not score: counted, left out
    empty_failed: bool = False  # an empty / null score is the evaluator's failure (else an error)
    root: str = ""  # what scores_root is for this format
    source: str = ""


FORMATS: dict[str, ScoreFormat] = {
    "phyprobe": ScoreFormat(
        "phyprobe",
        ("video",),
        ("raw_score", "score"),
        "violation",
        root="the folder the video column's relative paths start from",
        source="phyprobe score --out (id,path,...,raw_score,score) or any video,score CSV",
    ),
    # out.to_csv(args.output_csv) keeps pandas' index: header ",caption,videopath,score"; videopath as given in
    # the input CSV (relative to where inference.py ran); score 1-5, higher = more plausible (PC: "5 means full
    # compliance"); 0 when the generated text held no number ("Defaulting to 0").
    "videophy2_autoeval": ScoreFormat(
        "videophy2_autoeval",
        ("videopath",),
        ("score",),
        "plausible",
        failed=0.0,
        root="the folder VIDEOPHY2/inference.py ran in (its videopath values are relative to it)",
        source="Hritikbansal/videophy VIDEOPHY2/inference.py; example VIDEOPHY2/examples/output_pc.csv",
    ),
    # eval/eval_vs2.py writes res_data/res_<bench>/<model>_infer_<fps>fps.json: a JSON list of {video_name (file
    # stem), video_url (null for VideoGen-RewardBench), prompt, *_score_gt, v_score_model, t_score_model,
    # p_score_model, output}; p_score_model = "physical/common-sense consistency" 1-5 (higher = more plausible),
    # null when the output did not parse.
    "videoscore2": ScoreFormat(
        "videoscore2",
        ("video_url", "video_name"),
        ("p_score_model",),
        "plausible",
        json=True,
        empty_failed=True,
        root="the folder holding the URL's path (e.g. VideoPhy-2's bucket folders)",
        source="TIGER-AI-Lab/VideoScore2 eval/eval_vs2.py, eval/eval_methods/vs2.py; e.g. eval/res_data/res_video_phy2/",
    ),
    # eval_videogen_rewardbench.py writes videogen-rewardbench-output/out_single.csv (index=False): path, model,
    # prompt, fps, num_frames, reward_VQ, reward_MQ, reward_TA, reward_Overall (reward_ALL in the first commit);
    # path as in videogen-rewardbench.csv, relative to datasets/eval; rewards higher = preferred.
    "videoalign": ScoreFormat(
        "videoalign",
        ("path",),
        ("reward_MQ",),
        "plausible",
        root="the VideoGen-RewardBench folder (datasets/eval: the paths start with videos/)",
        source="KwaiVGI/VideoAlign eval_videogen_rewardbench.py (out_single.csv)",
    ),
}
DIRECTIONS = ("violation", "plausible")


def video_lookup(manifest: Manifest) -> dict[str, list[str]]:
    """Every name a video may be given by -> the ids it can mean (ids and paths first, then names)."""
    names: dict[str, list[str]] = {}
    for vid, path in zip(manifest.videos["id"], manifest.videos["path"]):
        p = Path(path)
        for name in dict.fromkeys((vid, path, str(manifest.video_path(path)), p.name, p.stem)):
            names.setdefault(name, []).append(vid)
    return names


def _parts(value: str) -> tuple[str, ...]:
    """A path or URL as path parts (a URL's path, URL-decoded; ``.`` and empty parts dropped)."""
    return tuple(p for p in ref_parts(value) if p)


def _real(path) -> str:
    return os.path.realpath(path)


class _Resolver:
    """Which manifest videos a value of the video column names (see the module docstring)."""

    def __init__(self, manifest: Manifest, root: Path | None = None):
        self.ids = set(manifest.videos["id"])
        self.names = video_lookup(manifest)
        self.root = root
        self.tails: dict[str, list[tuple[tuple[str, ...], str]]] = {}
        self.real: dict[str, list[str]] = {}
        for vid, path in zip(manifest.videos["id"], manifest.videos["path"]):
            full = manifest.video_path(path)
            parts = _parts(str(full))
            self.tails.setdefault(parts[-1], []).append((parts, vid))
            if root is not None:
                self.real.setdefault(_real(full), []).append(vid)

    def under_root(self, value: str) -> str | None:
        """The file ``value`` names relative to ``root`` (a URL by its path), or None without a root."""
        if self.root is None or not value:
            return None
        if "://" in value or not os.path.isabs(value):
            return _real(self.root.joinpath(*_parts(value))) if _parts(value) else None
        return _real(value)

    def find(self, value: str) -> list[str]:
        if value in self.ids:
            return [value]
        target = self.under_root(value)
        if target is not None and target in self.real:
            return list(dict.fromkeys(self.real[target]))
        if value in self.names:
            return list(dict.fromkeys(self.names[value]))
        parts = _parts(value)
        if len(parts) > 1:  # a relative path or URL: the manifest videos whose path ends with it
            return list(dict.fromkeys(v for p, v in self.tails.get(parts[-1], []) if p[-len(parts) :] == parts))
        return []


def resolve_format(
    fmt: str | None = None, video_col: str | None = None, score_col: str | None = None, higher_means: str | None = None
) -> ScoreFormat:
    """The named format (default ``phyprobe``) with any of its mapping overridden."""
    name = fmt or "phyprobe"
    if name not in FORMATS:
        raise UserError(f"scores_format: unknown format {name!r}; known: {', '.join(FORMATS)}")
    base = FORMATS[name]
    if higher_means is not None and higher_means not in DIRECTIONS:
        raise UserError(f"higher_means must be 'violation' or 'plausible', got {higher_means!r}")
    return ScoreFormat(
        base.name,
        (video_col,) if video_col else base.video,
        (score_col,) if score_col else base.score,
        higher_means or base.higher_means,
        base.json,
        base.failed,
        base.empty_failed,
        base.root,
        base.source,
    )


def read_external_scores(
    csv_path: str | os.PathLike,
    manifest: Manifest,
    higher_means: str | None = None,
    whole: Manifest | None = None,
    *,
    fmt: str | None = None,
    video_col: str | None = None,
    score_col: str | None = None,
    root: str | os.PathLike | None = None,
) -> dict[str, float]:
    """``{video id: violation score}`` from another evaluator's per-video scores. ``whole``: the unrestricted
    manifest ``manifest`` was cut from, whose other videos may be named.

    ``fmt``: a name of ``FORMATS`` (default ``phyprobe``: columns ``video`` and ``score``, or ``raw_score``,
    ranked when present); ``video_col`` / ``score_col`` / ``higher_means`` override its mapping; ``root``: the
    folder the file's relative video paths start from (``scores_root=``), needed where the same file name occurs
    in several folders. ``higher_means="plausible"`` negates the scores (e.g. a 1-5 physical-commonsense rating),
    so that higher = more violating as every protocol expects; ranking figures are unaffected by the scale,
    threshold figures (PID) need a threshold on the flipped scale.
    """
    spec = resolve_format(fmt, video_col, score_col, higher_means)
    sign = -1.0 if spec.higher_means == "plausible" else 1.0
    root_dir = None
    if root is not None and str(root) != "":
        root_dir = Path(root)
        if not root_dir.is_dir():
            raise ExternalScoresError(f"{csv_path}: scores_root {str(root)!r} is not a directory")
    scores: dict[str, float] = {}
    try:
        if spec.json:
            header, rows = _json_rows(csv_path)
            _read_rows(header, rows, csv_path, manifest, sign, scores, whole, spec, root_dir)
        else:
            with open(csv_path, encoding="utf-8-sig", newline="") as f:
                reader = csv.DictReader(f)
                rows = ((f"{csv_path}:{reader.line_num}", reader.line_num, row) for row in reader)
                _read_rows(reader.fieldnames or [], rows, csv_path, manifest, sign, scores, whole, spec, root_dir)
    except UnicodeDecodeError:
        raise ExternalScoresError(
            f"{csv_path}:{_first_non_utf8_line(csv_path)}: not valid UTF-8 (Latin-1 or another "
            "legacy encoding?); save the file as UTF-8"
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


def _json_rows(path) -> tuple[list[str], Iterator[tuple[str, int, dict]]]:
    """A JSON list of records (VideoScore2's res_data files) or JSON lines: (keys, rows with where, index)."""
    with open(path, encoding="utf-8-sig") as f:
        text = f.read()
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        try:  # JSON lines
            data = [json.loads(line) for line in text.splitlines() if line.strip()]
        except json.JSONDecodeError:
            raise ExternalScoresError(f"{path}:{e.lineno}: not valid JSON ({e.msg})") from None
        except (ValueError, RecursionError) as e2:
            raise ExternalScoresError(f"{path}: {json_error_reason(e2)}") from None
    except (ValueError, RecursionError) as e:
        raise ExternalScoresError(f"{path}: {json_error_reason(e)}") from None
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
        raise ExternalScoresError(f"{path}: expected a JSON list of records (objects), got {type(data).__name__}")
    header = list(dict.fromkeys(k for r in data for k in r))
    rows = (
        (f"{path}: record {i}", i, {k: ("" if v is None else str(v)) for k, v in r.items()})
        for i, r in enumerate(data, start=1)
    )
    return header, rows


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


def _columns(header: list[str], csv_path, spec: ScoreFormat) -> tuple[list[str], str]:
    """The video columns and the score column of ``header``; a missing one stops the read naming the file."""
    videos = [c for c in spec.video if c in header]
    scores = [c for c in spec.score if c in header]
    if videos and scores:
        return videos, scores[0]
    if spec.name == "phyprobe" and spec.video == ("video",) and spec.score == ("raw_score", "score"):
        raise ExternalScoresError(f"{csv_path}:1: expected columns 'video' and 'score' (or 'raw_score'), got {header}")
    want = " or ".join(map(repr, spec.video)) if not videos else " or ".join(map(repr, spec.score))
    what = "video" if not videos else "score"
    raise ExternalScoresError(
        f"{csv_path}:1: no {what} column {want} (format {spec.name}; set scores_{what}_col=), got {header}"
    )


def _read_rows(
    header: list[str],
    rows,
    csv_path,
    manifest: Manifest,
    sign: float,
    scores: dict[str, float],
    whole: Manifest | None = None,
    spec: ScoreFormat = FORMATS["phyprobe"],
    root: Path | None = None,
) -> None:
    """Rows into ``scores``. The ``raw_score`` column is ranked when there is one (``phyprobe score --out`` writes
    it beside the clipped ``score``, which ties at 0 and 1); a row with an ``error`` and no score (a video the
    scorer could not read), or the format's own failure value, is counted and left out, never mistaken for a
    score; so is a video of ``whole`` (the benchmark's unrestricted manifest) outside ``manifest``, e.g. a whole
    build scored, one split evaluated."""
    video_cols, column = _columns(header, csv_path, spec)
    find = _Resolver(manifest, root)
    others = _Resolver(whole, root) if whole is not None else None
    where: dict[str, int] = {}
    unit = "record" if spec.json else "line"
    failed, outside = 0, []
    for at, line, row in rows:
        raw = row.get(column)
        text = (raw or "").strip()
        if not text and ((row.get("error") or "").strip() or spec.empty_failed):
            failed += 1
            continue
        names = [(row.get(c) or "").strip() for c in video_cols]
        names = [n for n in names if n] or [""]
        vid, video, ambiguous = None, names[0], None
        for name in names:
            candidates = find.find(name)
            if len(candidates) == 1:
                vid, video = candidates[0], name
                break
            if len(candidates) > 1 and ambiguous is None:
                ambiguous = (name, candidates)
        if vid is None and ambiguous is None:
            if others is not None and any(others.find(n) for n in names):  # another split of the benchmark's data
                outside.append((line, video))
                continue
            hint = f" (nor is {find.under_root(video)} under scores_root)" if root is not None else ""
            raise ExternalScoresError(f"{at}: video {video!r} is not in the manifest at {manifest.root}{hint}")
        if vid is None:
            name, candidates = ambiguous
            hint = (
                f"; relative to scores_root it is {find.under_root(name)}, not a manifest video"
                if root is not None
                else "; the same file name is in several folders: give scores_root=DIR, the folder the "
                "evaluator's paths are relative to, and paths relative to it"
            )
            raise ExternalScoresError(
                f"{at}: video {name!r} is ambiguous, it may be any of {sorted(set(candidates))}{hint}"
            )
        try:
            value = float(raw)
        except (TypeError, ValueError):
            raise ExternalScoresError(f"{at}: {column} {raw!r} for {video!r} is not a number") from None
        if not math.isfinite(value):
            raise ExternalScoresError(f"{at}: score for {video!r} is {value}, not a finite number")
        if spec.failed is not None and value == spec.failed:
            failed += 1
            continue
        if vid in scores:
            raise ExternalScoresError(f"{at}: video {vid!r} was already scored on {unit} {where[vid]}")
        scores[vid], where[vid] = sign * value, line
    if outside:
        log.warning(
            "%s: %d rows name videos outside the benchmark's (first: %s %d, %s): left out",
            csv_path,
            len(outside),
            unit,
            *outside[0],
        )
    if failed:
        log.warning("%s: %d rows are errors (videos the evaluator could not score): left out", csv_path, failed)
    share = tie_share(scores.values())
    if spec.name == "phyprobe" and column == "score" and share > TIE_WARNING:
        log.warning(
            "%s: %.0f %% of the scores tie with another (clipped scores?): ties count half in every pairwise "
            "figure; give a 'raw_score' column (phyprobe score --out writes one) to rank unclipped scores",
            csv_path,
            100 * share,
        )


def missing_videos(scores: Mapping[str, float], manifest: Manifest) -> list[str]:
    """Manifest video ids that ``scores`` does not cover, in manifest order."""
    return [v for v in manifest.videos["id"] if v not in scores]
