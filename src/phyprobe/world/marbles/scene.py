"""What a marbles scene holds and how it looks, drawn from (seed, index) alone.

Two views share one simulator. ``side``: a box seen from the side, gravity down the picture, one ball
resting on the floor, one thrown so that it hits it, the others thrown or dropped at random. ``table``:
a billiard table seen from above, no gravity in the picture's plane, rolling friction, a cue ball sent
into one of the resting balls. Both views aim their first collision at a third to a half of the clip, so
every scene has a ball-ball contact and every violation family can be planned in every scene.

Units are metres and seconds; y points up the picture in both views.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from phyprobe.world.seeds import scene_rng
from phyprobe.world.simulated import Look

GRAVITY = 9.81
VIEWS = ("side", "table")
SIZES = {"4:3": (160, 120), "16:9": (192, 108), "1:1": (128, 128), "3:4": (120, 160)}  # (width, height), even
FPS = (20, 24, 30)
# palette -> (backdrop: the side view's back wall, ground: the side view's floor and the table's cloth,
# rail: side walls and the table's frame); RGB
PALETTES = {
    "daylight": ((196, 214, 228), (150, 118, 86), (92, 66, 48)),
    "studio": ((72, 74, 84), (128, 126, 132), (40, 40, 46)),
    "pastel": ((238, 224, 232), (176, 206, 186), (150, 132, 170)),
    "baize": ((206, 196, 170), (38, 112, 64), (98, 52, 30)),
    "slate": ((150, 164, 170), (62, 82, 96), (170, 150, 120)),
}
HELDOUT_PALETTE = "neon"  # used by no other scene, nor by any nuisance twin of another scene
NEON = ((14, 12, 30), (36, 18, 60), (0, 190, 210))
TEXTURES = ("plain", "noise", "tiles", "planks")
LOOKS = ("stripe", "halves", "dot")  # how a ball's colours sit on it, so that its spin shows
CAMERAS = ("static", "pan", "zoom", "shake")


@dataclass(frozen=True)
class Ball:
    radius: float
    mass: float
    restitution: float
    colour: tuple[int, int, int]
    colour2: tuple[int, int, int]
    look: str
    pos: tuple[float, float]
    vel: tuple[float, float]
    orient: tuple[float, ...]  # row-major 3x3 rotation: where the look's pattern starts


@dataclass(frozen=True)
class Light:
    azimuth: float  # radians, in the picture's plane
    elevation: float  # radians above the picture's plane, towards the camera
    intensity: float
    ambient: float
    tint: tuple[float, float, float]


@dataclass(frozen=True)
class Camera:
    path: str  # static | pan | zoom | shake, or two joined by "+"
    amount: float  # pan: fraction of the view travelled; zoom: final magnification - 1; shake: amplitude (fraction)
    phase: float


@dataclass(frozen=True)
class Style(Look):
    backdrop: tuple[int, int, int]
    ground: tuple[int, int, int]
    rail: tuple[int, int, int]


@dataclass(frozen=True)
class Scene:
    seed: int
    index: int
    view: str
    width_m: float  # the box's or table's inner width
    height_m: float  # the visible height above the floor (side) or the table's inner depth (table)
    balls: tuple[Ball, ...]
    friction: float  # deceleration of a rolling ball, m/s^2
    wall_restitution: float
    ball_restitution: float  # table only; in the side view a pair bounces with the lower of its two
    fps: int
    num_frames: int
    style: Style
    heldout_style: bool

    @property
    def key(self) -> str:
        return f"s{self.seed}-{self.index:05d}"

    @property
    def gravity(self) -> float:
        return GRAVITY if self.view == "side" else 0.0

    def view_rect(self) -> tuple[float, float, float, float]:
        """(x0, y0, width, height) in metres of what a static camera sees, at the frame's aspect."""
        w_px, h_px = self.style.width, self.style.height
        pad = 0.07 * self.width_m
        vw = self.width_m + 2 * pad
        vh = vw * h_px / w_px
        if self.view == "side":
            return -pad, -0.14 * vh, vw, vh
        return -pad, -pad, vw, vh


def _colour(rng: np.random.Generator, base: tuple[int, int, int], jitter: int) -> tuple[int, int, int]:
    return tuple(int(np.clip(c + rng.integers(-jitter, jitter + 1), 0, 255)) for c in base)


