"""What a scene contains (bodies, world box, timing) and how it looks (style), drawn from a seed.

World units are centimetres with y up and the floor's top at y = 0; the visible height is always
``VIEW_HEIGHT`` so gravity has the same size in frame-heights per second squared whatever the
resolution, and a head cannot read physics off the pixel scale.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from phyprobe.world.seeds import scene_rng

VIEW_HEIGHT = 300.0  # world units (cm) from the bottom of the frame to the top
FLOOR_BAND = 0.1  # fraction of the view height below the floor's surface
GRAVITY = 981.0  # cm/s^2
WALL_MARGIN = 0.03  # fraction of the view width showing each side wall beyond the world box

ASPECTS = {"4:3": 4 / 3, "16:9": 16 / 9, "1:1": 1.0, "9:16": 9 / 16}
HEIGHTS = (96, 112, 128, 144, 160)
FRAME_RATES = (15, 20, 24, 30)
BACKGROUNDS = ("flat", "gradient", "checker", "stripes", "noise")
HELDOUT_BACKGROUND = "bricks"  # only ever used by the heldout_style split
TEXTURES = ("solid", "outline", "stripe", "dot")
LIGHTINGS = ("even", "vignette", "side", "dim")
CAMERAS = ("static", "pan")
SHAPES = ("circle", "box", "polygon")


@dataclass(frozen=True)
class BodySpec:
    """One rigid body: its shape in body coordinates, material and initial state."""

    kind: str  # circle | box | polygon
    radius: float  # circle radius, or the bounding radius of a polygon
    vertices: tuple[tuple[float, float], ...]  # convex, counter-clockwise; empty for circles
    density: float
    friction: float
    elasticity: float
    colour: tuple[int, int, int]
    mark_colour: tuple[int, int, int]
    position: tuple[float, float]
    velocity: tuple[float, float]
    angle: float
    angular_velocity: float


@dataclass(frozen=True)
class Style:
    """Everything about the look of a scene that physics does not depend on."""

    width: int
    height: int
    aspect: str
    background: str
    background_colours: tuple[tuple[int, int, int], tuple[int, int, int]]
    floor_colour: tuple[int, int, int]
    texture: str
    lighting: str
    camera: str
    pan_direction: int  # +1 left to right, -1 right to left

    @property
    def name(self) -> str:
        return f"{self.background}-{self.texture}-{self.camera}"


@dataclass(frozen=True)
class Scene:
    """A sampled scene: physics inputs plus its style; fully determined by (seed, index)."""

    seed: int
    index: int
    fps: int
    num_frames: int
    substeps: int
    world_width: float
    view_width: float
    ramp: tuple[tuple[float, float], tuple[float, float]] | None
    bodies: tuple[BodySpec, ...]
    style: Style

    @property
    def key(self) -> str:
        return f"s{self.seed}-{self.index:05d}"

    @property
    def pixels_per_unit(self) -> float:
        return self.style.height / VIEW_HEIGHT


def _colour(rng: np.random.Generator, lo: int = 30, hi: int = 235) -> tuple[int, int, int]:
    return tuple(int(c) for c in rng.integers(lo, hi, size=3))


def _distinct_colour(rng: np.random.Generator, avoid: list[tuple[int, int, int]]) -> tuple[int, int, int]:
    """A colour far from the ones already used, so bodies stay separable from the background."""
    best, best_d = None, -1.0
    for _ in range(8):
        c = _colour(rng)
        d = min((sum((a - b) ** 2 for a, b in zip(c, o)) for o in avoid), default=1e9)
        if d > best_d:
            best, best_d = c, d
    return best


def sample_style(rng: np.random.Generator, heldout: bool = False) -> Style:
    aspect = str(rng.choice(list(ASPECTS)))
    height = int(rng.choice(HEIGHTS))
    width = int(round(height * ASPECTS[aspect] / 2)) * 2
    background = HELDOUT_BACKGROUND if heldout else str(rng.choice(BACKGROUNDS))
    c1 = _colour(rng, 20, 200)
    c2 = tuple(int(np.clip(c + d, 0, 255)) for c, d in zip(c1, rng.integers(-70, 70, size=3)))
    return Style(
        width=width,
        height=height,
        aspect=aspect,
        background=background,
        background_colours=(c1, c2),
        floor_colour=_colour(rng, 20, 160),
        texture=str(rng.choice(TEXTURES)),
        lighting=str(rng.choice(LIGHTINGS)),
        camera="pan" if heldout else str(rng.choice(CAMERAS)),
        pan_direction=int(rng.choice([-1, 1])),
    )


def _polygon(rng: np.random.Generator, kind: str) -> tuple[float, tuple[tuple[float, float], ...]]:
    if kind == "box":
        w, h = rng.uniform(22, 55, size=2)
        v = ((-w / 2, -h / 2), (w / 2, -h / 2), (w / 2, h / 2), (-w / 2, h / 2))
        return math.hypot(w, h) / 2, v
    n = int(rng.integers(3, 8))
    r = rng.uniform(16, 32)
    ang = np.sort((np.arange(n) + rng.uniform(-0.3, 0.3, size=n)) * 2 * np.pi / n)
    radii = r * rng.uniform(0.8, 1.0, size=n)
    pts = np.stack([radii * np.cos(ang), radii * np.sin(ang)], axis=1)
    pts -= pts.mean(axis=0)  # centroid near the body origin so rotation looks rigid
    return float(np.linalg.norm(pts, axis=1).max()), tuple((float(x), float(y)) for x, y in pts)


def lowest_point(vertices, radius: float, angle: float) -> float:
    """How far below its centre a body reaches at this angle (its floor clearance when resting)."""
    if not vertices:
        return radius
    c, s = math.cos(angle), math.sin(angle)
    return max(-(x * s + y * c) for x, y in vertices)


def sample_scene(seed: int, index: int, num_frames: int = 32, heldout_style: bool = False) -> Scene:
    rng = scene_rng(seed, index, 0)
    style = sample_style(rng, heldout=heldout_style)
    view_width = VIEW_HEIGHT * ASPECTS[style.aspect]
    world_width = view_width * (1.5 if style.camera == "pan" else 1.0 - 2 * WALL_MARGIN)
    fps = int(rng.choice(FRAME_RATES))
    ramp = None
    if rng.random() < 0.35:
        x1 = world_width * rng.uniform(0.25, 0.45)
        left = rng.random() < 0.5
        hi, lo = rng.uniform(90, 150), rng.uniform(20, 60)
        ramp = ((0.0, hi), (x1, lo)) if left else ((world_width, hi), (world_width - x1, lo))
    max_bodies = max(1, min(5, int(world_width // 75)))
    count = int(rng.integers(1, max_bodies + 1))
    bodies: list[BodySpec] = []
    placed: list[tuple[float, float, float]] = []
    used_colours = [style.background_colours[0], style.background_colours[1], style.floor_colour]
    for _ in range(count):
        kind = str(rng.choice(SHAPES))
        if kind == "circle":
            radius, verts = float(rng.uniform(12, 30)), ()
        else:
            radius, verts = _polygon(rng, kind)
        on_floor = bool(bodies) and rng.random() < 0.3  # the first body always starts in the air
        for _attempt in range(30):
            angle = float(rng.uniform(-math.pi, math.pi)) if not (on_floor and kind == "box") else 0.0
            x = float(rng.uniform(radius + 2, world_width - radius - 2))
            y = (
                lowest_point(verts, radius, angle) + 0.2
                if on_floor
                else float(rng.uniform(radius + 40, 0.8 * VIEW_HEIGHT))
            )
            if not placed and _attempt == 29:
                x, y = world_width / 2, 0.75 * VIEW_HEIGHT  # above any ramp: a scene is never empty
            clear = all(math.hypot(x - px, y - py) > radius + pr + 3 for px, py, pr in placed)
            if clear and not _hits_ramp(ramp, x, y, radius):
                break
        else:
            continue  # no room left: fewer bodies
        placed.append((x, y, radius))
        colour = _distinct_colour(rng, used_colours)
        used_colours.append(colour)
        still = on_floor
        bodies.append(
            BodySpec(
                kind=kind,
                radius=radius,
                vertices=verts,
                density=float(rng.uniform(0.5, 2.0)),
                friction=float(rng.uniform(0.4, 0.9)),
                elasticity=float(rng.uniform(0.2, 0.7)),
                colour=colour,
                mark_colour=tuple(int(c) for c in (255 - np.array(colour)) // 2 + 40),
                position=(x, y),
                velocity=(0.0, 0.0) if still else (float(rng.uniform(-150, 150)), float(rng.uniform(-80, 120))),
                angle=angle,
                angular_velocity=0.0 if still else float(rng.uniform(-3, 3)),
            )
        )
    return Scene(
        seed=int(seed),
        index=int(index),
        fps=fps,
        num_frames=int(num_frames),
        substeps=max(6, int(round(240 / fps))),
        world_width=float(world_width),
        view_width=float(view_width),
        ramp=ramp,
        bodies=tuple(bodies),
        style=style,
    )


def _hits_ramp(ramp, x: float, y: float, radius: float) -> bool:
    if ramp is None:
        return False
    (x0, y0), (x1, y1) = ramp
    dx, dy = x1 - x0, y1 - y0
    t = max(0.0, min(1.0, ((x - x0) * dx + (y - y0) * dy) / (dx * dx + dy * dy)))
    return math.hypot(x - (x0 + t * dx), y - (y0 + t * dy)) < radius + 6
