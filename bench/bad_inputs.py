"""The project's bad-input figures: every case of the generated corpus (phyprobe.testing.bad_inputs)
through every command that takes it, counted as

- clean: used correctly (a score in [0, 1], cached, evaluated), or refused with exit code != 0 and
  one line ``phyprobe: error: <file>: <reason>`` naming the file and matching the expected reason;
- traceback: an exception escaped the command (a raw traceback for the user);
- wrong answer: exit code 0 where the input should have failed, a score outside [0, 1] or not valid
  JSON, or a refusal of an input that should have been used;
- unclear: refused, but the message does not name the file or the reason.

Commands run in-process through the functions their entry points call (``phyprobe.cli.main``;
``train`` / ``run_eval`` inside ``report_user_errors``, which is all train.py / eval.py add), which
keeps a run to minutes; the test suite runs each entry point as a real subprocess as well.

    python bench/bad_inputs.py
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import re
import shutil
import stat
import tempfile
import traceback
from collections import Counter
from pathlib import Path

import torch

from phyprobe.cli import main as cli_main
from phyprobe.data.manifest import write_jsonl
from phyprobe.errors import report_user_errors
from phyprobe.testing.bad_inputs import Case, csv_cases, manifest_cases, out_cases, video_cases, video_row
from phyprobe.testing.videos import write_toy_manifest

ERROR = "phyprobe: error: "


def run(fn) -> tuple[int | None, str, str, str | None]:
    """(exit code, stdout, stderr, escaped traceback or None) of ``fn()``."""
    out, err = io.StringIO(), io.StringIO()
    tb = None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = fn()
        except SystemExit as e:
            code = e.code
        except Exception:  # noqa: BLE001 - what the user would see as a raw traceback
            code, tb = None, traceback.format_exc()
    return code, out.getvalue(), err.getvalue(), tb


def judge_refusal(case: Case, code, err: str, name: str | None = None) -> str:
    if code in (0, None):
        return "wrong answer"
    lines = [line for line in err.splitlines() if line.startswith(ERROR) or line.startswith("error: ")]
    named = [line for line in lines if str(name or case.path) in line]
    if not named:
        return "unclear"
    return "clean" if re.search(case.reason, named[0]) else "unclear"


def score_case(scorer: Path, case: Case, good: Path) -> str:
    code, out, err, tb = run(lambda: cli_main(["score", str(scorer), str(case.path), str(good), "--json"]))
    if tb:
        return "traceback"
    try:
        rows = {
            Path(d["video"]): d for d in (json.loads(line, parse_constant=_no_constant) for line in out.splitlines())
        }
    except ValueError:
        return "wrong answer"
    if any("score" in d and not 0.0 <= d["score"] <= 1.0 for d in rows.values()) or "score" not in rows.get(good, {}):
        return "wrong answer"
    mine = rows.get(case.path, {})
    if case.expect in ("ok", "warn") or (case.expect == "either" and "score" in mine):
        return "clean" if "score" in mine and code == 0 else "wrong answer"
    if "score" in mine:
        return "wrong answer"
    return judge_refusal(case, code, err)


def _no_constant(c):
    raise ValueError(f"non-JSON constant {c}")


def extract_case(root: Path, case: Case, good: Path, i: int) -> str:
    m = root / f"extract_{i:02d}"
    m.mkdir()
    write_jsonl(m / "videos.jsonl", [video_row("bad", str(case.path)), video_row("good", str(good))])
    code, out, err, tb = run(
        lambda: cli_main(
            [
                "extract",
                str(m),
                "--image-size",
                "32",
                "--num-frames",
                "4",
                "--workers",
                "0",
                "--cache",
                str(root / "cache"),
            ]
        )
    )
    if tb:
        return "traceback"
    done = re.search(r"videos: (\d+) of 2", out)
    if not done:
        return "wrong answer"
    n = int(done.group(1))
    if case.expect in ("ok", "warn") or (case.expect == "either" and n == 2):
        return "clean" if n == 2 and code == 0 else "wrong answer"
    if n != 1:
        return "wrong answer"
    return judge_refusal(case, code, err)


def manifest_case(root: Path, case: Case, command: str) -> str:
    if command == "extract":
        code, _, err, tb = run(
            lambda: cli_main(["extract", str(case.path), "--image-size", "32", "--cache", str(root / "cache")])
        )
    else:
        from phyprobe.testing.configs import TOY, compose_train
        from phyprobe.training.pipeline import train

        cfg = compose_train(
            root / "run",
            [
                *TOY,
                "data=manifest",
                f"data.source.path={case.path}",
                "backbone=efficientnet_lite0",  # as tests/test_bad_inputs.py: the default backbone has no weights
                "backbone.weights=null",
                f"paths.cache_dir={root / 'cache'}",
            ],
        )
        code, _, err, tb = run(lambda: _reporting(train, cfg))
    return "traceback" if tb else judge_refusal(case, code, err)


def _reporting(fn, *args):
    with report_user_errors(debug=False):
        fn(*args)
    return 0


def csv_case(root: Path, case: Case, manifest: Path) -> str:
    from phyprobe.eval.run import run_eval
    from phyprobe.testing.configs import compose_eval

    cfg = compose_eval(
        root / "eval",
        [
            "benchmark=world_test",
            f"benchmark.manifest={manifest}",
            "benchmark.where.source=toy",
            f"scores_csv={case.path}",
            "report=false",
            "n_boot=0",
        ],
    )
    code, _, err, tb = run(lambda: _reporting(run_eval, cfg))
    if tb:
        return "traceback"
    if case.expect == "ok":
        return "clean" if code == 0 else "wrong answer"
    return judge_refusal(case, code, err)


def option_cases(manifest: Path, scorer: Path, good: Path, cache: Path) -> list[tuple[str, list[str], str]]:
    ex = ["extract", str(manifest), "--cache", str(cache)]
    return [
        (f"extract {' '.join(a)}", ex + a, r)
        for a, r in [
            (["--batch-size", "0"], "must be >= 1"),
            (["--shard-size", "0"], "must be >= 1"),
            (["--num-frames", "0"], "must be >= 1"),
            (["--workers", "-1"], "must be >= 0"),
            (["--image-size", "big"], "not an integer"),
            (["--encoder", "resnet"], "unknown encoder"),
        ]
    ] + [("score --batch-size 0", ["score", str(scorer), str(good), "--batch-size", "0"], "batch")]


def _as_found(path: Path):
    """What ``--out`` must leave as it was: a regular file's bytes, anything else's kind, a symlink's target."""
    if path.is_symlink():
        return "link", os.readlink(path), _as_found(path.resolve()) if path.exists() else None
    if not path.exists():
        return None
    st = os.stat(path)
    return ("file", path.read_bytes()) if stat.S_ISREG(st.st_mode) else ("other", stat.S_IFMT(st.st_mode))


