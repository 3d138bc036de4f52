"""Every converter's output through train.py (data=paper_mix) and eval.py at toy size, with the
official protocol of each public benchmark config; and the mix's sampling weights."""

import json

import dataset_fixtures as F
import numpy as np
import pandas as pd
import pytest
import torch
from hydra.errors import InstantiationException
from omegaconf import open_dict

from phyprobe.data.datasets import prepare
from phyprobe.data.datasets.leakage import LeakageError
from phyprobe.data.sampling import sampling_weights
from phyprobe.eval.run import run_eval
from phyprobe.testing.configs import CONFIGS, benchmark_eval_cfg, mix_train_cfg
from phyprobe.training.pipeline import train

# benchmark config -> (converter, options) writing its manifest
BENCHMARKS = {
    "videophy2": ("videophy2", {}),
    "videofeedback2": ("videofeedback2", {}),
    "pid": ("pid", {}),
    "implausibench": ("implausibench", {}),
    "videogen_rewardbench": ("videogen_rewardbench", {}),
    "videogen_rewardbench_overall": ("videogen_rewardbench", {"dim": "Overall"}),
    "monetbench": ("monetbench", {"annotation_codes": "higher_better", "standard_answer": "names_preferred"}),
    "rapidata_i2v": ("rapidata", {"coherence_votes": "for_better"}),  # as configs/benchmark/rapidata_i2v.yaml
}
# training component -> (converter, options): every converter, benchmark-only sets converted as split=train
TRAINING = {
    "videophy2": ("videophy2", {}),
    "videofeedback2": ("videofeedback2", {}),
    "monetbench": ("monetbench", {"annotation_codes": "higher_better", "standard_answer": "names_preferred"}),
    "rapidata": ("rapidata", {"split": "train", "coherence_votes": "for_better"}),  # a training set needs its direction
    "real_folder": ("real_folder", {}),
    "rated_folder": ("rated_folder", {}),
    "pid": ("pid", {"split": "train"}),
    "implausibench": ("implausibench", {"split": "train"}),
    "videogen_rewardbench": ("videogen_rewardbench", {"split": "train"}),
}
# The smallest copies that still hold a tie, a pair per prompt and both splits: extraction dominates the test's time.
SMALL = {
    "videophy2": {"captions": 1},
    "videofeedback2": {"prompts": 1},
    "pid": {"n": 2},
    "implausibench": {"n": 2},
    "videogen_rewardbench": {"prompts": 1},
    "monetbench": {"pairs": 3, "train_prompts": 1},
    "rapidata": {"pairs": 3},
    "real_folder": {"per_source": 2},
    "rated_folder": {"prompts": 1},
}
MAPS = ("videophy2", "videofeedback2", "monetbench", "rated_folder")


def convert(name, raw, out, **kw):
    if name in MAPS:
        kw["configs"] = str(CONFIGS)
    return prepare(name, raw, out, check_counts=False, **kw)


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    """Training copies (tag t) and benchmark copies (tag b) of every dataset, converted."""
    base = tmp_path_factory.mktemp("prepared")
    raws = {}
    for tag in ("t", "b"):
        for name, writer in F.WRITERS.items():
            root = base / "raw" / tag / name
            root.mkdir(parents=True)
            raws[tag, name] = writer(root, tag=tag, **SMALL[name])
    train = {c: convert(n, raws["t", n], base / "train" / c, **o) for c, (n, o) in TRAINING.items()}
    bench = {b: convert(n, raws["b", n], base / "bench" / b, **o) for b, (n, o) in BENCHMARKS.items()}
    return train, bench, base


BATCH = ["extract.batch_size=32"]  # the mix and its benchmarks extract in larger batches than TOY's


