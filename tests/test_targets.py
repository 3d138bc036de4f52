"""`phyprobe targets` judges finished runs against the bounds the default is held to.

Aggregation and bounds are checked on run directories written by hand in the real layout (the values are chosen so
the expected mean, sd and verdict can be worked out in the head); the readers are checked on real eval.py outputs
here and on real training runs in test_experiments.py."""

import json

import pandas as pd
import pytest
from test_eval_job import eval_cfg
from train_helpers import CONFIGS

from phyprobe.cli import main
from phyprobe.data.manifest import Manifest
from phyprobe.errors import InvalidOption, MissingInput
from phyprobe.eval.protocols import load_benchmark
from phyprobe.eval.run import run_eval
from phyprobe.eval.targets import TARGETS, judge

SEVERE = "same_scene_accuracy_severity_ge_0.5"


def leaf(value, low=None, n=50):
    return {"value": value, "low": value - 0.1 if low is None else low, "high": value + 0.1, "n": n}


def train_run(root, name, seed, acc2d, acc3d=0.6, margin_low=0.05, trained_on=("world", "world3d"), lr=0.002):
    """A training run's files as train.py writes them, with only the figures the targets read."""
    d = root / name
    d.mkdir(parents=True)

    def figures(acc):
        return {
            SEVERE: leaf(acc),
            "cross_scene_accuracy": leaf(0.5),
            "auroc_plausible_vs_violated": leaf(0.85),
            "real_real_median_gap": leaf(0.05),
            "median_score_plausible": leaf(0.1),
            "median_score_severity_ge_0.8": leaf(0.7),
        }

    def out(world):
        return "in" if world in trained_on else "out: unseen source"

    metrics = {
        "benchmarks": {"world_test": {"world": figures(acc2d)}, "world3d_test": {"world": figures(acc3d)}},
        "distribution": {"world_test": out("world"), "world3d_test": out("world3d")},
        "trained_on": list(trained_on),
        "margins": {
            "surprisal_max": {"world_test": leaf(0.2, low=margin_low)},
            "motion": {"world_test": leaf(0.3, low=0.1), "world3d_test": leaf(0.05, low=-0.02)},
        },
    }
    (d / "metrics.json").write_text(json.dumps(metrics))
    config = {
        "seed": seed,
        "optim": {"lr": lr},
        "paths": {"output_dir": str(d)},
        "logger": {"save_dir": str(d)},
        "data": {"train_sources": list(trained_on)},
    }
    (d / "run_info.json").write_text(json.dumps({"seed": seed, "config": config}))
    return d


def row(table, role, figure, benchmark):
    sel = table[(table.role == role) & (table.figure == figure) & (table.benchmark == benchmark)]
    assert len(sel) == 1, sel
    return sel.iloc[0]


def test_default_figures_are_averaged_over_seeds_and_judged(tmp_path):
    runs = [train_run(tmp_path, f"s{i}", i, acc) for i, acc in enumerate([0.8, 0.9, 1.0])]
    table = judge({"default": runs})
    acc = row(table, "default", SEVERE, "world_test")
    assert acc["mean"] == pytest.approx(0.9) and acc["sd"] == pytest.approx(0.1) and acc["runs"] == 3
    assert bool(acc["met"])  # 0.9 >= 0.9
    assert not bool(row(table, "default", SEVERE, "world3d_test")["met"])  # 0.6
    assert not bool(row(table, "default", "cross_scene_accuracy", "world_test")["met"])  # 0.5 < 0.8
    assert bool(row(table, "default", "real_real_median_gap", "world_test")["met"])  # 0.05 <= 0.10
    # margins: on every benchmark the run has one for; the motion margin on 3D has an interval reaching below 0
    assert bool(row(table, "default", "margins.motion", "world_test")["met"])
    motion3d = row(table, "default", "margins.motion", "world3d_test")
    assert motion3d["low"] == pytest.approx(-0.02) and not bool(motion3d["met"])
    assert bool(row(table, "default", "margins.surprisal_max", "world_test")["met"])  # 0.2 >= 0.15, low 0.05 > 0


def test_one_seed_whose_interval_reaches_zero_fails_a_margin(tmp_path):
    runs = [train_run(tmp_path, "a", 0, 0.8), train_run(tmp_path, "b", 1, 0.8, margin_low=-0.01)]
    margin = row(judge({"default": runs}), "default", "margins.surprisal_max", "world_test")
    assert margin["mean"] == pytest.approx(0.2) and margin["low"] == pytest.approx(-0.01) and not bool(margin["met"])


def test_cross_runs_are_read_on_the_world_they_did_not_train_on(tmp_path):
    to3d = [train_run(tmp_path, f"to3d{i}", i, 0.9, acc3d=0.7 + 0.1 * i, trained_on=("world",)) for i in range(2)]
    to2d = train_run(tmp_path, "to2d", 0, 0.85, trained_on=("world3d",))
    table = judge({"cross": [*to3d, to2d]})
    assert set(table.benchmark) == {"world_test", "world3d_test"}
    out3d = row(table, "cross", SEVERE, "world3d_test")
    assert out3d["mean"] == pytest.approx(0.75) and out3d["runs"] == 2 and not bool(out3d["met"])
    assert bool(row(table, "cross", SEVERE, "world_test")["met"])  # 0.85 >= 0.80
    with pytest.raises(InvalidOption, match="no cross-world run"):
        judge({"cross": [train_run(tmp_path, "both", 0, 0.9)]})


