"""Compiled inner loops of the active-set solver (Numba).

``enter_direction`` is the numerical part of one iteration of the entering
step (``ActiveSetSVM._enter``): the new column of the factor (R^T r = h_j),
the direction v = (c w - u, 1) of the bordered Step 1 (R u = r), the reduced
cost of the entering variable and the ratio test over the free set.
``price_full`` is the full pricing of Step 2 (``ActiveSetSVM._price``): the
violation sgn_i (y_i f(x_i) - 1) of every learned example from the stored
kernel rows of the free set, f_out and b, in one pass over those rows
(instead of a matrix-vector product and five passes of NumPy calls), and the
most violated one.  Explicit loops in a fixed order, no BLAS: the result does
not depend on any thread setting.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=True, error_model="numpy")
def price_full(KS, coef_rows, n, ns, fc, b, sgn_y, sgn_lin, priced, shrink_margin, mark_priced):
    """Violations v_i = sgn_y_i (sum_r coef_r KS[r, i] + fc_i + b) + sgn_lin_i for i < ns; returns
    (index of the largest, its value), the first NaN if there is one (as np.argmax).  With
    ``mark_priced``, priced[i] = v_i >= -shrink_margin (the shrinking subset)."""
    f = np.zeros(ns)
    for r in range(n):  # rows of KS are contiguous: one axpy each
        c = coef_rows[r]
        for i in range(ns):
            f[i] += c * KS[r, i]
    best = 0
    best_v = -math.inf
    found_nan = False
    for i in range(ns):
        v = ((f[i] + fc[i]) + b) * sgn_y[i] + sgn_lin[i]
        if mark_priced:
            priced[i] = v >= -shrink_margin
        if not found_nan:
            if math.isnan(v):
                found_nan = True
                best = i
                best_v = v
            elif v > best_v or i == 0:
                best = i
                best_v = v
    return best, best_v


_TINY = 1e-200  # as in active_set.py: |direction| floor in the ratio test


@njit(cache=True, error_model="numpy")
def enter_direction(R, n, row, S, yS, w, yw, a, rho, yj, Hjj, fcj, aj, aj0, kdj, linj, b, r_col, u, dS):
    """One iteration of the entering step up to the ratio test (see ``ActiveSetSVM._enter``).

    Fills r_col (R^T r_col = h_j, h_j = y_s y_j (K_sj + rho)), u (R u = r_col, so u = H^{-1} h_j),
    dS = c w - u (the free set's direction per unit move of a_j up; the caller flips it when
    a_j moves down) and returns (pivot_sq, c, r_j)."""
    for i in range(n):  # forward substitution with R^T (columns of R are contiguous)
        s = (row[S[i]] + rho) * yS[i]
        if yj < 0:
            s = -s
        for k in range(i):
            s -= R[k, i] * r_col[k]
        r_col[i] = s / R[i, i]
    pivot_sq = Hjj
    for i in range(n):
        pivot_sq -= r_col[i] * r_col[i]
    for i in range(n):
        u[i] = r_col[i]
    for k in range(n - 1, -1, -1):  # back substitution with R, column by column
        u[k] = u[k] / R[k, k]
        uk = u[k]
        for i in range(k):
            u[i] -= uk * R[i, k]
    ysu = 0.0
    fS = 0.0
    for i in range(n):
        ysu += yS[i] * u[i]
        fS += (a[S[i]] * yS[i]) * row[S[i]]
    c = (ysu - yj) / yw  # keeps y^T v = 0 exactly
    f_j = fS + fcj + (aj - aj0) * yj * kdj  # reduced cost of j (f_out(j) still holds a_j0)
    r_j = yj * (f_j + b) + linj
    for i in range(n):
        dS[i] = w[i] * c - u[i]
    return pivot_sq, c, r_j


@njit(cache=True, error_model="numpy")
def ratio_test(n, S, a, dS, ub, t_S, sigma):
    """Distance of each free variable to the bound it moves to over its speed; variables that do
    not move (dS exactly 0 or -0.0) never block.  dS is first turned into the direction a_j moves
    (sigma = -1: down).  ``ub``: the upper bound of each slot (C, or C w_y with class weights).
    Returns (position of the first smallest, its t)."""
    if sigma < 0:
        for i in range(n):
            dS[i] = -dS[i]
    best = 0
    for i in range(n):
        ai = a[S[i]]
        d = dS[i]
        t = ai if d < 0 else ub[S[i]] - ai
        speed = abs(d)
        if speed < _TINY:
            speed = _TINY
        t = t / speed
        if d == 0.0:
            t = math.inf
        t_S[i] = t
        if t < t_S[best]:
            best = i
    return best, t_S[best]


@njit(cache=True, error_model="numpy")
def move_free(n, S, a, dS, step, ub):
    """a_s <- a_s + step dS_s for the free set, kept in [0, ub_s] (the bordered Step 1 move)."""
    for i in range(n):
        v = a[S[i]] + dS[i] * step
        if v < 0.0:
            v = 0.0
        if v > ub[S[i]]:
            v = ub[S[i]]
        a[S[i]] = v


@njit(cache=True, error_model="numpy")
def add_scaled(out, n, c, row):
    """out[:n] += c row[:n] (f_out takes a change of one coefficient)."""
    for i in range(n):
        out[i] += c * row[i]


def warm_up() -> float:
    """Compile (or load from Numba's cache) with the argument types the solver passes (a small
    batch fit, learn and unlearn); returns the seconds it took."""
    import time

    from core.solvers.active_set import ActiveSetSVM

    t0 = time.perf_counter()
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=40) > 0, 1.0, -1.0)
    s = ActiveSetSVM(X, kernel="rbf", C=1.0, gamma=0.5)
    s.learn_many(np.arange(30), y[:30])
    for i in range(30, 40):
        s.learn(i, y[i])
    s.unlearn(int(s.support_[0]))
    s.finish()
    return time.perf_counter() - t0
