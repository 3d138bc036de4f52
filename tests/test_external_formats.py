"""Other evaluators' scores read as they publish them (phyprobe.eval.external.FORMATS): VideoPhy-2-AutoEval's
CSV, VideoScore2's result JSON, VideoAlign's out_single.csv, on benchmarks converted from their published
layout (tests/dataset_fixtures.py), where the same file name sits in every generator's folder; and the
published counts of VideoGen-RewardBench."""

import json
import logging
import re
from pathlib import Path

import dataset_fixtures as F
import numpy as np
import pandas as pd
import pytest

from phyprobe.data.datasets import prepare
from phyprobe.data.manifest import Manifest
from phyprobe.errors import UserError
from phyprobe.eval.external import FORMATS, ExternalScoresError, read_external_scores
from phyprobe.eval.run import run_eval
from phyprobe.testing.configs import CONFIGS, compose_eval


@pytest.fixture(scope="module")
def vp2(tmp_path_factory):
    """VideoPhy-2 as published (3 captions x 3 bucket folders, one file name per caption) and its conversion."""
    base = tmp_path_factory.mktemp("vp2")
    raw = F.videophy2(base / "raw", tag="x", captions=3)
    out = prepare("videophy2", raw, base / "prepared", check_counts=False, configs=str(CONFIGS))
    return raw, out, Manifest.load(out).split("test")


@pytest.fixture(scope="module")
def vgrb(tmp_path_factory):
    base = tmp_path_factory.mktemp("vgrb")
    raw = F.videogen_rewardbench(base / "raw", tag="x", prompts=2)
    out = prepare("videogen_rewardbench", raw, base / "prepared", check_counts=False)
    return raw, out, Manifest.load(out)


def _ratings(m: Manifest) -> dict[str, float]:
    """An integer 1-5 rating per video (as AutoEval and VideoScore2 give), not equal to the human pc."""
    rng = np.random.default_rng(7)
    return {v: float(rng.integers(1, 6)) for v in m.videos["id"]}


def _rel(m: Manifest, vid: str, root: Path) -> str:
    path = m.videos.set_index("id").loc[vid, "path"]
    return m.video_path(path).resolve().relative_to(root.resolve()).as_posix()


def _autoeval_csv(path: Path, m: Manifest, scores: dict[str, float], videopath) -> Path:
    """The layout of VIDEOPHY2/inference.py's output: input columns + score, written with pandas' index."""
    meta = m.videos.set_index("id")["metadata"]
    df = pd.DataFrame(
        {"caption": [meta[v]["prompt"] for v in scores], "videopath": [videopath(v) for v in scores]}
    ).assign(score=list(scores.values()))
    df.to_csv(path)  # inference.py: out.to_csv(args.output_csv)
    assert path.read_text().splitlines()[0] == ",caption,videopath,score"
    return path


def _metrics(out: Path, overrides: list[str], manifest: Path) -> dict:
    cfg = compose_eval(out, ["benchmark=videophy2", f"benchmark.manifest={manifest}", "report=false", *overrides])
    got = run_eval(cfg)["results"]
    written = json.loads((out / "metrics.json").read_text())["results"]
    assert written == json.loads(json.dumps(got))
    return written


def test_videophy2_autoeval_output_with_its_root_gives_the_figures_of_our_own_csv(vp2, tmp_path):
    raw, out, m = vp2
    ratings = _ratings(m)
    # AutoEval ran in the download folder, its input CSV naming videos/<bucket>/<file>.mp4
    theirs = _autoeval_csv(tmp_path / "output_pc.csv", m, ratings, lambda v: _rel(m, v, raw))
    ours = tmp_path / "ours.csv"  # the project's own format: manifest id, violation score (higher = worse)
    pd.DataFrame({"video": list(ratings), "score": [-r for r in ratings.values()]}).to_csv(ours, index=False)
    a = _metrics(
        tmp_path / "a", [f"scores_csv={theirs}", "scores_format=videophy2_autoeval", f"scores_root={raw}"], out
    )
    b = _metrics(tmp_path / "b", [f"scores_csv={ours}"], out)
    assert a == b
    assert a["correlation"]["coverage"]["value"] == 1.0 and a["pairwise"]["pairwise_accuracy"]["n"] > 0


