"""Compiled inner loops of the LASVM solver (see ``core.solvers.lasvm``).

The solver keeps its current set S in arrays indexed by *position*
(0..n-1; positions 0..na-1 are not shrunk) and its kernel values in a row
cache: ``R[slot]`` holds the kernel row K(x_s, x_t) of one member s for every
position t < n.  The functions here change those arrays in place; they never
compute a kernel value.  When a step needs a row that is not cached, the
engine (``run``) stops, puts the member's position in ``st[REQUEST]`` and
returns ``NEED_ROW``; the solver computes the row through the kernel layer,
stores it with ``put_row`` and calls ``run`` again, which resumes where it
stopped (the phase and counters live in ``st``).  So results never depend on
what the cache holds, only on the kernel values.  (Likewise ``NEED_NEW_ROW``:
a new example's row K(x, S) that the caller's block lacks, and
``NEED_GRADIENTS``: gradients of shrunk members, which the caller recomputes.)

Arrays (capacity ``cap`` >= n):

* ``M``  float64 (N_FLOAT, cap): per member alpha, g, y, A, B, K(s, s), |x_s|^2
  and a scratch row (``ACC``, partial sums of ``gradients_from_rows``).
* ``MI`` int64 (N_INT, cap): per member its store index, its row's slot (-1:
  not cached), its column in the current block of new rows (``run`` with
  ``OP_PROCESS``) and a scratch row.
* ``XS`` float64 (cap, d): the members' feature vectors (for the kernel
  layer's calls; moved with the members).
* ``pos`` int64 (store size): store index -> position in S, -1 outside S.
* ``R`` float64 (n_slots, cap) and ``SL`` int64 (3, n_slots): the cached rows,
  the position owning each slot (-1: free), its last use (LRU) and a stack
  of the free slots (``SL[FREE, :st[N_FREE]]``).
* ``st`` int64 and ``fs`` float64: scalars (sizes, extremes, phases, counters;
  b, delta and the parameters).

Sums over members are taken one term at a time in increasing position (no
BLAS, no reordering), so a gradient is the same number whichever way its
kernel values were obtained.  Nothing here uses fast-math.
"""

from __future__ import annotations

import numpy as np
from numba import njit

# rows of M
ALPHA, G, Y, LO, HI, KDIAG, SQ, ACC = range(8)
N_FLOAT = 8
# rows of MI
STORE, SLOT, COL, SCRATCH = range(4)
N_INT = 4
# rows of SL
OWNER, STAMP, FREE = 0, 1, 2
# entries of st
(
    N,
    NA,
    CLOCK,
    EXT_OK,
    EXT_I,
    EXT_J,
    REQUEST,
    PHASE,
    CURSOR,
    STEPS,
    PASSES,
    SINCE_SHRINK,
    SHRINK_EVERY,
    UNSHRUNK_NEAR,
    MAX_ITER,
    SHRINKING,
    STEPS_BEFORE,
    GRAD_FROM,
    AFTER,
    STEPPED,
    N_FREE,
    N_ST,
) = range(22)
# entries of fs
B, DELTA, C, TOL, FLOOR, C_NEG, N_FS = range(7)  # C: the positives' box C w_+, C_NEG: C w_-

# run(): operations and results
OP_PROCESS, OP_REPROCESS_UNTIL_TAU = range(2)
DONE, NEED_ROW, DONE_MAX_ITER, DONE_NAN, DONE_NO_PAIR, NEED_NEW_ROW, NEED_GRADIENTS = range(7)
# phases of OP_PROCESS (per item) and OP_REPROCESS_UNTIL_TAU
PH_PROCESS, PH_REPROCESS = 0, 1
PH_LOOP, PH_IN_PASS, PH_UNSHRINK = 0, 1, 2
# what follows an unshrink in OP_REPROCESS_UNTIL_TAU
AFTER_OPTIMAL, AFTER_NEAR, AFTER_MAX_ITER, AFTER_NAN = range(4)


