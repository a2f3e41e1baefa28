"""Compiled inner loop of the dual coordinate descent solver (Numba): passes over the learned rows.

``dcd_passes`` runs the coordinate steps of Hsieh, Chang, Lin, Keerthi & Sundararajan, "A Dual
Coordinate Descent Method for Large-scale Linear SVM" (ICML 2008), Algorithm 1 for the L2-loss SVM
(U = infinity, D_ii = 1 / (2 C_i)), on sparse CSR rows with the weight vector w = sum_i a_i y_i x_i
kept beside the weights a (over the rows' features, made from a at the start and the end of a call):
a step reads one row (G = y_i w.x_i - 1 + D_ii a_i) and writes it into w.  The rows are read from a
block (``block_append``) that the solver keeps between labels and extends by the new rows: a label
does not copy the learned rows again.
The kernel <x, z> * gamma + coef0 is the feature map [sqrt(gamma) x, sqrt(coef0)], so f(x) =
gamma w.x + coef0 s with s = sum_i a_i y_i.  Each pass visits the rows in an order drawn by a small
generator seeded by the caller (the paper's random permutation of the sub-problems, which converges
faster than a fixed order), explicit loops in a fixed order otherwise: the result does not depend on
any thread setting.
"""

from __future__ import annotations

import numpy as np
from numba import njit

OK, BUDGET = 0, 1


@njit(cache=True, error_model="numpy")
def _next(state):
    """xorshift64* (Vigna 2016): the next 64-bit draw of ``state`` (a one-element uint64 array)."""
    x = state[0]
    x ^= x >> np.uint64(12)
    x ^= x << np.uint64(25)
    x ^= x >> np.uint64(27)
    state[0] = x
    return x * np.uint64(2685821657736338717)


@njit(cache=True, error_model="numpy")
def _below(state, n):
    """A draw in 0..n-1 (n < 2**32) from the high 32 bits of the next draw, by a multiply and a shift
    (Lemire 2019) rather than a 64-bit division."""
    return int(((_next(state) >> np.uint64(32)) * np.uint64(n)) >> np.uint64(32))


@njit(cache=True, error_model="numpy")
def _accumulate(v, ptr, idx, val, alpha, y):
    """v += sum_k a_k y_k x_k over the block's rows in their order, each in its stored order."""
    for k in range(len(alpha)):
        c = alpha[k] * y[k]
        for q in range(ptr[k], ptr[k + 1]):
            v[idx[q]] += c * val[q]


@njit(cache=True, error_model="numpy")
def block_append(indptr, indices, data, rows, start, ptr, idx, val, feats, n_feats, local):
    """Copy the store rows ``rows[start:]`` into the block after its first ``start`` rows (``ptr``:
    their offsets, ``idx`` / ``val``: their features renumbered in the order met, and their values;
    ``feats[:n_feats]``: the store feature of each number; ``local``: the number of each store feature,
    -1 for those not met, int32 as long as w).  The arrays grow (doubled) when full; a block made in
    several calls is the block made in one.  Returns (ptr, idx, val, feats, n_feats)."""
    m = len(rows)
    if len(ptr) < m + 1:
        grown = np.zeros(max(2 * len(ptr), m + 1), dtype=np.int64)
        grown[: start + 1] = ptr[: start + 1]
        ptr = grown
    for k in range(start, m):
        r = rows[k]
        q0, q1 = indptr[r], indptr[r + 1]
        at = ptr[k]
        if at + q1 - q0 > len(idx):
            size = max(2 * len(idx), at + q1 - q0)
            gi, gv = np.empty(size, dtype=np.int32), np.empty(size)
            gi[:at], gv[:at] = idx[:at], val[:at]
            idx, val = gi, gv
        for q in range(q0, q1):
            f = indices[q]
            if local[f] < 0:
                if n_feats == len(feats):
                    gf = np.empty(2 * len(feats) + 16, dtype=np.int64)
                    gf[:n_feats] = feats[:n_feats]
                    feats = gf
                local[f] = n_feats
                feats[n_feats] = f
                n_feats += 1
            idx[at] = local[f]
            val[at] = data[q]
            at += 1
        ptr[k + 1] = at
    return ptr, idx, val, feats, n_feats


