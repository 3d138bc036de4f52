"""`phyprobe judge compare`'s paired test on real eval.py runs of a real tiny world: evaluators with known
per-video scores (the true ordering, its reverse, noise, a copy) on the same benchmark pairs."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest

from phyprobe.cli import main
from phyprobe.data.manifest import Manifest
from phyprobe.errors import UserError
from phyprobe.eval.protocols import flatten_metrics
from phyprobe.eval.run import run_eval
from phyprobe.judges.compare import paired_accuracy
from phyprobe.judges.run import COMPARE_MARKER
from phyprobe.testing.configs import compose_eval

WORLD = ("world.same_scene_accuracy", "world.same_scene_accuracy_severity_ge_0.5")
N_BOOT = 2000


def _eval(out, world, scores: dict, overrides=()):
    """eval.py on ``world`` with ``scores`` given as an external CSV (named after the run, so the evaluators differ),
    on world_test's figures over every split of the tiny world (48 twin pairs, 28 at severity >= 0.5)."""
    csv = out.with_suffix(".csv")
    pd.DataFrame({"video": list(scores), "score": list(scores.values())}).to_csv(csv, index=False)
    common = ["benchmark=world_test", f"benchmark.manifest={world}", "benchmark.split=null", "margins_over=[]"]
    common.append("report=false")
    run_eval(compose_eval(out, [*common, f"scores_csv={csv}", *overrides]))
    return out


@pytest.fixture(scope="module")
def runs(tiny_world, tmp_path_factory):
    root = tmp_path_factory.mktemp("paired")
    videos = Manifest.load(tiny_world).videos
    videos = videos[videos["source"] == "world"]
    truth = dict(zip(videos["id"], videos["magnitude"].astype(float)))
    rng = np.random.default_rng(0)
    violated = videos["id"][videos["magnitude"] > 0.5].iloc[0]  # one severe violated clip, to leave out
    return {
        "oracle": _eval(root / "oracle", tiny_world, truth),
        "reversed": _eval(root / "reversed", tiny_world, {v: -s for v, s in truth.items()}),
        "random": _eval(root / "random", tiny_world, {v: float(rng.normal()) for v in truth}),
        "copy": _eval(root / "copy", tiny_world, dict(truth)),
        "partial": _eval(root / "partial", tiny_world, {v: s for v, s in truth.items() if v != violated}),
        "dropped": violated,
    }


def _figure(run_dir, name: str) -> dict:
    return flatten_metrics(json.loads((run_dir / "metrics.json").read_text())["results"])[name]


def _accuracy(t: pd.DataFrame, figure: str, evaluator: str) -> float:
    rows = t[t["figure"] == figure]
    got = {*rows.loc[rows["A"] == evaluator, "accuracy_A"], *rows.loc[rows["B"] == evaluator, "accuracy_B"]}
    assert len(got) == 1  # the same accuracy in every row the evaluator is in
    return got.pop()


def _name(run_dir) -> str:
    return json.loads((run_dir / "metrics.json").read_text())["evaluator"]


def test_true_ordering_beats_reversed_and_random_scores_on_the_runs_own_pairs(runs):
    dirs = [runs["random"], runs["oracle"], runs["reversed"]]
    t = paired_accuracy(dirs, n_boot=N_BOOT)
    assert tuple(t["figure"].unique()) == WORLD and len(t) == 2 * 3  # every pair of three evaluators, per figure
    oracle, reverse, rand = (_name(runs[k]) for k in ("oracle", "reversed", "random"))
    for figure in WORLD:
        for d in dirs:  # full coverage: each accuracy is the run's own metrics.json figure, on its n pairs
            own = _figure(d, figure)
            assert _accuracy(t, figure, _name(d)) == pytest.approx(own["value"], abs=1e-12)
            assert (t.loc[t["figure"] == figure, "pairs"] == own["n"]).all()
        rows = t[t["figure"] == figure]
        assert (rows[["left_out_A", "left_out_B"]] == 0).all().all()
        assert list(rows["A"]) == [oracle, oracle, rand]  # A is the better-ranked: A - B >= 0
        for a, b in ((oracle, reverse), (oracle, rand), (rand, reverse)):
            r = rows[(rows["A"] == a) & (rows["B"] == b)].iloc[0]
            assert r["diff"] == pytest.approx(r["accuracy_A"] - r["accuracy_B"])
            assert r["low"] <= r["diff"] <= r["high"] and r["p"] <= r["p_holm"] <= 1.0
        top = rows[(rows["A"] == oracle) & (rows["B"] == reverse)].iloc[0]
        assert top["accuracy_A"] == 1.0 and top["accuracy_B"] == 0.0 and top["diff"] == 1.0
        assert top["low"] > 0 and top["p_holm"] < 0.05 and top["significant"]
        vs_random = rows[(rows["A"] == oracle) & (rows["B"] == rand)].iloc[0]
        assert vs_random["diff"] > 0 and vs_random["low"] > 0 and vs_random["significant"]


