"""The bad-input corpus (phyprobe.testing.bad_inputs) through every command.

Each input ends used correctly or with one line ``phyprobe: error: <file>: <reason>``, a non-zero
exit where anything failed, the other inputs still handled, and no traceback unless asked for.
Most cases run in-process through the same entry functions the commands call (``phyprobe.cli.main``,
``train``/``run_eval`` inside ``report_user_errors``); one real subprocess per command checks the
process-level behaviour (exit code, stderr) end to end.
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import run_cli

from phyprobe.errors import report_user_errors
from phyprobe.io.video import ClipSpec, VideoDecodeError, decode_clip
from phyprobe.testing.bad_inputs import EXTRACT_OPTION_CASES, csv_cases, manifest_cases, video_cases, video_manifest

REPO = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": f"{REPO / 'src'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
ERROR_LINE = re.compile(r"^phyprobe: error: (?P<rest>.+)$")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("corpus")
    return root, video_cases(root / "videos")


def _by_name(cases):
    return {c.name: c for c in cases}


def test_every_video_case_decodes_or_is_rejected_with_its_reason(corpus, caplog):
    _, cases = corpus
    for c in cases:
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="phyprobe.io.video"):
            try:
                clip = decode_clip(c.path, ClipSpec(4), fit=(32, 32))
            except VideoDecodeError as e:
                assert c.expect in ("error", "either"), f"{c.name}: rejected: {e}"
                assert str(e).startswith(f"{c.path}: ") and re.search(c.reason, e.reason), f"{c.name}: {e}"
                continue
        assert c.expect in ("ok", "warn", "either"), f"{c.name}: decoded, expected {c.expect} ({c.reason})"
        assert clip.frames.shape[0] == 4 and clip.frames.dtype == np.uint8
        warned = [r.getMessage() for r in caplog.records]
        if c.expect == "warn":
            assert any(re.search(c.reason, w) for w in warned), (c.name, warned)
        if c.expect == "ok":
            assert not warned and clip.decoded_share == 1.0, (c.name, warned)


def test_rotated_videos_come_out_upright(corpus):
    """A phone video (landscape frames + display matrix) decodes to the frames of the same clip
    stored upright: portrait size, the white marker in the top-left corner."""
    _, cases = corpus
    for c in cases:
        if "same_as" not in c.extra:
            continue
        got = decode_clip(c.path, ClipSpec(4)).frames.astype(float)
        want = decode_clip(c.extra["same_as"], ClipSpec(4)).frames.astype(float)
        assert got.shape == want.shape == (4, 64, 48, 3), c.name
        assert np.abs(got - want).mean() < 4.0, c.name  # equal up to compression
        assert got[:, :8, :8].mean() > 200 and got[:, -8:, -8:].mean() < 100, c.name


def test_decoding_a_large_frame_converts_it_small(tmp_path):
    """With the encoder's box given, a 640x480 clip comes out reduced to twice the box, not at full size."""
    from phyprobe.testing.bad_inputs import write_raw_mp4

    p = write_raw_mp4(tmp_path / "big.mp4", np.full((4, 480, 640, 3), 100, np.uint8))
    assert decode_clip(p, ClipSpec(2)).frames.shape == (2, 480, 640, 3)
    assert decode_clip(p, ClipSpec(2), fit=(32, 32)).frames.shape == (2, 64, 85, 3)
    assert decode_clip(p, ClipSpec(2), fit=(400, 400)).frames.shape == (2, 480, 640, 3)  # never up


def _error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("phyprobe: error: ")]


