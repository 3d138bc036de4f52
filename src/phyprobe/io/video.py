"""Video decoding into fixed-length clips, and mp4 writing, with PyAV.

Clips are sampled by presentation timestamp, so variable-frame-rate files are handled the same way
as constant-rate ones. Only the frames that will be used are converted to arrays: the demux pass that
finds the timestamps does not decode, so a long 4K file costs little more than its T frames.

A stream whose frame size changes part-way (MPEG-TS files joined byte-wise, an adaptive-bitrate
recording) is read at the size of its first frame: every later frame is resampled to it (stretched
if the aspect ratio changed too), with one warning naming the sizes. Raw elementary streams (.h264,
.hevc) carry no timestamps; their frames are timed by their order and the stream's nominal rate.

A long video read in windows is decoded as a stream (:class:`FrameStream`): frames come out one at a
time, so memory is bounded by what the consumer keeps (a window), not by the file's length.

Sparse reads seek. When the frames wanted are far apart (a clip's T frames spread over a long video, or windows
spread over a 2-hour one), the decoder jumps to the keyframe before the next wanted frame rather than decoding
every frame between (:func:`seek_plan`); the frames are the ones a decode from the start gives, bit for bit, as
decoding resumes at a keyframe, which depends on no earlier frame. Frames that are never decoded are not held to
the damaged-file rule; the demux pass still counts every packet, so a truncated file is found as before.

Partial files. A container that counts its frames (mp4, mov, avi) is held to :data:`MIN_DECODED_SHARE`,
and so is one whose duration FFmpeg reads (a Matroska/WebM header's Duration, the fragment headers of a
fragmented mp4 cut inside a fragment, an ``sidx``): its frames are expected from that duration. Beyond
those, a file without a frame count that ends early is used with one warning naming both ends ("video
ends at 4.0 s of the 8.0 s its header declares: a partial file?"): a fragmented mp4 whose ``mvex/mehd``
(read here; FFmpeg ignores it) declares more than is present, and an MPEG-TS whose size is not a whole
number of transport packets (a cut inside a packet; the warning gives the end alone, as TS declares no
duration). There is no evidence, and so no warning, for an MPEG-TS cut exactly at a packet boundary,
nor for a fragmented mp4 cut exactly at a fragment boundary when it has neither ``mehd`` nor ``sidx``
(FFmpeg's own ``frag_keyframe+empty_moov`` writes neither): such a file reads as a complete, shorter video.
"""

from __future__ import annotations

import errno
import logging
import os
import stat
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterable, Iterator

import av
import numpy as np

from ..errors import UserError
from ..machine import usable_cores


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
# A file without a frame count whose content ends this much before its declared duration (seconds, or this
# share of it when larger) is reported as partial: below it, rounding and a last frame's duration.
PARTIAL_GAP_S = 0.5
PARTIAL_GAP_SHARE = 0.01
# A seek is made when it skips at least this many frames: below it, decoding through is as cheap as the jump.
SEEK_MIN_SKIP = 16
# MPEG-TS packet sizes: plain, with a 4-byte timecode (M2TS, Blu-ray), with 16 bytes of Reed-Solomon parity.
_TS_PACKET_SIZES = (188, 192, 204)

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


def _animated_webp(path: Path) -> bool:
    """Whether a WebP file carries an animation (an ``ANIM`` chunk after its extended header)."""
    with open(path, "rb") as f:
        head = f.read(64)
    return head[:4] == b"RIFF" and head[8:12] == b"WEBP" and b"ANIM" in head


def _open(path: Path):
    """av.open with the reasons a file is not a video turned into VideoDecodeError."""
    check_readable_file(path)
    try:
        container = av.open(str(path))
    except av.error.FFmpegError as e:
        raise VideoDecodeError(path, f"not a video file FFmpeg can read ({getattr(e, 'strerror', None) or e})") from e
    if container.format.name in _IMAGE_FORMATS or container.format.name.endswith("_pipe"):
        container.close()
        if container.format.name == "webp_pipe" and _animated_webp(path):
            raise VideoDecodeError(path, "is an animated WebP, which this FFmpeg cannot decode: convert it to a video")
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


