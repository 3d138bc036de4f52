"""PE-Core in Meta's original ``.pt`` layout loads at any input size, as the other releases do."""

import pytest
import torch
from encoder_fixtures import tiny_clip, tiny_encoder
from safetensors.torch import save_file

from phyprobe.encoders import from_config

# timm key fragment -> Meta's, the inverse of timm's PE conversion (timm.models.eva._convert_pe)
TO_META = [
    ("patch_embed.proj", "conv1"),
    ("blocks.", "transformer.resblocks."),
    ("norm_pre", "ln_pre"),
    ("gamma_1", "ls_1.gamma"),
    ("gamma_2", "ls_2.gamma"),
    ("attn.qkv.", "attn.in_proj_"),
    ("attn.proj", "attn.out_proj"),
    ("mlp.fc1", "mlp.c_fc"),
    ("mlp.fc2", "mlp.c_proj"),
    ("norm1", "ln_1"),
    ("norm2", "ln_2"),
]


def meta_layout(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """A timm PE-Core state dict written the way Meta's ``PE-Core-*.pt`` releases are."""
    out = {}
    for k, v in state.items():
        if k.startswith("attn_pool."):
            rest = k[len("attn_pool.") :]
            if rest.startswith(("q.", "kv.")):
                continue
            rest = {"latent": "probe", "norm.weight": "layernorm.weight", "norm.bias": "layernorm.bias"}.get(rest, rest)
            rest = (
                rest.replace("proj.", "attn.out_proj.").replace("mlp.fc1", "mlp.c_fc").replace("mlp.fc2", "mlp.c_proj")
            )
            out[f"visual.attn_pool.{rest}"] = v
            continue
        if k == "pos_embed":
            out["visual.positional_embedding"] = v[0]
            continue
        if k == "head.weight":
            out["visual.proj"] = v.t().contiguous()
            continue
        if k == "head.bias":
            continue
        if k.startswith("norm."):
            out["visual.ln_post." + k[len("norm.") :]] = v
            continue
        for a, b in TO_META:
            k = k.replace(a, b)
        out["visual." + k] = v
    for part in ("weight", "bias"):
        out[f"visual.attn_pool.attn.in_proj_{part}"] = torch.cat(
            [state[f"attn_pool.q.{part}"], state[f"attn_pool.kv.{part}"]]
        )
    return out


@pytest.fixture(scope="module")
def releases(tmp_path_factory):
    """The same tiny random PE-Core written in Meta's layout and in open_clip's (which timm resamples)."""
    root = tmp_path_factory.mktemp("pe")
    ref = tiny_encoder("perception_encoder")
    state = {k: t.detach().clone() for k, t in ref.model.state_dict().items()}
    state["head.bias"].zero_()  # Meta's projection has no bias
    (root / "meta").mkdir()
    torch.save(meta_layout(state), root / "meta" / "PE-Core-G14-448.pt")
    (root / "oc").mkdir()
    save_file(
        {f"visual.trunk.{k}": t.contiguous() for k, t in state.items()},
        str(root / "oc" / "open_clip_model.safetensors"),
    )
    return root, ref


def test_meta_layout_round_trips_at_the_native_size(releases):
    root, ref = releases
    enc = from_config("perception_encoder", size="G", tiny=True, weights=str(root / "meta"))
    ref.model.head.bias.data.zero_()
    x = tiny_clip(enc)
    torch.testing.assert_close(enc(x), ref(x))


@pytest.mark.parametrize("image_size", [56, 70])
def test_meta_layout_loads_at_other_sizes_like_the_open_clip_release(releases, image_size):
    """The position embedding is resampled to the new grid (2x2 -> 4x4 / 5x5 patches), exactly as
    timm does for the open_clip release, so both give the same features."""
    root, _ = releases
    meta = from_config("perception_encoder", size="G", tiny=True, weights=str(root / "meta"), image_size=image_size)
    oc = from_config("perception_encoder", size="G", tiny=True, weights=str(root / "oc"), image_size=image_size)
    grid = image_size // 14
    assert meta.model.pos_embed.shape[1] == grid * grid
    torch.testing.assert_close(meta.model.pos_embed, oc.model.pos_embed)
    x = tiny_clip(meta)
    torch.testing.assert_close(meta(x), oc(x))
