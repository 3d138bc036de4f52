"""Drawing marbles tracks with the world's own rasteriser (numpy; no drawing code shared with the other
worlds): shaded spheres with a specular highlight and a pattern that turns with the ball, soft shadows on
the floor or cloth, procedural textures in world coordinates, and a camera that pans, zooms or shakes.

A track is what to draw per frame: a position, a radius, an opacity and an orientation per item. The
last item is a copy of some ball that the plausible run never shows (opacity 0): the ``appear``
violation fades it in. Violations that only change what is drawn edit the track, not the physics.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from phyprobe.world.marbles.scene import Camera, Light, Scene, Style
from phyprobe.world.marbles.simulate import Trajectory


@dataclass
class Track:
    pos: np.ndarray  # (T, K, 2) metres
    radius: np.ndarray  # (T, K) metres
    alpha: np.ndarray  # (T, K) opacity in [0, 1]
    rot: np.ndarray  # (T, K, 3, 3)
    look: tuple[int, ...]  # (K,) the scene ball whose colours and pattern each item wears

    @classmethod
    def from_trajectory(cls, traj: Trajectory, scene: Scene) -> "Track":
        t, n = traj.pos.shape[:2]
        pos = np.concatenate([traj.pos, traj.pos[:, :1]], axis=1)
        rot = np.concatenate([traj.rot, traj.rot[:, :1]], axis=1)
        radius = np.tile(np.array([b.radius for b in scene.balls] + [scene.balls[0].radius]), (t, 1))
        alpha = np.concatenate([np.ones((t, n)), np.zeros((t, 1))], axis=1)
        return cls(pos, radius, alpha, rot, tuple(range(n)) + (0,))

    def drawn(self) -> np.ndarray:
        """(T, K) whether each item shows at all in each frame."""
        return self.alpha > 0

    def same_until(self, other: "Track") -> int:
        """The first frame the two tracks draw differently (their length if never); an invisible item's
        state does not count."""
        shown = self.drawn() | other.drawn()
        diff = (
            (self.pos != other.pos).any(-1)
            | (self.radius != other.radius)
            | (self.alpha != other.alpha)
            | (self.rot != other.rot).any((-1, -2))
            | (np.array(self.look) != np.array(other.look))[None]
        ) & shown
        d = np.flatnonzero(diff.any(1))
        return int(d[0]) if len(d) else len(self.pos)


def _hash(i: np.ndarray, j: np.ndarray, seed: int) -> np.ndarray:
    """A deterministic pseudo-random value in [0, 1) per integer cell (the classic shader hash)."""
    v = np.sin(i * 12.9898 + j * 78.233 + (seed % 9973) * 0.137) * 43758.5453
    return v - np.floor(v)


def texture(kind: str, x: np.ndarray, y: np.ndarray, seed: int) -> np.ndarray:
    """A brightness factor around 1 at world coordinates (x, y): the pattern stays on the surface when
    the camera moves, so it gives the flow something to follow."""
    if kind == "plain":
        return np.ones_like(x)
    if kind == "noise":  # bilinear value noise on 6 cm cells
        u, v = x / 0.06, y / 0.06
        i, j = np.floor(u), np.floor(v)
        fu, fv = u - i, v - j
        n = (
            (1 - fu) * (1 - fv) * _hash(i, j, seed)
            + fu * (1 - fv) * _hash(i + 1, j, seed)
            + (1 - fu) * fv * _hash(i, j + 1, seed)
            + fu * fv * _hash(i + 1, j + 1, seed)
        )
        return 0.9 + 0.2 * n
    if kind == "tiles":  # 20 cm tiles, grout lines, a little tone per tile
        u, v = x / 0.2, y / 0.2
        grout = (np.abs(u - np.round(u)) < 0.05) | (np.abs(v - np.round(v)) < 0.05)
        return np.where(grout, 0.72, 0.94 + 0.1 * _hash(np.floor(u), np.floor(v), seed))
    if kind == "planks":  # 12 cm boards with staggered seams
        v = y / 0.12
        board = np.floor(v)
        u = x / 0.9 + _hash(board, board * 0.0, seed)
        seam = (np.abs(v - np.round(v)) < 0.04) | (np.abs(u - np.round(u)) < 0.012)
        return np.where(seam, 0.7, 0.88 + 0.2 * _hash(board, np.floor(u), seed))
    raise ValueError(f"unknown texture {kind!r}")


def _light_vector(light: Light) -> np.ndarray:
    ce = math.cos(light.elevation)
    return np.array([ce * math.cos(light.azimuth), ce * math.sin(light.azimuth), math.sin(light.elevation)])


class Renderer:
    def __init__(self, scene: Scene, style: Style):
        self.scene, self.style = scene, style
        self.w, self.h = style.width, style.height
        self.u = (np.arange(self.w) + 0.5)[None, :]
        self.v = (np.arange(self.h) + 0.5)[:, None]
        light = _light_vector(style.light)
        self.light = light
        self.half = (light + np.array([0.0, 0.0, 1.0])) / np.linalg.norm(light + np.array([0.0, 0.0, 1.0]))
        self.tint = np.array(style.light.tint)

    def camera(self, t: int) -> tuple[float, float, float]:
        """(x, y) in metres of the frame's top-left corner and metres per pixel at frame ``t``."""
        x0, y0, vw, vh = self.scene.view_rect()
        cam: Camera = self.style.camera
        u = t / max(1, self.scene.num_frames - 1)
        cx, cy, zoom = x0 + vw / 2, y0 + vh / 2, 1.0
        for path in cam.path.split("+"):
            if path == "pan":
                cx += cam.amount * vw * (u - 0.5) * (1 if math.cos(cam.phase) >= 0 else -1)
            elif path == "zoom":
                zoom *= 1 + cam.amount * u
            elif path == "shake":
                s = t / self.scene.fps
                cx += cam.amount * vw * (math.sin(7.0 * s + cam.phase) + 0.5 * math.sin(13.0 * s + 2 * cam.phase))
                cy += cam.amount * vw * (math.sin(9.0 * s + 3 * cam.phase) + 0.5 * math.sin(17.0 * s + cam.phase))
        mpp = vw / self.w / zoom
        return cx - self.w / 2 * mpp, cy + self.h / 2 * mpp, mpp

    def background(self, left: float, top: float, mpp: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        sc, st = self.scene, self.style
        x = left + self.u * mpp + 0 * self.v
        y = top - self.v * mpp + 0 * self.u
        tex = texture(st.texture, x, y, st.texture_seed)
        inside_x = (x >= 0) & (x <= sc.width_m)
        if sc.view == "side":
            floor = y < 0
            base = np.where(
                floor[..., None],
                np.array(st.ground, float) * (0.75 + 0.25 * np.clip(1 + y / 0.3, 0, 1))[..., None],
                np.where(
                    inside_x[..., None],
                    np.array(st.backdrop, float) * (0.88 + 0.12 * np.clip(y / sc.height_m, 0, 1))[..., None],
                    np.array(st.rail, float),
                ),
            )
            shade = np.where(
                floor, texture("planks" if st.texture != "planks" else "noise", x, y * 6, st.texture_seed + 1), tex
            )
        else:
            cloth = inside_x & (y >= 0) & (y <= sc.height_m)
            cushion = ~cloth & (x > -0.03) & (x < sc.width_m + 0.03) & (y > -0.03) & (y < sc.height_m + 0.03)
            base = np.where(
                cloth[..., None],
                np.array(st.ground, float),
                np.array(st.rail, float) * np.where(cushion, 0.7, 1.0)[..., None],
            )
            shade = np.where(cloth, tex, texture("planks", y, x, st.texture_seed + 1))
        lit = 0.55 + 0.45 * st.light.intensity
        return base * (shade * lit)[..., None] * self.tint, x, y

    def _shadow(self, img: np.ndarray, x: np.ndarray, y: np.ndarray, p: np.ndarray, rad: float, alpha: float) -> None:
        light = self.light
        if self.scene.view == "side":
            h = max(0.0, p[1] - rad)
            reach = h * light[0] / max(light[2], 0.3) * 0.3
            ax, ay = rad * (1.0 + 0.4 * h), 0.3 * rad + 0.015
            d = ((x - p[0] + reach) / ax) ** 2 + ((y + 0.025) / ay) ** 2
            dark = 0.5 * alpha * math.exp(-h / 1.0)
        else:
            off = rad * 0.5 / math.tan(max(self.style.light.elevation, 0.3))
            d = ((x - p[0] + off * light[0]) ** 2 + (y - p[1] + off * light[1]) ** 2) / (1.05 * rad) ** 2
            dark = 0.4 * alpha
        f = 1.0 - dark * np.clip((1.0 - d) * 3.0, 0.0, 1.0)
        img *= f[..., None]

    def _ball(
        self,
        img: np.ndarray,
        left: float,
        top: float,
        mpp: float,
        p: np.ndarray,
        rad: float,
        alpha: float,
        rot: np.ndarray,
        look: int,
    ) -> None:
        ball = self.scene.balls[look]
        cu, cv, rp = (p[0] - left) / mpp, (top - p[1]) / mpp, rad / mpp
        u0, u1 = max(0, int(cu - rp - 2)), min(self.w, int(cu + rp + 3))
        v0, v1 = max(0, int(cv - rp - 2)), min(self.h, int(cv + rp + 3))
        if u0 >= u1 or v0 >= v1:
            return
        a = (self.u[:, u0:u1] - cu) / rp + 0 * self.v[v0:v1]
        b = -(self.v[v0:v1] - cv) / rp + 0 * self.u[:, u0:u1]
        rho = np.sqrt(a * a + b * b)
        cover = np.clip(rp * (1.0 - rho) + 0.5, 0.0, 1.0) * alpha
        rim = np.maximum(rho, 1.0)
        n = np.stack([a / rim, b / rim, np.sqrt(np.clip(1.0 - rho * rho, 0.0, 1.0))], axis=-1)
        q = n @ rot  # the pixel's direction in the ball's own frame (rot maps ball to world)
        if ball.look == "stripe":
            second = np.abs(q[..., 2]) < 0.38
        elif ball.look == "halves":
            second = q[..., 0] < 0
        else:
            second = np.abs(q[..., 0]) > 0.82
        base = np.where(second[..., None], np.array(ball.colour2, float), np.array(ball.colour, float))
        light = self.style.light
        diffuse = np.clip(n @ self.light, 0.0, 1.0)
        spec = np.clip(n @ self.half, 0.0, 1.0) ** 30
        colour = (
            base * (light.ambient + light.intensity * diffuse)[..., None] * self.tint
            + (200.0 * light.intensity * spec)[..., None]
        )
        patch = img[v0:v1, u0:u1]
        patch *= 1.0 - cover[..., None]
        patch += colour * cover[..., None]

    def frame(self, track: Track, t: int) -> np.ndarray:
        left, top, mpp = self.camera(t)
        img, x, y = self.background(left, top, mpp)
        shown = np.flatnonzero(track.alpha[t] > 0)
        for k in shown:
            self._shadow(img, x, y, track.pos[t, k], float(track.radius[t, k]), float(track.alpha[t, k]))
        for k in shown:
            self._ball(
                img,
                left,
                top,
                mpp,
                track.pos[t, k],
                float(track.radius[t, k]),
                float(track.alpha[t, k]),
                track.rot[t, k],
                track.look[k],
            )
        return np.clip(np.rint(img), 0, 255).astype(np.uint8)

    def render(self, track: Track, start: int = 0) -> np.ndarray:
        """(T - start, H, W, 3) uint8 frames from ``start`` on."""
        return np.stack([self.frame(track, t) for t in range(start, len(track.pos))])
