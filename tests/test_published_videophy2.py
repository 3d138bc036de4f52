"""``phyprobe data prepare videophy2`` on VideoPhy-2 as released (tests/published_videophy2.py): both
splits' CSVs with their cards, videos downloaded by ``video_url`` (mirrored with the host, in bucket
folders, elsewhere via ``--set videos=``) and the CSVs in a hub cache; the published count and bad
layouts in one line; then a toy training on the train split and the videophy2 protocol on the test split."""

import json

import numpy as np
import published_videophy2 as P
import pytest

from phyprobe.cli import main as cli_main
from phyprobe.data.manifest import Manifest
from phyprobe.eval.run import run_eval
from phyprobe.testing.configs import benchmark_eval_cfg, mix_train_cfg
from phyprobe.training.pipeline import train

CAPTIONS = 2
MAG = {1: 1.0, 2: 0.75, 3: 0.5, 4: 0.25, 5: 0.0}  # configs/magnitudes/videophy2.yaml


def prepare(root, out, *extra):
    return cli_main(["data", "prepare", "videophy2", "--root", str(root), "--out", str(out), *extra])


def converted(root, out, *extra):
    assert prepare(root, out, "--no-check-counts", *extra) == 0
    return Manifest.load(out, check_files=True)


LAYOUTS = {
    "mirror": lambda t: (P.write(t / "raw"), ()),
    "buckets": lambda t: (P.write(t / "raw", layout="buckets"), ()),
    "videos_elsewhere": lambda t: (P.write(t / "raw", videos=t / "vids"), ("--set", f"videos={t / 'vids'}")),
    "hub_cache": lambda t: (lambda c: (c[0], ("--set", f"videos={c[1]}")))(P.hub_cache(t / "cache")),
}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_both_splits_as_released(tmp_path, layout):
    root, extra = LAYOUTS[layout](tmp_path)
    m = converted(root, tmp_path / "out", *extra)
    v = m.videos.set_index("id")
    expected = {s: P.rows("a", s, CAPTIONS) for s in ("train", "test")}
    for split, recs in expected.items():
        got = v[v["split"] == split]
        assert len(got) == len(recs)
        by_url = {md["video_url"]: (i, r) for i, (r, md) in enumerate(zip(got.to_dict("records"), got["metadata"]))}
        for rec in recs:  # every published row, by its URL, with its ratings and parsed lists
            _, r = by_url[rec["video_url"]]
            md = r["metadata"]
            assert (md["pc"], md["sa"], md["joint"], md["model"]) == (
                rec["pc"],
                rec["sa"],
                rec["joint"],
                rec["model_name"],
            )
            assert r["magnitude"] == MAG[rec["pc"]] and md["is_hard"] is bool(rec["is_hard"])
            assert md["physics_rules_followed"] == ["The vase stays in contact with the table."]
            assert md["human_violated_rules"] == (
                ["The vase floats after tilting."]
                if rec["pc"] == 1
                else ["The hand passes through the vase"]
                if rec["pc"] == 2
                else []
            )
    # ids keep the whole file name: the ';' in the caption is not cut off as a URL parameter
    s3 = [i for i in v.index if "dream_machine" not in i]
    assert all(i.endswith("_base_stays_upright.mp4") for i in s3)
    assert sum("dream_machine/" in i and i.endswith("_result.mp4") for i in v.index) == CAPTIONS  # Luma's CDN
    # same-caption pairs labelled by pc (higher = more plausible), ties where equal
    p = m.pairs
    assert len(p[p["split"] == "test"]) == CAPTIONS * 6 and len(p[p["split"] == "train"]) == CAPTIONS
    for _, row in p.iterrows():
        a, b = v.loc[row["a"], "metadata"], v.loc[row["b"], "metadata"]
        assert a["prompt"] == b["prompt"] and row["label"] == (0.5 if a["pc"] == b["pc"] else float(a["pc"] < b["pc"]))
    assert {"train", "test"} == set(p["split"]) and (p["kind"] == "generated_vs_generated").all()
    rep = json.loads((tmp_path / "out" / "conversion_report.json").read_text())
    assert rep["missing_videos"] == [] and len(rep["files"]) == 2


def test_one_split_downloaded_and_the_published_test_count(tmp_path, capsys):
    root = P.write(tmp_path / "raw", splits=("test",))
    m = converted(root, tmp_path / "out")
    assert set(m.videos["split"]) == {"test"} and len(m.videos) == CAPTIONS * 4
    assert prepare(root, tmp_path / "out2") == 1  # the test CSV holds 3,397 rows as published
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith(
        f"phyprobe: error: {root / 'videophy2_test' / P.TEST_CSV}: expected 3397 rows"
    )
    assert "--no-check-counts" in err


def test_a_layout_that_is_not_the_release_is_one_line(tmp_path, capsys):
    upsampled = tmp_path / "upsampled"  # videophysics/videophy2_upsampled_prompts: prompts, no ratings
    upsampled.mkdir()
    (upsampled / "prompt-upsampled-test.csv").write_text("caption,upsampled_caption\na,b\n")
    assert prepare(upsampled, tmp_path / "o1", "--no-check-counts") == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith(f"phyprobe: error: {upsampled}: neither ['videophy2_training.csv'")

    no_pc = P.write(tmp_path / "no_pc", splits=("test",))
    csv = no_pc / "videophy2_test" / P.TEST_CSV
    csv.write_bytes(csv.read_bytes().replace(b",pc,", b",physical_commonsense,", 1))
    assert prepare(no_pc, tmp_path / "o2", "--no-check-counts") == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith(f"phyprobe: error: {csv}: missing column(s) ['pc']")

    no_videos = P.write(tmp_path / "no_videos", splits=("test",), videos=tmp_path / "elsewhere")
    assert prepare(no_videos, tmp_path / "o3", "--no-check-counts") == 1  # videos not downloaded, not pointed at
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith("phyprobe: error: videophy2: no video was found on disk")


def test_train_split_trains_at_toy_size_and_the_test_split_evaluates(tmp_path):
    out = tmp_path / "vp2"
    m = converted(P.write(tmp_path / "raw", captions=4), out)
    cfg = mix_train_cfg(
        tmp_path / "run",
        {"videophy2": out},
        {"videophy2": out},  # train captions vs test captions: no overlap
        tmp_path / "cache",
        extra=["backbone=efficientnet_lite0"],
    )
    metrics = train(cfg)
    assert metrics["run"]["num_train_pairs"] == len(m.split("train").pairs)

    res = run_eval(
        benchmark_eval_cfg(
            tmp_path / "eval",
            "videophy2",
            out,
            tmp_path / "run",
            tmp_path / "cache",
            extra=["extract.batch_size=8"],
        )
    )["results"]
    assert res["pairwise"]["coverage"]["value"] == 1.0
    for protocol, figure in (("pairwise", "pairwise_accuracy"), ("correlation", "spearman")):
        leaf = res[protocol][figure]
        assert leaf["n"] > 0 and np.isfinite(leaf["value"]), (protocol, leaf)
    assert res["correlation"]["spearman"]["n"] == len(m.split("test").videos)
