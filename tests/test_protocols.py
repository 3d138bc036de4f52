"""Protocols on small hand-scored manifests whose every figure is worked out by hand, benchmark
configs, and external CSV scores."""

import json
import logging
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import roc_auc_score

from phyprobe.data.manifest import Manifest, write_jsonl
from phyprobe.eval import metrics as M
from phyprobe.eval.external import ExternalScoresError, missing_videos, read_external_scores
from phyprobe.eval.protocols import (
    PROTOCOLS,
    evaluate,
    flatten_metrics,
    load_benchmark,
    same_scene_margin,
    violated_twin_pairs,
)

REPO = Path(__file__).resolve().parents[1]
BOOT = dict(n_boot=100, seed=0)


def _video(vid, variant, scene, score, family=None, severity=0.0, degradation=None, split="test", source="world"):
    meta = {
        "family": family,
        "severity": severity,
        "scene": scene,
        "style": "flat",
        "degradation": degradation,
        "variant": variant,
        "aspect": {"s2": "1:1"}.get(scene, "16:9"),
    }
    row = {
        "id": vid,
        "path": f"clips/{vid}.mp4",
        "source": source,
        "is_real": False,
        "magnitude": severity if variant == "violated" else 0.0,
        "anchor": None,
        "split": split,
        "metadata": meta,
    }
    return row, score


# (row, raw score). Same-scene pairs (violated vs its twin): v0a 1, v0b 0, v1a tie 0.5, v1b 1, v2a 1.
WORLD = [
    _video("p0", "plausible", "s0", 0.1),
    _video("v0a", "violated", "s0", 0.5, "teleport", 0.3),
    _video("v0b", "violated", "s0", 0.05, "gravity", 0.9),
    _video("q0", "quality", "s0", 0.3, degradation="blur"),
    _video("p1", "plausible", "s1", 0.2),
    _video("v1a", "violated", "s1", 0.2, "teleport", 0.5),
    _video("v1b", "violated", "s1", 1.4, "gravity", 1.0),
    _video("q1", "quality", "s1", 0.9, degradation="noise"),
    _video("p2", "plausible", "s2", -0.1),
    _video("v2a", "violated", "s2", 0.6, "teleport", 0.75),
    _video("q2", "quality", "s2", 0.6, degradation="blur"),
]


def _pair(a, b, label, kind, corr):
    return {
        "a": a,
        "b": b,
        "label": label,
        "weight": 1.0,
        "source": "world",
        "correspondence": corr,
        "kind": kind,
        "split": "test",
    }


WORLD_PAIRS = [
    _pair("v0a", "v1b", 0.0, "generated_vs_generated", "same_prompt"),  # 0.5 < 1.4, b more violating: correct
    _pair("v2a", "v0b", 1.0, "generated_vs_generated", "same_prompt"),  # 0.6 > 0.05: correct
    _pair("q0", "v1a", 0.5, "generated_vs_generated", "same_prompt"),  # label tie: skipped
    _pair("p0", "p1", 0.5, "real_vs_real", "same_scene"),  # gap 0.1
    _pair("p1", "p2", 0.5, "real_vs_real", "same_scene"),  # gap 0.3
    _pair("v0b", "p1", 1.0, "violated_vs_plausible", "none"),  # 0.05 < 0.2: wrong
]


def write_manifest(root: Path, videos, pairs=()) -> Manifest:
    root.mkdir(parents=True, exist_ok=True)
    write_jsonl(root / "videos.jsonl", videos)
    write_jsonl(root / "pairs.jsonl", pairs)
    return Manifest.load(root)


@pytest.fixture
def world(tmp_path):
    return write_manifest(tmp_path / "world", [r for r, _ in WORLD], WORLD_PAIRS), {r["id"]: s for r, s in WORLD}


def value(leaf):
    return leaf["value"]


