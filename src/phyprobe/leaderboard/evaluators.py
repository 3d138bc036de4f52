"""The evaluators a leaderboard puts side by side, each as per-video scores with a direction and a cost:

- a PhyProbe scorer, run through the batch scorer into a store keyed by the scorer's identity and each video's
  content (:func:`score_store`: a video scored once is never scored again, in any ``--out``), recorded in
  ``OUT/scores/<name>.jsonl``; its raw score is used, which does not tie at 0 or 1;
- a rubric judge's ``judgements.jsonl`` (``phyprobe judge run`` on the leaderboard's ``videos.jsonl``): the headline
  score on the judge's own scale, and one column per dimension (Sci-VBench's dimensions, SVBench EVA's D1-D5, the
  vision tools' six), all higher = better;
- GeoPhys (:mod:`phyprobe.baselines.geophys`), which needs no training: a frozen image encoder's embedding path per
  video, its features extracted into ``OUT/features`` (a rerun, also after a kill, extracts only what is not there
  yet); higher = more violating;
- any other evaluator's per-video ``video,score`` CSV (higher = more violating unless said otherwise).

A judgement or CSV row for a video that is not among the generations stops the read with the file and line.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ..data.manifest import read_jsonl_objects
from ..errors import UserError
from ..io.json_input import MAX_ABS, finite_number, load_json_input
from .generations import GenerationsError


@dataclass
class Column:
    """Per-video scores of one evaluator (or one dimension of a judge)."""

    name: str
    scores: dict[str, float]  # generation id -> score
    higher_is_better: bool
    kind: str  # scorer | judge | dimension | baseline | csv
    source: str
    cost: dict = field(default_factory=dict)  # seconds_per_video, calls_per_video (None: unknown)
    failed: dict[str, str] = field(default_factory=dict)  # generation id -> why it has no score
    expected: tuple[float, float] | None = None  # a scorer's training range: scores far outside it are flagged

    @property
    def direction(self) -> str:
        return "higher is better" if self.higher_is_better else "lower is better"


def _lookup(gens: pd.DataFrame) -> dict[str, str]:
    """Every name a generation may be given by in another tool's file -> its id (ids and full paths only: file
    names repeat across generators, so they cannot name a generation)."""
    names: dict[str, str] = {}
    for vid, path in zip(gens["id"], gens["video"]):
        for name in (vid, path, str(Path(path).resolve())):
            names[name] = vid
    return names


def _resolve(names: dict[str, str], video: str, where: str) -> str:
    vid = names.get(video) or names.get(str(Path(video).resolve()))
    if vid is None:
        raise GenerationsError(f"{where}: video {video!r} is not among the generations")
    return vid


def parse_named(text: str) -> tuple[str | None, str]:
    """``NAME=PATH`` -> (NAME, PATH); a plain PATH (or one whose ``=`` is part of an existing file) -> (None, PATH)."""
    if "=" in text and not Path(text).exists():
        name, path = text.split("=", 1)
        if name and path:
            return name, path
    return None, text


# --------------------------------------------------------------------------------------------- scorer


def scorer_identity(scorer: str, revision: str | None = None) -> str:
    """What a results file was scored by: a hash of a local scorer's files, or a Hub id at its revision."""
    p = Path(scorer)
    if not p.is_dir():
        return f"hub:{scorer}@{revision or 'main'}"
    h = hashlib.sha256()
    for f in sorted(q for q in p.iterdir() if q.is_file() and q.suffix in (".json", ".safetensors")):
        h.update(f.name.encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


def score_store() -> Path:
    """Where scores are kept across leaderboards: ``$PHYPROBE_CACHE/scores`` (default ``~/.cache/phyprobe``), one
    file per scorer identity, each row keyed by a video's content, so a second leaderboard over the same videos, in
    any ``--out`` and from any working directory, scores nothing, and a file whose bytes changed is scored anew."""
    root = os.environ.get("PHYPROBE_CACHE") or os.path.join(os.environ.get("XDG_CACHE_HOME", "~/.cache"), "phyprobe")
    return Path(root).expanduser() / "scores"


def scorer_column(
    scorer: str,
    name: str,
    gens: pd.DataFrame,
    out_dir: Path,
    progress: bool = True,
    revision: str | None = None,
    store_dir: Path | None = None,
    **batch_kwargs,
) -> Column:
    """Every generation's score by ``scorer``: read from the score store (:func:`score_store`) by the video's content,
    and scored with the batch scorer where the store has none (appended as they come: a kill loses nothing
    finished). ``out_dir/scores/<name>.jsonl`` records this leaderboard's rows; a name used by another scorer in
    ``out_dir`` is refused, never mixed."""
    from ..features.cache import content_hash
    from ..runinfo import atomic_write_json
    from ..scorer.batch import ResultFile, quiet_lightning, score_files
    from ..scorer.core import Scorer
    from ..scorer.names import is_repo_id

    if not Path(scorer).exists() and not is_repo_id(scorer):
        raise UserError(f"{scorer}: no such scorer directory")
    record = ResultFile(out_dir / "scores" / f"{name}.jsonl")
    meta_file = record.path.with_suffix(".json")
    ident = scorer_identity(scorer, revision)
    meta = json.loads(meta_file.read_text()) if meta_file.is_file() else None
    if meta is not None and meta.get("scorer_identity") != ident:
        raise UserError(
            f"{record.path}: scored by another scorer ({meta.get('scorer')}); name this one differently "
            f"(--scorer NAME={scorer}) or pass a new --out"
        )
    record.check()  # a file there that this package did not write is refused before anything is scored
    videos = list(gens["video"])
    missing = [v for v in videos if not Path(v).exists()]
    if missing:
        raise GenerationsError(f"{missing[0]}: no such video ({len(missing)} of the generations are missing)")
    store = ResultFile((store_dir or score_store()) / f"{ident}.jsonl")
    store_meta = store.path.with_suffix(".json")
    key = {v: content_hash(Path(v)) or f"unhashable:{os.path.realpath(v)}" for v in videos}
    known = store.finished()
    todo = list({key[v]: v for v in reversed(videos) if key[v] not in known}.values())[::-1]  # one per content
    cost = json.loads(store_meta.read_text()) if store_meta.is_file() else {"seconds": 0.0, "videos_scored": 0}
    if todo:
        quiet_lightning()
        model = Scorer.from_pretrained(scorer, revision=revision)
        store.open()  # no lock: leaderboards sharing the store append whole rows; one scored twice costs time only
        report = score_files(
            model,
            todo,
            lambda rows: store.append([{**r, "video": key[r["video"]]} for r in rows]),
            done=None,
            progress=progress,
            **batch_kwargs,
        )
        cost = {
            "scorer": str(scorer),
            "seconds": cost["seconds"] + report.seconds,
            "videos_scored": cost["videos_scored"] + report.scored + report.failed,
        }
        atomic_write_json(store_meta, cost)
        known = store.finished()
    rows = [{**known[key[v]], "video": v} for v in videos if key[v] in known]
    record.path.parent.mkdir(parents=True, exist_ok=True)
    tmp = record.path.with_name(f".{record.path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(record.format(rows))
    tmp.replace(record.path)  # whole: two leaderboards into one --out leave one row per video
    atomic_write_json(meta_file, {"scorer": str(scorer), "scorer_identity": ident, "store": str(store.path)})
    scores, failed = {}, {}
    for path, vid in zip(gens["video"], gens["id"]):
        r = known.get(key[path])
        if r is None:
            failed[vid] = "not scored"
        elif "error" in r:
            failed[vid] = r["error"]
        else:
            scores[vid] = float(r["raw_score"])
    done = cost["videos_scored"]
    seconds = {"seconds_per_video": cost["seconds"] / done if done else None, "calls_per_video": 0.0}
    from ..scorer.training_range import of_scorer

    return Column(name, scores, False, "scorer", str(scorer), seconds, failed, of_scorer(scorer))


# --------------------------------------------------------------------------------------------- GeoPhys


def geophys_column(
    gens: pd.DataFrame,
    out_dir: Path,
    name: str = "geophys",
    frames: dict | None = None,
    layer: int | None = None,
    num_frames: int | None = None,
    signals=None,
    **extract_kwargs,
) -> Column:
    """GeoPhys's score of every generation (lower is better), trained on nothing: the features of the trajectory
    encoder are extracted into ``out_dir/features`` (resumable; a rerun extracts only what is not there yet) and
    reduced to the score by :func:`phyprobe.baselines.geophys.geophys_scores`. Options as that function's
    (None: its ``DEFAULT``); ``extract_kwargs`` go to the extraction (``batch_size``, ``num_workers``, ...). The
    cost is the extraction's seconds per video, summed over the runs that extracted (``out_dir/features/<name>.json``)."""
    import time

    from ..baselines.geophys import DEFAULT, geophys_encoder, geophys_scores
    from ..data.manifest import PAIR_FIELDS, VIDEO_FIELDS, Manifest
    from ..features.cache import FeatureCache
    from ..io.video import ClipSpec
    from ..runinfo import atomic_write_json

    missing = [v for v in gens["video"] if not Path(v).exists()]
    if missing:
        raise GenerationsError(f"{missing[0]}: no such video ({len(missing)} of the generations are missing)")
    opts = {
        "frames": dict(frames or DEFAULT["frames"]),
        "layer": DEFAULT["layer"] if layer is None else int(layer),
        "num_frames": int(num_frames or DEFAULT["num_frames"]),
        "signals": list(signals or DEFAULT["signals"]),
    }
    videos = pd.DataFrame({"id": list(gens["id"]), "path": [str(Path(v).resolve()) for v in gens["video"]]})
    manifest = Manifest(videos.reindex(columns=list(VIDEO_FIELDS)), pd.DataFrame(columns=list(PAIR_FIELDS)), out_dir)
    cache_root = Path(out_dir) / "features"
    desc = geophys_encoder(opts["frames"], opts["layer"]).describe()
    cache = FeatureCache(cache_root, desc, ClipSpec(opts["num_frames"])).for_manifest(manifest)
    ids = set(videos["id"])
    before = (cache.done_ids() | set(cache.failures())) & ids
    t0 = time.perf_counter()
    scores = geophys_scores(manifest, cache_root, **opts, **extract_kwargs)
    seconds = time.perf_counter() - t0
    extracted = len(((cache.done_ids() | set(cache.failures())) & ids) - before)
    meta_file = cache_root / f"{name}.json"
    meta = json.loads(meta_file.read_text()) if meta_file.is_file() else {}
    if meta.get("geophys") != opts:  # other options: other features, so another cost
        meta = {"geophys": opts, "seconds": 0.0, "videos_scored": 0}
    if extracted:
        meta["seconds"] += seconds
        meta["videos_scored"] += extracted
        meta_file.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_json(meta_file, meta)
    reasons = cache.failures()
    failed = {v: reasons.get(v, {}).get("reason", "not scored") for v in gens["id"] if v not in scores}
    done = meta["videos_scored"]
    cost = {"seconds_per_video": meta["seconds"] / done if done else None, "calls_per_video": 0.0}
    f = opts["frames"]
    source = (
        f"GeoPhys: {f['name']} ({f.get('weights', 'package')} weights, {f.get('image_size')} px), "
        f"layer {opts['layer']}, {opts['num_frames']} frames"
    )
    return Column(name, scores, False, "baseline", source, cost, failed)


# --------------------------------------------------------------------------------------------- judges


def judge_columns(path: str | os.PathLike, gens: pd.DataFrame, dimensions: bool = True) -> list[Column]:
    """The headline column (and one per dimension) of a judge run: its output folder or its ``judgements.jsonl``."""
    p = Path(path)
    file = p / "judgements.jsonl" if p.is_dir() else p
    if not file.is_file():
        raise UserError(f"{path}: no judgements.jsonl (the output folder of `phyprobe judge run`, or that file)")
    names = _lookup(gens)
    headline: dict[str, float] = {}
    dims: dict[str, dict[str, float]] = {}
    failed: dict[str, str] = {}
    judge = None
    for line, rec in read_jsonl_objects(file, "judgements file"):
        key = rec.get("id") if rec.get("id") in names else rec.get("path", rec.get("id"))
        if key is None:
            raise GenerationsError(f"{file}:{line}: a judgement needs 'id' or 'path'")
        vid = _resolve(names, str(key), f"{file}:{line}")
        judge = judge or rec.get("judge")
        if rec.get("score") is None:
            failed[vid] = "; ".join(x.get("kind", "failed") for x in rec.get("failures", [])) or "no score"
            continue
        headline[vid] = finite_number(rec["score"], f"{file}:{line}: score")
        for d, v in (rec.get("dimensions") or {}).items():
            if isinstance(v, dict) and isinstance(v.get("score"), (int, float)) and math.isfinite(v["score"]):
                dims.setdefault(d, {})[vid] = float(v["score"])
    if not headline and not failed:
        raise GenerationsError(f"{file}: no judgements in this file")
    summary_file = file.parent / "judge_summary.json"
    summary = load_json_input(summary_file, "judge_summary.json") if summary_file.is_file() else {}
    if not isinstance(summary, dict):
        raise GenerationsError(f"{summary_file}: expected a JSON object")
    name = str(summary.get("judge") or judge or file.parent.name)
    c = summary.get("cost") or {}
    cost = {"seconds_per_video": c.get("seconds_per_video"), "calls_per_video": c.get("calls_per_video")}
    cols = [Column(name, headline, True, "judge", str(file), cost, failed)]
    if dimensions:
        cols += [Column(f"{name}:{d}", s, True, "dimension", str(file), cost) for d, s in dims.items()]
    return cols


# --------------------------------------------------------------------------------------------- CSVs


def csv_column(name: str, path: str | os.PathLike, gens: pd.DataFrame, higher_is_better: bool = False) -> Column:
    """A ``video,score`` (or ``video,raw_score``) CSV; ``video`` is a generation id or its path."""
    names = _lookup(gens)
    scores: dict[str, float] = {}
    try:
        with open(path, encoding="utf-8-sig", newline="") as f:
            reader = csv.DictReader(f)
            field_ = "raw_score" if "raw_score" in (reader.fieldnames or []) else "score"
            if "video" not in (reader.fieldnames or []) or field_ not in reader.fieldnames:
                raise GenerationsError(f"{path}: expected columns video and score, got {reader.fieldnames}")
            for i, row in enumerate(reader, 2):
                if row.get(field_) in (None, ""):
                    continue  # a video the tool could not score: reported as missing
                vid = _resolve(names, row["video"], f"{path}:{i}")
                try:
                    v = float(row[field_])
                except ValueError:
                    raise GenerationsError(f"{path}:{i}: score {row[field_]!r} is not a number") from None
                if not math.isfinite(v) or abs(v) > MAX_ABS:
                    raise GenerationsError(
                        f"{path}:{i}: score {row[field_]!r} is not a finite number of magnitude at most {MAX_ABS:g}"
                    )
                if vid in scores:
                    raise GenerationsError(f"{path}:{i}: a second score for {vid!r}")
                scores[vid] = v
    except UnicodeDecodeError:
        raise GenerationsError(f"{path}: not UTF-8 text") from None
    except FileNotFoundError:
        raise GenerationsError(f"{path}: no such score file") from None
    if not scores:
        raise GenerationsError(f"{path}: no score rows")
    return Column(
        name, scores, higher_is_better, "csv", str(path), {"seconds_per_video": None, "calls_per_video": None}
    )
