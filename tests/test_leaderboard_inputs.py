"""The leaderboard's inputs and figures without a scorer: folders, manifests, checkpoints, missing prompts, group
breakdowns, the checkpoint gate, and a one-line error naming the file for every bad input."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from phyprobe.cli import main as cli
from phyprobe.io.video import write_video
from phyprobe.leaderboard import build_leaderboard, csv_column, read_generations
from phyprobe.testing.videos import moving_square


@pytest.fixture(scope="module")
def clip(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("clip") / "square.mp4"
    write_video(path, moving_square(8, 32, 32, 2.0, 1.5), fps=8)
    return path


def _folder(root: Path, clip: Path, layout: dict[str, list[str]]) -> Path:
    """``layout``: generator (or generator/checkpoint) -> prompt ids; every video a copy of one real mp4."""
    for gen, prompts in layout.items():
        for p in prompts:
            dst = root / gen / f"{p}.mp4"
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(clip, dst)
    return root


def _scores(path: Path, rows: dict[str, float]) -> Path:
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["video", "score"])
        w.writerows(rows.items())
    return path


def _error(capsys, argv) -> str:
    with pytest.raises(SystemExit) as e:
        cli(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("phyprobe: error: "), err
    return err


def test_missing_prompts_are_reported_and_left_out_of_the_comparisons(tmp_path, clip):
    gens = read_generations(_folder(tmp_path / "g", clip, {"a": ["p1", "p2", "p3"], "b": ["p1", "p2"]}))
    col = csv_column(
        "ext",
        _scores(
            tmp_path / "s.csv",
            {
                f"{g}/{p}": v
                for g, p, v in [
                    ("a", "p1", 0.1),
                    ("a", "p2", 0.2),
                    ("a", "p3", 0.9),
                    ("b", "p1", 0.3),
                    ("b", "p2", 0.4),
                ]
            },
        ),
        gens,
    )
    ev = build_leaderboard(gens, [col], n_boot=200)["evaluators"]["ext"]
    assert ev["shared_prompts"] == 2
    assert ev["coverage"]["b"] == {"prompts": 2, "missing": 1, "missing_prompts": {"p3": "no video"}}
    means = {s["system"]: s["mean"] for s in ev["stats"]["systems"]}
    assert means == pytest.approx({"a": 0.15, "b": 0.35})  # p3's 0.9 is never averaged in


def test_breakdowns_use_only_their_group(tmp_path, clip):
    """a is better on the easy prompts, b on the hard ones: each group's table says so, the overall one is a tie."""
    prompts = [f"p{i}" for i in range(8)]
    root = _folder(tmp_path / "g", clip, {"a": prompts, "b": prompts})
    (tmp_path / "prompts.csv").write_text(
        "prompt_id,difficulty\n" + "".join(f"p{i},{'easy' if i < 4 else 'hard'}\n" for i in range(8))
    )
    gens = read_generations(root, tmp_path / "prompts.csv")
    rows = {f"a/p{i}": (0.1 if i < 4 else 0.9) for i in range(8)} | {
        f"b/p{i}": (0.9 if i < 4 else 0.1) for i in range(8)
    }
    board = build_leaderboard(gens, [csv_column("ext", _scores(tmp_path / "s.csv", rows), gens)], n_boot=200)
    assert board["groups"] == ["difficulty"]
    per = board["evaluators"]["ext"]["breakdowns"]["difficulty"]
    first = {v: per[v]["systems"][0]["system"] for v in per}
    assert first == {"easy": "a", "hard": "b"} and {v: per[v]["prompts"] for v in per} == {"easy": 4, "hard": 4}
    wins = board["evaluators"]["ext"]["stats"]["win_matrix"]
    assert wins["a"]["b"] == 0.5


