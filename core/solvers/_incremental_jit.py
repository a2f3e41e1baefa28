"""Compiled minor iterations of the incremental solver (Numba).

``drive`` runs Algorithm 1 of Laskov et al. (2006) -- the loop of
``IncrementalSVM._drive`` -- in one compiled call, one compiled helper per step
of the Python loop and under its name: ``_sensitivities`` (eqs. 7-9),
``_largest_step`` with ``_eq10_margin_vector_bound`` and ``_eq11_reaches_margin``
(eqs. 10-13, ties broken as ``_Event`` tuples are compared: the shortest step,
then the case, then the oldest example), ``_apply_step`` and
``_note_margin_step`` (eqs. 6 and 8), and the bookkeeping of S with the
recursive inverse that ``_update_sets`` does, a helper per case (``_at_margin``,
``_at_bound``, ``_leave``, ``_reach_margin``: eqs. 15-17 and 22, no immediate
cycling, §4.2).  It is a line-for-line transcription of the NumPy
implementation in ``core/solvers/incremental.py`` (the docstrings there say
why each rule is what it is); the two agree up to rounding and take the same
set changes (tests/core/test_incremental_compiled.py runs both).

Every reduction is an explicit loop in a fixed order and no BLAS or LAPACK
routine is called, so the result does not depend on any thread setting.
When R must be recomputed from scratch (an ill-conditioned or broken
recursive update), the call returns and Python does it (``_refresh_R``, the
same code as the NumPy path): LAPACK's inverse inside compiled code would
cost every process about a second to load.  The products are written so that their inner
loops run over contiguous memory (rows of the row-major kernel rows of S and
of the symmetric R), where the compiler vectorises them without reordering a
sum.

The call returns to Python when it needs something only Python has: more room
in the arrays of S (``GROW``), the kernel row of an example entering S when
the learned-kernel matrix is not kept (``NEED_ROW``: the step is taken, the
example's entry into S waits for the row and is done first on the next call),
R recomputed from scratch (``NEED_REFRESH``, at the point where the NumPy path
recomputes it: before the sensitivities are used, at the end of the
iteration after an ill-conditioned update, or before an entering example's
kappa is judged), or a message (iteration cap, a step that cannot be taken
in floating point).  Its state between calls lives in the small
arrays ``istate`` / ``fstate`` and the watch / blocked / cases buffers.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

# set membership codes (as in incremental.py)
SET_S, SET_E, SET_O, SET_CAND = 0, 1, 2, 3
# driving modes
MODE_LEARN, MODE_LOWER, MODE_REMOVE = 0, 1, 2
# what limited a step: eq. 12, eq. 13, eq. 10, eq. 11, and the residue of an unlearn with S empty
CASE_C_MARGIN, CASE_C_BOUND, CASE_LEAVE, CASE_ENTER, CASE_RESIDUE = 0, 1, 2, 3, 4
CASE_NAMES = ("c_margin", "c_bound", "leave", "enter", "residue")
# the set change of the previous minor iteration (§4.2)
PREV_NONE, PREV_LEAVE, PREV_ENTER, PREV_BLOCKED = -1, 0, 1, 2
# return codes
DONE, CAP, NOSTEP, INEXACT_R, INEXACT_T, GROW, NEED_ROW, NEED_REFRESH = 0, 1, 2, 3, 4, 5, 6, 7
_GO_ON = -1  # (a helper's answer inside drive: the minor iterations go on)
# istate / fstate slots
(
    I_M,
    I_ITERS,
    I_NCASES,
    I_NBLOCKED,
    I_MOVED,
    I_PREV_KIND,
    I_PREV_K,
    I_PREV_ZERO,
    I_PENDING,
    I_PENDING_ZERO,
    I_PENDING_FRESH,
    I_SENS_FRESH,
    I_REFRESH,
) = range(13)
N_ISTATE = 13
F_B, F_GSIZE, F_GERR, F_BAD_T, F_OFFSET = range(5)

_ILL_CONDITIONED = 1e-4
_EPS_BETA = 1e-12
_EPS = float(np.finfo(float).eps)


@njit(cache=True, error_model="numpy")
def _minus_R_times(Rw, n, eta, out):
    """out = -R eta over the leading n x n block, as a sum of rows of the symmetric R (contiguous)."""
    for i in range(n):
        out[i] = 0.0
    for j in range(n):
        e = eta[j]
        for i in range(n):
            out[i] -= e * Rw[j, i]


@njit(cache=True, error_model="numpy")
def _S_add(k, beta_k, kappa, krow, nL, m, y, st, g, slot, Spos, yS, Ks, Rw):
    """Add position k to S, R by eq. 16 (first member: explicit inverse); returns the new |S|."""
    yk = y[k]
    if m == 0:
        Rw[0, 0] = -krow[k]
        Rw[0, 1] = yk
        Rw[1, 0] = yk
        Rw[1, 1] = 0.0
    else:
        n = m + 1  # R grows to n + 1 rows: [[R, 0], [0, 0]] + v v^T / kappa, v = [beta_k; 1]
        for i in range(n):
            Rw[i, n] = 0.0
            Rw[n, i] = 0.0
        Rw[n, n] = 0.0
        alpha = 1.0 / kappa
        for i in range(n + 1):
            vi = beta_k[i] if i < n else 1.0
            c = alpha * vi
            for j in range(n):
                Rw[i, j] += c * beta_k[j]
            Rw[i, n] += c
    for j in range(nL):
        Ks[m, j] = krow[j]
    Spos[m] = k
    yS[m] = yk
    slot[k] = m
    st[k] = SET_S
    g[k] = 0.0
    return m + 1


@njit(cache=True, error_model="numpy")
def _S_remove(k, nL, m, scale, slot, Spos, yS, Ks, Rw, col):
    """Remove position k from S, R by eq. 22.  Returns (new |S|, R must be recomputed)."""
    j = slot[k]
    r = j + 1
    refresh = False
    if m > 1:
        n = m + 1
        for i in range(n):
            col[i] = Rw[i, r]
        R_kk = col[r]
        if R_kk > 0.0 and math.isfinite(R_kk):
            alpha = -1.0 / R_kk
            for i in range(n):
                c = alpha * col[i]
                for jj in range(n):
                    Rw[i, jj] += c * col[jj]
            refresh = R_kk * scale * _ILL_CONDITIONED > 1.0
        else:
            refresh = True
        last = m
        if r != last:
            for jj in range(n):
                Rw[r, jj] = Rw[last, jj]
            for i in range(n):
                Rw[i, r] = Rw[i, last]
            for jj in range(nL):
                Ks[j, jj] = Ks[m - 1, jj]
            moved = Spos[m - 1]
            Spos[j] = moved
            yS[j] = yS[m - 1]
            slot[moved] = j
    else:
        Rw[0, 0] = 0.0
    slot[k] = -1
    return m - 1, refresh


@njit(cache=True, error_model="numpy")
def _kappa_of(k, krow, m, y, Spos, yS, Rw, eta, beta_k):
    """beta_k = -R [y_k; Q_Sk] and kappa_k = Q_kk + [y_k, Q_kS] beta_k (eq. 17), with the size of its terms."""
    yk = y[k]
    eta[0] = yk
    for s in range(m):
        eta[s + 1] = yS[s] * krow[Spos[s]] * yk
    _minus_R_times(Rw, m + 1, eta, beta_k)
    kkk = krow[k]
    dot = 0.0
    size = 0.0
    for i in range(m + 1):
        dot += eta[i] * beta_k[i]
        size += abs(eta[i]) * abs(beta_k[i])
    return kkk + dot, abs(kkk) + size


@njit(cache=True, error_model="numpy")
def _enter(k, krow, nL, m, y, st, g, slot, Spos, yS, Ks, Rw, eta, beta_k, kappa_tol, fresh):
    """``IncrementalSVM._enter``: k joins S unless its kappa (eq. 17) is ~0 (dependent on the margin
    vectors).  Returns (new |S|, outcome): 1 entered, 0 not (dependent), -1 R must be recomputed
    first (kappa is a small difference of large terms; ``fresh``: it has just been), 2 entered
    and R must be recomputed now (eq. 16 divided by a small kappa)."""
    if m == 0:
        return _S_add(k, beta_k, 1.0, krow, nL, m, y, st, g, slot, Spos, yS, Ks, Rw), 1
    kappa, ksize = _kappa_of(k, krow, m, y, Spos, yS, Rw, eta, beta_k)
    if kappa <= _ILL_CONDITIONED * ksize and not fresh:
        return m, -1
    if not math.isfinite(kappa) or kappa <= kappa_tol * max(ksize, 1e-300):
        return m, 0
    m = _S_add(k, beta_k, kappa, krow, nL, m, y, st, g, slot, Spos, yS, Ks, Rw)
    return m, (2 if kappa <= _ILL_CONDITIONED * ksize else 1)


@njit(cache=True, error_model="numpy")
def _argmin_first(x, n):
    """np.argmin over x[:n]: the first NaN if there is one, else the first smallest."""
    best = 0
    for i in range(n):
        if math.isnan(x[i]):
            return i
        if x[i] < x[best]:
            best = i
    return best


@njit(cache=True, error_model="numpy")
def _block(k, watch, blocked, istate):
    """Keep k out of eq. 11 until S changes (§4.2, ``_Drive.block``)."""
    watch[k] = 0.0
    blocked[istate[I_NBLOCKED]] = k
    istate[I_NBLOCKED] += 1


@njit(cache=True, error_model="numpy")
def _unblock(watch, blocked, st, istate):
    """S changed: the blocked examples are watched again by their sets (``_Drive.unblock``)."""
    for i in range(istate[I_NBLOCKED]):
        jb = blocked[i]
        if st[jb] == SET_E:
            watch[jb] = 1.0
        elif st[jb] == SET_O:
            watch[jb] = -1.0
    istate[I_NBLOCKED] = 0


@njit(cache=True, error_model="numpy")
def _remember(istate, kind, k, zero):
    """The set change of this minor iteration, which the next one compares with (``_Drive.prev``)."""
    istate[I_PREV_KIND] = kind
    istate[I_PREV_K] = k
    istate[I_PREV_ZERO] = zero


@njit(cache=True, error_model="numpy")
def _after_enter(k, outcome, zero, watch, blocked, st, istate):
    """After an entry attempt (``_update_sets``, "enter"): unblock all when k entered S, else block k.
    Returns NEED_REFRESH when R must be recomputed now, else _GO_ON."""
    if outcome > 0:
        watch[k] = 0.0
        _unblock(watch, blocked, st, istate)
    else:
        _block(k, watch, blocked, istate)
    _remember(istate, PREV_ENTER, k, zero)
    return NEED_REFRESH if outcome == 2 else _GO_ON


@njit(cache=True, error_model="numpy")
def _finish_entry(
    nL, y, st, g, slot, Spos, yS, Ks, Rw, KLL, has_kll, row_in, watch, blocked, istate, eta, beta_k, kappa_tol
):
    """The entry into S that the previous call left pending (its kernel row, ``row_in``, or a fresh R was
    needed).  Returns NEED_REFRESH when R must be recomputed (before or after the entry), else _GO_ON."""
    k = istate[I_PENDING]
    m = istate[I_M]
    fresh = istate[I_PENDING_FRESH] == 1
    if has_kll:
        m, outcome = _enter(k, KLL[k, :nL], nL, m, y, st, g, slot, Spos, yS, Ks, Rw, eta, beta_k, kappa_tol, fresh)
    else:
        m, outcome = _enter(k, row_in, nL, m, y, st, g, slot, Spos, yS, Ks, Rw, eta, beta_k, kappa_tol, fresh)
    istate[I_M] = m
    if outcome == -1:
        istate[I_PENDING_FRESH] = 1
        return NEED_REFRESH
    istate[I_PENDING] = -1
    istate[I_PENDING_FRESH] = 0
    return _after_enter(k, outcome, istate[I_PENDING_ZERO], watch, blocked, st, istate)


@njit(cache=True, error_model="numpy")
def _sensitivities(m, nL, y, yp_d, ykp_d, d_Qp, a, Spos, yS, Ks, Rw, scale, eta, beta, dg, aS):
    """[db; da_S] = beta (eq. 7) and dg (eqs. 8-9) per unit step of a_p; S empty: only b moves (§4.1).

    Returns (size of the terms, rounding of dg); a size that is not finite means R is broken
    (``_sensitivities`` returns None then), and dg is not computed."""
    if m == 0:
        for j in range(nL):
            dg[j] = y[j] * yp_d
        return 0.0, 0.0
    eta[0] = yp_d
    for s in range(m):
        eta[s + 1] = d_Qp[Spos[s]]
    _minus_R_times(Rw, m + 1, eta, beta)
    asum = 0.0
    for s in range(m):
        asum += abs(beta[s + 1])
    size = scale * (1.0 + asum) + abs(beta[0])
    if not math.isfinite(size):
        return size, 0.0
    # dg = y_j (sum_s da_s y_s K_sj + d y_p K_pj + db), one pass over each row of S (eq. 30)
    for j in range(nL):
        dg[j] = 0.0
    for s in range(m):
        c = yS[s] * beta[s + 1]
        for j in range(nL):
            dg[j] += c * Ks[s, j]
    b0 = beta[0]
    for j in range(nL):
        dg[j] = ((dg[j] + ykp_d[j]) + b0) * y[j]
    for s in range(m):
        aS[s] = a[Spos[s]]
    return size, 1e-11 * size


@njit(cache=True, error_model="numpy")
def _largest_step(
    p, mode, m, nL, g, dg, a, C, beta, aS, t3, q, watch, pseq, Spos, kpp, size, rounding, kappa_tol, in_seq_order
):
    """The largest step t >= 0 that keeps every KKT condition and what limits it (eqs. 10-13), as
    (found, t, case, position); candidates compare as ``_Event`` tuples (t, case, sequence)."""
    has_best = False
    bt = 0.0
    bcase = 0
    seq_p = pseq[p]
    bseq = seq_p
    bk = -1
    if mode != MODE_REMOVE:  # eq. 12: the driven example reaches the margin
        rate_p = dg[p]
        thresh = 0.5 if m == 0 else max(kappa_tol * (kpp + size), rounding)
        if mode == MODE_LEARN and rate_p > thresh:
            v = -g[p] / rate_p
            bt = v if v > 0.0 else 0.0
            has_best = True
        elif mode == MODE_LOWER and rate_p < -thresh:
            v = g[p] / -rate_p
            bt = v if v > 0.0 else 0.0
            has_best = True
        if has_best:
            bcase = CASE_C_MARGIN
            bk = p
    if m > 0:
        t2 = C[p] - a[p] if mode == MODE_LEARN else a[p]  # eq. 13: the driven example reaches its bound
        if (not has_best) or t2 < bt or (t2 == bt and 1 < bcase):
            has_best = True
            bt = t2
            bcase = CASE_C_BOUND
            bseq = seq_p
            bk = p
        bt, bcase, bseq, bk = _eq10_margin_vector_bound(m, beta, aS, C, Spos, pseq, t3, bt, bcase, bseq, bk)
    return _eq11_reaches_margin(nL, g, dg, watch, q, pseq, rounding, in_seq_order, has_best, bt, bcase, bseq, bk)


@njit(cache=True, error_model="numpy")
def _eq10_margin_vector_bound(m, beta, aS, C, Spos, pseq, t3, bt, bcase, bseq, bk):
    """Eq. 10: a margin vector reaches C (da > 0) or 0 (da < 0); one with |da| <= 1e-12 does not move.
    Returns the best (t, case, sequence, position) so far."""
    for s in range(m):
        da = beta[s + 1]
        if da > 0.0:
            h = 1.0
        elif da < 0.0 or da == 0.0:
            h = 0.0
        else:
            h = math.nan
        v = (h * C[Spos[s]] - aS[s]) / da
        if v < 0.0:
            v = 0.0
        t3[s] = v
    j3 = _argmin_first(t3, m)
    masked = False
    if not abs(beta[j3 + 1]) > _EPS_BETA:
        for s in range(m):
            if not abs(beta[s + 1]) > _EPS_BETA:
                t3[s] = math.inf
        masked = True
        j3 = _argmin_first(t3, m)
    tmin = t3[j3]
    if tmin < math.inf and (tmin < bt or (tmin == bt and 2 <= bcase)):
        count = 0
        for s in range(m):
            if t3[s] == tmin:
                count += 1
        if count > 1:
            if not masked:
                for s in range(m):
                    if not abs(beta[s + 1]) > _EPS_BETA:
                        t3[s] = math.inf
            ntie = 0
            oldest = -1
            for s in range(m):
                if t3[s] == tmin:
                    ntie += 1
                    if oldest < 0 or pseq[Spos[s]] < pseq[Spos[oldest]]:
                        oldest = s
            if ntie > 1:
                j3 = oldest
        k3 = Spos[j3]
        seq3 = pseq[k3]
        if tmin < bt or (tmin == bt and (2 < bcase or (2 == bcase and seq3 < bseq))):
            return tmin, CASE_LEAVE, seq3, k3
    return bt, bcase, bseq, bk


@njit(cache=True, error_model="numpy")
def _eq11_reaches_margin(nL, g, dg, watch, q, pseq, rounding, in_seq_order, has_best, bt, bcase, bseq, bk):
    """Eq. 11: an error or other vector reaches the margin; the smallest t is the largest q = g / dg
    over the watched examples.  Returns (found, t, case, position)."""
    k4 = 0
    q4 = -math.inf
    found_nan = False
    for j in range(nL):
        rate = watch[j] * dg[j]
        if rate <= rounding:
            qj = -math.inf
        else:
            qj = g[j] / dg[j]
        q[j] = qj
        if not found_nan:
            if math.isnan(qj):
                found_nan = True
                k4 = j
                q4 = qj
            elif qj > q4:
                k4 = j
                q4 = qj
    if q4 > -math.inf:
        mq = -q4
        tmin4 = mq if mq > 0.0 else 0.0
        if (not has_best) or tmin4 < bt or (tmin4 == bt and 3 < bcase):
            if q4 >= 0.0 or not in_seq_order:
                count = 0
                oldest = -1
                for j in range(nL):
                    tie = q[j] >= 0.0 if q4 >= 0.0 else q[j] == q4
                    if tie:
                        count += 1
                        if oldest < 0 or pseq[j] < pseq[oldest]:
                            oldest = j
                if count > 1:
                    k4 = oldest
            return True, tmin4, CASE_ENTER, k4
    return has_best, bt, bcase, bk


@njit(cache=True, error_model="numpy")
def _no_step(p, mode, a, C, cases, istate):
    """Nothing limits the step: only when unlearning with S empty and nothing left to absorb a_p,
    whose value is then rounding residue of the equality constraint (DONE); else NOSTEP."""
    if mode == MODE_REMOVE and a[p] <= 1e-9 * C[p]:
        a[p] = 0.0
        cases[istate[I_NCASES]] = CASE_RESIDUE
        istate[I_NCASES] += 1
        return DONE
    return NOSTEP


@njit(cache=True, error_model="numpy")
def _apply_step(p, m, nL, d, yp_d, t, a, aS, beta, C, Spos, g, dg, istate, fstate):
    """a_p += d t; b, a_S and every g move by their sensitivities times t (eqs. 6 and 8)."""
    istate[I_MOVED] = 1
    if m == 0:
        fstate[F_B] += yp_d * t
        for j in range(nL):
            g[j] += t * dg[j]
        return
    a[p] += d * t
    for s in range(m):  # (clipped: margin vectors tied with the limiting one land on a bound)
        v = aS[s] + t * beta[s + 1]
        if v < 0.0:
            v = 0.0
        if v > C[Spos[s]]:
            v = C[Spos[s]]
        aS[s] = v
        a[Spos[s]] = v
    fstate[F_B] += beta[0] * t
    for j in range(nL):
        g[j] += t * dg[j]
    for s in range(m):
        g[Spos[s]] = 0.0


@njit(cache=True, error_model="numpy")
def _note_margin_step(dg, nL, t, size, fstate):
    """The bound on the maintained margins' rounding error after g += dg t (``_note_margin_step``)."""
    imax = 0
    for j in range(nL):
        if abs(dg[j]) > abs(dg[imax]):
            imax = j
    change = abs(t * dg[imax]) if nL > 0 else 0.0
    fstate[F_GSIZE] += change
    fstate[F_GERR] += _EPS * (change + fstate[F_GSIZE] + abs(t) * size)  # (see IncrementalSVM._note_margin_step)


