"""Scorers on the Hugging Face Hub: load by repository id, save with a model card, push.

Loading goes through ``huggingface_hub.snapshot_download``, so the Hub's own conventions hold: the
local cache (``HF_HUB_CACHE`` / ``cache_dir``), revision pinning (branch, tag or commit) and
offline mode (``HF_HUB_OFFLINE=1`` reads the cache only). A scorer from the Hub passes the same
checks as a local one, the encoder fingerprint included.

The model card is generated from what the scorer and its training run recorded: the encoder, the
training videos by source (the run's ``scores.csv``), the held-out figures with their intervals
(``metrics.json``) and the limits the project measured.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from .core import ScorerLoadError
from .names import BUNDLE, CARD, CONFIG, WEIGHTS, is_repo_id

INTENDED_USE = """\
Scoring generated or real videos for violations of intuitive physics (objects teleporting, passing
through each other, changing shape or colour, moving against gravity): 0 means plausible, 1 an obvious
violation. Meant for ranking candidates from the same prompt or scene (best-of-n filtering), as a
reward signal, and for tracking a generator across checkpoints on a fixed prompt set. It is not a
measure of visual quality, and a score is not a probability."""

RESIZE_LIMITS = {
    "letterbox": "Frames are letterboxed (aspect ratio kept, padded): small objects in wide frames get few pixels "
    "and their violations are seen less.",
    "squash": "Frames are squashed to the input size (aspect ratio not kept): shapes are stretched alike in every "
    "video of one size, but a video of another aspect ratio is read stretched otherwise.",
    "crop": "Frames are centre-cropped: a violation at the edge of a wide frame can be cut away.",
}


def known_limits(cfg: dict) -> str:
    """The card's limits, from this scorer's own config: what it trained on, how it reads a frame, its scores'
    range; then the limits every scorer of this method shares (measured in the project's results)."""
    training = cfg.get("training") or {}
    resize = ((cfg["encoder"].get("describe") or {}).get("preprocess") or {}).get("resize")
    sources = training.get("trained_on")
    rng = training.get("raw_score_range")
    lines = [
        f"- Trained on the sources {', '.join(sources)}: transfer to footage of other content is what held-out "
        "benchmarks measure, not what training shows."
        if sources
        else "- What it was trained on is not recorded in its config.",
    ]
    if resize in RESIZE_LIMITS:
        lines.append(f"- {RESIZE_LIMITS[resize]}")
    if isinstance(rng, list) and len(rng) == 2:
        lines.append(
            f"- Its training videos scored {rng[0]:.3g} to {rng[1]:.3g} (raw): a score far outside that says a video "
            "is unlike its training data, and `phyprobe score` and the leaderboard flag it."
        )
    lines += [
        "- Ranking is within a scene or prompt: same-scene pairs are ordered far better than videos of different "
        "scenes. Compare videos of one prompt, not across prompts.",
        "- The [0, 1] scale is a training target, not a guarantee: a share of raw scores falls outside it and is "
        "clipped; plausible clips do not all score near 0.",
        "- Quality degradations (blur, noise, compression) can outscore a real violation of the same scene.",
    ]
    return "\n".join(lines)


def resolve(path: str | Path, revision: str | None = None, cache_dir: str | Path | None = None) -> Path:
    """A local scorer directory for ``path``: itself when it exists, else a Hub snapshot of repo id ``path``."""
    p = Path(path)
    if p.exists() or not is_repo_id(str(path)):
        if revision is not None:
            raise ScorerLoadError(
                f"{path}: revision={revision!r} applies to Hub repositories, and this is a local path"
            )
        return p
    try:
        from huggingface_hub import snapshot_download
        from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError
    except ImportError as e:
        raise ScorerLoadError(
            f"{path}: no such local directory; to load it from the Hugging Face Hub, "
            f"pip install 'phyprobe[hf]' (huggingface_hub)"
        ) from e

    at = f" at revision {revision!r}" if revision else ""
    try:
        return Path(
            snapshot_download(
                str(path), revision=revision, cache_dir=cache_dir, allow_patterns=[CONFIG, WEIGHTS, CARD, f"{BUNDLE}/*"]
            )
        )
    except LocalEntryNotFoundError as e:
        raise ScorerLoadError(
            f"{path}: no such local directory, and not in the Hub cache{at} while offline or "
            f"without connection (download it once online, or check HF_HUB_CACHE)"
        ) from e
    except (HfHubHTTPError, ValueError) as e:
        first = str(e).strip().splitlines()[0]
        raise ScorerLoadError(f"{path}: no such local directory, and the Hub cannot provide it{at} ({first})") from e


def _training_data(run: Path) -> list[str]:
    import numpy as np
    import pandas as pd

    scores, info = run / "scores.csv", run / "run_info.json"
    if not scores.is_file():
        return []
    df = pd.read_csv(scores)
    cfg = json.loads(info.read_text()).get("config", {}) if info.is_file() else {}
    train_splits = list((cfg.get("data") or {}).get("train_splits") or ["train"])
    df["role"] = np.where(df["split"].isin(train_splits), "train", "held out")
    table = (
        df.groupby(["source", "role"]).size().unstack(fill_value=0).reindex(columns=["train", "held out"], fill_value=0)
    )
    lines = [
        f"Videos of the training run by source (training splits: {', '.join(train_splits)}).",
        "",
        "| source | " + " | ".join(table.columns) + " |",
        "|---|" + "---|" * len(table.columns),
    ]
    lines += [f"| {src} | " + " | ".join(str(int(v)) for v in row) + " |" for src, row in table.iterrows()]
    return lines


def _figures(run: Path) -> list[str]:
    from ..eval.report import headline_table

    m = run / "metrics.json"
    if not m.is_file():
        return []
    metrics = json.loads(m.read_text())
    if not metrics.get("benchmarks"):
        return []
    evaluators = {
        "phyprobe": metrics["benchmarks"],
        **{f"baseline: {k}": v for k, v in metrics.get("baselines", {}).items()},
    }
    return [
        "Held-out figures of the training run (`metrics.json`), raw scores, 95 % percentile bootstrap "
        "intervals and the number of units:",
        "",
        *headline_table(evaluators),
    ]


def _head_words(h: dict) -> str:
    if h.get("kind", "mlp") == "monotone":
        return "a non-negative (monotone) weighting of the pooled features"
    return f"a small GELU MLP head (hidden width {h['hidden']})"


def model_card(cfg: dict, run_dir: Path | None) -> str:
    enc = cfg["encoder"]
    d = enc.get("describe", {})
    pre = d.get("preprocess", {})
    h = cfg["head"]
    run = run_dir if run_dir and run_dir.is_dir() else None
    data = _training_data(run) if run else []
    figs = _figures(run) if run else []
    missing = "Not recorded: the training run directory was not available when this card was written."
    code = cfg.get("code", {})
    return "\n".join(
        [
            "---",
            "library_name: phyprobe",
            "tags:",
            "- video",
            "- physics",
            "- evaluation",
            "- phyprobe",
            "---",
            "",
            f"# phyprobe scorer ({enc['name']})",
            "",
            "A learned evaluator of physical consistency in videos: a frozen pretrained encoder, temporal "
            f"{'/'.join(h['stats'])} pooling of per-frame features, and {_head_words(h)} giving a violation "
            "score clipped to [0, 1].",
            "",
            "```python",
            "from phyprobe import Scorer",
            "",
            'scorer = Scorer.from_pretrained("ORG/NAME")',
            'scorer.score("clip.mp4")            # a file',
            "scorer.score_frames(frames)           # (B, T, H, W, 3) uint8",
            "```",
            "",
            "## Encoder",
            "",
            f"- registry entry `{enc['name']}` with options `{json.dumps(enc['kwargs'])}`, weights `{d.get('weights_id', '?')}`",
            f"- fingerprint `{enc['fingerprint']}` (checked at load: a different encoder or preprocessing is refused)",
            f"- input {pre.get('size', '?')} px, resize `{pre.get('resize', '?')}`, clip `{json.dumps(cfg['clip'])}`",
            f"- head: {_head_words(h)}, features stored as {cfg['feature_dtype']}",
            f"- code: phyprobe {code.get('package', '?')}, commit {code.get('git_commit') or 'unknown'}",
            "",
            "## Training data",
            "",
            *(data or [missing]),
            "",
            "## Evaluation",
            "",
            *(figs or [missing]),
            "",
            "## Intended use",
            "",
            INTENDED_USE,
            "",
            "## Known limits",
            "",
            known_limits(cfg),
            "",
        ]
    )


def write_model_card(scorer_dir: Path, run_dir: str | Path | None = None) -> Path:
    cfg = json.loads((scorer_dir / CONFIG).read_text())
    recorded = (cfg.get("training") or {}).get("run_dir")
    inside = scorer_dir.resolve().parent  # a scorer still inside the run that trained it
    run = (
        Path(run_dir)
        if run_dir
        else Path(recorded)
        if recorded and Path(recorded).is_dir()
        else inside
        if (inside / "metrics.json").is_file()
        else None
    )
    path = scorer_dir / CARD
    tmp = path.with_name(CARD + ".tmp")
    tmp.write_text(model_card(cfg, run), encoding="utf-8")
    tmp.replace(path)
    return path


def push(
    scorer,
    repo_id: str,
    run_dir: str | Path | None = None,
    private: bool = False,
    revision: str | None = None,
    token: str | None = None,
    commit_message: str = "Upload phyprobe scorer",
) -> str:
    """Create ``repo_id`` if needed and upload the saved scorer as one commit (on ``revision``'s branch)."""
    from huggingface_hub import HfApi

    api = HfApi(token=token)
    api.create_repo(repo_id, private=private, exist_ok=True, repo_type="model")
    if revision:
        api.create_branch(repo_id, branch=revision, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="phyprobe-push-") as tmp:
        scorer.save_pretrained(tmp, run_dir=run_dir)
        info = api.upload_folder(repo_id=repo_id, folder_path=tmp, revision=revision, commit_message=commit_message)
    return str(getattr(info, "commit_url", info))
