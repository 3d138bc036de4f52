"""``phyprobe serve``: an HTTP service around a scorer, for pipelines that call services.

An application on top of the library (the library never imports this module; FastAPI and uvicorn
load only when it runs). Requests::

    POST /score   body: the video bytes (Content-Type video/* or application/octet-stream)
                  or JSON {"path": "..."} for a file under --paths-root on the server
    GET  /health  the process answers
    GET  /ready   the scorer is loaded and the batcher runs (503 until then)

Each video is decoded in a thread pool; a batcher collects the clips that arrive within
``max_wait_ms`` (up to ``max_batch``) into one encoder forward, so concurrent callers share the
encoder's batch throughput. Uploads stream to a temporary file and are refused (413) as soon as
they pass ``max_upload_bytes``, from the Content-Length header before reading anything when the
client sends one. Bad input gets a 4xx with a JSON ``error``: 400 empty or malformed, 403 a path
outside the allowed root, 413 too large, 415 multipart, 422 not a readable video; 503 when busy,
504 past the request timeout.
"""

import argparse
import asyncio
import contextlib
import json
import math
import os
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path


@dataclass
class ServeConfig:
    max_upload_bytes: int = 256 * 2**20
    timeout_s: float = 60.0
    max_batch: int = 8
    max_wait_ms: float = 10.0
    max_pending: int = 1024
    decode_threads: int = 2
    paths_root: Path | None = None
    spool_dir: Path | None = None  # where uploads stream to (default: the system's temporary directory)


class _Reject(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status, self.message = status, message


class _Batcher:
    """Clips queued by requests -> batched forwards on one thread -> each request's future."""

    def __init__(self, scorer, cfg: ServeConfig):
        self.scorer, self.cfg = scorer, cfg
        self.queue: asyncio.Queue = asyncio.Queue(maxsize=cfg.max_pending)
        self.forward = ThreadPoolExecutor(1, thread_name_prefix="phyprobe-forward")
        self.task: asyncio.Task | None = None

    def submit(self, clip) -> asyncio.Future:
        fut = asyncio.get_running_loop().create_future()
        try:
            self.queue.put_nowait((clip, fut))
        except asyncio.QueueFull:
            raise _Reject(503, f"busy: {self.cfg.max_pending} videos already waiting; retry later") from None
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
            items = [(c, f) for c, f in items if not f.done()]  # callers that timed out are not encoded
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


def build_app(scorer, cfg: ServeConfig | None = None):
    """The FastAPI application; ``scorer`` is a loaded Scorer or a directory / Hub id to load at start-up."""
    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse

    from .io.video import VideoDecodeError
    from .scorer import Scorer

    cfg = cfg or ServeConfig()
    state: dict = {"ready": False}
    decode_pool = ThreadPoolExecutor(cfg.decode_threads, thread_name_prefix="phyprobe-decode")

    @contextlib.asynccontextmanager
    async def lifespan(app):
        ev = asyncio.get_running_loop()
        s = scorer if isinstance(scorer, Scorer) else await ev.run_in_executor(None, Scorer.from_pretrained, scorer)
        state["scorer"] = s
        state["batcher"] = b = _Batcher(s, cfg)
        b.task = asyncio.create_task(b.loop())
        state["ready"] = True
        yield
        state["ready"] = False
        b.task.cancel()
        b.forward.shutdown(wait=False, cancel_futures=True)
        decode_pool.shutdown(wait=False, cancel_futures=True)

    app = FastAPI(title="phyprobe scorer", lifespan=lifespan)

    @app.get("/health")
    async def health():
        return {"status": "ok"}

    @app.get("/ready")
    async def ready():
        if not state["ready"]:
            return JSONResponse({"ready": False}, status_code=503)
        enc = state["scorer"].config.get("encoder", {})
        return {"ready": True, "encoder": enc.get("name"), "fingerprint": enc.get("fingerprint")}

    async def spool(request: Request) -> Path:
        """The request body in a temporary file, refused as soon as it passes the size bound."""
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > cfg.max_upload_bytes:
            raise _Reject(413, f"upload of {int(declared)} bytes exceeds the limit of {cfg.max_upload_bytes}")
        fd, name = tempfile.mkstemp(prefix="phyprobe-upload-", suffix=".video", dir=cfg.spool_dir)
        size = 0
        try:
            with os.fdopen(fd, "wb") as f:
                async for chunk in request.stream():
                    size += len(chunk)
                    if size > cfg.max_upload_bytes:
                        raise _Reject(413, f"upload exceeds the limit of {cfg.max_upload_bytes} bytes")
                    f.write(chunk)
            if size == 0:
                raise _Reject(400, 'empty body: send the video bytes, or JSON {"path": ...}')
        except BaseException:
            os.unlink(name)
            raise
        return Path(name)

    async def server_path(request: Request) -> Path:
        if cfg.paths_root is None:
            raise _Reject(403, "server-side paths are disabled (start the server with --paths-root DIR)")
        body = await request.body()
        if len(body) > 64 * 1024:
            raise _Reject(413, "JSON body larger than 64 KiB")
        try:
            path = json.loads(body)["path"]
        except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError):
            raise _Reject(400, 'expected JSON {"path": "..."}') from None
        if not isinstance(path, str) or not path:
            raise _Reject(400, "'path' must be a non-empty string")
        p = (cfg.paths_root / path).resolve()
        if not p.is_relative_to(cfg.paths_root.resolve()):
            raise _Reject(403, f"{path}: outside the allowed root {cfg.paths_root}")
        return p

    async def handle(request: Request) -> dict:
        ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if ctype.startswith("multipart/"):
            raise _Reject(415, "send the video as the raw request body (curl --data-binary @clip.mp4), not a form")
        upload = ctype != "application/json"
        path = await spool(request) if upload else await server_path(request)
        name = request.query_params.get("name") or (None if upload else str(path))
        try:
            ev = asyncio.get_running_loop()
            scorer = state["scorer"]
            try:  # the scorer's reading: one clip, or the windows of a longer video, batched with other requests'
                clips = await ev.run_in_executor(decode_pool, lambda: list(scorer.read(path)))
            except VideoDecodeError as e:
                raise _Reject(422, f"{name or 'upload'}: {e.reason}") from None
            raw = scorer.combine(await asyncio.gather(*(state["batcher"].submit(c) for c in clips)))
        finally:
            if upload:
                path.unlink(missing_ok=True)
        if not math.isfinite(raw):
            raise _Reject(500, f"non-finite score ({raw}) from the scorer's head: its weights are broken")
        return {"video": name, "score": min(1.0, max(0.0, raw)), "raw_score": raw}

    @app.post("/score")
    async def score(request: Request):
        if not state["ready"]:
            return JSONResponse({"error": "not ready"}, status_code=503)
        try:
            return await asyncio.wait_for(handle(request), cfg.timeout_s)
        except _Reject as r:
            return JSONResponse({"error": r.message}, status_code=r.status)
        except asyncio.TimeoutError:
            return JSONResponse(
                {"error": f"not answered within the request timeout of {cfg.timeout_s:g} s"}, status_code=504
            )

    return app


