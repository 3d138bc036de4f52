"""One client for every OpenAI-compatible judge server (vLLM, SGLang, a hosted API).

A judge run is thousands of paid model calls, so this module is built around not paying twice and
not inventing answers:

- every reply that came back is appended to an on-disk cache keyed by model, request text (which
  holds the rubric), video content hash, seed and every sampling setting; a run killed at any moment
  (SIGKILL included) resumes without re-sending a cached request, because each reply is one complete
  line appended with a single ``write`` and a torn last line is skipped on load;
- transient failures (429, 5xx, timeouts, dropped connections) are retried with exponential backoff,
  honouring the server's ``retry-after`` (a malformed one is ignored); what still fails is returned as a
  failed reply with its error, never as a made-up answer (parsing the answer is the judge's job, see
  ``parsing``);
- ``timeout_s`` is a *total* deadline per attempt (connect, send, wait and read together), enforced on
  every socket operation (``_DeadlineBackend``), so a server that trickles a byte at a time cannot stretch
  it; an attempt past it is a ``timeout`` and is retried like any other;
- a 401/403 stops the run at once with one line naming the server (``JudgeServerError``, a ``UserError``);
- requests run on a bounded thread pool, so at most ``concurrency`` are in flight;
- the API key is read from an environment variable and only handed to the ``openai`` client: it is
  never logged, and it is redacted (``_scrub``) from everything kept, reply texts included, so a server
  that echoes it cannot get it into the judgements or the cache.

Video reaches the model in one of three ways (as OpenAI-compatible servers such as vLLM and SGLang take it): ``images`` (one ``image_url`` part per
sampled JPEG frame, as the Sci-VBench-style code does), ``video_frames`` (the sampled JPEGs as one
``data:video/jpeg`` ``video_url`` with their fps, vLLM/Qwen-VL's pattern that keeps temporal
encoding), or ``video_url`` (the whole file, as a URL from a template or a ``data:video/mp4`` URL).
"""

from __future__ import annotations

import base64
import email.utils
import hashlib
import json
import logging
import math
import os
import random
import threading
import time
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import cv2
import numpy as np

from ..errors import UserError

log = logging.getLogger(__name__)

TRANSPORTS = ("images", "video_frames", "video_url")
MIN_SECRET_LEN = 8  # shorter API keys are placeholders (vLLM's "EMPTY"), not secrets: see JudgeClient._scrub
_RETRYABLE_STATUS = {408, 409, 429}


class JudgeServerError(UserError, RuntimeError):
    """The server refused the whole run (a 401/403: the key or the URL is wrong): retrying cannot help, and it is
    the user's configuration, so the CLI reports it as one line."""


@dataclass(frozen=True)
class VideoInput:
    """How a video becomes the media part of a request.

    Frames are sampled at ``fps`` from the start (Sci-VBench-style code and Qwen-VL use
    2 fps); a video longer than ``max_frames / fps`` seconds gets ``max_frames`` frames spread evenly
    over its whole length instead, so the end is never cut off. ``fps=None`` always spreads
    ``max_frames``. Frames are shrunk so the longer side is at most ``max_side`` pixels.
    """

    transport: str = "images"
    fps: float | None = 2.0
    max_frames: int = 16
    max_side: int | None = 448
    jpeg_quality: int = 85
    video_url_template: str | None = None  # for transport=video_url, e.g. "file://{path}"; None sends the bytes

    def __post_init__(self):
        if self.transport not in TRANSPORTS:
            raise ValueError(f"VideoInput.transport must be one of {TRANSPORTS}, got {self.transport!r}")
        if self.max_frames < 1:
            raise ValueError(f"VideoInput.max_frames must be >= 1, got {self.max_frames}")
        if self.fps is not None and not self.fps > 0:
            raise ValueError(f"VideoInput.fps must be positive or null, got {self.fps}")


@dataclass(frozen=True)
class Sampling:
    """Decoding settings sent with every request (and part of the cache key)."""

    temperature: float = 0.7
    top_p: float | None = None
    max_tokens: int = 2048
    extra_body: dict = field(default_factory=dict)


