"""Rapidata video preference sets (``Rapidata/*-human-preference*``), parquet, one row per pair of
videos with aggregated crowd votes per dimension.

Two column schemas are published: ``file_name1/2`` with ``weighted_results1_<Dim>`` (older sets)
and ``video1/2`` with ``weighted_results_video1_<Dim>`` (newer sets); both are read. Every
``*.parquet`` under the root is classified by its columns: a file of neither pair schema (e.g.
``data/benchmark.parquet`` of ``Rapidata/text-2-video-human-preferences``) is listed in the report and
on stderr, and skipped.

The chosen dimension's weighted votes become a soft label. Which video the Coherence votes favour is
not published: Rapidata's coherence task asks which item "has more glitches", and Rapidata's own
evaluator inverts that share; the dataset cards speak of votes for the more coherent item. Hence the
option ``coherence_votes``: ``for_better`` (weight i = votes for video i as the more coherent one:
P(video1 more violating) = w2 / (w1 + w2)) or ``for_worse`` (weight i = votes for video i as the one
with more glitches: P(video1 more violating) = w1 / (w1 + w2)); a tie when no vote was cast. Not given,
it is measured against the set's Preference votes (:func:`check`): a training manifest is refused
unless the measurement establishes it; an evaluation split falls back to ``for_better`` with a
warning; a likely inversion is refused either way.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from .base import ManifestWriter, VideoIndex, check_count, fail, find_file, pair_frame, read_table, video_frame
from .directions import CheckResult, Decision, DirectionError, agreement, choice, warn

NAME = "rapidata"
# Published row counts of the sets, recognised by the set's name in the path (hub cache or download folder).
EXPECTED_ROWS = {
    "image-to-video-human-preference-seedance-1-pro": 198,
    "image-to-video-human-preference-hailuo-02-marey": 98,
}
SCHEMAS = {  # schema -> (video columns, weighted-vote column pattern)
    "file_name": (("file_name1", "file_name2"), "weighted_results{i}_{dim}"),
    "video": (("video1", "video2"), "weighted_results_video{i}_{dim}"),
}
WEIGHT_RE = {
    "file_name": re.compile(r"^weighted_results([12])_(.+)$", re.I),
    "video": re.compile(r"^weighted_results_video([12])_(.+)$", re.I),
}
VOTES = ("for_better", "for_worse")
REFERENCES = ("preference", "overall")  # the set's own overall judgement, asked as "which do you prefer"


def _column(df: pd.DataFrame, name: str) -> str | None:
    """Column names differ in case between releases (``Coherence`` / ``coherence``)."""
    for c in df.columns:
        if c.lower() == name.lower():
            return c
    return None


def classify(columns) -> str | None:
    """The pair schema a file's columns follow (``file_name`` / ``video``), None for any other file."""
    cols = list(columns)
    for schema, (videos, _) in SCHEMAS.items():
        if all(v in cols for v in videos) and any(WEIGHT_RE[schema].match(str(c)) for c in cols):
            return schema
    return None


def dimensions(columns, schema: str) -> dict[str, tuple[str, str]]:
    """Dimension (as spelled in the file) -> its two weighted-vote columns, for the dimensions with both."""
    found: dict[str, dict[str, str]] = {}
    for c in columns:
        m = WEIGHT_RE[schema].match(str(c))
        if m:
            found.setdefault(m.group(2).lower(), {})[m.group(1)] = str(c)
    return {WEIGHT_RE[schema].match(v["1"]).group(2): (v["1"], v["2"]) for v in found.values() if set(v) == {"1", "2"}}


def detect_schema(df: pd.DataFrame, dim: str, path: Path) -> tuple[tuple[str, str], tuple[str, str]]:
    for videos, pattern in SCHEMAS.values():
        weights = tuple(_column(df, pattern.format(i=i, dim=dim)) for i in (1, 2))
        if all(v in df.columns for v in videos) and all(weights):
            return videos, weights
    fail(
        path,
        f"neither published schema found for dimension {dim!r}: expected {SCHEMAS['file_name'][0]} + "
        f"weighted_results1_{dim} or {SCHEMAS['video'][0]} + weighted_results_video1_{dim}; found {list(df.columns)}",
    )


