"""Several frozen encoders' per-step features side by side: ``concat`` of ``parts``.

The per-step features of different encoders see different evidence (optical flow sees where pixels move, an
image encoder's embedding path sees what the frame shows and how that changes), and the head can weigh both
through the unchanged pooling. The parts must read a video the same way (one :class:`Preprocess`, one time step
per the same frames), so the concatenation is one encoder for the cache, the exported scorer and every door that
scores; each part's features are computed from its own cache (:meth:`ConcatEncoder.derive_parts`), so a part
shared with another run (a flow base, a frame encoder's paths) is encoded once.
"""

from __future__ import annotations

import torch

from .base import FrozenEncoder, from_config, register_encoder


class ConcatEncoder(FrozenEncoder):
    """Parts' features concatenated per step, in order; each part rounded to ``part_dtype`` as its cache stores it,
    so that concatenating cached parts and a forward pass on the clip are the same computation."""

    def __init__(self, parts: list[FrozenEncoder], part_dtype: str = "float16"):
        super().__init__()
        if len(parts) < 2:
            raise ValueError(f"concat: needs at least two parts, got {len(parts)}")
        first = parts[0]
        for p in parts[1:]:
            if p.preprocess != first.preprocess:
                raise ValueError(
                    f"concat: parts must read frames alike; {first.name!r} reads {first.preprocess.to_dict()}, "
                    f"{p.name!r} reads {p.preprocess.to_dict()} (give them the same image_size and resize)"
                )
            if p.frames_per_step != first.frames_per_step or p.num_steps(32) != first.num_steps(32):
                raise ValueError(f"concat: parts {first.name!r} and {p.name!r} have different time steps")
        self.parts = torch.nn.ModuleList(parts)
        self.part_dtype = part_dtype
        self.preprocess, self.frames_per_step = first.preprocess, first.frames_per_step
        self.feature_dim = sum(p.feature_dim for p in parts)

    def bundled_paths(self) -> list[str]:
        return [f"parts.{i}.{k}" for i, p in enumerate(self.parts) for k in p.bundled_paths()]

    def frames_for(self, num_frames: int) -> int:
        return self.parts[0].frames_for(num_frames)

    def num_steps(self, num_frames: int) -> int:
        return self.parts[0].num_steps(num_frames)

    def derive_parts(self, part_feats: list[torch.Tensor]) -> torch.Tensor:
        """The features from each part's own (cached) features, (T, D_i) or (B, T, D_i) each."""
        dtype = getattr(torch, self.part_dtype)
        return torch.cat([f.to(dtype).float() for f in part_feats], dim=-1)

    def forward_features(self, clips: torch.Tensor) -> torch.Tensor:
        return self.derive_parts([p.forward_features(clips) for p in self.parts])


@register_encoder("concat")
def concat(parts: list[dict], part_dtype: str = "float16") -> FrozenEncoder:
    """``parts``: the encoders' configs ({"name": ..., **options}), two or more, reading frames alike.
    ``part_dtype``: the storage dtype of each part's cache, which the concatenation is computed from."""
    if not isinstance(parts, (list, tuple)) or not all(isinstance(p, dict) and "name" in p for p in parts):
        raise ValueError("concat: parts must be a list of encoder configs, each with a 'name'")
    built = [from_config(p["name"], **{k: v for k, v in p.items() if k != "name"}) for p in parts]
    enc = ConcatEncoder(built, part_dtype)
    enc.weights_id = "+".join(p.weights_id for p in built)
    enc.options = {"parts": [p.describe() for p in built], "part_dtype": part_dtype}
    return enc
