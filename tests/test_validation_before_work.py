"""Validation before work: what a user hands over (a manifest, a training set, a scorer directory) is checked field
by field before anything runs, and a bad value is one line ``phyprobe: error: <file>[:<line>]: <field> ...``, a
non-zero exit and no traceback; a training whose head ends up scoring NaN exports nothing.

Every case goes through a real entry point: ``Manifest.load`` and ``phyprobe extract`` for manifests, ``train`` under
``report_user_errors`` (as train.py runs it) and train.py itself for training sets, ``phyprobe score`` for scorer
directories, in-process and once as a real process each.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from phyprobe.cli import main as cli_main
from phyprobe.data.manifest import Manifest, ManifestError
from phyprobe.errors import report_user_errors
from phyprobe.testing.bad_inputs import manifest_cases, scorer_cases
from phyprobe.testing.configs import TOY, compose_train
from phyprobe.testing.scorers import make_scorer
from phyprobe.testing.videos import write_toy_manifest
from phyprobe.training.pipeline import train

REPO = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": f"{REPO / 'src'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
ERROR = "phyprobe: error: "


def one_error_line(err: str) -> str:
    """The single line a user sees: exactly one line on stderr that is an error, and no traceback."""
    assert "Traceback" not in err, err[-3000:]
    lines = [line for line in err.splitlines() if line.startswith(ERROR)]
    assert len(lines) == 1, err[-3000:]
    return lines[0]


def run_cli(argv: list[str], capsys) -> tuple[int, str]:
    try:
        code = cli_main(argv)
    except SystemExit as e:
        code = e.code
    return code, capsys.readouterr().err


def run_train(cfg, capsys) -> tuple[int, str]:
    with pytest.raises(SystemExit) as e, report_user_errors(debug=False):
        train(cfg)
    return e.value.code, capsys.readouterr().err


# --- manifests: non-finite or absurd numbers, deep nesting ---

NEW_MANIFEST_CASES = (
    "weight 1e308",
    "weight 1e-300",
    "weight Infinity",
    "label NaN",
    "label -0.1",
    "label 2",
    "magnitude -Infinity",
    "magnitude 1.5",
    "100000 nested lists on a line",
    "deeply nested pair line",
)


@pytest.fixture(scope="module")
def toy(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("toy")
    write_toy_manifest(root, num_scenes=6, frames=6, size=(32, 32))
    return root


@pytest.fixture(scope="module")
def bad_manifests(toy, tmp_path_factory):
    cases = {c.name: c for c in manifest_cases(tmp_path_factory.mktemp("manifests"), toy / "v" / "s0_plausible.mp4")}
    return {name: cases[name] for name in NEW_MANIFEST_CASES}


def test_manifest_numbers_and_nesting_are_refused_naming_file_line_and_field(bad_manifests, tmp_path, capsys):
    for c in bad_manifests.values():
        with pytest.raises(ManifestError, match=c.reason):
            Manifest.load(c.path)
        code, err = run_cli(["extract", str(c.path), "--image-size", "32", "--cache", str(tmp_path)], capsys)
        line = one_error_line(err)
        assert code == 2 and re.search(c.reason, line), (c.name, line)
        assert line.startswith(f"{ERROR}{c.path}/") and re.search(r"\.jsonl:\d+: ", line), (c.name, line)


def test_the_weight_bounds(tmp_path, toy):
    """1e6 and 1e-6 are the bounds: at them a manifest loads, past them it does not."""
    rows = [json.loads(line) for line in (toy / "pairs.jsonl").read_text().splitlines()]
    for weight, ok in ((1e6, True), (1e-6, True), (1.000001e6, False), (0.99e-6, False)):
        m = tmp_path / f"w{weight}"
        shutil.copytree(toy, m, ignore=shutil.ignore_patterns("v"))
        (m / "pairs.jsonl").write_text("".join(json.dumps({**r, "weight": weight}) + "\n" for r in rows))
        if ok:
            assert Manifest.load(m).pairs["weight"].eq(weight).all()
        else:
            with pytest.raises(ManifestError, match=r"pairs\.jsonl:1: 'weight' must be a positive number"):
                Manifest.load(m)


# --- training: refused before any work, and no non-finite head exported ---


def toy_cfg(out: Path, manifest: Path, cache: Path, *extra: str):
    return compose_train(
        out,
        [
            *TOY,
            "backbone=efficientnet_lite0",
            "backbone.image_size=32",
            "data=manifest",
            f"data.source.path={manifest}",
            "eval.report=false",
            f"paths.cache_dir={cache}",
            *extra,
        ],
    )


def with_labels(toy: Path, dst: Path, **fields) -> Path:
    """A copy of the toy manifest (videos by absolute path) whose every pair has ``fields``."""
    dst.mkdir(parents=True)
    videos = [json.loads(line) for line in (toy / "videos.jsonl").read_text().splitlines()]
    (dst / "videos.jsonl").write_text("".join(json.dumps({**v, "path": str(toy / v["path"])}) + "\n" for v in videos))
    pairs = [json.loads(line) for line in (toy / "pairs.jsonl").read_text().splitlines()]
    (dst / "pairs.jsonl").write_text("".join(json.dumps({**p, **fields}) + "\n" for p in pairs))
    return dst


def test_a_1e308_weight_stops_training_at_load(toy, tmp_path, capsys):
    m = with_labels(toy, tmp_path / "m", weight=1e308)
    code, err = run_train(toy_cfg(tmp_path / "run", m, tmp_path / "cache"), capsys)
    line = one_error_line(err)
    assert code == 2 and line.startswith(f"{ERROR}{m / 'pairs.jsonl'}:1: 'weight' must be"), line
    assert not (tmp_path / "cache").exists() and not (tmp_path / "run" / "scorer").exists()


def test_only_tied_pairs_are_refused_before_any_work(toy, tmp_path, capsys):
    m = with_labels(toy, tmp_path / "m", label=0.5)
    code, err = run_train(toy_cfg(tmp_path / "run", m, tmp_path / "cache"), capsys)
    line = one_error_line(err)
    assert code == 2 and line.startswith(f"{ERROR}{m / 'pairs.jsonl'}: all 4 training pairs"), line
    assert "ties (label 0.5)" in line
    assert not (tmp_path / "cache").exists()  # no feature was extracted


def test_only_tied_validation_pairs_are_refused_when_checkpoints_need_pair_accuracy(toy, tmp_path, capsys):
    m = with_labels(toy, tmp_path / "m")
    pairs = [json.loads(line) for line in (m / "pairs.jsonl").read_text().splitlines()]
    pairs = [{**p, "label": 0.5} if p["split"] == "val" else p for p in pairs]
    (m / "pairs.jsonl").write_text("".join(json.dumps(p) + "\n" for p in pairs))
    code, err = run_train(toy_cfg(tmp_path / "run", m, tmp_path / "cache"), capsys)
    line = one_error_line(err)
    assert code == 2 and "checkpoint.monitor=val/pair_acc needs a validation pair" in line, line
    assert not (tmp_path / "cache").exists()


def test_train_py_refuses_tied_pairs_before_fitting_the_default_backbone(toy, tmp_path):
    """As a user runs it, with the default backbone (a dynamics model fitted in the run): the data is checked
    before that fit starts."""
    m = with_labels(toy, tmp_path / "m", label=0.5)
    r = subprocess.run(
        [
            sys.executable,
            "train.py",
            "data=manifest",
            f"data.source.path={m}",
            f"paths.cache_dir={tmp_path / 'cache'}",
            f"hydra.run.dir={tmp_path / 'run'}",
        ],
        capture_output=True,
        text=True,
        env=ENV,
        cwd=REPO,
        timeout=300,
    )
    line = one_error_line(r.stderr)
    assert r.returncode == 2 and line.startswith(f"{ERROR}{m / 'pairs.jsonl'}: all 4 training pairs"), line
    assert not (tmp_path / "run" / "dynamics").exists() and not (tmp_path / "cache").exists()


def test_a_head_scoring_nan_is_not_exported(toy, tmp_path, capsys):
    """A learning rate of 1e30 blows the head's weights up until every score overflows to NaN: the run stops with
    the cause in one line, and neither a scorer nor a scores.csv is written."""
    out = tmp_path / "run"
    code, err = run_train(toy_cfg(out, toy, tmp_path / "cache", "optim.lr=1e30"), capsys)
    line = one_error_line(err)
    assert code == 2 and line.startswith(
        f"{ERROR}{out / 'head'}: not written, nor a scorer: the trained head scores 12 of 12"
    ), line
    assert "training diverged" in line and "lower optim.lr (1e+30)" in line
    assert not (out / "scorer").exists() and not (out / "scores.csv").exists() and not (out / "head").exists()


# --- scorer directories: every field checked on load, no pickle, no path out ---


@pytest.fixture(scope="module")
def tampered(tmp_path_factory):
    root = tmp_path_factory.mktemp("scorers")
    return scorer_cases(root / "cases", make_scorer(root / "good")), root


def test_every_tampered_scorer_is_one_line_naming_the_file_and_field(tampered, toy, capsys):
    cases, root = tampered
    video = str(toy / "v" / "s0_plausible.mp4")
    assert len(cases) >= 30
    for c in cases:
        code, err = run_cli(["score", str(c.path), video], capsys)
        line = one_error_line(err)
        assert code == 2 and line.startswith(f"{ERROR}{c.path / c.extra['file']}: "), (c.name, line)
        assert re.search(c.reason, line), (c.name, line)
        if "marker" in c.extra:
            assert not c.extra["marker"].exists(), f"{c.name}: a pickle ran"


def test_a_good_scorer_still_scores(tampered, toy, capsys):
    _, root = tampered
    code = cli_main(["score", str(root / "good"), str(toy / "v" / "s0_plausible.mp4"), "--json"])
    out = capsys.readouterr().out
    assert code in (0, None) and 0.0 <= json.loads(out)["score"] <= 1.0


def test_phyprobe_score_process_on_a_deeply_nested_config(tampered, toy):
    cases, _ = tampered
    c = next(c for c in cases if c.name == "config.json nests 100000 lists")
    r = subprocess.run(
        [sys.executable, "-m", "phyprobe.cli", "score", str(c.path), str(toy / "v" / "s0_plausible.mp4")],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=300,
    )
    assert (
        r.returncode == 2
        and r.stderr.strip() == f"{ERROR}{c.path / 'config.json'}: not valid JSON here (nested too deeply)"
    )