# ----------------------------------------------------------------------
# extremes, bias, gradients
# ----------------------------------------------------------------------
@njit(cache=True)
def extremes(M, na):
    """(i, j) of §3.2: i = argmax g_s over alpha_s < B_s, j = argmin g_s over alpha_s > A_s (s < na).

    -1 where no member can move that way.  Ties go to the earlier position; a
    NaN gradient wins (as numpy's argmax / argmin), so NaN reaches delta.
    """
    alpha, g, lo, hi = M[ALPHA], M[G], M[LO], M[HI]
    i, j = -1, -1
    gi, gj = -np.inf, np.inf
    i_nan, j_nan = False, False
    for s in range(na):
        gs = g[s]
        if alpha[s] < hi[s] and not i_nan:
            if gs != gs:
                i, i_nan = s, True
            elif gs > gi:
                i, gi = s, gs
        if alpha[s] > lo[s] and not j_nan:
            if gs != gs:
                j, j_nan = s, True
            elif gs < gj:
                j, gj = s, gs
    if i >= 0 and gi == -np.inf and not i_nan:
        i = -1
    if j >= 0 and gj == np.inf and not j_nan:
        j = -1
    return i, j


@njit(cache=True)
def current_extremes(M, st):
    if st[EXT_OK] == 0:
        i, j = extremes(M, st[NA])
        st[EXT_I], st[EXT_J], st[EXT_OK] = i, j, 1
    return st[EXT_I], st[EXT_J]


@njit(cache=True)
def set_bias(M, fs, i, j):
    """b and delta of eq. 10 from the extreme pair (one-sided when a side is empty)."""
    g = M[G]
    if i >= 0 and j >= 0:
        fs[B] = 0.5 * (g[i] + g[j])
        fs[DELTA] = g[i] - g[j]
    elif i >= 0:  # nothing can decrease (e.g. one class only): b in [g_i, +inf)
        fs[B] = g[i]
        fs[DELTA] = 0.0
    elif j >= 0:  # nothing can increase: b in (-inf, g_j]
        fs[B] = g[j]
        fs[DELTA] = 0.0
    else:
        fs[DELTA] = 0.0


@njit(cache=True)
def gradient_of(row, alpha, n, y):
    """g = y - sum_t alpha_t K(x, x_t) over positions t < n in increasing order (terms with alpha_t = 0 skipped)."""
    acc = 0.0
    for t in range(n):
        a = alpha[t]
        if a != 0.0:
            acc += a * row[t]
    return y - acc


@njit(cache=True)
def gradients_of_rows(K, coef, out):
    """out[r] = sum_t coef_t K[r, t], one term at a time in increasing t (the same sums as ``gradient_of``)."""
    for r in range(K.shape[0]):
        acc = 0.0
        for t in range(K.shape[1]):
            acc += coef[t] * K[r, t]
        out[r] = acc


@njit(cache=True)
def block_scores(block, rows, cols, extra, extra_col, coef, out):
    """``gradients_of_rows`` over kernel values partly kept in ``block`` (the final check's).

    out[r] = sum_t coef_t K_rt, t in increasing order, with K_rt =
    block[rows[r], cols[t]] where cols[t] >= 0, else extra[r, extra_col[t]]
    (every rows[r] must be >= 0).
    """
    for r in range(len(rows)):
        br = rows[r]
        acc = 0.0
        for t in range(len(cols)):
            bc = cols[t]
            if bc >= 0:
                acc += coef[t] * block[br, bc]
            else:
                acc += coef[t] * extra[r, extra_col[t]]
        out[r] = acc


# ----------------------------------------------------------------------
# the row cache
# ----------------------------------------------------------------------
@njit(cache=True)
def touch(SL, st, slot):
    st[CLOCK] += 1
    SL[STAMP, slot] = st[CLOCK]


