"""Train a PhyProbe head: `python train.py [group=option ...]` (see configs/train.yaml)."""

import sys

import hydra
from omegaconf import DictConfig

from phyprobe.encoders import WeightsNotFoundError
from phyprobe.training.pipeline import train


@hydra.main(version_base="1.3", config_path="configs", config_name="train")
def main(cfg: DictConfig) -> float:
    try:
        metrics = train(cfg)
    except WeightsNotFoundError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    world = metrics["benchmarks"].get("world_test", {}).get("world", {})
    return (world.get("same_scene_accuracy_severity_ge_0.5") or {}).get("value", float("nan"))


if __name__ == "__main__":
    main()
