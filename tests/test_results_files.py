"""results/ holds the figures as files, and the README's results table is the one rendered from them."""

import json
from pathlib import Path

import pandas as pd

from phyprobe.eval.results import headline_markdown, readme_table, table_block, with_designs_kept

ROOT = Path(__file__).resolve().parents[1]


def test_readme_table_is_rendered_from_the_results_files():
    over = pd.read_csv(ROOT / "results" / "default_over_seeds.csv")
    spec = json.loads((ROOT / "results" / "readme_table.json").read_text())
    block = table_block((ROOT / "README.md").read_text())
    assert block is not None, "README.md has lost its results-table markers"
    assert block == readme_table(over, spec), "README's table differs from results/: run python results/generate.py"


def test_results_files_hold_every_seed_of_the_default():
    long = pd.read_csv(ROOT / "results" / "default.csv")
    default = long[(long.design == "paper") & (long.role == "default") & (long.benchmark == "world_test")]
    assert sorted(default.seed) == [0, 1, 2]
    assert ((default.low <= default.value) & (default.value <= default.high)).all()
    over = pd.read_csv(ROOT / "results" / "default_over_seeds.csv")
    row = over[(over.design == "paper") & (over.role == "default") & (over.benchmark == "world_test")].iloc[0]
    assert abs(row["mean"] - default.value.mean()) < 1e-5


def test_a_benchmark_run_again_replaces_its_own_rows_only(tmp_path):
    from phyprobe.eval.bench_record import record_benchmark

    path = tmp_path / "benchmarks.csv"
    record_benchmark("cli", {"--help: median": (0.2, "s")}, path)
    record_benchmark("eval", {"speedup": (24.0, "ratio"), "seconds": (0.1, "s")}, path)
    record_benchmark("cli", {"--help: median": (0.15, "s")}, path)
    table = pd.read_csv(path)
    assert sorted(zip(table["benchmark"], table["figure"], table["value"])) == [
        ("cli", "--help: median", 0.15),
        ("eval", "seconds", 0.1),
        ("eval", "speedup", 24.0),
    ]
    assert table["version"].str.startswith("0.").all() and (table["cores"] >= 1).all()


def test_the_balanced_default_holds_every_seed_it_ran():
    long = pd.read_csv(ROOT / "results" / "default.csv")
    default = long[(long.design == "balanced") & (long.role == "default") & (long.benchmark == "world_test")]
    assert sorted(default.seed) == [0, 1, 2, 3, 4]


def test_a_design_without_runs_here_keeps_its_recorded_rows_and_one_with_runs_is_replaced():
    previous = pd.DataFrame(
        [
            {"design": "paper", "role": "default", "benchmark": "rigs", "seed": 0, "value": 0.6},
            {"design": "balanced", "role": "default", "benchmark": "rigs", "seed": 0, "value": 0.1},
        ]
    )
    long = pd.DataFrame([{"design": "balanced", "role": "default", "benchmark": "rigs", "seed": 0, "value": 0.7}])
    got = with_designs_kept(long, previous)
    assert sorted(zip(got.design, got.value)) == [("balanced", 0.7), ("paper", 0.6)]
    assert with_designs_kept(long.iloc[:0], previous).equals(previous)


def test_the_heuristics_column_comes_from_the_first_design_that_has_the_row():
    over = pd.DataFrame(
        [("new", "unseen", 0.7, 0.5, 10), ("old", "unseen", 0.6, 0.4, 10), ("old", "cross", 0.55, 0.3, 8)],
        columns=["design", "role", "mean", "motion", "n"],
    ).assign(benchmark="rigs", build="b", sd=0.0, seeds="0")
    rows = [("unseen", "unseen", "rigs", "b"), ("cross", "cross", "rigs", "b")]
    md = headline_markdown(over, rows, [("new", "N"), ("old", "O")], ["new", "old"]).splitlines()
    assert md[2].endswith("| 0.500 | 10 |") and md[3].startswith("| cross | — |")  # the new design's, then the old's
    assert md[3].endswith("| 0.300 | 8 |")
