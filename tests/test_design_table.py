"""`phyprobe table` reads one design's finished runs by role, and holds them to the bounds a user gives.

Aggregation and bounds are checked on run directories written by hand in the real layout (the values are chosen so
the expected mean, sd and verdict can be worked out in the head); the readers are checked on real eval.py outputs
here and on real training runs in test_experiments.py."""

import json

import pandas as pd
import pytest

from phyprobe.cli import main
from phyprobe.data.manifest import Manifest
from phyprobe.errors import InvalidOption, MissingInput
from phyprobe.eval.design_table import FIGURES, ROLES, Requirement, table
from phyprobe.eval.protocols import load_benchmark
from phyprobe.eval.run import run_eval
from phyprobe.testing.configs import CONFIGS, compose_eval

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


def test_default_figures_are_averaged_over_seeds(tmp_path):
    runs = [train_run(tmp_path, f"s{i}", i, acc) for i, acc in enumerate([0.8, 0.9, 1.0])]
    t = table({"default": runs})
    acc = row(t, "default", SEVERE, "world_test")
    assert acc["mean"] == pytest.approx(0.9) and acc["sd"] == pytest.approx(0.1) and acc["runs"] == 3
    assert acc["first_interval"] == pytest.approx((0.7, 0.9)) and acc["met"] is None  # no bound asked
    assert row(t, "default", SEVERE, "world3d_test")["mean"] == pytest.approx(0.6)
    # margins: on every benchmark the run has one for, with the lowest interval start of any seed
    assert row(t, "default", "margins.motion", "world3d_test")["low"] == pytest.approx(-0.02)
    assert row(t, "default", "margins.surprisal_max", "world_test")["mean"] == pytest.approx(0.2)


def test_requirements_are_the_users_and_read_the_mean_or_the_lowest_interval_start(tmp_path):
    runs = [train_run(tmp_path, "a", 0, 0.8), train_run(tmp_path, "b", 1, 0.9, margin_low=-0.01)]
    reqs = (Requirement.parse(f"default:{SEVERE}>=0.85"), Requirement.parse("default:margins.surprisal_max.low>0"))
    t = table({"default": runs}, reqs)
    acc = row(t, "default", SEVERE, "world_test")
    assert acc["asked"] == ">= 0.85" and bool(acc["met"])  # mean 0.85
    margin = row(t, "default", "margins.surprisal_max", "world_test")
    assert margin["low"] == pytest.approx(-0.01) and not bool(margin["met"])
    assert row(t, "default", "cross_scene_accuracy", "world_test")["met"] is None
    with pytest.raises(InvalidOption, match="expected ROLE:FIGURE"):
        Requirement.parse("holdout:x>=1")
    with pytest.raises(InvalidOption, match="no such figure"):
        table({"default": runs}, (Requirement.parse("default:nope>=1"),))


def test_cross_runs_are_read_on_the_world_they_did_not_train_on(tmp_path):
    to3d = [train_run(tmp_path, f"to3d{i}", i, 0.9, acc3d=0.7 + 0.1 * i, trained_on=("world",)) for i in range(2)]
    to2d = train_run(tmp_path, "to2d", 0, 0.85, trained_on=("world3d",))
    t = table({"cross": [*to3d, to2d]})
    assert set(t.benchmark) == {"world_test", "world3d_test"}
    out3d = row(t, "cross", SEVERE, "world3d_test")
    assert out3d["mean"] == pytest.approx(0.75) and out3d["runs"] == 2
    assert row(t, "cross", SEVERE, "world_test")["mean"] == pytest.approx(0.85)
    with pytest.raises(InvalidOption, match="no cross-world run"):
        table({"cross": [train_run(tmp_path, "both", 0, 0.9)]})


def test_runs_of_two_designs_are_not_averaged(tmp_path):
    a, b = train_run(tmp_path, "a", 0, 0.8), train_run(tmp_path, "b", 1, 0.8, lr=0.01)
    with pytest.raises(InvalidOption, match=r"b: differs from .*a in optim.lr"):
        table({"default": [a, b]})


