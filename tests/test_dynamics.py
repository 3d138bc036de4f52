"""The self-supervised dynamics encoder: fitted through train_dynamics.py on plausible clips, then frozen."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import TINY_WORLDS
from hydra.errors import InstantiationException
from hydra.utils import instantiate
from omegaconf import OmegaConf, open_dict
from safetensors.torch import load_file, save_file

from phyprobe import Scorer
from phyprobe.data.manifest import Manifest
from phyprobe.encoders import WeightsNotFoundError, from_config
from phyprobe.errors import InvalidOption
from phyprobe.io.video import ClipSpec, decode_clip
from phyprobe.testing.configs import CONFIGS, TOY, compose_train
from phyprobe.testing.scorers import assert_training_scores
from phyprobe.testing.videos import write_toy_manifest
from phyprobe.training.head_training import head_groups
from phyprobe.training.pipeline import train

ROOT = Path(__file__).resolve().parents[1]
FRAMES = 12
SIZE = 64


@pytest.fixture(scope="module")
def manifest(tmp_path_factory):
    root = tmp_path_factory.mktemp("dyn_manifest")
    write_toy_manifest(root, num_scenes=18, frames=FRAMES, seed=3)
    return root


@pytest.fixture(scope="module")
def checkpoint(manifest, tmp_path_factory):
    """Fitted through the real entry point, as a user runs it."""
    out = tmp_path_factory.mktemp("dyn") / "ckpt"
    cmd = [
        sys.executable,
        str(ROOT / "train_dynamics.py"),
        "data=manifest",
        f"data.source.path={manifest}",
        f"clip.num_frames={FRAMES}",
        f"base.image_size={SIZE}",
        "base.grid=2",
        "predictor.epochs=150",
        "predictor.hidden=64",
        "extract.num_workers=0",
        f"paths.output_dir={out}",
        f"paths.cache_dir={out.parent / 'cache'}",
    ]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=out.parent)
    assert res.returncode == 0, res.stderr[-3000:]
    return out


def test_entry_point_writes_safetensors_config_and_run_info(checkpoint, manifest):
    assert set(load_file(str(checkpoint / "model.safetensors"))) >= {"mean", "std", "net.0.weight"}
    cfg = json.loads((checkpoint / "config.json").read_text())
    assert cfg["base"]["name"] == "flow_stats" and cfg["clip"]["num_frames"] == FRAMES and cfg["context"] == 3
    m = Manifest.load(manifest)
    # Fitted on the plausible clips of the training split only; the validation split's picked the epoch.
    assert cfg["fit"]["num_train_clips"] == int(((m.videos["split"] == "train") & (m.videos["magnitude"] == 0)).sum())
    assert cfg["fit"]["num_val_clips"] == int(((m.videos["split"] == "val") & (m.videos["magnitude"] == 0)).sum())
    losses = [h["val_l1"] for h in cfg["history"]]
    assert cfg["fit"]["val_l1"] == min(losses) < losses[0]
    info = json.loads((checkpoint / "run_info.json").read_text())
    assert info["seed"] == 0 and "git_commit" in info["code"] and info["config"]["predictor"]["epochs"] == 150


def test_prediction_error_is_larger_on_a_teleport_than_on_its_plausible_twin(checkpoint, manifest):
    enc = from_config("dynamics", checkpoint=str(checkpoint))
    m = Manifest.load(manifest)
    k, d = enc.predictor.context, enc.predictor.dim  # the forecast base features: flow_stats' all but `stopped`
    assert d == enc.base.feature_dim - enc.base.grid**2

    def features(vid):
        x = enc.preprocess(decode_clip(m.video_path(f"v/{vid}.mp4"), ClipSpec(FRAMES)).frames)
        return enc(x[None])[0]

    scenes = sorted({md["scene"] for md in m.videos["metadata"]})
    for s in scenes:
        plausible, violated = features(f"s{s}_plausible"), features(f"s{s}_violated")
        assert plausible.shape == (FRAMES, 2 * d)
        err_p, err_v = plausible[:, :d].sum(1), violated[:, :d].sum(1)
        assert err_v.max() > 2 * err_p.max(), s  # the jump (frame 6) is what the dynamics did not predict
        assert err_v[FRAMES // 2 :].max() > err_v[: FRAMES // 2].max(), s  # ... and it is found after the jump
        torch.testing.assert_close(
            plausible[: k + 1, :d], plausible[:1, :d].expand(k + 1, -1)
        )  # no prediction yet: repeat
    # The second half is the base features as the cache stores them (float16), standardised as the predictor saw them.
    x = enc.preprocess(decode_clip(m.video_path("v/s0_plausible.mp4"), ClipSpec(FRAMES)).frames)[None]
    torch.testing.assert_close(enc(x)[0, :, d:], enc.predictor.standardise(enc.base(x).half().float())[0])
    # Derived from the stored base features or computed from the clip: one computation (what extraction relies on).
    torch.testing.assert_close(enc.derive(enc.base(x)[0].half()), enc(x)[0], rtol=0, atol=0)


@pytest.mark.parametrize("normalise", ["clip_motion", "feature_motion"])
def test_motion_normalised_errors_do_not_grow_with_the_clip_s_speed(normalise):
    """A predictor that only says "no change" misses exactly each step's change: raw, its error doubles when the
    clip moves twice as fast; relative to the clip's own motion it is m / (m + floor), near 1 at any speed."""
    enc = from_config(
        "dynamics",
        checkpoint=None,
        base={"name": "flow_stats", "image_size": 32, "grid": 2},
        include_base=False,
        base_dtype="float32",
        normalise=normalise,
    )
    for p in enc.predictor.net[-1].parameters():
        torch.nn.init.zeros_(p)  # the residual predictor now predicts the last step
    k, d, cols = enc.predictor.context, enc.predictor.dim, enc.predictor.columns
    t = torch.arange(10.0)[:, None]
    slow, fast = torch.zeros(2, 10, enc.base.feature_dim)  # base features: the forecast columns move, the rest do not
    slow[:, cols] = enc.predictor.mean + enc.predictor.std * torch.sin(
        t + torch.arange(d) * 0.1
    )  # 10 steps, every feature moves
    fast[:, cols] = enc.predictor.mean + enc.predictor.std * 2 * torch.sin(t + torch.arange(d) * 0.1)
    raw = from_config(
        "dynamics",
        checkpoint=None,
        base={"name": "flow_stats", "image_size": 32, "grid": 2},
        include_base=False,
        base_dtype="float32",
    )
    raw.predictor.load_state_dict(enc.predictor.state_dict())
    torch.testing.assert_close(raw.derive(fast)[k:].mean(), 2 * raw.derive(slow)[k:].mean())
    for clip in (slow, fast):
        moved = (clip[k:, cols] - clip[k - 1 : -1, cols]).div(enc.predictor.std).abs()
        m = moved.mean() if normalise == "clip_motion" else moved.mean(0)
        err = enc.derive(clip)[k:]
        torch.testing.assert_close(err.mean(0) if normalise == "feature_motion" else err.mean(), m / (m + 0.1))
    assert abs(enc.derive(fast)[k:].mean() - enc.derive(slow)[k:].mean()) < 0.1 * enc.derive(slow)[k:].mean()
    with pytest.raises(ValueError, match="normalise must be one of"):
        from_config("dynamics", checkpoint=None, normalise="per_pixel")