@njit(cache=True)
def take_slot(MI, SL, st, p):
    """A slot for the row of position p: a free one, else the least recently used one."""
    if st[N_FREE] > 0:
        st[N_FREE] -= 1
        best = SL[FREE, st[N_FREE]]
    else:
        best = 0
        for s in range(1, SL.shape[1]):
            if SL[STAMP, s] < SL[STAMP, best]:
                best = s
        MI[SLOT, SL[OWNER, best]] = -1
    SL[OWNER, best] = p
    MI[SLOT, p] = best
    touch(SL, st, best)
    return best


@njit(cache=True)
def put_row(M, MI, R, SL, st, p, row):
    """Cache the kernel row K(x_p, x_t), t < n, of position p (its diagonal entry is K(s, s) as kept)."""
    n = st[N]
    slot = take_slot(MI, SL, st, p)
    for t in range(n):
        R[slot, t] = row[t]
    R[slot, p] = M[KDIAG, p]


@njit(cache=True)
def free_slot(MI, SL, st, p):
    slot = MI[SLOT, p]
    if slot >= 0:
        SL[OWNER, slot] = -1
        SL[STAMP, slot] = -1
        MI[SLOT, p] = -1
        SL[FREE, st[N_FREE]] = slot
        st[N_FREE] += 1


# ----------------------------------------------------------------------
# S: insert, move, swap, remove
# ----------------------------------------------------------------------
@njit(cache=True)
def insert(M, MI, XS, pos, R, SL, st, fs, k, y, row, k_kk, g_k, xk, sq_k, col):
    """Add store example k to S at position n with alpha = 0 (PROCESS step 2).

    ``row`` holds K(x_k, x_t) for t < n and ``g_k`` its gradient.  Every
    cached row gains the entry K(x_s, x_k) = K(x_k, x_s) (the kernel is
    symmetric), and k's own row is cached.
    """
    n = st[N]
    M[ALPHA, n] = 0.0
    M[G, n] = g_k
    M[Y, n] = y
    if y > 0:  # alpha = 0 = A_k: can only go up
        M[LO, n], M[HI, n] = 0.0, fs[C]
    else:  # alpha = 0 = B_k: can only go down
        M[LO, n], M[HI, n] = -fs[C_NEG], 0.0
    M[KDIAG, n] = k_kk
    M[SQ, n] = sq_k
    MI[STORE, n] = k
    MI[SLOT, n] = -1
    MI[COL, n] = col
    XS[n, :] = xk
    pos[k] = n
    for s in range(SL.shape[1]):
        p = SL[OWNER, s]
        if p >= 0:
            R[s, n] = row[p]
    slot = take_slot(MI, SL, st, n)
    for t in range(n):
        R[slot, t] = row[t]
    R[slot, n] = k_kk
    st[N] = n + 1
    st[NA] = n + 1
    if st[EXT_OK] == 1:
        # the extremes over S + {k} follow from those over S: k can only move
        # up (y_k = +1) or only down (y_k = -1); on a tie the earlier position
        # wins, as in ``extremes``
        i, j = st[EXT_I], st[EXT_J]
        if y > 0 and (i < 0 or g_k > M[G, i]):
            st[EXT_I] = n
        elif y < 0 and (j < 0 or g_k < M[G, j]):
            st[EXT_J] = n


