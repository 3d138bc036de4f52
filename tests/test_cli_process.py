"""The phyprobe command as a process: it answers --help, --version and a mistake before torch loads, and SIGTERM
stops a scoring run within seconds with every finished row kept, so the same command completes the file."""

import json
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from phyprobe import __version__
from phyprobe.cli import SUBCOMMANDS
from phyprobe.io.video import write_video
from phyprobe.testing.held import held_command
from phyprobe.testing.scorers import make_scorer

CLI = [sys.executable, "-m", "phyprobe.cli"]
NO_TORCH = (
    "import sys; sys.argv = ['phyprobe', *sys.argv[1:]]; "
    "from phyprobe.cli import main\ntry:\n    main()\nexcept SystemExit:\n    pass\nprint('TORCH' if 'torch' in sys.modules else 'LIGHT')"
)


@pytest.mark.parametrize(
    "args",
    [["--help"], ["--version"], ["score", "--help"], ["leaderboard", "--help"], ["score", "no/such/dir/x", "a.mp4"]],
)
def test_overview_version_and_a_mistake_do_not_load_torch(args):
    res = subprocess.run([sys.executable, "-c", NO_TORCH, *args], capture_output=True, text=True, timeout=60)
    assert res.stdout.strip().endswith("LIGHT"), res.stdout + res.stderr


def test_version_and_overview():
    assert (
        subprocess.run([*CLI, "--version"], capture_output=True, text=True).stdout.strip() == f"phyprobe {__version__}"
    )
    overview = subprocess.run([*CLI, "--help"], capture_output=True, text=True).stdout
    assert all(name in overview for name in SUBCOMMANDS)
    err = subprocess.run([*CLI, "score", "no/such/dir/x", "a.mp4"], capture_output=True, text=True)
    assert err.returncode == 2 and err.stderr.strip() == "phyprobe: error: no/such/dir/x: no such scorer directory"


N_VIDEOS = 12
# The first run is held once its third row is appended (phyprobe.testing.held): the signal lands part way however
# fast the run (unheld, a run of 48 videos once finished before the poll below saw its third row).
HELD_AFTER_THIRD_ROW = held_command("phyprobe.scorer.results:ResultFile.append", 3)


def test_sigterm_stops_scoring_and_a_rerun_completes_the_file(tmp_path):
    scorer = make_scorer(tmp_path / "scorer")
    videos = tmp_path / "videos"
    rng = np.random.default_rng(0)
    for i in range(N_VIDEOS):
        write_video(videos / f"v{i:03d}.mp4", rng.integers(0, 255, (4, 32, 32, 3), dtype=np.uint8))
    out = tmp_path / "scores.jsonl"
    cmd = [*CLI, "score", str(scorer), str(videos), "--out", str(out), "--batch-size", "1", "--no-progress"]
    proc = subprocess.Popen(
        [*HELD_AFTER_THIRD_ROW, *cmd[len(CLI) :]], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 240
    while (not out.exists() or len(out.read_text().splitlines()) < 3) and time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    sent = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    # held, the run would wait ten minutes; stopped, it ends as soon as the interpreter has shut down (its final
    # garbage collection of torch and Lightning alone took 2-4 s on a loaded 2-core machine)
    assert time.monotonic() - sent < 15, "SIGTERM took more than 15 s to stop the run"
    assert proc.returncode != 0 and "stopped" in err
    first = [json.loads(line)["video"] for line in out.read_text().splitlines()]
    assert 3 <= len(first) < N_VIDEOS, "the run was stopped part way"
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    names = [r["video"] for r in rows]
    assert len(names) == len(set(names)) == N_VIDEOS and names[: len(first)] == first  # nothing lost, nothing twice
    assert all("score" in r for r in rows)


def test_main_puts_back_the_callers_signal_handlers(tmp_path):
    """`phyprobe.cli.main` called from a program (or a test process) leaves its signal handlers as they were: forked
    workers inherit them, and a handler that only raises KeyboardInterrupt can leave a pool's terminate waiting."""
    import signal

    from phyprobe.cli import main

    def mine(signum, frame):
        pass

    before = {s: signal.signal(s, mine) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        with pytest.raises((SystemExit, Exception)):  # a user error: one line and exit 2 (or the error, under debug)
            main(["score", str(tmp_path / "no_such_scorer"), str(tmp_path / "a.mp4")])
        assert signal.getsignal(signal.SIGTERM) is mine and signal.getsignal(signal.SIGINT) is mine
    finally:
        for s, h in before.items():
            signal.signal(s, h)


def test_a_reader_that_leaves_early_ends_the_command_quietly(tmp_path):
    """`phyprobe ... | head`: when stdout's reader closes the pipe, the command stops with the shell's SIGPIPE code
    (141) and no traceback, as a shell tool does."""
    from phyprobe.suites import SuiteRecord, write_suite

    suite = write_suite(
        [SuiteRecord(f"p{i}", f"A ball rolls across table {i}.") for i in range(2000)], tmp_path / "s.jsonl"
    )
    proc = subprocess.Popen([*CLI, "suite", "stats", str(suite)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader leaves before the first line
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141 and "Traceback" not in err, err


def test_the_command_freezes_the_collector_before_exit_and_main_does_not(tmp_path, monkeypatch):
    """``phyprobe`` (phyprobe.cli:run) freezes the garbage collector once the command is done, so the interpreter's
    shutdown does not walk every object torch and Lightning made; ``main()``, which programs call, leaves it as it was.
    """
    import gc
    from importlib.metadata import entry_points

    from phyprobe.cli import main, run

    assert entry_points(group="console_scripts")["phyprobe"].value == "phyprobe.cli:run"
    clip = write_video(tmp_path / "clip.mp4", np.random.default_rng(0).integers(0, 255, (4, 32, 32, 3), np.uint8))
    args = ["score", str(make_scorer(tmp_path / "scorer")), str(clip), "--json"]
    frozen = gc.get_freeze_count()
    assert main(args) == 0 and gc.get_freeze_count() == frozen
    monkeypatch.setattr(sys, "argv", ["phyprobe", *args])
    try:
        assert run() == 0 and gc.get_freeze_count() > frozen
    finally:
        gc.unfreeze()
