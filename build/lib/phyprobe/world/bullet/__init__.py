"""The 3D physics world's engine: pybullet rigid bodies rendered on the CPU by TinyRenderer.

``scene`` samples what a scene contains and how it looks, ``meshes`` builds the low-poly visual
meshes, ``simulate`` runs pybullet, ``violations`` breaks a plausible run, ``render`` draws tracks,
and ``engine`` puts them behind ``phyprobe.world.engine.Engine`` as ``ENGINE``.
"""

from phyprobe.world.bullet.engine import BulletEngine, BulletScene

ENGINE = BulletEngine()

__all__ = ["ENGINE", "BulletEngine", "BulletScene"]
