"""``phyprobe score --out``: outputs that cannot hurt.

``--out`` takes a new file or a results file this command wrote; anything else (a video, another tool's CSV or
JSONL, a text file, a FIFO, a device, a directory, a symlink to one) is refused in one line naming the file and
what it is, byte-identical afterwards. Our own torn file still resumes; two runs on one file never write a video
twice; a full disk / the file size limit ends in one line with the finished rows kept; a closed stdout pipe
(``| head -1``) ends quietly. Real mp4s (PyAV), a real exported scorer, the real CLI (in-process through
``phyprobe.cli.main``, and as processes where the process is what is checked).
"""

from __future__ import annotations

import csv
import errno
import json
import os
import resource
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_cli

from phyprobe.io.video import write_video
from phyprobe.scorer.results import ResultFile, ResultsBusy, ResultsWriteError
from phyprobe.testing.bad_inputs import out_cases
from phyprobe.testing.scorers import make_scorer
from phyprobe.testing.videos import moving_square

REPO = Path(__file__).resolve().parents[1]
ENV = {
    **os.environ,
    "PYTHONPATH": f"{REPO / 'src'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
    "PYTHONDONTWRITEBYTECODE": "1",
}
SCORE = [sys.executable, "-m", "phyprobe.cli", "score"]
FAST = ["--workers", "0", "--batch-size", "1", "--no-progress"]


@pytest.fixture(scope="module")
def scorer_dir(tmp_path_factory):
    return make_scorer(tmp_path_factory.mktemp("scorer") / "s")


@pytest.fixture(scope="module")
def videos(tmp_path_factory):
    d = tmp_path_factory.mktemp("videos")
    for i in range(4):
        write_video(d / f"v{i}.mp4", moving_square(6, 32, 32, 2 + 3 * i, 2), fps=12)
    return d


def snapshot(path: Path):
    """What must not change: the bytes of a regular file (and its mtime), the kind of anything else, where a symlink
    points (and that its target still does not exist, when it did not)."""
    if path.is_symlink():
        return "link", os.readlink(path), snapshot(path.resolve()) if path.exists() else None
    st = os.stat(path)
    if stat.S_ISREG(st.st_mode):
        return "file", path.read_bytes(), st.st_mtime_ns
    return "other", stat.S_IFMT(st.st_mode), os.path.islink(path)


def one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("phyprobe: error: "), err
    assert "Traceback" not in err
    return lines[0]


def rows_of(out: Path) -> list[dict]:
    if out.suffix == ".csv":
        return list(csv.DictReader(out.open()))
    return [json.loads(line) for line in out.read_text().splitlines()]


# ----------------------------------------------------------------------------------- refused, untouched


def scorer_loads(monkeypatch) -> list:
    """Records every scorer load through the real ``Scorer.from_pretrained`` (a spy: the load still happens), so a
    test can tell a refusal that came before any work from one that came after."""
    from phyprobe.scorer.core import Scorer

    calls, load = [], Scorer.from_pretrained.__func__

    def spy(cls, *args, **kwargs):
        calls.append(args)
        return load(cls, *args, **kwargs)

    monkeypatch.setattr(Scorer, "from_pretrained", classmethod(spy))
    return calls


def test_every_out_that_is_not_ours_is_refused_untouched(scorer_dir, videos, tmp_path, capsys, monkeypatch):
    """Each refusal is one line naming the file and what it is, comes before the scorer loads, and leaves the file
    as it was; /dev/zero and a FIFO are never read (no hang, no MemoryError)."""
    loads = scorer_loads(monkeypatch)
    cases = [c for c in out_cases(tmp_path / "outs", videos / "v0.mp4") if c.expect == "error"]
    assert len(cases) >= 12
    for c in cases:
        before = snapshot(c.path)
        fmt = ["--format", c.extra["format"]] if "format" in c.extra else []
        code, out, err = run_cli(["score", str(scorer_dir), str(videos), "--out", str(c.path), *fmt], capsys, 20)
        line = one_error_line(err)
        assert code == 2 and out == "", (c.name, code, out)
        assert line.startswith(f"phyprobe: error: {c.path}:"), (c.name, line)
        assert __import__("re").search(c.reason, line), (c.name, c.reason, line)
        assert snapshot(c.path) == before, c.name
        assert loads == [], c.name  # refused before the scorer loads, so before any scoring
    assert not list((tmp_path / "outs").glob(".*.tmp"))


