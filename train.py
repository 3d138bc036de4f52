"""Train a PhyProbe head: `python train.py [group=option ...]` (see configs/train.yaml)."""

import hydra
from omegaconf import DictConfig

from phyprobe.training.pipeline import train


@hydra.main(version_base="1.3", config_path="configs", config_name="train")
def main(cfg: DictConfig) -> float:
    metrics = train(cfg)
    return metrics.get("test", {}).get("same_scene_acc_sev50", {}).get("value", float("nan"))


if __name__ == "__main__":
    main()
