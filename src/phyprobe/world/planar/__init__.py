"""The 2D physics world's engine: pymunk rigid bodies in a side view, drawn by OpenCV.

``scene`` samples what a scene contains and how it looks, ``simulate`` runs pymunk, ``violations`` breaks a
plausible run, ``render`` draws tracks, and ``engine`` puts them behind ``phyprobe.world.engine.Engine`` as
``ENGINE``. Its clips keep the manifest source ``world`` (and its benchmarks the names ``world_*``), the names
they had when it was the project's only world, so video ids and published figures stay valid.
"""

from phyprobe.world.planar.engine import PlanarEngine, PlanarScene

ENGINE = PlanarEngine()

__all__ = ["ENGINE", "PlanarEngine", "PlanarScene"]
