"""Every user error of `phyprobe score` ends in one line naming the file and the reason; scores are
always finite, in [0, 1], and --json output is always valid JSON."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from safetensors.torch import load_file, save_file

from phyprobe.cli import main
from phyprobe.io.video import write_video
from phyprobe.testing.scorers import make_scorer


@pytest.fixture(scope="module")
def scorer_dir(tmp_path_factory):
    return make_scorer(tmp_path_factory.mktemp("scorer") / "s")


@pytest.fixture(scope="module")
def videos(tmp_path_factory):
    root = tmp_path_factory.mktemp("videos")
    rng = np.random.default_rng(0)
    good = [write_video(root / f"ok{i}.mp4", rng.integers(0, 255, (8, 40, 56, 3), dtype=np.uint8)) for i in range(2)]
    junk = root / "junk.mp4"
    junk.write_bytes(b"not a video at all")
    return good, junk


def run(capsys, *argv):
    try:
        rc = main(["score", *map(str, argv)])
    except SystemExit as e:  # a user error: the CLI's one-line report and exit code 2
        rc = e.code
    out, err = capsys.readouterr()
    return rc, out, err


def strict_json(line: str) -> dict:
    def refuse(c):
        raise ValueError(f"non-standard JSON constant {c}")

    return json.loads(line, parse_constant=refuse)


def _copy(scorer_dir, tmp_path):
    return shutil.copytree(scorer_dir, tmp_path / "copy")


def _edit_config(d, fn):
    cfg = json.loads((d / "config.json").read_text())
    fn(cfg)
    (d / "config.json").write_text(json.dumps(cfg))


def _truncate_weights(d):
    w = d / "model.safetensors"
    w.write_bytes(w.read_bytes()[:100])


def _other_head(d):
    t = load_file(str(d / "model.safetensors"))
    t["mlp.net.0.weight"] = t["mlp.net.0.weight"][:, :5].contiguous()
    save_file(t, str(d / "model.safetensors"))


BROKEN = {
    "missing directory": (lambda d, tmp: tmp / "nope", "no such scorer directory"),
    "video as scorer": (None, "is a file, not a scorer directory"),
    "no config": (lambda d, tmp: ((d / "config.json").unlink(), d)[1], "no config.json"),
    "config not json": (lambda d, tmp: ((d / "config.json").write_text("{oops"), d)[1], "config.json: not valid JSON"),
    "config past the JSON digit limit": (
        lambda d, tmp: ((d / "config.json").write_text('{"format": ' + "9" * 5000 + "}"), d)[1],
        "config.json: not valid JSON here (an integer of more than",
    ),
    "truncated weights": (lambda d, tmp: _truncate_weights(d) or d, "model.safetensors: not a readable safetensors"),
    "weights of another head": (lambda d, tmp: _other_head(d) or d, "model.safetensors: weights do not fit"),
    "encoder renamed": (
        lambda d, tmp: _edit_config(d, lambda c: c["encoder"].update(name="effnet")) or d,
        "encoder 'effnet' is not in this phyprobe's registry",
    ),
    "fingerprint mismatch": (
        lambda d, tmp: _edit_config(d, lambda c: c["encoder"]["kwargs"].update(image_size=64)) or d,
        "fingerprint",
    ),
    "unknown option": (
        lambda d, tmp: _edit_config(d, lambda c: c["encoder"]["kwargs"].update(colour=1)) or d,
        "rejects the options",
    ),
    "missing field": (
        lambda d, tmp: _edit_config(d, lambda c: c["head"].pop("hidden")) or d,
        "missing field 'head.hidden'",
    ),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_broken_scorer_is_one_line_naming_the_file(case, scorer_dir, videos, tmp_path, capsys):
    make, expect = BROKEN[case]
    target = videos[0][0] if make is None else make(_copy(scorer_dir, tmp_path), tmp_path)
    rc, out, err = run(capsys, target, videos[0][0])
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("phyprobe: error: ") and "Traceback" not in err
    assert expect in err and str(target) in err


@pytest.mark.parametrize(
    "flag, value",
    [("--batch-size", "0"), ("--batch-size", "x"), ("--workers", "-1"), ("--devices", "0"), ("--format", "xml")],
)
def test_invalid_option_values_are_refused(flag, value, scorer_dir, videos, capsys):
    with pytest.raises(SystemExit) as e:
        main(["score", str(scorer_dir), str(videos[0][0]), flag, value])
    assert e.value.code == 2 and flag in capsys.readouterr().err


def test_non_finite_head_output_is_a_per_video_error_never_nan(scorer_dir, videos, tmp_path, capsys):
    d = _copy(scorer_dir, tmp_path)
    t = load_file(str(d / "model.safetensors"))
    t["mlp.net.6.bias"] = t["mlp.net.6.bias"] * float("nan")
    save_file(t, str(d / "model.safetensors"))
    good, junk = videos
    rc, out, err = run(capsys, d, good[0], junk, good[1], "--json")
    rows = [strict_json(line) for line in out.splitlines()]
    assert rc == 1 and [r["video"] for r in rows] == [str(good[0]), str(junk), str(good[1])]
    assert all("score" not in r and r["error"] for r in rows)
    assert "non-finite score" in rows[0]["error"] and err.count("error: ") == 3


def test_unreadable_videos_are_named_and_the_others_still_scored(scorer_dir, videos, tmp_path, capsys):
    good, junk = videos
    rc, out, err = run(capsys, scorer_dir, junk, good[0], tmp_path / "missing.mp4", good[1], "--json")
    rows = [strict_json(line) for line in out.splitlines()]
    assert rc == 1 and len(rows) == 4
    assert [("score" in r) for r in rows] == [False, True, False, True]
    assert all(0.0 <= r["score"] <= 1.0 for r in rows if "score" in r)
    assert "junk.mp4" in err and "missing.mp4: file does not exist" in err


def test_inputs_that_name_no_videos_are_refused(scorer_dir, tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    rc, _, err = run(capsys, scorer_dir, tmp_path / "empty")
    assert rc == 2 and "no videos" in err and str(tmp_path / "empty") in err
    rc, _, err = run(capsys, scorer_dir, str(tmp_path / "*.mp4"))
    assert rc == 2 and "matches no files" in err
