"""The deterministic leakage check on a hand-made set of prompts: every planted leak (the ground truth restated or
paraphrased, the test point repeated, a mind or a reason stated, the physics named) is flagged with the words that
flag it, and every clean prompt, including ones that must name the ground truth's objects, passes; the seed
library's example scenarios are clean prompts with room to spare under the threshold."""

from __future__ import annotations

import pytest

from phyprobe.suites.leakage import OVERLAP_THRESHOLD, check, stem
from phyprobe.suites.seeds import load_seed_files

SUPPORT_GT = (
    "The unsupported object falls straight down immediately, accelerating, until it stops on the next surface below."
)
SUPPORT_TP = (
    "Whether an object left with nothing beneath it drops at once and speeds up, instead of hovering, drifting "
    "sideways or sinking slowly."
)
HIT_GT = "The moving ball stops dead at contact and the resting ball rolls on in the same direction at nearly the same speed."
CUP_GT = "The ball is revealed unchanged in the same spot when the cup comes up."
BOUNCE_GT = "Each bounce peaks lower than the one before, none reaches the release height, and the ball soon comes to rest on the floor."
HELP_GT = "The bystander picks up the dropped object and hands it back to the person who was reaching for it."
EDGE_GT = "The marble drops off the edge and falls to the floor."

# (name, prompt, ground truth, test point, the flags it must get)
CASES = [
    # clean: they name the scene, and so share a few of the ground truth's nouns, but not its outcome
    (
        "board pulled",
        "A hand slides a thin wooden board out from under a ceramic mug that sits on the board between two stacks of books.",
        SUPPORT_GT,
        SUPPORT_TP,
        [],
    ),
    (
        "pool shot",
        "On a green pool table, a white cue ball is rolled straight at a single red ball resting in the middle of the table.",
        HIT_GT,
        None,
        [],
    ),
    (
        "cup over ball",
        "A hand places an upturned paper cup over a small yellow ball on a kitchen counter, waits two seconds, then raises the cup.",
        CUP_GT,
        None,
        [],
    ),
    (
        "dropped pen",
        "A man with both arms full of folders drops a pen by his desk, stretches toward it with his foot and cannot reach it, while a young woman at the next desk looks up.",
        HELP_GT,
        None,
        [],
    ),
    (
        "tennis ball",
        "A woman holds a tennis ball at shoulder height over a tiled kitchen floor and lets go.",
        BOUNCE_GT,
        None,
        [],
    ),
    (
        "perception verbs",
        "A girl watches a glass marble roll toward the edge of a table, then looks at her father and points at it.",
        EDGE_GT,
        None,
        [],
    ),
    # planted leaks
    (
        "outcome restated",
        "A hand slides a board out from under a ceramic mug. The mug falls straight down immediately, accelerating, until it stops on the surface below.",
        SUPPORT_GT,
        SUPPORT_TP,
        ["ground_truth_overlap"],
    ),
    (
        "outcome paraphrased",
        "A cue ball is rolled at a red ball at rest; on contact the moving ball stops dead and the red one rolls on in the same direction.",
        HIT_GT,
        None,
        ["ground_truth_overlap"],
    ),
    (
        "short outcome",
        "A girl nudges a glass marble along a table; it drops off the edge and falls to the floor.",
        EDGE_GT,
        None,
        ["ground_truth_overlap"],
    ),
    (
        "test point repeated",
        "A ceramic mug is left with nothing beneath it and drops at once, speeding up, instead of hovering.",
        None,
        SUPPORT_TP,
        ["test_point_overlap"],
    ),
    (
        "mind stated",
        "A woman realizes the man cannot reach the book on the top shelf and decides to help him.",
        HELP_GT,
        None,
        ["explanatory_wording"],
    ),
    (
        "purpose stated",
        "A boy tilts the wooden plank in order to make the rubber ball go faster.",
        None,
        None,
        ["explanatory_wording"],
    ),
    ("reason stated", "The glass tips over because the tray under it is tilted.", None, None, ["explanatory_wording"]),
    (
        "physics named",
        "Two toy carts collide on a wooden track, showing conservation of momentum.",
        None,
        None,
        ["mechanism_words"],
    ),
    (
        "reason and physics",
        "A red apple rolls off the edge of the desk due to gravity.",
        None,
        None,
        ["explanatory_wording", "mechanism_words"],
    ),
]


@pytest.mark.parametrize("name,prompt,gt,tp,flags", CASES, ids=[c[0] for c in CASES])
def test_planted_leaks_are_flagged_and_clean_prompts_pass(name, prompt, gt, tp, flags):
    rep = check(prompt, gt, tp)
    assert rep.flags == flags, (rep.flags, rep)
    assert rep.flagged == bool(flags)
    if "ground_truth_overlap" in flags:
        assert rep.ground_truth_overlap >= OVERLAP_THRESHOLD and len(rep.ground_truth_shared) >= 2
    elif gt:
        assert rep.ground_truth_overlap < OVERLAP_THRESHOLD


def test_the_report_names_the_words():
    rep = check("A red apple rolls off the edge of the desk due to gravity; the boy realized it.", EDGE_GT)
    assert rep.explanatory == ["realize", "due to"] and rep.mechanism == ["gravity"]
    rep = check("A girl nudges a glass marble along a table; it drops off the edge and falls to the floor.", EDGE_GT)
    assert rep.ground_truth_shared == ["marble", "drops", "edge", "falls", "floor"] and rep.ground_truth_overlap == 1.0
    assert rep.to_json()["flags"] == ["ground_truth_overlap"]


def test_one_stem_per_word_family():
    for family in (
        ["realizes", "realized", "realizing", "realize"],
        ["falls", "falling", "fall"],
        ["topples", "toppled", "toppling"],
        ["stops", "stopped", "stopping", "stop"],
        ["rolls", "rolled", "rolling"],
        ["carries", "carried", "carry"],
        ["moves", "moving", "moved", "move"],
    ):
        assert len({stem(w) for w in family}) == 1, family
    assert stem("pass") == stem("passes") == "pass" and stem("glass") == stem("glasses") == "glass"


def test_every_example_scenario_of_the_seed_library_is_a_clean_prompt_well_under_the_threshold():
    """The docstring's justification of the threshold: a scene shares at most a third of its ground truth."""
    paradigms = load_seed_files(["physics", "social"])
    assert len(paradigms) >= 10
    for p in paradigms:
        rep = check(p.example_scenario, p.ground_truth, p.test_point)
        assert not rep.flagged, (p.id, rep)
        assert rep.ground_truth_overlap <= 1 / 3 + 1e-3, (p.id, rep.ground_truth_shared)
        assert rep.test_point_overlap <= 1 / 3 + 1e-3, (p.id, rep.test_point_shared)
