"""MonetBench / VisionRewardDB-Video (``zai-org/VisionRewardDB-Video``), parquet.

``test`` (the MonetBench video preference test, 1,000 pairs): ``standard_answer`` ``video1`` /
``video2`` / ``tie`` -> pair label. ``train`` (40,743 annotated videos): the annotations' "physics
law" (1-5) and "movement reality" (0-4) are mapped to one magnitude per video by
``configs/magnitudes/monetbench.yaml``, and the videos of one prompt are paired by it (ties where
equal). Only paths are published; the videos are fetched separately and found under ``videos``
(default: the dataset root) by path or file name.

Neither direction has a primary source, so both are named options:

- ``standard_answer``: ``names_preferred`` (``video1`` names the preferred, less violating video:
  label 0) or ``names_rejected`` (label 1). Not given: ``names_preferred`` with a warning (the
  test split is an evaluation split).
- ``annotation_codes``: ``higher_better`` (a higher code = the more plausible video) or
  ``higher_worse``. The magnitude map states the reading it is written for (``annotation_codes:``);
  ``higher_worse`` reflects the codes on the map's range before mapping. Without ``--set``, the map's
  reading is used only when :func:`check` agrees on the files; otherwise the training pairs are refused.

A reading taken without ``--set`` is checked on the files (:func:`check`) and refused when they
contradict it.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from .base import (
    ManifestWriter,
    VideoIndex,
    check_count,
    fail,
    find_file,
    group_pairs,
    load_magnitude_map,
    pair_frame,
    read_table,
    ref_key,
    require_columns,
    video_frame,
)
from .directions import CheckResult, Decision, DirectionError, agreement, choice, warn

NAME = "monetbench"
FILES = {"test": ["monetbench/test-*.parquet", "test/test-*.parquet"], "train": ["train/train-*.parquet"]}
EXPECTED_ROWS = {"test": 1000, "train": 40743}
CODES = ("higher_better", "higher_worse")
ANSWER_READINGS = ("names_preferred", "names_rejected")
ANSWERS = {"video1": 0.0, "video2": 1.0, "tie": 0.5}  # P(video1 more violating), standard_answer=names_preferred
TEST_COLUMNS = ("internal_id", "prompt", "standard_answer", "video1_path", "video2_path")
TRAIN_COLUMNS = ("video_path", "prompt", "annotation")


def answers(reading: str) -> dict[str, float]:
    return ANSWERS if reading == "names_preferred" else {k: 1.0 - v for k, v in ANSWERS.items()}


def _answer_labels(df: pd.DataFrame, path: Path, reading: str) -> np.ndarray:
    label = df["standard_answer"].astype(str).str.strip().map(answers(reading))
    if label.isna().any():
        i = int(np.flatnonzero(label.isna().to_numpy())[0])
        fail(path, f"{df['standard_answer'].iloc[i]!r} is not one of {sorted(ANSWERS)}", row=i, field="standard_answer")
    return label.to_numpy(float)


def _test(path: Path, index: VideoIndex, w: ManifestWriter, check_counts: bool, reading: str) -> None:
    df = read_table(path)
    require_columns(df, TEST_COLUMNS, path)
    check_count(path, len(df), EXPECTED_ROWS["test"], "pairs", check_counts)
    label = _answer_labels(df, path, reading)
    sides = []
    for k in ("video1_path", "video2_path"):
        refs = df[k].astype(str).str.strip()
        meta = [{"prompt": p, "internal_id": str(i)} for p, i in zip(df["prompt"], df["internal_id"])]
        v = video_frame(NAME + ":" + refs, [index.resolve(r) for r in refs], NAME, False, "test", metadata=meta)
        sides.append(v.assign(ref=refs.to_numpy(), file=str(path), row=np.arange(len(df))))
    w.report.files[str(path)] = len(df)
    w.add(
        pd.concat(sides, ignore_index=True),
        pair_frame(sides[0]["id"], sides[1]["id"], label, NAME, "same_prompt", "generated_vs_generated", "test"),
    )


def _annotation(value, path: Path, row: int) -> dict:
    """The per-video annotation: a struct column (dict) or its JSON text."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            fail(path, "not a JSON object", row=row, field="annotation")
    if not isinstance(value, dict):
        fail(path, f"expected an object, got {type(value).__name__}", row=row, field="annotation")
    return value


