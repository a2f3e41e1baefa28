"""Compiled minor iterations of the incremental solver (Numba).

``drive`` runs Algorithm 1 of Laskov et al. (2006) -- the loop of
``IncrementalSVM._drive`` -- in one compiled call: sensitivities (eqs. 7-9),
the largest step (eqs. 10-13, ties broken as ``_Event`` tuples are compared:
the shortest step, then the case, then the oldest example), the step (eqs. 6
and 8) and the bookkeeping of S with the recursive inverse (eqs. 15-17 and 22,
no immediate cycling, §4.2).  It is a line-for-line transcription of the NumPy
implementation in ``core/solvers/incremental.py`` (the docstrings there say
why each rule is what it is); the two agree up to rounding and take the same
set changes (tests/test_incremental_compiled.py runs both).

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
# istate / fstate slots
(I_M, I_ITERS, I_NCASES, I_NBLOCKED, I_MOVED, I_PREV_KIND, I_PREV_K, I_PREV_ZERO, I_PENDING, I_PENDING_ZERO,
 I_PENDING_FRESH, I_SENS_FRESH, I_REFRESH) = range(13)
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
def _after_enter(k, entered, watch, blocked, nblocked, st):
    """Watch list after an entry attempt (§4.2): unblock all when k entered S, else block k."""
    watch[k] = 0.0
    if entered:
        for i in range(nblocked):
            jb = blocked[i]
            if st[jb] == SET_E:
                watch[jb] = 1.0
            elif st[jb] == SET_O:
                watch[jb] = -1.0
        return 0
    blocked[nblocked] = k
    return nblocked + 1


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
def drive(p, mode, krow_p, nL, y, st, g, a, pseq, slot, Spos, yS, Ks, Rw, KLL, has_kll, row_in, watch, blocked,
          cases, istate, fstate, C, scale, kappa_tol, max_iter, in_seq_order):
    """Minor iterations of one drive of a_p until it is over or Python is needed (see the module notes).

    ``C``: the upper bound of each learned position (C, or C w_y with class weights)."""
    m = istate[I_M]
    iters = istate[I_ITERS]
    ncases = istate[I_NCASES]
    nblocked = istate[I_NBLOCKED]
    moved_any = istate[I_MOVED]
    pending_fresh = istate[I_PENDING_FRESH]  # R was recomputed for the pending entry
    sens_fresh = istate[I_SENS_FRESH]  # R was recomputed for this iteration's sensitivities
    prev_kind = istate[I_PREV_KIND]
    prev_k = istate[I_PREV_K]
    prev_zero = istate[I_PREV_ZERO]
    pending = istate[I_PENDING]  # an example whose entry into S waited for its kernel row (row_in)
    pending_zero = istate[I_PENDING_ZERO]
    b = fstate[F_B]
    g_size = fstate[F_GSIZE]
    g_err = fstate[F_GERR]
    capM = Spos.shape[0]
    d = 1.0 if mode == MODE_LEARN else -1.0
    yp_d = y[p] * d
    kpp = abs(krow_p[p])
    seq_p = pseq[p]
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
    code = DONE
    while True:
        if m >= capM or ncases >= cases.shape[0] - 1 or nblocked >= blocked.shape[0] - 1:
            code = GROW
            break
        if pending >= 0:  # finish the entry of the previous iteration (its row or a fresh R was needed)
            k = pending
            if has_kll:
                m, outcome = _enter(k, KLL[k, :nL], nL, m, y, st, g, slot, Spos, yS, Ks, Rw, eta, beta_k,
                                    kappa_tol, pending_fresh == 1)
            else:
                m, outcome = _enter(k, row_in, nL, m, y, st, g, slot, Spos, yS, Ks, Rw, eta, beta_k, kappa_tol,
                                    pending_fresh == 1)
            if outcome == -1:
                pending_fresh = 1
                code = NEED_REFRESH
                break
            nblocked = _after_enter(k, outcome > 0, watch, blocked, nblocked, st)
            prev_kind = PREV_ENTER
            prev_k = k
            prev_zero = pending_zero
            pending = -1
            pending_fresh = 0
            if outcome == 2:
                code = NEED_REFRESH
                break
            continue
        if iters >= max_iter:
            code = CAP
            break
        iters += 1
        # ---- sensitivities (eqs. 7-9); S empty: only b moves (§4.1)
        size = 0.0
        rounding = 0.0
        if m == 0:
            for j in range(nL):
                dg[j] = y[j] * yp_d
        else:
            eta[0] = yp_d
            for s in range(m):
                eta[s + 1] = d_Qp[Spos[s]]
            _minus_R_times(Rw, m + 1, eta, beta)
            asum = 0.0
            for s in range(m):
                asum += abs(beta[s + 1])
            size = scale * (1.0 + asum) + abs(beta[0])
            if not math.isfinite(size):
                if sens_fresh == 1:
                    code = INEXACT_R
                    break
                iters -= 1  # a recursive update broke R: Python recomputes it, once; then this iteration again
                sens_fresh = 1
                code = NEED_REFRESH
                break
            sens_fresh = 0
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
            rounding = 1e-11 * size
        # ---- the largest step (eqs. 10-13)
        has_best = False
        bt = 0.0
        bcase = 0
        bseq = 0
        bk = -1
        if mode != MODE_REMOVE:  # eq. 12
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
                bseq = seq_p
                bk = p
        if m > 0:
            t2 = C[p] - a[p] if mode == MODE_LEARN else a[p]  # eq. 13
            if (not has_best) or t2 < bt or (t2 == bt and 1 < bcase):
                has_best = True
                bt = t2
                bcase = CASE_C_BOUND
                bseq = seq_p
                bk = p
            # eq. 10: a margin vector reaches C (da > 0) or 0 (da < 0)
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
                    bt = tmin
                    bcase = CASE_LEAVE
                    bseq = seq3
                    bk = k3
        # eq. 11: an error or other vector reaches the margin; the smallest t is the largest q = g / dg
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
                has_best = True
                bt = tmin4
                bcase = CASE_ENTER
                bseq = pseq[k4]
                bk = k4
        if not has_best:
            # only when unlearning with S empty and nothing left to absorb a_p: rounding residue
            if mode == MODE_REMOVE and a[p] <= 1e-9 * C[p]:
                a[p] = 0.0
                cases[ncases] = CASE_RESIDUE
                ncases += 1
                code = DONE
            else:
                code = NOSTEP
            break
        if not math.isfinite(bt):
            fstate[F_BAD_T] = bt
            code = INEXACT_T
            break
        # ---- the step (eqs. 6 and 8)
        t = bt
        moved_any = 1
        if m == 0:
            b += yp_d * t
            for j in range(nL):
                g[j] += t * dg[j]
        else:
            a[p] += d * t
            for s in range(m):  # (clipped: margin vectors tied with the limiting one land on a bound)
                v = aS[s] + t * beta[s + 1]
                if v < 0.0:
                    v = 0.0
                if v > C[Spos[s]]:
                    v = C[Spos[s]]
                aS[s] = v
                a[Spos[s]] = v
            b += beta[0] * t
            for j in range(nL):
                g[j] += t * dg[j]
            for s in range(m):
                g[Spos[s]] = 0.0
        imax = 0
        for j in range(nL):
            if abs(dg[j]) > abs(dg[imax]):
                imax = j
        change = abs(t * dg[imax]) if nL > 0 else 0.0
        g_size += change
        g_err += _EPS * (change + g_size + abs(t) * size)  # (see IncrementalSVM._note_margin_step)
        cases[ncases] = bcase
        ncases += 1
        # ---- bookkeeping (eqs. 15-17, 22; §4.2)
        k = bk
        zero = 1 if t == 0.0 else 0
        if bcase == CASE_C_MARGIN:
            g_err += abs(g[p])  # (see IncrementalSVM._update_sets)
            g[p] = 0.0
            if a[p] <= 0.0:
                a[p] = 0.0
                st[p] = SET_O
            elif a[p] >= C[p]:
                a[p] = C[p]
                st[p] = SET_E
            elif m == 0:
                m = _S_add(p, beta_k, 1.0, krow_p, nL, m, y, st, g, slot, Spos, yS, Ks, Rw)
            else:
                kappa_p = dg[p] * d  # kappa_p = gamma_p (eq. 17)
                for i in range(m + 1):
                    beta_k[i] = beta[i] * d  # beta_p = (d beta) / d
                m = _S_add(p, beta_k, kappa_p, krow_p, nL, m, y, st, g, slot, Spos, yS, Ks, Rw)
                if kappa_p <= _ILL_CONDITIONED * (kpp + size):
                    istate[I_REFRESH] = 1  # the drive is over: Python recomputes R on return
            code = DONE
            break
        if bcase == CASE_C_BOUND:
            if mode == MODE_LEARN:
                a[p] = C[p]
                st[p] = SET_E
            else:
                a[p] = 0.0
                st[p] = SET_O
            code = DONE
            break
        if bcase == CASE_LEAVE:
            up = beta[1 + slot[k]] > 0
            a[k] = C[k] if up else 0.0
            # its exact margin (held at 0 while in S) counts against the bound: see IncrementalSVM._update_sets
            acc = 0.0
            for j in range(nL):
                acc += Ks[slot[k], j] * (a[j] * y[j])
            g_err += abs((acc + b) * y[k] - fstate[F_OFFSET])
            m, refresh = _S_remove(k, nL, m, scale, slot, Spos, yS, Ks, Rw, col)
            st[k] = SET_E if up else SET_O
            g[k] = 0.0
            if zero == 1 and prev_kind == PREV_ENTER and prev_k == k:
                watch[k] = 0.0  # block: it entered S last iteration and would leave again without progress
                blocked[nblocked] = k
                nblocked += 1
            else:
                for i in range(nblocked):  # unblock
                    jb = blocked[i]
                    if st[jb] == SET_E:
                        watch[jb] = 1.0
                    elif st[jb] == SET_O:
                        watch[jb] = -1.0
                nblocked = 0
                watch[k] = 1.0 if up else -1.0
            prev_kind = PREV_LEAVE
            prev_k = k
            prev_zero = zero
            if refresh:
                code = NEED_REFRESH
                break
            continue
        # bcase == CASE_ENTER
        g_err += abs(g[k])  # (a step clipped at t = 0 leaves the margin it had: see IncrementalSVM._update_sets)
        g[k] = 0.0
        if zero == 1 and prev_kind == PREV_LEAVE and prev_k == k:
            watch[k] = 0.0  # it just left S with no progress: do not bring it back at once
            blocked[nblocked] = k
            nblocked += 1
            prev_kind = PREV_BLOCKED
            prev_k = k
            prev_zero = zero
            continue
        # _enter: into S unless its kappa (eq. 17) is ~0 (dependent on the margin vectors)
        if not has_kll:  # its kernel row comes from Python (the kernel layer)
            pending = k
            pending_zero = zero
            pending_fresh = 0
            code = NEED_ROW
            break
        m, outcome = _enter(k, KLL[k, :nL], nL, m, y, st, g, slot, Spos, yS, Ks, Rw, eta, beta_k, kappa_tol, False)
        if outcome == -1:  # decide with a fresh inverse: Python recomputes R, then the entry is finished
            pending = k
            pending_zero = zero
            pending_fresh = 1
            code = NEED_REFRESH
            break
        nblocked = _after_enter(k, outcome > 0, watch, blocked, nblocked, st)
        prev_kind = PREV_ENTER
        prev_k = k
        prev_zero = zero
        if outcome == 2:
            code = NEED_REFRESH
            break
    istate[I_M] = m
    istate[I_ITERS] = iters
    istate[I_NCASES] = ncases
    istate[I_NBLOCKED] = nblocked
    istate[I_MOVED] = moved_any
    istate[I_PENDING_FRESH] = pending_fresh
    istate[I_SENS_FRESH] = sens_fresh
    istate[I_PREV_KIND] = prev_kind
    istate[I_PREV_K] = prev_k
    istate[I_PREV_ZERO] = prev_zero
    istate[I_PENDING] = pending
    istate[I_PENDING_ZERO] = pending_zero
    fstate[F_B] = b
    fstate[F_GSIZE] = g_size
    fstate[F_GERR] = g_err
    return code


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

