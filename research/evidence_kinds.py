"""Which kind of evidence sees which violation: each kind a scorer's grouped monotone head weighs, ranked alone.

The default's score is a non-negative weighting of a few kinds of evidence (the dynamics model's errors,
the `stopped` and `unexplained` levels), each scaled to unit spread. A kind that points the wrong way on
some family, as every kind of surprise does on a violation that takes motion away, pulls the sum down there
however the weights are set. This scores every violated clip against its plausible twin by each kind alone,
as the head sees it (the pooled, standardised group mean over the kind's columns: a monotone map of the
kind, so its ranking is the kind's), and by the exported score, per source and per family or subtype.

    python research/evidence_kinds.py outputs/demo --manifest data/worlds-s1-n200-200 \\
        --benchmarks world_test world3d_test real_footage_unseen --split train val test

Same-scene accuracy at severity >= --severe, raw values, ties half credit; n is the number of pairs; a last row
gives each column's single-video AUROC, violated against plausible clips of every severity. The
features come from the feature cache (extracted once, as `eval.py` does). Reads no labels beyond the
benchmarks' own, and fits nothing: choose variants on builds no run trained on.

``--beside CKPT`` asks what another dynamics model (``train_dynamics.py``, e.g. on the frame encoder's features:
``backbone@base=efficientnet_lite0``) would add: its clip-mean prediction error (``--beside-part``: |error|, or
only its over- or under-predicted part) as a column of its own, and added to the score at the head's mean
weight times ``--beside-weight``, scaled to unit spread over the plausible training clips it was fitted on (as
the head scales each kind):

    python research/evidence_kinds.py outputs/demo --manifest data/worlds-s1-n200-200 --split train val test \
        --by family --beside .cache/dynamics/efficientnet_lite0 --beside-part over --beside-weight 0.5 1 2

``--objects BUILD`` does the same with ``phyprobe.baselines.object_rules``' count of tracked bodies that end or start where nothing
explains it (a rule of rigid-body physics, no model), scaled by its spread over BUILD's plausible training clips:

    python research/evidence_kinds.py outputs/demo --benchmarks marbles --by family --objects data/worlds-s0-n300-200 \
        --beside-weight 0.5 1

``--level STAT BUILD`` does the same with one of flow_stats' optional levels (``halted``: texture that arrived moving
and rests, where a body stopped; ``paused``: the steps the whole picture held between fast ones), read at the
scorer's own flow options and averaged over cells and steps. ``--peak BUILD`` does it with the scorer's own
over-predicted errors, their mean over columns at the clip's most over-predicted step (``--peak-form spike``: less
the clip's median step), evidence of one moment of motion expected that did not happen, which the time-mean
dilutes. ``--instead KIND`` also scores with the added evidence in place of
that kind, at its weight:

    python research/evidence_kinds.py outputs/demo --benchmarks rigs --by family --level halted data/worlds-s0-n300-200 \
        --beside-weight 0.5 1 --instead level:stopped
    python research/evidence_kinds.py outputs/demo --benchmarks rigs --by family --peak data/worlds-s0-n300-200 \
        --peak-form spike --beside-weight 0.5 1

``--residual CKPT`` does it with that dynamics model's clip-mean |error| beyond what the clip's amount of motion
explains (``MotionResidual``: log error less a line in log motion, fitted on the plausible `train` clips of the
build the model was fitted on; ``--residual-motion median`` takes the median step's motion instead of the mean;
``--residual-beyond Q`` counts only its part above its Q quantile over those clips, ``--residual-range motion`` above
the conditional Q quantile given the clip's motion).
``--stronger`` also scores each clip by the larger of the score and the added evidence, each less its median and over
its spread on those plausible clips (a clip is as implausible as its stronger evidence):

    python research/evidence_kinds.py outputs/demo --benchmarks rigs --by family --residual outputs/demo/dynamics \
        --beside-weight 0.5 1 --instead errors --stronger

``--heuristic BUILD`` does it with the motion heuristic's score (``baseline=motion``, the zero-parameter flow
heuristic every run reports, its per-video scores read from the baselines' cache): whether the baseline's evidence,
which ranks a body that stops dead better than the surprise does, adds to the score.

The added evidence is scaled by its spread over BUILD's plausible `train` clips, or over all of them with
``--spread-over all`` (for evidence that no plausible clip shows, such as ``paused``).

``--scale KIND=F,...`` asks what the score would rank with one kind's head weight multiplied by each F (0 drops
the kind), the others left as they are: a column per factor, as the head would score with those weights.

    python research/evidence_kinds.py outputs/demo --benchmarks real_footage_unseen_kinds --scale level:stopped=0.5,0.25,0
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from dynamics_surprise import step_errors

from phyprobe.baselines.motion import motion_scores
from phyprobe.baselines.object_rules import unexplained_end_counts
from phyprobe.data.manifest import Manifest
from phyprobe.encoders import FrozenEncoder, from_config
from phyprobe.encoders.dynamics import DynamicsEncoder, load_checkpoint, plausible_mask
from phyprobe.encoders.motion import OPTIONAL_STATS
from phyprobe.eval.metrics import auroc, pairwise_accuracy
from phyprobe.eval.protocols import load_benchmark, video_table, violated_twin_pairs
from phyprobe.eval.run import scorer_feature_table
from phyprobe.features.extract import extract_features
from phyprobe.io.video import ClipSpec
from phyprobe.scorer import Scorer

BESIDE_PARTS = ("abs", "over", "under")
BASELINE_CACHE = ".cache/baselines"  # where runs keep the heuristic's per-video scores (paths.baseline_cache_dir)
PEAK_FORMS = ("peak", "spike")


def kind_names(scorer: Scorer) -> list[str]:
    """One name per weight of the head, in its order: pooling statistic x the encoder's kinds of evidence."""
    head = scorer.head
    if head.kind != "monotone" or head.monotone.group_mean is None:
        raise SystemExit(
            "evidence_kinds: the scorer's head must be a grouped monotone head (head.kind=monotone "
            "head.groups=encoder), as the flow_dynamics default's is"
        )
    if not hasattr(scorer.encoder, "evidence_groups"):
        raise SystemExit(
            f"evidence_kinds: encoder {scorer.encoder.name!r} names no kinds of evidence (the dynamics encoder does)"
        )
    kinds = list(scorer.encoder.evidence_groups())
    stats = head.pool.stats
    names = [f"{k}" if len(stats) == 1 else f"{s}:{k}" for s in stats for k in kinds]
    if len(names) != head.monotone.group_mean.shape[1]:
        raise SystemExit(
            f"evidence_kinds: the head weighs {head.monotone.group_mean.shape[1]} kinds, the encoder names "
            f"{len(names)} ({names}): the scorer was exported with other groups"
        )
    return names


