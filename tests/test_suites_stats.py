"""``phyprobe suite stats`` on builds made against the real scripted server: its counts equal the ones read straight
from the files, and the stage table gives the pass counts the script implies for each stage of the ablation."""

from __future__ import annotations

import json
import statistics
from collections import Counter

import pytest

from phyprobe.cli import main
from phyprobe.suites.build import output_paths
from phyprobe.suites.stats import suite_stats
from phyprobe.testing.suite_server import SuiteServer, write_script_seeds


def _build(srv, seeds, out, cache, stage):
    args = ["suite", "build", str(seeds), "--out", str(out), "--per-difficulty", "1", "--difficulties", "easy,medium"]
    args += [
        "--stages",
        stage,
        "--set",
        f"client.base_url={srv.base_url}",
        f"cache_dir={cache}",
        "client.concurrency=4",
    ]
    return main(args)


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    """One build per stage of three paradigms (clean, leak_once, leak_unseen) at two difficulties, one cache."""
    tmp = tmp_path_factory.mktemp("stages")
    seeds = write_script_seeds(tmp / "seeds.yaml", ["clean", "leak_once", "leak_unseen"])
    out, sent = {}, {}
    with SuiteServer() as srv:
        for stage in ("full", "synthesis_only", "understanding_off"):
            before = Counter(srv.agents)
            out[stage] = tmp / f"{stage}.jsonl"
            assert _build(srv, seeds, out[stage], tmp / "cache", stage) == 1  # some prompts are not kept in each
            sent[stage] = Counter(srv.agents) - before
            sent[stage + ":inputs"] = [i for a, i in srv.inputs[sum(before.values()) :] if a == "synthesis"]
    return out, sent


def test_the_stage_table_counts_what_the_script_implies(builds, tmp_path, capsys):
    out, sent = builds
    capsys.readouterr()
    report = tmp_path / "stats.json"
    assert (
        main(
            [
                "suite",
                "stats",
                *(str(out[s]) for s in ("full", "synthesis_only", "understanding_off")),
                "--out",
                str(report),
            ]
        )
        == 0
    )
    md = capsys.readouterr().out
    res = json.loads(report.read_text())
    rows = {r["stage"]: r for r in res["stages"]}
    # 6 prompts per stage. full: clean and leak_once (after a revision) pass both; leak_unseen passes the critic
    # and fails the check. Without revision, leak_once's only prompt leaks, so the critic and the check reject it.
    want = {
        "full": (6, 6, 4, 4),
        "synthesis_only": (6, 4, 2, 2),
        "understanding_off": (6, 4, 2, 2),
    }
    got = {s: (r["attempted"], r["critic_passed"], r["check_passed"], r["both_passed"]) for s, r in rows.items()}
    assert got == want
    assert rows["full"]["both_rate"] == round(4 / 6, 4)
    assert "## Pass rates by stage" in md and "not results" in md
    # understanding_off sends no understanding request and gives synthesis the raw seed; synthesis_only revises nothing
    assert sent["understanding_off"]["understanding"] == 0
    assert all(
        "description" in i["paradigm"] and "formal_description" not in i["paradigm"]
        for i in sent["understanding_off:inputs"]
    )
    assert all("violations" not in i for i in sent["synthesis_only:inputs"] + sent["understanding_off:inputs"])
    # synthesis_only asks exactly what full asked in round 1: all of it came from the cache
    assert sent["synthesis_only"] == Counter()


def test_stats_counts_match_the_built_suite(builds):
    out, _ = builds
    path = out["full"]
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    fails = [json.loads(x) for x in output_paths(path)["failures"].read_text().splitlines()]
    s = suite_stats(path)
    assert s["stage"] == "full" and s["prompts"] == len(rows) == 4
    by = Counter((r["paradigm"], r["difficulty"]) for r in rows)
    assert {(p, d): n for p, c in s["by_paradigm"].items() for d, n in c.items()} == dict(by)
    assert s["not_kept"] == dict(Counter(f["reason"] for f in fails)) == {"leakage_check": 2}
    assert s["not_kept_by_paradigm"] == {"script_leak_unseen": {"leakage_check": 2}}
    assert s["critic_rounds"] == {str(k): v for k, v in Counter(len(r["provenance"]["rounds"]) for r in rows).items()}
    assert s["critic_rounds"] == {"1": 2, "2": 2}  # clean in one round, leak_once in two
    lengths = [len(r["prompt"].split()) for r in rows]
    assert s["prompt_words"]["all"] == {
        "n": 4,
        "min": min(lengths),
        "median": statistics.median(lengths),
        "mean": round(statistics.fmean(lengths), 1),
        "max": max(lengths),
    }
    assert s["leakage"] == {"checked": 4, "flagged": 0, "by_flag": {}, "prompts": []}


def test_stats_checks_a_suite_without_provenance_too(tmp_path, capsys):
    path = tmp_path / "hand.jsonl"
    lines = [
        {
            "prompt_id": "a",
            "prompt": "A marble rolls to the edge and drops off, falling to the floor.",
            "ground_truth": "The marble drops off the edge and falls to the floor.",
            "difficulty": "easy",
        },
        {
            "prompt_id": "b",
            "prompt": "A girl sets a marble on a table.",
            "ground_truth": "The marble drops off the edge and falls to the floor.",
        },
        {"prompt_id": "c", "prompt": "No reference here."},
    ]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    s = suite_stats(path)
    assert s["failures_file"] is False and s["pass_counts"] is None and s["stage"] is None
    assert s["leakage"]["checked"] == 2 and s["leakage"]["flagged"] == 1
    assert s["leakage"]["prompts"][0]["prompt_id"] == "a"
    assert s["by_paradigm"] == {"(none)": {"easy": 1, "(none)": 2}}
    assert main(["suite", "stats", str(path)]) == 0
    assert "Pass rates by stage" not in capsys.readouterr().out


def test_an_imported_suite_is_counted_by_its_own_fields_and_repeated_prompts_are_flagged(tmp_path, capsys):
    """Records with no paradigm (an import) are counted by the fields they carry; three prompts of one text (case
    and spacing aside) are named."""
    from phyprobe.suites.format import SuiteRecord, write_suite

    text = "A ball rolls off a table and falls to the floor."
    records = [
        SuiteRecord("p1", text, groups={"discipline": "mechanics"}),
        SuiteRecord("p2", text.upper(), groups={"discipline": "mechanics"}),
        SuiteRecord("p3", "  " + text.replace(" ", "  "), groups={"discipline": "optics"}),
        SuiteRecord("p4", "Light bends entering water.", groups={"discipline": "optics"}),
    ]
    path = write_suite(records, tmp_path / "imported.jsonl")
    s = suite_stats(path)
    assert s["by_group"] == {"discipline": {"mechanics": 2, "optics": 2}}
    assert s["duplicates"] == [["p1", "p2", "p3"]]
    assert main(["suite", "stats", str(path)]) == 0
    out = capsys.readouterr().out
    assert "By discipline: mechanics 2, optics 2." in out and "3 prompts repeat another's text" in out