def test_extract_over_the_video_corpus(corpus):
    """One manifest of every video case: exit 1, one error line per bad file naming it and the
    reason, every usable video cached, no traceback."""
    root, cases = corpus
    m = video_manifest(root / "vm", cases)
    cmd = [
        sys.executable,
        "-m",
        "phyprobe.cli",
        "extract",
        str(m),
        "--image-size",
        "32",
        "--num-frames",
        "4",
        "--cache",
        str(root / "cache"),
        "--workers",
        "0",
        "--shard-size",
        "4",
    ]
    r = subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=600)
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
    assert r.returncode == 1, r.stderr[-3000:]
    lines = _error_lines(r.stderr)
    bad = [c for c in cases if c.expect == "error"]
    for c in bad:
        mine = [line for line in lines if line.startswith(f"phyprobe: error: {c.path}: ")]
        assert len(mine) == 1 and re.search(c.reason, mine[0]), (c.name, lines)
    n_ok = sum(c.expect in ("ok", "warn") for c in cases)
    done = int(re.search(r"videos: (\d+) of", r.stdout).group(1))
    assert n_ok <= done <= n_ok + sum(c.expect == "either" for c in cases), r.stdout


@pytest.fixture(scope="module")
def scorer_dir(tmp_path_factory):
    """An exported scorer: random-init EfficientNet-Lite0 at 32 px and a random head (fast to build)."""
    from phyprobe.encoders import from_config
    from phyprobe.head import PhyProbeHead
    from phyprobe.scorer import export_scorer

    enc = from_config("efficientnet_lite0", image_size=32, weights=None)
    torch.manual_seed(0)
    head = PhyProbeHead(enc.feature_dim, stats=("mean", "std", "max"), hidden=16)
    out = tmp_path_factory.mktemp("scorer")
    return export_scorer(
        out,
        enc,
        head,
        ClipSpec(4),
        "float16",
        {"feature_dim": enc.feature_dim, "stats": ["mean", "std", "max"], "hidden": 16, "dropout": 0.0},
    )


def test_score_over_the_video_corpus(corpus, scorer_dir):
    """Every video in one `phyprobe score --json` run: valid JSON per input, scores in [0, 1] for the
    usable ones (rotated = upright clip), an error naming the file for the rest, exit 1."""
    _, cases = corpus
    cmd = [sys.executable, "-m", "phyprobe.cli", "score", str(scorer_dir), *[str(c.path) for c in cases], "--json"]
    r = subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=600)
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
    assert r.returncode == 1
    rows = {Path(d["video"]): d for d in map(json.loads, r.stdout.splitlines())}
    for c in cases:
        d = rows[c.path]
        if c.expect in ("ok", "warn"):
            assert "score" in d and 0.0 <= d["score"] <= 1.0 and np.isfinite(d["raw_score"]), (c.name, d)
        elif c.expect == "error":
            assert "error" in d and re.search(c.reason, d["error"]), (c.name, d)
            assert any(str(c.path) in line for line in r.stderr.splitlines()), c.name
    for c in cases:
        if "same_as" in c.extra:
            assert rows[c.path]["raw_score"] == pytest.approx(rows[c.extra["same_as"]]["raw_score"], abs=0.02), c.name


@pytest.fixture(scope="module")
def bad_manifests(corpus, tmp_path_factory):
    _, cases = corpus
    good = _by_name(cases)["good video"].path
    return manifest_cases(tmp_path_factory.mktemp("manifests"), good)


def test_every_bad_manifest_through_extract(bad_manifests, tmp_path, capsys):
    for c in bad_manifests:
        code, _, err = run_cli(["extract", str(c.path), "--image-size", "32", "--cache", str(tmp_path)], capsys)
        lines = _error_lines(err)
        assert code == 2 and len(lines) == 1, (c.name, err)
        assert ERROR_LINE.match(lines[0]) and re.search(c.reason, lines[0]), (c.name, lines[0])


