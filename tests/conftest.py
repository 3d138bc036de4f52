"""Shared fixtures: small real mp4s written by PyAV in the real manifest format."""

from __future__ import annotations

import numpy as np
import pytest

from phyprobe.data.manifest import write_jsonl
from phyprobe.io.video import write_video


def moving_square(
    num_frames: int,
    h: int,
    w: int,
    x0: float,
    vx: float,
    jump_at: int | None = None,
    jump: float = 0.0,
    colour=(200, 80, 40),
) -> np.ndarray:
    """A square sliding at constant speed; with ``jump_at`` it teleports by ``jump`` px from that frame on."""
    frames = np.full((num_frames, h, w, 3), 40, np.uint8)
    side = max(4, h // 4)
    for t in range(num_frames):
        x = x0 + vx * t + (jump if jump_at is not None and t >= jump_at else 0.0)
        x = int(x) % max(1, w - side)
        frames[t, h // 3 : h // 3 + side, x : x + side] = colour
    return frames


def write_toy_manifest(root, num_scenes: int = 12, frames: int = 12, size=(48, 64), seed: int = 0) -> None:
    """Plausible vs teleporting squares, one pair per scene, split train/val/test by scene."""
    rng = np.random.default_rng(seed)
    videos, pairs = [], []
    (root / "v").mkdir(parents=True, exist_ok=True)
    for s in range(num_scenes):
        split = "train" if s < num_scenes * 2 // 3 else ("val" if s < num_scenes * 5 // 6 else "test")
        x0, vx = rng.uniform(2, 10), rng.uniform(1.5, 3)
        for variant, sev in (("plausible", 0.0), ("violated", 1.0)):
            vid = f"s{s}_{variant}"
            jump_at = frames // 2 if sev else None
            write_video(root / "v" / f"{vid}.mp4", moving_square(frames, *size, x0, vx, jump_at, 20.0), fps=12)
            videos.append(
                {
                    "id": vid,
                    "path": f"v/{vid}.mp4",
                    "source": "toy",
                    "is_real": sev == 0,
                    "magnitude": sev,
                    "anchor": int(sev),
                    "split": split,
                    "metadata": {
                        "scene": s,
                        "family": "teleport" if sev else None,
                        "severity": sev,
                        "variant": variant,
                    },
                }
            )
        pairs.append(
            {
                "a": f"s{s}_violated",
                "b": f"s{s}_plausible",
                "label": 1.0,
                "weight": 1.0,
                "source": "toy",
                "correspondence": "same_scene",
                "kind": "real_vs_generated",
                "split": split,
            }
        )
    write_jsonl(root / "videos.jsonl", videos)
    write_jsonl(root / "pairs.jsonl", pairs)


@pytest.fixture(scope="session")
def toy_manifest(tmp_path_factory):
    root = tmp_path_factory.mktemp("toy_manifest")
    write_toy_manifest(root)
    return root


@pytest.fixture(scope="session")
def tiny_world(tmp_path_factory):
    """A real (tiny) physics-world build: 16 scenes + 4 real-footage segments, shared by the session."""
    from phyprobe.world.build import build_world

    out = tmp_path_factory.mktemp("world")
    return build_world(out / "world", num_scenes=16, seed=0, workers=1, progress=False, num_real_segments=4)


TINY_WORLDS = {
    "planar": {"engine": "2d", "num_scenes": 16, "num_real_segments": 4},
    "bullet": {"engine": "3d", "num_scenes": 10, "include_real": False, "num_frames": 16},
}


@pytest.fixture(scope="session")
def tiny_worlds(tmp_path_factory):
    """Both worlds in one manifest (``data=worlds`` at toy size): 16 2D scenes + 4 footage segments, 10 3D scenes."""
    from phyprobe.data.sources import worlds

    out = tmp_path_factory.mktemp("worlds") / "worlds"
    worlds(out, seed=0, workers=1, **TINY_WORLDS)
    return out