@dataclass(frozen=True)
class _Index:
    """What the demux pass learns: sorted presentation times (seconds from the first frame) of every frame
    present, the frame rate, the frames the file says it has, and why it looks partial (None: no evidence);
    for seeking, the frames' sorted presentation timestamps in the stream's time base and the indices (into
    them) of the keyframes (None where the stream has no timestamps: a raw elementary stream is not sought)."""

    times: np.ndarray
    rate: float
    expected: int
    partial: str | None = None
    pts: np.ndarray | None = None
    keys: np.ndarray | None = None


def _frame_times(path: Path) -> tuple[np.ndarray, float, int]:
    """Presentation times (seconds, sorted) of every video frame that is present, from the packets
    alone; the frame rate; and how many frames the file says it has (more when it was truncated)."""
    ix = _demux(path)
    return ix.times, ix.rate, ix.expected


def _demux(path: Path) -> _Index:
    """The demux pass (no decoding): frame times, rate, expected count and partial-file evidence."""
    try:
        with _open(path) as container:
            stream = container.streams.video[0]
            tb = float(stream.time_base) if stream.time_base else None
            rate = float(stream.average_rate or stream.base_rate or 0) or 25.0
            # no frame count: every stream is read, so the content's end is that of its longest stream
            counted = bool(stream.frames)
            packets, keyframes, end = [], set(), None
            try:
                for p in container.demux() if not counted else container.demux(stream):
                    if p.size <= 0:
                        continue
                    if p.stream.index == stream.index:
                        packets.append(p.pts)
                        if p.is_keyframe and p.pts is not None:
                            keyframes.add(p.pts)
                    if not counted and p.pts is not None and p.stream.time_base:
                        e = float((p.pts + (p.duration or 0)) * p.stream.time_base)
                        end = e if end is None else max(end, e)
            except av.error.FFmpegError:
                pass  # a damaged tail: what came before is counted, the share rule decides
            pts = [p for p in packets if p is not None]
            seekable = bool(pts) and len(pts) == len(packets) and tb is not None
            if not pts and packets:  # a raw elementary stream (.h264, .hevc): no timestamps at all
                tb, pts = None, list(range(len(packets)))
            expected = _expected_frames(container, stream, len(pts), rate)
            partial = None if counted or end is None else _partial_evidence(path, container, stream, end)
    except av.error.FFmpegError as e:
        raise VideoDecodeError(path, f"cannot read video ({type(e).__name__}: {e})") from e
    if not pts:
        raise VideoDecodeError(path, "video stream has no frames")
    raw = np.sort(np.asarray(pts, dtype=np.int64))
    times = raw * tb if tb else np.arange(len(raw)) / rate
    keys = np.flatnonzero(np.isin(raw, list(keyframes))) if seekable else None
    seek = seekable and keys is not None and len(keys) > 1 and len(np.unique(raw)) == len(raw)
    return _Index(times - times[0], rate, expected, partial, raw if seek else None, keys if seek else None)


