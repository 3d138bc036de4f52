"""Raw scores far outside the range the scorer gave the videos it trained on.

A head's raw score is unbounded: a video unlike anything in training (an artefact, a blank, a codec the encoder
never saw) can score -2865 where the training videos scored between -1 and 9, and one such score moves a mean
more than every other video together. The exported scorer records its training range (``training.raw_score_range``
in its config.json); a raw score more than twice the range's width beyond either end is *far outside*, and is flagged
where scores are read: ``phyprobe score`` (per video) and the leaderboard (per video and entry, beside a robust
summary). Scorers exported before the range was recorded flag nothing.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

FAR = 2.0  # widths of the training range beyond either end


def of_config(config: dict) -> tuple[float, float] | None:
    r = (config.get("training") or {}).get("raw_score_range")
    if isinstance(r, list) and len(r) == 2 and all(isinstance(x, (int, float)) and math.isfinite(x) for x in r):
        return float(r[0]), float(r[1])
    return None


def of_scorer(scorer: str | Path) -> tuple[float, float] | None:
    """The training range of a local scorer directory (None for a Hub id or a scorer that records none)."""
    try:
        return of_config(json.loads((Path(scorer) / "config.json").read_text(encoding="utf-8")))
    except (OSError, ValueError, AttributeError):
        return None


def far_outside(raw: float, rng: tuple[float, float] | None) -> bool:
    if rng is None or not math.isfinite(raw):
        return rng is not None
    lo, hi = rng
    width = max(hi - lo, 1e-6)
    return raw < lo - FAR * width or raw > hi + FAR * width