def test_refused_targets_as_a_process_never_hang(scorer_dir, videos, tmp_path):
    """A FIFO nobody writes to and ``--out /dev/stdout`` on a pipe (the reported hang) are refused by a real
    process in one line, within a timeout."""
    fifo = tmp_path / "results.jsonl"
    os.mkfifo(fifo)
    for out in (fifo, Path("/dev/stdout")):
        p = subprocess.run(
            [*SCORE, str(scorer_dir), str(videos), "--out", str(out)],
            capture_output=True,
            text=True,
            env=ENV,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
        line = one_error_line(p.stderr)
        assert p.returncode == 2 and p.stdout == "" and "a pipe (FIFO), not a results file" in line, line
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


# ----------------------------------------------------------------------------------- ours: resumed


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_our_own_torn_results_file_resumes(scorer_dir, videos, tmp_path, capsys, fmt):
    out = tmp_path / f"scores.{fmt}"
    all_videos = sorted(str(p) for p in videos.iterdir())
    code, _, err = run_cli(["score", str(scorer_dir), *all_videos[:2], "--out", str(out), *FAST], capsys)
    assert code == 0, err
    before = out.read_bytes()
    torn = b'{"video": "' + all_videos[2].encode() if fmt == "jsonl" else all_videos[2].encode() + b",0.4"
    out.write_bytes(before + torn)  # as if a kill had landed inside a write
    code, _, err = run_cli(["score", str(scorer_dir), str(videos), "--out", str(out), *FAST], capsys)
    assert code == 0, err
    assert out.read_bytes().startswith(before)  # the finished rows untouched, the torn one cut off
    assert sorted(r["video"] for r in rows_of(out)) == all_videos  # each video exactly once
    assert "2 scored, 0 failed" in err and "2 already answered" in err


@pytest.mark.parametrize("name", ["empty.jsonl", "empty.csv"])
def test_an_empty_file_counts_as_ours(scorer_dir, videos, tmp_path, capsys, name):
    """A kill right after the file was created leaves it empty; writing to it destroys nothing."""
    out = tmp_path / name
    out.write_bytes(b"")
    code, _, err = run_cli(["score", str(scorer_dir), str(videos / "v0.mp4"), "--out", str(out), *FAST], capsys)
    assert code == 0, err
    assert [r["video"] for r in rows_of(out)] == [str(videos / "v0.mp4")]
    if name.endswith(".csv"):
        assert out.read_text().startswith("video,score,raw_score,error\n")


def test_a_failed_run_leaves_no_new_file_behind(scorer_dir, tmp_path, capsys):
    out = tmp_path / "new.jsonl"
    code, _, err = run_cli(["score", str(scorer_dir), str(tmp_path / "none" / "*.mp4"), "--out", str(out)], capsys)
    assert code == 2 and "the pattern matches no files" in one_error_line(err)
    assert not out.exists() and not list(tmp_path.iterdir())


def test_the_library_api_keeps_working_for_our_files(tmp_path):
    """The leaderboard's use: finished() / open() / append() on a path of ours, a torn tail repaired, but never
    while another process (here: another open file, as another run would hold it) writes the file."""
    res = ResultFile(tmp_path / "scores" / "gen.jsonl")
    assert res.finished() == {}
    assert res.open() is True and res.open() is False
    res.append([{"video": "a.mp4", "score": 0.5, "raw_score": 0.5}, {"video": "b.mp4", "error": "unreadable"}])
    assert set(res.finished()) == {"a.mp4", "b.mp4"}
    whole = res.path.read_bytes()
    res.path.write_bytes(whole + b'{"video": "c.m')
    with ResultFile(res.path).locked():  # another run writes it: the torn row is ignored, not cut
        assert set(res.finished()) == {"a.mp4", "b.mp4"} and res.path.read_bytes() != whole
    assert set(res.finished()) == {"a.mp4", "b.mp4"} and res.path.read_bytes() == whole  # now repaired


# ----------------------------------------------------------------------------------- one writer at a time


def test_a_second_run_on_a_locked_out_is_refused_at_once(scorer_dir, videos, tmp_path, capsys, monkeypatch):
    out = tmp_path / "scores.jsonl"
    loads = scorer_loads(monkeypatch)
    with ResultFile(out).locked():
        code, _, err = run_cli(["score", str(scorer_dir), str(videos), "--out", str(out)], capsys, 20)  # no waiting
        assert loads == []  # refused before any work
        line = one_error_line(err)
        assert code == 2 and f"another phyprobe score is writing {out} (pid {os.getpid()})" in line, line
        with pytest.raises(ResultsBusy):  # through a hard link too: the lock is on the file
            os.link(out, tmp_path / "alias.jsonl")
            with ResultFile(tmp_path / "alias.jsonl").locked():
                pass
    assert out.read_bytes() == b""


def test_a_killed_run_frees_its_lock_even_while_its_forked_workers_linger(tmp_path):
    """DataLoader workers are forked with the run's descriptors; they drop the lock's, so a rerun right after a kill
    -9 is not refused while an orphaned worker is still winding down."""
    out = tmp_path / "scores.jsonl"
    code = f"""
import os, signal, time
from phyprobe.scorer.results import ResultFile
with ResultFile({str(out)!r}).locked():
    pid = os.fork()
    if pid == 0:  # a worker: outlives the run
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 1)
        os.dup2(null, 2)
        time.sleep(60)
        os._exit(0)
    print(pid, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
"""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=ENV, timeout=60)
    worker = int(p.stdout.split()[0])
    try:
        assert p.returncode == -signal.SIGKILL and os.path.exists(f"/proc/{worker}")
        with ResultFile(out).locked():  # not refused
            pass
    finally:
        os.kill(worker, signal.SIGKILL)