@njit(cache=True, error_model="numpy")
def _at_margin(p, d, nL, dg, beta, beta_k, krow_p, kpp, size, a, C, y, st, g, slot, Spos, yS, Ks, Rw, istate, fstate):
    """``_update_sets``, "c_margin": the driven example reached the margin; it joins S unless it is at a bound."""
    m = istate[I_M]
    fstate[F_GERR] += abs(g[p])  # (see IncrementalSVM._update_sets)
    g[p] = 0.0
    if a[p] <= 0.0:
        a[p] = 0.0
        st[p] = SET_O
    elif a[p] >= C[p]:
        a[p] = C[p]
        st[p] = SET_E
    elif m == 0:
        istate[I_M] = _S_add(p, beta_k, 1.0, krow_p, nL, m, y, st, g, slot, Spos, yS, Ks, Rw)
    else:
        kappa_p = dg[p] * d  # kappa_p = gamma_p (eq. 17)
        for i in range(m + 1):
            beta_k[i] = beta[i] * d  # beta_p = (d beta) / d
        istate[I_M] = _S_add(p, beta_k, kappa_p, krow_p, nL, m, y, st, g, slot, Spos, yS, Ks, Rw)
        if kappa_p <= _ILL_CONDITIONED * (kpp + size):
            istate[I_REFRESH] = 1  # the drive is over: Python recomputes R on return