def test_manifest_with_checkpoints_and_the_checkpoint_gate(tmp_path, clip, capsys):
    """A generator's checkpoints from a manifest (steps from the field), ``--baseline @CHECKPOINT``: the last checkpoint
    against that one, exit 1 when it regressed, 0 when it improved."""
    rows = []
    scores = {}
    rng = np.random.default_rng(0)
    for step, shift in ((1000, 0.0), (2000, 0.3)):
        for i in range(12):
            rows.append(
                {
                    "generator": "g",
                    "checkpoint": f"ckpt{step}",
                    "step": step,
                    "prompt_id": f"p{i}",
                    "video": str(clip),
                    "task": "fall" if i % 2 else "roll",
                }
            )
            scores[f"g/ckpt{step}/p{i}"] = 0.2 + shift + 0.05 * rng.random()
    manifest = tmp_path / "gens.jsonl"
    manifest.write_text("".join(json.dumps(r) + "\n" for r in rows))
    _scores(tmp_path / "worse.csv", scores)
    base = [
        "leaderboard",
        str(manifest),
        "--out",
        str(tmp_path / "out"),
        "--n-boot",
        "500",
        "--baseline",
        "@ckpt1000",
    ]
    assert cli([*base, "--scores", f"ext={tmp_path / 'worse.csv'}"]) == 1
    assert "regression: ext g@ckpt2000 vs g@ckpt1000" in capsys.readouterr().err
    board = json.loads((tmp_path / "out" / "leaderboard.json").read_text())
    assert board["checkpoints"]["g"] == [
        {"entry": "g@ckpt1000", "checkpoint": "ckpt1000", "step": 1000.0},
        {"entry": "g@ckpt2000", "checkpoint": "ckpt2000", "step": 2000.0},
    ]
    assert board["groups"] == ["task"]
    assert (tmp_path / "out" / "checkpoints_ext.png").stat().st_size > 1000
    assert cli([*base, "--scores", f"ext={tmp_path / 'worse.csv'}", "--higher-is-better", "ext"]) == 0
    assert (tmp_path / "out" / "leaderboard.md").read_text().count("| ext | g@ckpt2000 | g@ckpt1000 |") == 1


def test_checkpoint_folders(tmp_path, clip):
    root = _folder(
        tmp_path / "g", clip, {"gen/step_100": ["p1", "p2"], "gen/step_200": ["p1", "p2"], "other": ["p1", "p2"]}
    )
    gens = read_generations(root)
    assert sorted(gens["entry"].unique()) == ["gen@step_100", "gen@step_200", "other"]
    assert set(gens.loc[gens["generator"] == "gen", "step"]) == {100.0, 200.0}


def test_bad_inputs_end_in_one_line_naming_the_file(tmp_path, clip, capsys):
    out = ["--out", str(tmp_path / "out")]
    root = _folder(tmp_path / "g", clip, {"a": ["p1"], "b": ["p1"]})
    (root / "empty").mkdir()
    assert f"{root / 'empty'}: no videos" in _error(capsys, ["leaderboard", str(root), *out, "--scores", "x=y.csv"])
    shutil.rmtree(root / "empty")

    shutil.copyfile(clip, root / "a" / "p1.webm")
    assert "duplicate prompt id 'p1' for generator 'a'" in _error(
        capsys, ["leaderboard", str(root), *out, "--scores", "x=y.csv"]
    )
    (root / "a" / "p1.webm").unlink()

    m = tmp_path / "m.jsonl"
    m.write_text(
        json.dumps({"generator": "a", "prompt_id": "p1", "video": str(clip)})
        + "\n"
        + json.dumps({"prompt_id": "p2", "video": str(clip)})
        + "\n"
    )
    assert f"{m}:2: no 'generator' in this row" in _error(capsys, ["leaderboard", str(m), *out, "--scores", "x=y.csv"])

    m.write_text("generator,prompt_id,video\na,p1,v.mp4\na,p1,w.mp4\n")
    m = m.rename(tmp_path / "m.csv")
    assert f"{m}:3: duplicate prompt id 'p1'" in _error(capsys, ["leaderboard", str(m), *out, "--scores", "x=y.csv"])

    judged = tmp_path / "judge"
    judged.mkdir()
    (judged / "judgements.jsonl").write_text(
        json.dumps({"id": "a/p1", "path": "x", "score": 4.0, "dimensions": {}})
        + "\n"
        + json.dumps({"id": "c/p9", "path": "/elsewhere/p9.mp4", "score": 3.0})
        + "\n"
    )
    err = _error(capsys, ["leaderboard", str(root), *out, "--judge", str(judged)])
    assert f"{judged / 'judgements.jsonl'}:2: video '/elsewhere/p9.mp4' is not among the generations" in err

    bad = _scores(tmp_path / "bad.csv", {"a/p1": 0.1, "z/p1": 0.2})
    assert f"{bad}:3: video 'z/p1' is not among the generations" in _error(
        capsys, ["leaderboard", str(root), *out, "--scores", f"x={bad}"]
    )
    assert "no evaluator given" in _error(capsys, ["leaderboard", str(root), *out])
    assert f"{tmp_path / 'nope'}: no such folder or manifest" in _error(
        capsys, ["leaderboard", str(tmp_path / "nope"), *out, "--scores", f"x={bad}"]
    )
    good = _scores(tmp_path / "good.csv", {"a/p1": 0.1, "b/p1": 0.2})
    assert "not a baseline leaderboard.json" in _error(
        capsys, ["leaderboard", str(root), *out, "--scores", f"x={good}", "--baseline", str(good)]
    )


