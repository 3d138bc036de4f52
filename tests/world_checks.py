"""The check every world's violation tests share: severity is the size of the break."""

from __future__ import annotations

SEVERITIES = (0.0, 0.25, 0.5, 0.75, 1.0)


def assert_grows_with_severity(m: list[float], label: str, tol: float) -> None:
    """``m``: a violation's measure at each of SEVERITIES. It is measurable at the second severity, larger by more
    than ``tol`` at 1, and never falls by more than a tenth of its range (so a measure that jitters is not a break)."""
    assert m[-1] > m[0] + tol, f"{label}: no violation measurable at severity 1 ({m})"
    assert m[1] > m[0], f"{label}: no violation measurable at severity {SEVERITIES[1]} ({m})"
    slack = 0.1 * (m[-1] - m[0])
    assert all(b >= a - slack for a, b in zip(m, m[1:])), f"{label}: not monotone in severity: {m}"