@njit(cache=True, error_model="numpy")
def _at_bound(p, mode, a, C, st):
    """``_update_sets``, "c_bound": the driven example reached its bound (C when learning, 0 otherwise)."""
    if mode == MODE_LEARN:
        a[p] = C[p]
        st[p] = SET_E
    else:
        a[p] = 0.0
        st[p] = SET_O


@njit(cache=True, error_model="numpy")
def _leave(k, zero, nL, beta, a, C, y, g, st, slot, Spos, yS, Ks, Rw, col, scale, watch, blocked, istate, fstate):
    """``_update_sets``, "leave": margin vector k reached C or 0 and leaves S (R by eq. 22); one that entered
    S in the previous iteration and would leave it again without progress is blocked (§4.2).
    Returns NEED_REFRESH when R must be recomputed, else _GO_ON."""
    up = beta[1 + slot[k]] > 0
    a[k] = C[k] if up else 0.0
    # its exact margin (held at 0 while in S) counts against the bound: see IncrementalSVM._update_sets
    acc = 0.0
    for j in range(nL):
        acc += Ks[slot[k], j] * (a[j] * y[j])
    fstate[F_GERR] += abs((acc + fstate[F_B]) * y[k] - fstate[F_OFFSET])
    m, refresh = _S_remove(k, nL, istate[I_M], scale, slot, Spos, yS, Ks, Rw, col)
    istate[I_M] = m
    st[k] = SET_E if up else SET_O
    g[k] = 0.0
    if zero == 1 and istate[I_PREV_KIND] == PREV_ENTER and istate[I_PREV_K] == k:
        _block(k, watch, blocked, istate)
    else:
        _unblock(watch, blocked, st, istate)
        watch[k] = 1.0 if up else -1.0
    _remember(istate, PREV_LEAVE, k, zero)
    return NEED_REFRESH if refresh else _GO_ON


