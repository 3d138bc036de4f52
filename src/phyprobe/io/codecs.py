"""The codecs and qualities generated videos come in, written with PyAV (no ffmpeg binary needed).

One implementation serves two users: the codec-invariance benchmark (``bench/bench_codecs.py``) re-encodes the same
frames in each ``BENCHMARK_ENCODINGS`` entry and scores every version; the worlds' codec twins
(``phyprobe.world.degrade.codec_twin``) pass a plausible clip through one encoding drawn by ``draw_encoding`` and back,
so training sees the same physics in another codec as plausible. The benchmark's fixed settings are points inside
the training draw's ranges, not the draw itself.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

os.environ.setdefault("SVT_LOG", "1")  # SVT-AV1: errors only

X264 = {"threads": "1", "x264-params": "mbtree=0"}  # as write_video: the same frames give the same bytes
AV1_ENCODERS = {  # encoder: options for a quality like the others' defaults; the first PyAV has is used
    "libaom-av1": {"crf": "32", "b": "0", "cpu-used": "6", "row-mt": "1"},
    "libsvtav1": {"crf": "35", "preset": "8"},
    "librav1e": {"qp": "100", "speed": "8"},
}


@dataclass(frozen=True)
class Encoding:
    """One way to write frames: the encoder, its container, pixel format and options."""

    name: str
    codec: str
    fmt: str
    ext: str
    pix_fmt: str
    options: dict = field(default_factory=dict)
    palette: bool = False  # frames quantised to an adaptive 256-colour palette each (pal8)


def _av1(crf: int | None = None) -> Encoding | None:
    have = av.codecs_available
    name = next((c for c in AV1_ENCODERS if c in have), None)
    if name is None:
        return None
    opts = dict(AV1_ENCODERS[name])
    if crf is not None and "crf" in opts:
        opts["crf"] = str(crf)
    return Encoding("av1", name, "matroska", "mkv", "yuv420p", opts)


def benchmark_encodings() -> tuple[list[Encoding], list[str]]:
    """The benchmark's encodings PyAV can write here (FFV1 first: the lossless reference), and a note for each it
    cannot."""
    out = [Encoding("ffv1", "ffv1", "matroska", "mkv", "bgr0")]
    out += [
        Encoding(f"h264_crf{q}", "libx264", "mp4", "mp4", "yuv420p", {"crf": str(q), "preset": "veryfast", **X264})
        for q in (18, 28, 38)
    ]
    out.append(Encoding("vp9", "libvpx-vp9", "webm", "webm", "yuv420p", {"crf": "32", "b": "0", "cpu-used": "5"}))
    missing = []
    av1 = _av1()
    if av1 is None:
        missing.append(f"av1: no AV1 encoder in this PyAV ({', '.join(AV1_ENCODERS)})")
    else:
        out.append(av1)
    out.append(Encoding("mjpeg", "mjpeg", "avi", "avi", "yuvj420p"))
    out.append(Encoding("gif_rgb8", "gif", "gif", "gif", "rgb8"))
    out.append(Encoding("gif_palette", "gif", "gif", "gif", "pal8", palette=True))
    have = av.codecs_available
    for e in list(out):
        if e.codec not in have:
            out.remove(e)
            missing.append(f"{e.name}: no {e.codec} encoder in this PyAV")
    return out, missing


CODEC_FAMILIES = ("h264", "vp9", "av1", "mjpeg", "gif")


def draw_encoding(rng: np.random.Generator) -> Encoding:
    """One encoding for a codec twin: a family drawn uniformly, then its quality: H.264 CRF 20-42, VP9 CRF 24-48,
    AV1 CRF 28-50, Motion JPEG quantiser 2-28, GIF with FFmpeg's 3-3-2 colours or a 256-colour palette per frame. The ranges
    run from visually lossless to the blockiest a generator's output plausibly ships in."""
    family = CODEC_FAMILIES[int(rng.integers(len(CODEC_FAMILIES)))]
    if family == "av1" and _av1() is None:
        family = "h264"
    if family == "h264":
        q = int(rng.integers(20, 43))
        return Encoding(
            f"h264_crf{q}", "libx264", "mp4", "mp4", "yuv420p", {"crf": str(q), "preset": "veryfast", **X264}
        )
    if family == "vp9":
        q = int(rng.integers(24, 49))
        return Encoding(
            f"vp9_crf{q}", "libvpx-vp9", "webm", "webm", "yuv420p", {"crf": str(q), "b": "0", "cpu-used": "5"}
        )
    if family == "av1":
        q = int(rng.integers(28, 51))
        return Encoding(**{**_av1(q).__dict__, "name": f"av1_crf{q}"})
    if family == "mjpeg":
        q = int(rng.integers(2, 29))  # the quantiser held fixed (FFmpeg's default output sits near 20)
        return Encoding(f"mjpeg_q{q}", "mjpeg", "avi", "avi", "yuvj420p", {"qmin": str(q), "qmax": str(q)})
    if rng.random() < 0.5:
        return Encoding("gif_rgb8", "gif", "gif", "gif", "rgb8")
    return Encoding("gif_palette", "gif", "gif", "gif", "pal8", palette=True)


