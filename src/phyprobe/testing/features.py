"""Helpers for feature-cache tests and the extraction processes they start: a tiny seeded encoder that every
process builds the same, toy manifests, and comparisons of what caches hold."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from phyprobe.data.manifest import Manifest
from phyprobe.encoders import from_config
from phyprobe.features.cache import FeatureCache, ManifestCache, video_keys
from phyprobe.io.video import ClipSpec
from phyprobe.testing.videos import write_toy_manifest

CLIP = ClipSpec(4)
CPU = {"accelerator": "cpu", "enable_progress_bar": False}


def tiny_encoder(image_size: int = 32):
    """Random-init EfficientNet-Lite0 with fixed weights: every process builds the same one.

    The cache key only says ``weights_id="random"``, so the weights must be seeded to be the same.
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        return from_config("efficientnet_lite0", image_size=image_size, weights=None)


def toy_manifest_at(root: Path, num_scenes: int = 6, frames: int = 8) -> Manifest:
    write_toy_manifest(root, num_scenes=num_scenes, frames=frames, size=(32, 48))
    return Manifest.load(root)


def shares(folder: Path, count: int) -> list[set[str]]:
    """The stored keys of the manifest in ``folder``, split into the ``count`` shares a launcher's processes take."""
    from phyprobe.features.extract import in_share  # here: the processes that import this module skip Lightning

    keys = video_keys(Manifest.load(folder).paths())
    return [{k for k in keys if in_share(k, index, count)} for index in range(count)]


def in_every_share(write: Callable[[Path], object], parent: Path, count: int) -> Path:
    """The first of ``parent/m0``, ``m1``, ... (each written by ``write(folder)`` until one fits) whose videos fall
    in every one of ``count`` shares. A video's share hashes its absolute path, so which process gets which video
    depends on where the test's temporary folder is; on an unlucky folder one share is empty (1 in 2**(n-1) for two
    shares of n videos) and a test of what that share's process does would test nothing."""
    for i in range(100):
        folder = parent / f"m{i}"
        write(folder)
        if all(shares(folder, count)):
            return folder
    raise AssertionError(f"no folder under {parent} whose videos fall in all {count} shares")


def shard_contents(cache: FeatureCache | ManifestCache) -> dict[str, np.ndarray]:
    """id -> features over every published shard (in the manifest's ids when ``cache`` is read through one),
    failing on any video stored twice."""
    store = getattr(cache, "cache", cache)
    stored: dict[str, np.ndarray] = {}
    for s in store.iter_samples():
        assert s["id"] not in stored, f"{s['id']} is stored in more than one shard"
        stored[s["id"]] = s["feats"]
    if store is cache:
        return stored
    return {vid: stored[key] for vid, key in cache.keys.items() if key in stored}


def assert_same_features(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> None:
    assert sorted(a) == sorted(b)
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)
