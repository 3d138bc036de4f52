"""Where the project's YAML configs are, whatever the working directory: the ``configs/`` folder beside the package
source (a source checkout, installed editable as ``make install`` does), so a config named on the command line
(``phyprobe judge run physics``) is found from any directory. A user's own YAML path is always taken as given."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from hydra.experimental.callback import Callback

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


def _folder_part(override: str) -> str:
    """``key=value`` as ``key-value``, with what a Hydra override cannot hold unquoted (``=``, ``,``, brackets,
    quotes, spaces) made ``_`` or dropped: ``experiment=[toy,no_cal]`` -> ``experiment-toy_no_cal``."""
    key, _, value = override.partition("=")
    value = re.sub(r"[\[\]{}()'\" ]", "", value)
    return f"{key.lstrip('+~')}-{re.sub(r'[^A-Za-z0-9_.@%-]', '_', value)}"


def readable_dirname(task_overrides) -> str:
    """A sweep job's folder name from its command-line overrides, like Hydra's ``override_dirname``, but a path the
    project's commands take back as it is (``eval.py scorer=<sweep>/experiment-no_cal+seed-0/scorer``): each override
    ``key=value`` becomes ``key-value``, joined by ``+``, with the characters a Hydra override cannot hold unquoted
    replaced (and a hash of the overrides appended, so that names stay distinct). Values that are paths
    (``paths.data_dir=/data/x``, a checkpoint) are left out: they are recorded in the job's ``.hydra/overrides.yaml``
    and in the sweep's :data:`SWEEP_INDEX`, and as folder names they would nest the sweep into trees. A sweep over
    paths alone names its jobs by ``hydra.sweep.subdir`` instead. A name past :data:`MAX_DIRNAME` bytes keeps its
    shortest overrides and ends in how many were left out and a hash of the whole."""
    kept = sorted(
        o for o in task_overrides if "/" not in o.split("=", 1)[-1] and not o.lstrip("+~").startswith("hydra.")
    )
    whole = ",".join(kept)
    digest = hashlib.sha1(whole.encode()).hexdigest()[:8]
    parts = {o: _folder_part(o) for o in kept}
    changed = any(part != o.lstrip("+~").replace("=", "-", 1) for o, part in parts.items())
    name = "+".join(parts.values()) + (f"-{digest}" if changed else "") if kept else "default"
    if len(name.encode()) <= MAX_DIRNAME:
        return name
    # Too long for a file name (255 bytes): the shortest overrides, which are most often what a sweep varies
    # (experiment=no_cal, seed=1), as many as fit, then how many were left out and a hash of the whole.
    shown, size = [], 0
    for o in sorted(kept, key=lambda o: (len(parts[o].encode()), o)):
        if size + len(parts[o].encode()) + 1 + 24 > MAX_DIRNAME:
            break
        shown.append(o)
        size += len(parts[o].encode()) + 1
    return "+".join(parts[o] for o in sorted(shown)) + f"+{len(kept) - len(shown)}more-{digest}"


SWEEP_INDEX = "index.jsonl"  # in a sweep's folder: one line per job, its folder and its overrides


class SweepIndex(Callback):
    """Hydra callback (``hydra.callbacks`` in configs/train.yaml): each job of a sweep appends its folder's name and
    its command-line overrides, paths included, to ``<sweep dir>/index.jsonl``, so a folder whose name was shortened
    or had characters replaced still says which run it holds. One short line per job, appended: jobs running at
    once (a launcher's processes) do not overwrite each other."""

    def on_job_start(self, config, **kwargs) -> None:
        from hydra.core.hydra_config import HydraConfig
        from hydra.types import RunMode

        hc = HydraConfig.get()
        if hc.mode != RunMode.MULTIRUN:
            return
        line = json.dumps({"folder": hc.sweep.subdir, "overrides": list(hc.overrides.task)})
        sweep = Path(hc.sweep.dir)
        sweep.mkdir(parents=True, exist_ok=True)
        with open(sweep / SWEEP_INDEX, "a") as f:
            f.write(line + "\n")


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