@njit(cache=True, error_model="numpy")
def _reach_margin(
    k, zero, nL, y, st, g, slot, Spos, yS, Ks, Rw, KLL, has_kll, watch, blocked, istate, fstate, eta, beta_k, kappa_tol
):
    """``_update_sets``, "enter": an error or other vector reached the margin and enters S (``_enter``),
    unless it just left S without progress (blocked, §4.2).  Returns NEED_ROW (its kernel row comes
    from Python), NEED_REFRESH (R must be recomputed, before or after the entry), or _GO_ON."""
    fstate[F_GERR] += abs(g[k])  # (a step clipped at t = 0 leaves the margin it had: see IncrementalSVM._update_sets)
    g[k] = 0.0
    if zero == 1 and istate[I_PREV_KIND] == PREV_LEAVE and istate[I_PREV_K] == k:
        _block(k, watch, blocked, istate)  # it just left S with no progress: do not bring it back at once
        _remember(istate, PREV_BLOCKED, k, zero)
        return _GO_ON
    if not has_kll:  # its kernel row comes from Python (the kernel layer)
        istate[I_PENDING] = k
        istate[I_PENDING_ZERO] = zero
        istate[I_PENDING_FRESH] = 0
        return NEED_ROW
    m, outcome = _enter(
        k, KLL[k, :nL], nL, istate[I_M], y, st, g, slot, Spos, yS, Ks, Rw, eta, beta_k, kappa_tol, False
    )
    istate[I_M] = m
    if outcome == -1:  # decide with a fresh inverse: Python recomputes R, then the entry is finished
        istate[I_PENDING] = k
        istate[I_PENDING_ZERO] = zero
        istate[I_PENDING_FRESH] = 1
        return NEED_REFRESH
    return _after_enter(k, outcome, zero, watch, blocked, st, istate)