def _partial_evidence(path: Path, container, stream, end: float) -> str | None:
    """Why a file without a frame count looks cut short, from what its container declares, else None.

    ``end``: where its content ends (seconds, the latest packet end of any stream, on the streams' clock).
    The declared duration is the video stream's, else the container's: what FFmpeg read from a Matroska
    header, an mp4's ``mehd`` or ``sidx``, or fragment headers whose samples are missing. For MPEG-TS,
    which declares none (FFmpeg estimates it from the file's last timestamps, so it always agrees), the
    evidence is a file that ends inside a transport packet."""
    start = container.start_time / av.time_base if container.start_time is not None else 0.0
    if stream.duration and stream.time_base:
        first = float(stream.start_time * stream.time_base) if stream.start_time is not None else start
        declared, content = float(stream.duration * stream.time_base), end - first
    elif container.duration:
        declared, content = container.duration / av.time_base, end - start
    else:
        declared = content = None
    name = container.format.name
    if "mp4" in name.split(","):
        frag = _fragmented_mp4_duration(path)
        if frag is not None and (declared is None or frag > declared):
            declared, content = frag, end - start
    if name == "mpegts":
        size = path.stat().st_size
        if all(size % n for n in _TS_PACKET_SIZES):
            return (
                f"video ends at {max(0.0, end - start):.1f} s, part-way through a transport packet "
                f"(its {size} bytes are not a whole number of 188-byte packets): a partial file?"
            )
        return None
    if declared and content is not None and declared - content > max(PARTIAL_GAP_S, PARTIAL_GAP_SHARE * declared):
        return f"video ends at {max(0.0, content):.1f} s of the {declared:.1f} s its header declares: a partial file?"
    return None


def _fragmented_mp4_duration(path: Path) -> float | None:
    """A fragmented mp4's whole duration as its ``moov`` declares it (seconds): the ``mvex/mehd`` fragment duration,
    else the ``mvhd`` duration when non-zero; None for a file that is not fragmented or declares neither. FFmpeg
    does not read ``mehd`` (and its ``empty_moov`` files carry none, with a zero ``mvhd``), so the boxes are read
    here: the top-level box headers, then the ``moov`` alone."""
    import struct

    def boxes(buf: bytes, pos: int, stop: int):
        while pos + 8 <= stop:
            size, kind = struct.unpack(">I4s", buf[pos : pos + 8])
            head = 8
            if size == 1:
                size, head = struct.unpack(">Q", buf[pos + 8 : pos + 16])[0], 16
            elif size == 0:
                size = stop - pos
            if size < head:
                return
            yield kind, pos + head, min(pos + size, stop)
            pos += size

    try:
        with open(path, "rb") as f:
            total, pos, moov = os.fstat(f.fileno()).st_size, 0, None
            while pos + 8 <= total and moov is None:
                f.seek(pos)
                head = f.read(16)
                size, kind = struct.unpack(">I4s", head[:8])
                hl = 8
                if size == 1:
                    size, hl = struct.unpack(">Q", head[8:16])[0], 16
                elif size == 0:
                    size = total - pos
                if size < hl:
                    return None
                if kind == b"moov":
                    if size > 64 * 2**20:
                        return None
                    f.seek(pos + hl)
                    moov = f.read(size - hl)
                pos += size
    except (OSError, struct.error):
        return None
    if moov is None:
        return None
    scale = mvhd = mehd = None
    for kind, a, b in boxes(moov, 0, len(moov)):
        if kind == b"mvhd" and b - a >= 32:
            v1 = moov[a] == 1
            scale = struct.unpack(">I", moov[a + (20 if v1 else 12) : a + (24 if v1 else 16)])[0]
            mvhd = struct.unpack(">Q" if v1 else ">I", moov[a + (24 if v1 else 16) : a + (32 if v1 else 20)])[0]
        elif kind == b"mvex":
            mehd = 0
            for k, c, d in boxes(moov, a, b):
                if k == b"mehd" and d - c >= 8:
                    v1 = moov[c] == 1
                    mehd = struct.unpack(">Q" if v1 else ">I", moov[c + 4 : c + (12 if v1 else 8)])[0]
    if mehd is None or not scale:  # no mvex: not fragmented
        return None
    declared = max(mehd, 0 if mvhd in (None, 0xFFFFFFFF, 2**64 - 1) else mvhd)
    return declared / scale if declared else None


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


_DECODER_THREADS: int | None = None  # set per DataLoader worker (set_decoder_threads); None: the usable cores


