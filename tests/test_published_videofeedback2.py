"""VideoFeedback2 as released (tests/published_videofeedback2.py): the train split from the SFT JSON, the
RL JSON or both, the test split from the benchmark JSON; unparseable scores reported, never guessed;
then the converted manifest trained on (train.py, data=paper_mix) and evaluated (eval.py)."""

import json
import logging
import shutil

import numpy as np
import published_videofeedback2 as P
import pytest

from phyprobe.cli import main as cli_main
from phyprobe.data.datasets import ConversionError, prepare
from phyprobe.data.manifest import Manifest
from phyprobe.eval.run import run_eval
from phyprobe.testing.configs import CONFIGS, benchmark_eval_cfg, mix_train_cfg
from phyprobe.training.pipeline import train


def convert(root, out, **kw):
    return Manifest.load(prepare("videofeedback2", root, out, configs=str(CONFIGS), **kw), check_files=True)


def report(out):
    return json.loads((out / "conversion_report.json").read_text())


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    """The full release (SFT + RL + test), read-only: tests copy it before removing or damaging files."""
    return P.write(tmp_path_factory.mktemp("vf2") / "raw")


def copy(release, tmp_path, keep=(P.SFT, P.RL, P.TEST)):
    root = tmp_path / "raw"
    shutil.copytree(release, root)
    for f in {P.SFT, P.RL, P.TEST} - set(keep):
        (root / f).unlink()
    return root


def summary(m):
    """What a manifest says about each video and pair, independent of which files it came from."""
    v = m.videos.set_index("id")
    return (
        {i: (r["split"], r["magnitude"], r["metadata"]["prompt"], r["metadata"]["phy_score"]) for i, r in v.iterrows()},
        sorted(zip(m.pairs["a"], m.pairs["b"], m.pairs["label"], m.pairs["split"])),
    )


def test_sft_alone_rl_alone_and_both_give_the_same_train_split(release, tmp_path):
    sft = convert(copy(release, tmp_path / "s", [P.SFT]), tmp_path / "s" / "out")
    rl = convert(copy(release, tmp_path / "r", [P.RL]), tmp_path / "r" / "out")
    both = convert(copy(release, tmp_path / "b", [P.SFT, P.RL]), tmp_path / "b" / "out")
    assert summary(sft) == summary(rl) == summary(both)
    v = sft.videos.set_index("id")
    assert len(v) == 6 and set(v["split"]) == {"train"} and len(sft.pairs) == 6  # 2 prompts x 3 models
    for _, p in sft.pairs.iterrows():  # phy_score labels the same-prompt pairs, ties where equal
        a, b = v.loc[p["a"], "metadata"]["phy_score"], v.loc[p["b"], "metadata"]["phy_score"]
        assert p["label"] == (0.5 if a == b else float(a < b))
    # scores from the closing block, not the "visual quality: 2" inside <think>; prompt without the template's '.'
    md = v.loc["videofeedback2:a000001_p", "metadata"]
    assert (md["visual_score"], md["t2v_score"], md["phy_score"]) == (4, 3, 4)
    assert md["prompt"] == P.prompt_text("a", "train", 1)
    assert both.videos["metadata"].iloc[0]["files"] == [P.SFT, P.RL]  # one video, read from both files
    assert len(report(tmp_path / "b" / "out")["files"]) == 2 and not report(tmp_path / "b" / "out")["duplicate_videos"]
    # videos found by name: the JSON paths (videos/..., ./vs2_videos/...) are not where the zips were unpacked
    assert all("/videos_27k_" in p for p in both.videos["path"])


def test_sft_and_rl_disagreeing_on_a_video_is_an_error_naming_both(release, tmp_path):
    root = copy(release, tmp_path, [P.SFT, P.RL])
    recs = json.loads((root / P.RL).read_text())
    recs[5]["solution"] = recs[5]["solution"].replace("consistency: 4", "consistency: 1")
    (root / P.RL).write_text(json.dumps(recs, indent=4))
    with pytest.raises(ConversionError) as e:
        convert(root, tmp_path / "out")
    msg = str(e.value)
    assert "'a000001_p'" in msg and "phy_score" in msg and "[4] vs [1]" in msg
    assert f"{P.SFT}: record 5 (line " in msg and f"{P.RL}: record 5 (line " in msg
    assert not (tmp_path / "out" / "videos.jsonl").exists()


