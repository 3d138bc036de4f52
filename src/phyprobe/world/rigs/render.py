"""Drawing rigs tracks with the world's own rasteriser (numpy; no drawing code shared with the other
worlds): a flat, outlined, diagram-like look. Every shape is a signed distance field evaluated on the
pixels it covers, and its coverage (half a pixel either side of the edge) anti-aliases fills, dark
outlines, rods and zig-zag springs alike.

The static part of a picture (a paper, wood, drafting-grid or dot-grid background from smoothed noise in
world coordinates, the ceiling bar with its hatching and hangers, or the incline, the hatched floor and the
end wall) is rasterised once per look at twice the frame's resolution over a margin, then resampled through
the camera for each frame: a 2-D similarity (offset, zoom, a small roll, and the look's mirror). Bodies,
their soft drop shadows, rods and springs are drawn per frame; a light's brightness gradient and tint and
mild sensor noise (the same for a frame index in every twin) finish it.

A track is what to draw per frame: a centre, an angle, a scale and an opacity per item, plus the item's
tie (a pendulum's pivot, a cart's spring anchor). The last item is a copy of some body that the plausible
run never shows (opacity 0): the ``appear`` violation fades it in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.ndimage import gaussian_filter, map_coordinates

from phyprobe.world.rigs.scene import Scene, Style
from phyprobe.world.rigs.simulate import Trajectory

SUPER = 2  # the static layer's resolution over the frame's
NOISE = 1.6  # sensor noise, grey levels (standard deviation)


@dataclass
class Track:
    pos: np.ndarray  # (T, K, 2) centres, metres
    angle: np.ndarray  # (T, K)
    scale: np.ndarray  # (T, K, 2) on the body's half-extents
    alpha: np.ndarray  # (T, K) opacity in [0, 1]
    look: tuple[int, ...]  # (K,) the scene body each item wears
    tie: np.ndarray  # (K, 2) a pendulum's pivot or a cart's spring anchor; nan: none

    @classmethod
    def from_trajectory(cls, traj: Trajectory, scene: Scene) -> "Track":
        t, n = traj.pos.shape[:2]
        pos = np.concatenate([traj.pos, traj.pos[:, :1]], axis=1)
        angle = np.concatenate([traj.angle, traj.angle[:, :1]], axis=1)
        alpha = np.concatenate([np.ones((t, n)), np.zeros((t, 1))], axis=1)
        tie = np.full((n + 1, 2), np.nan)
        for i, b in enumerate(scene.bodies):
            if b.kind == "bob":
                tie[i] = scene.pendulums[i].pivot
            elif b.kind == "cart":
                tie[i] = (scene.slope.wall_x, b.half[1] * 1.1)
        return cls(pos, angle, np.ones((t, n + 1, 2)), alpha, tuple(range(n)) + (0,), tie)

    def drawn(self) -> np.ndarray:
        return self.alpha > 0

    def same_until(self, other: "Track") -> int:
        """The first frame the two tracks draw differently (their length if never); an invisible item's state
        does not count."""
        shown = self.drawn() | other.drawn()
        tie = ~((self.tie == other.tie) | (np.isnan(self.tie) & np.isnan(other.tie))).all(-1)
        diff = (
            (self.pos != other.pos).any(-1)
            | (self.angle != other.angle)
            | (self.scale != other.scale).any(-1)
            | (self.alpha != other.alpha)
            | ((np.array(self.look) != np.array(other.look)) | tie)[None]
        ) & shown
        d = np.flatnonzero(diff.any(1))
        return int(d[0]) if len(d) else len(self.pos)


def _cover(sdf: np.ndarray, px: float) -> np.ndarray:
    """Coverage of a shape with signed distance ``sdf`` (metres) on pixels of size ``px`` metres."""
    return np.clip(0.5 - sdf / px, 0.0, 1.0)


def sd_box(x, y, cx, cy, hx, hy, angle=0.0):
    c, s = math.cos(angle), math.sin(angle)
    dx, dy = x - cx, y - cy
    lx, ly = np.abs(c * dx + s * dy) - hx, np.abs(-s * dx + c * dy) - hy
    return np.hypot(np.maximum(lx, 0), np.maximum(ly, 0)) + np.minimum(np.maximum(lx, ly), 0)


def sd_segment(x, y, ax, ay, bx, by):
    dx, dy = bx - ax, by - ay
    h = np.clip(((x - ax) * dx + (y - ay) * dy) / max(dx * dx + dy * dy, 1e-12), 0.0, 1.0)
    return np.hypot(x - ax - h * dx, y - ay - h * dy)


def sd_triangle(x, y, pts):
    """Signed distance (exact outside near edges, exact inside) to a counter-clockwise triangle."""
    out = np.full(np.shape(x), np.inf)
    inside = np.ones(np.shape(x), bool)
    for k in range(3):
        (ax, ay), (bx, by) = pts[k], pts[(k + 1) % 3]
        out = np.minimum(out, sd_segment(x, y, ax, ay, bx, by))
        inside &= (bx - ax) * (y - ay) - (by - ay) * (x - ax) >= 0
    return np.where(inside, -out, out)


def _value_noise(seed: int, shape: tuple[int, int], sigma: float) -> np.ndarray:
    field = gaussian_filter(np.random.default_rng(seed).uniform(size=shape), sigma, mode="wrap")
    field -= field.min()
    return field / max(field.max(), 1e-9)


@lru_cache(maxsize=96)
def _sensor_noise(seed: int, t: int, shape: tuple[int, ...]) -> np.ndarray:
    """Frame ``t``'s sensor noise: the same in every twin of a scene (kept: every twin draws it again)."""
    noise = np.random.default_rng([seed, t]).normal(0.0, NOISE, shape)
    noise.flags.writeable = False
    return noise