def _codes(ann: list[dict], fields, path: Path) -> dict[str, np.ndarray]:
    cols = {}
    for f in fields:
        vals = pd.to_numeric(pd.Series([a.get(f) for a in ann], dtype=object), errors="coerce")
        bad = vals.isna() & pd.Series([a.get(f) is not None for a in ann])
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            fail(path, f"{ann[i].get(f)!r} is not a number", row=i, field=f"annotation.{f}")
        cols[f] = vals.to_numpy(float)
    return cols


def _reflect(cols: dict[str, np.ndarray], mag_map) -> dict[str, np.ndarray]:
    """Codes read the other way round: each reflected on its field's range in the map."""
    out = {}
    for f, v in cols.items():
        x = mag_map.points[f][0]
        out[f] = x[0] + x[-1] - v
    return out


def _train(path: Path, index: VideoIndex, mag_map, w: ManifestWriter, check_counts: bool, codes: str) -> None:
    df = read_table(path)
    require_columns(df, TRAIN_COLUMNS, path)
    check_count(path, len(df), EXPECTED_ROWS["train"], "rows", check_counts)
    ann = [_annotation(a, path, i) for i, a in enumerate(df["annotation"])]
    cols = _codes(ann, mag_map.fields, path)
    if codes == "higher_worse":
        cols = _reflect(cols, mag_map)
    try:
        mag = mag_map(cols)
    except ValueError as e:
        fail(path, str(e))
    refs = df["video_path"].astype(str).str.strip()
    meta = [
        {"prompt": p, "annotation": a, **({"internal_id": str(i)} if "internal_id" in df else {})}
        for p, a, i in zip(df["prompt"], ann, df.get("internal_id", pd.Series([None] * len(df))))
    ]
    v = video_frame(
        NAME + ":" + refs, [index.resolve(r) for r in refs], NAME, False, "train", magnitude=mag, metadata=meta
    )
    v = v.assign(ref=refs.to_numpy(), file=str(path), row=np.arange(len(df)), prompt=df["prompt"].to_numpy())
    dup = v["id"].duplicated()
    w.report.duplicate_videos.extend(v.loc[dup, ["id", "file", "row"]].to_dict("records"))
    v = v[~dup]
    known = v[v["magnitude"].notna()]
    p = group_pairs(known, "prompt", "magnitude", higher_means="violation")
    w.report.files[str(path)] = len(df)
    w.add(v, pair_frame(p["a"], p["b"], p["label"], NAME, "same_prompt", "generated_vs_generated", p["split"]))


def _files(root: Path) -> dict[str, Path | None]:
    found = {
        s: find_file(root, names, f"VisionRewardDB-Video {s} parquet", required=False) for s, names in FILES.items()
    }
    if not any(found.values()):
        raise FileNotFoundError(f"{root}: no VisionRewardDB-Video parquet found (looked for {FILES})")
    return found


def declared_codes(magnitudes=None, configs=None) -> tuple[str | None, str]:
    """The ``annotation_codes`` a magnitude map states it is written for, and where (None: not stated)."""
    if isinstance(magnitudes, dict):
        return choice("annotation_codes", magnitudes.get("annotation_codes"), CODES), "the magnitude map given"
    if magnitudes is None:
        from ...config_files import config_dir

        magnitudes = (Path(configs) if configs else config_dir()) / "magnitudes" / f"{NAME}.yaml"
    path = Path(magnitudes)
    if not path.is_file():
        return None, str(path)
    with open(path, encoding="utf-8") as f:
        cfg = yaml.safe_load(f) or {}
    return choice("annotation_codes", cfg.get("annotation_codes"), CODES), str(path)


def _better_pairs(train: pd.DataFrame, score: np.ndarray) -> np.ndarray:
    """Every same-prompt pair of training videos: +1 where the first has the higher ``score``."""
    idx = pd.DataFrame({"prompt": train["prompt"].to_numpy(), "i": np.arange(len(train))})
    m = idx.merge(idx, on="prompt")
    m = m[m["i_x"] < m["i_y"]]
    return np.sign(score[m["i_x"].to_numpy()] - score[m["i_y"].to_numpy()]) if len(m) else np.zeros(0)


