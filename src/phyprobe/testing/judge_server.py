"""A real OpenAI-compatible chat-completions server on 127.0.0.1 that answers from a script, for judge tests and
``bench/bench_judge.py``.

The script is chosen per request by a ``SCRIPT:<case>`` token in the request text (tests put it in a
video's prompt), so one server covers well-formed answers, fenced answers, malformed JSON, missing
keys, out-of-range scores, 429/500 with retry-after, a timeout and a dropped connection; and, for the
client's hardening tests, a server that trickles its reply a byte at a time (body or headers), 429s with
malformed ``retry-after`` values, 401/403, and replies and errors that echo the request's Authorization
header (a careless server echoing the API key). Replies are deterministic in (text, seed, media), so two
runs of the same requests get the same answers. The server counts requests per request key (text + seed +
media) and records the headers it saw.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_CASE = re.compile(r"SCRIPT:([a-z_0-9]+)")


def request_key(body: dict) -> str:
    content = body["messages"][0]["content"]
    return hashlib.sha256(json.dumps([content, body.get("seed")], sort_keys=True).encode()).hexdigest()[:16]


def expected_score(key: str) -> int:
    """The score a well-formed reply carries for a request key (1..5)."""
    return 1 + int(key, 16) % 5


# the retry-after values of case ``bad_retry_after``'s 429s, one per attempt, then a good reply
BAD_RETRY_AFTER = ("soon", "nan", "-5", "inf", "Mon, 99 Foo 2024 99:99:99 GMT", "")


def completion(key: str, model: str, content: str, usage: dict) -> dict:
    """A chat-completions reply carrying ``content``, as OpenAI-compatible servers write one."""
    return {
        "id": f"chatcmpl-{key}",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
        "usage": usage,
    }


class LocalServer:
    """A ``ThreadingHTTPServer`` on an ephemeral 127.0.0.1 port, serving in a daemon thread while used as a context
    manager; ``base_url`` is its OpenAI-style ``/v1`` root. A subclass ends its own waits in :meth:`stop`."""

    def _serve(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        self.httpd.shutdown()
        self.httpd.server_close()

    def stop(self) -> None:
        """Let every request still being answered end (called before the server shuts down)."""


class ScriptedServer(LocalServer):
    def __init__(self, delay: float = 0.0, timeout_sleep: float = 2.0, trickle_s: float = 0.25):
        self.delay, self.timeout_sleep, self.trickle_s = delay, timeout_sleep, trickle_s
        self.stopping = threading.Event()
        self.trickles_ended: list[str] = []  # how each trickled reply ended: "complete", "client gone" or "stopped"
        self.counts: Counter = Counter()
        self.served: Counter = Counter()  # 200 replies actually written
        self.auth_headers: list[str] = []
        self.part_types: list[list[str]] = []  # content part types of each request, in arrival order
        self.extra: list[dict] = []  # mm_processor_kwargs of each request
        self.lock = threading.Lock()
        self.active = 0  # requests being handled now
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep test output quiet
                pass

            def do_POST(self):  # noqa: N802
                with server.lock:
                    server.active += 1
                try:
                    self._post()
                finally:
                    with server.lock:
                        server.active -= 1

            def _post(self):
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length))
                key = request_key(body)
                with server.lock:
                    server.counts[key] += 1
                    attempt = server.counts[key]
                    server.auth_headers.append(self.headers.get("authorization", ""))
                    server.part_types.append([p["type"] for p in body["messages"][0]["content"]])
                    server.extra.append(body.get("mm_processor_kwargs") or {})
                text = "".join(p.get("text", "") for p in body["messages"][0]["content"] if p.get("type") == "text")
                m = _CASE.search(text)
                case = m.group(1) if m else "ok"
                if server.delay:
                    time.sleep(server.delay)
                server.respond(self, case, key, attempt, body, self.headers.get("authorization", ""))

        self._serve(Handler)

    def stop(self) -> None:
        self.stopping.set()

    def settle(self, quiet_s: float = 0.5, limit_s: float = 30.0) -> None:
        """Wait until no request is being handled and none has arrived for ``quiet_s``: after a client is killed,
        the requests it had already sent are counted before a test reads :attr:`counts`."""
        end, last, since = time.monotonic() + limit_s, None, time.monotonic()
        while time.monotonic() < end:
            with self.lock:
                now = (self.active, sum(self.counts.values()))
            if now != last:
                last, since = now, time.monotonic()
            elif now[0] == 0 and time.monotonic() - since >= quiet_s:
                return
            time.sleep(0.02)
        raise TimeoutError(f"the scripted server was still busy after {limit_s} s")

    # -- replies --------------------------------------------------------------------------------

    def _send(self, h, status: int, payload: dict | None, headers: dict | None = None, key: str | None = None) -> None:
        data = json.dumps(payload or {}).encode()
        try:
            h.send_response(status)
            h.send_header("content-type", "application/json")
            h.send_header("content-length", str(len(data)))
            for k, v in (headers or {}).items():
                h.send_header(k, v)
            h.end_headers()
            h.wfile.write(data)
            h.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            return
        if status == 200:
            with self.lock:
                self.served[key] += 1

    def _completion(self, h, content: str, key: str, body: dict) -> None:
        usage = {"prompt_tokens": 100 + len(json.dumps(body)) // 1000, "completion_tokens": 20, "total_tokens": 120}
        self._send(h, 200, completion(key, body["model"], content, usage), key=key)

    def _trickle(self, h, data: bytes) -> None:
        """Write ``data`` one byte every ``trickle_s`` seconds: each byte comes well inside any per-read timeout."""
        how = "complete"
        try:
            for i in range(len(data)):
                if self.stopping.wait(self.trickle_s):
                    how = "stopped"
                    break
                h.wfile.write(data[i : i + 1])
                h.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, OSError):
            how = "client gone"
        h.close_connection = True
        with self.lock:
            self.trickles_ended.append(how)

    def _trickled_completion(self, h, content: str, key: str, body: dict, headers_too: bool) -> None:
        payload = json.dumps(
            {
                "id": f"chatcmpl-{key}",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [
                    {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}
                ],
                "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
            }
        ).encode()
        head = (f"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {len(payload)}\r\n\r\n").encode()
        if headers_too:
            return self._trickle(h, head + payload)
        try:
            h.wfile.write(head)
            h.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, OSError):
            return None
        return self._trickle(h, payload)

    def respond(self, h, case: str, key: str, attempt: int, body: dict, auth: str = "") -> None:
        score = expected_score(key)
        good = json.dumps(
            {
                "score": score,
                "reasoning": f"req {key}: the ball falls as gravity requires",
                "evidence_frame": [{"idx": 0, "observation": "ball at rest"}],
            }
        )
        eva = json.dumps(
            {
                "exp_summary": f"req {key}",
                "D1_core_experiment": 1,
                "D2_prompt_faithfulness": int(key[0] in "01234567"),
                "D3_social_reasoning": 0,
                "D4_social_cue": 1,
                "D5_video_plausible": 1,
                "reason": "r",
            }
        )
        if case == "ok":
            return self._completion(h, good, key, body)
        if case == "eva":
            return self._completion(h, eva, key, body)
        if case == "eva_bad":
            return self._completion(h, eva.replace('"D3_social_reasoning": 0', '"D3_social_reasoning": 2'), key, body)
        if case == "fenced":
            return self._completion(h, f"```json\n{good}\n```", key, body)
        if case == "think":
            return self._completion(h, f'<think>maybe {{"score": 9}}</think>\n{good}', key, body)
        if case == "malformed":
            return self._completion(h, good[:-10], key, body)
        if case == "missing":
            return self._completion(h, json.dumps({"reasoning": f"req {key}", "evidence_frame": []}), key, body)
        if case == "out_of_range":
            return self._completion(h, json.dumps({"score": 7, "reasoning": f"req {key}"}), key, body)
        if case == "prose":
            return self._completion(h, f"I would give this video a score: {score} out of 5.", key, body)
        if case == "rate_limited" and attempt == 1:
            return self._send(h, 429, {"error": {"message": "slow down", "type": "rate_limit"}}, {"retry-after": "0.2"})
        if case == "server_error" and attempt <= 2:
            return self._send(h, 500, {"error": {"message": "overloaded", "type": "server"}}, {"retry-after": "0.1"})
        if case == "always_500":
            return self._send(h, 500, {"error": {"message": "down", "type": "server"}}, {"retry-after": "0"})
        if case == "bad_request":
            return self._send(h, 400, {"error": {"message": "bad request", "type": "invalid"}})
        if case == "timeout" and attempt == 1:
            time.sleep(self.timeout_sleep)
            return self._completion(h, good, key, body)
        if case == "dropped" and attempt == 1:
            h.close_connection = True
            try:
                import socket

                h.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return None
        if case == "unauthorized":
            return self._send(h, 401, {"error": {"message": f"invalid key ({auth!r})", "type": "auth"}})
        if case == "forbidden":
            return self._send(h, 403, {"error": {"message": f"key {auth!r} may not use this model", "type": "auth"}})
        if case == "trickle":
            return self._trickled_completion(h, good, key, body, headers_too=False)
        if case == "trickle_headers":
            return self._trickled_completion(h, good, key, body, headers_too=True)
        if case == "bad_retry_after" and attempt <= len(BAD_RETRY_AFTER):
            value = BAD_RETRY_AFTER[attempt - 1]
            headers = {"retry-after": value, "retry-after-ms": "later"} if attempt == 1 else {"retry-after": value}
            return self._send(h, 429, {"error": {"message": "slow down", "type": "rate_limit"}}, headers)
        if case == "echo_key":  # a well-formed answer whose reasoning quotes the request's Authorization header
            echoed = json.dumps({"score": score, "reasoning": f"req {key}: you sent {auth}", "evidence_frame": []})
            return self._completion(h, echoed, key, body)
        if case == "echo_key_error":  # a 500 (retried, then given up) whose error body quotes it
            return self._send(h, 500, {"error": {"message": f"upstream rejected {auth}", "type": "server"}})
        if case == "echo_key_bad_request":  # a 400 (not retried) whose error body quotes it
            return self._send(h, 400, {"error": {"message": f"bad request from {auth}", "type": "invalid"}})
        return self._completion(h, good, key, body)
