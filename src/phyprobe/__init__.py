"""phyprobe: a learned evaluator of physical consistency in videos."""

__version__ = "0.1.0"
