"""A benchmark is a manifest plus the protocol that turns per-video scores into its figures.

Scores come in as one number per video id, higher = more violating (raw model output ``s``, not
clipped: ranking on clipped scores would invent ties at 0 and 1, and the score-range diagnostics need
the raw values). Every figure comes back as a leaf ``{value, low, high, n}`` with a 95 % percentile
bootstrap interval (``metrics.bootstrap_ci``) over the figure's own units — pairs for pairwise
figures, videos for per-video figures — nested in plain dicts so the result is JSON as is.
Videos without a score are left out (and pairs that touch them); ``coverage`` says how many.

Protocols (``PROTOCOLS``):

``world``        the physics world: same-scene twins, breakdowns by family and severity, cross-scene,
                 gen-gen, real-real, levels, AUROC, score range, and the quality confound;
``quality``      the quality-confound figures alone;
``pairwise``     generic matched pairs (ImplausiBench, VideoPhy-2 / VideoFeedback2 same-prompt pairs);
``videoalign``   VideoGen-RewardBench accuracy with and without ties (docs/datasets/videogen_rewardbench.md);
``monetbench``   tau* and diff** (docs/datasets/monetbench.md);
``pid``          binary plausible / implausible (docs/datasets/pid.md);
``correlation``  per-video human scores (VideoPhy-2 ``pc``, VideoFeedback2 ``phy_score``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from phyprobe.data.manifest import Manifest, metadata_field, one_of
from phyprobe.errors import InvalidOption, MissingInput
from phyprobe.eval import metrics as M

SEVERITY_BINS = (0.0, 0.25, 0.5, 0.75, 1.0)
TWIN_KEYS = ("scene", "style")  # metadata keys that name a twin group: one scene in one style


# ---------------------------------------------------------------------------------------------
# tables the protocols share


def _variant(videos: pd.DataFrame) -> pd.Series:
    """``plausible`` / ``violated`` / ``quality`` per video.

    From ``metadata.variant`` when the source writes it (the physics world does); otherwise from the
    calibration anchor (0 plausible, 1 violated); otherwise real footage counts as plausible and
    everything else as violated — the assumption the paper's real-vs-generated pairs make.
    """
    fallback = np.where(
        videos["anchor"].notna(),
        np.where(videos["anchor"].fillna(0) == 1, "violated", "plausible"),
        np.where(videos["is_real"].astype(bool), "plausible", "violated"),
    )
    return metadata_field(videos, "variant").fillna(pd.Series(fallback, index=videos.index))


def video_table(manifest: Manifest, scores: Mapping[str, float]) -> pd.DataFrame:
    """The manifest's scored videos with the world metadata pulled into columns.

    Severity falls back to ``magnitude`` (0 for plausible clips) so sources without a severity
    field still bin.
    """
    v = manifest.videos
    v = v[v["id"].isin(scores.keys())].reset_index(drop=True)
    out = v[["id", "source", "is_real", "magnitude", "anchor", "split", "metadata"]].copy()
    out["score"] = v["id"].map(scores).astype(float)
    out["variant"] = _variant(v)
    sev = metadata_field(v, "severity")
    mag = v["magnitude"].where(v["magnitude"].notna(), np.where(out["variant"] == "violated", np.nan, 0.0))
    out["severity"] = pd.to_numeric(sev.where(sev.notna(), mag), errors="coerce")
    for key in ("family", "subtype", "scene", "style", "degradation", "aspect", "clip"):
        out[key] = metadata_field(v, key)
    return out


def scored_pairs(manifest: Manifest, scores: Mapping[str, float]) -> pd.DataFrame:
    """Pairs whose two videos both have a score, with ``sa`` and ``sb`` attached."""
    p = manifest.pairs
    p = p[p["a"].isin(scores.keys()) & p["b"].isin(scores.keys())].reset_index(drop=True)
    return p.assign(sa=p["a"].map(scores).astype(float), sb=p["b"].map(scores).astype(float))


# ---------------------------------------------------------------------------------------------
# figure builders


@dataclass(frozen=True)
class _Boot:
    n_boot: int = 1000
    seed: int = 0
    alpha: float = 0.05

    def __call__(self, fn: Callable, *arrays, batched: bool = False) -> dict:
        return M.bootstrap_ci(fn, *arrays, n_boot=self.n_boot, seed=self.seed, alpha=self.alpha, batched=batched)


def _acc(boot: _Boot, sa, sb, label=None, tie_credit: float = 0.5) -> dict:
    """Pairwise accuracy over ordered pairs; ``label=None`` means a is the violating one. The accuracy is
    the mean of per-pair credits, so the bootstrap resamples the credits."""
    sa, sb = np.asarray(sa, dtype=float), np.asarray(sb, dtype=float)
    y = np.ones(len(sa)) if label is None else np.asarray(label, dtype=float)
    return _mean(boot, M.pair_credit(sa, sb, y, tie_credit))


def _median(boot: _Boot, x) -> dict:
    return boot(lambda s: np.median(s, axis=1), np.asarray(x, dtype=float), batched=True)


def _mean(boot: _Boot, x) -> dict:
    return boot(lambda s: s.mean(axis=1), np.asarray(x, dtype=float), batched=True)


def _coverage(manifest: Manifest, scores: Mapping[str, float]) -> dict:
    """Share of the benchmark's videos that were scored; a count, so it has no interval."""
    n = len(manifest.videos)
    k = int(manifest.videos["id"].isin(scores.keys()).sum())
    return {"value": k / n if n else None, "low": None, "high": None, "n": n}