def out_case(scorer: Path, case: Case, good: Path) -> str:
    """``phyprobe score SCORER GOOD --out PATH``: a target that is not a results file of ours is refused in one line
    and left byte-identical; ours (new, empty, torn) is written and answers the video."""
    from phyprobe.scorer.results import ResultFile

    before = _as_found(case.path)
    fmt = ["--format", case.extra["format"]] if "format" in case.extra else []
    argv = ["score", str(scorer), str(good), "--out", str(case.path), "--no-progress", "--workers", "0", *fmt]
    code, _, err, tb = run(lambda: cli_main(argv))
    if tb:
        return "traceback"
    if case.expect == "ok":
        return "clean" if code == 0 and str(good) in ResultFile(case.path).finished() else "wrong answer"
    if _as_found(case.path) != before:
        return "wrong answer"
    return judge_refusal(case, code, err)


def scorer_cases(root: Path, scorer: Path, good: Path) -> list[tuple[str, Path, str]]:
    from safetensors.torch import load_file, save_file

    out = [
        ("missing scorer directory", root / "no_scorer", "no_scorer"),
        ("video passed as the scorer", good, "good.mp4"),
    ]
    for name, edit, named in [
        ("broken model.safetensors", lambda d: (d / "model.safetensors").write_bytes(b"\0" * 100), "model.safetensors"),
        (
            "encoder name changed",
            lambda d: (d / "config.json").write_text(
                (d / "config.json").read_text().replace('"efficientnet_lite0"', '"efficientnet_lite9"')
            ),
            "config.json",
        ),
        ("config.json not JSON", lambda d: (d / "config.json").write_text("{not json"), "config.json"),
    ]:
        d = root / name.replace(" ", "_")
        shutil.copytree(scorer, d)
        edit(d)
        out.append((name, d, named))
    nan = root / "nan_head"
    shutil.copytree(scorer, nan)
    w = load_file(str(nan / "model.safetensors"))
    save_file(
        {k: torch.full_like(v, float("nan")) if v.is_floating_point() else v for k, v in w.items()},
        str(nan / "model.safetensors"),
    )
    out.append(("head with NaN weights", nan, "nan_head"))
    return out


