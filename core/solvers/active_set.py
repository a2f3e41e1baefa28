"""Active-set SVM after Scheinberg's INCAS method.

K. Scheinberg, "An efficient implementation of an active set method for SVMs",
JMLR 7 (2006).  The paper is cited by its steps ("Step 1", "Step 2"); the
equation numbers of the paper are not reproduced here.

Problem (the C-SVC dual of ``core.solvers.base``, written as a minimisation)::

    min_a  1/2 a^T Q a + lin^T a      Q_ij = y_i y_j K_ij,  lin = -e
    s.t.   y^T a = 0,  0 <= a <= C

(with class weights, ``class_weight``: 0 <= a_i <= C_i = C w_{y_i}, one bound per example, kept per
slot; Ic holds the variables at their own bound and the ratio test of Step 1 stops each variable at
its own — see ``base.ClassWeights``)

The learned examples are partitioned into

* I0 — a_i = 0,  Ic — a_i = C  (the *bounded* variables), and
* Is — the free variables, 0 <= a_i <= C, whose reduced problem is solved
  exactly.

The method, step by step (the derivations and every deviation from the paper:
docs/solvers/active_set.md):

* Step 1, the reduced problem with the bounded variables fixed (``_step1``; the bordered
  move along one direction after an entry, ``_enter``);
* Step 2, pricing the bounded variables, with shrinking (``_price``);
* the factor H_ss = Q_ss + rho y_s y_s^T = R^T R, updated and never refactorised
  (``_append_free``, ``_drop_free``, ``factor_error``), and the semi-definite case
  (a dependent variable moves along v without entering the factor);
* incremental mode (``learn``, ``learn_many``, ``unlearn``), the bias (``_settle_bias``),
  the tolerance and its rounding floor (``_threshold``, ``_certify``), the compiled loops
  (``core.solvers._active_set_jit``) and what ``n_iter_`` counts.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
from scipy.linalg import blas, qr_delete

from core.solvers.auto_hyper import AutoHyper
from core.solvers.base import ClassWeights, NumericalError, OnlineSolver, StepResult, StepTimer, admissible_bias
from core.threads import single_threaded_blas

I0, IS, IC, REMOVED = 0, 1, 2, -1  # partition codes per learned example
_GIVENS_IN_PYTHON = 2  # tails up to this length are rotated in Python (cheaper than the call overhead)
_SHRINK_MIN_FREE = 32  # selective pricing only pays with a free set at least this large
_EPS = float(np.finfo(float).eps)
_ROUNDING = 64 * _EPS
_MAX_BORDERED_MOVES = 32  # a fresh Step 1 solve confirms the optimum after this many bordered moves
_TINY = 1e-200  # |direction| floor in ratio tests: C / _TINY is finite and larger than any step
_NOISE_FACTOR = 1e4  # pricing ignores violations below this many rounding errors of f (see _threshold)
# a coefficient this close to a bound, relative to C for the bound C and relative to the size of
# the coefficients themselves for the bound 0, counts as at the bound (the coefficients can lie
# many decades below C when C K(x, x) is large: then a margin relative to C would swallow them)
_BOUND_EPS = 1e-12


_JIT = None


def _jit():
    """The compiled loops (core.solvers._active_set_jit), imported on first use."""
    global _JIT
    if _JIT is None:
        from core.solvers import _active_set_jit

        _JIT = _active_set_jit
    return _JIT


def _solve_upper(R: np.ndarray, rhs: np.ndarray, trans: bool) -> np.ndarray:
    """Solve R x = rhs (trans=False) or R^T x = rhs (trans=True), R upper triangular."""
    if len(rhs) == 0:
        return np.zeros(0)
    return blas.dtrsv(R, rhs, trans=1 if trans else 0)


def _into_box(x: np.ndarray, C: float) -> np.ndarray:
    """x clipped to [0, C] (in place; np.clip has a large constant overhead on short arrays)."""
    np.maximum(x, 0.0, out=x)
    return np.minimum(x, C, out=x)


def _delete_column(R: np.ndarray, pos: int) -> np.ndarray:
    """Factor of H without row/column ``pos``: delete column pos of R, re-triangularise with Givens rotations.

    Removing column pos leaves R upper Hessenberg from column pos on; one
    rotation of rows (k, k+1) per k >= pos zeroes the subdiagonal entry, and the
    rotations leave R^T R unchanged.  O(n (n - pos)).  Short tails are rotated
    here; longer ones by LAPACK-style compiled code (``scipy.linalg.qr_delete``
    with an identity Q, whose update is not needed).
    """
    n = R.shape[0]
    if pos == n - 1:
        return np.asfortranarray(R[: n - 1, : n - 1])
    if n - 1 - pos > _GIVENS_IN_PYTHON:
        _, R1 = qr_delete(np.eye(n), R, pos, which="col", overwrite_qr=True, check_finite=False)
        return np.asfortranarray(R1[: n - 1])
    M = np.empty((n, n - 1))
    M[:, :pos] = R[:, :pos]
    M[:, pos:] = R[:, pos + 1 :]
    for k in range(pos, n - 1):
        a, b = M[k, k], M[k + 1, k]
        r = math.hypot(a, b)
        if r == 0.0:
            continue
        c, s = a / r, b / r
        block = M[k : k + 2, k:]
        block[...] = np.array(((c, s), (-s, c))) @ block
    return np.asfortranarray(M[: n - 1])


class ActiveSetSVM(AutoHyper, ClassWeights, OnlineSolver):
    """Scheinberg's active-set method (INCAS) with Cholesky updates and an incremental mode.

    Parameters (besides those of :class:`~core.solvers.base.OnlineSolver`)
    ----------
    pivot_tol : float, default 1e-10
        A variable whose new pivot of the factor is <= pivot_tol times its
        diagonal is treated as linearly dependent (see the module docstring).
    shrink_margin : float, default 0.5
        Shrinking: bounded variables whose reduced cost satisfies its sign
        condition by more than this margin (in units of y f(x) - 1) are left
        out of selective pricing until the next full pricing.

    ``tol`` bounds the KKT violation: each reduced cost may be violated by at
    most tol / 2, so the largest violating pair (``kkt_gap``) is <= tol.
    ``max_iter`` caps the iterations (a Step 1 move or a variable entering)
    of one ``learn`` / ``learn_many`` / ``unlearn`` / ``finish`` call.
    """

    name: ClassVar[str] = "active-set"
    exact_unlearn: ClassVar[bool] = True

    def __init__(
        self,
        X: np.ndarray | None = None,
        *,
        pivot_tol: float = 1e-10,
        shrink_margin: float = 0.5,
        class_weight: None | str | dict = None,
        auto=None,
        auto_grid=None,
        auto_moments=None,
        hyper_choices=None,
        auto_lag=0,
        auto_background=True,
        hyper_pending=None,
        **params,
    ):
        if not (np.isfinite(pivot_tol) and 0 < pivot_tol < 1):
            raise ValueError(f"pivot_tol must lie in (0, 1), got {pivot_tol!r}")
        if not (np.isfinite(shrink_margin) and shrink_margin >= 0):
            raise ValueError(f"shrink_margin must be a non-negative number, got {shrink_margin!r}")
        self.pivot_tol = float(pivot_tol)
        self.shrink_margin = float(shrink_margin)
        self._init_class_weight(class_weight)
        self._init_auto(auto, auto_grid, auto_moments, hyper_choices, params.get("kernel", "rbf"))
        self._init_lag(auto_lag, auto_background, hyper_pending)
        self._reset_slots()
        super().__init__(X, **params)

    # -- per-example storage ("slots": one per learned example) -------------
    def _reset_slots(self) -> None:
        self._slot_of = np.full(0, -1, dtype=np.intp)  # store index -> slot
        self._sidx = np.zeros(0, dtype=np.intp)  # slot -> store index
        self._sy = np.zeros(0)  # labels
        self._ub = np.zeros(0)  # upper bound of alpha: C, or C w_y with class weights (ClassWeights)
        self._a = np.zeros(0)  # alpha (unsigned)
        self._lin = np.zeros(0)  # linear term of the objective (-1; + M while unlearning)
        self._fc = np.zeros(0)  # f_out: sum over non-free j of a_j y_j K(x_slot, x_j)
        # bounds on |f_out| and on the rounding error its updates have accumulated (_note_f_out)
        self._fc_size = 0.0
        self._fc_err = 0.0
        self._kd = np.zeros(0)  # K(x, x)
        self._row_memo: tuple[int, int, np.ndarray] | None = None  # (store index, slots, row) of _kernel_row
        self._status = np.zeros(0, dtype=np.int8)
        # pricing signs: violation = sgn * (y f - 1) with sgn = -1 on I0, +1 on Ic, 0 otherwise,
        # stored as sgn * y and sgn * lin so that pricing is a handful of vector operations
        self._sgn_y = np.zeros(0)
        self._sgn_lin = np.zeros(0)
        self._priced = np.zeros(0, dtype=bool)  # shrinking: bounded variables in selective pricing
        self._n_slots = 0
        self._slots_are_store_order = True  # slot k holds store index k for every k (no gather needed)
        self._free_slots: list[int] = []
        # the free set Is in factor order, its rows of K over the slots, and R
        self._S_buf = np.zeros(16, dtype=np.intp)  # free slots in factor order (first _nfree entries)
        self._S_row_buf = np.zeros(16, dtype=np.intp)  # storage row of each free variable in _KS
        self._nfree = 0
        self._KS = np.zeros((0, 0))
        self._R = np.zeros((0, 0), order="F")
        self.b_ = 0.0  # the multiplier of y^T a = 0 in Step 1 (the bias when a free variable is strictly inside)
        self._b_reported: float | None = None  # the bias reported instead of b_ when b is only known up to an interval
        self._rho = 0.0
        self._kmax = 0.0  # largest K(x, x) learned so far: scale of the rounding error of f
        self._at_reduced_opt = True
        self._optimal = True  # the last optimisation ended at a tol-optimum (not at an iteration cap)
        self._optimal_threshold = 0.0  # the entering threshold that optimum was certified with
        self._largest_violation = 0.0  # the largest reduced-cost violation that optimum left (see _certify)
        self._dirty = 0  # bordered moves since the last Step 1 solve
        self._priced_valid = False  # the shrinking subset is up to date
        self._w: tuple[np.ndarray, np.ndarray, float] | None = None  # cached H_ss^{-1} y_s
        self._cache_new_rows = True  # see _kernel_row
        self.n_iter_ = 0
        self.n_factor_updates_ = 0
        self.n_singular_steps_ = 0
        self.n_selective_pricings_ = 0
        self.n_f_out_refreshes_ = 0

    def _on_store_grown(self, n_new: int) -> None:
        self._slot_of = np.concatenate([self._slot_of, np.full(n_new, -1, dtype=np.intp)])

    @property
    def _n_s(self) -> int:
        return self._nfree

    @property
    def _S(self) -> np.ndarray:
        return self._S_buf[: self._nfree]

    @property
    def _S_row(self) -> np.ndarray:
        return self._S_row_buf[: self._nfree]

    def _set_free(self, slots: np.ndarray, rows: np.ndarray) -> None:
        m = len(slots)
        cap = max(16, 2 * m)
        self._S_buf = np.zeros(cap, dtype=np.intp)
        self._S_row_buf = np.zeros(cap, dtype=np.intp)
        self._S_buf[:m] = slots
        self._S_row_buf[:m] = rows
        self._nfree = m

    def _reserve_slots(self, m: int) -> None:
        need = self._n_slots + m
        cap = len(self._sidx)
        if need <= cap:
            return
        new = max(need, 2 * cap, 64)

        def grow(arr, fill=0):
            out = np.full(new, fill, dtype=arr.dtype)
            out[:cap] = arr
            return out

        self._sidx = grow(self._sidx)
        self._sy = grow(self._sy)
        self._ub = grow(self._ub)
        self._a = grow(self._a)
        self._lin = grow(self._lin, -1.0)
        self._fc = grow(self._fc)
        self._kd = grow(self._kd)
        self._status = grow(self._status, REMOVED)
        self._sgn_y = grow(self._sgn_y)
        self._sgn_lin = grow(self._sgn_lin)
        self._priced = grow(self._priced, False)
        KS = np.zeros((self._KS.shape[0], new))
        KS[:, :cap] = self._KS
        self._KS = KS

    def _reserve_rows(self) -> None:
        rows, cols = self._KS.shape
        if self._n_s < rows:
            return
        KS = np.zeros((max(2 * rows, 16), cols))
        KS[:rows] = self._KS
        self._KS = KS

    def _kernel_row(self, i: int) -> np.ndarray:
        """K(x_i, x_slot) for every slot.

        When the store is not much larger than the learned set, the full store
        row goes through the cache (it is likely to be needed again); otherwise
        only the learned columns are computed (a large unlabelled pool), by
        store index through the kernel layer (no gathered copy of the learned
        examples; dense or sparse), and the last such row is kept for the next call
        (a learned example is priced, then enters).  A
        batch start (``learn_many``) takes cached rows but does not cache new
        ones: there almost every variable enters once, goes to a bound and stays
        (on the noisy benchmark tasks 5-25% of the rows are asked for again), so
        keeping every row costs more (fresh memory for each) than recomputing
        the few that return.
        """
        ns = self._n_slots
        if len(self.store) <= 4 * ns:
            row = self.cache.row(i, keep=self._cache_new_rows)
            if self._slots_are_store_order:  # slot k is store index k
                return row if ns == len(row) else row[:ns]
            return row[self._sidx[:ns]]
        memo = self._row_memo
        if memo is not None and memo[0] == i and memo[1] == ns:
            return memo[2]
        self.cache.n_evals += ns
        row = self.cache.compute(np.array([i]), self._sidx[:ns])[0]  # (free slots' columns are never read)
        row.flags.writeable = False
        self._row_memo = (int(i), ns, row)
        return row

    def _slot_bounds(self, ys: np.ndarray) -> np.ndarray:
        """The upper bounds of coefficients with labels ``ys`` (C w_+ or C w_-; C without weights)."""
        c_pos, c_neg = self.class_bounds_
        return np.where(np.asarray(ys) < 0, c_neg, c_pos)

    def _class_bounds_changed(self) -> None:
        ns = self._n_slots
        self._ub[:ns] = self._slot_bounds(self._sy[:ns])

    def _new_slots(self, idx: np.ndarray, ys: np.ndarray) -> np.ndarray:
        """Put learned examples into I0 (a = 0): the current solution stays feasible."""
        m = len(idx)
        self._reserve_slots(m)
        slots = np.empty(m, dtype=np.intp)
        for p in range(m):
            slots[p] = self._free_slots.pop() if self._free_slots else self._n_slots
            if slots[p] == self._n_slots:
                self._n_slots += 1
        self._sidx[slots] = idx
        self._row_memo = None  # slots changed
        self._slots_are_store_order = self._slots_are_store_order and bool(np.array_equal(idx, slots))
        self._sy[slots] = ys
        self._ub[slots] = self._slot_bounds(ys)
        self._a[slots] = 0.0
        self._lin[slots] = -1.0
        self._status[slots] = I0
        self._refresh_sign(slots)
        self._priced[slots] = True
        self._kd[slots] = self.cache.diag(idx)
        self._kmax = max(self._kmax, float(np.max(self._kd[slots])) if m else 0.0)
        self._slot_of[idx] = slots
        ns = self._n_slots
        # Kernel values against the free set and the non-free support (for f_out).
        n_s = self._n_s
        if m == 1:
            # one example: take its kernel row over the slots (the cached store row when the store
            # is not much larger than the learned set), which Step 2 needs anyway if it enters
            row = self._kernel_row(int(idx[0]))
            S = self._S
            K_s = row[S]
            self._KS[self._S_row, slots[0]] = K_s
            # f_out = sum over all learned minus the free part (cheaper than gathering the bounded support)
            coef = self._a[:ns] * self._sy[:ns]
            self._fc[slots[0]] = row @ coef - K_s @ (self._a[S] * self._sy[S])
            # (the free part cancels: it rounds like the whole sum)
            self._fc_err = max(self._fc_err, 4.0 * _EPS * float(np.abs(row) @ np.abs(coef)))
            return slots
        out_sv = np.flatnonzero((self._status[:ns] != IS) & (self._a[:ns] > 0))
        cols = np.concatenate([self._sidx[self._S], self._sidx[out_sv]])
        if len(cols):
            Kb = self.cache.block(idx, cols)
            self._KS[self._S_row[:, None], slots[None, :]] = Kb[:, :n_s].T
            self._fc[slots] = Kb[:, n_s:] @ (self._a[out_sv] * self._sy[out_sv])
        else:
            self._fc[slots] = 0.0
        return slots

    def _refresh_sign(self, k) -> None:
        if isinstance(k, (int, np.integer)):
            st = self._status[k]
            sgn = -1.0 if st == I0 else (1.0 if st == IC else 0.0)
            self._sgn_y[k] = sgn * self._sy[k]
            self._sgn_lin[k] = sgn * self._lin[k]
            return
        st = self._status[k]
        signs = np.where(st == I0, -1.0, np.where(st == IC, 1.0, 0.0))
        self._sgn_y[k] = signs * self._sy[k]
        self._sgn_lin[k] = signs * self._lin[k]

    def _release_slot(self, k: int) -> None:
        self._row_memo = None
        self._slot_of[self._sidx[k]] = -1
        self._status[k] = REMOVED
        self._a[k] = 0.0
        self._lin[k] = -1.0
        self._refresh_sign(k)
        self._priced[k] = False
        self._free_slots.append(int(k))

    # -- the factor R^T R = H_ss = Q_ss + rho y_s y_s^T -------------------------
    def _h_column(self, j: int) -> tuple[np.ndarray, float]:
        """Column of H for j against the free set, and H_jj."""
        yS = self._sy[self._S]
        col = self._KS[self._S_row, j]
        return yS * self._sy[j] * (col + self._rho), self._kd[j] + self._rho

    def _solve_H2(self, rhs1: np.ndarray, rhs2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """H^{-1} rhs1 and H^{-1} rhs2 with two triangular solves on a two-column right-hand side."""
        B = np.empty((len(rhs1), 2), order="F")
        B[:, 0] = rhs1
        B[:, 1] = rhs2
        Z = blas.dtrsm(1.0, self._R, B, trans_a=1, overwrite_b=1)
        X = blas.dtrsm(1.0, self._R, Z, overwrite_b=1)
        return X[:, 0], X[:, 1]

    def _solve_H(self, rhs: np.ndarray) -> np.ndarray:
        return _solve_upper(self._R, _solve_upper(self._R, rhs, trans=True), trans=False)

    def _append_free(
        self, j: int, r_col: np.ndarray, pivot_sq: float, row: np.ndarray, f_out_contribution: float | None = None
    ) -> None:
        """Append j to Is: one new column of R (O(n_s^2)), its kernel row, f_out update.

        f_out loses j's contribution, a_j y_j K(., x_j) by default, or
        ``f_out_contribution`` y_j K(., x_j) when f_out still holds an older value of a_j.

        R is reallocated at its new size rather than kept in a preallocated
        buffer: the BLAS triangular solves need a contiguous Fortran array, and
        a view into a larger buffer would be copied on every solve instead of
        once per update (the copy is O(n_s^2), like the update itself).
        """
        n = self._n_s
        R = np.zeros((n + 1, n + 1), order="F")
        R[:n, :n] = self._R
        R[:n, n] = r_col
        R[n, n] = np.sqrt(pivot_sq)
        self._R = R
        self._reserve_rows()
        ns = self._n_slots
        self._KS[n, :ns] = row
        held = self._a[j] if f_out_contribution is None else f_out_contribution
        if held != 0.0:  # its contribution moves from f_out into the free part
            self._fc[:ns] -= (held * self._sy[j]) * row
            self._note_f_out(held)
        if n == len(self._S_buf):
            self._S_buf = np.concatenate([self._S_buf, np.zeros(n, dtype=np.intp)])
            self._S_row_buf = np.concatenate([self._S_row_buf, np.zeros(n, dtype=np.intp)])
        self._S_buf[n] = j
        self._S_row_buf[n] = n
        self._nfree = n + 1
        self._status[j] = IS
        self._refresh_sign(j)
        self._w = None
        self.n_factor_updates_ += 1

    def _drop_free(self, pos: int, at_upper: bool) -> None:
        """Move the free variable at factor position ``pos`` to its bound (I0 or Ic)."""
        k = int(self._S[pos])
        row_store = int(self._S_row[pos])
        ns = self._n_slots
        n = self._n_s
        if at_upper:
            ub = float(self._ub[k])
            self._a[k] = ub
            self._fc[:ns] += (ub * self._sy[k]) * self._KS[row_store, :ns]
            self._note_f_out(ub)
            self._status[k] = IC
            self._refresh_sign(k)
        else:
            self._a[k] = 0.0
            self._status[k] = I0
            self._refresh_sign(k)
        self._priced[k] = True
        self._R = _delete_column(self._R, pos)
        self._w = None
        last = n - 1
        if row_store != last:  # keep the stored kernel rows compact
            self._KS[row_store, :ns] = self._KS[last, :ns]
            self._S_row[self._S_row == last] = row_store
        self._S_buf[pos : n - 1] = self._S_buf[pos + 1 : n]
        self._S_row_buf[pos : n - 1] = self._S_row_buf[pos + 1 : n]
        self._nfree = n - 1
        self.n_factor_updates_ += 1

    def factor_error(self, relative: bool = True) -> float:
        """max |R^T R - H_ss| against H_ss computed afresh (relative to max |H_ss| by default)."""
        if self._n_s == 0:
            return 0.0
        idx = self._sidx[self._S]
        yS = self._sy[self._S]
        H = (yS[:, None] * yS[None, :]) * (self._uncounted_block(idx, idx) + self._rho)
        err = float(np.max(np.abs(self._R.T @ self._R - H)))
        return err / float(np.max(np.abs(H))) if relative else err

    # -- gradients and pricing --------------------------------------------------
    def _f_out_plus_free(self, cols: np.ndarray | None) -> np.ndarray:
        """f(x) - b for the given slots (all slots when cols is None)."""
        ns = self._n_slots
        n = self._n_s
        if n == 0:
            return self._fc[:ns].copy() if cols is None else self._fc[cols]
        coef = np.zeros(n)
        coef[self._S_row] = self._a[self._S] * self._sy[self._S]
        if cols is None:
            return coef @ self._KS[:n, :ns] + self._fc[:ns]
        if 3 * len(cols) < ns:
            return coef @ self._KS[:n][:, cols] + self._fc[cols]
        return (coef @ self._KS[:n, :ns] + self._fc[:ns])[cols]

    def _gradient(self, cols: np.ndarray) -> np.ndarray:
        return self._sy[cols] * self._f_out_plus_free(cols) + self._lin[cols]

    def _price(self, full: bool) -> tuple[int | None, bool]:
        """Step 2: the most violated bounded variable (or None), and whether pricing was full.

        Selective pricing (shrinking) runs over the bounded variables that the
        last full pricing found within ``shrink_margin`` of violating their
        condition; it is used only when it saves work (a large free set and a
        small priced subset), otherwise every bounded variable is priced with
        one product over the stored kernel rows.  With Is empty, b is set here.
        """
        ns = self._n_slots
        n = self._n_s
        if ns == 0:
            self.b_ = 0.0
            self._largest_violation = 0.0
            return None, True
        st = self._status[:ns]
        if n == 0:
            cols = np.flatnonzero(st >= 0)
            if len(cols) == 0:
                self.b_ = 0.0
                self._largest_violation = 0.0
                return None, True
            g = self._gradient(cols)
            return self._price_empty(cols, g, st[cols] == IC, True), True
        if not full and n >= _SHRINK_MIN_FREE and self._priced_valid:
            subset = self._priced[:ns] & ((st == I0) | (st == IC))
            m = int(np.count_nonzero(subset))
            if 4 * m < ns:  # (gathering the subset's kernel columns costs more than a dense product)
                if m == 0:
                    return None, False
                cols = np.flatnonzero(subset)
                self.n_selective_pricings_ += 1
                viol = self._sgn_y[cols] * (self._f_out_plus_free(cols) + self.b_) + self._sgn_lin[cols]
                p = int(viol.argmax())
                self._check_priced(viol[p])
                return (int(cols[p]) if viol[p] > self._threshold() else None), False
        S = self._S
        coef_rows = self._free_coef_rows(self._a[S] * self._sy[S])
        mark = n >= _SHRINK_MIN_FREE // 2  # the priced subset is only used with a large free set
        # v = sgn (y f - 1): s_0 on I0, xi_c on Ic (negated), 0 on Is; the largest, in one compiled pass
        p, fp = _jit().price_full(
            self._KS,
            coef_rows,
            n,
            ns,
            self._fc,
            float(self.b_),
            self._sgn_y,
            self._sgn_lin,
            self._priced,
            self.shrink_margin,
            mark,
        )
        self._priced_valid = mark
        self._check_priced(fp)
        self._largest_violation = max(0.0, float(fp))
        return (int(p) if fp > self._threshold() else None), True

    def _free_coef_rows(self, coef: np.ndarray) -> np.ndarray:
        """Signed coefficients of the free variables in the storage order of their kernel rows."""
        out = np.empty(len(coef))
        out[self._S_row] = coef
        return out

    def _threshold(self) -> float:
        """Smallest violation that makes a variable enter: tol / 2, or the rounding level of f if larger.

        f(x) sums terms a_j y_j K_ij, so it carries a rounding error of order
        eps * sum_j a_j * max K (amplified by the conditioning of H_ss).  With
        a huge C and a tight tol the requested tolerance can lie below that
        level; a "violation" there is noise (typically an exact duplicate of a
        free vector, which would be swapped in and out forever), so the
        threshold never goes below ``_NOISE_FACTOR`` times that error.
        """
        ns = self._n_slots
        half_tol = 0.5 * self.tol
        if _NOISE_FACTOR * _EPS * max(self.class_bounds_) * ns * self._kmax <= half_tol:  # sum(a) <= C ns
            return half_tol
        noise = _NOISE_FACTOR * _EPS * float(self._a[:ns].sum()) * self._kmax
        return max(half_tol, noise)

    def _note_f_out(self, delta: float) -> None:
        """Account for one update f_out += delta y_j K(., x_j) in the bound on f_out's rounding error.

        Each entry changes by at most |delta| max K (so |f_out| stays below the running
        sum of those changes) and the update and the addition round by eps times their sizes.
        """
        change = abs(delta) * self._kmax
        self._fc_size += change
        self._fc_err += _EPS * (change + self._fc_size)

    def _f_out_too_noisy(self) -> bool:
        """Whether f_out's rounding bound has grown to a quarter of the entering threshold.

        Coefficients that were large once (an example at C with a large K(x, x), later
        unlearned or moved into Is) leave their rounding in f_out after they are gone; a tight
        tol can lie below it.  Recomputing f_out (``_refresh_f_out``) clears it.
        """
        return self._fc_err > 0.25 * self._threshold()

    def _refresh_f_out(self) -> None:
        """f_out recomputed from the non-free support (its kernel evaluations are counted)."""
        ns = self._n_slots
        st, a, y = self._status[:ns], self._a[:ns], self._sy[:ns]
        live = np.flatnonzero(st != REMOVED)
        out = np.flatnonzero((st != REMOVED) & (st != IS) & (a > 0))
        self._fc[:ns] = 0.0
        if len(out) and len(live):
            self._fc[live] = self.cache.block(self._sidx[live], self._sidx[out]) @ (a[out] * y[out])
        self._fc_size = float(a[out].sum()) * self._kmax
        self._fc_err = 4.0 * _EPS * self._fc_size
        self._at_reduced_opt = False  # Step 1 solves with f_out on the free set
        self._priced_valid = False
        self.n_f_out_refreshes_ += 1

    def _check_priced(self, largest: float) -> None:
        """argmax returns the first NaN: a NaN reduced cost must not pass for "no violation"."""
        if not math.isfinite(largest):
            raise NumericalError(f"{self.name}: a reduced cost is {largest} (non-finite arithmetic)")

    def _check_finite(self, what: str) -> None:
        """Never declare an optimum with non-finite coefficients or bias (see ``NumericalError``)."""
        S = self._S
        if not (math.isfinite(self.b_) and np.all(np.isfinite(self._a[S]))):
            raise NumericalError(f"{self.name}: {what} produced a non-finite coefficient or bias")

    def _zero_level(self) -> float:
        """A coefficient at most this large is 0 up to rounding: _BOUND_EPS times the largest one."""
        ns = self._n_slots
        return _BOUND_EPS * float(self._a[:ns].max(initial=0.0))

    def _threshold_fell(self) -> bool:
        """Whether the entering threshold is now below the one the last optimum was certified with.

        Above tol / 2 the threshold is the rounding level of f, which scales with sum(a): when
        coefficients shrink (an unlearned example carried much of sum(a)), variables that were
        within the old level of optimality may violate the new one, so everything is priced again.
        """
        return self._threshold() < self._optimal_threshold

    def _price_empty(self, cols, g, at_upper, full) -> int | None:
        """Pricing with Is empty: b only has to lie in an interval.

        Every bounded variable bounds b from one side: with q = -y g, a variable
        at 0 with y = +1 or at C with y = -1 needs b >= q, the others b <= q.
        When the interval is empty, the variable giving the largest lower bound
        enters Is; Step 1 on that single variable pins b there, and the next
        pricing brings in its partner (the maximal violating pair).
        """
        y = self._sy[cols]
        q = -y * g
        lower = (y > 0) != at_upper
        lo = q[lower].max() if lower.any() else -np.inf
        hi = q[~lower].min() if (~lower).any() else np.inf
        if full:
            slack = np.where(lower, lo - q, q - hi)
            self._priced[cols] = ~np.isfinite(slack) | (slack <= self.shrink_margin)
        if lo - hi > 2.0 * self._threshold():
            return int(cols[lower][np.argmax(q[lower])])
        self.b_ = admissible_bias(q, lower, ~lower)  # the midpoint (no variable is free)
        self._largest_violation = max(0.0, 0.5 * (lo - hi))
        return None

    def _settle_bias(self) -> None:
        """When no free variable lies strictly inside the box, b is only known to lie in an interval.

        (Step 1 on such an Is pins b at one end, and with Is empty pricing leaves it wherever the
        last bound hit did.)  Report the midpoint of the interval over every learned example, the
        rule the solvers share (``base.admissible_bias``, as LIBSVM), so the decision values are
        those of the usual convention and unlearning gives the b of retraining.  A coefficient
        counts as free only above the zero level (``_zero_level``: relative to the largest
        coefficient, that is to C as soon as one sits at C) and below C: rounding can leave a lone
        7e-18 in Is beside coefficients at C = 0.1, which is 0, not a free variable.  The multiplier
        ``b_`` itself is kept: the bordered entering step relies on g_s = -b y_s for the free set.
        """
        self._b_reported = None
        ns = self._n_slots
        cols = np.flatnonzero(self._status[:ns] != REMOVED)
        if len(cols) == 0:
            return
        a = self._a[cols]
        at_upper = a >= self._ub[cols] * (1.0 - _BOUND_EPS)
        if np.any(~at_upper & (a > self._zero_level())):
            return
        y = self._sy[cols]
        q = -y * self._gradient(cols)  # y - (f - b): the base class's g
        up = (y > 0) != at_upper  # (at 0 with y = +1 or at C with y = -1: a y can grow, so b >= q)
        self._b_reported = admissible_bias(q, up, ~up)

    # -- Step 1 -----------------------------------------------------------------
    def _step1(self) -> int:
        """Move towards the reduced optimum on Is; drop variables that block. Returns iterations."""
        its = 0
        while self._n_s:
            its += 1
            S = self._S
            yS = self._sy[S]
            aS = self._a[S]
            C = self._ub[S]  # the upper bound of each free variable
            eps = _BOUND_EPS * C
            ns = self._n_slots
            d = float(yS @ aS - self._sy[:ns] @ self._a[:ns])  # -sum of y a over the bounded variables
            if len(S) == 1 and -_BOUND_EPS * max(abs(d), aS[0]) <= yS[0] * d <= C[0] + eps[0]:
                # one free variable: the equality pins it (a_j = y_j d) and Step 1 only sets b,
                # from r_j = y_j (f_j + b) + lin_j = 0
                j = int(S[0])
                self._a[j] = min(max(float(yS[0] * d), 0.0), C[0])
                f_j = self._a[j] * yS[0] * self._kd[j] + self._fc[j]
                self.b_ = float(-self._lin[j] * yS[0] - f_j)
                self._at_reduced_opt = True
                self._dirty = 0
                self._w = None
                return its
            rhs = -(yS * self._fc[S] + self._lin[S])
            p, w = self._solve_H2(rhs, yS)
            yw = float(yS @ w)
            beta = (float(yS @ p) - d) / yw
            target = p - beta * w
            bias = beta + self._rho * d  # H a = Q a + rho y d shifts the multiplier by rho d
            # a target within rounding of a bound counts as inside (p and beta w may cancel)
            rounding = _ROUNDING * (np.abs(p) + np.abs(beta * w))
            low = target < -(rounding + _BOUND_EPS * max(float(np.abs(target).max()), float(aS.max())))
            high = target > C + (rounding + eps)
            if not (low.any() or high.any()):
                self._a[S] = _into_box(target, C)
                self.b_ = float(bias)
                self._at_reduced_opt = True
                self._dirty = 0
                self._w = (yS, w, yw)
                return its
            delta = target - aS
            t = np.full(len(S), np.inf)
            t[low] = aS[low] / (aS[low] - target[low])
            t[high] = (C[high] - aS[high]) / (target[high] - aS[high])
            pos = int(t.argmin())
            step = min(max(float(t[pos]), 0.0), 1.0)
            self._a[S] = _into_box(aS + step * delta, C)
            self._drop_free(pos, at_upper=bool(high[pos]))
        self._at_reduced_opt = True  # Is empty: b is set by pricing
        return its

    # -- entering a variable ------------------------------------------------------
    def _enter(self, j: int) -> int:
        """Bring the violated bounded variable j into play (Step 2 -> Step 1). Returns iterations used.

        Is is at its reduced optimum (g_s = -b y_s).  Step 1 on Is + {j} moves
        from there along v = (-H^{-1} h_j + c H^{-1} y_s, 1) (c keeps y^T v = 0):
        the reduced optimum of Is + {j} is at step t* = |r_j| / (v^T Q v), where
        v^T Q v = delta + c^2 y_s^T H^{-1} y_s and delta is j's new pivot.  The
        ratio test over Is and j's own bound gives the first bound hit.  This is
        the paper's Step 1 after adding j, computed in bordered form *before*
        j's column enters the factor, so a variable that crosses straight to
        its other bound never touches the factor (same iterates, fewer
        updates).  Along v the gradient of every free variable changes by a
        multiple of y_s only (Q v = c y on Is), i.e. Is stays at its reduced
        optimum with the bias shifted; this is what makes the dependent case
        (delta ~ 0, see the module docstring) safe.
        """
        row = self._kernel_row(self._sidx[j])
        if self._n_s == 0:  # H_jj = K_jj + rho > 0; Step 1 on {j} then pins b
            self._append_free(j, np.zeros(0), self._kd[j] + self._rho, row)
            self._at_reduced_opt = False
            return 1
        its = 0
        C = float(self._ub[j])  # j's upper bound
        ub = self._ub
        yj = float(self._sy[j])
        Hjj = float(self._kd[j]) + self._rho
        aj0 = float(self._a[j])  # j's contribution to f_out is brought up to date once, on exit
        aj = aj0
        rho = self._rho
        kdj = float(self._kd[j])
        linj = float(self._lin[j])
        pivot_floor = self.pivot_tol * Hjj
        fc = self._fc
        jit = _jit()
        cap = self._n_s  # (Is only shrinks inside this loop)
        r_buf, u_buf, dS_buf, t_buf = np.empty(cap), np.empty(cap), np.empty(cap), np.empty(cap)
        while True:
            its += 1
            n = self._n_s
            if n == 0:  # every free variable left: j is the only one, Step 1 pins b
                self._a[j] = aj
                self._append_free(j, np.zeros(0), Hjj, row, f_out_contribution=aj0)
                self._at_reduced_opt = False
                return its + self._step1()
            S = self._S
            yS, w, yw = self._w_free()  # y_s, H^{-1} y_s, y_s^T H^{-1} y_s
            # r_col: R^T r = h_j with h_j = y_s y_j (K_sj + rho), the column of H_ss + {j} (K_sj from j's
            # kernel row over the slots); u = H^{-1} h_j; c keeps y^T v = 0 exactly; r_j: reduced cost of
            # j (f_out(j) still holds a_j0); dS = c w - u (compiled: core.solvers._active_set_jit)
            pivot_sq, c, r_j = jit.enter_direction(
                self._R,
                n,
                row,
                S,
                yS,
                w,
                yw,
                self._a,
                rho,
                yj,
                Hjj,
                fc[j],
                aj,
                aj0,
                kdj,
                linj,
                self.b_,
                r_buf,
                u_buf,
                dS_buf,
            )
            r_col = r_buf[:n]
            dependent = pivot_sq <= pivot_floor
            if r_j == 0.0:
                if not 0.0 < aj < C:  # nothing to gain (j is where it was priced)
                    break
                if not dependent:  # j is at the reduced optimum of Is + {j}
                    self._a[j] = aj
                    self._append_free(j, r_col, pivot_sq, row, f_out_contribution=aj0)
                    return its
            # (r_j == 0 and dependent: the objective is flat along v; slide j towards 0 until a bound)
            sigma, c, step, t_curv, t_j, pos = self._enter_step(
                n, S, j, aj, C, pivot_sq, c, r_j, yw, dependent, u_buf, dS_buf, t_buf
            )
            far = C if sigma > 0 else 0.0
            # (ties go to j; "close" relative to C at C, relative to a_j itself at 0)
            reaches_far = step == t_j or abs(aj + sigma * step - far) <= _BOUND_EPS * (C if sigma > 0 else aj)
            aj = far if reaches_far else aj + sigma * step
            blocker_up = dS_buf[pos] > 0
            jit.move_free(n, S, self._a, dS_buf, step, ub)  # a_S += step v_S, in [0, ub_S]
            self.b_ -= sigma * step * c  # the gradient on Is moved by sigma*step*c*y_s: a bias shift
            self._dirty += 1
            if reaches_far:  # j crosses to its other bound without entering Is
                self._status[j] = IC if sigma > 0 else I0
                self._refresh_sign(j)
                self._priced[j] = True
                break
            if step == t_curv:  # reduced optimum of Is + {j}: j enters the factor
                self._a[j] = aj
                self._append_free(j, r_col, pivot_sq, row, f_out_contribution=aj0)
                return its
            # a free variable hit its bound first: it leaves Is, and j is tried again
            self._a[S[pos]] = ub[S[pos]] if blocker_up else 0.0
            self._drop_free(pos, at_upper=blocker_up)
        if aj != aj0:
            jit.add_scaled(self._fc, self._n_slots, (aj - aj0) * yj, row)
            self._note_f_out(aj - aj0)
        self._a[j] = aj
        return its

    def _enter_step(
        self,
        n: int,
        S: np.ndarray,
        j: int,
        aj: float,
        C: float,
        pivot_sq: float,
        c: float,
        r_j: float,
        yw: float,
        dependent: bool,
        u_buf: np.ndarray,
        dS_buf: np.ndarray,
        t_buf: np.ndarray,
    ) -> tuple[float, float, float, float, float, int]:
        """One step of ``_enter`` along v = (c w - u, 1): (sigma, c, step, t_curv, t_j, blocking position).

        sigma is the direction j moves; the step is the smallest of the curvature's t* = |r_j| / (v^T Q v),
        the first free variable's bound (the ratio test; its position in Is) and j's own bound t_j.
        """
        Hjj = float(self._kd[j]) + self._rho
        sigma = -1.0 if r_j >= 0 else 1.0
        # The pivot is H_jj minus a sum of squares of that size: at the rounding level of H_jj it
        # is 0 (j duplicates free vectors), and so is c: for v = (-u, 1), v^T Q v + rho (y^T v)^2
        # = delta, so y^T v = 0 already, and u's entries at the rounding level of its largest
        # are 0 too.  The objective is then linear along v = (-u, 1) and the step ends at a
        # bound.  Taken as they came, that noise made a curvature (a step of 1e-16 and j in the
        # factor with a noise pivot), a bias shift of order 1 (c times H's scale), or a free
        # variable blocking at step 1e-17 (4 points with C K(x, x) ~ 1e28 and a duplicate with
        # the other label: KKT gap 2 reported "ok").
        delta = pivot_sq if pivot_sq > _ROUNDING * Hjj else 0.0
        if delta == 0.0:
            c = 0.0
            u, dS = u_buf[:n], dS_buf[:n]
            np.negative(u, out=dS)
            dS[np.abs(u) <= _ROUNDING * float(np.abs(u).max(initial=0.0))] = 0.0
        curvature = delta + c * c * yw
        if dependent:
            self.n_singular_steps_ += 1
        t_curv = abs(r_j) / curvature if delta > 0.0 and curvature > 0.0 else math.inf
        # ratio test: distance to the bound each free variable moves to, over its speed, along
        # v_s = c w - u in the direction j moves.  A variable that does not move (dS exactly 0
        # or -0.0, as with exact ties) never blocks: otherwise one sitting at C would win with
        # step 0 and, its direction not being > 0, be sent to 0 (y^T a would jump by C).
        pos, t_blk = _jit().ratio_test(n, S, self._a, dS_buf, self._ub, t_buf, sigma)
        pos, t_blk = int(pos), float(t_blk)
        t_j = (C - aj) if sigma > 0 else aj
        step = min(t_curv, t_blk, t_j)
        return sigma, c, step, t_curv, t_j, pos

    def _w_free(self) -> tuple[np.ndarray, np.ndarray, float]:
        """y_s, H_ss^{-1} y_s and y_s^T H_ss^{-1} y_s, kept until Is changes."""
        if self._w is None:
            yS = self._sy[self._S]
            w = self._solve_H(yS)
            self._w = (yS, w, float(yS @ w))
        return self._w

    # -- the optimisation loop --------------------------------------------------------
    def _optimise(self, what: str, its: int = 0) -> tuple[int, str, str]:
        """Alternate Step 1 and Step 2 until no variable violates its condition by more than tol/2."""
        status, message = "ok", ""
        self._b_reported = None
        refreshed = False
        while True:
            if self._n_s and not self._at_reduced_opt:
                its += self._step1()
            j, was_full = self._price(full=False)
            if j is None and not was_full:
                j, _ = self._price(full=True)  # full pricing before declaring optimality
            if j is None and self._n_s and self._dirty > (0 if what == "finish" else _MAX_BORDERED_MOVES):
                # many moves were bordered updates: confirm with a fresh Step 1 solve, then price again
                self._at_reduced_opt = False
                self._dirty = 0
                continue
            if j is None and not refreshed and self._f_out_too_noisy():
                # f_out's accumulated rounding could hide a violation: recompute it, price again
                self._refresh_f_out()
                refreshed = True
                continue
            if j is None:
                self._settle_bias()
                self._check_finite(what)
                self._optimal = True
                self._optimal_threshold = self._threshold()
                break
            its += self._enter(j)
            if its >= self.max_iter:
                if self._n_s and not self._at_reduced_opt:
                    its += self._step1()  # leave a reduced optimum behind (finite: Is only shrinks)
                self._optimal = False  # (set before the cap can raise) the next call continues
                message = self._iteration_cap(what, its)
                status = "max_iter"
                break
        self.n_iter_ += its
        return its, status, message

    # -- the contract -------------------------------------------------------------------
    def _start(self) -> None:
        if self._rho <= 0.0:
            diag = self.cache.diag(np.arange(len(self.store)))
            m = float(np.mean(diag)) if len(diag) else 0.0
            self._rho = m if np.isfinite(m) and m > 0 else 1.0

    @single_threaded_blas
    def learn(self, i: int, y: float) -> StepResult:
        """Learn example i: it enters I0; Step 2 decides whether anything changes."""
        i, y = self._check_learnable(i, y)
        with StepTimer(self) as tm:
            self._start()
            self.y[i] = y
            self.learned_order.append(i)
            k = int(self._new_slots(np.array([i]), np.array([y]))[0])
            its, status, message = 0, "ok", ""
            if (
                self._n_s
                and self._at_reduced_opt
                and self._optimal
                and not self._threshold_fell()
                and not self._f_out_too_noisy()
            ):
                # the others are still optimal: only the new variable can be violated
                r = float(self._gradient(np.array([k]))[0]) + y * self.b_
                if r >= -self._threshold():
                    status = "unchanged"
                    self._largest_violation = max(self._largest_violation, -r)
                    if self._b_reported is not None:  # the new example may narrow b's interval
                        self._settle_bias()
                else:
                    its = self._enter(k)
                    its, status, message = self._optimise("learn", its)
            else:
                its, status, message = self._optimise("learn")
                if its == 0:
                    status = "unchanged"
        status, message = self._certify(status, message)
        return self._rebalanced(
            tm.result(
                status=status, iterations=its, message=message, extra={"n_free": self._n_s, "n_at_C": self.n_at_upper_}
            )
        )

    @single_threaded_blas
    def learn_many(self, idx, ys) -> StepResult:
        """Learn several examples at once (all enter I0, then one optimisation)."""
        idx, ys = self._check_batch(idx, ys)
        for i, y in zip(idx, ys, strict=True):
            self._check_learnable(i, y)
        with StepTimer(self) as tm:
            self._start()
            self.y[idx] = ys
            self.learned_order.extend(int(i) for i in idx)
            self._new_slots(idx, ys)
            self._cache_new_rows = False
            try:
                its, status, message = self._optimise("learn_many")
            finally:
                self._cache_new_rows = True
        status, message = self._certify(status, message)
        return self._rebalanced(
            tm.result(
                status=status, iterations=its, message=message, extra={"n_free": self._n_s, "n_at_C": self.n_at_upper_}
            )
        )

    @single_threaded_blas
    def unlearn(self, i: int) -> StepResult:
        """Remove example i exactly (see the module docstring).

        If the iteration cap is reached before a_i has been driven to 0, the
        example stays learned (the solution remains feasible and consistent),
        the cap warns or raises, and calling ``unlearn(i)`` again continues.
        After an earlier call stopped at its cap, ``learn`` and ``unlearn``
        optimise over every variable (not only the one that changed), so each
        call that returns without reaching the cap leaves a tol-optimal model.
        """
        i = self._check_unlearnable(i)
        with StepTimer(self) as tm:
            its, status, message = self._unlearn(i)
        status, message = self._certify(status, message)
        return self._rebalanced(
            tm.result(
                status=status, iterations=its, message=message, extra={"n_free": self._n_s, "n_at_C": self.n_at_upper_}
            )
        )

    def _unlearn(self, i: int) -> tuple[int, str, str]:
        """The work of ``unlearn``: (iterations, status, message)."""
        k = int(self._slot_of[i])
        its, status, message = 0, "ok", ""
        if self._a[k] > 0.0 or self._status[k] == IS:
            self._at_reduced_opt = False
            r = float(self._gradient(np.array([k]))[0]) + self._sy[k] * self.b_
            penalty = 2.0 * (1.0 + abs(r)) + 1.0
            try:
                for _ in range(60):
                    self._lin[k] = -1.0 + penalty
                    self._refresh_sign(k)
                    self._at_reduced_opt = False
                    its, status, message = self._optimise("unlearn", its)
                    if status != "ok" or self._a[k] <= self._zero_level():
                        break
                    penalty *= 8.0
            finally:  # also when the cap raises: the objective is the plain dual again
                self._lin[k] = -1.0
                self._refresh_sign(k)
                self._at_reduced_opt = False
            if self._a[k] > self._zero_level():  # the cap stopped the drive: keep i learned
                if self._n_s:
                    its += self._step1()
                if status != "max_iter":  # (every penalty tried: a stop of its own kind, never a silent one)
                    message = self._iteration_cap(f"unlearn of example {i} (penalty raised 60 times)", its)
                return its, "max_iter", message + f"; example {i} is still learned (call unlearn again)"
            if self._status[k] == IS:
                pos = int(np.flatnonzero(self._S == k)[0])
                self._a[k] = 0.0
                self._drop_free(pos, at_upper=False)
                self._at_reduced_opt = False
                its += self._step1()  # (a_k was ~0: the rest is already at its reduced optimum)
            resume = False
        else:
            status = "unchanged"
            resume = not self._optimal  # an earlier call stopped at its cap: continue from here
        self._release_slot(k)
        self.y[i] = 0.0
        self.learned_order.remove(i)
        # the rest was optimal up to the threshold of its last pricing; when a_i was among the
        # largest coefficients, the rounding floor of that threshold has dropped with it
        # (after a cap the next call continues anyway)
        resume = resume or (status != "max_iter" and (self._threshold_fell() or self._f_out_too_noisy()))
        if resume and self._n_slots:
            its, status, message = self._optimise("unlearn", its)
        elif self._n_s == 0 and self._n_slots:
            self._price(full=True)  # with Is empty b comes from the bounded variables
        else:
            self._settle_bias()
        return its, status, message

    @single_threaded_blas
    def finish(self) -> StepResult:
        """Full pricing: confirm optimality (or continue after an iteration cap).

        The step record's ``kkt_gap`` is the largest violating pair of the maintained gradients
        (``_gap_maintained``: O(|Is| n), no kernel evaluation); ``kkt_gap()`` recomputes it from
        scratch (a kernel block of the learned examples against the support vectors, which on a
        3,000-example task cost more than the whole optimisation).
        """
        with StepTimer(self) as tm:
            its, status, message = 0, "unchanged", "solution already optimal"
            if self.learned_order:
                its, status, message = self._optimise("finish")
                if its == 0 and status == "ok":
                    status, message = "unchanged", "solution already optimal"
            gap = self._gap_maintained()
        status, message = self._certify(status, message)
        return tm.result(status=status, iterations=its, message=message, kkt_gap=gap)

    def _certify(self, status: str, message: str) -> tuple[str, str]:
        """A call that reached an optimum says "ok" (or "unchanged") only when it is a tol-optimum.

        Pricing ignores violations below the rounding level of f (``_threshold``), so where that
        level lies above tol / 2 an optimum can leave a variable violated by more than tol / 2
        (the largest violating pair above tol): the status is then "inexact".  Where the level
        reaches half the margin itself, the maintained gradients cannot vouch for anything (C
        K(x, x) ~ 1e28 and an exact duplicate with the other label: one ulp of a coefficient at C
        moves f by ~1e13), so the KKT gap is recomputed from scratch (``kkt_gap()``, a kernel
        block of the learned examples against the support vectors: only in that regime) and the
        status is "inexact" unless it is within tol.  Either way with a warning that says which;
        the model is finite and the best the solver can tell from rounding, and an iteration cap
        keeps its own status.
        """
        if status not in ("ok", "unchanged"):
            return status, message
        threshold = self._threshold()
        if threshold >= 0.5:
            gap = self.kkt_gap()
            if gap <= self.tol:
                return status, message
            sum_a = float(self._a[: self._n_slots].sum())
            return "inexact", self._not_tau_optimal(
                f"the KKT gap is {gap:.3g} (tol {self.tol:g}): the decision values carry rounding errors of up "
                f"to {threshold:.3g} (1e4 eps sum(a) max K(x, x), sum(a) = {sum_a:.3g}, "
                f"max K(x, x) = {self._kmax:.3g}), as large as the margin (rescale the features, or lower C or gamma)"
            )
        if self._largest_violation > 0.5 * self.tol:
            return "inexact", self._not_tau_optimal(
                f"a KKT violation of {self._largest_violation:.3g} remains, above tol / 2 = {0.5 * self.tol:.3g} but "
                f"within the rounding level {threshold:.3g} of the decision values"
            )
        return status, message

    def _gap_maintained(self) -> float:
        """``kkt_gap()`` (the base class's largest violating pair) from the maintained gradients.

        f(x) - b of every learned example is f_out plus the free part over the stored kernel rows
        of Is; f_out's accumulated rounding is kept below a quarter of the entering threshold
        (``_f_out_too_noisy``), so this differs from the gap recomputed from scratch by rounding.
        """
        ns = self._n_slots
        live = np.flatnonzero(self._status[:ns] != REMOVED)
        if len(live) == 0:
            return 0.0
        y = self._sy[live]
        beta = self._a[live] * y
        g = y - self._f_out_plus_free(None)[live]  # y_i - sum_j a_j y_j K_ij
        C = self._ub[live]
        eps = 1e-12 * C
        up = beta < np.maximum(0.0, C * y) - eps
        down = beta > np.minimum(0.0, C * y) + eps
        if not up.any() or not down.any():
            return 0.0
        return float(max(0.0, g[up].max() - g[down].min()))

    def check_invariants(self) -> None:
        """Raise AssertionError if the internal bookkeeping is inconsistent (for tests and debugging).

        Partition and values agree (I0: a = 0, Ic: a = C, Is: 0 <= a <= C and
        the factor order), y^T a = 0, f_out matches a fresh computation, and the
        pricing signs match the partition.
        """
        ns = self._n_slots
        st = self._status[:ns]
        a = self._a[:ns]
        assert np.all(a[st == I0] == 0.0), "a variable in I0 is not at 0"
        assert np.all(a[st == IC] == self._ub[:ns][st == IC]), "a variable in Ic is not at its bound"
        assert np.all(a[st == REMOVED] == 0.0)
        assert np.all((a >= 0.0) & (a <= self._ub[:ns]))
        assert np.array_equal(self._ub[:ns][st != REMOVED], self._slot_bounds(self._sy[:ns][st != REMOVED]))
        assert sorted(np.flatnonzero(st == IS).tolist()) == sorted(self._S.tolist())
        assert sorted(self._S_row.tolist()) == list(range(self._n_s))
        live = st != REMOVED
        scale = max(1.0, max(self.class_bounds_) * int(live.sum()))
        assert abs(float(self._sy[:ns][live] @ a[live])) <= 1e-10 * scale, "y^T a != 0"
        if ns:
            idx = self._sidx[:ns]
            out = np.flatnonzero(live & (st != IS) & (a > 0))
            fc = self._uncounted_block(idx, self._sidx[out]) @ (a[out] * self._sy[out]) if len(out) else 0.0
            err = np.abs(fc - self._fc[:ns])[live]
            assert err.size == 0 or err.max() <= 1e-9 * scale, f"f_out drifted by {err.max()}"
            sgn = np.where(st == I0, -1.0, np.where(st == IC, 1.0, 0.0))
            assert np.array_equal(self._sgn_y[:ns], sgn * self._sy[:ns])

    # -- read-outs ---------------------------------------------------------------------
    def coefficients(self) -> tuple[np.ndarray, np.ndarray, float]:
        ns = self._n_slots
        sv = np.flatnonzero((self._a[:ns] > 0) & (self._status[:ns] != REMOVED))
        order = np.argsort(self._sidx[sv], kind="stable")
        sv = sv[order]
        b = self.b_ if self._b_reported is None else self._b_reported
        return self._sidx[sv].copy(), self._a[sv] * self._sy[sv], float(b)

    @property
    def n_free_(self) -> int:
        """Number of free variables (the set Is, factor size)."""
        return self._n_s

    @property
    def n_at_upper_(self) -> int:
        """Number of variables in Ic (a = C)."""
        return int(np.sum(self._status[: self._n_slots] == IC))

    @property
    def free_indices_(self) -> np.ndarray:
        return self._sidx[self._S].copy()

    # -- state -------------------------------------------------------------------------
    def get_params(self) -> dict[str, Any]:
        params = super().get_params()
        params.update(pivot_tol=self.pivot_tol, shrink_margin=self.shrink_margin, class_weight=self.class_weight)
        if self.auto or self.hyper_choices:
            params.update(self._auto_params())
        return params

    def _state_arrays(self) -> dict[str, np.ndarray]:
        """Everything that steers the next steps, so that a restored solver continues exactly as the
        saved one would have: the slots as they are laid out (released ones included, and the order
        they are reused in), the factor R itself (a fresh Cholesky factorisation would round
        differently from the one updated column by column), f_out with its rounding bounds, and the
        counters and flags.  Only kernel values are recomputed on loading (they are the same bits,
        see ``core.kernels``)."""
        ns = self._n_slots
        live = np.flatnonzero(self._status[:ns] != REMOVED)
        return {
            # (the first format's arrays, which older code reads)
            "index": self._sidx[live].copy(),
            "alpha": self._a[live].copy(),
            "status": self._status[live].astype(np.int8),
            "free_order": self._sidx[self._S].copy(),
            "scalars": np.array(
                [
                    self.b_,
                    self._rho,
                    float(self.n_iter_),
                    np.nan if self._b_reported is None else self._b_reported,
                    float(self._optimal),
                ]
            ),
            # the exact layout
            "slot_index": self._sidx[:ns].astype(np.int64),
            "slot_y": self._sy[:ns].copy(),
            "slot_alpha": self._a[:ns].copy(),
            "slot_lin": self._lin[:ns].copy(),
            "slot_fc": self._fc[:ns].copy(),
            "slot_status": self._status[:ns].astype(np.int8),
            "slot_priced": self._priced[:ns].astype(np.int8),
            "released": np.asarray(self._free_slots, dtype=np.int64),
            "free": self._S.astype(np.int64),
            "free_rows": self._S_row.astype(np.int64),
            "R": np.array(self._R),
            # H_ss^{-1} y_s as kept (solved beside another right-hand side, it rounds otherwise than alone)
            "w": np.zeros(0) if self._w is None else np.array(self._w[1]),
            "w_kept": np.array([self._w is not None, 0.0 if self._w is None else self._w[2]]),
            "control": np.array(
                [
                    self._fc_size,
                    self._fc_err,
                    self._kmax,
                    float(self._at_reduced_opt),
                    self._optimal_threshold,
                    float(self._dirty),
                    float(self._priced_valid),
                    float(self._slots_are_store_order),
                    float(self._cache_new_rows),
                    float(self.n_factor_updates_),
                    float(self.n_singular_steps_),
                    float(self.n_selective_pricings_),
                    float(self.n_f_out_refreshes_),
                    float(len(self._sidx)),
                    float(self._KS.shape[0]),
                    self._largest_violation,
                ]
            ),
        }

    @single_threaded_blas
    def _load_state_arrays(self, arrays: dict[str, np.ndarray], meta: dict) -> None:
        if "slot_index" in arrays:
            self._load_exact_state(arrays)
            return
        self._reset_slots()
        self._slot_of = np.full(len(self.store), -1, dtype=np.intp)
        scalars = [float(v) for v in arrays["scalars"]]
        b, rho, n_iter, b_reported = scalars[:4]
        optimal = scalars[4] != 0.0 if len(scalars) > 4 else True  # (older states: saved at an optimum)
        self._rho = rho
        self.n_iter_ = int(n_iter)
        index = np.asarray(arrays["index"], dtype=np.intp)
        self._b_reported = None if np.isnan(b_reported) else b_reported
        if len(index) == 0:
            self.b_ = b
            return
        slots = self._new_slots(index, self.y[index])  # Is empty here: only labels and diagonals
        self._a[slots] = np.asarray(arrays["alpha"], dtype=np.float64)
        status = np.asarray(arrays["status"], dtype=np.int8)
        self._status[slots] = np.where(status == IS, I0, status)
        # f_out from the non-free support, computed afresh
        out_sv = slots[(status != IS) & (self._a[slots] > 0)]
        if len(out_sv):
            self._fc[slots] = self.cache.block(index, self._sidx[out_sv]) @ (self._a[out_sv] * self._sy[out_sv])
        self._fc_size = float(self._a[out_sv].sum()) * self._kmax
        self._fc_err = 4.0 * _EPS * self._fc_size
        # Is in its stored order; R from a fresh Cholesky factorisation of H_ss (deterministic)
        free = self._slot_of[np.asarray(arrays["free_order"], dtype=np.intp)]
        if len(free):
            rows = self.cache.block(self._sidx[free], index)  # slots are 0..m-1 in index order
            self._KS = np.zeros((max(16, len(free)), len(self._sidx)))
            self._KS[: len(free), slots] = rows
            yS = self._sy[free]
            H = (yS[:, None] * yS[None, :]) * (rows[:, free] + rho)
            self._R = np.asfortranarray(np.linalg.cholesky(H).T)
            self._set_free(free.astype(np.intp), np.arange(len(free), dtype=np.intp))
            self._status[free] = IS
        self._refresh_sign(slots)
        self.b_ = b
        self._at_reduced_opt = True
        self._optimal = optimal

    def _load_exact_state(self, arrays: dict[str, np.ndarray]) -> None:
        """The state of ``_state_arrays`` exactly as it was saved (kernel values recomputed)."""
        self._reset_slots()
        self._slot_of = np.full(len(self.store), -1, dtype=np.intp)
        b, rho, n_iter, b_reported, optimal = (float(v) for v in arrays["scalars"][:5])
        control = [float(v) for v in arrays["control"]]
        sidx = np.asarray(arrays["slot_index"], dtype=np.intp)
        ns = len(sidx)
        cap = max(int(control[13]), ns)
        self._reserve_slots(cap)
        self._n_slots = ns
        self._sidx[:ns] = sidx
        self._sy[:ns] = arrays["slot_y"]
        self._ub[:ns] = self._slot_bounds(self._sy[:ns])
        self._a[:ns] = arrays["slot_alpha"]
        self._lin[:ns] = arrays["slot_lin"]
        self._fc[:ns] = arrays["slot_fc"]
        self._status[:ns] = arrays["slot_status"]
        self._priced[:ns] = np.asarray(arrays["slot_priced"]) != 0
        self._free_slots = [int(k) for k in arrays["released"]]
        live = np.flatnonzero(self._status[:ns] != REMOVED)
        self._slot_of[sidx[live]] = live
        if ns:
            self._kd[:ns] = self.cache.diag(sidx)
            self._refresh_sign(np.arange(ns))
        free = np.asarray(arrays["free"], dtype=np.intp)
        free_rows = np.asarray(arrays["free_rows"], dtype=np.intp)
        self._KS = np.zeros((max(int(control[14]), len(free)), cap))
        if len(free):
            self._KS[free_rows, :ns] = self.cache.block(sidx[free], sidx)
        self._set_free(free, free_rows)
        self._R = np.asfortranarray(np.asarray(arrays["R"], dtype=np.float64).reshape(len(free), len(free)))
        self.b_, self._rho, self.n_iter_ = b, rho, int(n_iter)
        self._b_reported = None if np.isnan(b_reported) else b_reported
        self._optimal = optimal != 0.0
        (self._fc_size, self._fc_err, self._kmax) = control[0:3]
        self._at_reduced_opt = control[3] != 0.0
        self._optimal_threshold = control[4]
        self._dirty = int(control[5])
        self._priced_valid = control[6] != 0.0
        self._slots_are_store_order = control[7] != 0.0
        self._cache_new_rows = control[8] != 0.0
        (self.n_factor_updates_, self.n_singular_steps_, self.n_selective_pricings_, self.n_f_out_refreshes_) = (
            int(v) for v in control[9:13]
        )
        self._largest_violation = control[15] if len(control) > 15 else 0.0  # (older states: none recorded)
        self._w = None
        kept = np.asarray(arrays.get("w_kept", np.zeros(2)), dtype=np.float64)
        if kept[0] != 0.0 and len(arrays["w"]) == len(free):  # (older states: computed again when needed)
            self._w = (self._sy[self._S].copy(), np.array(arrays["w"], dtype=np.float64), float(kept[1]))
