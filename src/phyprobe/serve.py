"""``phyprobe serve``: an HTTP service around a scorer, for pipelines that call services.

An application on top of the library (the library never imports this module; FastAPI and uvicorn
load only when it runs). Requests::

    POST /score   body: the video bytes (Content-Type video/* or application/octet-stream)
                  or JSON {"path": "..."} for a file under --paths-root on the server
    GET  /health  the process answers (200 as soon as the port is bound)
    GET  /ready   200 once the scorer is loaded and the decode workers run; 503 until then

The port is bound first and the scorer loads behind it, so an orchestrator sees ``/ready`` say 503
while loading. Each video is decoded in a worker process (never in the server's own process): a
request past its timeout gets 504 and its worker is killed and replaced, so abandoned decoding
cannot starve the next request. Long videos (uploads over ``long_video_mb``, or any decode that has used
``light_budget_s`` of CPU time: waiting for a busy CPU does not count) move to a separate, low-priority
lane of at most ``long_video_workers`` processes, so they cannot hold up short clips. Requests wait for a worker in
a bounded queue; past it, or with the long-video lane full, they get 503 with ``Retry-After``.
A batcher collects the clips that arrive within ``max_wait_ms`` (up to ``max_batch``, short videos'
clips first) into one encoder forward, so concurrent callers share the encoder's batch throughput. On a CPU the
forward runs on the cores the decode workers leave (``encoder_threads``), so its threads do not wait on each other.

Reading a request is bounded too: the request line and headers must arrive within
``header_timeout_s``, the whole request (body included) within ``read_timeout_s``, and the client
may not go silent for more than ``idle_timeout_s`` mid-request; past any of them it gets 408 and the
connection is closed. Uploads stream to a temporary file and are refused (413) as soon as they
pass ``max_upload_bytes``, from the Content-Length header before reading anything when the client
sends one. Bad input gets a 4xx with a one-line JSON ``error``: 400 empty or malformed (a NUL byte
in a path included), 403 a path outside the allowed root, 408 too slow to send, 413 too large, 415
multipart, 422 not a readable video; 503 busy or not ready (with ``Retry-After``), 504 past the
request timeout.
"""

import argparse
import asyncio
import collections
import contextlib
import json
import logging
import math
import multiprocessing
import os
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from .errors import json_error_reason
from .helptext import for_terminal

log = logging.getLogger(__name__)


@dataclass
class ServeConfig:
    max_upload_bytes: int = 256 * 2**20
    max_spool_bytes: int = 1024 * 2**20  # all uploads being received or scored at once, together; past it 503
    timeout_s: float = 60.0  # per request, from its headers to its answer (body, queue, decoding and forward)
    max_batch: int = 8
    max_wait_ms: float = 10.0
    max_pending: int = 1024  # clips waiting for the encoder
    decode_workers: int = 2  # decode processes for short videos; 0: decode in threads of this process (no cancelling)
    encoder_threads: int | None = None  # torch threads of the forward on a CPU; None: the cores decoding leaves (>= 1)
    max_queue: int = 256  # requests waiting for a decode worker; past it 503 + Retry-After
    long_video_mb: float = 16.0  # uploads (or files) over this go straight to the long-video lane
    light_budget_s: float = 2.0  # a decode that has used this much CPU time moves to the long-video lane
    long_video_workers: int = 2  # long videos decoded at once (low priority); past it 503 + Retry-After
    header_timeout_s: float = 10.0  # request line + headers, from the request's first byte (or the connection)
    read_timeout_s: float = 60.0  # the whole request, body included
    idle_timeout_s: float = 10.0  # longest silence from the client while a request is being read
    max_connections: int = 1000  # open connections (uvicorn's limit_concurrency): past it 503
    paths_root: Path | None = None
    spool_dir: Path | None = None  # where uploads stream to (default: the system's temporary directory)


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


class _Reject(Exception):
    def __init__(self, status: int, message: str, retry_after: int | None = None):
        super().__init__(message)
        self.status, self.message, self.retry_after = status, _one_line(message), retry_after

    def response(self):
        from fastapi.responses import JSONResponse

        headers = {"Retry-After": str(self.retry_after)} if self.retry_after is not None else None
        return JSONResponse({"error": self.message}, status_code=self.status, headers=headers)


# --- decoding in worker processes -------------------------------------------------------------------------------


