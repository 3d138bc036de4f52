"""VideoFeedback2 (HF ``TIGER-Lab/VideoFeedback2``, the VideoScore2 data): per-video 1-5 human scores.

``phy_score`` (physical / common-sense consistency, higher = more plausible) is the target: it
labels every same-prompt pair (ties where equal) and is each video's magnitude through
``configs/magnitudes/videofeedback2.yaml``. Files as released (docs/datasets/videofeedback2.md):

test  ``data_27k_test (VideoScoreBench-v2).json`` (``data_27k_test.json`` before the Hub rename): a
      JSON list of flat records ``video_name, video_url, prompt, visual_score, t2v_score, phy_score``.
      500 videos as published; another count is a one-line warning, not an error.
train ``data_27k_train_SFT.json`` (LLaMA-Factory ShareGPT, TIGER-AI-Lab/VideoScore2
      ``training/SFT/prepare_sft_data.py``): ``{"conversations": [{"from": "human", ...}, {"from": "gpt",
      "value": ...}], "videos": ["videos/<video_name>.mp4"]}``, the scores closing the assistant text as
      ``(1) visual quality: V (2) text-to-video alignment: T (3) physical/common-sense consistency: P``
      and the prompt in the human text between ``its text prompt:`` and ``Based on the video content
      and the dimension definitions``; and/or ``data_27k_train_RL.json`` (Video-R1 style,
      ``training/RL/prepare_rl_data.py``): ``problem_id, problem, data_type, problem_type, options,
      solution, path, data_source`` with ``solution`` = ``<answer>visual quality: V; text-to-video
      alignment: T; physical/common-sense consistency: P</answer>`` and ``path`` =
      ``./vs2_videos/<video_name>.mp4``. A train JSON in the test's flat schema
      (``data_27k_train.json``, the authors' pre-SFT records) is read as the test file is.

The RL file is the SFT file re-encoded (``data/data_rl.py`` builds it record by record from the SFT
JSON, skipping records whose scores do not parse): the two describe the SAME videos. With both, the
train split is their union keyed by video (``Path(path).stem``), each video once; a video whose
prompt or any of its three scores differ between the files is an error naming both files and
records. Scores are read with a strict pattern: the three labels in that order, integers 1-5, at
the very end of the SFT assistant text / filling the whole RL ``<answer>``; prompts are compared with
whitespace collapsed and the trailing period(s) the authors' template appends removed.

A record whose scores or prompt do not parse is never guessed: it is left out and listed in the
conversion report (``notes``) with its file, record index and line; the authors skipped such records
too when deriving the RL file. More than ``max(10, 1 %)`` of a file's records failing means the file
is not in the format described here, and the conversion stops. A record missing its structure
(``conversations``/``videos``/``solution``/``path``) is an error naming file and record.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path, PurePosixPath

import numpy as np
import pandas as pd

from .base import (
    ConversionError,
    ManifestWriter,
    VideoIndex,
    check_count,
    fail,
    find_file,
    group_pairs,
    load_magnitude_map,
    pair_frame,
    parse_int,
    read_json_records,
    ref_parts,
    video_frame,
)

log = logging.getLogger(__name__)

NAME = "videofeedback2"
TEST_FILES = ["data_27k_test (VideoScoreBench-v2).json", "data_27k_test.json"]
TRAIN_FILES = {"sft": "data_27k_train_SFT.json", "rl": "data_27k_train_RL.json", "flat": "data_27k_train.json"}
EXPECTED_ROWS = {"test": 500, "train": None}  # test: VideoScore-Bench-v2; train: no per-file count published
REQUIRED = ("video_name", "prompt", "phy_score")
SCORES = ("visual_score", "t2v_score", "phy_score")
MAX_UNPARSED = (10, 0.01)  # a file stops the conversion past max(10 records, 1 % of its records)

_SEP = r"\s*[;,]?\s*"
_BLOCK = (
    r"(?:\(1\)\s*)?visual quality:\s*(\d+)"
    + _SEP
    + r"(?:\(2\)\s*)?text-to-video alignment:\s*(\d+)"
    + _SEP
    + r"(?:\(3\)\s*)?physical/common-sense consistency:\s*(\d+)"
)
SFT_SCORES = re.compile(_BLOCK + r"\s*\Z", re.IGNORECASE)
RL_SCORES = re.compile(r"\A\s*<answer>\s*" + _BLOCK + r"\s*</answer>\s*\Z", re.IGNORECASE)
PROMPT_OPEN, PROMPT_CLOSE = "its text prompt:", "Based on the video content and the dimension definitions"
_WS = re.compile(r"\s*")


class _Unparsed(Exception):
    """A record whose scores or prompt do not read: left out and reported, never guessed."""


# ---------------------------------------------------------------------------------------------
# reading the released files


def _records_with_lines(path: Path) -> list[tuple[int, dict]]:
    """``(line, record)`` for each object of a JSON list (or JSON lines): the line a record starts on."""
    text = path.read_bytes().decode("utf-8", errors="replace")
    i = _WS.match(text).end()
    if not text.startswith("[", i):
        return [(n, r) for n, r in zip(_jsonl_lines(text), read_json_records(path))]
    dec, out, line, pos = json.JSONDecoder(), [], 1, 0
    i = _WS.match(text, i + 1).end()
    while not text.startswith("]", i):
        line += text.count("\n", pos, i)
        pos = i
        try:
            obj, i = dec.raw_decode(text, i)
        except json.JSONDecodeError as e:
            fail(path, f"not valid JSON (line {e.lineno}: {e.msg})")
        if not isinstance(obj, dict):
            raise ConversionError(
                f"{path}: record {len(out)} (line {line}): expected a JSON object, got {type(obj).__name__}"
            )
        out.append((line, obj))
        i = _WS.match(text, i).end()
        if text.startswith(",", i):
            i = _WS.match(text, i + 1).end()
        elif not text.startswith("]", i):
            fail(path, f"not valid JSON (line {text.count(chr(10), 0, i) + 1}: expected ',' or ']')")
    return out


def _jsonl_lines(text: str) -> list[int]:
    return [n for n, s in enumerate(text.splitlines(), start=1) if s.strip()]


def _scores(pattern: re.Pattern, text, what: str) -> tuple[int, int, int]:
    if not isinstance(text, str):
        raise _Unparsed(f"{what} is not text")
    m = pattern.search(text)
    if m is None:
        tail = " ".join(text.split())[-90:]
        raise _Unparsed(
            f"no 'visual quality / text-to-video alignment / physical/common-sense consistency' "
            f"scores closing the {what} (ends {tail!r})"
        )
    s = tuple(int(x) for x in m.groups())
    if not all(1 <= x <= 5 for x in s):
        raise _Unparsed(f"scores {s} in the {what} are not all integers in [1, 5]")
    return s


def _prompt(text, what: str) -> str:
    if not isinstance(text, str) or text.count(PROMPT_OPEN) != 1:
        raise _Unparsed(f"the {what} does not hold the text prompt once after {PROMPT_OPEN!r}")
    body = text.split(PROMPT_OPEN, 1)[1]
    if PROMPT_CLOSE not in body:
        raise _Unparsed(f"the {what} has no {PROMPT_CLOSE!r} after the text prompt")
    prompt = clean_prompt(body.split(PROMPT_CLOSE, 1)[0])
    if not prompt:
        raise _Unparsed(f"the {what} has an empty text prompt")
    return prompt


def clean_prompt(text: str) -> str:
    """Whitespace collapsed, the trailing period(s) of the authors' ``$t2v_prompt.`` template removed."""
    return " ".join(str(text).split()).rstrip(". ")


