"""Sci-VBench and SVBench records as published (tests/published_suites.py) -> prompt suites: every field mapped, a
one-line error naming the file and the place for each malformed input, and end to end: suite -> a leaderboard's
videos.jsonl for two generators' real mp4s -> `phyprobe judge run` against a real local chat server, each video
asked with its own prompt's rubric or test point; and the suite's group fields as leaderboard columns."""

from __future__ import annotations

import json
import re
from pathlib import Path

import published_suites as P
import pytest

from phyprobe.cli import main
from phyprobe.data.manifest import Manifest, write_jsonl
from phyprobe.io.video import write_video
from phyprobe.judges.scivbench import RubricJudge
from phyprobe.judges.svbench import TEMPLATE as EVA_TEMPLATE
from phyprobe.judges.tasks import TaskFileError, read_tasks
from phyprobe.leaderboard.board import default_groups
from phyprobe.leaderboard.cli import judge_manifest_rows
from phyprobe.leaderboard.generations import read_generations
from phyprobe.suites import SuiteError, read_suite, write_suite
from phyprobe.suites.published import PUBLISHED, load_published
from phyprobe.testing.judge_server import ScriptedServer
from phyprobe.testing.videos import moving_square

# the published spec fields and the dimension each is judged on (stated here, not read from the code under test)
SPEC_TO_DIMENSION = {
    "pg_specification": "prompt_grounding",
    "scc_specification": "scientific_causal_correctness",
    "sc_specification": "spatiotemporal_consistency",
    "lpf_specification": "low_level_perceptual_fidelity",
}
SHORT_IDS = [
    "EXP_021-1-easy",
    "EXP_021-2-medium",
    "EXP_021-3-hard",
    "EXP_016-1-hard",
    "EXP_016-2-medium",
    "EXP_016-3-easy",
]
GENERATORS = ("gen_a", "gen_b")


# -- loaders --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("as_list", [False, True], ids=["jsonl", "json_list"])
def test_scivbench_records_map_every_field(tmp_path, as_list):
    spec = P.write_scivbench(tmp_path / "spec.jsonl", as_list=as_list)
    recs = load_published("scivbench", spec)
    assert [r.prompt_id for r in recs] == [s["id"] for s in P.SCIVBENCH]
    for r, s in zip(recs, P.SCIVBENCH):
        assert r.prompt == s["prompt"] and r.reference_guide == s["high_level_evaluation_guide"]
        assert r.rubrics == {d: s[f] for f, d in SPEC_TO_DIMENSION.items() if s[f]}  # an empty spec: not judged
        assert r.groups == {"discipline": s["domain"], "domain": s["domain"], "subject": s["subject"]}
        assert r.paradigm is r.difficulty is r.test_point is r.question is r.ground_truth is None
        assert r.provenance["source"] == "scivbench" and r.provenance["from"].startswith("spec.jsonl")
    by_id = {r.prompt_id: r for r in recs}
    assert "scientific_causal_correctness" not in by_id["phys_0012"].rubrics
    assert "low_level_perceptual_fidelity" not in by_id["chem_0003"].rubrics
    assert by_id["chem_0003"].provenance["extra"] == {"annotator": "expert_2"}  # kept, not dropped
    assert "extra" not in by_id["phys_0007"].provenance
    where = "spec.jsonl: record 3" if as_list else "spec.jsonl:3"
    assert by_id["chem_0003"].provenance["from"] == where
    assert read_suite(write_suite(recs, tmp_path / "suite.jsonl")) == recs


def test_svbench_bench_file_maps_every_field(tmp_path):
    recs = load_published("svbench", P.write_svbench_short(tmp_path))
    assert [r.prompt_id for r in recs] == SHORT_IDS  # <experiment_id>-<place in prompts>-<difficulty>, as released
    flat = [(e, p) for e in P.SVBENCH_SHORT for p in e["prompts"]]
    for r, (e, p) in zip(recs, flat):
        assert (r.prompt, r.difficulty, r.ground_truth, r.question) == (
            p["prompt"],
            p["difficulty"],
            p["ground_truth"],
            p.get("question"),
        )
        assert r.paradigm == e["experiment_name"] and r.test_point == e["test_point"]
        assert r.groups == {"dimension": e["dimension"], "task": e["experiment_name"]}
        assert r.provenance["experiment_id"] == e["experiment_id"] and r.provenance["source"] == "svbench"
        assert r.reference_guide is None and r.rubrics == {}
    assert recs[3].question is None  # the prompt published without a question
    assert recs[3].task()["experiment_name"] == "Turn-Taking" and "question" not in recs[3].task()
    assert read_suite(write_suite(recs, tmp_path / "suite.jsonl")) == recs