@torch.no_grad()
def kind_scores(scorer: Scorer, feats: torch.Tensor, batch: int = 1024) -> tuple[np.ndarray, np.ndarray]:
    """(N, kinds) the evidence each head weight multiplies, and (N,) the raw score."""
    head = scorer.head.eval()
    kinds, score = [], []
    for i in range(0, len(feats), batch):
        x = head.standardised(feats[i : i + batch].float())
        kinds.append(head.monotone.kinds(x))
        score.append(head.monotone(x))  # the head's forward, on the same standardised input
    return torch.cat(kinds).numpy(), torch.cat(score).numpy()


class Beside:
    """Another dynamics model's clip-mean prediction error, read from (and extracted into) its base's feature
    cache; ``fitted_on`` is the build it was fitted on."""

    def __init__(self, checkpoint: Path, part: str, cache_dir: str):
        self.base, self.predictor, _ = load_checkpoint(checkpoint)
        cfg = json.loads((checkpoint / "config.json").read_text())
        self.clip, self.part, self.cache_dir = ClipSpec(**cfg["clip"]), part, cache_dir
        self.encoder = DynamicsEncoder(self.base, self.predictor.eval(), include_base=False, signed=part != "abs")
        self.fitted_on = cfg["fit"]["manifest"]

    def base_features(self, manifest: Manifest) -> dict[str, np.ndarray]:
        """Every video's base features, extracted into the cache if they are not there yet."""
        cache = extract_features(manifest, self.base, self.clip, self.cache_dir)
        feats = cache.load(manifest.videos["id"])
        missing = set(manifest.videos["id"]) - set(feats)
        if missing:
            raise SystemExit(
                f"evidence_kinds: {len(missing)} videos of {manifest.root} have no {self.base.name} features "
                f"(unreadable: see {cache.dir})"
            )
        return feats

    def errors(self, feats: dict[str, np.ndarray]) -> dict[str, float]:
        """Each video's clip-mean error of the chosen part, from its base features."""
        half = self.predictor.dim  # a signed encoder's over-predicted columns, then its under-predicted ones
        columns = {"abs": slice(None), "over": slice(None, half), "under": slice(half, None)}[self.part]
        return {v: float(step_errors(self.encoder, f, columns).mean()) for v, f in feats.items()}

    def raw(self, manifest: Manifest) -> dict[str, float]:
        return self.errors(self.base_features(manifest))


