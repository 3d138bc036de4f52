"""The evaluate stage: the run's scores (``scores.csv``) and the baselines on the benchmarks its data holds ->
``metrics.json`` and ``report.md``."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Set
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from omegaconf import DictConfig, OmegaConf

from ..baselines.motion import motion_scores
from ..baselines.vjepa2_surprisal import uses_own_predictor, vjepa2_surprisal_scores
from ..data.manifest import Manifest
from ..encoders import FrozenEncoder
from ..errors import UserError
from ..eval.protocols import flatten_metrics, load_benchmark, same_scene_margins
from ..eval.report import fmt_leaf, headline_table
from ..eval.shortcuts import shortcut_diagnostics
from ..io.video import ClipSpec
from ..runinfo import atomic_write_json
from .head_training import SCORES, TrainedHead
from .parts import RunData
from .recipe import recipe_line

log = logging.getLogger(__name__)


def restrict_all(manifest: Manifest, benchmarks: Mapping[str, Mapping]) -> dict:
    """``{name: (benchmark, manifest restricted to its split/where)}`` for the benchmarks with videos."""
    out = {}
    for name, cfg in benchmarks.items():
        bench = load_benchmark(dict(cfg))
        m = bench.restrict(manifest)
        if m.videos.empty:
            # A benchmark of a source this run's data does not have (the 3D world's, in a 2D-only run) is
            # expected to be empty; one whose source is present but whose split/where matches nothing is not.
            wanted = (bench.where or {}).get("source")
            wanted = {wanted} if isinstance(wanted, str) else set(wanted or [])
            absent = bool(wanted) and not wanted & set(manifest.videos["source"])
            (log.info if absent else log.warning)(
                "benchmark %s: no videos of this run's data match split=%s where=%s", name, bench.split, bench.where
            )
            continue
        out[name] = (bench, m)
    return out


def own_data_benchmarks(manifest: Manifest) -> dict:
    """When no configured benchmark matches a run's data (a user's own folder, a prepared dataset of their own), its
    own held-out pairs: pairwise accuracy on the test split, or on the validation split when there is no test
    split, so ``metrics.json`` and ``report.md`` always say how the scorer ranks pairs it did not train on."""
    for split in ("test", "val"):
        bench = load_benchmark({"name": f"own_{split}", "manifest": None, "split": split, "protocol": "pairwise"})
        m = bench.restrict(manifest)
        if not m.pairs.empty:
            log.warning(
                "no configured benchmark matches this run's data: reporting its own %s pairs as benchmark own_%s",
                split,
                split,
            )
            return {f"own_{split}": (bench, m)}
    return {}


def distribution_labels(
    restricted: Mapping[str, tuple], trained_on: list[str], excluded: Set[str] = frozenset()
) -> dict[str, str]:
    """``{benchmark: label}``: ``in`` when the benchmark's videos come from sources the head trained on
    (``trained_on``: sources with training videos) and from splits like the training data's; otherwise
    ``out:`` and every reason (an unseen source, held-out families, a held-out style, videos that
    ``data.exclude`` kept out of training: ``excluded``, their ids)."""
    out = {}
    for name, (bench, m) in restricted.items():
        splits = set(bench.split or [])
        ids = set(m.videos["id"])
        reasons = [
            why
            for why, hit in (
                ("excluded from training", bool(ids) and ids <= set(excluded)),
                ("unseen source", bool(set(m.videos["source"]) - set(trained_on))),
                ("held-out families", "heldout_family" in splits),
                ("held-out style", "heldout_style" in splits),
            )
            if hit
        ]
        out[name] = "out: " + " + ".join(reasons) if reasons else "in"
    return out


def side_by_side(metrics: Mapping, figure: str) -> list[str]:
    """Markdown rows: ``figure`` for every evaluator (rows) on every benchmark (columns), in-distribution
    benchmarks first, each column labelled with why it is in or out of distribution."""
    dist = metrics.get("distribution", {})
    benches = sorted(metrics["benchmarks"], key=lambda b: (dist.get(b, "in") != "in", dist.get(b, ""), b))
    evaluators = {"phyprobe": metrics["benchmarks"], **metrics.get("baselines", {})}
    lines = [
        "| evaluator | " + " | ".join(f"{b} ({dist.get(b, '?')})" for b in benches) + " |",
        "|---|" + "---|" * len(benches),
    ]
    for name, per in evaluators.items():
        cells = []
        for b in benches:
            flat = {k.split(".", 1)[1] if "." in k else k: v for k, v in flatten_metrics(per.get(b, {})).items()}
            cells.append(fmt_leaf(flat.get(figure)))
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def evaluate_run(restricted: Mapping[str, tuple], scores: Mapping[str, float], n_boot: int = 1000) -> dict:
    """``{benchmark: {protocol: figures}}`` from :func:`restrict_all`'s output."""
    return {
        name: bench.evaluate({v: scores[v] for v in m.videos["id"]}, manifest=m, n_boot=n_boot)
        for name, (bench, m) in restricted.items()
    }


