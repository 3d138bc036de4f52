"""Where the project's YAML configs are, whatever the working directory: the ``configs/`` folder beside the package
source (a source checkout, installed editable as ``make install`` does), so a config named on the command line
(``phyprobe judge run physics``) is found from any directory. A user's own YAML path is always taken as given."""

from __future__ import annotations

import hashlib
from pathlib import Path

from .errors import UserError

MAX_DIRNAME = 200  # bytes of a sweep job's folder name: file systems allow 255, and tools append suffixes
SOURCE_ROOT = Path(__file__).resolve().parents[2]  # the source checkout: configs/, train.py and eval.py are here


def config_dir() -> Path:
    root = SOURCE_ROOT / "configs"
    if not root.is_dir():
        raise UserError(
            f"{root}: the project's configs are not there; install phyprobe from its source tree "
            "(pip install -e .) or pass the YAML file's path"
        )
    return root


def readable_dirname(task_overrides) -> str:
    """A sweep job's folder name from its command-line overrides, like Hydra's ``override_dirname``, but leaving out
    values that are paths (``paths.data_dir=/data/x``, a checkpoint): they are recorded in the job's
    ``.hydra/overrides.yaml``, and as folder names they nest the sweep into ``key=/a/b/...`` trees. A sweep over
    paths alone names its jobs by ``hydra.sweep.subdir`` instead. A name past :data:`MAX_DIRNAME` bytes keeps its
    shortest overrides and ends in how many were left out and a hash of the whole, so it stays a valid, distinct
    file name."""
    kept = sorted(
        o for o in task_overrides if "/" not in o.split("=", 1)[-1] and not o.lstrip("+~").startswith("hydra.")
    )
    name = ",".join(kept) or "default"
    if len(name.encode()) <= MAX_DIRNAME:
        return name
    # Too long for a file name (255 bytes): the shortest overrides, which are most often what a sweep varies
    # (experiment=no_cal, seed=1), as many as fit, then how many were left out and a hash of the whole name.
    tail = f",+{{}}-{hashlib.sha1(name.encode()).hexdigest()[:8]}"
    shown, size = [], 0
    for o in sorted(kept, key=lambda o: (len(o.encode()), o)):
        if size + len(o.encode()) + 1 + len(tail) + 4 > MAX_DIRNAME:
            break
        shown.append(o)
        size += len(o.encode()) + 1
    return ",".join(sorted(shown)) + tail.format(len(kept) - len(shown))


def register_resolvers() -> None:
    """``${phyprobe_dirname:${hydra.overrides.task}}`` for ``hydra.sweep.subdir`` in configs/train.yaml; train.py
    calls this before Hydra composes."""
    from omegaconf import OmegaConf

    OmegaConf.register_new_resolver("phyprobe_dirname", readable_dirname, replace=True)


def add_set_option(parser, help: str) -> None:
    """``--set KEY=VALUE``, one grammar in every command: repeatable, and several pairs after one ``--set``."""
    parser.add_argument(
        "--set",
        action="extend",
        nargs="+",
        default=[],
        metavar="KEY=VALUE",
        help=f"{help} (several after one --set, or --set repeated)",
    )


def split_sets(sets: list[str]) -> list[tuple[str, str]]:
    """``--set`` items as (key, value), a malformed one refused in one line."""
    out = []
    for item in sets:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise UserError(f"--set {item}: expected KEY=VALUE")
        out.append((key.strip(), value))
    return out


def merge_sets(cfg, sets: list[str], where: str):
    """``cfg`` (an OmegaConf config) with the ``--set`` overrides merged in; a bad one ends in one line."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    split_sets(sets)
    try:
        return OmegaConf.merge(cfg, OmegaConf.from_dotlist(sets))
    except OmegaConfBaseException as e:
        raise UserError(f"{where}: --set {' '.join(sets)}: {' '.join(str(e).split())}") from None
