"""``phyprobe leaderboard`` end to end on "generators" made from a world build with known violation rates, ranked by
a demo-style scorer trained at toy size and by the vision tools (stand-in) as the quality proxy."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from test_experiments import toy_world_overrides

from phyprobe.cli import main as cli
from phyprobe.data.manifest import Manifest
from phyprobe.testing.configs import compose_train
from phyprobe.testing.generators import severe_twins, world_generators
from phyprobe.training.pipeline import train

QUALITY = "vision_tools (stand-in):imaging_quality"


@pytest.fixture(scope="module")
def board(tiny_world, tmp_path_factory):
    """The toy scorer, the generations, the scorer's own scores of every world clip, and the leaderboard run twice:
    with the scorer alone (which writes videos.jsonl), then with the vision tools judged on that manifest."""
    run = tmp_path_factory.mktemp("toy_run")
    train(compose_train(run, [*toy_world_overrides(tiny_world, tmp_path_factory.mktemp("cache")), "eval.report=false"]))
    root = tmp_path_factory.mktemp("lb")
    truth = world_generators(tiny_world, root / "gens")
    out = root / "out"
    base = ["leaderboard", str(root / "gens"), "--prompts", str(root / "gens" / "prompts.jsonl"), "--out", str(out)]
    fast = ["--n-boot", "2000", "--no-progress", "--no-plots"]
    assert cli([*base, "--scorer", str(run / "scorer"), *fast]) == 0
    assert cli(["judge", "run", "vision_tools", "--manifest", str(out), "--out", str(out / "judges" / "vt")]) == 0
    scores_file = out / "scores" / "phyprobe.jsonl"
    before = scores_file.read_bytes()
    args = [*base, "--scorer", str(run / "scorer"), "--judge", str(out / "judges" / "vt"), "--quality", QUALITY]
    assert cli([*args, "--n-boot", "2000", "--no-progress"]) == 0
    assert scores_file.read_bytes() == before, "a rerun scored again what the results file already answered"

    from phyprobe.scorer import Scorer

    world = Manifest.load(tiny_world)
    clips = sorted({c for per in truth.values() for c in per.values()})
    files = {c: world.video_path(p) for c, p in zip(world.videos["id"], world.videos["path"])}
    raw = Scorer.from_pretrained(run / "scorer").score_raw_many([files[c] for c in clips])
    own = dict(zip(clips, raw))
    return {
        "json": json.loads((out / "leaderboard.json").read_text()),
        "truth": truth,
        "own": own,
        "out": out,
        "args": args,
        "root": root,
        "scorer": run / "scorer",
        "files": files,
        "world": tiny_world,
    }


def test_known_truth_is_recovered(board):
    """Every figure is what the scorer's own scores of the world's clips give: the win of one generator over another
    is, prompt by prompt, half on the prompts where both answered with the same clip and the scorer's pairwise
    accuracy on the rest; the order by win rate is the order that accuracy implies."""
    truth, own = board["truth"], board["own"]
    ev = board["json"]["evaluators"]["phyprobe"]
    prompts = sorted(truth["plausible"])
    assert ev["shared_prompts"] == len(prompts) and all(c["missing"] == 0 for c in ev["coverage"].values())
    for g, per in truth.items():
        mean = next(s for s in ev["stats"]["systems"] if s["system"] == g)["mean"]
        assert mean == pytest.approx(np.mean([own[per[p]] for p in prompts]), abs=1e-4)
    expected = {}
    for a in truth:
        for b in truth:
            if a != b:
                same = [p for p in prompts if truth[a][p] == truth[b][p]]
                differ = [p for p in prompts if truth[a][p] != truth[b][p]]
                acc = (
                    np.mean(
                        [
                            1.0
                            if own[truth[a][p]] < own[truth[b][p]]
                            else 0.5
                            if own[truth[a][p]] == own[truth[b][p]]
                            else 0.0
                            for p in differ
                        ]
                    )
                    if differ
                    else 0.5
                )
                expected[a, b] = (0.5 * len(same) + acc * len(differ)) / len(prompts)
                assert ev["stats"]["win_matrix"][a][b] == pytest.approx(expected[a, b], abs=1e-3), (a, b)
    implied = sorted(truth, key=lambda g: -sum(expected[g, o] for o in truth if o != g))
    by_win = [s["system"] for s in sorted(ev["stats"]["systems"], key=lambda s: -s["win_rate"])]
    assert by_win == implied
    # the three physics generators differ only in how often they break: 30 % of prompts at severity ~0.5, 60 % at 1
    assert sum(truth["sometimes_broken"][p] != truth["plausible"][p] for p in prompts) == round(0.3 * len(prompts))
    assert sum(truth["often_broken"][p] != truth["plausible"][p] for p in prompts) == round(0.6 * len(prompts))


def test_quality_only_generator_is_flagged(board):
    conf = board["json"]["evaluators"]["phyprobe"]["confound"]
    assert conf["quality"] == QUALITY
    flags = {e: c["flag"] for e, c in conf["entries"].items()}
    assert flags == {"plausible": False, "sometimes_broken": False, "often_broken": False, "low_quality": True}
    md = (board["out"] / "leaderboard.md").read_text()
    assert "low_quality" in md and "**quality?**" in md


def test_outputs_are_complete(board):
    j, out = board["json"], board["out"]
    assert set(j["evaluators"]) >= {"phyprobe", "vision_tools (stand-in)", QUALITY}
    assert j["groups"] == ["discipline", "difficulty"]
    per = j["evaluators"]["phyprobe"]["breakdowns"]["difficulty"]
    assert sum(v["prompts"] for v in per.values()) == j["prompts"]
    rows = (out / "leaderboard.csv").read_text().splitlines()
    assert rows[0].startswith("evaluator,direction,group") and any(",difficulty,easy," in r for r in rows)
    for png in ("bars_phyprobe.png", "pairwise_phyprobe.png", "groups_phyprobe_difficulty.png"):
        assert (out / png).stat().st_size > 1000
    assert j["evaluators"]["phyprobe"]["cost"]["seconds_per_video"] > 0
    assert j["evaluators"]["vision_tools (stand-in)"]["cost"]["calls_per_video"] == 0


def test_gate_passes_a_rerun_and_fails_a_planted_regression(board, tmp_path, capsys):
    """A rerun of the same generations against the first run: exit 0. A new version of ``plausible`` that answers each
    prompt with the clip of its scene the scorer finds most violating: exit 1, naming the entry."""
    args, out = board["args"], board["out"]
    prev = tmp_path / "prev.json"
    shutil.copy(out / "leaderboard.json", prev)
    assert cli([*args, "--n-boot", "1000", "--no-progress", "--no-plots", "--baseline", str(prev)]) == 0
    assert "regression" not in capsys.readouterr().err

    own, truth = board["own"], board["truth"]
    worst = {p: max((c for c in own if c.split("/")[1] == p), key=own.get) for p in truth["plausible"]}
    assert sum(own[worst[p]] > own[truth["plausible"][p]] for p in worst) >= 4, "nothing to plant: a degenerate scorer"
    new = tmp_path / "v2"
    for p, clip in worst.items():
        (new / "plausible").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(board["files"][clip], new / "plausible" / f"{p}.mp4")
    v2 = ["leaderboard", str(new), "--out", str(tmp_path / "out2"), "--scorer", str(board["scorer"])]
    assert cli([*v2, "--n-boot", "1000", "--no-progress", "--no-plots", "--baseline", str(prev)]) == 1
    err = capsys.readouterr().err
    assert "regression: phyprobe plausible vs plausible" in err
    gate = json.loads((tmp_path / "out2" / "leaderboard.json").read_text())["gate"]["rows"]
    assert [g["entry"] for g in gate if g["regression"]] == ["plausible"]


def test_the_gate_fails_when_every_clip_of_a_generator_is_replaced_by_its_severe_twin(board, tmp_path, capsys):
    """The regression a physics evaluator exists to catch, with the truth from the build and not from the scorer:
    ``plausible`` v2 answers every prompt with its scene's most severe violated twin (severity >= 0.8). The gate runs
    as docs/leaderboard.md recommends, with GeoPhys beside the scorer; it must exit 1 naming ``plausible``, and
    which evaluator caught it is recorded (the toy scorer alone may not: its clips are 4 frames)."""
    v1 = tmp_path / "v1" / "plausible"
    shutil.copytree(board["root"] / "gens" / "plausible", v1)
    swapped = severe_twins(board["world"], tmp_path / "v2")
    assert len(swapped) >= 8, "too few scenes with a severe twin to test the gate"
    for scene in list(p.stem for p in v1.glob("*.mp4")):
        if scene not in swapped:  # the same prompts in both versions
            (v1 / f"{scene}.mp4").unlink()
    fast = ["--n-boot", "1000", "--no-progress", "--no-plots", "--geophys"]
    first = ["leaderboard", str(tmp_path / "v1"), "--out", str(tmp_path / "lb1"), "--scorer", str(board["scorer"])]
    assert cli([*first, *fast]) == 0
    second = ["leaderboard", str(tmp_path / "v2"), "--out", str(tmp_path / "lb2"), "--scorer", str(board["scorer"])]
    assert cli([*second, *fast, "--baseline", str(tmp_path / "lb1" / "leaderboard.json")]) == 1
    err = capsys.readouterr().err
    rows = json.loads((tmp_path / "lb2" / "leaderboard.json").read_text())["gate"]["rows"]
    caught = [r for r in rows if r["regression"]]
    assert caught and all(r["entry"] == "plausible" and r["diff"] > 0 for r in caught)
    assert all(f"regression: {r['evaluator']} plausible vs plausible" in err for r in caught)


def test_scoring_resumes_after_a_kill(board, monkeypatch):
    """The score store cut short as a kill leaves it (whole rows, then a torn one): the rerun scores only the videos
    it no longer answers, and the leaderboard is the same."""
    monkeypatch.setenv("PHYPROBE_CACHE", str(_store_root(board)))  # the store the board's runs filled
    out = board["out"]
    store = Path(json.loads((out / "scores" / "phyprobe.json").read_text())["store"])
    lines = store.read_bytes().splitlines(keepends=True)
    cost = json.loads(store.with_suffix(".json").read_text())
    store.write_bytes(b"".join(lines[:10]) + lines[10][:20])
    assert cli([*board["args"], "--n-boot", "2000", "--no-progress", "--no-plots"]) == 0
    assert len(store.read_bytes().splitlines()) == len(lines)
    again = json.loads(store.with_suffix(".json").read_text())
    assert again["videos_scored"] == cost["videos_scored"] + len(lines) - 10
    rerun = json.loads((out / "leaderboard.json").read_text())["evaluators"]["phyprobe"]
    first = board["json"]["evaluators"]["phyprobe"]["per_prompt"]
    diffs = [abs(v - first[e][p]) for e, per in rerun["per_prompt"].items() for p, v in per.items()]
    assert max(diffs) <= 1e-6  # float32 rounding moves with the batch a video is scored in: within the tie tolerance
    assert rerun["stats"]["win_matrix"] == board["json"]["evaluators"]["phyprobe"]["stats"]["win_matrix"]


def test_a_second_leaderboard_in_a_new_out_scores_nothing(board, tmp_path, monkeypatch):
    """Scores are kept by the scorer's identity and each video's content: the same videos into a new ``--out`` run
    no encoder forward and give the same table; the record in ``--out`` has one row per video however often run."""
    from phyprobe.features.extract import ExtractionModule

    monkeypatch.setenv("PHYPROBE_CACHE", str(_store_root(board)))  # the store the board's runs filled
    steps = []
    step = ExtractionModule.predict_step
    monkeypatch.setattr(ExtractionModule, "predict_step", lambda m, *a, **k: steps.append(1) or step(m, *a, **k))
    args = ["leaderboard", str(board["root"] / "gens"), "--prompts", str(board["root"] / "gens" / "prompts.jsonl")]
    for _ in range(2):
        assert (
            cli(
                [*args, "--out", str(tmp_path / "new"), "--scorer", str(board["scorer"]), "--no-plots", "--no-progress"]
            )
            == 0
        )
    assert steps == []
    rows = (tmp_path / "new" / "scores" / "phyprobe.jsonl").read_text().splitlines()
    first = (board["out"] / "scores" / "phyprobe.jsonl").read_text().splitlines()
    assert sorted(rows) == sorted(first) and len(rows) == len(set(rows))


def test_the_same_relative_generations_elsewhere_are_scored_anew(board, tmp_path, monkeypatch):
    """Two working directories, each with a ``gens`` folder of the same names but other videos, into one ``--out``:
    the second is ranked on its own videos' scores, never on the first's."""
    from phyprobe.scorer import Scorer

    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(board["root"] / "gens", a / "gens")
    shutil.copytree(board["root"] / "gens", b / "gens")
    names = sorted(p.name for p in (b / "gens").iterdir() if p.is_dir())
    swapped = [b / "gens" / names[0] / f.name for f in sorted((b / "gens" / names[0]).glob("*.mp4"))]
    donor = sorted((b / "gens" / names[-1]).glob("*.mp4"))
    for dst, src in zip(swapped, donor):
        shutil.copyfile(src, dst)  # generator 0's videos are now generator -1's
    out = tmp_path / "out"
    for cwd in (a, b):
        monkeypatch.chdir(cwd)
        args = [
            "leaderboard",
            "gens",
            "--prompts",
            "gens/prompts.jsonl",
            "--out",
            str(out),
            "--scorer",
            str(board["scorer"]),
        ]
        assert cli([*args, "--no-plots", "--no-progress"]) == 0
    rows = [json.loads(line) for line in (out / "scores" / "phyprobe.jsonl").read_text().splitlines()]
    raw = Scorer.from_pretrained(board["scorer"]).score_raw_many([str(p) for p in swapped])
    got = {r["video"]: r["raw_score"] for r in rows}
    assert [got[f"gens/{names[0]}/{p.name}"] for p in swapped] == pytest.approx(raw, abs=1e-6)


def _store_root(board) -> Path:
    return Path(json.loads((board["out"] / "scores" / "phyprobe.json").read_text())["store"]).parents[1]


@pytest.mark.parametrize("name", ["videos.jsonl", "leaderboard.csv", "leaderboard.md"])
def test_a_folder_of_the_users_is_never_written_into(board, tmp_path, capsys, name):
    """--out naming a folder that holds the user's own file of a name the leaderboard writes (and no marker of a
    leaderboard's) is refused before any work, the file byte-identical; --out naming a file is refused too."""
    foreign = tmp_path / name
    foreign.write_text("mine\n")
    with pytest.raises(SystemExit):
        cli(["leaderboard", str(board["root"] / "gens"), "--out", str(tmp_path), "--scorer", str(board["scorer"])])
    assert f"holds {name} that no leaderboard wrote" in capsys.readouterr().err
    assert foreign.read_text() == "mine\n" and sorted(p.name for p in tmp_path.iterdir()) == [name]
    with pytest.raises(SystemExit):
        cli(["leaderboard", str(board["root"] / "gens"), "--out", str(foreign), "--scorer", str(board["scorer"])])
    assert "not a folder" in capsys.readouterr().err and foreign.read_text() == "mine\n"


