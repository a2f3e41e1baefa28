"""Evaluation measures: ROC curve and AUC (with ties), accuracy, learning-curve summaries.

Labels may be given as {-1, +1}, {0, 1} or booleans: a label counts as
positive when it is > 0 (or True).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import rankdata


def _binary(y) -> np.ndarray:
    y = np.asarray(y)
    if y.dtype == bool:
        return y
    y = y.astype(np.float64)
    if np.isnan(y).any():
        raise ValueError("labels contain NaN")
    return y > 0


def _scores(scores, n: int) -> np.ndarray:
    s = np.asarray(scores, dtype=np.float64).reshape(-1)
    if len(s) != n:
        raise ValueError(f"{n} labels but {len(s)} scores")
    if np.isnan(s).any():
        raise ValueError("scores contain NaN")
    return s


def roc_curve(y, scores) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ROC curve: false- and true-positive rates at every distinct score threshold.

    Returns ``(fpr, tpr, thresholds)`` with thresholds in decreasing order;
    point k classifies ``score >= thresholds[k]`` as positive.  The first
    point is (0, 0) at threshold +inf.  Tied scores form one step (a diagonal
    segment when the tie mixes classes), so the trapezoidal area under the
    curve equals :func:`roc_auc`.  When a class is absent its rate is
    undefined and returned as NaN.
    """
    pos = _binary(y)
    s = _scores(scores, len(pos))
    order = np.argsort(-s, kind="mergesort")
    s_sorted, pos_sorted = s[order], pos[order]
    # last position of each block of equal scores
    ends = np.flatnonzero(np.diff(s_sorted) != 0) if len(s) else np.zeros(0, dtype=int)
    ends = np.concatenate([ends, [len(s) - 1]]) if len(s) else ends
    tp = np.cumsum(pos_sorted)[ends]
    fp = (ends + 1) - tp
    n_pos, n_neg = int(pos.sum()), int((~pos).sum())
    tp = np.concatenate([[0], tp]).astype(np.float64)
    fp = np.concatenate([[0], fp]).astype(np.float64)
    thresholds = np.concatenate([[np.inf], s_sorted[ends]])
    with np.errstate(invalid="ignore", divide="ignore"):
        tpr = tp / n_pos if n_pos else np.full(len(tp), np.nan)
        fpr = fp / n_neg if n_neg else np.full(len(fp), np.nan)
    return fpr, tpr, thresholds


def roc_auc(y, scores) -> float:
    """Area under the ROC curve = P(score of a random positive > that of a random negative).

    Ties count one half (the Mann-Whitney U statistic divided by
    n_pos * n_neg, computed with average ranks).  Returns NaN only when one
    class is absent (the area is undefined then); never raises for that, so
    learning curves can start before both classes have been seen.
    """
    pos = _binary(y)
    s = _scores(scores, len(pos))
    n_pos = int(pos.sum())
    n_neg = len(pos) - n_pos
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    ranks = rankdata(s, method="average")
    u = ranks[pos].sum() - n_pos * (n_pos + 1) / 2.0
    return float(u / (n_pos * n_neg))


def accuracy(y_true, y_pred) -> float:
    """Fraction of predictions equal to the true labels (NaN for no examples)."""
    y_true = np.asarray(y_true).reshape(-1)
    y_pred = np.asarray(y_pred).reshape(-1)
    if len(y_true) != len(y_pred):
        raise ValueError(f"{len(y_true)} labels but {len(y_pred)} predictions")
    if len(y_true) == 0:
        return float("nan")
    return float(np.mean(y_true == y_pred))


def _curve(n_labels, values) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(n_labels, dtype=np.float64).reshape(-1)
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    if len(x) != len(v):
        raise ValueError(f"{len(x)} label counts but {len(v)} values")
    if len(x) == 0:
        raise ValueError("an empty learning curve has no area")
    if np.any(np.diff(x) < 0):
        raise ValueError("label counts must be non-decreasing")
    return x, v


def learning_curve_area(
    n_labels, values, reference: float | None = None, random_value: float = 0.5, log2: bool = False
) -> float:
    """Area under a learning curve (e.g. test AUC against the number of labels).

    The area is the trapezoidal integral over the label axis (``n_labels``,
    or ``log2(n_labels)`` with ``log2=True``, which weighs the early labels
    more) divided by the axis length, i.e. the curve's mean height.  Points
    where the value is NaN (AUC before both classes were labelled) count as
    ``random_value``: the model ranks no better than chance there.

    Without ``reference`` the mean height is returned.  With a reference
    (the full-data value) it is normalised as
    ``(mean - random_value) / (reference - random_value)``: 0 for a curve at
    chance level throughout, 1 for a curve at the full-data value from the
    first label on.  A single point has that point's value as its mean.
    """
    x, v = _curve(n_labels, values)
    v = np.where(np.isnan(v), random_value, v)
    if log2:
        if np.any(x < 1):
            raise ValueError("a log2 label axis needs label counts of at least 1")
        x = np.log2(x)
    width = x[-1] - x[0]
    if width > 0:
        mean = float(np.sum((v[1:] + v[:-1]) * np.diff(x)) / 2.0 / width)
    else:
        mean = float(np.mean(v))
    if reference is None:
        return mean
    if not np.isfinite(reference) or reference == random_value:
        raise ValueError(f"reference must be finite and differ from random_value ({random_value}), got {reference}")
    return (mean - random_value) / (reference - random_value)


def labels_to_reach(n_labels, auc, target: float) -> int | None:
    """First label count at which the curve reaches ``target`` (>=), or None if it never does.

    Typical targets: 0.95 or 0.99 times the full-data AUC.  NaN values never
    reach a target.
    """
    x, v = _curve(n_labels, auc)
    hit = np.flatnonzero(np.nan_to_num(v, nan=-np.inf) >= target)
    return int(x[hit[0]]) if len(hit) else None


def labels_to_recall(labels, n_positive: int, recall: float) -> int | None:
    """Labels given until ``recall`` of the ``n_positive`` positives of the pool were labelled, or None.

    ``labels``: the labels in the order they were given (> 0 is positive).  The
    level counts ceil(recall * n_positive) positives (computed exactly for
    decimal levels: 95% of 100 is 95).
    """
    if n_positive <= 0:
        return None
    from fractions import Fraction

    need = math.ceil(Fraction(str(float(recall))) * int(n_positive))
    found = np.cumsum(_binary(labels))
    hit = np.flatnonzero(found >= need)
    return int(hit[0] + 1) if len(hit) else None


def work_saved_over_sampling(n_labels: int | None, n_items: int, recall: float) -> float | None:
    """WSS at a recall level (Cohen et al. 2006): (items - labels needed) / items - (1 - recall), None when
    the level was not reached."""
    if n_labels is None or n_items <= 0:
        return None
    return (n_items - n_labels) / n_items - (1.0 - recall)


__all__ = [
    "accuracy",
    "labels_to_reach",
    "labels_to_recall",
    "learning_curve_area",
    "roc_auc",
    "roc_curve",
    "work_saved_over_sampling",
]
