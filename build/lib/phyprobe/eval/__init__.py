"""Evaluation: metrics with bootstrap intervals, benchmark protocols, external scores, reports.

Submodules are imported where used (``phyprobe.eval.metrics`` etc.) so that scoring code does not pay
for matplotlib.
"""
