"""The default recipe is the paper's pipeline, its config groups compose as they read, and the paper's loss
ablations change the trained head."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from safetensors.torch import load_file

from phyprobe.head import PhyProbeHead, mlp_width
from phyprobe.testing.configs import CONFIGS, compose_train
from phyprobe.training.pipeline import train

ROOT = Path(__file__).resolve().parents[1]


def test_default_is_the_papers_pipeline(tmp_path):
    cfg = compose_train(tmp_path, [])
    assert list(cfg.pooling.stats) == ["mean", "std", "max"]
    assert cfg.head.kind == "mlp" and cfg.head.hidden == "auto"
    assert (cfg.loss.lambda_rank, cfg.loss.lambda_mag, cfg.loss.lambda_cal) == (1.0, 1.0, 1.0)
    assert cfg.clip.num_frames == 32 and cfg.reading.mode == "auto"


@pytest.mark.parametrize("dim", [256, 450, 1280, 1536])
def test_auto_width_gives_the_papers_million_parameters(dim):
    head = PhyProbeHead(dim, hidden="auto")
    assert head.hidden == mlp_width(3 * dim) and 0.95e6 < head.num_parameters() < 1.05e6


def test_no_backbone_file_sets_anything_but_the_backbone():
    """A backbone file is the encoder alone: none is a `@package _global_` file that would rewrite the pooling,
    head or clip of whatever run chooses it."""
    for f in sorted((CONFIGS / "backbone").glob("*.yaml")):
        assert "@package" not in f.read_text(), f


@pytest.mark.parametrize("backbone", ["flow_dynamics", "efficientnet_lite0", "perception_encoder"])
def test_group_choices_do_what_they_say_with_any_backbone(backbone, tmp_path):
    cfg = compose_train(tmp_path, [f"backbone={backbone}", "pooling=max", "head=monotone", "clip.num_frames=8"])
    assert list(cfg.pooling.stats) == ["max"] and cfg.head.kind == "monotone" and cfg.clip.num_frames == 8
    assert list(compose_train(tmp_path, [f"backbone={backbone}"]).pooling.stats) == ["mean", "std", "max"]


def cfg_job(*overrides: str) -> dict:
    """The recipe `python train.py OVERRIDES --cfg job` prints, as a user runs it."""
    cmd = [sys.executable, "train.py", *overrides, "--cfg", "job"]
    return yaml.safe_load(subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120, check=True).stdout)


def test_command_line_group_beats_an_experiment_and_cfg_job_shows_it():
    cfg = cfg_job("experiment=evidence_head", "pooling=max")
    assert cfg["pooling"]["stats"] == ["max"] and cfg["head"]["kind"] == "monotone"
    assert cfg["checkpoint"] == {"monitor": "val/loss", "mode": "min"}
    plain = cfg_job("pooling=max")
    assert plain["pooling"]["stats"] == ["max"] and plain["head"]["kind"] == "mlp"


def test_evidence_head_is_the_previous_default_recipe(tmp_path):
    cfg = compose_train(tmp_path, ["experiment=evidence_head"])
    assert cfg.backbone.name == "dynamics" and list(cfg.pooling.stats) == ["mean"]
    assert cfg.head.kind == "monotone" and cfg.head.groups == "encoder" and cfg.checkpoint.monitor == "val/loss"


def test_toy_composes_with_an_ablation(tmp_path):
    cfg = compose_train(tmp_path, ["experiment=[toy,no_cal]"])
    assert cfg.loss.lambda_cal == 0.0 and cfg.clip.num_frames == 6 and cfg.data.source.planar.num_scenes == 24


@pytest.fixture(scope="module")
def ablation_runs(tiny_world, tmp_path_factory):
    """full, no_rank, no_mag and no_cal trained on the same toy world with the same seed and features."""
    from test_experiments import toy_world_overrides

    cache = tmp_path_factory.mktemp("ablation_cache")
    runs = {}
    for name in ("full", "no_rank", "no_mag", "no_cal"):
        out = tmp_path_factory.mktemp(name)
        train(
            compose_train(
                out,
                [
                    *toy_world_overrides(tiny_world, cache),
                    f"experiment={name}",
                    f"eval.report={'true' if name == 'full' else 'false'}",
                ],
            )
        )
        runs[name] = out
    return runs


def test_each_loss_ablation_changes_the_head_and_its_scores(ablation_runs):
    heads = {k: load_file(str(d / "scorer" / "model.safetensors")) for k, d in ablation_runs.items()}
    scores = {k: np.loadtxt(d / "scores.csv", delimiter=",", skiprows=1, usecols=4) for k, d in ablation_runs.items()}
    names = sorted(ablation_runs)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            moved = max(float((heads[a][k] - heads[b][k]).abs().max()) for k in heads[a])
            assert moved > 1e-3, f"{a} and {b} trained the same head"
            assert np.abs(scores[a] - scores[b]).max() > 1e-3, f"{a} and {b} score alike"


def test_run_states_its_recipe(ablation_runs):
    run = ablation_runs["full"]
    info = json.loads((run / "run_info.json").read_text())
    metrics = json.loads((run / "metrics.json").read_text())
    recipe = info["recipe"]
    assert recipe == metrics["recipe"]
    assert recipe["encoder"]["frozen"] and recipe["encoder"]["fitted_before_head"]  # the default fits its dynamics
    assert recipe["pooling"] == ["mean", "std", "max"] and recipe["head"]["kind"] == "mlp"
    assert 0.95e6 < recipe["head"]["parameters"] < 1.05e6
    assert "3-layer GELU MLP" in (run / "report.md").read_text()
    # the toy's 6-frame clips are spread over the world's longer videos, so its scorer reads videos whole
    assert recipe["reading"]["mode"] == "whole"
    assert json.loads((run / "scorer" / "config.json").read_text())["reading"] == recipe["reading"]


def _values(tree, prefix=""):
    """Every figure's point value in a metrics tree, by its path."""
    out = {}
    if isinstance(tree, dict):
        if "value" in tree:
            out[prefix] = tree["value"]
        for k, v in tree.items():
            if isinstance(v, dict):
                out.update(_values(v, f"{prefix}/{k}"))
    return out