@contextlib.contextmanager
def serve_in_thread(app, host: str = "127.0.0.1", port: int = 0):
    """Run ``app`` with uvicorn in a background thread (for notebooks, tests and benchmarks); yields its URL."""
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        while not server.started:
            if not thread.is_alive():
                raise RuntimeError("the server stopped during start-up (see the log above)")
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
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("scorer", help="exported scorer directory, or a Hub repository id (org/name)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--max-upload-mb", type=positive_int, default=256)
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per request, upload included")
    p.add_argument("--max-batch", type=positive_int, default=8, help="videos per encoder forward")
    p.add_argument("--max-wait-ms", type=float, default=10.0, help="how long a batch waits to fill")
    p.add_argument("--decode-threads", type=positive_int, default=2)
    p.add_argument("--paths-root", type=Path, help="allow JSON {'path': ...} requests for files under this directory")
    p.set_defaults(func=_cli)


def _cli(args) -> int:
    import uvicorn

    from .encoders import WeightsNotFoundError
    from .scorer import Scorer, ScorerLoadError

    if args.timeout <= 0 or args.max_wait_ms < 0:
        print("error: --timeout must be > 0 and --max-wait-ms >= 0", file=sys.stderr)
        return 2
    try:
        scorer = Scorer.from_pretrained(args.scorer)
    except (ScorerLoadError, WeightsNotFoundError) as e:
        if getattr(args, "debug", False):
            raise
        print(f"error: {e}", file=sys.stderr)
        return 2
    cfg = ServeConfig(
        max_upload_bytes=args.max_upload_mb * 2**20,
        timeout_s=args.timeout,
        max_batch=args.max_batch,
        max_wait_ms=args.max_wait_ms,
        decode_threads=args.decode_threads,
        paths_root=args.paths_root,
    )
    uvicorn.run(build_app(scorer, cfg), host=args.host, port=args.port)
    return 0
