"""Video decoding into fixed-length clips, and mp4 writing, with PyAV.

Clips are sampled by presentation timestamp, so variable-frame-rate files are handled the same way
as constant-rate ones. Only the frames that will be used are converted to arrays: the demux pass that
finds the timestamps does not decode, so a long 4K file costs little more than its T frames.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path

import av
import numpy as np


class VideoDecodeError(RuntimeError):
    """A video could not be read; the message names the file and the reason."""

    def __init__(self, path: str | os.PathLike, reason: str):
        self.path = str(path)
        self.reason = reason
        super().__init__(f"{path}: {reason}")


@dataclass(frozen=True)
class ClipSpec:
    """How a video becomes T frames.

    ``mode="uniform"`` spreads T frames evenly over the whole video (every video yields exactly T
    frames whatever its length; a short one repeats frames). ``mode="fps"`` samples at ``fps``
    frames per second from the start, holding the last frame when the video ends first, so that
    motion speed means the same thing across videos of different frame rates.
    """

    num_frames: int = 16
    mode: str = "uniform"
    fps: float | None = None

    def __post_init__(self):
        if self.num_frames < 1:
            raise ValueError(f"ClipSpec.num_frames must be >= 1, got {self.num_frames}")
        if self.mode not in ("uniform", "fps"):
            raise ValueError(f"ClipSpec.mode must be 'uniform' or 'fps', got {self.mode!r}")
        if self.mode == "fps" and not (self.fps and self.fps > 0):
            raise ValueError("ClipSpec.mode='fps' needs a positive fps")

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Clip:
    frames: np.ndarray  # (T, H, W, 3) uint8 RGB
    timestamps: np.ndarray  # (T,) float seconds of each chosen frame
    source_num_frames: int
    source_fps: float


def _frame_times(path: Path) -> tuple[np.ndarray, float]:
    """Presentation times (seconds, sorted) of every video frame, from the packets alone."""
    with av.open(str(path)) as container:
        if not container.streams.video:
            raise VideoDecodeError(path, "no video stream")
        stream = container.streams.video[0]
        tb = float(stream.time_base) if stream.time_base else None
        rate = float(stream.average_rate or stream.base_rate or 0) or 25.0
        pts = [p.pts for p in container.demux(stream) if p.pts is not None and p.size > 0]
    if not pts:
        raise VideoDecodeError(path, "video stream has no frames")
    pts = np.sort(np.asarray(pts, dtype=np.float64))
    times = pts * tb if tb else np.arange(len(pts)) / rate
    return times - times[0], rate


def sample_indices(times: np.ndarray, spec: ClipSpec) -> np.ndarray:
    """Indices into ``times`` (sorted frame times starting at 0) of the T frames to use."""
    n = len(times)
    if spec.mode == "uniform":
        return np.round(np.linspace(0, n - 1, spec.num_frames)).astype(np.int64)
    targets = np.arange(spec.num_frames) / spec.fps
    idx = np.searchsorted(times, targets, side="right") - 1
    return np.clip(idx, 0, n - 1).astype(np.int64)


def decode_clip(path: str | os.PathLike, spec: ClipSpec) -> Clip:
    """Read the T frames of ``spec`` from ``path`` as RGB uint8. Raises VideoDecodeError."""
    path = Path(path)
    if not path.is_file():
        raise VideoDecodeError(path, "file does not exist")
    try:
        times, rate = _frame_times(path)
        idx = sample_indices(times, spec)
        wanted = set(idx.tolist())
        last = int(idx.max())
        got: dict[int, np.ndarray] = {}
        with av.open(str(path)) as container:
            stream = container.streams.video[0]
            stream.thread_type = "AUTO"
            for i, frame in enumerate(container.decode(stream)):
                if i in wanted:
                    got[i] = frame.to_ndarray(format="rgb24")
                if i >= last:
                    break
    except VideoDecodeError:
        raise
    except (av.error.FFmpegError, OSError, ValueError, IndexError) as e:
        raise VideoDecodeError(path, f"cannot decode video ({type(e).__name__}: {e})") from e
    if not got:
        raise VideoDecodeError(path, "no frame could be decoded")
    # The demuxer can count a few more packets than the decoder returns frames (broken tails):
    # fall back to the nearest decoded frame before the wanted one rather than failing.
    have = np.array(sorted(got))
    pick = [int(have[max(0, np.searchsorted(have, i, side="right") - 1)]) for i in idx]
    frames = np.stack([got[i] for i in pick])
    return Clip(frames=frames, timestamps=times[pick], source_num_frames=len(times), source_fps=rate)


def probe(path: str | os.PathLike) -> dict:
    """Basic facts about a video file (size, frame count, fps), for reports and checks."""
    path = Path(path)
    times, rate = _frame_times(path)
    with av.open(str(path)) as c:
        s = c.streams.video[0]
        w, h = s.codec_context.width, s.codec_context.height
    return {"width": w, "height": h, "num_frames": len(times), "fps": rate, "duration": float(times[-1] + 1 / rate)}


def write_video(path: str | os.PathLike, frames: np.ndarray, fps: float = 25.0, crf: int = 18, preset: str = "veryfast") -> Path:
    """Write RGB uint8 frames (T, H, W, 3) to an H.264 mp4, atomically and deterministically.

    Odd sizes are padded by one edge pixel (yuv420p needs even sizes). x264 runs single-threaded
    so the same frames always give the same bytes. ``preset`` is x264's speed/size trade-off.
    """
    path = Path(path)
    frames = np.asarray(frames)
    if frames.ndim != 4 or frames.shape[-1] != 3 or frames.dtype != np.uint8:
        raise ValueError(f"write_video({path}): frames must be uint8 (T, H, W, 3), got {frames.dtype} {frames.shape}")
    t, h, w, _ = frames.shape
    if h % 2 or w % 2:
        frames = np.pad(frames, ((0, 0), (0, h % 2), (0, w % 2), (0, 0)), mode="edge")
        h, w = frames.shape[1:3]
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp.mp4")
    from fractions import Fraction

    with av.open(str(tmp), mode="w", format="mp4") as out:
        stream = out.add_stream("libx264", rate=Fraction(fps).limit_denominator(1001))
        stream.width, stream.height, stream.pix_fmt = w, h, "yuv420p"
        # mbtree off: with it, x264 gave run-to-run different bytes on small frames in worker processes
        stream.options = {"crf": str(crf), "preset": preset, "threads": "1", "x264-params": "mbtree=0"}
        stream.codec_context.thread_count = 1
        for f in frames:
            for packet in stream.encode(av.VideoFrame.from_ndarray(f, format="rgb24")):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    os.replace(tmp, path)
    return path