def check(
    root: Path, annotation_codes: str | None = None, standard_answer: str | None = None, magnitudes=None, configs=None
) -> CheckResult:
    """The code fields ("physics law", "movement reality"), read as ``annotation_codes`` says, against
    the test's ``standard_answer`` on the test pairs whose two videos carry annotations, else against
    the other annotation fields (read higher = better) on same-prompt training pairs; and the
    ``standard_answer`` reading against the annotations of the test videos, where there are any."""
    root = Path(root)
    codes = choice("annotation_codes", annotation_codes, CODES)
    answer = choice("standard_answer", standard_answer, ANSWER_READINGS)
    map_codes, map_where = declared_codes(magnitudes, configs)
    codes_how = "declared" if codes else (f"declared by {map_where}" if map_codes else "default reading, not declared")
    codes = codes or map_codes or "higher_better"
    answer_how = "declared" if answer else "default reading, not declared"
    answer = answer or "names_preferred"
    mag_map = load_magnitude_map(NAME, magnitudes, configs)
    found = _files(root)
    res = CheckResult(NAME, str(root))
    test = train = None
    if found["test"]:
        test = read_table(found["test"])
        require_columns(test, TEST_COLUMNS, found["test"])
        res.files[str(found["test"])] = len(test)
    if found["train"]:
        train = read_table(found["train"])
        require_columns(train, TRAIN_COLUMNS, found["train"])
        res.files[str(found["train"])] = len(train)
    if train is None:
        res.notes.append("no train annotations: the code direction cannot be measured")
        return res
    ann = [_annotation(a, found["train"], i) for i, a in enumerate(train["annotation"])]
    numeric = [
        k
        for k in dict.fromkeys(k for a in ann for k in a)
        if all(a.get(k) is None or isinstance(a.get(k), (int, float)) and not isinstance(a.get(k), bool) for a in ann)
    ]
    code_fields = [f for f in mag_map.fields if f in numeric]
    others = [f for f in numeric if f not in code_fields]
    cols = _codes(ann, numeric, found["train"])
    sign = -1.0 if codes == "higher_worse" else 1.0
    better = {f: np.nan_to_num(cols[f]) * (sign if f in code_fields else 1.0) for f in numeric}
    label = {f: f + (f" ({codes})" if f in code_fields else " (higher_better, assumed)") for f in numeric}
    pair_signs = {f: _better_pairs(train, better[f]) for f in numeric}
    for i, a in enumerate(numeric):
        for b in numeric[i + 1 :]:
            res.agreements.append(agreement(pair_signs[a], pair_signs[b], label[a], label[b]))
    code_score = np.nanmean(np.stack([cols[f] * sign for f in code_fields]), axis=0) if code_fields else None
    other_score = np.nanmean(np.stack([cols[f] for f in others]), axis=0) if others else None
    inverse_codes = "higher_worse" if codes == "higher_better" else "higher_better"
    decided_codes = False
    if test is not None:
        key = {ref_key(str(r).strip()): i for i, r in enumerate(train["video_path"])}
        i1 = [key.get(ref_key(str(r).strip())) for r in test["video1_path"]]
        i2 = [key.get(ref_key(str(r).strip())) for r in test["video2_path"]]
        both = np.array([a is not None and b is not None for a, b in zip(i1, i2)], bool)
        res.notes.append(f"{int(both.sum())} of {len(test)} test pairs have both videos annotated in the train file")
        if both.any():
            lab = _answer_labels(test, found["test"], answer)[both]
            ans_sign = np.sign(0.5 - lab)  # +1: video1 is the better (less violating) one
            a1, a2 = np.array([i1[k] for k in np.flatnonzero(both)]), np.array([i2[k] for k in np.flatnonzero(both)])
            if code_score is not None:
                ev = agreement(
                    np.sign(code_score[a1] - code_score[a2]),
                    ans_sign,
                    f"codes read {codes}",
                    f"standard_answer read {answer}",
                )
                res.decisions.append(Decision("annotation_codes", codes, codes_how, ev, inverse_codes))
                decided_codes = True
            if other_score is not None:
                ev = agreement(
                    ans_sign,
                    np.sign(other_score[a1] - other_score[a2]),
                    f"standard_answer read {answer}",
                    "other annotation fields (higher_better, assumed)",
                )
                res.decisions.append(
                    Decision(
                        "standard_answer",
                        answer,
                        answer_how,
                        ev,
                        "names_rejected" if answer == "names_preferred" else "names_preferred",
                    )
                )
        else:
            res.notes.append("standard_answer cannot be measured: no test pair has annotated videos")
    if not decided_codes and code_score is not None and other_score is not None:
        ev = agreement(
            _better_pairs(train, code_score),
            _better_pairs(train, other_score),
            f"codes read {codes}",
            "other annotation fields (higher_better, assumed)",
        )
        res.decisions.append(Decision("annotation_codes", codes, codes_how, ev, inverse_codes))
    return res


