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

Each minor iteration follows Algorithm 1 (``_drive``): the sensitivities
beta (eq. 7) and gamma (eqs. 8–9) along the direction of the drive
(``_sensitivities``); the largest step that keeps every KKT condition
(``_largest_step``), the smallest of

    eq. 10  a margin vector reaches 0 or C:        a_s + beta_s t in [0, C]
    eq. 11  an error or other vector reaches the margin:      g_i + gamma_i t = 0
    eq. 12  c reaches the margin:                             g_c + gamma_c t = 0
    eq. 13  c reaches its bound:                              a_c + t = C  (0 when lowering)

(recorded in ``StepResult.extra["cases"]`` as "leave", "enter", "c_margin"
and "c_bound"); the step itself (``_apply_step``); and the bookkeeping of
the example that limited it (``_update_sets``): R is updated recursively
when S gains (eqs. 15–17) or loses (eq. 22) a member.  Unlearning drives
a_c back to 0 with the same machinery, then drops c.

The storage of S (§5.3), class weights, the one-class variant (``IncrementalOneClassSVM``, §3, Algorithm 2), and
where this implementation adds to or departs from the paper and why (drift control, dependent
examples, kept kernel rows, empty S, the bias, compiled minor iterations, certified steps):
docs/solvers/incremental.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

import numpy as np
from scipy.linalg import blas as _blas

from core.solvers.auto_hyper import AutoHyper
from core.solvers.base import (
    ClassWeights,
    NumericalError,
    OnlineSolver,
    StepResult,
    StepTimer,
    admissible_bias,
    movable,
)
from core.threads import single_threaded_blas

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
# an E or O example whose margin is on the wrong side by more than this is pending repair, not watched
_KKT_SLACK = 1e-9
# a margin vector whose |da_s| per unit step is at most this does not move (eq. 10)
_EPS_BETA = 1e-12
_EPS = float(np.finfo(float).eps)

_NO_KLL = np.zeros((1, 1))  # stands for the learned-kernel matrix when it is not kept
_JIT: Any = None  # core.solvers._incremental_jit once imported; False when Numba is not installed


def _jit_module():
    """The compiled minor iterations (imported on first use: Numba loads in about a second)."""
    global _JIT
    if _JIT is None:
        try:
            from core.solvers import _incremental_jit
        except ImportError:  # pragma: no cover - Numba is a pinned dependency
            _JIT = False
        else:
            _JIT = _incremental_jit
    return _JIT or None


class _Event(NamedTuple):
    """What limits a step (eqs. 10-13): the step length t, the case, the learning sequence number
    of the example concerned, the kind and the position k of that example.  Compared as a tuple:
    the shortest step first, then the case (0: the driven example reaches the margin, eq. 12;
    1: it reaches its bound, eq. 13; 2: a margin vector reaches a bound, eq. 10; 3: an error or
    other vector reaches the margin, eq. 11), then the oldest example (deterministic ties)."""

    t: float
    case: int
    seq: int
    kind: str  # "c_margin" (eq. 12), "c_bound" (eq. 13), "leave" (eq. 10), "enter" (eq. 11)
    k: int


class _Move(NamedTuple):
    """The set change of the previous minor iteration (for §4.2, no immediate cycling)."""

    kind: str  # "leave", "enter" or "blocked"
    k: int
    zero: bool  # the step was of length 0


@dataclass(slots=True)
class _Sensitivities:
    """Per unit step of the driven coefficient: beta = d [db; da_S] (eq. 7, None with S empty) and
    dg = d gamma for every learned example (eqs. 8-9); ``size`` is the scale of the terms gamma is
    a difference of and ``rounding`` the level below which a gamma is rounding."""

    m: int
    S: np.ndarray | None
    aS: np.ndarray | None  # a_S before the step
    beta: np.ndarray | None
    dg: np.ndarray
    size: float
    rounding: float


@dataclass(slots=True)
class _Drive:
    """One drive of a_p (learn: up; lower or unlearn: down, d = -1): constants, views of the
    learned-example arrays (valid for the whole drive), work buffers and the watch list of
    eq. 11 with the examples blocked by §4.2."""

    p: int
    mode: str
    d: float
    yp_d: float
    krow_p: np.ndarray
    nL: int
    y: np.ndarray
    st: np.ndarray
    g: np.ndarray
    a: np.ndarray
    pseq: np.ndarray
    C: np.ndarray  # the upper bound of each learned position (C, or C w_y with class weights)
    scale: float  # max K(x, x) over the learned examples
    kpp: float  # |K(x_p, x_p)|
    ykp_d: np.ndarray  # y_p d K_pj
    d_Qp: np.ndarray  # d Q_jp
    in_seq_order: bool  # positions are in learning order (the first of equal values is the oldest)
    seq_p: int
    watch: np.ndarray  # +1 (E) / -1 (O): direction in which g_i moves towards the margin; 0: not watched
    blocked: list[int]
    rate: np.ndarray
    q: np.ndarray
    off: np.ndarray
    prev: _Move | None
    cases: list[str]

    def block(self, k: int) -> None:
        self.watch[k] = 0.0
        self.blocked.append(k)

    def unblock(self) -> None:
        for j in self.blocked:
            if self.st[j] == SET_E:
                self.watch[j] = 1.0
            elif self.st[j] == SET_O:
                self.watch[j] = -1.0
        self.blocked.clear()


