"""research/judge_design.py (its driver, phyprobe.training.design_runs) at toy size: real train.py and eval.py jobs,
read by `phyprobe table`, and resumed."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from test_experiments import toy_worlds_overrides

from phyprobe.training import design_runs as driver

SCRIPT = Path(__file__).resolve().parents[1] / "research" / "judge_design.py"


def toy_overrides(tiny_worlds, cache):
    """The toy sizes on the command line, on a random-initialised EfficientNet-Lite0 at 32 px: what is tested is the
    driver (which jobs run, what is read back, resuming), not the encoder, and five runs of the default's dynamics
    model fit took most of this test's time."""
    return [
        *toy_worlds_overrides(tiny_worlds, cache),
        "backbone=efficientnet_lite0",
        "backbone.weights=null",
        "backbone.image_size=32",
        "eval.baselines=[motion]",
    ]


def test_one_seed_is_trained_evaluated_judged_and_resumed(tiny_worlds, tmp_path, capsys):
    out = tmp_path / "design"
    args = [
        "--out",
        str(out),
        "--seeds",
        "0",
        "--world-builds",
        f"world_test:{tiny_worlds}",
        "--footage-builds",
        f"real_footage_unseen:{tiny_worlds}",
        "--",
        *toy_overrides(tiny_worlds, tmp_path / "cache"),
        "eval.report=false",
    ]
    driver.main(args)
    runs = {p.parent.relative_to(out).as_posix() for p in out.rglob("metrics.json")}
    assert runs == {
        "default/seed0",
        "cross/cross_2d_to_3d-seed0",
        "cross/cross_3d_to_2d-seed0",
        f"unseen_world/world_test-{tiny_worlds.name}-seed0",
        f"unseen_footage/real_footage_unseen-{tiny_worlds.name}-seed0",
    }
    verdict = json.loads((out / "table.json").read_text())
    assert {r["role"] for r in verdict} == {"default", "cross", "unseen_world", "unseen_footage"}
    # the default's figure is its run's own, and the cross runs are read on the world they did not train on
    metrics = json.loads((out / "default" / "seed0" / "metrics.json").read_text())
    severe = next(
        r
        for r in verdict
        if r["role"] == "default"
        and r["benchmark"] == "world_test"
        and r["figure"] == "same_scene_accuracy_severity_ge_0.5"
    )
    assert (
        severe["mean"] == metrics["benchmarks"]["world_test"]["world"]["same_scene_accuracy_severity_ge_0.5"]["value"]
    )
    assert {r["benchmark"] for r in verdict if r["role"] == "cross"} == {"world_test", "world3d_test"}
    assert (out / "table.md").read_text().startswith("| role")
    stamp = (out / "default" / "seed0" / "metrics.json").stat().st_mtime_ns
    capsys.readouterr()
    driver.main(args)  # everything finished: nothing runs again, the table is written again
    printed = capsys.readouterr().out
    assert printed.count("done before:") == 5 and "running:" not in printed
    assert (out / "default" / "seed0" / "metrics.json").stat().st_mtime_ns == stamp


def test_a_malformed_build_and_a_failing_job_name_themselves(tmp_path):
    with pytest.raises(SystemExit, match="rigs: a build is BENCHMARK:MANIFEST"):
        driver.main(["--out", str(tmp_path), "--world-builds", "rigs"])
    with pytest.raises(SystemExit, match=r"seed0: failed; rerun this command to resume"):
        driver.main(["--out", str(tmp_path), "--seeds", "0", "--", "backbone=no_such_backbone"])


def test_the_script_is_the_driver():
    done = subprocess.run([sys.executable, str(SCRIPT), "--help"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "--world-builds" in done.stdout and "--footage-builds" in done.stdout