@dataclass(frozen=True)
class ClientConfig:
    """Where the judge model is served and how hard to push it.

    ``api_key_env`` names the environment variable that holds the key; with it unset no key is sent
    (a local vLLM / SGLang server needs none).
    """

    base_url: str = "http://127.0.0.1:8000/v1"
    model: str = "Qwen/Qwen3-VL-8B-Instruct"
    api_key_env: str = "OPENAI_API_KEY"
    concurrency: int = 8
    timeout_s: float = 120.0
    max_retries: int = 5
    backoff_s: float = 1.0
    max_backoff_s: float = 60.0
    cache_dir: str | None = ".cache/judges"

    def __post_init__(self):
        if self.concurrency < 1:
            raise ValueError(f"ClientConfig.concurrency must be >= 1, got {self.concurrency}")


@dataclass(frozen=True)
class Request:
    """One model call: the text (prompt + rubric), the video, and the sample's seed.

    ``video=None`` makes a text-only request (no media part, no video in the cache key), as the prompt-suite agents
    send; ``system`` is an optional system message, sent before the user turn and part of the key when set."""

    video: Path | None
    text: str
    seed: int
    sampling: Sampling = Sampling()
    system: str | None = None


@dataclass
class Reply:
    """What came back for one request. ``text`` is None exactly when ``error`` says why, and ``kind`` is then
    ``timeout`` (the last attempt ran past its deadline) or ``request`` (anything else)."""

    text: str | None
    error: str | None = None
    kind: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    attempts: int = 0
    cached: bool = False
    finish_reason: str | None = None

    @property
    def ok(self) -> bool:
        return self.text is not None


_REPLY_FIELDS = {f for f in Reply.__dataclass_fields__}


# ---------------------------------------------------------------------------------------------
# video -> media parts


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def sample_frames(path: Path, vi: VideoInput) -> tuple[np.ndarray, float]:
    """(T, H, W, 3) uint8 frames chosen by ``vi`` and the rate they represent (frames per second of video)."""
    from ..io.video import ClipSpec, decode_clip, probe

    info = probe(path)
    duration = max(info["duration"], 1e-6)
    wanted = duration * vi.fps + 1e-6 if vi.fps is not None else None  # 0.99999 s at 2 fps is 2 frames
    if wanted is not None and wanted <= vi.max_frames + 1e-6:
        n = max(1, int(math.floor(wanted)))
        return decode_clip(path, ClipSpec(n, mode="fps", fps=vi.fps)).frames, float(vi.fps)
    frames = decode_clip(path, ClipSpec(vi.max_frames)).frames
    return frames, vi.max_frames / duration


def jpeg_b64(frame_rgb: np.ndarray, max_side: int | None, quality: int) -> str:
    h, w = frame_rgb.shape[:2]
    if max_side and max(h, w) > max_side:
        s = max_side / max(h, w)
        frame_rgb = cv2.resize(frame_rgb, (max(1, round(w * s)), max(1, round(h * s))), interpolation=cv2.INTER_AREA)
    ok, buf = cv2.imencode(".jpg", cv2.cvtColor(frame_rgb, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, int(quality)])
    if not ok:
        raise ValueError("JPEG encoding failed")
    return base64.b64encode(buf.tobytes()).decode("ascii")


def media_parts(path: Path, vi: VideoInput) -> tuple[list[dict], dict]:
    """The content parts that carry the video, and the ``extra_body`` they need."""
    if vi.transport == "video_url":
        if vi.video_url_template:
            url = vi.video_url_template.format(path=path.resolve(), name=path.name)
        else:
            url = "data:video/mp4;base64," + base64.b64encode(path.read_bytes()).decode("ascii")
        return [{"type": "video_url", "video_url": {"url": url}}], {}
    frames, rate = sample_frames(path, vi)
    b64 = [jpeg_b64(f, vi.max_side, vi.jpeg_quality) for f in frames]
    if vi.transport == "images":
        return [{"type": "image_url", "image_url": {"url": "data:image/jpeg;base64," + b}} for b in b64], {}
    return (
        [{"type": "video_url", "video_url": {"url": "data:video/jpeg;base64," + ",".join(b64)}}],
        {"mm_processor_kwargs": {"fps": [rate]}},
    )


# ---------------------------------------------------------------------------------------------
# cache


