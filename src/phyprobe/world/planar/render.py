"""Drawing tracks into RGB frames with OpenCV on small arrays.

A ``Renderer`` is built once per scene (background canvas, foreground of floor/walls/ramp, lighting
gain, camera path) and then draws every variant of that scene, so the plausible clip and its violated
twins differ only where the bodies differ. The floor and walls are drawn over the bodies: a body
pushed into them is hidden there, as sinking through a surface looks. Everything moves by fractions
of a pixel, the camera too (:func:`view_at`): a view cut at whole pixels holds still between jumps of
a pixel wherever a pan is slow, a stutter no camera makes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np

from phyprobe.world.planar.scene import FLOOR_BAND, VIEW_HEIGHT, WALL_MARGIN, Scene
from phyprobe.world.planar.simulate import RAMP_RADIUS, Trajectory
from phyprobe.world.seeds import scene_rng

SHIFT = 4  # cv2 sub-pixel bits: positions are drawn to 1/16 px so slow motion stays smooth
ONE = 1 << SHIFT


@dataclass
class Track:
    """What to draw in each frame: one row per drawn item (a body, or a copy of one)."""

    pos: np.ndarray  # (T, M, 2)
    angle: np.ndarray  # (T, M)
    scale: np.ndarray  # (T, M, 2) body-frame x/y scale; 1 for a rigid body
    alpha: np.ndarray  # (T, M) opacity in [0, 1]
    body: tuple[int, ...]  # (M,) index into scene.bodies of the shape each item shows

    @classmethod
    def from_trajectory(cls, traj: Trajectory) -> "Track":
        t, n = traj.angle.shape
        return cls(
            pos=traj.pos.copy(),
            angle=traj.angle.copy(),
            scale=np.ones((t, n, 2)),
            alpha=np.ones((t, n)),
            body=tuple(range(n)),
        )


def camera_path(scene: Scene, plausible: Trajectory) -> np.ndarray:
    """Left edge of the view in world units, per frame. A panning camera eases from where the
    plausible bodies start to where they end (at least a quarter view), so it keeps them in shot;
    every variant of a scene uses this same path, so the camera never gives a violation away."""
    margin = WALL_MARGIN * scene.view_width
    lo, hi = -margin, scene.world_width + margin - scene.view_width
    if scene.style.camera == "static":
        return np.full(scene.num_frames, lo)
    centre = plausible.pos[:, :, 0].mean(axis=1)
    start, end = centre[0] - scene.view_width / 2, centre[-1] - scene.view_width / 2
    sweep = 0.25 * scene.view_width * scene.style.pan_direction
    if abs(end - start) < abs(sweep):
        mid = (start + end) / 2
        start, end = mid - sweep / 2, mid + sweep / 2
    u = np.linspace(0.0, 1.0, scene.num_frames)
    u = u * u * (3 - 2 * u)
    return np.clip(start + (end - start) * u, lo, hi)


class Renderer:
    def __init__(self, scene: Scene, plausible: Trajectory):
        self.scene = scene
        st = scene.style
        self.h, self.w = st.height, st.width
        self.k = scene.pixels_per_unit
        self.margin = WALL_MARGIN * scene.view_width
        canvas_w = int(math.ceil((scene.world_width + 2 * self.margin) * self.k)) + 2
        rng = scene_rng(scene.seed, scene.index, 1)
        self.background = _background(st.background, st.background_colours, self.h, canvas_w, rng)
        self.foreground, self.fg_mask = self._foreground(canvas_w)
        self.gain = _lighting(st.lighting, self.h, self.w, rng)
        self.cam_px = np.clip((camera_path(scene, plausible) + self.margin) * self.k, 0, canvas_w - self.w - 1)
        # float once, not per frame, for view_at: the canvas, the floor and walls' coverage, and their colour
        # premultiplied by it
        self._canvas = self.background.astype(np.float32)
        self._cover = self.fg_mask.astype(np.float32)[..., None]
        self._fg_over = self.foreground * self._cover

    def to_px(self, x: np.ndarray, y: np.ndarray, t: int) -> tuple[np.ndarray, np.ndarray]:
        """World to canvas-free frame pixels (float) at frame t."""
        px = (x + self.margin) * self.k - self.cam_px[t]
        py = self.h - (y + FLOOR_BAND * VIEW_HEIGHT) * self.k
        return px, py

    def _foreground(self, canvas_w: int) -> tuple[np.ndarray, np.ndarray]:
        sc, k = self.scene, self.k
        fg = np.zeros((self.h, canvas_w, 3), np.uint8)
        floor_y = int(round(self.h - FLOOR_BAND * VIEW_HEIGHT * k))
        colour = sc.style.floor_colour
        wall = tuple(int(c * 0.75) for c in colour)
        fg[floor_y:] = colour
        left = int(round(self.margin * k))
        right = int(round((self.margin + sc.world_width) * k))
        fg[:floor_y, :left] = wall
        fg[:floor_y, right:] = wall
        if sc.ramp is not None:
            (x0, y0), (x1, y1) = sc.ramp
            p = [
                (
                    int(round((x + self.margin) * k * ONE)),
                    int(round((self.h - (y + FLOOR_BAND * VIEW_HEIGHT) * k) * ONE)),
                )
                for x, y in ((x0, y0), (x1, y1))
            ]
            cv2.line(fg, p[0], p[1], wall, max(1, int(round(2 * RAMP_RADIUS * k))), cv2.LINE_AA, SHIFT)
        mask = fg.any(axis=2)
        mask[floor_y:] = True
        return fg, mask

    def render(self, track: Track) -> np.ndarray:
        t_count = track.pos.shape[0]
        frames = np.empty((t_count, self.h, self.w, 3), np.uint8)
        for t in range(t_count):
            x = self.cam_px[t]
            frame = view_at(self._canvas, x, self.w).round().astype(np.uint8)
            for m, b in enumerate(track.body):
                a = track.alpha[t, m]
                if a <= 0:
                    continue
                if a >= 1:
                    self._draw_body(frame, track, t, m, b)
                else:
                    layer = frame.copy()
                    self._draw_body(layer, track, t, m, b)
                    cv2.addWeighted(layer, float(a), frame, float(1 - a), 0.0, dst=frame)
            cover = view_at(self._cover, x, self.w)
            frame = (frame * (1 - cover) + view_at(self._fg_over, x, self.w)).round().astype(np.uint8)
            if self.gain is not None:
                frame = cv2.multiply(frame, self.gain, dtype=cv2.CV_8U)
            frames[t] = frame
        return frames

    def _draw_body(self, frame: np.ndarray, track: Track, t: int, m: int, b: int) -> None:
        spec = self.scene.bodies[b]
        (x, y), ang = track.pos[t, m], track.angle[t, m]
        sx, sy = track.scale[t, m]
        cx, cy = self.to_px(np.array(x), np.array(y), t)
        c, s = math.cos(ang), math.sin(ang)
        style = self.scene.style.texture
        centre = (int(round(cx * ONE)), int(round(cy * ONE)))
        if spec.kind == "circle":
            axes = (
                max(1, int(round(spec.radius * sx * self.k * ONE))),
                max(1, int(round(spec.radius * sy * self.k * ONE))),
            )
            cv2.ellipse(frame, centre, axes, -math.degrees(ang), 0, 360, spec.colour, -1, cv2.LINE_AA, SHIFT)
            if style == "outline":
                cv2.ellipse(frame, centre, axes, -math.degrees(ang), 0, 360, spec.mark_colour, 1, cv2.LINE_AA, SHIFT)
        else:
            v = np.asarray(spec.vertices) * (sx, sy)
            wx = x + v[:, 0] * c - v[:, 1] * s
            wy = y + v[:, 0] * s + v[:, 1] * c
            px, py = self.to_px(wx, wy, t)
            pts = np.round(np.stack([px, py], 1) * ONE).astype(np.int32)
            cv2.fillConvexPoly(frame, pts, spec.colour, cv2.LINE_AA, SHIFT)
            if style == "outline":
                cv2.polylines(frame, [pts], True, spec.mark_colour, 1, cv2.LINE_AA, SHIFT)
        r = spec.radius * 0.8
        if style == "stripe":
            ends = np.array([[-r * sx, 0.0], [r * sx, 0.0]])
            px, py = self.to_px(x + ends[:, 0] * c - ends[:, 1] * s, y + ends[:, 0] * s + ends[:, 1] * c, t)
            thick = max(1, int(round(0.15 * spec.radius * self.k)))
            cv2.line(
                frame,
                (int(px[0] * ONE), int(py[0] * ONE)),
                (int(px[1] * ONE), int(py[1] * ONE)),
                spec.mark_colour,
                thick,
                cv2.LINE_AA,
                SHIFT,
            )
        elif style == "dot":
            dx, dy = 0.45 * r * sx, 0.0
            px, py = self.to_px(np.array(x + dx * c - dy * s), np.array(y + dx * s + dy * c), t)
            rad = max(ONE, int(round(0.25 * spec.radius * min(sx, sy) * self.k * ONE)))
            cv2.circle(
                frame, (int(round(px * ONE)), int(round(py * ONE))), rad, spec.mark_colour, -1, cv2.LINE_AA, SHIFT
            )


def view_at(canvas: np.ndarray, x: float, width: int) -> np.ndarray:
    """(H, width, C) of a float32 (H, W, C) canvas seen from left edge ``x`` (px, fractional), each pixel the mean
    of the canvas over its footprint, as a sensor integrates a scene of flat-coloured canvas pixels: a linear
    blend of the two whole-pixel views around ``x``. At a whole ``x`` it is the canvas' own pixels (a view)."""
    x0 = int(math.floor(x))
    f = np.float32(x - x0)
    left = canvas[:, x0 : x0 + width]
    return left if f == 0 else (1 - f) * left + f * canvas[:, x0 + 1 : x0 + 1 + width]