def set_decoder_threads(n: int | None) -> None:
    """Threads each decoder of this process may use (None: every usable core): a data worker sets its share, so
    the workers of all the devices of a node do not each ask FFmpeg for the whole node."""
    global _DECODER_THREADS
    _DECODER_THREADS = None if n is None else max(1, int(n))


def decoder_threads() -> int:
    return _DECODER_THREADS or usable_cores()


def decode_clip(path: str | os.PathLike, spec: ClipSpec, fit: tuple[int, int] | None = None) -> Clip:
    """Read the T frames of ``spec`` from ``path`` as upright RGB uint8. Raises VideoDecodeError.

    ``fit`` (h, w): the box the frames will be resized into (the encoder's input size); frames far
    larger are scaled down while they are converted (:func:`reduced_size`), which bounds memory.
    Damaged or truncated files follow :data:`MIN_DECODED_SHARE`. Every frame comes out at the size
    of the video's first frame: a frame size that changes mid-stream is resampled to it (warned once).
    """
    path = Path(path)
    index = _demux(path)
    idx = sample_indices(index.times, spec)
    stats: dict = {}
    got = dict(_decoded(path, index, fit, set(idx.tolist()), int(idx.max()), stats))
    # The demuxer can count a few more packets than the decoder returns frames (broken tails):
    # fall back to the nearest decoded frame before the wanted one rather than failing.
    have = np.array(sorted(got))
    pick = [int(have[max(0, np.searchsorted(have, i, side="right") - 1)]) for i in idx]
    frames = np.stack([got[i] for i in pick])
    return Clip(
        frames=frames,
        timestamps=index.times[pick],
        source_num_frames=len(index.times),
        source_fps=index.rate,
        decoded_share=stats["share"],
    )


class FrameStream:
    """Every frame of a video, decoded in order and handed out one at a time, as :func:`decode_clip` with
    ``ClipSpec(num_frames)`` would return them all at once: upright RGB uint8, at the first frame's size reduced
    for ``fit``, exactly :attr:`num_frames` of them (a decoder that returns fewer than the demuxer counted holds
    its last frame), under the same damaged-file rule and warnings. Memory is what the consumer keeps.

    Constructing it runs the demux pass (no decoding; raises VideoDecodeError for a file that cannot be read).
    Iterating decodes; a file whose frames turn out not to decode (:data:`MIN_DECODED_SHARE`) raises
    VideoDecodeError from the iteration, as soon as that is certain, without handing out any further frame.
    """

    def __init__(self, path: str | os.PathLike, fit: tuple[int, int] | None = None):
        self.path, self.fit = Path(path), fit
        self._index = _demux(self.path)
        self.num_frames = len(self._index.times)
        self.fps = self._index.rate
        self.decoded_share: float | None = None  # known once iterated to the end
        self.decoded_frames: int | None = None  # frames the decoder returned, once iterated or selected

    def __iter__(self) -> Iterator[np.ndarray]:
        stats: dict = {}
        frame, count = None, 0
        for count, (_, frame) in enumerate(
            _decoded(self.path, self._index, self.fit, None, self.num_frames - 1, stats), 1
        ):
            yield frame
        self.decoded_share, self.decoded_frames = stats["share"], stats["decoded"]
        for _ in range(count, self.num_frames):
            yield frame

    def select(self, indices: Iterable[int]) -> Iterator[tuple[int, np.ndarray]]:
        """(i, frame) for each frame index in ``indices``, in order, each once: the frames iterating would give at
        those indices, reached by seeking past long gaps (:func:`seek_plan`). A wanted frame the decoder does not
        return is the last one it did, as iterating holds it. :attr:`decoded_share` is then that of the frames
        decoded."""
        wanted = sorted({int(i) for i in indices if 0 <= int(i) < self.num_frames})
        if not wanted:
            return
        stats: dict = {}
        todo = iter(wanted)
        prev = None
        for i, frame in _decoded(self.path, self._index, self.fit, set(wanted), wanted[-1], stats):
            for w in todo:
                if w == i:
                    break
                yield w, frame if prev is None else prev  # missed by the decoder: held, as iterating does
            prev = frame
            yield i, frame
        for w in todo:
            yield w, prev
        self.decoded_share, self.decoded_frames = stats["share"], stats["decoded"]


