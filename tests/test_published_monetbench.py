"""VisionRewardDB-Video / MonetBench as published (tests/published_monetbench.py): the direction of the
annotation codes and of ``standard_answer`` measured by ``phyprobe data check`` and required for the
training pairs, and a converted copy trained on and evaluated at toy size."""

import json

import dataset_fixtures as F
import numpy as np
import published_monetbench as M
import pytest

from phyprobe.cli import main as cli_main
from phyprobe.data.datasets import prepare
from phyprobe.data.datasets.directions import DirectionError
from phyprobe.data.manifest import Manifest
from phyprobe.eval.run import run_eval
from phyprobe.testing.configs import CONFIGS, benchmark_eval_cfg, mix_train_cfg
from phyprobe.training.pipeline import train

MAP = str(CONFIGS / "magnitudes" / "monetbench.yaml")
BATCH = ["extract.batch_size=32"]  # as the whole mix in test_datasets_pipeline extracts


def check(root, *opts):
    return cli_main(
        [
            "data",
            "check",
            "monetbench",
            "--root",
            str(root),
            "--magnitudes",
            MAP,
            *[x for o in opts for x in ("--set", o)],
        ]
    )


@pytest.mark.parametrize("overlap", [False, True])
def test_check_flags_inverted_codes_and_passes_the_expected_direction(tmp_path, capsys, overlap):
    assert check(M.write(tmp_path / "ok", overlap=overlap)) == 0
    out = capsys.readouterr().out
    assert "consistent: annotation_codes=higher_better" in out and "verdict: consistent" in out
    if overlap:  # the codes measured against the test's standard_answer
        assert "codes read higher_better vs standard_answer read names_preferred" in out
        assert "consistent: standard_answer=names_preferred" in out
    bad = M.write(tmp_path / "bad", codes="higher_worse", overlap=overlap)
    assert check(bad) == 1
    out = capsys.readouterr().out
    assert "LIKELY INVERSION: annotation_codes=higher_better" in out and "--set annotation_codes=higher_worse" in out
    assert check(bad, "annotation_codes=higher_worse") == 0


def test_check_bad_input_is_one_line_naming_the_file(tmp_path, capsys):
    root = M.write(tmp_path / "r")
    (root / "train" / "train-00000-of-00001.parquet").write_bytes(b"not parquet")
    assert check(root) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("phyprobe: error:") and "train-00000-of-00001.parquet" in err[0]


def test_training_pairs_need_a_stated_and_consistent_code_direction(tmp_path, capsys):
    vids = tmp_path / "videos"
    ok = M.write(tmp_path / "ok", videos=vids, prompts=2)
    fields = {"fields": {"physics law": {1: 1.0, 5: 0.0}, "movement reality": {0: 1.0, 4: 0.0}}}
    with pytest.raises(DirectionError, match=r"refusing to write training pairs.*annotation_codes"):
        prepare("monetbench", ok, tmp_path / "a", videos=str(vids), magnitudes=fields, check_counts=False)
    m = Manifest.load(
        prepare(
            "monetbench",
            ok,
            tmp_path / "b",
            videos=str(vids),
            magnitudes=fields,
            annotation_codes="higher_better",
            standard_answer="names_preferred",
            check_counts=False,
        )
    )
    tr = m.videos[m.videos["split"] == "train"]
    law = np.array([md["annotation"]["physics law"] for md in tr["metadata"]])
    worse = Manifest.load(
        prepare(
            "monetbench",
            ok,
            tmp_path / "c",
            videos=str(vids),
            magnitudes=fields,
            annotation_codes="higher_worse",
            check_counts=False,
        )
    )
    assert np.corrcoef(law, tr["magnitude"])[0, 1] < 0  # higher code, less violating
    wtr = worse.videos[worse.videos["split"] == "train"]
    assert np.corrcoef(law, wtr["magnitude"])[0, 1] > 0
    test = worse.pairs[worse.pairs["split"] == "test"]
    assert list(test["label"]) == [0.0, 1.0]  # video1 / video2 under the default reading, with a warning
    assert "standard_answer read names_preferred" in capsys.readouterr().err
    rejected = Manifest.load(
        prepare(
            "monetbench",
            ok,
            tmp_path / "d",
            videos=str(vids),
            configs=str(CONFIGS),
            standard_answer="names_rejected",
            check_counts=False,
        )
    )
    assert list(rejected.pairs.loc[rejected.pairs["split"] == "test", "label"]) == [1.0, 0.0]
    inverted = M.write(tmp_path / "inv", tag="i", codes="higher_worse", prompts=8)
    with pytest.raises(DirectionError, match=r"disagrees with the files.*annotation_codes=higher_worse"):
        prepare("monetbench", inverted, tmp_path / "e", videos=str(vids), configs=str(CONFIGS), check_counts=False)
    report = json.loads((tmp_path / "d" / "conversion_report.json").read_text())
    assert any("annotation_codes=higher_better declared by" in n for n in report["notes"])


def test_prepared_copy_trains_and_evaluates_at_toy_size(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(CONFIGS.parent)  # default magnitude map: configs/magnitudes/ of the repository
    vids, dirs = tmp_path / "videos", {}
    for tag in ("t", "b"):
        raw = M.write(tmp_path / "raw" / tag, videos=vids, tag=tag, prompts=2)
        dirs[tag] = tmp_path / "prep" / tag
        args = [
            "data",
            "prepare",
            "monetbench",
            "--root",
            str(raw),
            "--out",
            str(dirs[tag]),
            "--no-check-counts",
            "--set",
            f"videos={vids}",
            "--set",
            "annotation_codes=higher_better",
            "--set",
            "standard_answer=names_preferred",
        ]
        assert cli_main(args) == 0, capsys.readouterr().err
    real = F.real_folder(tmp_path / "raw" / "real", tag="t", per_source=2)  # the mix fits its dynamics on real clips
    components = {
        "monetbench": str(dirs["t"]),
        "real_folder": str(prepare("real_folder", real, tmp_path / "prep" / "real")),
    }
    cache = tmp_path / "cache"
    metrics = train(mix_train_cfg(tmp_path / "run", components, {"monetbench": dirs["b"]}, cache, extra=BATCH))
    assert metrics["run"]["num_train_pairs"] > 0
    res = run_eval(benchmark_eval_cfg(tmp_path / "eval", "monetbench", dirs["b"], tmp_path / "run", cache, extra=BATCH))
    leaf = res["results"]["monetbench"]["tau_star"]
    assert leaf["n"] > 0 and np.isfinite(leaf["value"])
