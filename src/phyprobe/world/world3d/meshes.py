"""Low-poly triangle meshes for primitives and textured quads, as ``createVisualShape`` arguments.

Primitive bodies are drawn from our own meshes (not pybullet's GEOM_* visuals) so that a body can be
redrawn scaled along its own axes, which non-rigid violations need, and so that every shape carries
texture coordinates. A few hundred triangles each keep TinyRenderer fast.
"""

from __future__ import annotations

import numpy as np

SEGMENTS = 12  # around a sphere, cylinder or capsule
RINGS = 6  # pole to pole of a sphere


def _pack(v: np.ndarray, n: np.ndarray, uv: np.ndarray, idx: np.ndarray, scale) -> dict:
    s = np.asarray(scale, dtype=float)
    n = n / s  # normals of a scaled surface scale inversely
    n = n / np.maximum(np.linalg.norm(n, axis=1, keepdims=True), 1e-9)
    return {
        "vertices": (v * s).tolist(),
        "normals": n.tolist(),
        "uvs": uv.tolist(),
        "indices": idx.astype(int).ravel().tolist(),
    }


def quad_mesh(half_x: float, half_y: float, tiles: float) -> dict:
    """A flat rectangle in the xy plane facing +z; the texture repeats ``tiles`` times across it."""
    v = np.array([[-half_x, -half_y, 0], [half_x, -half_y, 0], [half_x, half_y, 0], [-half_x, half_y, 0]], float)
    uv = np.array([[0, 0], [tiles, 0], [tiles, tiles * half_y / half_x], [0, tiles * half_y / half_x]])
    return _pack(v, np.tile([0.0, 0.0, 1.0], (4, 1)), uv, np.array([0, 1, 2, 0, 2, 3]), (1, 1, 1))


def _box(h) -> tuple:
    verts, norms, uvs, idx = [], [], [], []
    for axis in range(3):
        for sign in (-1.0, 1.0):
            n = np.zeros(3)
            n[axis] = sign
            a, b = [k for k in range(3) if k != axis]
            base = len(verts)
            for du, dv in ((-1, -1), (1, -1), (1, 1), (-1, 1)):
                c = np.zeros(3)
                c[axis], c[a], c[b] = sign * h[axis], du * h[a], dv * h[b]
                verts.append(c)
                norms.append(n)
                uvs.append(((du + 1) / 2, (dv + 1) / 2))
            quad = [0, 1, 2, 0, 2, 3] if sign > 0 else [0, 2, 1, 0, 3, 2]
            if axis == 1:  # keep every face counter-clockwise seen from outside
                quad = quad[::-1]
            idx += [base + q for q in quad]
    return np.array(verts), np.array(norms), np.array(uvs), np.array(idx)


def _revolve(profile: np.ndarray, normal_profile: np.ndarray) -> tuple:
    """Surface of revolution about z from (radius, z) profile points, closed at the poles."""
    m = len(profile)
    phi = np.linspace(0, 2 * np.pi, SEGMENTS + 1)
    verts, norms, uvs = [], [], []
    for i, ((r, z), (nr, nz)) in enumerate(zip(profile, normal_profile)):
        for j, a in enumerate(phi):
            verts.append((r * np.cos(a), r * np.sin(a), z))
            norms.append((nr * np.cos(a), nr * np.sin(a), nz))
            uvs.append((2 * j / SEGMENTS, i / (m - 1)))
    idx = []
    w = SEGMENTS + 1
    for i in range(m - 1):
        for j in range(SEGMENTS):
            a, b, c, d = i * w + j, i * w + j + 1, (i + 1) * w + j + 1, (i + 1) * w + j
            idx += [a, b, c, a, c, d]
    return np.array(verts), np.array(norms), np.array(uvs), np.array(idx)


def _sphere_profile(r: float, z0: float, lo: float, hi: float, rings: int):
    th = np.linspace(lo, hi, rings + 1)  # polar angle from -z (lo) to +z (hi)
    prof = np.stack([r * np.sin(th), z0 - r * np.cos(th)], axis=1)
    nprof = np.stack([np.sin(th), -np.cos(th)], axis=1)
    return prof, nprof


def primitive_mesh(kind: str, size, scale=(1.0, 1.0, 1.0)) -> dict:
    """Mesh of a box (half extents), sphere (r), cylinder or capsule (r, half length along z)."""
    if kind == "box":
        return _pack(*_box(np.asarray(size, float)), scale)
    r, h = size[0], size[2]
    if kind == "sphere":
        prof, nprof = _sphere_profile(r, 0.0, 0.0, np.pi, RINGS)
    elif kind == "capsule":
        p1, n1 = _sphere_profile(r, -h, 0.0, np.pi / 2, RINGS // 2)
        p2, n2 = _sphere_profile(r, h, np.pi / 2, np.pi, RINGS // 2)
        prof, nprof = np.concatenate([p1, p2]), np.concatenate([n1, n2])
    elif kind == "cylinder":
        prof = np.array([[0, -h], [r, -h], [r, -h], [r, h], [r, h], [0, h]], float)
        nprof = np.array([[0, -1], [0, -1], [1, 0], [1, 0], [0, 1], [0, 1]], float)
    else:
        raise ValueError(f"unknown primitive {kind!r}; known: box, sphere, cylinder, capsule")
    return _pack(*_revolve(prof, nprof), scale)
