"""Metrics against independent computations: brute-force pair counting and scikit-learn."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import roc_auc_score
from sklearn.metrics import roc_curve as sk_roc_curve

from core.metrics import accuracy, labels_to_reach, learning_curve_area, roc_auc, roc_curve


def pair_count_auc(y, s):
    """Mann-Whitney U / (n_pos n_neg) by counting every (positive, negative) pair; ties = 1/2."""
    pos = [si for yi, si in zip(y, s, strict=True) if yi > 0]
    neg = [si for yi, si in zip(y, s, strict=True) if yi <= 0]
    wins = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def random_problem(seed, n, n_levels):
    rng = np.random.default_rng(seed)
    y = rng.choice([-1, 1], size=n)
    y[0], y[1] = 1, -1
    scores = rng.integers(0, n_levels, size=n) / 3.0  # few levels: many ties
    return y, scores


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("n_levels", [2, 5, 1000])
def test_auc_matches_pair_counting_and_sklearn(seed, n_levels):
    y, s = random_problem(seed, 120, n_levels)
    expected = pair_count_auc(y, s)
    assert roc_auc(y, s) == pytest.approx(expected, abs=1e-12)
    assert roc_auc(y, s) == pytest.approx(roc_auc_score(y, s), abs=1e-12)
    assert roc_auc((y > 0).astype(int), s) == pytest.approx(expected, abs=1e-12)  # {0, 1} labels


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(-3, 3)), min_size=2, max_size=40))
def test_auc_property_with_ties(pairs):
    y = np.array([1 if b else -1 for b, _ in pairs])
    s = np.array([float(v) for _, v in pairs])
    if len(set(y)) < 2:
        assert math.isnan(roc_auc(y, s))
        return
    assert roc_auc(y, s) == pytest.approx(pair_count_auc(y, s), abs=1e-12)
    fpr, tpr, _ = roc_curve(y, s)
    assert np.trapezoid(tpr, fpr) == pytest.approx(roc_auc(y, s), abs=1e-12)


def test_auc_analytic_cases():
    assert roc_auc([1, 1, -1, -1], [4, 3, 2, 1]) == 1.0
    assert roc_auc([1, 1, -1, -1], [1, 2, 3, 4]) == 0.0
    assert roc_auc([1, -1], [5, 5]) == 0.5  # a tie counts one half
    assert roc_auc([1, 1, -1], [2, 1, 1]) == pytest.approx(0.75)
    assert math.isnan(roc_auc([1, 1], [0.3, 0.2]))
    assert math.isnan(roc_auc([-1, -1], [0.3, 0.2]))
    with pytest.raises(ValueError, match="NaN"):
        roc_auc([1, -1], [np.nan, 1])
    with pytest.raises(ValueError, match="2 labels but 3 scores"):
        roc_auc([1, -1], [1, 2, 3])


@pytest.mark.parametrize("seed", range(5))
def test_roc_curve_matches_sklearn_with_ties(seed):
    y, s = random_problem(seed, 200, 7)
    fpr, tpr, thr = roc_curve(y, s)
    sk_fpr, sk_tpr, sk_thr = sk_roc_curve(y, s, drop_intermediate=False)
    np.testing.assert_allclose(fpr, sk_fpr)
    np.testing.assert_allclose(tpr, sk_tpr)
    np.testing.assert_array_equal(thr[1:], sk_thr[1:])
    assert thr[0] == np.inf
    assert len(thr) == len(np.unique(s)) + 1  # one step per distinct score
    assert np.all(np.diff(thr) < 0)
    assert fpr[-1] == 1 and tpr[-1] == 1 and fpr[0] == 0 and tpr[0] == 0


def test_roc_curve_single_class_gives_nan_rates():
    fpr, tpr, _ = roc_curve([1, 1, 1], [0.1, 0.2, 0.3])
    assert np.isnan(fpr).all() and np.allclose(tpr, [0, 1 / 3, 2 / 3, 1])


def test_accuracy():
    assert accuracy([1, -1, 1, 1], [1, 1, 1, -1]) == 0.5
    assert accuracy(["a", "b"], ["a", "b"]) == 1.0
    assert math.isnan(accuracy([], []))
    with pytest.raises(ValueError):
        accuracy([1], [1, 1])


def test_learning_curve_area_linear_axis():
    n = [10, 20, 30]
    # trapezoid: ((0.6 + 0.8) / 2 * 10 + (0.8 + 1.0) / 2 * 10) / 20 = 0.8
    assert learning_curve_area(n, [0.6, 0.8, 1.0]) == pytest.approx(0.8)
    assert learning_curve_area(n, [0.6, 0.8, 1.0], reference=1.0) == pytest.approx(0.6)
    assert learning_curve_area(n, [0.5, 0.5, 0.5], reference=0.9) == pytest.approx(0.0)
    assert learning_curve_area(n, [0.9, 0.9, 0.9], reference=0.9) == pytest.approx(1.0)
    # NaN (one class seen so far) counts as chance
    assert learning_curve_area(n, [np.nan, 1.0, 1.0], reference=1.0) == pytest.approx(0.75)
    assert learning_curve_area([5], [0.7]) == pytest.approx(0.7)


def test_learning_curve_area_log2_axis():
    n = [1, 2, 4, 8]
    v = [0.5, 0.7, 0.9, 1.0]
    # equal steps of 1 on the log2 axis: mean of trapezoids (0.6 + 0.8 + 0.95) / 3
    assert learning_curve_area(n, v, log2=True) == pytest.approx((0.6 + 0.8 + 0.95) / 3)
    # the linear axis weighs the late, wide steps more: (0.6 * 1 + 0.8 * 2 + 0.95 * 4) / 7
    assert learning_curve_area(n, v) == pytest.approx(6.0 / 7.0)
    with pytest.raises(ValueError, match="at least 1"):
        learning_curve_area([0, 1], [0.5, 0.6], log2=True)
    with pytest.raises(ValueError, match="non-decreasing"):
        learning_curve_area([3, 2], [0.5, 0.6])
    with pytest.raises(ValueError, match="differ from random"):
        learning_curve_area([1, 2], [0.5, 0.6], reference=0.5)


def test_labels_to_reach():
    n = [2, 4, 6, 8]
    auc = [np.nan, 0.80, 0.95, 0.99]
    assert labels_to_reach(n, auc, 0.95 * 1.0) == 6
    assert labels_to_reach(n, auc, 0.99) == 8
    assert labels_to_reach(n, auc, 0.5) == 4
    assert labels_to_reach(n, auc, 0.999) is None


def test_labels_to_recall_and_work_saved_over_sampling():
    from core.metrics import labels_to_recall, work_saved_over_sampling

    labels = [1, -1, 1, -1, -1, 1, -1, 1]  # 4 of the pool's 5 positives found
    assert labels_to_recall(labels, 5, 0.5) == 6  # ceil(2.5) = 3 positives, the third at label 6
    assert labels_to_recall(labels, 5, 0.8) == 8  # 4 positives
    assert labels_to_recall(labels, 5, 0.95) is None
    assert labels_to_recall([1] * 95 + [-1], 100, 0.95) == 95  # 95% of 100 is exactly 95, not 96
    assert labels_to_recall([], 0, 0.5) is None
    # Cohen et al. (2006): (TN + FN) / N - (1 - recall), the unread items being TN + FN
    assert work_saved_over_sampling(300, 2000, 0.95) == pytest.approx(1700 / 2000 - 0.05)
    assert work_saved_over_sampling(None, 2000, 0.95) is None
