"""GeoPhys (``phyprobe.baselines.geophys``) as a baseline wherever the motion heuristic is one: ``eval.py
baseline=geophys`` and ``margins_over``, a training run's baselines and paired margins (read from the run's own
features when its trajectory encoder holds GeoPhys's path), the leaderboard's ``--geophys`` column, and the
in-memory helper a best-of-n pipeline uses. Everything runs on a real tiny world's mp4s."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from omegaconf import OmegaConf, open_dict
from test_experiments import toy_world_overrides

from phyprobe.baselines.geophys import (
    DEFAULT,
    GeoPhys,
    geophys_scores,
    min_frames,
    scores_from_features,
    shared_columns,
)
from phyprobe.data.manifest import Manifest
from phyprobe.encoders import from_config
from phyprobe.encoders.trajectory import SIGNALS, geophys_score, geophys_signals
from phyprobe.eval.design_table import table as design_table
from phyprobe.eval.protocols import flatten_metrics, load_benchmark
from phyprobe.eval.results import collect, detail_markdown, headline_markdown, over_seeds
from phyprobe.eval.run import run_eval
from phyprobe.features.extract import extract_features
from phyprobe.io.video import ClipSpec
from phyprobe.testing.configs import CONFIGS, compose_eval, compose_train
from phyprobe.training.evaluation import evaluate_run, restrict_all
from phyprobe.training.pipeline import train

# a random-initialised frame encoder at toy size: the real code path in a second
RANDOM_FRAMES = {"name": "efficientnet_lite0", "weights": None, "image_size": 32}
# the packaged ImageNet weights at toy size: deterministic, so two separate extractions hold the same network
SMALL_FRAMES = {"name": "efficientnet_lite0", "weights": "package", "image_size": 32, "resize": "squash"}
# the feature cache stores float16 (11 significant bits); a score is a mean of logs of means of those values
F16_TOL = 2e-3
SEVERE = "same_scene_accuracy_severity_ge_0.5"


def _flow(d: dict) -> str:
    """A dict as a Hydra override value: {name: efficientnet_lite0, weights: null, ...}."""
    return "{" + ", ".join(f"{k}: {'null' if v is None else v}" for k, v in d.items()) + "}"


def _world_test(tiny_world) -> Manifest:
    return load_benchmark("world_test", root=CONFIGS.parent).restrict(Manifest.load(tiny_world))


def test_the_configs_carry_the_python_default():
    """train.yaml's eval.geophys and eval.yaml's geophys copy phyprobe.baselines.geophys.DEFAULT, which the leaderboard
    and GeoPhys() use: a run's baseline, eval.py's and the leaderboard's must be one recipe unless a user says
    otherwise. The default training run and eval.py report it beside the motion heuristic."""
    train_cfg = OmegaConf.load(CONFIGS / "train.yaml")
    eval_cfg = OmegaConf.load(CONFIGS / "eval.yaml")
    want = {k: DEFAULT[k] for k in ("frames", "layer", "signals")}
    assert OmegaConf.to_container(train_cfg.eval.geophys) == want
    assert OmegaConf.to_container(eval_cfg.geophys) == {**want, "num_frames": DEFAULT["num_frames"]}
    assert list(train_cfg.eval.baselines) == ["surprisal", "motion", "geophys"]
    assert list(eval_cfg.margins_over) == ["motion", "geophys"]


def test_too_short_a_clip_is_refused_not_scored_nan():
    """Below min_frames a signal has no defined step and its mean is NaN: the refusal guards a real hole."""
    assert min_frames(SIGNALS) == 5 and min_frames(["curvature", "accel"]) == 3
    steps = torch.rand(2, 4, 4) + 0.1  # 4 frames: speed, turn, accel, residual per step
    assert torch.isnan(geophys_score(geophys_signals(steps))).all()
    assert torch.isfinite(geophys_score(geophys_signals(torch.rand(2, 5, 4) + 0.1))).all()
    with pytest.raises(ValueError, match="at least 5"):
        GeoPhys(frames=RANDOM_FRAMES, num_frames=4)
    with pytest.raises(ValueError, match="unknown signals"):
        min_frames(["curvatur"])


def test_eval_baseline_geophys_runs_end_to_end(tiny_world, tmp_path):
    """eval.py baseline=geophys on real mp4s: the trajectory features go to paths.cache_dir at geophys.num_frames, the
    benchmark's protocol runs on the scores, a baseline is not measured against itself, and geophys.layer=... reads
    another layer (its own cache entry, other scores). Too few frames end in one line naming the option."""
    common = [
        "benchmark=world_test",
        f"benchmark.manifest={tiny_world}",
        "baseline=geophys",
        f"geophys.frames={_flow(RANDOM_FRAMES)}",
        "geophys.num_frames=8",
        f"paths.cache_dir={tmp_path / 'cache'}",
        "extract.num_workers=0",
    ]
    res = run_eval(compose_eval(tmp_path / "last", common))
    acc = res["results"]["world"]["same_scene_accuracy"]
    assert res["evaluator"] == "baseline: geophys" and acc["n"] > 0 and 0.0 <= acc["value"] <= 1.0
    assert "margins" not in res and (tmp_path / "last" / "report.md").is_file()
    last = pd.read_csv(tmp_path / "last" / "scores.csv").set_index("id")["raw_score"]
    assert len(last) == len(_world_test(tiny_world)) and np.isfinite(last).all() and last.nunique() > 1

    run_eval(compose_eval(tmp_path / "l2", [*common, "geophys.layer=2", "report=false"]))
    specs = [json.loads(p.read_text()) for p in (tmp_path / "cache").glob("*/spec.json")]
    assert sorted(s["encoder"]["options"]["layers"][0] for s in specs) == sorted([DEFAULT["layer"], 2])
    assert {s["clip"]["num_frames"] for s in specs} == {8}
    l2 = pd.read_csv(tmp_path / "l2" / "scores.csv").set_index("id")["raw_score"]
    assert list(l2.index) == list(last.index) and not np.allclose(l2, last)

    with pytest.raises(ValueError, match="geophys=.*at least 5"):
        run_eval(compose_eval(tmp_path / "short", [*common, "geophys.num_frames=4"]))


def test_margin_over_geophys_is_paired_on_the_same_twins(tiny_world, tmp_path):
    """`margins_over` scores GeoPhys on the benchmark's videos beside the motion heuristic and reports the paired
    margin over each: GeoPhys's own scores against it are exactly 0, and the report says so. The results files
    (results/*.csv), the README's and the detail tables and `phyprobe table` carry both baselines' figures."""
    common = [
        "benchmark=world_test",
        f"benchmark.manifest={tiny_world}",
        f"geophys.frames={_flow(RANDOM_FRAMES)}",
        "geophys.num_frames=8",
        f"paths.cache_dir={tmp_path / 'cache'}",
        f"paths.baseline_cache_dir={tmp_path / 'bcache'}",
        "extract.num_workers=0",
    ]
    alone = run_eval(compose_eval(tmp_path / "geophys", [*common, "baseline=geophys", "report=false"]))
    own = pd.read_csv(tmp_path / "geophys" / "scores.csv")
    csv = tmp_path / "same.csv"
    pd.DataFrame({"video": own["id"], "score": own["raw_score"]}).to_csv(csv, index=False)
    res = run_eval(compose_eval(tmp_path / "same", [*common, f"scores_csv={csv}"]))
    assert set(res["margins"]) == {"motion", "geophys"}
    base = res["baselines"]["geophys"]["world"][SEVERE]["value"]
    assert base == alone["results"]["world"][SEVERE]["value"]
    margin = res["margins"]["geophys"]
    assert margin["value"] == 0.0 and margin["low"] == margin["high"] == 0.0 and margin["n"] > 0
    assert "Paired margin over the geophys baseline" in (tmp_path / "same" / "report.md").read_text()

    # the results files and tables read GeoPhys beside the motion heuristic, from the same metrics.json
    long = collect({("d", "unseen"): [tmp_path / "same"]})
    row = long.iloc[0]
    motion = res["baselines"]["motion"]["world"][SEVERE]["value"]
    assert (row["geophys"], row["geophys_margin"], row["geophys_margin_low"]) == (base, 0.0, 0.0)
    assert (row["motion"], row["margin"]) == (motion, res["margins"]["motion"]["value"])
    over = over_seeds(long)
    md = headline_markdown(over, [("held-out", "unseen", "world_test", row["build"])], [("d", "design")], "d")
    head, _, line = md.splitlines()
    assert head.endswith("| motion heuristic | GeoPhys | n pairs |") and line.endswith(
        f"| {motion:.3f} | {base:.3f} | {margin['n']} |"
    )
    detail = detail_markdown(over)
    assert "| GeoPhys | margin over it" in detail and "+0.000 (+0.000)" in detail
    t = design_table({"unseen_world": [tmp_path / "same"]})
    assert t[t.figure == "margins.geophys"]["mean"].tolist() == [0.0]


def test_shared_columns_give_the_scores_of_a_separate_extraction(tiny_world, tmp_path):
    """A trajectory encoder that reads GeoPhys's path (among other layers and grids) holds GeoPhys's features: its
    columns give the scores a separate GeoPhys extraction gives, to float16 storage. Encoders that read the path
    otherwise (other normalisation, frame size or layers) share nothing, and their columns would give other scores."""
    m = _world_test(tiny_world)
    clip = ClipSpec(8)
    wide = from_config("trajectory", frames=SMALL_FRAMES, layers=[2, -1], grids=[1, 2])
    feats = extract_features(m, wide, clip, tmp_path / "run", batch_size=4, num_workers=0).load()
    cols = shared_columns(wide, SMALL_FRAMES, -1)
    assert cols == wide.columns(1, 0)  # the second layer's global cell, every statistic
    shared = scores_from_features(feats, cols)
    separate = geophys_scores(m, tmp_path / "own", frames=SMALL_FRAMES, layer=-1, num_frames=8, num_workers=0)
    assert set(shared) == set(separate) == set(m.videos["id"])
    ids = sorted(shared)
    a, b = np.array([shared[v] for v in ids]), np.array([separate[v] for v in ids])
    assert np.allclose(a, b, rtol=0, atol=F16_TOL), np.abs(a - b).max()
    assert np.ptp(b) > 20 * F16_TOL  # the videos' scores differ by far more than the tolerance
    assert shared_columns(wide, SMALL_FRAMES, 2) == wide.columns(0, 0)

    unnormalised = from_config("trajectory", frames=SMALL_FRAMES, layers=[-1], normalise="none")
    assert shared_columns(unnormalised, SMALL_FRAMES, -1) is None
    raw = extract_features(m, unnormalised, clip, tmp_path / "run", batch_size=4, num_workers=0).load()
    other = scores_from_features(raw, unnormalised.columns(0))
    assert not np.allclose([other[v] for v in ids], b, atol=F16_TOL)
    assert shared_columns(wide, {**SMALL_FRAMES, "image_size": 48}, -1) is None
    assert shared_columns(wide, SMALL_FRAMES, 1) is None
    assert shared_columns(from_config("trajectory", frames=SMALL_FRAMES, grids=[2]), SMALL_FRAMES, -1) is None
    assert shared_columns(from_config("efficientnet_lite0", weights=None, image_size=32), SMALL_FRAMES, -1) is None


def test_geophys_in_memory_equals_the_files(tiny_world):
    """GeoPhys.score_frames (the best-of-n helper) on a video's frames in memory, uint8 or float, any batch split,
    gives the score of the same video read from its file (frames within twice the encoder's input size, which a
    file's decoding does not reduce first), and the videos' scores differ by far more than that."""
    from phyprobe.io.video import decode_clip, probe

    m = _world_test(tiny_world)
    paths = [m.video_path(p) for p in m.videos["path"][:4]]
    gp = GeoPhys(num_frames=8)  # the DEFAULT's frame encoder, at 112 px: the 144 px world frames are read whole
    from_files = gp.score_files(paths)
    frames = np.stack([decode_clip(p, ClipSpec(probe(p)["num_frames"])).frames for p in paths])
    in_memory = gp.score_frames(frames, batch_size=3)
    as_float = gp.score_frames(torch.from_numpy(frames).permute(0, 1, 4, 2, 3).float() / 255.0)
    assert np.allclose(in_memory, from_files, rtol=0, atol=1e-4), in_memory - from_files
    assert np.allclose(as_float, in_memory, rtol=0, atol=1e-4)
    assert np.ptp(from_files) > 0.05
    with pytest.raises(ValueError, match="5 dimensions"):
        gp.score_frames(frames[0])


def _toy_run(tmp_path: Path, tiny_world, cache: Path, backbone: dict | None) -> dict:
    """A toy training run on 6-frame clips (GeoPhys needs 5) whose GeoPhys reads SMALL_FRAMES; ``backbone``: a
    trajectory encoder's options, or None for a tiny random EfficientNet (GeoPhys then extracts on its own)."""
    overrides = [o for o in toy_world_overrides(tiny_world, cache) if not o.startswith(("backbone.", "clip."))]
    cfg = compose_train(
        tmp_path,
        [
            *overrides,
            "backbone=efficientnet_lite0",
            "backbone.weights=null",
            "backbone.image_size=32",
            "clip.num_frames=6",
            f"eval.geophys.frames={_flow(SMALL_FRAMES)}",
        ],
    )
    if backbone is not None:
        with open_dict(cfg):
            cfg.backbone = {"_target_": "phyprobe.encoders.from_config", "_convert_": "all", **backbone}
    return train(cfg)


@pytest.mark.parametrize("shared", [False, True], ids=["own_extraction", "from_the_runs_features"])
def test_training_run_reports_geophys_beside_motion(shared, tiny_world, tmp_path):
    """metrics.json and report.md carry GeoPhys like the motion heuristic: its figures on every benchmark and the
    paired margin over it (ours minus its same-scene accuracy, on the same twins). Its scores are those of a separate
    GeoPhys extraction at the run's clip length, whether the run extracted them itself or, its backbone being a
    trajectory encoder that holds GeoPhys's path, read them from its own features with no second extraction."""
    cache = tmp_path / "cache"
    layers = [2, DEFAULT["layer"]]  # holds GeoPhys's layer, so the run's own features carry its path
    backbone = {"name": "trajectory", "frames": SMALL_FRAMES, "layers": layers, "grids": [1, 2]} if shared else None
    metrics = _toy_run(tmp_path / "run", tiny_world, cache, backbone)
    assert {"motion", "geophys"} <= set(metrics["baselines"]) & set(metrics["margins"])
    for name in ("world_test", "world_heldout_family"):
        ours = metrics["benchmarks"][name]["world"][SEVERE]
        theirs = metrics["baselines"]["geophys"][name]["world"][SEVERE]
        margin = metrics["margins"]["geophys"][name]
        assert margin["value"] == pytest.approx(ours["value"] - theirs["value"]) and margin["n"] == ours["n"]
    report = (tmp_path / "run" / "report.md").read_text()
    assert "| baseline: geophys | world_test |" in report and "| geophys | world_test |" in report

    trajectories = [
        json.loads(p.read_text())["encoder"]["options"]
        for p in cache.glob("*/spec.json")
        if json.loads(p.read_text())["encoder"]["name"] == "trajectory"
    ]
    assert [t["layers"] for t in trajectories] == ([layers] if shared else [[DEFAULT["layer"]]])  # one pass
    clips = {json.loads(p.read_text())["clip"]["num_frames"] for p in cache.glob("*/spec.json")}
    assert clips == {6}

    manifest = Manifest.load(tiny_world)
    restricted = restrict_all(manifest, OmegaConf.to_container(compose_train(tmp_path, []).eval.benchmarks))
    bench = manifest.keep(manifest.videos["id"].isin(set().union(*(m.videos["id"] for _, m in restricted.values()))))
    # not shared: the run's own GeoPhys cache answers (the same extraction); shared: a second, separate extraction
    root = tmp_path / "own" if shared else cache
    separate = geophys_scores(bench, root, frames=SMALL_FRAMES, num_frames=6, num_workers=0)
    want = {k: flatten_metrics(v) for k, v in evaluate_run(restricted, separate, 20).items()}
    got = {k: flatten_metrics(v) for k, v in metrics["baselines"]["geophys"].items()}
    assert set(got) == set(want) == set(restricted) and all(set(got[k]) == set(want[k]) for k in got)
    for name, figures in got.items():  # scores equal to float16 storage: every figure equal, score medians to that
        for key, leaf in figures.items():
            other = want[name][key]
            assert leaf.get("n") == other.get("n"), (name, key)
            for part in ("value", "low", "high"):
                x, y = leaf.get(part), other.get(part)
                assert x == y if None in (x, y) else x == pytest.approx(y, rel=0, abs=F16_TOL, nan_ok=True), (name, key)