def test_a_score_far_outside_the_training_range_is_flagged_and_the_median_ranks_without_it(
    board, tmp_path, monkeypatch, capsys
):
    """One video of the last-ranked entry planted at a raw score of -2865 (the scorer's training videos scored
    within a few units): the leaderboard names it, per video and entry; the mean puts the planted entry first, and
    ``--summary median`` ranks the entries as the clean run does (one value moves a median by one place among the
    entry's scores, not by its size)."""
    monkeypatch.setenv("PHYPROBE_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "out"
    args = ["leaderboard", str(board["root"] / "gens"), "--prompts", str(board["root"] / "gens" / "prompts.jsonl")]
    args += ["--scorer", str(board["scorer"]), "--no-plots", "--no-progress", "--n-boot", "500"]
    assert cli([*args, "--out", str(out)]) == 0
    clean = json.loads((out / "leaderboard.json").read_text())["evaluators"]["phyprobe"]
    assert clean["far_outside"] == {} and clean["expected_range"] is not None
    assert cli([*args, "--out", str(tmp_path / "clean_median"), "--summary", "median"]) == 0
    clean_median = json.loads((tmp_path / "clean_median" / "leaderboard.json").read_text())["evaluators"]["phyprobe"]
    victim = clean_median["stats"]["systems"][-1]["system"]
    store = Path(json.loads((out / "scores" / "phyprobe.json").read_text())["store"])
    rows = [json.loads(line) for line in store.read_text().splitlines()]
    gens = [json.loads(line) for line in (out / "videos.jsonl").read_text().splitlines()]
    digests = {g["id"]: hashlib.sha256(Path(g["path"]).read_bytes()).hexdigest() for g in gens}
    own = [v for v, d in digests.items() if v.startswith(victim + "/") and list(digests.values()).count(d) == 1]
    planted_video, digest = {"id": own[0]}, digests[own[0]]  # a clip no other entry shares: scores go by content
    store.write_text(
        "".join(json.dumps({**r, "raw_score": -2865.0} if r["video"] == digest else r) + "\n" for r in rows)
    )
    capsys.readouterr()
    assert cli([*args, "--out", str(tmp_path / "mean")]) == 0
    err = capsys.readouterr().err
    mean = json.loads((tmp_path / "mean" / "leaderboard.json").read_text())["evaluators"]["phyprobe"]
    assert mean["far_outside"] == {victim: {planted_video["id"]: -2865.0}}
    assert f"{victim}: 1 (e.g. -2865)" in err and "--summary median" in err
    assert [s["system"] for s in mean["stats"]["systems"]][0] == victim  # the mean is the outlier's
    assert cli([*args, "--out", str(tmp_path / "median"), "--summary", "median"]) == 0
    median = json.loads((tmp_path / "median" / "leaderboard.json").read_text())
    assert median["summary"] == "median"
    ranked = median["evaluators"]["phyprobe"]["stats"]["systems"]
    assert {s["system"]: s["rank"] for s in ranked} == {
        s["system"]: s["rank"] for s in clean_median["stats"]["systems"]
    }
    assert "median [95 %]" in (tmp_path / "median" / "leaderboard.md").read_text()


def test_phyprobe_score_flags_a_raw_score_far_outside_the_training_range(board, tmp_path, capsys):
    """A copy of the scorer whose recorded training range is [100, 101]: every video it scores is far outside it,
    flagged per video in --json rows and once on stderr; with the real range, none is."""
    from conftest import run_cli

    video = str(next(iter(board["files"].values())))
    code, out, err = run_cli(["score", str(board["scorer"]), video, "--json"], capsys)
    assert code == 0 and "far_outside_training" not in out and "far outside" not in err
    copy = tmp_path / "scorer"
    shutil.copytree(board["scorer"], copy)
    cfg = json.loads((copy / "config.json").read_text())
    cfg["training"]["raw_score_range"] = [100.0, 101.0]
    (copy / "config.json").write_text(json.dumps(cfg))
    code, out, err = run_cli(["score", str(copy), video, "--json"], capsys)
    assert code == 0 and json.loads(out.splitlines()[0])["far_outside_training"] is True
    assert "1 videos scored far outside the range the scorer gave its training videos (100 to 101)" in err


def test_names_from_the_user_never_run_escape_or_collide(board, tmp_path, capsys):
    """A generator named like a spreadsheet formula is written to leaderboard.csv behind an apostrophe; one named
    with HTML and a pipe reaches leaderboard.md escaped; a scorer name that is a path out of --out, and a generator
    name holding the ids' separators, are refused in one line, nothing written."""
    gens = tmp_path / "gens"
    shutil.copytree(board["root"] / "gens", gens)
    names = sorted(p.name for p in gens.iterdir() if p.is_dir())
    (gens / names[0]).rename(gens / "=HYPERLINK(1)")
    (gens / names[1]).rename(gens / "<script>x|y")
    out = tmp_path / "out"
    args = ["leaderboard", str(gens), "--prompts", str(gens / "prompts.jsonl"), "--no-plots", "--no-progress"]
    assert cli([*args, "--out", str(out), "--scorer", str(board["scorer"]), "--n-boot", "200"]) == 0
    cells = {row.split(",")[4] for row in (out / "leaderboard.csv").read_text().splitlines()[1:]}
    assert "'=HYPERLINK(1)" in cells and "=HYPERLINK(1)" not in cells
    md = (out / "leaderboard.md").read_text()
    assert "<script>" not in md and "&lt;script&gt;x\\|y" in md
    for bad in ("../../escaped", ".hidden", "a/b"):
        with pytest.raises(SystemExit):
            cli([*args, "--out", str(tmp_path / "o2"), "--scorer", f"{bad}={board['scorer']}"])
        assert "must be letters, digits" in capsys.readouterr().err
    assert not (tmp_path / "escaped.jsonl").exists() and not list(tmp_path.rglob("escaped*"))
    manifest = tmp_path / "m.jsonl"
    video = str(next(iter(board["files"].values())))
    manifest.write_text(
        json.dumps({"generator": "a/b", "prompt_id": "p", "video": video})
        + "\n"
        + json.dumps({"generator": "a", "checkpoint": "b", "prompt_id": "p", "video": video})
        + "\n"
    )
    with pytest.raises(SystemExit):
        cli(["leaderboard", str(manifest), "--out", str(tmp_path / "o3"), "--scorer", str(board["scorer"])])
    assert "generator 'a/b' holds '/' or '@'" in capsys.readouterr().err


def test_a_generator_with_no_readable_video_makes_the_leaderboard_exit_non_zero(board, tmp_path, capsys):
    """Every video of one generator a 0-byte file: nothing can be paired, so nothing is ranked, and the exit code
    says so (3) instead of 0, naming the generator; the tables are still written."""
    gens = tmp_path / "gens"
    shutil.copytree(board["root"] / "gens", gens)
    broken = sorted(p for p in gens.iterdir() if p.is_dir())[0]
    for v in broken.glob("*.mp4"):
        v.write_bytes(b"")
    args = ["leaderboard", str(gens), "--prompts", str(gens / "prompts.jsonl"), "--out", str(tmp_path / "out")]
    assert cli([*args, "--scorer", str(board["scorer"]), "--no-plots", "--no-progress", "--n-boot", "200"]) == 3
    err = capsys.readouterr().err
    assert f"error: phyprobe ranks nothing: {broken.name} scored no prompt" in err
    assert (tmp_path / "out" / "leaderboard.json").is_file()
