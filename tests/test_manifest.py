import json

import pytest

from phyprobe.data.manifest import Manifest, ManifestError, write_jsonl

GOOD_VIDEO = {
    "id": "a",
    "path": "a.mp4",
    "source": "s",
    "is_real": True,
    "magnitude": 0.0,
    "anchor": 0,
    "split": "train",
    "metadata": {},
}
GOOD_VIDEO_B = {**GOOD_VIDEO, "id": "b", "path": "b.mp4", "is_real": False, "magnitude": 0.7, "anchor": None}
GOOD_PAIR = {
    "a": "b",
    "b": "a",
    "label": 1.0,
    "weight": 1.0,
    "source": "s",
    "correspondence": "same_scene",
    "kind": "real_vs_generated",
    "split": "train",
}


def write(tmp_path, videos, pairs):
    write_jsonl(tmp_path / "videos.jsonl", videos)
    write_jsonl(tmp_path / "pairs.jsonl", pairs)
    return tmp_path


def test_roundtrip(tmp_path):
    m = Manifest.load(write(tmp_path, [GOOD_VIDEO, GOOD_VIDEO_B], [GOOD_PAIR]))
    assert len(m) == 2 and len(m.pairs) == 1
    out = m.save(tmp_path / "copy")
    assert (out / "videos.jsonl").read_text() == (tmp_path / "videos.jsonl").read_text()


@pytest.mark.parametrize(
    "videos,pairs,match",
    [
        (
            [{k: v for k, v in GOOD_VIDEO.items() if k != "is_real"}],
            [],
            r"videos.jsonl:1: .*missing required field.*is_real",
        ),
        ([GOOD_VIDEO, GOOD_VIDEO], [], r"videos.jsonl:2: duplicate video id 'a'"),
        ([{**GOOD_VIDEO, "magnitude": 1.5}], [], r"videos.jsonl:1: 'magnitude' must be null or a number in \[0, 1\]"),
        ([{**GOOD_VIDEO, "anchor": 0.5}], [], r"videos.jsonl:1: 'anchor' must be null, 0 or 1"),
        ([{**GOOD_VIDEO, "is_real": "yes"}], [], r"'is_real' must be true/false"),
        ([{**GOOD_VIDEO, "colour": "red"}], [], r"unknown field\(s\) \['colour'\]"),
        (
            [GOOD_VIDEO, GOOD_VIDEO_B],
            [{**GOOD_PAIR, "b": "zzz"}],
            r"pairs.jsonl:1: pair field 'b' = 'zzz' is not a video id",
        ),
        (
            [GOOD_VIDEO, GOOD_VIDEO_B],
            [{**GOOD_PAIR, "label": 2}],
            r"pairs.jsonl:1: 'label' must be a number in \[0, 1\]",
        ),
        ([GOOD_VIDEO, GOOD_VIDEO_B], [{**GOOD_PAIR, "weight": 0}], r"'weight' must be a positive number"),
        ([GOOD_VIDEO, GOOD_VIDEO_B], [{**GOOD_PAIR, "b": "b"}], r"compares video 'b' with itself"),
        ([GOOD_VIDEO, GOOD_VIDEO_B], [{**GOOD_PAIR, "correspondence": "same"}], r"'correspondence' must be one of"),
    ],
)
def test_validation_errors_name_file_line_and_problem(tmp_path, videos, pairs, match):
    write(tmp_path, videos, pairs)
    with pytest.raises(ManifestError, match=match):
        Manifest.load(tmp_path)


def test_bad_json_line(tmp_path):
    (tmp_path / "videos.jsonl").write_text(json.dumps(GOOD_VIDEO) + "\n{not json\n")
    with pytest.raises(ManifestError, match=r"videos.jsonl:2: not valid JSON"):
        Manifest.load(tmp_path)


def test_missing_table_and_missing_file(tmp_path):
    with pytest.raises(ManifestError, match="manifest table not found"):
        Manifest.load(tmp_path)
    write(tmp_path, [GOOD_VIDEO], [])
    with pytest.raises(ManifestError, match=r"video file 'a.mp4': file does not exist"):
        Manifest.load(tmp_path, check_files=True)


def test_split_keeps_only_pairs_within(tmp_path):
    m = Manifest.load(write(tmp_path, [GOOD_VIDEO, {**GOOD_VIDEO_B, "split": "test"}], [GOOD_PAIR]))
    assert len(m.split("train")) == 1 and m.split("train").pairs.empty
