"""constraints.txt pins what a fresh install gets, so a documented figure can be reproduced from a clean
clone after PyPI has moved on. These tests fail when a dependency is added without a pin, when a pin falls
outside the range pyproject.toml allows, or when the environment was installed around the lock."""

from importlib import metadata
from pathlib import Path

import pytest
import tomllib
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
EXTRAS = ("test", "hf", "clip")  # what `make install` installs
PINNED_ELSEWHERE = {
    "torch",
    "torchvision",
}  # pinned by the Makefile, which installs them first (pyproject.toml gives a range)


def lock() -> dict[str, str]:
    pins = {}
    for number, line in enumerate((ROOT / "constraints.txt").read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, version = line.partition("==")
        assert sep and version, f"constraints.txt:{number}: {line!r} is not an exact pin (name==version)"
        pins[canonicalize_name(name)] = version
    return pins


def direct_requirements() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    specs = project["dependencies"] + [r for extra in EXTRAS for r in project["optional-dependencies"][extra]]
    return [Requirement(s) for s in specs]


def test_every_direct_dependency_is_pinned_inside_its_range():
    pins = lock()
    for req in direct_requirements():
        name = canonicalize_name(req.name)
        if name in PINNED_ELSEWHERE:
            assert name not in pins, f"{name} is pinned in pyproject.toml; constraints.txt must not pin it again"
            continue
        assert name in pins, f"{req.name} (pyproject.toml) has no pin in constraints.txt: run `make lock`"
        assert req.specifier.contains(pins[name], prereleases=True), (
            f"constraints.txt pins {req.name}=={pins[name]}, outside pyproject.toml's {req}"
        )


def test_the_environment_is_the_locked_one():
    """`make install` applies the lock; an environment installed around it would measure other figures."""
    wrong = {}
    for name, version in lock().items():
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            wrong[name] = (version, None)
            continue
        if installed != version:
            wrong[name] = (version, installed)
    if wrong:
        pytest.fail(
            "installed versions differ from constraints.txt (locked, installed), reinstall with `make "
            f"install`: {wrong}"
        )
