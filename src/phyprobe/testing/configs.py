"""The project's real Hydra configs composed as train.py and eval.py compose them, with toy-size overrides, for
tests and benchmarks that run a training or an evaluation in seconds (a source checkout: the configs/ folder)."""

from __future__ import annotations

from pathlib import Path

from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

from phyprobe.config_files import SOURCE_ROOT

CONFIGS = SOURCE_ROOT / "configs"

TOY = [
    "backbone.image_size=64",
    "clip.num_frames=4",
    "trainer.max_epochs=2",
    "trainer.enable_progress_bar=false",
    "trainer.log_every_n_steps=1",
    "optim.batch_size=8",
    "extract.batch_size=8",
    "extract.num_workers=0",
]


def compose_train(tmp_path: Path, overrides: list[str], config_name: str = "train") -> DictConfig:
    """``backbone.image_size=N`` sizes whichever encoder the run builds: the backbone itself, or the base
    encoder of a dynamics model fitted in the run (``fit.base``, the default backbone)."""
    sizes = [o for o in overrides if o.startswith("backbone.image_size=")]
    rest = [f"paths.output_dir={tmp_path}", *(o for o in overrides if o not in sizes)]
    with initialize_config_dir(version_base="1.3", config_dir=str(CONFIGS)):
        if sizes and "fit" in compose(config_name, overrides=rest).backbone:
            sizes = [o.replace("backbone.", "backbone.fit.base.", 1) for o in sizes]
        return compose(config_name, overrides=[*rest, *sizes])


def compose_eval(tmp_path: Path, overrides: list[str]) -> DictConfig:
    """eval.py's config writing into ``tmp_path``, with 200 bootstrap draws unless ``overrides`` say otherwise."""
    with initialize_config_dir(version_base="1.3", config_dir=str(CONFIGS)):
        return compose("eval", overrides=[f"paths.output_dir={tmp_path}", "n_boot=200", *overrides])
