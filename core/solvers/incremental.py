"""Exact incremental learning and decremental unlearning for SVMs.

Cauwenberghs & Poggio (2001), in the design and notation of Laskov, Gehl,
Krüger & Müller, "Incremental Support Vector Learning: Analysis,
Implementation and Applications", JMLR 7 (2006).  Equation numbers in the
comments refer to that paper.

Notation (binary C-SVC, ``IncrementalSVM``)::

    Q_ij = y_i y_j K(x_i, x_j)
    g_i  = sum_j Q_ij a_j + y_i b - 1  =  y_i f(x_i) - 1          (margin)
    S = {i : 0 < a_i < C, g_i = 0}   margin vectors
    E = {i : a_i = C,     g_i <= 0}  error vectors
    O = {i : a_i = 0,     g_i >= 0}  other (reserve) vectors

Only *learned* examples belong to S, E or O.  Learning an example c raises
a_c from 0 while S, b and a_S move so that g_S = 0 and sum_i y_i a_i = 0 keep
holding (eqs. 6–9):

    [db; da_S] = beta * da_c,   beta = -R [y_c; Q_Sc],   R = Q~^{-1},
    Q~ = [[0, y_S^T], [y_S, Q_SS]]                     (bordered matrix)
    dg_i = gamma_i * da_c,      gamma_i = Q_ic + [y_i, Q_iS] beta

Each minor iteration takes the largest step that keeps every other example's
KKT condition (eqs. 10–14) and records which of the four cases limited it:
c reaches the margin (1), c reaches C (2), a margin vector reaches 0 or C
(3), an error or other vector reaches the margin (4).  R is updated
recursively when S gains (eqs. 15–17) or loses (eq. 22) a member.
Unlearning drives a_c back to 0 with the same machinery, then drops c.

Storage (§5.3): the kernel rows of the margin vectors over the learned
examples are kept as one contiguous row-major block ``_Ks`` (|S| x n_learned),
so gamma for all learned examples is a single gaxpy over those rows (eq. 30)
and no submatrix is gathered with fancy indexing in a minor iteration.  R is
kept at its exact size, C-contiguous, so that the rank-one updates of eqs. 16
and 22 run in place as one BLAS call each on its (Fortran-contiguous)
transpose, which equals R (symmetric, up to the rounding of those updates:
a few ulps, far below the drift the probe checks for).  Kernel rows are only ever evaluated over the
learned examples (a contiguous copy of them), never over the whole store.

``IncrementalOneClassSVM`` is the one-class variant (§3, eqs. 23–24, Alg. 2).

Where this implementation adds to or departs from the paper, and why:

* Drift control.  R is updated recursively and g incrementally, so rounding
  accumulates.  After every update that moved anything, |R·Q~ - I| is probed
  with one vector and the margins of S are recomputed exactly from their
  stored rows (both O(|S| n)); on drift, after an ill-conditioned inverse
  update (kappa or R_kk showing heavy cancellation), and every
  ``resync_every`` updates, g and R are recomputed from scratch, (b, a_S)
  refined by a Newton step on g_S = 0 and the equality, and any remaining
  KKT violator is driven back by the incremental step itself (``_repair``).
* Dependent examples (kappa ≈ 0, eq. 17) never enter S (``_enter``); an
  example that would leave or re-enter S with a zero-length step right after
  the opposite move is blocked instead (no immediate cycling, §4.2).
* Kernel rows: besides the rows of S (§5.3), the kernel matrix among the
  learned examples is kept while it fits ``learned_kernel_bytes`` (every such
  row is computed once anyway, when the example is learned), so an example
  re-entering S costs no kernel evaluation.  This only saves kernel
  evaluations; the results are the same up to rounding.
* gamma is computed for every learned example, not only for the E and O
  candidates of case 4: the one gemv over the contiguous rows of S (eq. 30)
  costs less than gathering the candidates' columns would, and the few
  extra entries (those of S, which are 0 up to rounding) are simply not
  watched.
* Empty S (§4.1, eqs. 25–28): only b moves, so an example driven up with
  a_c = 0 that reaches the margin first joins O with g_c = 0 (its KKT
  condition holds); otherwise the example of E or O that reaches the margin
  first becomes the first margin vector, R = [[-K_kk, y_k], [y_k, 0]].
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
from scipy.linalg import blas as _blas

from core.solvers.base import OnlineSolver, StepResult, StepTimer

# set membership codes of learned examples
SET_S, SET_E, SET_O, SET_CAND = 0, 1, 2, 3
# KKT violation of a learned example, by set: max(lo·g, hi·g, 0) gives |g| on S (g = 0),
# g on E (g <= 0), -g on O (g >= 0) and 0 for the example being driven
_VIOL_LO = np.array([1.0, 1.0, -1.0, 0.0])
_VIOL_HI = np.array([-1.0, 1.0, -1.0, 0.0])
# direction in which g of an E (+1) or O (-1) example moves towards the margin, by set
_WATCH = np.array([0.0, 1.0, -1.0, 0.0])
_SET_NAMES = {SET_S: "S", SET_E: "E", SET_O: "O", SET_CAND: "candidate"}

# driving modes: raise a_c until c satisfies its KKT condition (learning, or
# repairing an O example with g < 0); lower a_c until it does (repairing an E
# example with g > 0); lower a_c to 0 whatever happens to g_c (unlearning).
_LEARN, _LOWER, _REMOVE = "learn", "lower", "unlearn"
# a kappa below this fraction of the terms it is computed from loses digits to
# cancellation: R is then recomputed from scratch instead of recursively
_ILL_CONDITIONED = 1e-4


class IncrementalSVM(OnlineSolver):
    """Exact incremental / decremental C-SVC (Cauwenberghs & Poggio; Laskov et al. 2006).

    Parameters (besides those of :class:`~core.solvers.base.OnlineSolver`)
    ----------
    max_learned : int or None
        Learning with a limited window (§6.1): when this many examples are
        learned, the least relevant one (smallest a_i; ties: the oldest) is
        unlearned before a new example is learned.  ``None``: unlimited.
    resync_every : int
        After this many learn/unlearn calls, the margins g and the inverse R
        are recomputed from scratch (and a_S, b refined by a Newton step)
        so that long runs stay exact.  Cheap drift probes (R·Q~ ≈ I and the
        exact margins of S) every ``probe_every`` updates that moved anything
        trigger the same re-sync earlier.
    kappa_tol : float
        An example whose kappa (eq. 17) is below ``kappa_tol`` times the size of
        the terms it is the difference of (K(x, x) and |[y_k, Q_kS]|·|beta_k|) is
        linearly dependent on the margin vectors in feature space (a duplicate,
        say) and never enters S (see ``_enter``).
    learned_kernel_bytes : int
        Memory for the kernel matrix among the learned examples.  Every learned
        example's kernel row is computed once when it is learned; keeping those
        rows (while they fit in this budget) means an example re-entering S
        costs no kernel evaluation.  Beyond the budget, rows of entering
        examples are recomputed (through the kernel cache), as in §5.3.

    Raises ``IterationLimitError`` only when ``on_max_iter="raise"`` and a
    learn/unlearn needs more than ``max_iter`` minor iterations; otherwise a
    ``ConvergenceWarning`` is issued and the step reports ``status="max_iter"``.
    """

    name: ClassVar[str] = "incremental"
    exact_unlearn: ClassVar[bool] = True
    has_bias: ClassVar[bool] = True
    _offset: ClassVar[float] = 1.0  # g_i = y_i f(x_i) - offset
    _eq_target: ClassVar[float] = 0.0  # sum_i y_i a_i = target

    def __init__(self, X: np.ndarray | None = None, *, max_learned: int | None = None,
                 resync_every: int = 500, probe_every: int = 1, kappa_tol: float = 1e-9,
                 learned_kernel_bytes: int = 128 * 2**20, **params):
        if max_learned is not None and int(max_learned) < 2:
            raise ValueError("max_learned must be at least 2 (or None for no window)")
        if int(resync_every) < 1 or int(probe_every) < 1:
            raise ValueError("resync_every and probe_every must be at least 1")
        if not (np.isfinite(kappa_tol) and kappa_tol > 0):
            raise ValueError("kappa_tol must be a positive number")
        self.max_learned = None if max_learned is None else int(max_learned)
        self.resync_every = int(resync_every)
        self.probe_every = int(probe_every)
        self.kappa_tol = float(kappa_tol)
        if int(learned_kernel_bytes) < 0:
            raise ValueError("learned_kernel_bytes must be >= 0")
        self.learned_kernel_bytes = int(learned_kernel_bytes)
        self._reset_model()
        super().__init__(X, **params)

    # ------------------------------------------------------------------ state
    def _reset_model(self, cap_learned: int = 64, cap_margin: int = 16) -> None:
        self._nL = 0  # number of learned examples (positions 0.._nL-1)
        self._m = 0  # |S|
        self._pidx = np.zeros(cap_learned, dtype=np.intp)  # store index of each position
        self._py = np.zeros(cap_learned)  # label
        self._pa = np.zeros(cap_learned)  # alpha
        self._pg = np.zeros(cap_learned)  # margin g
        self._pst = np.zeros(cap_learned, dtype=np.int8)  # set membership
        self._pseq = np.zeros(cap_learned, dtype=np.int64)  # learning sequence number (tie-breaks)
        self._slot = np.full(cap_learned, -1, dtype=np.intp)  # row of _Ks / slot in S, -1 if not in S
        self._Spos = np.zeros(cap_margin, dtype=np.intp)  # position of each S slot
        self._yS = np.zeros(cap_margin)  # label of each S slot (contiguous, for eqs. 7 and 30)
        self._Ks = np.zeros((cap_margin, cap_learned))  # kernel rows of S over learned (§5.3)
        # R = Q~^{-1}, (m+1)x(m+1), symmetric, stored at its exact size and C-contiguous so that
        # R.T is a Fortran-contiguous view BLAS can update in place (eqs. 16 and 22)
        self._R = np.zeros((1, 1))
        n_features = getattr(getattr(self, "store", None), "n_features", None) or 0
        self._XL = np.zeros((cap_learned, n_features))  # learned examples, contiguous (see _kernel_row)
        self._sqL = np.zeros(cap_learned)
        # kernel matrix among the learned examples (by position), while it fits its budget
        self._KLL: np.ndarray | None = (np.zeros((cap_learned, cap_learned))
                                        if cap_learned ** 2 * 8 <= self.learned_kernel_bytes else None)
        self._b = 0.0
        self._seq = 0
        self._since_sync = 0
        self._since_probe = 0
        self._n_resync = 0
        self._n_refresh = 0
        self._kscale: float | None = None
        self._probe = np.zeros(0)  # fixed probe vector of _probe_drift
        self._pos_in_seq_order = True  # learned positions in learning order (until a deletion moves one)
        self._resync_pending = False
        self._moved = False  # a drive took a step since the last drift check
        self._pos_of = np.full(len(getattr(self, "store", ())), -1, dtype=np.intp)

    def _on_store_grown(self, n_new: int) -> None:
        self._pos_of = np.concatenate([self._pos_of, np.full(n_new, -1, dtype=np.intp)])

    def get_params(self) -> dict[str, Any]:
        p = super().get_params()
        p.update(max_learned=self.max_learned, resync_every=self.resync_every,
                 probe_every=self.probe_every, kappa_tol=self.kappa_tol,
                 learned_kernel_bytes=self.learned_kernel_bytes)
        return p

    def _grow_learned(self) -> None:
        cap = len(self._pidx)
        if self._nL < cap:
            return
        new = 2 * cap
        for nm in ("_pidx", "_py", "_pa", "_pg", "_pst", "_pseq", "_slot"):
            old = getattr(self, nm)
            arr = np.full(new, -1, dtype=old.dtype) if nm == "_slot" else np.zeros(new, dtype=old.dtype)
            arr[:cap] = old
            setattr(self, nm, arr)
        Ks = np.zeros((self._Ks.shape[0], new))
        Ks[:, :cap] = self._Ks
        self._Ks = Ks
        if self._KLL is not None:
            if new ** 2 * 8 <= self.learned_kernel_bytes:
                KLL = np.zeros((new, new))
                KLL[:cap, :cap] = self._KLL
                self._KLL = KLL
            else:  # over budget: from now on rows of entering examples are recomputed
                self._KLL = None
        XL = np.zeros((new, self._XL.shape[1]))
        XL[:cap] = self._XL
        sqL = np.zeros(new)
        sqL[:cap] = self._sqL
        self._XL, self._sqL = XL, sqL

    def _grow_margin(self) -> None:
        cap = len(self._Spos)
        if self._m < cap:
            return
        new = 2 * cap
        Spos = np.zeros(new, dtype=np.intp)
        Spos[:cap] = self._Spos
        yS = np.zeros(new)
        yS[:cap] = self._yS
        Ks = np.zeros((new, self._Ks.shape[1]))
        Ks[:cap] = self._Ks
        self._Spos, self._yS, self._Ks = Spos, yS, Ks

    # --------------------------------------------------------- kernel access
    def _kernel_row(self, i: int) -> np.ndarray:
        """K(x_i, x_j) for a learned store example i against the learned examples j (by position).

        §5.3: the solver works on kernel rows over the learned examples only, evaluated
        against their contiguous copy ``_XL`` — never over the whole store, whose
        unlabelled pool can be many times larger.  Only when the learned-kernel
        matrix is over its budget (rows of entering examples are then needed again
        later) and the store is not much larger than the learned set are full store
        rows taken through the LRU kernel cache.
        """
        nL = self._nL
        if self._KLL is None and len(self.store) <= 2 * nL + 16:
            return self.cache.row(i)[self._pidx[:nL]]
        self.cache.n_evals += nL
        p = int(self._pos_of[i])
        return self.kernel(self._XL[p:p + 1], self._XL[:nL], sq_a=self._sqL[p:p + 1], sq_b=self._sqL[:nL])[0]

    def _learned_row(self, k: int) -> np.ndarray:
        """Kernel row of learned position k over the learned examples (kept, or recomputed)."""
        if self._KLL is not None:
            return self._KLL[k, : self._nL]
        return self._kernel_row(int(self._pidx[k]))

    def _kernel_scale(self) -> float:
        """max K(x_i, x_i) over the learned examples (kept up to date on learn; an upper bound after unlearn)."""
        if self._kscale is None:
            d = self.cache.diag(self._pidx[: self._nL]) if self._nL else np.ones(1)
            self._kscale = float(max(1e-300, np.max(d)))
        return self._kscale

    # ----------------------------------------------------- S-set bookkeeping
    def _S_add(self, k: int, beta_k: np.ndarray | None, kappa: float, krow: np.ndarray) -> None:
        """Add position k to S and update R (eqs. 15–17); first member: explicit inverse."""
        self._grow_margin()
        m, nL = self._m, self._nL
        yk = self._py[k]
        if m == 0:
            # Q~ = [[0, y_k], [y_k, K_kk]]  =>  R = [[-K_kk, y_k], [y_k, 0]]   (y_k^2 = 1)
            R = np.array([[-krow[k], yk], [yk, 0.0]])
        else:
            # eq. 16: R <- [[R, 0], [0, 0]] + [beta_k; 1][beta_k; 1]^T / kappa, a rank-one BLAS update
            R = np.zeros((m + 2, m + 2))
            R[: m + 1, : m + 1] = self._R
            v = np.empty(m + 2)
            v[: m + 1] = beta_k
            v[m + 1] = 1.0
            _blas.dger(1.0 / kappa, v, v, a=R.T, overwrite_a=1)
        self._R = R
        self._Ks[m, :nL] = krow
        self._Spos[m] = k
        self._yS[m] = yk
        self._slot[k] = m
        self._m = m + 1
        self._pst[k] = SET_S
        self._pg[k] = 0.0

    def _S_remove(self, k: int) -> None:
        """Remove position k from S and update R (eq. 22): R_ij -= R_ik R_kj / R_kk."""
        j = int(self._slot[k])
        m, nL = self._m, self._nL
        r = j + 1
        refresh = False
        if m > 1:
            R = self._R
            col = R[:, r].copy()
            # R is symmetric: one rank-one BLAS update in place on its Fortran view
            _blas.dger(-1.0 / col[r], col, col, a=R.T, overwrite_a=1)
            # R_kk = 1/kappa_k of k against the rest: a large one means k was nearly
            # dependent and the downdate cancels badly; recompute R afterwards
            refresh = abs(col[r]) * self._kernel_scale() * _ILL_CONDITIONED > 1.0
            last = m  # R index of the last slot
            if r != last:
                R[r, :] = R[last, :]
                R[:, r] = R[:, last]
                self._Ks[j, :nL] = self._Ks[m - 1, :nL]
                moved = self._Spos[m - 1]
                self._Spos[j] = moved
                self._yS[j] = self._yS[m - 1]
                self._slot[moved] = j
            self._R = R[:m, :m].copy()
        else:
            self._R = np.zeros((1, 1))
        self._slot[k] = -1
        self._m = m - 1
        if refresh:
            self._refresh_R()

    def _sensitivity(self, yc: float, kS: np.ndarray) -> np.ndarray:
        """beta = -R [y_c; Q_Sc] (eq. 7) for a driven example with kernel values kS against S."""
        m = self._m
        rhs = np.empty(m + 1)
        rhs[0] = yc
        np.multiply(self._yS[:m], kS, out=rhs[1:])
        rhs[1:] *= yc
        return -(self._R @ rhs)

    # --------------------------------------------------- learned-set storage
    def _append(self, i: int, y: float) -> int:
        if self._XL.shape[1] != self.store.n_features:
            self._XL = np.zeros((len(self._pidx), self.store.n_features))
        self._grow_learned()
        p = self._nL
        self._XL[p] = self.store.X[i]
        self._sqL[p] = self.store.sq_norms[i]
        self._nL += 1
        self._pidx[p] = i
        self._py[p] = y
        self._pa[p] = 0.0
        self._pg[p] = 0.0
        self._pst[p] = SET_CAND
        self._pseq[p] = self._seq
        self._slot[p] = -1
        self._seq += 1
        self._pos_of[i] = p
        self.y[i] = y
        self.learned_order.append(i)
        if self._kscale is not None:
            self._kscale = max(self._kscale, float(self.cache.diag(i)))
        return p

    def _new_column(self, p: int, krow: np.ndarray) -> None:
        """Kernel values of the new learned position p against S (a column of _Ks)."""
        m = self._m
        if m:
            self._Ks[:m, p] = krow[self._Spos[:m]]
        if self._KLL is not None:
            nL = self._nL
            self._KLL[p, :nL] = krow
            self._KLL[:nL, p] = krow

    def _delete_position(self, p: int) -> None:
        """Drop learned position p (not in S, a_p = 0); the last position moves into its place."""
        i = int(self._pidx[p])
        q = self._nL - 1
        if p != q:
            self._pos_in_seq_order = False
            for nm in ("_pidx", "_py", "_pa", "_pg", "_pst", "_pseq", "_slot", "_XL", "_sqL"):
                arr = getattr(self, nm)
                arr[p] = arr[q]
            self._pos_of[self._pidx[p]] = p
            m = self._m
            if m:
                self._Ks[:m, p] = self._Ks[:m, q]
            if self._slot[p] >= 0:
                self._Spos[self._slot[p]] = p
            if self._KLL is not None:
                self._KLL[p, : q + 1] = self._KLL[q, : q + 1]
                self._KLL[: q + 1, p] = self._KLL[: q + 1, q]
        self._slot[q] = -1
        self._nL = q
        self._pos_of[i] = -1
        self.y[i] = 0.0
        self.learned_order.remove(i)

    def _margin_of(self, p: int, krow: np.ndarray) -> float:
        """g_p from scratch: y_p (sum_j a_j y_j K_pj + b) - offset."""
        nL = self._nL
        coef = self._pa[:nL] * self._py[:nL]
        return float(self._py[p] * (krow @ coef + self._b) - self._offset)

    # ------------------------------------------------------------ the drive
    def _drive(self, p: int, mode: str, krow_p: np.ndarray | None = None) -> tuple[int, str]:
        """Move a_p (status 'candidate') until its KKT condition holds (learn/lower) or a_p = 0 (unlearn).

        Returns (minor iterations, message).

        The loop body is written for a small, fixed number of NumPy calls per minor
        iteration (its cost is call overhead, not arithmetic, for the sizes of an
        active-learning session): views are taken once per drive, gamma of every
        learned example is one gemv over the contiguous rows of S (eq. 30), and R
        is updated in place by BLAS rank-one updates (``_S_add``, ``_S_remove``).
        """
        C = self.C
        d = 1.0 if mode == _LEARN else -1.0
        if krow_p is None:
            krow_p = self._learned_row(p)
        nL = self._nL
        # views of the learned-example arrays: stable for the whole drive (only _append reallocates them)
        y, st, g, a, pseq = self._py[:nL], self._pst[:nL], self._pg[:nL], self._pa[:nL], self._pseq[:nL]
        yp = float(y[p])
        ypd = yp * d
        scale = self._kernel_scale()
        kpp = abs(float(krow_p[p]))
        eps_beta = 1e-12
        kkt_slack = 1e-9
        ykp_d = ypd * krow_p[:nL]  # y_p d K_pj: the driven example's own term of eq. 8, divided by y_j
        d_Qp = ykp_d * y  # d Q_jp, gathered over S for eq. 7
        # positions in learning order: the first of equal largest q is the oldest example
        in_seq_order = self._pos_in_seq_order
        seq_p = int(pseq[p])
        # watch_i = +1 for E, -1 for O examples whose margin may limit the step (case 4):
        # dg_i * watch_i > 0 means g_i moves towards 0.  Examples that violate their KKT
        # condition (pending repair) and blocked ones are not watched.
        watch = _WATCH.take(st)
        watch[watch * g > kkt_slack] = 0.0
        blocked: list[int] = []

        def unblock() -> None:
            for j in blocked:
                if st[j] == SET_E:
                    watch[j] = 1.0
                elif st[j] == SET_O:
                    watch[j] = -1.0
            blocked.clear()

        def block(j: int) -> None:
            watch[j] = 0.0
            blocked.append(j)

        rate = np.empty(nL)  # watch * dg
        q = np.empty(nL)
        off = np.empty(nL, dtype=bool)
        prev: tuple[str, int, bool] | None = None
        iters = 0
        msg = ""
        cases: list[str] = []
        self._last_cases = cases
        errstate = np.errstate(divide="ignore", invalid="ignore")
        errstate.__enter__()
        try:
            while True:
                if iters >= self.max_iter:
                    msg = self._iteration_cap(f"{mode} of example {int(self._pidx[p])}", iters)
                    self._last_status = "max_iter"
                    break
                iters += 1
                m = self._m
                if m == 0:
                    # §4.1, eqs. 25–28: with S empty only the bias moves.  db = d y_p t,
                    # dg_i = y_i db; the direction is the one in which the example that
                    # enters S can absorb the change of a_p under sum_i y_i a_i = target.
                    bd = S = aS = None
                    dg = y * ypd
                    eps_gamma = bsum = 0.0
                else:
                    S = self._Spos[:m]
                    yS = self._yS[:m]
                    # eq. 7 along the drive: bd = d beta = -R d [y_p; Q_Sp], Q_Sp = y_S y_p K_Sp
                    rhs = np.empty(m + 1)
                    rhs[0] = ypd
                    d_Qp.take(S, out=rhs[1:])
                    bd = self._R.dot(rhs)
                    np.negative(bd, out=bd)
                    da = bd[1:]
                    # dg/dt = d gamma (eq. 8) for every learned example by one gaxpy over the
                    # contiguous rows of S (eq. 30): y_j (sum_s da_s y_s K_sj + d y_p K_pj + db).
                    # For j in S it is 0 up to rounding; g_S is set to exactly 0 after the step.
                    dg = (yS * da) @ self._Ks[:m, :nL]
                    dg += ykp_d
                    dg += bd[0]
                    dg *= y
                    # gamma_i is a sum of terms of size up to scale·(1 + |beta_S|_1) + |beta_b|;
                    # below a small multiple of that it is rounding: the example does not move.
                    bsum = scale * (1.0 + _blas.dasum(da)) + abs(float(bd[0]))
                    eps_gamma = 1e-11 * bsum

                # candidate events as (t, case rank, seq of the example, kind, position); the smallest
                # wins: shortest step, then case order, then the oldest example (deterministic ties)
                best = None
                # case 1 (eq. 10): the driven example reaches the margin
                if mode != _REMOVE:
                    rate_p = float(dg[p])
                    # kappa_p = gamma_p (eq. 17) must be clearly non-zero for p to enter S
                    thresh = 0.5 if m == 0 else max(self.kappa_tol * (kpp + bsum), eps_gamma)
                    if mode == _LEARN and rate_p > thresh:
                        best = (max(0.0, -float(g[p]) / rate_p), 0, seq_p, "c_margin", p)
                    elif mode == _LOWER and rate_p < -thresh:
                        best = (max(0.0, float(g[p]) / -rate_p), 0, seq_p, "c_margin", p)
                if m > 0:
                    # case 2 (eq. 11): the driven example reaches its bound
                    t2 = C - float(a[p]) if mode == _LEARN else float(a[p])
                    if best is None or (t2, 1) < best[:2]:
                        best = (t2, 1, seq_p, "c_bound", p)
                    # case 3 (eq. 12): a margin vector reaches C (da > 0) or 0 (da < 0);
                    # one whose |da| <= eps_beta does not move (t = inf)
                    aS = a.take(S)
                    t3 = np.heaviside(da, 0.0)  # (C [da > 0] - a_S) / da, clipped at 0
                    t3 *= C
                    t3 -= aS
                    t3 /= da
                    np.maximum(t3, 0.0, out=t3)
                    j3 = int(t3.argmin())
                    masked = False
                    if not abs(float(da[j3])) > eps_beta:
                        # a non-moving one came first (or a 0/0 = nan, which argmin returns
                        # first): exclude the non-moving ones (|da| <= eps_beta) and look again
                        t3[~(np.abs(da) > eps_beta)] = math.inf
                        masked = True
                        j3 = int(t3.argmin())
                    tmin = float(t3[j3])
                    if tmin < math.inf and (tmin, 2) <= best[:2]:
                        if np.count_nonzero(t3 == tmin) > 1:
                            if not masked:  # non-moving ones may be among the tied
                                t3[~(np.abs(da) > eps_beta)] = math.inf
                            ties = (t3 == tmin).nonzero()[0]
                            if len(ties) > 1:  # the oldest of the tied
                                j3 = int(ties[pseq.take(S.take(ties)).argmin()])
                        k3 = int(S[j3])
                        cand3 = (tmin, 2, int(pseq[k3]), "leave", k3)
                        if cand3 < best:
                            best = cand3
                # case 4 (eqs. 13–14): an error or other vector reaches the margin, t = -g_i / dg_i
                # over the watched examples moving towards it (watch_i dg_i > eps_gamma)
                # (the smallest t is the largest q = g_i / dg_i; q is -inf where not admissible)
                np.multiply(watch, dg, out=rate)
                np.divide(g, dg, out=q)
                np.less_equal(rate, eps_gamma, out=off)
                np.copyto(q, -math.inf, where=off)
                k4 = int(q.argmax())
                q4 = float(q[k4])
                tmin = max(0.0, -q4)
                if q4 > -math.inf and (best is None or (tmin, 3) < best[:2]):
                    # ties at the same t (all of t <= 0 count as t = 0): the oldest example
                    if q4 >= 0.0 or not in_seq_order:
                        tie = np.greater_equal(q, 0.0, out=off) if q4 >= 0.0 else np.equal(q, q4, out=off)
                        if np.count_nonzero(tie) > 1:
                            ties = tie.nonzero()[0]
                            k4 = int(ties[pseq.take(ties).argmin()])
                    best = (tmin, 3, int(pseq[k4]), "enter", k4)

                if best is None:
                    # Only possible when unlearning with S empty and nothing left to absorb
                    # a_p: then a_p is rounding residue of the equality constraint.
                    if mode == _REMOVE and a[p] <= 1e-9 * C:
                        a[p] = 0.0
                        cases.append("residue")
                        break
                    msg = self._iteration_cap(f"{mode} of example {int(self._pidx[p])} (no admissible step)",
                                              iters)
                    self._last_status = "max_iter"
                    break

                t, _, _, kind, k = best
                self._moved = True
                # apply the step
                if m == 0:
                    self._b += ypd * t
                    _blas.daxpy(dg, g, a=t)  # g += dg t, in place
                else:
                    a[p] += d * t
                    # margin vectors tied with the limiting one land on a bound up to rounding:
                    # keep the box exact (the equality moves by rounding only)
                    _blas.daxpy(da, aS, a=t)  # a_S += da t, in place
                    np.maximum(aS, 0.0, out=aS)
                    np.minimum(aS, C, out=aS)
                    a[S] = aS
                    self._b += float(bd[0]) * t
                    _blas.daxpy(dg, g, a=t)  # g += dg t, in place
                    g[S] = 0.0
                cases.append(kind)
                zero = t == 0.0

                if kind == "c_margin":
                    g[p] = 0.0
                    if a[p] <= 0.0:
                        a[p] = 0.0
                        st[p] = SET_O
                    elif a[p] >= C:
                        a[p] = C
                        st[p] = SET_E
                    elif m == 0:
                        self._S_add(p, None, 1.0, krow_p)
                    else:
                        kappa_p = float(dg[p] * d)  # kappa_p = gamma_p (eq. 17)
                        self._S_add(p, bd * d, kappa_p, krow_p)  # with beta_p = bd / d
                        if kappa_p <= _ILL_CONDITIONED * (kpp + bsum):
                            self._refresh_R()
                    break
                if kind == "c_bound":
                    if mode == _LEARN:
                        a[p] = C
                        st[p] = SET_E
                    else:
                        a[p] = 0.0
                        st[p] = SET_O
                    break
                if kind == "leave":
                    up = bd[1 + self._slot[k]] > 0
                    a[k] = C if up else 0.0
                    self._S_remove(k)
                    st[k] = SET_E if up else SET_O
                    g[k] = 0.0
                    if zero and prev is not None and prev[:2] == ("enter", k):
                        # §4.2: no immediate cycling — k entered S in the previous iteration and
                        # would leave it again without any progress: keep it out of S for now.
                        block(k)
                    else:
                        unblock()
                        watch[k] = 1.0 if up else -1.0
                    prev = ("leave", k, zero)
                    continue
                # kind == "enter"
                g[k] = 0.0
                if zero and prev is not None and prev[0] == "leave" and prev[1] == k:
                    block(k)  # §4.2: it just left S with no progress; do not bring it back at once
                    prev = ("blocked", k, zero)
                    continue
                if self._enter(k):
                    watch[k] = 0.0
                    unblock()
                else:
                    block(k)
                prev = ("enter", k, zero)
        finally:
            errstate.__exit__(None, None, None)
        return iters, msg

    def _enter(self, k: int) -> bool:
        """Bring E/O position k into S unless its kappa (eq. 17) is ~0.

        A kappa near zero means x_k is (numerically) linearly dependent on the
        margin vectors in the bordered feature space — a duplicate, or a point
        collinear with them under a linear kernel.  Then Q~ with k added is
        singular, and, for the same reason, gamma_k = 0 for every driven example:
        g_k no longer moves while S is unchanged.  Such a point is therefore not
        added to S (it would make Q~ singular); it stays in E or O at g_k = 0,
        which satisfies its KKT condition, and is blocked from case 4 until S
        changes.  Should rounding leave it slightly violating later, the repair
        step (``_repair``) drives it back like any other example.
        """
        krow = self._learned_row(k)
        if self._m == 0:
            self._S_add(k, None, 1.0, krow)
            return True
        beta_k, kappa, size = self._kappa_of(k, krow)
        if kappa <= _ILL_CONDITIONED * size:
            # kappa is a small difference of large terms: decide with a fresh inverse,
            # not with one that recursive updates may have perturbed
            self._refresh_R()
            beta_k, kappa, size = self._kappa_of(k, krow)
        if not math.isfinite(kappa) or kappa <= self.kappa_tol * max(size, 1e-300):
            return False
        self._S_add(k, beta_k, kappa, krow)
        if kappa <= _ILL_CONDITIONED * size:
            self._refresh_R()  # eq. 16 divides by kappa: do not carry its rounding forward
        return True

    def _kappa_of(self, k: int, krow: np.ndarray) -> tuple[np.ndarray, float, float]:
        """beta_k = -R [y_k; Q_Sk] and kappa_k = Q_kk + [y_k, Q_kS] beta_k (eq. 17), with the size
        of the terms kappa is the difference of."""
        m = self._m
        yk = float(self._py[k])
        rhs = np.empty(m + 1)  # [y_k; Q_Sk]
        rhs[0] = yk
        np.multiply(self._yS[:m], krow.take(self._Spos[:m]), out=rhs[1:])
        rhs[1:] *= yk
        beta_k = self._R @ rhs
        np.negative(beta_k, out=beta_k)
        kkk = float(krow[k])
        kappa = kkk + float(rhs @ beta_k)
        size = abs(kkk) + float(np.abs(rhs) @ np.abs(beta_k))
        return beta_k, kappa, size

    def _refresh_R(self) -> None:
        """R = Q~^{-1} from scratch (after an ill-conditioned recursive update)."""
        m = self._m
        if m == 0:
            return
        try:
            R = np.linalg.inv(self._Qtilde())
        except np.linalg.LinAlgError:  # keep the recursive R
            return
        if np.all(np.isfinite(R)):
            self._R = np.ascontiguousarray(R)
            self._n_refresh += 1
            # the margins were moved with the perturbed inverse: recompute them at the end of this update
            self._resync_pending = True

    # ------------------------------------------------------------- repair
    def _violations(self) -> np.ndarray:
        nL = self._nL
        st, g = self._pst[:nL], self._pg[:nL]
        v = _VIOL_LO.take(st)
        v *= g
        w = _VIOL_HI.take(st)
        w *= g
        np.maximum(v, w, out=v)
        return np.maximum(v, 0.0, out=v)

    def _repair_tol(self) -> float:
        """Violations below this are rounding: the margins are sums of terms of size up to C·max K."""
        return 1e-10 * max(1.0, self.C * self._kernel_scale())

    def _repair(self, tol: float | None = None, passes: int = 3) -> int:
        """Drive every learned example whose (maintained) KKT condition is violated back to it.

        This is the incremental step applied to an example already learned:
        an O example with g < 0 is driven up, an E example with g > 0 down.
        It closes the small violations that rounding or a blocked dependent
        point may leave, and initialises the one-class problem (Alg. 2).
        """
        tol = self._repair_tol() if tol is None else tol
        iters = 0
        for _ in range(passes):
            v = self._violations()
            bad = np.flatnonzero(v > tol)
            if not len(bad):
                break
            for k_seq in np.sort(self._pseq[bad]):
                nL = self._nL
                k = int(np.flatnonzero(self._pseq[:nL] == k_seq)[0])
                st, g = self._pst[k], self._pg[k]
                if st == SET_O and g < -tol:
                    mode = _LEARN
                elif st == SET_E and g > tol:
                    mode = _LOWER
                else:
                    continue
                self._pst[k] = SET_CAND
                it, _ = self._drive(k, mode)
                iters += it
                if self._pst[k] == SET_CAND:  # cap hit: leave it where it is
                    self._pst[k] = SET_E if self._pa[k] >= self.C else SET_O
        return iters

    # ------------------------------------------------------------ re-sync
    def _Qtilde(self) -> np.ndarray:
        m = self._m
        S = self._Spos[:m]
        yS = self._yS[:m]
        Qt = np.empty((m + 1, m + 1))
        Qt[0, 0] = 0.0
        Qt[0, 1:] = yS
        Qt[1:, 0] = yS
        np.multiply(self._Ks[:m].take(S, axis=1), yS[:, None] * yS, out=Qt[1:, 1:])
        return Qt

    def _probe_drift(self) -> float:
        """Cheap estimate of |R Q~ - I| with one fixed probe vector (O(|S|^2)); Q~ v without forming Q~."""
        m = self._m
        if m == 0:
            return 0.0
        if len(self._probe) < m + 1:
            n = max(2 * len(self._probe), m + 1)
            self._probe = np.cos(np.arange(n) * 1.234567 + 0.5)  # fixed, max |v| > 0.87 from n = 1
        v = self._probe[: m + 1]
        S, yS = self._Spos[:m], self._yS[:m]
        u = np.empty(m + 1)
        u[0] = yS @ v[1:]
        np.dot(self._Ks[:m].take(S, axis=1), yS * v[1:], out=u[1:])
        u[1:] += v[0]
        u[1:] *= yS
        r = self._R @ u
        r -= v
        return float(np.abs(r).max()) / float(np.abs(v).max())

    def _resync(self) -> None:
        """Recompute g and R from scratch, refine (b, a_S) by one Newton step, repair."""
        nL, m = self._nL, self._m
        self._n_resync += 1
        self._since_sync = 0
        self._resync_pending = False
        if nL == 0:
            return
        idxL = self._pidx[:nL]
        y, a = self._py[:nL], self._pa[:nL]
        S = self._Spos[:m]
        h_other = np.zeros(nL)
        other = np.flatnonzero((a > 0) & (self._slot[:nL] < 0))
        if len(other):
            rows = self._KLL[other, :nL] if self._KLL is not None else self.cache.block(idxL[other], idxL)
            h_other = (a[other] * y[other]) @ rows

        def margins() -> np.ndarray:
            h = h_other + ((a[S] * y[S]) @ self._Ks[:m, :nL] if m else 0.0)
            return y * (h + self._b) - self._offset

        g = margins()
        if m:
            try:
                R = np.linalg.inv(self._Qtilde())
                if np.all(np.isfinite(R)):
                    self._R = np.ascontiguousarray(R)
            except np.linalg.LinAlgError:  # keep the recursive R
                pass
            # Newton steps on the equality and g_S = 0: Q~ [db; da_S] = -[sum y a - target; g_S].
            # A step is kept only if it stays inside the box and reduces the residual.
            for _ in range(2):
                r = np.empty(m + 1)
                r[0] = float(a @ y) - self._eq_target
                r[1:] = g[S]
                res = np.max(np.abs(r))
                if res == 0.0:
                    break
                delta = -(self._R @ r)
                new_aS = a[S] + delta[1:]
                if not (np.all(np.isfinite(delta)) and new_aS.min() >= 0.0 and new_aS.max() <= self.C):
                    break
                old_aS, old_b = a[S].copy(), self._b
                a[S] = new_aS
                self._b += delta[0]
                g_new = margins()
                r[0] = float(a @ y) - self._eq_target
                r[1:] = g_new[S]
                if np.max(np.abs(r)) >= res:
                    a[S], self._b = old_aS, old_b
                    break
                g = g_new
        self._pg[:nL] = g
        self._repair()

    def _margin_drift(self) -> float:
        """Exact |g_S| from the stored rows of S (O(|S| n_learned)): the margins of S must be 0."""
        m, nL = self._m, self._nL
        if m == 0:
            return 0.0
        coef = self._pa[:nL] * self._py[:nL]
        gS = self._Ks[:m, :nL] @ coef
        gS += self._b
        gS *= self._yS[:m]
        gS -= self._offset
        return float(np.abs(gS).max())

    def _after_update(self) -> None:
        """Drift control: probe R·Q~ ≈ I and the exact margins of S; re-sync when they drift,
        after an ill-conditioned inverse update, or every ``resync_every`` updates."""
        self._since_sync += 1
        self._since_probe += 1
        if not self._moved and not self._resync_pending and self._since_sync < self.resync_every:
            return  # nothing but a new O example: no margin or inverse has changed
        self._moved = False
        drift = 0.0
        if self._since_probe >= self.probe_every:
            self._since_probe = 0
            drift = max(self._probe_drift(), self._margin_drift() / max(1.0, self.C * self._kernel_scale()))
        if self._resync_pending or self._since_sync >= self.resync_every or drift > 1e-8:
            self._resync()
            if self._resync_pending:  # the repair inside needed an ill-conditioned update itself
                self._resync()
        elif self._violations().max(initial=0.0) > self._repair_tol():
            self._repair()

    # -------------------------------------------------------- the contract
    def _gap_maintained(self) -> float:
        """LASVM's largest violating pair (base ``kkt_gap``) from the maintained margins."""
        nL = self._nL
        if nL == 0:
            return 0.0
        y, a, g = self._py[:nL], self._pa[:nL], self._pg[:nL]
        # LASVM's g_i = y_i - sum_j a_j y_j K_ij = b - y_i (g_i + offset - 1); a_i y_i can grow
        # when (y_i > 0, a_i < C) or (y_i < 0, a_i > 0), shrink in the mirrored cases
        G = g + (self._offset - 1.0)
        G *= y
        np.subtract(self._b, G, out=G)
        eps = 1e-12 * self.C
        below, above = a < self.C - eps, a > eps
        pos = y > 0
        g_up = float(G.max(where=np.where(pos, below, above), initial=-math.inf))
        g_down = float(G.min(where=np.where(pos, above, below), initial=math.inf))
        if g_up == -math.inf or g_down == math.inf:
            return 0.0
        return max(0.0, g_up - g_down)

    def _result(self, timer: StepTimer, iters: int, msg: str, p: int | None, **extra) -> StepResult:
        status = self._last_status
        info = dict(n_S=self._m, n_E=int(np.count_nonzero(self._pst[: self._nL] == SET_E)),
                    n_learned=self._nL, cases=list(self._last_cases), **extra)
        if p is not None and p < self._nL:
            info["set"] = _SET_NAMES[int(self._pst[p])]
        return timer.result(status=status, iterations=iters, kkt_gap=self._gap_maintained(),
                            message=msg, extra=info)

    def _evict_for_window(self) -> tuple[int, list]:
        """§6.1: unlearn the least relevant example (smallest a_i, ties → oldest)."""
        nL = self._nL
        order = np.lexsort((self._pseq[:nL], self._pa[:nL]))
        victim = int(self._pidx[order[0]])
        it, _ = self._remove(victim)
        return it, [victim]

    def learn(self, i: int, y: float) -> StepResult:
        """Learn store example ``i`` with label ``y`` exactly (incremental step of C&P / Laskov et al.).

        The step record's ``iterations`` counts minor iterations (set changes),
        ``extra["cases"]`` lists which case limited each of them, ``extra["set"]``
        is where the example ended (S, E or O) and ``extra["evicted"]`` the
        example a full window unlearned first.
        """
        i, y = self._check_learnable(i, y)
        self._last_status, self._last_cases = "ok", []
        with StepTimer(self) as tm:
            iters, evicted = 0, []
            if self.max_learned is not None and self._nL >= self.max_learned:
                iters, evicted = self._evict_for_window()
            p = self._append(i, y)
            krow = self._kernel_row(i)
            self._new_column(p, krow)
            g = self._margin_of(p, krow)
            self._pg[p] = g
            msg = ""
            if g >= -1e-12:
                self._pst[p] = SET_O  # already satisfies its KKT condition with a_p = 0
            else:
                it, msg = self._drive(p, _LEARN, krow)
                iters += it
                if self._pst[p] == SET_CAND:
                    self._pst[p] = SET_E if self._pa[p] >= self.C else SET_O
            self._after_update()
        p = int(self._pos_of[i])
        return self._result(tm, iters, msg, p, evicted=evicted)

    def _remove(self, i: int) -> tuple[int, str]:
        p = int(self._pos_of[i])
        iters, msg = 0, ""
        if self._pst[p] == SET_S:
            self._S_remove(p)
        self._pst[p] = SET_CAND
        if self._pa[p] > 0:
            iters, msg = self._drive(p, _REMOVE)
        self._pa[p] = 0.0
        self._delete_position(int(self._pos_of[i]))
        self._snap_single_class()
        return iters, msg

    def _snap_single_class(self) -> None:
        """With one class left, sum_i y_i a_i = 0 forces every a_i = 0: clear the rounding residue."""
        nL = self._nL
        if nL == 0:
            return
        y = self._py[:nL]
        if not np.all(y == y[0]) or not np.any(self._pa[:nL] > 0):
            return
        while self._m:
            self._S_remove(int(self._Spos[self._m - 1]))
        self._pa[:nL] = 0.0
        self._pst[:nL] = SET_O
        if y[0] * self._b < 1.0:
            self._b = float(y[0])
        self._pg[:nL] = y * self._b - 1.0

    def unlearn(self, i: int) -> StepResult:
        """Remove example ``i`` exactly: a_i is driven to 0 (decremental step), then i is dropped.

        The result equals training without ``i`` (up to rounding).
        """
        i = self._check_unlearnable(i)
        self._last_status, self._last_cases = "ok", []
        with StepTimer(self) as tm:
            iters, msg = self._remove(i)
            self._after_update()
        return self._result(tm, iters, msg, None, removed=i)

    def decision_function(self, idx=None, X: np.ndarray | None = None) -> np.ndarray:
        """f for stored indices ``idx`` (default: all), or for new points ``X``.

        Stored indices are scored in blocks of rows against a contiguous copy of
        the support vectors, so scoring a large pool never gathers a copy of it
        (which would also push the solver's own arrays out of the CPU caches just
        before the next label is learned).  Same kernel evaluations, counted alike.
        """
        if X is not None or self.cache is None:
            return super().decision_function(idx, X)
        sv, coef, b = self.coefficients()
        idx = np.arange(len(self.store)) if idx is None else np.asarray(idx, dtype=np.intp).reshape(-1)
        if len(sv) == 0 or len(idx) == 0:
            return np.full(len(idx), b)
        self.cache.n_evals += len(idx) * len(sv)
        Xs, sq = self.store.X, self.store.sq_norms
        X_sv, sq_sv = Xs[sv], sq[sv]
        f = np.empty(len(idx))
        block = 256
        for start in range(0, len(idx), block):
            rows = idx[start:start + block]
            f[start:start + block] = self.kernel(Xs[rows], X_sv, sq_a=sq[rows], sq_b=sq_sv) @ coef
        f += b
        return f

    def coefficients(self) -> tuple[np.ndarray, np.ndarray, float]:
        nL = self._nL
        a = self._pa[:nL]
        sv = np.flatnonzero(a > 0)
        idx = self._pidx[sv]
        order = np.argsort(idx, kind="stable")
        return idx[order].astype(np.intp), (a[sv] * self._py[sv])[order], float(self._b)

    # ------------------------------------------------------------ read-outs
    @property
    def alpha_(self) -> np.ndarray:
        """a_i of every learned example, in ``labelled_`` order."""
        L = self.labelled_
        return self._pa[self._pos_of[L]] if len(L) else np.zeros(0)

    def sets(self) -> dict[str, np.ndarray]:
        """Store indices of the margin (S), error (E) and other (O) vectors."""
        nL = self._nL
        st = self._pst[:nL]
        return {nm: np.sort(self._pidx[:nL][st == code]) for code, nm in
                ((SET_S, "S"), (SET_E, "E"), (SET_O, "O"))}

    def margins(self) -> np.ndarray:
        """Maintained g_i = y_i f(x_i) - 1 of the learned examples, in ``labelled_`` order."""
        L = self.labelled_
        return self._pg[self._pos_of[L]] if len(L) else np.zeros(0)

    def _exact_margins(self) -> np.ndarray:
        """g recomputed from scratch (diagnostic; kernel evaluations not counted)."""
        nL = self._nL
        if nL == 0:
            return np.zeros(0)
        sv, coef, b = self.coefficients()
        idxL = self._pidx[:nL]
        f = np.full(nL, b)
        if len(sv):
            f += self._uncounted_block(idxL, sv) @ coef
        return self._py[:nL] * f - self._offset

    def kkt_violation(self) -> float:
        """Largest violation of the KKT conditions with the solver's own bias.

        O (a=0): g >= 0;  S (0<a<C): g = 0;  E (a=C): g <= 0, with g computed
        from scratch; classification is by the value of a_i (not the stored sets),
        so an inconsistency between a and the sets also shows up.
        """
        nL = self._nL
        if nL == 0:
            return 0.0
        g = self._exact_margins()
        a = self._pa[:nL]
        at0, atC = a <= 0.0, a >= self.C
        free = ~at0 & ~atC
        v = np.concatenate([np.maximum(0.0, -g[at0]), np.maximum(0.0, g[atC]), np.abs(g[free])])
        return float(v.max(initial=0.0))

    def equality_residual(self) -> float:
        nL = self._nL
        return float(abs(self._pa[:nL] @ self._py[:nL] - self._eq_target)) if nL else 0.0

    # --------------------------------------------------------------- state
    def _state_arrays(self) -> dict[str, np.ndarray]:
        nL, m = self._nL, self._m
        return {
            "pidx": self._pidx[:nL].astype(np.int64), "alpha": self._pa[:nL].copy(),
            "g": self._pg[:nL].copy(), "status": self._pst[:nL].astype(np.int64),
            "seq": self._pseq[:nL].copy(), "S": self._Spos[:m].astype(np.int64),
            "R": self._R.copy(),
            "scalars": np.array([self._b, self._seq, self._since_sync, self._since_probe, self._n_resync,
                                 self.C], dtype=np.float64),
        }

    def _load_state_arrays(self, arrays: dict[str, np.ndarray], meta: dict) -> None:
        pidx = np.asarray(arrays["pidx"], dtype=np.intp)
        nL = len(pidx)
        S = np.asarray(arrays["S"], dtype=np.intp)
        m = len(S)
        cap_l = max(64, 1 << max(0, int(nL - 1).bit_length()))
        cap_m = max(16, 1 << max(0, int(m - 1).bit_length()))
        self._reset_model(cap_l, cap_m)
        self._pos_of = np.full(len(self.store), -1, dtype=np.intp)
        self._nL = nL
        self._pidx[:nL] = pidx
        self._py[:nL] = self.y[pidx]
        self._pa[:nL] = arrays["alpha"]
        self._pg[:nL] = arrays["g"]
        self._pst[:nL] = arrays["status"]
        self._pseq[:nL] = arrays["seq"]
        self._pos_of[pidx] = np.arange(nL)
        self._pos_in_seq_order = bool(np.all(np.diff(self._pseq[:nL]) > 0))
        if nL:
            self._XL = np.zeros((len(self._pidx), self.store.n_features))
            self._XL[:nL] = self.store.X[pidx]
            self._sqL[:nL] = self.store.sq_norms[pidx]
        sc = np.asarray(arrays["scalars"], dtype=np.float64)
        self._b = float(sc[0])
        self._seq, self._since_sync, self._since_probe, self._n_resync = (int(v) for v in sc[1:5])
        self.C = float(sc[5])
        self._m = m
        self._Spos[:m] = S
        self._slot[S] = np.arange(m)
        self._yS[:m] = self._py[S]
        self._R = np.array(arrays["R"], dtype=np.float64, order="C").reshape(m + 1, m + 1)
        if self._KLL is not None and nL:
            self._KLL[:nL, :nL] = self.cache.block(pidx, pidx)
        for j, k in enumerate(S):  # kernel rows are exact: recomputing them changes nothing
            self._Ks[j, :nL] = self._learned_row(int(k))


