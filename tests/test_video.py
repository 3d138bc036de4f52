import numpy as np
import pytest

from phyprobe.io.video import ClipSpec, VideoDecodeError, decode_clip, probe, sample_indices, write_video


@pytest.mark.parametrize("t,h,w", [(1, 64, 64), (5, 31, 97), (40, 160, 90), (3, 2, 200)])
def test_any_length_and_aspect_ratio(tmp_path, t, h, w):
    frames = np.random.default_rng(0).integers(0, 255, (t, h, w, 3), dtype=np.uint8)
    p = write_video(tmp_path / "v.mp4", frames, fps=10)
    clip = decode_clip(p, ClipSpec(8))
    assert clip.frames.shape[0] == 8 and clip.frames.dtype == np.uint8
    assert clip.frames.shape[1:3] == (h + h % 2, w + w % 2)  # odd sizes padded by one edge pixel
    assert clip.source_num_frames == t


def test_uniform_and_fps_sampling_indices():
    times = np.arange(30) / 10.0  # 3 s at 10 fps
    assert sample_indices(times, ClipSpec(4)).tolist() == [0, 10, 19, 29]
    # 5 fps -> every other frame; past the end the last frame is held
    assert sample_indices(times, ClipSpec(4, "fps", 5.0)).tolist() == [0, 2, 4, 6]
    assert sample_indices(times[:3], ClipSpec(4, "fps", 5.0)).tolist() == [0, 2, 2, 2]


def test_variable_frame_rate_samples_by_time(tmp_path):
    from fractions import Fraction

    import av

    path = tmp_path / "vfr.mp4"
    pts_ms = [0, 40, 80, 500, 540, 1000]  # irregular gaps
    with av.open(str(path), "w", format="mp4") as out:
        s = out.add_stream("libx264", rate=25)
        s.width, s.height, s.pix_fmt = 32, 32, "yuv420p"
        s.codec_context.time_base = Fraction(1, 1000)
        for i, pts in enumerate(pts_ms):
            f = av.VideoFrame.from_ndarray(np.full((32, 32, 3), i * 40, np.uint8), format="rgb24")
            f.pts, f.time_base = pts, Fraction(1, 1000)
            for p in s.encode(f):
                out.mux(p)
        for p in s.encode():
            out.mux(p)
    clip = decode_clip(path, ClipSpec(3, "fps", 2.0))  # t = 0, 0.5, 1.0 s
    assert np.allclose(clip.timestamps, [0.0, 0.5, 1.0], atol=1e-3)
    assert [int(round(f.mean() / 40)) for f in clip.frames] == [0, 3, 5]


def test_deterministic_bytes(tmp_path):
    frames = np.random.default_rng(1).integers(0, 255, (6, 32, 48, 3), dtype=np.uint8)
    a = write_video(tmp_path / "a.mp4", frames).read_bytes()
    b = write_video(tmp_path / "b.mp4", frames).read_bytes()
    assert a == b


def test_errors_name_the_file(tmp_path):
    bad = tmp_path / "notes.txt"
    bad.write_text("hello")
    with pytest.raises(VideoDecodeError, match="notes.txt"):
        decode_clip(bad, ClipSpec(4))
    with pytest.raises(VideoDecodeError, match="does not exist"):
        decode_clip(tmp_path / "missing.mp4", ClipSpec(4))
    trunc = tmp_path / "trunc.mp4"
    good = write_video(tmp_path / "g.mp4", np.zeros((10, 32, 32, 3), np.uint8)).read_bytes()
    trunc.write_bytes(good[: len(good) // 3])
    with pytest.raises(VideoDecodeError, match="trunc.mp4"):
        decode_clip(trunc, ClipSpec(4))


def test_probe(tmp_path):
    p = write_video(tmp_path / "v.mp4", np.zeros((12, 48, 64, 3), np.uint8), fps=12)
    info = probe(p)
    assert (info["width"], info["height"], info["num_frames"]) == (64, 48, 12)
    assert info["fps"] == pytest.approx(12)
