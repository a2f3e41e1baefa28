"""Compiled inner loop of the ramp solver (Numba): single-variable SMO on a kept Gram matrix.

``smo_on_gram`` runs the SMO steps of ``OnlineSVMR._smo`` (most violating example first,
clipped Newton step on its weight, eqs. 12-15 of Wang & Vucetic) on the examples of V alone,
with their Gram matrix K_VV kept by the solver: a step costs one pass over V instead of a pass
over the whole data store and a dozen NumPy calls.  The store's decision values are brought up
to date once at the end from the weights that moved.  Used for the squared hinge, whose weights
all move a little after every label (see ``ramp.py``).  Explicit loops in a fixed order, no BLAS:
the result does not depend on any thread setting.
"""

from __future__ import annotations

import numpy as np
from numba import njit

OK, BUDGET, STALLED = 0, 1, 2


@njit(cache=True, error_model="numpy")
def smo_on_gram(K, y, alpha, upper, ridge, f, tol, budget):
    """SMO on m examples: K (m x m) their kernel matrix, y their labels, alpha their weights
    (0 <= alpha <= upper), ridge D_ii (0 for the hinge), f their decision values; alpha and f are
    updated in place.  g_k = 1 - y_k f_k - alpha_k D_kk; the violation is g_k where alpha_k may
    rise and -g_k where it may fall; the most violating example (the first of equals) moves to
    the optimum of its own weight, clipped to the box.  Returns (steps, OK | BUDGET | STALLED,
    the largest violation left); STALLED: the step made no representable progress."""
    m = len(y)
    steps = 0
    while True:
        best = -1
        best_v = 0.0
        best_g = 0.0
        for k in range(m):
            g = 1.0 - y[k] * f[k] - alpha[k] * ridge[k]
            v = 0.0
            if alpha[k] < upper[k] and g > v:
                v = g
            if alpha[k] > 0.0 and -g > v:
                v = -g
            if v > best_v:
                best = k
                best_v = v
                best_g = g
        if best < 0 or best_v <= tol:
            return steps, OK, best_v
        if steps >= budget:
            return steps, BUDGET, best_v
        a = alpha[best]
        kii = K[best, best] + ridge[best]
        if kii > 1e-12:
            new = min(max(a + best_g / kii, 0.0), upper[best])
        else:  # K_ii = 0 (and no ridge): the weight only moves the linear term; to the bound g points at
            new = upper[best] if best_g > 0 else 0.0
        if new == a:
            return steps, STALLED, best_v
        d = (new - a) * y[best]
        alpha[best] = new
        for j in range(m):
            f[j] += d * K[best, j]
        steps += 1


def warm_up() -> float:
    """Compile (or load from Numba's cache) the loop; returns the seconds it took."""
    import time

    start = time.perf_counter()
    K = np.eye(2)
    smo_on_gram(K, np.array([1.0, -1.0]), np.zeros(2), np.full(2, np.inf), np.ones(2), np.zeros(2), 1e-3, 10)
    return time.perf_counter() - start
