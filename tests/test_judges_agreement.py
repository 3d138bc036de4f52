"""Agreement metrics against scikit-learn / scipy and against kappas worked out by hand."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score

from phyprobe.data.manifest import Manifest, write_jsonl
from phyprobe.judges.agreement import agreement, figures, kappa, read_ratings, to_label, violation_to_scale


def test_kappas_match_hand_computation_when_a_rating_is_absent_from_one_side():
    # rater b never says 4, neither says 3. By hand (labels 1..5, quadratic weights (i-j)^2):
    # p_o = 3/4, p_e = 1/4 -> kappa = 2/3; observed weighted disagreement 1/4, expected 5.75 -> QWK = 1 - 1/23.
    a, b = [1, 2, 4, 5], [1, 2, 5, 5]
    assert kappa(a, b) == pytest.approx(2 / 3)
    assert kappa(a, b, weights="quadratic") == pytest.approx(1 - 0.25 / 5.75)
    # With labels inferred from the data the distances shrink to index gaps and QWK becomes 1 - 0.25/3:
    # the reason the label set is fixed.
    assert cohen_kappa_score(a, b, weights="quadratic") == pytest.approx(1 - 0.25 / 3)
    assert kappa(a, b, weights="quadratic") == pytest.approx(
        cohen_kappa_score(a, b, weights="quadratic", labels=[1, 2, 3, 4, 5])
    )


def test_continuous_figures_are_scipys_and_kappas_use_the_stated_rounding():
    rng = np.random.default_rng(0)
    a = rng.uniform(1, 5, 40)
    b = np.clip(a + rng.normal(0, 0.8, 40), 1, 5)
    f = figures(a, b)
    assert f["pearson"] == pytest.approx(stats.pearsonr(a, b).statistic)
    assert f["spearman"] == pytest.approx(stats.spearmanr(a, b).statistic)
    la, lb = np.clip(np.floor(a + 0.5), 1, 5), np.clip(np.floor(b + 0.5), 1, 5)
    assert f["qwk"] == pytest.approx(cohen_kappa_score(la, lb, labels=[1, 2, 3, 4, 5], weights="quadratic"))
    assert f["kappa"] == pytest.approx(cohen_kappa_score(la, lb, labels=[1, 2, 3, 4, 5]))


def test_rounding_is_half_up_and_clipped():
    assert to_label([2.5, 3.5, 1 + 1 / 3, 11 / 3, 0.2, 5.7, 4.49]).tolist() == [3, 4, 1, 4, 1, 5, 4]
    assert np.rint(2.5) == 2  # what half-to-even would have given
    assert violation_to_scale([0.0, 1.0, 0.25, 1.7]).tolist() == [5.0, 1.0, 4.0, 1.0]


def test_kappa_is_nan_when_both_raters_are_constant():
    assert np.isnan(kappa([3, 3, 3], [3, 3, 3]))


def test_bootstrap_interval_brackets_the_value_and_uses_only_shared_videos():
    rng = np.random.default_rng(1)
    a = {f"v{i}": float(x) for i, x in enumerate(rng.uniform(1, 5, 30))}
    b = {k: float(np.clip(v + rng.normal(0, 0.5), 1, 5)) for k, v in a.items()}
    b["only_b"] = 3.0
    res = agreement(a, b, n_boot=200)
    assert res["videos_both"] == 30 and res["videos_b"] == 31 and "floor(x + 0.5)" in res["rounding"]
    want = figures(np.array(list(a.values())), np.array([b[k] for k in a]))
    for k in ("pearson", "spearman", "kappa", "qwk"):
        assert res[k]["value"] == pytest.approx(want[k])
        assert res[k]["low"] <= res[k]["value"] <= res[k]["high"] and res[k]["n"] == 30


def test_read_ratings_from_judgements_and_csv(tmp_path):
    write_jsonl(
        tmp_path / "videos.jsonl",
        [{"id": f"v{i}", "path": f"v{i}.mp4", "source": "s", "is_real": False} for i in range(3)],
    )
    m = Manifest.load(tmp_path)
    (tmp_path / "j.jsonl").write_text(
        "\n".join(
            json.dumps(r)
            for r in [
                {"id": "v0", "score": 4.5, "violation_score": 0.125},
                {"id": "v1", "score": None, "violation_score": None},
                {"id": "v2", "score": 2.0, "violation_score": 0.75},
            ]
        )
        + "\n"
    )
    assert read_ratings(tmp_path / "j.jsonl", m) == {"v0": 4.5, "v2": 2.0}
    assert read_ratings(tmp_path / "j.jsonl", m, scale="violation") == {"v0": 4.5, "v2": 2.0}
    (tmp_path / "s.csv").write_text("video,score\nv0.mp4,0.0\nv1,0.5\n")
    assert read_ratings(tmp_path / "s.csv", m, scale="violation") == {"v0": 5.0, "v1": 3.0}
    with pytest.raises(ValueError, match="outside 1-5"):
        read_ratings(tmp_path / "s.csv", m)