@njit(cache=True)
def insert_all(M, MI, XS, pos, R, SL, st, fs, ks, ys, K, k_diag, X, sq):
    """Add ks[t] to S in order with alpha = 0 (PROCESS step 2 for each, no pairing).

    ``K[t]`` holds K(x_{ks[t]}, x_p) for the members p at the start
    (columns < n) and for the newcomers (columns n + t').  The state is the
    one ``insert`` one at a time gives (rows are written a row at a time, not
    a column at a time).
    """
    n0 = st[N]
    m = len(ks)
    alpha = M[ALPHA]
    for t in range(m):  # members, gradients (alpha = 0 for every newcomer) and extremes, in order
        p = n0 + t
        k, y = ks[t], ys[t]
        g_k = gradient_of(K[t], alpha, n0, y)
        M[ALPHA, p] = 0.0
        M[G, p] = g_k
        M[Y, p] = y
        if y > 0:
            M[LO, p], M[HI, p] = 0.0, fs[C]
        else:
            M[LO, p], M[HI, p] = -fs[C_NEG], 0.0
        M[KDIAG, p] = k_diag[t]
        M[SQ, p] = sq[k]
        MI[STORE, p] = k
        MI[SLOT, p] = -1
        MI[COL, p] = -1
        XS[p, :] = X[k]
        pos[k] = p
        st[N] = p + 1
        st[NA] = p + 1
        if st[EXT_OK] == 1:
            i, j = st[EXT_I], st[EXT_J]
            if y > 0 and (i < 0 or g_k > M[G, i]):
                st[EXT_I] = p
            elif y < 0 and (j < 0 or g_k < M[G, j]):
                st[EXT_J] = p
    for s in range(SL.shape[1]):  # cached rows gain K(x_s, x_k) = K(x_k, x_s)
        q = SL[OWNER, s]
        if q >= 0:
            for t in range(m):
                R[s, n0 + t] = K[t, q]
    for t in range(m):  # the newcomers' own rows
        p = n0 + t
        slot = take_slot(MI, SL, st, p)
        for c in range(n0 + m):
            R[slot, c] = K[t, c]
        R[slot, p] = k_diag[t]


@njit(cache=True)
def gather(block, rows, cols, out):
    """out[r, c] = block[rows[r], cols[c]] where both are >= 0 (the other entries are left as they are)."""
    for r in range(len(rows)):
        br = rows[r]
        if br < 0:
            continue
        for c in range(len(cols)):
            bc = cols[c]
            if bc >= 0:
                out[r, c] = block[br, bc]


@njit(cache=True)
def move(M, MI, XS, pos, R, SL, src, dst):
    """Copy everything of position src into the free position dst (columns of the cached rows too)."""
    n_slots = SL.shape[1]
    for r in range(ACC):  # (not the scratch rows)
        M[r, dst] = M[r, src]
    for r in range(SCRATCH):
        MI[r, dst] = MI[r, src]
    XS[dst, :] = XS[src, :]
    pos[MI[STORE, dst]] = dst
    slot = MI[SLOT, dst]
    if slot >= 0:
        SL[OWNER, slot] = dst
    MI[SLOT, src] = -1
    for s in range(n_slots):
        if SL[OWNER, s] >= 0:
            R[s, dst] = R[s, src]


@njit(cache=True)
def swap(M, MI, XS, pos, R, SL, st, p, q):
    if p == q:
        return
    for r in range(ACC):  # (not the scratch rows)
        M[r, p], M[r, q] = M[r, q], M[r, p]
    for r in range(SCRATCH):
        MI[r, p], MI[r, q] = MI[r, q], MI[r, p]
    for c in range(XS.shape[1]):
        XS[p, c], XS[q, c] = XS[q, c], XS[p, c]
    pos[MI[STORE, p]] = p
    pos[MI[STORE, q]] = q
    if MI[SLOT, p] >= 0:
        SL[OWNER, MI[SLOT, p]] = p
    if MI[SLOT, q] >= 0:
        SL[OWNER, MI[SLOT, q]] = q
    for s in range(SL.shape[1]):
        if SL[OWNER, s] >= 0:
            R[s, p], R[s, q] = R[s, q], R[s, p]
    st[EXT_OK] = 0