def _bin_label(lo: float, hi: float, last: bool) -> str:
    return f"[{lo:.2f},{hi:.2f}{']' if last else ')'}"


def _twins(vt: pd.DataFrame, twin_keys: tuple[str, ...]) -> pd.DataFrame:
    """Per video, the mean score of the plausible clip(s) of its own scene (its twin).

    Scenes are keyed by the metadata keys ``twin_keys`` (scene and style by default, so a scene
    rendered in two styles is two twin groups). Videos without the first key, or whose group has no
    scored plausible clip, get NaN.
    """
    if len(vt) == 0:
        return vt.assign(group=pd.Series(dtype=object), twin_score=pd.Series(dtype=float))
    parts = pd.concat([metadata_field(vt, k).map(str) for k in twin_keys], axis=1)  # map: astype(str) keeps NaN as NaN
    key = parts.agg("|".join, axis=1).where(metadata_field(vt, twin_keys[0]).notna())
    plaus = vt[vt["variant"] == "plausible"].groupby(key[vt["variant"] == "plausible"])["score"].mean()
    return vt.assign(group=key, twin_score=key.map(plaus))


def _same_scene_pairs(vt: pd.DataFrame, left: pd.Series, right: pd.Series) -> pd.DataFrame:
    """All (left, right) video pairs within a twin group, as columns of both sides."""
    lt, rt = vt[left & vt["group"].notna()], vt[right & vt["group"].notna()]
    return lt.merge(rt, on="group", suffixes=("_a", "_b"))


def _violated_vs_twin(vt: pd.DataFrame) -> pd.DataFrame:
    """Each violated clip against the plausible clip(s) of its own twin group: the same-scene pairs."""
    return _same_scene_pairs(vt, vt["variant"] == "violated", vt["variant"] == "plausible")


def violated_twin_pairs(
    manifest: Manifest, scores: Mapping[str, float], twin_keys: tuple[str, ...] = TWIN_KEYS
) -> pd.DataFrame:
    """Every scored violated clip (side ``_a``) against each scored plausible clip of its twin group (side
    ``_b``), one row per pair with both sides' :func:`video_table` columns: the pairs the world's same-scene
    accuracy counts (the violated clip should score higher)."""
    return _violated_vs_twin(_twins(video_table(manifest, scores), tuple(twin_keys)))


