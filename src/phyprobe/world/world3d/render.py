"""Drawing tracks into RGB frames with pybullet's CPU TinyRenderer (perspective camera, directional
light with shadows, textured floor and wall).

A track is what to draw per frame: a pose, a per-axis scale and an opacity per item (a body, or a
copy of one). Frames pose the scene's bodies as recorded and render, so kinematic edits, camera
paths and lighting changes re-render the same physics. Opacity between 0 and 1 is drawn by blending
a render with the item and one without it (shadow included), which TinyRenderer cannot do itself.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, replace

import cv2
import numpy as np
import pybullet as p

from phyprobe.world.world3d.scene import Camera, Light, Style
from phyprobe.world.world3d.simulate import DATA, Trajectory, World

PARK = np.array([0.0, 0.0, -50.0])  # where hidden items wait, far below the floor
NEAR, FAR = 0.05, 12.0
# TinyRenderer's cost is per rasterised pixel (about half a microsecond each on one core), so larger
# frames are rendered at this many pixels and resized up: what keeps the build inside its time budget
RENDER_PIXELS = 10240


def render_size(width: int, height: int) -> tuple[int, int]:
    """The (width, height) a frame is rasterised at before being resized to (width, height)."""
    k = min(1.0, math.sqrt(RENDER_PIXELS / (width * height)))
    return max(8, int(round(width * k))), max(8, int(round(height * k)))


@dataclass
class Track:
    pos: np.ndarray  # (T, M, 3)
    quat: np.ndarray  # (T, M, 4)
    scale: np.ndarray  # (T, M, 3) along the body's own axes; 1 for a rigid body
    alpha: np.ndarray  # (T, M) opacity in [0, 1]
    body: tuple[int, ...]  # (M,) index into scene.bodies of the shape each item shows

    @classmethod
    def from_trajectory(cls, traj: Trajectory) -> "Track":
        t, n = traj.pos.shape[:2]
        return cls(traj.pos.copy(), traj.quat.copy(), np.ones((t, n, 3)), np.ones((t, n)), tuple(range(n)))

    def same_until(self, other: "Track") -> int:
        """The first frame where the two tracks draw differently (their length if never)."""
        if self.body != other.body or self.pos.shape != other.pos.shape:
            return 0
        diff = [
            np.any(a.reshape(len(a), -1) != b.reshape(len(b), -1), axis=1)
            for a, b in (
                (self.pos, other.pos),
                (self.quat, other.quat),
                (self.scale, other.scale),
                (self.alpha, other.alpha),
            )
        ]
        d = np.flatnonzero(np.any(diff, axis=0))
        return int(d[0]) if len(d) else len(self.pos)


def camera_eyes(cam: Camera, num_frames: int) -> tuple[np.ndarray, np.ndarray]:
    """(T, 3) eye and (T, 3) target positions along the camera's path."""
    u = np.linspace(0.0, 1.0, num_frames)
    u = u * u * (3 - 2 * u)
    paths = cam.path.split("+")
    az = np.full(num_frames, cam.azimuth)
    dist = np.full(num_frames, cam.distance)
    if "orbit" in paths:
        az = az + cam.sweep * (u - 0.5)
    if "dolly" in paths:
        dist = dist * (1 + cam.sweep * (u - 0.5) if "orbit" not in paths else 1 + 0.15 * (u - 0.5))
    a, e = np.radians(az), math.radians(cam.elevation)
    target = np.tile(np.asarray(cam.target), (num_frames, 1))
    eye = target + np.stack(
        [dist * math.cos(e) * np.cos(a), dist * math.cos(e) * np.sin(a), dist * math.sin(e) * np.ones(num_frames)],
        axis=1,
    )
    if "shake" in paths:
        eye = eye + cam.shake * _smooth_noise(cam.shake_seed, num_frames, 3)
        target = target + 0.5 * cam.shake * _smooth_noise(cam.shake_seed + 1, num_frames, 3)
    return eye, target


def _smooth_noise(seed: int, n: int, dims: int) -> np.ndarray:
    """Handheld jitter: a sum of a few random low-frequency sinusoids per axis, in [-1, 1]."""
    rng = np.random.default_rng(seed)
    t = np.arange(n)[:, None]
    out = np.zeros((n, dims))
    for _ in range(3):
        f = rng.uniform(0.05, 0.2, size=dims)
        out += np.sin(2 * np.pi * f * t + rng.uniform(0, 2 * np.pi, size=dims)) / 3
    return out


