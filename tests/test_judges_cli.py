"""`phyprobe judge run|agree|compare` and `eval.py judge=physics` against a real local chat-completions server."""

from __future__ import annotations

import json

import pytest
from hydra import compose, initialize_config_dir

from phyprobe.cli import main
from phyprobe.eval.run import run_eval
from phyprobe.testing.configs import CONFIGS
from phyprobe.testing.judge_cases import case_manifest
from phyprobe.testing.judge_server import ScriptedServer


def test_cli_run_agree_and_compare(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # outside the repository: the project's configs/judge/ is found from any directory
    root = case_manifest(tmp_path / "m", cases=("ok",) * 6)
    with ScriptedServer() as srv:
        for name, samples in (("a", 1), ("b", 3)):
            assert (
                main(
                    [
                        "judge",
                        "run",
                        "physics",
                        "--manifest",
                        str(root),
                        "--out",
                        str(tmp_path / name),
                        *_sets(
                            [
                                f"client.base_url={srv.base_url}",
                                "client.model=test-vl",
                                f"judge.samples={samples}",
                                f"cache_dir={tmp_path / 'cache'}",
                                "video.max_frames=2",
                            ],
                            grouped=name == "a",  # one grammar: --set A B C ... and --set A --set B ...
                        ),
                    ]
                )
                == 0
            )
        assert sum(srv.counts.values()) == 6 * 3  # b's first sample per video was a's request: served from the cache
    assert "6/6 videos scored" in capsys.readouterr().out
    assert (
        main(
            [
                "judge",
                "agree",
                str(tmp_path / "a" / "judgements.jsonl"),
                str(tmp_path / "b" / "judgements.jsonl"),
                "--manifest",
                str(root),
                "--n-boot",
                "50",
                "--out",
                str(tmp_path / "agree.json"),
            ]
        )
        == 0
    )
    res = json.loads((tmp_path / "agree.json").read_text())
    assert res["videos_both"] == 6 and set(res) >= {"pearson", "spearman", "kappa", "qwk", "rounding"}
    with pytest.raises(SystemExit):
        main(["judge", "run", "physics"])  # --manifest and --out are required


def test_eval_py_runs_an_mllm_judge_into_the_benchmark_protocol_with_its_cost(tiny_world, tmp_path):
    with ScriptedServer() as srv, initialize_config_dir(version_base="1.3", config_dir=str(CONFIGS)):
        cfg = compose(
            "eval",
            overrides=[
                f"paths.output_dir={tmp_path}",
                "n_boot=100",
                "benchmark=world_test",
                f"benchmark.manifest={tiny_world}",
                "judge=physics",
                f"judge.client.base_url={srv.base_url}",
                "judge.client.model=test-vl",
                f"judge.cache_dir={tmp_path / 'cache'}",
                "judge.video.max_frames=2",
            ],
        )
        res = run_eval(cfg)
        n_requests = sum(srv.counts.values())
    judged = [json.loads(x) for x in (tmp_path / "judge" / "judgements.jsonl").read_text().splitlines()]
    assert res["evaluator"] == "physics_rubric" and res["standin"] is False
    assert n_requests == 3 * len(judged) and res["cost"]["calls_per_video"] == 3.0
    assert res["cost"]["prompt_tokens_per_video"] > 0 and res["cost"]["seconds_per_video"] > 0
    assert (
        res["results"]["world"]["coverage"]["value"] == 1.0 and res["results"]["world"]["same_scene_accuracy"]["n"] > 0
    )
    report = (tmp_path / "report.md").read_text()
    assert "## Cost" in report and "| model calls / video | 3 |" in report
    assert all(r["score"] is not None and len(r["items"]["physical_consistency"]) == 3 for r in judged)


def _sets(items: list[str], grouped: bool) -> list[str]:
    return ["--set", *items] if grouped else [x for item in items for x in ("--set", item)]


@pytest.mark.parametrize(
    "command",
    [
        ["judge", "run", "physics", "--manifest", "m", "--out", "o"],
        ["suite", "build", "s.yaml", "--out", "o.jsonl"],
        ["data", "prepare", "videophy2", "--root", "r", "--out", "o"],
        ["data", "check", "rapidata", "--root", "r"],
    ],
)
def test_every_set_option_takes_the_same_forms(command, capsys):
    """``--set`` in judge run, suite build and data prepare/check: pairs after one --set, or --set repeated, alike;
    a malformed pair is one line naming it."""
    from phyprobe.cli import build_parser
    from phyprobe.config_files import merge_sets
    from phyprobe.errors import UserError

    parser = build_parser(command[0])
    grouped = parser.parse_args([*command, "--set", "a.b=1", "c=x"])
    repeated = parser.parse_args([*command, "--set", "a.b=1", "--set", "c=x"])
    assert grouped.set == repeated.set == ["a.b=1", "c=x"]
    with pytest.raises(UserError, match=r"--set c: expected KEY=VALUE"):
        merge_sets({}, ["a.b=1", "c"], "physics")
