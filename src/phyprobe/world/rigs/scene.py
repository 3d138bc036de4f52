"""What a rigs scene holds and how it looks, drawn from (seed, index) alone.

Two views of constrained mechanisms share one module of physics. ``pendulums``: two or three pendulums
hang from a ceiling bar; the striker is released from rest at a large angle and, a third to a half of the
way into the clip, its bob strikes the bob of a resting pendulum (the third, if any, swings gently on the
far side). ``slope``: a block slides down an inclined plane with Coulomb friction onto the floor, where it
strikes a block resting there a third to a half of the way in; a cart on a spring tied to the end wall may
oscillate beyond. Both views aim their collision in closed form (the pendulum's time to contact from the
elliptic integral, the block's from uniform acceleration), so every violation family can be planned.

Units are metres and seconds; y points up the picture. The scene is built unmirrored (the striker on the
left); ``style.mirror`` flips the picture, which the camera does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import ellipk, ellipkinc

from phyprobe.world.seeds import scene_rng
from phyprobe.world.simulated import Look

GRAVITY = 9.81
VIEWS = ("pendulums", "slope")
SIZES = {"4:3": (192, 144), "1:1": (160, 160), "16:9": (224, 128)}  # (width, height), even
FPS = (20, 24, 30)
# palette -> (paper: the background, ink: outlines, hatching and rods, structure: bar, slope, wall); RGB
PALETTES = {
    "cream": ((236, 228, 206), (44, 38, 46), (176, 160, 134)),
    "kraft": ((198, 170, 128), (50, 34, 22), (128, 96, 66)),
    "mint": ((212, 232, 218), (26, 54, 46), (120, 160, 142)),
    "slate": ((96, 104, 116), (18, 20, 26), (160, 166, 176)),
    "rose": ((238, 216, 214), (72, 30, 42), (180, 132, 140)),
}
HELDOUT_PALETTE = "blueprint"  # used by no other scene, nor by any nuisance twin of another scene
BLUEPRINT = ((30, 62, 132), (226, 236, 255), (94, 134, 200))
# flat marker colours of the bodies; the held-out look has its own (chalk on a blueprint)
MARKERS = (
    (214, 48, 40),
    (236, 140, 30),
    (238, 206, 40),
    (60, 160, 70),
    (30, 150, 160),
    (44, 90, 200),
    (130, 70, 180),
    (210, 60, 140),
)
CHALK = ((255, 250, 236), (255, 214, 120), (150, 240, 220), (255, 170, 200))
TEXTURES = ("grid", "paper", "wood", "dots")
PATTERNS = ("plain", "stripe", "dot", "half")
CAMERAS = ("static", "pan", "zoom", "shake")


@dataclass(frozen=True)
class Body:
    kind: str  # "bob" (of a pendulum) | "block" | "cart" (on a spring)
    shape: str  # "disc" | "square" | "rect"
    half: tuple[float, float]  # half-extents in the body's own frame (a disc: (r, r))
    mass: float
    colour: tuple[int, int, int]
    colour2: tuple[int, int, int]
    pattern: str


@dataclass(frozen=True)
class Pendulum:
    pivot: tuple[float, float]
    length: float
    theta: float  # initial angle from the vertical, radians (positive: bob to the right)
    omega: float  # initial angular velocity


@dataclass(frozen=True)
class Slope:
    angle: float  # the incline, radians; it descends to the right and meets the floor at x = 0
    top: float  # its length along the incline
    friction: float  # Coulomb coefficient of the blocks on slope and floor
    wall_x: float  # the end wall's face
    u0: tuple[float, ...]  # each block's start: path coordinate of its bottom centre (< 0: on the incline)
    v0: tuple[float, ...]
    spring_k: float = 0.0  # the cart (last body) when > 0: stiffness, rest position, start, damping
    spring_rest: float = 0.0
    cart_x: float = 0.0
    cart_damping: float = 0.0


@dataclass(frozen=True)
class Light:
    angle: float  # direction of the brightness gradient over the picture, radians
    gradient: float  # its strength
    brightness: float
    tint: tuple[float, float, float]
    shadow: tuple[float, float]  # drop-shadow offset in pixels (x right, y down)
    darkness: float


@dataclass(frozen=True)
class Camera:
    path: str  # static | pan | zoom | shake, or two joined by "+"
    amount: float
    phase: float
    roll: float  # a small fixed roll of the picture, radians


@dataclass(frozen=True)
class Style(Look):
    paper: tuple[int, int, int]
    ink: tuple[int, int, int]
    structure: tuple[int, int, int]
    noise_seed: int
    mirror: bool


@dataclass(frozen=True)
class Scene:
    seed: int
    index: int
    view: str
    bodies: tuple[Body, ...]
    pendulums: tuple[Pendulum, ...]  # pendulums[i] carries bodies[i]; empty in the slope view
    slope: Slope | None
    bar_y: float  # pendulums: the ceiling bar's underside
    reach: tuple[tuple[float, ...], ...]  # pendulums: centre distance at which two bobs touch
    damping: float  # pendulums: air damping of the angular velocity, 1/s
    restitution: float  # body-body
    wall_restitution: float
    striker: int
    struck: int
    t_hit: float  # when the aimed collision is planned, seconds
    extent: tuple[float, float, float, float]  # (x0, y0, x1, y1) the content a static camera frames
    fps: int
    num_frames: int
    style: Style
    heldout_style: bool
    gravity: float = GRAVITY

    @property
    def key(self) -> str:
        return f"s{self.seed}-{self.index:05d}"

    @property
    def scale(self) -> float:
        return self.extent[2] - self.extent[0]

    def view_rect(self) -> tuple[float, float, float, float]:
        """(centre x, centre y, width, height) in metres of what a static camera sees, at the frame's aspect."""
        x0, y0, x1, y1 = self.extent
        w, h = (x1 - x0) * 1.1, (y1 - y0) * 1.1
        aspect = self.style.width / self.style.height
        w = max(w, h * aspect)
        return (x0 + x1) / 2, (y0 + y1) / 2, w, w / aspect


