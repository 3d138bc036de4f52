"""The project's bad-input figures: every case of the generated corpus (phyprobe.testing.bad_inputs) through every
command that takes it, one table per class of input and the totals:

- video: damaged, truncated, rotated, tiny, non-video and unreachable files (score, extract; beside a good one);
- format: containers and pixel formats (10-bit, 4:4:4, gray), streams cut where no index tells, a directory scan;
- batch: one bad file among good ones (score DIR to stdout and --out, extract);
- out: --out targets that are not ours, /dev/stdout, two writers, EFBIG, ENOSPC, a closed stdout pipe;
- manifest, csv, options: broken manifests (extract, train.py), score CSVs (eval.py), option values;
- scorer: broken and tampered scorer directories (bad JSON, absurd sizes, a pickle, paths leading out);
- training: non-finite or absurd labels and weights, deep nesting, no informative pair, a diverging head;
- service: bad requests to phyprobe serve (NUL bytes, not a video, malformed JSON, oversized bodies);
- judge: phyprobe judge run against a hostile server (401/403, malformed retry-after, an echoed key, none scored);
- inputs: files handed to leaderboard, suite build, summarize and data prepare, tampered (baselines with strings,
  NaN or 1e308, /dev/zero, deep nesting; judge and CSV scores past the statistics' range; a billion-laughs seed; a
  zip bomb).

A run is clean when the input was used correctly or refused with a non-zero exit and one line naming the file and
the reason; the others are counted as tracebacks (or hangs), wrong answers with exit 0 (and other wrong answers:
a refusal of good input, a 5xx), unclear messages, and runs that altered a user file (every file that existed
before a run and that it was not asked to write is hashed before and after). Exits 1 if any run is not clean.

    python bench/bad_inputs.py [--quick] [--record]

``--quick``: the slow cases left out (the --out cases that start processes, a training that diverges; the service
decodes in threads). ``--record``: writes results/bad_inputs.csv (one row per class and a total, with the code version).
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import pandas as pd
import torch

from phyprobe.eval.bench_record import BENCHMARKS_CSV, version_label
from phyprobe.testing import bad_inputs as bi

RESULTS = BENCHMARKS_CSV.with_name("bad_inputs.csv")
CLASSES = (
    "video", "format", "batch", "out", "manifest", "csv", "options", "scorer", "training", "service", "judge", "inputs",
)  # fmt: skip


def run_all(root: Path, quick: bool) -> tuple[list[bi.Outcome], dict[str, float]]:
    s = bi.Setting.make(root, quick)
    video = bi.video_cases(root / "videos")
    steps = {
        "video": lambda: bi.video_runs(s, "video", video),
        "format": lambda: bi.video_runs(s, "format", bi.format_cases(root / "formats")) + bi.scan_runs(s),
        "batch": lambda: bi.batch_runs(s, video),
        "out": lambda: bi.out_runs(s),
        "manifest": lambda: bi.manifest_runs(s),
        "csv": lambda: bi.csv_runs(s),
        "options": lambda: bi.option_runs(s),
        "scorer": lambda: bi.scorer_runs(s),
        "training": lambda: bi.training_runs(s),
        "service": lambda: bi.service_runs(s),
        "judge": lambda: bi.judge_runs(s),
        "inputs": lambda: bi.input_runs(s),
    }
    results, seconds = [], {}
    for cls in CLASSES:
        t = time.perf_counter()
        results += steps[cls]()
        seconds[cls] = time.perf_counter() - t
        print(
            f"  {cls}: {sum(o.cls == cls for o in results)} runs in {seconds[cls]:.0f} s", file=sys.stderr, flush=True
        )
    return results, seconds


def tally(runs: list[bi.Outcome]) -> dict[str, int]:
    n = Counter(o.outcome for o in runs)
    return {
        "cases": len(runs),
        "clean": sum(o.clean for o in runs),
        "tracebacks": n["traceback"] + n["hang"],
        "wrong_exit0": sum(o.outcome == "wrong answer" and o.code == 0 for o in runs),
        "wrong_other": sum(o.outcome == "wrong answer" and o.code != 0 for o in runs),
        "unclear": n["unclear"],
        "files_altered": sum(bool(o.altered) for o in runs),
    }


def print_tables(results: list[bi.Outcome], seconds: dict[str, float]) -> dict[str, dict[str, int]]:
    tables = {}
    for cls in CLASSES:
        runs = [o for o in results if o.cls == cls]
        tables[cls] = t = tally(runs)
        print(f"\n{cls} ({seconds[cls]:.0f} s)")
        print(f"  {'command':<22} {'case':<60} outcome")
        for o in runs:
            if not o.clean:
                note = f"; altered {o.altered}" if o.altered else ""
                print(f"  {o.command:<22} {o.case[:60]:<60} {o.outcome} (exit {o.code}){note}")
                if o.detail:
                    print("      " + " ".join(o.detail.split())[-400:])
        print("  " + "  ".join(f"{k} {v}" for k, v in t.items()))
    tables["total"] = tally(results)
    print("\n" + f"{'class':<10}" + "".join(f"{k:>14}" for k in tables["total"]))
    for cls, t in tables.items():
        print(f"{cls:<10}" + "".join(f"{v:>14}" for v in t.values()))
    return tables


def record(tables: dict[str, dict[str, int]], path: Path = RESULTS) -> Path:
    """One row per class and the total: (class, cases, clean, tracebacks, wrong_exit0, files_altered, version)."""
    version = version_label()
    cols = ["cases", "clean", "tracebacks", "wrong_exit0", "files_altered"]
    rows = [{"class": cls, **{c: t[c] for c in cols}, "version": version} for cls, t in tables.items()]
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows, columns=["class", *cols, "version"]).to_csv(path, index=False)
    return path


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="leave out the slow cases (processes, a diverging training)")
    p.add_argument("--record", action="store_true", help=f"write {RESULTS.relative_to(RESULTS.parents[1])}")
    args = p.parse_args()
    logging.disable(logging.INFO)
    torch.set_num_threads(1)
    t = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        results, seconds = run_all(Path(tmp), args.quick)
    tables = print_tables(results, seconds)
    print(f"\n{len(results)} runs in {time.perf_counter() - t:.0f} s")
    if args.record:
        print(f"recorded in {record(tables)}")
    return 0 if all(o.clean for o in results) else 1


if __name__ == "__main__":
    sys.exit(main())