class MotionResidual:
    """A dynamics model's clip-mean |error| beyond what the clip's amount of motion explains: log error less a + b *
    log(mean flow magnitude), the line fitted by least squares on the plausible `train` clips of the build the model
    was fitted on. Over plausible clips the errors follow the motion at Spearman 0.85-0.95 (``levels_motion.py
    --dynamics``); what is left is surprise a clip's motion does not account for, whichever way the violation moved it.

    ``beyond`` counts only the part above that quantile of the plausible clips' residuals, so a clip within the
    plausible range adds nothing and the score ranks it as before. With ``range_by`` the range's edge is a function of
    the clip instead of one number: the conditional quantile (a linear quantile regression on the same plausible
    clips) given its log motion and its square (``motion``: the line leaves a U in the residual's median and a
    wider spread where little moves), and also its log `stopped` and `unexplained` shares (``motion_levels``)."""

    FLOOR = 1e-3  # px: a still clip's log magnitude stays finite
    SHARE_FLOOR = 1e-4  # a level's log stays finite where no pixel stopped or went unexplained
    MOTION = {"mean": lambda steps: steps.mean(), "median": np.median}  # of the steps' frame-mean flow magnitude
    RANGES = ("global", "motion", "motion_levels")

    def __init__(
        self,
        checkpoint: Path,
        cache_dir: str,
        motion: str = "mean",
        beyond: float | None = None,
        range_by: str = "global",
    ):
        if range_by != "global" and beyond is None:
            raise SystemExit(
                "evidence_kinds: --residual-range needs --residual-beyond Q, the quantile whose edge it models"
            )
        self.model, self.motion, self.range_by = Beside(checkpoint, "abs", cache_dir), self.MOTION[motion], range_by
        self.columns = self.model.base.columns("mag_mean")
        fitted = Manifest.load(self.model.fitted_on)
        fitted = fitted.keep((fitted.videos["split"] == "train").to_numpy() & plausible_mask(fitted.videos))
        _, err, mag, covariates = self.logs(fitted)
        self.slope, self.intercept = np.polyfit(mag, err, 1)
        residual = self.residual(err, mag)
        # the edge of the plausible range for a clip of these covariates; None: every residual counts
        self.edge: Callable[[np.ndarray], np.ndarray | float] | None = None
        if beyond is not None and range_by == "global":
            self.edge = lambda _, q=float(np.quantile(residual, beyond)): q
        elif beyond is not None:
            from sklearn.linear_model import QuantileRegressor

            self.edge = QuantileRegressor(quantile=beyond, alpha=0.0, solver="highs").fit(covariates, residual).predict

    def logs(self, manifest: Manifest) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
        """The videos, their log clip-mean error, their log motion and the covariates of the range's edge."""
        feats = self.model.base_features(manifest)
        errors = self.model.errors(feats)
        steps = {v: np.asarray(feats[v], dtype=np.float64) for v in errors}
        mag = np.log(np.asarray([float(self.motion(steps[v][:, self.columns].mean(1))) for v in errors]) + self.FLOOR)
        covariates = [mag, mag**2]
        if self.range_by == "motion_levels":
            for stat in ("stopped", "unexplained"):
                cols = self.model.base.columns(stat)
                covariates.append(np.log(np.asarray([steps[v][:, cols].mean() for v in errors]) + self.SHARE_FLOOR))
        return list(errors), np.log(list(errors.values())), mag, np.stack(covariates, 1)

    def residual(self, err: np.ndarray, mag: np.ndarray) -> np.ndarray:
        """Log error less the line in log motion."""
        return err - (self.intercept + self.slope * mag)

    def __call__(self, manifest: Manifest) -> dict[str, float]:
        ids, err, mag, covariates = self.logs(manifest)
        residual = self.residual(err, mag)
        if self.edge is not None:
            residual = np.maximum(residual - self.edge(covariates), 0.0)
        return dict(zip(ids, residual.tolist()))