class Renderer:
    def __init__(self, scene: Scene, style: Style):
        self.scene, self.style = scene, style
        self.w, self.h = style.width, style.height
        cx, cy, vw, vh = scene.view_rect()
        self.centre, self.view_w = (cx, cy), vw
        self.px = vw / self.w  # metres per pixel of a static camera
        self.ink = np.array(style.ink, float)
        self.paper = np.array(style.paper, float)
        self.structure = np.array(style.structure, float)
        self.outline = 1.1 * self.px
        lt = style.light
        u = (np.arange(self.w) + 0.5)[None, :] / self.w - 0.5
        v = (np.arange(self.h) + 0.5)[:, None] / self.h - 0.5
        grad = lt.brightness * (1.0 + lt.gradient * (u * math.cos(lt.angle) + v * math.sin(lt.angle)))
        self.light = grad[..., None] * np.array(lt.tint)
        self.wall_h = 0.75 * scene.extent[3]
        self._layer()
        self._cache: dict[int, np.ndarray] = {}

    # --- camera -------------------------------------------------------------------------------------
    def camera(self, t: int) -> tuple[float, float, float, float]:
        """(centre x, centre y, metres per pixel, roll) at frame ``t``."""
        cam = self.style.camera
        cx, cy = self.centre
        u = t / max(1, self.scene.num_frames - 1)
        zoom = 1.0
        for path in cam.path.split("+"):
            if path == "pan":
                cx += cam.amount * self.view_w * (u - 0.5) * (1 if math.cos(cam.phase) >= 0 else -1)
            elif path == "zoom":
                zoom *= 1 + cam.amount * u
            elif path == "shake":
                s = t / self.scene.fps
                cx += (
                    cam.amount
                    * self.view_w
                    * (math.sin(8.0 * s + cam.phase) + 0.5 * math.sin(15.0 * s + 2 * cam.phase))
                )
                cy += (
                    cam.amount
                    * self.view_w
                    * (math.sin(10.0 * s + 3 * cam.phase) + 0.5 * math.sin(19.0 * s + cam.phase))
                )
        return cx, cy, self.px / zoom, cam.roll

    def _world(self, t: int, u: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """World coordinates of pixel centres (u right, v down)."""
        cx, cy, mpp, roll = self.camera(t)
        a = (u + 0.5 - self.w / 2) * mpp * (-1 if self.style.mirror else 1)
        b = (self.h / 2 - v - 0.5) * mpp
        c, s = math.cos(roll), math.sin(roll)
        return cx + c * a - s * b, cy + s * a + c * b

    def _pixel(self, t: int, x: float, y: float) -> tuple[float, float]:
        cx, cy, mpp, roll = self.camera(t)
        c, s = math.cos(roll), math.sin(roll)
        dx, dy = x - cx, y - cy
        a, b = c * dx + s * dy, -s * dx + c * dy
        return self.w / 2 + a / mpp * (-1 if self.style.mirror else 1) - 0.5, self.h / 2 - b / mpp - 0.5

    # --- the static layer ---------------------------------------------------------------------------
    def _layer(self) -> None:
        sc, _st = self.scene, self.style
        cx, cy = self.centre
        self.lw, self.lh = self.view_w * 1.4, self.view_w * (1.4 * self.h / self.w + 0.2)
        self.lpx = self.px / SUPER
        nx, ny = int(self.lw / self.lpx), int(self.lh / self.lpx)
        self.lx0, self.ly1 = cx - self.lw / 2, cy + self.lh / 2
        x = self.lx0 + (np.arange(nx) + 0.5)[None, :] * self.lpx + 0 * np.arange(ny)[:, None]
        y = self.ly1 - (np.arange(ny) + 0.5)[:, None] * self.lpx + 0 * np.arange(nx)[None, :]
        img = self.paper * self._texture(x, y)[..., None]
        (self._pendulum_scenery if sc.view == "pendulums" else self._slope_scenery)(img, x, y)
        self.layer = img.astype(np.float32)

    def _texture(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        st, sc = self.style, self.scene
        cell = sc.scale / 12
        fine = _value_noise(st.texture_seed, (96, 96), 1.2)
        coarse = _value_noise(st.texture_seed + 1, (48, 48), 2.0)

        def sample(field, sx, sy):
            n = field.shape[0]
            return map_coordinates(field, [(sy % n).ravel(), (sx % n).ravel()], order=1, mode="grid-wrap").reshape(
                x.shape
            )

        if st.texture == "paper":
            return 0.9 + 0.07 * sample(fine, x / cell * 4, y / cell * 4) + 0.05 * sample(coarse, x / cell, y / cell)
        if st.texture == "wood":
            warp = sample(coarse, x / cell * 0.3, y / cell * 1.5)
            grain = 0.5 + 0.5 * np.sin((y / cell * 2.6 + 3.0 * warp) * math.pi)
            return 0.86 + 0.08 * grain + 0.06 * sample(fine, x / cell * 0.5, y / cell * 8)
        d = self.lpx
        if st.texture == "grid":
            fx, fy = np.abs(x / cell - np.round(x / cell)) * cell, np.abs(y / cell - np.round(y / cell)) * cell
            mx, my = (
                np.abs(x / (5 * cell) - np.round(x / (5 * cell))) * 5 * cell,
                np.abs(y / (5 * cell) - np.round(y / (5 * cell))) * 5 * cell,
            )
            minor = np.clip(1.0 - np.minimum(fx, fy) / (0.7 * d), 0, 1)
            major = np.clip(1.0 - np.minimum(mx, my) / (1.4 * d), 0, 1)
            return (0.97 + 0.03 * sample(fine, x / cell * 3, y / cell * 3)) * (1 - 0.1 * minor) * (1 - 0.14 * major)
        if st.texture == "dots":
            gx, gy = x / cell - np.round(x / cell), y / cell - np.round(y / cell)
            dot = np.clip(1.0 - (np.hypot(gx, gy) * cell - 0.07 * cell) / d, 0, 1)
            return (0.95 + 0.05 * sample(coarse, x / cell, y / cell)) * (1 - 0.22 * dot)
        raise ValueError(f"unknown texture {st.texture!r}")

    def _paint(self, img, sdf, fill, px, outline: bool = True, alpha: float = 1.0) -> None:
        outer = _cover(sdf, px) * alpha
        if outline:
            inner = _cover(sdf + self.outline, px) * alpha
            colour = self.ink * (outer - inner)[..., None] + fill * inner[..., None]
        else:
            colour = fill * outer[..., None]
        img *= 1.0 - outer[..., None]
        img += colour

    def _hatch(self, x, y, spacing: float) -> np.ndarray:
        f = (x + y) / spacing
        return np.clip(1.0 - np.abs(f - np.round(f)) * spacing / (0.8 * self.lpx * SUPER), 0, 1)

    def _pendulum_scenery(self, img, x, y) -> None:
        sc = self.scene
        la = max(p.length for p in sc.pendulums)
        xs = [p.pivot[0] for p in sc.pendulums]
        x0, x1 = min(xs) - 0.25 * la, max(xs) + 0.25 * la
        thick = 0.035 * la
        bar = sd_box(x, y, (x0 + x1) / 2, sc.bar_y + thick / 2, (x1 - x0) / 2, thick / 2)
        band = sd_box(x, y, (x0 + x1) / 2, sc.bar_y + thick + 0.03 * la, (x1 - x0) / 2, 0.03 * la)
        hatch = np.clip(self._hatch(x, y, 0.04 * la) * _cover(band, self.lpx), 0, 1)
        img *= 1.0 - hatch[..., None] * 0.8
        img += hatch[..., None] * 0.8 * self.ink
        self._paint(img, bar, self.structure, self.lpx)
        for p in sc.pendulums:
            if sc.bar_y - p.pivot[1] > 1e-6:
                hanger = sd_box(x, y, p.pivot[0], (sc.bar_y + p.pivot[1]) / 2, 0.012 * la, (sc.bar_y - p.pivot[1]) / 2)
                self._paint(img, hanger, self.structure, self.lpx)

    def _solid(self, x, y):
        """Signed distance to the ground, the incline's wedge and the end wall (slope view)."""
        sl = self.scene.slope
        top = (-sl.top * math.cos(sl.angle), sl.top * math.sin(sl.angle))
        wedge = sd_triangle(x, y, [(top[0], 0.0), (0.0, 0.0), top])
        wall = sd_box(
            x, y, sl.wall_x + 0.05 * self.scene.scale, 0.5 * self.wall_h, 0.05 * self.scene.scale, 0.5 * self.wall_h
        )
        return np.minimum(np.minimum(wedge, y), wall), wedge, wall

    def _slope_scenery(self, img, x, y) -> None:
        sc = self.scene
        solid, wedge, wall = self._solid(x, y)
        ground = np.maximum(y, -y - 0.06 * sc.scale)
        hatch = self._hatch(x, y, 0.035 * sc.scale)
        fill = self.structure * (1.0 - 0.35 * hatch)[..., None] + self.ink * 0.35 * hatch[..., None]
        band = _cover(ground, self.lpx)
        img *= 1.0 - band[..., None]
        img += (self.paper * 0.9 * (1 - 0.7 * hatch)[..., None] + self.ink * 0.7 * hatch[..., None]) * band[..., None]
        line = np.abs(y) - 0.6 * self.lpx * SUPER
        self._paint(img, line, self.ink, self.lpx, outline=False)
        self._paint(img, wedge, fill, self.lpx)
        self._paint(img, wall, fill, self.lpx)

    def background(self, t: int) -> np.ndarray:
        cam = self.style.camera
        if cam.path == "static" and 0 in self._cache:
            return self._cache[0].copy()
        u = np.arange(self.w)[None, :] + 0 * np.arange(self.h)[:, None]
        v = np.arange(self.h)[:, None] + 0 * np.arange(self.w)[None, :]
        # bilinear from the 2x layer at each pixel's centre: a 2x2 box filter of it where the camera is still
        x, y = self._world(t, u, v)
        col = np.clip((x - self.lx0) / self.lpx - 0.5, 0, self.layer.shape[1] - 1.001)
        row = np.clip((self.ly1 - y) / self.lpx - 0.5, 0, self.layer.shape[0] - 1.001)
        c0, r0 = col.astype(int), row.astype(int)
        fc, fr = (col - c0).astype(np.float32)[..., None], (row - r0).astype(np.float32)[..., None]
        lay = self.layer  # float32: the gather is the frame's main cost
        out = (
            (lay[r0, c0] * (1 - fc) + lay[r0, c0 + 1] * fc) * (1 - fr)
            + (lay[r0 + 1, c0] * (1 - fc) + lay[r0 + 1, c0 + 1] * fc) * fr
        ).astype(np.float64)
        if cam.path == "static":
            self._cache[0] = out.copy()
        return out

    # --- bodies -------------------------------------------------------------------------------------
    def _patch(self, t: int, x: float, y: float, radius: float):
        cu, cv = self._pixel(t, x, y)
        rp = radius / self.camera(t)[2] + 3
        u0, u1 = max(0, int(cu - rp)), min(self.w, int(cu + rp) + 2)
        v0, v1 = max(0, int(cv - rp)), min(self.h, int(cv + rp) + 2)
        if u0 >= u1 or v0 >= v1:
            return None
        u = np.arange(u0, u1)[None, :] + 0 * np.arange(v0, v1)[:, None]
        v = np.arange(v0, v1)[:, None] + 0 * np.arange(u0, u1)[None, :]
        px, py = self._world(t, u, v)
        return (slice(v0, v1), slice(u0, u1)), px, py

    def _body_sdf(self, look: int, x, y, c, angle, scale):
        b = self.scene.bodies[look]
        hx, hy = b.half[0] * scale[0], b.half[1] * scale[1]
        if b.shape == "disc":
            return np.hypot(x - c[0], y - c[1]) - hx * 0.5 - hy * 0.5
        if b.kind == "cart":
            cs, sn = math.cos(angle), math.sin(angle)
            off = (-sn * 0.15 * hy, cs * 0.15 * hy)
            return sd_box(x, y, c[0] + off[0], c[1] + off[1], hx, 0.7 * hy, angle) + 0.0
        return sd_box(x, y, c[0], c[1], hx, hy, angle) - 0.0

    def _draw_body(self, img, t, look, c, angle, scale, alpha, shadow: bool, solid_mask: bool):
        b = self.scene.bodies[look]
        r = math.hypot(b.half[0] * scale[0], b.half[1] * scale[1]) + (6 * self.px if shadow else 0)
        got = self._patch(t, c[0], c[1], r)
        if got is None:
            return
        sl, x, y = got
        mpp = self.camera(t)[2]
        patch = img[sl]
        if shadow:
            lt = self.style.light
            dx, dy = lt.shadow[0] * mpp * (-1 if self.style.mirror else 1), -lt.shadow[1] * mpp
            sdf = self._body_sdf(look, x - dx, y - dy, c, angle, scale)
            dark = lt.darkness * alpha * np.clip(0.5 - sdf / (2.5 * mpp), 0, 1)
            if solid_mask:
                dark *= 1.0 - _cover(self._solid(x, y)[0], mpp)
            patch *= (1.0 - dark)[..., None]
            return
        sdf = self._body_sdf(look, x, y, c, angle, scale)
        if b.kind == "cart":
            cs, sn = math.cos(angle), math.sin(angle)
            for side in (-0.55, 0.55):
                wx = c[0] + cs * side * b.half[0] * scale[0] + sn * 0.7 * b.half[1] * scale[1]
                wy = c[1] + sn * side * b.half[0] * scale[0] - cs * 0.7 * b.half[1] * scale[1]
                sdf = np.minimum(sdf, np.hypot(x - wx, y - wy) - 0.3 * b.half[1] * scale[1])
        # the pattern, in the body's own frame, scaled to its half-extents
        cs, sn = math.cos(angle), math.sin(angle)
        hx, hy = b.half[0] * scale[0], b.half[1] * scale[1]
        lx, ly = (cs * (x - c[0]) + sn * (y - c[1])) / hx, (-sn * (x - c[0]) + cs * (y - c[1])) / hy
        if b.pattern == "stripe":
            sd = (np.abs(ly) - 0.28) * hy
        elif b.pattern == "dot":
            sd = (np.hypot(lx, ly) - 0.42) * min(hx, hy)
        elif b.pattern == "half":
            sd = (lx + ly) * min(hx, hy) / math.sqrt(2)
        else:
            sd = np.full(x.shape, np.inf)
        second = _cover(sd, mpp)[..., None]
        fill = np.array(b.colour, float) * (1 - second) + np.array(b.colour2, float) * second
        if solid_mask:
            alpha_field = alpha * (1.0 - _cover(self._solid(x, y)[0], mpp))
            outer = _cover(sdf, mpp) * alpha_field
            inner = _cover(sdf + self.outline, mpp) * alpha_field
            colour = self.ink * (outer - inner)[..., None] + fill * inner[..., None]
            patch *= 1.0 - outer[..., None]
            patch += colour
        else:
            self._paint(patch, sdf, fill, mpp, alpha=alpha)

    def _line(self, img, t, a, b, width: float, colour, alpha: float):
        mid = ((a[0] + b[0]) / 2, (a[1] + b[1]) / 2)
        got = self._patch(t, mid[0], mid[1], math.hypot(b[0] - a[0], b[1] - a[1]) / 2 + width)
        if got is None:
            return
        sl, x, y = got
        mpp = self.camera(t)[2]
        self._paint(
            img[sl], sd_segment(x, y, a[0], a[1], b[0], b[1]) - width / 2, colour, mpp, outline=False, alpha=alpha
        )

    def _spring(self, img, t, a, b, half_h: float, alpha: float):
        got = self._patch(t, (a[0] + b[0]) / 2, (a[1] + b[1]) / 2, abs(b[0] - a[0]) / 2 + half_h + 0.02)
        if got is None:
            return
        sl, x, y = got
        mpp = self.camera(t)[2]
        coils = 9
        xs = np.linspace(a[0], b[0], coils * 2 + 1)
        ys = a[1] + half_h * np.array([0] + [(-1) ** k for k in range(coils * 2 - 1)] + [0]) * 0.55
        sdf = np.full(x.shape, np.inf)
        for k in range(len(xs) - 1):
            sdf = np.minimum(sdf, sd_segment(x, y, xs[k], ys[k], xs[k + 1], ys[k + 1]))
        self._paint(img[sl], sdf - 0.7 * self.px, self.ink, mpp, outline=False, alpha=alpha)

    def frame(self, track: Track, t: int) -> np.ndarray:
        img = self.background(t)
        slope = self.scene.view == "slope"
        shown = np.flatnonzero(track.alpha[t] > 0)
        for k in shown:
            self._draw_body(
                img,
                t,
                track.look[k],
                track.pos[t, k],
                float(track.angle[t, k]),
                track.scale[t, k],
                float(track.alpha[t, k]),
                True,
                slope,
            )
        for k in shown:
            body = self.scene.bodies[track.look[k]]
            tie = track.tie[k]
            if np.isnan(tie).any():
                continue
            a = float(track.alpha[t, k])
            if body.kind == "bob":
                self._line(img, t, tuple(tie), tuple(track.pos[t, k]), 1.6 * self.px, self.ink, a)
            elif body.kind == "cart":
                face = (track.pos[t, k, 0] + body.half[0] * track.scale[t, k, 0], tie[1])
                self._spring(img, t, face, tuple(tie), body.half[1], a)
        for k in shown:
            self._draw_body(
                img,
                t,
                track.look[k],
                track.pos[t, k],
                float(track.angle[t, k]),
                track.scale[t, k],
                float(track.alpha[t, k]),
                False,
                slope,
            )
        for k in shown:  # pivot pins over the rods
            if self.scene.bodies[track.look[k]].kind == "bob" and not np.isnan(track.tie[k]).any():
                got = self._patch(t, track.tie[k, 0], track.tie[k, 1], 3 * self.px)
                if got is not None:
                    sl, x, y = got
                    ring = np.hypot(x - track.tie[k, 0], y - track.tie[k, 1]) - 1.8 * self.px
                    self._paint(img[sl], ring, self.paper, self.camera(t)[2], alpha=float(track.alpha[t, k]))
        img *= self.light
        return np.clip(np.rint(img + _sensor_noise(self.style.noise_seed, t, img.shape)), 0, 255).astype(np.uint8)

    def render(self, track: Track, start: int = 0) -> np.ndarray:
        """(T - start, H, W, 3) uint8 frames from ``start`` on."""
        return np.stack([self.frame(track, t) for t in range(start, len(track.pos))])
