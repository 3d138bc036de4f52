"""VisionRewardDB-Video / MonetBench as a user finds it after ``huggingface-cli download
zai-org/VisionRewardDB-Video``, with the videos fetched separately into another folder.

Sources: the dataset card (configs ``train`` 40,743 rows: ``video_path, internal_id, prompt, url,
annotation{...}, meta_result[int], meta_mask[int]``; ``regression`` 1,795 pairs; ``test`` 1,000 pairs:
``internal_id, prompt, standard_answer, video1_path, video2_path``), an earlier revision's
``monetbench/test-00000-of-00001.parquet``, and the VideoScore2 loader for the ``standard_answer``
values ``video1`` / ``video2`` / ``tie`` (docs/datasets/monetbench.md). Of the annotation's keys the card
shows "alignment" (1-5), "physics law" (1-5) and "movement reality" (0-4); "stability" stands for the
others. The ``regression`` config's columns are not described: here a table of another schema, which the
converter must leave alone. What the codes and ``standard_answer`` mean is not published.

``codes``: ``higher_better`` writes higher "physics law" / "movement reality" for the more plausible
video (as the other fields), ``higher_worse`` the reverse. ``overlap``: the test pairs are pairs of
annotated training videos (whether the release has such overlap is not known; it lets the check compare
codes with ``standard_answer``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from dataset_fixtures import clip


def write(
    root: Path,
    videos: Path | None = None,
    tag: str = "a",
    codes: str = "higher_better",
    prompts: int = 8,
    overlap: bool = False,
    seed: int = 0,
) -> Path:
    """Per prompt three training videos of rising quality (one code pair in eight disagrees) and, per
    prompt, one test pair; ``videos``: where the mp4s go (None: not written)."""
    rng = np.random.default_rng(seed)
    root.mkdir(parents=True, exist_ok=True)
    train, test = [], []
    k = 0
    for p in range(prompts):
        prompt = f"{tag} {p}: a ball rolls off a table and bounces"
        paths = []
        for q in range(3):  # q: quality rank within the prompt
            v = f"videos/{tag}/train_{p:03d}_{q}.mp4"
            paths.append(v)
            law, move = 2 + q, 1 + q  # 2..4, 1..3
            if k % 8 == 7:  # crowd noise: this video's codes disagree with its other fields
                law, move = 4 - q, 3 - q
            k += 1
            if codes == "higher_worse":
                law, move = 6 - law, 4 - move
            ann = {"alignment": 2 + q, "physics law": law, "movement reality": move, "stability": 2 + q}
            if videos is not None:
                clip(videos / v, f"mb/{tag}/{v}", violate=q == 0)
            train.append(
                {
                    "video_path": v,
                    "internal_id": f"{tag}t{p}{q}",
                    "prompt": prompt,
                    "url": f"https://example.org/{v}",
                    "annotation": ann,
                    "meta_result": [int(rng.integers(0, 2)) for _ in range(4)],
                    "meta_mask": [1, 1, 1, 1],
                }
            )
        if overlap:
            v1, v2 = (paths[2], paths[0]) if p % 2 else (paths[0], paths[2])
            answer = "video1" if v1 == paths[2] else "video2"
        else:
            v1, v2 = f"videos/{tag}/test_{p:03d}_cogvideox.mp4", f"videos/{tag}/test_{p:03d}_opensora.mp4"
            answer = ("video1", "video2", "tie")[p % 3]
            if videos is not None:
                clip(videos / v1, f"mb/{tag}/{v1}")
                clip(videos / v2, f"mb/{tag}/{v2}", violate=True)
        test.append(
            {
                "internal_id": f"{tag}{p}",
                "prompt": prompt,
                "standard_answer": answer,
                "video1_path": v1,
                "video2_path": v2,
            }
        )
    for sub, rows in (("train", train), ("test", test)):
        (root / sub).mkdir(exist_ok=True)
        pd.DataFrame(rows).to_parquet(root / sub / f"{sub}-00000-of-00001.parquet", index=False)
    (root / "regression").mkdir(exist_ok=True)
    pd.DataFrame({"prompt": ["x"], "video_path_a": ["a.mp4"], "video_path_b": ["b.mp4"], "score": [0.3]}).to_parquet(
        root / "regression" / "regression-00000-of-00001.parquet", index=False
    )
    (root / "README.md").write_text(
        "---\nlicense: apache-2.0\nconfigs:\n- config_name: train\n- config_name: test\n---\n# VisionRewardDB-Video\n",
        encoding="utf-8",
    )
    return root