def levels_encoder(scorer: Scorer) -> FrozenEncoder:
    """flow_stats at the options of the scorer's own flow statistics, with every optional level on (one extraction
    serves them all)."""
    base = getattr(scorer.encoder, "base", None)
    if base is None or base.name != "flow_stats":
        raise SystemExit(
            "evidence_kinds: the optional levels are read at the scorer's flow statistics; its encoder has none"
        )
    o = base.options
    return from_config(
        "flow_stats",
        image_size=o["image_size"],
        grid=o["grid"],
        flow_method=o["flow_method"],
        edge_fraction=o["edge_fraction"],
        ego_motion=o.get("ego_motion", "none"),
        resize=o.get("resize", "letterbox"),
        **{name: True for name in OPTIONAL_STATS},
    )


class Level:
    """One of flow_stats' optional levels (:data:`OPTIONAL_STATS`) of every video, its mean over cells and steps."""

    def __init__(self, scorer: Scorer, cache_dir: str, stat: str):
        self.encoder, self.clip, self.cache_dir = levels_encoder(scorer), scorer.clip, cache_dir
        self.columns = self.encoder.columns(stat)

    def __call__(self, manifest: Manifest) -> dict[str, float]:
        feats = extract_features(manifest, self.encoder, self.clip, self.cache_dir).load(manifest.videos["id"])
        return {v: float(np.asarray(f)[:, self.columns].mean()) for v, f in feats.items()}


class OverPeak:
    """The scorer's over-predicted errors, averaged over columns per step, at the clip's most over-predicted step
    (``spike``: less its median step). The first ``context`` and last ``after`` steps only repeat an error and are
    left out."""

    def __init__(self, scorer: Scorer, cache_dir: str, form: str):
        if not getattr(scorer.encoder, "signed", False):
            raise SystemExit(
                "evidence_kinds: --peak needs a scorer whose errors are signed (over- and under-predicted apart)"
            )
        self.scorer, self.cache_dir, self.form = scorer, cache_dir, form

    def __call__(self, manifest: Manifest) -> dict[str, float]:
        feats, kept = scorer_feature_table(self.scorer, manifest, self.cache_dir, {})
        predictor = self.scorer.encoder.predictor
        over = feats[:, predictor.context : feats.shape[1] - predictor.after, : predictor.dim].float().mean(-1).numpy()
        peak = over.max(1) - (np.median(over, 1) if self.form == "spike" else 0.0)
        return dict(zip(kept.videos["id"], peak.tolist()))


