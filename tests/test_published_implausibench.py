"""``phyprobe data prepare implausibench`` on ImplausiBench as released (tests/published_implausibench.py):
the dataset download (with the card, .gitattributes and a stray .DS_Store) and a hub cache whose videos
are links to extension-less blobs, as the test split and as a training split; the published count and
bad layouts in one line; then a toy training and the implausibench protocol on the hub-cache copy."""

import json

import numpy as np
import published_implausibench as P
import pytest

from phyprobe.cli import main as cli_main
from phyprobe.data.manifest import Manifest
from phyprobe.eval.run import run_eval
from phyprobe.testing.configs import benchmark_eval_cfg, mix_train_cfg
from phyprobe.training.pipeline import train

N = 3  # scenarios


def prepare(root, out, *extra):
    return cli_main(["data", "prepare", "implausibench", "--root", str(root), "--out", str(out), *extra])


def converted(root, out, *extra):
    assert prepare(root, out, "--no-check-counts", *extra) == 0
    return Manifest.load(out, check_files=True)


LAYOUTS = {
    "download": lambda r: P.write(r),
    "download_with_ds_store": lambda r: P.write(r, ds_store=True),
    "hub_cache": lambda r: P.hub_cache(r),
}


@pytest.mark.parametrize("split", ["test", "train"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_release_as_each_split(tmp_path, layout, split):
    root = LAYOUTS[layout](tmp_path / "raw")
    m = converted(root, tmp_path / "out", "--set", f"split={split}")
    v = m.videos.set_index("id")
    assert len(v) == 2 * N and set(v["split"]) == {split} and set(v["source"]) == {"implausibench"}
    for i in range(N):
        rec, sid = P.record("a", i), P.scenario("a", i)
        real, fake = v.loc[f"implausibench:{rec['real_video']}"], v.loc[f"implausibench:{rec['implausible_video']}"]
        assert real["is_real"] and real["anchor"] == 0 and real["magnitude"] == 0
        assert not fake["is_real"] and fake["anchor"] == 1
        for row, variant in ((real, "plausible"), (fake, "violated")):
            md = row["metadata"]
            assert (md["variant"], md["scenario"], md["real_answer"], md["implausible_answer"]) == (
                variant,
                sid,
                "A",
                "F",
            )
            assert md["question"] == P.QUESTION and md["options"] == rec["options"]
    p = m.pairs
    assert len(p) == N and (p["label"] == 1).all() and set(p["split"]) == {split}
    assert (p["correspondence"] == "same_first_frame").all() and (p["kind"] == "real_vs_generated").all()
    assert all(
        a.replace("/implausible/", "/real/").replace("_implausible", "_real") == b for a, b in zip(p["a"], p["b"])
    )
    rep = json.loads((tmp_path / "out" / "conversion_report.json").read_text())
    assert rep["missing_videos"] == [] and rep["pairs_written"] == N


def test_the_published_count_and_videos_not_downloaded(tmp_path, capsys):
    root = P.write(tmp_path / "raw")
    assert prepare(root, tmp_path / "o1") == 1  # 150 pairs as published
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith(
        f"phyprobe: error: {root / P.JSON_NAME}: expected 150 pairs as published, found {N}"
    )

    full_json = P.write(tmp_path / "partial", records=150)  # the JSON in full, 3 scenarios' videos downloaded
    assert prepare(full_json, tmp_path / "o2") == 0
    rep = json.loads((tmp_path / "o2" / "conversion_report.json").read_text())
    assert len(rep["missing_videos"]) == 2 * (150 - N) and rep["pairs_left_out"] == 150 - N
    assert Manifest.load(tmp_path / "o2").pairs.shape[0] == N


def test_a_layout_that_is_not_the_release_is_one_line(tmp_path, capsys):
    videos_only = tmp_path / "videos_only"  # the ImplausiBench/ folder without the MCQA JSON
    P.write(videos_only)
    (videos_only / P.JSON_NAME).unlink()
    assert prepare(videos_only, tmp_path / "o1", "--no-check-counts") == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith(f"phyprobe: error: {videos_only}: no ImplausiBench MCQA JSON found")

    json_only = tmp_path / "json_only"  # the JSON without the videos
    json_only.mkdir()
    (json_only / P.JSON_NAME).write_text(json.dumps([P.record("a", i) for i in range(N)], indent=4))
    assert prepare(json_only, tmp_path / "o2", "--no-check-counts") == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith("phyprobe: error: implausibench: no video was found on disk")

    no_key = P.write(tmp_path / "no_key")
    recs = json.loads((no_key / P.JSON_NAME).read_text())
    del recs[1]["real_video"]
    (no_key / P.JSON_NAME).write_text(json.dumps(recs, indent=4))
    assert prepare(no_key, tmp_path / "o3", "--no-check-counts") == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith(f"phyprobe: error: {no_key / P.JSON_NAME}: row 1, field 'real_video'")


def test_converted_sets_train_at_toy_size_and_evaluate_with_the_implausibench_protocol(tmp_path):
    train_out, bench_out = tmp_path / "train", tmp_path / "bench"
    converted(P.write(tmp_path / "raw_t", tag="t", n=4), train_out, "--set", "split=train")
    converted(P.hub_cache(tmp_path / "raw_b", tag="b"), bench_out)
    cfg = mix_train_cfg(
        tmp_path / "run", {"implausibench": train_out}, {"implausibench": bench_out}, tmp_path / "cache"
    )
    metrics = train(cfg)
    assert metrics["run"]["num_train_pairs"] == 4

    res = run_eval(
        benchmark_eval_cfg(tmp_path / "eval", "implausibench", bench_out, tmp_path / "run", tmp_path / "cache")
    )["results"]["pairwise"]
    assert res["coverage"]["value"] == 1.0  # every video decoded, links to extension-less blobs included
    assert res["pairwise_accuracy"]["n"] == N and np.isfinite(res["pairwise_accuracy"]["value"])
