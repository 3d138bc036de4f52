"""Feature cache: atomic shards, leftovers of killed writers, unreadable videos, in-place row reads."""

from __future__ import annotations

import json
import os
import pickle

import numpy as np
import pytest
import torch

from phyprobe.data.manifest import Manifest, write_jsonl
from phyprobe.features.cache import FeatureCache, content_hash, file_stat, video_key
from phyprobe.features.extract import extract_features
from phyprobe.features.table import ShardFeatureTable, load_feature_table
from phyprobe.head import PhyProbeHead
from phyprobe.io.video import write_video
from phyprobe.testing.features import (
    CLIP,
    CPU,
    assert_same_features,
    in_every_share,
    shard_contents,
    tiny_encoder,
    toy_manifest_at,
)

pytestmark = pytest.mark.usefixtures("one_thread")


def _cache(tmp_path) -> FeatureCache:
    return FeatureCache(tmp_path / "cache", {"name": "fake", "dim": 3}, CLIP, "float16")


def _rows(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {f"v/{i}.mp4": rng.standard_normal((4, 3)).astype(np.float16) for i in range(n)}


def test_killed_writer_leftovers_are_removed_and_ids_never_duplicated(tmp_path):
    cache = _cache(tmp_path)
    rows = _rows(7)
    w = cache.writer(rank=0, shard_size=3)
    for vid, f in list(rows.items())[:4]:
        w.write(vid, f, np.arange(4))
    # Simulate a kill: the open shard's .tar.tmp stays behind, plus an id list whose tar never landed;
    # the OS releases a dead process's lock.
    w._sink.close()
    w._lock.close()
    (cache.dir / "shard-r00-000007.ids.json").write_text(json.dumps(["v/6.mp4"]))
    assert sorted(p.name for p in cache.dir.glob("*.tmp")) == ["shard-r00-000001.tar.tmp"]
    assert cache.done_ids() == {"v/0.mp4", "v/1.mp4", "v/2.mp4"}

    w = cache.writer(rank=0, shard_size=3)
    assert not list(cache.dir.glob("*.tmp")) and not (cache.dir / "shard-r00-000007.ids.json").exists()
    for vid, f in rows.items():  # a rerun offered everything again writes only what is missing
        w.write(vid, f, np.arange(4))
    w.close()
    assert [p.name for p in cache.shards()] == ["shard-r00-000000.tar", "shard-r00-000001.tar", "shard-r00-000002.tar"]
    assert_same_features(shard_contents(cache), rows)


def test_shard_table_reads_rows_in_place(tmp_path):
    cache = _cache(tmp_path)
    rows = _rows(10)
    for rank in (0, 1):  # two ranks' shards, interleaved ids
        w = cache.writer(rank=rank, shard_size=2)
        for vid, f in list(rows.items())[rank::2]:
            w.write(vid, f, np.arange(4))
        w.close()
    ids = list(rows)[::-1]
    table = ShardFeatureTable(cache, ids)
    dense = torch.from_numpy(np.stack([rows[v] for v in ids]))
    assert table.shape == tuple(dense.shape) and table.dtype == np.float16
    assert torch.equal(table[:], dense)
    assert torch.equal(table[3], dense[3]) and torch.equal(table[torch.tensor(4)], dense[4])
    assert torch.equal(table[[7, 0, 7]], dense[[7, 0, 7]])
    assert torch.equal(table[2:9:3], dense[2:9:3])
    assert torch.equal(pickle.loads(pickle.dumps(table))[[1, 2]], dense[[1, 2]])
    with pytest.raises(KeyError, match="not in feature cache"):
        ShardFeatureTable(cache, ["nope"])


def test_chunked_normalisation_matches_direct_moments():
    feats = torch.randn(300, 5, 16).half()
    rows = list(range(0, 300, 2))
    a, b = PhyProbeHead(16, hidden=8), PhyProbeHead(16, hidden=8)
    a.fit_normalisation(feats, rows, batch=64)  # merged chunk moments
    b.fit_normalisation(feats, rows, batch=1000)  # one chunk
    pooled = a.pool(feats[rows].float())
    torch.testing.assert_close(a.in_mean, pooled.mean(0), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(a.in_std, pooled.std(0, correction=0), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(a.in_std, b.in_std, rtol=1e-5, atol=1e-6)


def test_unreadable_videos_are_reported_excluded_and_not_retried(tmp_path):
    m = toy_manifest_at(tmp_path / "m", num_scenes=3)
    (tmp_path / "m" / "v" / "s0_violated.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42" + b"\x5a" * 4000)  # corrupt mp4
    (tmp_path / "m" / "v" / "notes.txt").write_text("this is not a video\n")
    videos = m.videos.to_dict("records") + [{**m.videos.iloc[2].to_dict(), "id": "notes", "path": "v/notes.txt"}]
    write_jsonl(tmp_path / "m" / "videos.jsonl", videos)
    write_jsonl(
        tmp_path / "m" / "pairs.jsonl",
        m.pairs.to_dict("records") + [{**m.pairs.iloc[1].to_dict(), "a": "notes", "b": "s1_plausible"}],
    )
    m = Manifest.load(tmp_path / "m", check_files=True)
    enc = tiny_encoder()

    cache = extract_features(m, enc, CLIP, tmp_path / "cache", batch_size=2, num_workers=0, trainer_kwargs=CPU)
    fails = cache.failures()
    assert set(fails) == {"s0_violated", "notes"}
    assert all("not a video file FFmpeg can read" in r["reason"] for r in fails.values()), fails
    table, row_of, kept, skipped = load_feature_table(cache, m)
    assert {s["id"] for s in skipped} == {"s0_violated", "notes"}
    assert set(kept.videos["id"]) == set(m.videos["id"]) - {"s0_violated", "notes"}
    assert len(kept.pairs) == 2 and not {"s0_violated", "notes"} & (set(kept.pairs["a"]) | set(kept.pairs["b"]))
    assert table.shape[0] == len(kept.videos)

    # A warm rerun does not decode the known-bad files again...
    log = sorted(cache.dir.glob("failures-*.jsonl"))
    before = [p.read_text() for p in log]
    extract_features(m, enc, CLIP, tmp_path / "cache", batch_size=2, num_workers=0, trainer_kwargs=CPU)
    assert [p.read_text() for p in log] == before
    # ...but a replaced file is tried again.
    write_video(tmp_path / "m" / "v" / "s0_violated.mp4", np.full((8, 32, 48, 3), 90, np.uint8), fps=12)
    extract_features(m, enc, CLIP, tmp_path / "cache", batch_size=2, num_workers=0, trainer_kwargs=CPU)
    assert "s0_violated" in cache.done_ids() and set(shard_contents(cache)) == set(m.videos["id"]) - {"notes"}


def test_a_video_replaced_under_its_id_is_encoded_again(tmp_path):
    """A world build drawn again by new code keeps its ids and paths; features of the old bytes must not be
    served for the new ones. A file whose bytes changed is taken out of its shard and encoded again (the same
    features as a cold extraction of the new file); a file only touched (new mtime, same bytes) and the
    untouched ones keep their features, and every id stays in exactly one shard."""
    m = toy_manifest_at(tmp_path / "m", num_scenes=3)
    enc = tiny_encoder()
    cache = extract_features(
        m, enc, CLIP, tmp_path / "cache", batch_size=2, num_workers=0, trainer_kwargs=CPU, shard_size=2
    )
    before = shard_contents(cache)
    path = {v: m.video_path(p) for v, p in zip(m.videos["id"], m.videos["path"])}
    replaced, touched = "s1_plausible", "s2_plausible"
    write_video(path[replaced], np.random.default_rng(1).integers(0, 256, (8, 32, 48, 3), np.uint8), fps=12)
    os.utime(path[touched], ns=(1, 1))
    by_file = {video_key(p): p for p in path.values()}  # the cache knows a video by its file
    assert cache.cache.changed_ids(by_file) == {video_key(path[replaced])}

    extract_features(m, enc, CLIP, tmp_path / "cache", batch_size=2, num_workers=0, trainer_kwargs=CPU, shard_size=2)
    after = shard_contents(cache)
    cold = shard_contents(
        extract_features(m, enc, CLIP, tmp_path / "cold", batch_size=2, num_workers=0, trainer_kwargs=CPU)
    )
    assert sorted(after) == sorted(before) and not cache.cache.changed_ids(by_file)
    np.testing.assert_array_equal(after[replaced], cold[replaced])
    assert not np.array_equal(after[replaced], before[replaced])
    assert_same_features(
        {k: v for k, v in after.items() if k != replaced}, {k: v for k, v in before.items() if k != replaced}
    )


def test_a_published_video_has_its_content_record_already(tmp_path, monkeypatch):
    """The processes of a launch open the cache while the others publish: an id must never be seen published
    without the record of the file it was encoded from, or it would read as a file that changed. A spy on the
    writer's publication looks at the records at the moment each id list lands."""
    import phyprobe.features.cache as cache_module

    cache = _cache(tmp_path)
    files = {}
    for i in range(3):
        files[f"v/{i}.mp4"] = tmp_path / f"{i}.mp4"
        files[f"v/{i}.mp4"].write_bytes(bytes([i]) * 100)
    publish, seen = cache_module._atomic_write_text, []

    def spy(path, text):
        if str(path).endswith(".ids.json"):
            seen.append((set(json.loads(text)), set(cache.content_records())))
        publish(path, text)

    monkeypatch.setattr(cache_module, "_atomic_write_text", spy)
    w = cache.writer(rank=0, shard_size=2)
    for vid, f in files.items():
        w.write(vid, np.zeros((4, 3), np.float16), np.arange(4), content=content_hash(f), stat=file_stat(f))
    w.close()
    assert len(seen) == 2 and all(ids <= records for ids, records in seen)
    assert not cache.changed_ids(files)


def test_a_content_file_being_appended_is_read_up_to_its_last_whole_line(tmp_path):
    cache = _cache(tmp_path)
    cache.prepare()
    whole = json.dumps({"id": "v/0.mp4", "sha256": "ab", "stat": [1, 2]})
    (cache.dir / "content-r01.jsonl").write_text(whole + "\n" + '{"id": "v/1.mp4", "sha2')
    assert cache.content_records() == {"v/0.mp4": json.loads(whole)}


def test_a_process_checks_and_forgets_only_its_own_share(tmp_path):
    """A published video with no record (as another process's video looked mid-publication before the record came
    first) is forgotten by the process whose share it is, never by another one, which would not encode it again."""
    from phyprobe.features.extract import PassOptions, in_share, pending

    m = Manifest.load(in_every_share(lambda f: toy_manifest_at(f, num_scenes=3), tmp_path, 2))
    enc = tiny_encoder()
    cache = extract_features(m, enc, CLIP, tmp_path / "cache", batch_size=2, num_workers=0, trainer_kwargs=CPU)
    keys = sorted(cache.cache.done_ids())
    victim = next(k for k in keys if in_share(k, 1, 2))
    for f in cache.cache.dir.glob("content-*.jsonl"):  # its record gone: it reads as changed
        f.write_text("".join(line + "\n" for line in f.read_text().splitlines() if victim not in line))
    other = pending(m, enc, CLIP, tmp_path / "cache", "float16", PassOptions(share=(0, 2)), None)
    assert victim in cache.cache.done_ids() and not other.todo
    own = pending(m, enc, CLIP, tmp_path / "cache", "float16", PassOptions(share=(1, 2)), None)
    assert victim not in cache.cache.done_ids() and [k for k, _ in own.todo] == [victim]