def _cross_scene(vt: pd.DataFrame, pairs: pd.DataFrame, boot: _Boot) -> dict:
    """Cross-scene accuracy from the manifest's ``correspondence == none`` pairs when it has them;
    otherwise one derived pair per violated clip, against a plausible clip of another scene drawn
    with the bootstrap seed (deterministic)."""
    p = pairs[pairs["correspondence"] == "none"]
    if len(p):
        return {**_acc(boot, p["sa"], p["sb"], p["label"]), "from": "pairs"}
    viol = vt[(vt["variant"] == "violated") & vt["group"].notna()]
    plaus = vt[(vt["variant"] == "plausible") & vt["group"].notna()]
    rng = np.random.default_rng(boot.seed)
    sa, sb = [], []
    for _, row in viol.iterrows():
        other = plaus[plaus["group"] != row["group"]]
        if len(other):
            sa.append(row["score"])
            sb.append(other["score"].iloc[rng.integers(len(other))])
    return {**_acc(boot, sa, sb), "from": "videos"}


# ---------------------------------------------------------------------------------------------
# protocols


def _quality(
    manifest: Manifest, scores, boot: _Boot, severe: float = 0.5, twin_keys: tuple[str, ...] = TWIN_KEYS
) -> dict:
    """How much of the score is visual quality rather than physics.

    ``quality_outscores_violation``: over all (quality-degraded plausible clip, violating clip with
    severity >= ``severe``) pairs of one scene, how often the degraded clip scores higher (exact
    ties 0.5) — an evaluator that tracks physics keeps this near 0. ``quality_shift`` (degraded minus
    its plausible twin) is reported next to ``violation_shift`` (violated minus the same twin) so the
    two effects sit on one scale; per degradation type as well.
    """
    vt = _twins(video_table(manifest, scores), tuple(twin_keys))
    sev_key = f"severity_ge_{severe:g}"
    qual = vt[(vt["variant"] == "quality") & vt["twin_score"].notna()]
    viol = vt[(vt["variant"] == "violated") & vt["twin_score"].notna()]
    qv = _same_scene_pairs(vt, vt["variant"] == "quality", (vt["variant"] == "violated") & (vt["severity"] >= severe))

    def outscores(df):  # "correct" here = the degraded clip (a) scored above the violating one (b)
        return _acc(boot, df["score_a"], df["score_b"])

    degradations = sorted(qual["degradation"].dropna().astype(str).unique())
    qual_shift = qual["score"] - qual["twin_score"]
    return {
        f"quality_outscores_violation_{sev_key}": outscores(qv),
        f"quality_outscores_violation_{sev_key}_by_degradation": {
            d: outscores(qv[qv["degradation_a"].astype(str) == d]) for d in degradations
        },
        "quality_shift": _mean(boot, qual_shift),
        "quality_shift_by_degradation": {
            d: _mean(boot, qual_shift[qual["degradation"].astype(str) == d]) for d in degradations
        },
        "violation_shift": _mean(boot, viol["score"] - viol["twin_score"]),
        f"violation_shift_{sev_key}": _mean(boot, (viol["score"] - viol["twin_score"])[viol["severity"] >= severe]),
    }


