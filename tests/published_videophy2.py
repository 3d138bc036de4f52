"""A tiny VideoPhy-2 release in the files, names, columns and value types the authors publish, with real mp4s.

What the authors publish (primary sources):

- ``Hritikbansal/videophy`` ``VIDEOPHY2/README.md``: the test set is the Hugging Face dataset
  ``videophysics/videophy2_test``, the train set ``videophysics/videophy2_train``; the leaderboard's joint
  score is SA>=4 and PC>=4, with a hard subset.
- The ``videophy2_test`` dataset card (``README.md``): ``license: mit``, ``pretty_name: videophy2``, a
  ``Project:`` link to ``VIDEOPHY2/`` and the column list, in this order: ``caption, video_url, sa, pc,
  joint, physics_rules_followed, physics_rules_unfollowed, physics_rules_cannot_be_determined,
  human_violated_rules, action, category, is_hard, metadata_rules, upsampled_caption``. The
  ``videophy2_train`` card is the front matter (``pretty_name: videophy2_train``) and the same link.
- File names: ``videophy2_test.csv`` and ``videophy2_training.csv`` at the top of each dataset (read by
  that name in several independent loaders; the test viewer shows one split ``test`` of 3.4k rows).
- Videos are referenced by ``video_url``: ``https://videophysics2testvideos.s3.us-east-2.amazonaws.com/
  <bucket>/<caption with spaces as _>.mp4`` (test buckets ``wan_videophy2_test_hard_upsampled``,
  ``cogvideoX5b_hard_upsampled``, ``hunyuan_xdit``, ``cosmos_videophy2_test_challenging``,
  ``videocrafter_videophy2_hard``, ``sora_hard_videophy2``), ``videophysics2trainvideos...`` for the
  train set (``hunyuan_xedit_train``, ``cosmos_videophy2_train_challenging``), and Luma's CDN
  ``https://storage.cdn-luma.com/dream_machine/<uuid>/<uuid>_result.mp4`` for Ray2 (URLs quoted in
  nvidia-cosmos/cosmos-cookbook ``docs/recipes/post_training/reason1/physical-plausibility-check/
  post_training.md``). A caption's videos from different generators share the file name.

Not stated by the authors, chosen here and named so: where ``model_name`` sits (loaders read it; the
card does not list it: written last, with VideoScore2's generator names), the exact text of
``metadata_rules`` (a dict literal here), and the zips of videos (third-party loaders name
``videophy2_test .zip`` in ``videophysics/videophy2_test_videos``; their inner layout is unknown, so
the videos here are laid out as a download by ``video_url`` leaves them: ``mirror`` keeps the URL's
host and path as ``wget -x`` does, ``buckets`` keeps the bucket folders as ``aws s3 sync`` does).
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pandas as pd
from dataset_fixtures import clip

TEST_CSV, TRAIN_CSV = "videophy2_test.csv", "videophy2_training.csv"
CSVS = {"test": TEST_CSV, "train": TRAIN_CSV}
HOSTS = {
    "test": "videophysics2testvideos.s3.us-east-2.amazonaws.com",
    "train": "videophysics2trainvideos.s3.us-east-2.amazonaws.com",
}
LUMA = "storage.cdn-luma.com"
# (model_name, bucket); None: Luma's CDN
GENERATORS = {
    "test": (
        ("wan", "wan_videophy2_test_hard_upsampled"),
        ("cogvideo", "cogvideoX5b_hard_upsampled"),
        ("hunyuan", "hunyuan_xdit"),
        ("ray2", None),
    ),
    "train": (("hunyuan", "hunyuan_xedit_train"), ("cosmos", "cosmos_videophy2_train_challenging")),
}
# pc per (caption parity, generator): a tie in each caption, one pc-1 video
PC = {"test": ([5, 2, 2, 4], [1, 3, 4, 4]), "train": ([4, 2], [3, 3])}
COLUMNS = [
    "caption",
    "video_url",
    "sa",
    "pc",
    "joint",
    "physics_rules_followed",
    "physics_rules_unfollowed",
    "physics_rules_cannot_be_determined",
    "human_violated_rules",
    "action",
    "category",
    "is_hard",
    "metadata_rules",
    "upsampled_caption",
    "model_name",
]
CARD = {
    "test": (
        "---\nlicense: mit\ntask_categories:\n- video-classification\ntags:\n- multimodal\n- video\n- text_to_video\n"
        "- physicalAI\npretty_name: videophy2\nsize_categories:\n- 1K<n<10K\n---\n\n"
        "Project: https://github.com/Hritikbansal/videophy/tree/main/VIDEOPHY2\n\n```\n"
        "caption: original prompt in the dataset\nvideo_url: generated video\n"
        "sa: semantic adherence score (1-5) from human evaluation\n"
        "pc: physical commonsense score (1-5) from human evaluation\njoint: computed as sa >= 4, pc >= 4\n"
        "physics_rules_followed: ... (1)\nphysics_rules_unfollowed: ... (0)\n"
        "physics_rules_cannot_be_determined: ... (2)\nhuman_violated_rules: ... (0)\naction: type of action\n"
        "category: physical activity or object interactions\nis_hard: does the instance belong to the hard subset\n"
        "metadata_rules: mapping between physical rules and their physical law\n"
        "upsampled_caption: upsampled version of the original prompt\n```\n"
    ),
    "train": (
        "---\nlanguage:\n- en\nlicense: mit\nsize_categories:\n- 1K<n<10K\ntask_categories:\n- video-classification\n"
        "pretty_name: videophy2_train\ntags:\n- video\n- text_to_video\n- physicalAI\n---\n\n"
        "Project: https://github.com/Hritikbansal/videophy/tree/main/VIDEOPHY2\n"
    ),
}
GITATTRIBUTES = "*.csv filter=lfs diff=lfs merge=lfs -text\n*.zip filter=lfs diff=lfs merge=lfs -text\n"


def caption(tag: str, split: str, c: int) -> str:
    return (
        f"{tag} {split} {c}: A hand pushes a large ceramic vase near the edge of a table; "
        "it tilts sharply, but the vase's base stays upright"
    )


def video_url(tag: str, split: str, c: int, g: int) -> str:
    """The published URL of caption ``c``'s video by generator ``g``."""
    _, bucket = GENERATORS[split][g]
    if bucket is None:
        a, b = (hashlib.md5(f"{tag}{split}{c}{k}".encode()).hexdigest() for k in "ab")
        uuid = lambda h: f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"  # noqa: E731
        return f"https://{LUMA}/dream_machine/{uuid(a)}/{uuid(b)}_result.mp4"
    return f"https://{HOSTS[split]}/{bucket}/{caption(tag, split, c).replace(' ', '_')}.mp4"


