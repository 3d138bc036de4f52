"""Each converter on a fixture in its dataset's exact published schema (tests/dataset_fixtures.py):
what it reads, the pairs and magnitudes it writes, and how it fails on bad input."""

import json
import shutil
import zipfile

import dataset_fixtures as F
import numpy as np
import pandas as pd
import pytest
from conftest import run_cli

from phyprobe.cli import main as cli_main
from phyprobe.data.datasets import ConversionError, available_datasets, prepare
from phyprobe.data.datasets.directions import DirectionError
from phyprobe.data.magnitudes import MagnitudeMap
from phyprobe.data.manifest import Manifest
from phyprobe.testing.configs import CONFIGS


def convert(name, raw, out, **kw):
    if name in ("videophy2", "videofeedback2", "monetbench", "rated_folder"):
        kw.setdefault("configs", str(CONFIGS))
    return Manifest.load(prepare(name, raw, out, **{"check_counts": False, **kw}), check_files=True)


@pytest.fixture(scope="module")
def raw(tmp_path_factory):
    """One published-layout copy of every dataset (read-only for the tests: copy before damaging)."""
    base = tmp_path_factory.mktemp("raw")
    out = {}
    for name, writer in F.WRITERS.items():
        (base / name).mkdir()
        out[name] = writer(base / name)
    (base / "rapidata_video").mkdir()
    out["rapidata_video"] = F.rapidata(base / "rapidata_video", schema="video", image_to_video=False)
    return out


def report(out):
    return json.loads((out / "conversion_report.json").read_text())


def test_every_dataset_is_registered():
    assert set(available_datasets()) == set(F.WRITERS)


def test_videophy2_pairs_by_caption_with_ties_rules_parsed_and_bad_utf8_read(raw, tmp_path):
    m = convert("videophy2", raw["videophy2"], tmp_path / "out")
    v = m.videos.set_index("id")
    assert (v["split"].value_counts() == 9).all()
    # Three generators per caption -> three same-caption pairs per caption, per split.
    assert len(m.pairs) == 18 and set(m.pairs["correspondence"]) == {"same_prompt"}
    for _, p in m.pairs.iterrows():
        pa, pb = v.loc[p["a"], "metadata"]["pc"], v.loc[p["b"], "metadata"]["pc"]
        assert v.loc[p["a"], "metadata"]["prompt"] == v.loc[p["b"], "metadata"]["prompt"]
        assert p["label"] == (0.5 if pa == pb else float(pa < pb))  # lower pc = more violating
    assert (
        m.pairs["label"] == 0.5
    ).sum() == 4  # the fixture rates two generators pc 2 on captions 0 and 2 of each split
    # pc 1-5 -> 1 ... 0 through configs/magnitudes/videophy2.yaml
    for meta, mag in zip(v["metadata"], v["magnitude"]):
        assert mag == pytest.approx((5 - meta["pc"]) / 4)
    meta = v["metadata"].iloc[1]
    assert (
        isinstance(meta["physics_rules_unfollowed"], list)
        and meta["physics_rules_unfollowed"][0] == "Gravity pulls the vase down"
    )
    assert any("\ufffd" in md["upsampled_caption"] for md in v["metadata"])  # the invalid byte, replaced, not fatal
    # Same file name in three buckets: each URL found its own bucket's file.
    assert v["path"].nunique() == len(v) and all(md["model"] in F.VP2_BUCKETS for md in v["metadata"])


def test_videofeedback2_pairs_by_prompt_on_phy_score(raw, tmp_path):
    m = convert("videofeedback2", raw["videofeedback2"], tmp_path / "out")
    assert set(m.videos["split"]) == {"train", "test"} and len(m.pairs) == 12
    v = m.videos.set_index("id")
    for _, p in m.pairs.iterrows():
        a, b = v.loc[p["a"], "metadata"]["phy_score"], v.loc[p["b"], "metadata"]["phy_score"]
        assert p["label"] == (0.5 if a == b else float(a < b))


def test_pid_reads_the_published_zip_pos_real_neg_anchored(raw, tmp_path):
    m = convert("pid", raw["pid"], tmp_path / "out")
    pos, neg = m.videos[m.videos["is_real"]], m.videos[~m.videos["is_real"]]
    assert len(pos) == len(neg) == 3 and (pos["anchor"] == 0).all() and (neg["anchor"] == 1).all()
    assert all(md["anno"] == "The cup passes through the table." for md in neg["metadata"])
    assert (tmp_path / "out" / "unzipped").is_dir()  # extracted once from the archive, the archive untouched
    assert set(m.pairs["a"]) == set(neg["id"]) and set(m.pairs["b"]) <= set(pos["id"]) and (m.pairs["label"] == 1).all()