def test_every_bad_manifest_through_train(bad_manifests, tmp_path, capsys):
    from phyprobe.testing.configs import TOY, compose_train
    from phyprobe.training.pipeline import train

    for c in bad_manifests:
        cfg = compose_train(
            tmp_path / "run",
            [
                *TOY,
                "data=manifest",
                f"data.source.path={c.path}",
                f"paths.cache_dir={tmp_path / 'cache'}",
                "backbone=efficientnet_lite0",
                "backbone.weights=null",
            ],
        )
        with pytest.raises(SystemExit) as e, report_user_errors(debug=False):
            train(cfg)
        lines = _error_lines(capsys.readouterr().err)
        assert e.value.code == 2 and len(lines) == 1, (c.name, lines)
        assert ERROR_LINE.match(lines[0]) and re.search(c.reason, lines[0]), (c.name, lines[0])


def test_every_bad_csv_through_eval(toy_manifest, tmp_path, capsys):
    from phyprobe.data.manifest import Manifest
    from phyprobe.eval.run import run_eval
    from phyprobe.testing.configs import compose_eval

    ids = list(Manifest.load(toy_manifest).split("test").videos["id"])
    for c in csv_cases(tmp_path / "csv", ids):
        cfg = compose_eval(
            tmp_path / "out",
            [
                "benchmark=world_test",
                f"benchmark.manifest={toy_manifest}",
                "benchmark.where.source=toy",
                f"scores_csv={c.path}",
                *([f"scores_format={c.extra['format']}"] if "format" in c.extra else []),
                "report=false",
                "n_boot=0",
            ],
        )
        if c.expect == "ok":
            res = run_eval(cfg)
            assert res["results"]["world"]["same_scene_accuracy"]["n"] > 0, c.name
            continue
        with pytest.raises(SystemExit) as e, report_user_errors(debug=False):
            run_eval(cfg)
        lines = _error_lines(capsys.readouterr().err)
        assert e.value.code == 2 and len(lines) == 1, (c.name, lines)
        assert lines[0].startswith(f"phyprobe: error: {c.path}") and re.search(c.reason, lines[0]), (c.name, lines[0])


@pytest.mark.parametrize("argv,reason", EXTRACT_OPTION_CASES)
def test_bad_extract_options_are_one_line_errors(toy_manifest, tmp_path, capsys, argv, reason):
    code, _, err = run_cli(["extract", str(toy_manifest), "--cache", str(tmp_path), *argv], capsys)
    assert code == 2 and re.search(reason, err) and "Traceback" not in err, err


def test_debug_shows_the_traceback(tmp_path):
    missing = tmp_path / "nowhere"
    plain = subprocess.run(
        [sys.executable, "-m", "phyprobe.cli", "extract", str(missing)],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=300,
    )
    assert plain.returncode == 2 and "Traceback" not in plain.stderr
    assert plain.stderr.strip() == f"phyprobe: error: {missing / 'videos.jsonl'}: manifest table not found"
    debug = subprocess.run(
        [sys.executable, "-m", "phyprobe.cli", "--debug", "extract", str(missing)],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=300,
    )
    assert debug.returncode != 0 and "Traceback" in debug.stderr and "ManifestError" in debug.stderr


def test_train_and_eval_scripts_report_user_errors_in_one_line(tmp_path, corpus, toy_manifest):
    """The Hydra entry points themselves, as a user runs them."""
    root, cases = corpus
    bad = manifest_cases(tmp_path / "m", _by_name(cases)["good video"].path)[0]  # no videos.jsonl
    r = subprocess.run(
        [
            sys.executable,
            "train.py",
            "data=manifest",
            f"data.source.path={bad.path}",
            "backbone=efficientnet_lite0",
            "backbone.weights=null",
            f"hydra.run.dir={tmp_path / 'run'}",
        ],
        capture_output=True,
        text=True,
        env=ENV,
        cwd=REPO,
        timeout=300,
    )
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert _error_lines(r.stderr) == [f"phyprobe: error: {bad.path / 'videos.jsonl'}: manifest table not found"]
    (tmp_path / "latin1.csv").write_bytes("video,score\ncaf\xe9,1\n".encode("latin-1"))
    r = subprocess.run(
        [
            sys.executable,
            "eval.py",
            f"scores_csv={tmp_path / 'latin1.csv'}",
            f"benchmark.manifest={toy_manifest}",
            f"hydra.run.dir={tmp_path / 'eval'}",
        ],
        capture_output=True,
        text=True,
        env=ENV,
        cwd=REPO,
        timeout=300,
    )
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert len(_error_lines(r.stderr)) == 1 and str(tmp_path / "latin1.csv") in r.stderr


