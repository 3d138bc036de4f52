"""What a 3D scene contains (bodies, ramp, walls, timing) and how it looks (camera, light, textures),
drawn from a seed.

Units are metres and kilograms, z up, the floor's top at z = 0. Every scene holds the same cast so
that every violation family can be planned in every scene without the plausible twin depending on
the family: a tower of blocks on a slippery base, a heavy textured ball rolling into that base (a
collision between a heavy and a light body that knocks the tower's support out, and a body that
rolls), and one to three bodies dropped or thrown onto the floor (falling, bouncing, toppling),
sometimes with a ramp and a ball or cylinder rolling down it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.spatial.transform import Rotation

from phyprobe.world.seeds import scene_rng

GRAVITY = 9.81  # m/s^2
PHYSICS_HZ = 240  # substeps per second

ASPECTS = {"4:3": 4 / 3, "16:9": 16 / 9, "1:1": 1.0, "9:16": 9 / 16}
HEIGHTS = (96, 112, 128, 144, 160)
FRAME_RATES = (15, 20, 24, 30)
FLOORS = ("checker_blue", "checker_grid", "tex256", "plain", "plain_dark")
HELDOUT_FLOOR = "uvmap"  # only ever used by the heldout_style split
WALLS = ("plain", "tex256", "checker_grid", "none")
LIGHTINGS = ("noon", "low_sun", "warm", "cool", "dim")
CAMERAS = ("static", "orbit", "dolly", "shake")
PRIMITIVES = ("box", "sphere", "cylinder", "capsule")
# low-poly pybullet_data models (at most a few hundred triangles: TinyRenderer pays about half a
# microsecond per triangle per frame even off screen, so the duck's 4,212 or the teddy's 2,432 would
# cost more than the whole rest of a scene), with the global scale that makes each 10-20 cm across
URDFS = {
    "cube_small.urdf": 3.0,
    "random_urdfs/009/009.urdf": 3.0,
    "random_urdfs/023/023.urdf": 3.0,
    "random_urdfs/033/033.urdf": 3.0,
    "random_urdfs/014/014.urdf": 3.0,
    "random_urdfs/003/003.urdf": 3.0,
    "random_urdfs/005/005.urdf": 3.0,
}
TEXTURE_FILES = {
    "checker_blue": "checker_blue.png",
    "checker_grid": "checker_grid.jpg",
    "tex256": "tex256.png",
    "uvmap": "uvmap.png",
}
BALL_TEXTURE = "checker_blue"  # rolling balls wear a pattern, so their rotation shows


@dataclass(frozen=True)
class BodySpec:
    """One rigid body: shape, material and initial state. ``role`` says what the scene uses it for."""

    role: str  # base | block | striker | drop | roller
    kind: str  # box | sphere | cylinder | capsule | urdf
    size: tuple[float, float, float]  # box half extents; (r, r, r) sphere; (r, r, half length) cylinder/capsule
    urdf: str  # pybullet_data path for kind "urdf", else ""
    scale: float  # global scaling of a urdf
    mass: float
    friction: float
    restitution: float
    colour: tuple[float, float, float]
    textured: bool
    position: tuple[float, float, float]
    orientation: tuple[float, float, float, float]  # quaternion x, y, z, w
    velocity: tuple[float, float, float]
    angular_velocity: tuple[float, float, float]


@dataclass(frozen=True)
class Camera:
    """A perspective camera: looks at ``target`` from ``distance`` at (azimuth, elevation), and moves
    along a path (orbit sweeps the azimuth, dolly the distance, shake adds smooth noise)."""

    path: str  # static | orbit | dolly | shake (or a "+"-joined combination in a nuisance twin)
    target: tuple[float, float, float]
    distance: float
    azimuth: float  # degrees
    elevation: float  # degrees
    fov: float  # vertical, degrees
    sweep: float  # orbit: degrees over the clip; dolly: fraction of the distance
    shake: float  # metres of handheld jitter
    shake_seed: int


@dataclass(frozen=True)
class Light:
    name: str
    direction: tuple[float, float, float]
    colour: tuple[float, float, float]
    ambient: float
    diffuse: float
    specular: float


@dataclass(frozen=True)
class Style:
    """Everything about the look of a scene that physics does not depend on."""

    width: int
    height: int
    aspect: str
    floor: str
    floor_colour: tuple[float, float, float]
    floor_tiles: float
    wall: str
    wall_colour: tuple[float, float, float]
    camera: Camera
    light: Light

    @property
    def name(self) -> str:
        return f"{self.floor}-{self.wall}-{self.camera.path}"


@dataclass(frozen=True)
class Scene:
    seed: int
    index: int
    fps: int
    num_frames: int
    substeps: int
    bodies: tuple[BodySpec, ...]
    ramp: (
        tuple[tuple[float, float, float], tuple[float, float, float, float], tuple[float, float, float]] | None
    )  # pos, quat, half extents
    wall_distance: float  # the back wall stands this far behind the centre, facing the camera
    style: Style
    heldout_style: bool = False

    @property
    def key(self) -> str:
        return f"s{self.seed}-{self.index:05d}"

    def role(self, role: str) -> list[int]:
        return [i for i, b in enumerate(self.bodies) if b.role == role]


def quat_z(angle: float) -> tuple[float, float, float, float]:
    return (0.0, 0.0, math.sin(angle / 2), math.cos(angle / 2))


def random_quat(rng: np.random.Generator) -> tuple[float, float, float, float]:
    q = rng.normal(size=4)
    q /= np.linalg.norm(q)
    return tuple(float(v) for v in q)


def _colour(rng: np.random.Generator, lo: float = 0.15, hi: float = 0.95) -> tuple[float, float, float]:
    return tuple(float(c) for c in rng.uniform(lo, hi, size=3))


def _bright_colour(rng: np.random.Generator) -> tuple[float, float, float]:
    """A saturated colour, so bodies stand out of floors and walls."""
    h = float(rng.uniform(0, 1))
    k = np.array([5.0, 3.0, 1.0])
    rgb = 1 - 0.8 * np.clip(np.minimum((k + h * 6) % 6, 4 - (k + h * 6) % 6), 0, 1)
    return tuple(float(c) for c in rgb * rng.uniform(0.75, 1.0))


LIGHT_PRESETS = {  # (elevation range in degrees, colour, ambient, diffuse)
    "noon": ((60, 80), (1.0, 1.0, 1.0), 0.55, 0.5),
    "low_sun": ((25, 40), (1.0, 0.95, 0.85), 0.5, 0.55),
    "warm": ((40, 65), (1.0, 0.8, 0.6), 0.55, 0.5),
    "cool": ((40, 65), (0.75, 0.85, 1.0), 0.55, 0.5),
    "dim": ((35, 70), (0.8, 0.8, 0.8), 0.4, 0.4),
}


def sample_light(rng: np.random.Generator, name: str | None = None) -> Light:
    name = name or str(rng.choice(LIGHTINGS))
    (lo, hi), colour, ambient, diffuse = LIGHT_PRESETS[name]
    el, az = math.radians(rng.uniform(lo, hi)), rng.uniform(0, 2 * math.pi)
    direction = (math.cos(el) * math.cos(az), math.cos(el) * math.sin(az), math.sin(el))
    return Light(name, tuple(float(v) for v in direction), colour, ambient, diffuse, float(rng.uniform(0.0, 0.3)))


def sample_camera(rng: np.random.Generator, azimuth: float, path: str | None = None) -> Camera:
    path = path or str(rng.choice(CAMERAS))
    return Camera(
        path=path,
        target=(float(rng.uniform(-0.1, 0.1)), float(rng.uniform(-0.1, 0.1)), float(rng.uniform(0.15, 0.3))),
        distance=float(rng.uniform(1.25, 1.65)),
        azimuth=azimuth,
        elevation=float(rng.uniform(15, 35)),
        fov=float(rng.uniform(45, 55)),
        sweep=float(rng.choice([-1, 1]) * rng.uniform(15, 30))
        if path == "orbit"
        else float(rng.uniform(-0.25, 0.2))
        if path == "dolly"
        else 0.0,
        shake=float(rng.uniform(0.04, 0.07)) if path == "shake" else 0.0,
        shake_seed=int(rng.integers(2**31)),
    )


def sample_style(rng: np.random.Generator, heldout: bool, azimuth: float) -> Style:
    aspect = str(rng.choice(list(ASPECTS)))
    height = int(rng.choice(HEIGHTS))
    width = int(round(height * ASPECTS[aspect] / 2)) * 2
    floor = HELDOUT_FLOOR if heldout else str(rng.choice(FLOORS))
    return Style(
        width=width,
        height=height,
        aspect=aspect,
        floor=floor,
        floor_colour=_colour(rng, 0.1, 0.4) if floor == "plain_dark" else _colour(rng, 0.5, 0.95),
        floor_tiles=float(rng.uniform(3, 8)),
        wall=str(rng.choice(WALLS)),
        wall_colour=_colour(rng, 0.3, 0.95),
        camera=sample_camera(rng, azimuth),
        light=sample_light(rng),
    )


def _primitive(rng: np.random.Generator, kind: str) -> tuple[float, float, float]:
    if kind == "box":
        return tuple(float(v) for v in rng.uniform(0.05, 0.12, size=3))
    r = float(rng.uniform(0.05, 0.1))
    if kind == "sphere":
        return (r, r, r)
    return (r, r, float(rng.uniform(0.05, 0.12)))


def sample_scene(seed: int, index: int, num_frames: int = 32, heldout_style: bool = False) -> Scene:
    rng = scene_rng(seed, index, 0)
    fps = int(rng.choice(FRAME_RATES))
    duration = num_frames / fps
    # the camera looks across the striker's path, so the roll and the hit move sideways in the frame
    strike_dir = float(rng.uniform(0, 2 * math.pi))
    azimuth = math.degrees(strike_dir) + 90.0 * float(rng.choice([-1, 1])) + float(rng.uniform(-25, 25))
    style = sample_style(rng, heldout_style, azimuth)
    bodies: list[BodySpec] = []

    # the tower: a slippery base and one to three blocks stacked on it
    hx, hy, hz = float(rng.uniform(0.09, 0.13)), float(rng.uniform(0.09, 0.13)), float(rng.uniform(0.06, 0.09))
    yaw = strike_dir + float(rng.uniform(-0.3, 0.3))
    bodies.append(
        BodySpec(
            "base",
            "box",
            (hx, hy, hz),
            "",
            1.0,
            float(rng.uniform(0.3, 0.5)),
            0.1,
            0.1,
            _bright_colour(rng),
            False,
            (0.0, 0.0, hz),
            quat_z(yaw),
            (0.0,) * 3,
            (0.0,) * 3,
        )
    )
    top = 2 * hz
    for _ in range(int(rng.integers(1, 4))):
        bx, by, bz = hx * rng.uniform(0.7, 1.0), hy * rng.uniform(0.7, 1.0), float(rng.uniform(0.05, 0.09))
        jitter = rng.uniform(-0.015, 0.015, size=2)
        bodies.append(
            BodySpec(
                "block",
                "box",
                (float(bx), float(by), bz),
                "",
                1.0,
                float(rng.uniform(0.2, 0.5)),
                float(rng.uniform(0.4, 0.8)),
                0.1,
                _bright_colour(rng),
                bool(rng.random() < 0.3),
                (float(jitter[0]), float(jitter[1]), top + bz),
                quat_z(yaw + float(rng.uniform(-0.2, 0.2))),
                (0.0,) * 3,
                (0.0,) * 3,
            )
        )
        top += 2 * bz

    # the striker: a heavy ball rolling (without slipping) into the base a third of the way in; its
    # top stays below the base's, so it knocks out the base alone and the blocks lose their support
    r = float(rng.uniform(0.7, 0.95) * hz)
    speed = float(rng.uniform(1.0, 1.6))
    gap = min(speed * duration * rng.uniform(0.2, 0.35), 0.6)
    speed = max(speed, gap / (0.45 * duration))
    u = np.array([math.cos(strike_dir), math.sin(strike_dir), 0.0])
    start = -u * (gap + r + max(hx, hy))
    vel = u * speed
    omega = np.cross([0.0, 0.0, 1.0], vel) / r
    bodies.append(
        BodySpec(
            "striker",
            "sphere",
            (r, r, r),
            "",
            1.0,
            float(rng.uniform(1.2, 2.5)),
            0.5,
            0.2,
            _bright_colour(rng),
            True,
            (float(start[0]), float(start[1]), r),
            random_quat(rng),
            tuple(float(v) for v in vel),
            tuple(float(v) for v in omega),
        )
    )

    # a ramp beside the tower, with a ball or cylinder rolling down it
    ramp = None
    side = np.array([-u[1], u[0], 0.0]) * float(rng.choice([-1, 1]))
    if rng.random() < 0.5:
        length, tilt = float(rng.uniform(0.22, 0.3)), float(rng.uniform(0.3, 0.45))
        centre = side * rng.uniform(0.4, 0.5) + u * rng.uniform(-0.15, 0.15)
        ramp_dir = -u if rng.random() < 0.5 else u
        ang = math.atan2(ramp_dir[1], ramp_dir[0])
        # tilt about the ramp's local y so its x axis descends along ramp_dir
        quat = Rotation.from_euler("ZY", [ang, tilt]).as_quat()
        thick = 0.02
        zc = length * math.sin(tilt) + 0.0
        ramp = ((float(centre[0]), float(centre[1]), float(zc)), tuple(float(v) for v in quat), (length, 0.15, thick))
        kind = str(rng.choice(["sphere", "cylinder"]))
        rr = float(rng.uniform(0.05, 0.08))
        size = (rr, rr, rr) if kind == "sphere" else (rr, rr, float(rng.uniform(0.05, 0.09)))
        normal = Rotation.from_quat(quat).apply([0.0, 0.0, 1.0])
        upper = (
            np.array(centre)
            - ramp_dir * length * 0.75 * math.cos(tilt)
            + np.array([0, 0, zc + length * 0.75 * math.sin(tilt)])
        )
        pos = upper + normal * (thick + rr + 0.003)
        # a cylinder lies with its axis across the slope so it rolls
        orient = (
            tuple(float(v) for v in Rotation.from_euler("ZX", [ang, math.pi / 2]).as_quat())
            if kind == "cylinder"
            else random_quat(rng)
        )
        bodies.append(
            BodySpec(
                "roller",
                kind,
                size,
                "",
                1.0,
                float(rng.uniform(0.3, 1.0)),
                0.8,
                0.1,
                _bright_colour(rng),
                True,
                tuple(float(v) for v in pos),
                orient,
                (0.0,) * 3,
                (0.0,) * 3,
            )
        )

    # one to three bodies dropped or thrown, away from the tower and the striker's path
    placed = [(np.zeros(2), 0.25)] + [(start[:2] * f, r + 0.05) for f in (0.25, 0.5, 0.75, 1.0)]
    if ramp is not None:
        placed.append((np.array(ramp[0][:2]), 0.3))
    for _ in range(int(rng.integers(1, 4))):
        if rng.random() < 0.35:
            urdf = str(rng.choice(list(URDFS)))
            kind, size, scale, rad = "urdf", (0.0, 0.0, 0.0), URDFS[urdf] * float(rng.uniform(0.85, 1.15)), 0.12
        else:
            kind = str(rng.choice(PRIMITIVES))
            urdf, size, scale = "", _primitive(rng, kind), 1.0
            rad = float(np.linalg.norm(size))
        for _attempt in range(20):
            xy = rng.uniform(-0.5, 0.5, size=2)
            if all(np.linalg.norm(xy - c) > rad + cr for c, cr in placed):
                break
        else:
            continue
        placed.append((xy, rad))
        z = float(rng.uniform(0.3, 0.7))
        thrown = rng.random() < 0.4
        v = (*(rng.uniform(-0.4, 0.4, size=2)), float(rng.uniform(1.0, 2.0) if thrown else 0.0))
        bodies.append(
            BodySpec(
                "drop",
                kind,
                size,
                urdf,
                scale,
                float(rng.uniform(0.2, 1.2)),
                float(rng.uniform(0.3, 0.8)),
                float(rng.uniform(0.3, 0.75)),
                _bright_colour(rng),
                bool(rng.random() < 0.3),
                (float(xy[0]), float(xy[1]), z),
                random_quat(rng),
                tuple(float(c) for c in v),
                tuple(float(c) for c in rng.uniform(-4, 4, size=3)),
            )
        )

    return Scene(
        seed=int(seed),
        index=int(index),
        fps=fps,
        num_frames=int(num_frames),
        substeps=int(round(PHYSICS_HZ / fps)),
        bodies=tuple(bodies),
        ramp=ramp,
        wall_distance=float(rng.uniform(1.0, 1.4)),
        style=style,
        heldout_style=bool(heldout_style),
    )
