"""Which way a dataset's votes or codes point: declared by the user, or measured on the user's files.

Some published annotations do not say which video their numbers favour. Rapidata's Coherence weights
may be shares of the vote for the *better* video or for the one that "has more glitches" (the
wording of Rapidata's own coherence task); VisionRewardDB's "physics law" / "movement reality" codes
and MonetBench's ``standard_answer`` have no published key at all. Reading such a number the wrong
way flips every label, silently. So each converter takes the direction as a named option, and where
it is not given, measures it: the agreement of the dimension with the dataset's own overall judgement
(or with its other dimensions) on the same pairs. A dimension that picks the same video as the
overall judgement in clearly fewer than half of the pairs is read the wrong way round.

The measure is a sign agreement on the pairs where both judgements pick a video (ties left out), with
scipy's exact binomial test against 1/2 and its Wilson interval. ``phyprobe data check`` prints it.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

import numpy as np
from scipy.stats import binomtest

from .base import ConversionError

LEVEL = 0.95  # confidence level of the intervals


class DirectionError(ConversionError):
    """The direction of a dimension is neither declared nor established by the files."""


def choice(name: str, value, allowed: tuple[str, ...]) -> str | None:
    """A declared direction, checked against its allowed values (None: not declared)."""
    if value is None:
        return None
    value = str(value).strip()
    if value not in allowed:
        raise ValueError(f"--set {name}={value}: must be one of {list(allowed)}")
    return value


@dataclass
class Agreement:
    """How often dimension ``a`` picks the same video as ``b`` on the pairs where both pick one."""

    a: str
    b: str
    k: int  # pairs where both pick the same video
    n: int  # pairs where both pick a video
    low: float = float("nan")
    high: float = float("nan")
    p: float = float("nan")  # two-sided exact binomial test against 1/2

    @property
    def rate(self) -> float:
        return self.k / self.n if self.n else float("nan")

    @property
    def verdict(self) -> str:
        """``agrees`` (interval above 1/2), ``inverted`` (below 1/2) or ``inconclusive``."""
        if self.n == 0:
            return "inconclusive"
        if self.low > 0.5:
            return "agrees"
        if self.high < 0.5:
            return "inverted"
        return "inconclusive"

    def text(self) -> str:
        if self.n == 0:
            return f"{self.a} vs {self.b}: no pair where both pick a video (n=0)"
        return (
            f"{self.a} vs {self.b}: agreement {self.rate:.3f} [{self.low:.3f}, {self.high:.3f}] "
            f"({self.k}/{self.n} pairs, n={self.n}, p={self.p:.2g})"
        )


def agreement(better_a, better_b, a: str, b: str, level: float = LEVEL) -> Agreement:
    """``better_*``: per pair +1 when the first video is the better one, -1 when the second is, 0 for a
    tie or no judgement."""
    x, y = np.sign(np.asarray(better_a, float)), np.sign(np.asarray(better_b, float))
    both = (x != 0) & (y != 0) & np.isfinite(x) & np.isfinite(y)
    n, k = int(both.sum()), int((x[both] == y[both]).sum())
    if n == 0:
        return Agreement(a, b, 0, 0)
    t = binomtest(k, n, 0.5)
    ci = t.proportion_ci(confidence_level=level, method="wilson")
    return Agreement(a, b, k, n, float(ci.low), float(ci.high), float(t.pvalue))


@dataclass
class Decision:
    """The test of one option's reading: the dimension, read as the option says, against a reference."""

    option: str  # e.g. "coherence_votes"
    value: str  # the reading that was tested
    how: str  # "declared", "declared by <file>" or "default reading, not declared"
    evidence: Agreement
    inverse: str  # the other reading, which a likely inversion points to

    @property
    def verdict(self) -> str:
        return self.evidence.verdict

    def text(self) -> str:
        how = self.how
        if self.verdict == "inverted":
            return (
                f"LIKELY INVERSION: {self.option}={self.value} ({how}): {self.evidence.text()}; "
                f"the files read the other way round: --set {self.option}={self.inverse}"
            )
        if self.verdict == "agrees":
            return f"consistent: {self.option}={self.value} ({how}): {self.evidence.text()}"
        return f"inconclusive: {self.option}={self.value} ({how}): {self.evidence.text()}"


@dataclass
class CheckResult:
    """What ``phyprobe data check`` measured on one dataset's files."""

    dataset: str
    root: str
    files: dict[str, int] = field(default_factory=dict)  # file -> pairs (or rows) read
    skipped: list[str] = field(default_factory=list)  # "file (why)"
    agreements: list[Agreement] = field(default_factory=list)  # every dimension against every other
    decisions: list[Decision] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        v = [d.verdict for d in self.decisions]
        if "inverted" in v:
            return "inverted"
        if v and all(x == "agrees" for x in v):
            return "consistent"
        return "inconclusive"

    def decision(self, option: str) -> Decision | None:
        return next((d for d in self.decisions if d.option == option), None)

    def lines(self) -> list[str]:
        out = [f"{self.dataset}: {self.root}"]
        out += [f"  read {f}: {n} rows" for f, n in self.files.items()]
        out += [f"  skipped {s}" for s in self.skipped]
        if self.agreements:
            out.append(f"  agreement between dimensions (pairs where both pick a video; Wilson {LEVEL:.0%} interval):")
            out += [f"    {a.text()}" for a in self.agreements]
        out += [f"  note: {n}" for n in self.notes]
        out += [f"  {d.text()}" for d in self.decisions]
        if not self.decisions:
            out.append("  no reference to measure a direction against")
        out.append(f"verdict: {self.verdict}")
        return out


def warn(msg: str) -> None:
    """One line on stderr, for what a conversion decided without being told (never silent)."""
    print(" ".join(f"warning: {msg}".split()), file=sys.stderr)