# (drive passes the solver's state to its compiled steps as Numba's flat positional arguments; one per line
# would hide the loop that mirrors IncrementalSVM._drive step for step, so the formatter leaves it as written)
# fmt: off
@njit(cache=True, error_model="numpy")
def drive(p, mode, krow_p, nL, y, st, g, a, pseq, slot, Spos, yS, Ks, Rw, KLL, has_kll, row_in, watch, blocked,
          cases, istate, fstate, C, scale, kappa_tol, max_iter, in_seq_order):
    """Minor iterations of one drive of a_p until it is over or Python is needed (see the module notes):
    the loop of ``IncrementalSVM._drive``, one compiled helper per step of it.

    ``C``: the upper bound of each learned position (C, or C w_y with class weights)."""
    capM = Spos.shape[0]
    d = 1.0 if mode == MODE_LEARN else -1.0
    yp_d = y[p] * d
    kpp = abs(krow_p[p])
    ykp_d = np.empty(nL)  # y_p d K_pj
    d_Qp = np.empty(nL)  # d Q_jp
    for j in range(nL):
        ykp_d[j] = yp_d * krow_p[j]
        d_Qp[j] = ykp_d[j] * y[j]
    dg = np.empty(nL)
    q = np.empty(nL)
    eta = np.empty(capM + 1)
    beta = np.empty(capM + 1)
    beta_k = np.empty(capM + 1)
    col = np.empty(capM + 1)
    aS = np.empty(capM)
    t3 = np.empty(capM)
    while True:
        m = istate[I_M]
        if m >= capM or istate[I_NCASES] >= cases.shape[0] - 1 or istate[I_NBLOCKED] >= blocked.shape[0] - 1:
            return GROW
        if istate[I_PENDING] >= 0:  # finish the entry of the previous iteration (its row or a fresh R was needed)
            code = _finish_entry(nL, y, st, g, slot, Spos, yS, Ks, Rw, KLL, has_kll, row_in, watch, blocked, istate,
                                 eta, beta_k, kappa_tol)
            if code != _GO_ON:
                return code
            continue
        if istate[I_ITERS] >= max_iter:
            return CAP
        istate[I_ITERS] += 1
        size, rounding = _sensitivities(m, nL, y, yp_d, ykp_d, d_Qp, a, Spos, yS, Ks, Rw, scale, eta, beta, dg, aS)
        if not math.isfinite(size):
            if istate[I_SENS_FRESH] == 1:
                return INEXACT_R
            istate[I_ITERS] -= 1  # a recursive update broke R: Python recomputes it, once; then this iteration again
            istate[I_SENS_FRESH] = 1
            return NEED_REFRESH
        if m > 0:
            istate[I_SENS_FRESH] = 0
        found, t, case, k = _largest_step(p, mode, m, nL, g, dg, a, C, beta, aS, t3, q, watch, pseq, Spos, kpp, size,
                                          rounding, kappa_tol, in_seq_order)
        if not found:
            return _no_step(p, mode, a, C, cases, istate)
        if not math.isfinite(t):
            fstate[F_BAD_T] = t
            return INEXACT_T
        _apply_step(p, m, nL, d, yp_d, t, a, aS, beta, C, Spos, g, dg, istate, fstate)
        _note_margin_step(dg, nL, t, size, fstate)
        cases[istate[I_NCASES]] = case
        istate[I_NCASES] += 1
        # ---- _update_sets (eqs. 15-17, 22; §4.2)
        zero = 1 if t == 0.0 else 0
        if case == CASE_C_MARGIN:
            _at_margin(p, d, nL, dg, beta, beta_k, krow_p, kpp, size, a, C, y, st, g, slot, Spos, yS, Ks, Rw, istate,
                       fstate)
            return DONE
        if case == CASE_C_BOUND:
            _at_bound(p, mode, a, C, st)
            return DONE
        if case == CASE_LEAVE:
            code = _leave(k, zero, nL, beta, a, C, y, g, st, slot, Spos, yS, Ks, Rw, col, scale, watch, blocked,
                          istate, fstate)
        else:
            code = _reach_margin(k, zero, nL, y, st, g, slot, Spos, yS, Ks, Rw, KLL, has_kll, watch, blocked, istate,
                                 fstate, eta, beta_k, kappa_tol)
        if code != _GO_ON:
            return code
