"""The report writes its page and plots from real evaluate output; ablation bars from a run table."""

import numpy as np
import pandas as pd
import pytest
from test_protocols import WORLD, WORLD_PAIRS, write_manifest

from phyprobe.eval.protocols import evaluate, video_table
from phyprobe.eval.report import ablation_bars, summary_table, write_report


@pytest.fixture
def world_eval(tmp_path):
    m = write_manifest(tmp_path / "world", [r for r, _ in WORLD], WORLD_PAIRS)
    raw = {r["id"]: s for r, s in WORLD}
    metrics = evaluate(m, raw, "world", n_boot=50)
    df = video_table(m, raw).rename(columns={"score": "raw_score"})
    df["score"] = df["raw_score"].clip(0, 1)
    return metrics, df


def test_write_report_has_every_plot_and_figure(world_eval, tmp_path):
    metrics, df = world_eval
    path = write_report({"world": metrics}, df, tmp_path / "out")
    text = path.read_text()
    for png in (
        "score_distributions.png",
        "reliability.png",
        "accuracy_by_family.png",
        "accuracy_by_severity.png",
        "quality_confound.png",
    ):
        assert (tmp_path / "out" / png).stat().st_size > 1000
        assert f"]({png})" in text
    assert "| `world.same_scene_accuracy` | 0.700 | [" in text
    assert "`world.quality_confound.quality_shift_by_degradation.blur`" in text


def test_write_report_skips_plots_without_data(tmp_path):
    metrics = {"pairwise_accuracy": {"value": 0.75, "low": 0.5, "high": 1.0, "n": 4}}
    df = pd.DataFrame(
        {
            "id": ["a", "b"],
            "score": [0.1, 0.9],
            "raw_score": [0.1, 0.9],
            "source": "bench",
            "is_real": [True, False],
            "magnitude": [None, None],
        }
    )
    text = write_report(metrics, df, tmp_path / "out").read_text()
    assert "score_distributions.png" in text and "reliability.png" not in text and "quality_confound" not in text
    assert "| `pairwise_accuracy` | 0.750 | [0.500, 1.000] | 4 |" in text


def test_summary_table_and_ablation_bars(world_eval, tmp_path):
    metrics, _ = world_eval
    worse = {
        k: ({**v, "value": v["value"] - 0.1} if isinstance(v, dict) and "value" in v and v["value"] is not None else v)
        for k, v in metrics.items()
    }
    figures = ["same_scene_accuracy", "auroc_plausible_vs_violated", "score_range.share_outside_01"]
    table = summary_table({"full": metrics, "no_cal": worse}, figures)
    assert list(table.columns) == ["run", "metric", "value", "low", "high", "n"]
    assert len(table) == 6
    assert np.isclose(table.set_index(["run", "metric"]).at[("no_cal", "same_scene_accuracy"), "value"], 0.6)
    out = ablation_bars(table, tmp_path / "plots" / "ablation.png")
    assert out.exists() and out.stat().st_size > 1000
