"""train() on a warm cache decodes no video; the streaming table trains like the in-memory one."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest
from hydra import compose, initialize_config_dir

from phyprobe.testing.features import toy_manifest_at
from phyprobe.training.pipeline import train

pytestmark = pytest.mark.usefixtures("one_thread")

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


def _train(manifest: Path, cache: Path, out: Path, *overrides: str) -> pd.DataFrame:
    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        cfg = compose(
            "train",
            overrides=[
                "data=manifest",
                f"data.source.path={manifest}",
                "eval.baselines=[]",
                "eval.report=false",
                f"paths.output_dir={out}",
                f"paths.cache_dir={cache}",
                "backbone=efficientnet_lite0",
                "backbone.weights=null",
                "backbone.image_size=32",
                "clip.num_frames=4",
                "extract.num_workers=0",
                "extract.batch_size=4",
                "trainer.max_epochs=3",
                "trainer.accelerator=cpu",
                "trainer.enable_progress_bar=false",
                "optim.batch_size=4",
                "head.hidden=32",
                *overrides,
            ],
        )
    metrics = train(cfg)
    assert metrics["run"]["skipped_videos"] == 0
    return pd.read_csv(out / "scores.csv")


def test_warm_cache_run_decodes_nothing_and_trains_identically(tmp_path):
    m = toy_manifest_at(tmp_path / "m", num_scenes=6)
    cold = _train(m.root, tmp_path / "cache", tmp_path / "cold")
    # Every video becomes undecodable (still present, so the manifest's file check passes): any
    # decode on the warm run would now record a failure and exclude the video. Size and mtime are kept,
    # which is how the cache tells a file it encoded from a replaced one without reading it
    # (test_features_cache.py changes a file's bytes and sees it encoded again).
    for p in (m.root / "v").glob("*.mp4"):
        st = p.stat()
        p.write_bytes(b"not a video any more".ljust(st.st_size, b"!"))
        os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    warm = _train(m.root, tmp_path / "cache", tmp_path / "warm")
    pd.testing.assert_frame_equal(cold, warm)
    (cache_dir,) = (tmp_path / "cache").iterdir()
    assert all(not p.read_text() for p in cache_dir.glob("failures-*.jsonl"))

    streamed = _train(m.root, tmp_path / "cache", tmp_path / "streamed", "data.streaming=true")
    pd.testing.assert_frame_equal(cold[["id", "split"]], streamed[["id", "split"]])
    # Same batches and order; only the normalisation statistics' float rounding differs.
    assert (cold["raw_score"] - streamed["raw_score"]).abs().max() < 1e-3