def test_signed_errors_put_a_stop_in_the_over_predicted_half():
    """A body that stops: the persistence predictor expected the last step's value again and got less, so the
    whole error is over-prediction (first half); a jump up is under-prediction; the halves add up to |error|."""
    spec = {"name": "flow_stats", "image_size": 32, "grid": 2}
    enc = from_config("dynamics", checkpoint=None, base=spec, include_base=False, base_dtype="float32", signed=True)
    plain = from_config("dynamics", checkpoint=None, base=spec, include_base=False, base_dtype="float32")
    for e in (enc, plain):
        for p in e.predictor.net[-1].parameters():
            torch.nn.init.zeros_(p)
    d, cols = enc.predictor.dim, enc.predictor.columns
    assert enc.feature_dim == 2 * d and enc.fingerprint() != plain.fingerprint()
    # options at their defaults stay out of the description, so scorers and caches made before they existed load
    assert not {"signed", "normalise"} & set(plain.options) and enc.options["signed"] is True
    assert cols[:2].tolist() == [0, 1]  # the first forecast features are the base's first two
    clip = torch.zeros(10, enc.base.feature_dim)
    clip[:, cols] = enc.predictor.mean
    clip[:6, 0] += 3 * enc.predictor.std[0]  # feature 0 drops at step 6 (a stop)
    clip[7:, 1] += 2 * enc.predictor.std[1]  # feature 1 jumps at step 7
    f = enc.derive(clip)
    over, under = f[:, :d], f[:, d:]
    assert over[6, 0] == pytest.approx(3) and under[6, 0] == 0 and under[7, 1] == pytest.approx(2) and over[7, 1] == 0
    assert over.sum() == pytest.approx(3) and under.sum() == pytest.approx(2)
    torch.testing.assert_close(over + under, plain.derive(clip))