def test_same_file_name_in_every_bucket_needs_the_root(vp2, tmp_path):
    raw, _, m = vp2
    ratings = _ratings(m)
    names = {v: m.videos.set_index("id").loc[v, "path"].split("/")[-1] for v in ratings}
    assert len(set(names.values())) < len(names)  # the published layout: one file name per caption
    bare = _autoeval_csv(tmp_path / "bare.csv", m, ratings, names.get)
    with pytest.raises(ExternalScoresError) as e:
        read_external_scores(bare, m, fmt="videophy2_autoeval")
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(f"{bare}:2: video ") and "is ambiguous" in msg
    assert "same file name is in several folders" in msg and "scores_root=" in msg
    # relative to the folder AutoEval ran in, or to the videos folder: every video its own score
    for root in (raw, raw / "videos"):
        csv = _autoeval_csv(tmp_path / "rel.csv", m, ratings, lambda v, root=root: _rel(m, v, root))
        got = read_external_scores(csv, m, fmt="videophy2_autoeval", root=root)
        assert got == {v: -r for v, r in ratings.items()}
    # through eval.py: one line naming the file and the fix
    cfg = compose_eval(
        tmp_path / "e",
        [
            "benchmark=videophy2",
            f"benchmark.manifest={vp2[1]}",
            f"scores_csv={bare}",
            "scores_format=videophy2_autoeval",
        ],
    )
    with pytest.raises(ExternalScoresError, match=r"bare\.csv:2: video .* is ambiguous.*scores_root="):
        run_eval(cfg)


def test_autoeval_unparsed_outputs_are_left_out_not_ranked(vp2, tmp_path, caplog):
    """inference.py writes 0 when the generated text held no number ("Defaulting to 0"): not a rating."""
    raw, _, m = vp2
    ratings = _ratings(m)
    first = next(iter(ratings))
    ratings[first] = 0.0
    csv = _autoeval_csv(tmp_path / "out.csv", m, ratings, lambda v: _rel(m, v, raw))
    with caplog.at_level(logging.WARNING):
        got = read_external_scores(csv, m, fmt="videophy2_autoeval", root=raw)
    assert first not in got and len(got) == len(ratings) - 1
    assert "1 rows are errors" in caplog.text and f"1 of {len(m.videos)} manifest videos have no score" in caplog.text


def test_videoscore2_result_json_on_videophy2_by_url_and_by_root(vp2, tmp_path):
    """eval/eval_vs2.py's records: video_name is the file stem (the same in every bucket), video_url the S3 URL."""
    raw, _, m = vp2
    ratings = _ratings(m)
    meta = m.videos.set_index("id")["metadata"]
    records = []
    for i, (v, r) in enumerate(ratings.items()):
        url = meta[v]["video_url"]
        records.append(
            {
                "video_name": url.rsplit("/", 1)[-1][: -len(".mp4")],
                "video_url": url,
                "prompt": meta[v]["prompt"],
                "v_score_gt": None,
                "t_score_gt": meta[v]["sa"],
                "p_score_gt": meta[v]["pc"],
                "v_score_model": 3,
                "t_score_model": 4,
                "p_score_model": None if i == 0 else int(r),  # the output's scores did not parse
                "output": "<think>...</think>\n\n(1) visual quality: 3\n(2) text-to-video alignment: 4\n"
                f"(3) physical/common-sense consistency: {int(r)}\n",
            }
        )
    path = tmp_path / "vs2_infer_2fps.json"
    path.write_text(json.dumps(records, indent=4))
    want = {v: -r for i, (v, r) in enumerate(ratings.items()) if i > 0}
    assert read_external_scores(path, m, fmt="videoscore2") == want  # the URL's bucket/file tail
    assert read_external_scores(path, m, fmt="videoscore2", root=raw / "videos") == want
    # by the stem alone (no URL), the bucket folders cannot be told apart
    for r in records:
        r["video_url"] = None
    path.write_text(json.dumps(records))
    with pytest.raises(ExternalScoresError, match=r"vs2_infer_2fps\.json: record 2: video .* is ambiguous"):
        read_external_scores(path, m, fmt="videoscore2")