def test_identical_scores_differ_by_exactly_zero_with_p_one(runs):
    t = paired_accuracy([runs["oracle"], runs["copy"]], n_boot=N_BOOT)
    assert len(t) == len(WORLD)
    assert (t["diff"] == 0).all() and (t["low"] == 0).all() and (t["high"] == 0).all()
    assert (t["p"] == 1.0).all() and (t["p_holm"] == 1.0).all() and not t["significant"].any()
    assert (t["accuracy_A"] == t["accuracy_B"]).all()


def test_pairs_a_run_did_not_score_are_left_out_for_all_and_counted(runs):
    t = paired_accuracy([runs["oracle"], runs["partial"]], n_boot=N_BOOT)
    partial = _name(runs["partial"])
    for figure in WORLD:
        full, own = _figure(runs["oracle"], figure), _figure(runs["partial"], figure)
        r = t[t["figure"] == figure].iloc[0]
        left = r["left_out_A"] if r["A"] == partial else r["left_out_B"]
        other = r["left_out_B"] if r["A"] == partial else r["left_out_A"]
        assert left > 0 and other == 0  # the dropped clip's twin pairs
        assert r["pairs"] == own["n"] == full["n"] - left
        assert _accuracy(t, figure, partial) == pytest.approx(own["value"], abs=1e-12)


def test_a_pairwise_protocol_next_to_the_world_is_tested_on_its_own_pairs(tiny_world, tmp_path):
    both = ["~benchmark.kwargs", "benchmark.protocol={world: {severe: 0.5}, pairwise: {}}"]
    videos = Manifest.load(tiny_world).videos
    rng = np.random.default_rng(1)
    dirs = [
        # coarse scores: exact ties on some labelled pairs, which earn the protocol's tie credit (0.5 here)
        _eval(tmp_path / "coarse", tiny_world, dict(zip(videos["id"], np.floor(videos["magnitude"] * 2) / 2)), both),
        _eval(tmp_path / "noise", tiny_world, {v: float(rng.normal()) for v in videos["id"]}, both),
    ]
    t = paired_accuracy(dirs, n_boot=500)
    assert list(t["figure"]) == [*WORLD, "pairwise.pairwise_accuracy"]
    for d in dirs:
        own = _figure(d, "pairwise.pairwise_accuracy")
        assert own["n"] > 0 and _accuracy(t, "pairwise.pairwise_accuracy", _name(d)) == pytest.approx(own["value"])
    assert t.iloc[-1]["pairs"] == _figure(dirs[0], "pairwise.pairwise_accuracy")["n"]