def test_runs_of_two_designs_are_not_averaged(tmp_path):
    a, b = train_run(tmp_path, "a", 0, 0.8), train_run(tmp_path, "b", 1, 0.8, lr=0.01)
    with pytest.raises(InvalidOption, match=r"b: differs from .*a in optim.lr"):
        judge({"default": [a, b]})


def test_bad_inputs_name_the_file(tmp_path):
    with pytest.raises(MissingInput, match="no metrics.json"):
        judge({"default": [tmp_path]})
    (tmp_path / "metrics.json").write_text("{not json")
    with pytest.raises(InvalidOption, match="metrics.json: not JSON"):
        judge({"default": [tmp_path]})
    run = train_run(tmp_path, "r", 0, 0.8)
    (run / "run_info.json").write_text("")
    with pytest.raises(InvalidOption, match="run_info.json: not JSON"):
        judge({"default": [run]})
    run = train_run(tmp_path, "r2", 0, 0.8)
    with pytest.raises(InvalidOption, match="takes eval.py outputs"):
        judge({"unseen_world": [run]})
    with pytest.raises(InvalidOption, match="unknown role"):
        judge({"holdout": [run]})
    with pytest.raises(SystemExit) as e:  # nothing to judge: one error line and exit code 2, not a traceback
        main(["targets"])
    assert e.value.code == 2


def test_every_target_has_a_known_role_and_sense():
    from phyprobe.eval.targets import ROLES, SENSES

    assert {t.role for t in TARGETS} == set(ROLES) and {t.sense for t in TARGETS} <= set(SENSES)


def test_real_eval_outputs_as_unseen_world_stand_ins(tiny_world, tmp_path, capsys):
    """eval.py on a real world build, with scores that read the severity off the manifest (every pair right) and
    with the motion heuristic's own scores (a margin of exactly 0, so never met): the figures are eval.py's own."""
    manifest = load_benchmark("world_test", root=CONFIGS.parent).restrict(Manifest.load(tiny_world))
    common = [
        "benchmark=world_test",
        f"benchmark.manifest={tiny_world}",
        f"paths.baseline_cache_dir={tmp_path / 'bcache'}",
        "report=false",
    ]
    run_eval(eval_cfg(tmp_path / "motion", [*common, "baseline=motion"]))
    heuristic = pd.read_csv(tmp_path / "motion" / "scores.csv")
    scores = {
        "oracle": dict(zip(manifest.videos["id"], manifest.videos["magnitude"])),
        "same": dict(zip(heuristic["id"], heuristic["raw_score"])),
    }
    for name, s in scores.items():
        csv = tmp_path / f"{name}.csv"
        pd.DataFrame({"video": list(s), "score": list(s.values())}).to_csv(csv, index=False)
        run_eval(eval_cfg(tmp_path / name, [*common, f"scores_csv={csv}"]))
    table = judge({"unseen_world": [tmp_path / "oracle"]})
    acc = row(table, "unseen_world", SEVERE, "world_test")
    assert acc["mean"] == 1.0 and acc["build"] == str(tiny_world) and bool(acc["met"])
    saved = json.loads((tmp_path / "oracle" / "metrics.json").read_text())["margins"]["motion"]
    margin = row(table, "unseen_world", "margins.motion", "world_test")
    assert margin["mean"] == saved["value"] > 0 and margin["low"] == saved["low"]
    assert bool(margin["met"]) == (saved["low"] > 0)  # a tiny world's few pairs may leave the interval at 0
    with pytest.raises(InvalidOption, match="--default takes training runs"):
        judge({"default": [tmp_path / "oracle"]})
    out_json = tmp_path / "targets.json"
    assert main(["targets", "--unseen-world", str(tmp_path / "same"), "--json", str(out_json), "--strict"]) == 1
    printed = capsys.readouterr().out
    assert "margins.motion" in printed and ("1 not met" in printed or "2 not met" in printed)
    saved = json.loads(out_json.read_text())
    margin = next(r for r in saved if r["figure"] == "margins.motion")
    assert margin["mean"] == 0.0 and margin["met"] is False


def test_fewer_seeds_than_asked_are_named(tmp_path, capsys):
    runs = [train_run(tmp_path, f"s{i}", i, 0.9) for i in range(2)]
    assert main(["targets", "--default", *map(str, runs)]) == 0  # not --strict: unmet targets still exit 0
    out = capsys.readouterr().out
    assert "fewer here: default world3d_test: 2, default world_test: 2" in out
    assert main(["targets", "--default", *map(str, runs), train_run(tmp_path, "s2", 2, 0.9).as_posix()]) == 0
    assert "fewer here" not in capsys.readouterr().out


@pytest.mark.parametrize(
    "overrides",
    [
        ["backbone=vjepa2"],
        ["experiment=cross_2d_to_3d", "backbone=vjepa2"],
        ["experiment=cross_3d_to_2d", "backbone=perception_encoder"],
    ],
)
def test_the_commands_that_judge_another_design_compose(overrides, tmp_path):
    """docs/results.md ("The targets, read from the runs") gives these runs for a GPU encoder: the encoder is the one
    asked for, and a cross-world run still trains on one world."""
    from train_helpers import compose_train

    cfg = compose_train(tmp_path, overrides)
    assert cfg.backbone.name == overrides[-1].split("=")[1]
    if overrides[0].startswith("experiment=cross"):
        assert len(cfg.data.train_sources) == 1