def _world(
    manifest: Manifest,
    scores,
    boot: _Boot,
    severe: float = 0.5,
    obvious: float = 0.8,
    severity_bins: tuple[float, ...] = SEVERITY_BINS,
    twin_keys: tuple[str, ...] = TWIN_KEYS,
) -> dict:
    """The physics world's held-out figures. Same-scene accuracy compares each violated clip with
    the plausible clip(s) of its own scene (built from the videos table, grouped by ``twin_keys``),
    so it needs no pairs table; cross-scene, gen-gen and real-real figures read the pairs table."""
    vt = _twins(video_table(manifest, scores), tuple(twin_keys))
    pairs = scored_pairs(manifest, scores)
    ss = _violated_vs_twin(vt)  # violated_twin_pairs, sharing vt with the figures below
    sev = ss["severity_a"]
    edges = list(severity_bins)
    by_sev = {}
    for i, (lo, hi) in enumerate(zip(edges[:-1], edges[1:])):
        last = i == len(edges) - 2
        inside = (sev >= lo) & ((sev <= hi) if last else (sev < hi))
        by_sev[_bin_label(lo, hi, last)] = _acc(boot, ss["score_a"][inside], ss["score_b"][inside])
    rr = pairs[pairs["kind"] == "real_vs_real"]
    gg = pairs[pairs["kind"] == "generated_vs_generated"]
    pv = vt[vt["variant"].isin(["plausible", "violated"])]
    # By frame aspect: an encoder fitting frames into a fixed square gives a wide frame's objects fewer
    # pixels (16:9 keeps 56 % of the height of 1:1), so this is accuracy against object size in pixels.
    severe_ss = ss[sev >= severe]
    return {
        "coverage": _coverage(manifest, scores),
        "same_scene_accuracy": _acc(boot, ss["score_a"], ss["score_b"]),
        f"same_scene_accuracy_severity_ge_{severe:g}": _acc(
            boot, ss["score_a"][sev >= severe], ss["score_b"][sev >= severe]
        ),
        "same_scene_accuracy_by_family": {
            str(f): _acc(boot, g["score_a"], g["score_b"]) for f, g in ss.groupby(ss["family_a"].astype(str))
        },
        "same_scene_accuracy_by_severity": by_sev,
        f"same_scene_accuracy_severity_ge_{severe:g}_by_aspect": {
            str(a): _acc(boot, g["score_a"], g["score_b"]) for a, g in severe_ss.groupby("aspect_a")
        },
        # by the footage's source clip (one camera and scene each; rendered worlds have none, so nothing)
        f"same_scene_accuracy_severity_ge_{severe:g}_by_clip": {
            str(a): _acc(boot, g["score_a"], g["score_b"]) for a, g in severe_ss.groupby("clip_a")
        },
        "cross_scene_accuracy": _cross_scene(vt, pairs, boot),
        "gen_gen_accuracy": _acc(boot, gg["sa"], gg["sb"], gg["label"]),
        "real_real_median_gap": _median(boot, np.abs(rr["sa"] - rr["sb"])),
        "median_score_plausible": _median(boot, vt.loc[vt["variant"] == "plausible", "score"]),
        f"median_score_severity_ge_{obvious:g}": _median(
            boot, vt.loc[(vt["variant"] == "violated") & (vt["severity"] >= obvious), "score"]
        ),
        "auroc_plausible_vs_violated": boot(
            M.auroc_batched, (pv["variant"] == "violated").to_numpy(), pv["score"].to_numpy(), batched=True
        ),
        "score_range": boot(M.score_range, vt["score"].to_numpy()),
        "quality_confound": _quality(manifest, scores, boot, severe=severe, twin_keys=twin_keys),
    }


def _pairwise(
    manifest: Manifest,
    scores,
    boot: _Boot,
    kind: str | list[str] | None = None,
    correspondence: str | list[str] | None = None,
    tie_credit: float = 0.5,
) -> dict:
    """Matched-pair accuracy (e.g. ImplausiBench: mean [s(implausible) > s(real)], docs/datasets/implausibench.md).

    Label ties are skipped; exact model ties earn ``tie_credit`` (0.5; 0.0 gives the strict ``>`` of
    the ImplausiBench formula). Broken down by pair kind and correspondence when there are several.
    """
    p = scored_pairs(manifest, scores)
    p = p[one_of(p["kind"], kind) & one_of(p["correspondence"], correspondence)]
    out = {
        "coverage": _coverage(manifest, scores),
        "pairwise_accuracy": {
            **_acc(boot, p["sa"], p["sb"], p["label"], tie_credit),
            "skipped_label_ties": int((p["label"] == 0.5).sum()),
        },
    }
    for col in ("kind", "correspondence"):
        if p[col].nunique() > 1:
            out[f"pairwise_accuracy_by_{col}"] = {
                str(k): _acc(boot, g["sa"], g["sb"], g["label"], tie_credit) for k, g in p.groupby(col)
            }
    return out