def test_every_converter_trains_in_the_paper_mix_and_every_public_benchmark_evaluates(prepared, tmp_path):
    train_dirs, bench, base = prepared
    cache = base / "cache"
    cfg = mix_train_cfg(tmp_path / "run", train_dirs, bench, cache, extra=BATCH)
    metrics = train(cfg)
    saved = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert saved["run"]["num_train_pairs"] == metrics["run"]["num_train_pairs"] > 0
    scores = pd.read_csv(tmp_path / "run" / "scores.csv")
    trained_sources = set(scores.loc[scores["split"] == "train", "source"])
    assert trained_sources == {
        "videophy2",
        "videofeedback2",
        "monetbench",
        "rapidata",
        "real_folder",
        "rated_folder",
        "pid",
        "implausibench",
        "videogen_rewardbench",
    }

    want = {
        "videophy2": ("correlation", "spearman"),
        "videofeedback2": ("pairwise", "pairwise_accuracy"),
        "pid": ("pid", "auroc"),
        "implausibench": ("pairwise", "pairwise_accuracy"),
        "videogen_rewardbench": ("videoalign", "accuracy_with_ties"),
        "videogen_rewardbench_overall": ("videoalign", "accuracy_without_ties"),
        "monetbench": ("monetbench", "tau_star"),
        "rapidata_i2v": ("videoalign", "accuracy_with_ties"),
    }
    for name, manifest in bench.items():
        res = run_eval(
            benchmark_eval_cfg(tmp_path / "eval" / name, name, manifest, tmp_path / "run", cache, extra=BATCH)
        )
        protocol, figure = want[name]
        leaf = res["results"][protocol][figure]
        assert leaf["n"] > 0 and np.isfinite(leaf["value"]), (name, leaf)
        assert res["results"][protocol]["coverage"]["value"] == 1.0, name  # every converted video scored


def test_external_scores_csv_on_a_converted_benchmark(prepared, tmp_path):
    """Another evaluator's ``video,score`` CSV names videos by file name; VideoPhy-2's human pc as the
    score must agree perfectly with the human pc under the official correlation protocol."""
    _, bench, _ = prepared
    from phyprobe.data.manifest import Manifest

    m = Manifest.load(bench["implausibench"])
    csv = tmp_path / "ext.csv"
    pd.DataFrame(
        {
            "video": [p.split("/")[-1] for p in m.videos["path"]],
            "score": [0.9 if not r else 0.1 for r in m.videos["is_real"]],
        }
    ).to_csv(csv, index=False)
    res = run_eval(
        benchmark_eval_cfg(
            tmp_path / "ib", "implausibench", bench["implausibench"], extra=[*BATCH, f"scores_csv={csv}"]
        )
    )
    assert res["results"]["pairwise"]["pairwise_accuracy"]["value"] == 1.0
    vp = Manifest.load(bench["videophy2"]).split("test")
    csv = tmp_path / "vp.csv"
    pd.DataFrame({"video": vp.videos["id"], "score": [md["pc"] for md in vp.videos["metadata"]]}).to_csv(
        csv, index=False
    )
    res = run_eval(
        benchmark_eval_cfg(
            tmp_path / "vp",
            "videophy2",
            bench["videophy2"],
            extra=[*BATCH, f"scores_csv={csv}", "higher_means=plausible"],
        )
    )
    assert res["results"]["correlation"]["spearman"]["value"] == pytest.approx(1.0)


def test_paper_mix_refuses_leaked_training_data(prepared, tmp_path):
    train_dirs, bench, base = prepared
    leaked = {**train_dirs, "implausibench": str(bench["implausibench"])}  # the benchmark itself, as split=test...
    cfg = mix_train_cfg(tmp_path, leaked, bench, base / "cache", extra=BATCH)
    with open_dict(cfg):
        cfg.data.source.leakage.splits = ["train", "val", "test"]  # ...read as training data
    with pytest.raises(LeakageError, match=r"content: training video 'implausibench:.*' ~ implausibench test video"):
        train(cfg)  # a user error: raised as itself, not wrapped in Hydra's InstantiationException


