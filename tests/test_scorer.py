"""Train on real mp4s with a real Lightning Trainer, export, and score through the public API and CLI."""

import json
import subprocess
import sys

import av
import cv2
import numpy as np
import pandas as pd
import pytest
import torch

from phyprobe import Scorer
from phyprobe.io.video import ClipSpec, decode_clip, write_video
from phyprobe.testing.configs import TOY, compose_train
from phyprobe.testing.scorers import assert_training_scores
from phyprobe.training.pipeline import train

# the default (a dynamics model on flow statistics, fitted in the run) and the paper's RGB frame encoder
BACKBONES = {"flow_dynamics": "dynamics", "efficientnet_lite0": "efficientnet_lite0"}


@pytest.fixture(scope="module", params=sorted(BACKBONES))
def toy_run(request, toy_manifest, tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    cfg = compose_train(
        out,
        [
            *TOY,
            f"backbone={request.param}",
            "data=manifest",
            f"data.source.path={toy_manifest}",
            "eval.report=false",
            f"paths.cache_dir={out / 'cache'}",
        ],
    )
    train(cfg)
    return out


def test_run_saves_reproducibility_record(toy_run):
    info = json.loads((toy_run / "run_info.json").read_text())
    assert info["seed"] == 0 and "git_commit" in info["code"] and info["config"]["clip"]["num_frames"] == 4
    # the versions of the libraries a figure depends on, as installed (`make install` takes them from constraints.txt)
    assert info["packages"]["numpy"] == np.__version__ and info["packages"]["av"] == av.__version__
    assert info["packages"]["opencv-python-headless"].startswith(cv2.__version__)
    # and the CPU's vector instruction set, which decides how float kernels round (features differ across it)
    assert info["cpu"]["capability"] == torch.backends.cpu.get_cpu_capability() and info["cpu"]["threads"] >= 1
    cfg = json.loads((toy_run / "scorer" / "config.json").read_text())
    assert cfg["encoder"]["name"] == info["config"]["backbone"]["name"] in BACKBONES.values()
    assert cfg["feature_dtype"] == "float16"
    assert (toy_run / "scorer" / "model.safetensors").is_file()


def test_exported_scorer_reproduces_training_scores(toy_run, toy_manifest):
    expected = pd.read_csv(toy_run / "scores.csv")
    scorer = Scorer.from_pretrained(toy_run / "scorer")
    got = scorer.score_raw_many([toy_manifest / p for p in expected["path"]])
    assert_training_scores(got, expected["raw_score"])
    s = scorer.score(toy_manifest / expected["path"][0])
    assert 0.0 <= s <= 1.0


def _gliding(n: int, seed: int = 0) -> np.ndarray:
    """A textured square gliding over a gradient, a new place every frame."""
    rng = np.random.default_rng(seed)
    frames = np.empty((n, 64, 96, 3), np.uint8)
    frames[:] = np.linspace(30, 220, 96, dtype=np.uint8)[None, None, :, None]
    tex = rng.integers(0, 255, (12, 12, 3), dtype=np.uint8)
    for t in range(n):
        y, x = 8 + (3 * t) % 40, 4 + (5 * t) % 76
        frames[t, y : y + 12, x : x + 12] = tex
    return frames


def test_windows_read_a_long_video_as_the_training_clips_were_cut(toy_run, tmp_path):
    scorer = Scorer.from_pretrained(toy_run / "scorer")
    length = scorer.encoder.clip_spec(scorer.clip).num_frames
    short = write_video(tmp_path / "short.mp4", _gliding(length))
    assert scorer.score_windows(short).tolist() == [scorer.score_raw_many([short])[0]]  # one window: the usual read
    n = 2 * length + 3
    long = write_video(tmp_path / "long.mp4", _gliding(n, seed=1))
    stride = max(1, length // 2)
    starts = sorted({*range(0, n - length + 1, stride), n - length})  # the last window ends at the last frame
    got = scorer.score_windows(long)
    decoded = decode_clip(long, ClipSpec(n), fit=scorer.encoder.preprocess.size).frames
    expected = scorer.score_frames(np.stack([decoded[s : s + length] for s in starts]), raw=True)
    assert len(got) == len(starts) and np.allclose(got, expected, atol=1e-6)
    assert len(scorer.score_windows(long, stride=1)) == n - length + 1
    with pytest.raises(ValueError, match="stride must be a whole number >= 1"):
        scorer.score_windows(long, stride=0)


def test_cli_scores_any_shape_and_reports_bad_files_without_aborting(toy_run, tmp_path):
    tall = write_video(tmp_path / "tall.mp4", np.full((1, 120, 40, 3), 90, np.uint8))  # 1 frame, 1:3
    wide = write_video(tmp_path / "wide.mp4", np.full((30, 36, 200, 3), 30, np.uint8))
    junk = tmp_path / "junk.mp4"
    junk.write_bytes(b"not a video at all")
    cmd = [
        sys.executable,
        "-m",
        "phyprobe.cli",
        "score",
        str(toy_run / "scorer"),
        str(tall),
        str(junk),
        str(wide),
        "--json",
    ]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert res.returncode == 1  # one bad file -> non-zero exit ...
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    assert [r["video"] for r in rows] == [str(tall), str(junk), str(wide)]  # ... but every video answered
    assert 0.0 <= rows[0]["score"] <= 1.0 and 0.0 <= rows[2]["score"] <= 1.0
    assert "error" in rows[1] and "junk.mp4" in res.stderr


def test_cli_reading_windows_reports_the_mean_or_max_and_resumes(toy_run, tmp_path):
    scorer = Scorer.from_pretrained(toy_run / "scorer")
    if scorer.config["encoder"]["name"] != "dynamics":
        pytest.skip("the windows do not depend on the encoder (the API test reads both); the CLI is run once")
    length = scorer.encoder.clip_spec(scorer.clip).num_frames
    long = write_video(tmp_path / "long.mp4", _gliding(3 * length, seed=2))
    junk = tmp_path / "junk.mp4"
    junk.write_bytes(b"not a video at all")
    windows = scorer.score_windows(long)
    base = [sys.executable, "-m", "phyprobe.cli", "score", str(toy_run / "scorer"), str(long), str(junk)]
    out = tmp_path / "scores.jsonl"
    # the toy's 4-frame clips were spread over 12-frame videos, so the scorer reads whole: windows are asked for
    first = subprocess.run(
        [*base, "--reading", "windows", "--out", str(out)], capture_output=True, text=True, timeout=300
    )
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert first.returncode == 1 and "error" in rows[1] and "junk.mp4" in first.stderr
    assert rows[0]["raw_score"] == pytest.approx(windows.mean(), abs=1e-6)
    assert rows[0]["score"] == pytest.approx(min(1.0, max(0.0, windows.mean())), abs=1e-6)
    again = subprocess.run(
        [*base, "--reading", "windows", "--out", str(out)], capture_output=True, text=True, timeout=300
    )
    assert "0 scored, 0 failed" in again.stderr and "2 already answered" in again.stderr
    worst = subprocess.run(
        [*base, "--json", "--reading", "windows", "--combine", "max"], capture_output=True, text=True, timeout=300
    )
    assert json.loads(worst.stdout.splitlines()[0])["raw_score"] == pytest.approx(windows.max(), abs=1e-6)


def test_fingerprint_mismatch_is_refused(toy_run, tmp_path):
    import shutil

    bad = tmp_path / "scorer"
    shutil.copytree(toy_run / "scorer", bad)
    cfg = json.loads((bad / "config.json").read_text())
    if cfg["encoder"]["name"] == "dynamics":  # its features without the rounding the head was trained on
        cfg["encoder"]["kwargs"]["base_dtype"] = "float32"
    else:
        cfg["encoder"]["kwargs"]["image_size"] = 96  # different preprocessing than trained with
    (bad / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match="fingerprint"):
        Scorer.from_pretrained(bad)