def _tie_calibrated(names: tuple[str, str]) -> Callable:
    """VideoAlign and MonetBench share the Deutsch et al. accuracies and differ only in names.

    ``tie_calibration``: "videoalign" (VideoAlign's published loop, the default, comparable with
    published figures) or "deutsch" (mt-metrics-eval's search); the figure records which.
    """

    def protocol(manifest: Manifest, scores, boot: _Boot, tie_calibration: str = "videoalign") -> dict:
        if tie_calibration not in M.TIE_CALIBRATIONS:
            raise InvalidOption(f"tie_calibration must be one of {sorted(M.TIE_CALIBRATIONS)}, got {tie_calibration!r}")
        p = scored_pairs(manifest, scores)
        h = M.human_preference(p["label"])
        m = (p["sa"] - p["sb"]).to_numpy()
        with_ties, without_ties = names
        return {
            "coverage": _coverage(manifest, scores),
            with_ties: {**boot(M.TIE_CALIBRATIONS[tie_calibration], h, m), "implementation": tie_calibration},
            without_ties: boot(M.accuracy_without_ties, h[h != 0], m[h != 0]),
        }

    protocol.__doc__ = (
        f"``{names[0]}`` (tie-calibrated, all pairs; ``tie_calibration`` = videoalign | deutsch) "
        f"and ``{names[1]}`` (label ties dropped)."
    )
    return protocol


def _pid(manifest: Manifest, scores, boot: _Boot, threshold: float = 0.5) -> dict:
    """docs/datasets/pid.md on a violation score: AUROC (threshold-free) and the official accuracy / F1
    with plausible as the positive class at ``threshold`` on the evaluator's own scale."""
    vt = video_table(manifest, scores)
    plausible = (vt["variant"] != "violated").to_numpy()
    s = vt["score"].to_numpy()
    return {
        "coverage": _coverage(manifest, scores),
        "auroc": boot(lambda p, x: M.auroc(~p, x), plausible, s),
        **boot(lambda p, x: M.pid_metrics(p, x, threshold), plausible, s),
    }


def _correlation(
    manifest: Manifest, scores, boot: _Boot, human_key: str, human_higher_means: str = "violation"
) -> dict:
    """Spearman / Pearson / Kendall tau-b between the violation score and a per-video human score
    in ``metadata[human_key]``, reported x1 (VideoScore2 reports x100, docs/datasets/videophy2.md).

    ``human_higher_means="plausible"`` (VideoPhy-2 ``pc``, VideoFeedback2 ``phy_score``) negates the
    human score so that a positive correlation always means agreement. Videos without the key are
    left out.
    """
    if human_higher_means not in ("violation", "plausible"):
        raise ValueError(f"human_higher_means must be 'violation' or 'plausible', got {human_higher_means!r}")
    vt = video_table(manifest, scores)
    human = pd.to_numeric(metadata_field(vt, human_key), errors="coerce").to_numpy(dtype=float)
    keep = np.isfinite(human)
    sign = -1.0 if human_higher_means == "plausible" else 1.0
    both = boot(
        lambda h, s: {"spearman": M.spearman(h, s), "pearson": M.pearson(h, s), "kendall": M.kendall(h, s)},
        sign * human[keep],
        vt["score"].to_numpy()[keep],
    )
    return {"coverage": _coverage(manifest, scores), **both}


PROTOCOLS: dict[str, Callable] = {
    "world": _world,
    "quality": _quality,
    "pairwise": _pairwise,
    "videoalign": _tie_calibrated(("accuracy_with_ties", "accuracy_without_ties")),
    "monetbench": _tie_calibrated(("tau_star", "diff_star_star")),
    "pid": _pid,
    "correlation": _correlation,
}


