"""A real OpenAI-compatible chat-completions server on 127.0.0.1 that plays the three prompt-suite agents from a
script, for the suite tests and for trying ``phyprobe suite build`` without a model.

It tells the agent from the request's first line (:data:`phyprobe.suites.agents.MARKERS`) and answers well-formed
JSON derived from the request's inputs alone, so the same request always gets the same reply:

- understanding: the seed's own description, concepts, test point and ground truth;
- synthesis: the seed's example scenario, the variant's setting and a sentence of cues per difficulty;
- critic: a rejection for each ground-truth sentence found verbatim in the prompt (``ground_truth_leakage``) and
  each of a few explanatory words (``explanatory_wording``), else a pass at the requested difficulty.

``SCRIPT:<case>`` tokens anywhere in a paradigm (tests put them in its name) change the script: ``leak_once``
(the first synthesis appends the ground truth; the revision after the critic's feedback is clean),
``leak_always`` (every synthesis does), ``leak_unseen`` (synthesis appends the ground truth's words in reverse order:
the critic, which looks for the sentence, passes it; the deterministic check does not), ``explain_once`` (the first
synthesis adds "because"), ``malformed``, ``malformed_critic``, ``malformed_understanding`` (that agent's reply is
cut off mid-JSON), ``malformed_once`` (the synthesis reply is cut off the first time a request is answered, whole
after: a server fixed since), and ``unauthorized`` (HTTP 401, as a server that refuses the key).

The figures it leads to are counts of this script, not results of any model. It counts requests per request key
(the whole request body) as they arrive (``counts``) and as they are answered (``answered``), so a test can tell a
request sent twice from one answered twice; with ``hold_after=K`` every request arriving after K answers is held
unanswered until :meth:`release`, then dropped, which stops a client at a known point.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler
from pathlib import Path

from ..suites.agents import agent_of, request_inputs
from .judge_server import LocalServer, completion

_TOKEN = re.compile(r"SCRIPT:([a-z_0-9]+)")
CUES = {
    "easy": "The camera stays close on the whole setup, and every movement is shown in full.",
    "medium": "",
    "hard": "A cyclist passes in the background and for a moment hides part of the view.",
}
EXPLANATORY = ("because", "realizes", "decides", "wants to")


def request_key(body: dict) -> str:
    """What makes two requests the same request: the model, the messages, the seed and the sampling."""
    keyed = {k: body.get(k) for k in ("model", "messages", "seed", "temperature", "top_p", "max_tokens")}
    return hashlib.sha256(json.dumps(keyed, sort_keys=True).encode()).hexdigest()[:16]


def _user_text(body: dict) -> str:
    content = body["messages"][-1]["content"]
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content if p.get("type") == "text")


def _clean(text: str) -> str:
    return " ".join(_TOKEN.sub("", text or "").split())


def understanding_reply(inputs: dict) -> dict:
    seed = inputs["paradigm"]
    return {
        "formal_description": f"{seed['name']}. {seed['description']}",
        "key_concepts": list(seed.get("key_concepts") or [seed.get("family", "physics")]),
        "test_point": seed["test_point"],
        "ground_truth": seed["ground_truth"],
    }


def synthesis_reply(inputs: dict, tokens: set[str]) -> dict:
    view = inputs["paradigm"]
    difficulty, revision = inputs["difficulty"], "violations" in inputs
    scene = (
        _clean(view.get("example_scenario")) or "A man in a grey sweater stands at a table with three wooden blocks."
    )
    prompt = " ".join(x for x in (scene, f"Location: {inputs['setting']}.", CUES[difficulty]) if x)
    gt = view["ground_truth"]
    if "leak_always" in tokens or ("leak_once" in tokens and not revision):
        prompt += " " + gt
    if "leak_unseen" in tokens:
        prompt += " Finally: " + " ".join(reversed(gt.rstrip(".").split())) + "."
    if "explain_once" in tokens and not revision:
        prompt += " The man watches because he wants to see what happens."
    return {
        "prompt": prompt,
        "cues": [scene],
        "expected_outcome": view.get("expected_outcome") or gt,
        "question": f"Does the video show this: {gt.rstrip('.')}?",
    }


def critic_reply(inputs: dict) -> dict:
    prompt, gt = inputs["prompt"], inputs["ground_truth"]
    violations = []
    if gt.strip().rstrip(".").lower() in prompt.lower():
        violations.append(
            {
                "type": "ground_truth_leakage",
                "evidence": gt,
                "fix": "Delete the sentence that states the outcome; end the prompt when the action starts.",
            }
        )
    for w in EXPLANATORY:
        if re.search(rf"\b{w}\b", prompt.lower()):
            violations.append(
                {"type": "explanatory_wording", "evidence": w, "fix": f"Remove '{w}'; describe only what is seen."}
            )
    return {"pass": not violations, "difficulty_assessed": inputs["requested_difficulty"], "violations": violations}


def write_script_seeds(path, cases, family: str = "gravity_support") -> Path:
    """A seed file with one paradigm per script case, all staging the same cup-on-a-board experiment, for tests:
    case ``X`` is named ``SCRIPT:X`` (paradigm id ``script_X``), and ``"clean"`` is named ``clean``, with no token."""
    import yaml

    items = [
        {
            "name": case if case == "clean" else f"SCRIPT:{case}",
            "family": family,
            "description": "A cup resting on a board drops when the board is pulled out from under it.",
            "key_concepts": ["support", "free_fall"],
            "test_point": "Whether the cup drops at once when nothing holds it up any more.",
            "ground_truth": "The cup falls straight down onto the floor below.",
            "expected_outcome": "The cup moves down with growing speed and lands on the floor.",
            "example_scenario": "A hand pulls a thin board from under a blue enamel cup.",
        }
        for case in cases
    ]
    path = Path(path)
    path.write_text(yaml.safe_dump({"paradigms": items}, sort_keys=False), encoding="utf-8")
    return path


class SuiteServer(LocalServer):
    """The scripted agents' server; use as a context manager, point ``client.base_url`` at ``base_url``."""

    def __init__(self, hold_after: int | None = None):
        self.hold_after = hold_after
        self.counts: Counter = Counter()  # request key -> arrivals
        self.answered: Counter = Counter()  # request key -> 200 replies written
        self.agents: Counter = Counter()  # agent -> 200 replies written
        self.held: list[str] = []  # keys of the requests held unanswered
        self.content_types: list[str] = []  # type of each request's user content ("str" or "list")
        self.roles: list[list[str]] = []  # message roles of each request
        self.inputs: list[tuple[str, dict]] = []  # (agent, the request's inputs) of each answered request
        self.lock = threading.Lock()
        self._release = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body leave at once, not 40 ms apart (delayed ACK)

            def log_message(self, *args):  # keep test output quiet
                pass

            def do_POST(self):  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
                key = request_key(body)
                with server.lock:
                    server.counts[key] += 1
                    server.content_types.append(type(body["messages"][-1]["content"]).__name__)
                    server.roles.append([m["role"] for m in body["messages"]])
                    hold = server.hold_after is not None and sum(server.answered.values()) >= server.hold_after
                    if hold:
                        server.held.append(key)
                if hold:  # never answered: the connection is dropped once released
                    server._release.wait()
                    self.close_connection = True
                    return
                if "SCRIPT:unauthorized" in _user_text(body):  # a server that refuses the key
                    return server.refuse(self)
                server.respond(self, key, body)

        self._serve(Handler)

    def stop(self) -> None:
        self.release()

    def release(self) -> None:
        """Stop holding: held requests are dropped unanswered, later ones answered."""
        with self.lock:
            self.hold_after = None
        self._release.set()

    def sent_twice(self) -> set[str]:
        return {k for k, n in self.counts.items() if n > 1}

    def reply_for(self, body: dict, key: str | None = None) -> tuple[str, dict | None, str]:
        """(agent, the request's inputs, reply text) for a request body (``key``: its request key, for the cases
        whose reply depends on how often it was answered)."""
        text = _user_text(body)
        agent = agent_of(text)
        if agent is None:
            return "unknown", None, json.dumps({"error": "not a prompt-suite agent's request"})
        inputs = request_inputs(text)
        tokens = set(_TOKEN.findall(json.dumps(inputs)))
        if agent == "understanding":
            reply, cut = understanding_reply(inputs), "malformed_understanding" in tokens
        elif agent == "synthesis":
            first = "malformed_once" in tokens and self.answered[key] == 0
            reply, cut = synthesis_reply(inputs, tokens), "malformed" in tokens or first
        else:
            reply, cut = critic_reply(inputs), "malformed_critic" in tokens
        text = json.dumps(reply)
        return agent, inputs, text[: len(text) // 2] if cut else text

    def refuse(self, h) -> None:
        data = json.dumps({"error": {"message": "invalid API key", "type": "auth"}}).encode()
        h.send_response(401)
        h.send_header("content-type", "application/json")
        h.send_header("content-length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    def respond(self, h, key: str, body: dict) -> None:
        agent, inputs, content = self.reply_for(body, key)
        usage = {"prompt_tokens": len(_user_text(body)) // 4, "completion_tokens": len(content) // 4}
        data = json.dumps(completion(key, body["model"], content, usage)).encode()
        with self.lock:  # counted before the reply leaves: a client that has its reply finds it counted
            self.answered[key] += 1
            self.agents[agent] += 1
            self.inputs.append((agent, inputs))
        try:
            h.send_response(200)
            h.send_header("content-type", "application/json")
            h.send_header("content-length", str(len(data)))
            h.end_headers()
            h.wfile.write(data)
            h.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            with self.lock:  # never received: not an answer
                self.answered[key] -= 1
                self.agents[agent] -= 1
                self.inputs.remove((agent, inputs))


def main() -> None:
    """``python -m phyprobe.testing.suite_server``: serve the script until Ctrl-C, printing the base URL."""
    import time

    with SuiteServer() as srv:
        print(srv.base_url, flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
