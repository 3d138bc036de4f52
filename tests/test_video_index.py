"""``phyprobe data index``: each video's sha256, frame count, duration and first-frame hash computed once, in worker
processes and shares, and read instead of the file by the feature cache, the leakage check and the run's reading;
a row describes a file only while its size and modification time are the indexed ones."""

from __future__ import annotations

import hashlib
import json
import os

import pytest
from conftest import run_cli

from phyprobe.data.datasets import leakage
from phyprobe.data.manifest import Manifest
from phyprobe.data.video_index import VideoIndex
from phyprobe.io.video import ClipSpec, probe
from phyprobe.testing.videos import write_toy_manifest


@pytest.fixture
def manifest(tmp_path):
    write_toy_manifest(tmp_path / "m", num_scenes=3, frames=6)
    return Manifest.load(tmp_path / "m")


def _refuse(*_a, **_k):
    raise AssertionError("read from the file although the index holds it")


def test_index_holds_each_fact_as_computed_from_the_file_and_resumes(manifest, capsys):
    code, out, _ = run_cli(["data", "index", str(manifest.root), "--workers", "2"], capsys)
    assert code == 0 and f"{len(manifest)} videos indexed now, 0 already" in out
    index = VideoIndex.of(manifest.root)
    assert len(index) == len(manifest)
    for path in manifest.paths():
        row = index.lookup(path)
        assert row["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
        assert row["num_frames"] == probe(path)["num_frames"] == 6
        assert row["duration"] == pytest.approx(probe(path)["duration"])
        assert row["first_frame"] == leakage.first_frame_hash(path)
    code, out, _ = run_cli(["data", "index", str(manifest.root)], capsys)
    assert code == 0 and f"0 videos indexed now, {len(manifest)} already" in out


def test_shares_cover_every_video_once(manifest, capsys):
    for i in range(3):
        assert run_cli(["data", "index", str(manifest.root), "--share", f"{i}/3", "--workers", "1"], capsys)[0] == 0
    files = sorted(manifest.root.glob("video_index-*of3.jsonl"))
    rows = [json.loads(line) for f in files for line in f.read_text().splitlines()]
    assert len(files) == 3 and sorted(r["path"] for r in rows) == sorted(str(p.resolve()) for p in manifest.paths())
    code, _, err = run_cli(["data", "index", str(manifest.root), "--share", "3/3"], capsys)
    assert code == 2 and "3/3" in err


def test_the_feature_cache_and_the_leakage_check_read_the_index(manifest, capsys, monkeypatch):
    from phyprobe.encoders import from_config
    from phyprobe.features import extract

    assert run_cli(["data", "index", str(manifest.root), "--workers", "1"], capsys)[0] == 0
    monkeypatch.setattr(extract, "content_hash", _refuse)
    monkeypatch.setattr(leakage, "first_frame_hash", _refuse)
    enc = from_config("efficientnet_lite0", weights=None, image_size=32)
    cache = extract.extract_features(manifest, enc, ClipSpec(4), manifest.root.parent / "cache", num_workers=0)
    index = VideoIndex.of(manifest.root)
    records = cache.cache.content_records()
    assert {r["sha256"] for r in records.values()} == {index.lookup(p)["sha256"] for p in manifest.paths()}
    keys = leakage._keys(manifest, "first_frame", leakage.FingerprintCache(None))
    assert sum(len(v) for v in keys.values()) == len(manifest)


def test_the_reading_reads_the_index_and_a_row_describes_a_file_only_as_it_was_indexed(manifest, capsys, monkeypatch):
    from phyprobe.training import head_training

    assert run_cli(["data", "index", str(manifest.root), "--workers", "1"], capsys)[0] == 0
    first = manifest.paths()[0]
    os.utime(first, ns=(0, 0))  # touched: the row no longer describes it
    index = VideoIndex.of(manifest.root)
    assert index.lookup(first) is None and index.lookup(manifest.paths()[1]) is not None
    stripped = manifest.videos.assign(metadata=[{} for _ in range(len(manifest))])
    probed = []
    monkeypatch.setattr(head_training, "probe", lambda p: probed.append(p) or probe(p))
    frames = head_training.video_frames(Manifest(stripped, manifest.pairs, manifest.root))
    assert frames == [6] * len(manifest) and probed == [first]  # only the touched file is read
    with open(next(manifest.root.glob("video_index*.jsonl")), "a") as f:
        f.write('{"path": "cut sh')  # a write cut short
    assert len(VideoIndex.of(manifest.root)) == len(manifest)