# --- the exported scorer's own inputs (loading, batch size, non-finite heads) ---


def _broken_scorers(scorer_dir: Path, root: Path, corpus_cases) -> dict[str, tuple[list[str], str]]:
    import shutil

    out = {}
    out["missing scorer directory"] = ([str(root / "no_scorer")], "no_scorer")
    out["video passed as the scorer"] = ([str(_by_name(corpus_cases)["good video"].path)], "good.mp4")
    broken = root / "broken_weights"
    shutil.copytree(scorer_dir, broken)
    (broken / "model.safetensors").write_bytes(b"\x00" * 100)
    out["broken model.safetensors"] = ([str(broken)], "model.safetensors")
    renamed = root / "renamed_encoder"
    shutil.copytree(scorer_dir, renamed)
    cfg = json.loads((renamed / "config.json").read_text())
    cfg["encoder"]["name"] = "efficientnet_lite9"
    (renamed / "config.json").write_text(json.dumps(cfg))
    out["encoder name changed"] = ([str(renamed)], "config.json")
    bad_json = root / "bad_json"
    shutil.copytree(scorer_dir, bad_json)
    (bad_json / "config.json").write_text("{not json")
    out["config.json not JSON"] = ([str(bad_json)], "config.json")
    return out


@pytest.mark.parametrize(
    "case",
    [
        "missing scorer directory",
        "video passed as the scorer",
        "broken model.safetensors",
        "encoder name changed",
        "config.json not JSON",
    ],
)
def test_broken_scorers_are_one_line_errors(scorer_dir, corpus, tmp_path, capsys, case):
    argv, names = _broken_scorers(scorer_dir, tmp_path, corpus[1])[case]
    good = str(_by_name(corpus[1])["good video"].path)
    code, _, err = run_cli(["score", *argv, good], capsys)
    lines = _error_lines(err)
    assert code not in (0, None) and len(lines) == 1 and ERROR_LINE.match(lines[0]) and names in lines[0], err


def test_score_batch_size_0_is_refused(scorer_dir, corpus, capsys):
    code, _, err = run_cli(["score", str(scorer_dir), str(corpus[1][0].path), "--batch-size", "0"], capsys)
    assert code == 2 and "batch-size" in err and "Traceback" not in err


def test_non_finite_head_never_prints_a_non_finite_score(scorer_dir, corpus, tmp_path, capsys):
    import shutil

    from safetensors.torch import load_file, save_file

    nan = tmp_path / "nan_head"
    shutil.copytree(scorer_dir, nan)
    w = load_file(str(nan / "model.safetensors"))
    w = {k: torch.full_like(v, float("nan")) if v.is_floating_point() else v for k, v in w.items()}
    save_file(w, str(nan / "model.safetensors"))
    code, out, _ = run_cli(["score", str(nan), str(corpus[1][0].path), "--json"], capsys)
    for line in out.splitlines():
        d = json.loads(line, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))
        assert "score" not in d or 0.0 <= d["score"] <= 1.0
    assert code != 0


# --- every class of the bench, a sample: the runners bench/bad_inputs.py counts with ---


@pytest.fixture(scope="module")
def setting(tmp_path_factory, scorer_dir, corpus, toy_manifest):
    from phyprobe.testing.bad_inputs import Setting

    good = _by_name(corpus[1])["good video"].path
    return Setting(tmp_path_factory.mktemp("setting"), scorer_dir, good, toy_manifest, quick=True)


