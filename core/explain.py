"""Which features of an item matter most to the current model's decision f(x) about it.

The Label page shows a table item's most relevant features first. Relevance is
local (about this item and this model) and has one meaning per kernel, with
f(x) = sum_i beta_i K(x_i, x) + b over the support vectors x_i (beta_i = a_i y_i):

* ``linear``: f(x) - b = sum_j w_j x_j with w = sum_i beta_i x_i, so feature j
  contributes w_j x_j; relevance |w_j x_j|.
* ``rbf``, ``poly`` and any other kernel: the gradient of f at x, scaled to the
  feature's spread: |df/dx_j(x)| * s_j, how much f moves when x_j moves by a
  typical amount (s_j: the feature's standard deviation over the pool, 1 when
  not given, so that a feature measured in small units does not look
  irrelevant). For rbf, df/dx = sum_i beta_i K(x_i, x) (-2 gamma) (x - x_i); for
  poly, sum_i beta_i degree (gamma <x_i, x> + coef0)^(degree-1) gamma x_i; other
  kernels: central differences of the decision function.

The gradient was chosen over "the features that differ most from the nearest
support vector of the other class" because it accounts for every support
vector with its weight, needs no choice of neighbour, and is exact for rbf and
poly.
"""

from __future__ import annotations

import numpy as np

#: step of the central differences, relative to the feature's spread
FINITE_STEP = 1e-4


def feature_relevance(solver, x, *, spread=None) -> np.ndarray | None:
    """Relevance of each feature of the point ``x`` (the model's feature space) to ``solver``'s f(x).

    Returns a non-negative array of one value per feature (larger: matters
    more), or None while the model has no support vector (nothing to explain).
    """
    x = np.asarray(x, dtype=np.float64).reshape(-1)
    sv, coef, _ = solver.coefficients()
    if len(sv) == 0 or solver.kernel is None:
        return None
    coef = np.asarray(coef, dtype=np.float64)
    X_sv = np.asarray(solver.store.X, dtype=np.float64)[np.asarray(sv, dtype=np.intp)]
    kernel = solver.kernel
    if kernel.name == "linear":
        w = coef @ X_sv
        return np.abs(w * x)
    s = np.ones_like(x) if spread is None else np.where(np.asarray(spread, dtype=float) > 0, spread, 1.0)
    if kernel.name == "rbf":
        k = np.exp(-kernel.gamma * np.sum((X_sv - x) ** 2, axis=1))
        gradient = -2.0 * kernel.gamma * ((coef * k) @ (x - X_sv))
    elif kernel.name == "poly":
        inner = kernel.gamma * (X_sv @ x) + kernel.coef0
        gradient = (coef * kernel.degree * inner ** (kernel.degree - 1) * kernel.gamma) @ X_sv
    else:
        gradient = _numeric_gradient(solver, x, s)
    return np.abs(gradient * s)


def _numeric_gradient(solver, x: np.ndarray, spread: np.ndarray) -> np.ndarray:
    steps = FINITE_STEP * spread
    points = np.repeat(x[None, :], 2 * len(x), axis=0)
    j = np.arange(len(x))
    points[2 * j, j] += steps
    points[2 * j + 1, j] -= steps
    f = np.asarray(solver.decision_function(X=points), dtype=np.float64)
    return (f[0::2] - f[1::2]) / (2 * steps)


def most_relevant(relevance: np.ndarray | None, n_features: int) -> np.ndarray:
    """Feature indices, most relevant first (ties and no model: the dataset's order)."""
    if relevance is None:
        return np.arange(n_features)
    return np.argsort(-np.asarray(relevance, dtype=float), kind="stable")


__all__ = ["feature_relevance", "most_relevant"]
