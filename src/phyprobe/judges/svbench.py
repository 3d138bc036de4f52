"""SVBench's Evaluation Agent (EVA): five binary dimensions from one call, overall = their mean.

Keys, parsing and aggregation follow SVBench-Evaluation's judge scripts: the answer is
one JSON object with ``exp_summary``, the five ``D*`` keys and ``reason``; all seven are required;
``S_overall = (1/5) sum_k D_k``; one sample at temperature 0.2, 2048 output tokens. One deliberate
difference: those scripts do not check that each ``D*`` is 0 or 1; here a value outside {0, 1} is a
parse failure, because a 2 or a "yes" summed into the overall would be a made-up score.

The prompt below follows the structure and content of the original ``build_judge_prompt`` (role,
STEP 1 with experiment name, core test point, generation prompt, question and canonical answer;
STEP 2 with the five strict criteria; output format) in this project's words. To run the original
wording, save its text as a file and pass ``template_file``: it is filled with ``str.format`` using
the placeholders ``{experiment_name}``, ``{test_point}``, ``{prompt}``, ``{question}``,
``{ground_truth}`` (doubled braces for the JSON example, as in the original f-string).

Tasks come from a JSONL file (SVBench's ``video_info_matched.json`` records, one per line, with
``video_file``), from a prompt suite (``phyprobe suite import svbench``: each video gets the record of its
``metadata.prompt_id``), or from each manifest video's metadata. As in the original, a missing
``experiment_name``, ``test_point`` or ``prompt`` becomes ``N/A`` and a missing ``question`` or ``ground_truth``
an empty string (the long-video set has no ``question``).
"""

from __future__ import annotations

from pathlib import Path

from ..data.manifest import Manifest
from .base import Item, LLMJudge
from .client import Sampling
from .parsing import first_json_object, integer_in, require_keys
from .tasks import manifest_tasks, read_tasks

DIMENSIONS = (
    "D1_core_experiment",
    "D2_prompt_faithfulness",
    "D3_social_reasoning",
    "D4_social_cue",
    "D5_video_plausible",
)
KEYS = ("exp_summary", *DIMENSIONS, "reason")
FIELDS = ("experiment_name", "test_point", "prompt", "question", "ground_truth")
MISSING = {"question": "", "ground_truth": ""}  # what the original puts for a missing field; "N/A" for the others

TEMPLATE = """You are an expert evaluator of social reasoning in videos.

You will watch a video and score it on FIVE binary dimensions (0 = fails, 1 = passes). Before scoring, first understand what the psychological experiment it depicts is meant to test.

STEP 1: UNDERSTAND THE EXPERIMENT

Experiment name:
{experiment_name}

Core test point (what the experiment tests):
{test_point}

Generation prompt (what the video generator was asked to produce):
{prompt}

Evaluation question:
{question}

Canonical ground-truth answer (ONE typical correct outcome, not the only possible one):
{ground_truth}

Summarise in 1-2 sentences which social reasoning ability the experiment tests and which observable behaviour would count as success. Other behaviours are also valid if they satisfy the same social reasoning core; do not require the video to match the wording of the ground truth.

STEP 2: WATCH THE VIDEO AND SCORE THE 5 DIMENSIONS

D1 CORE_EXPERIMENT: does the video instantiate the core test point? Score 1 only if it shows the full causal structure of the experiment: the prerequisite events in the correct order and an unambiguous realisation of the intended social mechanism (the behaviour need not be the canonical one). A missing causal step, a wrong order or an ambiguous realisation gives 0.

D2 PROMPT_FAITHFULNESS: does the video follow the scenario of the generation prompt? Small deviations are allowed, but the number and identity of agents, the scene category and the required key objects must be preserved. A changed scene, changed agent types or missing essential objects give 0.

D3 SOCIAL_REASONING: are the agents' actions socially and causally coherent with the intended reasoning? Score 1 only if behaviour respects belief-perception consistency, causal appropriateness and intention coherence. If any key action contradicts what an agent could know, perceive or intend, score 0.

D4 SOCIAL_CUE_USE: are the social cues the task relies on (gaze, body orientation, reaching or pointing, interpersonal distance, occlusion) present and used sensibly? Score 1 only if they appear at the right time, point to the right referent and support the interaction; missing, mistimed, misdirected or misleading cues give 0.

D5 VIDEO_PLAUSIBILITY: is the video coherent enough for a person to follow the interaction? Score 1 if key agents and objects stay visible, actions can be tracked over time and no rendering problem prevents understanding; if the interaction becomes ambiguous or uninterpretable at any point, score 0.

OUTPUT FORMAT

Return a single JSON object with these fields:
{{"exp_summary": "<1-2 sentences>", "D1_core_experiment": <0 or 1>, "D2_prompt_faithfulness": <0 or 1>, "D3_social_reasoning": <0 or 1>, "D4_social_cue": <0 or 1>, "D5_video_plausible": <0 or 1>, "reason": "<3-6 sentences on what happens in the video and why these scores>"}}

Only output valid JSON, with no text outside it."""


class EVAJudge(LLMJudge):
    """SVBench EVA; the violation score is ``1 - S_overall``."""

    def __init__(
        self,
        tasks: str | None = None,
        template_file: str | None = None,
        samples: int = 1,
        seed: int = 0,
        temperature: float = 0.2,
        top_p: float | None = None,
        max_tokens: int = 2048,
        name: str = "svbench_eva",
    ):
        self.task_file, self.samples, self.seed, self.name = tasks, samples, seed, name
        self.template = Path(template_file).read_text(encoding="utf-8") if template_file else TEMPLATE
        self.sampling = Sampling(temperature=temperature, top_p=top_p, max_tokens=max_tokens)

    def tasks(self, manifest: Manifest) -> dict[str, dict]:
        raw = read_tasks(self.task_file, manifest) if self.task_file else manifest_tasks(manifest)
        return {
            vid: {f: (t.get(f) if t.get(f) not in (None, "") else MISSING.get(f, "N/A")) for f in FIELDS}
            for vid, t in raw.items()
        }

    def items(self, task: dict) -> list[Item]:
        return [Item("eva", self.template.format(**task))]

    def dimensions_of(self, item_name: str) -> list[str]:
        return list(DIMENSIONS)

    def parse(self, item: Item, text: str) -> dict:
        obj = first_json_object(text)
        require_keys(obj, KEYS)
        scores = {d: integer_in(obj[d], range(0, 2), d) for d in DIMENSIONS}
        return {"scores": scores, "justification": obj["reason"], "exp_summary": obj["exp_summary"]}

    def combine(self, dims: dict[str, float]) -> tuple[float, float]:
        overall = sum(dims[d] for d in DIMENSIONS) / len(DIMENSIONS)
        return overall, 1.0 - overall
