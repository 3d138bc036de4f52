"""The exported scorer, the one object users hold: load/export (:mod:`.core`), frames in memory
(:mod:`.frames`), resumable batch scoring (:mod:`.batch`), the Hugging Face Hub (:mod:`.hub`) and
the ``phyprobe score`` command (:mod:`.cli`)."""

from .cli import add_cli
from .core import FORMAT, NonFiniteScoreError, Scorer, ScorerLoadError, export_scorer

__all__ = ["FORMAT", "NonFiniteScoreError", "Scorer", "ScorerLoadError", "add_cli", "export_scorer"]