@njit(cache=True, error_model="numpy")
def dcd_passes(ptr, idx, val, feats, n_feats, y, alpha, qdiag, ridge, w, s, gamma, coef0, tol, max_pass, seed):
    """Coordinate passes over the first m = len(alpha) rows of a block (``block_append``: the learned
    rows, their features renumbered; labels ``y``, weights ``alpha``, curvatures ``qdiag`` = gamma
    ||x||^2 + coef0 + D_ii, ``ridge`` = D_ii, all aligned with the rows) until a whole pass meets every
    coordinate with its projected gradient within ``tol``.  ``alpha``, ``w`` and ``s`` (a one-element
    array: sum a_i y_i) are updated in place.  The passes read the block (contiguous memory) and w over
    the block's features (a short vector), made from the weights a (not read from ``w``); after the
    passes it is made again from a in a fixed order: the bits ``weight_vector`` gives for these rows
    and c = a y (so rounding does not build up, and a restored state continues bit for bit), without a
    second read of the store, and written into ``w``.  Returns (passes, OK | BUDGET, coordinate steps
    that moved a weight)."""
    m = len(alpha)
    v = np.zeros(n_feats)  # w over the rows' features, from a (as at the end)
    _accumulate(v, ptr, idx, val, alpha, y)
    order = np.arange(m)
    state = np.empty(1, dtype=np.uint64)
    state[0] = np.uint64(seed) | np.uint64(1)
    moved = 0
    passes, code = max_pass, BUDGET
    for p in range(max_pass):
        for k in range(m - 1, 0, -1):  # Fisher-Yates
            j = _below(state, k + 1)
            order[k], order[j] = order[j], order[k]
        worst = 0.0
        for t in range(m):
            k = order[t]
            dot = 0.0
            for q in range(ptr[k], ptr[k + 1]):
                dot += val[q] * v[idx[q]]
            G = y[k] * (gamma * dot + coef0 * s[0]) - 1.0 + ridge[k] * alpha[k]
            a = alpha[k]
            pg = G if a > 0.0 else min(G, 0.0)
            if abs(pg) > worst:
                worst = abs(pg)
            if pg != 0.0:
                new = max(a - G / qdiag[k], 0.0)
                if new != a:
                    d = (new - a) * y[k]
                    alpha[k] = new
                    for q in range(ptr[k], ptr[k + 1]):
                        v[idx[q]] += d * val[q]
                    s[0] += d
                    moved += 1
        if worst <= tol:
            passes, code = p + 1, OK
            break
    # w from the weights a in a fixed order, as ``weight_vector`` computes it over these rows (the rows in
    # their order, each in its stored order, from 0): the same bits, without a second read of the store
    v[:] = 0.0
    _accumulate(v, ptr, idx, val, alpha, y)
    for j in range(n_feats):
        w[feats[j]] = v[j]
    return passes, code, moved


@njit(cache=True, error_model="numpy")
def weight_vector(indptr, indices, data, rows, c, w, touched, local):
    """w = sum_k c_k x_rows[k] in place, over the features the rows have: those features and the ones of
    ``touched`` (the rows of the previous call) are set to 0 first, the rows then added in their order,
    each in its stored order (the same bits for the same rows and c).  Returns the rows' features in the
    order met (the next call's ``touched``); ``local`` is ``dcd_passes``' scratch space, left as given."""
    for j in touched:
        w[j] = 0.0
    count = 0
    for r in rows:
        count += indptr[r + 1] - indptr[r]
    feats = np.empty(count, dtype=np.int64)
    n_feats = 0
    for r in rows:
        for q in range(indptr[r], indptr[r + 1]):
            f = indices[q]
            if local[f] < 0:
                local[f] = 1
                feats[n_feats] = f
                n_feats += 1
                w[f] = 0.0
    for k in range(len(rows)):
        r = rows[k]
        for q in range(indptr[r], indptr[r + 1]):
            w[indices[q]] += c[k] * data[q]
    for j in range(n_feats):
        local[feats[j]] = -1
    return feats[:n_feats].copy()


def warm_up() -> float:
    """Compile (or load from Numba's cache) the loop; returns the seconds it took."""
    import time

    start = time.perf_counter()
    indptr = np.array([0, 1, 2], dtype=np.int32)
    indices = np.array([0, 1], dtype=np.int32)
    data = np.array([1.0, 1.0])
    rows = np.array([0, 1], dtype=np.intp)
    ptr, idx, val, feats, n_feats = block_append(
        indptr,
        indices,
        data,
        rows,
        0,
        np.zeros(1, dtype=np.int64),
        np.zeros(0, dtype=np.int32),
        np.zeros(0),
        np.zeros(0, dtype=np.int64),
        0,
        np.full(2, -1, dtype=np.int32),
    )
    dcd_passes(
        ptr,
        idx,
        val,
        feats,
        n_feats,
        np.array([1.0, -1.0]),
        np.zeros(2),
        np.full(2, 3.0),
        np.ones(2),
        np.zeros(2),
        np.zeros(1),
        1.0,
        1.0,
        1e-3,
        10,
        1,
    )
    weight_vector(
        indptr,
        indices,
        data,
        np.array([0, 1], dtype=np.intp),
        np.array([0.5, -0.5]),
        np.zeros(2),
        np.zeros(0, dtype=np.int64),
        np.full(2, -1, dtype=np.int64),
    )
    return time.perf_counter() - start
