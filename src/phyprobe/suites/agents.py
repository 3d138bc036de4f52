"""The three agents that turn a seed paradigm into prompts: what each is asked, and the strict reading of its answer.

- **Experiment understanding** (once per paradigm): the seed -> a formal description, key concepts, the test point
  and the ground truth, so the scene is written from what the experiment tests rather than from its wording.
- **Prompt synthesis** (per prompt and round): one text-to-video prompt of observable actions only, feasible in one
  5-10 s shot, with concrete objects and people, at the cue level of the requested difficulty; the outcome goes in a
  separate field, never in the prompt. A revision gets the previous prompt and the critic's violations.
- **Critic** (per round): finds explanatory wording to strip, ground-truth leakage against the test point, a
  difficulty the cues do not give, and the rest of :data:`VIOLATION_TYPES`; it grades the difficulty by the prompt's
  cues and sends each violation with its fix back to synthesis, which rewrites the prompt.

Each request states the agent's task on its first line (:data:`MARKERS`) and ends with its inputs as one JSON object
after :data:`INPUT_MARKER`, so a reply depends on the request alone, and the scripted test server can answer it.
Each reply must be one JSON object with the keys listed in the request: :func:`parse_understanding`,
:func:`parse_synthesis` and :func:`parse_critic` raise ``ReplyError`` on anything else (no object, broken JSON, a
missing or empty key, a value of the wrong type, a verdict that contradicts itself), which the build records as a
failure with the raw text: a malformed reply never becomes a prompt.
"""

from __future__ import annotations

import json

from ..judges.parsing import ReplyError, first_json_object, require_keys
from .format import DIFFICULTIES

AGENTS = ("understanding", "synthesis", "critic")
MARKERS = {
    "understanding": "TASK: EXPERIMENT UNDERSTANDING",
    "synthesis": "TASK: PROMPT SYNTHESIS",
    "critic": "TASK: PROMPT CRITIC",
}
INPUT_MARKER = "INPUT (JSON):"

# how many cues of the outcome a prompt of each difficulty gives: the synthesis agent writes to it, the critic grades by it
CUE_POLICY = {
    "easy": "redundant cues: every cue the outcome depends on is shown plainly, and the important ones more than "
    "once (a clear, unobstructed view of the key objects and of what holds or drives them, slow deliberate "
    "actions, an uncluttered scene, the camera kept on the decisive moment).",
    "medium": "the minimum cues: exactly what is needed for the outcome to be decided, each shown once, and "
    "nothing that repeats or underlines it.",
    "hard": "the core cues kept but not emphasised: the decisive cue is present yet small, brief, partly occluded "
    "or among distractors, so only a video that gets the event itself right shows the right outcome.",
}

# a concrete place per variant, so the N prompts of one paradigm and difficulty differ without seeing each other
SETTINGS = (
    "a kitchen counter in a family home",
    "a school science classroom",
    "a carpenter's workshop",
    "a public park on a sunny afternoon",
    "a living room with a wooden floor",
    "an office desk by a window",
    "a garage with a concrete floor",
    "a playground",
    "a cafe terrace",
    "a gym hall",
)

VIOLATION_TYPES = {
    "explanatory_wording": "the prompt states a thought, intention, feeling or reason instead of something a camera "
    "sees (realizes, decides, wants, because, in order to, due to gravity)",
    "ground_truth_leakage": "the prompt states or gives away the outcome of the ground truth, or names the principle "
    "of the test point",
    "difficulty_mismatch": "the cues in the prompt do not match the requested difficulty",
    "not_observable": "part of the prompt cannot be seen on video (sounds, smells, hidden properties, numbers "
    "nobody could read off the picture)",
    "infeasible": "the scene does not fit one continuous shot of 5 to 10 seconds (too many events, places or agents)",
    "not_concrete": "objects, materials, people or the place are left abstract (an object, agent A, somewhere)",
    "off_paradigm": "the scene does not stage the experiment of the paradigm, so its outcome would not test the "
    "test point",
    "other": "any other reason the prompt is not ready for a benchmark (say which in the evidence)",
}


def _request(agent: str, body: str, inputs: dict) -> str:
    return f"{MARKERS[agent]}\n\n{body.strip()}\n\n{INPUT_MARKER}\n{json.dumps(inputs, ensure_ascii=False, indent=1)}\n"


def request_inputs(text: str) -> dict:
    """The inputs object of a request made here (for the scripted server and for tests)."""
    return json.loads(text.rsplit(INPUT_MARKER, 1)[1])


