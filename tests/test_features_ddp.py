"""Extraction through Lightning DDP: each rank writes its own shards, and the cache is the one a
single process writes. Two CPU processes over gloo stand in for N GPUs or nodes."""

from __future__ import annotations

import pytest

from phyprobe.data.manifest import Manifest
from phyprobe.features.extract import extract_features
from phyprobe.testing.features import CLIP, CPU, assert_same_features, shard_contents, tiny_encoder, toy_manifest_at

pytestmark = pytest.mark.usefixtures("one_thread")


def test_two_process_extraction_matches_one_process(tmp_path):
    m = toy_manifest_at(tmp_path / "m", num_scenes=5)
    m = Manifest(videos=m.videos.iloc[:-1], pairs=m.pairs.iloc[:-1], root=m.root)  # 9 videos: ranks get 5 and 4
    enc = tiny_encoder()
    kw = dict(batch_size=2, num_workers=0, shard_size=3)
    single = extract_features(m, enc, CLIP, tmp_path / "one", trainer_kwargs=CPU, **kw)
    multi = extract_features(
        m, enc, CLIP, tmp_path / "two", **kw, trainer_kwargs={**CPU, "devices": 2, "strategy": "ddp_spawn"}
    )
    ranks = {p.name.split("-")[1] for p in multi.shards()}
    assert ranks == {"r00", "r01"}, "each rank writes its own shards"
    assert_same_features(shard_contents(multi), shard_contents(single))  # also fails on any duplicated id
    assert multi.done_ids() == set(m.videos["id"])
