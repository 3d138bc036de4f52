"""Shared fixtures: small real mp4s written by PyAV in the real manifest format, tiny worlds, torch on one thread.

The helpers behind them are in phyprobe.testing, which benchmarks and child processes import as well."""

from __future__ import annotations

import os
import tempfile

import pytest

from phyprobe.testing.videos import write_toy_manifest

# The scores a leaderboard keeps across runs (leaderboard.evaluators.score_store) go to a folder of the session's
# (inherited by child processes), and each test gets one of its own: no test reads what another scored.
os.environ["PHYPROBE_CACHE"] = tempfile.mkdtemp(prefix="phyprobe-cache-")


@pytest.fixture(autouse=True)
def own_score_store(tmp_path, monkeypatch):
    monkeypatch.setenv("PHYPROBE_CACHE", str(tmp_path / "phyprobe-cache"))


@pytest.fixture(autouse=True)
def no_leftover_rendezvous():
    """Lightning's ``ddp_spawn`` writes MASTER_ADDR/MASTER_PORT into this process's environment and leaves them there:
    a later test in the same worker would reuse a port chosen long before, which another process may hold by then."""
    before = {k: os.environ.get(k) for k in ("MASTER_ADDR", "MASTER_PORT")}
    yield
    for key, value in before.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture
def one_thread():
    """Torch on one thread: on a small shared CPU, OpenMP oversubscription costs 10-50x in wall time."""
    import torch

    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture(scope="session")
def toy_manifest(tmp_path_factory):
    root = tmp_path_factory.mktemp("toy_manifest")
    write_toy_manifest(root)
    return root


@pytest.fixture(scope="session")
def tiny_world(tmp_path_factory):
    """A real (tiny) physics-world build: 16 scenes + 4 real-footage segments, shared by the session."""
    from phyprobe.world.build import build_world

    out = tmp_path_factory.mktemp("world")
    return build_world(out / "world", num_scenes=16, seed=0, workers=1, progress=False, num_real_segments=4)


TINY_WORLDS = {
    "planar": {"engine": "planar", "num_scenes": 16, "num_real_segments": 4},
    "world3d": {"engine": "world3d", "num_scenes": 10, "include_real": False, "num_frames": 16},
}


@pytest.fixture(scope="session")
def tiny_worlds(tmp_path_factory):
    """Both worlds in one manifest (``data=worlds`` at toy size): 16 2D scenes + 4 footage segments, 10 3D scenes."""
    from phyprobe.data.sources import worlds

    out = tmp_path_factory.mktemp("worlds") / "worlds"
    worlds(out, seed=0, workers=1, **TINY_WORLDS)
    return out


def run_cli(argv: list, capsys, seconds: int = 60) -> tuple[int, str, str]:
    """``phyprobe`` in this process, as a user runs it: (exit code, stdout, stderr); a hang fails the test."""
    from phyprobe.cli import main
    from phyprobe.testing.bad_inputs import deadline

    capsys.readouterr()
    with deadline(seconds):
        try:
            code = main([str(a) for a in argv])
        except SystemExit as e:
            code = e.code
    out, err = capsys.readouterr()
    return code, out, err