class ResponseCache:
    """Append-only JSON-lines store of replies, safe to kill at any instant.

    Each reply is one line written by a single ``os.write`` on an ``O_APPEND`` descriptor, so
    concurrent writers never interleave and a kill can at worst leave the last line torn; torn or
    unreadable lines are skipped on load (and reported), and a file that does not end in a newline
    gets one before the next append. Only replies are stored: a request that failed is sent again
    on the next run, and so is one whose reply its reader could not parse (:meth:`forget`).
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._d: dict[str, dict] = {}
        self._lock = threading.Lock()
        self.skipped_lines: list[int] = []
        if self.path.exists():
            with open(self.path, encoding="utf-8", errors="replace") as f:
                for i, line in enumerate(f, start=1):
                    try:
                        row = json.loads(line)
                        if row["reply"] is None:  # forgotten: a reply its reader could not parse
                            self._d.pop(row["key"], None)
                        else:
                            self._d[row["key"]] = row["reply"]
                    except (json.JSONDecodeError, KeyError, TypeError):
                        if line.strip():
                            self.skipped_lines.append(i)
        if self.skipped_lines:
            log.warning(
                "%s: skipped %d torn/unreadable line(s) (first: line %d), left by an interrupted run; "
                "their requests will be sent again",
                self.path,
                len(self.skipped_lines),
                self.skipped_lines[0],
            )
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        if self.path.stat().st_size:
            with open(self.path, "rb") as f:
                f.seek(-1, os.SEEK_END)
                if f.read(1) != b"\n":
                    os.write(self._fd, b"\n")

    def get(self, key: str) -> dict | None:
        return self._d.get(key)

    def put(self, key: str, reply: dict) -> None:
        line = (json.dumps({"key": key, "reply": reply}, ensure_ascii=False) + "\n").encode("utf-8")
        with self._lock:
            os.write(self._fd, line)
            self._d[key] = reply

    def forget(self, key: str) -> None:
        """Drop ``key``'s reply (a line saying so is appended): the request is sent again on the next run."""
        line = (json.dumps({"key": key, "reply": None}) + "\n").encode("utf-8")
        with self._lock:
            if self._d.pop(key, None) is not None:
                os.write(self._fd, line)

    def __len__(self) -> int:
        return len(self._d)

    def close(self) -> None:
        os.close(self._fd)


# ---------------------------------------------------------------------------------------------
# client


def _seconds(value, scale: float = 1.0) -> float | None:
    """A finite, non-negative number of seconds from a header value, or None for anything else."""
    try:
        v = float(value) * scale
    except (TypeError, ValueError, OverflowError):
        return None
    return v if math.isfinite(v) and v >= 0 else None


def _retry_after(exc) -> float | None:
    """Seconds the server asked us to wait (``retry-after-ms``, ``retry-after`` seconds or HTTP date); None when it
    asked nothing usable (absent, malformed, negative, not finite), which means the default backoff."""
    response = getattr(exc, "response", None)
    try:
        headers = getattr(response, "headers", None) or {}
        ms, value = headers.get("retry-after-ms"), headers.get("retry-after")
    except Exception:  # noqa: BLE001 - a header we cannot read is a header we ignore
        return None
    wait = _seconds(ms, 1e-3) if ms is not None else None
    if wait is not None or value is None:
        return wait
    wait = _seconds(value)
    if wait is not None:
        return wait
    try:
        when = email.utils.parsedate_to_datetime(str(value))
        return _seconds(max(0.0, when.timestamp() - time.time())) if when else None  # a date past: now
    except (TypeError, ValueError, OverflowError, IndexError):
        return None


# ---------------------------------------------------------------------------------------------
# a total deadline per attempt
#
# ``httpx`` timeouts bound each socket operation, not the request: a server that sends a byte every
# ``timeout_s - 1`` seconds keeps a request alive for ever. The deadline of the attempt running in
# this thread (the ``openai`` client is synchronous, so the HTTP exchange runs in the calling thread)
# caps the timeout of every connect, write and read, and an operation that starts past it fails at
# once with the HTTP library's own timeout error, which closes the connection, so nothing lingers.


_attempt = threading.local()


def _bounded(timeout: float | None, phase: str) -> float | None:
    at = getattr(_attempt, "deadline", None)
    if at is None:
        return timeout
    left = at - time.monotonic()
    if left <= 0:
        import httpcore2

        exc = {"connect": httpcore2.ConnectTimeout, "write": httpcore2.WriteTimeout}.get(phase, httpcore2.ReadTimeout)
        raise exc(f"the request's total deadline of {_attempt.total:g} s passed")
    return left if timeout is None else min(timeout, left)


