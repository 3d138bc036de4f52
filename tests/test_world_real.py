"""Real footage with synthetic failures: nothing changes at severity 0, something measurable does
above it, and more of it with more severity."""

from __future__ import annotations

import numpy as np
import pytest

from phyprobe.world.real import PERTURBATIONS, load_source, perturb


@pytest.fixture(scope="module")
def source() -> np.ndarray:
    return load_source("carphone_pristine.mp4")[0]


def test_source_resized(source):
    assert source.shape[1] == 128 and source.shape[2] % 2 == 0 and source.dtype == np.uint8


@pytest.mark.parametrize("kind", PERTURBATIONS)
def test_perturbation_zero_then_growing(source, kind):
    length, start, onset = 32, 10, 10
    clean = perturb(source, start, length, kind, 0.0, onset, rng_seed=5)
    assert np.array_equal(clean, source[start : start + length])
    change = []
    for s in (0.25, 0.5, 0.75, 1.0):
        out = perturb(source, start, length, kind, s, onset, rng_seed=5)
        assert np.array_equal(out[:onset], clean[:onset])  # nothing before the onset
        change.append(float(np.abs(out.astype(int) - clean).mean()))
    assert change[0] > 0.0
    assert all(b >= a * 0.9 for a, b in zip(change, change[1:])), change