class IncrementalSVM(AutoHyper, ClassWeights, OnlineSolver):
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
    compiled : bool, default True
        Run the minor iterations of a drive (Algorithm 1) as one compiled
        call (``core.solvers._incremental_jit``, Numba) instead of one NumPy
        call per operation.  Same steps and set changes, results equal up to
        rounding.  The kernel rows of entering examples come from the
        learned-kernel matrix while it is kept, else from the kernel layer
        (the compiled call returns for each).

    Raises ``IterationLimitError`` only when ``on_max_iter="raise"`` and a
    learn/unlearn needs more than ``max_iter`` minor iterations; otherwise a
    ``ConvergenceWarning`` is issued and the step reports ``status="max_iter"``.
    """

    name: ClassVar[str] = "incremental"
    exact_unlearn: ClassVar[bool] = True
    has_bias: ClassVar[bool] = True
    _offset: ClassVar[float] = 1.0  # g_i = y_i f(x_i) - offset
    _eq_target: ClassVar[float] = 0.0  # sum_i y_i a_i = target
    _compiled_buffer: ClassVar[int] = 64  # first size of the compiled drive's cases / blocked lists (grown)

    def __init__(
        self,
        X: np.ndarray | None = None,
        *,
        max_learned: int | None = None,
        resync_every: int = 500,
        probe_every: int = 1,
        kappa_tol: float = 1e-9,
        learned_kernel_bytes: int = 128 * 2**20,
        compiled: bool = True,
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
        if not isinstance(compiled, (bool, np.bool_)):
            raise ValueError(f"compiled must be True or False, got {compiled!r}")
        self.compiled = bool(compiled)
        self._init_class_weight(class_weight)
        self._init_auto(auto, auto_grid, auto_moments, hyper_choices, params.get("kernel", "rbf"))
        self._init_lag(auto_lag, auto_background, hyper_pending)
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
        # kernel matrix among the learned examples (by position), while it fits its budget
        self._KLL: np.ndarray | None = (
            np.zeros((cap_learned, cap_learned)) if cap_learned**2 * 8 <= self.learned_kernel_bytes else None
        )
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
        self._exact = True  # the last learn / unlearn ended with status "ok" (see finish)
        # bounds on the size of the steps the maintained margins have taken since they were last
        # computed from scratch, and on the rounding error those steps have accumulated
        self._g_size = 0.0
        self._g_err = 0.0
        self._drift_measured: float | None = None  # |g_S| measured since the last change (see _certified)
        self._gap_checked: float | None = None  # the maintained gap the last certification computed
        self._pos_of = np.full(len(getattr(self, "store", ())), -1, dtype=np.intp)

    def _on_store_grown(self, n_new: int) -> None:
        self._pos_of = np.concatenate([self._pos_of, np.full(n_new, -1, dtype=np.intp)])

    def get_params(self) -> dict[str, Any]:
        p = super().get_params()
        p.update(
            max_learned=self.max_learned,
            resync_every=self.resync_every,
            probe_every=self.probe_every,
            kappa_tol=self.kappa_tol,
            learned_kernel_bytes=self.learned_kernel_bytes,
            compiled=self.compiled,
            class_weight=self.class_weight,
        )
        if self.auto or self.hyper_choices:
            p.update(self._auto_params())
        return p

    def _bounds(self, nL: int | None = None) -> np.ndarray:
        """The upper bound of each learned position: C w_+ or C w_- (``ClassWeights``; C without)."""
        nL = self._nL if nL is None else nL
        c_pos, c_neg = self.class_bounds_
        return np.where(self._py[:nL] < 0, c_neg, c_pos)

    def _box_max(self) -> float:
        """The largest upper bound (C without class weights)."""
        return max(self.class_bounds_)

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
            if new**2 * 8 <= self.learned_kernel_bytes:
                KLL = np.zeros((new, new))
                KLL[:cap, :cap] = self._KLL
                self._KLL = KLL
            else:  # over budget: from now on rows of entering examples are recomputed
                self._KLL = None

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

        §5.3: the solver works on kernel rows over the learned examples only (computed
        over their store indices by the kernel layer) — never over the whole store,
        whose unlabelled pool can be many times larger.  Only when the learned-kernel
        matrix is over its budget (rows of entering examples are then needed again
        later) and the store is not much larger than the learned set are full store
        rows taken through the LRU kernel cache (the same values, bit for bit).
        """
        nL = self._nL
        if self._KLL is None and len(self.store) <= 2 * nL + 16:
            return self.cache.row(i)[self._pidx[:nL]]
        self.cache.n_evals += nL
        return self.cache.compute(i, self._pidx[:nL])[0]

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
            R_kk = float(col[r])
            if R_kk > 0.0 and math.isfinite(R_kk):
                # R is symmetric: one rank-one BLAS update in place on its Fortran view
                _blas.dger(-1.0 / R_kk, col, col, a=R.T, overwrite_a=1)
                # R_kk = 1/kappa_k of k against the rest: a large one means k was nearly
                # dependent and the downdate cancels badly; recompute R afterwards
                refresh = R_kk * self._kernel_scale() * _ILL_CONDITIONED > 1.0
            else:  # R_kk = 1/kappa_k > 0 in exact arithmetic: the recursive R has broken down
                refresh = True
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

    def _eq7(self, y_c: float, Q_c: np.ndarray, S: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(beta, eta) of eq. 7: eta = [y_c; Q_Sc], beta = -R eta = [db; da_S] per unit change of
        a_c that keeps g_S = 0 and sum_i y_i a_i fixed.  Q_Sc = y_S y_c K_Sc is c's column against
        S: ``Q_c`` itself, or ``Q_c[S]`` (gathered straight into eta) when S is given."""
        eta = np.empty(self._m + 1)
        eta[0] = y_c
        if S is None:
            eta[1:] = Q_c
        else:
            Q_c.take(S, out=eta[1:])
        beta = self._R.dot(eta)
        return np.negative(beta, out=beta), eta

    # --------------------------------------------------- learned-set storage
    def _append(self, i: int, y: float) -> int:
        self._grow_learned()
        p = self._nL
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
            for nm in ("_pidx", "_py", "_pa", "_pg", "_pst", "_pseq", "_slot"):
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
    # Algorithm 1 of Laskov et al. (2006), one minor iteration at a time: the sensitivities of
    # b, a_S and every margin g to the driven coefficient (eqs. 7-9), the largest step that
    # keeps every KKT condition (eqs. 10-13), the step itself, and the bookkeeping of the set
    # that changed (eqs. 15-17 and 22; no immediate cycling, §4.2).
    def _drive(self, p: int, mode: str, krow_p: np.ndarray | None = None) -> tuple[int, str]:
        """Move a_p (status 'candidate') until its KKT condition holds (learn/lower) or a_p = 0 (unlearn).

        Returns (minor iterations, message).

        A minor iteration costs a small, fixed number of NumPy calls (for the sizes of an
        active-learning session its cost is call overhead, not arithmetic): the views are
        taken once per drive (``_Drive``), gamma of every learned example is one gemv over
        the contiguous rows of S (eq. 30), and R is updated in place by BLAS rank-one updates
        (``_S_add``, ``_S_remove``).
        """
        if self.compiled and _jit_module() is not None:
            return self._drive_compiled(p, mode, krow_p)
        drive = self._start_drive(p, mode, krow_p)
        iters = 0
        msg = ""
        self._last_cases = drive.cases
        with np.errstate(divide="ignore", invalid="ignore"):
            while True:
                if iters >= self.max_iter:
                    msg = self._iteration_cap(f"{mode} of example {int(self._pidx[p])}", iters)
                    self._last_status = "max_iter"
                    break
                iters += 1
                sens = self._sensitivities(drive)
                if sens is None:
                    msg = self._inexact(
                        f"{mode} of example {int(self._pidx[p])}: the inverse R of the "
                        f"bordered kernel matrix is not finite even when recomputed"
                    )
                    break
                event = self._largest_step(drive, sens)
                if event is None:
                    # Only possible when unlearning with S empty and nothing left to absorb
                    # a_p: then a_p is rounding residue of the equality constraint.
                    if mode == _REMOVE and drive.a[p] <= 1e-9 * drive.C[p]:
                        drive.a[p] = 0.0
                        drive.cases.append("residue")
                        break
                    msg = self._iteration_cap(f"{mode} of example {int(self._pidx[p])} (no admissible step)", iters)
                    self._last_status = "max_iter"
                    break
                if not math.isfinite(event.t):  # (NaN margins: never applied)
                    msg = self._inexact(f"{mode} of example {int(self._pidx[p])}: the step length is {event.t}")
                    break
                self._apply_step(drive, sens, event.t)
                drive.cases.append(event.kind)
                if self._update_sets(drive, sens, event):
                    break
        return iters, msg

    def _drive_compiled(self, p: int, mode: str, krow_p: np.ndarray | None) -> tuple[int, str]:
        """``_drive`` as one compiled call (``core.solvers._incremental_jit.drive``), which returns
        to Python only to grow the arrays of S or to report a cap or an inexact step."""
        jit = _jit_module()
        if krow_p is None:
            krow_p = self._learned_row(p)
        nL = self._nL
        st, g = self._pst[:nL], self._pg[:nL]
        krow_p = np.ascontiguousarray(krow_p[:nL], dtype=np.float64)
        # watched E (+1) / O (-1) examples of eq. 11, as in _start_drive
        watch = _WATCH.take(st)
        watch[watch * g > _KKT_SLACK] = 0.0
        scale = self._kernel_scale()
        istate = np.zeros(jit.N_ISTATE, dtype=np.int64)
        istate[jit.I_M] = self._m
        istate[jit.I_PREV_KIND] = jit.PREV_NONE
        istate[jit.I_PENDING] = -1
        row_in = np.zeros(nL)
        fstate = np.array([self._b, self._g_size, self._g_err, 0.0, self._offset])
        blocked = np.empty(self._compiled_buffer, dtype=np.intp)
        cases = np.empty(self._compiled_buffer, dtype=np.int64)
        mode_code = {_LEARN: jit.MODE_LEARN, _LOWER: jit.MODE_LOWER, _REMOVE: jit.MODE_REMOVE}[mode]
        cb = self._bounds(nL)
        while True:
            m = self._m
            cap = len(self._Spos) + 1
            Rw = np.empty((cap, cap))
            Rw[: m + 1, : m + 1] = self._R
            KLL = self._KLL
            code = jit.drive(
                p,
                mode_code,
                krow_p,
                nL,
                self._py[:nL],
                st,
                g,
                self._pa[:nL],
                self._pseq[:nL],
                self._slot[:nL],
                self._Spos,
                self._yS,
                self._Ks,
                Rw,
                _NO_KLL if KLL is None else KLL,
                KLL is not None,
                row_in,
                watch,
                blocked,
                cases,
                istate,
                fstate,
                cb,
                scale,
                self.kappa_tol,
                self.max_iter,
                self._pos_in_seq_order,
            )
            m = int(istate[jit.I_M])
            self._m = m
            self._R = Rw[: m + 1, : m + 1].copy()
            if code == jit.NEED_ROW:  # an example enters S: its kernel row through the kernel layer
                row_in[:] = self._learned_row(int(istate[jit.I_PENDING]))
                continue
            if code == jit.NEED_REFRESH:  # R from scratch, where the NumPy path recomputes it
                if not self._refresh_R() and istate[jit.I_SENS_FRESH]:
                    code = jit.INEXACT_R  # (for the sensitivities: not finite even when recomputed)
                    break
                continue
            if code != jit.GROW:
                break
            if m >= len(self._Spos):
                self._grow_margin()
            if istate[jit.I_NCASES] >= len(cases) - 1:
                cases = np.concatenate([cases, np.empty(len(cases), dtype=np.int64)])
            if istate[jit.I_NBLOCKED] >= len(blocked) - 1:
                blocked = np.concatenate([blocked, np.empty(len(blocked), dtype=np.intp)])
        self._b = float(fstate[jit.F_B])
        self._g_size = float(fstate[jit.F_GSIZE])
        self._g_err = float(fstate[jit.F_GERR])
        if istate[jit.I_MOVED]:
            self._moved = True
        if istate[jit.I_REFRESH]:  # the last step's eq. 16 divided by a small kappa
            self._refresh_R()
        iters = int(istate[jit.I_ITERS])
        self._last_cases = [jit.CASE_NAMES[c] for c in cases[: istate[jit.I_NCASES]].tolist()]
        what = f"{mode} of example {int(self._pidx[p])}"
        msg = ""
        if code == jit.CAP:
            msg = self._iteration_cap(what, iters)
            self._last_status = "max_iter"
        elif code == jit.NOSTEP:
            msg = self._iteration_cap(f"{what} (no admissible step)", iters)
            self._last_status = "max_iter"
        elif code == jit.INEXACT_R:
            msg = self._inexact(
                f"{what}: the inverse R of the bordered kernel matrix is not finite even when recomputed"
            )
        elif code == jit.INEXACT_T:
            msg = self._inexact(f"{what}: the step length is {float(fstate[jit.F_BAD_T])}")
        return iters, msg

    def _start_drive(self, p: int, mode: str, krow_p: np.ndarray | None) -> _Drive:
        """The constants and views of one drive of a_p (see ``_Drive``)."""
        if krow_p is None:
            krow_p = self._learned_row(p)
        nL = self._nL
        # views of the learned-example arrays: stable for the whole drive (only _append reallocates them)
        y, st, g, a, pseq = self._py[:nL], self._pst[:nL], self._pg[:nL], self._pa[:nL], self._pseq[:nL]
        d = 1.0 if mode == _LEARN else -1.0
        yp_d = float(y[p]) * d
        ykp_d = yp_d * krow_p[:nL]  # y_p d K_pj: the driven example's own term of eq. 8, divided by y_j
        # watch_i = +1 for E, -1 for O examples whose margin may limit the step (eq. 11):
        # dg_i * watch_i > 0 means g_i moves towards 0.  Examples that violate their KKT
        # condition (pending repair) and blocked ones are not watched.
        watch = _WATCH.take(st)
        watch[watch * g > _KKT_SLACK] = 0.0
        return _Drive(
            p=p,
            mode=mode,
            d=d,
            yp_d=yp_d,
            krow_p=krow_p,
            nL=nL,
            y=y,
            st=st,
            g=g,
            a=a,
            pseq=pseq,
            C=self._bounds(nL),
            scale=self._kernel_scale(),
            kpp=abs(float(krow_p[p])),
            ykp_d=ykp_d,
            d_Qp=ykp_d * y,
            in_seq_order=self._pos_in_seq_order,
            seq_p=int(pseq[p]),
            watch=watch,
            blocked=[],
            rate=np.empty(nL),
            q=np.empty(nL),
            off=np.empty(nL, dtype=bool),
            prev=None,
            cases=[],
        )

    def _sensitivities(self, drive: _Drive) -> _Sensitivities | None:
        """[db; da_S] (eq. 7) and dg (eqs. 8-9) per unit step t of a_p in the drive's direction.

        With S empty (§4.1, eqs. 25-28) only the bias moves: db = d y_p t, dg_i = y_i db; the
        direction is the one in which the example that enters S can absorb the change of a_p
        under sum_i y_i a_i = target.  None when R is not finite even after it is recomputed.
        """
        m = self._m
        if m == 0:
            return _Sensitivities(0, None, None, None, drive.y * drive.yp_d, 0.0, 0.0)
        S = self._Spos[:m]
        # eq. 7 along the drive: d beta = -R d [y_p; Q_Sp], Q_Sp = y_S y_p K_Sp
        beta, _ = self._eq7(drive.yp_d, drive.d_Qp, S)
        da = beta[1:]
        # gamma_i is a sum of terms of size up to scale·(1 + |beta_S|_1) + |beta_b|;
        # below a small multiple of that it is rounding: the example does not move.
        size = drive.scale * (1.0 + _blas.dasum(da)) + abs(float(beta[0]))
        if not math.isfinite(size):  # a recursive update broke R: recompute it, once
            if not self._refresh_R():
                return None
            beta, _ = self._eq7(drive.yp_d, drive.d_Qp, S)
            da = beta[1:]
            size = drive.scale * (1.0 + _blas.dasum(da)) + abs(float(beta[0]))
            if not math.isfinite(size):
                return None
        # dg/dt = d gamma (eqs. 8-9) for every learned example by one gaxpy over the contiguous
        # rows of S (eq. 30): y_j (sum_s da_s y_s K_sj + d y_p K_pj + db).  For j in S it is 0
        # up to rounding; g_S is set to exactly 0 after the step.
        nL = drive.nL
        dg = (self._yS[:m] * da) @ self._Ks[:m, :nL]
        dg += drive.ykp_d
        dg += beta[0]
        dg *= drive.y
        return _Sensitivities(m, S, drive.a.take(S), beta, dg, size, 1e-11 * size)  # (positional: hot path)

    def _largest_step(self, drive: _Drive, sens: _Sensitivities) -> _Event | None:
        """The largest step t >= 0 that keeps every KKT condition, and what limits it (eqs. 10-13).

        Candidates compare as ``_Event`` tuples (t, case, learning sequence of the example): the
        shortest step wins, then the case, then the oldest example, so that ties are broken the
        same way on every machine.  None when nothing limits the step.
        """
        p, mode, m = drive.p, drive.mode, sens.m
        g, dg = drive.g, sens.dg
        best: _Event | None = None
        # eq. 12: the driven example reaches the margin (g_p + gamma_p t = 0)
        if mode != _REMOVE:
            rate_p = float(dg[p])
            # kappa_p = gamma_p (eq. 17) must be clearly non-zero for p to enter S
            thresh = 0.5 if m == 0 else max(self.kappa_tol * (drive.kpp + sens.size), sens.rounding)
            if mode == _LEARN and rate_p > thresh:
                best = _Event(max(0.0, -float(g[p]) / rate_p), 0, drive.seq_p, "c_margin", p)
            elif mode == _LOWER and rate_p < -thresh:
                best = _Event(max(0.0, float(g[p]) / -rate_p), 0, drive.seq_p, "c_margin", p)
        if m > 0:
            # eq. 13: the driven example reaches its bound (C when learning, 0 otherwise)
            t2 = float(drive.C[p]) - float(drive.a[p]) if mode == _LEARN else float(drive.a[p])
            if best is None or (t2, 1) < best[:2]:
                best = _Event(t2, 1, drive.seq_p, "c_bound", p)
            best = self._eq10_margin_vector_bound(drive, sens, best)
        return self._eq11_reaches_margin(drive, sens, best)

    def _eq10_margin_vector_bound(self, drive: _Drive, sens: _Sensitivities, best: _Event) -> _Event:
        """Eq. 10: a margin vector reaches C (da > 0) or 0 (da < 0); one with |da| <= 1e-12 does not move."""
        S, beta, aS = sens.S, sens.beta, sens.aS
        assert S is not None and beta is not None and aS is not None  # called with m > 0 only (S not empty)
        da = beta[1:]
        t3 = np.heaviside(da, 0.0)  # (C [da > 0] - a_S) / da, clipped at 0
        t3 *= drive.C[S]
        t3 -= aS
        t3 /= da
        np.maximum(t3, 0.0, out=t3)
        j3 = int(t3.argmin())
        masked = False
        if not abs(float(da[j3])) > _EPS_BETA:
            # a non-moving one came first (or a 0/0 = nan, which argmin returns first):
            # exclude the non-moving ones (|da| <= eps) and look again
            t3[~(np.abs(da) > _EPS_BETA)] = math.inf
            masked = True
            j3 = int(t3.argmin())
        tmin = float(t3[j3])
        if tmin < math.inf and (tmin, 2) <= best[:2]:
            if np.count_nonzero(t3 == tmin) > 1:
                if not masked:  # non-moving ones may be among the tied
                    t3[~(np.abs(da) > _EPS_BETA)] = math.inf
                ties = (t3 == tmin).nonzero()[0]
                if len(ties) > 1:  # the oldest of the tied
                    j3 = int(ties[drive.pseq.take(S.take(ties)).argmin()])
            k3 = int(S[j3])
            leave = _Event(tmin, 2, int(drive.pseq[k3]), "leave", k3)
            if leave < best:
                return leave
        return best

    def _eq11_reaches_margin(self, drive: _Drive, sens: _Sensitivities, best: _Event | None) -> _Event | None:
        """Eq. 11: an error or other vector reaches the margin, t = -g_i / dg_i, over the watched
        examples moving towards it (watch_i dg_i > rounding); the smallest t is the largest
        q = g_i / dg_i (q is -inf where not admissible)."""
        rate, q, off, g, dg = drive.rate, drive.q, drive.off, drive.g, sens.dg
        np.multiply(drive.watch, dg, out=rate)
        np.divide(g, dg, out=q)
        np.less_equal(rate, sens.rounding, out=off)
        np.copyto(q, -math.inf, where=off)
        k4 = int(q.argmax())
        q4 = float(q[k4])
        tmin = max(0.0, -q4)
        if q4 > -math.inf and (best is None or (tmin, 3) < best[:2]):
            # ties at the same t (all of t <= 0 count as t = 0): the oldest example
            if q4 >= 0.0 or not drive.in_seq_order:
                tie = np.greater_equal(q, 0.0, out=off) if q4 >= 0.0 else np.equal(q, q4, out=off)
                if np.count_nonzero(tie) > 1:
                    ties = tie.nonzero()[0]
                    k4 = int(ties[drive.pseq.take(ties).argmin()])
            return _Event(tmin, 3, int(drive.pseq[k4]), "enter", k4)
        return best

    def _apply_step(self, drive: _Drive, sens: _Sensitivities, t: float) -> None:
        """a_p += d t; b, a_S and every g move by their sensitivities times t (eqs. 6 and 8)."""
        self._moved = True
        a, g = drive.a, drive.g
        if sens.m == 0:
            self._b += drive.yp_d * t
            _blas.daxpy(sens.dg, g, a=t)  # g += dg t, in place
            self._note_margin_step(sens.dg, t, sens.size)
            return
        S, beta, aS = sens.S, sens.beta, sens.aS
        assert S is not None and beta is not None and aS is not None  # m > 0 (returned above otherwise)
        a[drive.p] += drive.d * t
        # margin vectors tied with the limiting one land on a bound up to rounding:
        # keep the box exact (the equality moves by rounding only)
        _blas.daxpy(beta[1:], aS, a=t)  # a_S += da t, in place
        np.maximum(aS, 0.0, out=aS)
        np.minimum(aS, drive.C[S], out=aS)
        a[S] = aS
        self._b += float(beta[0]) * t
        _blas.daxpy(sens.dg, g, a=t)  # g += dg t, in place
        g[S] = 0.0
        self._note_margin_step(sens.dg, t, sens.size)

    def _note_margin_step(self, dg: np.ndarray, t: float, size: float) -> None:
        """Account for g += dg t in the bound on the maintained margins' rounding error.

        A margin that went through large intermediate values (a drive with C K(x, x) large
        whose steps later cancel) keeps their rounding, and each dg_i is itself a difference
        of terms of up to ``size`` (eqs. 8-9 with the sensitivities beta of eq. 7, which are
        huge when Q~ is near singular, e.g. an rbf kernel with a tiny gamma): it carries about
        eps size of rounding however small it is.  When the bound reaches a quarter of the gap
        a step may leave, the margins are recomputed (``_after_update``)."""
        change = abs(t * float(dg[_blas.idamax(dg)])) if len(dg) else 0.0
        self._g_size += change
        self._g_err += _EPS * (change + self._g_size + abs(t) * size)

    def _update_sets(self, drive: _Drive, sens: _Sensitivities, event: _Event) -> bool:
        """Move the example that limited the step to its new set; True when the drive is over.

        R grows by eqs. 15-17 when a member joins S and shrinks by eq. 22 when one leaves.
        §4.2, no immediate cycling: a member that would leave S with a zero step right after
        entering it (or re-enter right after leaving) is kept where it is and blocked from
        eq. 11 until S changes.
        """
        C, p, k = drive.C, drive.p, event.k
        a, g, st = drive.a, drive.g, drive.st
        zero = event.t == 0.0
        if event.kind == "c_margin":
            self._g_err += abs(float(g[p]))  # (see below: "enter")
            g[p] = 0.0
            if a[p] <= 0.0:
                a[p] = 0.0
                st[p] = SET_O
            elif a[p] >= C[p]:
                a[p] = C[p]
                st[p] = SET_E
            elif sens.m == 0:
                self._S_add(p, None, 1.0, drive.krow_p)
            else:
                beta = sens.beta
                assert beta is not None  # m > 0
                kappa_p = float(sens.dg[p] * drive.d)  # kappa_p = gamma_p (eq. 17)
                self._S_add(p, beta * drive.d, kappa_p, drive.krow_p)  # beta_p = (d beta) / d
                if kappa_p <= _ILL_CONDITIONED * (drive.kpp + sens.size):
                    self._refresh_R()
            return True
        if event.kind == "c_bound":
            if drive.mode == _LEARN:
                a[p] = C[p]
                st[p] = SET_E
            else:
                a[p] = 0.0
                st[p] = SET_O
            return True
        prev = drive.prev
        if event.kind == "leave":
            assert sens.beta is not None  # a margin vector leaves, so m > 0
            up = sens.beta[1 + self._slot[k]] > 0
            a[k] = C[k] if up else 0.0
            # while in S its maintained margin was held at 0; from here on it is maintained from
            # 0, so its exact margin (O(n_learned) from its stored row) counts against the bound
            row = self._Ks[self._slot[k], : drive.nL]
            self._g_err += abs((float(row @ (a * drive.y)) + self._b) * drive.y[k] - self._offset)
            self._S_remove(k)
            st[k] = SET_E if up else SET_O
            g[k] = 0.0
            if zero and prev is not None and prev.kind == "enter" and prev.k == k:
                # k entered S in the previous iteration and would leave it again without progress
                drive.block(k)
            else:
                drive.unblock()
                drive.watch[k] = 1.0 if up else -1.0
            drive.prev = _Move("leave", k, zero)
            return False
        # event.kind == "enter"
        # g_k is set to the 0 it reaches; a step clipped at t = 0 leaves the margin it had, which
        # counts against the maintained margins' error bound, so that the check at the end of the
        # step recomputes the margins rather than let a real violation pass for a margin vector's 0
        self._g_err += abs(float(g[k]))
        g[k] = 0.0
        if zero and prev is not None and prev.kind == "leave" and prev.k == k:
            drive.block(k)  # it just left S with no progress: do not bring it back at once
            drive.prev = _Move("blocked", k, zero)
            return False
        if self._enter(k):
            drive.watch[k] = 0.0
            drive.unblock()
        else:
            drive.block(k)
        drive.prev = _Move("enter", k, zero)
        return False

    def _enter(self, k: int) -> bool:
        """Bring E/O position k into S unless its kappa (eq. 17) is ~0.

        A kappa near zero means x_k is (numerically) linearly dependent on the
        margin vectors in the bordered feature space — a duplicate, or a point
        collinear with them under a linear kernel.  Then Q~ with k added is
        singular, and, for the same reason, gamma_k = 0 for every driven example:
        g_k no longer moves while S is unchanged.  Such a point is therefore not
        added to S (it would make Q~ singular); it stays in E or O at g_k = 0,
        which satisfies its KKT condition, and is blocked from eq. 11 until S
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
        Q_Sk = self._yS[:m] * krow.take(self._Spos[:m])
        Q_Sk *= yk
        beta_k, eta = self._eq7(yk, Q_Sk)
        kkk = float(krow[k])
        kappa = kkk + float(eta @ beta_k)  # kappa = Q_kk + [y_k, Q_kS] beta_k
        size = abs(kkk) + float(np.abs(eta) @ np.abs(beta_k))
        return beta_k, kappa, size

    def _refresh_R(self) -> bool:
        """R = Q~^{-1} from scratch (after an ill-conditioned or broken recursive update).

        When Q~ cannot be inverted the recursive R is kept if it is finite, and replaced by the
        pseudo-inverse of Q~ if it is not (Q~ is then numerically singular: the drive goes on
        with finite numbers and the end-of-step check reports what it reached).  Returns
        whether R is finite afterwards.
        """
        m = self._m
        if m == 0:
            return True
        Qt = self._Qtilde()
        try:
            R = np.linalg.inv(Qt)
        except np.linalg.LinAlgError:
            R = None
        if R is None or not np.all(np.isfinite(R)):
            if np.all(np.isfinite(self._R)):
                return True  # keep the recursive R
            try:
                R = np.linalg.pinv(Qt)
            except np.linalg.LinAlgError:
                return False
            if not np.all(np.isfinite(R)):
                return False
        self._R = np.ascontiguousarray(R)
        self._n_refresh += 1
        # the margins were moved with the perturbed inverse: recompute them at the end of this update
        self._resync_pending = True
        return True

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
        """Violations below this are rounding: the margins are sums of terms of size up to C·max K.

        Never more than a quarter of the gap a step may leave (``_gap_allowed``): when C·max K
        is large the coefficients can still be small (a ≈ 1/K), and a violation the size of the
        margins themselves must be repaired, not taken for rounding.
        """
        return min(1e-10 * max(1.0, self._box_max() * self._kernel_scale()), 0.25 * self._gap_allowed())

    def _repair(self, tol: float | None = None, passes: int = 3) -> int:
        """Drive every learned example whose (maintained) KKT condition is violated back to it.

        This is the incremental step applied to an example already learned:
        an O example with g < 0 is driven up, an E example with g > 0 down.
        It closes the small violations that rounding or a blocked dependent
        point may leave, and initialises the one-class problem (Alg. 2).
        """
        tol = self._repair_tol() if tol is None else tol
        iters = 0
        self._drift_measured = None
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
                    self._pst[k] = SET_E if self._pa[k] >= self._bounds()[k] else SET_O
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
        jit = self._compiled_checks()
        if jit is not None:
            return float(jit.probe_drift(self._R, self._Ks, self._Spos, self._yS, self._probe, m))
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
        self._drift_measured = None
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
                if not (np.all(np.isfinite(delta)) and new_aS.min() >= 0.0 and np.all(new_aS <= self._bounds()[S])):
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
        self._g_size = 0.0
        self._g_err = 4.0 * _EPS * max(1.0, abs(self._b), float(a.sum()) * self._kernel_scale())
        self._repair()

    def _margin_drift(self) -> float:
        """Exact |g_S| from the stored rows of S (O(|S| n_learned)): the margins of S must be 0."""
        m, nL = self._m, self._nL
        if m == 0:
            return 0.0
        jit = self._compiled_checks()
        if jit is not None:
            return float(jit.margin_drift(self._Ks, m, nL, self._pa, self._py, self._b, self._yS, self._offset))
        coef = self._pa[:nL] * self._py[:nL]
        gS = self._Ks[:m, :nL] @ coef
        gS += self._b
        gS *= self._yS[:m]
        gS -= self._offset
        return float(np.abs(gS).max())

    def _after_update(self) -> bool:
        """Drift control: probe R·Q~ ≈ I and the exact margins of S; re-sync when they drift,
        after an ill-conditioned inverse update, or every ``resync_every`` updates.

        Returns whether anything may have changed since the last check (a step, a re-sync)."""
        self._since_sync += 1
        self._since_probe += 1
        if not self._moved and not self._resync_pending and self._since_sync < self.resync_every:
            return False  # nothing but a new O example: no margin or inverse has changed
        self._moved = False
        drifted = False
        self._drift_measured = None
        if self._since_probe >= self.probe_every:
            self._since_probe = 0
            # the margins of S must be 0: relative to their scale, and never by as much as the
            # gap the step is allowed to leave (with C K(x, x) large the relative test alone
            # would let the margins drift by more than tol)
            margin = self._margin_drift()
            allowed = self._gap_allowed()
            drifted = (
                self._probe_drift() > 1e-8
                or margin > 1e-8 * max(1.0, self._box_max() * self._kernel_scale())
                or margin > 0.5 * allowed
                or self._g_err > 0.25 * allowed
            )
            self._drift_measured = margin
        if self._resync_pending or self._since_sync >= self.resync_every or drifted:
            self._resync()
            if self._resync_pending:  # the repair inside needed an ill-conditioned update itself
                self._resync()
        elif self._max_violation() > self._repair_tol():
            self._repair()
        return True

    def _max_violation(self) -> float:
        """``_violations().max()`` (0 with nothing learned)."""
        jit = self._compiled_checks()
        if jit is not None:
            return float(jit.max_violation(self._pst, self._pg, self._nL))
        return float(self._violations().max(initial=0.0))

    def _compiled_checks(self):
        """The compiled module when the checks after a step run compiled (``compiled=True``), else None."""
        return _jit_module() if self.compiled else None

    # -------------------------------------------------------- the contract
    def _gap_maintained(self) -> float:
        """LASVM's largest violating pair (base ``kkt_gap``) from the maintained margins."""
        nL = self._nL
        if nL == 0:
            return 0.0
        jit = self._compiled_checks()
        if jit is not None:
            return float(jit.gap_maintained(self._py, self._pa, self._pg, self._b, self._offset, self._bounds(nL), nL))
        y, a, g = self._py[:nL], self._pa[:nL], self._pg[:nL]
        # LASVM's g_i = y_i - sum_j a_j y_j K_ij = b - y_i (g_i + offset - 1); a_i y_i can grow
        # when (y_i > 0, a_i < C) or (y_i < 0, a_i > 0), shrink in the mirrored cases
        G = g + (self._offset - 1.0)
        G *= y
        np.subtract(self._b, G, out=G)
        C = self._bounds(nL)
        eps = 1e-12 * C
        below, above = a < C - eps, a > eps
        pos = y > 0
        g_up = float(G.max(where=np.where(pos, below, above), initial=-math.inf))
        g_down = float(G.min(where=np.where(pos, above, below), initial=math.inf))
        if g_up == -math.inf or g_down == math.inf:
            return 0.0
        return max(0.0, g_up - g_down)

    def _inexact(self, what: str) -> str:
        """Stop what cannot be done exactly in floating point with status "inexact" (warned)."""
        self._last_status = "inexact"
        return self._not_tau_optimal(what)

    def _gap_allowed(self, sum_a: float | None = None) -> float:
        """tol, or the rounding level of the margins where that is larger (as in the active-set
        solver): they sum terms a_j K_ij, b and 1, each known to about eps of its size."""
        if sum_a is None:
            sum_a = float(self._pa[: self._nL].sum())
        return max(self.tol, 2e4 * _EPS * max(1.0, abs(self._b), sum_a * self._kernel_scale()))

    def _certify(self, what: str, changed: bool = True) -> str:
        """End of a learn / unlearn: a finite model, and status "ok" only with the KKT gap within tol.

        Exact in exact arithmetic, the steps can still lose the optimum to rounding when the
        bordered kernel matrix is near singular beyond what ``kappa_tol`` detects.  When the
        (maintained) largest violating pair exceeds ``_gap_allowed()`` (or the equality, the
        exact margins of S or the margins' rounding bound say the maintained state cannot be
        trusted), margins and R are recomputed from scratch and the violators driven back
        (``_resync``, twice at most); if that does not help the step reports "inexact" with a
        ConvergenceWarning.  A non-finite coefficient, bias or margin raises ``NumericalError``.
        Returns a message ("" if none).
        """
        if not changed and self._exact:
            return ""  # (a new O example: the model did not change)
        nL = self._nL
        for attempt in range(3):
            sum_a = float(self._pa[:nL].sum())  # (not finite if any a_i is not)
            if not math.isfinite(sum_a + self._b) or self._last_status != "ok" or self._certified(sum_a):
                break
            if attempt == 2:
                return self._inexact(
                    f"{what}: the KKT gap ({self._gap_checked:.3g}), sum_i y_i a_i (off by "
                    f"{self.equality_residual():.3g}) or the margins are not within tol "
                    f"{self.tol:g} after recomputing the margins and R from scratch"
                )
            # (a second re-sync starts from the smaller numbers the first one left)
            self._resync()
            self._gap_checked = None
        if not math.isfinite(float(self._pa[:nL].sum()) + self._b + float(self._pg[:nL].sum())):
            raise NumericalError(f"{self.name}: {what} produced a non-finite coefficient, bias or margin")
        return ""

    def _certified(self, sum_a: float) -> bool:
        """The maintained largest violating pair, sum_i y_i a_i = target, the margins' rounding bound
        and the exact margins of S (which the steps set to 0) are all within what a step may leave
        (``_gap_allowed``)."""
        allowed = self._gap_allowed(sum_a)
        self._gap_checked = self._gap_maintained()
        if not (
            self._gap_checked <= allowed
            and self._g_err <= 0.25 * allowed
            and self.equality_residual() <= 1e3 * _EPS * sum_a
        ):
            return False
        drift = self._margin_drift() if self._drift_measured is None else self._drift_measured
        return drift <= 0.5 * allowed

    def _kkt_applies(self) -> bool:
        """Whether the KKT conditions (and the gap) describe the current model (see the one-class variant)."""
        return True

    @single_threaded_blas
    def finish(self) -> StepResult:
        """Nothing to do after a learn / unlearn that ended with status "ok": the solution is exact.

        After one that stopped at its iteration cap or ended "inexact", the margins and R are
        recomputed from scratch, every violator is driven back (``_resync``) and the result is
        checked again (status "ok", or "inexact" / "max_iter" with a warning).
        """
        if self._exact or self._nL == 0 or not self._kkt_applies():
            return StepResult(
                status="unchanged",
                message="solution already exact",
                kkt_gap=self._gap_maintained() if self._kkt_applies() else 0.0,
            )
        self._last_status, self._last_cases, self._gap_checked = "ok", [], None
        with StepTimer(self) as tm:
            self._resync()
            msg = self._certify("finish")
            self._settle_bias()
        return self._result(tm, 0, msg, None)

    def _result(self, timer: StepTimer, iters: int, msg: str, p: int | None, **extra) -> StepResult:
        status = self._last_status
        self._exact = status == "ok"
        info = dict(
            n_S=self._m,
            n_E=int(np.count_nonzero(self._pst[: self._nL] == SET_E)),
            n_learned=self._nL,
            cases=list(self._last_cases),
            **extra,
        )
        if p is not None and p < self._nL:
            info["set"] = _SET_NAMES[int(self._pst[p])]
        gap = self._gap_maintained() if self._gap_checked is None else self._gap_checked  # (one O(n) pass)
        return timer.result(status=status, iterations=iters, kkt_gap=gap, message=msg, extra=info)

    def _evict_for_window(self) -> tuple[int, list]:
        """§6.1: unlearn the least relevant example (smallest a_i, ties → oldest)."""
        nL = self._nL
        order = np.lexsort((self._pseq[:nL], self._pa[:nL]))
        victim = int(self._pidx[order[0]])
        it, _ = self._remove(victim)
        return it, [victim]

    @single_threaded_blas
    def learn(self, i: int, y: float) -> StepResult:
        """Learn store example ``i`` with label ``y`` exactly (incremental step of C&P / Laskov et al.).

        The step record's ``iterations`` counts minor iterations (set changes),
        ``extra["cases"]`` lists which case limited each of them, ``extra["set"]``
        is where the example ended (S, E or O) and ``extra["evicted"]`` the
        example a full window unlearned first.
        """
        i, y = self._check_learnable(i, y)
        self._last_status, self._last_cases, self._gap_checked = "ok", [], None
        with StepTimer(self) as tm:
            evicted: list[int]
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
                    self._pst[p] = SET_E if self._pa[p] >= self._bounds()[p] else SET_O
            changed = self._after_update()
            msg = msg or self._certify(f"learn of example {i}", changed)
            self._settle_bias()
        p = int(self._pos_of[i])
        return self._rebalanced(self._result(tm, iters, msg, p, evicted=evicted))

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

    def _settle_bias(self) -> None:
        """With no margin vector strictly inside the box, b is only known to lie in an interval:
        put it at the midpoint.

        The drive of §4.1 moves b alone until an example reaches the margin, and a step can also
        end with its margin vectors on a bound (a tie at C, or a coefficient that is 0 up to
        rounding), each of which pins b at one end of the interval that the examples allow
        (every KKT condition holds anywhere inside it).  The solvers share one rule
        (``base.admissible_bias``, LIBSVM's): the midpoint, so the decision values are those of
        the usual convention whatever the learning order (and unlearning gives retraining's b).
        Such margin vectors leave S for E or O (within 1e3 eps of C, or of 0 relative to the
        largest coefficient, a coefficient is on the bound: the rest is rounding), and the
        margins move with b (g_i += y_i db); a later drive starts from there, as from any point
        of the interval.
        """
        nL = self._nL
        if nL == 0:
            return
        C = self._bounds(nL)
        a = self._pa[:nL]
        if self._m:
            zero, top = 1e3 * _EPS * float(a.max()), C * (1.0 - 1e3 * _EPS)
            aS = a[self._Spos[: self._m]]
            if np.any((aS > zero) & (aS < top[self._Spos[: self._m]])):
                return  # a free margin vector: b is the multiplier of eq. 6, exactly
            while self._m:
                k = int(self._Spos[self._m - 1])
                self._S_remove(k)
                a[k] = C[k] if a[k] >= top[k] else 0.0
                self._pst[k] = SET_E if a[k] == C[k] else SET_O
        y = self._py[:nL]
        G = y - y * (self._pg[:nL] + 1.0) + self._b  # the base class's g: b - y (g + 1), as _gap_maintained
        up, down = movable(a * y, y, C)
        b = admissible_bias(G, up, down)
        db = b - self._b
        if db == 0.0 or not math.isfinite(b):
            return
        self._b = b
        self._pg[:nL] += y * db
        self._g_size += abs(db)
        self._g_err += _EPS * (abs(db) + self._g_size)

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

    @single_threaded_blas
    def unlearn(self, i: int) -> StepResult:
        """Remove example ``i`` exactly: a_i is driven to 0 (decremental step), then i is dropped.

        The result equals training without ``i`` (up to rounding).
        """
        i = self._check_unlearnable(i)
        self._last_status, self._last_cases, self._gap_checked = "ok", [], None
        with StepTimer(self) as tm:
            iters, msg = self._remove(i)
            changed = self._after_update()
            msg = msg or self._certify(f"unlearn of example {i}", changed)
            self._settle_bias()
        return self._rebalanced(self._result(tm, iters, msg, None, removed=i))

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
        return {nm: np.sort(self._pidx[:nL][st == code]) for code, nm in ((SET_S, "S"), (SET_E, "E"), (SET_O, "O"))}

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
        at0, atC = a <= 0.0, a >= self._bounds(nL)
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
            "pidx": self._pidx[:nL].astype(np.int64),
            "alpha": self._pa[:nL].copy(),
            "g": self._pg[:nL].copy(),
            "status": self._pst[:nL].astype(np.int64),
            "seq": self._pseq[:nL].copy(),
            "S": self._Spos[:m].astype(np.int64),
            "R": self._R.copy(),
            "scalars": np.array(
                [self._b, self._seq, self._since_sync, self._since_probe, self._n_resync, self.C, float(self._exact)],
                dtype=np.float64,
            ),
            # everything else that steers the next steps (rounding bounds, pending checks, the
            # kernel scale, the storage layout), so that a restored solver continues exactly as
            # the saved one would have (see test_resume)
            "control": np.array(
                [
                    self._g_size,
                    self._g_err,
                    _none_nan(self._kscale),
                    _none_nan(self._drift_measured),
                    _none_nan(self._gap_checked),
                    float(self._moved),
                    float(self._resync_pending),
                    self._n_refresh,
                    len(self._pidx),
                    len(self._Spos),
                    float(self._KLL is not None),
                    float(self._pos_in_seq_order),
                ],
                dtype=np.float64,
            ),
        }

    @single_threaded_blas
    def _load_state_arrays(self, arrays: dict[str, np.ndarray], meta: dict) -> None:
        pidx = np.asarray(arrays["pidx"], dtype=np.intp)
        nL = len(pidx)
        S = np.asarray(arrays["S"], dtype=np.intp)
        m = len(S)
        cap_l = max(64, 1 << max(0, int(nL - 1).bit_length()))
        cap_m = max(16, 1 << max(0, int(m - 1).bit_length()))
        control = np.asarray(arrays["control"], dtype=np.float64) if "control" in arrays else None
        if control is not None:
            cap_l, cap_m = max(cap_l, int(control[8])), max(cap_m, int(control[9]))
        self._reset_model(cap_l, cap_m)
        if control is not None:
            self._g_size, self._g_err = float(control[0]), float(control[1])
            self._kscale, self._drift_measured, self._gap_checked = (_nan_none(v) for v in control[2:5])
            self._moved, self._resync_pending = bool(control[5]), bool(control[6])
            self._n_refresh = int(control[7])
            if not control[10]:
                self._KLL = None
        self._pos_of = np.full(len(self.store), -1, dtype=np.intp)
        self._nL = nL
        self._pidx[:nL] = pidx
        self._py[:nL] = self.y[pidx]
        self._pa[:nL] = arrays["alpha"]
        self._pg[:nL] = arrays["g"]
        self._pst[:nL] = arrays["status"]
        self._pseq[:nL] = arrays["seq"]
        self._pos_of[pidx] = np.arange(nL)
        self._pos_in_seq_order = (
            bool(control[11]) if control is not None else bool(np.all(np.diff(self._pseq[:nL]) > 0))
        )
        sc = np.asarray(arrays["scalars"], dtype=np.float64)
        self._b = float(sc[0])
        self._seq, self._since_sync, self._since_probe, self._n_resync = (int(v) for v in sc[1:5])
        self.C = float(sc[5])
        self._exact = bool(sc[6]) if len(sc) > 6 else True  # (older states were saved exact)
        self._m = m
        self._Spos[:m] = S
        self._slot[S] = np.arange(m)
        self._yS[:m] = self._py[S]
        self._R = np.array(arrays["R"], dtype=np.float64, order="C").reshape(m + 1, m + 1)
        if self._KLL is not None and nL:
            self._KLL[:nL, :nL] = self.cache.block(pidx, pidx)
        for j, k in enumerate(S):  # kernel rows are exact: recomputing them changes nothing
            self._Ks[j, :nL] = self._learned_row(int(k))