@njit(cache=True)
def remove(M, MI, XS, pos, R, SL, st, p):
    """Take position p out of S (its coefficient must be 0); the last members fill the hole.

    The extremes stay the same members unless p was one of them (the blatant
    non-support vectors of REPROCESS never are): only the member that moves
    from na - 1 into p changes position (extremes are never shrunk).
    """
    pos[MI[STORE, p]] = -1
    free_slot(MI, SL, st, p)
    na, n = st[NA], st[N]
    if p < na:
        if p != na - 1:
            move(M, MI, XS, pos, R, SL, na - 1, p)
        if na - 1 != n - 1:
            move(M, MI, XS, pos, R, SL, n - 1, na - 1)
        st[NA] = na - 1
        if st[EXT_OK] == 1 and st[EXT_I] != p and st[EXT_J] != p:
            if st[EXT_I] == na - 1:
                st[EXT_I] = p
            if st[EXT_J] == na - 1:
                st[EXT_J] = p
        else:
            st[EXT_OK] = 0
    else:
        if p != n - 1:
            move(M, MI, XS, pos, R, SL, n - 1, p)
        st[EXT_OK] = 0
    st[N] = n - 1


# ----------------------------------------------------------------------
# the direction search of §3.2 and REPROCESS's removals
# ----------------------------------------------------------------------
@njit(cache=True)
def pair_step(M, R, MI, st, fs, i, j):
    """alpha_i += lambda, alpha_j -= lambda and g_s -= lambda (K_is - K_js) for s < na (§3.2).

    The rows of i and j must be cached.  The new extremes are found in the
    same pass over S as the gradient update.
    """
    alpha, g, lo, hi, kd = M[ALPHA], M[G], M[LO], M[HI], M[KDIAG]
    Ki, Kj = R[MI[SLOT, i]], R[MI[SLOT, j]]
    curvature = kd[i] + kd[j] - 2.0 * Ki[j]
    if not curvature > fs[FLOOR]:  # curvature guard (see the solver's docstring)
        curvature = fs[FLOOR]
    a_i, a_j = alpha[i], alpha[j]
    hi_i, lo_j = hi[i], lo[j]
    room_i = hi_i - a_i
    room_j = a_j - lo_j
    lam = (g[i] - g[j]) / curvature
    if room_i < lam:
        lam = room_i
    if room_j < lam:
        lam = room_j
    # coefficients that reach a bound are set to it exactly, so that
    # "alpha_s = 0" of the removal test and the bound tests stay exact
    alpha[i] = hi_i if lam >= room_i else a_i + lam
    alpha[j] = lo_j if lam >= room_j else a_j - lam
    na = st[NA]
    ni, nj = -1, -1
    gi, gj = -np.inf, np.inf
    i_nan, j_nan = False, False
    for s in range(na):
        d = Ki[s] - Kj[s]
        d *= lam
        gs = g[s] - d
        g[s] = gs
        if alpha[s] < hi[s] and not i_nan:
            if gs != gs:
                ni, i_nan = s, True
            elif gs > gi:
                ni, gi = s, gs
        if alpha[s] > lo[s] and not j_nan:
            if gs != gs:
                nj, j_nan = s, True
            elif gs < gj:
                nj, gj = s, gs
    if ni >= 0 and gi == -np.inf and not i_nan:
        ni = -1
    if nj >= 0 and gj == np.inf and not j_nan:
        nj = -1
    st[EXT_I], st[EXT_J], st[EXT_OK] = ni, nj, 1


@njit(cache=True)
def remove_blatant(M, MI, XS, pos, R, SL, st, i, j):
    """REPROCESS step 4: drop s with alpha_s = 0 and y_s = -1, g_s >= g_i or y_s = +1, g_s <= g_j.

    A criterion whose extreme does not exist (no member can move that way) is
    not applied, so a single-class S is kept.  i and j themselves are never
    dropped.  Highest position first, so members moved into a hole have been
    looked at already.
    """
    alpha, g, ys = M[ALPHA], M[G], M[Y]
    g_i = g[i] if i >= 0 else np.inf
    g_j = g[j] if j >= 0 else -np.inf
    drop = MI[SCRATCH]
    m = 0
    for s in range(st[NA]):
        if alpha[s] == 0.0 and ((g[s] >= g_i) if ys[s] < 0 else (g[s] <= g_j)):
            drop[m] = s
            m += 1
    for t in range(m - 1, -1, -1):
        remove(M, MI, XS, pos, R, SL, st, drop[t])
    return m


