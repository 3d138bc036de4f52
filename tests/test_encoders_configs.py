"""Every configs/backbone/*.yaml instantiates through Hydra (as the training config does)."""

import json
from pathlib import Path

import pytest
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
}
MINE = [p for p in BACKBONES if p.stem not in EMBEDDED]


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
