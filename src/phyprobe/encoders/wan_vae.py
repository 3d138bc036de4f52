"""The Wan 2.2 VAE (48 latent channels, from Wan2.2-TI2V-5B) as an encoder, through diffusers.

This is the paper's "generator latent" ablation: a reconstruction-trained causal 3D VAE, expected
to transfer poorly. Only the TI2V-5B model ships this VAE; the Wan 2.2 A14B models reuse the
16-channel Wan 2.1 VAE, which is not what this entry loads.

Time: the encoder is causal with temporal compression 4 and encodes frame 0 alone, then chunks of
4 frames, so a clip must have T = 4k+1 frames and gives k+1 latent steps: step 0 = frame 0, step
i = frames 4i-3 .. 4i (each also sees the past through the causal cache). :meth:`frames_for` rounds
requests up to 4k+1, :meth:`num_steps` reports k+1, and any other T is an error (diffusers would
silently ignore trailing frames). ``frames_per_step = 4`` is the stride of every step but the first.

Features: the posterior mean (``latent_dist.mode()``, what the Wan pipelines use), normalised per
channel with the VAE config's ``latents_mean`` / ``latents_std``, then pooled over space per step:
``mean`` (48-d), ``mean_max`` (96-d) or ``grid`` (adaptive average pool to grid x grid, 48*grid^2-d,
which keeps coarse layout). Input is RGB in [-1, 1]; frames are letterboxed to ``image_size``
(both sides multiples of 16, the spatial compression). The decoder is dropped after loading.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .base import FrozenEncoder, register_encoder
from .preprocess import Preprocess
from .weights import resolve_pretrained_dir

HF_ID = "Wan-AI/Wan2.2-TI2V-5B-Diffusers"
# Architecture of Wan2.2-TI2V-5B-Diffusers/vae/config.json; random builds use latents_mean 0, std 1.
WAN22_ARCH = {
    "base_dim": 160,
    "decoder_base_dim": 256,
    "z_dim": 48,
    "dim_mult": [1, 2, 4, 4],
    "num_res_blocks": 2,
    "attn_scales": [],
    "temperal_downsample": [False, True, True],
    "is_residual": True,
    "in_channels": 12,
    "out_channels": 12,
    "patch_size": 2,
    "scale_factor_spatial": 16,
    "scale_factor_temporal": 4,
}
TINY = {"base_dim": 8, "decoder_base_dim": 8, "z_dim": 4, "num_res_blocks": 1}
POOLS = ("mean", "mean_max", "grid")


def next_4k1(num_frames: int) -> int:
    return num_frames + (-(num_frames - 1)) % 4


class WanVAEEncoder(FrozenEncoder):
    frames_per_step = 4

    def __init__(self, vae, preprocess: Preprocess, pool: str, grid: int):
        super().__init__()
        if pool not in POOLS:
            raise ValueError(f"pool must be one of {POOLS}, got {pool!r}")
        self.vae = vae
        self.preprocess = preprocess
        self.pool, self.grid = pool, grid
        z = vae.config.z_dim
        self.feature_dim = {"mean": z, "mean_max": 2 * z, "grid": z * grid * grid}[pool]
        self.register_buffer("lat_mean", torch.tensor(vae.config.latents_mean).view(1, z, 1, 1, 1), persistent=False)
        self.register_buffer("lat_std", torch.tensor(vae.config.latents_std).view(1, z, 1, 1, 1), persistent=False)

    def frames_for(self, num_frames: int) -> int:
        return next_4k1(num_frames)

    def num_steps(self, num_frames: int) -> int:
        return 1 + (num_frames - 1) // 4

    def forward_features(self, clips: torch.Tensor) -> torch.Tensor:
        t = clips.shape[1]
        if (t - 1) % 4:
            raise ValueError(
                f"wan22_vae needs T = 4k+1 frames, got {t}; sample frames_for({t}) = {next_4k1(t)} instead"
            )
        x = clips.permute(0, 2, 1, 3, 4).to(self.vae.dtype)  # (B, 3, T, H, W)
        z = self.vae.encode(x).latent_dist.mode()
        z = ((z.float() - self.lat_mean) / self.lat_std).transpose(1, 2)  # (B, steps, C, h, w)
        if self.pool == "mean":
            return z.mean((-2, -1))
        if self.pool == "mean_max":
            return torch.cat([z.mean((-2, -1)), z.amax((-2, -1))], -1)
        b, s = z.shape[:2]
        return F.adaptive_avg_pool2d(z.flatten(0, 1), self.grid).view(b, s, -1)


@register_encoder("wan22_vae")
def wan22_vae(
    weights: str | None = "hub",
    image_size: tuple[int, int] | list[int] = (352, 640),
    pool: str = "mean",
    grid: int = 4,
    tiny: bool = False,
) -> FrozenEncoder:
    """``weights``: "hub" (HF cache), a local Diffusers repo directory (or its ``vae/`` folder), or None.

    ``image_size`` (H, W): frames are letterboxed into it; the default keeps 16:9 at modest cost.
    """
    from diffusers import AutoencoderKLWan

    if weights is None:
        cfg = {**WAN22_ARCH, **(TINY if tiny else {})}
        vae = AutoencoderKLWan(**cfg, latents_mean=[0.0] * cfg["z_dim"], latents_std=[1.0] * cfg["z_dim"])
        weights_id = "random"
    else:
        path, weights_id = resolve_pretrained_dir("wan22_vae (Wan2.2-TI2V-5B VAE)", weights, HF_ID, subfolder="vae")
        vae = AutoencoderKLWan.from_pretrained(str(path), local_files_only=True, torch_dtype=torch.float32)
    vae.decoder = None  # encode-only: the decoder is most of the memory
    h, w = (int(s) for s in image_size)
    f = vae.config.scale_factor_spatial
    if h % f or w % f:
        raise ValueError(f"wan22_vae image_size {(h, w)} must be multiples of {f}")
    pre = Preprocess(
        size=(h, w),
        mean=(0.0, 0.0, 0.0),
        std=(1.0, 1.0, 1.0),
        resize="letterbox",
        interpolation="bilinear",
        value_range=(-1.0, 1.0),
    )
    enc = WanVAEEncoder(vae, pre, pool, grid)
    enc.weights_id = weights_id
    enc.options = {"hf_id": HF_ID, "image_size": [h, w], "pool": pool, "tiny": tiny} | (
        {"grid": grid} if pool == "grid" else {}
    )
    return enc