class _ReadOnlyEncoder:
    """What ``Scorer.read`` needs of the encoder, without its weights: the preprocessing and the clip it is fed."""

    def __init__(self, encoder, clip):
        self.preprocess, self._clip, self._spec = encoder.preprocess, clip, encoder.clip_spec(clip)

    def clip_spec(self, clip):
        if clip != self._clip:
            raise ValueError(f"this reader was built for {self._clip}, not {clip}")
        return self._spec

    def read_clip(self, path, clip, on_host=False):
        from .encoders.base import FrozenEncoder

        return FrozenEncoder.read_clip(self, path, clip, on_host)


def _reader_of(scorer):
    """A weightless copy of ``scorer`` that can only ``read`` videos: what a decode worker is sent."""
    from .scorer import Scorer

    r = Scorer.__new__(Scorer)
    r.encoder, r.clip, r.reading, r.config = (
        _ReadOnlyEncoder(scorer.encoder, scorer.clip),
        scorer.clip,
        scorer.reading,
        {},
    )
    return r


def _decode_worker(conn, reader) -> None:
    """A decode process: paths in; ("ok", clips as arrays), ("decode", reason) or ("error", reason) out."""
    import signal

    import torch

    from .io.video import VideoDecodeError

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for the server, which kills its workers
    torch.set_num_threads(1)
    conn.send(("up", os.getpid()))
    while True:
        try:
            path = conn.recv()
        except (EOFError, OSError):
            return
        try:
            msg = ("ok", [c.numpy() for c in reader.read(path)])
        except VideoDecodeError as e:
            msg = ("decode", e.reason)
        except Exception as e:  # noqa: BLE001 - a file the decoder chokes on is the caller's input
            msg = ("error", f"cannot read video ({type(e).__name__}: {e})")
        conn.send(msg)


def _lower_priority(pid: int) -> None:
    """Nice 19 for every thread of ``pid`` (Linux nice values are per thread: FFmpeg's threads already run)."""
    tids = [pid]
    with contextlib.suppress(OSError):
        tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    for tid in tids:
        with contextlib.suppress(OSError, AttributeError):
            os.setpriority(os.PRIO_PROCESS, tid, 19)


def _cpu_seconds(pid: int) -> float | None:
    """CPU time (user + system, all threads) ``pid`` has used so far; None where /proc cannot tell (not Linux)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


class _Worker:
    def __init__(self, proc, conn):
        self.proc, self.conn, self.long = proc, conn, False

    def kill(self) -> None:
        with contextlib.suppress(Exception):
            self.proc.kill()
        with contextlib.suppress(Exception):
            self.conn.close()
        threading.Thread(target=self.proc.join, args=(10,), daemon=True).start()  # reap it

    async def recv(self, until: float | None):
        """The worker's next message; None if ``until`` (loop time) passes first; ("crashed", code) if it died."""
        ev = asyncio.get_running_loop()
        if not self.conn.poll(0):
            ready = ev.create_future()
            fd = self.conn.fileno()
            ev.add_reader(fd, lambda: ready.done() or ready.set_result(None))
            try:
                if until is None:
                    await ready
                else:
                    await asyncio.wait_for(ready, max(0.0, until - ev.time()))
            except asyncio.TimeoutError:
                return None
            finally:
                ev.remove_reader(fd)
        try:
            return self.conn.recv()
        except (EOFError, OSError):
            self.proc.join(1)
            return ("crashed", self.proc.exitcode)


