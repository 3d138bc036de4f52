"""How a scorer reads a video: the one reading that every door (``phyprobe score``, :class:`Scorer`, ``phyprobe
serve``, ``eval.py``) applies, recorded in the exported scorer's ``config.json`` as ``reading``.

The head learned from clips of ``clip.num_frames`` frames. A video that long or shorter is one clip, read as a
training video was. A longer one is read ``windows`` (the default, for training clips of consecutive frames):
windows of ``num_frames`` consecutive frames, ``stride`` apart, the last ending on the last frame, their raw
scores combined by ``combine``; each window then spans what a training clip spanned, so a plausible long video
scores as its training-length segments do. ``whole`` spreads the clip's frames over the whole video instead, the
reading for a head trained on videos longer than its clip (a step then spans several frames). Training resolves
``auto`` to whichever of the two its own clips were read by (:func:`trained_reading`).
"""

from __future__ import annotations

from collections import deque
from dataclasses import asdict, dataclass
from typing import Iterable, Iterator

import numpy as np

READING_MODES = ("windows", "whole")
AUTO = "auto"  # a training option only: resolved to windows or whole from the training videos' lengths
COMBINE = {"mean": np.mean, "max": np.max}


MAX_WINDOWS = 64  # windows a long video is read in at most, spread over it: a 2-hour video costs 64 clips, not 11,000


@dataclass(frozen=True)
class Reading:
    mode: str = "windows"
    stride: int | None = None  # frames between window starts; None: half a window
    combine: str = "mean"
    max_windows: int | None = MAX_WINDOWS  # past this many, that many spread evenly over the video; None: every one

    def __post_init__(self):
        if self.mode not in READING_MODES:
            raise ValueError(f"reading.mode must be one of {READING_MODES}, got {self.mode!r}")
        if self.combine not in COMBINE:
            raise ValueError(f"reading.combine must be one of {sorted(COMBINE)}, got {self.combine!r}")
        for name in ("stride", "max_windows"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
                raise ValueError(f"reading.{name} must be a whole number >= 1 or null, got {v!r}")

    @classmethod
    def from_dict(cls, d: dict | None) -> "Reading":
        """A recorded reading; a scorer exported before readings were recorded read every video whole."""
        return cls(mode="whole") if d is None else cls(**d)

    def to_dict(self) -> dict:
        return asdict(self)

    def window_starts(self, num_frames: int, length: int) -> list[int] | None:
        """The first frame of each window of ``length`` over a video of ``num_frames``, or None when the video is
        one clip (read whole, or no longer than a window)."""
        if self.mode == "whole" or num_frames <= length:
            return None
        stride = self.stride or max(1, length // 2)
        starts = sorted({*range(0, num_frames - length + 1, stride), num_frames - length})
        if self.max_windows is not None and len(starts) > self.max_windows:  # spread evenly, first and last kept
            picks = np.linspace(0, len(starts) - 1, self.max_windows).round().astype(int)
            starts = [starts[i] for i in sorted(set(picks.tolist()))]
        return starts

    def reduce(self, raw) -> float:
        """The video's raw score from its windows' raw scores (one clip: its own)."""
        return float(COMBINE[self.combine](np.asarray(raw, dtype=np.float64)))

    def describe(self, length: int) -> str:
        if self.mode == "whole":
            return f"{length} frames spread over the whole video"
        cap = f" (at most {self.max_windows}, spread over a longer video)" if self.max_windows else ""
        return (
            f"windows of {length} consecutive frames, {self.stride or max(1, length // 2)} apart{cap}, "
            f"their {self.combine}, for a video longer than {length} frames"
        )


def window_frames(starts: list[int], length: int) -> list[int]:
    """The frame indices the windows starting at ``starts`` cover, sorted: what a windowed read decodes."""
    return sorted({i for s in starts for i in range(s, s + length)})


def windows(frames: Iterable[tuple[int, np.ndarray]], starts: list[int], length: int) -> Iterator[np.ndarray]:
    """Each window (``length``, H, W, 3) starting at ``starts`` (sorted) over (index, frame) pairs that arrive one
    at a time in order (every frame, or :func:`window_frames`' alone), as soon as its last frame has: only the last
    ``length`` frames are held, so a video of any length costs a window."""
    todo = iter(starts)
    s = next(todo, None)
    held: deque[np.ndarray] = deque(maxlen=length)
    for i, frame in frames:
        held.append(frame)
        while s is not None and i == s + length - 1:
            yield np.stack(held)
            s = next(todo, None)


def trained_reading(
    mode: str,
    stride: int | None,
    combine: str,
    clip_frames: int,
    uniform: bool,
    video_frames,
    max_windows: int | None = MAX_WINDOWS,
) -> Reading:
    """The reading a head was trained with: ``auto`` is ``windows`` when every training video is at most
    ``clip_frames`` long and read with uniform sampling (each training clip was consecutive frames), else
    ``whole`` (the clip's frames were spread over longer videos, or sampled at a fixed rate)."""
    if mode == AUTO:
        longest = max(video_frames, default=0)
        mode = "windows" if uniform and longest <= clip_frames else "whole"
    return Reading(mode, stride, combine, max_windows)
