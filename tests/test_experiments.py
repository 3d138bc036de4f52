"""Every experiment config composes with the real configs and runs end to end at toy size."""

import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import TINY_WORLDS
from encoder_fixtures import tiny_kwargs
from omegaconf import open_dict

from phyprobe.eval.design_table import table as design_table
from phyprobe.testing.configs import CONFIGS, TOY, compose_train
from phyprobe.training.pipeline import train

REPO = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": f"{REPO / 'src'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}

EXPERIMENTS = sorted(p.stem for p in (CONFIGS / "experiment").glob("*.yaml"))
# experiments that change only how the worlds are built: they compose to the default recipe on another build (checked
# below); the default's run is tested, and so are the builds (tests/test_world_build.py)
BUILD_ONLY = ("codec_twins",)


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("feature_cache")


def toy_world_overrides(tiny_world: Path, cache: Path) -> list[str]:
    return [
        *TOY,
        "data=world",
        f"data.source.out_dir={tiny_world}",
        "data.source.num_scenes=16",
        "+data.source.num_real_segments=4",
        "data.source.workers=1",
        f"paths.cache_dir={cache}",
        f"paths.baseline_cache_dir={cache}/baselines",
        "eval.n_boot=20",
    ]


def toy_worlds_overrides(tiny_worlds: Path, cache: Path) -> list[str]:
    """``data=worlds`` (both worlds) at the size of the ``tiny_worlds`` fixture, so nothing is rebuilt."""
    sizes = [
        f"{'+' if k in ('num_real_segments', 'num_frames') else ''}data.source.{w}.{k}={v}"
        for w, opts in TINY_WORLDS.items()
        for k, v in opts.items()
        if k not in ("engine", "include_real")
    ]
    return [
        *TOY,
        f"data.source.out_dir={tiny_worlds}",
        "data.source.workers=1",
        *sizes,
        f"paths.cache_dir={cache}",
        f"paths.baseline_cache_dir={cache}/baselines",
        "eval.n_boot=20",
    ]


# The two test splits the toy run of every experiment reads. The default's other benchmarks are left out of those runs
# (about a third of each run's time, on five of them); test_default_run_writes_report_with_plots_and_baseline
# evaluates them all.
READ_BENCHMARKS = ("world_test", "world3d_test")


@functools.cache
def default_benchmarks() -> tuple[str, ...]:
    """The default's benchmarks, composed once per process (composing writes nothing): every toy run drops the same
    ones."""
    return tuple(compose_train(Path("unused"), []).eval.benchmarks)


def test_experiment_list_covers_the_paper_ablations():
    assert {
        "full",
        "no_rank",
        "no_mag",
        "no_cal",
        "pooling_mean",
        "pooling_max",
        "encoder_perception_encoder",
        "encoder_vjepa2",
        "encoder_wan22_vae",
    } <= set(EXPERIMENTS)


def backbone_overrides(backbone) -> list[str]:
    """Encoder ablations run the real code path on a random-initialised tiny variant of their encoder
    (``backbone``: the experiment's composed backbone group)."""
    name = backbone.name
    if name in ("efficientnet_lite0", "trajectory", "concat") or "fit" in backbone:  # embedded, or fitted in the run
        return []
    return [
        f"backbone.{k}={list(v) if isinstance(v, tuple) else ('null' if v is None else v)}"
        for k, v in tiny_kwargs(name).items()
    ]


def test_codec_twins_is_the_default_recipe_on_its_own_build_with_codec_twins(tmp_path):
    default, codec = compose_train(tmp_path, []), compose_train(tmp_path, ["experiment=codec_twins"])
    assert codec.data.source.planar.num_codec == codec.data.source.world3d.num_codec == 1
    assert codec.data.source.out_dir == default.data.source.out_dir + "-codec1"  # never redraws the default build
    for group in ("backbone", "pooling", "head", "loss", "optim", "trainer", "clip", "reading"):
        assert codec[group] == default[group], group