@njit(cache=True)
def reprocess(M, MI, XS, pos, R, SL, st, fs):
    """LASVM REPROCESS (§3.2): 1 if a step was taken, 0 if not, -1 if a row is needed first (st[REQUEST]).

    b and delta (eq. 10) are also refreshed when REPROCESS bails out: the
    finishing loop "repeat REPROCESS until delta <= tau" needs the current
    delta either way.
    """
    i, j = current_extremes(M, st)  # 1)
    g = M[G]
    if i < 0 or j < 0 or not g[i] - g[j] > fs[TOL]:  # 2) bail out
        set_bias(M, fs, i, j)
        return 0
    if MI[SLOT, i] < 0:
        st[REQUEST] = i
        return -1
    touch(SL, st, MI[SLOT, i])
    if MI[SLOT, j] < 0:
        st[REQUEST] = j
        return -1
    touch(SL, st, MI[SLOT, j])
    pair_step(M, R, MI, st, fs, i, j)  # 3)
    i, j = st[EXT_I], st[EXT_J]  # 4) new extremes ...
    set_bias(M, fs, i, j)  # 5) eq. 10 with g_i, g_j of step 4 (taken before positions move)
    remove_blatant(M, MI, XS, pos, R, SL, st, i, j)  # 4) ... and removal of blatant non support vectors
    return 1


@njit(cache=True)
def process(M, MI, XS, pos, R, SL, st, fs, k, y, row, k_kk, xk, sq_k, col):
    """LASVM PROCESS(k) (§3.2) with K(x_k, x_t), t < n, in ``row``: 1 / 0 / -1 as ``reprocess``."""
    if pos[k] >= 0:  # 1) bail out if k in S
        return 0
    n = st[N]
    g = M[G]
    g_k = gradient_of(row, M[ALPHA], n, y)  # 2) g_k = y_k - sum_s alpha_s K_ks
    i, j = current_extremes(M, st)  # 3) pair k with the extreme of the other side
    if y > 0:
        partner = j
        violating = j >= 0 and g_k - g[j] > fs[TOL]
    else:
        partner = i
        violating = i >= 0 and g[i] - g_k > fs[TOL]
    if violating:  # (4) bail out if not a tau-violating pair: then no row of the partner is needed)
        if MI[SLOT, partner] < 0:
            st[REQUEST] = partner
            return -1
        touch(SL, st, MI[SLOT, partner])
    insert(M, MI, XS, pos, R, SL, st, fs, k, y, row, k_kk, g_k, xk, sq_k, col)  # 2) S = S + {k}
    if not violating:
        return 0
    if y > 0:  # 5) direction search
        pair_step(M, R, MI, st, fs, n, partner)
    else:
        pair_step(M, R, MI, st, fs, partner, n)
    return 1


@njit(cache=True)
def shrink(M, MI, XS, pos, R, SL, st):
    """Set aside bounded active members whose gradient is beyond the current extremes (LIBSVM-style)."""
    i, j = current_extremes(M, st)
    if i < 0 or j < 0:
        return
    alpha, g, lo, hi = M[ALPHA], M[G], M[LO], M[HI]
    g_max, g_min = g[i], g[j]
    for p in range(st[NA] - 1, -1, -1):
        only_down = alpha[p] >= hi[p]  # at B: can only decrease
        only_up = alpha[p] <= lo[p]  # at A: can only increase
        if (only_down and g[p] > g_max) or (only_up and g[p] < g_min):
            swap(M, MI, XS, pos, R, SL, st, p, st[NA] - 1)
            st[NA] -= 1
    st[EXT_OK] = 0