def _video_ref(path: Path, i: int, line: int, value, field: str) -> str:
    ok = isinstance(value, str) and value.strip() and PurePosixPath(ref_parts(value.strip())[-1]).stem
    if not ok:
        raise ConversionError(
            f"{path}: record {i} (line {line}), field {field!r}: expected a video path, got {value!r}"
        )
    return value.strip()


def _sft_record(path: Path, i: int, line: int, r: dict) -> dict:
    vids, conv = r.get("videos"), r.get("conversations")
    if not isinstance(vids, list) or len(vids) != 1:
        raise ConversionError(
            f"{path}: record {i} (line {line}), field 'videos': expected a list of one video path, got {str(vids)[:120]}"
        )
    ref = _video_ref(path, i, line, vids[0], "videos")
    turns = conv if isinstance(conv, list) and all(isinstance(t, dict) for t in conv) else None
    human = [t for t in turns or [] if t.get("from") == "human"]
    gpt = [t for t in turns or [] if t.get("from") == "gpt"]
    if len(human) != 1 or len(gpt) != 1:
        raise ConversionError(
            f"{path}: record {i} (line {line}), field 'conversations': expected one 'human' and one "
            "'gpt' turn ({'from': ..., 'value': ...})"
        )
    v, t, p = _scores(SFT_SCORES, gpt[0].get("value"), "assistant ('gpt') turn")
    return {
        "ref": ref,
        "prompt": _prompt(human[0].get("value"), "'human' turn"),
        "visual_score": v,
        "t2v_score": t,
        "phy_score": p,
    }


