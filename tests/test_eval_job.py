"""eval.py's job on a real tiny world: external CSV scores and Python scores give the same figures."""

import json

import numpy as np
import pandas as pd
import pytest
from omegaconf import OmegaConf

from phyprobe.data.manifest import Manifest
from phyprobe.eval.protocols import load_benchmark
from phyprobe.eval.run import run_eval
from phyprobe.testing.configs import CONFIGS, compose_eval


def test_external_csv_matches_direct_evaluation(tiny_world, tmp_path):
    manifest = load_benchmark("world_test", root=CONFIGS.parent).restrict(Manifest.load(tiny_world))
    rng = np.random.default_rng(0)
    scores = {v: float(rng.normal()) for v in manifest.videos["id"]}
    # External evaluators often score plausibility (higher = better) and name videos by path:
    csv = tmp_path / "external.csv"
    pd.DataFrame({"video": list(manifest.videos["path"]), "score": [-scores[v] for v in manifest.videos["id"]]}).to_csv(
        csv, index=False
    )
    cfg = compose_eval(
        tmp_path / "out",
        [
            "benchmark=world_test",
            f"benchmark.manifest={tiny_world}",
            f"scores_csv={csv}",
            "higher_means=plausible",
            "report=false",
            f"paths.cache_dir={tmp_path / 'cache'}",
        ],
    )
    got = run_eval(cfg)["results"]
    bench = load_benchmark({**OmegaConf.to_container(cfg.benchmark), "manifest": str(tiny_world)})
    m = bench.load_manifest()
    want = bench.evaluate({v: scores[v] for v in m.videos["id"]}, manifest=m, n_boot=200, seed=0)
    assert json.loads(json.dumps(got)) == json.loads(json.dumps(want))
    assert json.loads((tmp_path / "out" / "metrics.json").read_text())["results"] == json.loads(json.dumps(want))


def test_motion_baseline_runs_through_eval(tiny_world, tmp_path):
    cfg = compose_eval(tmp_path, ["benchmark=world_test", f"benchmark.manifest={tiny_world}", "baseline=motion"])
    res = run_eval(cfg)
    acc = res["results"]["world"]["same_scene_accuracy"]
    assert res["evaluator"] == "baseline: motion" and acc["n"] > 0 and 0.0 <= acc["value"] <= 1.0
    assert (tmp_path / "report.md").is_file()


def test_vjepa2_surprisal_baseline_runs_through_eval(tiny_world, tmp_path):
    """The paper's baseline end to end on real mp4s: the encoder's own sampling and preprocessing, its
    predictor, the benchmark's protocol (a random-initialised tiny V-JEPA 2 stands in for the weights)."""
    cfg = compose_eval(
        tmp_path,
        [
            "benchmark=world_test",
            f"benchmark.manifest={tiny_world}",
            "baseline=vjepa2_surprisal",
            "vjepa2_surprisal.weights=null",
            "vjepa2_surprisal.tiny=true",
            "report=false",
        ],
    )
    res = run_eval(cfg)
    acc = res["results"]["world"]["same_scene_accuracy"]
    assert res["evaluator"] == "baseline: vjepa2_surprisal" and acc["n"] > 0 and 0.0 <= acc["value"] <= 1.0
    scores = pd.read_csv(tmp_path / "scores.csv")
    assert scores["raw_score"].notna().all() and scores["raw_score"].nunique() > 1


def test_unknown_baseline_names_the_ones_that_exist(tiny_world, tmp_path):
    cfg = compose_eval(tmp_path, ["benchmark=world_test", f"benchmark.manifest={tiny_world}", "baseline=vjepa"])
    with pytest.raises(ValueError, match="motion.*vjepa2_surprisal"):
        run_eval(cfg)