# ----------------------------------------------------------------------
# gradients recomputed from the kernel rows
# ----------------------------------------------------------------------
@njit(cache=True)
def gradients_from_rows(M, MI, R, targets, sv):
    """g_s = y_s - sum_t alpha_t K_st for the positions s in ``targets``, from cached rows; the others are listed.

    ``sv`` lists the positions t with alpha_t != 0 in increasing order.  A
    target whose own row is cached is summed along it; when every support
    vector's row is cached, the other targets are summed along those rows.
    Either way each sum runs over t in increasing position (as
    ``gradient_of`` and ``gradients_of_rows`` do).  Returns the targets left
    (neither their row nor every support vector's row cached), in order.
    """
    alpha, g, ys, acc = M[ALPHA], M[G], M[Y], M[ACC]
    all_sv = True
    for t in sv:
        if MI[SLOT, t] < 0:
            all_sv = False
            break
    left = np.empty(len(targets), dtype=np.int64)
    n_left = 0
    for s in targets:
        slot = MI[SLOT, s]
        if slot >= 0:
            row = R[slot]
            total = 0.0
            for t in sv:
                total += alpha[t] * row[t]
            g[s] = ys[s] - total
        else:
            left[n_left] = s
            n_left += 1
    if all_sv and n_left > 0:
        for r in range(n_left):
            acc[left[r]] = 0.0
        for t in sv:
            at = alpha[t]
            row = R[MI[SLOT, t]]
            for r in range(n_left):
                acc[left[r]] += at * row[left[r]]
        for r in range(n_left):
            g[left[r]] = ys[left[r]] - acc[left[r]]
        n_left = 0
    return left[:n_left]