def test_score_out_file_gives_eval_the_figures_of_the_run(ablation_runs, tiny_world, tmp_path, caplog):
    """`phyprobe score --out` rows, fed to `eval.py scores_csv=`, rank the raw scores and reproduce the in-run
    evaluation; the clipped column alone is flagged with its share of ties."""
    import pandas as pd
    from hydra import compose, initialize_config_dir

    from phyprobe.cli import main as cli
    from phyprobe.eval.run import run_eval

    run = ablation_runs["full"]
    out = tmp_path / "scores.csv"
    assert cli(["score", str(run / "scorer"), str(tiny_world), "--out", str(out), "--no-progress"]) == 0
    rows = pd.read_csv(out)
    assert {"score", "raw_score"} <= set(rows.columns) and (rows["raw_score"] != rows["score"]).any()

    def evaluate(csv, name):
        with initialize_config_dir(version_base="1.3", config_dir=str(CONFIGS)):
            cfg = compose(
                "eval",
                overrides=[
                    f"scores_csv={csv}",
                    "benchmark=world_test",
                    f"benchmark.manifest={tiny_world}",
                    f"paths.output_dir={tmp_path / name}",
                    "report=false",
                    "n_boot=20",
                    "margins_over=[]",
                ],
            )
        return run_eval(cfg)["results"]

    got = _values(evaluate(out, "raw"))
    expected = _values(json.loads((run / "metrics.json").read_text())["benchmarks"]["world_test"])
    assert got.keys() == expected.keys() and len(got) > 10
    for k in got:
        assert got[k] == pytest.approx(expected[k], abs=1e-5, nan_ok=True), k  # score levels: float32 batches
    clipped = tmp_path / "clipped.csv"  # scores clipped where half of them lie below 0, as a plausible clip's may
    rows.assign(score=np.clip(rows["raw_score"] - rows["raw_score"].median(), 0, 1))[["video", "score"]].to_csv(
        clipped, index=False
    )
    caplog.clear()
    evaluate(clipped, "clipped")
    assert any("tie with another" in r.getMessage() and "raw_score" in r.getMessage() for r in caplog.records)