def test_world_same_scene_figures(world):
    m, scores = world
    r = evaluate(m, scores, "world", **BOOT)
    assert value(r["same_scene_accuracy"]) == pytest.approx(3.5 / 5) and r["same_scene_accuracy"]["n"] == 5
    # severity exactly 0.5 is "severe"
    assert value(r["same_scene_accuracy_severity_ge_0.5"]) == pytest.approx(2.5 / 4)
    fam = r["same_scene_accuracy_by_family"]
    assert value(fam["teleport"]) == pytest.approx(2.5 / 3) and value(fam["gravity"]) == 0.5
    # severe pairs by aspect: 16:9 holds v0b (wrong), v1a (tie) and v1b (right); 1:1 holds v2a (right)
    asp = r["same_scene_accuracy_severity_ge_0.5_by_aspect"]
    assert set(asp) == {"16:9", "1:1"} and asp["16:9"]["n"] == 3 and asp["1:1"]["n"] == 1
    assert value(asp["16:9"]) == pytest.approx(1.5 / 3) and value(asp["1:1"]) == 1.0
    assert r["same_scene_accuracy_severity_ge_0.5_by_clip"] == {}  # rendered clips come from no source clip
    # footage by source clip: s0's clips from a.mp4 hold v0b (wrong), s1's and s2's from b.mp4 v1a (tie), v1b and v2a
    for row in m.videos["metadata"]:
        row["clip"] = "a.mp4" if row["scene"] == "s0" else "b.mp4"
    clip = evaluate(m, scores, "world", **BOOT)["same_scene_accuracy_severity_ge_0.5_by_clip"]
    assert clip["a.mp4"]["n"] == 1 and value(clip["a.mp4"]) == 0.0
    assert clip["b.mp4"]["n"] == 3 and value(clip["b.mp4"]) == pytest.approx(2.5 / 3)
    sev = r["same_scene_accuracy_by_severity"]
    assert list(sev) == ["[0.00,0.25)", "[0.25,0.50)", "[0.50,0.75)", "[0.75,1.00]"]
    assert sev["[0.00,0.25)"] == {"value": None, "low": None, "high": None, "n": 0}
    assert value(sev["[0.25,0.50)"]) == 1.0  # 0.3
    assert value(sev["[0.50,0.75)"]) == 0.5 and sev["[0.50,0.75)"]["n"] == 1  # 0.5 only; 0.75 goes up
    assert value(sev["[0.75,1.00]"]) == pytest.approx(2 / 3) and sev["[0.75,1.00]"]["n"] == 3  # 0.75, 0.9, 1.0


def test_same_scene_margin_is_a_paired_difference(world):
    """Hand case: ours 2.5/4 at severity >= 0.5 (see above); the other evaluator scores every violated
    clip 0.0 and every other clip 0.0, so it ties all 4 pairs: 0.5. Margin 0.125, and against itself
    exactly 0 in every resample (a paired bootstrap, not two independent ones)."""
    m, scores = world
    other = {k: 0.0 for k in scores}
    r = same_scene_margin(m, scores, other, severe=0.5, n_boot=200)
    assert r["value"] == pytest.approx(2.5 / 4 - 0.5) and r["n"] == 4
    assert r["low"] <= r["value"] <= r["high"]
    same = same_scene_margin(m, scores, scores, n_boot=200)
    assert same["value"] == 0 and same["low"] == 0 and same["high"] == 0
    flipped = same_scene_margin(m, scores, {k: -v for k, v in scores.items()}, severe=0.0, n_boot=50)
    assert flipped["value"] == pytest.approx(3.5 / 5 - 1.5 / 5) and flipped["n"] == 5


def test_violated_twin_pairs_are_the_counted_pairs(world):
    """The table behind same-scene accuracy: each violated clip against its own scene's plausible clip, never a
    quality clip or another scene's, with the metadata a per-family breakdown needs."""
    m, scores = world
    ss = violated_twin_pairs(m, scores)
    assert sorted(zip(ss["id_a"], ss["id_b"])) == [
        ("v0a", "p0"),
        ("v0b", "p0"),
        ("v1a", "p1"),
        ("v1b", "p1"),
        ("v2a", "p2"),
    ]
    assert {"family_a", "subtype_a", "severity_a", "score_a", "score_b"} <= set(ss.columns)
    row = ss.set_index("id_a").loc["v1b"]
    assert row["family_a"] == "gravity" and row["score_a"] == 1.4 and row["score_b"] == 0.2
    # unscored clips drop out of the table, as they do from the figures
    assert "v2a" not in set(violated_twin_pairs(m, {k: v for k, v in scores.items() if k != "p2"})["id_a"])