def test_generators_in_different_encodings_are_named_in_a_warning(tmp_path, clip, capsys):
    """One generator's videos as H.264, the other's as Motion JPEG (real encodes), and one file that is no video:
    the board lists each entry's encodings and bits per pixel, warns on stderr and in leaderboard.md naming both
    encodings, and counts the bad file as unreadable, not as a third encoding. The same videos in one encoding give
    no warning."""
    from phyprobe.io.codecs import Encoding, encode

    frames = moving_square(8, 32, 32, 2.0, 1.5)
    root = _folder(tmp_path / "g", clip, {"a": ["p1", "p2"]})
    (root / "b").mkdir()
    mjpeg = Encoding("mjpeg", "mjpeg", "avi", "avi", "yuvj420p")
    for p in ("p1", "p2"):
        encode(frames, 8, mjpeg, root / "b" / f"{p}.avi")
    (root / "a" / "p3.mp4").write_bytes(b"not a video")
    scores = _scores(tmp_path / "s.csv", {"a/p1": 0.1, "a/p2": 0.2, "b/p1": 0.3, "b/p2": 0.4})
    out = tmp_path / "out"
    argv = ["leaderboard", str(root), "--out", str(out), "--scores", f"x={scores}", "--n-boot", "200", "--no-plots"]
    assert cli(argv) == 0
    err = capsys.readouterr().err
    warning = next(line for line in err.splitlines() if line.startswith("warning: "))
    assert "2 encodings" in warning and "a: h264 yuv420p (2)" in warning and "b: mjpeg yuvj420p (2)" in warning
    enc = json.loads((out / "leaderboard.json").read_text())["encodings"]
    assert enc["mixed"] and enc["entries"]["a"]["encodings"] == {"h264 yuv420p": 2, "unreadable": 1}
    assert enc["entries"]["b"]["bits_per_pixel"] > enc["entries"]["a"]["bits_per_pixel"] > 0  # intra-only costs more
    md = (out / "leaderboard.md").read_text()
    assert "**Warning:** the videos come in 2 encodings" in md and "| b | mjpeg yuvj420p (2) |" in md

    shutil.rmtree(root / "b")
    _folder(root, clip, {"b": ["p1", "p2"]})
    assert cli([*argv[:3], str(tmp_path / "out2"), *argv[4:]]) == 0
    assert "warning" not in capsys.readouterr().err
    assert not json.loads((tmp_path / "out2" / "leaderboard.json").read_text())["encodings"]["mixed"]


def _tampered(base: dict, case: str) -> str:
    """A baseline leaderboard.json changed by hand as ``case`` says."""
    import copy

    d = copy.deepcopy(base)
    per_prompt = d["evaluators"]["x"]["per_prompt"]
    if case == "a score as a string":
        per_prompt["a"]["p1"] = str(per_prompt["a"]["p1"])
    elif case == "a score past any statistic's range":
        per_prompt["a"]["p1"] = -1e308
    elif case == "per_prompt a list":
        d["evaluators"]["x"]["per_prompt"] = [1, 2]
    elif case == "an evaluator a string":
        d["evaluators"]["x"] = "ext"
    text = json.dumps(d)
    if case == "NaN":
        text = json.dumps(d).replace(json.dumps(per_prompt["a"]["p1"]), "NaN", 1)
    if case == "nested 100,000 deep":
        text = "[" * 100_000 + "]" * 100_000
    return text


@pytest.mark.parametrize(
    "case",
    [
        "a score as a string",
        "a score past any statistic's range",
        "per_prompt a list",
        "an evaluator a string",
        "NaN",
        "nested 100,000 deep",
    ],
)
def test_a_tampered_baseline_is_one_line_naming_the_file(tmp_path, clip, capsys, case):
    root = _folder(tmp_path / "g", clip, {"a": ["p1", "p2"], "b": ["p1", "p2"]})
    scores = _scores(tmp_path / "s.csv", {"a/p1": 0.1, "a/p2": 0.2, "b/p1": 0.3, "b/p2": 0.4})
    assert cli(["leaderboard", str(root), "--out", str(tmp_path / "base"), "--scores", f"x={scores}"]) == 0
    base = json.loads((tmp_path / "base" / "leaderboard.json").read_text())
    bad = tmp_path / "bad.json"
    bad.write_text(_tampered(base, case))
    argv = ["leaderboard", str(root), "--out", str(tmp_path / "out"), "--scores", f"x={scores}", "--baseline"]
    assert f"{bad}: " in _error(capsys, [*argv, str(bad)])
    assert "/dev/zero: not a regular file" in _error(capsys, [*argv, "/dev/zero"])