def test_leaderboard_geophys_column(tiny_world, tmp_path, capsys):
    """`phyprobe leaderboard --geophys` needs no scorer: GeoPhys (the DEFAULT recipe) scores every generation, each
    per-prompt score being the video's own (in memory, float32) within float16, and the column enters the paired
    table with its cost. A rerun extracts nothing (the features are cached in OUT/features) and ranks the same."""
    from phyprobe.cli import main as cli
    from phyprobe.testing.generators import world_generators

    truth = world_generators(tiny_world, tmp_path / "all")
    gens = tmp_path / "gens"
    for g in ("plausible", "often_broken"):
        shutil.copytree(tmp_path / "all" / g, gens / g)
    out = tmp_path / "lb"
    argv = ["leaderboard", str(gens), "--geophys", "--out", str(out), "--n-boot", "500", "--no-progress", "--no-plots"]
    assert cli(argv) == 0
    first = json.loads((out / "leaderboard.json").read_text())
    ev = first["evaluators"]["geophys"]
    assert ev["kind"] == "baseline" and ev["higher_is_better"] is False and ev["cost"]["seconds_per_video"] > 0
    prompts = sorted(truth["plausible"])
    assert ev["shared_prompts"] == len(prompts)
    assert {s["system"] for s in ev["stats"]["systems"]} == {"plausible", "often_broken"}
    check = prompts[:3]
    direct = GeoPhys().score_files([gens / "often_broken" / f"{p}.mp4" for p in check])
    got = [ev["per_prompt"]["often_broken"][p] for p in check]
    assert np.allclose(got, direct, atol=F16_TOL), (got, direct)
    assert "geophys" in (out / "leaderboard.md").read_text()

    shards = sorted(str(p) for p in (out / "features").rglob("*.tar"))
    cost = json.loads((out / "features" / "geophys.json").read_text())
    assert cli(argv) == 0
    again = json.loads((out / "leaderboard.json").read_text())["evaluators"]["geophys"]
    assert sorted(str(p) for p in (out / "features").rglob("*.tar")) == shards
    assert json.loads((out / "features" / "geophys.json").read_text()) == cost
    assert again["per_prompt"] == ev["per_prompt"] and again["stats"] == ev["stats"]


def test_the_flow_geophys_design_derives_its_part_from_geophys_own_cache():
    """``experiment=flow_geophys``'s log-scaled path is read from the unscaled path's cache, keyed as GeoPhys's own
    encoder is: a run of it fills the cache the baseline reads, so the baseline decodes nothing a third time."""
    from omegaconf import OmegaConf

    from phyprobe.baselines.geophys import DEFAULT, geophys_encoder
    from phyprobe.config_files import SOURCE_ROOT
    from phyprobe.instantiate import frozen_inputs

    backbone = OmegaConf.load(SOURCE_ROOT / "configs" / "backbone" / "flow_dynamics_geophys.yaml")
    derived = [enc for enc, _ in frozen_inputs(backbone, "float16") if hasattr(enc, "base")]
    assert [enc.base.describe() for enc in derived] == [geophys_encoder(DEFAULT["frames"], DEFAULT["layer"]).describe()]
