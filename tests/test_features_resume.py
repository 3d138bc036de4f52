"""A killed extraction, rerun, gives the cache an uninterrupted run gives: same ids, same features."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from phyprobe.features.extract import extract_features
from phyprobe.testing.features import CLIP, CPU, assert_same_features, shard_contents, tiny_encoder, toy_manifest_at

pytestmark = pytest.mark.usefixtures("one_thread")

EXTRACT = dict(batch_size=2, num_workers=0, shard_size=4, trainer_kwargs=CPU)
SCRIPT = """
import torch
torch.set_num_threads(1)
from phyprobe.data.manifest import Manifest
from phyprobe.features.extract import extract_features
from phyprobe.testing.features import CLIP, tiny_encoder
from phyprobe.testing.held import hold_after
hold_after("phyprobe.features.cache:ShardWriter.flush", 1)  # held once a shard is published: the kill lands part way
extract_features(Manifest.load({manifest!r}), tiny_encoder(64), CLIP, {cache!r}, **{extract!r})
"""


def test_killed_extraction_resumes_to_the_same_cache(tmp_path):
    m = toy_manifest_at(tmp_path / "m", num_scenes=24)
    script = SCRIPT.format(manifest=str(m.root), cache=str(tmp_path / "killed"), extract=EXTRACT)
    proc = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
    )
    deadline = time.monotonic() + 120
    while not list((tmp_path / "killed").glob("*/shard-*.tar")):
        assert proc.poll() is None, proc.stderr.read().decode()[-3000:]
        assert time.monotonic() < deadline, "no shard published within 120 s"
        time.sleep(0.005)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    (cache_dir,) = (tmp_path / "killed").iterdir()
    published = {p.name for p in cache_dir.glob("shard-*.tar")}
    assert len(published) < len(m) / EXTRACT["shard_size"], "the kill landed after the run had finished"

    enc = tiny_encoder(64)
    resumed = extract_features(m, enc, CLIP, tmp_path / "killed", **EXTRACT)
    assert resumed.dir == cache_dir and published < {p.name for p in resumed.shards()}
    assert not list(cache_dir.glob("*.tmp")), "the killed run's half-written shard was left behind"
    whole = extract_features(m, enc, CLIP, tmp_path / "whole", **EXTRACT)
    assert_same_features(shard_contents(resumed), shard_contents(whole))
