"""Prompt suites: the prompts a generator is asked to make, with what a judge needs to rate the videos.

``format`` is the one JSONL format (read by the judges and the leaderboard); ``published`` converts Sci-VBench's and
SVBench's released records to it; ``build`` makes new suites from seed paradigms with three agents (understanding,
synthesis, critic) behind any OpenAI-compatible server; ``leakage`` is the deterministic check that a prompt does not
state its own answer; ``stats`` counts what a suite holds.
"""

from .format import DIFFICULTIES, SuiteError, SuiteRecord, read_suite, write_suite

__all__ = ["DIFFICULTIES", "SuiteError", "SuiteRecord", "read_suite", "write_suite"]