def rows(tag: str, split: str, captions: int) -> list[dict]:
    out = []
    for c in range(captions):
        cap = caption(tag, split, c)
        for g, (model, _) in enumerate(GENERATORS[split]):
            pc, sa = PC[split][c % 2][g], 4 if g % 2 == 0 else 3
            out.append(
                {
                    "caption": cap,
                    "video_url": video_url(tag, split, c, g),
                    "sa": sa,
                    "pc": pc,
                    "joint": int(sa >= 4 and pc >= 4),
                    "physics_rules_followed": str(["The vase stays in contact with the table."]),
                    "physics_rules_unfollowed": str([] if pc >= 4 else ["Gravity pulls the tilted vase down."]),
                    "physics_rules_cannot_be_determined": str(["The table does not move."] if g == 1 else []),
                    # a list literal in most rows, free text in some, empty in others
                    "human_violated_rules": (
                        str(["The vase floats after tilting."])
                        if pc == 1
                        else ("The hand passes through the vase" if pc == 2 else "")
                    ),
                    "action": "pushing",
                    "category": "object interactions",
                    "is_hard": int(c == 0),
                    "metadata_rules": str({"Gravity pulls the tilted vase down.": "gravity"}),
                    "upsampled_caption": cap + ", in a sunlit kitchen",
                    "model_name": model,
                }
            )
    return out


def local_path(url: str, layout: str) -> str:
    """Where a download by URL puts the video: ``mirror`` (``wget -x``: host/path) or ``buckets``
    (one folder per bucket, as ``aws s3 sync s3://<host bucket>/<bucket> <bucket>``; Luma's under ``luma/``)."""
    host, _, path = url.split("://", 1)[1].partition("/")
    if layout == "mirror":
        return f"{host}/{path}"
    return f"luma/{path}" if host == LUMA else path


def write(
    root: Path,
    tag: str = "a",
    captions: int = 2,
    splits: tuple[str, ...] = ("train", "test"),
    layout: str = "mirror",
    videos: Path | None = None,
    bad_utf8: bool = True,
) -> Path:
    """Each split's dataset download under ``root/videophy2_<split>/`` (card, .gitattributes, CSV) and the
    videos under ``videos`` (default ``root/videos``) in ``layout``. Returns ``root``."""
    root = Path(root)
    vids = Path(videos) if videos else root / "videos"
    for split in splits:
        d = root / f"videophy2_{split}"
        d.mkdir(parents=True, exist_ok=True)
        (d / "README.md").write_text(CARD[split], encoding="utf-8")
        (d / ".gitattributes").write_text(GITATTRIBUTES, encoding="utf-8")
        recs = rows(tag, split, captions)
        for r in recs:
            clip(vids / local_path(r["video_url"], layout), f"vp2pub/{r['video_url']}", violate=r["pc"] < 3)
        data = pd.DataFrame(recs, columns=COLUMNS).to_csv(index=False).encode("utf-8")
        if bad_utf8:  # the published CSVs hold a few bytes that are not UTF-8
            data = data.replace(b"sunlit kitchen", b"sunlit kitch\xe9n", 1)
        (d / CSVS[split]).write_bytes(data)
    return root


def hub_cache(cache: Path, tag: str = "a", captions: int = 2) -> tuple[Path, Path]:
    """``snapshot_download`` of both datasets into a hub cache (files as links into ``blobs/``) and the
    videos downloaded beside it; returns (cache, videos folder)."""
    staged = write(cache / "_staged", tag, captions, videos=cache / "videos")
    for split in ("train", "test"):
        repo = cache / f"datasets--videophysics--videophy2_{split}"
        snap = repo / "snapshots" / hashlib.sha1(split.encode()).hexdigest()
        (repo / "blobs").mkdir(parents=True)
        snap.mkdir(parents=True)
        (repo / "refs").mkdir()
        (repo / "refs" / "main").write_text(snap.name)
        for f in sorted((staged / f"videophy2_{split}").iterdir()):
            blob = repo / "blobs" / hashlib.sha256(f.read_bytes()).hexdigest()
            shutil.move(f, blob)
            os.symlink(os.path.relpath(blob, snap), snap / f.name)
    shutil.rmtree(staged)
    return cache, cache / "videos"