def _jitter(rng: np.random.Generator, base: tuple[int, int, int], amount: int) -> tuple[int, int, int]:
    return tuple(int(np.clip(c + rng.integers(-amount, amount + 1), 0, 255)) for c in base)


def _body_colour(rng: np.random.Generator, avoid: list[tuple[int, int, int]], heldout: bool) -> tuple[int, int, int]:
    """A marker colour far from the paper, the structures and the bodies already coloured."""
    pool = CHALK if heldout else MARKERS
    best, best_d = pool[0], -1.0
    for k in rng.permutation(len(pool)):
        c = _jitter(rng, pool[int(k)], 12)
        d = min(sum((a - b) ** 2 for a, b in zip(c, o)) for o in avoid)
        if d > best_d:
            best, best_d = c, d
    return best


def _second_colour(rng: np.random.Generator, c: tuple[int, int, int]) -> tuple[int, int, int]:
    if rng.uniform() < 0.5:
        return tuple(int(v + (255 - v) * 0.6) for v in c)
    return tuple(int(v * 0.45) for v in c)


def sample_light(rng: np.random.Generator) -> Light:
    a = float(rng.uniform(0, 2 * math.pi))
    d = float(rng.uniform(2.0, 4.0))
    return Light(
        angle=float(rng.uniform(0, 2 * math.pi)),
        gradient=float(rng.uniform(0.05, 0.25)),
        brightness=float(rng.uniform(0.82, 1.05)),
        tint=tuple(float(v) for v in rng.uniform(0.88, 1.0, 3)),
        shadow=(d * math.cos(a), abs(d * math.sin(a)) + 1.0),
        darkness=float(rng.uniform(0.15, 0.35)),
    )


def sample_camera(rng: np.random.Generator, path: str, roll: float | None = None) -> Camera:
    amount = {
        "static": 0.0,
        "pan": rng.uniform(0.06, 0.14),
        "zoom": rng.uniform(0.1, 0.25),
        "shake": rng.uniform(0.006, 0.014),
    }
    return Camera(
        path=path,
        amount=float(max(amount[p] for p in path.split("+"))),
        phase=float(rng.uniform(0, 2 * math.pi)),
        roll=float(rng.uniform(-0.05, 0.05)) if roll is None else roll,
    )


def sample_style(rng: np.random.Generator, heldout: bool) -> Style:
    aspect = str(rng.choice(list(SIZES)))
    width, height = SIZES[aspect]
    name = HELDOUT_PALETTE if heldout else str(rng.choice(list(PALETTES)))
    paper, ink, structure = BLUEPRINT if heldout else PALETTES[name]
    return Style(
        palette=name,
        paper=_jitter(rng, paper, 10),
        ink=_jitter(rng, ink, 8),
        structure=_jitter(rng, structure, 12),
        texture=str(rng.choice(TEXTURES)),
        light=sample_light(rng),
        camera=sample_camera(rng, str(rng.choice(CAMERAS, p=[0.5, 0.2, 0.15, 0.15]))),
        aspect=aspect,
        width=width,
        height=height,
        texture_seed=int(rng.integers(2**31)),
        noise_seed=int(rng.integers(2**31)),
        mirror=bool(rng.uniform() < 0.5),
    )


