"""Tiny copies of Sci-VBench's and SVBench's prompt records in the layouts they are published in.

- SVBench (``Gloria2tt/SVBench-Evaluation``): ``data/bench_for_short.json`` is a JSON list of experiments
  ``{experiment_id, experiment_name, dimension, test_point, prompts: [{prompt, difficulty, ground_truth, question}]}``,
  three prompts per difficulty, some without ``question``; the difficulties come in the order easy, medium, hard in
  some experiments and hard, medium, easy in others. ``video_info_matched.json`` (read by its judge scripts with
  ``json.load``) is a JSON list of ``{video_file, experiment_name, test_point, difficulty, prompt, question,
  ground_truth}``; the sample videos it ships are named ``<experiment_id>-<k>-<difficulty>.mp4``.
- Sci-VBench: evaluation-spec records, one JSON object per line, with ``id``, ``domain``, ``subject``,
  ``pg_specification``, ``scc_specification``, ``sc_specification``, ``lpf_specification`` and
  ``high_level_evaluation_guide`` (public evaluation code of unknown provenance), plus the generation ``prompt``,
  whose field name is [UNVERIFIED]. An empty spec means "not evaluated" there.

The texts are this project's; the keys, nesting and value types are the published ones.
"""

from __future__ import annotations

import json
from pathlib import Path

SCIVBENCH = [
    {
        "id": "phys_0007",
        "domain": "Natural Science",
        "subject": "Physics",
        "prompt": "A steel ball and a feather are released together inside an evacuated glass tube.",
        "pg_specification": "PG-phys_0007: 5 = tube, steel ball and feather all present and released together.",
        "scc_specification": "SCC-phys_0007: 5 = both fall with the same acceleration and land together.",
        "sc_specification": "SC-phys_0007: 5 = the tube stays in place and both objects fall continuously.",
        "lpf_specification": "LPF-phys_0007: 5 = sharp frames, no flicker.",
        "high_level_evaluation_guide": "GUIDE-phys_0007: in a vacuum there is no drag, so both fall alike.",
    },
    {
        "id": "phys_0012",
        "domain": "Natural Science",
        "subject": "Physics",
        "prompt": "A pendulum swings in still air for ten periods.",
        "pg_specification": "PG-phys_0012: 5 = one bob on a string from a fixed pivot.",
        "scc_specification": "",  # not evaluated on this dimension
        "sc_specification": "SC-phys_0012: 5 = the period stays constant.",
        "lpf_specification": "LPF-phys_0012: 5 = sharp frames.",
        "high_level_evaluation_guide": "GUIDE-phys_0012: a small-angle pendulum keeps its period.",
    },
    {
        "id": "chem_0003",
        "domain": "Natural Science",
        "subject": "Chemistry",
        "prompt": "A drop of ink spreads through a glass of still water.",
        "pg_specification": "PG-chem_0003: 5 = a glass of water and an ink drop.",
        "scc_specification": "SCC-chem_0003: 5 = the ink diffuses slowly and never un-mixes.",
        "sc_specification": "SC-chem_0003: 5 = the plume grows continuously.",
        "lpf_specification": "",
        "high_level_evaluation_guide": "GUIDE-chem_0003: diffusion only ever spreads.",
        "annotator": "expert_2",  # a field the layout does not name: kept in provenance
    },
    {
        "id": "med_0101",
        "domain": "Healthcare",
        "subject": "Physiology",
        "prompt": "A heart contracts: the atria first, then the ventricles.",
        "pg_specification": "PG-med_0101: 5 = a four-chambered heart.",
        "scc_specification": "SCC-med_0101: 5 = atrial systole precedes ventricular systole.",
        "sc_specification": "SC-med_0101: 5 = the chambers keep their places.",
        "lpf_specification": "LPF-med_0101: 5 = sharp frames.",
        "high_level_evaluation_guide": "GUIDE-med_0101: the conduction path sets the order.",
    },
]

SVBENCH_SHORT = [
    {
        "experiment_id": "EXP_021",
        "experiment_name": "Empathic Concern (Comforting)",
        "dimension": "D5_Emotion_and_Prosocial_Behavior",
        "test_point": "TP-EXP_021: does an agent comfort another in distress?",
        "prompts": [
            {
                "prompt": "A child drops an ice cream and starts to cry; a woman kneels in front of her.",
                "difficulty": "easy",
                "ground_truth": "GT-EXP_021-1: the woman hugs the child.",
                "question": "Q-EXP_021-1: what does the woman do next?",
            },
            {
                "prompt": "In a busy office a man sobs at his desk; a colleague walks past, stops and turns.",
                "difficulty": "medium",
                "ground_truth": "GT-EXP_021-2: the colleague puts a hand on his shoulder.",
                "question": "Q-EXP_021-2: what does the colleague do?",
            },
            {
                "prompt": "Two strangers wait at a bus stop; one gets a phone call and covers her face.",
                "difficulty": "hard",
                "ground_truth": "GT-EXP_021-3: the other offers a tissue.",
                "question": "Q-EXP_021-3: how does the other stranger react?",
            },
        ],
    },
    {
        "experiment_id": "EXP_016",
        "experiment_name": "Turn-Taking",
        "dimension": "D4_Social_Coordination",
        "test_point": "TP-EXP_016: do agents alternate their turns?",
        "prompts": [
            {
                "prompt": "Two children share one swing in a playground, a queue of three behind them.",
                "difficulty": "hard",
                "ground_truth": "GT-EXP_016-1: each child swings, then gives the swing to the next.",
                # no "question", as in some of the published prompts
            },
            {
                "prompt": "Two people take turns stacking blocks on a tower.",
                "difficulty": "medium",
                "ground_truth": "GT-EXP_016-2: they alternate, one block each.",
                "question": "Q-EXP_016-2: who places the next block?",
            },
            {
                "prompt": "A parent and a toddler roll a ball back and forth.",
                "difficulty": "easy",
                "ground_truth": "GT-EXP_016-3: the toddler rolls it back.",
                "question": "Q-EXP_016-3: what does the toddler do with the ball?",
            },
        ],
    },
]


def video_info() -> list[dict]:
    """``video_info_matched.json``: one record per generated video of the short set, videos named as released."""
    rows = []
    for e in SVBENCH_SHORT:
        for k, p in enumerate(e["prompts"], start=1):
            rows.append(
                {
                    "video_file": f"{e['experiment_id']}-{k}-{p['difficulty']}.mp4",
                    "experiment_name": e["experiment_name"],
                    "test_point": e["test_point"],
                    "difficulty": p["difficulty"],
                    "prompt": p["prompt"],
                    **({"question": p["question"]} if "question" in p else {}),
                    "ground_truth": p["ground_truth"],
                }
            )
    return rows


def write_scivbench(path: Path, as_list: bool = False) -> Path:
    """The Sci-VBench spec records, one per line (or as one JSON list)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if as_list:
        path.write_text(json.dumps(SCIVBENCH, indent=2, ensure_ascii=False), encoding="utf-8")
    else:
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in SCIVBENCH), encoding="utf-8")
    return path


def write_json(path: Path, obj) -> Path:
    """A JSON file indented as the SVBench release's are."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2, ensure_ascii=False), encoding="utf-8")
    return path


def write_svbench_short(folder: Path) -> Path:
    return write_json(folder / "data" / "bench_for_short.json", SVBENCH_SHORT)


def write_video_info(folder: Path) -> Path:
    return write_json(folder / "video_info_matched.json", video_info())