def evaluate(
    manifest: Manifest,
    scores: Mapping[str, float],
    protocol: str,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    alpha: float = 0.05,
    **kw,
) -> dict:
    """Figures of ``protocol`` for per-video violation ``scores`` (id -> raw score) on ``manifest``.

    ``kw`` are the protocol's own options (see each protocol's docstring); an unknown one is an error.
    """
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}; known: {sorted(PROTOCOLS)}")
    return PROTOCOLS[protocol](manifest, scores, _Boot(n_boot, seed, alpha), **kw)


def same_scene_margin(
    manifest: Manifest,
    scores: Mapping[str, float],
    other: Mapping[str, float],
    *,
    severe: float = 0.5,
    twin_keys: tuple[str, ...] = TWIN_KEYS,
    n_boot: int = 1000,
    seed: int = 0,
    alpha: float = 0.05,
) -> dict:
    """World same-scene accuracy at severity >= ``severe`` of ``scores`` minus that of ``other``, with a
    *paired* bootstrap: each resample draws the same twin pairs for both evaluators, so the interval
    is that of the difference, far narrower than two separate intervals would suggest."""
    sides = [violated_twin_pairs(manifest, s, twin_keys) for s in (scores, other)]
    sides = [ss.loc[ss["severity_a"] >= severe, ["id_a", "id_b", "score_a", "score_b"]] for ss in sides]
    both = sides[0].merge(sides[1], on=["id_a", "id_b"], suffixes=("", "_other"))

    ones = np.ones(len(both))
    credits = [
        M.pair_credit(both[a].to_numpy(float), both[b].to_numpy(float), ones)
        for a, b in (("score_a", "score_b"), ("score_a_other", "score_b_other"))
    ]
    return _Boot(n_boot, seed, alpha)(lambda c, d: c.mean(axis=1) - d.mean(axis=1), *credits, batched=True)


def same_scene_margins(
    restricted: Mapping[str, tuple], scores: Mapping[str, float], other: Mapping[str, float], n_boot: int = 1000
) -> dict:
    """``{benchmark: margin}``: the model's same-scene accuracy (severity >= the benchmark's ``severe``)
    minus ``other``'s, paired-bootstrapped, on every benchmark evaluated under the world protocol."""
    out = {}
    for name, (bench, m) in restricted.items():
        if "world" in bench.protocols:
            kw = {k: v for k, v in bench.protocols["world"].items() if k in ("severe", "twin_keys")}
            out[name] = same_scene_margin(m, scores, other, n_boot=n_boot, **kw)
    return out


def flatten_metrics(result: Mapping, prefix: str = "") -> dict[str, dict]:
    """``{"a": {"b": leaf}}`` -> ``{"a.b": leaf}``, a leaf being a dict with a ``value`` key."""
    flat: dict[str, dict] = {}
    for k, v in result.items():
        name = f"{prefix}{k}"
        if isinstance(v, Mapping) and "value" in v:
            flat[name] = dict(v)
        elif isinstance(v, Mapping):
            flat.update(flatten_metrics(v, name + "."))
    return flat


# ---------------------------------------------------------------------------------------------
# benchmark configs