def test_paper_mix_names_a_component_that_was_not_prepared(prepared, tmp_path):
    train_dirs, bench, base = prepared
    cfg = mix_train_cfg(
        tmp_path, {**train_dirs, "videophy2": str(tmp_path / "nowhere")}, bench, base / "cache", extra=BATCH
    )
    with pytest.raises(
        InstantiationException, match=r"mix component 'videophy2': no manifest at .*nowhere.*phyprobe data prepare"
    ) as e:
        train(cfg)
    assert isinstance(e.value.__cause__, FileNotFoundError)


def test_sampling_weights_give_each_source_and_kind_its_share():
    pairs = pd.DataFrame(
        {
            "source": ["big"] * 90 + ["small"] * 10,
            "kind": ["generated_vs_generated"] * 60 + ["real_vs_real"] * 30 + ["real_vs_generated"] * 10,
            "correspondence": ["same_prompt"] * 60 + ["none"] * 30 + ["none"] * 5 + ["same_first_frame"] * 5,
        }
    )
    w = sampling_weights(
        pairs,
        {
            "source": {"big": 1.0, "small": 3.0},
            "kind": {"real_vs_real": 0.5, "real_vs_generated/none": 3.0, "real_vs_generated": 1.0},
        },
    )
    assert w.sum() == pytest.approx(1.0)
    by_source = pd.Series(w).groupby(pairs["source"]).sum()
    assert by_source["big"] == pytest.approx(0.25) and by_source["small"] == pytest.approx(0.75)
    big = pairs["source"] == "big"
    assert w[big & (pairs["kind"] == "real_vs_real")].sum() == pytest.approx(0.25 * 0.5 / 1.5)
    small_none = (pairs["source"] == "small") & (pairs["correspondence"] == "none")
    assert w[small_none].sum() == pytest.approx(0.75 * 3 / 4)  # the specific kind/correspondence name wins
    assert len(set(w[small_none])) == 1  # uniform within a (source, category)
    assert sampling_weights(pairs, None) is None
    with pytest.raises(ValueError, match=r"no weight for source\(s\) \['small'\]"):
        sampling_weights(pairs, {"source": {"big": 1.0}})


def test_per_dataset_extraction_then_training_on_their_mix_runs_no_encoder_forward(prepared, tmp_path, capsys):
    """``phyprobe extract`` on each of two prepared datasets with train.py's overrides, then train.py on the mix of
    both: the cache holds videos by file, not by the manifest that listed them, so the training encodes nothing
    (every frozen encoder's forward is counted by a global hook)."""
    from conftest import run_cli

    from phyprobe.encoders import FrozenEncoder

    train_dirs, bench, _ = prepared
    parts = {k: train_dirs[k] for k in ("videophy2", "real_folder")}
    cache = tmp_path / "cache"
    backbone = ["backbone=efficientnet_lite0", "backbone.image_size=64", "clip.num_frames=4"]
    for d in parts.values():
        code, out, err = run_cli(["extract", d, *backbone, "--cache", cache, "--workers", "0"], capsys, 300)
        assert code == 0 and "unreadable: 0" in out, err[-2000:]
    (encoded,) = [d for d in cache.iterdir() if d.name.startswith("efficientnet_lite0-")]  # one cache for both
    forwards = []
    hook = torch.nn.modules.module.register_module_forward_pre_hook(
        lambda module, args: forwards.append(type(module).__name__) if isinstance(module, FrozenEncoder) else None
    )
    try:
        cfg = mix_train_cfg(tmp_path / "run", parts, {"videophy2": bench["videophy2"]}, cache, extra=backbone)
        metrics = train(cfg)
    finally:
        hook.remove()
    assert metrics["run"]["num_train_pairs"] > 0
    assert forwards == []
    assert [d.name for d in cache.iterdir() if d.name.startswith("efficientnet_lite0-")] == [encoded.name]