def seek_plan(keys: np.ndarray, wanted: list[int]) -> list[tuple[int | None, int]]:
    """How to decode the sorted frame indices ``wanted`` of a stream whose keyframes are at indices ``keys``:
    segments (the keyframe to seek to, or None to decode on; the segment's last wanted frame). Decoding starts at
    frame 0, whose size every frame is converted to, and jumps to the keyframe before a wanted frame when the jump
    skips at least :data:`SEEK_MIN_SKIP` frames."""
    plan: list[list] = [[None, 0]]
    pos = 0
    for w in wanted:
        at = int(np.searchsorted(keys, w, side="right")) - 1
        k = int(keys[at]) if at >= 0 else 0
        if k - pos - 1 >= SEEK_MIN_SKIP:
            plan.append([k, w])
        else:
            plan[-1][1] = max(plan[-1][1], w)
        pos = max(pos, w)
    return [(k, w) for k, w in plan]


class _Unsought(Exception):
    """A frame decoded after a seek has a timestamp the demux pass did not see: its index is unknown."""


def _decoded(
    path: Path, index: _Index, fit: tuple[int, int] | None, wanted: set[int] | None, last: int, stats: dict
) -> Iterator[tuple[int, np.ndarray]]:
    """(i, upright RGB frame) of each decoded frame i <= ``last`` in ``wanted`` (None: all), in order; sparse
    ``wanted`` frames are reached by seeking (:func:`seek_plan`) where the stream has keyframes to seek to, and
    by decoding from the start should a sought frame's timestamp not be one the demux pass saw."""
    plan = None
    if wanted and index.keys is not None:
        plan = seek_plan(index.keys, sorted(wanted))
        plan = plan if len(plan) > 1 else None
    if plan is not None:
        done = [-1]
        try:
            yield from _decode(path, index, fit, wanted, last, stats, plan, done)
            return
        except _Unsought:
            log.debug("%s: a sought frame's timestamp is unknown; decoding from the start", path)
            wanted = {w for w in wanted if w > done[0]}
    yield from _decode(path, index, fit, wanted, last, stats, [(None, last)], [-1])