def _none_nan(value: float | None) -> float:
    return float("nan") if value is None else float(value)


def _nan_none(value: float) -> float | None:
    return None if np.isnan(value) else float(value)


class IncrementalOneClassSVM(IncrementalSVM):
    """Incremental one-class SVM: the incremental machinery of Laskov et al. (2006, §3,
    Algorithm 2) applied to the nu-one-class SVM of Schölkopf et al. (2001).

    Dual:  min_a 1/2 a^T K a   s.t.  0 <= a_i <= C,  sum_i a_i = 1,
    with C = 1/(nu n).  The margins are g_i = sum_j K_ij a_j + mu, and the same
    S/E/O machinery as the binary solver applies with every y_i = +1.
    ``learn(i)`` takes no label: it learns an unlabelled example of the store.

    This class does not implement the paper's eq. 23; it solves the
    nu-one-class SVM dual above.  The hypersphere form of the one-class problem
    (support vector data description) adds the linear term
    -sum_i a_i K(x_i, x_i) to that objective; with sum_i a_i = 1 the term is a
    constant when K(x, x) is the same for every x, so for the rbf kernel the
    two have the same solution, while for the linear and polynomial kernels
    they differ.

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
        if params.get("class_weight") is not None:
            raise ValueError("the one-class SVM learns one class: class_weight must be None")
        super().__init__(X, **params)

    def get_params(self) -> dict[str, Any]:
        p = super().get_params()
        p["nu"] = self.nu
        return p

    def _n_feasible(self) -> int:
        return max(1, math.ceil(1.0 / self.C - 1e-9))

    def _fix_C(self) -> None:
        if not self._C_fixed:
            assert self.nu is not None  # C is set from nu only when nu was given (__init__)
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

    @single_threaded_blas
    def learn(self, i: int, y: float | None = None) -> StepResult:
        """Learn unlabelled example ``i`` (``y`` is ignored; kept for the common signature)."""
        i, _ = self._check_learnable(i, 1.0)
        self._fix_C()
        self._last_status, self._last_cases, self._gap_checked = "ok", [], None
        with StepTimer(self) as tm:
            evicted: list[int]
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
                h[: nL - 1] += self.C * krow[: nL - 1]
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
                        self._pst[p] = SET_E if self._pa[p] >= self._bounds()[p] else SET_O
            if self._nL >= n0:
                changed = self._after_update()
                msg = msg or self._certify(f"learn of example {i}", changed)
        return self._result(tm, iters, msg, int(self._pos_of[i]), evicted=evicted)

    def _settle_bias(self) -> None:
        """(The binary rule does not apply: rho follows Algorithm 2, see the class docstring.)"""

    def _snap_single_class(self) -> None:
        """Not applicable: every example of the one-class problem has y = +1."""

    def _kkt_applies(self) -> bool:
        """Below ceil(1/C) learned examples every a_i = C and no KKT point exists yet."""
        return self._nL >= self._n_feasible()

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

    @single_threaded_blas
    def unlearn(self, i: int) -> StepResult:
        i = self._check_unlearnable(i)
        self._last_status, self._last_cases, self._gap_checked = "ok", [], None
        with StepTimer(self) as tm:
            iters, msg = self._remove(i)
            if self._nL >= self._n_feasible():
                changed = self._after_update()
                msg = msg or self._certify(f"unlearn of example {i}", changed)
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

    @single_threaded_blas
    def _load_state_arrays(self, arrays: dict[str, np.ndarray], meta: dict) -> None:
        super()._load_state_arrays(arrays, meta)
        self._C_fixed = bool(int(arrays["C_fixed"]))