def test_two_concurrent_runs_never_write_a_video_twice(scorer_dir, videos, tmp_path):
    out = tmp_path / "scores.jsonl"
    argv = [*SCORE, str(scorer_dir), str(videos), "--out", str(out), *FAST]
    procs = [subprocess.Popen(argv, env=ENV, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    results = [(p.communicate(timeout=240)[1], p.returncode)[::-1] for p in procs]
    codes = sorted(c for c, _ in results)
    if codes == [0, 0]:  # the second started after the first had finished (start-up on a loaded machine): it resumed
        assert any(f"{len(list(videos.iterdir()))} already answered" in e for _, e in results), results
    else:  # one scores, the other is refused at once
        assert codes == [0, 2], results
        refused = next(e for c, e in results if c == 2)
        winner = next(p for p, (c, _) in zip(procs, results) if c == 0)
        assert f"another phyprobe score is writing {out} (pid {winner.pid})" in one_error_line(refused)
    videos_written = [r["video"] for r in rows_of(out)]
    assert sorted(videos_written) == sorted(str(p) for p in videos.iterdir())  # each exactly once


# ----------------------------------------------------------------------------------- the disk refuses a write


def test_the_file_size_limit_ends_in_one_line_with_whole_rows_kept(scorer_dir, videos, tmp_path, capsys):
    """RLIMIT_FSIZE (EFBIG) as a stand-in for a full disk: a row that no longer fits is cut off again, the run ends
    in one line naming the file, and the same command, with room, resumes."""
    out = tmp_path / "scores.jsonl"
    row = len(json.dumps({"video": str(videos / "v0.mp4"), "score": 0.123456789, "raw_score": 0.123456789}))
    limit = 2 * row + row // 2  # two rows fit, the third does not

    def limited():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    p = subprocess.run(
        [*SCORE, str(scorer_dir), str(videos), "--out", str(out), *FAST],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=120,
        preexec_fn=limited,
    )
    line = one_error_line(p.stderr)
    assert p.returncode == 2 and f"{out}: cannot write results (File too large, EFBIG)" in line, p.stderr
    data = out.read_bytes()
    assert data.endswith(b"\n") and len(rows_of(out)) == 2  # whole rows only
    code, _, err = run_cli(["score", str(scorer_dir), str(videos), "--out", str(out), *FAST], capsys)
    assert code == 0 and out.read_bytes().startswith(data) and len(rows_of(out)) == 4, err


def test_a_full_disk_mid_write_keeps_whole_rows(tmp_path, monkeypatch):
    """ENOSPC after part of a batch got in: that part is cut off again, one line names the file."""
    res = ResultFile(tmp_path / "scores.jsonl")
    res.open()
    res.append([{"video": "a.mp4", "score": 0.5, "raw_score": 0.5}])
    before = res.path.read_bytes()
    real_write = os.write
    calls = []

    def full_disk(fd, data):
        calls.append(len(data))
        if len(calls) == 1:
            return real_write(fd, bytes(data[:10]))  # a short write: the disk filled up
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "write", full_disk)
    with pytest.raises(
        ResultsWriteError, match=r"scores.jsonl: cannot write results \(No space left on device, ENOSPC"
    ):
        res.append([{"video": "b.mp4", "score": 0.5, "raw_score": 0.5}, {"video": "c.mp4", "error": "x"}])
    monkeypatch.undo()
    assert res.path.read_bytes() == before and set(res.finished()) == {"a.mp4"}


# ----------------------------------------------------------------------------------- stdout to a closed pipe


def test_stdout_to_a_closed_pipe_ends_quietly(scorer_dir, videos):
    """``phyprobe score S DIR | head -1``: head exits after the header; the rows after it find the pipe closed."""
    cmd = " ".join([*map(str, SCORE), str(scorer_dir), str(videos), *FAST, "| head -1; echo ${PIPESTATUS[0]} >&2"])
    p = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, env=ENV, timeout=120)
    assert p.stdout == "score\traw_score\tvideo\n"
    *noise, code = p.stderr.strip().splitlines()
    assert int(code) == 141 and not noise, p.stderr  # 128 + SIGPIPE, as a shell reports for Unix tools
