"""One evaluation as a page a reader looks at: ``report.md`` with plots beside it.

Every plotted figure carries its bootstrap interval as an error bar, and every figure in the result
also appears in one table with its interval and n, so nothing shown is without its uncertainty.
Plots that have no data (a benchmark without severities, a run without quality clips) are skipped
rather than drawn empty.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from phyprobe.eval.metrics import bootstrap_ci  # noqa: E402
from phyprobe.eval.protocols import flatten_metrics  # noqa: E402


def _find(result: Mapping, key_start: str) -> Mapping | None:
    """The first entry (depth-first) whose key starts with ``key_start``; results may be one
    protocol's dict or ``{protocol: dict}``."""
    for k, v in result.items():
        if isinstance(v, Mapping) and "value" not in v:
            if str(k).startswith(key_start):
                return v
            found = _find(v, key_start)
            if found is not None:
                return found
    return None


def _bars(
    ax,
    leaves: Mapping[str, Mapping],
    color: str = "C0",
    offset: float = 0.0,
    width: float = 0.8,
    label: str | None = None,
) -> None:
    names = list(leaves)
    val = np.array([np.nan if leaves[k]["value"] is None else leaves[k]["value"] for k in names], dtype=float)
    lo = np.array([np.nan if leaves[k]["low"] is None else leaves[k]["low"] for k in names], dtype=float)
    hi = np.array([np.nan if leaves[k]["high"] is None else leaves[k]["high"] for k in names], dtype=float)
    x = np.arange(len(names)) + offset
    err = np.vstack([np.clip(val - lo, 0, None), np.clip(hi - val, 0, None)])
    ax.bar(x, np.nan_to_num(val), width, yerr=np.nan_to_num(err), capsize=3, color=color, label=label)
    ax.set_xticks(
        np.arange(len(names)), [f"{k}\n(n={leaves[k]['n']})" for k in names], rotation=30, ha="right", fontsize=8
    )


def _save(fig, out_dir: Path, name: str) -> str:
    fig.tight_layout()
    fig.savefig(out_dir / name, dpi=110)
    plt.close(fig)
    return name


def _group(scores_df: pd.DataFrame) -> pd.Series:
    """``source / variant`` (the world's metadata.variant, else real / generated)."""
    variant = None
    if "variant" in scores_df:
        variant = scores_df["variant"]
    elif "metadata" in scores_df:
        variant = scores_df["metadata"].map(lambda d: d.get("variant") if isinstance(d, dict) else None)
    real = np.where(scores_df.get("is_real", pd.Series(False, index=scores_df.index)).astype(bool), "real", "generated")
    variant = (
        pd.Series(real, index=scores_df.index)
        if variant is None
        else variant.fillna(pd.Series(real, index=scores_df.index))
    )
    source = scores_df["source"].astype(str) if "source" in scores_df else pd.Series("all", index=scores_df.index)
    return source + " / " + variant.astype(str)


def _plot_distributions(scores_df: pd.DataFrame, out_dir: Path) -> str | None:
    col = "raw_score" if "raw_score" in scores_df else "score"
    if not len(scores_df):
        return None
    groups = _group(scores_df)
    names = sorted(groups.unique())
    data = [scores_df.loc[groups == g, col].to_numpy(dtype=float) for g in names]
    fig, ax = plt.subplots(figsize=(max(5, 1.1 * len(names) + 2), 4))
    ax.axhspan(0, 1, color="0.92", zorder=0, label="reported range [0, 1]")
    ax.boxplot(data, showfliers=False)
    rng = np.random.default_rng(0)
    for i, d in enumerate(data, start=1):
        ax.scatter(i + rng.uniform(-0.15, 0.15, len(d)), d, s=6, alpha=0.5, color="C0")
    ax.set_xticks(
        range(1, len(names) + 1),
        [f"{g}\n(n={len(d)})" for g, d in zip(names, data)],
        rotation=30,
        ha="right",
        fontsize=8,
    )
    ax.set_ylabel(f"{col} (higher = more violating)")
    ax.set_title("Score distribution per source / variant")
    ax.legend(loc="upper left", fontsize=8)
    return _save(fig, out_dir, "score_distributions.png")


