"""Finding pretrained weights offline: a local path, or the Hugging Face cache — never the network.

Every encoder resolves its files here *before* building anything, so a missing checkpoint ends in one
:class:`WeightsNotFoundError` that names the model, the download command and where the files must
go, instead of a stack trace from deep inside timm, open_clip, transformers or diffusers. The cache
location is read from the environment at call time (``HF_HUB_CACHE``, else ``HF_HOME/hub``), so a
test or a job can point it elsewhere after import.

The ``weights_id`` returned with a path goes into the encoder's fingerprint (the feature-cache key
and the exported scorer's check). It names the hub snapshot (repo@commit) or, for a local path, the
file name and byte size: moving the files elsewhere keeps the fingerprint, swapping them does not.
"""

from __future__ import annotations

import os
from pathlib import Path

from .base import WeightsNotFoundError


def hf_cache_dir() -> Path:
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    home = os.environ.get("HF_HOME") or os.path.join(os.environ.get("XDG_CACHE_HOME", "~/.cache"), "huggingface")
    return Path(home).expanduser() / "hub"


def _cached(repo_id: str, filename: str) -> Path | None:
    from huggingface_hub import try_to_load_from_cache

    p = try_to_load_from_cache(repo_id, filename, cache_dir=str(hf_cache_dir()))
    return Path(p) if isinstance(p, str) and Path(p).exists() else None


def _hub_id(path: Path, repo_id: str) -> str:
    """repo@commit from a cache path .../snapshots/<commit>/<file>."""
    parts = path.parts
    commit = parts[parts.index("snapshots") + 1] if "snapshots" in parts else "unknown"
    return f"{repo_id}@{commit[:12]}"


def _local_id(path: Path, files: list[Path]) -> str:
    return f"local:{path.name}:{sum(f.stat().st_size for f in files)}"


def _not_found(model: str, what: str, downloads: list[str], local_hint: str) -> WeightsNotFoundError:
    cmds = "\n".join(f"    {c}" for c in downloads)
    return WeightsNotFoundError(
        f"{model}: {what}\n"
        f"  Download (on a machine with network access), e.g.:\n{cmds}\n"
        f"  and either keep it in the Hugging Face cache here ({hf_cache_dir()}; set HF_HOME or HF_HUB_CACHE "
        f"to use another cache) with weights='hub', or copy it anywhere and pass weights=<path> ({local_hint})."
    )


def resolve_file(
    model: str, weights: str, hub_files: list[tuple[str, str]], local_names: tuple[str, ...]
) -> tuple[Path, str]:
    """One checkpoint file: the first of ``hub_files`` (repo, filename) in the cache, or a local file/dir.

    Several hub repositories can hold the same weights in formats the loader understands (e.g. the
    timm, open_clip and original Meta releases of PE-Core); any cached one will do.
    """
    if weights == "hub":
        for repo, filename in hub_files:
            p = _cached(repo, filename)
            if p is not None:
                return p, _hub_id(p, repo)
        raise _not_found(
            model,
            "no weights in the Hugging Face cache (looked for " + ", ".join(f"{r}/{f}" for r, f in hub_files) + ").",
            [f"hf download {r} {f}" for r, f in hub_files],
            "a checkpoint file, or a directory holding one of " + ", ".join(local_names),
        )
    p = Path(weights).expanduser()
    if p.is_dir():
        found = next((p / n for n in local_names if (p / n).is_file()), None)
        if found is None:
            raise _not_found(
                model,
                f"directory {p} holds none of {', '.join(local_names)}.",
                [f"hf download {r} {f} --local-dir {p}" for r, f in hub_files],
                "the directory must hold one of those files",
            )
        p = found
    if not p.is_file():
        raise _not_found(
            model,
            f"weights path {p} does not exist.",
            [f"hf download {r} {f} --local-dir <dir>" for r, f in hub_files],
            "a checkpoint file, or a directory holding one of " + ", ".join(local_names),
        )
    return p, _local_id(p, [p])


def resolve_pretrained_dir(model: str, weights: str, repo_id: str, subfolder: str | None = None) -> tuple[Path, str]:
    """A ``from_pretrained`` directory (config.json + weights), for transformers and diffusers models.

    Returns the directory that holds config.json (the subfolder already applied), so the library is
    only ever handed a local path.
    """
    rel = f"{subfolder}/config.json" if subfolder else "config.json"
    download = [f"hf download {repo_id}" + (f" --include '{subfolder}/*'" if subfolder else "")]
    if weights == "hub":
        cfg = _cached(repo_id, rel)
        if cfg is None:
            raise _not_found(
                model,
                f"{repo_id} ({rel}) is not in the Hugging Face cache.",
                download,
                f"the downloaded repository directory{' (with its ' + subfolder + '/ folder)' if subfolder else ''}",
            )
        d, wid = cfg.parent, _hub_id(cfg, repo_id)
    else:
        root = Path(weights).expanduser()
        d = next((c for c in ([root / subfolder] if subfolder else []) + [root] if (c / "config.json").is_file()), None)
        if d is None:
            raise _not_found(
                model,
                f"no config.json under {root}" + (f" or {root / subfolder}" if subfolder else "") + ".",
                [c + f" --local-dir {root}" for c in download],
                "the repository directory, or its model folder",
            )
        wid = None
    files = sorted(f for pat in ("*.safetensors", "*.bin") for f in d.glob(pat))
    if not files:
        raise _not_found(
            model,
            f"{d} has a config.json but no *.safetensors / *.bin weights (incomplete download?).",
            download,
            "the complete repository directory",
        )
    return d, wid or _local_id(d, files)