def agent_of(text: str) -> str | None:
    """Which agent a request made here is for (None for any other text)."""
    first = text.lstrip().split("\n", 1)[0].strip()
    return next((a for a, m in MARKERS.items() if first == m), None)


# -- experiment understanding -----------------------------------------------------------------------------------

UNDERSTANDING = """
You help build a benchmark that asks whether generated videos unfold as the real world does. The input is one seed
paradigm: a classic experiment, as people describe it. Before anyone writes a scene for it, pin down what it tests.

Answer with one JSON object and nothing else, with these keys:
- "formal_description": 2 to 4 sentences giving the setup, the intervention and the lawful outcome precisely
  (which object, which quantity, which direction, in what order, how fast where that matters);
- "key_concepts": a list of 2 to 6 short names of the principles or mechanisms involved;
- "test_point": one sentence naming the single thing a video has to get right, phrased as a check on the video;
- "ground_truth": one sentence stating the outcome a correct video shows, in terms a viewer can see.
"""


def understanding_request(paradigm: dict) -> str:
    """The understanding agent's request for one seed paradigm (its seed-file fields)."""
    return _request("understanding", UNDERSTANDING, {"paradigm": paradigm})


def _text_field(obj: dict, key: str) -> str:
    v = obj[key]
    if not isinstance(v, str) or not v.strip():
        raise ReplyError(f"{key} must be non-empty text, got {v!r}")
    return " ".join(v.split())


def _text_list(obj: dict, key: str, allow_empty: bool = False) -> list[str]:
    v = obj[key]
    if not isinstance(v, list) or not all(isinstance(x, str) and x.strip() for x in v):
        raise ReplyError(f"{key} must be a list of non-empty texts, got {v!r}")
    if not v and not allow_empty:
        raise ReplyError(f"{key} is an empty list")
    return [" ".join(x.split()) for x in v]


def parse_understanding(text: str) -> dict:
    """``{formal_description, key_concepts, test_point, ground_truth}`` from the understanding agent's reply."""
    obj = first_json_object(text)
    keys = ("formal_description", "key_concepts", "test_point", "ground_truth")
    require_keys(obj, keys)
    out = {k: _text_field(obj, k) for k in keys if k != "key_concepts"}
    out["key_concepts"] = _text_list(obj, "key_concepts")
    return {k: out[k] for k in keys}


# -- prompt synthesis -------------------------------------------------------------------------------------------

SYNTHESIS = """
Write one text-to-video prompt that stages the experiment in the input and leaves its outcome for the video
generator to produce. The prompt tests a generator only if it sets up the scene and starts the event, and says
nothing of how the event ends.

Rules:
1. Observable only: write what a camera records, namely objects, people, materials, positions and movements. No
   thoughts, intentions, feelings or reasons ("realizes", "decides", "wants", "because", "in order to", "due to
   gravity"), and no names of physical laws or principles.
2. No outcome: do not state, hint at or paraphrase the ground truth, and do not name the test point.
3. Feasible: one continuous shot of 5 to 10 seconds, one place, a few objects or people, one or two main actions.
4. Concrete: name the objects, their materials and colours, the people (age, clothing) and the place; never a
   placeholder such as "an object", "agent A" or "somewhere".
5. Difficulty "{difficulty}": {cues}
6. Place this variant here: {setting}.
{revision}
Answer with one JSON object and nothing else, with these keys:
- "prompt": the prompt, 1 to 4 sentences of plain description (about 25 to 90 words);
- "cues": the list of visible cues in the prompt that the outcome depends on;
- "expected_outcome": what a correct video shows after the prompt's events (kept out of the prompt);
- "question": one yes/no question that a viewer of the video answers to check the test point.
"""

REVISION = """7. Revision: the critic rejected your previous prompt (in the input) for the violations listed there. Write a new
   prompt that fixes every one of them, following each fix, and keeps what was not at fault.
"""


def synthesis_request(
    paradigm: dict,
    difficulty: str,
    variant: int,
    setting: str,
    previous_prompt: str | None = None,
    violations: list[dict] | None = None,
) -> str:
    """The synthesis agent's request: ``paradigm`` is what it may see (the understanding's output with the
    paradigm's name and example, or the raw seed when understanding is off); a revision adds the rejected prompt
    and the critic's violations."""
    if difficulty not in DIFFICULTIES:
        raise ValueError(f"difficulty must be one of {DIFFICULTIES}, got {difficulty!r}")
    body = SYNTHESIS.format(
        difficulty=difficulty,
        cues=CUE_POLICY[difficulty],
        setting=setting,
        revision=REVISION if previous_prompt is not None else "",
    )
    inputs: dict = {"paradigm": paradigm, "difficulty": difficulty, "variant": variant, "setting": setting}
    if previous_prompt is not None:
        inputs["previous_prompt"] = previous_prompt
        inputs["violations"] = violations or []
    return _request("synthesis", body, inputs)


