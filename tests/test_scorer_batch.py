"""Batch scoring into a results file: every kind of input, JSONL and CSV, and a kill -9 halfway that a
rerun finishes without losing or re-scoring a video."""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from phyprobe.cli import main
from phyprobe.data.manifest import Manifest
from phyprobe.io.video import write_video
from phyprobe.scorer.batch import ResultFile, resolve_inputs
from phyprobe.testing.held import held_command
from phyprobe.testing.scorers import make_scorer


@pytest.fixture(scope="module")
def scorer_dir(tmp_path_factory):
    return make_scorer(tmp_path_factory.mktemp("scorer") / "s")


def test_inputs_from_directories_globs_lists_and_manifests(toy_manifest, tmp_path):
    d = tmp_path / "d"
    write_video(d / "a.mp4", np.zeros((4, 16, 16, 3), np.uint8))
    write_video(d / "sub" / "b.mp4", np.zeros((4, 16, 16, 3), np.uint8))
    (d / "notes.txt").write_text("not a video")
    lst = tmp_path / "list.txt"
    lst.write_text(f"# generated samples\nd/a.mp4\n\n{d / 'sub' / 'b.mp4'}\nd/missing.mp4\n")
    manifest = [str(p) for p in Manifest.load(toy_manifest).paths()]
    assert resolve_inputs([d]) == [str(d / "a.mp4"), str(d / "sub" / "b.mp4")]
    assert resolve_inputs([str(d / "**" / "*.mp4")]) == [str(d / "a.mp4"), str(d / "sub" / "b.mp4")]
    assert resolve_inputs([lst]) == [str(d / "a.mp4"), str(d / "sub" / "b.mp4"), str(d / "missing.mp4")]
    assert resolve_inputs([toy_manifest]) == manifest == resolve_inputs([toy_manifest / "videos.jsonl"])
    assert resolve_inputs([d, lst]) == [
        str(d / "a.mp4"),
        str(d / "sub" / "b.mp4"),
        str(d / "missing.mp4"),
    ]  # no repeats


def test_csv_results_answer_every_video_once_and_a_rerun_adds_only_new_ones(scorer_dir, toy_manifest, tmp_path, capsys):
    out = tmp_path / "scores.csv"
    first = [str(p) for p in Manifest.load(toy_manifest).paths()][:5]
    assert main(["score", str(scorer_dir), *first, "--out", str(out), "--batch-size", "2"]) == 0
    rows = list(csv.DictReader(out.open()))
    assert [r["video"] for r in rows] == first and all(0 <= float(r["score"]) <= 1 for r in rows)
    junk = tmp_path / "junk.mp4"
    junk.write_bytes(b"junk")
    capsys.readouterr()
    assert main(["score", str(scorer_dir), str(toy_manifest), str(junk), "--out", str(out)]) == 1  # junk fails
    err = capsys.readouterr().err
    rows = list(csv.DictReader(out.open()))
    assert sorted(r["video"] for r in rows) == sorted(
        [str(p) for p in Manifest.load(toy_manifest).paths()] + [str(junk)]
    )
    assert "19 scored, 1 failed" in err and "5 already answered" in err and f"{junk}:" in err
    assert [r for r in rows if r["video"] == str(junk)][0]["error"]


def _copies_of_one_clip(root: Path, n: int) -> Path:
    """n copies of one clip: every row scores the same."""
    src = write_video(root / "src.mp4", np.random.default_rng(0).integers(0, 255, (8, 32, 32, 3), dtype=np.uint8))
    d = root / "videos"
    d.mkdir()
    for i in range(n):
        shutil.copy(src, d / f"{i:03d}.mp4")
    return d


def test_kill_halfway_then_rerun_loses_nothing_and_scores_nothing_twice(scorer_dir, tmp_path, capsys):
    n = 16
    videos = _copies_of_one_clip(tmp_path, n)
    out = tmp_path / "scores.jsonl"
    # held once its third batch of two rows is appended (phyprobe.testing.held): the kill lands halfway, however
    # fast the run
    cmd = [
        *held_command("phyprobe.scorer.results:ResultFile.append", 3),
        "score",
        str(scorer_dir),
        str(videos),
        "--out",
        str(out),
        "--batch-size",
        "2",
        "--no-progress",
    ]
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        if out.exists() and out.read_bytes().count(b"\n") >= 6:
            os.kill(proc.pid, signal.SIGKILL)
            break
        time.sleep(0.005)
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read().decode()[-2000:]
    before = out.read_bytes()
    k = before.count(b"\n")
    assert 6 <= k < n
    with out.open("ab") as f:  # as if the kill had landed inside a write
        f.write(b'{"video": "' + str(videos).encode() + b"/04")
    capsys.readouterr()
    assert main(["score", str(scorer_dir), str(videos), "--out", str(out), "--batch-size", "2"]) == 0
    err = capsys.readouterr().err
    after = out.read_bytes()
    assert after.startswith(before)  # finished rows untouched, the torn one cut off
    rows = [json.loads(line) for line in after.decode().splitlines()]
    assert sorted(r["video"] for r in rows) == sorted(str(p) for p in videos.iterdir())  # each video exactly once
    assert all(0.0 <= r["score"] <= 1.0 for r in rows)
    assert f"{n - k} scored, 0 failed" in err and f"{k} already answered" in err
    assert len({r["score"] for r in rows}) == 1  # identical content: the resumed half scores as the first half


def test_a_results_file_of_something_else_is_not_overwritten(tmp_path):
    f = tmp_path / "scores.jsonl"
    f.write_text("hello\n")
    with pytest.raises(ValueError, match=r"scores.jsonl:1: not a JSON results row"):
        ResultFile(f).finished()
    assert f.read_text() == "hello\n"


@pytest.mark.slow
def test_two_processes_write_one_results_file_like_one_process(scorer_dir, toy_manifest, tmp_path):
    """DDP through the extraction predict path: two CPU processes over gloo stand in for N GPUs or nodes."""
    from phyprobe import Scorer
    from phyprobe.scorer.batch import score_videos

    scorer = Scorer.from_pretrained(scorer_dir)
    videos = [str(p) for p in Manifest.load(toy_manifest).paths()][:9] + [str(tmp_path / "missing.mp4")]
    files = {}
    for name, kw in (("one", {}), ("two", {"devices": 2, "strategy": "ddp_spawn"})):
        res = ResultFile(tmp_path / f"{name}.jsonl")
        res.open()
        score_videos(
            scorer, videos, res.append, batch_size=2, num_workers=0, trainer_kwargs={"accelerator": "cpu", **kw}
        )
        lines = (tmp_path / f"{name}.jsonl").read_text().splitlines()
        assert len(lines) == len(videos)  # no video twice, none lost
        files[name] = res.finished()
    assert files["one"].keys() == files["two"].keys() == set(videos)
    for v in videos[:-1]:
        assert files["two"][v]["raw_score"] == pytest.approx(files["one"][v]["raw_score"], abs=1e-6)
    assert "file does not exist" in files["two"][videos[-1]]["error"]
