"""Render the frame strips shown in docs/world3d.md: per violation family of the 3D world, the
plausible clip above its violated twin at severities 0.5 and 1, from just before the onset on; plus
the nuisance-only twins (camera path, lighting, textures).

    PYTHONPATH=src python data_prep/render_world3d_strips.py --out docs/img
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from render_world_strips import COLUMNS, _row, _save, _stack

from phyprobe.world.bullet import ENGINE
from phyprobe.world.bullet.engine import NUISANCES
from phyprobe.world.bullet.scene import scene_rng

FRAMES = 32


def _scene(seed: int, start: int = 0):
    """The first scene from ``start`` on with a static camera and a frame large enough to read."""
    for index in range(start, start + 400):
        sc = ENGINE.scene(seed, index, FRAMES, False)
        meta = sc.metadata()
        if meta["camera"] == "static" and meta["height"] >= 144 and meta["aspect"] in ("4:3", "16:9"):
            return sc
        sc.close()
    raise RuntimeError(f"no static-camera scene among 400 from seed {seed}")


def family_strip(family: str, seed: int, out: Path) -> None:
    sc = _scene(seed, start=1 + 40 * sorted(ENGINE.families).index(family))  # a different scene per family
    plan = sc.plan(family, scene_rng(seed, sc.scene.index, 2))
    if family == "brief":  # a glitch of one to three frames: show every frame around it
        picks = list(range(max(0, plan.onset - 2), min(FRAMES, plan.onset - 2 + COLUMNS)))
    else:
        picks = [int(t) for t in np.linspace(max(0, plan.onset - 2), FRAMES - 1, COLUMNS)]
    rows = [_row(sc.plausible(), picks, "plausible")]
    for s in (0.5, 1.0):
        rows.append(_row(sc.violated(plan, s)[0], picks, f"{family}\n{plan.subtype}\nseverity {s}"))
    sc.close()
    _save(out / f"world3d_{family}.png", _stack(rows))


def nuisance_strip(seed: int, out: Path) -> None:
    sc = _scene(seed, start=50)
    picks = [int(t) for t in np.linspace(0, FRAMES - 1, COLUMNS)]
    rows = [_row(sc.plausible(), picks, "plausible")]
    found: set[str] = set()
    for r in range(40):  # one twin of each kind (the second twin draws lighting or texture)
        k = 0 if not found else 1
        frames, meta = sc.nuisance(k, np.random.default_rng(r))
        if meta["nuisance"] not in found:
            found.add(meta["nuisance"])
            detail = {"camera": meta["camera"], "lighting": meta["lighting"], "texture": f"{meta['floor']}/{meta['wall']}"}[meta["nuisance"]]
            rows.append(_row(frames, picks, f"nuisance\n{meta['nuisance']}\n{detail}"))
        if found == set(NUISANCES):
            break
    sc.close()
    _save(out / "world3d_nuisance.png", _stack(rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="docs/img")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for family in ENGINE.families:
        family_strip(family, args.seed, out)
    nuisance_strip(args.seed, out)


if __name__ == "__main__":
    main()