class Renderer:
    """Draws tracks of one scene's world with one style (the scene's own, or a nuisance twin's)."""

    def __init__(self, world: World, style: Style):
        self.world, self.style = world, style
        scene = world.scene
        st = style
        eye, target = camera_eyes(st.camera, scene.num_frames)
        self.views = [p.computeViewMatrix(e.tolist(), t.tolist(), [0, 0, 1]) for e, t in zip(eye, target)]
        self.proj = p.computeProjectionMatrixFOV(st.camera.fov, st.width / st.height, NEAR, FAR)
        self.eye, self.target = eye, target
        self.size = render_size(st.width, st.height)

    def project(self, points: np.ndarray, t: int) -> np.ndarray:
        """(K, 3) world points -> (K, 2) pixel (x, y) in frame t; behind the camera maps far away."""
        v = np.asarray(self.views[t]).reshape(4, 4).T
        pr = np.asarray(self.proj).reshape(4, 4).T
        h = np.concatenate([points, np.ones((len(points), 1))], axis=1) @ (pr @ v).T
        w = np.where(h[:, 3] > 1e-6, h[:, 3], 1e-6)
        ndc = h[:, :2] / w[:, None]
        return np.stack([(ndc[:, 0] + 1) / 2 * self.style.width, (1 - ndc[:, 1]) / 2 * self.style.height], axis=1)

    def _render(self, t: int) -> np.ndarray:
        st, light = self.style, self.style.light
        w, h = self.size
        img = p.getCameraImage(
            w,
            h,
            self.views[t],
            self.proj,
            renderer=p.ER_TINY_RENDERER,
            shadow=1,
            lightDirection=list(light.direction),
            lightColor=list(light.colour),
            lightDistance=6.0,
            lightAmbientCoeff=light.ambient,
            lightDiffuseCoeff=light.diffuse,
            lightSpecularCoeff=light.specular,
            flags=p.ER_NO_SEGMENTATION_MASK,
            physicsClientId=self.world.cid,
        )[2]
        rgb = np.asarray(img, dtype=np.uint8).reshape(h, w, 4)[..., :3]
        if (w, h) != (st.width, st.height):
            rgb = cv2.resize(rgb, (st.width, st.height), interpolation=cv2.INTER_LINEAR)
        return np.ascontiguousarray(rgb)

    def render(self, track: Track, start: int = 0) -> np.ndarray:
        """(T - start, H, W, 3) frames of ``track`` from frame ``start`` on."""
        world, c = self.world, self.world.cid
        scene = world.scene
        n = len(world.ids)
        extra = {}  # item -> its own body (copies); created for this render and removed after
        for m in range(n, len(track.body)):
            extra[m] = self._copy(track.body[m])
        self.world.set_surfaces(self.style)
        frames = []
        try:
            for t in range(start, scene.num_frames):
                temp = []
                handles = []
                for m, b in enumerate(track.body):
                    if m < n and np.any(track.scale[t, m] != 1.0):
                        # a non-rigid item: hide the rigid body, draw a scaled copy in its place
                        s = p.createMultiBody(
                            0,
                            -1,
                            world.visual(scene.bodies[b], track.scale[t, m]),
                            track.pos[t, m].tolist(),
                            track.quat[t, m].tolist(),
                            physicsClientId=c,
                        )
                        if scene.bodies[b].textured:
                            p.changeVisualShape(s, -1, textureUniqueId=world.texture("checker_blue"), physicsClientId=c)
                        temp.append(s)
                        p.resetBasePositionAndOrientation(world.ids[m], PARK.tolist(), [0, 0, 0, 1], physicsClientId=c)
                        handles.append((m, s))
                        continue
                    bid = world.ids[m] if m < n else extra[m]
                    p.resetBasePositionAndOrientation(
                        bid, track.pos[t, m].tolist(), track.quat[t, m].tolist(), physicsClientId=c
                    )
                    handles.append((m, bid))
                partial = [(m, bid) for m, bid in handles if track.alpha[t, m] < 1.0]
                for m, bid in partial:
                    if track.alpha[t, m] <= 0.0:
                        p.resetBasePositionAndOrientation(bid, PARK.tolist(), [0, 0, 0, 1], physicsClientId=c)
                fading = [(m, bid) for m, bid in partial if track.alpha[t, m] > 0.0]
                frame = self._render(t)
                if fading:
                    a = float(np.mean([track.alpha[t, m] for m, _ in fading]))
                    for _, bid in fading:
                        p.resetBasePositionAndOrientation(bid, PARK.tolist(), [0, 0, 0, 1], physicsClientId=c)
                    without = self._render(t).astype(np.float32)
                    frame = np.clip(np.round(without + a * (frame.astype(np.float32) - without)), 0, 255).astype(
                        np.uint8
                    )
                frames.append(frame)
                for s in temp:
                    p.removeBody(s, physicsClientId=c)
        finally:
            for bid in extra.values():
                p.removeBody(bid, physicsClientId=c)
            self.world.set_surfaces(self.world.scene.style)
        return np.stack(frames)

    def _copy(self, b: int) -> int:
        """A visual-only twin of body b (duplicates and appearing bodies)."""
        world, c = self.world, self.world.cid
        spec = world.scene.bodies[b]
        if spec.kind == "urdf":
            bid = p.loadURDF(os.path.join(DATA, spec.urdf), PARK.tolist(), globalScaling=spec.scale, physicsClientId=c)
            p.changeVisualShape(bid, -1, rgbaColor=[*spec.colour, 1], textureUniqueId=-1, physicsClientId=c)
        else:
            bid = p.createMultiBody(0, -1, world.visual(spec), PARK.tolist(), physicsClientId=c)
        if spec.textured:
            p.changeVisualShape(bid, -1, textureUniqueId=world.texture("checker_blue"), physicsClientId=c)
        return bid


def restyle(
    style: Style,
    camera: Camera | None = None,
    light: Light | None = None,
    floor: str | None = None,
    wall: str | None = None,
) -> Style:
    return replace(
        style,
        camera=camera or style.camera,
        light=light or style.light,
        floor=floor or style.floor,
        wall=wall or style.wall,
    )