def test_lowpass_flow_changes_only_the_dynamics_models_base_flow_and_combines_with_codec_twins(tmp_path):
    default = compose_train(tmp_path, [])
    twins = compose_train(tmp_path, ["experiment=codec_twins"])
    for low, like in (
        (compose_train(tmp_path, ["experiment=lowpass_flow"]), default),
        (compose_train(tmp_path, ["experiment=[codec_twins,lowpass_flow]"]), twins),
    ):
        assert low.data == like.data
        base = dict(low.backbone.fit.base)
        assert base.pop("flow_method") == "farneback" and base.pop("denoise") == 2.0
        assert base == {k: v for k, v in like.backbone.fit.base.items() if k != "flow_method"}
        for group in ("pooling", "head", "loss", "optim", "trainer", "clip", "reading"):
            assert low[group] == like[group], group


@pytest.mark.parametrize("experiment", [e for e in EXPERIMENTS if e not in BUILD_ONLY])
def test_experiment_runs_at_toy_size(experiment, tiny_world, tiny_worlds, shared_cache, tmp_path):
    plain = compose_train(tmp_path, [f"experiment={experiment}"])
    both = plain.data.source._target_.endswith(".worlds")
    overrides = (
        toy_worlds_overrides(tiny_worlds, shared_cache) if both else toy_world_overrides(tiny_world, shared_cache)
    )
    tiny = backbone_overrides(plain.backbone)
    if tiny:
        overrides = [o for o in overrides if not o.startswith("backbone.")] + tiny
    if experiment == "loco_footage":  # the toy worlds have one segment per clip: score it whatever its split
        overrides.append("eval.benchmarks.real_footage_held_out.split=[train,val,test]")
    cfg = compose_train(tmp_path, [*overrides, f"experiment={experiment}", "eval.report=false"])
    unread = set(default_benchmarks()) - set(READ_BENCHMARKS)
    with open_dict(cfg):  # what every experiment must do is train and export; the benchmarks it adds stay
        for name in unread:
            cfg.eval.benchmarks.pop(name, None)
    metrics = train(cfg)
    assert (tmp_path / "scorer" / "model.safetensors").is_file()
    saved = json.loads((tmp_path / "metrics.json").read_text())
    assert saved["run"]["num_train_pairs"] > 0
    acc = metrics["benchmarks"]["world_test"]["world"]["same_scene_accuracy"]
    assert 0.0 <= acc["value"] <= 1.0 and acc["n"] > 0
    if both:  # every cross-world run reports the 3D world, labelled by whether the head saw that world
        trained = set(metrics["trained_on"])
        assert metrics["benchmarks"]["world3d_test"]["world"]["same_scene_accuracy"]["n"] > 0
        assert (metrics["distribution"]["world3d_test"] == "in") == ("world3d" in trained)
        assert (metrics["distribution"]["world_test"] == "in") == ("world" in trained)
        assert set(metrics["shortcuts"]["phyprobe"]["median_score_plausible_by_source"]) >= {"world", "world3d"}
        # `phyprobe table` reads the run as written: a cross-world run on the world it never saw, the rest on both
        role = "cross" if len(trained & {"world", "world3d"}) == 1 else "default"
        table = design_table({role: [tmp_path]})
        read = [
            b
            for b in ("world_test", "world3d_test")
            if role == "default" or metrics["distribution"][b].startswith("out")
        ]
        severe = table[table.figure == "same_scene_accuracy_severity_ge_0.5"]
        assert sorted(severe.benchmark) == sorted(read)
        for b in read:
            assert (
                severe[severe.benchmark == b]["mean"].item()
                == metrics["benchmarks"][b]["world"]["same_scene_accuracy_severity_ge_0.5"]["value"]
            )
    if experiment == "loco_footage":  # the held-out clip's segments: scored, and none of them trained on
        assert metrics["distribution"]["real_footage_held_out"] == "out: excluded from training"
        assert metrics["benchmarks"]["real_footage_held_out"]["world"]["same_scene_accuracy"]["n"] > 0
    if experiment == "encoder_vjepa2":  # the paper's baseline, V-JEPA 2's own predictor, sits beside ours
        assert {"vjepa2_surprisal_max", "vjepa2_surprisal_mean"} <= set(metrics["baselines"]) & set(metrics["margins"])
        assert (
            metrics["baselines"]["vjepa2_surprisal_max"]["world_test"]["world"]["same_scene_accuracy"]["n"] == acc["n"]
        )