def convert(
    root: Path,
    out: Path,
    videos: str | None = None,
    magnitudes=None,
    configs=None,
    annotation_codes: str | None = None,
    standard_answer: str | None = None,
    check_counts: bool = True,
) -> Path:
    root = Path(root)
    codes = choice("annotation_codes", annotation_codes, CODES)
    answer = choice("standard_answer", standard_answer, ANSWER_READINGS)
    index = VideoIndex(Path(videos) if videos else root)
    found = _files(root)
    notes = []
    res = (
        check(root, codes, answer, magnitudes, configs)
        if found["train"] and (codes is None or answer is None)
        else None
    )
    if found["test"]:
        if answer is None:
            dec = res.decision("standard_answer") if res else None
            if dec is not None and dec.verdict == "inverted":
                raise DirectionError(
                    f"{root}: standard_answer read names_preferred disagrees with the annotations "
                    f"({dec.evidence.text()}); choose with --set standard_answer=names_rejected "
                    "(or names_preferred)"
                )
            answer = "names_preferred"
            notes.append("direction: standard_answer=names_preferred UNVERIFIED (default for the test split)")
            warn(
                "monetbench: standard_answer read names_preferred (video1 = the preferred video), UNVERIFIED; "
                "pass --set standard_answer=names_preferred|names_rejected to state it"
            )
        else:
            notes.append(f"direction: standard_answer={answer} (declared)")
    mag_map = None
    if found["train"]:
        mag_map = load_magnitude_map(NAME, magnitudes, configs)
        if codes is None:
            map_codes, where = declared_codes(magnitudes, configs)
            if map_codes is None:
                raise DirectionError(
                    f"{root}: refusing to write training pairs from annotation codes of unverified direction: neither "
                    f"--set annotation_codes=higher_better|higher_worse nor 'annotation_codes:' in {where}"
                )
            dec = res.decision("annotation_codes") if res else None
            if dec is not None and dec.verdict == "inverted":
                raise DirectionError(
                    f"{root}: annotation_codes={map_codes} (declared by {where}) disagrees with the files "
                    f"({dec.evidence.text()}); choose with --set annotation_codes={dec.inverse} "
                    f"(or {map_codes})"
                )
            if dec is None or dec.verdict != "agrees":  # no primary source and no evidence: the user decides
                measured = dec.evidence.text() if dec else "nothing to measure it against"
                raise DirectionError(
                    f"{root}: refusing to write training pairs from annotation codes of unverified direction "
                    f"({where} assumes {map_codes}; the check on these files: {measured}); pass "
                    "--set annotation_codes=higher_better|higher_worse, see `phyprobe data check monetbench`"
                )
            codes = map_codes
            notes.append(
                f"direction: annotation_codes={codes} declared by {where} (no primary source); the check on these "
                f"files agrees: {dec.evidence.text()}"
            )
            warn(
                f"monetbench: annotation codes read {codes}, as {where} states and the check on these files agrees; "
                "no primary source: pass --set annotation_codes=higher_better|higher_worse to state it"
            )
        else:
            notes.append(f"direction: annotation_codes={codes} (declared)")
    with ManifestWriter(out, NAME) as w:
        w.report.notes.extend(notes)
        if found["test"]:
            _test(found["test"], index, w, check_counts, answer)
        if found["train"]:
            _train(found["train"], index, mag_map, w, check_counts, codes)
        return w.close()
