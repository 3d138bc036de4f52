"""eval.py's job: score one benchmark with an exported scorer or an external evaluator's CSV.

Scores from our scorer go through the same feature cache and head path as training, so a scorer
evaluated here reproduces the figures of the run that produced it. External scores (VideoScore2,
VideoPhy2-AutoEval, VisionReward, ...) are read from a ``video,score`` CSV and evaluated under the
identical protocol, so every evaluator sits in the same table. Rubric judges (``judge=NAME``, see
``phyprobe.judges``) are run here and enter the same way, with their per-video judgements written
beside the figures. Every evaluation records its cost (model calls, tokens, seconds per video), so a
judge's price sits next to PhyProbe's.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np
from omegaconf import DictConfig, OmegaConf

from ..baselines.motion import motion_scores
from ..errors import InvalidOption, UserError
from ..runinfo import atomic_write_json, save_run_info
from .protocols import load_benchmark, same_scene_margins

log = logging.getLogger(__name__)

STANDIN_NOTE = (
    "These figures come from offline stand-ins (OpenCV substitutes), not from the published "
    "models of the evaluator they stand in for."
)


def scorer_feature_table(scorer, manifest, cache_dir: str | Path, extract: dict):
    """The scorer's per-step features of every readable video of ``manifest``, extracted into the feature cache
    once: ``(features, kept manifest)``; unreadable videos are reported and left out."""
    from ..features.extract import extract_features
    from ..features.table import load_feature_table

    cache = extract_features(
        manifest,
        scorer.encoder,
        scorer.clip,
        cache_dir,
        dtype=str(scorer.feature_dtype).replace("torch.", ""),
        **extract,
    )
    feats, _, kept, skipped = load_feature_table(cache, manifest)
    for s in skipped:
        log.warning("not scored: %s (%s)", s["path"], s["reason"])
    return feats, kept


def scorer_scores(
    scorer_dir: str | Path,
    manifest,
    cache_dir: str | Path,
    extract: dict,
    clip: dict | None = None,
    reading: dict | None = None,
) -> dict[str, float]:
    """Raw scores of every readable video of ``manifest`` (unreadable ones are reported and left out), each read as
    the scorer's reading says: a video read as one clip through the feature cache, as in training; one longer than
    the clip in the reading's windows. ``clip`` / ``reading``: read the videos otherwise than the scorer was trained
    to (``ClipSpec`` / ``Reading`` fields), to see how it holds on clips sampled otherwise."""
    from ..head import score_features
    from ..io.video import ClipSpec
    from ..scorer import Scorer
    from ..scorer.reading import Reading

    scorer = Scorer.from_pretrained(scorer_dir)
    try:
        if clip:
            scorer.clip = ClipSpec(**clip)
        if reading:
            scorer.reading = Reading(**{**scorer.reading.to_dict(), **reading})
    except (TypeError, ValueError) as e:
        raise InvalidOption(
            f"clip={clip} reading={reading}: {e} (clip: num_frames, mode, fps; reading: mode, stride, combine)"
        ) from None
    if clip or reading:
        log.info(
            "reading the videos as %s, %s, not as the scorer was trained (%s, %s)",
            scorer.clip,
            scorer.reading,
            scorer.config.get("clip"),
            scorer.config.get("reading"),
        )
    windowed = manifest.videos["path"].map(lambda p: scorer.in_windows(manifest.video_path(p))).to_numpy(dtype=bool)
    scores = {}
    if not windowed.all():
        feats, kept = scorer_feature_table(scorer, manifest.keep(~windowed), cache_dir, extract)
        scores = dict(zip(kept.videos["id"], score_features(scorer.head, feats)))
    if windowed.any():
        long = manifest.videos[windowed]
        log.info("%d videos longer than the clip: read in %s", len(long), scorer.reading.describe(scorer.window_length))
        for vid, path, raw in zip(
            long["id"], long["path"], scorer.score_raw_many(manifest.video_path(p) for p in long["path"])
        ):
            if isinstance(raw, Exception):
                log.warning("not scored: %s (%s)", path, getattr(raw, "reason", raw))
            else:
                scores[vid] = raw
    return scores


def vjepa2_surprisal_from_config(
    manifest,
    size: str = "L",
    weights: str | None = "hub",
    tiny: bool = False,
    context: int = 2,
    stat: str = "max",
    num_frames: int = 32,
    protocol: str = "windowed",
) -> dict[str, float]:
    """V-JEPA 2's own-predictor surprisal (its ``stat`` over the clip) on every readable video; on the GPU when there is one."""
    import torch

    from ..baselines import vjepa2_surprisal as vs
    from ..encoders import from_config
    from ..io.video import ClipSpec

    if stat not in vs.STATS:
        raise InvalidOption(f"vjepa2_surprisal.stat must be one of {vs.STATS}, got {stat!r}")
    encoder = from_config("vjepa2", size=size, weights=weights, tiny=tiny).to(
        "cuda" if torch.cuda.is_available() else "cpu"
    )
    scores = vs.vjepa2_surprisal_scores(manifest, encoder, ClipSpec(num_frames), context=context, protocol=protocol)
    if not scores:
        raise InvalidOption(f"vjepa2_surprisal.num_frames={num_frames} makes one tubelet per clip: nothing to predict")
    return scores[stat]


