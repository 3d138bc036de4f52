"""Extraction keeps finished work however small the job, and encodes each distinct content once."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from phyprobe.data.manifest import Manifest, write_jsonl
from phyprobe.features.cache import FeatureCache
from phyprobe.features.extract import extract_features
from phyprobe.testing.features import CLIP, CPU, shard_contents, tiny_encoder, toy_manifest_at
from phyprobe.testing.held import held_command

REPO = Path(__file__).resolve().parents[1]


def test_a_shard_is_published_after_flush_seconds_even_if_not_full(tmp_path):
    cache = FeatureCache(tmp_path, {"name": "x"}, CLIP)
    w = cache.writer(shard_size=256, flush_seconds=0.0)
    w.write("a", np.ones((2, 3), np.float32), np.arange(2))
    assert cache.done_ids() == {"a"}  # visible to a reader (and a rerun) before the writer closes
    w.write("b", np.ones((2, 3), np.float32), np.arange(2))
    assert cache.done_ids() == {"a", "b"}
    w.close()
    slow = cache.writer(shard_size=256, flush_seconds=3600.0)
    slow.write("c", np.ones((2, 3), np.float32), np.arange(2))
    assert "c" not in cache.done_ids()
    slow.close()
    assert "c" in cache.done_ids()


def _encoded_counter(encoder):
    seen = []
    encoder.register_forward_pre_hook(lambda mod, args: seen.append(args[0].shape[0]))
    return seen


def test_each_distinct_content_is_encoded_once(tmp_path, one_thread):
    m = toy_manifest_at(tmp_path / "m", num_scenes=2)
    v = tmp_path / "m" / "v"
    for i in range(3):  # three more ids whose files are byte copies of one video
        shutil.copy(v / "s0_plausible.mp4", v / f"copy{i}.mp4")
    rows = m.videos.to_dict("records")
    rows += [{**rows[0], "id": f"copy{i}", "path": f"v/copy{i}.mp4"} for i in range(3)]
    rows += [{**rows[0], "id": "same_file_again"}]  # and an id naming the very same file
    write_jsonl(tmp_path / "m" / "videos.jsonl", rows)
    m = Manifest.load(tmp_path / "m")
    enc = tiny_encoder()
    seen = _encoded_counter(enc)
    cache = extract_features(m, enc, CLIP, tmp_path / "cache", batch_size=2, num_workers=0, trainer_kwargs=CPU)
    assert sum(seen) == 4  # 4 distinct contents among 8 ids
    feats = shard_contents(cache)
    assert set(feats) == set(m.videos["id"])
    for other in ("copy0", "copy1", "copy2", "same_file_again"):
        np.testing.assert_array_equal(feats[other], feats["s0_plausible"])

    # a new id whose bytes are already cached is copied, not encoded
    shutil.copy(v / "s1_violated.mp4", v / "late.mp4")
    write_jsonl(tmp_path / "m" / "videos.jsonl", rows + [{**rows[0], "id": "late", "path": "v/late.mp4"}])
    seen.clear()
    cache = extract_features(
        Manifest.load(tmp_path / "m"), enc, CLIP, tmp_path / "cache", batch_size=2, num_workers=0, trainer_kwargs=CPU
    )
    assert sum(seen) == 0
    np.testing.assert_array_equal(shard_contents(cache)["late"], feats["s1_violated"])


def test_a_killed_small_extraction_keeps_what_it_finished(tmp_path):
    """kill -9 an extraction of a manifest far smaller than a shard once its first video is
    published: the rerun finds that work and encodes only the rest."""
    toy_manifest_at(tmp_path / "m", num_scenes=6)
    args = [
        "extract",
        str(tmp_path / "m"),
        "--image-size",
        "32",
        "--num-frames",
        "4",
        "--cache",
        str(tmp_path / "cache"),
        "--workers",
        "0",
        "--batch-size",
        "1",
        "--shard-size",
        "1",
    ]
    cmd = [sys.executable, "-m", "phyprobe.cli", *args]
    env = {"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"}
    # held once its first shard is published (phyprobe.testing.held), so the kill lands part way however fast the run
    held = held_command("phyprobe.features.cache:ShardWriter.flush", 1)
    p = subprocess.Popen(
        [*held, *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
    )
    deadline = time.time() + 300
    while time.time() < deadline and not list((tmp_path / "cache").glob("*/shard-*.ids.json")):
        assert p.poll() is None, p.stderr.read().decode()[-2000:]
        time.sleep(0.05)
    p.send_signal(signal.SIGKILL)
    p.wait()
    cache_dir = next((tmp_path / "cache").iterdir())
    kept = {s for f in cache_dir.glob("shard-*.ids.json") for s in __import__("json").loads(f.read_text())}
    assert 1 <= len(kept) < 12
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "videos: 12 of 12" in r.stdout
