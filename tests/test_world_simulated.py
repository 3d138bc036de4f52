"""What every numpy-simulated world (marbles, rigs) owes the shared build, through ``phyprobe.world.simulated``:
nuisance twins change pixels and not physics, the held-out look stays held out, the metadata says what the frames
are, frames are a pure function of (seed, index) in any process, and the world's benchmark config draws it on first
use and never redraws it."""

from __future__ import annotations

import hashlib
import importlib
import multiprocessing as mp

import numpy as np
import pytest

from phyprobe.eval.protocols import load_benchmark
from phyprobe.testing.configs import CONFIGS
from phyprobe.world.build import default_worker_signals
from phyprobe.world.seeds import scene_rng

WORLDS = ["marbles", "rigs"]
FRAMES = 16


def _engine(world: str):
    return importlib.import_module(f"phyprobe.world.{world}").ENGINE


@pytest.fixture(scope="module", params=WORLDS)
def world(request):
    """A world and four of its scenes (both views among them), their runs and frames cached."""
    engine = _engine(request.param)
    return request.param, engine, [engine.scene(3, i, FRAMES, False) for i in range(4)]


def test_nuisance_twins_keep_the_physics_and_change_the_pixels(world):
    """A nuisance twin is a tie pair: other pixels (camera first, then light or look), the same motion."""
    _, engine, scenes = world
    for sc in scenes[:3]:
        reference = sc.plausible()
        kinds = []
        for k in range(engine.num_nuisance):
            frames, meta = sc.nuisance(k, scene_rng(3, sc.scene.index, 40 + k))
            assert frames.shape == reference.shape and frames.dtype == np.uint8
            assert np.abs(frames.astype(int) - reference).mean() > 1.0, meta
            kinds.append(meta["nuisance"])
        assert kinds[0] == "camera" and set(kinds) <= {"camera", "lighting", "texture"}
        assert np.array_equal(sc.simulate(sc.scene).pos, sc.trajectory.pos)
    with pytest.raises(IndexError):
        scenes[0].nuisance(engine.num_nuisance, scene_rng(3, 0, 0))


def test_metadata_and_frame_shapes(world):
    """The manifest's metadata says what the frames are: even sizes (for x264), the engine, the bodies."""
    name, engine, scenes = world
    for sc in scenes:
        meta = sc.metadata()
        frames = sc.plausible()
        assert frames.shape == (FRAMES, meta["height"], meta["width"], 3)
        assert meta["width"] % 2 == 0 and meta["height"] % 2 == 0 and meta["engine"] == name
        assert meta["num_bodies"] == len(meta["shapes"]) > 0
        assert frames.std() > 5, "frames are (nearly) blank"
    assert engine.source == name
    with pytest.raises(ValueError, match="unknown violation family"):
        scenes[0].plan("levitation", np.random.default_rng(0))


@pytest.mark.parametrize("name", WORLDS)
def test_heldout_look_is_never_used_elsewhere(name):
    """The heldout_style split is only held out if no other scene, nor a re-dressed twin, wears its palette."""
    looks = importlib.import_module(f"phyprobe.world.{name}.scene")
    engine = _engine(name)
    assert looks.HELDOUT_PALETTE not in looks.PALETTES
    for index in range(300):
        assert looks.sample_scene(0, index, FRAMES, False).style.palette != looks.HELDOUT_PALETTE
    held = engine.scene(0, 1, FRAMES, True)
    assert held.metadata()["palette"] == looks.HELDOUT_PALETTE
    colour = held.palette_fields[0]  # the backdrop's or the paper's colour
    for r in range(4):  # a re-dressed twin of an ordinary scene never borrows the held-out colours
        ordinary = engine.scene(0, r, FRAMES, False)
        frames, meta = ordinary.nuisance(1, np.random.default_rng(r))
        assert meta["nuisance"] in ("lighting", "texture")
        assert getattr(held.scene.style, colour) != getattr(ordinary.scene.style, colour)


def _digest(args: tuple[str, int]) -> str:
    name, index = args
    engine = _engine(name)
    sc = engine.scene(21, index, FRAMES, index % 2 == 1)
    h = hashlib.sha256(sc.plausible().tobytes())
    families = sorted(engine.families)
    plan = sc.plan(families[index % len(families)], scene_rng(21, index, 2))
    h.update(sc.violated(plan, 0.7)[0].tobytes())
    h.update(sc.nuisance(1, scene_rng(21, index, 3))[0].tobytes())
    return h.hexdigest()


@pytest.mark.parametrize("name", WORLDS)
def test_frames_identical_across_constructions_and_processes(name):
    """A build is byte-identical whatever the worker count: a scene is a pure function of its seed and index."""
    jobs = [(name, i) for i in range(3)]
    here = [_digest(j) for j in jobs]
    assert here == [_digest(j) for j in jobs]
    with mp.get_context("fork").Pool(2, initializer=default_worker_signals) as pool:
        assert pool.map(_digest, jobs) == here
        pool.close()
        pool.join()


@pytest.mark.parametrize("name", WORLDS)
def test_a_benchmark_draws_its_world_on_first_use(name, tmp_path):
    """configs/benchmark/<world>.yaml's ``build``: the first load draws the world through the shared build (a
    manifest with twin pairs, every split), a later one reads what is there; the real config's options are valid."""
    real = load_benchmark(name, root=CONFIGS.parent)
    assert real.build["engine"] == name and real.where == {"source": name}
    tiny = {
        "name": f"tiny_{name}",
        "manifest": str(tmp_path / "m"),
        "protocol": "world",
        "where": {"source": name},
        "build": {
            **real.build,
            "num_scenes": 4,
            "num_frames": 16,
            "split_fractions": {"val": 0.0, "test": 0.25, "heldout_style": 0.0, "heldout_family": 0.25},
        },
    }
    m = load_benchmark(tiny).load_manifest()
    assert set(m.videos["source"]) == {name} and len(m.pairs) > 0
    assert {md["variant"] for md in m.videos["metadata"]} == {"plausible", "violated", "quality"}
    assert {md["engine"] for md in m.videos["metadata"]} == {name}
    assert set(m.videos["split"]) == {"train", "test", "heldout_family"}
    stamp = (tmp_path / "m" / "build.json").stat().st_mtime_ns
    # a manifest already there is read as it is, even with other build options: never redrawn over
    other = {**tiny, "build": {**tiny["build"], "seed": 5}}
    again = load_benchmark(other).load_manifest()
    assert (tmp_path / "m" / "build.json").stat().st_mtime_ns == stamp and list(again.videos["id"]) == list(
        m.videos["id"]
    )
    res = load_benchmark(tiny).evaluate(
        {v: float(s) for v, s in zip(m.videos["id"], m.videos["magnitude"])}, manifest=m, n_boot=50
    )
    assert res["world"]["same_scene_accuracy"]["value"] == 1.0