class Scaled:
    """Evidence beside the head's, in units of its spread over a build's plausible `train` clips, as the head
    scales each of its kinds."""

    def __init__(self, raw: Callable[[Manifest], dict[str, float]], build: str | Path, clips: str = "plausible"):
        fitted = Manifest.load(build)
        train = (fitted.videos["split"] == "train").to_numpy()
        self.fitted = fitted.keep(train & plausible_mask(fitted.videos) if clips == "plausible" else train)
        self.raw = raw
        values = list(raw(self.fitted).values())
        self.spread = float(np.std(values))
        self.centre = float(np.median(values)) / self.spread if self.spread else 0.0
        if self.spread == 0:
            raise SystemExit(
                f"evidence_kinds: the added evidence is the same on every {clips} train clip of {build}, "
                "so it has no spread to scale by (--spread-over all reads every train clip)"
            )

    def __call__(self, manifest: Manifest) -> dict[str, float]:
        return {v: x / self.spread for v, x in self.raw(manifest).items()}


def scaled_scores(
    score: np.ndarray, kinds: np.ndarray, weights: np.ndarray, kind: int, factors: list[float]
) -> dict[str, np.ndarray]:
    """The score with kind ``kind``'s weight times each factor: the head's score is the weighted sum of its
    kinds plus a bias, so only that kind's term changes."""
    return {f"x{f:g}": score + (f - 1.0) * weights[kind] * kinds[:, kind] for f in factors}


def parse_scale(text: str, names: list[str]) -> tuple[int, list[float]]:
    """``KIND=F,F,...`` -> (the kind's index among ``names``, the factors)."""
    kind, _, factors = text.partition("=")
    if kind not in names or not factors:
        raise SystemExit(f"evidence_kinds: --scale wants KIND=F[,F...] with KIND one of {names}, got {text!r}")
    try:
        return names.index(kind), [float(f) for f in factors.split(",")]
    except ValueError:
        raise SystemExit(f"evidence_kinds: --scale factors must be numbers, got {factors!r}") from None


def group_of(ss: pd.DataFrame, by: str) -> pd.Series:
    """The violated clip's family, or family/subtype (subtypes repeat across families: a teleport's and a
    brief glitch's `jump`)."""
    family = ss["family_a"].astype(str)
    return family if by == "family" else family + "/" + ss["subtype_a"].astype(str)


def accuracy_table(pairs: pd.DataFrame, columns: dict[str, dict[str, float]], by: str) -> pd.DataFrame:
    """Rows: every family (or family/subtype) and "all"; columns: each scored column's same-scene accuracy on
    ``pairs`` (the violated clip ``id_a`` against its twin ``id_b``; ties half credit), then the number of pairs."""
    group = group_of(pairs, by)
    out = {}
    for col, values in columns.items():
        sides = pd.DataFrame({"a": pairs["id_a"].map(values), "b": pairs["id_b"].map(values), "group": group})
        acc = {"all": pairwise_accuracy(sides["a"], sides["b"], np.ones(len(sides)))}
        for key, g in sides.groupby("group"):
            acc[key] = pairwise_accuracy(g["a"], g["b"], np.ones(len(g)))
        out[col] = acc
    table = pd.DataFrame(out)
    table["n"] = group.value_counts().reindex(table.index)
    table.loc["all", "n"] = len(pairs)
    table["n"] = table["n"].astype(int)
    return table.loc[[*(i for i in table.index if i != "all"), "all"]]


