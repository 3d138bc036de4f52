"""What this process may use of the machine it runs on.

``os.cpu_count()`` is the node's cores, not this process's: under SLURM (``--cpus-per-task``), a container's CPU
quota or ``taskset`` a process may use a few of them, and decoders, workers and OpenMP threads sized by the node's
count oversubscribe them many times over (32 decoders x 190 threads on a busy node).
"""

from __future__ import annotations

import os
from pathlib import Path


def usable_cores() -> int:
    """Cores this process may run on: its CPU affinity, capped by SLURM's ``SLURM_CPUS_PER_TASK`` and by the cgroup
    v2 CPU quota (``cpu.max``) when either is set."""
    cores = len(os.sched_getaffinity(0))
    per_task = os.environ.get("SLURM_CPUS_PER_TASK", "")
    if per_task.isdigit() and int(per_task) > 0:
        cores = min(cores, int(per_task))
    quota = _cgroup_quota()
    if quota is not None:
        cores = min(cores, quota)
    return max(1, cores)


def _cgroup_quota(path: Path = Path("/sys/fs/cgroup/cpu.max")) -> int | None:
    """Whole cores of the cgroup's CPU quota (``"200000 100000"`` is 2), None when unlimited or unreadable."""
    try:
        quota, period = path.read_text().split()[:2]
    except (OSError, ValueError):
        return None
    if quota == "max" or not quota.isdigit() or not period.isdigit() or int(period) == 0:
        return None
    return max(1, int(quota) // int(period))
