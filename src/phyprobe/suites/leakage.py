"""A deterministic check that a prompt does not give away its own answer, run on every prompt the agents write.

The critic is a model and may miss a leak; this check trusts no model. It flags a prompt for any of:

``ground_truth_overlap``
    at least half of the ground truth's content words, and at least two of them, appear in the prompt.
``test_point_overlap``
    the same against the test point.
``explanatory_wording``
    a word or phrase stating a mind or a reason rather than something a camera sees ("realizes", "decides",
    "wants", "because", "in order to", "as a result"...).
``mechanism_words``
    a word naming the physics behind the event ("gravity", "momentum", "friction", "due to gravity"...).

**Content words.** Lower-cased words, minus the function words of :data:`STOPWORDS` (articles, pronouns,
prepositions, conjunctions, auxiliaries, number words), each reduced by :func:`stem`, a few suffix rules that make
"falls" and "falling", "topples" and "toppled", "realizes" and "realized" one word each. It is deliberately simple
(irregular forms such as "fell" stay apart): the check must be the same everywhere and explainable word by word. scikit-learn's
English list is not used: it treats "move", "empty", "full", "fill", "fire", "thick" and "thin" as stop words,
which are outcome words here.

**Why half, and at least two.** A prompt has to name its scene, so it shares the ground truth's nouns: the ball,
the ramp, the cup. A paradigm's ground truth is a general statement of the outcome (in the seed files, 6 to 13
content words), and the nouns a prompt must share with it are few: every example scenario of the project's seed
files shares at most a third of its ground truth's content words (``tests/test_suites_leakage.py`` checks this on
the files). A prompt that also carries the ground truth's verbs and qualifiers, the outcome itself ("the stack
collapses", "stops dead", "bounces lower each time"), shares more than half. The floor of two shared words keeps a
two-word ground truth ("The tower topples") from being flagged by one noun the prompt must name. The overlap is
measured against the paradigm's ground truth and test point only, not against an instance's expected outcome: that
one names every object of the scene, so a clean prompt shares most of it.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

OVERLAP_THRESHOLD = 0.5
MIN_SHARED = 2

STOPWORDS = frozenset(
    """
    a an the this that these those there here it its itself he him his she her hers they them their theirs we us our
    you your i me my mine one ones someone something anyone anything everyone everything nothing nobody
    and or but nor so yet if then than as while when whenever where wherever whether though although unless until
    of in on at by for with without within into onto upon from to toward towards over under above below beneath
    across along around about against among between through throughout during before after behind beside besides
    near off out up down away back again also just only even still very quite rather too much many more most less
    least some any each every all both either neither other another such same own few several
    is are was were be been being am do does did done doing have has had having can could may might must shall
    should will would not no nor never
    two three four five six seven eight nine ten first second third once twice
    what which who whom whose why how
    """.split()
)

# a mind or a reason stated instead of shown (matched on stems, so "realizes", "realized", "realizing" all match)
EXPLANATORY = (
    "realize",
    "realise",
    "decide",
    "understand",
    "know",
    "think",
    "believe",
    "expect",
    "want",
    "intend",
    "wish",
    "hope",
    "feel",
    "aware",
    "recognize",
    "recognise",
    "figure out",
    "try to",
    "in order to",
    "so as to",
    "so that",
    "because",
    "therefore",
    "thus",
    "hence",
    "as a result",
    "due to",
    "thanks to",
    "caused by",
    "which causes",
    "causing",
    "which means",
    "meaning that",
    "leads to",
    "results in",
)
# the physics named instead of shown
MECHANISM = (
    "gravity",
    "gravitational",
    "momentum",
    "inertia",
    "friction",
    "conservation",
    "conserved",
    "energy",
    "kinetic",
    "torque",
    "newton",
    "physics",
    "physical law",
    "law of",
    "centre of mass",
    "center of mass",
    "equilibrium",
    "buoyancy",
    "air resistance",
    "centrifugal",
    "centripetal",
)

_WORD = re.compile(r"[a-z]+")


def stem(word: str) -> str:
    """A crude stem: ``falls/falling -> fall``, ``toppled/topples -> toppl``, ``carried/carries -> carri``."""
    w = word.lower()
    if len(w) <= 3:
        return w
    for suffix, keep in (("ies", "y"), ("ied", "y"), ("sses", "ss")):
        if w.endswith(suffix) and len(w) > len(suffix) + 1:
            w = w[: -len(suffix)] + keep
            break
    else:
        if w.endswith("ing") and len(w) > 5:
            w = _undouble(w[:-3])
        elif w.endswith("ed") and len(w) > 4:
            w = _undouble(w[:-2])
        elif w.endswith("es") and len(w) > 4 and w[:-2].endswith(("s", "x", "z", "ch", "sh")):
            w = w[:-2]
        elif w.endswith("s") and not w.endswith(("ss", "us", "is")) and len(w) > 3:
            w = w[:-1]
    if w.endswith("ly") and len(w) > 5:
        w = w[:-2]
    if w.endswith("e") and len(w) > 3:
        w = w[:-1]
    if w.endswith("y") and len(w) > 3:
        w = w[:-1] + "i"
    return w


def _undouble(w: str) -> str:
    """``stopp -> stop``, ``dropp -> drop``; ``roll``, ``pass``, ``buzz`` keep their pair."""
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "lsz":
        return w[:-1]
    return w


def words(text: str) -> list[str]:
    return _WORD.findall((text or "").lower().replace("\u2019", "'").replace("'s ", " "))


def content_stems(text: str) -> dict[str, str]:
    """``{stem: the first word of text with it}`` for the content words of ``text``."""
    out: dict[str, str] = {}
    for w in words(text):
        if w not in STOPWORDS and len(w) > 1:
            out.setdefault(stem(w), w)
    return out


def _phrases(text: str, phrases) -> list[str]:
    """The phrases of ``phrases`` that occur in ``text``, word by word on stems."""
    stems = [stem(w) for w in words(text)]
    joined = " " + " ".join(stems) + " "
    found = []
    for p in phrases:
        key = " " + " ".join(stem(w) for w in words(p)) + " "
        if key in joined:
            found.append(p)
    return found


@dataclass
class Overlap:
    """How much of a reference text's content the prompt repeats."""

    fraction: float
    shared: list[str]  # the prompt's words whose stems the reference has
    reference_words: int

    @property
    def flagged(self) -> bool:
        return self.fraction >= OVERLAP_THRESHOLD and len(self.shared) >= MIN_SHARED