class IncrementalOneClassSVM(IncrementalSVM):
    """Incremental one-class SVM (Laskov et al. 2006, §3, eqs. 23–24, Algorithm 2).

    Dual:  min_a 1/2 a^T K a   s.t.  0 <= a_i <= C,  sum_i a_i = 1,
    with C = 1/(nu n).  The margins are g_i = sum_j K_ij a_j + mu, and the same
    S/E/O machinery as the binary solver applies with every y_i = +1 (eq. 24).
    ``learn(i)`` takes no label: it learns an unlabelled example of the store.

    Sign convention (as scikit-learn's ``OneClassSVM``):
    ``decision_function(x) = sum_i a_i K(x_i, x) - rho`` with rho = -mu, so it is
    **positive inside** the estimated support (normal) and **negative outside**
    (anomalous); ``anomaly_score = -decision_function``: **larger = more anomalous**.

    Note that a learned example with a_i = C contributes C·K(x_i, x_i) to its own
    value, so an isolated learned point under a narrow RBF kernel may still
    score as normal; scores of points that are in the store but not learned
    (or of new points) have no such self-term.

    Parameters: ``nu`` (fraction of outliers, 0 < nu <= 1) or ``C``.  With ``nu``,
    C = 1/(nu · N) where N is the number of points in the store when the first
    example is learned (the cold-start use: put the pool in the store, learn
    it one by one).  Until ceil(1/C) examples are learned the constraints
    cannot all hold; every learned example then carries a_i = C (a kernel
    density ranking) and rho is the largest sum_j K_ij a_j.  When the
    ceil(1/C)-th example arrives it takes the remaining weight and the solution
    is made optimal by driving each KKT violator (Algorithm 2's initialisation
    followed by incremental steps).
    """

    name: ClassVar[str] = "incremental-oneclass"
    exact_unlearn: ClassVar[bool] = True
    _offset: ClassVar[float] = 0.0
    _eq_target: ClassVar[float] = 1.0

    def __init__(self, X: np.ndarray | None = None, *, nu: float | None = None, **params):
        if nu is not None and not (0 < nu <= 1):
            raise ValueError(f"nu must lie in (0, 1], got {nu!r}")
        self.nu = None if nu is None else float(nu)
        self._C_fixed = nu is None
        super().__init__(X, **params)

    def get_params(self) -> dict[str, Any]:
        p = super().get_params()
        p["nu"] = self.nu
        return p

    def _n_feasible(self) -> int:
        return max(1, math.ceil(1.0 / self.C - 1e-9))

    def _fix_C(self) -> None:
        if not self._C_fixed:
            self.C = 1.0 / (self.nu * max(1, len(self.store)))
            self._C_fixed = True

    def _set_infeasible_phase(self) -> None:
        """Fewer than ceil(1/C) examples: all at a = C (E), mu = -max_i sum_j K_ij a_j."""
        nL = self._nL
        while self._m:
            self._S_remove(int(self._Spos[self._m - 1]))
        self._pa[:nL] = self.C
        self._pst[:nL] = SET_E
        idxL = self._pidx[:nL]
        K = self._KLL[:nL, :nL] if self._KLL is not None else self.cache.block(idxL, idxL)
        h = self.C * K.sum(axis=0) if nL else np.zeros(0)
        self._b = -float(h.max()) if nL else 0.0
        self._pg[:nL] = h + self._b

    def learn(self, i: int, y: float | None = None) -> StepResult:
        """Learn unlabelled example ``i`` (``y`` is ignored; kept for the common signature)."""
        i, _ = self._check_learnable(i, 1.0)
        self._fix_C()
        self._last_status, self._last_cases = "ok", []
        with StepTimer(self) as tm:
            iters, evicted, msg = 0, [], ""
            if self.max_learned is not None and self._nL >= self.max_learned:
                iters, evicted = self._evict_for_window()
            n0 = self._n_feasible()
            p = self._append(i, 1.0)
            krow = self._kernel_row(i)
            self._new_column(p, krow)
            nL = self._nL
            if nL < n0:
                self._pa[p] = self.C
                self._pst[p] = SET_E
                h = self._pg[:nL] - self._b
                h[:nL - 1] += self.C * krow[: nL - 1]
                h[p] = krow @ self._pa[:nL]
                self._b = -float(h.max())
                self._pg[:nL] = h + self._b
            elif nL == n0 and self._m == 0 and np.all(self._pa[: nL - 1] >= self.C):
                # Algorithm 2 initialisation: the first ceil(1/C)-1 examples carry C,
                # this one the remaining weight; then drive the KKT violators.
                rem = 1.0 - (nL - 1) * self.C
                h = self._pg[:nL] - self._b
                h[: nL - 1] += rem * krow[: nL - 1]
                self._pa[p] = rem
                h[p] = krow @ self._pa[:nL]
                if rem >= self.C * (1 - 1e-12):
                    self._pa[p] = self.C
                    self._pst[p] = SET_E
                    self._b = -float(h.max())
                    self._pg[:nL] = h + self._b
                else:
                    self._b = -float(h[p])
                    self._pg[:nL] = h + self._b
                    self._S_add(p, None, 1.0, krow)
                iters += self._repair(passes=5)
            else:
                g = float(krow @ self._pa[:nL] + self._b)
                self._pg[p] = g
                if g >= -1e-12:
                    self._pst[p] = SET_O
                else:
                    it, msg = self._drive(p, _LEARN, krow)
                    iters += it
                    if self._pst[p] == SET_CAND:
                        self._pst[p] = SET_E if self._pa[p] >= self.C else SET_O
            if self._nL >= n0:
                self._after_update()
        return self._result(tm, iters, msg, int(self._pos_of[i]), evicted=evicted)

    def _snap_single_class(self) -> None:
        """Not applicable: every example of the one-class problem has y = +1."""

    def _remove(self, i: int) -> tuple[int, str]:
        if self._nL - 1 >= self._n_feasible():
            return super()._remove(i)
        p = int(self._pos_of[i])
        if self._pst[p] == SET_S:
            self._S_remove(p)
        self._pa[p] = 0.0
        self._delete_position(p)
        self._set_infeasible_phase()
        return 0, "fewer than 1/C examples remain: every example carries a = C"

    def unlearn(self, i: int) -> StepResult:
        i = self._check_unlearnable(i)
        self._last_status, self._last_cases = "ok", []
        with StepTimer(self) as tm:
            iters, msg = self._remove(i)
            if self._nL >= self._n_feasible():
                self._after_update()
        return self._result(tm, iters, msg, None, removed=i)

    @property
    def rho_(self) -> float:
        return -self._b

    def anomaly_score(self, idx=None, X: np.ndarray | None = None) -> np.ndarray:
        """rho - sum_i a_i K(x_i, x): larger = more anomalous (= -decision_function)."""
        return -self.decision_function(idx, X)

    def dual_objective(self) -> float:
        """The one-class dual objective 1/2 a^T K a (minimised)."""
        sv, coef, _ = self.coefficients()
        if len(sv) == 0:
            return 0.0
        return float(0.5 * coef @ self._uncounted_block(sv, sv) @ coef)

    def kkt_violation(self) -> float:
        """As for the binary solver, with g_i = sum_j K_ij a_j + mu (= decision value)."""
        return super().kkt_violation()

    def _state_arrays(self) -> dict[str, np.ndarray]:
        arr = super()._state_arrays()
        arr["C_fixed"] = np.array(int(self._C_fixed))
        return arr

    def _load_state_arrays(self, arrays: dict[str, np.ndarray], meta: dict) -> None:
        super()._load_state_arrays(arrays, meta)
        self._C_fixed = bool(int(arrays["C_fixed"]))
