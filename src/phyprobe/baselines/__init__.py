"""Baselines that run anywhere: same-encoder feature surprisal (a fitted predictor, or V-JEPA 2's own),
and an optical-flow motion heuristic."""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)


def score_each_video(manifest, spec, score_frames) -> dict:
    """``score_frames(frames)`` for every readable video of ``manifest``, decoded by the clip ``spec``.

    Baselines that read pixels (not cached features) share this loop, so an unreadable video is
    reported the same way everywhere and left out, never scored from garbage.
    """
    from ..io.video import VideoDecodeError, decode_clip

    out = {}
    for vid, path in zip(manifest.videos["id"], manifest.videos["path"]):
        try:
            frames = decode_clip(manifest.video_path(path), spec).frames
        except VideoDecodeError as e:
            log.warning("not scored: %s", e)
            continue
        out[vid] = score_frames(frames)
    return out