def _ball_colour(rng: np.random.Generator, avoid: list[tuple[int, int, int]], neon: bool) -> tuple[int, int, int]:
    """A saturated colour far from the surroundings and the balls already drawn."""
    best, best_d = (255, 255, 255), -1.0
    for _ in range(10):
        hue = rng.uniform(0, 6)
        k = np.clip(np.abs((np.array([0.0, 4.0, 2.0]) + hue) % 6 - 3) - 1, 0, 1)
        c = tuple(int(v) for v in (40 + 215 * k if neon else 30 + rng.uniform(150, 215) * k))
        d = min(sum((a - b) ** 2 for a, b in zip(c, o)) for o in avoid)
        if d > best_d:
            best, best_d = c, d
    return best


def _orientation(rng: np.random.Generator) -> tuple[float, ...]:
    q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    return tuple(float(v) for v in (q * np.sign(np.linalg.det(q))).ravel())


def sample_light(rng: np.random.Generator) -> Light:
    return Light(
        azimuth=float(rng.uniform(0, 2 * math.pi)),
        elevation=float(rng.uniform(0.6, 1.2)),
        intensity=float(rng.uniform(0.65, 1.0)),
        ambient=float(rng.uniform(0.25, 0.45)),
        tint=tuple(float(v) for v in rng.uniform(0.85, 1.0, 3)),
    )


def sample_camera(rng: np.random.Generator, path: str) -> Camera:
    amount = {
        "static": 0.0,
        "pan": rng.uniform(0.06, 0.14),
        "zoom": rng.uniform(0.1, 0.25),
        "shake": rng.uniform(0.006, 0.015),
    }
    return Camera(
        path=path, amount=float(max(amount[p] for p in path.split("+"))), phase=float(rng.uniform(0, 2 * math.pi))
    )


def sample_style(rng: np.random.Generator, heldout: bool, palette: str | None = None) -> Style:
    aspect = str(rng.choice(list(SIZES)))
    width, height = SIZES[aspect]
    name = HELDOUT_PALETTE if heldout else (palette or str(rng.choice(list(PALETTES))))
    backdrop, ground, rail = NEON if name == HELDOUT_PALETTE else PALETTES[name]
    return Style(
        palette=name,
        backdrop=_colour(rng, backdrop, 14),
        ground=_colour(rng, ground, 14),
        rail=_colour(rng, rail, 14),
        texture=str(rng.choice(TEXTURES)),
        light=sample_light(rng),
        camera=sample_camera(rng, str(rng.choice(CAMERAS, p=[0.5, 0.2, 0.15, 0.15]))),
        aspect=aspect,
        width=width,
        height=height,
        texture_seed=int(rng.integers(2**31)),
    )


def _free_spot(
    rng, placed: list[tuple[float, float, float]], r: float, xs: tuple[float, float], ys: tuple[float, float]
) -> tuple[float, float] | None:
    for _ in range(60):
        x, y = float(rng.uniform(*xs)), float(rng.uniform(*ys))
        if all(math.hypot(x - px, y - py) > r + pr + 0.03 for px, py, pr in placed):
            return x, y
    return None