def pair_files(root: Path) -> tuple[list[tuple[Path, pd.DataFrame, str]], list[str]]:
    """Every parquet under ``root`` read and classified: (file, table, schema) of the pair files, and
    ``"file (why)"`` of the others."""
    root = Path(root)
    files = sorted(p for p in root.rglob("*.parquet") if p.is_file())
    if not files:
        find_file(root, ["*.parquet"], "Rapidata parquet")  # raises with the root named
    pairs, skipped = [], []
    for path in files:
        df = read_table(path)
        schema = classify(df.columns)
        if schema is None:
            skipped.append(f"{path} (not a pair file of either published schema; columns {list(df.columns)})")
        else:
            pairs.append((path, df, schema))
    return pairs, skipped


def _weights(df: pd.DataFrame, cols: tuple[str, str], path: Path) -> tuple[np.ndarray, np.ndarray]:
    out = []
    for col in cols:
        x = pd.to_numeric(df[col], errors="coerce").to_numpy(float)
        bad = ~np.isfinite(x) | (x < 0)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            fail(path, f"{df[col].iloc[i]!r} is not a non-negative vote weight", row=i, field=col)
        out.append(x)
    return out[0], out[1]


def check(root: Path, coherence_votes: str | None = None, dim: str = "Coherence", files=None) -> CheckResult:
    """Each dimension's winners against every other's, and the tested dimension, read as
    ``coherence_votes`` says (default ``for_better``), against the set's Preference (or Overall) votes.
    The other dimensions' questions ask for the better video ("Which video do you prefer?")."""
    votes = choice("coherence_votes", coherence_votes, VOTES)
    pairs, skipped = files if files is not None else pair_files(root)
    res = CheckResult(NAME, str(root), skipped=list(skipped))
    if not pairs:
        raise DirectionError(f"{root}: no Rapidata pair file found (skipped: {skipped})")
    spelled: dict[str, str] = {}
    frames = []
    for path, df, schema in pairs:
        res.files[str(path)] = len(df)
        cols = {}
        for d, (c1, c2) in dimensions(df.columns, schema).items():
            w1, w2 = _weights(df, (c1, c2), path)
            cols[d.lower()] = np.sign(w1 - w2)  # +1: more weight on video1
            spelled.setdefault(d.lower(), d)
        frames.append(pd.DataFrame(cols, index=range(len(df))))
    table = pd.concat(frames, ignore_index=True).fillna(0.0)  # a dimension a file lacks: no judgement
    signs = {d: table[d].to_numpy(float) for d in table.columns}
    tested = dim.lower()
    flip = {tested: -1.0 if votes == "for_worse" else 1.0}
    names = sorted(signs)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            la = spelled[a] + (f" ({votes})" if a == tested and votes else "")
            lb = spelled[b] + (f" ({votes})" if b == tested and votes else "")
            res.agreements.append(agreement(signs[a] * flip.get(a, 1.0), signs[b] * flip.get(b, 1.0), la, lb))
    ref = next((r for r in REFERENCES if r in signs and r != tested), None)
    if tested not in signs:
        res.notes.append(f"no {dim} votes in the pair files")
    elif ref is None:
        res.notes.append(f"no Preference / Overall votes to measure the {dim} direction against")
    elif tested == "coherence":
        reading = votes or "for_better"
        ev = agreement(
            signs[tested] * (-1.0 if reading == "for_worse" else 1.0),
            signs[ref],
            f"{spelled[tested]} read {reading}",
            spelled[ref],
        )
        inverse = "for_worse" if reading == "for_better" else "for_better"
        res.decisions.append(
            Decision("coherence_votes", reading, "declared" if votes else "default reading, not declared", ev, inverse)
        )
    return res