# fmt: on


# ---- the checks after a learn / unlearn (``_after_update``, ``_certify``): one compiled pass each
@njit(cache=True, error_model="numpy")
def margin_drift(Ks, m, nL, a, y, b, yS, offset):
    """max_s |g_s| from the stored kernel rows of S (``_margin_drift``)."""
    worst = 0.0
    for s in range(m):
        acc = 0.0
        for j in range(nL):
            acc += Ks[s, j] * (a[j] * y[j])
        gs = (acc + b) * yS[s] - offset
        if abs(gs) > worst or math.isnan(gs):
            worst = abs(gs)
    return worst


@njit(cache=True, error_model="numpy")
def probe_drift(R, Ks, Spos, yS, v, m):
    """|R Q~ v - v| / |v| for the fixed probe v (``_probe_drift``), Q~ v without forming Q~."""
    if m == 0:
        return 0.0
    n = m + 1
    u = np.empty(n)
    u0 = 0.0
    for t in range(m):
        u0 += yS[t] * v[t + 1]
    u[0] = u0
    for s in range(m):
        acc = 0.0
        for t in range(m):
            acc += Ks[s, Spos[t]] * (yS[t] * v[t + 1])
        u[s + 1] = (acc + v[0]) * yS[s]
    worst = 0.0
    vmax = 0.0
    for i in range(n):
        acc = 0.0
        for j in range(n):
            acc += R[i, j] * u[j]
        r = abs(acc - v[i])
        if r > worst or math.isnan(r):
            worst = r
        if abs(v[i]) > vmax:
            vmax = abs(v[i])
    return worst / vmax


