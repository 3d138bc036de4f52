"""Small real mp4 manifests for judge tests and benchmarks, one video per case of the scripted server
(:mod:`phyprobe.testing.judge_server`), and a physics-rubric judge config that points at such a server."""

from __future__ import annotations

from pathlib import Path

from phyprobe.data.manifest import write_jsonl
from phyprobe.io.video import write_video
from phyprobe.testing.videos import moving_square

CASES = (
    "ok",
    "fenced",
    "think",
    "malformed",
    "missing",
    "out_of_range",
    "prose",
    "rate_limited",
    "server_error",
    "always_500",
    "bad_request",
    "timeout",
    "dropped",
)


def case_manifest(root: Path, cases=CASES, frames: int = 6, size: int = 32) -> Path:
    """One distinct clip per case, its prompt carrying the case's SCRIPT token."""
    root.mkdir(parents=True, exist_ok=True)
    rows = []
    for i, case in enumerate(cases):
        write_video(
            root / "v" / f"{i:04d}_{case}.mp4",
            moving_square(frames, size, size, 1 + i % 20, 1 + i % 3, colour=(40 + i % 200, 200, 90)),
            fps=6,
        )
        rows.append(
            {
                "id": f"{i:04d}_{case}",
                "path": f"v/{i:04d}_{case}.mp4",
                "source": "test",
                "is_real": False,
                "metadata": {"prompt": f"a square slides to the right SCRIPT:{case}"},
            }
        )
    write_jsonl(root / "videos.jsonl", rows)
    return root


def physics_cfg(base_url: str, cache_dir, samples: int = 1, **client) -> dict:
    """A physics-rubric judge run's config against ``base_url``, with short back-offs. The deadline per attempt
    (5 s) is far above a reply's time on a loaded machine, so the server's counts of attempts are exact; a test of
    timeouts sets ``timeout_s`` below its server's delay."""
    return {
        "judge": {"_target_": "phyprobe.judges.scivbench.RubricJudge", "rubric_set": "physics", "samples": samples},
        "client": {
            "base_url": base_url,
            "model": "test-vl",
            "timeout_s": 5.0,
            "max_retries": 3,
            "backoff_s": 0.02,
            "concurrency": 4,
            **client,
        },
        "video": {"max_frames": 3, "max_side": 32},
        "cache_dir": None if cache_dir is None else str(cache_dir),
    }