def convert(
    root: Path,
    out: Path,
    videos: str | None = None,
    dim: str = "Coherence",
    split: str = "test",
    coherence_votes: str | None = None,
    check_counts: bool = True,
) -> Path:
    root = Path(root)
    votes = choice("coherence_votes", coherence_votes, VOTES)
    coherence = dim.lower() == "coherence"
    if votes is not None and not coherence:
        raise ValueError(
            f"--set coherence_votes applies to dim=Coherence only (dim={dim!r}: its question asks for "
            "the better video, read as for_better)"
        )
    pairs, skipped = pair_files(root)
    if skipped:
        warn(
            f"rapidata: skipped {len(skipped)} parquet file(s) of another schema: "
            + "; ".join(s.split(" (")[0] for s in skipped)
        )
    if not pairs:
        fail(
            root,
            f"neither published schema found for dimension {dim!r} in any parquet file: expected "
            f"{SCHEMAS['file_name'][0]} + weighted_results1_{dim} or {SCHEMAS['video'][0]} + "
            f"weighted_results_video1_{dim}; skipped {skipped}",
        )
    for path, df, _ in pairs:
        detect_schema(df, dim, path)  # the chosen dimension in every pair file, or an error naming it
    direction = "for_better"  # the other dimensions' questions ask for the better video
    notes = []
    if coherence:
        res = check(root, votes, dim, files=(pairs, skipped))
        dec = res.decision("coherence_votes")
        evidence = dec.evidence.text() if dec else "; ".join(res.notes)
        if votes is not None:
            direction = votes
            notes.append(f"direction: coherence_votes={votes} (declared); check: {evidence}")
            if dec is not None and dec.verdict == "inverted":
                warn(
                    f"rapidata: the declared coherence_votes={votes} disagrees with the set's Preference votes "
                    f"({evidence}); see `phyprobe data check rapidata --root {root}`"
                )
        elif dec is not None and dec.verdict == "inverted":
            raise DirectionError(
                f"{root}: the Coherence votes read for_better disagree with the set's Preference votes ({evidence}): "
                "they look cast for the video with MORE glitches; choose with --set coherence_votes=for_worse "
                "(or for_better); evidence: `phyprobe data check rapidata --root ...`"
            )
        elif dec is not None and dec.verdict == "agrees":
            notes.append(f"direction: coherence_votes=for_better (established by the check: {evidence})")
        elif split == "train":
            raise DirectionError(
                f"{root}: refusing to write a training manifest from Coherence votes of unverified direction "
                f"({evidence}); Rapidata does not publish which video they favour: pass --set "
                "coherence_votes=for_better|for_worse (see docs/datasets/rapidata.md and `phyprobe data check`)"
            )
        else:
            notes.append(f"direction: coherence_votes=for_better UNVERIFIED (default for split={split}; {evidence})")
            warn(
                f"rapidata: Coherence votes read for_better, UNVERIFIED ({evidence}); "
                "pass --set coherence_votes=for_better|for_worse to state it"
            )
    index = VideoIndex(Path(videos) if videos else root)
    set_name = next((s for s in EXPECTED_ROWS if s in str(root.resolve())), None)
    with ManifestWriter(out, NAME) as w:
        w.report.notes.extend(notes)
        w.report.notes.extend(f"skipped {s}" for s in skipped)
        total = 0
        for path, df, _ in pairs:
            (c1, c2), (w1c, w2c) = detect_schema(df, dim, path)
            total += len(df)
            w1, w2 = _weights(df, (w1c, w2c), path)
            tot = w1 + w2
            worse1 = w2 if direction == "for_better" else w1  # the weight that says video1 is the worse one
            label = np.where(tot > 0, worse1 / np.where(tot > 0, tot, 1.0), 0.5)
            if (tot == 0).any():
                w.report.notes.append(f"{path}: {int((tot == 0).sum())} rows without {dim} votes are ties (label 0.5)")
            prompt = df[_column(df, "prompt")] if _column(df, "prompt") else pd.Series([None] * len(df))
            sides = []
            for col, mcol in ((c1, "model1"), (c2, "model2")):
                vals = df[col]
                if vals.map(lambda x: isinstance(x, (bytes, dict))).any():
                    fail(path, "videos embedded as bytes are not supported; download the set's video files", field=col)
                refs = vals.astype(str).str.strip()
                models = df[mcol] if mcol in df else pd.Series([None] * len(df))
                meta = [{"prompt": p, "model": m, "dimension": dim, "set": set_name} for p, m in zip(prompt, models)]
                v = video_frame(
                    NAME + ":" + refs.map(lambda r: re.sub(r"^https?://", "", r)),
                    [index.resolve(r) for r in refs],
                    NAME,
                    False,
                    split,
                    metadata=meta,
                )
                sides.append(v.assign(ref=refs.to_numpy(), file=str(path), row=np.arange(len(df))))
            # image-to-video sets condition both videos on one image (``prompt_asset``): the same first frame
            corr = "same_first_frame" if _column(df, "prompt_asset") else "same_prompt"
            w.report.files[str(path)] = len(df)
            w.add(
                pd.concat(sides, ignore_index=True),
                pair_frame(sides[0]["id"], sides[1]["id"], label, NAME, corr, "generated_vs_generated", split),
            )
        check_count(root, total, EXPECTED_ROWS.get(set_name), f"rows of {set_name}", check_counts)
        return w.close()