def geophys_from_config(cfg: DictConfig, manifest) -> dict[str, float]:
    """GeoPhys (``cfg.geophys``: frames, layer, num_frames, signals) on every readable video of ``manifest``, its
    features extracted once into ``paths.cache_dir`` with the ``extract`` options."""
    from ..baselines.geophys import geophys_scores

    opts = OmegaConf.to_container(cfg.geophys, resolve=True)
    try:
        return geophys_scores(manifest, cfg.paths.cache_dir, **opts, **OmegaConf.to_container(cfg.extract))
    except UserError:
        raise
    except (TypeError, ValueError) as e:  # an option the encoder or the signals refuse
        raise InvalidOption(f"geophys={opts}: {e} (options: frames, layer, num_frames, signals)") from None


BASELINES = {
    "motion": ("baseline: motion", lambda cfg, m: motion_scores(m, cache_dir=cfg.paths.baseline_cache_dir)),
    "geophys": ("baseline: geophys", geophys_from_config),
    "vjepa2_surprisal": (
        "baseline: vjepa2_surprisal",
        lambda cfg, m: vjepa2_surprisal_from_config(m, **OmegaConf.to_container(cfg.vjepa2_surprisal)),
    ),
}


def _margins(cfg: DictConfig, bench, manifest, scores: dict) -> dict:
    """The baselines of ``margins_over`` on the same videos, and the evaluator's paired same-scene margin over
    each: what a claim to beat them needs. Only for world-protocol benchmarks (twin pairs), and not for a
    baseline against itself."""
    names = list(cfg.get("margins_over") or [])
    unknown = sorted(set(names) - set(BASELINES))
    if unknown:
        raise InvalidOption(f"margins_over: unknown baseline(s) {unknown}; known: {sorted(BASELINES)}")
    if not names or cfg.get("baseline") or "world" not in bench.protocols:
        return {}
    out: dict = {"baselines": {}, "margins": {}}
    for name in names:
        base = BASELINES[name][1](cfg, manifest)
        out["baselines"][name] = bench.evaluate(base, manifest=manifest, n_boot=cfg.n_boot, seed=cfg.seed)
        out["margins"][name] = same_scene_margins({bench.name: (bench, manifest)}, scores, base, cfg.n_boot)[bench.name]
    return out


