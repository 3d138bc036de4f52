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