def _background(kind: str, colours, h: int, w: int, rng: np.random.Generator) -> np.ndarray:
    c1, c2 = (np.array(c, np.float32) for c in colours)
    if kind == "flat":
        return np.broadcast_to(c1.astype(np.uint8), (h, w, 3)).copy()
    if kind == "gradient":
        u = np.linspace(0, 1, h, dtype=np.float32)[:, None, None]
        return np.broadcast_to((c1 * (1 - u) + c2 * u).astype(np.uint8), (h, w, 3)).copy()
    yy, xx = np.mgrid[0:h, 0:w]
    if kind == "checker":
        cell = int(rng.integers(6, 18))
        sel = ((yy // cell + xx // cell) % 2).astype(bool)
    elif kind == "stripes":
        period = int(rng.integers(6, 20))
        sel = (xx % period) < period // 2
    elif kind == "noise":
        small = rng.random((max(2, h // 10), max(2, w // 10))).astype(np.float32)
        u = cv2.resize(small, (w, h), interpolation=cv2.INTER_CUBIC).clip(0, 1)[..., None]
        return (c1 * (1 - u) + c2 * u).astype(np.uint8)
    elif kind == "bricks":
        bh = int(rng.integers(7, 12))
        bw = 2 * bh + 4
        row = yy // bh
        sel = ((yy % bh) == 0) | (((xx + (row % 2) * (bw // 2)) % bw) == 0)
    else:
        raise ValueError(f"unknown background {kind!r}")
    out = np.where(sel[..., None], c2, c1)
    return out.astype(np.uint8)


def _lighting(kind: str, h: int, w: int, rng: np.random.Generator) -> np.ndarray | None:
    """Per-pixel gain (float32, H x W x 3) applied after drawing; None for even lighting."""
    if kind == "even":
        return None
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    if kind == "vignette":
        r = np.hypot((xx - w / 2) / (w / 2), (yy - h / 2) / (h / 2))
        g = 1.1 - float(rng.uniform(0.2, 0.45)) * r**2
    elif kind == "side":
        lo, hi = sorted(rng.uniform(0.65, 1.25, size=2))
        g = lo + (hi - lo) * (xx / w if rng.random() < 0.5 else 1 - xx / w)
    elif kind == "dim":
        g = np.full((h, w), float(rng.uniform(0.55, 0.8)), np.float32)
    else:
        raise ValueError(f"unknown lighting {kind!r}")
    return np.repeat(g[..., None], 3, axis=2).astype(np.float32)
