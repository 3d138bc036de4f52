"""The 3D physics world's engine: pybullet rigid bodies rendered on the CPU by TinyRenderer.

``scene`` samples what a scene contains and how it looks, ``meshes`` builds the low-poly visual
meshes, ``simulate`` runs pybullet, ``violations`` breaks a plausible run, ``render`` draws tracks,
and ``engine`` puts them behind ``phyprobe.world.engine.Engine`` as ``ENGINE``.
"""

from phyprobe.world.world3d.engine import World3DEngine, World3DScene

ENGINE = World3DEngine()

__all__ = ["ENGINE", "World3DEngine", "World3DScene"]
