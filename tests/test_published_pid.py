"""``phyprobe data prepare pid`` on the PhyDetEx releases as published (tests/published_pid.py): the PID
test split and the ImpossibleVideos physical-law subset, zipped, unzipped under either folder name the
authors use, and in a hub cache; a layout that matches neither in one line; then a toy training on the
converted sets and the pid protocol on each."""

import json
import logging

import numpy as np
import published_pid as P
import pytest

from phyprobe.cli import main as cli_main
from phyprobe.data.manifest import Manifest
from phyprobe.eval.run import run_eval
from phyprobe.testing.configs import benchmark_eval_cfg, mix_train_cfg
from phyprobe.training.pipeline import train

N = 2  # videos per sub-folder


def prepare(root, out, subset, *extra):
    return cli_main(
        ["data", "prepare", "pid", "--root", str(root), "--out", str(out), "--set", f"subset={subset}", *extra]
    )


def converted(root, out, subset, *extra):
    assert prepare(root, out, subset, "--no-check-counts", *extra) == 0
    return Manifest.load(out, check_files=True)


def report(out):
    return json.loads((out / "conversion_report.json").read_text())


PID_LAYOUTS = {
    "zip": lambda r: P.pid_zip(r),
    "zip_without_top_folder": lambda r: P.pid_zip(r, inner=None),
    "pid_test": lambda r: P.data_dir(r, pid_folder="pid_test", iv=False),
    "PID_test": lambda r: P.data_dir(r, pid_folder="PID_test"),
    "extracted_where_the_readme_puts_the_zip": lambda r: P.data_dir(r, pid_folder="PID_test", nested=True),
    "hub_cache": lambda r: P.hub_cache(r),
}
IV_LAYOUTS = {
    "zip": lambda r: P.iv_zip(r),
    "zip_without_top_folder": lambda r: P.iv_zip(r, inner=None),
    "data_dir": lambda r: P.data_dir(r),
    "hub_cache": lambda r: P.hub_cache(r),
}


@pytest.mark.parametrize("layout", PID_LAYOUTS)
def test_pid_test_split_as_released(tmp_path, layout):
    root = PID_LAYOUTS[layout](tmp_path / "raw")
    m = converted(root, tmp_path / "out", "pid")
    v = m.videos
    pos, neg = v[v["is_real"]], v[~v["is_real"]]
    assert len(pos) == len(neg) == N and (pos["anchor"] == 0).all() and (pos["magnitude"] == 0).all()
    assert (neg["anchor"] == 1).all() and set(v["source"]) == {"pid"}
    assert all(i.startswith("pid:pos/") for i in pos["id"]) and all(i.startswith("pid:neg/") for i in neg["id"])
    assert [md["anno"] for md in neg["metadata"]] == [f"The ball a{i} passes through the floor." for i in range(N)]
    assert set(m.pairs["a"]) == set(neg["id"]) and set(m.pairs["b"]) <= set(pos["id"]) and (m.pairs["label"] == 1).all()
    assert (tmp_path / "out" / "unzipped").is_dir() == (layout.startswith("zip") or layout == "hub_cache")
    rep = report(tmp_path / "out")
    assert rep["missing_videos"] == [] and rep["videos_written"] == 2 * N


@pytest.mark.parametrize("layout", IV_LAYOUTS)
def test_impossible_videos_subset_as_released(tmp_path, layout):
    root = IV_LAYOUTS[layout](tmp_path / "raw")
    m = converted(root, tmp_path / "out", "impossible_videos")
    v = m.videos
    real, imp = v[v["is_real"]], v[~v["is_real"]]
    assert len(real) == len(imp) == N and (real["anchor"] == 0).all() and (imp["anchor"] == 1).all()
    assert set(v["source"]) == {"impossible_videos"}
    assert all(i.startswith("impossible_videos:real_world_videos/") for i in real["id"])
    assert all(i.startswith("impossible_videos:physical_law_impossible_only/") for i in imp["id"])
    for i, md in enumerate(imp["metadata"]):  # openqa_answer.json's primary answer explains the video
        assert md["variant"] == "violated" and md["anno"] == f"The cup a{i} moves by itself without any external force."
        assert len(md["alternative_answers"]) == 3
    assert all(md["variant"] == "plausible" for md in real["metadata"])
    rep = report(tmp_path / "out")
    # IPV-Bench's answers name a video outside the subset: not a missing video
    assert rep["missing_videos"] == [] and any(f"{N} of {N} implausible videos explained" in n for n in rep["notes"])
    assert len(m.pairs) == N