def test_implausibench_matched_pairs_and_published_count(raw, tmp_path):
    m = convert("implausibench", raw["implausibench"], tmp_path / "out")
    assert len(m.pairs) == 3 and set(m.pairs["correspondence"]) == {"same_first_frame"}
    v = m.videos.set_index("id")
    assert all(not v.loc[a, "is_real"] and v.loc[b, "is_real"] for a, b in zip(m.pairs["a"], m.pairs["b"]))
    # 150 MCQA records as published (videos of 147 of them absent): the count passes, the absent ones are reported.
    full = tmp_path / "full"
    shutil.copytree(raw["implausibench"], full)
    F.implausibench(full, records=150)
    m150 = Manifest.load(prepare("implausibench", full, tmp_path / "out150"))
    rep = report(tmp_path / "out150")
    assert len(m150.pairs) == 3 and len(rep["missing_videos"]) == 2 * 147 and rep["pairs_left_out"] == 147


@pytest.mark.parametrize("dim", ["MQ", "Overall"])
def test_videogen_rewardbench_a_b_same_labels(raw, tmp_path, dim):
    m = convert("videogen_rewardbench", raw["videogen_rewardbench"], tmp_path / "out", dim=dim, chunksize=4)
    src = pd.read_csv(raw["videogen_rewardbench"] / "videogen-rewardbench.csv")
    assert len(m.pairs) == len(src) and len(m.videos) == 9  # videos shared across chunks written once
    want = src[dim].map({"A": 0.0, "B": 1.0, "same": 0.5}).to_numpy()
    np.testing.assert_array_equal(m.pairs["label"].to_numpy(), want)
    assert list(m.pairs["a"]) == ["videogen_rewardbench:" + p for p in src["path_A"]]


def test_monetbench_test_answers_and_train_magnitudes(raw, tmp_path):
    # no primary source states the codes' direction, and these files cannot measure it: the user must state it
    with pytest.raises(DirectionError, match=r"refusing to write training pairs .* --set annotation_codes="):
        convert("monetbench", raw["monetbench"], tmp_path / "refused")
    assert not (tmp_path / "refused" / "videos.jsonl").exists()
    m = convert("monetbench", raw["monetbench"], tmp_path / "out", annotation_codes="higher_better")
    test = m.pairs[m.pairs["split"] == "test"]
    assert list(test["label"]) == [0.0, 1.0, 0.5]  # video1 / video2 / tie, the preferred video less violating
    tr = m.videos[m.videos["split"] == "train"].set_index("id")
    for meta, mag in zip(tr["metadata"], tr["magnitude"]):
        ann = meta["annotation"]
        assert mag == pytest.approx(((5 - ann["physics law"]) / 4 + (4 - ann["movement reality"]) / 4) / 2)
    train_pairs = m.pairs[m.pairs["split"] == "train"]
    assert len(train_pairs) == 6 and set(train_pairs["kind"]) == {"generated_vs_generated"}


@pytest.mark.parametrize("fixture,corr", [("rapidata", "same_first_frame"), ("rapidata_video", "same_prompt")])
def test_rapidata_both_schemas_give_soft_coherence_labels(raw, tmp_path, fixture, corr):
    m = convert("rapidata", raw[fixture], tmp_path / "out")
    np.testing.assert_allclose(m.pairs["label"], [1.1 / 6.3, 1.0, 0.5])  # w2 / (w1 + w2); equal votes a tie
    assert set(m.pairs["correspondence"]) == {corr}


def test_real_folder_anchors_and_real_real_ties(raw, tmp_path):
    m = convert("real_folder", raw["real_folder"], tmp_path / "out")
    assert m.videos["is_real"].all() and (m.videos["anchor"] == 0).all() and (m.videos["magnitude"] == 0).all()
    assert (m.pairs["label"] == 0.5).all() and set(m.pairs["kind"]) == {"real_vs_real"}
    src = {r["id"]: r["metadata"]["real_source"] for _, r in m.videos.iterrows()}
    same = [src[a] == src[b] for a, b in zip(m.pairs["a"], m.pairs["b"])]
    assert any(same) and not all(same)  # within and across sources
    assert set(m.pairs["a"]) | set(m.pairs["b"]) == set(m.videos["id"])