def test_cli_prints_and_writes_the_paired_table_after_the_figures(runs, tmp_path, capsys):
    out = tmp_path / "tables" / "compare.md"
    args = ["judge", "compare", str(runs["oracle"]), str(runs["random"]), "--n-boot", "300", "--seed", "3"]
    assert main([*args, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    written = out.read_text()
    assert written.startswith(COMPARE_MARKER) and written.split("\n", 2)[2] == printed
    assert [p.name for p in out.parent.iterdir()] == ["compare.md"]  # no .tmp left
    assert main([*args, "--out", str(out)]) == 0  # its own file: rewritten
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    with pytest.raises(SystemExit):
        main([*args, "--out", str(notes)])
    assert "holds something other than a judge comparison" in capsys.readouterr().err
    assert notes.read_text() == "my notes\n"  # a file of the user's: byte-identical
    figures, paired = printed.split("Paired test of pairwise accuracy on world_test", 1)
    assert "| world.same_scene_accuracy " in figures and "cost: seconds / video" in figures
    assert "300 bootstrap resamples" in paired and "| A − B [95 %]" in paired
    assert paired.count("| world.same_scene_accuracy") == 2  # one pair of evaluators per figure
    t = paired_accuracy([runs["oracle"], runs["random"]], n_boot=300, seed=3)
    assert f"{t['diff'].iloc[0]:+.3f} [{t['low'].iloc[0]:+.3f}, {t['high'].iloc[0]:+.3f}]" in paired


def test_runs_on_other_benchmarks_or_manifests_or_files_missing_end_in_one_line(runs, tiny_world, tmp_path, capsys):
    videos = Manifest.load(tiny_world).videos
    truth = dict(zip(videos["id"], videos["magnitude"].astype(float)))
    other = _eval(tmp_path / "heldout", tiny_world, truth, ["benchmark=world_heldout_style"])
    copy = tmp_path / "world_copy"  # the same world at another path: another build, as far as a run can tell
    copy.mkdir()
    for f in ("videos.jsonl", "pairs.jsonl"):
        shutil.copy(tiny_world / f, copy / f)
    moved = _eval(tmp_path / "moved", copy, truth)
    for bad, field in ((other, "benchmark"), (moved, "manifest")):
        with pytest.raises(UserError, match=f"different benchmarks or manifests \\({field}") as e:
            paired_accuracy([runs["oracle"], bad], n_boot=10)
        assert "\n" not in str(e.value) and str(runs["oracle"]) in str(e.value) and str(bad) in str(e.value)
    with pytest.raises(SystemExit) as e:
        main(["judge", "compare", str(runs["oracle"]), str(moved)])
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1 and "different benchmarks or manifests (manifest" in err

    no_scores = tmp_path / "no_scores"
    shutil.copytree(runs["copy"], no_scores)
    (no_scores / "scores.csv").unlink()
    with pytest.raises(UserError, match="no_scores/scores.csv: not there"):
        paired_accuracy([runs["oracle"], no_scores])
    with pytest.raises(UserError, match="a run is given twice"):
        paired_accuracy([runs["oracle"], runs["copy"], runs["oracle"]])
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match="empty/metrics.json: not there"):
        paired_accuracy([tmp_path / "empty", runs["oracle"]])
    twice = tmp_path / "twice"  # every id's row written twice: which score counts is not the comparison's to pick
    shutil.copytree(runs["copy"], twice)
    rows = (twice / "scores.csv").read_text().splitlines()
    (twice / "scores.csv").write_text("\n".join([rows[0], *rows[1:], *rows[1:]]) + "\n")
    with pytest.raises(UserError, match=r"twice/scores.csv: video '.*' is scored more than once"):
        paired_accuracy([runs["oracle"], twice])


def test_a_run_whose_scores_changed_after_it_was_evaluated_is_refused(runs, tmp_path):
    """The oracle's scores negated in its scores.csv after eval.py recorded its figures: the paired test would rank
    it by the new scores and the table by the old, so it is refused, naming the file and the two figures."""
    negated = tmp_path / "negated"
    shutil.copytree(runs["oracle"], negated)
    s = pd.read_csv(negated / "scores.csv")
    s["raw_score"] = -s["raw_score"]
    s.to_csv(negated / "scores.csv", index=False)
    with pytest.raises(UserError, match=r"negated/scores.csv: gives 0\.\d+ for world\.same_scene_accuracy.*records"):
        paired_accuracy([runs["random"], negated], n_boot=10)
    paired_accuracy([runs["random"], runs["oracle"]], n_boot=10)  # the same run as evaluated passes