def _deadline_backend_classes():
    import httpcore2

    class DeadlineStream(httpcore2.NetworkStream):
        def __init__(self, inner):
            self._inner = inner

        def read(self, max_bytes, timeout=None):
            return self._inner.read(max_bytes, _bounded(timeout, "read"))

        def write(self, buffer, timeout=None):
            return self._inner.write(buffer, _bounded(timeout, "write"))

        def close(self):
            return self._inner.close()

        def start_tls(self, ssl_context, server_hostname=None, timeout=None):
            return DeadlineStream(self._inner.start_tls(ssl_context, server_hostname, _bounded(timeout, "connect")))

        def get_extra_info(self, info):
            return self._inner.get_extra_info(info)

    class DeadlineBackend(httpcore2.NetworkBackend):
        def __init__(self, inner):
            self._inner = inner

        def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
            t = _bounded(timeout, "connect")
            return DeadlineStream(self._inner.connect_tcp(host, port, t, local_address, socket_options))

        def connect_unix_socket(self, path, timeout=None, socket_options=None):
            return DeadlineStream(self._inner.connect_unix_socket(path, _bounded(timeout, "connect"), socket_options))

        def sleep(self, seconds):
            return self._inner.sleep(seconds)

    return DeadlineBackend


def _install_deadline(openai_client) -> bool:
    """Wrap the network backend of every connection pool of ``openai_client``'s HTTP client (the default transport
    and any proxy mounts) so that the thread's attempt deadline bounds every socket operation. False when this
    version of the HTTP stack is not laid out as expected; the caller then falls back to a watchdog thread."""
    try:
        backend_cls = _deadline_backend_classes()
        http = openai_client._client
        transports = [http._transport, *(t for t in getattr(http, "_mounts", {}).values() if t is not None)]
        pools = [t._pool for t in transports]
        if not pools or not all(hasattr(p, "_network_backend") for p in pools):
            return False
        for p in pools:
            if not isinstance(p._network_backend, backend_cls):
                p._network_backend = backend_cls(p._network_backend)
        return True
    except (AttributeError, ImportError):
        return False


class _PastDeadline(Exception):
    """The watchdog's verdict on an attempt that did not finish in time (fallback path only)."""


def _with_watchdog(fn, seconds: float):
    """``fn()`` in a helper thread, waited for at most ``seconds``; past that the attempt is abandoned to its
    socket timeouts (used only when the deadline cannot be put into the HTTP stack itself)."""
    fut: Future = Future()

    def run():
        try:
            fut.set_result(fn())
        except BaseException as e:  # noqa: BLE001 - handed to the waiting thread
            fut.set_exception(e)

    threading.Thread(target=run, daemon=True, name="judge-attempt").start()
    try:
        return fut.result(timeout=seconds)
    except FutureTimeout:
        raise _PastDeadline() from None