def parse_synthesis(text: str) -> dict:
    """``{prompt, cues, expected_outcome, question}`` from the synthesis agent's reply."""
    obj = first_json_object(text)
    keys = ("prompt", "cues", "expected_outcome", "question")
    require_keys(obj, keys)
    out = {k: _text_field(obj, k) for k in keys if k != "cues"}
    out["cues"] = _text_list(obj, "cues", allow_empty=True)
    return {k: out[k] for k in keys}


# -- critic -----------------------------------------------------------------------------------------------------

CRITIC = """
Review one text-to-video prompt written for a benchmark. The benchmark shows the prompt to a video generator and
then checks the video against the test point and the ground truth in the input, so the prompt must set up the
experiment without giving its outcome away, and must give the cues of its difficulty.

Look for these violations:
{types}

Grade the difficulty by the cues the prompt gives for the outcome:
- easy: {easy}
- medium: {medium}
- hard: {hard}

Answer with one JSON object and nothing else, with these keys:
- "pass": true only when there is no violation and the difficulty you grade is the requested one, else false;
- "difficulty_assessed": "easy", "medium" or "hard", graded from the prompt's cues;
- "violations": a list (empty when the prompt passes) of objects with "type" (one of the types above),
  "evidence" (the words of the prompt at fault) and "fix" (what to write instead, concretely).
"""


def critic_request(paradigm_name: str, test_point: str, ground_truth: str, difficulty: str, prompt: str) -> str:
    """The critic's request. It sees the seed's test point and ground truth, whatever the stage, so its verdicts
    on one prompt are the same in every stage of an ablation."""
    types = "\n".join(f'- "{t}": {d}' for t, d in VIOLATION_TYPES.items())
    body = CRITIC.format(types=types, **CUE_POLICY)
    inputs = {
        "paradigm": paradigm_name,
        "test_point": test_point,
        "ground_truth": ground_truth,
        "requested_difficulty": difficulty,
        "prompt": prompt,
    }
    return _request("critic", body, inputs)


def parse_critic(text: str, requested: str) -> dict:
    """``{pass, difficulty_assessed, violations: [{type, evidence, fix}]}`` from the critic's reply; a verdict that
    contradicts itself (a pass with violations, or with another difficulty; a rejection that names no violation)
    is malformed."""
    obj = first_json_object(text)
    require_keys(obj, ("pass", "difficulty_assessed", "violations"))
    verdict = obj["pass"]
    if not isinstance(verdict, bool):
        raise ReplyError(f"pass must be true or false, got {verdict!r}")
    assessed = obj["difficulty_assessed"]
    if assessed not in DIFFICULTIES:
        raise ReplyError(f"difficulty_assessed must be one of {list(DIFFICULTIES)}, got {assessed!r}")
    raw = obj["violations"]
    if not isinstance(raw, list):
        raise ReplyError(f"violations must be a list, got {type(raw).__name__}")
    violations = []
    for i, v in enumerate(raw):
        if not isinstance(v, dict):
            raise ReplyError(f"violations[{i}] must be an object, got {type(v).__name__}")
        require_keys(v, ("type", "evidence", "fix"))
        if v["type"] not in VIOLATION_TYPES:
            raise ReplyError(f"violations[{i}].type is {v['type']!r}, not one of {list(VIOLATION_TYPES)}")
        if not isinstance(v["evidence"], str):
            raise ReplyError(f"violations[{i}].evidence must be text, got {v['evidence']!r}")
        violations.append(
            {"type": v["type"], "evidence": " ".join(v["evidence"].split()), "fix": _text_field(v, "fix")}
        )
    if verdict and violations:
        raise ReplyError(f"pass is true but {len(violations)} violation(s) are listed")
    if verdict and assessed != requested:
        raise ReplyError(f"pass is true but the difficulty is graded {assessed!r}, not the requested {requested!r}")
    if not verdict and not violations:
        raise ReplyError("pass is false but no violation is listed")
    return {"pass": verdict, "difficulty_assessed": assessed, "violations": violations}
