"""Rigid-body simulation of a 3D scene with pybullet, optionally with an intervention that breaks physics.

Each scene has two DIRECT clients, both its own and disconnected by ``close()``: a physics client
that is reset and rebuilt from the scene for every run (plausible or violated), so runs step
identically until an intervention acts and frames before its onset are bit-identical (pybullet's
``restoreState`` keeps contact caches from the previous run, which breaks that), and a drawing
client with the visual meshes and textures, where ``render`` poses the bodies as recorded.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import pybullet as p
import pybullet_data
from scipy.spatial.transform import Rotation

from phyprobe.world.world3d.meshes import primitive_mesh, quad_mesh
from phyprobe.world.world3d.scene import GRAVITY, TEXTURE_FILES, BodySpec, Scene, Style

DATA = pybullet_data.getDataPath()
FLOOR_HALF = 4.0  # of the floor's collision box
FLOOR_SIDE = 2.5  # half width of the drawn floor and wall, across the view
WALL_HALF_HEIGHT = 1.2
STATIC_FRICTION = 0.8
STATIC_RESTITUTION = 0.5


@dataclass
class Trajectory:
    """Per-frame state of every body: what the renderer poses and what the invariants are checked on."""

    pos: np.ndarray  # (T, N, 3) centre of mass, m
    quat: np.ndarray  # (T, N, 4) x, y, z, w
    vel: np.ndarray  # (T, N, 3)
    angvel: np.ndarray  # (T, N, 3)
    low: np.ndarray  # (T, N) lowest point of each body (its AABB), m
    contact: np.ndarray  # (T,) whether the striker touches the base at the end of frame t
    mass: np.ndarray  # (N,)
    inertia: np.ndarray  # (N, 3) principal moments (in the inertial frame)

    @property
    def num_frames(self) -> int:
        return self.pos.shape[0]

    def energy(self, gravity: float = GRAVITY) -> np.ndarray:
        """(T, N) kinetic + rotational + potential energy of each body."""
        t, n = self.pos.shape[:2]
        rot = Rotation.from_quat(self.quat.reshape(-1, 4))
        w_body = rot.inv().apply(self.angvel.reshape(-1, 3)).reshape(t, n, 3)
        rot_ke = 0.5 * (self.inertia * w_body**2).sum(-1)
        return 0.5 * self.mass * (self.vel**2).sum(-1) + rot_ke + self.mass * gravity * self.pos[..., 2]


class Intervention(Protocol):
    """Acts on the running simulation: ``before_substep(t, k)`` runs before substep k of the physics
    that produces frame t (so its effect first shows in frame t)."""

    def before_substep(self, world: "World", t: int, k: int) -> None: ...


def _collision(b: BodySpec, c: int) -> int:
    if b.kind == "box":
        return p.createCollisionShape(p.GEOM_BOX, halfExtents=b.size, physicsClientId=c)
    if b.kind == "sphere":
        return p.createCollisionShape(p.GEOM_SPHERE, radius=b.size[0], physicsClientId=c)
    geom = p.GEOM_CYLINDER if b.kind == "cylinder" else p.GEOM_CAPSULE
    return p.createCollisionShape(geom, radius=b.size[0], height=2 * b.size[2], physicsClientId=c)


def populate(scene: Scene, c: int) -> list[int]:
    """Build the scene's physics (floor, ramp, bodies with their materials and initial velocities)
    into a freshly reset client; returns the body ids in ``scene.bodies`` order."""
    p.setPhysicsEngineParameter(
        fixedTimeStep=1.0 / (scene.fps * scene.substeps),
        numSolverIterations=15,
        deterministicOverlappingPairs=1,
        physicsClientId=c,
    )
    statics = [
        p.createMultiBody(
            0,
            p.createCollisionShape(p.GEOM_BOX, halfExtents=[FLOOR_HALF, FLOOR_HALF, 0.1], physicsClientId=c),
            -1,
            [0, 0, -0.1],
            physicsClientId=c,
        )
    ]
    if scene.ramp is not None:
        pos, quat, half = scene.ramp
        statics.append(
            p.createMultiBody(
                0,
                p.createCollisionShape(p.GEOM_BOX, halfExtents=half, physicsClientId=c),
                -1,
                pos,
                quat,
                physicsClientId=c,
            )
        )
    for sid in statics:
        p.changeDynamics(sid, -1, lateralFriction=STATIC_FRICTION, restitution=STATIC_RESTITUTION, physicsClientId=c)
    ids = []
    for b in scene.bodies:
        if b.kind == "urdf":
            bid = p.loadURDF(
                os.path.join(DATA, b.urdf), b.position, b.orientation, globalScaling=b.scale, physicsClientId=c
            )
        else:
            bid = p.createMultiBody(b.mass, _collision(b, c), -1, b.position, b.orientation, physicsClientId=c)
        p.changeDynamics(
            bid,
            -1,
            lateralFriction=b.friction,
            restitution=b.restitution,
            rollingFriction=0.0,
            spinningFriction=0.0,
            linearDamping=0.0,
            angularDamping=0.0,
            physicsClientId=c,
        )
        p.resetBaseVelocity(bid, b.velocity, b.angular_velocity, physicsClientId=c)
        ids.append(bid)
    return ids


class World:
    """The pybullet clients of one scene: physics (rebuilt per run) and drawing (bodies, statics,
    textures)."""

    def __init__(self, scene: Scene):
        self.scene = scene
        self.sim = p.connect(p.DIRECT)
        self.sim_ids = populate(scene, self.sim)
        self.mass = np.array([p.getDynamicsInfo(i, -1, physicsClientId=self.sim)[0] for i in self.sim_ids])
        self.inertia = np.array([p.getDynamicsInfo(i, -1, physicsClientId=self.sim)[2] for i in self.sim_ids])
        self.cid = p.connect(p.DIRECT)
        c = self.cid
        self.textures: dict[str, int] = {}
        st = scene.style
        # the floor is drawn only where the camera can see it (TinyRenderer pays for every pixel
        # it rasterises, hidden or not): from the back wall (or far away) to under the camera
        az = np.radians(st.camera.azimuth)
        toward = np.array([np.cos(az), np.sin(az)])
        back = scene.wall_distance if st.wall != "none" else FLOOR_HALF
        front = st.camera.distance * np.cos(np.radians(st.camera.elevation))
        mid = toward * (front - back) / 2
        half_len = (front + back) / 2
        floor_q = Rotation.from_euler("Z", az).as_quat().tolist()
        floor_vs = p.createVisualShape(
            p.GEOM_MESH,
            **quad_mesh(half_len, FLOOR_SIDE, st.floor_tiles * half_len / FLOOR_SIDE),
            rgbaColor=[*st.floor_colour, 1],
            physicsClientId=c,
        )
        # (a body with no visual shape would be drawn from its collision box, so the two are one body)
        floor_cs = p.createCollisionShape(
            p.GEOM_BOX,
            halfExtents=[FLOOR_HALF, FLOOR_HALF, 0.1],
            collisionFramePosition=[-(front - back) / 2, 0, -0.1],
            physicsClientId=c,
        )
        self.floor = p.createMultiBody(
            0, floor_cs, floor_vs, [float(mid[0]), float(mid[1]), 0.0], floor_q, physicsClientId=c
        )
        self.wall = -1
        if st.wall != "none":
            # a vertical quad behind the scene, facing the camera
            q = Rotation.from_euler("ZX", [az + np.pi / 2, np.pi / 2]).as_quat()
            pos = -toward * scene.wall_distance
            wall_vs = p.createVisualShape(
                p.GEOM_MESH,
                **quad_mesh(FLOOR_SIDE, WALL_HALF_HEIGHT, st.floor_tiles / 2),
                rgbaColor=[*st.wall_colour, 1],
                physicsClientId=c,
            )
            self.wall = p.createMultiBody(
                0, -1, wall_vs, [float(pos[0]), float(pos[1]), WALL_HALF_HEIGHT], q.tolist(), physicsClientId=c
            )
        self.ramp = -1
        if scene.ramp is not None:
            pos, quat, half = scene.ramp
            rs = p.createCollisionShape(p.GEOM_BOX, halfExtents=half, physicsClientId=c)
            rv = p.createVisualShape(p.GEOM_BOX, halfExtents=half, rgbaColor=[0.55, 0.5, 0.45, 1], physicsClientId=c)
            self.ramp = p.createMultiBody(0, rs, rv, pos, quat, physicsClientId=c)
        for sid in (self.floor, self.ramp):
            if sid >= 0:
                p.changeDynamics(
                    sid, -1, lateralFriction=STATIC_FRICTION, restitution=STATIC_RESTITUTION, physicsClientId=c
                )
        self.set_surfaces(st)
        self.ids = [self._add(b) for b in scene.bodies]
        self.extent = np.array([self._half_extent(i) for i in range(len(self.ids))])  # (N, 3) body-frame half sizes

    def texture(self, name: str) -> int:
        if name not in self.textures:
            self.textures[name] = p.loadTexture(os.path.join(DATA, TEXTURE_FILES[name]), physicsClientId=self.cid)
        return self.textures[name]

    def set_surfaces(self, style: Style) -> None:
        """Texture (or plain-colour) the floor and the wall as ``style`` has them; nuisance twins
        re-dress the same world."""
        for body, name, colour in (
            (self.floor, style.floor, style.floor_colour),
            (self.wall, style.wall, style.wall_colour),
        ):
            if body >= 0:
                textured = name in TEXTURE_FILES
                p.changeVisualShape(
                    body,
                    -1,
                    textureUniqueId=self.texture(name) if textured else -1,
                    rgbaColor=[1, 1, 1, 1] if textured else [*colour, 1],
                    physicsClientId=self.cid,
                )

    def visual(self, spec: BodySpec, scale=(1.0, 1.0, 1.0)) -> int:
        """A visual shape for a primitive body, scaled along its own axes (non-rigid families)."""
        return p.createVisualShape(
            p.GEOM_MESH,
            **primitive_mesh(spec.kind, spec.size, scale),
            rgbaColor=[*spec.colour, 1],
            physicsClientId=self.cid,
        )

    def _add(self, b: BodySpec) -> int:
        c = self.cid
        if b.kind == "urdf":
            bid = p.loadURDF(
                os.path.join(DATA, b.urdf), b.position, b.orientation, globalScaling=b.scale, physicsClientId=c
            )
            p.changeVisualShape(bid, -1, rgbaColor=[*b.colour, 1], textureUniqueId=-1, physicsClientId=c)
        else:  # collision shapes here serve contact geometry queries, not dynamics
            bid = p.createMultiBody(
                b.mass, _collision(b, c), self.visual(b), b.position, b.orientation, physicsClientId=c
            )
        if b.textured:
            p.changeVisualShape(bid, -1, textureUniqueId=self.texture("checker_blue"), physicsClientId=c)
        return bid

    def _half_extent(self, i: int) -> np.ndarray:
        spec = self.scene.bodies[i]
        if spec.kind == "box":
            return np.array(spec.size)
        if spec.kind == "sphere":
            return np.full(3, spec.size[0])
        if spec.kind in ("cylinder", "capsule"):
            r, h = spec.size[0], spec.size[2] + (spec.size[0] if spec.kind == "capsule" else 0.0)
            return np.array([r, r, h])
        bid, c = self.ids[i], self.cid
        pos, quat = p.getBasePositionAndOrientation(bid, physicsClientId=c)
        p.resetBasePositionAndOrientation(bid, [0, 0, 5], [0, 0, 0, 1], physicsClientId=c)
        lo, hi = p.getAABB(bid, physicsClientId=c)
        p.resetBasePositionAndOrientation(bid, pos, quat, physicsClientId=c)
        return (np.array(hi) - np.array(lo)) / 2

    def radius(self, i: int) -> float:
        return float(np.linalg.norm(self.extent[i]))

    def pose(self, pos: np.ndarray, quat: np.ndarray) -> None:
        """Put every body where a frame of a trajectory has it."""
        for k, bid in enumerate(self.ids):
            p.resetBasePositionAndOrientation(bid, pos[k].tolist(), quat[k].tolist(), physicsClientId=self.cid)

    def simulate(self, intervention: Intervention | None = None, gravity_scale: float = 1.0) -> Trajectory:
        c, n, scene = self.sim, len(self.ids), self.scene
        p.resetSimulation(physicsClientId=c)
        self.sim_ids = populate(scene, c)
        p.setGravity(0, 0, -GRAVITY * gravity_scale, physicsClientId=c)
        t_count = scene.num_frames
        pos, quat = np.zeros((t_count, n, 3)), np.zeros((t_count, n, 4))
        vel, angvel = np.zeros((t_count, n, 3)), np.zeros((t_count, n, 3))
        low, contact = np.zeros((t_count, n)), np.zeros(t_count, bool)
        striker, base = self.sim_ids[scene.role("striker")[0]], self.sim_ids[scene.role("base")[0]]

        def record(t: int) -> None:
            for k, bid in enumerate(self.sim_ids):
                pos[t, k], quat[t, k] = p.getBasePositionAndOrientation(bid, physicsClientId=c)
                vel[t, k], angvel[t, k] = p.getBaseVelocity(bid, physicsClientId=c)
                low[t, k] = p.getAABB(bid, physicsClientId=c)[0][2]
            contact[t] = bool(p.getContactPoints(striker, base, physicsClientId=c))

        record(0)
        for t in range(1, t_count):
            for k in range(scene.substeps):
                if intervention is not None:
                    intervention.before_substep(self, t, k)
                p.stepSimulation(physicsClientId=c)
            record(t)
        return Trajectory(pos, quat, vel, angvel, low, contact, self.mass.copy(), self.inertia.copy())

    def close(self) -> None:
        for c in (self.cid, self.sim):
            if c >= 0 and p.isConnected(c):
                p.disconnect(c)
        self.cid = self.sim = -1
