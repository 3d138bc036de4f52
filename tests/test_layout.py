"""How the repository's Python files import each other: nothing imports a script by its file path or edits
``sys.path`` (tests and benchmarks import a package: phyprobe, with its helpers in phyprobe.testing), and the
library never imports phyprobe.testing."""

from __future__ import annotations

import ast
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src" / "phyprobe"
# Spelled in pieces, so that this file does not hold what it looks for.
PATH_EDITS = ("sys.path." + "insert", "sys.path." + "append", "spec_from_" + "file_location")


def python_files() -> list[Path]:
    """Every tracked .py file, and every new one git does not ignore, that is in the working tree."""
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z", "--", "*.py"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    files = [REPO / p for p in sorted(set(listed.split("\0"))) if p and not p.startswith(".venv/")]
    return [f for f in files if f.is_file()]


def test_no_file_imports_a_script_by_path_or_edits_sys_path():
    files = python_files()
    assert any(f.name == "cli.py" for f in files), "the listing holds the package's files"
    found = [
        f"{f.relative_to(REPO)}:{n}: {line.strip()}"
        for f in files
        for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1)
        if any(edit in line for edit in PATH_EDITS)
    ]
    assert not found, "import a package module instead (helpers for tests and benchmarks: phyprobe.testing):\n" + (
        "\n".join(found)
    )


def _imported(path: Path) -> set[str]:
    """The absolute names of the modules ``path`` imports (relative imports resolved within src/)."""
    package = list(path.relative_to(SRC.parent).with_suffix("").parts)[:-1]  # a module's package, or __init__'s own
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            names.add(module)
            names.update(f"{module}.{a.name}" for a in node.names)
    return names


def test_the_library_never_imports_its_testing_helpers():
    library = [p for p in SRC.rglob("*.py") if "testing" not in p.relative_to(SRC).parts[:1]]
    assert any(p.name == "cli.py" for p in library)
    found = [
        str(p.relative_to(REPO))
        for p in library
        if any(m == "phyprobe.testing" or m.startswith("phyprobe.testing.") for m in _imported(p))
    ]
    assert not found, f"phyprobe.testing is for tests and benchmarks; the library imports it in {found}"


def test_relative_imports_are_resolved_to_the_modules_they_name():
    """The check above reads ``from ..testing import x`` in phyprobe/data/a.py as phyprobe.testing."""
    assert "phyprobe.errors.UserError" in _imported(SRC / "data" / "manifest.py")
    assert "phyprobe.errors" in _imported(SRC / "config_files.py")
