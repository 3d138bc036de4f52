"""The documented own-data sequence (docs/datasets/own_folders.md), from folders of videos to a scored file: a real
folder and a rated folder written here by PyAV, prepared, swept at toy size over full/no_cal and two seeds with
``data=own``, summarised with figures, and a sweep's exported scorer scoring a file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import run_cli

from phyprobe.io.video import write_video
from phyprobe.testing.videos import moving_square

REPO = Path(__file__).resolve().parents[1]


def write_folders(tmp_path: Path) -> tuple[Path, Path]:
    """Real footage from two cameras (squares sliding smoothly), and generated videos whose square jumps by 0-32 px,
    rated 5 (plausible) to 2 in a video,score,prompt CSV, four videos per prompt."""
    rng = np.random.default_rng(0)
    real, gen = tmp_path / "my_footage", tmp_path / "my_generated"
    for cam in ("phone", "dashcam"):
        for i in range(6):
            frames = moving_square(12, 48, 64, rng.uniform(2, 10), rng.uniform(1.5, 3))
            write_video(real / cam / f"{cam}{i}.mp4", frames, fps=12)
    rows = ["video,score,prompt"]
    for i in range(24):  # six prompts of four videos: with val_fraction=0.3, prompt4's land in val
        jump = (0, 8, 16, 32)[i % 4]
        frames = moving_square(12, 48, 64, rng.uniform(2, 10), rng.uniform(1.5, 3), 6 if jump else None, jump)
        write_video(gen / f"g{i}.mp4", frames, fps=12)
        rows.append(f"g{i}.mp4,{5 - i % 4},prompt{i // 4}")
    (gen / "ratings.csv").write_text("\n".join(rows) + "\n")
    return real, gen


@pytest.mark.slow
def test_own_folders_to_a_swept_summarised_and_scoring_scorer(tmp_path, capsys):
    real, gen = write_folders(tmp_path)
    prepared = tmp_path / "prepared"
    for name, root in (("real_folder", real), ("rated_folder", gen)):
        argv = ["data", "prepare", name, "--root", root, "--out", prepared / name, "--set", "val_fraction=0.3"]
        code, _, err = run_cli(argv, capsys)
        assert code == 0, err
    sweep = tmp_path / "sweep"
    cmd = [
        sys.executable, "train.py", "-m", "experiment=[toy,full],[toy,no_cal]", "seed=0,1", "data=own",
        f"data.manifests=[{prepared / 'real_folder'},{prepared / 'rated_folder'}]",
        f"paths.data_dir={tmp_path / 'data'}", f"paths.cache_dir={tmp_path / 'cache'}",
        f"paths.baseline_cache_dir={tmp_path / 'baselines'}", "trainer.enable_progress_bar=false", "eval.n_boot=20",
        "extract.num_workers=0", f"hydra.sweep.dir={sweep}",
    ]  # fmt: skip
    r = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    jobs = sorted(p.parent for p in sweep.glob("*/metrics.json"))
    assert len(jobs) == 4, [p.name for p in sweep.iterdir()]
    for job in jobs:  # no configured benchmark covers these videos: the run's own held-out pairs are its benchmark
        metrics = json.loads((job / "metrics.json").read_text())
        assert set(metrics["benchmarks"]) == {"own_val"}, metrics["benchmarks"].keys()
        own = metrics["benchmarks"]["own_val"]
        assert own and all(np.isfinite(v["value"]) for v in _figures(own)), own
        assert "own_val" in (job / "report.md").read_text()
    code, out, err = run_cli(["summarize", sweep], capsys)
    assert code == 0, err
    table = pd.read_csv(sweep / "summary.csv")
    main = table[table["metric"] == "own_val.pairwise.pairwise_accuracy"]
    assert main["run"].nunique() == 4 and main["value"].between(0, 1).all(), main
    assert (table["n"] == 0).eq(table["value"].isna()).all()  # a figure is missing only where it has no pairs
    code, out, err = run_cli(["score", jobs[0] / "scorer", gen / "g3.mp4", "--json"], capsys)
    assert code == 0, err
    assert np.isfinite(json.loads(out)["raw_score"])


def _figures(node) -> list[dict]:
    """Every ``{"value": ...}`` figure under a benchmark's metrics."""
    if isinstance(node, dict):
        if "value" in node and isinstance(node["value"], (int, float)):
            return [node]
        return [f for v in node.values() for f in _figures(v)]
    return []