class _DecodePool:
    """``decode_workers`` processes for short videos, a bounded queue of requests waiting for one, and a lane of at
    most ``long_video_workers`` low-priority processes for long videos. A worker whose request is abandoned (timed
    out, shed) is killed and replaced, so its decoding cannot go on at anyone's expense."""

    def __init__(self, reader, cfg: ServeConfig):
        methods = multiprocessing.get_all_start_methods()
        self.ctx = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
        if self.ctx.get_start_method() == "forkserver":  # workers fork from a server that has torch and PyAV loaded
            self.ctx.set_forkserver_preload(["phyprobe.scorer.core", "phyprobe.serve"])
        self.reader, self.cfg = reader, cfg
        self.idle: list[_Worker] = []
        self.waiters: collections.deque[asyncio.Future] = collections.deque()
        self.long: dict[object, float] = {}  # long-video slot -> its request's deadline (loop time)
        self.workers: set[_Worker] = set()
        self.spawner = ThreadPoolExecutor(4, thread_name_prefix="phyprobe-spawn")
        self.avg_s = 0.1  # running mean of a short video's decode time, for Retry-After
        self.killed = 0  # workers killed mid-decode (their request timed out or was shed)
        self.moved = 0  # decodes moved to the long-video lane after spending the light budget
        self.closed = False

    def _start_process(self) -> _Worker:
        parent, child = self.ctx.Pipe()
        proc = self.ctx.Process(target=_decode_worker, args=(child, self.reader), daemon=True, name="phyprobe-decode")
        proc.start()
        child.close()
        if not parent.poll(120):
            proc.kill()
            raise RuntimeError("a decode worker did not start within 120 s")
        parent.recv()
        w = _Worker(proc, parent)
        self.workers.add(w)
        return w

    async def _spawn(self) -> _Worker:
        fut = asyncio.get_running_loop().run_in_executor(self.spawner, self._start_process)
        try:
            return await asyncio.shield(fut)
        except asyncio.CancelledError:
            fut.add_done_callback(lambda f: f.exception() is None and self._retire(f.result()))
            raise

    async def start(self) -> None:
        for w in await asyncio.gather(*(self._spawn() for _ in range(self.cfg.decode_workers))):
            self._release(w)

    def _replace(self) -> None:
        if self.closed:
            return
        ev = asyncio.get_running_loop()

        def started(f):
            if f.exception() is not None:
                log.error("cannot start a decode worker (%s); trying again in 1 s", f.exception())
                ev.call_later(1.0, self._replace)
            elif self.closed:
                self._retire(f.result())
            else:
                self._release(f.result())

        ev.run_in_executor(self.spawner, self._start_process).add_done_callback(
            lambda f: ev.call_soon_threadsafe(started, f)
        )

    def _release(self, w: _Worker) -> None:
        if self.closed:
            return self._retire(w)
        while self.waiters:
            f = self.waiters.popleft()
            if not f.done():
                return f.set_result(w)
        self.idle.append(w)

    def _retire(self, w: _Worker) -> None:
        self.workers.discard(w)
        w.kill()

    def retry_after(self) -> int:
        return max(1, math.ceil((len(self.waiters) + 1) * self.avg_s / max(1, self.cfg.decode_workers)))

    async def _acquire(self) -> _Worker:
        if self.idle:
            return self.idle.pop()
        if len(self.waiters) >= self.cfg.max_queue:
            raise _Reject(
                503,
                f"busy: {len(self.waiters)} requests already wait for a decoder; retry later",
                self.retry_after(),
            )
        fut = asyncio.get_running_loop().create_future()
        self.waiters.append(fut)
        try:
            return await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():
                self._release(fut.result())
            with contextlib.suppress(ValueError):
                self.waiters.remove(fut)
            raise

    def check_long_lane(self) -> None:
        """503 with Retry-After (when the first long video's deadline passes) if the long-video lane is full."""
        if len(self.long) >= self.cfg.long_video_workers:
            wait = max(1, math.ceil(min(self.long.values()) - asyncio.get_running_loop().time()))
            raise _Reject(503, f"busy: {len(self.long)} long videos are being decoded; retry in {wait} s", wait)

    def _long_slot(self, deadline: float) -> object:
        self.check_long_lane()
        slot = object()
        self.long[slot] = deadline
        return slot

    async def _light(self, w: _Worker, path: Path) -> tuple | None:
        """``path`` sent to ``w``; the worker's answer, or None once its decode has used ``light_budget_s`` of CPU
        time: a long video. CPU time, not time waited, so a short clip whose worker is starved of CPU on a busy
        machine is not taken for one (and sent to the low-priority lane, where it would wait longer still). Wall
        time where /proc cannot tell."""
        ev, budget = asyncio.get_running_loop(), self.cfg.light_budget_s
        c0 = _cpu_seconds(w.proc.pid)
        w.conn.send(str(path))
        until = ev.time() + budget
        while True:
            msg = await w.recv(until)
            if msg is not None:
                return msg
            c = _cpu_seconds(w.proc.pid) if c0 is not None else None
            used = budget if c is None else c - c0
            if used >= budget:
                return None
            until = ev.time() + max(0.05, budget - used)  # at the earliest when the budget can be spent

    async def decode(self, path: Path, size: int, deadline: float) -> tuple:
        """The worker's answer for ``path`` (``size`` bytes). Cancelling the caller kills the worker."""
        ev = asyncio.get_running_loop()
        w, slot, finished = None, None, False
        try:
            if size > self.cfg.long_video_mb * 2**20:
                slot = self._long_slot(deadline)
                w = await self._spawn()
                w.long = True
                _lower_priority(w.proc.pid)
                w.conn.send(str(path))
                msg = await w.recv(None)
            else:
                w = await self._acquire()
                t0 = ev.time()
                msg = await self._light(w, path)
                if msg is None:
                    # still decoding: a long video; it goes on at low priority, a new worker takes its place
                    self.moved += 1
                    slot = self._long_slot(deadline)
                    w.long = True
                    _lower_priority(w.proc.pid)
                    self._replace()
                    msg = await w.recv(None)
                else:
                    self.avg_s = 0.8 * self.avg_s + 0.2 * (ev.time() - t0)
            finished = msg[0] != "crashed"
            return msg
        finally:
            if slot is not None:
                self.long.pop(slot, None)
            if w is not None:
                if finished and not w.long:
                    self._release(w)
                else:
                    self.killed += not finished and w.proc.exitcode is None
                    self._retire(w)
                    if not w.long:
                        self._replace()

    def close(self) -> None:
        self.closed = True
        for f in self.waiters:
            f.cancel()
        for w in list(self.workers):
            self._retire(w)
        self.spawner.shutdown(wait=False, cancel_futures=True)

    def stats(self) -> dict:
        return {
            "idle": len(self.idle),
            "waiting": len(self.waiters),
            "long": len(self.long),
            "workers": len(self.workers),
            "killed": self.killed,
            "moved": self.moved,
        }


