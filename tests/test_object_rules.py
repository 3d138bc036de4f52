"""The tracked-body rule of phyprobe.baselines.object_rules on real mp4s of a disc: it counts a disc that vanishes
mid-picture, and nothing for one that crosses the picture, comes to rest, or vanishes in contact with another; a
moving camera leaves the clip without evidence."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from phyprobe.baselines.object_rules import MAX_RING, unexplained_ends
from phyprobe.io.video import write_video

T, H, W, R = 32, 96, 128, 6


def background(shift: float = 0.0) -> np.ndarray:
    """A textured still (or, shifted, panned) backdrop: vertical bands a camera pan would move."""
    x = np.arange(W) + shift
    bands = (90 + 40 * (np.sin(x / 5.0) > 0)).astype(np.uint8)
    return np.repeat(np.repeat(bands[None, :, None], H, 0), 3, 2).copy()


def draw(frame: np.ndarray, x: float, y: float, colour=(230, 60, 40)) -> None:
    yy, xx = np.mgrid[:H, :W]
    frame[(xx - x) ** 2 + (yy - y) ** 2 <= R**2] = colour


def clip(path: Path, discs, pan: float = 0.0) -> Path:
    """discs(t) -> [(x, y), ...] drawn on frame t."""
    frames = np.stack([background(pan * t) for t in range(T)])
    for t in range(T):
        for x, y in discs(t):
            draw(frames[t], x, y)
    return write_video(path, frames)


def test_a_disc_that_vanishes_mid_picture_is_counted_and_one_that_crosses_is_not(tmp_path):
    crossing = clip(tmp_path / "crossing.mp4", lambda t: [(20 + 2.5 * t, 48)])
    vanishing = clip(tmp_path / "vanishing.mp4", lambda t: [(20 + 2.5 * t, 48)] if t < 14 else [])
    assert unexplained_ends(crossing)["events"] == 0
    assert unexplained_ends(vanishing)["events"] == 1


def test_a_disc_that_comes_to_rest_is_found_where_it_stopped(tmp_path):
    """Slowing to a stop at frame 10 and resting there for the rest of the clip: the median frame holds the disc,
    so its track ends, but the disc is where its own motion carried it."""

    def rest(t):
        s = min(t, 10)
        return [(20 + 3.0 * s - 0.15 * s * s, 48)]

    assert unexplained_ends(clip(tmp_path / "rest.mp4", rest))["events"] == 0


def test_a_disc_that_vanishes_touching_another_is_not_counted(tmp_path):
    """Two discs meet; one is gone after the meeting: contact explains it (a merge, an occlusion)."""

    def meet(t):
        a = (20 + 2.0 * t, 48)
        b = (100 - 2.0 * min(t, 15), 48)
        return [a, b] if t < 16 else [a]

    assert unexplained_ends(clip(tmp_path / "meet.mp4", meet))["events"] == 0


def test_a_moving_camera_leaves_the_clip_without_evidence(tmp_path):
    panned = clip(tmp_path / "pan.mp4", lambda t: [(20 + 2.5 * t, 48)] if t < 14 else [], pan=1.5)
    out = unexplained_ends(panned)
    assert out["ring"] > MAX_RING
    assert out["events"] == 0


@pytest.mark.parametrize("start", [0, 12])
def test_a_disc_that_appears_mid_picture_is_counted_unless_it_is_there_from_the_start(tmp_path, start):
    appearing = clip(tmp_path / f"appear{start}.mp4", lambda t: [(30 + 2.0 * t, 40)] if t >= start else [])
    assert unexplained_ends(appearing)["events"] == (1 if start else 0)