def _rl_record(path: Path, i: int, line: int, r: dict) -> dict:
    if "solution" not in r or "problem" not in r:
        raise ConversionError(
            f"{path}: record {i} (line {line}): expected the fields 'problem' and 'solution', found {sorted(r)}"
        )
    ref = _video_ref(path, i, line, r.get("path"), "path")
    v, t, p = _scores(RL_SCORES, r["solution"], "'solution' <answer>")
    return {"ref": ref, "prompt": _prompt(r["problem"], "'problem'"), "visual_score": v, "t2v_score": t, "phy_score": p}


def read_train_file(path: Path, kind: str) -> tuple[pd.DataFrame, list[str]]:
    """One released train JSON as rows ``video_name, ref, prompt, scores, file, record, line``, and the
    report lines of the records left out because their scores or prompt do not parse."""
    parse = _sft_record if kind == "sft" else _rl_record
    records = _records_with_lines(path)
    rows, left_out = [], []
    for i, (line, r) in enumerate(records):
        try:
            row = parse(path, i, line, r)
        except _Unparsed as e:
            left_out.append(f"{path}: record {i} (line {line}) left out: {e}")
            continue
        rows.append(
            {
                "video_name": PurePosixPath(ref_parts(row["ref"])[-1]).stem,
                **row,
                "file": str(path),
                "record": i,
                "line": line,
            }
        )
    limit = max(MAX_UNPARSED[0], int(MAX_UNPARSED[1] * len(records)))
    if len(left_out) > limit:
        raise ConversionError(
            f"{path}: {len(left_out)} of {len(records)} records have no parseable scores or prompt "
            f"(more than {limit}): not the released {kind.upper()} format? First: {left_out[0]}"
        )
    for msg in left_out:
        log.warning("%s", msg)
    cols = ["video_name", "ref", "prompt", *SCORES, "file", "record", "line"]
    return pd.DataFrame(rows, columns=cols), left_out


def read_flat(path: Path) -> pd.DataFrame:
    """The test file (and a flat train file): ``video_name, video_url, prompt, *_score`` records."""
    records = read_json_records(path)
    for i, r in enumerate(records):
        for k in REQUIRED:
            if k not in r or r[k] is None or r[k] == "":
                fail(path, "required key missing or empty", row=i, field=k)
    df = pd.DataFrame(records)
    out = pd.DataFrame(
        {
            "video_name": df["video_name"].astype(str).str.strip(),
            "prompt": df["prompt"].astype(str),
            "video_url": df["video_url"].fillna("").astype(str) if "video_url" in df else "",
            "file": str(path),
            "record": np.arange(len(df)),
            "line": None,
        }
    )
    out["phy_score"] = parse_int(df["phy_score"], path, "phy_score", 1, 5, row_offset=0)
    for k in ("visual_score", "t2v_score"):
        if k in df:
            out[k] = df[k]
    return out


# ---------------------------------------------------------------------------------------------
# one video per row


def _where(r) -> str:
    return f"{r['file']}: record {r['record']}" + (f" (line {r['line']})" if r.get("line") is not None else "")


def merge_train(tables: list[pd.DataFrame]) -> tuple[pd.DataFrame, list[dict]]:
    """The train files' rows, one per video; a video read twice (in one file or across the SFT and RL
    files) must agree on prompt and all three scores, else ConversionError naming both records."""
    rows = pd.concat(tables, ignore_index=True)
    rows["_key"] = rows["prompt"].map(clean_prompt)
    first: dict[str, dict] = {}
    dups, sources = [], {}
    for r in rows.to_dict("records"):
        name = r["video_name"]
        if name not in first:
            first[name], sources[name] = r, [r["file"]]
            continue
        f = first[name]
        diff = [k for k in ("_key", *SCORES) if k in r and k in f and not _same(f[k], r[k])]
        if diff:
            fields = ", ".join("prompt" if k == "_key" else k for k in diff)
            raise ConversionError(
                f"video {name!r}: {_where(f)} and {_where(r)} disagree on {fields} "
                f"({[f[k] for k in diff]} vs {[r[k] for k in diff]})"
            )
        if r["file"] == f["file"]:
            dups.append({"id": f"{NAME}:{name}", "file": r["file"], "row": int(r["record"])})
        elif r["file"] not in sources[name]:
            sources[name].append(r["file"])
    out = pd.DataFrame(list(first.values())).drop(columns="_key")
    out["files"] = [sources[n] for n in out["video_name"]]
    return out, dups