def encoder_threads(cfg: ServeConfig) -> int:
    """Torch threads of the server's forward on a CPU: ``cfg.encoder_threads``, else the cores this process may use
    less the short-video decode workers, at least one."""
    if cfg.encoder_threads is not None:
        return max(1, cfg.encoder_threads)
    from .encoders.base import default_encoder_threads

    return default_encoder_threads(cfg.decode_workers)


class _Batcher:
    """Clips queued by requests -> batched forwards on one thread -> each request's future. Clips of videos with
    fewer clips go first, so one long video's windows cannot hold up short clips."""

    def __init__(self, scorer, cfg: ServeConfig):
        self.scorer, self.cfg = scorer, cfg
        self.queue: asyncio.PriorityQueue = asyncio.PriorityQueue(maxsize=cfg.max_pending)
        self.forward = ThreadPoolExecutor(1, thread_name_prefix="phyprobe-forward", initializer=self._threads)
        self.task: asyncio.Task | None = None
        self.seq = 0

    def _threads(self) -> None:
        """The forward thread's torch threads on a CPU. With more threads than the cores the decode workers leave,
        a forward's threads wait on each other whenever a core is busy elsewhere (a decode, an upload being read),
        and every request in its batch waits with them."""
        import torch

        if self.scorer.device.type == "cpu":
            torch.set_num_threads(encoder_threads(self.cfg))

    def submit(self, clip, weight: int = 1) -> asyncio.Future:
        fut = asyncio.get_running_loop().create_future()
        self.seq += 1
        try:
            self.queue.put_nowait((weight, self.seq, clip, fut))
        except asyncio.QueueFull:
            raise _Reject(
                503, f"busy: {self.cfg.max_pending} clips already wait for the encoder; retry later", 1
            ) from None
        return fut

    def _run(self, clips):
        import torch

        return self.scorer.head_scores(self.scorer.encode(torch.stack(clips))).cpu().tolist()

    async def loop(self) -> None:
        ev = asyncio.get_running_loop()
        while True:
            items = [await self.queue.get()]
            deadline = ev.time() + self.cfg.max_wait_ms / 1000
            while len(items) < self.cfg.max_batch:
                left = deadline - ev.time()
                if left <= 0:
                    break
                try:
                    items.append(await asyncio.wait_for(self.queue.get(), left))
                except asyncio.TimeoutError:
                    break
            items = [(c, f) for _, _, c, f in items if not f.done()]  # callers that timed out are not encoded
            if not items:
                continue
            try:
                raw = await ev.run_in_executor(self.forward, self._run, [c for c, _ in items])
            except Exception as e:  # noqa: BLE001 - every waiting request gets the failure, the loop goes on
                for _, f in items:
                    if not f.done():
                        f.set_exception(e)
                continue
            for (_, f), v in zip(items, raw):
                if not f.done():
                    f.set_result(v)


