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
    (d / "metrics.json").write_text(
        json.dumps({"benchmarks": {"world_test": {"world": {"same_scene_accuracy_severity_ge_0.5": leaf}}}})
    )
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


def test_summarize_without_runs_is_a_clear_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        main(["summarize", str(tmp_path)])
    err = capsys.readouterr().err.strip()
    assert (
        e.value.code == 2
        and err == f"phyprobe: error: {tmp_path}: no finished runs (no metrics.json beside a run_info.json)"
    )
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_summarize_aggregates_seeds_and_reads_margins(tmp_path, capsys):
    """Arms are the runs that differ only by seed: mean 0.7 and sample sd 0.1 of 0.6/0.7/0.8, worked by hand."""
    for i, acc in enumerate([0.6, 0.7, 0.8]):
        d = fake_run(tmp_path, f"f{i}", ["experiment=full", f"seed={i}"], acc)
        m = json.loads((d / "metrics.json").read_text())
        m["margins"] = {"surprisal_max": {"world_test": {"value": acc - 0.5, "low": None, "high": None, "n": 10}}}
        (d / "metrics.json").write_text(json.dumps(m))
    fake_run(tmp_path, "n0", ["experiment=no_cal", "seed=0"], 0.5)
    assert (
        main(
            [
                "summarize",
                str(tmp_path),
                "--figure",
                "world_test.world.same_scene_accuracy_severity_ge_0.5",
                "--figure",
                "margins.surprisal_max.world_test",
            ]
        )
        == 0
    )
    md = (tmp_path / "summary.md").read_text()
    assert "Over seeds" in md
    assert "0.700 ± 0.100 (0.600, 0.800) n=3" in md  # accuracy, arm experiment=full
    assert "0.200 ± 0.100 (0.100, 0.300) n=3" in md  # margin
    assert "0.500 ± 0.000 (0.500, 0.500) n=1" in md  # a single-seed arm
    capsys.readouterr()


@pytest.mark.parametrize(
    "text, reason",
    [
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ('{"benchmarks": {"world_test": {"x": {"value": NaN}}}}', "NaN is not a number JSON allows"),
        ("[1, 2]", "no 'benchmarks' object"),
    ],
)
def test_a_broken_metrics_file_is_one_line_naming_it(tmp_path, capsys, text, reason):
    fake_run(tmp_path, "0", ["experiment=full"], 0.8)
    bad = fake_run(tmp_path, "1", ["experiment=no_rank"], 0.6) / "metrics.json"
    bad.write_text(text)
    with pytest.raises(SystemExit) as e:
        main(["summarize", str(tmp_path)])
    err = capsys.readouterr().err.strip()
    assert e.value.code == 2 and err.startswith(f"phyprobe: error: {bad}: ") and reason in err, err
    assert not (tmp_path / "summary.csv").exists()
