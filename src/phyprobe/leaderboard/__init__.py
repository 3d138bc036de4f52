"""Rank video generators by the scorer, rubric judges and other evaluators, with paired statistics over prompts.

>>> from phyprobe.leaderboard import read_generations, scorer_column, build_leaderboard
>>> gens = read_generations("generations/")              # ROOT/<generator>/<prompt_id>.mp4
>>> cols = [scorer_column("outputs/demo/scorer", "phyprobe", gens, Path("lb"))]
>>> board = build_leaderboard(gens, cols)                # the dict leaderboard.json holds

``phyprobe leaderboard`` (:mod:`phyprobe.leaderboard.cli`) does the same and writes the tables and plots. Names load
lazily, so the command's parser imports neither pandas nor torch.
"""

_NAMES = {
    "build_leaderboard": "board",
    "compare_to_baseline": "board",
    "quality_confound": "board",
    "Column": "evaluators",
    "csv_column": "evaluators",
    "geophys_column": "evaluators",
    "judge_columns": "evaluators",
    "scorer_column": "evaluators",
    "GenerationsError": "generations",
    "read_generations": "generations",
}
__all__ = sorted(_NAMES)


def __getattr__(name):  # lazily, so that the command's parser imports neither pandas nor torch
    if name in _NAMES:
        import importlib

        return getattr(importlib.import_module(f".{_NAMES[name]}", __name__), name)
    raise AttributeError(name)
