"""Footage from sources the project does not ship: a build drawn from any folder of videos, with the training
kinds or the unseen ones, redrawn when a clip changes, with errors that name the folder or clip at fault; and
the script that fetches OpenCV's sample clips (data_prep/footage_sources.py, running phyprobe.data.footage_sources),
run on a Debian package built here in the real layout."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from phyprobe.data import footage_sources as FETCH
from phyprobe.eval.protocols import load_benchmark
from phyprobe.io.video import write_video
from phyprobe.testing.configs import CONFIGS
from phyprobe.world.footage_unseen import KINDS, build_unseen_footage
from phyprobe.world.real import PERTURBATIONS

REPO = CONFIGS.parent
FRAMES = 16  # clip length of the tiny builds; each source clip must hold twice as many
SCRIPT = REPO / "data_prep" / "footage_sources.py"  # the command users run; FETCH is what it runs


def _clip(path: Path, n: int, seed: int, size=(72, 96)) -> Path:
    """A textured square gliding over a gradient: motion the perturbations can break."""
    rng = np.random.default_rng(seed)
    h, w = size
    tex = rng.integers(0, 255, (16, 16, 3), dtype=np.uint8)
    frames = np.empty((n, h, w, 3), np.uint8)
    frames[:] = np.linspace(40, 200, w, dtype=np.uint8)[None, None, :, None]
    for t in range(n):
        y, x = 10 + t % (h - 30), 5 + (2 * t) % (w - 20)
        frames[t, y : y + 16, x : x + 16] = tex
    return write_video(path, frames, fps=20.0)


@pytest.fixture
def folder(tmp_path) -> Path:
    d = tmp_path / "clips"
    d.mkdir()
    _clip(d / "walk.mp4", 2 * FRAMES + 4, 0)
    _clip(d / "turn.avi", 2 * FRAMES + 8, 1)
    (d / "SOURCES.json").write_text("{}")  # not a video: not a source
    return d


@pytest.mark.parametrize(("kinds", "names"), [("trained", PERTURBATIONS), ("unseen", KINDS)])
def test_build_from_a_folder_of_clips(folder, tmp_path, kinds, names):
    m = build_unseen_footage(
        tmp_path / "b", num_segments=2 * len(names), seed=1, num_frames=FRAMES, source_dir=folder, kinds=kinds
    )
    meta = list(m.videos["metadata"])
    assert set(m.videos["source"]) == {"footage"} and set(m.videos["split"]) == {"test"}
    assert {md["clip"] for md in meta} == {"walk.mp4", "turn.avi"}
    assert {md["style"] for md in meta} == {"footage:walk", "footage:turn"}
    assert {md["family"] for md in meta} == {"none", *names}  # every kind, on both clips
    assert all(str(v).startswith("footage/") for v in m.videos["path"])
    same = m.pairs[m.pairs["correspondence"] == "same_scene"]
    assert len(same) >= 2 * len(names) * 3
    settings = json.loads((tmp_path / "b" / "build.json").read_text())
    assert settings["kinds"] == kinds and [c["name"] for c in settings["clips"]] == ["turn.avi", "walk.mp4"]


def test_a_changed_clip_redraws_the_build(folder, tmp_path):
    build_unseen_footage(tmp_path / "b", num_segments=2, seed=0, num_frames=FRAMES, source_dir=folder, kinds="trained")
    before = json.loads((tmp_path / "b" / "build.json").read_text())["clips"]
    build_unseen_footage(tmp_path / "b", num_segments=2, seed=0, num_frames=FRAMES, source_dir=folder, kinds="trained")
    assert json.loads((tmp_path / "b" / "build.json").read_text())["clips"] == before  # found built
    _clip(folder / "walk.mp4", 2 * FRAMES + 4, 7)  # same name, other footage
    build_unseen_footage(tmp_path / "b", num_segments=2, seed=0, num_frames=FRAMES, source_dir=folder, kinds="trained")
    after = {c["name"]: c["sha256"] for c in json.loads((tmp_path / "b" / "build.json").read_text())["clips"]}
    assert after["walk.mp4"] != {c["name"]: c["sha256"] for c in before}["walk.mp4"]


def test_bad_folders_and_clips_are_named(folder, tmp_path):
    with pytest.raises(FileNotFoundError, match=r"nowhere: no such folder of footage.*footage_sources\.py"):
        build_unseen_footage(tmp_path / "b", num_segments=1, num_frames=FRAMES, source_dir=tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match=r"empty: no video files"):
        build_unseen_footage(tmp_path / "b", num_segments=1, num_frames=FRAMES, source_dir=tmp_path / "empty")
    with pytest.raises(ValueError, match=r"kinds must be 'unseen' or 'trained'"):
        build_unseen_footage(tmp_path / "b", num_segments=1, num_frames=FRAMES, source_dir=folder, kinds="all")
    short = tmp_path / "short"
    short.mkdir()
    _clip(short / "brief.mp4", FRAMES + 4, 2)
    with pytest.raises(ValueError, match=rf"brief\.mp4: {FRAMES + 4} frames; these kinds need {2 * FRAMES}"):
        build_unseen_footage(tmp_path / "b", num_segments=1, num_frames=FRAMES, source_dir=short)
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "noise.mp4").write_bytes(np.random.default_rng(0).bytes(4096))
    with pytest.raises(ValueError, match=r"noise\.mp4: not a readable video"):
        build_unseen_footage(tmp_path / "b", num_segments=1, num_frames=FRAMES, source_dir=broken)


def test_a_clip_cut_short_is_drawn_from_what_decodes_and_said_so(tmp_path, caplog):
    """An AVI cut in half keeps the header's frame count (as OpenCV's tree.avi does: 68 of 444 frames)."""
    import av

    cut = tmp_path / "cut"
    cut.mkdir()
    frames = np.random.default_rng(0).integers(0, 255, (6 * FRAMES, 72, 96, 3), dtype=np.uint8)
    with av.open(str(cut / "half.avi"), "w") as container:
        stream = container.add_stream("mjpeg", rate=20)
        stream.width, stream.height, stream.pix_fmt = 96, 72, "yuvj420p"
        for f in frames:
            container.mux(stream.encode(av.VideoFrame.from_ndarray(f, format="rgb24")))
        container.mux(stream.encode())
    with open(cut / "half.avi", "r+b") as f:
        f.truncate((cut / "half.avi").stat().st_size // 2)
    with caplog.at_level("WARNING"):
        build_unseen_footage(tmp_path / "b", num_segments=1, num_frames=FRAMES, source_dir=cut, kinds="trained")
    (clip,) = json.loads((tmp_path / "b" / "build.json").read_text())["clips"]
    assert clip["frames_promised"] == 6 * FRAMES and 2 * FRAMES <= clip["frames"] < 6 * FRAMES
    assert f"half.avi: {clip['frames']} of the {6 * FRAMES} frames its header promises decode" in caplog.text


def test_benchmarks_read_the_folder_from_the_repository_root(folder, tmp_path):
    for name, kinds in (
        ("real_footage_other_sources", "trained"),
        ("real_footage_other_sources_unseen_kinds", "unseen"),
    ):
        b = load_benchmark(name, root=REPO)
        assert b.build["source_dir"] == REPO / "data" / "sources" / "debian-footage" and b.build["kinds"] == kinds
        assert b.where == {"source": "footage"} and b.split == ["test"]
    real = load_benchmark("real_footage_other_sources", root=REPO)
    tiny = {
        "name": "tiny_other",
        "manifest": "b",
        "protocol": "world",
        "split": ["test"],
        "where": {"source": "footage"},
        "build": {**real.build, "source_dir": "clips", "num_segments": len(PERTURBATIONS), "num_frames": FRAMES},
    }
    b = load_benchmark(tiny, root=tmp_path)  # both relative paths are taken from the root
    m = b.load_manifest()
    res = b.evaluate({v: float(s) for v, s in zip(m.videos["id"], m.videos["magnitude"])}, manifest=m, n_boot=50)
    assert res["world"]["same_scene_accuracy"]["value"] == 1.0


# --- the fetch script, on a package in opencv-doc's layout ---------------------------------------------------


def _deb(tmp_path: Path, folder: Path, package: str, leave_out: str | None = None) -> Path:
    """``package``'s layout, each clip a copy of one fixture clip (gzip-compressed where the package has it so)."""
    if shutil.which("dpkg-deb") is None:
        pytest.skip("dpkg-deb (Debian's dpkg) is not on this machine")
    root = tmp_path / "pkg" / package
    (root / "DEBIAN").mkdir(parents=True)
    (root / "DEBIAN" / "control").write_text(
        f"Package: {package}\nVersion: 9.9.9-test\nArchitecture: all\n"
        "Maintainer: phyprobe tests <tests@example.invalid>\nDescription: fixture\n"
    )
    for inside in FETCH.PACKAGES.get(package, {"usr/share/doc/other/clip.mp4": "clip.mp4"}):
        if inside == leave_out:
            continue
        data = (folder / "walk.mp4").read_bytes()
        path = root / inside
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(gzip.compress(data) if inside.endswith(".gz") else data)
    deb = tmp_path / f"{package}_9.9.9-test_all.deb"
    subprocess.run(["dpkg-deb", "--build", "--root-owner-group", str(root), str(deb)], check=True, capture_output=True)
    return deb