def test_videoscore2_result_json_on_videogen_rewardbench_by_stem(vgrb, tmp_path):
    """On VideoGen-RewardBench VideoScore2 writes video_url null and video_name <model>_<id> (unique stems)."""
    _, _, m = vgrb
    ratings = _ratings(m)
    stems = {v: Path(p).stem for v, p in zip(m.videos["id"], m.videos["path"])}
    recs = [{"video_name": stems[v], "video_url": None, "p_score_model": int(r)} for v, r in ratings.items()]
    path = tmp_path / "vs2.json"
    path.write_text(json.dumps(recs))
    assert read_external_scores(path, m, fmt="videoscore2") == {v: -r for v, r in ratings.items()}


def test_videoalign_out_single_csv(vgrb, tmp_path):
    """eval_videogen_rewardbench.py's out_single.csv: path relative to datasets/eval (the benchmark folder)."""
    raw, _, m = vgrb
    rng = np.random.default_rng(3)
    ids = list(m.videos["id"])
    df = pd.DataFrame(
        {
            "path": [_rel(m, v, raw) for v in ids],
            "model": [v.split("/")[1] for v in ids],
            "prompt": "a metal ball rolls",
            "fps": 8.0,
            "num_frames": F.FRAMES,
            "reward_VQ": rng.normal(size=len(ids)),
            "reward_MQ": rng.normal(size=len(ids)),
            "reward_TA": rng.normal(size=len(ids)),
        }
    )
    df["reward_Overall"] = df["reward_VQ"] + df["reward_MQ"] + df["reward_TA"]
    assert all(p.startswith("videos/") for p in df["path"])
    csv = tmp_path / "out_single.csv"
    df.to_csv(csv, index=False)
    assert read_external_scores(csv, m, fmt="videoalign", root=raw) == dict(zip(ids, -df["reward_MQ"]))
    assert read_external_scores(csv, m, fmt="videoalign") == dict(zip(ids, -df["reward_MQ"]))  # unique tails
    overall = read_external_scores(csv, m, fmt="videoalign", score_col="reward_Overall", root=raw)
    assert overall == dict(zip(ids, -df["reward_Overall"]))
    # a mapping of one's own: any columns, either direction
    own = read_external_scores(csv, m, video_col="path", score_col="reward_TA", higher_means="plausible")
    assert own == dict(zip(ids, -df["reward_TA"]))


def test_bad_format_column_or_root_is_one_line_naming_the_file(vp2, tmp_path):
    raw, _, m = vp2
    plain = tmp_path / "plain.csv"
    pd.DataFrame({"video": list(m.videos["id"]), "score": 1.0}).to_csv(plain, index=False)
    cases = [
        (dict(fmt="videophy2_autoeval"), r"plain\.csv:1: no video column 'videopath' \(format videophy2_autoeval"),
        (dict(score_col="reward"), r"plain\.csv:1: no score column 'reward' \(format phyprobe"),
        (dict(root=tmp_path / "nowhere"), r"plain\.csv: scores_root .*nowhere' is not a directory"),
        (dict(fmt="videoscore2"), r"plain\.csv:1: not valid JSON"),
    ]
    for kw, pattern in cases:
        with pytest.raises(ExternalScoresError) as e:
            read_external_scores(plain, m, **kw)
        assert "\n" not in str(e.value) and re.search(pattern, str(e.value)), (kw, str(e.value))
    with pytest.raises(UserError, match=r"unknown format 'vs2'; known: phyprobe, videophy2_autoeval, videoscore2"):
        read_external_scores(plain, m, fmt="vs2")
    with pytest.raises(UserError, match="higher_means must be 'violation' or 'plausible'"):
        read_external_scores(plain, m, higher_means="better")
    assert {f.higher_means for n, f in FORMATS.items() if n != "phyprobe"} == {"plausible"}


def test_videogen_rewardbench_count_off_the_card_is_one_warning_with_both_figures(tmp_path, caplog):
    raw = F.videogen_rewardbench(tmp_path / "raw", tag="c", prompts=2)
    with caplog.at_level(logging.WARNING, logger="phyprobe.data.datasets.base"):
        prepare("videogen_rewardbench", raw, tmp_path / "out")  # counts checked: a warning, not an error
    [line] = [r.getMessage() for r in caplog.records if "published" in r.getMessage()]
    assert line.startswith(f"{raw / 'videogen-rewardbench.csv'}: found 6 pairs (6 videos), published: ")
    assert "26.5k" in line and "25,234 pairs / 4,691 videos" in line and "\n" not in line
