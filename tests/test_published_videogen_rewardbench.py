"""``phyprobe data prepare videogen_rewardbench`` on VideoGen-RewardBench as released
(tests/published_videogen_rewardbench.py): the dataset download with ``videos.zip``, VideoAlign's
``datasets/eval/`` with the videos unzipped, VideoAlign README's ``git clone`` and a hub cache, each on
every dimension (``--set dim=MQ|Overall|VQ|TA``); the published count as a warning and bad files in one
line; then a toy training and VideoAlign's accuracy on the MQ and the Overall manifests."""

import json

import numpy as np
import pandas as pd
import published_videogen_rewardbench as P
import pytest

from phyprobe.cli import main as cli_main
from phyprobe.data.manifest import Manifest
from phyprobe.eval.run import run_eval
from phyprobe.testing.configs import benchmark_eval_cfg, mix_train_cfg
from phyprobe.training.pipeline import train

PROMPTS = 2
LABEL = {"A": 0.0, "B": 1.0, "same": 0.5}  # P(a more violating): the preferred video violates less


def prepare(root, out, *extra):
    return cli_main(["data", "prepare", "videogen_rewardbench", "--root", str(root), "--out", str(out), *extra])


def converted(root, out, *extra):
    assert prepare(root, out, "--no-check-counts", *extra) == 0
    return Manifest.load(out, check_files=True)


LAYOUTS = {
    "download_with_zip": lambda r: P.write(r),
    "videoalign_datasets_eval": lambda r: P.videoalign(r),
    "git_clone": lambda r: P.git_clone(r),
    "hub_cache": lambda r: P.hub_cache(r),
}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_every_dimension_of_the_release(tmp_path, layout):
    root = LAYOUTS[layout](tmp_path / "raw")
    recs = P.rows("a", PROMPTS)
    for dim in ("MQ", "Overall", "VQ", "TA"):
        out = tmp_path / dim
        m = converted(root, out, *(("--set", f"dim={dim}") if dim != "MQ" else ()))  # MQ: the default
        p = m.pairs
        assert len(p) == len(recs) and set(p["split"]) == {"test"}
        assert list(zip(p["a"], p["b"])) == [
            (f"videogen_rewardbench:{r['path_A']}", f"videogen_rewardbench:{r['path_B']}") for r in recs
        ]
        assert p["label"].tolist() == [LABEL[r[dim]] for r in recs]
        v = m.videos.set_index("id")
        assert len(v) == PROMPTS * len(P.MODELS)
        for r in recs:
            md = v.loc[f"videogen_rewardbench:{r['path_B']}", "metadata"]
            assert (md["model"], md["fps"], md["num_frames"], md["prompt"]) == (
                r["B_model"],
                r["fps_B"],
                r["num_frames_B"],
                r["prompt"],
            )
        rep = json.loads((out / "conversion_report.json").read_text())
        assert rep["missing_videos"] == [] and f"labels from dimension {dim}" in rep["notes"]
        # the zip unpacked once per conversion under OUT/unzipped; unzipped videos referenced in place
        assert all(("/unzipped/videos/videos/" in x) == (layout != "videoalign_datasets_eval") for x in v["path"])


def test_the_published_count_is_a_warning_naming_both_figures(tmp_path, capsys):
    root = P.write(tmp_path / "raw")
    assert prepare(root, tmp_path / "out") == 0
    notes = json.loads((tmp_path / "out" / "conversion_report.json").read_text())["notes"]
    line = f"{root / P.CSV_NAME}: found {PROMPTS * 4} pairs ({PROMPTS * 4} videos), published: ~26.5k pairs on the dataset card"
    assert any(n.startswith(line) for n in notes)


def test_files_that_are_not_the_release_are_one_line(tmp_path, capsys):
    bad_label = P.write(tmp_path / "bad_label", zipped=False)
    df = pd.read_csv(bad_label / P.CSV_NAME)
    df.loc[3, "MQ"] = "tie"
    df.to_csv(bad_label / P.CSV_NAME, index=False)
    assert prepare(bad_label, tmp_path / "o1", "--no-check-counts") == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith(
        f"phyprobe: error: {bad_label / P.CSV_NAME}: row 5, field 'MQ': label 'tie'"
    )

    no_overall = P.write(tmp_path / "no_overall", zipped=False)
    df = pd.read_csv(no_overall / P.CSV_NAME).drop(columns=["Overall"])
    df.to_csv(no_overall / P.CSV_NAME, index=False)
    assert prepare(no_overall, tmp_path / "o2", "--no-check-counts", "--set", "dim=Overall") == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith(
        f"phyprobe: error: {no_overall / P.CSV_NAME}: missing column(s) ['Overall']"
    )

    assert prepare(no_overall, tmp_path / "o3", "--no-check-counts", "--set", "dim=motion") == 1
    assert "dim must be one of ('MQ', 'Overall', 'VQ', 'TA')" in capsys.readouterr().err

    zip_only = tmp_path / "zip_only"  # videos.zip without the CSV
    P.write(zip_only)
    (zip_only / P.CSV_NAME).unlink()
    assert prepare(zip_only, tmp_path / "o4", "--no-check-counts") == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith(f"phyprobe: error: {zip_only}: no VideoGen-RewardBench CSV found")


def test_converted_sets_train_at_toy_size_and_evaluate_with_videoalign_accuracy(tmp_path):
    train_out = tmp_path / "train"
    converted(P.videoalign(tmp_path / "raw_t", tag="t", prompts=3), train_out, "--set", "split=train")
    raw_b = P.hub_cache(tmp_path / "raw_b", tag="b")
    bench = {"videogen_rewardbench": tmp_path / "mq", "videogen_rewardbench_overall": tmp_path / "overall"}
    converted(raw_b, bench["videogen_rewardbench"])
    converted(raw_b, bench["videogen_rewardbench_overall"], "--set", "dim=Overall")
    cfg = mix_train_cfg(
        tmp_path / "run",
        {"videogen_rewardbench": train_out},
        bench,
        tmp_path / "cache",
        extra=["backbone=efficientnet_lite0"],  # no real videos to fit the default dynamics backbone on
    )
    metrics = train(cfg)
    assert metrics["run"]["num_train_pairs"] > 0

    for b, manifest in bench.items():
        ecfg = benchmark_eval_cfg(tmp_path / "eval" / b, b, manifest, tmp_path / "run", tmp_path / "cache")
        res = run_eval(ecfg)["results"]["videoalign"]
        labels = Manifest.load(manifest).pairs["label"]
        assert res["coverage"]["value"] == 1.0
        assert res["accuracy_with_ties"]["n"] == len(labels) and np.isfinite(res["accuracy_with_ties"]["value"])
        # without ties: over the pairs the annotators did not call 'same'
        assert res["accuracy_without_ties"]["n"] == int((labels != 0.5).sum())
