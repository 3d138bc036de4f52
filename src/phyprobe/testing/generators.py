""" "Generators" with known violation rates, made from a world build, for the leaderboard's tests, its benchmark and
its worked example: every scene of the world is a prompt, and each generator answers it with one of the scene's
clips, chosen by a rule whose truth is known.

- ``plausible``: the plausible clip of every scene;
- ``sometimes_broken``: on 30 % of the prompts the violated clip whose severity is nearest 0.5;
- ``often_broken``: on 60 % of the prompts the most severe violated clip;
- ``low_quality``: the quality-degraded plausible clip of every scene (blur, noise, compression, ...), so a
  ranking that puts it below ``plausible`` is a quality ranking, not a physics one.

Prompts carry Sci-VBench / SVBench-like group fields: ``discipline`` (the violation family the scene was built
with) and ``difficulty`` (easy: one body, medium: two, hard: more).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

from phyprobe.data.manifest import Manifest

RULES = {
    "plausible": (0.0, None),
    "sometimes_broken": (0.3, 0.5),
    "often_broken": (0.6, 1.0),
    "low_quality": (0.0, None),
}


def _difficulty(n_bodies: int) -> str:
    return "easy" if n_bodies <= 1 else "medium" if n_bodies == 2 else "hard"


def _scenes_of(world: str | Path, source: str, split: str | None):
    m = Manifest.load(world)
    keep = (m.videos["source"] == source) & ((m.videos["split"] == split) if split else True)
    return m, m.videos[keep]


def world_generators(
    world: str | Path, out: str | Path, source: str = "world", seed: int = 0, split: str | None = None
) -> dict:
    """Write ``out/<generator>/<scene>.mp4`` for the four generators above and ``out/prompts.jsonl``; returns
    ``{generator: {prompt: clip id}}``, the truth the leaderboard should recover. ``split``: the scenes of one
    split only (``test``: scenes no run trains on)."""
    m, v = _scenes_of(world, source, split)
    rng = np.random.default_rng(seed)
    scenes: dict[str, dict] = {}
    for vid, path, meta in zip(v["id"], v["path"], v["metadata"]):
        s = scenes.setdefault(meta["scene"], {"violated": [], "quality": None, "plausible": None, "meta": meta})
        if meta["variant"] == "plausible":
            s["plausible"] = (vid, path)
        elif meta["variant"] == "violated":
            s["violated"].append((meta["severity"], vid, path, meta["family"]))
        elif meta["variant"] == "quality" and s["quality"] is None:
            s["quality"] = (vid, path)
    scenes = {k: s for k, s in sorted(scenes.items()) if s["plausible"] and s["violated"] and s["quality"]}
    out = Path(out)
    truth: dict[str, dict[str, str]] = {g: {} for g in RULES}
    prompts = []
    for scene, s in scenes.items():
        prompts.append(
            {
                "prompt_id": scene,
                "discipline": s["violated"][0][3],
                "difficulty": _difficulty(int(s["meta"].get("num_bodies", 1))),
            }
        )
    for g, (rate, severity) in RULES.items():
        broken = set(rng.permutation(len(scenes))[: round(rate * len(scenes))].tolist())
        for i, (scene, s) in enumerate(scenes.items()):
            if g == "low_quality":
                vid, path = s["quality"]
            elif i in broken:
                _, vid, path, _ = min(s["violated"], key=lambda x: abs(x[0] - severity))
            else:
                vid, path = s["plausible"]
            dst = out / g / f"{scene}.mp4"
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(m.video_path(path), dst)
            truth[g][scene] = vid
    (out / "prompts.jsonl").write_text("".join(json.dumps(p) + "\n" for p in prompts), encoding="utf-8")
    return truth


def severe_twins(
    world: str | Path,
    out: str | Path,
    generator: str = "plausible",
    source: str = "world",
    min_severity: float = 0.8,
    split: str | None = None,
) -> dict[str, str]:
    """Write ``out/<generator>/<scene>.mp4``: for every scene with a plausible clip, its most severe violated twin
    (severity >= ``min_severity``), so a new version of ``generator`` whose every clip breaks physics badly; returns
    ``{scene: clip id}``. A regression gate must fail on it (docs/leaderboard.md, "A regression the gate must catch").
    ``split`` as :func:`world_generators`'."""
    m, v = _scenes_of(world, source, split)
    plausible = {meta["scene"] for meta in v["metadata"] if meta["variant"] == "plausible"}
    worst: dict[str, tuple[float, str, str]] = {}
    for vid, path, meta in zip(v["id"], v["path"], v["metadata"]):
        scene, sev = meta["scene"], float(meta.get("severity", 0.0))
        if meta["variant"] == "violated" and scene in plausible and sev >= min_severity:
            if scene not in worst or sev > worst[scene][0]:
                worst[scene] = (sev, vid, path)
    for scene, (_, _, path) in sorted(worst.items()):
        dst = Path(out) / generator / f"{scene}.mp4"
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(m.video_path(path), dst)
    return {scene: vid for scene, (_, vid, _) in sorted(worst.items())}


if __name__ == "__main__":  # python -m phyprobe.testing.generators WORLD OUT: the docs' worked example
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("world", type=Path, help="a world build (its manifest directory)")
    ap.add_argument("out", type=Path, help="where the generator folders and prompts.jsonl go")
    ap.add_argument("--source", default="world", help="the build's source of scenes (world: the 2D world)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--split", help="the scenes of one split only (test: scenes no run trains on)")
    ap.add_argument("--severe-twins", metavar="GENERATOR", help="write only GENERATOR, every scene's severe twin")
    a = ap.parse_args()
    if a.severe_twins:
        twins = severe_twins(a.world, a.out, a.severe_twins, a.source, split=a.split)
        print(f"{a.out}: {a.severe_twins} x {len(twins)} prompts, each its scene's most severe violated twin")
    else:
        made = world_generators(a.world, a.out, a.source, a.seed, a.split)
        print(f"{a.out}: {len(made)} generators x {len(next(iter(made.values())))} prompts")