def _load_scorer(scorer):
    from .scorer import Scorer

    if isinstance(scorer, Scorer):
        return scorer
    if callable(scorer):
        return scorer()
    return Scorer.from_pretrained(scorer)


def build_app(scorer, cfg: ServeConfig | None = None):
    """The FastAPI application. ``scorer``: a loaded Scorer, a directory / Hub id, or a function returning a Scorer;
    anything but a loaded Scorer is loaded after the port is bound (``/ready`` says 503 meanwhile)."""
    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse
    from starlette.requests import ClientDisconnect

    cfg = cfg or ServeConfig()
    if cfg.spool_dir is not None:  # made now: an upload into a missing folder would fail as a server error
        Path(cfg.spool_dir).mkdir(parents=True, exist_ok=True)
    state: dict = {"ready": False, "error": None, "spooled": 0}  # spooled: bytes of uploads on disk right now
    decode_pool = ThreadPoolExecutor(max(1, cfg.decode_workers), thread_name_prefix="phyprobe-decode")

    async def load(app) -> None:
        ev = asyncio.get_running_loop()
        try:
            s = await ev.run_in_executor(None, _load_scorer, scorer)
            state["scorer"] = s
            if cfg.decode_workers:
                state["pool"] = pool = _DecodePool(_reader_of(s), cfg)
                await pool.start()
            state["batcher"] = b = _Batcher(s, cfg)
            b.task = asyncio.create_task(b.loop())
            state["ready"] = True
        except Exception as e:  # noqa: BLE001 - reported by /ready, the log and the CLI's exit status
            log.error("the scorer service cannot start: %s", e, exc_info=log.isEnabledFor(logging.DEBUG))
            state["error"] = e
            if callable(getattr(app.state, "on_load_error", None)):
                app.state.on_load_error(e)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        loading = asyncio.create_task(load(app))  # the port is bound while the scorer loads
        yield
        state["ready"] = False
        loading.cancel()
        if "batcher" in state:
            state["batcher"].task.cancel()
            state["batcher"].forward.shutdown(wait=False, cancel_futures=True)
        if "pool" in state:
            state["pool"].close()
        decode_pool.shutdown(wait=False, cancel_futures=True)

    app = FastAPI(title="phyprobe scorer", lifespan=lifespan)
    app.state.serve_config, app.state.phyprobe = cfg, state

    def not_ready():
        if state["error"] is not None:
            return _Reject(503, f"not ready: the scorer failed to load ({state['error']})")
        return _Reject(503, "not ready: the scorer is loading", 1)

    @app.get("/health")
    async def health():
        return {"status": "ok"}

    @app.get("/ready")
    async def ready():
        if not state["ready"]:
            r = not_ready()
            headers = {"Retry-After": str(r.retry_after)} if r.retry_after else None
            return JSONResponse({"ready": False, "error": r.message}, status_code=503, headers=headers)
        enc = state["scorer"].config.get("encoder", {})
        return {"ready": True, "encoder": enc.get("name"), "fingerprint": enc.get("fingerprint")}

    def spool_full(more: int) -> _Reject | None:
        """Refusal when ``more`` bytes would take the uploads on disk past ``max_spool_bytes`` (503: retry later)."""
        if state["spooled"] + more <= cfg.max_spool_bytes:
            return None
        held = state["spooled"]
        return _Reject(503, f"uploads in progress hold {held} of {cfg.max_spool_bytes} bytes; retry later", 5)

    async def spool(request: Request) -> tuple[Path, int]:
        """The request body in a temporary file and its size, refused as soon as it passes the size bound, or as
        soon as every upload on disk together would pass ``max_spool_bytes``; the caller gives the size back
        (:func:`unspool`)."""
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > cfg.max_upload_bytes:
            raise _Reject(413, f"upload of {int(declared)} bytes exceeds the limit of {cfg.max_upload_bytes}")
        if declared is not None and declared.isdigit() and (full := spool_full(int(declared))):
            raise full
        fd, name = tempfile.mkstemp(prefix="phyprobe-upload-", suffix=".video", dir=cfg.spool_dir)
        size = 0
        try:
            with os.fdopen(fd, "wb") as f:
                async for chunk in request.stream():
                    if size + len(chunk) > cfg.max_upload_bytes:
                        raise _Reject(413, f"upload exceeds the limit of {cfg.max_upload_bytes} bytes")
                    if full := spool_full(len(chunk)):
                        raise full
                    size += len(chunk)
                    state["spooled"] += len(chunk)
                    f.write(chunk)
            if size == 0:
                raise _Reject(400, 'empty body: send the video bytes, or JSON {"path": ...}')
        except BaseException:
            unspool(Path(name), size)
            raise
        return Path(name), size

    def unspool(path: Path, size: int) -> None:
        path.unlink(missing_ok=True)
        state["spooled"] -= size

    async def server_path(request: Request) -> Path:
        if cfg.paths_root is None:
            raise _Reject(403, "server-side paths are disabled (start the server with --paths-root DIR)")
        body = await request.body()
        if len(body) > 64 * 1024:
            raise _Reject(413, "JSON body larger than 64 KiB")
        try:
            path = json.loads(body)["path"]
        except (ValueError, RecursionError) as e:  # malformed, not UTF-8, nested past the limit, a 5000-digit number
            reason = "not UTF-8" if isinstance(e, UnicodeDecodeError) else json_error_reason(e)
            raise _Reject(400, f'expected JSON {{"path": "..."}}: {reason}') from None
        except (KeyError, TypeError):
            raise _Reject(400, 'expected JSON {"path": "..."}') from None
        if not isinstance(path, str) or not path:
            raise _Reject(400, "'path' must be a non-empty string")
        if "\0" in path:
            raise _Reject(400, f"'path' contains a NUL byte: {path!r}")
        try:
            path.encode(sys.getfilesystemencoding(), "surrogateescape")
            p = (cfg.paths_root / path).resolve()
        except (OSError, ValueError, RuntimeError) as e:
            raise _Reject(400, f"{path!r}: not a usable path ({type(e).__name__}: {e})") from None
        if not p.is_relative_to(cfg.paths_root.resolve()):
            raise _Reject(403, f"{path!r}: outside the allowed root {cfg.paths_root}")
        return p

    async def read(path: Path, label: str, deadline: float) -> list:
        """The clips the scorer's reading cuts from ``path``, decoded in a worker process (or a thread)."""
        import torch

        from .io.video import VideoDecodeError

        if "pool" not in state:
            try:
                return await asyncio.get_running_loop().run_in_executor(
                    decode_pool, lambda: list(state["scorer"].read(path))
                )
            except VideoDecodeError as e:
                raise _Reject(422, f"{label}: {e.reason}") from None
            except Exception as e:  # noqa: BLE001 - a file the decoder chokes on is the caller's input, not a 500
                log.warning("unexpected error reading %s", label, exc_info=True)
                raise _Reject(422, f"{label}: cannot read video ({type(e).__name__}: {e})") from None
        try:
            size = path.stat().st_size
        except OSError:
            size = 0  # the worker says why it cannot be read
        kind, *rest = await state["pool"].decode(path, size, deadline)
        if kind == "ok":
            return [torch.from_numpy(a) for a in rest[0]]
        if kind == "crashed":
            raise _Reject(422, f"{label}: the decoder stopped on this video (exit code {rest[0]})")
        if kind == "error":
            log.warning("unexpected error reading %s: %s", label, rest[0])
        raise _Reject(422, f"{label}: {rest[0]}")

    async def handle(request: Request, deadline: float) -> dict:
        ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if ctype.startswith("multipart/"):
            raise _Reject(415, "send the video as the raw request body (curl --data-binary @clip.mp4), not a form")
        upload = ctype != "application/json"
        declared = request.headers.get("content-length", "")
        if upload and "pool" in state and declared.isdigit() and int(declared) > cfg.long_video_mb * 2**20:
            state["pool"].check_long_lane()  # shed a long video before reading it, not after
        path, size = await spool(request) if upload else (await server_path(request), 0)
        name = request.query_params.get("name") or (None if upload else str(path))
        try:
            clips = await read(path, _one_line(name or "upload"), deadline)
            futs = [state["batcher"].submit(c, len(clips)) for c in clips]  # batched with other requests' clips
            raw = state["scorer"].combine(await asyncio.gather(*futs))
        finally:
            if upload:
                unspool(path, size)
        if not math.isfinite(raw):
            raise _Reject(500, f"non-finite score ({raw}) from the scorer's head: its weights are broken")
        return {"video": name, "score": min(1.0, max(0.0, raw)), "raw_score": raw}

    @app.post("/score")
    async def score(request: Request):
        if not state["ready"]:
            return not_ready().response()
        deadline = asyncio.get_running_loop().time() + cfg.timeout_s
        try:
            return await asyncio.wait_for(handle(request, deadline), cfg.timeout_s)
        except _Reject as r:
            return r.response()
        except ClientDisconnect:  # gone (or closed for sending too slowly): nobody reads an answer
            return JSONResponse({"error": "the client disconnected"}, status_code=400)
        except asyncio.TimeoutError:
            return JSONResponse(
                {"error": f"not answered within the request timeout of {cfg.timeout_s:g} s"}, status_code=504
            )

    return app


