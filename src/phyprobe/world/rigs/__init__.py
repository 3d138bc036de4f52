"""The rigs world's engine: constrained mechanisms (pendulums struck by a swinging pendulum, a block sliding
down an incline into another, a cart on a spring) in a flat, outlined, diagram-like look, simulated and
drawn by the project's own numpy code.

``scene`` samples what a scene contains and how it looks, ``simulate`` runs the physics, ``violations``
breaks a plausible run, ``render`` draws tracks, and ``engine`` puts them behind
``phyprobe.world.engine.Engine`` as ``ENGINE``. It is a second unseen-renderer world that no default trains
on, on which transfer evidence may be chosen (the marbles world stays the check, read only afterwards).
"""

from phyprobe.world.rigs.engine import RigsEngine, RigsScene

ENGINE = RigsEngine()

__all__ = ["ENGINE", "RigsEngine", "RigsScene"]
