"""What makes a run reproducible: the code version, the seed and the resolved config, saved with it."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

from . import __version__


def code_version() -> dict:
    """Package version plus the git commit (and whether the tree had uncommitted changes)."""
    root = Path(__file__).resolve().parents[2]
    info = {"package": __version__, "git_commit": None, "git_dirty": None}
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10)
        if commit.returncode == 0:
            info["git_commit"] = commit.stdout.strip()
            dirty = subprocess.run(
                ["git", "status", "--porcelain", "--untracked-files=no"],
                cwd=root,
                capture_output=True,
                text=True,
                timeout=10,
            )
            info["git_dirty"] = bool(dirty.stdout.strip())
    except (OSError, subprocess.SubprocessError):
        pass
    return info


# The libraries a figure depends on beyond torch: decoding (av), flow (opencv), the worlds' simulators and the
# numerics. `make install` takes them from constraints.txt; an environment installed another way may differ.
FIGURE_PACKAGES = (
    "numpy",
    "scipy",
    "opencv-python-headless",
    "av",
    "pybullet",
    "scikit-video",
    "scikit-learn",
    "timm",
    "torchvision",
    "lightning",
    "pandas",
    "pillow",
)


def package_versions(names: tuple[str, ...] = FIGURE_PACKAGES) -> dict[str, str | None]:
    """Each installed distribution's version, None where it is not installed."""
    versions = {}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def cpu_info() -> dict:
    """The vector instruction set torch's CPU kernels use, and the CPU's model. Float kernels round in the last
    bit differently from one instruction set to another (AVX2 against torch's default kernels, measured); a
    resized frame that moves by one ulp can round to another grey level, and optical flow carries that into the
    features (docs/results.md, "The same commit on another CPU")."""
    import torch

    model = None
    try:
        model = next(
            (
                line.split(":", 1)[1].strip()
                for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")
            ),
            None,
        )
    except OSError:
        pass
    return {
        "capability": torch.backends.cpu.get_cpu_capability(),
        "model": model or platform.processor() or None,
        "threads": torch.get_num_threads(),
    }


def atomic_write_json(path: str | os.PathLike, obj) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(obj, indent=2, sort_keys=False, default=str) + "\n")
    os.replace(tmp, path)
    return path


def save_run_info(out_dir: str | os.PathLike, config: dict, seed: int, **extra) -> Path:
    import torch

    return atomic_write_json(
        Path(out_dir) / "run_info.json",
        {
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "seed": seed,
            "code": code_version(),
            "argv": sys.argv,
            "python": platform.python_version(),
            "torch": torch.__version__,
            "packages": package_versions(),
            "platform": platform.platform(),
            "cpu": cpu_info(),
            "config": config,
            **extra,
        },
    )
