"""Fit the self-supervised dynamics model on plausible clips: `python train_dynamics.py [overrides]`
(see configs/dynamics.yaml); then `python train.py backbone=dynamics` uses it as a frozen encoder."""

import sys

import hydra
from omegaconf import DictConfig

from phyprobe.encoders import WeightsNotFoundError
from phyprobe.training.dynamics import train_dynamics


@hydra.main(version_base="1.3", config_path="configs", config_name="dynamics")
def main(cfg: DictConfig) -> float:
    try:
        summary = train_dynamics(cfg)
    except WeightsNotFoundError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    return summary["val_l1"]


if __name__ == "__main__":
    main()
