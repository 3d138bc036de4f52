"""Rubric judges beside the learned evaluator: an MLLM judge behind any OpenAI-compatible server
(Sci-VBench-style rubric judge, SVBench's EVA), VBench's vision tools, and agreement metrics.

Their per-video scores enter ``eval`` exactly as an external evaluator's CSV does, so PhyProbe, the
judges, other evaluators and human ratings are compared under the same protocols and in one table.
"""
