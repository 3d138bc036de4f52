"""``phyprobe extract`` as the field's launchers start it, each giving the cache one process gives:

- ``torchrun --nnodes=2 --nproc_per_node=2`` on localhost (two node agents, four CPU processes);
- an ``srun`` step's environment (``SLURM_PROCID``/``SLURM_STEP_NUM_TASKS``), one of whose tasks is killed with
  SIGKILL once it has published work: the rerun encodes only what is missing and rewrites nothing published;
- a job array's ``--share I/N`` tasks, one after another;
- Lightning's ``ddp`` strategy through the CLI (``--devices 2``), whose children re-run the command.

Real processes and real mp4s (PyAV); EfficientNet-Lite0 at 32 px on 4 frames keeps each process to seconds. The
same videos, each stored once; their features agree to float16 rounding (a process's thread count changes the
order of a convolution's float sums, by one unit in the last place of a few values).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import run_cli

from phyprobe.cli import main as cli_main
from phyprobe.features.cache import FeatureCache
from phyprobe.testing.features import in_every_share, shard_contents, toy_manifest_at
from phyprobe.testing.held import held_command

REPO = Path(__file__).resolve().parents[1]
OPTIONS = ["--image-size", "32", "--num-frames", "4", "--workers", "0", "--batch-size", "1", "--shard-size", "1"]
ENV = {
    "PYTHONPATH": str(REPO / "src"),
    "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    "OMP_NUM_THREADS": "1",
    "HOME": os.environ.get("HOME", "/tmp"),
}
EXTRACT = [sys.executable, "-m", "phyprobe.cli", "extract"]
HELD_AFTER_FIRST_SHARD = held_command("phyprobe.features.cache:ShardWriter.flush", 1)


@pytest.fixture(scope="module")
def manifest(tmp_path_factory) -> Path:
    # 10 videos, in a folder where each of the four processes below has some to encode
    return in_every_share(lambda f: toy_manifest_at(f, num_scenes=5), tmp_path_factory.mktemp("m"), 4)


@pytest.fixture(scope="module")
def reference(manifest, tmp_path_factory) -> dict:
    """The cache one process writes."""
    cache = tmp_path_factory.mktemp("one")
    assert cli_main(["extract", str(manifest), *OPTIONS, "--cache", str(cache)]) == 0
    return stored(cache)


def stored(cache_root: Path) -> dict:
    (directory,) = cache_root.iterdir()
    return shard_contents(FeatureCache.open(directory))  # fails on any video stored twice


def assert_same_features(a: dict, b: dict) -> None:
    assert sorted(a) == sorted(b)
    for k in a:
        np.testing.assert_allclose(a[k].astype(np.float32), b[k].astype(np.float32), rtol=2e-3, atol=2e-4, err_msg=k)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_torchrun_on_two_nodes_of_two_processes_fills_the_cache_one_process_fills(manifest, reference, tmp_path):
    cache, port = tmp_path / "cache", free_port()
    nodes = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "torch.distributed.run",
                "--nnodes=2",
                "--nproc_per_node=2",
                f"--node_rank={node}",
                "--master_addr=127.0.0.1",
                f"--master_port={port}",
                "-m",
                "phyprobe.cli",
                "extract",
                str(manifest),
                *OPTIONS,
                "--cache",
                str(cache),
            ],
            env=ENV,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )  # fmt: skip
        for node in (0, 1)
    ]
    outs = [p.communicate(timeout=300)[0] for p in nodes]
    assert [p.returncode for p in nodes] == [0, 0], outs
    shares = sorted(line.split("share ")[1].split()[0] for o in outs for line in o.splitlines() if "share " in line)
    assert shares == ["0/4", "1/4", "2/4", "3/4"], outs  # four processes, each its own share
    assert_same_features(stored(cache), reference)
    ranks = {p.name.split("-")[1] for p in next(cache.iterdir()).glob("shard-*.tar")}
    assert ranks <= {"r00", "r01", "r02", "r03"} and len(ranks) > 1, ranks  # each process wrote under its own rank


def _srun_task(manifest: Path, cache: Path, task: int, tasks: int, held: bool = False) -> subprocess.Popen:
    """``held``: the task stops for good once it has published its first shard (phyprobe.testing.held), so a kill
    lands part way through its share however fast the machine."""
    env = {**ENV, "SLURM_PROCID": str(task), "SLURM_LOCALID": str(task), "SLURM_STEP_NUM_TASKS": str(tasks)}
    env.update(SLURM_NTASKS=str(tasks), SLURM_JOB_ID="4242", SLURM_JOB_NAME="extract", SLURM_NODEID="0")
    command = [*HELD_AFTER_FIRST_SHARD, "extract"] if held else EXTRACT
    return subprocess.Popen(
        [*command, str(manifest), *OPTIONS, "--cache", str(cache)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def test_an_srun_task_killed_with_sigkill_then_rerun_encodes_nothing_twice(manifest, reference, tmp_path):
    cache = tmp_path / "cache"
    tasks = [_srun_task(manifest, cache, t, 2, held=t == 1) for t in (0, 1)]
    deadline = time.time() + 300
    while time.time() < deadline and not list(cache.glob("*/shard-r01-*.ids.json")):
        assert tasks[1].poll() is None, tasks[1].communicate()[0]
        time.sleep(0.005)
    os.killpg(tasks[1].pid, signal.SIGKILL)
    tasks[1].wait()
    out0 = tasks[0].communicate(timeout=300)[0]
    assert tasks[0].returncode == 0 and "share 0/2" in out0, out0
    directory = next(cache.iterdir())
    published = {p: p.read_bytes() for p in directory.glob("shard-*.tar")}
    before = set(shard_contents(FeatureCache.open(directory)))
    assert 0 < len(before) < len(reference)  # the killed task's share was left unfinished

    rerun = _srun_task(manifest, cache, 1, 2)
    out1 = rerun.communicate(timeout=300)[0]
    assert rerun.returncode == 0 and "share 1/2" in out1, out1
    assert all(p.read_bytes() == b for p, b in published.items())  # nothing published was rewritten
    after = stored(cache)  # and no video is stored twice
    assert_same_features(after, reference)


def test_a_job_arrays_shares_one_after_another_fill_the_cache_one_process_fills(manifest, reference, tmp_path, capsys):
    cache = tmp_path / "cache"
    for i in range(3):
        code, out, err = run_cli(["extract", manifest, *OPTIONS, "--cache", cache, "--share", f"{i}/3"], capsys, 300)
        assert code == 0 and f"share {i}/3" in out, err
    assert_same_features(stored(cache), reference)
    code, _, err = run_cli(["extract", manifest, *OPTIONS, "--cache", cache, "--share", "3/3"], capsys)
    assert code == 2 and "'3/3' is not I/N with 0 <= I < N" in err


def test_lightning_ddp_through_the_cli_fills_the_cache_one_process_fills(manifest, reference, tmp_path):
    cache = tmp_path / "cache"
    r = subprocess.run(
        [*EXTRACT, str(manifest), *OPTIONS, "--cache", str(cache), "--devices", "2", "--accelerator", "cpu"],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert_same_features(stored(cache), reference)
    assert {p.name.split("-")[1] for p in next(cache.iterdir()).glob("shard-*.tar")} == {"r00", "r01"}


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="checks the refusal on a machine without a GPU")
@pytest.mark.parametrize("asked", [["--devices", "2"], ["--accelerator", "gpu"]])
def test_gpus_asked_for_and_absent_are_refused_not_replaced_by_the_cpu(manifest, tmp_path, capsys, asked):
    code, _, err = run_cli(["extract", manifest, *OPTIONS, "--cache", tmp_path / "c", *asked], capsys)
    assert code == 2 and "sees no GPU" in err and "--accelerator cpu" in err, err
    assert not (tmp_path / "c").exists()  # refused before any work


def test_the_slurm_array_script_extracts_its_tasks_share(manifest, reference, tmp_path):
    """scripts/slurm/extract_array.sbatch as SLURM runs task 1 of 2 (``srun`` and ``scontrol`` stood in for by
    shims that run the command and record the requeue request): the task's share and nothing else."""
    from phyprobe.features.extract import in_share

    shims = tmp_path / "bin"
    shims.mkdir()
    (shims / "srun").write_text('#!/bin/sh\nexec "$@"\n')
    (shims / "scontrol").write_text('#!/bin/sh\necho "$@" >> requeued.txt\n')
    for shim in shims.iterdir():
        shim.chmod(0o755)
    env = {
        **ENV,
        "PATH": f"{shims}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{ENV['PATH']}",
        "DATASET": str(manifest),
        "OVERRIDES": "backbone=efficientnet_lite0 backbone.image_size=32 clip.num_frames=4",
        "SLURM_ARRAY_JOB_ID": "7",
        "SLURM_ARRAY_TASK_ID": "1",
        "SLURM_ARRAY_TASK_COUNT": "2",
    }
    script = REPO / "scripts" / "slurm" / "extract_array.sbatch"
    r = subprocess.run(["bash", str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "share 1/2" in r.stdout, r.stderr[-3000:]
    got = stored(tmp_path / ".cache" / "features")
    assert sorted(got) == sorted(k for k in reference if in_share(k, 1, 2)) and got
