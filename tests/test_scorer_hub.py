"""Scorers through the Hugging Face Hub conventions: a Hub-layout cache read offline, revision
pinning, the fingerprint check, and the generated model card."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pandas as pd
import pytest

from phyprobe import Scorer
from phyprobe.io.video import write_video
from phyprobe.scorer import ScorerLoadError
from phyprobe.testing.scorers import make_scorer

MAIN_REV = "a" * 40
OLD_REV = "b" * 40


def hub_snapshot(cache, repo_id, rev, scorer, branch="main"):
    """Save ``scorer`` as revision ``rev`` of ``repo_id`` in a Hub cache (models--org--name/snapshots/rev)."""
    repo = cache / f"models--{repo_id.replace('/', '--')}"
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    if branch:
        (repo / "refs" / branch).write_text(rev)
    return scorer.save_pretrained(repo / "snapshots" / rev)


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    root = tmp_path_factory.mktemp("hub")
    cache = root / "cache"
    new = Scorer.from_pretrained(make_scorer(root / "new", seed=1))
    old = Scorer.from_pretrained(make_scorer(root / "old", seed=2))
    hub_snapshot(cache, "phy-org/probe", MAIN_REV, new)
    hub_snapshot(cache, "phy-org/probe", OLD_REV, old, branch=None)
    bad = hub_snapshot(cache, "phy-org/probe-bad", MAIN_REV, new)
    cfg = json.loads((bad / "config.json").read_text())
    cfg["encoder"]["kwargs"]["image_size"] = 48  # preprocessing other than the one the head was trained on
    (bad / "config.json").write_text(json.dumps(cfg))
    import numpy as np

    video = write_video(root / "v.mp4", np.random.default_rng(0).integers(0, 255, (8, 48, 64, 3), dtype=np.uint8))
    return cache, video, new.score(video), old.score(video)


def offline(code: str, cache) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(cache), "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)


def test_from_pretrained_reads_a_hub_cache_offline_and_pins_revisions(hub):
    cache, video, want_new, want_old = hub
    assert want_new != want_old
    res = offline(
        f"""
import json
from phyprobe import Scorer
from phyprobe.scorer import ScorerLoadError
out = {{"main": Scorer.from_pretrained("phy-org/probe").score({str(video)!r}),
        "pinned": Scorer.from_pretrained("phy-org/probe", revision={OLD_REV!r}).score({str(video)!r})}}
for repo, kw in (("phy-org/probe-bad", {{}}), ("phy-org/absent", {{}}), ("phy-org/probe", {{"revision": {"c" * 40!r}}})):
    try:
        Scorer.from_pretrained(repo, **kw)
        out[repo] = "loaded"
    except ScorerLoadError as e:
        out[repo + str(kw)] = str(e)
print(json.dumps(out))
""",
        cache,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    out = json.loads(res.stdout.splitlines()[-1])
    assert out["main"] == pytest.approx(want_new, abs=1e-6) and out["pinned"] == pytest.approx(want_old, abs=1e-6)
    assert "fingerprint" in out["phy-org/probe-bad{}"]
    assert "not in the Hub cache" in out["phy-org/absent{}"]
    assert "not in the Hub cache at revision" in out["phy-org/probe{'revision': '" + "c" * 40 + "'}"]


def test_a_local_directory_with_a_revision_is_refused(tmp_path):
    d = make_scorer(tmp_path / "s")
    with pytest.raises(ScorerLoadError, match="applies to Hub repositories"):
        Scorer.from_pretrained(d, revision="main")


def test_model_card_states_encoder_training_data_and_held_out_figures(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    pd.DataFrame(
        {
            "id": list("abcdef"),
            "path": list("abcdef"),
            "split": ["train", "train", "train", "train", "test", "test"],
            "source": ["world", "world", "real_footage", "world", "world", "real_footage"],
            "raw_score": 0.5,
            "score": 0.5,
        }
    ).to_csv(run / "scores.csv", index=False)
    (run / "run_info.json").write_text(json.dumps({"config": {"data": {"train_splits": ["train"]}}}))
    leaf = {"value": 0.778, "low": 0.698, "high": 0.849, "n": 126}
    (run / "metrics.json").write_text(
        json.dumps({"benchmarks": {"world_test": {"world": {"same_scene_accuracy_severity_ge_0.5": leaf}}}})
    )
    scorer = Scorer.from_pretrained(make_scorer(tmp_path / "s", extra={"training": {"run_dir": str(run)}}))
    card = (scorer.save_pretrained(tmp_path / "saved") / "README.md").read_text()
    assert (
        "library_name: phyprobe" in card
        and "`efficientnet_lite0`" in card
        and scorer.config["encoder"]["fingerprint"] in card
    )
    assert (
        "| source | train | held out |" in card and "| world | 3 | 1 |" in card and "| real_footage | 1 | 1 |" in card
    )
    assert "0.778 [0.698, 0.849] n=126" in card and "## Known limits" in card and "## Intended use" in card
    again = Scorer.from_pretrained(tmp_path / "saved")  # a saved scorer loads and keeps its training record
    assert again.config["training"]["run_dir"] == str(run)
