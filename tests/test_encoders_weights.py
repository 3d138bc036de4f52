"""Weights come from a local path or the Hugging Face cache, never the network; missing ones fail helpfully."""

import pytest
import torch
from encoder_fixtures import EMBEDDED, TINY_BUILDS, save_tiny_local_weights, tiny_clip

from phyprobe.encoders import WeightsNotFoundError, from_config

PRETRAINED = sorted(set(TINY_BUILDS) - EMBEDDED)  # weights from a local path or the Hugging Face cache
HUB_IDS = {
    "perception_encoder": "facebook/PE-Core-G14-448",
    "vjepa2": "facebook/vjepa2-vith-fpc64-256",
    "wan22_vae": "Wan-AI/Wan2.2-TI2V-5B-Diffusers",
    "clip": "timm/vit_large_patch14_clip_224.openai",
    "siglip2": "timm/ViT-SO400M-16-SigLIP2-384",
    "dinov2": "timm/vit_large_patch14_dinov2.lvd142m",
    "dinov3": "timm/vit_large_patch16_dinov3.lvd1689m",
}


@pytest.fixture
def empty_hf_home(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return tmp_path / "hf" / "hub"


@pytest.mark.parametrize("name", PRETRAINED)
def test_missing_hub_weights_raise_one_clear_error(name, empty_hf_home):
    with pytest.raises(WeightsNotFoundError) as e:
        from_config(name)  # default: weights="hub"
    msg = str(e.value)
    assert HUB_IDS[name] in msg and "hf download" in msg and str(empty_hf_home) in msg
    assert "weights=<path>" in msg


@pytest.mark.parametrize("name", PRETRAINED)
def test_missing_local_path_raises(name, tmp_path):
    with pytest.raises(WeightsNotFoundError, match="does not exist|no config.json|holds none"):
        from_config(name, weights=str(tmp_path / "nowhere"))


def test_incomplete_download_is_reported(tmp_path):
    (tmp_path / "vae").mkdir()
    (tmp_path / "vae" / "config.json").write_text("{}")
    with pytest.raises(WeightsNotFoundError, match="no \\*.safetensors"):
        from_config("wan22_vae", weights=str(tmp_path))


@pytest.mark.parametrize("layout", ["dir", "hf_cache"])
@pytest.mark.parametrize("name", PRETRAINED)
def test_local_weights_end_to_end(name, layout, tmp_path, monkeypatch):
    """Saved in a user's layout, loaded through the factory: the same features as the saved model."""
    lw = save_tiny_local_weights(name, tmp_path, layout)
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "elsewhere"))
    for k, v in lw.env.items():
        monkeypatch.setenv(k, v)
    enc = from_config(name, **lw.kwargs)
    x = tiny_clip(enc)
    torch.testing.assert_close(enc(x), lw.reference(x))
    assert enc.weights_id != "random" and (layout == "dir") == enc.weights_id.startswith("local:")
    assert enc.fingerprint() == from_config(name, **lw.kwargs).fingerprint()


def test_pe_loads_the_open_clip_release_layout(tmp_path):
    """PE-Core from open_clip's hf-hub repo (visual.trunk.* keys) loads into the timm tower."""
    from encoder_fixtures import tiny_encoder
    from safetensors.torch import save_file

    ref = tiny_encoder("perception_encoder")
    state = {f"visual.trunk.{k}": t.contiguous() for k, t in ref.model.state_dict().items()}
    state["text.token_embedding.weight"] = torch.zeros(4, 4)  # the text tower is ignored
    save_file(state, str(tmp_path / "open_clip_model.safetensors"))
    enc = from_config("perception_encoder", size="G", tiny=True, weights=str(tmp_path))
    x = tiny_clip(enc)
    torch.testing.assert_close(enc(x), ref(x))


def test_dinov3_loads_metas_original_layout(tmp_path):
    """A checkpoint as Meta's DINOv3 code saves it (``storage_tokens``, ``ls1.gamma``, zero ``qkv.bias`` with
    its mask, the pretraining ``mask_token``, RoPE ``periods``), passed as a local file, loads into the timm
    tower through timm's filter and gives the saved model's features."""
    from encoder_fixtures import tiny_encoder

    ref = tiny_encoder("dinov3")
    state = {}
    for k, t in ref.model.state_dict().items():
        k = k.replace("reg_token", "storage_tokens").replace("gamma_1", "ls1.gamma").replace("gamma_2", "ls2.gamma")
        state[k] = t.clone()
    width = ref.model.embed_dim
    for i in range(len(ref.model.blocks)):
        state[f"blocks.{i}.attn.qkv.bias"] = torch.zeros(3 * width)
        state[f"blocks.{i}.attn.qkv.bias_mask"] = torch.ones(3 * width)
    state["mask_token"] = torch.zeros(1, width)
    state["rope_embed.periods"] = torch.ones(width // ref.model.blocks[0].attn.num_heads // 4)
    path = tmp_path / "dinov3_vitl16_pretrain_lvd1689m.pth"
    torch.save(state, path)
    enc = from_config("dinov3", tiny=True, weights=str(path))
    x = tiny_clip(enc)
    torch.testing.assert_close(enc(x), ref(x))
    assert enc.weights_id.startswith("local:dinov3_vitl16")
