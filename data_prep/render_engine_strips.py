"""Render the frame strips shown in docs/world3d.md and docs/marbles.md: per violation family of an engine's
world, the plausible clip above its violated twin at severities 0.5 and 1, from just before the onset on;
plus the nuisance-only twins (camera path, lighting, textures).

    PYTHONPATH=src python data_prep/render_engine_strips.py --engine world3d --out docs/img   # world3d_*.png
    PYTHONPATH=src python data_prep/render_engine_strips.py --engine marbles --out docs/img   # marbles_*.png
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from render_world_strips import COLUMNS, _row, _save, _stack

from phyprobe.world.build import get_engine
from phyprobe.world.seeds import scene_rng

FRAMES = 32
MIN_HEIGHT = {"world3d": 144, "marbles": 108}  # frames large enough to read in a strip (the strips are <engine>_*.png)
NUISANCE_DETAIL = {"camera": ("camera",), "lighting": ("lighting",), "texture": ("floor", "wall", "texture")}


def _close(sc) -> None:
    if hasattr(sc, "close"):  # the 3D world's scenes hold a pybullet client
        sc.close()


def _scene(engine, name: str, seed: int, start: int = 0):
    """The first scene from ``start`` on with a static camera and a frame large enough to read."""
    for index in range(start, start + 400):
        sc = engine.scene(seed, index, FRAMES, False)
        meta = sc.metadata()
        if meta["camera"] == "static" and meta["height"] >= MIN_HEIGHT[name] and meta["aspect"] in ("4:3", "16:9"):
            return sc
        _close(sc)
    raise RuntimeError(f"no static-camera scene among 400 from seed {seed}")


def family_strip(engine, name: str, family: str, seed: int, out: Path) -> None:
    sc = _scene(
        engine, name, seed, start=1 + 40 * sorted(engine.families).index(family)
    )  # a different scene per family
    plan = sc.plan(family, scene_rng(seed, int(sc.key.rsplit("-", 1)[1]), 2))
    if family == "brief":  # a glitch of one to three frames: show every frame around it
        picks = list(range(max(0, plan.onset - 2), min(FRAMES, plan.onset - 2 + COLUMNS)))
    else:
        picks = [int(t) for t in np.linspace(max(0, plan.onset - 2), FRAMES - 1, COLUMNS)]
    rows = [_row(sc.plausible(), picks, "plausible")]
    for s in (0.5, 1.0):
        rows.append(_row(sc.violated(plan, s)[0], picks, f"{family}\n{plan.subtype}\nseverity {s}"))
    _close(sc)
    _save(out / f"{name}_{family}.png", _stack(rows))


def nuisance_strip(engine, name: str, seed: int, out: Path) -> None:
    sc = _scene(engine, name, seed, start=50)
    picks = [int(t) for t in np.linspace(0, FRAMES - 1, COLUMNS)]
    rows = [_row(sc.plausible(), picks, "plausible")]
    found: set[str] = set()
    for r in range(40):  # one twin of each kind (the second twin draws lighting or texture)
        k = 0 if not found else 1
        frames, meta = sc.nuisance(k, np.random.default_rng(r))
        if meta["nuisance"] not in found:
            found.add(meta["nuisance"])
            detail = "/".join(str(meta[key]) for key in NUISANCE_DETAIL[meta["nuisance"]] if key in meta)
            rows.append(_row(frames, picks, f"nuisance\n{meta['nuisance']}\n{detail}"))
        if found == set(NUISANCE_DETAIL):
            break
    _close(sc)
    _save(out / f"{name}_nuisance.png", _stack(rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", choices=sorted(MIN_HEIGHT), default="world3d")
    parser.add_argument("--out", default="docs/img")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    engine = get_engine(args.engine)
    for family in engine.families:
        family_strip(engine, args.engine, family, args.seed, out)
    nuisance_strip(engine, args.engine, args.seed, out)


if __name__ == "__main__":
    main()
