"""A run as stages a cluster can schedule apart: extract -> fit -> train -> export -> evaluate.

``stages`` (configs/train.yaml) names the ones a job runs; each writes into the run's folder and is recorded in
``<run>/stages.json`` with a fingerprint of what it depends on: the config groups that change its output, the
fingerprint of the stage it reads, and the code. A stage asked for again with the same fingerprint, its output
still there, is skipped; a stage that runs invalidates the record of every stage after it, so nothing downstream
is kept from an older upstream. The extract stage's output is the feature cache, keyed by its own content: it is
never recorded, and a run that skips it finds the cache full or says which stage to run.
"""

from __future__ import annotations

import hashlib
import json
import logging
import subprocess
from functools import cache
from pathlib import Path

from omegaconf import DictConfig, ListConfig, OmegaConf

from ..config_files import SOURCE_ROOT
from ..errors import InvalidOption
from ..runinfo import atomic_write_json, code_version

log = logging.getLogger(__name__)

STAGES = ("extract", "fit", "train", "export", "evaluate")
RECORD = "stages.json"
# what each recorded stage reads: the config groups that change its output, and the stage it reads from
INPUTS = {
    "fit": (("seed", "clip", "data", "backbone", "feature_dtype"), None),
    "train": (
        (
            "seed",
            "clip",
            "data",
            "backbone",
            "feature_dtype",
            "pooling",
            "head",
            "loss",
            "optim",
            "trainer",
            "checkpoint",
            "reading",
        ),
        "fit",
    ),  # fmt: skip
    "export": ((), "train"),
    "evaluate": (("eval",), "train"),
}


def selected(cfg: DictConfig) -> list[str]:
    """The stages this job runs, in the pipeline's order, whatever order ``stages`` lists them in."""
    asked = cfg.get("stages", list(STAGES))
    if not isinstance(asked, (list, ListConfig)) or not asked:
        raise InvalidOption(f"stages must be a non-empty list of {list(STAGES)}, got {asked!r}")
    unknown = [s for s in asked if s not in STAGES]
    if unknown:
        raise InvalidOption(f"stages: unknown stage(s) {unknown}; the stages are {list(STAGES)}")
    return [s for s in STAGES if s in asked]


@cache
def code_fingerprint() -> str:
    """The code a stage ran: its commit, and the uncommitted changes to tracked files when there are any (so a
    rerun after an edit is not skipped); the package version outside a git checkout."""
    info = code_version()
    diff = ""
    if info.get("git_dirty"):
        try:
            done = subprocess.run(["git", "diff", "HEAD"], cwd=SOURCE_ROOT, capture_output=True, timeout=30)
            diff = hashlib.sha256(done.stdout).hexdigest()
        except (OSError, subprocess.SubprocessError):
            diff = "unknown"
    return json.dumps({**info, "diff": diff}, sort_keys=True)


class StageRecord:
    """``<run>/stages.json``: each finished stage's fingerprint and outputs."""

    def __init__(self, out: Path, cfg: DictConfig):
        self.path = out / RECORD
        self.out = out
        self.cfg = OmegaConf.to_container(cfg, resolve=True)
        try:
            self.done = json.loads(self.path.read_text()) if self.path.is_file() else {}
        except (OSError, json.JSONDecodeError):
            self.done = {}  # ours to rewrite: every stage is redone
        if not isinstance(self.done, dict):
            self.done = {}

    def fingerprint(self, stage: str) -> str:
        groups, upstream = INPUTS[stage]
        inputs = {g: self.cfg.get(g) for g in groups}
        inputs["upstream"] = self.fingerprint(upstream) if upstream else None
        inputs["code"] = code_fingerprint()
        return hashlib.sha256(json.dumps(inputs, sort_keys=True, default=str).encode()).hexdigest()[:16]

    def is_done(self, stage: str) -> bool:
        """Finished before with the same fingerprint, and every file it wrote still there."""
        entry = self.done.get(stage)
        return (
            isinstance(entry, dict)
            and entry.get("fingerprint") == self.fingerprint(stage)
            and all((self.out / f).exists() for f in entry.get("outputs", []))
        )

    def start(self, stage: str) -> None:
        """Forget ``stage`` and every stage after it before ``stage`` runs: a kill midway leaves it undone."""
        later = STAGES[STAGES.index(stage) :]
        self.done = {k: v for k, v in self.done.items() if k not in later}
        atomic_write_json(self.path, self.done)

    def finish(self, stage: str, outputs: list[str]) -> None:
        self.done[stage] = {"fingerprint": self.fingerprint(stage), "outputs": outputs}
        atomic_write_json(self.path, self.done)