def time_to_contact(theta_max: float, theta_c: float) -> float:
    """Seconds for an undamped pendulum of length g (so sqrt(L/g) = 1) released from rest at -theta_max to
    reach theta_c: sqrt(L/g) [F(phi_c | m) + K(m)], with sin(theta/2) = k sin(phi), m = k^2."""
    m = math.sin(theta_max / 2) ** 2
    phi = math.asin(math.sin(theta_c / 2) / math.sqrt(m))
    return float(ellipkinc(phi, m) + ellipk(m))


def _support(shape: str, h: float, delta: float) -> float:
    """How far a disc or square of half-size h reaches along a direction ``delta`` from its own x axis."""
    return h if shape == "disc" else h * (abs(math.cos(delta)) + abs(math.sin(delta)))


def _pendulums(rng, duration: float, colour):
    t_hit = float(rng.uniform(0.36, 0.46)) * duration
    for _ in range(50):
        theta_max = math.radians(float(rng.uniform(50, 80)))
        theta_c = math.radians(float(rng.uniform(4, 12)))
        la = GRAVITY * (t_hit / time_to_contact(theta_max, theta_c)) ** 2
        lb = la * float(rng.uniform(0.6, 1.25))
        shapes = [str(rng.choice(["disc", "square"])) for _ in range(3)]
        halves = [float(rng.uniform(0.09, 0.13)) * la for _ in range(3)]
        phi = theta_c + math.radians(float(rng.uniform(-15, 15)))
        reach_ab = _support(shapes[0], halves[0], phi - theta_c) + _support(shapes[1], halves[1], phi)
        bob_b = np.array([0.0, -lb])
        contact_a = bob_b - reach_ab * np.array([math.cos(phi), math.sin(phi)])
        pivot_a = contact_a - la * np.array([math.sin(theta_c), -math.cos(theta_c)])
        d = bob_b - pivot_a
        beta = math.atan2(d[0], -d[1])
        bar = max(0.0, float(pivot_a[1])) + float(rng.uniform(0.0, 0.08)) * la
        if beta > theta_c + 0.02 and theta_max < math.pi - beta - 0.3 and bar - min(0.0, float(pivot_a[1])) < 0.6 * la:
            break
    pend = [Pendulum((float(pivot_a[0]), float(pivot_a[1])), la, -theta_max, 0.0), Pendulum((0.0, 0.0), lb, 0.0, 0.0)]
    if rng.uniform() < 0.5:  # a third pendulum beyond the struck one, swinging gently
        lc = la * float(rng.uniform(0.5, 1.1))
        amp = float(rng.uniform(-0.25, 0.25))
        x = halves[1] + halves[2] * 1.3 + float(rng.uniform(0.15, 0.35)) * la + lc * abs(math.sin(amp))
        pend.append(Pendulum((x, bar), lc, amp, 0.0))
    n = len(pend)
    mass = [
        (1.0 if shapes[i] == "disc" else 4 / math.pi) * halves[i] ** 2 * float(rng.uniform(0.6, 1.6)) for i in range(n)
    ]
    mass[1] = mass[0] * float(
        rng.uniform(0.8, 1.8)
    )  # the struck bob is not much lighter: it swings up, not over the bar
    bodies = [Body("bob", shapes[i], (halves[i], halves[i]), mass[i], *colour()) for i in range(n)]
    reach = [[0.0] * n for _ in range(n)]
    for i in range(n):
        for j in range(n):
            if i != j:
                reach[i][j] = (halves[i] if shapes[i] == "disc" else 1.2 * halves[i]) + (
                    halves[j] if shapes[j] == "disc" else 1.2 * halves[j]
                )
    reach[0][1] = reach[1][0] = reach_ab
    xs = [
        p.pivot[0] + p.length * s * math.sin(a)
        for p in pend
        for s, a in ((1, max(abs(p.theta), 0.0)), (-1, max(abs(p.theta), 0.0)))
    ]
    xs += [
        pend[0].pivot[0] - la * math.sin(theta_max) - halves[0],
        pend[1].pivot[0] + lb * math.sin(math.radians(45)) + halves[1],
    ]
    ys = [p.pivot[1] - p.length - bodies[i].half[1] for i, p in enumerate(pend)]
    extent = (min(xs) - 0.05 * la, min(ys) - 0.05 * la, max(xs) + 0.05 * la, bar + 0.12 * la)
    return bodies, tuple(pend), bar, tuple(tuple(r) for r in reach), t_hit, extent