def surprisal_scores(feats: torch.Tensor, fit_rows: list[int], context: int = 2) -> dict[str, np.ndarray]:
    """Same-encoder feature surprisal (max and mean over time), fitted on the given plausible clips.

    The context shrinks for encoders with few time steps (V-JEPA 2 halves T); with a single step
    there is nothing to predict and no baseline is returned.
    """
    from ..baselines.surprisal import SurprisalBaseline

    steps = feats[0].shape[0]
    if steps < 2:
        log.warning("surprisal baseline skipped: %d feature step(s) per clip, nothing to predict", steps)
        return {}
    context = min(context, steps - 1)
    base = SurprisalBaseline(context=context).fit(feats[i].float().numpy() for i in fit_rows)  # streamed
    per = [base.score(feats[i].float().numpy()) for i in range(len(feats))]
    return {k: np.array([p[k] for p in per]) for k in ("max", "mean")}


def write_run_report(
    out: Path, metrics: dict, scores: pd.DataFrame, restricted: Mapping[str, tuple], main: str
) -> Path:
    """``report.md``: the headline table for every benchmark and baseline, then the full report
    (plots and every figure) of ``main``; the other benchmarks get their own page under ``reports/``."""
    from ..eval.report import write_report

    evaluators = {
        "phyprobe": metrics["benchmarks"],
        **{f"baseline: {k}": v for k, v in metrics.get("baselines", {}).items()},
    }
    main_text, pages = "", {}
    for name, res in metrics["benchmarks"].items():
        ids = set(restricted[name][1].videos["id"])
        target = out / "_main" if name == main else out / "reports" / name
        page = write_report(res, scores[scores["id"].isin(ids)], target, title=f"phyprobe on {name}")
        if name == main:
            # The main page's plots live beside report.md; keep their relative links valid.
            for png in target.glob("*.png"):
                png.replace(out / png.name)
            main_text = page.read_text().replace("# phyprobe on", "## Main benchmark: phyprobe on", 1)
            page.unlink()
            target.rmdir()
        else:
            pages[name] = page.relative_to(out)
    recipe = [f"Recipe: {recipe_line(metrics['recipe'])}.", ""] if metrics.get("recipe") else []
    head = [
        "# phyprobe run report",
        "",
        *recipe,
        f"Run directory: `{out}`. Raw scores (before clipping) are evaluated; "
        "intervals are 95 % percentile bootstrap. The surprisal baselines use the same encoder's features; the "
        "motion heuristic (optical flow) and GeoPhys (a frozen image encoder's embedding path) are fitted to nothing.",
        "",
        "## Headline figures",
        "",
        *headline_table(evaluators),
        "",
    ]
    margins = [
        f"| {b} | {bench} | {fmt_leaf(r)} |"
        for b, per in metrics.get("margins", {}).items()
        for bench, r in per.items()
    ]
    if margins:
        head += [
            "## Margin over the baselines",
            "",
            "Same-scene accuracy (severity ≥ the benchmark's `severe`) of "
            "phyprobe minus the baseline's, on the same twin pairs (paired bootstrap).",
            "",
            "| baseline | benchmark | margin [95 % CI] n=pairs |",
            "|---|---|---|",
            *margins,
            "",
        ]
    if metrics.get("distribution"):
        head += [
            "## In and out of distribution",
            "",
            f"Trained on sources {metrics.get('trained_on')}. A benchmark is "
            "*in* distribution when its source and split are like the training data's.",
            "",
        ]
        for fig in ("same_scene_accuracy_severity_ge_0.5", "auroc_plausible_vs_violated"):
            head += [f"`{fig}`:", "", *side_by_side(metrics, fig), ""]
    if metrics.get("shortcuts"):
        from ..eval.shortcuts import markdown as shortcut_rows

        head += [
            "## Shortcut diagnostics",
            "",
            "Plausible clips are plausible whatever made them: an evaluator "
            "that scores physics gives every source's plausible clips the same low score. *Separability* is "
            "how well the score alone tells two sources' plausible clips apart (AUROC folded to ≥ 0.5; 0.5 = "
            "not at all, 1 = the score is a source label).",
            "",
            *shortcut_rows(metrics["shortcuts"]),
            "",
        ]
    if pages:
        head += ["Per-benchmark pages: " + ", ".join(f"[{k}]({v})" for k, v in pages.items()), ""]
    path = out / "report.md"
    path.write_text("\n".join(head) + "\n" + main_text, encoding="utf-8")
    return path