def test_world_pair_table_and_level_figures(world):
    m, scores = world
    r = evaluate(m, scores, "world", **BOOT)
    assert value(r["gen_gen_accuracy"]) == 1.0 and r["gen_gen_accuracy"]["n"] == 2
    assert value(r["real_real_median_gap"]) == pytest.approx(0.2)
    assert value(r["cross_scene_accuracy"]) == 0.0 and r["cross_scene_accuracy"]["from"] == "pairs"
    assert value(r["median_score_plausible"]) == pytest.approx(0.1)
    assert value(r["median_score_severity_ge_0.8"]) == pytest.approx((0.05 + 1.4) / 2)
    ids_pv = [row["id"] for row, _ in WORLD if row["metadata"]["variant"] != "quality"]
    y = [m.videos.set_index("id").at[i, "metadata"]["variant"] == "violated" for i in ids_pv]
    assert value(r["auroc_plausible_vs_violated"]) == pytest.approx(roc_auc_score(y, [scores[i] for i in ids_pv]))
    assert value(r["score_range"]["share_outside_01"]) == pytest.approx(2 / 11)
    assert value(r["score_range"]["share_above_1"]) == pytest.approx(1 / 11)
    assert value(r["coverage"]) == 1.0
    json.dumps(r, allow_nan=False)


def test_world_quality_confound(world):
    m, scores = world
    q = evaluate(m, scores, "world", **BOOT)["quality_confound"]
    assert q == evaluate(m, scores, "quality", **BOOT)
    # q0>v0b 1; q1>v1a 1, q1<v1b 0; q2 == v2a 0.5
    assert value(q["quality_outscores_violation_severity_ge_0.5"]) == pytest.approx(2.5 / 4)
    by = q["quality_outscores_violation_severity_ge_0.5_by_degradation"]
    assert value(by["blur"]) == 0.75 and value(by["noise"]) == 0.5
    assert value(q["quality_shift"]) == pytest.approx((0.2 + 0.7 + 0.7) / 3)
    assert value(q["quality_shift_by_degradation"]["blur"]) == pytest.approx(0.45)
    assert value(q["violation_shift"]) == pytest.approx((0.4 - 0.05 + 0 + 1.2 + 0.7) / 5)
    assert value(q["violation_shift_severity_ge_0.5"]) == pytest.approx((-0.05 + 0 + 1.2 + 0.7) / 4)


def test_world_without_pairs_derives_cross_scene_and_drops_unscored(tmp_path):
    m = write_manifest(tmp_path / "w", [r for r, _ in WORLD])
    scores = {r["id"]: s for r, s in WORLD if r["id"] != "p2"}
    r = evaluate(m, scores, "world", **BOOT)
    assert r["cross_scene_accuracy"]["from"] == "videos" and r["cross_scene_accuracy"]["n"] == 5
    assert r["same_scene_accuracy"]["n"] == 4  # v2a lost its twin
    assert value(r["coverage"]) == pytest.approx(10 / 11)
    assert r["gen_gen_accuracy"]["n"] == 0 and value(r["gen_gen_accuracy"]) is None
    assert evaluate(m, scores, "world", **BOOT) == r  # derived pairs are deterministic


def test_world_twins_are_per_style(tmp_path):
    rows = [_video("p", "plausible", "s", 0.5), _video("v", "violated", "s", 0.4, "teleport", 0.9)]
    rows[1][0]["metadata"]["style"] = "other"  # different style: not a twin
    m = write_manifest(tmp_path / "w", [r for r, _ in rows])
    assert evaluate(m, {"p": 0.5, "v": 0.4}, "world", **BOOT)["same_scene_accuracy"]["n"] == 0
    r = evaluate(m, {"p": 0.5, "v": 0.4}, "world", twin_keys=["scene"], **BOOT)
    assert value(r["same_scene_accuracy"]) == 0.0


# --- generic protocols ----------------------------------------------------------------------


@pytest.fixture
def paired(tmp_path):
    ids = [f"x{i}" for i in range(8)]
    videos = [
        {
            "id": i,
            "path": f"{i}.mp4",
            "source": "bench",
            "is_real": k % 2 == 1,
            "split": "test",
            "metadata": {"pc": 5 - k % 5},
        }
        for k, i in enumerate(ids)
    ]
    pairs = [
        _pair("x0", "x1", 1.0, "real_vs_generated", "same_first_frame"),  # 0.8 > 0.1
        _pair("x2", "x3", 1.0, "real_vs_generated", "same_first_frame"),  # 0.4 == 0.4: tie
        _pair("x4", "x5", 0.0, "generated_vs_generated", "same_prompt"),  # 0.3 < 0.9 correct
        _pair("x6", "x7", 1.0, "generated_vs_generated", "same_prompt"),  # 0.2 < 0.6 wrong
        _pair("x0", "x7", 0.5, "generated_vs_generated", "same_prompt"),  # human tie, |m| = 0.2
    ]
    scores = dict(zip(ids, [0.8, 0.1, 0.4, 0.4, 0.3, 0.9, 0.2, 0.6]))
    return write_manifest(tmp_path / "b", videos, pairs), scores