@njit(cache=True, error_model="numpy")
def max_violation(st, g, nL):
    """Largest KKT violation of the maintained margins by set (``_violations().max()``)."""
    worst = 0.0
    for j in range(nL):
        c = st[j]
        gj = g[j]
        if c == SET_S:
            v = abs(gj)
        elif c == SET_E:
            v = gj
        elif c == SET_O:
            v = -gj
        else:
            v = 0.0
        if v > worst or math.isnan(v):
            worst = v
    return worst


@njit(cache=True, error_model="numpy")
def gap_maintained(y, a, g, b, offset, C, nL):
    """LASVM's largest violating pair from the maintained margins (``_gap_maintained``); ``C``: the
    upper bound of each learned position."""
    g_up = -math.inf
    g_down = math.inf
    for j in range(nL):
        G = b - (g[j] + (offset - 1.0)) * y[j]
        eps = 1e-12 * C[j]
        below = a[j] < C[j] - eps
        above = a[j] > eps
        if y[j] > 0:
            up, down = below, above
        else:
            up, down = above, below
        if up and G > g_up:
            g_up = G
        if down and G < g_down:
            g_down = G
    if g_up == -math.inf or g_down == math.inf:
        return 0.0
    return max(0.0, g_up - g_down)


def warm_up() -> float:
    """Compile (or load from Numba's cache) the drive with the argument types the solver passes;
    returns the seconds it took.  Part of ``core.solvers._compile``'s plan (the app's background
    compile at its first start, ``make test``), so that a label does not wait for the compiler
    (several seconds; loading the cache: about one)."""
    import time

    from core.solvers.incremental import IncrementalSVM

    t0 = time.perf_counter()
    rng = np.random.default_rng(0)
    X = rng.normal(size=(24, 2))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=24) > 0, 1.0, -1.0)
    s = IncrementalSVM(X, kernel="rbf", C=10.0, gamma=0.5)
    for i in range(len(X)):
        s.learn(i, y[i])
    s.unlearn(0)
    return time.perf_counter() - t0