# --- reading requests with deadlines ------------------------------------------------------------------------------


def _protocol_class(cfg: ServeConfig):
    """uvicorn's h11 protocol with deadlines on reading each request: the request line and headers within
    ``header_timeout_s`` of its first byte (of the connection, for the first), the whole request within
    ``read_timeout_s``, no silence longer than ``idle_timeout_s``. Past one: 408 and the connection is closed.
    The timers stop once the request is read: decoding and scoring are bounded by ``timeout_s``."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    done = (h11.DONE, h11.MUST_CLOSE, h11.CLOSED, h11.ERROR)

    class DeadlineH11Protocol(H11Protocol):
        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self._timers: dict[str, asyncio.TimerHandle] = {}
            self._arm()

        def _arm(self) -> None:
            for what, seconds in (
                ("header", cfg.header_timeout_s),
                ("read", cfg.read_timeout_s),
                ("idle", cfg.idle_timeout_s),
            ):
                self._set(what, seconds)

        def _set(self, what: str, seconds: float) -> None:
            old = self._timers.pop(what, None)
            if old is not None:
                old.cancel()
            self._timers[what] = self.loop.call_later(seconds, self._expired, what)

        def _stop(self, *which: str) -> None:
            for what in which or list(self._timers):
                t = self._timers.pop(what, None)
                if t is not None:
                    t.cancel()

        def data_received(self, data: bytes) -> None:
            if not self._timers:  # the first bytes of the next request on this connection
                self._arm()
            elif "idle" in self._timers:
                self._set("idle", cfg.idle_timeout_s)
            super().data_received(data)
            state = self.conn.their_state
            if state is not h11.IDLE:
                self._stop("header")
            if state in done:
                self._stop()

        def connection_lost(self, exc) -> None:
            self._stop()
            super().connection_lost(exc)

        def _expired(self, what: str) -> None:
            self._timers.pop(what, None)
            if what == "idle" and self.flow.read_paused:  # we stopped reading (back-pressure), not the client
                return self._set("idle", cfg.idle_timeout_s)
            self._stop()
            if self.transport.is_closing():
                return
            reason = {
                "header": f"the request line and headers did not arrive within {cfg.header_timeout_s:g} s",
                "read": f"the request did not arrive whole within {cfg.read_timeout_s:g} s",
                "idle": f"the client sent nothing for {cfg.idle_timeout_s:g} s in the middle of a request",
            }[what]
            cycle = self.cycle
            if cycle is not None and not cycle.response_complete:
                if cycle.response_started:
                    return self.transport.close()
                cycle.disconnected = True  # the application sees the client gone; its answer goes nowhere
                cycle.message_event.set()
            if cycle is None or not cycle.response_started:
                body = json.dumps({"error": reason}).encode()
                head = "HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\nconnection: close\r\n"
                self.transport.write(f"{head}content-length: {len(body)}\r\n\r\n".encode() + body)
            self.transport.close()

    return DeadlineH11Protocol


def _uvicorn_config(app, host: str, port: int, **kw):
    import uvicorn

    cfg = getattr(app.state, "serve_config", None) or ServeConfig()
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        lifespan="on",
        http=_protocol_class(cfg),
        limit_concurrency=cfg.max_connections,
        **kw,
    )


@contextlib.contextmanager
def serve_in_thread(app, host: str = "127.0.0.1", port: int = 0, wait_ready: bool = True):
    """Run ``app`` with uvicorn in a background thread (for notebooks, tests and benchmarks); yields its URL once the
    port is bound and (``wait_ready``) the scorer loaded."""
    import uvicorn

    server = uvicorn.Server(_uvicorn_config(app, host, port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    state = getattr(app.state, "phyprobe", {"ready": True, "error": None})
    try:
        while not server.started or (wait_ready and not state["ready"]):
            if not thread.is_alive():
                raise RuntimeError("the server stopped during start-up (see the log above)")
            if state["error"] is not None:
                raise RuntimeError(f"the scorer failed to load: {state['error']}") from state["error"]
            threading.Event().wait(0.02)
        sock = server.servers[0].sockets[0].getsockname()
        yield f"http://{sock[0]}:{sock[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def add_cli(sub) -> None:
    from .scorer.cli import positive_int

    p = sub.add_parser(
        "serve",
        help="serve a scorer over HTTP (POST /score, GET /health, GET /ready)",
        description=for_terminal(__doc__),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("scorer", help="exported scorer directory, or a Hub repository id (org/name)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8000, help="0: a free port (its URL is printed once it is bound)")
    p.add_argument("--max-upload-mb", type=positive_int, default=256, help="largest video a request may upload, in MB")
    p.add_argument(
        "--max-spool-mb",
        type=positive_int,
        default=1024,
        help="all uploads on disk at once, in MB: past it a new upload gets 503 and Retry-After",
    )
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per request, upload included")
    p.add_argument("--max-batch", type=positive_int, default=8, help="videos per encoder forward")
    p.add_argument("--max-wait-ms", type=float, default=10.0, help="how long a batch waits to fill")
    p.add_argument(
        "--decode-workers",
        "--decode-threads",
        type=int,
        default=2,
        help="decode processes for short videos (0: decode in threads of the server, which cannot be cancelled)",
    )
    p.add_argument(
        "--encoder-threads",
        type=positive_int,
        help="torch threads of the encoder's forward on a CPU (default: the cores the decode workers leave, >= 1)",
    )
    p.add_argument("--max-queue", type=positive_int, default=256, help="requests waiting for a decoder; then 503")
    p.add_argument("--long-video-mb", type=float, default=16.0, help="uploads over this decode in the long-video lane")
    p.add_argument("--long-video-workers", type=positive_int, default=2, help="long videos decoded at once")
    p.add_argument("--light-budget", type=float, default=2.0, help="CPU seconds before a decode counts as long")
    p.add_argument("--header-timeout", type=float, default=10.0, help="seconds for the request line and headers")
    p.add_argument("--read-timeout", type=float, help="seconds for a whole request, body included (default: --timeout)")
    p.add_argument("--idle-timeout", type=float, default=10.0, help="longest silence of a client mid-request")
    p.add_argument("--paths-root", type=Path, help="allow JSON {'path': ...} requests for files under this directory")
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"], help="server log")
    p.set_defaults(func=_cli)


def _cli(args) -> int:
    import uvicorn

    timeouts = (
        args.timeout,
        args.header_timeout,
        args.idle_timeout,
        1.0 if args.read_timeout is None else args.read_timeout,
    )
    if min(timeouts) <= 0 or args.max_wait_ms < 0 or args.decode_workers < 0:
        print(
            "error: --timeout, --header-timeout, --read-timeout and --idle-timeout must be > 0, "
            "--max-wait-ms and --decode-workers >= 0",
            file=sys.stderr,
        )
        return 2
    cfg = ServeConfig(
        max_upload_bytes=args.max_upload_mb * 2**20,
        max_spool_bytes=args.max_spool_mb * 2**20,
        timeout_s=args.timeout,
        max_batch=args.max_batch,
        max_wait_ms=args.max_wait_ms,
        decode_workers=args.decode_workers,
        encoder_threads=args.encoder_threads,
        max_queue=args.max_queue,
        long_video_mb=args.long_video_mb,
        long_video_workers=args.long_video_workers,
        light_budget_s=args.light_budget,
        header_timeout_s=args.header_timeout,
        read_timeout_s=max(args.timeout, args.header_timeout) if args.read_timeout is None else args.read_timeout,
        idle_timeout_s=args.idle_timeout,
        paths_root=args.paths_root,
    )
    app = build_app(args.scorer, cfg)  # loaded after the port is bound: /ready says 503 meanwhile

    class Server(uvicorn.Server):
        async def startup(self, sockets=None) -> None:
            await super().startup(sockets)
            if self.servers and self.servers[0].sockets:  # the bound address, for a caller that asked for port 0
                host, port = self.servers[0].sockets[0].getsockname()[:2]
                host = f"[{host}]" if ":" in host else host
                print(f"phyprobe serve: listening on http://{host}:{port}", flush=True)

    server = Server(_uvicorn_config(app, args.host, args.port, log_level=args.log_level))
    app.state.on_load_error = lambda e: setattr(server, "should_exit", True)
    server.run()
    err = app.state.phyprobe["error"]
    if err is not None:
        if getattr(args, "debug", False):
            raise err
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0
