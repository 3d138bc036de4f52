"""``phyprobe data``: prepare a dataset, check which way its labels point, describe a manifest, check training
data for leakage."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ...errors import user_error_line

STRING_OPTIONS = ("coherence_votes", "annotation_codes", "standard_answer")  # direction options, taken as written


def _value(text: str):
    import yaml

    return yaml.safe_load(text)


def add_cli(sub) -> None:
    from ...config_files import add_set_option

    p = sub.add_parser("data", help="convert public datasets into the pair manifest; describe and check manifests")
    data = p.add_subparsers(dest="data_command", required=True)

    prep = data.add_parser("prepare", help="convert a dataset as published into a pair manifest")
    prep.add_argument(
        "name",
        help="videophy2 | videofeedback2 | pid | implausibench | videogen_rewardbench | "
        "monetbench | rapidata | real_folder | rated_folder",
    )
    prep.add_argument(
        "--root", required=True, help="where the downloaded files are (folder, unzipped archive or HF cache)"
    )
    prep.add_argument("--out", required=True, help="manifest directory to write")
    add_set_option(prep, "a converter option, e.g. dim=Overall videos=/data/vp2_videos split=train")
    prep.add_argument("--magnitudes", help="magnitude map YAML (default: configs/magnitudes/NAME.yaml)")
    prep.add_argument(
        "--no-check-counts", action="store_true", help="convert even if row counts differ from the published ones"
    )
    prep.set_defaults(func=_prepare)

    ck = data.add_parser("check", help="measure which way a dataset's votes or codes point (exit 1: likely inversion)")
    ck.add_argument("name", help="rapidata | monetbench")
    ck.add_argument("--root", required=True, help="where the downloaded files are (as for prepare)")
    add_set_option(
        ck,
        "the reading to test, e.g. coherence_votes=for_worse (rapidata), annotation_codes=higher_better "
        "standard_answer=names_preferred (monetbench)",
    )
    ck.add_argument("--magnitudes", help="magnitude map YAML (monetbench; default: configs/magnitudes/monetbench.yaml)")
    ck.set_defaults(func=_check)

    st = data.add_parser("stats", help="counts by source, kind, correspondence and split, with plots")
    st.add_argument("manifest", help="a manifest folder (videos.jsonl)")
    st.add_argument("--plots", help="folder for the plots (default: MANIFEST/stats)")
    st.add_argument(
        "--maps", help="magnitude maps to plot beside the histograms (default: the project's configs/magnitudes)"
    )
    st.set_defaults(func=_stats)

    lk = data.add_parser(
        "leakage", help="fail if training videos, prompts or first frames occur in a benchmark's test split"
    )
    lk.add_argument("manifest", help="the training manifest")
    lk.add_argument("--benchmark", action="append", required=True, help="benchmark name or YAML (repeatable)")
    lk.add_argument(
        "--allow", action="append", default=[], help="an allowed overlap: KIND, BENCHMARK or BENCHMARK:KIND"
    )
    lk.add_argument("--cache", default=".cache/leakage", help="where video fingerprints are cached")
    lk.set_defaults(func=_leakage)

    ix = data.add_parser(
        "index",
        help="compute each video's sha256, frame count, duration and first-frame hash once, in parallel, into "
        "MANIFEST/video_index*.jsonl, for every later extraction, leakage check and run to read",
    )
    ix.add_argument("manifest", help="a manifest folder (videos.jsonl)")
    ix.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="worker processes (default: every core)")
    ix.add_argument(
        "--share",
        metavar="I/N",
        help="index only share I of N of the videos (one task of a job array; each share writes a file of its own)",
    )
    ix.set_defaults(func=_index)


def _prepare(args) -> int:
    from ...config_files import split_sets
    from ..manifest import Manifest
    from . import ConversionError, prepare

    opts = {}
    for k, v in split_sets(args.set):
        opts[k] = _value(v) if k not in ("videos", "csv", "split", "dim", "subset", *STRING_OPTIONS) else v
    if args.magnitudes:
        opts["magnitudes"] = args.magnitudes
    try:
        out = prepare(args.name, args.root, args.out, check_counts=not args.no_check_counts, **opts)
    except (ConversionError, FileNotFoundError, ValueError) as e:
        print(user_error_line(e), file=sys.stderr)
        return 1
    m = Manifest.load(out)
    print(
        f"{args.name}: {len(m.videos)} videos, {len(m.pairs)} pairs -> {out} (report: {out / 'conversion_report.json'})"
    )
    return 0


CHECKS = {"rapidata": "rapidata", "monetbench": "monetbench"}


def _check(args) -> int:
    """0: consistent or inconclusive (printed), 1: a likely inversion, 2: bad input (one line naming the file)."""
    import importlib

    from ...config_files import split_sets
    from . import ConversionError

    if args.name not in CHECKS:
        print(
            user_error_line(f"no direction check for {args.name!r}; checks exist for {sorted(CHECKS)}"), file=sys.stderr
        )
        return 2
    opts = dict(split_sets(args.set))
    if args.magnitudes:
        opts["magnitudes"] = args.magnitudes
    check = importlib.import_module(f"{__package__}.{CHECKS[args.name]}").check
    try:
        res = check(Path(args.root), **opts)
    except TypeError as e:
        print(user_error_line(f"{args.name}: {e}"), file=sys.stderr)
        return 2
    except (ConversionError, FileNotFoundError, ValueError, OSError) as e:
        print(user_error_line(e), file=sys.stderr)
        return 2
    print("\n".join(res.lines()))
    return 1 if res.verdict == "inverted" else 0


def _stats(args) -> int:
    from ..manifest import Manifest
    from .stats import plot_magnitude_maps, plot_stats, print_stats

    m = Manifest.load(args.manifest)
    print_stats(m)
    plots = Path(args.plots) if args.plots else Path(args.manifest) / "stats"
    files = plot_stats(m, plots)
    from ...config_files import config_dir

    maps = Path(args.maps) if args.maps else config_dir() / "magnitudes"
    if maps.is_dir():
        files.append(plot_magnitude_maps(maps, plots))
    print("plots: " + ", ".join(str(f) for f in files))
    return 0


def _index(args) -> int:
    import argparse

    from ...errors import UserError
    from ...features.extract import launcher_share, share_arg
    from ..manifest import Manifest
    from ..video_index import build

    try:
        share = share_arg(args.share) if args.share else launcher_share()
    except argparse.ArgumentTypeError as e:
        raise UserError(f"--share {args.share}: {e}") from None
    if args.workers < 1:
        raise UserError(f"--workers {args.workers}: at least 1")
    manifest = Manifest.load(args.manifest)
    done, total, errors = build(manifest, args.workers, share)
    part = "" if share is None else f" (share {share[0]}/{share[1]})"
    print(f"{manifest.root}: {done} videos indexed now, {total - done} already{part}; unreadable: {len(errors)}")
    for r in errors:
        print(user_error_line(f"{r['path']}: {r['error']}"), file=sys.stderr)
    return 1 if errors else 0


def _leakage(args) -> int:
    from ..manifest import Manifest
    from .leakage import LeakageError, check_leakage

    try:
        found = check_leakage(Manifest.load(args.manifest), args.benchmark, allow=args.allow, cache_dir=args.cache)
    except LeakageError as e:
        print(user_error_line(e), file=sys.stderr)
        return 1
    print(f"no disallowed overlap ({len(found)} allowed)")
    return 0