def _slope(rng, duration: float, colour):
    g = GRAVITY
    alpha = math.radians(float(rng.uniform(25, 40)))
    mu = float(rng.uniform(0.05, 0.45)) * math.tan(alpha)
    t_hit = float(rng.uniform(0.38, 0.48)) * duration
    t_s = float(rng.uniform(0.55, 0.75)) * t_hit
    t_f = t_hit - t_s
    while True:
        a = g * (math.sin(alpha) - mu * math.cos(alpha))
        v_f = a * t_s * math.cos(alpha)
        if v_f - mu * g * t_f >= 0.4 * v_f:
            break
        mu *= 0.7
    s0 = 0.5 * a * t_s**2
    dist = v_f * t_f - 0.5 * mu * g * t_f**2
    scale = s0 + dist
    w1 = float(rng.uniform(0.2, 0.26)) * scale
    h1 = w1 * float(rng.uniform(0.5, 0.85))
    w2 = w1 * float(rng.uniform(0.75, 1.2))
    h2 = w2 * float(rng.uniform(0.55, 1.2))
    e = float(rng.uniform(0.5, 0.9))
    m1, m2 = w1 * h1 * float(rng.uniform(0.7, 1.5)), w2 * h2 * float(rng.uniform(0.7, 1.5))
    u2 = dist + (w1 + w2) / 2
    v1 = v_f - mu * g * t_f
    v2 = (1 + e) * m1 * v1 / (m1 + m2)
    travel = v2**2 / (2 * mu * g)
    bodies = [
        Body("block", "rect", (w1 / 2, h1 / 2), m1, *colour()),
        Body("block", "rect", (w2 / 2, h2 / 2), m2, *colour()),
    ]
    cart = rng.uniform() < 0.5
    room = float(np.clip(travel, 0.3 * scale, 0.8 * scale))
    kw = {}
    if cart:
        w3, h3 = w1 * float(rng.uniform(0.8, 1.1)), 0.0
        h3 = 0.65 * w3
        spring = float(rng.uniform(0.3, 0.45)) * scale
        amp = float(rng.uniform(0.15, 0.3)) * spring
        room = float(np.clip(travel * 0.6, 0.15 * scale, 0.5 * scale))
        wall_x = u2 + w2 / 2 + room + amp + w3 + spring
        m3 = w3 * h3 * float(rng.uniform(0.7, 1.5))
        period = float(rng.uniform(0.5, 0.9)) * duration
        rest = wall_x - spring - w3 / 2
        kw = dict(
            spring_k=m3 * (2 * math.pi / period) ** 2,
            spring_rest=rest,
            cart_x=rest + amp * (1 if rng.uniform() < 0.5 else -1),
            cart_damping=float(rng.uniform(0.0, 0.2)),
        )
        bodies.append(Body("cart", "rect", (w3 / 2, h3 / 2), m3, *colour()))
    else:
        wall_x = u2 + w2 / 2 + room
    top = s0 + w1 * 0.8
    slope = Slope(angle=alpha, top=top, friction=mu, wall_x=wall_x, u0=(-s0, u2), v0=(0.0, 0.0), **kw)
    height = max(top * math.sin(alpha), 2.2 * h2)
    extent = (-top * math.cos(alpha) - 0.04 * scale, -0.1 * scale, wall_x + 0.08 * scale, height + 0.08 * scale)
    return bodies, slope, t_hit, extent, e


def sample_scene(seed: int, index: int, num_frames: int, heldout_style: bool) -> Scene:
    rng = scene_rng(seed, index, 0)
    view = str(rng.choice(VIEWS))
    fps = int(rng.choice(FPS))
    style = sample_style(scene_rng(seed, index, 1), heldout_style)
    duration = num_frames / fps
    used = [style.paper, style.structure]

    def colour() -> tuple:
        c = _body_colour(rng, used, heldout_style)
        used.append(c)
        return c, _second_colour(rng, c), str(rng.choice(PATTERNS))

    if view == "pendulums":
        bodies, pend, bar, reach, t_hit, extent = _pendulums(rng, duration, colour)
        return Scene(
            seed=seed,
            index=index,
            view=view,
            bodies=tuple(bodies),
            pendulums=pend,
            slope=None,
            bar_y=bar,
            reach=reach,
            damping=float(rng.uniform(0.02, 0.08)),
            restitution=float(rng.uniform(0.6, 0.95)),
            wall_restitution=0.0,
            striker=0,
            struck=1,
            t_hit=t_hit,
            extent=extent,
            fps=fps,
            num_frames=num_frames,
            style=style,
            heldout_style=heldout_style,
        )
    bodies, slope, t_hit, extent, e = _slope(rng, duration, colour)
    return Scene(
        seed=seed,
        index=index,
        view=view,
        bodies=tuple(bodies),
        pendulums=(),
        slope=slope,
        bar_y=0.0,
        reach=(),
        damping=0.0,
        restitution=e,
        wall_restitution=float(rng.uniform(0.4, 0.7)),
        striker=0,
        struck=1,
        t_hit=t_hit,
        extent=extent,
        fps=fps,
        num_frames=num_frames,
        style=style,
        heldout_style=heldout_style,
    )