def test_bad_inputs_name_the_file(tmp_path):
    with pytest.raises(MissingInput, match="no metrics.json"):
        table({"default": [tmp_path]})
    (tmp_path / "metrics.json").write_text("{not json")
    with pytest.raises(InvalidOption, match="metrics.json: not JSON"):
        table({"default": [tmp_path]})
    run = train_run(tmp_path, "r", 0, 0.8)
    (run / "run_info.json").write_text("")
    with pytest.raises(InvalidOption, match="run_info.json: not JSON"):
        table({"default": [run]})
    run = train_run(tmp_path, "r2", 0, 0.8)
    with pytest.raises(InvalidOption, match="takes eval.py outputs"):
        table({"unseen_world": [run]})
    with pytest.raises(InvalidOption, match="unknown role"):
        table({"holdout": [run]})
    with pytest.raises(SystemExit) as e:  # nothing to read: one error line and exit code 2, not a traceback
        main(["table"])
    assert e.value.code == 2


def test_every_figure_has_a_known_role():
    assert {f.role for f in FIGURES} == set(ROLES)


def test_real_eval_outputs_as_unseen_world_stand_ins(tiny_world, tmp_path, capsys):
    """eval.py on a real world build, with scores that read the severity off the manifest (every pair right) and
    with the motion heuristic's own scores (a margin of exactly 0, so never met): the figures are eval.py's own."""
    manifest = load_benchmark("world_test", root=CONFIGS.parent).restrict(Manifest.load(tiny_world))
    common = [
        "benchmark=world_test",
        f"benchmark.manifest={tiny_world}",
        f"paths.baseline_cache_dir={tmp_path / 'bcache'}",
        f"paths.cache_dir={tmp_path / 'cache'}",  # GeoPhys's features (margins_over)
        "report=false",
    ]
    run_eval(compose_eval(tmp_path / "motion", [*common, "baseline=motion"]))
    heuristic = pd.read_csv(tmp_path / "motion" / "scores.csv")
    scores = {
        "oracle": dict(zip(manifest.videos["id"], manifest.videos["magnitude"])),
        "same": dict(zip(heuristic["id"], heuristic["raw_score"])),
    }
    for name, s in scores.items():
        csv = tmp_path / f"{name}.csv"
        pd.DataFrame({"video": list(s), "score": list(s.values())}).to_csv(csv, index=False)
        run_eval(compose_eval(tmp_path / name, [*common, f"scores_csv={csv}"]))
    t = table({"unseen_world": [tmp_path / "oracle"]})
    acc = row(t, "unseen_world", SEVERE, "world_test")
    assert acc["mean"] == 1.0 and acc["build"] == str(tiny_world)
    saved = json.loads((tmp_path / "oracle" / "metrics.json").read_text())["margins"]["motion"]
    margin = row(t, "unseen_world", "margins.motion", "world_test")
    assert margin["mean"] == saved["value"] > 0 and margin["low"] == saved["low"]
    with pytest.raises(InvalidOption, match="--default takes training runs"):
        table({"default": [tmp_path / "oracle"]})
    out_json = tmp_path / "table.json"
    args = ["table", "--unseen-world", str(tmp_path / "same"), "--json", str(out_json)]
    assert main(args) == 0  # no bound asked: a table, exit 0
    assert main([*args, "--require", "unseen_world:margins.motion>0"]) == 1  # the heuristic against itself: 0
    printed = capsys.readouterr().out
    assert "margins.motion" in printed and "1 of the rows you asked about are not met" in printed
    saved = json.loads(out_json.read_text())
    margin = next(r for r in saved if r["figure"] == "margins.motion")
    assert margin["mean"] == 0.0 and margin["met"] is False
    notes = tmp_path / "notes.txt"
    notes.write_text('{"mine": 1}\n')
    with pytest.raises(SystemExit):
        main(["table", "--unseen-world", str(tmp_path / "same"), "--json", str(notes)])
    assert "holds something other than a design table" in capsys.readouterr().err
    assert notes.read_text() == '{"mine": 1}\n'  # a file of the user's: byte-identical


@pytest.mark.parametrize(
    "overrides",
    [
        ["backbone=vjepa2"],
        ["experiment=cross_2d_to_3d", "backbone=vjepa2"],
        ["experiment=cross_3d_to_2d", "backbone=perception_encoder"],
    ],
)
def test_the_commands_that_judge_another_design_compose(overrides, tmp_path):
    """The runs research/judge_design.py makes for a GPU encoder compose: the encoder is the one asked for, and a
    cross-world run still trains on one world."""
    from phyprobe.testing.configs import compose_train

    cfg = compose_train(tmp_path, overrides)
    assert cfg.backbone.name == overrides[-1].split("=")[1]
    if overrides[0].startswith("experiment=cross"):
        assert len(cfg.data.train_sources) == 1
