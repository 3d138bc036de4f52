"""How fast the 3D world engine makes a scene's clips on one core: seconds per scene and frames/s.

Per scene, what a build makes: the plausible clip, three violated twins (one family, severities in
three strata), the nuisance-only twins and one quality-degraded twin, each encoded with x264 as the
build does. Prints CPU seconds per scene split into physics+planning, drawing and encoding, frames
rasterised per second, and what 1,000 scenes would take on 2 cores (target: <= 10 minutes).

    PYTHONPATH=src python bench/bench_world3d_engine.py --num-scenes 20 --num-frames 32
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from phyprobe.io.video import write_video
from phyprobe.world.degrade import DEGRADATIONS, degrade
from phyprobe.world.seeds import scene_rng
from phyprobe.world.world3d import ENGINE
from phyprobe.world.world3d.render import Renderer

SEVERITY_STRATA = 3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-scenes", type=int, default=20)
    parser.add_argument("--num-frames", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--preset", default="veryfast")
    args = parser.parse_args()

    drawn = {"frames": 0, "seconds": 0.0}
    raster = Renderer._render

    def counted(self, t):  # time and count every rasterised frame (blends count twice)
        start = time.process_time()
        out = raster(self, t)
        drawn["seconds"] += time.process_time() - start
        drawn["frames"] += 1
        return out

    Renderer._render = counted
    families = sorted(ENGINE.families)
    out = Path(tempfile.mkdtemp(prefix="bench_world3d_"))
    encode, clip_frames, per_scene = 0.0, 0, []
    wall = time.perf_counter()
    try:
        for index in range(args.num_scenes):
            start = time.process_time()
            sc = ENGINE.scene(args.seed, index, args.num_frames, False)
            rng = scene_rng(args.seed, index, 2)
            clips = [sc.plausible()]
            plan = sc.plan(families[index % len(families)], rng)
            for k in range(SEVERITY_STRATA):
                clips.append(sc.violated(plan, (k + float(rng.uniform(0.15, 1.0))) / SEVERITY_STRATA)[0])
            for k in range(ENGINE.num_nuisance):
                clips.append(sc.nuisance(k, scene_rng(args.seed, index, 30 + k))[0])
            clips.append(degrade(clips[0], DEGRADATIONS[index % len(DEGRADATIONS)], 0.6, np.random.default_rng(index)))
            sc.close()
            enc = time.process_time()
            for k, frames in enumerate(clips):
                write_video(out / f"{index}_{k}.mp4", frames, sc.fps, preset=args.preset)
            encode += time.process_time() - enc
            clip_frames += sum(len(c) for c in clips)
            per_scene.append(time.process_time() - start)
            meta = sc.metadata()
            print(f"scene {index:3d} {meta['width']:3d}x{meta['height']:3d} {plan.family:16s} {per_scene[-1]:.2f} s")
    finally:
        shutil.rmtree(out, ignore_errors=True)
        Renderer._render = raster
    wall = time.perf_counter() - wall
    total = float(np.sum(per_scene))
    n = args.num_scenes
    print(f"\n{n} scenes x {2 + SEVERITY_STRATA + ENGINE.num_nuisance} clips x {args.num_frames} frames, one core")
    print(
        f"CPU per scene: {total / n:.3f} s (median {np.median(per_scene):.3f}, max {np.max(per_scene):.3f}); wall {wall / n:.3f} s"
    )
    print(
        f"  drawing {drawn['seconds'] / n:.3f} s ({drawn['frames'] / n:.0f} frames rasterised, {drawn['frames'] / max(drawn['seconds'], 1e-9):.0f} frames/s)"
    )
    print(f"  x264    {encode / n:.3f} s")
    print(f"  physics, planning, compositing: {(total - drawn['seconds'] - encode) / n:.3f} s")
    print(f"clip frames delivered per CPU second: {clip_frames / total:.0f}")
    print(
        f"projected 1,000 scenes on 2 cores: {1000 * total / n / 2 / 60:.1f} min (target <= 10 min; the build's manifest and pairs are extra)"
    )


if __name__ == "__main__":
    main()