def test_pairwise_protocol_ties_and_breakdown(paired):
    m, scores = paired
    r = evaluate(m, scores, "pairwise", **BOOT)
    assert value(r["pairwise_accuracy"]) == pytest.approx(2.5 / 4) and r["pairwise_accuracy"]["n"] == 4
    assert r["pairwise_accuracy"]["skipped_label_ties"] == 1
    assert value(r["pairwise_accuracy_by_kind"]["real_vs_generated"]) == 0.75
    strict = evaluate(m, scores, "pairwise", tie_credit=0.0, kind="real_vs_generated", **BOOT)
    assert value(strict["pairwise_accuracy"]) == 0.5 and "pairwise_accuracy_by_kind" not in strict


def test_videoalign_and_monetbench_protocols_match_metrics(paired):
    m, scores = paired
    p = m.pairs
    h = M.human_preference(p["label"])
    d = np.array([scores[a] - scores[b] for a, b in zip(p["a"], p["b"])])
    va = evaluate(m, scores, "videoalign", **BOOT)
    assert value(va["accuracy_with_ties"]) == M.tie_calibrated_accuracy(h, d)
    assert value(va["accuracy_with_ties"]) == pytest.approx(3 / 5)  # tie pair (|m| 0) + both C stay C
    assert va["accuracy_with_ties"]["n"] == 5
    # without ties: the exact model tie (x2, x3) is discordant: C 2 of 4
    assert value(va["accuracy_without_ties"]) == 0.5 and va["accuracy_without_ties"]["n"] == 4
    mb = evaluate(m, scores, "monetbench", **BOOT)
    assert mb["tau_star"] == va["accuracy_with_ties"] and mb["diff_star_star"] == va["accuracy_without_ties"]


def test_pid_protocol(paired):
    m, scores = paired
    r = evaluate(m, scores, "pid", threshold=0.4, **BOOT)
    plausible = m.videos["is_real"].to_numpy()  # no variant / anchor: real = plausible
    s = m.videos["id"].map(scores).to_numpy()
    assert value(r["auroc"]) == pytest.approx(roc_auc_score(~plausible, s))
    expect = M.pid_metrics(plausible, s, 0.4)
    for k in ("acc_real", "acc_implausible", "accuracy", "f1"):
        assert value(r[k]) == pytest.approx(expect[k])


def test_correlation_protocol_direction(paired):
    m, scores = paired
    s = m.videos["id"].map(scores).to_numpy()
    pc = np.array([v["pc"] for v in m.videos["metadata"]], dtype=float)
    r = evaluate(m, scores, "correlation", human_key="pc", human_higher_means="plausible", **BOOT)
    assert value(r["spearman"]) == pytest.approx(stats.spearmanr(-pc, s).statistic)
    assert value(r["kendall"]) == pytest.approx(stats.kendalltau(-pc, s).statistic)
    same = evaluate(m, scores, "correlation", human_key="pc", **BOOT)
    assert value(same["pearson"]) == pytest.approx(-value(r["pearson"]))
    with pytest.raises(ValueError, match="human_higher_means"):
        evaluate(m, scores, "correlation", human_key="pc", human_higher_means="up")


def test_unknown_protocol_and_option(paired):
    m, scores = paired
    with pytest.raises(ValueError, match="unknown protocol"):
        evaluate(m, scores, "nope")
    with pytest.raises(TypeError):
        evaluate(m, scores, "pairwise", threshold=0.3)


def test_flatten_metrics(world):
    m, scores = world
    flat = flatten_metrics(evaluate(m, scores, "world", **BOOT))
    assert "same_scene_accuracy_by_family.teleport" in flat
    assert "quality_confound.quality_shift_by_degradation.noise" in flat
    assert all("value" in v for v in flat.values())


# --- benchmark configs -------------------------------------------------------------------------


CONFIGS = sorted((REPO / "configs" / "benchmark").glob("*.yaml"))


def test_all_benchmark_configs_load():
    names = {p.stem for p in CONFIGS}
    assert names >= {
        "world_test",
        "world_heldout_family",
        "world_heldout_style",
        "world_quality",
        "real_footage",
        "implausibench",
        "videophy2",
        "pid",
        "videofeedback2",
        "monetbench",
        "rapidata_i2v",
        "videogen_rewardbench",
    }
    for path in CONFIGS:
        b = load_benchmark(path, root=REPO)
        assert b.name == path.stem and set(b.protocols) <= set(PROTOCOLS)
    assert set(load_benchmark("videophy2", root=REPO).protocols) == {"correlation", "pairwise"}
    with pytest.raises(
        FileNotFoundError, match=r"benchmark 'pid': no manifest at .*prepared/pid; write it with its converter"
    ):
        load_benchmark(REPO / "configs" / "benchmark" / "pid.yaml", root=REPO / "not_prepared").load_manifest()


