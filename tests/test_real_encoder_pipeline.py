"""A real encoder's code path end to end: weights a user downloaded -> features -> head -> export -> score.

The weights are a random tiny model saved in the Hugging Face cache layout (what `huggingface-cli
download` leaves); nothing is mocked. And without the files, `train.py backbone=...` must stop
with the clear what-to-download error, not a trace through Hydra.
"""

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from encoder_fixtures import save_tiny_local_weights

from phyprobe import Scorer
from phyprobe.testing.configs import TOY, compose_train
from phyprobe.testing.scorers import assert_training_scores
from phyprobe.training.pipeline import train

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name,backbone", [("perception_encoder", "perception_encoder"), ("vjepa2", "vjepa2")])
def test_local_weights_train_export_score(name, backbone, toy_manifest, tmp_path, monkeypatch):
    local = save_tiny_local_weights(name, tmp_path / "downloads", layout="hf_cache")
    for k, v in local.env.items():
        monkeypatch.setenv(k, v)
    overrides = [f"backbone.{k}={v}" for k, v in local.kwargs.items()]
    toy = [o for o in TOY if not o.startswith("backbone.")]
    cfg = compose_train(
        tmp_path / "run",
        [
            *toy,
            f"backbone={backbone}",
            *overrides,
            "data=manifest",
            f"data.source.path={toy_manifest}",
            "eval.report=false",
            f"paths.cache_dir={tmp_path / 'cache'}",
        ],
    )
    train(cfg)
    expected = pd.read_csv(tmp_path / "run" / "scores.csv")
    scorer = Scorer.from_pretrained(tmp_path / "run" / "scorer")
    assert scorer.encoder.name == name and scorer.config["encoder"]["kwargs"]["weights"] == "hub"
    got = scorer.score_raw_many([toy_manifest / p for p in expected["path"][:4]])
    assert_training_scores(got, expected["raw_score"][:4])


def test_train_without_weights_gives_the_download_instructions(tmp_path):
    env = {
        **os.environ,
        "HF_HOME": str(tmp_path / "empty_hf"),
        "HF_HUB_CACHE": str(tmp_path / "empty_hf" / "hub"),
        "HF_HUB_OFFLINE": "1",
    }
    res = subprocess.run(
        [sys.executable, "train.py", "backbone=perception_encoder", f"hydra.run.dir={tmp_path / 'run'}"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 2
    assert "hf download" in res.stderr and "weights=<path>" in res.stderr
    assert "Traceback" not in res.stderr