def _all_clean(outcomes, n: int) -> None:
    assert len(outcomes) == n, [o.case for o in outcomes]
    bad = [(o.cls, o.case, o.outcome, o.code, o.altered, o.detail[-800:]) for o in outcomes if not o.clean]
    assert not bad, bad


def test_a_sample_of_each_class_is_clean(setting, corpus):
    """A few cases of each class through the runners bench/bad_inputs.py counts with: a cut that must warn, one bad
    file among good ones, --out hazards (a FIFO, a full disk), tampered scorers, training sets, the service and the
    judge client; the full set is the bench's."""
    from phyprobe.testing import bad_inputs as bi

    cut = [c for c in bi.format_cases(setting.root / "formats") if c.name.endswith("cut at a fragment boundary")]
    _all_clean(bi.video_runs(setting, "format", cut[-1:]), 2)
    video = [c for c in corpus[1] if c.name in ("mp4 truncated at 30%", "zero-byte file")]
    _all_clean(bi.batch_runs(setting, video), 3)
    _all_clean(bi.out_runs(setting, {"--out a FIFO", "--out /dev/zero", "--out on a full disk (ENOSPC)"}), 3)
    _all_clean(bi.scorer_runs(setting, {"config.json nests 100000 lists", "a pickle renamed model.safetensors"}), 2)
    _all_clean(bi.training_runs(setting, {"every label 0.5 (no informative pair)", "metadata nested 100000 deep"}), 2)
    _all_clean(bi.service_runs(setting, {"JSON path with a NUL byte", "upload over the size limit (chunked)"}), 2)
    _all_clean(bi.judge_runs(setting, {"401 for the API key", "replies nesting deeply or with a 5000-digit score"}), 2)
    _all_clean(bi.input_runs(setting), len(bi.input_cases(setting.root / "count", setting.good)))


def test_json_past_the_readers_limits_is_a_users_error_everywhere(tmp_path, toy_manifest):
    """100000 nested lists and a 5000-digit integer make json.loads raise RecursionError and a plain ValueError: a
    manifest, an evaluator's JSON scores and a judge's reply each turn them into their own one-line error."""
    from phyprobe.data.manifest import Manifest, ManifestError
    from phyprobe.eval.external import ExternalScoresError, read_external_scores
    from phyprobe.judges.parsing import ReplyError, first_json_object

    deep, digits = "[" * 100_000 + "]" * 100_000, "9" * 5000
    m = tmp_path / "m"
    m.mkdir()
    row = {"id": "a", "path": "a.mp4", "source": "s", "is_real": False, "magnitude": 0.5}
    (m / "videos.jsonl").write_text(json.dumps(row).replace("0.5", digits) + "\n")
    with pytest.raises(
        ManifestError, match=r"videos\.jsonl:1: not valid JSON here \(an integer of more than \d+ digits"
    ):
        Manifest.load(m)
    manifest = Manifest.load(toy_manifest)
    vid = manifest.videos["id"].iloc[0]
    for text, reason in [
        (f'[{{"video_name": "{vid}", "p_score_model": {deep}}}]', r"nested too deeply"),
        (f'{{"video_name": "{vid}", "p_score_model": 3}}\n{deep}\n', r"nested too deeply"),
        (f'[{{"video_name": "{vid}", "p_score_model": {digits}}}]', r"an integer of more than \d+ digits"),
    ]:
        (tmp_path / "vs2.json").write_text(text)
        with pytest.raises(ExternalScoresError, match=rf"vs2\.json: not valid JSON here \({reason}"):
            read_external_scores(tmp_path / "vs2.json", manifest, fmt="videoscore2")
    for reply, reason in [('{"score": ' + deep + "}", "nested too deeply"), ('{"score": ' + digits + "}", "digits")]:
        with pytest.raises(ReplyError, match=reason):
            first_json_object(reply)