def test_rated_folder_pairs_by_prompt_from_the_configured_map(raw, tmp_path):
    m = convert("rated_folder", raw["rated_folder"], tmp_path / "out", val_fraction=0.0)
    v = m.videos.set_index("id")
    assert len(m.pairs) == 6
    for _, p in m.pairs.iterrows():
        sa, sb = v.loc[p["a"], "metadata"]["score"], v.loc[p["b"], "metadata"]["score"]
        assert p["label"] == float(sa < sb)  # a 1-5 rating, higher = plausible by default
    inverted = {"fields": {"score": {1: 0.0, 5: 1.0}}}  # a scale where a high score is a violation
    m2 = convert("rated_folder", raw["rated_folder"], tmp_path / "out2", magnitudes=inverted)
    np.testing.assert_array_equal(m2.pairs["label"], 1.0 - m.pairs["label"])


# ---------------------------------------------------------------------------------------------
# bad input


def damaged_csv(raw_dir, tmp_path, name, edit):
    root = tmp_path / "damaged"
    shutil.copytree(raw_dir, root)
    df = pd.read_csv(root / name, dtype=str, keep_default_na=False, encoding_errors="replace")
    edit(df)
    df.to_csv(root / name, index=False)
    return root


@pytest.mark.parametrize(
    "field,value,match",
    [
        ("pc", "7", r"videophy2_training.csv: row 4, field 'pc': '7' is not an integer in \[1, 5\]"),
        ("pc", "", r"row 4, field 'pc'"),
        (
            "physics_rules_unfollowed",
            "['unclosed",
            r"videophy2_training.csv: row 4, field 'physics_rules_unfollowed': not a list literal",
        ),
    ],
)
def test_videophy2_malformed_row_names_file_row_and_field(raw, tmp_path, field, value, match):
    root = damaged_csv(
        raw["videophy2"],
        tmp_path,
        "videophy2_training.csv",
        lambda df: df.__setitem__(field, df[field].where(df.index != 2, value)),
    )
    with pytest.raises(ConversionError, match=match):
        convert("videophy2", root, tmp_path / "out")
    assert not (tmp_path / "out" / "videos.jsonl").exists()  # nothing half-written


def test_videogen_rewardbench_bad_label_names_row_in_a_later_chunk(raw, tmp_path):
    root = damaged_csv(
        raw["videogen_rewardbench"],
        tmp_path,
        "videogen-rewardbench.csv",
        lambda df: df.__setitem__("MQ", df["MQ"].where(df.index != 6, "C")),
    )
    with pytest.raises(ConversionError, match=r"videogen-rewardbench.csv: row 8, field 'MQ': label 'C' is not one of"):
        convert("videogen_rewardbench", root, tmp_path / "out", chunksize=4)


def test_monetbench_and_rapidata_bad_values_name_row_and_field(raw, tmp_path):
    root = tmp_path / "mb"
    shutil.copytree(raw["monetbench"], root)
    t = root / "monetbench" / "test-00000-of-00001.parquet"
    df = pd.read_parquet(t)
    df.loc[1, "standard_answer"] = "both"
    df.to_parquet(t, index=False)
    with pytest.raises(ConversionError, match=r"test-00000-of-00001.parquet: row 1, field 'standard_answer': 'both'"):
        convert("monetbench", root, tmp_path / "out", annotation_codes="higher_better")
    root = tmp_path / "rd"
    shutil.copytree(raw["rapidata_video"], root)
    t = root / "data" / "train-00000-of-00001.parquet"
    df = pd.read_parquet(t)
    df.loc[2, "weighted_results_video2_Coherence"] = -1.0
    df.to_parquet(t, index=False)
    with pytest.raises(ConversionError, match=r"row 2, field 'weighted_results_video2_Coherence'"):
        convert("rapidata", root, tmp_path / "out2")


def test_rapidata_unknown_schema_names_both_published_ones(raw, tmp_path):
    root = tmp_path / "rd"
    shutil.copytree(raw["rapidata"], root)
    t = root / "data" / "train-00000-of-00001.parquet"
    pd.read_parquet(t).rename(columns={"file_name1": "clip_a"}).to_parquet(t, index=False)
    with pytest.raises(ConversionError, match=r"neither published schema found for dimension 'Coherence'"):
        convert("rapidata", root, tmp_path / "out")


def test_missing_video_is_reported_and_left_out_with_its_pairs(raw, tmp_path):
    root = tmp_path / "vp2"
    shutil.copytree(raw["videophy2"], root)
    gone = next((root / "videos" / "hunyuan_xdit").glob("a_test_0_*.mp4"))
    gone.unlink()
    m = convert("videophy2", root, tmp_path / "out")
    rep = report(tmp_path / "out")
    assert len(m.videos) == 17 and len(m.pairs) == 16 and rep["pairs_left_out"] == 2
    [miss] = rep["missing_videos"]
    assert (
        miss["ref"].endswith("hunyuan_xdit/" + gone.name)
        and miss["file"].endswith("videophy2_test.csv")
        and miss["row"] == 4
    )


