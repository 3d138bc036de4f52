"""results/ holds the figures as files, and the README's results table is the one rendered from them."""

import json
from pathlib import Path

import pandas as pd

from phyprobe.eval.results import readme_table, table_block

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
