"""A Sci-VBench-style rubric judge: one call per (video, dimension), each conditioned on the generation
prompt, the example's reference guide and that one dimension's anchored 1-5 rubric; the answer is a
video-grounded justification and an integer score; ``samples`` seeded samples are averaged.

The paper's own template (its Figure 5) and rubric wording were not available, so
the template here is this project's: it carries the same inputs and asks for the answer schema of the
Sci-VBench-style evaluation code: ``{"score", "reasoning", "evidence_frame"}``.
Users bring their own rubric sets as a task file (``read_tasks``), one line per video::

    {"video": "clip_017.mp4", "prompt": "...", "reference_guide": "...",
     "rubrics": {"prompt_grounding": "1: ... 5: ...", "scientific_causal_correctness": "...",
                 "spatiotemporal_consistency": "..."}}

Sci-VBench's own record fields (``pg_specification``, ``scc_specification``, ``sc_specification``,
``high_level_evaluation_guide``) are read too. An empty rubric means "not judged" on that dimension,
as in that code. ``tasks`` may also be a prompt suite (``phyprobe.suites``; ``phyprobe suite import scivbench``
makes one, LPF included as ``low_level_perceptual_fidelity``): each video gets the record of its
``metadata.prompt_id``. ``dimensions`` judges only the rubrics of those dimensions. ``rubric_set="physics"``
needs no task file: it judges any video, with the prompt from its manifest metadata when there is one, on one
physics-only dimension.
"""

from __future__ import annotations

from ..data.manifest import Manifest
from .base import Item, LLMJudge
from .client import Sampling
from .parsing import ReplyError, first_json_object, integer_in, require_keys
from .tasks import TaskFileError, manifest_tasks, read_tasks

# The paper's definitions of its three MLLM-judged dimensions (Sci-VBench §3).
DIMENSIONS = {
    "prompt_grounding": (
        "Prompt Grounding",
        "whether the video faithfully instantiates the explicit conditions stated in the prompt, such "
        "as the presence and identity of key entities, their initial states, spatial arrangement, and "
        "any required instruments.",
    ),
    "scientific_causal_correctness": (
        "Scientific and Causal Correctness",
        "whether the generated dynamics are consistent with the domain knowledge and "
        "causal mechanisms targeted by the prompt, as specified by the reference guide.",
    ),
    "spatiotemporal_consistency": (
        "Spatiotemporal Consistency",
        "whether the video maintains the coherent temporal evolution and stable spatial "
        "relationships needed for the intended mechanism to be interpretable.",
    ),
    # Sci-VBench's fourth dimension; its paper scores it with vision tools, the public evaluation code with the MLLM
    "low_level_perceptual_fidelity": (
        "Low-level Perceptual Fidelity",
        "the low-level perceptual quality of the video, including temporal coherence, motion dynamics, and the "
        "visual quality of individual frames.",
    ),
    "physical_consistency": (
        "Physical Consistency",
        "whether objects move and interact as real physics allows: gravity and support, contacts "
        "and collisions, solidity (nothing passes through anything), object permanence (nothing "
        "appears, vanishes or teleports), conservation of shape, size and number, and continuous, "
        "momentum-consistent motion.",
    ),
}
SPEC_FIELDS = {
    "pg_specification": "prompt_grounding",
    "scc_specification": "scientific_causal_correctness",
    "sc_specification": "spatiotemporal_consistency",
}
# kept out of SPEC_FIELDS: the paper scores LPF with vision tools, not with the MLLM judge
LPF_FIELD, LPF_DIMENSION = "lpf_specification", "low_level_perceptual_fidelity"

PHYSICS_GUIDE = (
    "Judge physical plausibility only, not visual quality, style, realism of textures or aesthetics: a "
    "simplified or synthetic rendering is not a violation. If no generation prompt is given, judge the "
    "video on its own terms: whatever happens in it must be physically possible."
)
PHYSICS_RUBRIC = """5: No physical violation is visible. All motion, contacts and object states are consistent with real-world physics throughout.
4: Physically plausible overall; at most one brief, minor irregularity that does not change what happens (e.g. a slightly unnatural deceleration).
3: At least one clear violation that a careful viewer notices (e.g. an object briefly passes through another, an unsupported object hovers, a small jump in position), while the main events remain physically possible.
2: Several clear violations, or one that changes the outcome (e.g. an object teleports, changes shape or size, appears or vanishes, falls upward, bounces without contact).
1: Physics is broken throughout; the dynamics bear no resemblance to how real objects behave."""
NO_PROMPT = "(no generation prompt is available for this video)"

TEMPLATE = """You are an expert evaluator of generated videos. The video above is shown as frames in temporal order, indexed from 0. Judge it on ONE dimension, using the evaluation specification written for this example.

Generation prompt (what the video generator was asked to produce):
{prompt}

Reference guide (how the task must be interpreted):
{reference_guide}

Dimension: {dimension_title}: {dimension_definition}

Scoring rubric for this dimension (integer 1 to 5, higher is better; follow the anchors):
{rubric}

Watch the whole video first. Base the score only on what is visible, and cite the frames that support it.

Return only a JSON object, with no other text:
{{"score": <integer 1-5>, "reasoning": "<justification grounded in what the video shows>", "evidence_frame": [{{"idx": <frame index>, "observation": "<what is visible in that frame>"}}]}}"""