def _plot_reliability(scores_df: pd.DataFrame, out_dir: Path, n_bins: int = 5) -> str | None:
    """Mean reported score per magnitude bin against the diagonal: where the absolute scale holds."""
    if "magnitude" not in scores_df:
        return None
    df = scores_df[scores_df["magnitude"].notna()]
    if df["magnitude"].nunique() < 2:
        return None
    edges = np.linspace(0, 1, n_bins + 1)
    idx = np.clip(np.digitize(df["magnitude"], edges[1:-1]), 0, n_bins - 1)
    fig, ax = plt.subplots(figsize=(4.5, 4.5))
    ax.plot([0, 1], [0, 1], "--", color="0.5", label="ideal")
    xs, ys, lo, hi = [], [], [], []
    for b in range(n_bins):
        s = df["score"].to_numpy(dtype=float)[idx == b]
        if len(s):
            ci = bootstrap_ci(np.mean, s, n_boot=300)
            xs.append(df["magnitude"].to_numpy()[idx == b].mean())
            ys.append(ci["value"])
            lo.append(ci["value"] - ci["low"])
            hi.append(ci["high"] - ci["value"])
    ax.errorbar(xs, ys, yerr=[lo, hi], fmt="o-", capsize=3, label="mean score ± 95% CI")
    ax.set_xlabel("annotated magnitude (bin mean)")
    ax.set_ylabel("reported score clip(s, 0, 1)")
    ax.set_xlim(-0.05, 1.05)
    ax.set_ylim(-0.05, 1.05)
    ax.set_title("Calibration: score vs magnitude")
    ax.legend(fontsize=8)
    return _save(fig, out_dir, "reliability.png")


def _plot_leaves(
    leaves: Mapping | None, out_dir: Path, name: str, title: str, ylabel: str, chance: float | None = 0.5
) -> str | None:
    if not leaves:
        return None
    fig, ax = plt.subplots(figsize=(max(4.5, 0.9 * len(leaves) + 2), 3.8))
    _bars(ax, leaves)
    if chance is not None:
        ax.axhline(chance, ls="--", color="0.5", lw=1)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    return _save(fig, out_dir, name)


def _plot_quality(metrics: Mapping, out_dir: Path) -> str | None:
    """Score shift under quality degradation beside the shift under violation, on one axis."""
    qc = _find(metrics, "quality_confound") or metrics
    shifts = {}
    for k, v in (qc.get("quality_shift_by_degradation") or {}).items():
        shifts[f"quality: {k}"] = v
    for k in ("quality_shift", "violation_shift"):
        if isinstance(qc.get(k), Mapping) and qc[k]["n"]:
            shifts[k.replace("_", " ")] = qc[k]
    outs = {
        k.replace("quality_outscores_violation_", "").replace("_ge_", " ≥ "): v
        for k, v in qc.items()
        if k.startswith("quality_outscores") and isinstance(v, Mapping) and "value" in v
    }
    if not any(v["n"] for v in shifts.values()):
        return None
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), gridspec_kw={"width_ratios": [3, 1]})
    _bars(axes[0], shifts, color=["C0" if k.startswith("violation") else "C1" for k in shifts])
    axes[0].axhline(0, color="0.3", lw=1)
    axes[0].set_ylabel("mean score shift vs plausible twin")
    axes[0].set_title("Quality degradation vs physics violation")
    if outs:
        _bars(axes[1], outs, color="C3")
        axes[1].set_ylim(0, 1)
        axes[1].set_title(
            "degraded plausible clip outscores\na violating clip of its scene\n(lower = better)", fontsize=9
        )
    else:
        axes[1].axis("off")
    return _save(fig, out_dir, "quality_confound.png")


def _fmt(x) -> str:
    return "—" if x is None else f"{x:.3f}"


def fmt_leaf(leaf: Mapping | None) -> str:
    """A figure as "value [low, high] n=N" (or just the value when it has no interval)."""
    if not leaf or leaf.get("value") is None:
        return ""
    if leaf.get("low") is None:
        return f"{leaf['value']:.3f}"
    return f"{leaf['value']:.3f} [{leaf['low']:.3f}, {leaf['high']:.3f}] n={leaf['n']}"


def _table(metrics: Mapping) -> list[str]:
    lines = ["| figure | value | 95% CI | n |", "|---|---:|---|---:|"]
    for k, v in flatten_metrics(metrics).items():
        ci = "" if v.get("low") is None else f"[{_fmt(v['low'])}, {_fmt(v['high'])}]"
        impl = f" ({v['implementation']} tie calibration)" if v.get("implementation") else ""
        lines.append(f"| `{k}`{impl} | {_fmt(v['value'])} | {ci} | {v['n']} |")
    return lines


def _cost_table(cost: Mapping) -> list[str]:
    rows = [
        ("videos", cost.get("videos")),
        ("model calls / video", cost.get("calls_per_video")),
        ("prompt tokens / video", cost.get("prompt_tokens_per_video")),
        ("completion tokens / video", cost.get("completion_tokens_per_video")),
        ("seconds / video (wall)", cost.get("seconds_per_video")),
    ]
    return ["| cost | value |", "|---|---:|", *(f"| {k} | {'—' if v is None else f'{v:.4g}'} |" for k, v in rows)]


