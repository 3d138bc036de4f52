"""Rapidata as published (tests/published_rapidata.py): pair files of both schemas beside a parquet of
another schema, the Coherence vote direction measured by ``phyprobe data check`` and required for
training, and a converted set trained on and evaluated at toy size."""

import json

import dataset_fixtures as F
import numpy as np
import pandas as pd
import published_rapidata as R
import pytest

from phyprobe.cli import main as cli_main
from phyprobe.data.datasets import prepare
from phyprobe.data.datasets.directions import DirectionError
from phyprobe.data.manifest import Manifest
from phyprobe.eval.run import run_eval
from phyprobe.testing.configs import benchmark_eval_cfg, mix_train_cfg
from phyprobe.training.pipeline import train

BATCH = ["extract.batch_size=32"]  # as the whole mix in test_datasets_pipeline extracts


def notes(out):
    return json.loads((out / "conversion_report.json").read_text())["notes"]


@pytest.mark.parametrize("schema", ["file_name", "video"])
def test_check_flags_inverted_coherence_votes_and_passes_the_expected_direction(tmp_path, capsys, schema):
    ok = R.write(tmp_path / "ok", schema=schema, videos=False)
    bad = R.write(tmp_path / "bad", schema=schema, coherence="for_worse", videos=False)
    assert cli_main(["data", "check", "rapidata", "--root", str(ok)]) == 0
    out = capsys.readouterr().out
    assert "consistent: coherence_votes=for_better" in out and "verdict: consistent" in out and "n=24" in out
    assert cli_main(["data", "check", "rapidata", "--root", str(bad)]) == 1
    out = capsys.readouterr().out
    assert "LIKELY INVERSION" in out and "--set coherence_votes=for_worse" in out and "verdict: inverted" in out
    # the declared reading that matches the files passes
    assert cli_main(["data", "check", "rapidata", "--root", str(bad), "--set", "coherence_votes=for_worse"]) == 0


def test_check_bad_input_is_one_line_naming_the_file(tmp_path, capsys):
    root = R.write(tmp_path / "r", videos=False, benchmark=False)
    t = root / "data" / "train-00000-of-00001.parquet"
    df = pd.read_parquet(t)
    df.loc[4, "weighted_results2_Coherence"] = -2.0
    df.to_parquet(t, index=False)
    assert cli_main(["data", "check", "rapidata", "--root", str(root)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "train-00000-of-00001.parquet: row 4, field 'weighted_results2_Coherence'" in err[0]
    assert cli_main(["data", "check", "rapidata", "--root", str(root), "--set", "coherence_votes=sideways"]) == 2
    assert "must be one of ['for_better', 'for_worse']" in capsys.readouterr().err


def test_a_parquet_of_another_schema_is_listed_and_skipped(tmp_path, capsys):
    root = R.write(tmp_path / "r", prompts=2)
    out = prepare("rapidata", root, tmp_path / "out", check_counts=False)
    assert "benchmark.parquet" in capsys.readouterr().err
    skipped = [n for n in notes(out) if n.startswith("skipped ")]
    assert len(skipped) == 1 and "data/benchmark.parquet" in skipped[0]
    assert len(Manifest.load(out).pairs) == 6


@pytest.mark.parametrize("schema,corr", [("file_name", "same_first_frame"), ("video", "same_prompt")])
def test_both_schemas_convert_in_the_declared_direction(tmp_path, schema, corr):
    root = R.write(tmp_path / "r", schema=schema, prompts=2)
    src = pd.read_parquet(root / "data" / "train-00000-of-00001.parquet")
    c = [c for c in src.columns if "oherence" in c and "eighted" in c]
    w1, w2 = src[c[0]].to_numpy(float), src[c[1]].to_numpy(float)
    better = Manifest.load(prepare("rapidata", root, tmp_path / "b", coherence_votes="for_better", check_counts=False))
    worse = Manifest.load(prepare("rapidata", root, tmp_path / "w", coherence_votes="for_worse", check_counts=False))
    np.testing.assert_allclose(better.pairs["label"], w2 / (w1 + w2), rtol=1e-6)
    np.testing.assert_allclose(worse.pairs["label"], w1 / (w1 + w2), rtol=1e-6)
    assert set(better.pairs["correspondence"]) == {corr}


def test_training_manifest_needs_an_established_direction(tmp_path):
    inverted = R.write(tmp_path / "inv", coherence="for_worse", prompts=2, benchmark=False)
    with pytest.raises(DirectionError, match=r"look cast for the video with MORE glitches.*coherence_votes=for_worse"):
        prepare("rapidata", inverted, tmp_path / "a", split="train", check_counts=False)
    few = R.write(tmp_path / "few", prompts=1, benchmark=False)  # 3 pairs: nothing established
    with pytest.raises(DirectionError, match=r"refusing to write a training manifest"):
        prepare("rapidata", few, tmp_path / "b", split="train", check_counts=False)
    out = prepare("rapidata", few, tmp_path / "c", split="train", coherence_votes="for_better", check_counts=False)
    assert any("coherence_votes=for_better (declared)" in n for n in notes(out))
    out = prepare("rapidata", few, tmp_path / "d", check_counts=False)  # evaluation split: loud default
    assert any("UNVERIFIED" in n for n in notes(out))


def test_prepared_set_trains_and_evaluates_at_toy_size(tmp_path, capsys):
    dirs = {}
    for tag, split in (("t", "train"), ("b", "test")):
        raw = R.write(tmp_path / "raw" / tag, tag=tag, prompts=2, schema="file_name" if tag == "b" else "video")
        dirs[tag] = tmp_path / "prep" / tag
        args = [
            "data",
            "prepare",
            "rapidata",
            "--root",
            str(raw),
            "--out",
            str(dirs[tag]),
            "--no-check-counts",
            "--set",
            f"split={split}",
            "--set",
            "coherence_votes=for_better",
        ]
        assert cli_main(args) == 0, capsys.readouterr().err
    real = F.real_folder(tmp_path / "raw" / "real", tag="t", per_source=2)  # the mix fits its dynamics on real clips
    components = {
        "rapidata": str(dirs["t"]),
        "real_folder": str(prepare("real_folder", real, tmp_path / "prep" / "real")),
    }
    cache = tmp_path / "cache"
    cfg = mix_train_cfg(tmp_path / "run", components, {"rapidata_i2v": dirs["b"]}, cache, extra=BATCH)
    metrics = train(cfg)
    assert metrics["run"]["num_train_pairs"] > 0
    res = run_eval(
        benchmark_eval_cfg(tmp_path / "eval", "rapidata_i2v", dirs["b"], tmp_path / "run", cache, extra=BATCH)
    )
    leaf = res["results"]["videoalign"]["accuracy_with_ties"]
    assert leaf["n"] > 0 and np.isfinite(leaf["value"])