def auroc_row(manifest: Manifest, columns: dict[str, dict[str, float]]) -> dict[str, float]:
    """Each column's single-video AUROC, violated clips against plausible ones (every severity, as the protocol
    reports it), and their number: a kind of evidence that only ranks twins leaves this near 0.5."""
    row = {}
    for col, values in columns.items():
        vt = video_table(manifest, values)
        pv = vt[vt["variant"].isin(["plausible", "violated"])]
        row[col] = auroc((pv["variant"] == "violated").to_numpy(), pv["score"].to_numpy())
    return {**row, "n": len(pv)}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", type=Path, help="a run directory (its scorer/ is read) or a scorer directory")
    ap.add_argument("--manifest", help="score this manifest instead of each benchmark's own (e.g. another build)")
    ap.add_argument("--benchmarks", nargs="+", default=["world_test", "world3d_test", "real_footage_unseen"])
    ap.add_argument("--split", nargs="+", help="splits to read (default: each benchmark's own)")
    ap.add_argument("--severe", type=float, default=0.5, help="count violated clips of at least this severity")
    ap.add_argument("--by", choices=("family", "subtype"), default="subtype")
    ap.add_argument("--cache-dir", default=".cache/features")
    added = ap.add_mutually_exclusive_group()
    added.add_argument(
        "--beside", type=Path, help="another dynamics checkpoint whose errors to rank alone and add to the score"
    )
    added.add_argument(
        "--objects",
        help="a build whose plausible train clips scale phyprobe.baselines.object_rules' count of bodies that "
        "end or start unexplained: rank that count alone and add it to the score, as --beside does",
    )
    added.add_argument(
        "--level",
        nargs=2,
        metavar=("STAT", "BUILD"),
        help=f"the same with one of flow_stats' optional levels {OPTIONAL_STATS}, scaled by BUILD",
    )
    added.add_argument(
        "--peak", help="the same with the peak of the scorer's over-predicted errors, scaled by this build"
    )
    added.add_argument(
        "--heuristic",
        help="the same with the motion heuristic's score (the zero-parameter baseline every "
        "run reports), scaled by this build",
    )
    added.add_argument(
        "--residual",
        type=Path,
        help="the same with this dynamics checkpoint's errors beyond what the clip's "
        "motion explains (MotionResidual), scaled by the build it was fitted on",
    )
    ap.add_argument("--peak-form", choices=PEAK_FORMS, default="peak")
    ap.add_argument(
        "--residual-motion",
        choices=tuple(MotionResidual.MOTION),
        default="mean",
        help="the clip's motion --residual regresses on: the mean or the median step's",
    )
    ap.add_argument(
        "--residual-beyond",
        type=float,
        metavar="Q",
        help="count only the residual above its Q quantile over the plausible train clips (e.g. 0.95)",
    )
    ap.add_argument(
        "--residual-range",
        choices=MotionResidual.RANGES,
        default="global",
        help="the edge of --residual-beyond's plausible range: one quantile, or a conditional quantile given "
        "the clip's motion (and its levels)",
    )
    ap.add_argument(
        "--spread-over",
        choices=("plausible", "all"),
        default="plausible",
        help="which train clips of the build scale the added evidence",
    )
    ap.add_argument("--instead", help="KIND: also score with the added evidence in place of this kind, at its weight")
    ap.add_argument("--beside-part", choices=BESIDE_PARTS, default="abs")
    ap.add_argument(
        "--beside-weight",
        type=float,
        nargs="+",
        default=[1.0],
        help="its weight in the sum, in units of the head's mean weight (one column per value)",
    )
    ap.add_argument("--scale", help="KIND=F[,F...]: also score with that kind's head weight times each factor F")
    ap.add_argument(
        "--stronger",
        action="store_true",
        help="also score each clip by the larger of the score and the added evidence, each less its median "
        "and over its spread on the plausible train clips the evidence is scaled by",
    )
    args = ap.parse_args(argv)

    scorer_dir = args.run / "scorer" if (args.run / "scorer").is_dir() else args.run
    scorer = Scorer.from_pretrained(scorer_dir)
    names = kind_names(scorer)
    scale = parse_scale(args.scale, names) if args.scale else None
    beside = None
    if args.beside:
        model = Beside(args.beside, args.beside_part, args.cache_dir)
        beside = Scaled(model.raw, model.fitted_on, args.spread_over)
    elif args.objects:
        beside = Scaled(unexplained_end_counts, args.objects, args.spread_over)
    elif args.level:
        stat, build = args.level
        if stat not in OPTIONAL_STATS:
            raise SystemExit(
                f"evidence_kinds: --level takes one of flow_stats' optional levels {OPTIONAL_STATS}, got {stat!r}"
            )
        beside = Scaled(Level(scorer, args.cache_dir, stat), build, args.spread_over)
    elif args.peak:
        beside = Scaled(OverPeak(scorer, args.cache_dir, args.peak_form), args.peak, args.spread_over)
    elif args.heuristic:
        beside = Scaled(lambda m: motion_scores(m, cache_dir=BASELINE_CACHE), args.heuristic, args.spread_over)
    elif args.residual:
        residual = MotionResidual(
            args.residual, args.cache_dir, args.residual_motion, args.residual_beyond, args.residual_range
        )
        print(f"log error = {residual.intercept:.3f} + {residual.slope:.3f} x log motion on the plausible train clips")
        beside = Scaled(residual, residual.model.fitted_on, args.spread_over)
    if args.instead is not None and (beside is None or args.instead not in names):
        raise SystemExit(
            f"evidence_kinds: --instead replaces one of the head's kinds {names} with added evidence "
            "(--beside, --objects, --level, --peak, --heuristic or --residual)"
        )
    if args.stronger:
        if beside is None:
            raise SystemExit(
                "evidence_kinds: --stronger compares the score with added evidence (--beside, --objects, "
                "--level, --peak, --heuristic or --residual)"
            )
        _, fitted_score = kind_scores(scorer, scorer_feature_table(scorer, beside.fitted, args.cache_dir, {})[0])
        stronger = (float(np.median(fitted_score)), float(np.std(fitted_score)))
    pd.set_option("display.width", 200)
    for name in args.benchmarks:
        bench = load_benchmark(name)
        changes = {k: v for k, v in (("manifest", args.manifest), ("split", args.split)) if v is not None}
        bench = dataclasses.replace(bench, **changes)
        manifest = bench.load_manifest()
        feats, kept = scorer_feature_table(scorer, manifest, args.cache_dir, {})
        kinds, score = kind_scores(scorer, feats)
        ids = kept.videos["id"]
        columns = {**{n: dict(zip(ids, kinds[:, i])) for i, n in enumerate(names)}, "score": dict(zip(ids, score))}
        if scale is not None:
            weights = scorer.head.monotone.weights().detach().numpy()
            for col, values in scaled_scores(score, kinds, weights, *scale).items():
                columns[f"{names[scale[0]]} {col}"] = dict(zip(ids, values))
        if beside is not None:
            extra = beside(kept)
            columns["beside"] = extra
            mean_weight = float(scorer.head.monotone.weights().detach().mean())
            for w in args.beside_weight:
                columns[f"score+{w:g}x"] = {v: columns["score"][v] + w * mean_weight * extra[v] for v in ids}
            if args.stronger:
                centre, spread = stronger
                columns["stronger"] = {
                    v: max((columns["score"][v] - centre) / spread, extra[v] - beside.centre) for v in ids
                }
            if args.instead is not None:
                k = names.index(args.instead)
                w = float(scorer.head.monotone.weights().detach()[k])
                columns[f"instead of {args.instead}"] = {
                    v: columns["score"][v] + w * (extra[v] - kinds[i, k]) for i, v in enumerate(ids)
                }
        pairs = violated_twin_pairs(kept, columns["score"])
        pairs = pairs[pairs["severity_a"] >= args.severe]
        print(
            f"\n{name} ({bench.manifest}, splits {bench.split}; {len(manifest.videos) - len(ids)} unreadable videos "
            f"left out): same-scene accuracy at severity >= {args.severe:g} by {args.by}"
        )
        table = accuracy_table(pairs, columns, args.by)
        table.loc["AUROC, one video"] = auroc_row(kept, columns)
        print(table.round(3).to_string())


if __name__ == "__main__":
    main()