def run_eval(cfg: DictConfig) -> dict:
    out = Path(cfg.paths.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    save_run_info(out, OmegaConf.to_container(cfg, resolve=True), seed=cfg.seed)
    bench = load_benchmark(OmegaConf.to_container(cfg.benchmark, resolve=True))
    manifest = bench.load_manifest()
    sources = [k for k in ("scorer", "run", "scores_csv", "baseline", "judge") if cfg.get(k)]
    if len(sources) != 1:
        raise InvalidOption(
            "give exactly one of scorer=DIR, run=RUN_DIR, scores_csv=FILE, baseline=NAME or judge=NAME "
            f"(got {sources or 'none'})"
        )
    for key in ("clip", "reading"):
        if cfg.get(key) and not (cfg.get("scorer") or cfg.get("run")):
            raise InvalidOption(f"{key}= sets how a scorer reads the videos; it has no meaning for {sources[0]}=")
    t0, cost, standin = time.perf_counter(), None, False
    if cfg.get("judge"):
        from ..judges.run import run_judge

        judged = run_judge(cfg.judge, manifest, out / "judge")
        scores, evaluator, cost, standin = judged.scores, judged.name, judged.cost, judged.standin
    elif cfg.get("baseline"):
        if cfg.baseline not in BASELINES:
            raise InvalidOption(
                f"unknown baseline {cfg.baseline!r}: eval.py runs {sorted(BASELINES)}; "
                "same-encoder feature surprisal runs inside train.py"
            )
        evaluator, compute = BASELINES[cfg.baseline]
        scores = compute(cfg, manifest)
    elif cfg.get("scores_csv"):
        from ..data.manifest import Manifest
        from .external import read_external_scores

        scores = read_external_scores(
            cfg.scores_csv,
            manifest,
            higher_means=cfg.get("higher_means"),
            whole=Manifest.load(bench.manifest),
            fmt=cfg.get("scores_format"),
            video_col=cfg.get("scores_video_col"),
            score_col=cfg.get("scores_score_col"),
            root=cfg.get("scores_root"),
        )
        evaluator = str(cfg.scores_csv) + (f" ({cfg.scores_format})" if cfg.get("scores_format") else "")
    else:
        scorer_dir = Path(cfg.scorer) if cfg.get("scorer") else Path(cfg.run) / "scorer"
        clip = OmegaConf.to_container(cfg.clip) if cfg.get("clip") else None
        reading = OmegaConf.to_container(cfg.reading) if cfg.get("reading") else None
        scores = scorer_scores(
            scorer_dir, manifest, cfg.paths.cache_dir, OmegaConf.to_container(cfg.extract), clip, reading
        )
        evaluator = (
            str(scorer_dir)
            + (f" (clips read as {clip})" if clip else "")
            + (f" (read as {reading})" if reading else "")
        )
    if cost is None:  # no model calls: the cost is the wall time of scoring
        from ..judges.base import local_cost

        cost = local_cost(len(scores), time.perf_counter() - t0)
    metrics = {
        "benchmark": bench.name,
        "evaluator": evaluator,
        "direction": bench.direction,
        "standin": standin,
        "cost": cost,
        "results": bench.evaluate(scores, manifest=manifest, n_boot=cfg.n_boot, seed=cfg.seed),
    }
    metrics.update(_margins(cfg, bench, manifest, scores))
    atomic_write_json(out / "metrics.json", metrics)
    table = manifest.videos[manifest.videos["id"].isin(scores.keys())].copy()
    table["raw_score"] = [scores[v] for v in table["id"]]
    table["score"] = np.clip(table["raw_score"], 0.0, 1.0)
    table[["id", "path", "raw_score", "score"]].to_csv(out / "scores.csv", index=False, float_format="%.9g")
    if cfg.report:
        from .report import fmt_leaf, write_report

        notes = [STANDIN_NOTE] if standin else []
        notes += [
            f"Paired margin over the {name} baseline (same-scene accuracy at the benchmark's severity threshold): "
            f"{fmt_leaf(margin)}"
            for name, margin in metrics.get("margins", {}).items()
        ]
        write_report(metrics["results"], table, out, title=f"{evaluator} on {bench.name}", notes=notes, cost=cost)
    log.info("wrote %s", out / "metrics.json")
    return metrics