def test_svbench_video_records_get_the_ids_of_the_bench_prompts(tmp_path):
    bench = {r.prompt_id: r for r in load_published("svbench", P.write_svbench_short(tmp_path))}
    recs = load_published("svbench", P.write_video_info(tmp_path))
    assert [r.prompt_id for r in recs] == SHORT_IDS
    for r in recs:
        b = bench[r.prompt_id]
        fields = ("prompt", "paradigm", "test_point", "question", "ground_truth", "difficulty")
        assert [getattr(r, f) for f in fields] == [getattr(b, f) for f in fields]
        assert r.groups == {"task": b.paradigm} and r.provenance["video_file"] == f"{r.prompt_id}.mp4"
    assert read_suite(write_suite(recs, tmp_path / "suite.jsonl")) == recs


def _spec_lines(*records) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def _short(edit) -> list:
    data = json.loads(json.dumps(P.SVBENCH_SHORT))
    edit(data)
    return data


BAD = {
    "sci_top_level_object": (
        "scivbench",
        "spec.json",
        lambda: json.dumps(P.SCIVBENCH[0], indent=2),
        r"spec\.json: the top level is one JSON dict; expected a list of records or one JSON object per line",
    ),
    "sci_top_level_string": ("scivbench", "spec.json", lambda: '"records"', r"spec\.json: the top level is a JSON str"),
    "sci_record_not_object": (
        "scivbench",
        "spec.json",
        lambda: json.dumps([P.SCIVBENCH[0], "phys_0012"]),
        r"spec\.json: record 2: a record must be a JSON object, got str",
    ),
    "sci_no_prompt": (
        "scivbench",
        "spec.jsonl",
        lambda: _spec_lines(P.SCIVBENCH[0], {k: v for k, v in P.SCIVBENCH[1].items() if k != "prompt"}),
        r"spec\.jsonl:2: record 'phys_0012' has no 'prompt'",
    ),
    "sci_no_id": (
        "scivbench",
        "spec.jsonl",
        lambda: _spec_lines({k: v for k, v in P.SCIVBENCH[0].items() if k != "id"}),
        r"spec\.jsonl:1: no 'id'",
    ),
    "sci_spec_not_text": (
        "scivbench",
        "spec.jsonl",
        lambda: _spec_lines(P.SCIVBENCH[0], {**P.SCIVBENCH[1], "scc_specification": 5}),
        r"spec\.jsonl:2: field 'scc_specification' must be a string, got int",
    ),
    "sci_duplicate_id": (
        "scivbench",
        "spec.jsonl",
        lambda: _spec_lines(P.SCIVBENCH[0], P.SCIVBENCH[1], P.SCIVBENCH[0]),
        r"spec\.jsonl:3: duplicate prompt id 'phys_0007' \(first at .*spec\.jsonl:1\)",
    ),
    "sci_bad_json_line": (
        "scivbench",
        "spec.jsonl",
        lambda: _spec_lines(P.SCIVBENCH[0]) + '{"id": "x", \n',
        r"spec\.jsonl:2: not valid JSON",
    ),
    "sv_top_level_object": (
        "svbench",
        "bench_for_short.json",
        lambda: json.dumps({"experiments": P.SVBENCH_SHORT}, indent=2),
        r"bench_for_short\.json: the top level is one JSON dict",
    ),
    "sv_prompt_not_object": (
        "svbench",
        "bench_for_short.json",
        lambda: json.dumps(_short(lambda d: d[1]["prompts"].__setitem__(1, "two people stack blocks"))),
        r"bench_for_short\.json: record 2 \(EXP_016\), prompt 2: a prompt must be a JSON object, got str",
    ),
    "sv_unknown_difficulty": (
        "svbench",
        "bench_for_short.json",
        lambda: json.dumps(_short(lambda d: d[0]["prompts"][2].__setitem__("difficulty", "Hard"))),
        r"record 1 \(EXP_021\), prompt 3: field 'difficulty' must be one of \['easy', 'medium', 'hard'\], got 'Hard'",
    ),
    "sv_no_difficulty": (
        "svbench",
        "bench_for_short.json",
        lambda: json.dumps(_short(lambda d: d[0]["prompts"][0].pop("difficulty"))),
        r"record 1 \(EXP_021\), prompt 1: no 'difficulty'",
    ),
    "sv_prompts_not_list": (
        "svbench",
        "bench_for_short.json",
        lambda: json.dumps(_short(lambda d: d[0].__setitem__("prompts", {"easy": "x"}))),
        r"record 1 \(EXP_021\): field 'prompts' must be a non-empty list of prompt objects, got dict",
    ),
    "sv_duplicate_experiment": (
        "svbench",
        "bench_for_short.json",
        lambda: json.dumps(P.SVBENCH_SHORT + P.SVBENCH_SHORT[:1]),
        r"record 3 \(EXP_021\), prompt 1: duplicate prompt id 'EXP_021-1-easy' "
        r"\(first at .*record 1 \(EXP_021\), prompt 1\)",
    ),
    "sv_video_duplicate": (
        "svbench",
        "video_info_matched.json",
        lambda: json.dumps(P.video_info() + P.video_info()[:1]),
        r"video_info_matched\.json: record 7: duplicate prompt id 'EXP_021-1-easy' \(first at .*record 1\)",
    ),
    "sv_mixed_records": (
        "svbench",
        "bench_for_short.json",
        lambda: json.dumps(P.SVBENCH_SHORT[:1] + P.video_info()[:1]),
        r"bench_for_short\.json: record 2: a video record in a file of experiments",
    ),
    "sv_neither": (
        "svbench",
        "bench_for_short.json",
        lambda: json.dumps([{"experiment_id": "EXP_001"}]),
        r"record 1: neither an SVBench experiment \(with 'prompts'\) nor a video record",
    ),
    "sv_empty_list": ("svbench", "bench_for_short.json", lambda: "[]", r"bench_for_short\.json: an empty list"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_malformed_published_files_are_one_line_errors_naming_file_and_place(tmp_path, case):
    kind, name, text, message = BAD[case]
    path = tmp_path / name
    path.write_text(text(), encoding="utf-8")
    with pytest.raises(SuiteError) as e:
        load_published(kind, path)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(str(path)), msg
    assert re.search(message, msg), msg


def test_an_unknown_kind_names_the_known_ones(tmp_path):
    with pytest.raises(SuiteError, match=r"unknown published suite 'vbench'; known: \['scivbench', 'svbench'\]"):
        load_published("vbench", tmp_path / "x.json")
    assert sorted(PUBLISHED) == ["scivbench", "svbench"]


# -- end to end: suite -> leaderboard manifest -> judge run ----------------------------------------------------------


class RecordingServer(ScriptedServer):
    """The scripted chat server, also keeping each request's text by the key its reply quotes (``req <key>``)."""

    def __init__(self):
        super().__init__()
        self.texts: dict[str, str] = {}

    def respond(self, h, case, key, attempt, body, auth=""):
        text = "".join(p.get("text", "") for p in body["messages"][0]["content"] if p.get("type") == "text")
        with self.lock:
            self.texts[key] = text
        return super().respond(h, case, key, attempt, body, auth)


def generations(root: Path, prompt_ids: list[str]) -> Path:
    """``root/<generator>/<prompt_id>.mp4``: a distinct real mp4 per generator and prompt."""
    for g, gen in enumerate(GENERATORS):
        for i, pid in enumerate(prompt_ids):
            frames = moving_square(4, 32, 32, 2 + 3 * i, 1 + g, colour=(60 + 40 * g, 90 + 10 * i, 200))
            write_video(root / gen / f"{pid}.mp4", frames, fps=4)
    return root


def leaderboard_manifest(gens_root: Path, suite: Path, out: Path) -> tuple[Path, object]:
    """What `phyprobe leaderboard GENS --prompts SUITE --out OUT` writes as OUT/videos.jsonl."""
    gens = read_generations(gens_root, prompts=suite)
    out.mkdir(parents=True, exist_ok=True)
    write_jsonl(out / "videos.jsonl", judge_manifest_rows(gens))
    return out, gens


def judge_run(config: str, manifest: Path, suite: Path, out: Path, srv, *extra: str) -> int:
    sets = [f"judge.tasks={suite}", f"client.base_url={srv.base_url}", "client.model=test-vl", "judge.samples=1"]
    sets += [f"cache_dir={out.parent / 'cache'}", "video.max_frames=2", *extra]
    argv = ["judge", "run", config, "--manifest", str(manifest), "--out", str(out)]
    return main(argv + [x for s in sets for x in ("--set", s)])


def request_texts(record: dict, srv: RecordingServer) -> dict[str, str]:
    """``{item: the request text}`` of one judged video, found by the request key its reply quotes."""
    out = {}
    for item, samples in record["items"].items():
        (sample,) = samples
        out[item] = srv.texts[re.search(r"req ([0-9a-f]{16})", sample["raw"]).group(1)]
    return out


def judgements(out: Path) -> list[dict]:
    return [json.loads(x) for x in (out / "judgements.jsonl").read_text().splitlines()]


def test_scivbench_spec_to_suite_to_leaderboard_videos_to_judge_run(tmp_path):
    suite = write_suite(load_published("scivbench", P.write_scivbench(tmp_path / "spec.jsonl")), tmp_path / "s.jsonl")
    spec = {s["id"]: s for s in P.SCIVBENCH}
    manifest, _ = leaderboard_manifest(generations(tmp_path / "gens", list(spec)), suite, tmp_path / "board")
    with RecordingServer() as srv:
        assert judge_run("scivbench", manifest, suite, tmp_path / "judged", srv) == 0
    recs = judgements(tmp_path / "judged")
    assert len(recs) == len(GENERATORS) * len(spec) and all(r["score"] is not None for r in recs)
    for r in recs:
        gen, pid = r["id"].split("/")
        s = spec[pid]
        want = {d: s[f] for f, d in SPEC_TO_DIMENSION.items() if s[f]}
        texts = request_texts(r, srv)
        assert set(texts) == set(want) == set(r["dimensions"])  # one call per non-empty spec, nothing else
        for dim, text in texts.items():
            assert want[dim] in text and s["prompt"] in text and s["high_level_evaluation_guide"] in text
            assert set(re.findall(r"\b(?:PG|SCC|SC|LPF|GUIDE)-(\w+)", text)) == {pid}  # no other prompt's text
    assert len(srv.texts) == sum(len(request_texts(r, srv)) for r in recs)
    summary = json.loads((tmp_path / "judged" / "judge_summary.json").read_text())
    assert summary["videos"] == summary["scored"] == 8


@pytest.mark.parametrize("fixture", ["bench_for_short", "video_info_matched"])
def test_svbench_records_to_suite_to_leaderboard_videos_to_eva_run(tmp_path, fixture):
    src = P.write_svbench_short(tmp_path) if fixture == "bench_for_short" else P.write_video_info(tmp_path)
    suite = write_suite(load_published("svbench", src), tmp_path / "s.jsonl")
    manifest, _ = leaderboard_manifest(generations(tmp_path / "gens", SHORT_IDS), suite, tmp_path / "board")
    template = tmp_path / "eva.txt"  # the project's wording plus the scripted server's EVA-answer token
    template.write_text(EVA_TEMPLATE + "\nSCRIPT:eva\n", encoding="utf-8")
    with RecordingServer() as srv:
        assert (
            judge_run("svbench_eva", manifest, suite, tmp_path / "judged", srv, f"judge.template_file={template}") == 0
        )
    recs = judgements(tmp_path / "judged")
    assert len(recs) == 12 and all(r["score"] is not None for r in recs)
    experiments = {e["experiment_id"]: e for e in P.SVBENCH_SHORT}
    for r in recs:
        _, pid = r["id"].split("/")
        eid, k, difficulty = pid.split("-")
        e = experiments[eid]
        p = e["prompts"][int(k) - 1]
        (text,) = request_texts(r, srv).values()
        assert f"Experiment name:\n{e['experiment_name']}\n" in text and e["test_point"] in text
        assert p["prompt"] in text and p["ground_truth"] in text and p["difficulty"] == difficulty
        if "question" in p:
            assert f"Evaluation question:\n{p['question']}\n" in text
        else:  # as SVBench's script does for a record without one: an empty question
            assert "Evaluation question:\n\n" in text
        assert set(re.findall(r"\b(?:TP|GT|Q)-(EXP_\d+)", text)) == {eid}
        assert set(re.findall(r"\b(?:GT|Q)-EXP_\d+-(\d)", text)) == {k}
    assert len(srv.texts) == 12


# -- leaderboard group fields ---------------------------------------------------------------------------------------


def test_a_suite_gives_the_leaderboard_its_group_fields_as_columns(tmp_path):
    sci = write_suite(load_published("scivbench", P.write_scivbench(tmp_path / "spec.jsonl")), tmp_path / "sci.jsonl")
    gens = read_generations(generations(tmp_path / "sci_gens", [s["id"] for s in P.SCIVBENCH]), prompts=sci)
    spec = {s["id"]: s for s in P.SCIVBENCH}
    assert len(gens) == 8
    for row in gens.to_dict(orient="records"):
        s = spec[row["prompt_id"]]
        assert (row["discipline"], row["domain"], row["subject"]) == (s["domain"], s["domain"], s["subject"])
    assert not {"prompt", "rubrics", "groups", "reference_guide", "provenance"} & set(gens.columns)
    assert default_groups(gens) == ["discipline", "domain", "subject"]

    sv = write_suite(load_published("svbench", P.write_svbench_short(tmp_path)), tmp_path / "sv.jsonl")
    gens = read_generations(generations(tmp_path / "sv_gens", SHORT_IDS), prompts=sv)
    row = gens.set_index("id").loc["gen_b/EXP_016-1-hard"]
    assert (row["dimension"], row["task"], row["paradigm"], row["difficulty"]) == (
        "D4_Social_Coordination",
        "Turn-Taking",
        "Turn-Taking",
        "hard",
    )
    assert not {"prompt", "test_point", "question", "ground_truth", "groups"} & set(gens.columns)
    assert default_groups(gens) == [
        "dimension",
        "task",
        "paradigm",
        "difficulty",
    ]  # paradigm: SVBench's experiment, as task


# -- a suite read by the judges: matching and its errors -------------------------------------------------------------


@pytest.fixture
def sci_board(tmp_path):
    suite = write_suite(load_published("scivbench", P.write_scivbench(tmp_path / "spec.jsonl")), tmp_path / "s.jsonl")
    gens = generations(tmp_path / "gens", [s["id"] for s in P.SCIVBENCH])
    manifest, _ = leaderboard_manifest(gens, suite, tmp_path / "board")
    return suite, manifest


def test_judge_dimensions_keep_lpf_out_when_asked(sci_board):
    suite, manifest = sci_board
    m = Manifest.load(manifest)
    every = RubricJudge(rubric_set="tasks", tasks=str(suite)).tasks(m)
    assert "low_level_perceptual_fidelity" in every["gen_a/phys_0007"]["rubrics"]
    three = ["prompt_grounding", "scientific_causal_correctness", "spatiotemporal_consistency"]
    judged = RubricJudge(rubric_set="tasks", tasks=str(suite), dimensions=three).tasks(m)
    assert set(judged) == set(m.videos["id"])
    assert all(set(t["rubrics"]) <= set(three) for t in judged.values())
    assert set(judged["gen_b/phys_0012"]["rubrics"]) == {"prompt_grounding", "spatiotemporal_consistency"}
    with pytest.raises(TaskFileError, match=r"s\.jsonl: prompt_id 'chem_0003': no rubric for the judged dimensions"):
        RubricJudge(rubric_set="tasks", tasks=str(suite), dimensions=["no_such_dimension"]).tasks(m)


def test_videos_the_suite_cannot_match_stop_the_run_in_one_line(sci_board, tmp_path, capsys):
    suite, manifest = sci_board
    rows = [json.loads(x) for x in (manifest / "videos.jsonl").read_text().splitlines()]
    rows[1]["metadata"]["prompt_id"] = "phys_9999"
    write_jsonl(manifest / "videos.jsonl", rows)
    with pytest.raises(TaskFileError, match=r"1 of 8 videos of .* have a prompt_id this suite does not hold"):
        read_tasks(suite, Manifest.load(manifest))
    del rows[1]["metadata"]["prompt_id"]
    write_jsonl(manifest / "videos.jsonl", rows)
    with ScriptedServer() as srv, pytest.raises(SystemExit) as e:
        judge_run("scivbench", manifest, suite, tmp_path / "judged", srv)
    assert e.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith(f"phyprobe: error: {suite}: 1 of 8 videos"), err
    assert "have no metadata.prompt_id" in err and sum(srv.counts.values()) == 0
