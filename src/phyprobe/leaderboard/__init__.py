"""Rank video generators by the scorer, rubric judges and other evaluators, with paired statistics over prompts.

>>> from phyprobe.leaderboard import read_generations, scorer_column, build_leaderboard
>>> gens = read_generations("generations/")              # ROOT/<generator>/<prompt_id>.mp4
>>> cols = [scorer_column("outputs/demo/scorer", "phyprobe", gens, Path("lb"))]
>>> board = build_leaderboard(gens, cols)                # the dict leaderboard.json holds

``phyprobe leaderboard`` (:mod:`phyprobe.leaderboard.cli`) does the same and writes the tables and plots.
"""

from .board import build_leaderboard, compare_to_baseline, quality_confound
from .evaluators import Column, csv_column, judge_columns, scorer_column
from .generations import GenerationsError, read_generations

__all__ = [
    "Column",
    "GenerationsError",
    "build_leaderboard",
    "compare_to_baseline",
    "csv_column",
    "judge_columns",
    "quality_confound",
    "read_generations",
    "scorer_column",
]