def overlap(prompt: str, reference: str) -> Overlap | None:
    """The share of ``reference``'s content stems found in ``prompt`` (None for a reference with no content)."""
    ref = content_stems(reference)
    if not ref:
        return None
    got = content_stems(prompt)
    shared = [got[s] for s in ref if s in got]
    return Overlap(round(len(shared) / len(ref), 4), shared, len(ref))


@dataclass
class LeakageReport:
    """The check's verdict on one prompt: ``flags`` names each reason, the other fields say which words."""

    flagged: bool
    flags: list[str]
    ground_truth_overlap: float | None = None
    ground_truth_shared: list[str] = field(default_factory=list)
    test_point_overlap: float | None = None
    test_point_shared: list[str] = field(default_factory=list)
    explanatory: list[str] = field(default_factory=list)
    mechanism: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return asdict(self)


def check(prompt: str, ground_truth: str | None = None, test_point: str | None = None) -> LeakageReport:
    """The deterministic leakage check of one prompt (see the module docstring)."""
    flags: list[str] = []
    gt = overlap(prompt, ground_truth) if ground_truth else None
    tp = overlap(prompt, test_point) if test_point else None
    if gt is not None and gt.flagged:
        flags.append("ground_truth_overlap")
    if tp is not None and tp.flagged:
        flags.append("test_point_overlap")
    explanatory = _phrases(prompt, EXPLANATORY)
    mechanism = _phrases(prompt, MECHANISM)
    if explanatory:
        flags.append("explanatory_wording")
    if mechanism:
        flags.append("mechanism_words")
    return LeakageReport(
        flagged=bool(flags),
        flags=flags,
        ground_truth_overlap=gt.fraction if gt else None,
        ground_truth_shared=gt.shared if gt else [],
        test_point_overlap=tp.fraction if tp else None,
        test_point_shared=tp.shared if tp else [],
        explanatory=explanatory,
        mechanism=mechanism,
    )
