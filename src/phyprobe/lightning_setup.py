"""Lightning, imported once with two of its messages that say nothing about a run filtered at their source.

Every Trainer prints an advertisement for a cloud logger ("Tip: ... litlogger"), and Lightning's own code calls a
deprecated PyTorch API (``LeafSpec``) that warns on every run. Neither is about the user's run; both drowned what is
(``make demo`` printed the tip three times). Only these two messages are filtered: every other Lightning message
and warning stays.
"""

from __future__ import annotations

import logging
import warnings

import lightning as L

ADVERT = "Tip: For seamless cloud logging"


class _DropAdvert(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return ADVERT not in record.getMessage()


for _name in ("lightning.pytorch.utilities.rank_zero", "lightning.fabric.utilities.rank_zero"):
    _logger = logging.getLogger(_name)
    if not any(isinstance(f, _DropAdvert) for f in _logger.filters):
        _logger.addFilter(_DropAdvert())
warnings.filterwarnings("ignore", message=r".*isinstance\(treespec, LeafSpec\)` is deprecated", category=Warning)

__all__ = ["L"]
