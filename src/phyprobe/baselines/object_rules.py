"""A rule of rigid-body physics on tracked bodies, as evidence beside a scorer's (a measured lead, not in the default).

The flow's 4 x 4 grid sees a violation as surprise it adds, so a body that stops dead or vanishes, which takes
motion away, reads as the less surprising clip. Followed as a body, the same event breaks a rule that holds in
any world: a body does not end away from the picture's edge, with nothing in contact, where its own motion would
not have carried it. This counts such ends, and the starts they mirror, on bodies tracked in the clip's pixels:

- bodies: the connected regions of pixels off the clip's median frame (closed and filled, so that a striped or
  outlined body stays whole), at the video's own resolution and every frame;
- tracks: bodies matched from frame to frame by their centroids (Hungarian, on a constant-velocity forecast);
- an event: a track of at least three frames ends (starts) before the last (after the first) frame, not at the
  picture's edge, with no other body in contact for two frames, and its body is not to be found in the next
  (previous) frame within two pixels of where its velocity carries it (a body that comes to rest there, or was
  at rest, is found and is no event).

A clip gets no evidence (0) where the rule cannot be read: the picture's edge moves (a moving camera), or the
tracks do not hold (more than three tracks per body present, as a talking head or a crowd breaks up). Zero
parameters are fitted. ``research/evidence_kinds.py --objects BUILD`` ranks it alone and adds it to a scorer's score,
in units of its spread over BUILD's plausible `train` clips, as the head scales each kind.
"""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
from scipy import ndimage
from scipy.optimize import linear_sum_assignment

from ..data.manifest import Manifest
from ..io.video import ClipSpec, decode_clip, probe

OFF_MEDIAN = 28  # grey levels (the largest over R, G, B) off the median frame: a body's pixel
MIN_AREA, MIN_SHARE = 6, 0.0005  # a body covers at least this many pixels and this share of the picture
CLOSING = 5  # px: gaps a body's own pattern leaves in its region
EDGE = 2  # px: a body this close to the picture's edge may be entering or leaving
CONTACT = 3  # px between two bodies' equal-area circles, plus half the body's radius: in contact
MIN_TRACK, HOLD, SEARCH = (
    3,
    2,
    2,
)  # frames a track lasts, frames no body may touch its end, px searched around the forecast
RING, MAX_RING, MAX_FOREGROUND = (
    0.08,
    0.03,
    0.2,
)  # the picture's outer ring (share of its side); a moving camera moves it
MAX_TRACKS_PER_BODY = 3


def read_frames(path: str | Path) -> np.ndarray:
    """Every frame at the video's own size, (T, H, W, 3) uint8 upright: the bodies are a few pixels wide."""
    return decode_clip(path, ClipSpec(num_frames=probe(path)["num_frames"])).frames


def find_bodies(frames: np.ndarray) -> tuple[list[np.ndarray], float, float]:
    """Per frame, (n, 4) bodies: centroid x, y, equal-area radius, touches the edge; and the foreground's share
    of the picture and of its outer ring (a still camera leaves the ring empty)."""
    median = np.median(frames, axis=0).astype(np.int16)
    fg = np.abs(frames.astype(np.int16) - median).max(-1) > OFF_MEDIAN
    fg = ndimage.binary_opening(fg, structure=np.ones((1, 2, 2)))
    fg = ndimage.binary_closing(fg, structure=np.ones((1, CLOSING, CLOSING)))
    fg = np.stack([ndimage.binary_fill_holes(f) for f in fg])
    h, w = fg.shape[1:]
    bodies = []
    for mask in fg:
        labels, n = ndimage.label(mask)
        index = np.arange(1, n + 1)
        area = ndimage.sum(mask, labels, index) if n else np.zeros(0)
        keep = area >= max(MIN_AREA, MIN_SHARE * mask.size)
        if not keep.any():
            bodies.append(np.zeros((0, 4)))
            continue
        centre = np.array(ndimage.center_of_mass(mask, labels, index))[keep]
        boxes = [s for s, k in zip(ndimage.find_objects(labels), keep) if k]
        at_edge = [
            s[0].start <= EDGE or s[1].start <= EDGE or s[0].stop >= h - EDGE or s[1].stop >= w - EDGE for s in boxes
        ]
        bodies.append(np.column_stack([centre[:, 1], centre[:, 0], np.sqrt(area[keep] / np.pi), at_edge]))
    b = max(2, int(RING * min(h, w)))
    ring = np.ones((h, w), bool)
    ring[b : h - b, b : w - b] = False
    return bodies, float(fg.mean()), float(fg[:, ring].mean())