def _missing(x) -> bool:
    return x is None or (isinstance(x, float) and np.isnan(x))


def _same(a, b) -> bool:
    return _missing(a) or _missing(b) or a == b  # a score one file does not give cannot disagree


def _plain(x):
    return x.item() if isinstance(x, np.generic) else x


def video_rows(rows: pd.DataFrame, split: str, index: VideoIndex, mag_map) -> pd.DataFrame:
    names = rows["video_name"].astype(str)
    refs = [
        [x for x in (r.get("ref"), r.get("video_url")) if isinstance(x, str) and x] for r in rows.to_dict("records")
    ]
    paths = [index.resolve(n) or next((p for p in map(index.resolve, rs) if p), None) for n, rs in zip(names, refs)]
    phy = rows["phy_score"].to_numpy(dtype=np.int64)
    meta = []
    for r in rows.to_dict("records"):
        m = {"prompt": r["prompt"], "video_name": r["video_name"]}
        m.update({k: _plain(r[k]) for k in SCORES if k in r and not _missing(r[k])})
        for k in ("video_url", "ref"):
            if isinstance(r.get(k), str) and r[k]:
                m["video_url" if k == "video_url" else "video_path"] = r[k]
        if isinstance(r.get("files"), list):
            m["files"] = [Path(f).name for f in r["files"]]
        meta.append(m)
    v = video_frame(
        [f"{NAME}:{n}" for n in names], paths, NAME, False, split, magnitude=mag_map({"phy_score": phy}), metadata=meta
    )
    ref_col = [rs[0] if rs else n for rs, n in zip(refs, names)]
    return v.assign(
        ref=ref_col,
        file=rows["file"].to_numpy(),
        row=rows["record"].to_numpy(),
        prompt=rows["prompt"].map(clean_prompt).to_numpy(),
    )


# ---------------------------------------------------------------------------------------------


def convert(
    root: Path, out: Path, videos: str | None = None, magnitudes=None, configs=None, check_counts: bool = True
) -> Path:
    root = Path(root)
    index = VideoIndex(Path(videos) if videos else root)
    mag_map = load_magnitude_map(NAME, magnitudes, configs)
    train = {
        k: find_file(root, [n], f"VideoFeedback2 train {k.upper()} JSON", required=False)
        for k, n in TRAIN_FILES.items()
    }
    test = find_file(root, TEST_FILES, "VideoFeedback2 test JSON", required=False)
    if not test and not any(train.values()):
        raise FileNotFoundError(
            f"{root}: no VideoFeedback2 JSON found (looked for {[*TRAIN_FILES.values(), *TEST_FILES]})"
        )
    with ManifestWriter(out, NAME) as w:
        tables = []
        for kind, path in train.items():
            if path is None:
                continue
            t, left_out = (read_flat(path), []) if kind == "flat" else read_train_file(path, kind)
            w.report.files[str(path)] = len(t)
            w.report.notes.extend(left_out)
            tables.append(t)
        if tables:
            v, dups = merge_train(tables)
            w.report.duplicate_videos.extend(dups)
            _write(w, video_rows(v, "train", index, mag_map))
        else:
            w.report.notes.append(f"no train JSON under {root} (looked for {list(TRAIN_FILES.values())})")
        if test is None:
            w.report.notes.append(f"no test JSON under {root} (looked for {TEST_FILES})")
        else:
            t = read_flat(test)
            off = check_count(test, len(t), EXPECTED_ROWS["test"], "videos", check_counts, stated="500")
            if off:
                w.report.notes.append(off)
            w.report.files[str(test)] = len(t)
            v = video_rows(t, "test", index, mag_map)
            dup = v["id"].duplicated()
            w.report.duplicate_videos.extend(v.loc[dup, ["id", "file", "row"]].to_dict("records"))
            _write(w, v[~dup])
        return w.close()


def _write(w: ManifestWriter, v: pd.DataFrame) -> None:
    p = group_pairs(v, "prompt", "magnitude", higher_means="violation")
    w.add(v, pair_frame(p["a"], p["b"], p["label"], NAME, "same_prompt", "generated_vs_generated", p["split"]))