def test_default_run_writes_report_with_plots_and_baseline(tiny_world, shared_cache, tmp_path):
    cfg = compose_train(tmp_path, toy_world_overrides(tiny_world, shared_cache))
    metrics = train(cfg)
    report = (tmp_path / "report.md").read_text()
    assert "Headline figures" in report and "baseline: surprisal_max" in report
    assert list(tmp_path.glob("*.png")), "main benchmark plots beside report.md"
    for png in [line.split("(")[1].rstrip(")") for line in report.splitlines() if line.startswith("![")]:
        assert (tmp_path / png).is_file(), png
    assert "surprisal_max" in metrics["baselines"] and "motion" in metrics["margins"]
    # GeoPhys's prediction residual needs 5 frames: on the toy 4-frame clips it is skipped, never reported as NaN
    assert "geophys" not in metrics["baselines"] and "geophys" not in metrics["margins"]
    # The margin over each baseline is the difference of the two same-scene accuracies on the same pairs.
    key = "same_scene_accuracy_severity_ge_0.5"
    ours = metrics["benchmarks"]["world_test"]["world"][key]
    for name in ("surprisal_max", "surprisal_mean"):
        theirs = metrics["baselines"][name]["world_test"]["world"][key]
        margin = metrics["margins"][name]["world_test"]
        assert margin["value"] == pytest.approx(ours["value"] - theirs["value"]) and margin["n"] == ours["n"]
    assert "Margin over the baselines" in report


def test_a_sweep_through_the_submitit_launcher_runs_each_job_as_its_own_process(tiny_world, shared_cache, tmp_path):
    """``train.py -m hydra/launcher=submitit_local experiment=full,no_cal seed=0,1``: four jobs, each its own
    process (submitit_slurm submits the same jobs to SLURM), and ``phyprobe summarize`` reads them."""
    sweep = tmp_path / "sweep"
    overrides = [o for o in toy_world_overrides(tiny_world, shared_cache) if not o.startswith("backbone.")]
    cmd = [
        sys.executable, "train.py", "-m", "hydra/launcher=submitit_local", "hydra.launcher.timeout_min=15",
        "experiment=full,no_cal", "seed=0,1", *overrides, "backbone=efficientnet_lite0", "backbone.weights=null",
        "backbone.image_size=32", "eval.report=false", "eval.baselines=[]", f"hydra.sweep.dir={sweep}",
    ]  # fmt: skip
    r = subprocess.run(cmd, cwd=REPO, env=ENV, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    jobs = sorted(p.parent.name for p in sweep.glob("*/metrics.json"))  # many overrides: names cut to fit
    assert len(jobs) == 4 and all(len(j.encode()) <= 200 for j in jobs), jobs
    varied = sorted(tuple(t for t in j.split("+") if t.startswith(("experiment-", "seed-"))) for j in jobs)
    assert varied == [(f"experiment-{e}", f"seed-{s}") for e in ("full", "no_cal") for s in (0, 1)], jobs
    index = [json.loads(line) for line in (sweep / "index.jsonl").read_text().splitlines()]
    assert sorted(r["folder"] for r in index) == jobs  # each folder with its whole overrides, paths included
    assert all(f"paths.cache_dir={shared_cache}" in r["overrides"] for r in index)
    # a folder the sweep wrote is taken back as it is by eval.py
    r = subprocess.run(
        [sys.executable, "eval.py", f"scorer={sweep / jobs[0] / 'scorer'}", "benchmark=world_test",
         f"benchmark.manifest={tiny_world}", "report=false", f"paths.cache_dir={shared_cache}",
         f"paths.baseline_cache_dir={shared_cache}/baselines", f"hydra.run.dir={tmp_path / 'eval'}"],
        cwd=REPO, env=ENV, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert r.returncode == 0 and (tmp_path / "eval" / "metrics.json").is_file(), r.stderr[-3000:]
    pids = {p.name.split("_")[0] for p in (sweep / ".submitit").glob("*/*_log.out")}  # a local job's id is its pid
    assert len(pids) == 4 and str(os.getpid()) not in pids, pids
    code = subprocess.run([sys.executable, "-m", "phyprobe.cli", "summarize", str(sweep)], env=ENV, cwd=REPO).returncode
    assert code == 0 and "experiment=no_cal" in (sweep / "summary.md").read_text()
