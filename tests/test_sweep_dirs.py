"""Sweep folders keep readable names when paths are overridden: `train.py -m experiment=no_cal,no_mag seed=0,1
paths.data_dir=/data/x backbone.checkpoint=runs/s0/dynamics` writes `<sweep>/experiment-no_cal+seed-0/`, not a
`backbone.checkpoint=/runs/s0/...` tree, and a name every command takes back as an override's value."""

import re

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from phyprobe.config_files import config_dir, readable_dirname, register_resolvers


def test_paths_and_hydra_options_are_left_out_of_the_name():
    overrides = [
        "seed=1",
        "experiment=no_cal",
        "backbone.checkpoint=outputs/judge-paper/default/seed${seed}/dynamics",
        "paths.data_dir=/work/data",
        "hydra.sweep.dir=outputs/ablations",
        "+hydra.job.env_set.X=1",
        "loss.lambda_cal=0.1",
    ]
    assert readable_dirname(overrides) == "experiment-no_cal+loss.lambda_cal-0.1+seed-1"
    assert readable_dirname(["paths.cache_dir=/tmp/c"]) == "default"


def test_the_train_config_names_sweep_jobs_by_it():
    register_resolvers()
    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
        cfg = compose(
            "train",
            overrides=["experiment=no_cal", "seed=2", "paths.data_dir=/work/data", "backbone.checkpoint=a/b/dynamics"],
            return_hydra_config=True,
        )
    subdir = OmegaConf.select(cfg, "hydra.sweep.subdir")  # resolved as Hydra resolves it for each job
    assert subdir == "experiment-no_cal+seed-2"


def test_ten_long_overrides_give_a_short_distinct_name_that_keeps_what_the_sweep_varies():
    common = [f"data.source.some_rather_long_option_name_{i}=value_number_{i}" for i in range(10)]
    names = {readable_dirname([*common, f"experiment={e}", f"seed={s}"]) for e in ("full", "no_cal") for s in (0, 1)}
    assert len(names) == 4  # distinct
    for name in names:
        assert len(name.encode()) <= 200 and name.count("seed-") == 1 and "experiment-" in name, name
        assert re.search(r"\+\d+more-[0-9a-f]{8}$", name)  # says how many overrides were left out
    assert readable_dirname(["experiment=no_cal", "seed=1"]) == "experiment-no_cal+seed-1"  # short names stay whole


@pytest.mark.parametrize(
    "overrides",
    [
        ["experiment=no_cal", "seed=0"],
        ["experiment=[toy,no_cal]", "seed=1", "optim.lr=1e-3"],
        ["+backbone.within={layers:[1,2],grids:[1,4]}", "data.source.where='a b'", "loss.lambda_cal=0.5"],
        [f"data.source.some_rather_long_option_name_{i}=value_number_{i}" for i in range(10)],
    ],
)
def test_every_name_is_taken_back_as_an_override_value(overrides):
    from hydra.core.override_parser.overrides_parser import OverridesParser

    name = readable_dirname(overrides)
    path = f"outputs/multirun/2026-01-01_00-00-00/{name}/scorer"
    assert OverridesParser.create().parse_override(f"scorer={path}").value() == path


def test_names_whose_characters_were_replaced_stay_distinct():
    a = readable_dirname(["experiment=[toy,no_cal]"])
    b = readable_dirname(["experiment=toy_no_cal"])
    assert a != b and a.startswith("experiment-toy_no_cal-") and b == "experiment-toy_no_cal"
