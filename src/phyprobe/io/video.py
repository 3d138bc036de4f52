"""Video decoding into fixed-length clips, and mp4 writing, with PyAV.

Clips are sampled by presentation timestamp, so variable-frame-rate files are handled the same way
as constant-rate ones. Only the frames that will be used are converted to arrays: the demux pass that
finds the timestamps does not decode, so a long 4K file costs little more than its T frames.
"""

from __future__ import annotations

import errno
import logging
import os
import stat
from dataclasses import asdict, dataclass
from pathlib import Path

import av
import numpy as np

from ..errors import UserError


class VideoDecodeError(UserError, RuntimeError):
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
    frames: np.ndarray  # (T, H, W, 3) uint8 RGB, upright
    timestamps: np.ndarray  # (T,) float seconds of each chosen frame
    source_num_frames: int
    source_fps: float
    decoded_share: float = 1.0  # share of the video's frames that decode (see MIN_DECODED_SHARE)


# The damaged-file rule, the same wherever a video is read (score, extract, baselines): a file whose
# frames decode to at least this share of what its header promises is used, with a warning that
# gives the share (the clip is sampled from the frames that decode); below it, the file is rejected.
MIN_DECODED_SHARE = 0.9
# Decoder threads hold a frame each: cap what they hold together, so a 8K file does not cost
# threads x 50 MB of YUV before a single frame is converted.
DECODER_FRAME_BUDGET = 256 * 2**20
# Formats FFmpeg opens but that are still images, not videos (a PNG renamed .mp4).
_IMAGE_FORMATS = ("image2",)

log = logging.getLogger(__name__)


def check_readable_file(path: Path) -> None:
    """Raise VideoDecodeError saying exactly why ``path`` is not a regular, readable, non-empty file."""
    try:
        st = path.stat()
    except FileNotFoundError:
        if path.is_symlink():
            raise VideoDecodeError(
                path, f"broken symbolic link (points to {os.readlink(path)!r}, which does not exist)"
            ) from None
        raise VideoDecodeError(path, "file does not exist") from None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise VideoDecodeError(path, "symbolic link loop (the link points back to itself)") from None
        if e.errno == errno.EACCES:
            raise VideoDecodeError(path, "permission denied (a folder on the path cannot be entered)") from None
        raise VideoDecodeError(path, f"cannot stat file ({e.strerror})") from None
    kinds = {
        stat.S_ISDIR: "is a directory, not a video file",
        stat.S_ISFIFO: "is a named pipe (FIFO), not a video file",
        stat.S_ISSOCK: "is a socket, not a video file",
        stat.S_ISCHR: "is a character device, not a video file",
        stat.S_ISBLK: "is a block device, not a video file",
    }
    for test, reason in kinds.items():
        if test(st.st_mode):
            raise VideoDecodeError(path, reason)
    if not os.access(path, os.R_OK):
        raise VideoDecodeError(path, "permission denied (the file is not readable)")
    if st.st_size == 0:
        raise VideoDecodeError(path, "empty file (0 bytes)")


def _open(path: Path):
    """av.open with the reasons a file is not a video turned into VideoDecodeError."""
    check_readable_file(path)
    try:
        container = av.open(str(path))
    except av.error.FFmpegError as e:
        raise VideoDecodeError(path, f"not a video file FFmpeg can read ({getattr(e, 'strerror', None) or e})") from e
    if container.format.name in _IMAGE_FORMATS or container.format.name.endswith("_pipe"):
        container.close()
        raise VideoDecodeError(path, f"is a still image ({container.format.name.removesuffix('_pipe')}), not a video")
    if not container.streams.video:
        kinds = sorted({s.type for s in container.streams})
        container.close()
        raise VideoDecodeError(path, f"no video stream (the file has {', '.join(kinds) or 'no'} streams only)")
    return container


def _expected_frames(container, stream, num_packets: int, rate: float) -> int:
    """Frames the file says it has (header count, else its duration), never fewer than were found."""
    n = stream.frames or 0
    if not n:
        if stream.duration and stream.time_base:
            n = round(float(stream.duration * stream.time_base) * rate)
        elif container.duration:
            n = round(container.duration / av.time_base * rate)
    return max(int(n), num_packets)


def _frame_times(path: Path) -> tuple[np.ndarray, float, int]:
    """Presentation times (seconds, sorted) of every video frame that is present, from the packets
    alone; the frame rate; and how many frames the file says it has (more when it was truncated)."""
    try:
        with _open(path) as container:
            stream = container.streams.video[0]
            tb = float(stream.time_base) if stream.time_base else None
            rate = float(stream.average_rate or stream.base_rate or 0) or 25.0
            pts = []
            try:
                pts = [p.pts for p in container.demux(stream) if p.pts is not None and p.size > 0]
            except av.error.FFmpegError:
                pass  # a damaged tail: what came before is counted, the share rule decides
            expected = _expected_frames(container, stream, len(pts), rate)
    except av.error.FFmpegError as e:
        raise VideoDecodeError(path, f"cannot read video ({type(e).__name__}: {e})") from e
    if not pts:
        raise VideoDecodeError(path, "video stream has no frames")
    pts = np.sort(np.asarray(pts, dtype=np.float64))
    times = pts * tb if tb else np.arange(len(pts)) / rate
    return times - times[0], rate, expected