def test_an_infilling_predictor_fills_smooth_motion_in_and_flags_a_jump(tmp_path):
    """With steps after the predicted one (``after``) and no learned correction, the predictor fills a step in as
    the mean of its neighbours: a feature that changes at a steady rate is filled in exactly where a forecast
    misses it by the rate at every step, and a one-step jump is missed at the jump and its two neighbours. The
    first ``context`` and last ``after`` steps repeat an error, and a checkpoint keeps ``after``."""
    spec = {"name": "flow_stats", "image_size": 32, "grid": 2}
    fill = from_config("dynamics", checkpoint=None, base=spec, include_base=False, base_dtype="float32", after=2)
    forecast = from_config("dynamics", checkpoint=None, base=spec, include_base=False, base_dtype="float32")
    for e in (fill, forecast):
        for p in e.predictor.net[-1].parameters():
            torch.nn.init.zeros_(p)
    k, d, cols = fill.predictor.context, fill.predictor.dim, fill.predictor.columns
    assert (
        fill.options["after"] == 2 and "after" not in forecast.options and fill.fingerprint() != forecast.fingerprint()
    )
    T = 12
    ramp = torch.zeros(T, fill.base.feature_dim)
    ramp[:, cols] = fill.predictor.mean + fill.predictor.std * 0.5 * torch.arange(float(T))[:, None]
    assert fill.predictor.errors(ramp[None]).shape == (1, T - k - 2, d)
    torch.testing.assert_close(fill.derive(ramp), torch.zeros(T, d))
    torch.testing.assert_close(forecast.derive(ramp), torch.full((T, d), 0.5))
    jump = torch.zeros(T, fill.base.feature_dim)
    jump[:, cols] = fill.predictor.mean
    jump[6, cols[0]] += 4 * fill.predictor.std[0]  # feature 0 leaves its level for one step
    err = fill.derive(jump)[:, 0]
    torch.testing.assert_close(err, torch.tensor([0, 0, 0, 0, 0, 2, 4, 2, 0, 0, 0, 0.0]))  # steps 3..9 predicted
    with pytest.raises(ValueError, match="leave nothing to predict"):
        fill.predictor.errors(ramp[None, : k + 2])
    from phyprobe.encoders.dynamics import load_checkpoint, save_checkpoint

    save_checkpoint(tmp_path / "fill", fill.predictor, fill.base, {"num_frames": T + 1})
    _, loaded, _ = load_checkpoint(tmp_path / "fill")
    assert loaded.after == 2
    torch.testing.assert_close(loaded.errors(jump[None]), fill.predictor.errors(jump[None]))


def test_patience_stops_after_the_best_epoch_and_keeps_the_same_model():
    """Stopping early is the same computation up to the stop: with a patience longer than any wait between two
    new lowest validation losses of the full run, the kept predictor is the full run's, bit for bit; a
    shorter one ends the run ``patience`` epochs after its best, on the same history so far."""
    from phyprobe.encoders.dynamics import fit_predictor

    g = torch.Generator().manual_seed(0)
    t = torch.arange(12.0)
    # plausible motion: each clip's 6 features drift at a constant speed, plus noise
    clips = [torch.outer(t, torch.rand(6, generator=g)) + 0.05 * torch.randn(12, 6, generator=g) for _ in range(40)]
    kw = dict(context=2, hidden=8, epochs=120, lr=3e-3, batch_size=8, seed=0)
    full, h_full = fit_predictor(clips[:30], clips[30:], **kw)
    losses = np.array([h["val_l1"] for h in h_full])
    new_lows = np.flatnonzero(losses < np.minimum.accumulate(np.r_[np.inf, losses[:-1]]))
    wait = int(np.diff(new_lows).max())
    kept, h_kept = fit_predictor(clips[:30], clips[30:], patience=wait, **kw)
    assert len(h_kept) == min(kw["epochs"], new_lows[-1] + wait + 1)
    assert all(torch.equal(a, b) for a, b in zip(full.state_dict().values(), kept.state_dict().values()))

    early, h_early = fit_predictor(clips[:30], clips[30:], patience=2, **kw)
    best = int(np.argmin([h["val_l1"] for h in h_early]))
    assert len(h_early) == best + 3 < len(h_full) and h_early == h_full[: len(h_early)]
    with pytest.raises(ValueError, match="patience"):
        fit_predictor(clips[:30], clips[30:], patience=0, **kw)