@dataclass
class Benchmark:
    """One ``configs/benchmark/*.yaml``: which manifest, which part of it, which protocol(s)."""

    name: str
    manifest: Path | None
    protocols: dict[str, dict]
    split: list[str] | None = None
    where: dict[str, Any] = field(default_factory=dict)
    direction: str | None = None
    build: dict[str, Any] | None = None  # how to draw ``manifest`` if absent: a world's build options, or
    # ``builder: unseen_footage`` and its options

    def load_manifest(self) -> Manifest:
        """The benchmark's own manifest, restricted by :meth:`restrict`."""
        if self.manifest is None:
            raise MissingInput(f"benchmark {self.name!r} has no manifest")
        if self.build is not None and not (Path(self.manifest) / "videos.jsonl").is_file():
            # drawn on first use only: a manifest already there is read as it is, whatever drew it, so pointing
            # `manifest` at another build never redraws that build with these options
            from phyprobe.data import sources

            options = dict(self.build)
            builders = {"world": sources.world, "unseen_footage": sources.unseen_footage}
            builder = options.pop("builder", "world")
            if builder not in builders:
                raise InvalidOption(
                    f"benchmark {self.name!r}: build.builder {builder!r} is not one of {sorted(builders)}"
                )
            builders[builder](self.manifest, **options)
        if not (Path(self.manifest) / "videos.jsonl").is_file():
            raise MissingInput(
                f"benchmark {self.name!r}: no manifest at {self.manifest}; write it with its converter, "
                f"`phyprobe data prepare NAME --root DOWNLOAD_DIR --out {self.manifest}` (docs/datasets/)"
            )
        return self.restrict(Manifest.load(self.manifest))

    def restrict(self, m: Manifest) -> Manifest:
        """``m`` restricted to ``split`` and to videos matching ``where`` (a video column or a
        metadata key -> a value or a list of values); pairs keep only videos that stay. Also used
        to evaluate a training run on the held-out parts of its own data."""
        if self.split:
            m = m.split(*self.split)
        return m.keep(m.matching(self.where))

    def evaluate(self, scores: Mapping[str, float], manifest: Manifest | None = None, **boot) -> dict:
        """``{protocol: figures}`` for every protocol of the benchmark."""
        m = manifest if manifest is not None else self.load_manifest()
        return {name: evaluate(m, scores, name, **boot, **kw) for name, kw in self.protocols.items()}


def load_benchmark(cfg: str | os.PathLike | Mapping, root: str | os.PathLike | None = None) -> Benchmark:
    """A benchmark from a YAML file, a name under ``configs/benchmark/``, or an already-parsed mapping.

    ``protocol`` is either a name (options under ``kwargs``) or a mapping protocol -> options, for a
    benchmark reported under several protocols. A relative ``manifest`` path is taken from ``root``
    (default: the current directory, i.e. the repository root), and so is a build's ``source_dir``.
    """
    root = Path(root) if root is not None else Path.cwd()
    if not isinstance(cfg, Mapping):
        path = Path(cfg)
        if not path.suffix and not path.exists():
            path = root / "configs" / "benchmark" / f"{path}.yaml"
        with open(path, encoding="utf-8") as f:
            cfg = yaml.safe_load(f)
    missing = [k for k in ("name", "manifest", "protocol") if k not in cfg]
    if missing:
        raise InvalidOption(f"benchmark config {cfg.get('name', '?')!r} lacks {missing}")
    proto = cfg["protocol"]
    protocols = (
        {proto: dict(cfg.get("kwargs") or {})}
        if isinstance(proto, str)
        else {k: dict(v or {}) for k, v in proto.items()}
    )
    unknown = set(protocols) - set(PROTOCOLS)
    if unknown:
        raise InvalidOption(
            f"benchmark {cfg['name']!r}: unknown protocol(s) {sorted(unknown)}; known: {sorted(PROTOCOLS)}"
        )
    split = cfg.get("split")
    manifest = cfg["manifest"]
    build = dict(cfg["build"]) if cfg.get("build") is not None else None
    if build is not None and build.get("source_dir") is not None and not Path(build["source_dir"]).is_absolute():
        build["source_dir"] = root / build["source_dir"]  # a folder of footage to draw from, like ``manifest``
    return Benchmark(
        name=cfg["name"],
        manifest=None
        if manifest is None
        else (root / manifest if not Path(manifest).is_absolute() else Path(manifest)),
        protocols=protocols,
        split=[split] if isinstance(split, str) else split,
        where=dict(cfg.get("where") or {}),
        direction=cfg.get("direction"),
        build=build,
    )