def _decode(
    path: Path,
    index: _Index,
    fit: tuple[int, int] | None,
    wanted: set[int] | None,
    last: int,
    stats: dict,
    plan: list[tuple[int | None, int]],
    done: list[int],
) -> Iterator[tuple[int, np.ndarray]]:
    """:func:`_decoded`'s work along ``plan`` (one segment from the start: every frame in order). ``done[0]``: the
    highest frame index passed so far, for a caller that has to decode again from the start.

    The damaged-file rule: once failed packets make the share of frames that decode certain to be under
    :data:`MIN_DECODED_SHARE`, no more frames are converted or yielded, and VideoDecodeError is raised when the
    decoding is done (so its message gives the whole count); so it is when no frame decodes. After the last frame,
    ``stats["share"]`` is the share that decoded and the warnings are logged (a size change, a damaged share, a
    partial file)."""
    n, expected = len(index.times), index.expected

    def short(failed: int) -> bool:
        return not expected or (n - failed) / expected < MIN_DECODED_SHARE

    failed, doomed = 0, short(0)
    first: tuple[int, int] | None = None  # upright (h, w) of the first decoded frame: every frame's size
    changed: tuple[int, int] | None = None  # the first other size met, for the warning
    i = 0
    try:
        with _open(path) as container:
            stream = container.streams.video[0]
            cc = stream.codec_context
            frame_bytes = max(1, (cc.width or 1) * (cc.height or 1) * 3 // 2)
            cc.thread_type = "AUTO"
            cc.thread_count = max(1, min(decoder_threads(), DECODER_FRAME_BUDGET // frame_bytes))
            lookup = None if len(plan) == 1 else {int(p): j for j, p in enumerate(index.pts)}  # one segment: no seek
            for start, end in plan:
                if start is not None:
                    container.seek(int(index.pts[start]), stream=stream, backward=True, any_frame=False)
                for packet in container.demux(stream):
                    try:
                        frames = packet.decode()
                    except av.error.FFmpegError:
                        failed += 1
                        doomed = doomed or short(failed)
                        continue
                    for frame in frames:
                        rot = frame.rotation
                        turned = round(rot / 90) % 2
                        h, w = (frame.width, frame.height) if turned else (frame.height, frame.width)
                        if first is None:
                            first = (h, w)
                        elif (h, w) != first and changed is None:
                            changed = (h, w)
                        j = i if lookup is None else lookup.get(frame.pts)
                        if j is None:
                            raise _Unsought
                        if j > done[0] and not doomed and j <= last and (wanted is None or j in wanted):
                            yield j, upright(_to_rgb(frame, reduced_size(*first, fit), turned), rot)
                        done[0] = max(done[0], j)
                        i += 1
                    if done[0] >= end:
                        break
    except av.error.FFmpegError as e:
        raise VideoDecodeError(path, f"cannot decode video ({type(e).__name__}: {e})") from e
    decodable = n - failed
    share = decodable / expected if expected else 0.0
    if not i or share < MIN_DECODED_SHARE:
        raise VideoDecodeError(
            path,
            f"damaged or truncated: {decodable} of its {expected} frames decode "
            f"({share:.0%}; at least {MIN_DECODED_SHARE:.0%} must)",
        )
    stats["share"], stats["decoded"] = share, i
    if changed is not None:
        log.warning(
            "%s: the frame size changes mid-stream (%dx%d, then %dx%d); every frame resampled to the first's",
            path,
            first[1],
            first[0],
            changed[1],
            changed[0],
        )
    if share < 1.0:
        log.warning(
            "%s: damaged or truncated: %d of its %d frames decode (%.0f%%); using those",
            path,
            decodable,
            expected,
            100 * share,
        )
    if index.partial and share >= 1.0:  # else the count from the same duration has just said so
        log.warning("%s: %s", path, index.partial)


def _to_rgb(frame, size: tuple[int, int], turned: bool) -> np.ndarray:
    """``frame`` as RGB uint8 of upright size ``size`` (h, w), as stored (before its rotation is undone;
    ``turned``: the rotation is a quarter turn, so stored width and height are swapped). Shrinking
    averages pixels (AREA); enlarging (a later, smaller segment of a size-changing stream) is bilinear."""
    rh, rw = (size[1], size[0]) if turned else size
    if (rh, rw) == (frame.height, frame.width):
        return frame.reformat(format="rgb24").to_ndarray()
    interp = "AREA" if rh <= frame.height and rw <= frame.width else "BILINEAR"
    return frame.reformat(format="rgb24", width=rw, height=rh, interpolation=interp).to_ndarray()


def probe(path: str | os.PathLike) -> dict:
    """Basic facts about a video file (size, frame count, fps, codec, pixel format, and the bits its video stream
    spends per pixel per frame, from the file's size: a quality proxy), for reports and checks."""
    path = Path(path)
    times, rate, _ = _frame_times(path)
    with _open(path) as c:
        s = c.streams.video[0]
        w, h = s.codec_context.width, s.codec_context.height
        codec, pix_fmt = s.codec_context.name, s.codec_context.format.name if s.codec_context.format else None
    return {
        "width": w,
        "height": h,
        "num_frames": len(times),
        "fps": rate,
        "duration": float(times[-1] + 1 / rate),
        "codec": codec,
        "pix_fmt": pix_fmt,
        "bits_per_pixel": 8 * path.stat().st_size / max(1, w * h * len(times)),
    }


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
