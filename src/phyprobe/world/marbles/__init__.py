"""The marbles world's engine: rigid discs in a box seen from the side or on a billiard table seen from
above, simulated and drawn by the project's own numpy code.

``scene`` samples what a scene contains and how it looks, ``simulate`` runs the physics, ``violations``
breaks a plausible run, ``render`` draws tracks, and ``engine`` puts them behind
``phyprobe.world.engine.Engine`` as ``ENGINE``. It is the project's stand-in for an unseen world: no
default trains on it.
"""

from phyprobe.world.marbles.engine import MarblesEngine, MarblesScene

ENGINE = MarblesEngine()

__all__ = ["ENGINE", "MarblesEngine", "MarblesScene"]