# ----------------------------------------------------------------------
# the engine
# ----------------------------------------------------------------------
@njit(cache=True)
def run(op, M, MI, XS, pos, R, SL, st, fs, X, sq, items, labels, block, k_diag, row):
    """Run an operation until it is done or needs a kernel row (NEED_ROW, position in st[REQUEST]).

    * OP_PROCESS: for each ``items[t]`` (label ``labels[t]``, K(x, x) ``k_diag[t]``)
      from st[CURSOR] on, PROCESS then one REPROCESS (one online LASVM
      iteration).  ``block[t, MI[COL, p]]`` holds K(x_{items[t]}, x_{S_p})
      for every member p (columns given by the caller for the members at
      the start, and ``block.shape[1] - len(items) + t`` for items[t] once
      it has entered S).  A NaN ``k_diag[t]`` means that row has not been
      computed (items[t] was in S when the block was made): when it is
      needed, the engine returns NEED_NEW_ROW with t in st[REQUEST].
      st[STEPS] counts the steps taken.
    * OP_REPROCESS_UNTIL_TAU: REPROCESS until delta <= tau with shrinking
      (st[SHRINKING]) every st[SHRINK_EVERY] passes; at most st[MAX_ITER]
      steps (counting st[STEPS_BEFORE]) and passes.  To bring shrunk members
      back it returns NEED_GRADIENTS: the caller recomputes the gradients of
      positions >= st[GRAD_FROM], sets st[NA] = st[N] and calls again.

    ``row`` is scratch (capacity); ``X``, ``sq`` the store's examples and squared norms.
    """
    if op == OP_PROCESS:
        first_new = block.shape[1] - len(items)
        while st[CURSOR] < len(items):
            t = st[CURSOR]
            if st[PHASE] == PH_PROCESS:
                k = items[t]
                if pos[k] < 0:
                    if k_diag[t] != k_diag[t]:  # (NaN: the caller has not computed this row yet)
                        st[REQUEST] = t
                        return NEED_NEW_ROW
                    n = st[N]
                    cols = MI[COL]
                    for p in range(n):
                        row[p] = block[t, cols[p]]
                    r = process(M, MI, XS, pos, R, SL, st, fs, k, labels[t], row, k_diag[t], X[k], sq[k], first_new + t)
                    if r < 0:
                        return NEED_ROW
                    st[STEPS] += r
                st[PHASE] = PH_REPROCESS
            r = reprocess(M, MI, XS, pos, R, SL, st, fs)
            if r < 0:
                return NEED_ROW
            st[STEPS] += r
            st[PHASE] = PH_PROCESS
            st[CURSOR] = t + 1
        return DONE
    # OP_REPROCESS_UNTIL_TAU
    while True:
        if st[PHASE] == PH_UNSHRINK:  # (the caller has recomputed the gradients of the shrunk members)
            st[EXT_OK] = 0
            st[PHASE] = PH_LOOP
            after = st[AFTER]
            if after == AFTER_MAX_ITER:
                i, j = current_extremes(M, st)
                set_bias(M, fs, i, j)
                return DONE_MAX_ITER
            if after == AFTER_NAN:
                return DONE_NAN
            if after == AFTER_OPTIMAL:
                i, j = current_extremes(M, st)
                set_bias(M, fs, i, j)
                if fs[DELTA] <= fs[TOL]:
                    return DONE
            else:  # AFTER_NEAR
                st[UNSHRUNK_NEAR] = 1
            if st[STEPPED] == 0 and fs[DELTA] > fs[TOL]:  # cannot happen; guards an endless loop
                return DONE_NO_PAIR
            if st[STEPPED] == 0 and not fs[DELTA] <= fs[TOL]:  # delta is NaN: no step will ever be taken
                return DONE_NAN
        if st[PHASE] == PH_LOOP:
            st[PASSES] += 1  # (every pass counts towards the cap, also one that takes no step)
            if st[STEPS_BEFORE] + st[STEPS] >= st[MAX_ITER] or st[PASSES] > st[MAX_ITER]:
                if st[NA] < st[N]:
                    st[GRAD_FROM], st[AFTER], st[PHASE] = st[NA], AFTER_MAX_ITER, PH_UNSHRINK
                    return NEED_GRADIENTS
                i, j = current_extremes(M, st)
                set_bias(M, fs, i, j)
                return DONE_MAX_ITER
            if st[SHRINKING] == 1 and st[SINCE_SHRINK] >= st[SHRINK_EVERY]:
                shrink(M, MI, XS, pos, R, SL, st)
                st[SINCE_SHRINK] = 0
            st[PHASE] = PH_IN_PASS
        r = reprocess(M, MI, XS, pos, R, SL, st, fs)
        if r < 0:
            return NEED_ROW
        st[PHASE] = PH_LOOP
        st[STEPS] += r
        st[STEPPED] = r
        st[SINCE_SHRINK] += 1
        delta, tol = fs[DELTA], fs[TOL]
        if delta <= tol:
            if st[NA] == st[N]:
                return DONE
            st[GRAD_FROM], st[AFTER], st[PHASE] = st[NA], AFTER_OPTIMAL, PH_UNSHRINK
            return NEED_GRADIENTS
        elif st[UNSHRUNK_NEAR] == 0 and st[NA] < st[N] and delta <= 10.0 * tol:
            # once near the end, as LIBSVM does
            st[GRAD_FROM], st[AFTER], st[PHASE] = st[NA], AFTER_NEAR, PH_UNSHRINK
            return NEED_GRADIENTS
        if r == 0 and delta > tol:  # cannot happen; guards an endless loop
            return DONE_NO_PAIR
        if r == 0 and not delta <= tol:  # delta is NaN: no step will ever be taken
            if st[NA] < st[N]:
                st[GRAD_FROM], st[AFTER], st[PHASE] = st[NA], AFTER_NAN, PH_UNSHRINK
                return NEED_GRADIENTS
            return DONE_NAN
