"""Baselines that run anywhere: same-encoder feature surprisal and an optical-flow motion heuristic."""