class RubricJudge(LLMJudge):
    """``rubric_set="tasks"`` reads per-example rubrics from ``tasks`` (a JSONL task file or prompt suite);
    ``"physics"`` uses the built-in physics-only rubric on every video. ``dimensions`` (None: all) limits the
    judged rubrics to those names. ``headline`` is ``"mean"`` of the judged dimensions or one dimension's name."""

    def __init__(
        self,
        rubric_set: str = "physics",
        tasks: str | None = None,
        samples: int = 3,
        seed: int = 0,
        headline: str = "mean",
        temperature: float = 0.7,
        top_p: float | None = None,
        max_tokens: int = 2048,
        name: str | None = None,
        template: str = TEMPLATE,
        dimensions: list[str] | None = None,
    ):
        if rubric_set not in ("physics", "tasks"):
            raise ValueError(f"rubric_set must be 'physics' or 'tasks', got {rubric_set!r}")
        if rubric_set == "tasks" and not tasks:
            raise ValueError("rubric_set='tasks' needs tasks=<JSONL file of per-video rubrics>")
        if samples < 1:
            raise ValueError(f"samples must be >= 1, got {samples}")
        if dimensions is not None and (
            isinstance(dimensions, str) or not dimensions or not all(isinstance(d, str) and d for d in dimensions)
        ):
            raise ValueError(f"dimensions must be a non-empty list of dimension names or null, got {dimensions!r}")
        self.dimensions = list(dimensions) if dimensions is not None else None
        self.rubric_set, self.task_file, self.samples, self.seed = rubric_set, tasks, samples, seed
        self.headline, self.template = headline, template
        self.sampling = Sampling(temperature=temperature, top_p=top_p, max_tokens=max_tokens)
        self.name = name or ("physics_rubric" if rubric_set == "physics" else "scivbench_rubric")

    def tasks(self, manifest: Manifest) -> dict[str, dict]:
        if self.rubric_set == "physics":
            return {
                vid: {
                    "prompt": t.get("prompt") or NO_PROMPT,
                    "reference_guide": PHYSICS_GUIDE,
                    "rubrics": {"physical_consistency": PHYSICS_RUBRIC},
                }
                for vid, t in manifest_tasks(manifest).items()
            }
        out = {}
        for vid, t in read_tasks(self.task_file, manifest).items():
            where = t["_where"]
            rubrics = dict(t.get("rubrics") or {})
            rubrics.update({dim: t[f] for f, dim in SPEC_FIELDS.items() if t.get(f)})
            rubrics = {k: str(v) for k, v in rubrics.items() if str(v).strip()}
            if not rubrics:
                raise TaskFileError(f"{where}: no rubric (expected 'rubrics' or {sorted(SPEC_FIELDS)})")
            if self.dimensions is not None:
                rubrics = {k: v for k, v in rubrics.items() if k in self.dimensions}
                if not rubrics:
                    raise TaskFileError(f"{where}: no rubric for the judged dimensions {self.dimensions}")
            if not str(t.get("prompt") or "").strip():
                raise TaskFileError(f"{where}: no 'prompt' (the generation prompt the rubric refers to)")
            guide = t.get("reference_guide") or t.get("high_level_evaluation_guide") or ""
            out[vid] = {
                "prompt": t["prompt"],
                "reference_guide": guide or "(none given)",
                "rubrics": rubrics,
                "definitions": t.get("definitions") or {},
            }
        return out

    def items(self, task: dict) -> list[Item]:
        items = []
        for dim, rubric in task["rubrics"].items():
            title, definition = DIMENSIONS.get(dim, (dim, (task.get("definitions") or {}).get(dim, "see the rubric.")))
            items.append(
                Item(
                    dim,
                    self.template.format(
                        prompt=task["prompt"],
                        reference_guide=task["reference_guide"],
                        dimension_title=title,
                        dimension_definition=definition,
                        rubric=rubric,
                    ),
                )
            )
        return items

    def parse(self, item: Item, text: str) -> dict:
        obj = first_json_object(text)
        require_keys(obj, ("score", "reasoning"))
        score = integer_in(obj["score"], range(1, 6), "score")
        if not isinstance(obj["reasoning"], str) or not obj["reasoning"].strip():
            raise ReplyError("reasoning is empty or not a string")
        evidence = obj.get("evidence_frame", [])
        if not isinstance(evidence, list):
            raise ReplyError("evidence_frame is not a list")
        return {"scores": {item.name: score}, "justification": obj["reasoning"], "evidence_frame": evidence}

    def combine(self, dims: dict[str, float]) -> tuple[float, float]:
        if self.headline == "mean":
            score = sum(dims.values()) / len(dims)
        elif self.headline in dims:
            score = dims[self.headline]
        else:
            raise ValueError(f"headline dimension {self.headline!r} was not judged (judged: {sorted(dims)})")
        return score, (5.0 - score) / 4.0
