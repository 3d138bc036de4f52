"""train.py trains the head in one process: started by a launcher as one of several, or asked for several devices
or a DDP strategy, it refuses in one line before writing anything (every rank would otherwise write the scores,
the scorer and the report into one folder), and points to the encoder pass, which is what runs distributed."""

from __future__ import annotations

import pytest

from phyprobe.errors import UserError
from phyprobe.testing.configs import TOY, compose_train
from phyprobe.training.pipeline import train


@pytest.mark.parametrize(
    ("env", "expect"),
    [
        ({"RANK": "1", "WORLD_SIZE": "4"}, "process 1 of 4 a launcher started"),
        ({"SLURM_PROCID": "0", "SLURM_STEP_NUM_TASKS": "8"}, "process 0 of 8 a launcher started"),
    ],
)
def test_train_refuses_to_be_one_of_several_processes(tmp_path, monkeypatch, env, expect):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    with pytest.raises(UserError, match=expect) as e:
        train(compose_train(tmp_path / "run", TOY))
    assert "phyprobe extract" in str(e.value) and not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("override", "expect"), [("trainer.devices=2", "one device"), ("+trainer.strategy=ddp", "one process")]
)
def test_train_refuses_several_devices_or_ddp(tmp_path, override, expect):
    with pytest.raises(UserError, match=expect):
        train(compose_train(tmp_path / "run", [*TOY, override]))
    assert not (tmp_path / "run").exists()


def test_a_batch_scripts_environment_alone_is_one_process(tmp_path, monkeypatch):
    """``sbatch --ntasks=8`` sets SLURM_NTASKS for the batch script, which is one process: not refused."""
    from phyprobe.features.extract import launcher_share

    monkeypatch.setenv("SLURM_NTASKS", "8")
    monkeypatch.setenv("SLURM_PROCID", "0")
    assert launcher_share() is None


def test_a_run_that_would_encode_too_much_here_prints_the_distributed_commands(tmp_path, capsys):
    """Past ``max_videos_to_extract`` missing videos a training run stops before encoding any, naming the
    ``phyprobe extract`` command for its data; once that command has run, the same training goes through."""
    from conftest import run_cli

    from phyprobe.testing.videos import write_toy_manifest

    write_toy_manifest(tmp_path / "m", num_scenes=4, frames=6)  # 8 videos
    backbone = ["backbone=efficientnet_lite0", "backbone.weights=null", "backbone.image_size=32", "clip.num_frames=4"]
    data = ["data=manifest", f"data.source.path={tmp_path / 'm'}", f"paths.cache_dir={tmp_path / 'cache'}"]
    run = [*TOY, *data, *backbone, "max_videos_to_extract=5", "eval.baselines=[]", "eval.report=false"]
    with pytest.raises(UserError, match=r"8 videos are not in the feature cache .* phyprobe extract \S*/m "):
        train(compose_train(tmp_path / "run", run))
    assert not list((tmp_path / "cache").glob("*/shard-*.tar"))  # nothing encoded
    code, _, err = run_cli(
        ["extract", tmp_path / "m", *backbone, "--cache", tmp_path / "cache", "--workers", "0"], capsys, 300
    )
    assert code == 0, err
    assert train(compose_train(tmp_path / "run", run))["run"]["num_train_pairs"] > 0
