"""Small real videos for tests and benchmarks: a square sliding at constant speed (or teleporting), and a toy
manifest of plausible and teleporting squares in the real manifest format, written by PyAV."""

from __future__ import annotations

from pathlib import Path

import numpy as np

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


def write_toy_manifest(root: Path, num_scenes: int = 12, frames: int = 12, size=(48, 64), seed: int = 0) -> None:
    """Plausible vs teleporting squares, one pair per scene, split train/val/test by scene."""
    root = Path(root)
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