def test_checkpoint_content_is_in_the_cache_key(checkpoint, tmp_path):
    other = tmp_path / "other"
    shutil.copytree(checkpoint, other)
    state = load_file(str(other / "model.safetensors"))
    state["net.0.bias"] = state["net.0.bias"] + 1e-3
    save_file(state, str(other / "model.safetensors"))
    a, b = from_config("dynamics", checkpoint=str(checkpoint)), from_config("dynamics", checkpoint=str(other))
    assert a.fingerprint() != b.fingerprint()
    moved = tmp_path / "moved"
    shutil.copytree(checkpoint, moved)
    assert from_config("dynamics", checkpoint=str(moved)).fingerprint() == a.fingerprint()  # content, not path
    assert from_config("dynamics", checkpoint=str(checkpoint), include_base=False).fingerprint() != a.fingerprint()


def test_missing_checkpoint_names_the_command_that_makes_it(tmp_path):
    with pytest.raises(WeightsNotFoundError, match="train_dynamics.py"):
        from_config("dynamics", checkpoint=str(tmp_path / "nowhere"))
    cfg = OmegaConf.merge(
        OmegaConf.load(CONFIGS / "backbone" / "dynamics.yaml"), {"checkpoint": str(tmp_path / "nowhere")}
    )
    with pytest.raises(InstantiationException) as e:
        instantiate(cfg)
    assert isinstance(e.value.__cause__, WeightsNotFoundError)


def test_checkpoint_decides_the_base(checkpoint):
    with pytest.raises(ValueError, match="base comes from the checkpoint"):
        from_config("dynamics", checkpoint=str(checkpoint), base={"name": "flow_stats"})