def sample_indices(times: np.ndarray, spec: ClipSpec) -> np.ndarray:
    """Indices into ``times`` (sorted frame times starting at 0) of the T frames to use."""
    n = len(times)
    if spec.mode == "uniform":
        return np.round(np.linspace(0, n - 1, spec.num_frames)).astype(np.int64)
    targets = np.arange(spec.num_frames) / spec.fps
    idx = np.searchsorted(times, targets, side="right") - 1
    return np.clip(idx, 0, n - 1).astype(np.int64)


def reduced_size(h: int, w: int, fit: tuple[int, int] | None) -> tuple[int, int]:
    """Size (h, w) to convert a frame to when it will end up in a ``fit`` box.

    Twice the scale at which the frame still covers the box (and never up): the preprocessing's own
    antialiased resize then does the last step, so frames up to twice the box are converted exactly
    as before, and an 8K frame is never materialised as 100 MB of RGB.
    """
    if fit is None:
        return h, w
    scale = min(1.0, 2 * max(fit[0] / h, fit[1] / w))
    return max(1, round(h * scale)), max(1, round(w * scale))


def upright(frame: np.ndarray, rotation: int) -> np.ndarray:
    """The frame as it is meant to be seen: ``rotation`` is the display matrix's counter-clockwise
    angle (PyAV ``VideoFrame.rotation``); phones store portrait video as landscape plus this angle."""
    k = round(rotation / 90) % 4
    return np.ascontiguousarray(np.rot90(frame, k)) if k else frame


def decode_clip(path: str | os.PathLike, spec: ClipSpec, fit: tuple[int, int] | None = None) -> Clip:
    """Read the T frames of ``spec`` from ``path`` as upright RGB uint8. Raises VideoDecodeError.

    ``fit`` (h, w): the box the frames will be resized into (the encoder's input size); frames far
    larger are scaled down while they are converted (:func:`reduced_size`), which bounds memory.
    Damaged or truncated files follow :data:`MIN_DECODED_SHARE`.
    """
    path = Path(path)
    times, rate, expected = _frame_times(path)
    idx = sample_indices(times, spec)
    wanted = set(idx.tolist())
    last = int(idx.max())
    got: dict[int, np.ndarray] = {}
    failed = 0
    try:
        with _open(path) as container:
            stream = container.streams.video[0]
            cc = stream.codec_context
            frame_bytes = max(1, (cc.width or 1) * (cc.height or 1) * 3 // 2)
            cc.thread_type = "AUTO"
            cc.thread_count = max(1, min(os.cpu_count() or 1, DECODER_FRAME_BUDGET // frame_bytes))
            i = 0
            for packet in container.demux(stream):
                try:
                    frames = packet.decode()
                except av.error.FFmpegError:
                    failed += 1
                    continue
                for frame in frames:
                    if i in wanted:
                        rot = frame.rotation
                        h, w = (frame.width, frame.height) if round(rot / 90) % 2 else (frame.height, frame.width)
                        rh, rw = reduced_size(h, w, fit)
                        if round(rot / 90) % 2:
                            rh, rw = rw, rh
                        small = (
                            {"width": rw, "height": rh, "interpolation": "AREA"}
                            if (rh, rw) != (frame.height, frame.width)
                            else {}
                        )
                        got[i] = upright(frame.reformat(format="rgb24", **small).to_ndarray(), rot)
                    i += 1
                if i > last:
                    break
    except av.error.FFmpegError as e:
        raise VideoDecodeError(path, f"cannot decode video ({type(e).__name__}: {e})") from e
    decodable = len(times) - failed
    share = decodable / expected if expected else 0.0
    if not got or share < MIN_DECODED_SHARE:
        raise VideoDecodeError(
            path,
            f"damaged or truncated: {decodable} of its {expected} frames decode "
            f"({share:.0%}; at least {MIN_DECODED_SHARE:.0%} must)",
        )
    if share < 1.0:
        log.warning(
            "%s: damaged or truncated: %d of its %d frames decode (%.0f%%); using those",
            path,
            decodable,
            expected,
            100 * share,
        )
    # The demuxer can count a few more packets than the decoder returns frames (broken tails):
    # fall back to the nearest decoded frame before the wanted one rather than failing.
    have = np.array(sorted(got))
    pick = [int(have[max(0, np.searchsorted(have, i, side="right") - 1)]) for i in idx]
    frames = np.stack([got[i] for i in pick])
    return Clip(
        frames=frames, timestamps=times[pick], source_num_frames=len(times), source_fps=rate, decoded_share=share
    )


def probe(path: str | os.PathLike) -> dict:
    """Basic facts about a video file (size, frame count, fps), for reports and checks."""
    path = Path(path)
    times, rate, _ = _frame_times(path)
    with _open(path) as c:
        s = c.streams.video[0]
        w, h = s.codec_context.width, s.codec_context.height
    return {"width": w, "height": h, "num_frames": len(times), "fps": rate, "duration": float(times[-1] + 1 / rate)}


def write_video(
    path: str | os.PathLike, frames: np.ndarray, fps: float = 25.0, crf: int = 18, preset: str = "veryfast"
) -> Path:
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
