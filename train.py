"""Train a PhyProbe head: `python train.py [group=option ...]` (see configs/train.yaml).

A user's mistake ends in one line naming the file and the reason (``PHYPROBE_DEBUG=1`` for the traceback)."""

import hydra
from omegaconf import DictConfig

from phyprobe.config_files import register_resolvers
from phyprobe.errors import report_user_errors
from phyprobe.training.pipeline import train

register_resolvers()  # the sweep folders' names (configs/train.yaml, hydra.sweep.subdir)


@hydra.main(version_base="1.3", config_path="configs", config_name="train")
def main(cfg: DictConfig) -> float:
    with report_user_errors():
        metrics = train(cfg)
    world = metrics["benchmarks"].get("world_test", {}).get("world", {})
    return (world.get("same_scene_accuracy_severity_ge_0.5") or {}).get("value", float("nan"))


if __name__ == "__main__":
    main()
