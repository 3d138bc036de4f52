"""`pip install -e .` into an environment that already holds another torch 2.x keeps it: the package asks for a
range of torch, and exact versions live in constraints.txt and the Makefile only."""

import json
import os
import subprocess
import sys
from pathlib import Path

from phyprobe.config_files import SOURCE_ROOT


def _installed(site: Path, name: str, version: str, requires: tuple[str, ...] = ()) -> None:
    """The metadata pip reads to know ``name==version`` is installed (no code: pip only resolves here)."""
    info = site / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    meta = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}", *(f"Requires-Dist: {r}" for r in requires)]
    (info / "METADATA").write_text("\n".join(meta) + "\n")
    (info / "RECORD").write_text(f"{info.name}/METADATA,,\n")


def test_an_installed_torch_2x_is_kept(tmp_path):
    site = tmp_path / "site"  # ahead of the venv's own site-packages: pip sees torch 2.5.0 and its torchvision
    _installed(site, "torch", "2.5.0")
    _installed(site, "torchvision", "0.20.0", ("torch==2.5.0",))
    report = tmp_path / "report.json"
    # --no-index: nothing can be downloaded, so any other torch (or torchvision) pip wanted would fail the resolve
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--no-index", "--no-build-isolation", "-q"]
        + ["--report", str(report), "-e", str(SOURCE_ROOT)],
        env={**os.environ, "PYTHONPATH": str(site), "PIP_CONSTRAINT": ""},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    install = {i["metadata"]["name"]: i["metadata"]["version"] for i in json.loads(report.read_text())["install"]}
    assert install == {"phyprobe": install["phyprobe"]}  # torch and torchvision stay as they were
