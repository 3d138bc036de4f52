"""The exported scorer, the one object users hold: load/export (:mod:`.core`), the reading of a video
(:mod:`.reading`), frames in memory (:mod:`.frames`), resumable batch scoring (:mod:`.batch`), the Hugging Face Hub
(:mod:`.hub`) and the ``phyprobe score`` command (:mod:`.cli`). Names load lazily, so the command's parser does not
import torch."""

__all__ = ["FORMAT", "NonFiniteScoreError", "Scorer", "ScorerLoadError", "add_cli", "export_scorer"]


def __getattr__(name):
    if name == "add_cli":
        from .cli import add_cli

        return add_cli
    if name in __all__:
        from . import core

        return getattr(core, name)
    raise AttributeError(name)