def test_expected_counts_checked_and_a_mismatch_names_the_file(raw, tmp_path):
    with pytest.raises(ConversionError, match=r"videophy2_test.csv: expected 3397 rows as published, found 9"):
        prepare("videophy2", raw["videophy2"], tmp_path / "a", configs=str(CONFIGS))
    with pytest.raises(ConversionError, match=r"PID_test: expected 500 videos \(pos/ \+ neg/\) as published, found 6"):
        prepare("pid", raw["pid"], tmp_path / "b")
    with pytest.raises(
        ConversionError, match=r"test-00000-of-00001.parquet: expected 1000 pairs as published, found 3"
    ):
        prepare("monetbench", raw["monetbench"], tmp_path / "c", configs=str(CONFIGS), annotation_codes="higher_better")
    with pytest.raises(ConversionError, match=r"ImplausiBench-MCQA.json: expected 150 pairs as published, found 3"):
        prepare("implausibench", raw["implausibench"], tmp_path / "d")


def test_no_video_found_at_all_is_an_error_not_an_empty_manifest(raw, tmp_path):
    root = tmp_path / "vf2"
    shutil.copytree(raw["videofeedback2"], root)
    shutil.rmtree(root / "videos")
    with pytest.raises(ConversionError, match="no video was found on disk"):
        convert("videofeedback2", root, tmp_path / "out")
    assert len(report(tmp_path / "out")["missing_videos"]) == 12


def test_magnitude_maps_must_be_monotone_and_in_range():
    with pytest.raises(ValueError, match="not monotone"):
        MagnitudeMap({"pc": {1: 1.0, 3: 0.2, 5: 0.6}})
    with pytest.raises(ValueError, match=r"lie in \[0, 1\]"):
        MagnitudeMap({"pc": {1: 2.0, 5: 0.0}})
    mm = MagnitudeMap({"pc": {1: 1.0, 5: 0.0}})
    with pytest.raises(ValueError, match=r"value 6.0 .* outside the map's range \[1.0, 5.0\]"):
        mm({"pc": [1, 6]})
    np.testing.assert_allclose(mm({"pc": [1, 2, 5, np.nan]}), [1.0, 0.75, 0.0, np.nan])


def test_cli_prepare_and_stats(raw, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(CONFIGS.parent)  # default magnitude maps: configs/magnitudes/ of the repository
    out = tmp_path / "vp2"
    assert cli_main(["data", "prepare", "videophy2", "--root", str(raw["videophy2"]), "--out", str(out)]) == 1
    assert "expected 3397 rows" in capsys.readouterr().err
    assert (
        cli_main(
            ["data", "prepare", "videophy2", "--root", str(raw["videophy2"]), "--out", str(out), "--no-check-counts"]
        )
        == 0
    )
    assert "18 videos, 18 pairs" in capsys.readouterr().out
    assert cli_main(["data", "stats", str(out), "--plots", str(tmp_path / "plots")]) == 0
    text = capsys.readouterr().out
    assert "pairs by kind and correspondence" in text and "same_prompt" in text
    pngs = {p.name for p in (tmp_path / "plots").glob("*.png")}
    assert {"magnitude_histograms.png", "magnitude_maps.png", "pairs_by_kind_and_correspondence.png"} <= pngs


def test_an_archive_expanding_past_its_budget_is_refused_with_nothing_left_behind(tmp_path, capsys):
    """A 1 MB-class zip declaring 64 MiB (zeros compress a thousandfold): refused before anything is written."""
    root = tmp_path / "raw"
    root.mkdir()
    with zipfile.ZipFile(root / "PID_Test_split.zip", "w", zipfile.ZIP_DEFLATED) as z:
        with z.open("PID_test/pos/a_real_0.mp4", "w") as f:
            for _ in range(64):
                f.write(bytes(1 << 20))
    assert (root / "PID_Test_split.zip").stat().st_size < 1 << 20
    before = sorted(tmp_path.rglob("*"))
    code, _, err = run_cli(["data", "prepare", "pid", "--root", root, "--out", tmp_path / "out"], capsys)
    assert code != 0 and "times the archive" in err and len(err.strip().splitlines()) == 1, err
    assert sorted(tmp_path.rglob("*")) == before  # nothing extracted, no temporary folder, no manifest