def quantise(frame: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(indices, ARGB palette (256, 4)) of a frame quantised to its own 256 colours (median cut, no dithering, as
    imaging libraries write GIFs)."""
    from PIL import Image

    q = Image.fromarray(frame).quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    rgb = np.asarray(q.getpalette()[: 256 * 3], dtype=np.uint8).reshape(-1, 3)
    pal = np.zeros((256, 4), dtype=np.uint8)
    pal[:, 0] = 255
    pal[: len(rgb), 1:] = rgb
    return np.asarray(q, dtype=np.uint8), pal  # rows A, R, G, B: PyAV swaps the bytes as the machine needs


def encode(
    frames: np.ndarray,
    rate: Fraction | float,
    enc: Encoding,
    target: str | os.PathLike | io.BytesIO,
    container_options: dict | None = None,
):
    """Write RGB uint8 frames (T, H, W, 3; even H and W) with ``enc`` to a path or an in-memory buffer;
    ``container_options`` go to the muxer (an mp4's ``movflags``, say)."""
    rate = Fraction(rate).limit_denominator(1001)
    where = target if isinstance(target, io.BytesIO) else str(target)
    with av.open(where, mode="w", format=enc.fmt, options=container_options or {}) as out:
        stream = out.add_stream(enc.codec, rate=rate)
        stream.width, stream.height, stream.pix_fmt = frames.shape[2], frames.shape[1], enc.pix_fmt
        stream.options = dict(enc.options)
        for f in frames:
            vf = (
                av.VideoFrame.from_ndarray(quantise(f), format="pal8")
                if enc.palette
                else av.VideoFrame.from_ndarray(np.ascontiguousarray(f), format="rgb24")
            )
            for packet in stream.encode(vf):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return target


def decode_all(source: str | os.PathLike | io.BytesIO) -> np.ndarray:
    """Every frame of a file or buffer as RGB uint8 (T, H, W, 3)."""
    with av.open(source if isinstance(source, io.BytesIO) else str(source)) as c:
        return np.stack([f.to_ndarray(format="rgb24") for f in c.decode(video=0)])


def transcode(frames: np.ndarray, rate: Fraction | float, enc: Encoding) -> np.ndarray:
    """``frames`` through ``enc`` and back, in memory: the same length and size, with the codec's artefacts.

    Odd sizes are padded by one edge pixel for the encoders that need even ones and cropped back afterwards."""
    frames = np.asarray(frames, dtype=np.uint8)
    t, h, w, _ = frames.shape
    padded = np.pad(frames, ((0, 0), (0, h % 2), (0, w % 2), (0, 0)), mode="edge") if h % 2 or w % 2 else frames
    buf = io.BytesIO()
    encode(padded, rate, enc, buf)
    buf.seek(0)
    out = decode_all(buf)[:, :h, :w]
    if len(out) != t:  # an encoder that dropped or repeated frames would change the motion, not only the look
        raise RuntimeError(f"{enc.name}: {t} frames in, {len(out)} out")
    return np.ascontiguousarray(out)


def psnr(path: Path, ref: np.ndarray) -> float:
    """PSNR (dB) of a file's frames against ``ref``; 99 when identical."""
    got = decode_all(path)
    n = min(len(got), len(ref))
    mse = float(((got[:n].astype(np.float64) - ref[:n]) ** 2).mean())
    return 99.0 if mse == 0 else 10 * np.log10(255.0**2 / mse)