def test_judge_scores_and_csv_scores_past_the_statistics_range_are_refused(tmp_path, clip, capsys):
    root = _folder(tmp_path / "g", clip, {"a": ["p1"], "b": ["p1"]})
    out = ["--out", str(tmp_path / "out")]
    judged = tmp_path / "judge"
    judged.mkdir()
    (judged / "judgements.jsonl").write_text(
        json.dumps({"id": "a/p1", "score": float("inf")}) + "\n" + json.dumps({"id": "b/p1", "score": 3.0}) + "\n"
    )
    err = _error(capsys, ["leaderboard", str(root), *out, "--judge", str(judged)])
    assert f"{judged / 'judgements.jsonl'}:1: score: inf is not a finite number" in err
    huge = _scores(tmp_path / "huge.csv", {"a/p1": 1e308, "b/p1": 0.5})
    assert f"{huge}:2: score '1e+308' is not a finite number" in _error(
        capsys, ["leaderboard", str(root), *out, "--scores", f"x={huge}"]
    )


def test_two_leaderboards_into_one_out_never_mix_their_rows(tmp_path, clip):
    """Two processes started at once into one --out: one writes the board (one row per video), the other is refused
    in one line at once, or waits for nothing and finds the folder its own (then it writes the same rows again,
    whole). Either way no video is listed twice; while a leaderboard holds the folder, another is refused."""
    import subprocess
    import sys

    from phyprobe.io.owned import one_writer

    root = _folder(tmp_path / "g", clip, {"a": ["p1", "p2"], "b": ["p1", "p2"]})
    scores = _scores(tmp_path / "s.csv", {"a/p1": 0.1, "a/p2": 0.2, "b/p1": 0.3, "b/p2": 0.4})
    out = tmp_path / "out"
    argv = [
        sys.executable,
        "-m",
        "phyprobe.cli",
        "leaderboard",
        str(root),
        "--out",
        str(out),
        "--scores",
        f"x={scores}",
    ]
    procs = [subprocess.Popen(argv, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    results = [(p.wait(timeout=300), p.stderr.read()) for p in procs]
    assert all(code == 0 or (code == 2 and "another leaderboard is writing" in err) for code, err in results), results
    assert any(code == 0 for code, _ in results)
    rows = [json.loads(line) for line in (out / "videos.jsonl").read_text().splitlines()]
    assert len(rows) == len({r["id"] for r in rows}) == 4
    table = list(csv.DictReader((out / "leaderboard.csv").read_text().splitlines()))
    assert len(table) == len({(r["evaluator"], r["group"], r["group_value"], r["entry"]) for r in table}) == 2
    with one_writer(out, "leaderboard"):  # held: a leaderboard started now is refused, and writes nothing
        before = {p: p.read_bytes() for p in out.iterdir() if p.is_file()}
        r = subprocess.run(argv, capture_output=True, text=True, timeout=300)
        assert r.returncode == 2 and r.stderr.strip() == (
            f"phyprobe: error: {out}: another leaderboard is writing into this folder; wait for it, or pass another --out"
        )
        assert {p: p.read_bytes() for p in out.iterdir() if p.is_file()} == before


@pytest.mark.parametrize("width", [3.5, 4.0, 8.0])
def test_a_long_evaluator_name_in_a_plot_title_stays_inside_the_picture(width):
    import matplotlib.pyplot as plt

    from phyprobe.leaderboard.report import _title

    fig, ax = plt.subplots(figsize=(width, 3.0))
    fig.colorbar(ax.imshow(np.eye(2)), ax=ax, shrink=0.8)
    _title(fig, ax, "a_rather_long_evaluator_name_of_a_judge_here: row − column (* Holm p < 0.05)")
    fig.tight_layout()
    fig.canvas.draw()
    box, inside = ax.title.get_window_extent(), fig.bbox
    plt.close(fig)
    assert box.x0 >= inside.x0 and box.x1 <= inside.x1 and box.y1 <= inside.y1, (box, inside)
