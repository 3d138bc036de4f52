"""Decode workers per GPU from the measured pace: the decode of a few clips in this process against the encoders'
forward of them on the device. The measurement runs here on the CPU (as a GPU run measures its device); the rule
is checked on figures that call for each answer."""

import logging

import torch

from phyprobe.features.extract import ClipDataset, auto_workers, measured_workers, workers_for
from phyprobe.testing.features import CLIP, tiny_encoder, toy_manifest_at


def test_workers_keep_pace_with_the_device_within_the_cores():
    assert workers_for(0.40, 0.05, cores=32) == 9  # 8 decoders keep pace, one more for the spread
    assert workers_for(0.40, 0.05, cores=4) == 4  # never more than the process's cores
    assert workers_for(0.01, 0.50, cores=8) == 2  # a slow encoder: one keeps pace
    assert workers_for(0.30, 0.0, cores=6) == 6  # a forward too fast to time
    assert workers_for(1.0, 1.0, cores=1) == 1


def test_the_pace_is_measured_on_real_clips_and_logged(tmp_path, caplog):
    manifest = toy_manifest_at(tmp_path / "m", num_scenes=3)
    items = [(v, manifest.video_path(p)) for v, p in zip(manifest.videos["id"], manifest.videos["path"])]
    enc = tiny_encoder()
    with caplog.at_level(logging.INFO, logger="phyprobe.features.extract"):
        n = measured_workers(ClipDataset(items, CLIP, enc), [enc], torch.device("cpu"), cores=3)
    assert 1 <= n <= 3
    line = next(r.getMessage() for r in caplog.records if r.getMessage().startswith("decode workers"))
    assert f"decode workers: {n} per device" in line and "a clip on cpu" in line


def test_a_sample_that_cannot_be_read_gives_every_core(tmp_path):
    bad = tmp_path / "bad.mp4"
    bad.write_bytes(b"not a video")
    enc = tiny_encoder()
    assert measured_workers(ClipDataset([("bad", bad)], CLIP, enc), [enc], torch.device("cpu"), cores=5) == 5


def test_on_a_cpu_auto_decodes_in_process(tmp_path):
    enc = tiny_encoder()
    if not torch.cuda.is_available():
        assert auto_workers(ClipDataset([], CLIP, enc), [enc]) == 0