def sample_scene(seed: int, index: int, num_frames: int, heldout_style: bool) -> Scene:
    rng = scene_rng(seed, index, 0)
    view = str(rng.choice(VIEWS))
    fps = int(rng.choice(FPS))
    style = sample_style(scene_rng(seed, index, 1), heldout_style)
    width_m = float(rng.uniform(1.6, 2.4))
    duration = num_frames / fps
    pad = 0.07 * width_m
    view_h = (width_m + 2 * pad) * style.height / style.width
    height_m = view_h * 0.86 if view == "side" else view_h - 2 * pad
    neon = style.palette == HELDOUT_PALETTE
    surroundings = [style.backdrop, style.ground, style.rail]
    colours: list[tuple[int, int, int]] = []

    def look() -> tuple[tuple[int, int, int], tuple[int, int, int], str]:
        c = _ball_colour(rng, surroundings + colours, neon)
        colours.append(c)
        c2 = (245, 245, 240) if rng.uniform() < 0.6 else tuple(int(v * 0.35) for v in c)
        return c, c2, str(rng.choice(LOOKS))

    balls: list[Ball] = []
    t_hit = float(rng.uniform(0.3, 0.5)) * duration
    if view == "side":
        n = int(rng.integers(2, 5))
        radii = [float(rng.uniform(0.05, 0.1)) * width_m for _ in range(n)]
        density = [float(rng.uniform(0.5, 2.0)) for _ in range(n)]
        # ball 0 rests on the floor; ball 1 is thrown to meet it at t_hit (a ballistic aim)
        r0, r1 = radii[0], radii[1]
        x0 = float(rng.uniform(0.3, 0.7)) * width_m
        side = 1.0 if rng.uniform() < 0.5 else -1.0
        hit = np.array([x0 - side * (r0 + r1) * 0.9, r0 + (r0 + r1) * float(rng.uniform(0.2, 0.5))])
        start = np.array(
            [x0 - side * float(rng.uniform(0.25, 0.42)) * width_m, float(rng.uniform(0.45, 0.8)) * height_m]
        )
        start[0] = float(np.clip(start[0], r1 + 0.02, width_m - r1 - 0.02))
        v1 = (hit - start) / t_hit + np.array([0.0, 0.5 * GRAVITY * t_hit])
        starts = [((x0, r0), (0.0, 0.0)), ((float(start[0]), float(start[1])), (float(v1[0]), float(v1[1])))]
        placed = [(x0, r0, r0), (float(start[0]), float(start[1]), r1)]
        for k in range(2, n):
            spot = _free_spot(rng, placed, radii[k], (radii[k], width_m - radii[k]), (0.35 * height_m, 0.85 * height_m))
            if spot is None:
                radii, density = radii[:k], density[:k]
                break
            placed.append((*spot, radii[k]))
            starts.append((spot, (float(rng.uniform(-1.2, 1.2)), float(rng.uniform(-0.5, 2.0)))))
        for k, (p, v) in enumerate(starts):
            c, c2, lk = look()
            balls.append(
                Ball(
                    radii[k],
                    density[k] * radii[k] ** 2,
                    float(rng.uniform(0.45, 0.8)),
                    c,
                    c2,
                    lk,
                    p,
                    v,
                    _orientation(rng),
                )
            )
        friction, wall_e, ball_e = 0.4, float(rng.uniform(0.5, 0.75)), 0.0
    else:
        n = int(rng.integers(3, 6))
        r = float(rng.uniform(0.04, 0.06)) * width_m
        placed = []
        spots = []
        for _ in range(n - 1):  # the resting balls
            spot = _free_spot(rng, placed, r, (2 * r, width_m - 2 * r), (2 * r, height_m - 2 * r))
            if spot is None:
                break
            placed.append((*spot, r))
            spots.append(spot)
        speed = float(rng.uniform(0.8, 1.6)) * width_m / 2
        friction = float(rng.uniform(0.15, 0.4)) * width_m / 2
        # the cue ball starts where it reaches ball 1 at t_hit, aimed off-centre by up to half a radius
        dist = speed * t_hit - 0.5 * friction * t_hit**2 + 2 * r
        cue = None
        for _ in range(40):
            ang = float(rng.uniform(0, 2 * math.pi))
            c = (spots[0][0] - dist * math.cos(ang), spots[0][1] - dist * math.sin(ang))
            if (
                1.2 * r < c[0] < width_m - 1.2 * r
                and 1.2 * r < c[1] < height_m - 1.2 * r
                and all(math.hypot(c[0] - px, c[1] - py) > 2 * r + 0.03 for px, py, _ in placed)
            ):
                cue = (c, ang)
                break
        if cue is None:  # no room on this table for the planned shot: shoot from the nearest free point
            ang = float(rng.uniform(0, 2 * math.pi))
            c = (
                float(np.clip(spots[0][0] - dist * math.cos(ang), 1.2 * r, width_m - 1.2 * r)),
                float(np.clip(spots[0][1] - dist * math.sin(ang), 1.2 * r, height_m - 1.2 * r)),
            )
            ang = math.atan2(spots[0][1] - c[1], spots[0][0] - c[0])
            cue = (c, ang)
        (cx, cy), ang = cue
        aim = ang + float(rng.uniform(-0.5, 0.5)) * r / max(dist, r)
        order = [((cx, cy), (speed * math.cos(aim), speed * math.sin(aim)))] + [(s, (0.0, 0.0)) for s in spots]
        for p, v in order:
            c, c2, lk = look()
            balls.append(Ball(r, r**2, 0.92, c, c2, lk, p, v, _orientation(rng)))
        wall_e, ball_e = float(rng.uniform(0.7, 0.85)), 0.92
    return Scene(
        seed=seed,
        index=index,
        view=view,
        width_m=width_m,
        height_m=height_m,
        balls=tuple(balls),
        friction=friction,
        wall_restitution=wall_e,
        ball_restitution=ball_e,
        fps=fps,
        num_frames=num_frames,
        style=style,
        heldout_style=heldout_style,
    )