def test_scorer_reads_videos_with_another_clip_spec(tiny_world, tmp_path):
    """`clip=` makes eval read the videos as asked, not as the scorer was trained: the features are extracted
    anew at that clip length (their own cache entry) and the scores move; without it, the scorer's own spec."""
    from phyprobe.testing.scorers import make_scorer

    scorer = make_scorer(tmp_path / "scorer", num_frames=4)
    common = [
        "benchmark=world_test",
        f"benchmark.manifest={tiny_world}",
        f"scorer={scorer}",
        "report=false",
        f"paths.cache_dir={tmp_path / 'cache'}",
        "extract.num_workers=0",
    ]
    own = run_eval(compose_eval(tmp_path / "own", common))
    other = run_eval(compose_eval(tmp_path / "other", [*common, "+clip.num_frames=6"]))
    specs = [json.loads(p.read_text()) for p in (tmp_path / "cache").glob("*/spec.json")]
    # GeoPhys's features (margins_over) sit beside the scorer's, at their own clip length
    assert sorted(s["clip"]["num_frames"] for s in specs if s["encoder"]["name"] != "trajectory") == [4, 6]
    a = pd.read_csv(tmp_path / "own" / "scores.csv").set_index("id")["raw_score"]
    b = pd.read_csv(tmp_path / "other" / "scores.csv").set_index("id")["raw_score"]
    assert list(a.index) == list(b.index) and np.isfinite(b).all() and not np.allclose(a, b)
    for res in (own, other):
        assert res["results"]["world"]["same_scene_accuracy"]["n"] > 0


def test_clip_override_errors_name_the_problem(tiny_world, tmp_path):
    from phyprobe.testing.scorers import make_scorer

    scorer = make_scorer(tmp_path / "scorer", num_frames=4)
    base = ["benchmark=world_test", f"benchmark.manifest={tiny_world}", "report=false"]
    with pytest.raises(ValueError, match="no meaning for baseline="):
        run_eval(compose_eval(tmp_path / "a", [*base, "baseline=motion", "+clip.num_frames=8"]))
    with pytest.raises(ValueError, match="clip=.*frames"):
        run_eval(compose_eval(tmp_path / "b", [*base, f"scorer={scorer}", "+clip.frames=8"]))


def test_margin_over_the_motion_heuristic_is_paired_on_the_same_twins(tiny_world, tmp_path):
    """`margins_over` scores the heuristic on the benchmark's videos and reports the evaluator's paired margin:
    the heuristic against itself is exactly 0, and an evaluator that reads the severity off the manifest beats
    it by exactly what the heuristic misses."""
    manifest = load_benchmark("world_test", root=CONFIGS.parent).restrict(Manifest.load(tiny_world))
    common = [
        "benchmark=world_test",
        f"benchmark.manifest={tiny_world}",
        f"paths.baseline_cache_dir={tmp_path / 'bcache'}",
        f"paths.cache_dir={tmp_path / 'cache'}",  # GeoPhys's features (margins_over)
    ]
    motion = run_eval(compose_eval(tmp_path / "motion", [*common, "baseline=motion", "report=false"]))
    assert "margins" not in motion  # a baseline is not measured against itself
    heuristic = pd.read_csv(tmp_path / "motion" / "scores.csv")
    oracle = {v: float(s) for v, s in zip(manifest.videos["id"], manifest.videos["magnitude"])}
    for name, scores in (("same", dict(zip(heuristic["id"], heuristic["raw_score"]))), ("oracle", oracle)):
        csv = tmp_path / f"{name}.csv"
        pd.DataFrame({"video": list(scores), "score": list(scores.values())}).to_csv(csv, index=False)
        res = run_eval(
            compose_eval(tmp_path / name, [*common, f"scores_csv={csv}", f"report={str(name == 'oracle').lower()}"])
        )
        margin = res["margins"]["motion"]
        own = res["results"]["world"]["same_scene_accuracy_severity_ge_0.5"]["value"]
        base = res["baselines"]["motion"]["world"]["same_scene_accuracy_severity_ge_0.5"]["value"]
        assert base == motion["results"]["world"]["same_scene_accuracy_severity_ge_0.5"]["value"]
        assert margin["value"] == pytest.approx(own - base)
        if name == "same":
            assert margin["value"] == 0.0 and margin["low"] == margin["high"] == 0.0
        else:
            assert (
                own == 1.0
                and margin["value"] == pytest.approx(1.0 - base)
                and margin["low"] <= margin["value"] <= margin["high"]
            )
            assert (
                f"Paired margin over the motion baseline (same-scene accuracy at the benchmark's severity threshold): {margin['value']:.3f}"
                in (tmp_path / name / "report.md").read_text()
            )
    with pytest.raises(ValueError, match="margins_over: unknown baseline"):
        run_eval(
            compose_eval(
                tmp_path / "bad",
                [*common, "scores_csv=" + str(tmp_path / "same.csv"), "margins_over=[motionn]", "report=false"],
            )
        )
