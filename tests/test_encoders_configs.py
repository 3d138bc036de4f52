"""Every configs/backbone/*.yaml instantiates through Hydra (as the training config does)."""

import json
import math
from pathlib import Path

import pytest
import torch
from encoder_fixtures import tiny_clip
from hydra.errors import InstantiationException
from hydra.utils import instantiate
from omegaconf import OmegaConf

from phyprobe.encoders import FrozenEncoder, WeightsNotFoundError, available_configs

BACKBONES = sorted((Path(__file__).parents[1] / "configs" / "backbone").glob("*.yaml"))
# Downloaded-weights entries; the embedded ones (package weights, no weights, a locally trained
# dynamics checkpoint, one fitted in the run) are tested with their own modules.
EMBEDDED = {
    "efficientnet_lite0",
    "efficientnet_lite0_flow",
    "efficientnet_lite0_diff",
    "flow_stats",
    "dynamics",
    "flow_dynamics",
    "flow_dynamics_trajectory",  # concat of the two embedded ones (tests/test_concat.py)
    "flow_dynamics_geophys",  # the same, on GeoPhys's own path (tests/test_experiments.py: experiment=flow_geophys)
}
# Trajectory geometry wraps a frame encoder: its `frames` options say where the weights come from (tested below).
TRAJECTORY = [p for p in BACKBONES if OmegaConf.load(p).get("name") == "trajectory"]
MINE = [p for p in BACKBONES if p.stem not in EMBEDDED and p not in TRAJECTORY]


@pytest.mark.parametrize("path", MINE, ids=[p.stem for p in MINE])
def test_backbone_config_fails_cleanly_offline(path, tmp_path, monkeypatch):
    """Hydra wraps the error; its cause is our WeightsNotFoundError with the download hint."""
    cfg = OmegaConf.load(path)
    assert cfg._target_ == "phyprobe.encoders.from_config" and cfg.name in available_configs()
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    with pytest.raises(InstantiationException) as e:
        instantiate(cfg)
    assert isinstance(e.value.__cause__, WeightsNotFoundError)
    assert "hf download" in str(e.value.__cause__)


@pytest.mark.parametrize("path", MINE, ids=[p.stem for p in MINE])
def test_backbone_config_instantiates_tiny(path):
    cfg = OmegaConf.merge(OmegaConf.load(path), {"weights": None, "tiny": True})
    if cfg.name == "wan22_vae":
        cfg.image_size = [32, 64]
    enc = instantiate(cfg)
    assert isinstance(enc, FrozenEncoder)
    json.dumps(enc.factory_kwargs)  # plain containers (_convert_: all): the exported scorer stores them
    assert enc(tiny_clip(enc, batch=1)).shape[-1] == enc.feature_dim


def test_trajectory_configs_for_every_frame_family_exist():
    """The GPU users' trajectory configs are all here, so the tests below cannot pass on an empty glob."""
    stems = {p.stem for p in TRAJECTORY}
    families = ("dinov2", "dinov3", "perception_encoder", "siglip2", "clip", "efficientnet_lite1", "efficientnet_lite2")
    assert {f"trajectory_{f}" for f in families} <= stems


def tiny_frames(frames: dict) -> dict:
    """A config's frame encoder at toy size with random weights: EfficientNets keep their architecture at 32 px,
    ViTs become their family's two-block tower at its toy input size."""
    if frames["name"].startswith("efficientnet"):
        return {**frames, "weights": None, "image_size": 32}
    return {**frames, "weights": None, "tiny": True, **({"image_size": None} if "image_size" in frames else {})}


@pytest.mark.parametrize("path", TRAJECTORY, ids=[p.stem for p in TRAJECTORY])
def test_trajectory_config_instantiates_tiny(path):
    """Composes and builds through Hydra with the frames shrunk, and gives (B, T, layers x cells x stats) finite
    features. A toy ViT has 2 blocks, so its layers become the first and the last (the real ones: next test)."""
    cfg = OmegaConf.load(path)
    assert cfg._target_ == "phyprobe.encoders.from_config" and cfg.frames.name in available_configs()
    frames = tiny_frames(OmegaConf.to_container(cfg.frames))
    layers = list(cfg.layers) if frames["name"].startswith("efficientnet") else [0, -1]
    enc = instantiate(OmegaConf.merge(cfg, {"frames": frames, "layers": layers}))
    json.dumps(enc.factory_kwargs)  # plain containers (_convert_: all): the exported scorer stores them
    stats = cfg.get("stats", ["speed", "turn", "accel", "residual"])
    assert enc.feature_dim == len(layers) * sum(g * g for g in cfg.grids) * len(stats)
    y = enc(tiny_clip(enc, num_frames=5))
    assert y.shape == (2, 5, enc.feature_dim) and torch.isfinite(y).all()


@pytest.mark.parametrize("path", TRAJECTORY, ids=[p.stem for p in TRAJECTORY])
def test_trajectory_config_real_size_on_meta(path):
    """The config exactly as written (random weights, no memory, on the meta device): its layers exist in the
    real frame encoder (an index past the end fails at build) and the features have the documented width."""
    cfg = OmegaConf.load(path)
    cfg.frames.weights = None
    with torch.device("meta"):
        enc = instantiate(cfg)
        y = enc(torch.empty(1, 8, 3, *enc.preprocess.size))
    assert all(-enc.frames.num_maps <= x < enc.frames.num_maps for x in cfg.layers)
    cells = sum(g * g for g in cfg.grids)
    assert y.shape == (1, 8, enc.feature_dim) and enc.feature_dim == len(cfg.layers) * cells * len(enc.stats)
    assert math.prod(enc.preprocess.size) > 32 * 32  # built at real size, not a toy


HUB_TRAJECTORY = [p for p in TRAJECTORY if OmegaConf.load(p).frames.get("weights") == "hub"]


@pytest.mark.parametrize("path", HUB_TRAJECTORY, ids=[p.stem for p in HUB_TRAJECTORY])
def test_trajectory_config_fails_cleanly_offline(path, tmp_path, monkeypatch):
    """Missing frame-encoder weights end in the frame encoder's WeightsNotFoundError, through the wrapper."""
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    with pytest.raises(InstantiationException) as e:
        instantiate(OmegaConf.load(path))
    assert isinstance(e.value.__cause__, WeightsNotFoundError)
    assert "hf download" in str(e.value.__cause__)