def write_report(
    metrics: dict,
    scores_df: pd.DataFrame,
    out_dir: str | os.PathLike,
    title: str = "phyprobe evaluation",
    notes: list[str] | None = None,
    cost: Mapping | None = None,
) -> Path:
    """``out_dir/report.md`` plus its PNGs, from ``evaluate`` output (one protocol's dict or
    ``{protocol: dict}``) and a per-video table with columns ``id, score, raw_score`` and video
    fields (``source``, ``is_real``, ``magnitude``, ``metadata`` or ``variant``). ``notes`` are shown
    under the title (e.g. that an evaluator is a stand-in); ``cost`` is the evaluation's cost summary."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    plots = [
        ("Score distributions", _plot_distributions(scores_df, out)),
        ("Calibration", _plot_reliability(scores_df, out)),
        (
            "Accuracy by violation family",
            _plot_leaves(
                _find(metrics, "same_scene_accuracy_by_family"),
                out,
                "accuracy_by_family.png",
                "Same-scene accuracy by violation family",
                "pairwise accuracy",
            ),
        ),
        (
            "Accuracy by severity",
            _plot_leaves(
                _find(metrics, "same_scene_accuracy_by_severity"),
                out,
                "accuracy_by_severity.png",
                "Same-scene accuracy by severity bin",
                "pairwise accuracy",
            ),
        ),
        ("Quality confound", _plot_quality(metrics, out)),
    ]
    lines = [
        f"# {title}",
        "",
        f"{len(scores_df)} scored videos. Scores: higher = more physically violating; "
        "error bars and intervals are 95 % percentile bootstrap over the figure's units.",
        "",
    ]
    lines += [f"> **Note:** {n}" for n in notes or []] + ([""] if notes else [])
    if cost:
        lines += ["## Cost", "", *_cost_table(cost), ""]
    for heading, png in plots:
        if png:
            lines += [f"## {heading}", "", f"![{heading}]({png})", ""]
    lines += ["## All figures", "", *_table(metrics), ""]
    path = out / "report.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def summary_table(results: Mapping[str, Mapping], figures: list[str] | None = None) -> pd.DataFrame:
    """Long table ``run, metric, value, low, high, n`` from ``{run: evaluate output}``, keeping the
    flattened figure names in ``figures`` (all by default) — the input of ``ablation_bars``."""
    rows = []
    for run, res in results.items():
        for name, leaf in flatten_metrics(res).items():
            if figures is None or name in figures:
                rows.append({"run": run, "metric": name, **{k: leaf.get(k) for k in ("value", "low", "high", "n")}})
    return pd.DataFrame(rows, columns=["run", "metric", "value", "low", "high", "n"])


def ablation_bars(summary_df: pd.DataFrame, out_png: str | os.PathLike) -> Path:
    """One panel per metric, one bar per run, with CI error bars, from a long table with columns
    ``run, metric, value, low, high`` (see ``summary_table``); panels keep their own y scale because
    accuracies and score ranges do not share one."""
    metrics_ = list(dict.fromkeys(summary_df["metric"]))
    runs = list(dict.fromkeys(summary_df["run"]))
    ncol = min(3, len(metrics_))
    nrow = int(np.ceil(len(metrics_) / ncol))
    fig, axes = plt.subplots(nrow, ncol, figsize=(4.2 * ncol, 3.4 * nrow), squeeze=False)
    for ax, metric in zip(axes.flat, metrics_):
        sub = summary_df[summary_df["metric"] == metric].set_index("run").reindex(runs)
        leaves = {
            r: {
                "value": sub.at[r, "value"],
                "low": sub.at[r, "low"],
                "high": sub.at[r, "high"],
                "n": sub.at[r, "n"] if "n" in sub else "",
            }
            for r in runs
        }
        leaves = {
            r: {k: (None if isinstance(v, float) and np.isnan(v) else v) for k, v in d.items()}
            for r, d in leaves.items()
        }
        _bars(ax, leaves, color=[f"C{i}" for i in range(len(runs))])
        ax.set_title(metric, fontsize=9)
    for ax in list(axes.flat)[len(metrics_) :]:
        ax.axis("off")
    out = Path(out_png)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


# Figures shown in a run's headline table, when the benchmark has them.
HEADLINE = (
    "same_scene_accuracy_severity_ge_0.5",
    "same_scene_accuracy",
    "cross_scene_accuracy",
    "gen_gen_accuracy",
    "real_real_median_gap",
    "median_score_plausible",
    "median_score_severity_ge_0.8",
    "auroc_plausible_vs_violated",
    "score_range.share_outside_01",
    "quality_outscores_violation_severity_ge_0.5",
)


def headline_table(results: Mapping[str, Mapping[str, Mapping]]) -> list[str]:
    """Markdown rows: one per (evaluator, benchmark), the headline figures with their intervals."""
    lines = [
        "| evaluator | benchmark | " + " | ".join(f"`{h}`" for h in HEADLINE) + " |",
        "|---|---|" + "---|" * len(HEADLINE),
    ]
    for evaluator, per_bench in results.items():
        for bench, res in per_bench.items():
            flat = {k.split(".", 1)[1] if "." in k else k: v for k, v in flatten_metrics(res).items()}
            cells = [fmt_leaf(flat.get(h) or flat.get(f"quality_confound.{h}")) for h in HEADLINE]
            lines.append(f"| {evaluator} | {bench} | " + " | ".join(cells) + " |")
    return lines
