"""One table of several evaluations of the same benchmark: PhyProbe, judges, baselines, external CSVs, and a
paired test of their pairwise accuracy.

:func:`comparison_table`: rows are the figures every run has (``value [low, high]``) followed by the cost rows;
columns are the evaluators, named as their ``metrics.json`` names them, with "(stand-in)" appended when the
evaluator was an offline stand-in, so a stand-in's figure can never be read as the real tool's.

:func:`paired_accuracy`: is evaluator A's pairwise accuracy above B's *on the same pairs*? Every run's per-pair
credit (1 / 0.5 at a model tie / 0, from the raw scores of its ``scores.csv``) on the benchmark pairs all runs
scored, resampled together (paired bootstrap, :func:`phyprobe.eval.paired.paired_statistics`): A - B with its
interval, a two-sided p-value and Holm's correction over the pairs of evaluators.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..config_files import SOURCE_ROOT
from ..data.manifest import Manifest, one_of
from ..errors import InvalidOption, MissingInput
from ..eval.metrics import pair_credit
from ..eval.paired import paired_statistics
from ..eval.protocols import TWIN_KEYS, Benchmark, flatten_metrics, load_benchmark, violated_twin_pairs
from ..io.json_input import load_json_input

COST_ROWS = (
    ("cost: model calls / video", "calls_per_video"),
    ("cost: tokens / video", None),
    ("cost: seconds / video", "seconds_per_video"),
)

PAIRED_COLUMNS = (
    "figure",
    "A",
    "B",
    "accuracy_A",
    "accuracy_B",
    "diff",
    "low",
    "high",
    "p",
    "p_holm",
    "significant",
    "pairs",
    "left_out_A",
    "left_out_B",
)


def _cell(leaf: dict) -> str:
    v = leaf.get("value")
    if v is None:
        return "—"
    return f"{v:.3f} [{leaf['low']:.3f}, {leaf['high']:.3f}]" if leaf.get("low") is not None else f"{v:.3f}"


def _label(m: dict) -> str:
    name = str(m.get("evaluator"))
    return name if not m.get("standin") or "stand-in" in name else f"{name} (stand-in)"


def _columns(runs: list[dict], run_dirs: Sequence[str | os.PathLike]) -> list[str]:
    """One distinct name per run: the evaluator's, with the run directory's name added when two collide."""
    cols = [_label(m) for m in runs]
    if len(set(cols)) < len(cols):
        cols = [f"{c} ({Path(d).name})" for c, d in zip(cols, run_dirs)]
    if len(set(cols)) < len(cols):
        cols = [f"{c} ({d})" for c, d in zip(cols, run_dirs)]
    return cols


def _read_metrics(run_dir: str | os.PathLike) -> dict:
    path = Path(run_dir) / "metrics.json"
    if not path.is_file():
        raise MissingInput(f"{path}: not there (is {run_dir} an eval.py output directory?)")
    m = load_json_input(path, "metrics.json")
    if not isinstance(m, dict):
        raise InvalidOption(f"{path}: not an eval.py run's metrics (not a JSON object)")
    if "benchmarks" in m and "benchmark" not in m:
        raise InvalidOption(
            f"{path}: a train.py run (figures of several benchmarks on its own data); evaluate it on one "
            f"benchmark first, `python eval.py run={run_dir} benchmark=NAME`, and compare those outputs"
        )
    if "benchmark" not in m or "results" not in m:
        raise InvalidOption(f"{path}: not an eval.py run's metrics (no 'benchmark' and 'results')")
    return m


def comparison_table(run_dirs: list[str | os.PathLike]) -> pd.DataFrame:
    """Figures shared by all runs (first run's order) plus cost rows, one column per evaluator."""
    runs = [_read_metrics(d) for d in run_dirs]
    benches = {m["benchmark"] for m in runs}
    if len(benches) > 1:
        raise InvalidOption(
            "runs are on different benchmarks ("
            + "; ".join(f"{d}: {m['benchmark']}" for d, m in zip(run_dirs, runs))
            + "): compare one benchmark at a time"
        )
    flat = [flatten_metrics(m["results"]) for m in runs]
    shared = [k for k in flat[0] if all(k in f for f in flat[1:])]
    cols = _columns(runs, run_dirs)
    rows = [{"figure": k, **{c: _cell(f[k]) for c, f in zip(cols, flat)}} for k in shared]
    for label, key in COST_ROWS:
        row = {"figure": label}
        for c, m in zip(cols, runs):
            cost = m.get("cost") or {}
            if key is None:
                p, q = cost.get("prompt_tokens_per_video"), cost.get("completion_tokens_per_video")
                val = None if p is None else p + (q or 0)
            else:
                val = cost.get(key)
            row[c] = "—" if val is None else f"{val:.4g}"
        rows.append(row)
    return pd.DataFrame(rows, columns=["figure", *cols])


# ---------------------------------------------------------------------------------------------
# paired test of pairwise accuracy


@dataclass(frozen=True)
class PairFigure:
    """A pairwise-accuracy figure of a benchmark as its ordered pairs: video ids, labels (P(a more violating),
    never 0.5) and the credit of an exact model tie; ``name`` is the figure's path in ``metrics.json`` results."""

    name: str
    a: np.ndarray
    b: np.ndarray
    label: np.ndarray
    tie_credit: float


def _figure(name: str, a, b, label, tie_credit: float) -> PairFigure:
    return PairFigure(
        name, np.asarray(a, dtype=object), np.asarray(b, dtype=object), np.asarray(label, float), tie_credit
    )


def pair_figures(bench: Benchmark, manifest: Manifest) -> list[PairFigure]:
    """The benchmark's figures that are a mean of per-pair credits, with the pairs each counts when every video of
    ``manifest`` (already restricted) is scored — the same pairs and tie credit as the protocol's own figure:

    - ``world``: same-scene accuracy (each violated clip against each plausible clip of its twin group), on all
      twins and at severity >= ``severe``;
    - ``pairwise``: ``pairwise_accuracy`` on the manifest's pairs of the protocol's kinds and correspondences,
      with its ``tie_credit``;
    - ``videoalign`` / ``monetbench``: the label-tie-free accuracy (``accuracy_without_ties`` / ``diff_star_star``,
      a model tie counts as wrong); the tie-calibrated accuracy fits a threshold on all pairs and is no mean of
      per-pair credits, so it is not tested.

    ``quality``, ``pid`` and ``correlation`` have no such figure."""
    everything = dict.fromkeys(manifest.videos["id"], 0.0)
    out = []
    for proto, kw in bench.protocols.items():
        if proto == "world":
            severe = kw.get("severe", 0.5)
            ss = violated_twin_pairs(manifest, everything, tuple(kw.get("twin_keys", TWIN_KEYS)))
            ones = np.ones(len(ss))
            out.append(_figure("world.same_scene_accuracy", ss["id_a"], ss["id_b"], ones, 0.5))
            sev = (ss["severity_a"] >= severe).to_numpy()
            out.append(
                _figure(
                    f"world.same_scene_accuracy_severity_ge_{severe:g}",
                    ss["id_a"][sev],
                    ss["id_b"][sev],
                    ones[sev],
                    0.5,
                )
            )
        elif proto in ("pairwise", "videoalign", "monetbench"):
            p = manifest.pairs
            if proto == "pairwise":
                p = p[one_of(p["kind"], kw.get("kind")) & one_of(p["correspondence"], kw.get("correspondence"))]
            p = p[p["label"] != 0.5]  # no order to agree with: every one of these figures drops them
            name, tie = {
                "pairwise": ("pairwise_accuracy", kw.get("tie_credit", 0.5)),
                "videoalign": ("accuracy_without_ties", 0.0),
                "monetbench": ("diff_star_star", 0.0),
            }[proto]
            out.append(_figure(f"{proto}.{name}", p["a"], p["b"], p["label"], tie))
    return out


def _read_scores(run_dir: Path) -> dict[str, float]:
    """``{video id: raw score}`` of an eval.py run (``raw_score``, or ``score`` in a file without it)."""
    path = run_dir / "scores.csv"
    if not path.is_file():
        raise MissingInput(f"{path}: not there (is {run_dir} an eval.py output directory?)")
    try:
        df = pd.read_csv(path, dtype={"id": str})
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:
        raise InvalidOption(f"{path}: not a readable CSV ({' '.join(str(e).split())})") from None
    col = "raw_score" if "raw_score" in df.columns else "score"
    if "id" not in df.columns or col not in df.columns:
        raise InvalidOption(f"{path}: needs columns id and raw_score (or score), has {list(df.columns)}")
    dup = df["id"][df["id"].duplicated()]
    if len(dup):  # which of two scores a video has is not for the comparison to pick (eval.py refuses them too)
        raise InvalidOption(f"{path}: video {dup.iloc[0]!r} is scored more than once ({len(dup)} repeated ids)")
    values = pd.to_numeric(df[col], errors="coerce")
    keep = np.isfinite(values.to_numpy(dtype=float))
    return dict(zip(df["id"][keep], values[keep].astype(float)))


def _manifest_root(manifest: str | None) -> Path:
    """Where a relative benchmark manifest was read from: the working directory (eval.py's default), else the
    source checkout (eval.py run from there, compared from elsewhere)."""
    if manifest is None or Path(manifest).is_absolute() or (Path.cwd() / manifest / "videos.jsonl").is_file():
        return Path.cwd()
    return SOURCE_ROOT if (SOURCE_ROOT / manifest / "videos.jsonl").is_file() else Path.cwd()


def _run_benchmark(run_dir: Path, name: str) -> Benchmark:
    """The benchmark an eval.py run evaluated, as its ``run_info.json`` recorded it (manifest, split, where,
    protocol options), under the name its ``metrics.json`` gives."""
    path = run_dir / "run_info.json"
    if not path.is_file():
        raise MissingInput(f"{path}: not there; it records the benchmark's manifest the run read (eval.py writes it)")
    info = load_json_input(path, "run_info.json")
    cfg = info.get("config") if isinstance(info, dict) else None
    cfg = cfg.get("benchmark") if isinstance(cfg, dict) else None
    if not isinstance(cfg, dict):
        raise InvalidOption(f"{path}: no config.benchmark (not an eval.py run?)")
    return load_benchmark({**cfg, "name": name}, root=_manifest_root(cfg.get("manifest")))


def _same_benchmark(run_dirs: Sequence[Path], benches: list[Benchmark]) -> None:
    fields = {
        "benchmark": lambda b: b.name,
        "manifest": lambda b: str(Path(b.manifest).resolve()) if b.manifest else None,
        "split": lambda b: b.split,
        "where": lambda b: json.dumps(b.where, sort_keys=True, default=str),
        "protocol": lambda b: json.dumps(b.protocols, sort_keys=True, default=str),
    }
    for field, get in fields.items():
        values = [get(b) for b in benches]
        if any(v != values[0] for v in values[1:]):
            raise InvalidOption(
                f"runs are on different benchmarks or manifests ({field}: "
                + "; ".join(f"{d}: {v}" for d, v in zip(run_dirs, values))
                + "): compare runs of one benchmark on one manifest"
            )


def _check_recorded(run_dir: Path, metrics: dict, scores: dict[str, float], figures: list[PairFigure]) -> None:
    """Refuse a run whose ``scores.csv`` no longer gives the pairwise accuracy its ``metrics.json`` recorded (scores
    edited, negated or swapped after the run), on every figure whose pairs it recorded in full: the paired test
    would rank one evaluator by one set of scores and the table by another."""
    recorded = flatten_metrics(metrics["results"])
    for fig in figures:
        leaf = recorded.get(fig.name)
        has = np.array([a in scores and b in scores for a, b in zip(fig.a, fig.b)], dtype=bool)
        if not isinstance(leaf, dict) or leaf.get("value") is None or leaf.get("n") != int(has.sum()) or not has.any():
            continue  # not recorded, or on other pairs than this run's scores give: nothing to hold it to
        a, b = fig.a[has], fig.b[has]
        got = float(
            np.mean(pair_credit([scores[v] for v in a], [scores[v] for v in b], fig.label[has], fig.tie_credit))
        )
        if abs(got - float(leaf["value"])) > 1e-6:
            raise InvalidOption(
                f"{run_dir / 'scores.csv'}: gives {got:.4f} for {fig.name}, but the run's metrics.json records "
                f"{float(leaf['value']):.4f}: the scores changed after the run; evaluate it again"
            )


def paired_accuracy(
    run_dirs: Sequence[str | os.PathLike], n_boot: int = 10_000, seed: int = 0, alpha: float = 0.05
) -> pd.DataFrame:
    """Paired test of every two evaluators' pairwise accuracy on the same benchmark pairs.

    ``run_dirs``: eval.py output directories of one benchmark on one manifest (``metrics.json`` names the
    benchmark, ``run_info.json`` its manifest, split, where and protocol options; any difference is an error).
    The units are the benchmark's ordered pairs (:func:`pair_figures`) whose two videos every run scored;
    each run's credit on a pair comes from the raw scores of its ``scores.csv`` (rankings use raw scores; an
    exact tie earns the figure's tie credit, 0.5 unless the protocol says otherwise), so with full coverage a
    run's accuracy here is its own ``metrics.json`` figure. A pair some run did not score is left out for all
    (``left_out_A`` / ``left_out_B``: the pairs of the figure that run could not score).

    One eval.py run is one benchmark; a benchmark with several pairwise figures (the world's same-scene
    accuracy on all twins and at severity >= ``severe``, or a ``pairwise`` protocol next to the world's) gets one
    test per figure, each its own family: the figures are separate questions on different pair sets, so Holm
    corrects over the pairs of evaluators within a figure, not across figures. Pooling pairs of different
    figures (or benchmarks) into one mean would mix populations and is not done.

    Per figure, the (pairs x runs) credit matrix goes to :func:`phyprobe.eval.paired.paired_statistics`
    (``higher_is_better=True``, no Bradley-Terry): one row per pair of evaluators, A the better-ranked, with
    ``accuracy_A``, ``accuracy_B`` on the shared pairs, ``diff`` = A - B and its ``1 - alpha`` percentile interval
    (``low``, ``high``), the two-sided bootstrap ``p``, ``p_holm`` and ``significant`` (Holm at ``alpha``), and the
    number of shared ``pairs``. A figure no pair of which every run scored is left out, said in
    ``table.attrs["notes"]``, as is a benchmark with no pairwise figure (``quality``, ``pid``, ``correlation``:
    an empty table).
    """
    dirs = [Path(d) for d in run_dirs]
    if len(dirs) < 2:
        raise InvalidOption("a paired test needs two runs or more")
    if len({d.resolve() for d in dirs}) < len(dirs):
        raise InvalidOption(f"a run is given twice ({', '.join(map(str, dirs))}): give each run once")
    if n_boot < 1 or not 0 < alpha < 1:
        raise InvalidOption(f"n_boot must be >= 1 and alpha in (0, 1), got n_boot={n_boot}, alpha={alpha}")
    metrics = [_read_metrics(d) for d in dirs]
    scores = [_read_scores(d) for d in dirs]
    benches = [_run_benchmark(d, m["benchmark"]) for d, m in zip(dirs, metrics)]
    _same_benchmark(dirs, benches)
    bench = benches[0]
    if bench.manifest is None or not (Path(bench.manifest) / "videos.jsonl").is_file():
        raise MissingInput(
            f"{dirs[0] / 'run_info.json'}: benchmark {bench.name!r} was read from {bench.manifest}, which is not "
            "there now; the pairs come from it"
        )
    manifest = bench.restrict(Manifest.load(bench.manifest))
    scored = [set(s) for s in scores]
    names = _columns(metrics, dirs)
    rows, notes = [], []
    figures = pair_figures(bench, manifest)
    for d, m, s in zip(dirs, metrics, scores):
        _check_recorded(d, m, s, figures)
    if not figures:
        notes.append(f"benchmark {bench.name!r} ({', '.join(bench.protocols)}) has no pairwise-accuracy figure")
    for fig in figures:
        has = np.stack([pd.Series(fig.a).isin(k).to_numpy() & pd.Series(fig.b).isin(k).to_numpy() for k in scored])
        shared = has.all(axis=0)
        left_out = dict(zip(names, (~has).sum(axis=1).tolist()))
        if not shared.any():
            notes.append(f"{fig.name}: no pair of its {len(fig.a)} is scored by every run")
            continue
        a, b, y = fig.a[shared], fig.b[shared], fig.label[shared]
        credits = np.stack(
            [pair_credit([s[v] for v in a], [s[v] for v in b], y, fig.tie_credit) for s in scores], axis=1
        )
        res = paired_statistics(
            credits, names, higher_is_better=True, n_boot=n_boot, seed=seed, alpha=alpha, strengths=False
        )
        acc = dict(zip(res.table["system"], res.table["mean"]))
        for r in res.pairs.itertuples(index=False):
            rows.append(
                {
                    "figure": fig.name,
                    "A": r.a,
                    "B": r.b,
                    "accuracy_A": acc[r.a],
                    "accuracy_B": acc[r.b],
                    "diff": r.diff,
                    "low": r.low,
                    "high": r.high,
                    "p": r.p,
                    "p_holm": r.p_holm,
                    "significant": bool(r.significant),
                    "pairs": int(shared.sum()),
                    "left_out_A": left_out[r.a],
                    "left_out_B": left_out[r.b],
                }
            )
    table = pd.DataFrame(rows, columns=list(PAIRED_COLUMNS))
    table.attrs.update(notes=notes, n_boot=n_boot, seed=seed, alpha=alpha, benchmark=bench.name)
    return table


def paired_markdown(table: pd.DataFrame) -> str:
    """:func:`paired_accuracy`'s table as markdown, under one line saying what the test is."""
    alpha = table.attrs.get("alpha", 0.05)
    level = f"{100 * (1 - alpha):g} %"
    head = (
        f"Paired test of pairwise accuracy on {table.attrs.get('benchmark', 'the benchmark')}: the pairs every run "
        f"scored, resampled together ({table.attrs.get('n_boot', '?')} bootstrap resamples); A − B with its {level} "
        f"interval, two-sided p, Holm over the pairs of evaluators of a figure (* = significant at {alpha:g})."
    )
    lines = [head, ""]
    if len(table):
        md = pd.DataFrame(
            {
                "figure": table["figure"],
                "A": table["A"],
                "B": table["B"],
                "accuracy A": table["accuracy_A"].map("{:.3f}".format),
                "accuracy B": table["accuracy_B"].map("{:.3f}".format),
                f"A − B [{level}]": [
                    f"{d:+.3f} [{lo:+.3f}, {hi:+.3f}]" for d, lo, hi in zip(table["diff"], table["low"], table["high"])
                ],
                "p": table["p"].map("{:.4f}".format),
                "Holm p": [f"{p:.4f}{' *' if s else ''}" for p, s in zip(table["p_holm"], table["significant"])],
                "pairs": table["pairs"],
                "left out A": table["left_out_A"],
                "left out B": table["left_out_B"],
            }
        )
        lines.append(md.to_markdown(index=False))
    lines += [f"Note: {n}" for n in table.attrs.get("notes", [])]
    return "\n".join(lines).rstrip()