def evaluate(cfg: DictConfig, out: Path, encoder: FrozenEncoder, data: RunData, trained: TrainedHead) -> dict:
    """Evaluate the scores the train stage wrote, and the baselines beside them, on every configured benchmark this
    run's data holds (its own held-out pairs when none does); write ``metrics.json`` and ``report.md``."""
    manifest, feats, row_of = data.manifest, data.feats, data.row_of
    clip = ClipSpec(**cfg.clip)
    written = pd.read_csv(out / SCORES, dtype={"id": str})
    if list(written["id"]) != list(manifest.videos["id"]):
        raise UserError(f"{out / SCORES}: its videos are not this run's (written by another run into this folder?)")
    raw = written["raw_score"].to_numpy()
    scores = manifest.videos.assign(raw_score=raw, score=np.clip(raw, 0.0, 1.0))
    trained_on = trained.training["trained_on"]
    # videos of the training sources that training never saw (data.exclude): out of distribution
    excluded = set(manifest.videos["id"][manifest.videos["source"].isin(trained_on)]) - set(data.trainable.videos["id"])
    restricted = restrict_all(manifest, cfg.eval.benchmarks) or own_data_benchmarks(manifest)
    model_scores = dict(zip(scores["id"], raw))
    metrics = {
        "benchmarks": evaluate_run(restricted, model_scores, cfg.eval.n_boot),
        "distribution": distribution_labels(restricted, trained_on, excluded),
        "trained_on": trained_on,
    }
    baselines = {}
    if "surprisal" in cfg.eval.baselines:
        plausible_train = [
            row_of[v]
            for v, var in zip(data.train_m.videos["id"], data.train_m.videos["metadata"])
            if (var or {}).get("variant", "plausible") == "plausible" and v in row_of
        ]
        for stat, vals in surprisal_scores(feats, plausible_train).items():
            baselines[f"surprisal_{stat}"] = dict(zip(manifest.videos["id"], vals))
    bench_videos = manifest.keep(
        manifest.videos["id"].isin(set().union(*(m.videos["id"] for _, m in restricted.values())))
    )
    if "motion" in cfg.eval.baselines and restricted:  # the zero-parameter flow heuristic, on the benchmarks' videos
        baselines["motion"] = motion_scores(
            bench_videos, clip.num_frames, cache_dir=cfg.paths.get("baseline_cache_dir")
        )
    if "geophys" in cfg.eval.baselines and restricted:  # training-free: a frozen image encoder's embedding path
        from ..baselines import geophys

        gp = OmegaConf.to_container(cfg.eval.geophys, resolve=True)
        if clip.num_frames < geophys.min_frames(gp["signals"]):
            log.warning("geophys baseline skipped: %d-frame clips leave its signals undefined", clip.num_frames)
        elif (cols := geophys.shared_columns(encoder, gp["frames"], gp["layer"])) and clip == ClipSpec(clip.num_frames):
            own = {v: feats[row_of[v]] for v in bench_videos.videos["id"]}  # the run's features hold its path
            baselines["geophys"] = geophys.scores_from_features(own, cols, gp["signals"])
        else:
            baselines["geophys"] = geophys.geophys_scores(
                bench_videos, cfg.paths.cache_dir, num_frames=clip.num_frames, **gp, **cfg.extract
            )
    if "surprisal" in cfg.eval.baselines and uses_own_predictor(encoder) and restricted:
        # the paper's baseline: V-JEPA 2's own predictor, on the benchmarks' videos
        own = vjepa2_surprisal_scores(bench_videos, encoder.to("cuda" if torch.cuda.is_available() else "cpu"), clip)
        baselines.update({f"vjepa2_surprisal_{stat}": base for stat, base in own.items()})
    for name, base in baselines.items():
        metrics.setdefault("baselines", {})[name] = evaluate_run(restricted, base, cfg.eval.n_boot)
        metrics.setdefault("margins", {})[name] = same_scene_margins(restricted, model_scores, base, cfg.eval.n_boot)
    metrics["shortcuts"] = {
        name: shortcut_diagnostics(bench_videos.videos, sc, cfg.eval.n_boot)
        for name, sc in {"phyprobe": model_scores, **baselines}.items()
    }
    metrics["recipe"] = trained.training["recipe"]
    metrics["run"] = {
        "output_dir": str(out),
        "skipped_videos": len(data.skipped),
        "num_videos": len(manifest),
        "head_parameters": trained.head.num_parameters(),
        "num_train_pairs": trained.training["num_train_pairs"],
    }
    atomic_write_json(out / "metrics.json", metrics)
    if cfg.eval.report and metrics["benchmarks"]:
        write_run_report(out, metrics, scores.assign(metadata=manifest.videos["metadata"]), restricted, cfg.eval.main)
    return metrics
