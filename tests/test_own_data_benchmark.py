"""A run on data that no configured benchmark matches (a user's own folder) still says how its scorer ranks pairs it
did not train on: its own test pairs become benchmark ``own_test`` in ``metrics.json`` and ``report.md``."""

from __future__ import annotations

import json

from phyprobe.testing.configs import TOY, compose_train
from phyprobe.testing.videos import write_toy_manifest
from phyprobe.training.pipeline import train


def test_own_data_with_no_matching_benchmark_is_evaluated_on_its_own_test_pairs(tmp_path):
    write_toy_manifest(tmp_path / "m", num_scenes=6, frames=6)
    overrides = [
        *TOY,
        "data=manifest",
        f"data.source.path={tmp_path / 'm'}",
        "backbone=efficientnet_lite0",
        "backbone.weights=null",
        "backbone.image_size=32",
        "clip.num_frames=4",
        "eval.n_boot=20",
        "eval.baselines=[motion]",
        f"paths.cache_dir={tmp_path / 'cache'}",
    ]
    train(compose_train(tmp_path / "run", overrides))
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert list(metrics["benchmarks"]) == ["own_test"]
    acc = metrics["benchmarks"]["own_test"]["pairwise"]["pairwise_accuracy"]
    assert acc["n"] > 0 and 0.0 <= acc["value"] <= 1.0
    assert "own_test" in (tmp_path / "run" / "report.md").read_text()