def test_benchmark_split_where_and_kwargs(world, tmp_path):
    m, scores = world
    extra = [
        _video("k0", "plausible", "k", 0.0, source="skvideo")[0],
        _video("t0", "plausible", "s0", 0.0, split="train")[0],
    ]
    write_manifest(m.root, [r for r, _ in WORLD] + extra, WORLD_PAIRS)
    b = load_benchmark(REPO / "configs" / "benchmark" / "world_test.yaml", root=REPO)
    b.manifest = m.root
    loaded = b.load_manifest()
    assert set(loaded.videos["id"]) == {r["id"] for r, _ in WORLD}
    res = b.evaluate(scores, n_boot=50)
    assert value(res["world"]["same_scene_accuracy"]) == pytest.approx(0.7)


# --- external scores -----------------------------------------------------------------------------


def _write_csv(path: Path, rows) -> Path:
    path.write_text("video,score\n" + "".join(f"{v},{s}\n" for v, s in rows), encoding="utf-8")
    return path


def test_external_csv_gives_same_figures_as_direct_scores(world, tmp_path):
    m, scores = world
    # every naming style: id, manifest path, file name, stem
    names = {"p0": "p0", "v0a": "clips/v0a.mp4", "v0b": "v0b.mp4"}
    rows = [(names.get(k, f"{k}.mp4"), repr(v)) for k, v in scores.items()]
    ext = read_external_scores(_write_csv(tmp_path / "s.csv", rows), m)
    assert ext == scores
    assert evaluate(m, ext, "world", **BOOT) == evaluate(m, scores, "world", **BOOT)


def test_external_csv_flips_plausibility_scores(world, tmp_path):
    m, scores = world
    rows = [(k, 5 - v) for k, v in scores.items()]  # a "higher = more plausible" evaluator
    ext = read_external_scores(_write_csv(tmp_path / "s.csv", rows), m, higher_means="plausible")
    ours = evaluate(m, scores, "world", **BOOT)
    theirs = evaluate(m, ext, "world", **BOOT)
    assert theirs["same_scene_accuracy"] == ours["same_scene_accuracy"]
    assert theirs["auroc_plausible_vs_violated"] == ours["auroc_plausible_vs_violated"]


def test_external_csv_errors_name_file_and_line(world, tmp_path):
    m, _ = world
    bad = _write_csv(tmp_path / "bad.csv", [("p0", 0.1), ("nosuch.mp4", 0.2)])
    with pytest.raises(ExternalScoresError, match=r"bad\.csv:3: video 'nosuch\.mp4' is not in the manifest"):
        read_external_scores(bad, m)
    bad = _write_csv(tmp_path / "nan.csv", [("p0", "high")])
    with pytest.raises(ExternalScoresError, match=r"nan\.csv:2: score 'high'"):
        read_external_scores(bad, m)
    bad = _write_csv(tmp_path / "dup.csv", [("p0", 0.1), ("clips/p0.mp4", 0.2)])
    with pytest.raises(ExternalScoresError, match=r"dup\.csv:3: .*already scored on line 2"):
        read_external_scores(bad, m)
    (tmp_path / "hdr.csv").write_text("name,value\np0,1\n")
    with pytest.raises(ExternalScoresError, match=r"hdr\.csv:1: expected columns"):
        read_external_scores(tmp_path / "hdr.csv", m)


def test_external_csv_reports_missing_and_ambiguous(world, tmp_path, caplog):
    m, _ = world
    with caplog.at_level(logging.WARNING):
        ext = read_external_scores(_write_csv(tmp_path / "s.csv", [("p0", 0.1)]), m)
    assert "10 of 11 manifest videos have no score" in caplog.text
    assert missing_videos(ext, m) == [r["id"] for r, _ in WORLD if r["id"] != "p0"]
    rows = [
        {"id": "a", "path": "x/clip.mp4", "source": "s", "is_real": True},
        {"id": "b", "path": "y/clip.mp4", "source": "s", "is_real": False},
    ]
    amb = write_manifest(tmp_path / "amb", rows)
    with pytest.raises(ExternalScoresError, match="ambiguous"):
        read_external_scores(_write_csv(tmp_path / "a.csv", [("clip.mp4", 1)]), amb)
