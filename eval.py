"""Evaluate a scorer, a training run or external scores on a benchmark (see configs/eval.yaml).

A user's mistake ends in one line naming the file and the reason (``PHYPROBE_DEBUG=1`` for the traceback)."""

import hydra
from omegaconf import DictConfig

from phyprobe.errors import report_user_errors
from phyprobe.eval.run import run_eval


@hydra.main(version_base="1.3", config_path="configs", config_name="eval")
def main(cfg: DictConfig) -> None:
    with report_user_errors():
        run_eval(cfg)


if __name__ == "__main__":
    main()