def test_a_changed_base_is_refused(checkpoint, tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(checkpoint, bad)
    cfg = json.loads((bad / "config.json").read_text())
    cfg["base"]["kwargs"]["grid"] = 3
    (bad / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match="fingerprint"):
        from_config("dynamics", checkpoint=str(bad))


def test_exported_scorer_reproduces_training_scores(checkpoint, manifest, tmp_path):
    overrides = [o for o in TOY if not o.startswith(("backbone.", "clip."))]
    cfg = compose_train(
        tmp_path,
        [
            *overrides,
            "backbone=dynamics",
            f"backbone.checkpoint={checkpoint}",
            f"clip.num_frames={FRAMES}",
            "data=manifest",
            f"data.source.path={manifest}",
            "eval.report=false",
            "eval.n_boot=20",
            f"paths.cache_dir={tmp_path / 'cache'}",
        ],
    )
    train(cfg)
    expected = pd.read_csv(tmp_path / "scores.csv")
    scorer = Scorer.from_pretrained(tmp_path / "scorer")
    assert scorer.encoder.name == "dynamics" and scorer.config["encoder"]["describe"]["feature_dim"] == 2 * 4 * 14
    got = scorer.score_raw_many([manifest / p for p in expected["path"]])
    assert_training_scores(got, expected["raw_score"])


def test_any_backbone_config_can_be_the_base(tmp_path):
    """The base is the `backbone` group placed at `base`: `backbone@base=NAME` picks another entry's config
    (configs/dynamics.yaml and docs/encoders.md give this command) with its own options, here the frame
    encoder's spatial max."""
    cfg = compose_train(tmp_path, ["backbone@base=efficientnet_lite0"], config_name="dynamics")
    assert cfg.base.name == "efficientnet_lite0" and cfg.base.spatial_pool == "max"
    assert compose_train(tmp_path, [], config_name="dynamics").base.name == "flow_stats"


def test_cross_world_fit_sees_the_named_sources_only(tiny_worlds, tmp_path):
    """`data.train_sources` restricts the plausible clips the model is fitted on, as it restricts a head's
    training data: a dynamics model for a 2D → 3D run never sees a 3D clip."""
    from phyprobe.encoders.dynamics import plausible_mask
    from phyprobe.training.dynamics import train_dynamics

    out = tmp_path / "ckpt"
    cfg = compose_train(
        tmp_path,
        [
            "data=worlds",
            f"data.source.out_dir={tiny_worlds}",
            "data.train_sources=[world3d]",
            f"clip.num_frames={FRAMES}",
            f"base.image_size={SIZE}",
            "base.grid=2",
            "predictor.epochs=3",
            "predictor.hidden=16",
            "extract.num_workers=0",
            f"paths.output_dir={out}",
            f"paths.cache_dir={tmp_path / 'cache'}",
        ],
        config_name="dynamics",
    )
    with open_dict(cfg):
        cfg.data.source.update(
            {
                "planar": TINY_WORLDS["planar"],
                "world3d": TINY_WORLDS["world3d"],
                "workers": 1,
            }
        )
    fit = train_dynamics(cfg)
    v = Manifest.load(tiny_worlds).videos
    plausible_3d = plausible_mask(v) & (v["source"] == "world3d")
    assert fit["sources"] == ["world3d"]
    assert fit["num_train_clips"] == int((plausible_3d & (v["split"] == "train")).sum()) > 0
    assert fit["num_val_clips"] == int((plausible_3d & (v["split"] == "val")).sum())


def test_evidence_head_fits_its_model_in_the_run_and_the_scorer_carries_it(manifest, tmp_path):
    """`experiment=evidence_head` (the dynamics backbone under the monotone head) fits the dynamics model on the
    run's own plausible training clips, and the exported scorer holds a copy: moved elsewhere, with the run's copy
    gone, it reproduces the run."""
    run = tmp_path / "run"
    overrides = [o for o in TOY if not o.startswith("clip.")]
    cfg = compose_train(
        run,
        [
            *overrides,
            "experiment=evidence_head",
            f"clip.num_frames={FRAMES}",
            "backbone.fit.base.grid=2",
            "backbone.fit.predictor.epochs=20",
            "backbone.fit.predictor.hidden=16",
            "data=manifest",
            f"data.source.path={manifest}",
            "eval.report=false",
            "eval.n_boot=20",
            f"paths.cache_dir={tmp_path / 'cache'}",
        ],
    )
    assert cfg.backbone.checkpoint == "fit" and cfg.head.kind == "monotone" and list(cfg.pooling.stats) == ["mean"]
    train(cfg)
    # the exported head is the epoch of lowest validation loss (its ranking ties at every epoch)
    val = pd.read_csv(run / "logs" / "metrics.csv").dropna(subset=["val/loss"])
    kept = [int(p.name.split("-")[0].removeprefix("epoch=")) for p in (run / "checkpoints").glob("epoch=*.ckpt")]
    assert kept == [int(val.loc[val["val/loss"].idxmin(), "epoch"])]
    fit = json.loads((run / "dynamics" / "config.json").read_text())["fit"]
    v = Manifest.load(manifest).videos
    assert fit["num_train_clips"] == int(((v["split"] == "train") & (v["magnitude"] == 0)).sum()) > 0
    assert fit["num_val_clips"] == int(((v["split"] == "val") & (v["magnitude"] == 0)).sum())

    moved = shutil.copytree(run / "scorer", tmp_path / "elsewhere" / "scorer")
    shutil.rmtree(run / "dynamics")
    enc = json.loads((moved / "config.json").read_text())["encoder"]
    assert enc["kwargs"]["checkpoint"] == "encoder/checkpoint" and enc["bundled"] == ["checkpoint"]
    scorer = Scorer.from_pretrained(moved)
    assert scorer.head.kind == "monotone" and scorer.encoder.name == "dynamics"
    # the flow grid covers the whole picture of these 4:3 clips, in the run and in the scorer rebuilt from its files
    assert scorer.encoder.base.preprocess.resize == "squash" == scorer.encoder.preprocess.resize
    # one weight for the errors, one for each level: the stopped and the unexplained pixels
    assert scorer.head.monotone.raw_weight.numel() == 3 and scorer.encoder.levels == ("stopped", "unexplained")
    # each kind's spread over the training clips, exported: the errors' mean varies less than one standardised level
    errors_scale, *level_scales = scorer.head.monotone.group_scale.tolist()
    assert errors_scale < 1 and level_scales == pytest.approx([1.0, 1.0], rel=1e-3)
    expected = pd.read_csv(run / "scores.csv")
    got = scorer.score_raw_many([manifest / p for p in expected["path"]])
    assert_training_scores(got, expected["raw_score"])
    resaved = scorer.save_pretrained(moved)  # saving a scorer onto its own directory keeps its bundled model
    assert (resaved / "encoder" / "checkpoint" / "model.safetensors").is_file()


def test_default_backbone_trains_the_papers_mlp_head(manifest, tmp_path):
    """The default recipe on the dynamics backbone: [mean; std; max] pooling and the MLP, no evidence groups."""
    overrides = [o for o in TOY if not o.startswith("clip.")]
    cfg = compose_train(
        tmp_path,
        [
            *overrides,
            f"clip.num_frames={FRAMES}",
            "backbone.fit.base.grid=2",
            "backbone.fit.predictor.epochs=5",
            "backbone.fit.predictor.hidden=16",
            "data=manifest",
            f"data.source.path={manifest}",
            "eval.report=false",
            "eval.n_boot=20",
            "eval.baselines=[]",
            f"paths.cache_dir={tmp_path / 'cache'}",
        ],
    )
    assert (
        cfg.backbone.checkpoint == "fit"
        and cfg.head.kind == "mlp"
        and list(cfg.pooling.stats) == ["mean", "std", "max"]
    )
    train(cfg)
    head = json.loads((tmp_path / "scorer" / "config.json").read_text())["head"]
    assert head["kind"] == "mlp" and "groups" not in head


def test_fit_in_run_without_fit_settings_is_a_clear_error(manifest, tmp_path):
    from phyprobe.errors import InvalidOption

    cfg = compose_train(tmp_path, [*TOY, "data=manifest", f"data.source.path={manifest}"])
    with open_dict(cfg):
        del cfg.backbone["fit"]
    with pytest.raises(InvalidOption, match="needs a 'fit' block"):
        train(cfg)


def test_levels_append_the_frame_mean_of_named_base_statistics():
    """``levels``: after the errors, one column per named statistic, its mean over the cells as the base
    measured it; the options name them (a different cache key and scorer), and a statistic the base does not
    have, or a base without named statistics, is refused when the encoder is built."""
    spec = {"name": "flow_stats", "image_size": 32, "grid": 2}
    enc = from_config(
        "dynamics",
        checkpoint=None,
        base=spec,
        include_base=False,
        base_dtype="float32",
        signed=True,
        levels=["stopped", "mag_mean"],
    )
    plain = from_config("dynamics", checkpoint=None, base=spec, include_base=False, base_dtype="float32", signed=True)
    d = enc.predictor.dim
    assert (
        enc.feature_dim == 2 * d + 2
        and enc.options["levels"] == ["stopped", "mag_mean"]
        and "levels" not in plain.options
    )
    assert enc.fingerprint() != plain.fingerprint()
    z = torch.rand(10, enc.base.feature_dim)
    f = enc.derive(z)
    torch.testing.assert_close(f[:, : 2 * d], plain.derive(z))
    # a level is not forecast: the predictor reads every flow statistic but `stopped`, the clip's history
    assert not set(enc.base.columns("stopped")) & set(enc.predictor.columns.tolist())
    assert sorted(enc.predictor.columns.tolist() + enc.base.columns("stopped")) == list(range(enc.base.feature_dim))
    torch.testing.assert_close(f[:, -2], z[:, enc.base.columns("stopped")].mean(-1))
    torch.testing.assert_close(f[:, -1], z[:, enc.base.columns("mag_mean")].mean(-1))
    # the kinds of evidence a grouped monotone head weighs (head.groups=encoder): the errors, then each level
    assert enc.evidence_groups() == {
        "errors": list(range(2 * d)),
        "level:stopped": [2 * d],
        "level:mag_mean": [2 * d + 1],
    }
    assert (
        head_groups(enc, "encoder") == [list(range(2 * d)), [2 * d], [2 * d + 1]]
        and head_groups(enc, "per_feature") is None
    )
    with pytest.raises(InvalidOption, match="does not group its features"):
        head_groups(from_config("flow_stats", image_size=32), "encoder")
    with pytest.raises(InvalidOption, match="head.groups must be one of"):
        head_groups(enc, "by_cell")
    # nor is `unexplained`, the change the flow does not carry, when the base measures it
    both = from_config(
        "dynamics",
        checkpoint=None,
        base={**spec, "unexplained": True},
        include_base=False,
        base_dtype="float32",
        signed=True,
        levels=["stopped", "unexplained"],
    )
    levels = both.base.columns("stopped") + both.base.columns("unexplained")
    assert both.predictor.dim == d and sorted(both.predictor.columns.tolist() + levels) == list(
        range(both.base.feature_dim)
    )
    with pytest.raises(ValueError, match="no statistic 'stoped'"):
        from_config("dynamics", checkpoint=None, base=spec, levels=["stoped"])
    with pytest.raises(ValueError, match="need a base with named statistics"):
        from_config(
            "dynamics",
            checkpoint=None,
            base={"name": "efficientnet_lite0", "weights": None, "image_size": 32},
            levels=["stopped"],
        )
