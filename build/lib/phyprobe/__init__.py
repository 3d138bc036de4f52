"""phyprobe: a learned evaluator of physical consistency in videos."""

__version__ = "0.1.0"

__all__ = ["Scorer", "__version__"]


def __getattr__(name):
    # Lazy so that `import phyprobe` (and the CLI's start-up) does not pull torch in unless needed.
    if name == "Scorer":
        from .scorer import Scorer

        return Scorer
    raise AttributeError(name)