class JudgeClient:
    """Sends ``Request``s to one model on one server, cached, retried and bounded in concurrency."""

    def __init__(
        self,
        config: ClientConfig,
        video: VideoInput = VideoInput(),
        cache: ResponseCache | None = None,
        media_memo: int = 64,
    ):
        import openai

        self.config, self.video, self.cache = config, video, cache
        self._key = os.environ.get(config.api_key_env) or None
        self._openai = openai
        self._client = openai.OpenAI(
            base_url=config.base_url, api_key=self._key or "EMPTY", max_retries=0, timeout=config.timeout_s
        )
        self._hashes: dict[Path, str] = {}
        self._media: OrderedDict[Path, Future] = OrderedDict()
        self._media_memo = media_memo
        self._lock = threading.Lock()
        self._fatal: str | None = None
        self._deadline_in_stack = _install_deadline(self._client)
        if not self._deadline_in_stack:
            log.debug("judge client: total deadline enforced by a watchdog thread (HTTP stack not recognised)")

    def __repr__(self) -> str:
        return (
            f"JudgeClient(base_url={self.config.base_url!r}, model={self.config.model!r}, "
            f"api_key_env={self.config.api_key_env!r}, transport={self.video.transport!r})"
        )

    def _scrub(self, text: str | None) -> str | None:
        """``text`` with the API key replaced by ``***``. Applied to everything kept (reply texts, errors): a server
        may echo the key. A "key" shorter than ``MIN_SECRET_LEN`` characters (``EMPTY``, ``x``) is not a secret and
        is left alone, since replacing it would rewrite the answers themselves."""
        if not text or not self._key or len(self._key) < MIN_SECRET_LEN:
            return text
        return text.replace(self._key, "***")

    # -- keys and media ------------------------------------------------------------------------

    def video_hash(self, path: Path) -> str:
        with self._lock:
            h = self._hashes.get(path)
        if h is None:
            h = file_sha256(path)
            with self._lock:
                self._hashes[path] = h
        return h

    def cache_key(self, req: Request) -> str:
        payload = {"model": self.config.model, "text": req.text, "seed": req.seed, "sampling": asdict(req.sampling)}
        if req.video is not None:  # a text-only request's key has no video (and no video settings) in it
            payload.update(video_sha256=self.video_hash(req.video), video=asdict(self.video))
        if req.system is not None:  # added only when set, so the keys of requests without one are unchanged
            payload["system"] = req.system
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()

    def _media_for(self, path: Path) -> tuple[list[dict], dict]:
        """Media parts of ``path``, encoded once however many requests (dimensions, samples) share them."""
        with self._lock:
            fut = self._media.get(path)
            owner = fut is None
            if owner:
                fut = self._media[path] = Future()
                while len(self._media) > self._media_memo:
                    self._media.popitem(last=False)
            else:
                self._media.move_to_end(path)
        if owner:
            try:
                fut.set_result(media_parts(path, self.video))
            except Exception as e:  # noqa: BLE001 - every waiter must see the same failure
                fut.set_exception(e)
        return fut.result()

    # -- one request ---------------------------------------------------------------------------

    def _send(self, req: Request, content: list[dict] | str, extra_body: dict) -> Reply:
        oa = self._openai
        s = req.sampling
        messages = [{"role": "system", "content": req.system}] if req.system is not None else []
        kwargs = dict(
            model=self.config.model,
            messages=[*messages, {"role": "user", "content": content}],
            temperature=s.temperature,
            max_tokens=s.max_tokens,
            seed=req.seed,
            extra_body={**extra_body, **s.extra_body} or None,
        )
        if s.top_p is not None:
            kwargs["top_p"] = s.top_p
        t0 = time.perf_counter()
        kind = "request"
        for attempt in range(1, self.config.max_retries + 2):
            if self._fatal:
                return Reply(None, error=self._fatal, kind="request", attempts=attempt - 1)
            wait = None
            kind = "request"
            try:
                r = self._create(kwargs)
                choice = r.choices[0]
                text = choice.message.content
                if text is None:
                    return Reply(
                        None,
                        error="server returned no message content",
                        kind="request",
                        attempts=attempt,
                        seconds=time.perf_counter() - t0,
                    )
                usage = r.usage
                return Reply(
                    self._scrub(text),
                    prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
                    completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
                    seconds=time.perf_counter() - t0,
                    attempts=attempt,
                    finish_reason=self._scrub(choice.finish_reason),
                )
            except (_PastDeadline, oa.APITimeoutError) as e:
                kind = "timeout"
                error = f"no complete reply within the {self.config.timeout_s:g} s deadline ({type(e).__name__})"
            except oa.APIConnectionError as e:
                error = f"{type(e).__name__}: {e}"
            except oa.APIStatusError as e:
                error = f"HTTP {e.status_code}: {e}"
                if e.status_code in (401, 403):
                    self._fatal = self._refused(e.status_code, error)
                    return Reply(
                        None, error=self._fatal, kind="request", attempts=attempt, seconds=time.perf_counter() - t0
                    )
                if e.status_code < 500 and e.status_code not in _RETRYABLE_STATUS:
                    return Reply(
                        None,
                        error=self._scrub(error),
                        kind="request",
                        attempts=attempt,
                        seconds=time.perf_counter() - t0,
                    )
                wait = _retry_after(e)
            except (AttributeError, IndexError, TypeError, ValueError) as e:
                return Reply(
                    None,
                    error=self._scrub(f"malformed response: {type(e).__name__}: {e}"),
                    kind="request",
                    attempts=attempt,
                    seconds=time.perf_counter() - t0,
                )
            if attempt > self.config.max_retries:
                break
            backoff = min(self.config.max_backoff_s, self.config.backoff_s * 2 ** (attempt - 1))
            delay = min(self.config.max_backoff_s, wait) if wait is not None else backoff * (0.5 + random.random() / 2)
            log.debug("retrying after %.2fs (attempt %d): %s", delay, attempt, self._scrub(error))
            time.sleep(delay)
        return Reply(
            None,
            error=self._scrub(f"gave up after {attempt} attempts: {error}"),
            kind=kind,
            attempts=attempt,
            seconds=time.perf_counter() - t0,
        )

    def _create(self, kwargs: dict):
        """One chat-completions call that ends, one way or another, within ``timeout_s`` of its start."""
        total = float(self.config.timeout_s)
        call = lambda: self._client.chat.completions.create(**kwargs)  # noqa: E731
        if not self._deadline_in_stack:
            return _with_watchdog(call, total)
        _attempt.deadline, _attempt.total = time.monotonic() + total, total
        try:
            return call()
        finally:
            _attempt.deadline = None

    def _refused(self, status: int, error: str) -> str:
        """The one line that stops a run whose key (or URL) the server refused."""
        env = self.config.api_key_env
        who = f"the API key from ${env}" if self._key else f"the request without an API key (${env} is not set)"
        detail = " ".join(self._scrub(error).split())
        if len(detail) > 200:
            detail = detail[:200] + "..."
        return (
            f"{self.config.base_url} refused {who} with HTTP {status}; check client.api_key_env and client.base_url "
            f"(server said: {detail})"
        )

    def ask(self, req: Request) -> Reply:
        """The reply to ``req``: from the cache when it was answered before, else from the server."""
        key = self.cache_key(req) if self.cache is not None else None
        if key is not None:
            hit = self.cache.get(key)
            if hit is not None:  # scrubbed again: a cache written before redaction may hold an echoed key
                hit = {**hit, "text": self._scrub(hit.get("text")), "cached": True}
                return Reply(**{k: v for k, v in hit.items() if k in _REPLY_FIELDS})
        if req.video is None:  # text only: the plain-string content every chat server takes
            reply = self._send(req, req.text, {})
        else:
            try:
                parts, extra = self._media_for(req.video)
            except Exception as e:  # noqa: BLE001 - an unreadable video is that request's failure
                return Reply(
                    None,
                    error=self._scrub(f"cannot prepare video {req.video}: {type(e).__name__}: {e}"),
                    kind="request",
                )
            reply = self._send(req, [*parts, {"type": "text", "text": req.text}], extra)
        if reply.ok and key is not None:
            self.cache.put(key, {k: v for k, v in asdict(reply).items() if k != "cached"})
        return reply

    def forget(self, req: Request) -> None:
        """Take ``req``'s reply out of the cache: its reader found it malformed, so a rerun asks again instead of
        replaying the same failure (a server fixed since answers it)."""
        if self.cache is not None:
            self.cache.forget(self.cache_key(req))

    def ask_all(self, requests: list[Request], progress_every: int = 0) -> list[Reply]:
        """Replies in the order of ``requests``, at most ``concurrency`` in flight."""
        out: list[Reply | None] = [None] * len(requests)
        done = 0
        with ThreadPoolExecutor(self.config.concurrency, thread_name_prefix="judge") as pool:
            futures = {pool.submit(self.ask, r): i for i, r in enumerate(requests)}
            for fut in futures:
                out[futures[fut]] = fut.result()
                done += 1
                if progress_every and done % progress_every == 0:
                    log.info("judge: %d/%d requests", done, len(requests))
        if self._fatal:
            raise JudgeServerError(self._fatal)
        return out  # type: ignore[return-value]

    @property
    def refused(self) -> str | None:
        """The one line of a 401/403 that stopped this client (every later request fails with it), else None: for
        callers that send through :meth:`ask` on their own threads and must stop as :meth:`ask_all` does."""
        return self._fatal

    def close(self) -> None:
        self._client.close()
        if self.cache is not None:
            self.cache.close()


CACHE_FILE = "responses.jsonl"  # the response cache's file under a config's ``cache_dir``


def client_from_config(cfg: dict, where: str = "config", video: VideoInput = VideoInput()) -> JudgeClient:
    """The client of a config's ``client:`` block, with its response cache under ``cache_dir`` (none without one);
    an unknown or bad client setting is one line naming ``where``."""
    from ..errors import InvalidOption

    client_cfg = dict(cfg.get("client") or {})
    known = {f.name for f in fields(ClientConfig)} - {"cache_dir"}
    unknown = sorted(set(client_cfg) - known)
    if unknown:
        raise InvalidOption(f"{where}: unknown client setting(s) {unknown}; known: {sorted(known)}")
    try:
        config = ClientConfig(**client_cfg)
    except (TypeError, ValueError) as e:
        raise InvalidOption(f"{where}: client: {e}") from None
    cache_dir = cfg.get("cache_dir")
    return JudgeClient(config, video, ResponseCache(Path(cache_dir) / CACHE_FILE) if cache_dir else None)
