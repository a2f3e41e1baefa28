"""Agreement between annotators who labelled the same items: Cohen's and Fleiss' kappa.

Pure functions over plain arrays (no UI, no database). Categories are any
hashable values (MarginLab uses +1 / -1); an item rated by fewer raters than a
statistic needs is left out by the caller.

- Cohen's kappa (two raters): kappa = (p_o - p_e) / (1 - p_e), p_o the share of
  items on which both agree, p_e = sum_c p_1(c) p_2(c) from each rater's own
  category shares (Cohen 1960).
- Fleiss' kappa (n raters per item, not necessarily the same people):
  P_i = (sum_c n_ic^2 - n) / (n (n - 1)), P_bar = mean_i P_i,
  p_c = sum_i n_ic / (N n), P_e = sum_c p_c^2, kappa = (P_bar - P_e) / (1 - P_e)
  (Fleiss 1971, eqs. 1-9).

When chance agreement is complete (P_e = 1: every rating in one category) kappa is
0/0; the functions return ``None`` rather than NaN, and the caller says why.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Kappa:
    """A kappa with what it was computed from."""

    value: float | None  # None when undefined (chance agreement is 1, or no items)
    n_items: int
    observed: float | None  # p_o (Cohen) or P_bar (Fleiss)
    expected: float | None  # p_e or P_e
    raters: int  # 2 for Cohen, raters per item for Fleiss


def cohen_kappa(first: Sequence[Hashable], second: Sequence[Hashable]) -> Kappa:
    """Cohen's kappa of two raters' labels of the same items (``first[i]`` and ``second[i]`` rate item i).

    MarginLab's one implementation: the team's agreement and the stability rule's
    comparison of successive models (``core.stopping.cohens_kappa``) both use it.
    """
    if isinstance(first, np.ndarray) and isinstance(second, np.ndarray) and _countable(first, second):
        categories, a, b = _codes_of_arrays(first.reshape(-1), second.reshape(-1))
    else:
        categories, a, b = _codes_of_values(list(first), list(second))
    if len(a) != len(b):
        raise ValueError(f"the two raters must rate the same items: {len(a)} and {len(b)} ratings given")
    n = len(a)
    if n == 0:
        return Kappa(None, 0, None, None, 2)
    k = len(categories)
    table = np.bincount(a * k + b, minlength=k * k).reshape(k, k).astype(np.float64)  # whole counts: exact
    table /= n
    observed = float(np.trace(table))
    expected = float(table.sum(axis=1) @ table.sum(axis=0))
    value = None if np.isclose(expected, 1.0, rtol=0, atol=1e-12) else (observed - expected) / (1 - expected)
    return Kappa(value, n, observed, expected, 2)


def _countable(*arrays: np.ndarray) -> bool:
    return all(x.dtype.kind in "biu" for x in arrays)


def _codes_of_values(a: list, b: list) -> tuple[list, np.ndarray, np.ndarray]:
    """Categories in the order of their ``repr`` and each rating's position among them."""
    categories = sorted(set(a) | set(b), key=repr)
    index = {c: k for k, c in enumerate(categories)}
    return (
        categories,
        np.fromiter((index[x] for x in a), np.intp, len(a)),
        np.fromiter((index[x] for x in b), np.intp, len(b)),
    )


def _codes_of_arrays(a: np.ndarray, b: np.ndarray) -> tuple[list, np.ndarray, np.ndarray]:
    """As :func:`_codes_of_values` for boolean or integer arrays, without a Python step per rating."""
    if a.dtype == bool and b.dtype == bool:  # False before True, as their reprs sort; only those present
        present = [not (a.all() and b.all()), bool(a.any() or b.any())]
        if all(present):
            return [np.False_, np.True_], a.view(np.uint8).astype(np.intp), b.view(np.uint8).astype(np.intp)
        only = [np.False_, np.True_][present.index(True)] if any(present) else np.False_
        return [only], np.zeros(len(a), dtype=np.intp), np.zeros(len(b), dtype=np.intp)
    values, codes = np.unique(np.concatenate([a, b]), return_inverse=True)
    order = sorted(range(len(values)), key=lambda k: repr(values[k]))  # the general path's order
    position = np.empty(len(values), dtype=np.intp)
    position[order] = np.arange(len(values))
    codes = position[codes.reshape(-1)]
    return [values[k] for k in order], codes[: len(a)], codes[len(a) :]


def fleiss_kappa(counts: np.ndarray) -> Kappa:
    """Fleiss' kappa from an (items x categories) table of how many raters put item i in category c.

    Every row must sum to the same number of raters n >= 2.
    """
    table = np.asarray(counts, dtype=np.float64)
    if table.ndim != 2:
        raise ValueError(f"counts must be an (items x categories) table, got shape {table.shape}")
    n_items = table.shape[0]
    if n_items == 0:
        return Kappa(None, 0, None, None, 0)
    if np.any(table < 0) or not np.all(table == np.round(table)):
        raise ValueError("counts must be non-negative whole numbers")
    per_item = table.sum(axis=1)
    raters = int(per_item[0])
    if not np.all(per_item == raters):
        raise ValueError(f"every item needs the same number of ratings; rows sum to {sorted(set(per_item.tolist()))}")
    if raters < 2:
        raise ValueError("Fleiss' kappa needs at least 2 ratings per item")
    agreement = (np.sum(table * table, axis=1) - raters) / (raters * (raters - 1))  # P_i
    observed = float(agreement.mean())  # P_bar
    shares = table.sum(axis=0) / (n_items * raters)  # p_c
    expected = float(np.sum(shares * shares))  # P_e
    value = None if np.isclose(expected, 1.0, rtol=0, atol=1e-12) else (observed - expected) / (1 - expected)
    return Kappa(value, n_items, observed, expected, raters)


def rating_counts(ratings: Sequence[Sequence[Hashable]], categories: Sequence[Hashable]) -> np.ndarray:
    """The (items x categories) table of ``fleiss_kappa`` from each item's list of ratings."""
    index = {c: k for k, c in enumerate(categories)}
    table = np.zeros((len(ratings), len(categories)), dtype=np.int64)
    for i, item in enumerate(ratings):
        for rating in item:
            if rating not in index:
                raise ValueError(f"rating {rating!r} of item {i} is not one of the categories {list(categories)}")
            table[i, index[rating]] += 1
    return table
