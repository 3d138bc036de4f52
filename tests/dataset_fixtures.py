"""Tiny copies of each public dataset in its exact published layout and schema, with real mp4s.

Column names, types and quirks follow docs/datasets/ (list-literal strings, ``same`` labels, both
Rapidata schemas, a raw invalid UTF-8 byte, parquet and zip where the authors publish them). Every
writer takes a ``tag`` so that two copies (a training one and a benchmark one) share no video,
prompt or first frame.
"""

from __future__ import annotations

import io
import json
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pandas as pd

from phyprobe.io.video import write_video
from phyprobe.testing.videos import moving_square

FRAMES, SIZE = 8, (32, 48)


def clip_frames(key: str, violate: bool = False) -> np.ndarray:
    """A distinct tiny clip per ``key`` (its own colour, start, speed and first-frame band); ``violate``
    teleports the square half-way."""
    rng = np.random.default_rng(zlib.crc32(key.encode()))
    colour = tuple(int(c) for c in rng.integers(60, 255, 3))
    frames = moving_square(
        FRAMES, *SIZE, rng.uniform(0, 20), rng.uniform(1, 3), FRAMES // 2 if violate else None, 14.0, colour
    )
    frames[:, : SIZE[0] // 4] = rng.integers(0, 255, (1, SIZE[0] // 4, SIZE[1], 3), dtype=np.uint8)
    return frames


def clip(path: Path, key: str, violate: bool = False) -> Path:
    return write_video(path, clip_frames(key, violate), fps=8)


# ---------------------------------------------------------------------------------------------


VP2_BUCKETS = {
    "wan": "wan_videophy2_test_hard_upsampled",
    "cogvideo": "cogvideoX5b_hard_upsampled",
    "hunyuan": "hunyuan_xdit",
}


def videophy2(root: Path, tag: str = "a", captions: int = 3, bad_utf8: bool = True) -> Path:
    """``videophy2_training.csv`` and ``videophy2_test.csv`` (official columns), videos under the S3 bucket
    folders, the same file name in every bucket (a caption's videos share a name)."""
    for split, csv_name in (("train", "videophy2_training.csv"), ("test", "videophy2_test.csv")):
        rows = []
        for c in range(captions):
            caption = f"{tag} {split} {c}: a hand pushes a ceramic vase near the edge; it tilts but stays upright"
            name = caption.replace(" ", "_").replace(":", "").replace(";", "") + ".mp4"
            for m, (model, bucket) in enumerate(VP2_BUCKETS.items()):
                pc = [5, 2, 2][m] if c % 2 == 0 else [1, 3, 4][m]
                sa = 4
                clip(root / "videos" / bucket / name, f"vp2/{tag}/{split}/{bucket}/{name}", violate=pc < 3)
                rows.append(
                    {
                        "caption": caption,
                        "video_url": f"https://videophysics2testvideos.s3.us-east-2.amazonaws.com/{bucket}/{name}",
                        "sa": sa,
                        "pc": pc,
                        "joint": int(sa >= 4 and pc >= 4),
                        "physics_rules_followed": str(["The vase stays in contact with the table"]),
                        "physics_rules_unfollowed": str(
                            [] if pc >= 4 else ["Gravity pulls the vase down", "The vase's tilt matches the push"]
                        ),
                        "physics_rules_cannot_be_determined": "[]",
                        "human_violated_rules": "" if pc >= 3 else str(["The vase floats after tilting"]),
                        "action": "pushing",
                        "category": "object interactions",
                        "is_hard": "1" if c == 0 else "0",
                        "metadata_rules": "{'Gravity pulls the vase down': 'gravity'}",
                        "upsampled_caption": caption + ", in a sunlit kitchen",
                        "model_name": model,
                    }
                )
        data = pd.DataFrame(rows).to_csv(index=False).encode("utf-8")
        if bad_utf8:  # the published CSVs hold a few invalid UTF-8 bytes
            data = data.replace(b"sunlit kitchen", b"sunlit kitch\xffen", 1)
        (root / csv_name).write_bytes(data)
    return root


def videofeedback2(root: Path, tag: str = "a", prompts: int = 2, models: int = 3) -> Path:
    """The card's test JSON name (and a train JSON) with the VideoScore2 record keys; videos named by ``video_name``."""
    for split, name in (("train", "data_27k_train.json"), ("test", "data_27k_test (VideoScoreBench-v2).json")):
        recs = []
        for p in range(prompts):
            for m in range(models):
                vname = f"{tag}_{split}_{p:04d}_model{m}"
                phy = [5, 3, 1][m] if p % 2 == 0 else [2, 2, 4][m]
                clip(root / "videos" / f"{vname}.mp4", f"vf2/{vname}", violate=phy < 3)
                recs.append(
                    {
                        "video_name": vname,
                        "video_url": f"https://example.org/cache/{vname}.mp4",
                        "prompt": f"{tag} {split} prompt {p}: a ball rolls off a table",
                        "visual_score": 4,
                        "t2v_score": 3,
                        "phy_score": phy,
                        "thinking": "The ball's fall looks natural.",
                    }
                )
        (root / name).write_text(json.dumps(recs, indent=1), encoding="utf-8")
    return root


def pid(root: Path, tag: str = "a", n: int = 3) -> Path:
    """``PID_Test_split.zip`` -> ``PID_test/{pos/*.mp4, neg/*.mp4, anno_file.json}``, zipped as published."""
    stage = root / "_stage" / "PID_test"
    annos = []
    for i in range(n):
        clip(stage / "pos" / f"{tag}_real_{i}.mp4", f"pid/{tag}/pos/{i}")
        clip(stage / "neg" / f"{tag}_gen_{i}.mp4", f"pid/{tag}/neg/{i}", violate=True)
        annos.append({"video_name": f"{tag}_gen_{i}.mp4", "anno": "The cup passes through the table."})
    (stage / "anno_file.json").write_text(json.dumps(annos), encoding="utf-8")
    with zipfile.ZipFile(root / "PID_Test_split.zip", "w") as z:
        for p in sorted(stage.rglob("*")):
            if p.is_file():
                z.write(p, p.relative_to(stage.parent).as_posix())
    import shutil

    shutil.rmtree(root / "_stage")
    return root


def implausibench(root: Path, tag: str = "a", n: int = 3, records: int | None = None) -> Path:
    """``ImplausiBench-MCQA.json`` + ``ImplausiBench/{real,implausible}/<ID>_*.mp4``; ``records`` adds
    MCQA records without videos (to reach a published count cheaply)."""
    recs = []
    for i in range(records or n):
        sid = f"IMP{tag}{i:04d}"
        if i < n:
            clip(root / "ImplausiBench" / "real" / f"{sid}_real.mp4", f"ib/{sid}/real")
            clip(root / "ImplausiBench" / "implausible" / f"{sid}_implausible.mp4", f"ib/{sid}/fake", violate=True)
        recs.append(
            {
                "implausible_video": f"ImplausiBench/implausible/{sid}_implausible.mp4",
                "real_video": f"ImplausiBench/real/{sid}_real.mp4",
                "question": "Do the events in the video appear to follow physics principles (Real) or not (Implausible)? Why?",
                "options": {
                    "A": "Real, because the ball bounces.",
                    "B": "Implausible, because the ball passes through the wall.",
                    "G": "None of the given reasons is entirely correct.",
                },
                "real_answer": "A",
                "implausible_answer": "B",
            }
        )
    (root / "ImplausiBench-MCQA.json").write_text(json.dumps(recs, indent=1), encoding="utf-8")
    return root


VGRB_MODELS = ("kling1.5", "minimax", "gen3")


def videogen_rewardbench(root: Path, tag: str = "a", prompts: int = 3) -> Path:
    """``videogen-rewardbench.csv`` (the eval script's columns) with ``videos/<model>/<model>_<id>.mp4``."""
    rows = []
    labels = ["A", "B", "same"]
    for p in range(prompts):
        pid_ = f"{tag}{p:04d}"
        for m in VGRB_MODELS:
            clip(root / "videos" / m / f"{m}_{pid_}.mp4", f"vgrb/{m}/{pid_}", violate=m == "gen3")
        for k, (ma, mb) in enumerate(
            ((VGRB_MODELS[0], VGRB_MODELS[1]), (VGRB_MODELS[0], VGRB_MODELS[2]), (VGRB_MODELS[1], VGRB_MODELS[2]))
        ):
            lab = labels[(p + k) % 3]
            rows.append(
                {
                    "path_A": f"videos/{ma}/{ma}_{pid_}.mp4",
                    "path_B": f"videos/{mb}/{mb}_{pid_}.mp4",
                    "A_model": ma,
                    "B_model": mb,
                    "prompt": f"{tag} Static camera, a metal ball {p} rolls on a smooth tabletop.",
                    "VQ": lab,
                    "MQ": lab,
                    "TA": "same",
                    "Overall": labels[(p + k + 1) % 3],
                    "fps_A": 8.0,
                    "num_frames_A": FRAMES,
                    "fps_B": 8.0,
                    "num_frames_B": FRAMES,
                }
            )
    pd.DataFrame(rows).to_csv(root / "videogen-rewardbench.csv", index=False)
    return root


def monetbench(root: Path, tag: str = "a", pairs: int = 3, train_prompts: int = 2) -> Path:
    """VisionRewardDB-Video parquet: ``monetbench/test-00000-of-00001.parquet`` and
    ``train/train-00000-of-00001.parquet`` (annotation as a struct with the dataset's key names)."""
    answers = ["video1", "video2", "tie"]
    test = []
    for i in range(pairs):
        v1, v2 = f"videos/test/{tag}_{i}_cogvideox.mp4", f"videos/test/{tag}_{i}_opensora.mp4"
        clip(root / v1, f"mb/{v1}")
        clip(root / v2, f"mb/{v2}", violate=True)
        test.append(
            {
                "internal_id": f"{tag}{i}",
                "prompt": f"{tag} a dog jumps over a fence {i}",
                "standard_answer": answers[i % 3],
                "video1_path": v1,
                "video2_path": v2,
            }
        )
    (root / "monetbench").mkdir(parents=True, exist_ok=True)
    pd.DataFrame(test).to_parquet(root / "monetbench" / "test-00000-of-00001.parquet", index=False)
    train = []
    for p in range(train_prompts):
        for k, (law, move) in enumerate(((5, 4), (2, 1), (3, 2))):
            v = f"videos/train/{tag}_{p}_{k}.mp4"
            clip(root / v, f"mb/{v}", violate=law < 3)
            ann = {"alignment": 4, "physics law": law, "movement reality": move, "stability": 3}
            train.append(
                {
                    "video_path": v,
                    "internal_id": f"{tag}t{p}{k}",
                    "prompt": f"{tag} waves crash on rocks {p}",
                    "url": f"https://example.org/{v}",
                    "annotation": ann,
                    "meta_result": [1, 0, 1],
                    "meta_mask": [1, 1, 1],
                }
            )
    (root / "train").mkdir(parents=True, exist_ok=True)
    pd.DataFrame(train).to_parquet(root / "train" / "train-00000-of-00001.parquet", index=False)
    return root


def rapidata(
    root: Path, tag: str = "a", schema: str = "file_name", pairs: int = 3, image_to_video: bool = True
) -> Path:
    """One Rapidata set as parquet in either published schema (``file_name`` older, ``video`` newer)."""
    rows = []
    weights = [(5.2, 1.1), (0.0, 3.4), (2.0, 2.0)]
    for i in range(pairs):
        f1, f2 = f"{tag}_{i}_seedance.mp4", f"{tag}_{i}_veo2.mp4"
        clip(root / "videos" / f1, f"rd/{tag}/{f1}")
        clip(root / "videos" / f2, f"rd/{tag}/{f2}", violate=True)
        w1, w2 = weights[i % 3]
        votes = json.dumps(
            [{"country": "DE", "language": "de", "userScore": 0.9, "votedFor": "A", "votedAt": "2025-05-01T10:00:00Z"}]
        )
        if schema == "file_name":
            row = {
                "prompt": f"{tag} a glass tips over {i}",
                "file_name1": f1,
                "file_name2": f2,
                "model1": "seedance-1-pro",
                "model2": "veo2",
                "weighted_results1_Coherence": w1,
                "weighted_results2_Coherence": w2,
                "detailedResults_Coherence": votes,
                "weighted_results1_Preference": 1.0,
                "weighted_results2_Preference": 2.0,
            }
        else:
            row = {
                "prompt": f"{tag} a glass tips over {i}",
                "video1": f1,
                "video2": f2,
                "model1": "seedance-1-pro",
                "model2": "veo2",
                "weighted_results_video1_Coherence": w1,
                "weighted_results_video2_Coherence": w2,
                "detailed_results_coherence": votes,
            }
        if image_to_video:
            buf = io.BytesIO(b"\x89PNG\r\n\x1a\n" + bytes(16))
            row["prompt_asset"] = {"bytes": buf.getvalue(), "path": f"{tag}_{i}.png"}
        rows.append(row)
    (root / "data").mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_parquet(root / "data" / "train-00000-of-00001.parquet", index=False)
    return root


def real_folder(root: Path, tag: str = "a", per_source: int = 3) -> Path:
    for src in ("phone", "dashcam"):
        for i in range(per_source):
            clip(root / src / f"{tag}_{i}.mp4", f"real/{tag}/{src}/{i}")
    return root


def rated_folder(root: Path, tag: str = "a", prompts: int = 2) -> Path:
    rows = []
    for p in range(prompts):
        for k, score in enumerate((5, 3, 1)):
            name = f"{tag}_{p}_{k}.mp4"
            clip(root / "clips" / name, f"rated/{tag}/{name}", violate=score < 3)
            rows.append({"video": f"clips/{name}", "score": score, "prompt": f"{tag} prompt {p}"})
    pd.DataFrame(rows).to_csv(root / "ratings.csv", index=False)
    return root


WRITERS = {
    "videophy2": videophy2,
    "videofeedback2": videofeedback2,
    "pid": pid,
    "implausibench": implausibench,
    "videogen_rewardbench": videogen_rewardbench,
    "monetbench": monetbench,
    "rapidata": rapidata,
    "real_folder": real_folder,
    "rated_folder": rated_folder,
}
