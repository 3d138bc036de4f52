"""A Rapidata video preference set as a user finds it after ``huggingface-cli download``.

Sources (read 2025/2026, public):

- Hugging Face ``Rapidata/text-2-video-human-preferences`` tree (e.g. revision 03c12188): ``README.md``,
  ``.gitattributes``, ``data/train-00000-of-00001.parquet`` beside ``data/benchmark.parquet`` (39.3 kB,
  "Upload data/benchmark.parquet with huggingface_hub") and the videos under ``data/videos/<model>/`` or
  ``Videos/``. The columns of ``benchmark.parquet`` are described nowhere: here it is a table of another
  schema (one video per row), which is what the converter must skip.
- ``opendilab/LightRFT`` ``lightrft/datasets/rapidata.py`` (a third-party loader of these sets): the
  older schema ``prompt, file_name1, file_name2, model1, model2, source, prompt_asset{bytes}`` with
  ``weighted_results{1,2}_{Preference,Coherence,Alignment}``; image-to-video ``file_name``s are
  ``https://.../<model>/<name>.mp4`` URLs whose videos sit in ``videos/<model>/<name>.mp4``.
- Newer sets (dataset cards of ``Rapidata/*_t2i_human_preference``, the viewer of the newer video sets):
  ``prompt, video1, video2, model1, model2, weighted_results_video{1,2}_<dim>, detailed_results_<dim>``
  with lower-case dimension names; ``detailed_results`` a JSON list of votes
  ``{country, language, userScore, votedFor, votedAt}``.

Column order beyond these lists is not published; the weights are float sums of voter ``userScore``s.
``coherence`` chooses how the Coherence weights are written: ``for_better`` (weight i = votes for video i
as the more coherent one, agreeing with Preference) or ``for_worse`` (votes for the one with more
glitches, the wording of Rapidata's coherence task).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
from dataset_fixtures import clip

MODELS = ("seedance-1-pro", "veo3", "kling-2.1")


def _votes(w: float, side: str) -> str:
    return json.dumps(
        [
            {
                "country": "CH",
                "language": "de",
                "userScore": round(w, 3),
                "votedFor": side,
                "votedAt": "2025-07-30T09:00:00Z",
            }
        ]
    )


def write(
    root: Path,
    tag: str = "a",
    schema: str = "file_name",
    coherence: str = "for_better",
    prompts: int = 8,
    videos: bool = True,
    benchmark: bool = True,
    seed: int = 0,
) -> Path:
    """One set under ``root``: every prompt's video of each of ``MODELS``, all three pairs of them.

    The Preference votes favour a hidden better video of each pair; the Coherence votes agree with it in
    all but one pair in eight (soft crowd disagreement), written ``coherence``-wise. ``videos``: write the
    mp4s (a check reads only the tables)."""
    rng = np.random.default_rng(seed)
    root.mkdir(parents=True, exist_ok=True)
    rows = []
    k = 0
    for p in range(prompts):
        names = {m: f"{tag}_{p:03d}_{m}.mp4" for m in MODELS}
        if videos:
            for m, n in names.items():
                clip(root / "videos" / m / n, f"rapidata/{tag}/{m}/{n}", violate=m == "kling-2.1")
        for i in range(len(MODELS)):
            for j in range(i + 1, len(MODELS)):
                m1, m2 = MODELS[i], MODELS[j]
                first_better = rng.random() < 0.5
                hi, lo = float(rng.uniform(3, 6)), float(rng.uniform(0.3, 1.5))
                pref = (hi, lo) if first_better else (lo, hi)
                coh_first = first_better if k % 8 != 7 else not first_better  # one pair in eight disagrees
                c_hi, c_lo = float(rng.uniform(3, 6)), float(rng.uniform(0.3, 1.5))
                coh = (c_hi, c_lo) if coh_first else (c_lo, c_hi)
                if coherence == "for_worse":
                    coh = coh[::-1]
                ali = (float(rng.uniform(1, 4)), float(rng.uniform(1, 4)))
                k += 1
                prompt = f"{tag} {p}: a glass of water tips over on a wooden table"
                if schema == "file_name":
                    f1 = f"https://assets.rapidata.ai/{m1}/{names[m1]}"
                    f2 = f"https://assets.rapidata.ai/{m2}/{names[m2]}"
                    row = {
                        "prompt": prompt,
                        "prompt_asset": {"bytes": b"\x89PNG\r\n\x1a\n" + bytes(16), "path": f"{tag}_{p:03d}.png"},
                        "file_name1": f1,
                        "file_name2": f2,
                        "model1": m1,
                        "model2": m2,
                    }
                    for dim, (w1, w2) in (("Preference", pref), ("Coherence", coh), ("Alignment", ali)):
                        row[f"weighted_results1_{dim}"] = w1
                        row[f"weighted_results2_{dim}"] = w2
                        row[f"detailedResults_{dim}"] = _votes(max(w1, w2), "A" if w1 >= w2 else "B")
                    row["source"] = "rapidata"
                else:
                    row = {"prompt": prompt, "video1": names[m1], "video2": names[m2], "model1": m1, "model2": m2}
                    for dim, (w1, w2) in (("preference", pref), ("coherence", coh), ("alignment", ali)):
                        row[f"weighted_results_video1_{dim}"] = np.float32(w1)
                        row[f"weighted_results_video2_{dim}"] = np.float32(w2)
                        row[f"detailed_results_{dim}"] = _votes(max(w1, w2), "A" if w1 >= w2 else "B")
                rows.append(row)
    (root / "data").mkdir(exist_ok=True)
    pd.DataFrame(rows).to_parquet(root / "data" / "train-00000-of-00001.parquet", index=False)
    if benchmark:  # another schema beside the pairs, as in Rapidata/text-2-video-human-preferences
        pd.DataFrame(
            {
                "prompt": [r["prompt"] for r in rows[:3]],
                "video": ["v0.mp4", "v1.mp4", "v2.mp4"],
                "model": ["hunyuan", "sora", "hunyuan"],
                "score": [0.4, 0.6, 0.5],
            }
        ).to_parquet(root / "data" / "benchmark.parquet", index=False)
    (root / "README.md").write_text(
        "---\nlicense: apache-2.0\ntask_categories:\n- text-to-video\n---\n"
        "# Rapidata Video Generation Preference Dataset\n",
        encoding="utf-8",
    )
    (root / ".gitattributes").write_text("*.parquet filter=lfs diff=lfs merge=lfs -text\n", encoding="utf-8")
    return root