def test_conversions_written_under_the_download_read_the_zip_not_each_others_extraction(tmp_path):
    root = P.pid_zip(tmp_path / "raw")
    for out in ("test", "train", "again"):
        m = converted(root, root / "prepared" / out, "pid", "--set", f"split={'train' if out == 'train' else 'test'}")
        assert all(p.startswith(str(root / "prepared" / out / "unzipped")) for p in m.videos["path"])


def test_published_count_checked_on_pid_not_stated_for_impossible_videos(tmp_path, capsys, caplog):
    root = P.data_dir(tmp_path / "raw", pid_folder="PID_test")
    with caplog.at_level(logging.WARNING):
        prepare(root, tmp_path / "pid", "pid")
    said = capsys.readouterr().err + caplog.text
    assert f"{root / 'Data' / 'PID_test'}: expected 500 videos (pos/ + neg/) as published, found {2 * N}" in said
    assert prepare(root, tmp_path / "iv", "impossible_videos") == 0  # the authors state no count for it


def test_a_layout_matching_neither_is_one_line_naming_root_and_what_was_expected(tmp_path, capsys):
    ipv_release = tmp_path / "ipv"  # IPV-Bench's own release: impossible_videos/, not the physical-law subset
    (ipv_release / "impossible_videos").mkdir(parents=True)
    (ipv_release / "real_world_videos").mkdir()
    assert prepare(ipv_release, tmp_path / "o1", "impossible_videos") == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith(
        f"phyprobe: error: {ipv_release}: no ImpossibleVideos physical-law subset found"
    )
    assert "ImpossibleVideos_Physical_Law_Only.zip" in err and "physical_law_impossible_only/" in err

    renamed = tmp_path / "renamed"  # pos/ and neg/ under a folder no script of the authors reads
    P.pid_tree(renamed / "my_videos")
    assert prepare(renamed, tmp_path / "o2", "pid") == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith(
        f"phyprobe: error: {renamed}: no PID test split found: expected PID_Test_split.zip"
    )
    assert "PID_test/ or pid_test/ holding pos/ (plausible) and neg/ (implausible)" in err

    only_iv = P.iv_zip(tmp_path / "only_iv")  # the other subset is there: say which option reads it
    assert prepare(only_iv, tmp_path / "o3", "pid") == 1
    assert (
        "found the ImpossibleVideos physical-law subset (--set subset=impossible_videos) instead"
        in capsys.readouterr().err
    )

    both = P.data_dir(tmp_path / "both", pid_folder="pid_test", iv=False)
    P.pid_tree(both / "Data" / "PID_test", tag="b")
    assert prepare(both, tmp_path / "o4", "pid") == 1
    assert "several folders could be the PID test split" in capsys.readouterr().err


def test_converted_sets_train_at_toy_size_and_evaluate_with_the_pid_protocol(tmp_path):
    raw_t, raw_b = P.data_dir(tmp_path / "raw_t", tag="t"), P.hub_cache(tmp_path / "raw_b", tag="b")
    train_dirs = {}
    for subset in ("pid", "impossible_videos"):
        converted(raw_t, tmp_path / "train" / subset, subset, "--set", "split=train")
        train_dirs[subset] = tmp_path / "train" / subset
    bench = {s: tmp_path / "bench" / s for s in ("pid", "impossible_videos")}
    for s, out in bench.items():
        converted(raw_b, out, s)

    cache = tmp_path / "cache"
    cfg = mix_train_cfg(tmp_path / "run", train_dirs, [("pid", p) for p in bench.values()], cache)
    metrics = train(cfg)
    assert metrics["run"]["num_train_pairs"] == 2 * N

    for s, manifest in bench.items():
        ecfg = benchmark_eval_cfg(tmp_path / "eval" / s, "pid", manifest, tmp_path / "run", cache)
        res = run_eval(ecfg)["results"]["pid"]
        assert res["coverage"]["value"] == 1.0 and res["auroc"]["n"] == 2 * N and np.isfinite(res["auroc"]["value"])