def _fetch(out: Path, debs: list[Path]) -> subprocess.CompletedProcess:
    args = [a for d in debs for a in ("--deb", str(d))]
    return subprocess.run([sys.executable, str(SCRIPT), str(out), *args], capture_output=True, text=True)


def test_fetch_script_unpacks_the_clips_and_records_them(folder, tmp_path):
    debs = [_deb(tmp_path, folder, package) for package in FETCH.PACKAGES]
    out = tmp_path / "debian-footage"
    done = _fetch(out, debs)
    assert done.returncode == 0, done.stderr
    record = json.loads((out / FETCH.MANIFEST).read_text())
    assert sorted(record) == sorted(FETCH.PACKAGES) and {r["version"] for r in record.values()} == {"9.9.9-test"}
    names = [name for clips in FETCH.PACKAGES.values() for name in clips.values()]
    assert sorted(n for r in record.values() for n in r["clips"]) == sorted(names)
    walk = (folder / "walk.mp4").read_bytes()
    assert all((out / name).read_bytes() == walk for name in names)  # .gz ones unpacked
    m = build_unseen_footage(
        tmp_path / "b", num_segments=len(names), num_frames=FRAMES, source_dir=out, kinds="trained"
    )
    assert {md["clip"] for md in m.videos["metadata"]} == set(names)  # every suffix (.mpg, .mpeg, .mov) is a source


def test_fetch_script_names_what_a_package_lacks(folder, tmp_path):
    missing = next(iter(FETCH.PACKAGES["opencv-doc"]))
    debs = [_deb(tmp_path, folder, p, leave_out=missing) for p in FETCH.PACKAGES]
    out = tmp_path / "debian-footage"
    done = _fetch(out, debs)
    assert done.returncode != 0 and f"has no {missing}" in done.stderr and "opencv-doc (9.9.9-test)" in done.stderr
    assert not (out / FETCH.MANIFEST).exists()  # no record of a folder that is not whole
    done = _fetch(out, [_deb(tmp_path / "other", folder, "not-a-footage-package")])
    assert done.returncode != 0 and "'not-a-footage-package', not one of" in done.stderr
    done = _fetch(out, [tmp_path / "nope.deb"])
    assert done.returncode != 0 and "nope.deb: no such package file" in done.stderr
