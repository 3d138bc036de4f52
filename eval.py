"""Evaluate a scorer, a training run or external scores on a benchmark (see configs/eval.yaml)."""

import hydra
from omegaconf import DictConfig

from phyprobe.eval.run import run_eval


@hydra.main(version_base="1.3", config_path="configs", config_name="eval")
def main(cfg: DictConfig) -> None:
    run_eval(cfg)


if __name__ == "__main__":
    main()
