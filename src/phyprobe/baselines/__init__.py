"""Baselines that run anywhere: same-encoder feature surprisal (a fitted predictor, or V-JEPA 2's own),
an optical-flow motion heuristic, and a rule of rigid-body physics on tracked bodies (``object_rules``)."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

log = logging.getLogger(__name__)


class ScoreCache:
    """Per-video scores of one pixel baseline, appended to a JSONL file as they are computed.

    A training run reports the motion heuristic on every benchmark, and sweeps repeat that on the
    same videos; keyed by the file's resolved path, size and modification time (and the baseline's
    ``name``, which must change whenever its options do), a score is computed once. One short line
    per ``write`` with O_APPEND, so concurrent runs never interleave; each line starts with a newline, so
    one cut by a kill is closed off and costs only its own video.
    """

    def __init__(self, path: str | os.PathLike, name: str):
        self.path, self.name = Path(path), name
        self.known: dict[str, float] = {}
        if self.path.is_file():
            for line in self.path.read_text(encoding="utf-8").splitlines():
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line cut by a kill: that video is scored again
                if row.get("name") == name:
                    self.known[row["key"]] = float(row["score"])

    @staticmethod
    def key(path: Path) -> str:
        st = path.stat()
        return f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}"

    def add(self, key: str, score: float) -> None:
        self.known[key] = float(score)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = ("\n" + json.dumps({"name": self.name, "key": key, "score": float(score)})).encode()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)


def score_each_video(manifest, spec, score_frames, cache: ScoreCache | None = None, workers: int = 1) -> dict:
    """``score_frames(frames)`` for every readable video of ``manifest``, decoded by the clip ``spec``.

    Baselines that read pixels (not cached features) share this loop, so an unreadable video is
    reported the same way everywhere and left out, never scored from garbage. With ``cache``, videos
    scored before are not decoded again. ``workers`` > 1 decodes and scores that many videos at once in
    threads, for ``score_frames`` that release the GIL (OpenCV flow, PyAV decoding); results and
    cache lines stay in the manifest's order whatever the count.
    """
    from concurrent.futures import ThreadPoolExecutor

    from ..io.video import VideoDecodeError, decode_clip

    def one(file):
        try:
            return score_frames(decode_clip(file, spec).frames)
        except VideoDecodeError as e:
            log.warning("not scored: %s", e)
            return None

    out, todo = {}, []
    for vid, path in zip(manifest.videos["id"], manifest.videos["path"]):
        file = manifest.video_path(path)
        key = ScoreCache.key(file) if cache is not None and file.is_file() else None
        if key is not None and key in cache.known:
            out[vid] = cache.known[key]
        else:
            todo.append((vid, file, key))
    with ThreadPoolExecutor(max(1, workers)) as pool:
        for (vid, _, key), score in zip(todo, pool.map(one, [f for _, f, _ in todo])):
            if score is None:
                continue
            out[vid] = score
            if key is not None:
                cache.add(key, score)
    return out