def test_test_split_and_the_published_count_warning(release, tmp_path, caplog):
    root = copy(release, tmp_path, [P.TEST])
    with caplog.at_level(logging.WARNING):
        m = convert(root, tmp_path / "out")
    assert set(m.videos["split"]) == {"test"} and len(m.videos) == 6 and len(m.pairs) == 6
    line = f"{root / P.TEST}: found 6 videos, published: 500 (partial download or another release?)"
    assert [r.getMessage() for r in caplog.records if "published" in r.getMessage()] == [line]
    assert line in report(tmp_path / "out")["notes"]
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        convert(root, tmp_path / "out2", check_counts=False)
    assert not [r for r in caplog.records if "published" in r.getMessage()]
    (root / P.TEST).rename(root / "data_27k_test.json")  # its name on the Hub before commit 73e8a3a
    assert len(convert(root, tmp_path / "out3", check_counts=False).videos) == 6


def test_unparseable_scores_are_reported_with_file_record_and_line_and_left_out(tmp_path, caplog):
    root = P.write(tmp_path / "raw", files=("sft", "rl"), old_label=(2,))
    with caplog.at_level(logging.WARNING):
        m = convert(root, tmp_path / "out")
    ids = set(m.videos["id"])
    assert len(ids) == 5 and "videofeedback2:a000000_p" not in ids  # record 2: left out of SFT, skipped by RL
    notes = [n for n in report(tmp_path / "out")["notes"] if "left out" in n]
    assert len(notes) == 1 and notes[0].startswith(f"{root / P.SFT}: record 2 (line 32) left out: no 'visual quality")
    assert "physical consistency: 1" in notes[0]  # what the record does say
    assert any(r.getMessage() == notes[0] for r in caplog.records)


def test_a_file_whose_scores_mostly_do_not_parse_stops_the_conversion(tmp_path):
    root = P.write(tmp_path / "raw", prompts=4, files=("sft",), old_label=tuple(range(12)))
    with pytest.raises(
        ConversionError, match=rf"{P.SFT}: 12 of 12 records have no parseable scores .*record 0 \(line 2\)"
    ):
        convert(root, tmp_path / "out")


def test_a_record_without_its_structure_names_file_record_and_field(release, tmp_path):
    root = copy(release, tmp_path, [P.SFT])
    recs = json.loads((root / P.SFT).read_text())
    recs[3]["videos"] = []
    (root / P.SFT).write_text(json.dumps(recs, indent=4))
    with pytest.raises(
        ConversionError, match=rf"{P.SFT}: record 3 \(line \d+\), field 'videos': expected a list of one"
    ):
        convert(root, tmp_path / "out")


def test_cli_prepare_trains_in_the_paper_mix_and_evaluates_on_the_test_split(release, tmp_path):
    out = tmp_path / "vf2"
    args = ["data", "prepare", "videofeedback2", "--root", str(release), "--out", str(out), "--no-check-counts"]
    assert cli_main(args) == 0
    m = Manifest.load(out, check_files=True)
    assert len(m.split("train").videos) == len(m.split("test").videos) == 6

    cfg = mix_train_cfg(
        tmp_path / "run",
        {"videofeedback2": out},
        {"videofeedback2": out},  # train split vs the test split: no overlap
        tmp_path / "cache",
        extra=["backbone=efficientnet_lite0"],
    )
    metrics = train(cfg)
    assert metrics["run"]["num_train_pairs"] > 0

    res = run_eval(
        benchmark_eval_cfg(
            tmp_path / "eval",
            "videofeedback2",
            out,
            tmp_path / "run",
            tmp_path / "cache",
            extra=["extract.batch_size=8"],
        )
    )
    for protocol, figure in (("pairwise", "pairwise_accuracy"), ("correlation", "spearman")):
        leaf = res["results"][protocol][figure]
        assert leaf["n"] > 0 and np.isfinite(leaf["value"]), (protocol, leaf)
    assert res["results"]["pairwise"]["coverage"]["value"] == 1.0