def track(bodies: list[np.ndarray]) -> list[dict[int, int]]:
    """Tracks as {frame: body index}: each frame's bodies matched to the last frame's, forecast at constant velocity,
    within twice a body's radius plus 6 px of the forecast; an unmatched body starts a track."""
    owner = [np.full(len(b), -1) for b in bodies]
    tracks: list[dict[int, int]] = []
    for t, now in enumerate(bodies):
        before = bodies[t - 1] if t else np.zeros((0, 4))
        if len(before) and len(now):
            forecast = before[:, :2].copy()
            for j in range(len(before)):
                path = tracks[owner[t - 1][j]]
                if t - 2 in path:
                    forecast[j] += before[j, :2] - bodies[t - 2][path[t - 2], :2]
            dist = np.linalg.norm(forecast[:, None] - now[None, :, :2], axis=-1)
            cost = np.where(dist <= 2 * before[:, 2:3] + 6, dist, 1e6)
            for j, i in zip(*linear_sum_assignment(cost)):
                if cost[j, i] < 1e6:
                    tracks[owner[t - 1][j]][t] = i
                    owner[t][i] = owner[t - 1][j]
        for i in np.flatnonzero(owner[t] < 0):
            owner[t][i] = len(tracks)
            tracks.append({t: int(i)})
    return tracks


def unexplained_ends(path: str | Path) -> dict[str, float]:
    """The rule's count for one video, with what decides whether it can be read."""
    frames = read_frames(path)
    pixels = frames.astype(np.int16)
    bodies, foreground, ring = find_bodies(frames)
    T, (h, w) = len(bodies), frames.shape[1:3]
    out = {"events": 0.0, "foreground": foreground, "ring": ring, "tracks_per_body": 0.0}
    if foreground > MAX_FOREGROUND or ring > MAX_RING or T < 4:
        return out
    tracks = track(bodies)
    out["tracks_per_body"] = len(tracks) / max(float(np.mean([len(b) for b in bodies])), 1.0)
    if out["tracks_per_body"] > MAX_TRACKS_PER_BODY:
        return out

    def touched(t: int, i: int, frames_: range) -> bool:
        body = bodies[t][i]
        for u in frames_:
            if 0 <= u < T and len(bodies[u]):
                gap = np.linalg.norm(bodies[u][:, :2] - body[:2], axis=1) - bodies[u][:, 2] - body[2]
                if u == t:
                    gap[i] = np.inf
                if (gap <= CONTACT + 0.5 * body[2]).any():
                    return True
        return False

    def found(t0: int, t1: int, body: np.ndarray, velocity: np.ndarray) -> bool:
        """Is frame t0's body still to be seen in frame t1, near where its velocity carries it?"""
        x, y, r = body[0], body[1], int(body[2]) + 1
        cy, cx = int(round(y)), int(round(x))
        if cy - r < 0 or cx - r < 0 or cy + r + 1 > h or cx + r + 1 > w:
            return True
        template = pixels[t0, cy - r : cy + r + 1, cx - r : cx + r + 1]
        py, px = int(round(y + velocity[1] * (t1 - t0))), int(round(x + velocity[0] * (t1 - t0)))
        best = np.inf
        for dy in range(-SEARCH, SEARCH + 1):
            for dx in range(-SEARCH, SEARCH + 1):
                ys, xs = py + dy - r, px + dx - r
                if ys >= 0 and xs >= 0 and ys + 2 * r + 1 <= h and xs + 2 * r + 1 <= w:
                    best = min(
                        best, np.abs(pixels[t1, ys : ys + 2 * r + 1, xs : xs + 2 * r + 1] - template).max(-1).mean()
                    )
        return best < OFF_MEDIAN / 2

    def velocity(path_: dict[int, int], t: int) -> np.ndarray:
        return bodies[t][path_[t], :2] - bodies[t - 1][path_[t - 1], :2] if t - 1 in path_ else np.zeros(2)

    for path_ in tracks:
        steps = sorted(path_)
        if len(steps) < MIN_TRACK:
            continue
        last, first = steps[-1], steps[0]
        end, start = bodies[last][path_[last]], bodies[first][path_[first]]
        if (
            last < T - 1
            and not end[3]
            and not touched(last, path_[last], range(last, last + HOLD + 1))
            and not found(last, last + 1, end, velocity(path_, last))
        ):
            out["events"] += 1
        if (
            first > 0
            and not start[3]
            and not touched(first, path_[first], range(first - HOLD, first + 1))
            and not found(first, first - 1, start, velocity(path_, first + 1))
        ):
            out["events"] += 1
    return out


def unexplained_end_counts(manifest: Manifest, workers: int = 2) -> dict[str, float]:
    """The rule's count for every video of ``manifest``, two videos at a time."""
    paths = [str(manifest.video_path(p)) for p in manifest.videos["path"]]
    with ProcessPoolExecutor(workers) as pool:
        counts = list(pool.map(unexplained_ends, paths, chunksize=8))
    return {v: c["events"] for v, c in zip(manifest.videos["id"], counts)}
