"""Train and evaluate one design at three seeds, across worlds and on builds no run trains on, in one resumable command.

The driver is phyprobe.training.design_runs (its docstring says what runs and where it goes)::

    python research/judge_design.py --out outputs/vjepa2 -- backbone=vjepa2
    python research/judge_design.py --out outputs/judge-default          # the embedded default: about 1.5 h on 2 cores
"""

from phyprobe.training.design_runs import main

if __name__ == "__main__":
    main()