def export_tiny_scorer(out: Path) -> Path:
    from phyprobe.encoders import from_config
    from phyprobe.head import PhyProbeHead
    from phyprobe.io.video import ClipSpec
    from phyprobe.scorer import export_scorer

    enc = from_config("efficientnet_lite0", image_size=32, weights=None)
    torch.manual_seed(0)
    head = PhyProbeHead(enc.feature_dim, stats=("mean", "std", "max"), hidden=16)
    return export_scorer(
        out,
        enc,
        head,
        ClipSpec(4),
        "float16",
        {"feature_dim": enc.feature_dim, "stats": ["mean", "std", "max"], "hidden": 16, "dropout": 0.0},
    )


def main() -> None:
    logging.disable(logging.INFO)
    torch.set_num_threads(1)
    results: list[tuple[str, str, str]] = []  # (command, case, outcome)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        videos = video_cases(root / "videos")
        good = next(c.path for c in videos if c.name == "good video")
        scorer = export_tiny_scorer(root / "scorer")
        toy = root / "toy"
        write_toy_manifest(toy, num_scenes=6, frames=6, size=(32, 48))
        for i, c in enumerate(videos):
            results.append(("phyprobe score", c.name, score_case(scorer, c, good)))
            results.append(("phyprobe extract", c.name, extract_case(root, c, good, i)))
        for c in out_cases(root / "outs", good):
            results.append(("phyprobe score --out", c.name, out_case(scorer, c, good)))
        for c in manifest_cases(root / "manifests", good):
            results.append(("phyprobe extract", f"manifest: {c.name}", manifest_case(root, c, "extract")))
            results.append(("train.py", f"manifest: {c.name}", manifest_case(root, c, "train")))
        ids = [f"s{s}_{v}" for s in (5,) for v in ("plausible", "violated")]
        for c in csv_cases(root / "csv", ids):
            results.append(("eval.py", f"CSV: {c.name}", csv_case(root, c, toy)))
        for name, argv, reason in option_cases(toy, scorer, good, root / "cache"):
            code, _, err, tb = run(lambda: cli_main(argv))
            outcome = (
                "traceback"
                if tb
                else ("wrong answer" if code in (0, None) else ("clean" if re.search(reason, err) else "unclear"))
            )
            results.append(("phyprobe " + name.split()[0], name, outcome))
        for name, path, named in scorer_cases(root / "scorers", scorer, good):
            code, out, err, tb = run(lambda: cli_main(["score", str(path), str(good), "--json"]))
            if tb:
                outcome = "traceback"
            elif name == "head with NaN weights":
                try:
                    rows = [json.loads(line, parse_constant=_no_constant) for line in out.splitlines()]
                    ok = all("score" not in d or 0.0 <= d["score"] <= 1.0 for d in rows) and code not in (0, None)
                    outcome = "clean" if ok else "wrong answer"
                except ValueError:
                    outcome = "wrong answer"
            else:
                outcome = "wrong answer" if code in (0, None) else ("clean" if named in err else "unclear")
            results.append(("phyprobe score", f"scorer: {name}", outcome))
    width = max(len(c) for _, c, _ in results)
    for cmd, case, outcome in results:
        if outcome != "clean":
            print(f"  {outcome:>12}  {cmd:<17} {case:<{width}}")
    total = Counter(o for _, _, o in results)
    inputs = len({c for _, c, _ in results})
    print(
        f"inputs: {inputs}  runs (input x command): {len(results)}  clean: {total['clean']}  "
        f"tracebacks: {total['traceback']}  wrong answers: {total['wrong answer']}  unclear messages: {total['unclear']}"
    )
    for cmd in sorted({c for c, _, _ in results}):
        sub = Counter(o for c, _, o in results if c == cmd)
        print(
            f"  {cmd:<17} runs {sum(sub.values()):3d}  clean {sub['clean']:3d}  tracebacks {sub['traceback']:2d}  "
            f"wrong {sub['wrong answer']:2d}  unclear {sub['unclear']:2d}"
        )


if __name__ == "__main__":
    main()
