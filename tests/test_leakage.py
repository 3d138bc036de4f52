"""The leakage guard on planted overlaps of each kind between training data and a benchmark's test split."""

import shutil
from pathlib import Path

import dataset_fixtures as F
import pandas as pd
import pytest

from phyprobe.data.datasets import prepare
from phyprobe.data.datasets.leakage import LeakageError, check_leakage
from phyprobe.data.manifest import Manifest
from phyprobe.io.video import write_video
from phyprobe.testing.configs import CONFIGS


@pytest.fixture(scope="module")
def benchmarks(tmp_path_factory):
    """ImplausiBench (videos) and VideoPhy-2 (prompts) test manifests, as benchmark configs."""
    base = tmp_path_factory.mktemp("bench")
    ib = prepare("implausibench", F.implausibench(base / "ib_raw"), base / "ib", check_counts=False)
    (base / "vp_raw").mkdir()
    vp = prepare(
        "videophy2", F.videophy2(base / "vp_raw", tag="b"), base / "vp", check_counts=False, configs=str(CONFIGS)
    )
    return [
        {"name": "implausibench", "manifest": str(ib), "split": "test", "protocol": "pairwise"},
        {"name": "videophy2", "manifest": str(vp), "split": "test", "protocol": "pairwise"},
    ]


def training(tmp_path, plant=None):
    """A rated-folder training set (own prompts, own videos), with ``plant(root, df)`` editing it first."""
    root = tmp_path / "train_raw"
    F.rated_folder(root, tag="t")
    df = pd.read_csv(root / "ratings.csv")
    if plant:
        plant(root, df)
    df.to_csv(root / "ratings.csv", index=False)
    return Manifest.load(prepare("rated_folder", root, tmp_path / "train", configs=str(CONFIGS)))


def bench_video(benchmarks, name="IMPa0001_implausible.mp4"):
    return next((Path(benchmarks[0]["manifest"]).parent / "ib_raw").rglob(name))


def test_clean_training_data_passes(benchmarks, tmp_path):
    assert check_leakage(training(tmp_path), benchmarks, cache_dir=tmp_path / "cache") == []


def test_same_video_bytes_under_another_name(benchmarks, tmp_path):
    def plant(root, df):
        shutil.copy(bench_video(benchmarks), root / "clips" / "renamed.mp4")
        df.loc[len(df)] = {"video": "clips/renamed.mp4", "score": 2, "prompt": "t prompt 0"}

    m = training(tmp_path, plant)
    with pytest.raises(
        LeakageError,
        match=r"content: training video 'rated:clips/renamed.mp4' ~ implausibench test video "
        r"'implausibench:ImplausiBench/implausible/IMPa0001_implausible.mp4'",
    ):
        check_leakage(m, benchmarks, cache_dir=tmp_path / "cache")
    with pytest.raises(
        LeakageError, match=r"1 overlap\(s\).*\n  first_frame: training video 'rated:clips/renamed.mp4'"
    ):
        check_leakage(
            m, benchmarks, allow=["content"], cache_dir=tmp_path / "cache"
        )  # a copy also opens on the same frame
    found = check_leakage(m, benchmarks, allow=["implausibench"], cache_dir=tmp_path / "cache")
    assert sorted((o.kind, o.benchmark) for o in found) == [
        ("content", "implausibench"),
        ("first_frame", "implausibench"),
    ]


def test_same_prompt_up_to_case_and_spacing(benchmarks, tmp_path):
    caption = Manifest.load(benchmarks[1]["manifest"]).split("test").videos["metadata"].iloc[0]["prompt"]

    def plant(root, df):
        df.loc[df.index[:3], "prompt"] = "  " + caption.upper().replace(" ", "   ") + " "

    m = training(tmp_path, plant)
    with pytest.raises(
        LeakageError, match=r"9 overlap\(s\).*\n  prompt: training video 'rated:clips/t_0_0.mp4' ~ videophy2 test video"
    ):
        check_leakage(m, benchmarks, cache_dir=tmp_path / "cache")
    assert (
        len(check_leakage(m, benchmarks, allow=["videophy2:prompt"], cache_dir=tmp_path / "cache")) == 9
    )  # 3 x 3 videos
    with pytest.raises(LeakageError):  # allowing another benchmark's prompts does not cover this one
        check_leakage(m, benchmarks, allow=["implausibench:prompt"], cache_dir=tmp_path / "cache")


def test_same_first_frame_in_a_different_video(benchmarks, tmp_path):
    """A training clip generated from a test video's first frame (as an image-to-video model would be
    conditioned): different bytes, different motion, the same opening image."""

    def plant(root, df):
        frames = F.clip_frames("ib/IMPa0002/real")
        frames[1:] = F.clip_frames("something else entirely")[1:]
        write_video(root / "clips" / "from_test_image.mp4", frames, fps=8)
        df.loc[len(df)] = {"video": "clips/from_test_image.mp4", "score": 4, "prompt": "t prompt 1"}

    m = training(tmp_path, plant)
    with pytest.raises(
        LeakageError,
        match=r"first_frame: training video 'rated:clips/from_test_image.mp4' ~ implausibench "
        r"test video 'implausibench:ImplausiBench/real/IMPa0002_real.mp4'",
    ) as e:
        check_leakage(m, benchmarks, cache_dir=tmp_path / "cache")
    assert "content" not in str(e.value)  # the bytes differ: only the first frame gives it away
    assert len(check_leakage(m, benchmarks, allow=["first_frame"], cache_dir=tmp_path / "cache")) == 1


def test_fingerprints_are_cached_and_unprepared_benchmarks_skipped(benchmarks, tmp_path):
    m = training(tmp_path)
    check_leakage(m, benchmarks, kinds=["first_frame"], cache_dir=tmp_path / "cache")
    cached = (tmp_path / "cache" / "fingerprints.jsonl").read_text().splitlines()
    assert len(cached) == len(m.videos) + 6 + 9  # training + ImplausiBench + VideoPhy-2 test videos, once each
    check_leakage(m, benchmarks, kinds=["first_frame"], cache_dir=tmp_path / "cache")
    assert len((tmp_path / "cache" / "fingerprints.jsonl").read_text().splitlines()) == len(cached)
    absent = {"name": "pid", "manifest": str(tmp_path / "not_prepared"), "split": "test", "protocol": "pid"}
    assert check_leakage(m, [absent], cache_dir=tmp_path / "cache") == []
