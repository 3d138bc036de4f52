"""`phyprobe summarize` on a real (toy) multirun layout: runs named by what tells them apart."""

import json

import pytest
import yaml

from phyprobe.cli import main
from phyprobe.eval.summary import run_names


def fake_run(root, name, overrides, acc):
    d = root / name
    (d / ".hydra").mkdir(parents=True)
    (d / ".hydra" / "overrides.yaml").write_text(yaml.safe_dump(overrides))
    (d / "run_info.json").write_text("{}")
    leaf = {"value": acc, "low": acc - 0.1, "high": acc + 0.1, "n": 10}
    (d / "metrics.json").write_text(json.dumps({"benchmarks": {"world_test": {"world": {"same_scene_accuracy_severity_ge_0.5": leaf}}}}))
    return d


def test_run_names_drop_shared_overrides(tmp_path):
    a = fake_run(tmp_path, "0", ["experiment=full", "seed=0", "trainer.enable_progress_bar=False"], 0.8)
    b = fake_run(tmp_path, "1", ["experiment=no_cal", "seed=0", "trainer.enable_progress_bar=False"], 0.6)
    assert run_names([a, b]) == ["experiment=full", "experiment=no_cal"]


def test_summarize_writes_table_and_plot(tmp_path, capsys):
    fake_run(tmp_path, "0", ["experiment=full"], 0.8)
    fake_run(tmp_path, "1", ["experiment=no_rank"], 0.6)
    assert main(["summarize", str(tmp_path)]) == 0
    md = (tmp_path / "summary.md").read_text()
    assert "experiment=no_rank" in md and "0.600 [0.500, 0.700]" in md
    assert (tmp_path / "ablation_bars.png").stat().st_size > 0
    assert "2 runs" in capsys.readouterr().out


def test_summarize_without_runs_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no finished runs"):
        main(["summarize", str(tmp_path)])
