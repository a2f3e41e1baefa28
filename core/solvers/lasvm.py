"""LASVM: online SVM with PROCESS / REPROCESS and a finishing step.

Bordes, Ertekin, Weston, Bottou, "Fast Kernel Classifiers with Online and
Active Learning", JMLR 6 (2005), §3.

Notation of the paper (§3.1).  The solver works with *signed* coefficients
alpha_i = a_i y_i, box bounds

    A_i = min(0, C y_i) <= alpha_i <= B_i = max(0, C y_i),    sum_i alpha_i = 0,

(with class weights, ``class_weight``, C is per example, C_i = C w_{y_i}: A_i = min(0, C_i y_i),
B_i = max(0, C_i y_i), the bounds an example gets when it enters S; see ``base.ClassWeights``)
and gradients of the dual W(alpha) = sum_i alpha_i y_i - 1/2 sum_ij alpha_i alpha_j K_ij,

    g_i = y_i - sum_j alpha_j K_ij .

A pair (i, j) is *tau-violating* when alpha_i < B_i, alpha_j > A_j and
g_i - g_j > tau.  The solution is tau-approximate when no such pair exists.

The solver keeps a current set S of examples (the potential support vectors)
together with everything that is needed to update it without touching the rest
of the data store, so that one online step costs O(|S| · n_features):

* the signed coefficients, gradients, bounds and K(s, s) of the members of S;
* a cache of kernel rows K(s, S) of members, within ``cache_bytes`` (§3.3).

Kernel values come from the kernel layer by store index (``cache.compute``),
where each value is a function of its two examples alone: a row recomputed
after a restart, or after it was evicted, is the same bits as the one
computed online.

``learn(i, y)`` is one iteration of online LASVM (§3.2): PROCESS(i) then one
REPROCESS; ``learn_sequence`` does the same for many examples in order (the same
model, with the kernel rows of the new examples computed in blocks).
``revisit(i)`` is the same on an already-learned example (later epochs).
``finish()`` is the finishing step: REPROCESS until delta <= tau, with
LIBSVM-style shrinking.  The current bias ``b_`` and gap ``delta_`` (eq. 10)
and ``decision_function`` on arbitrary store indices are what the selection
criteria of §4 (gradient, active, autoactive, randomized search) need.

The steps themselves run compiled (``core.solvers._lasvm_compiled``); every
kernel value comes from the kernel layer (``self.kernel``, ``self.cache``).
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

import numpy as np

from core.solvers import _lasvm_compiled as nb
from core.solvers.base import (
    ClassWeights,
    OnlineSolver,
    StepResult,
    StepTimer,
    admissible_bias,
    bias_violation,
    movable,
)
from core.threads import single_threaded_blas

_INITIAL_CAPACITY = 256  # members S has room for at first (capacity doubles when S outgrows it)
_CHECK_CHUNK_ENTRIES = 1 << 17  # kernel entries per block of the final check (1 MiB)
_BLOCK_ENTRIES = 1 << 17  # kernel entries per block of new rows (learn_sequence, the final check) (1 MiB)
_MAX_BLOCK_ROWS = 256  # examples per block of learn_sequence
_BATCH_ADMIT_MIN = 128  # one round of the final check admits up to max(this, |S|) violators to S
_MIN_ROWS = 2  # rows a pair step works on: always kept, whatever the budget
_PAD = 8  # extra entries per row of the per-member arrays and the row cache (one cache line)
_EMPTY_I = np.empty(0, dtype=np.int64)
_EMPTY_F = np.empty(0)
_EMPTY_2D = np.empty((0, 0))


class LASVM(ClassWeights, OnlineSolver):
    """Online LASVM (Bordes et al. 2005) over a growable data store.

    Parameters (besides those of :class:`~core.solvers.base.OnlineSolver`)
    ----------
    curvature_floor : float, default 1e-12
        Curvature guard of the direction search: the denominator
        K_ii + K_jj - 2 K_ij of the step (§3.2, step lambda) is floored at this
        value when it is not larger (duplicate points, or rounding on nearly
        equal points).  The paper assumes a strictly positive curvature; with the
        floor the unconstrained step becomes huge and is clipped by the box
        bounds, which is the correct limit of a flat direction (as in LIBSVM).
    shrinking : bool, default True
        Shrinking during the finishing step: members of S that sit at a bound
        and whose gradient lies beyond the current extreme gradients are set
        aside (their gradients are not updated); they are brought back, with
        gradients recomputed from kernel rows, before convergence is declared.
    final_check : bool, default True
        At the end of ``finish()``, recompute the gradients of the learned
        examples that REPROCESS removed from S (blocked products
        K(outside, support vectors)); the ones that now violate the
        tau-optimality conditions enter S again, together (at most
        max(128, |S|) per round, the most violating first), then finishing
        resumes.  Later rounds skip the examples that a bound
        proves harmless (see ``_FinalCheck``).  This goes beyond the paper
        (whose finishing step only makes S tau-optimal), so that after
        ``finish()`` the whole learned set is tau-optimal (the largest
        violating pair over every learned example is <= tol).
        ``final_check=False`` gives the paper's finishing step exactly.

    ``tol`` is the paper's tau.  ``max_iter`` caps the number of REPROCESS
    steps of one ``finish()`` / ``unlearn()`` call; reaching it warns or raises
    (``on_max_iter``).

    ``unlearn`` is approximate (LASVM is not an exact incremental method); see
    its docstring.

    Kernel values: a row cache within ``cache_bytes``, as in §3.3.  The
    paper's implementation (like LIBSVM) keeps rows of kernel values in a
    cache of bounded size, with the examples reordered so that the members of
    S are contiguous, and discards the least recently used rows when the cache
    is full.  Here, as there, S occupies positions 0..|S|-1 (a removal moves
    the last member into the hole; shrinking swaps members to the end), a
    cached row of member s holds K(s, t) for every position t of S, the
    direction search reads the rows of its pair (i, j), and rows are evicted
    least recently used first.  A row that is not cached is computed again
    when a step needs it, through the kernel layer, so the cache changes how
    many kernel values are computed, never the model: every gradient is a sum
    taken one term at a time in increasing position, the same number
    whichever way its kernel values were obtained.  (This relies on the
    kernel layer giving K(x, z) with the same bits whatever the call's batch
    shape, and K(x, z) = K(z, x) bit for bit.)  Differences from the paper's
    cache, and why:

    * Rows span S only, never the data store (which may be a pool of
      millions of items), and a cached row is always complete: when an example
      enters S, its own row K(x_k, S) has just been computed (PROCESS needs it
      for g_k), and every cached row gains its entry K(x_s, x_k) = K(x_k, x_s)
      from it.  (The paper's cache keeps rows of any length and extends them
      on demand (the implementation that came with the paper); complete rows
      need no per-row bookkeeping in the inner loop.)
    * At least two rows are kept whatever the budget (the pair a step works
      on), so ``cache_bytes=0`` means "recompute every row when needed", not
      "cannot run".
    * The budget also covers the final check: the block of kernel values its
      first round computes is kept for later rounds only if it fits in the
      part of ``cache_bytes`` the rows do not use.

    Memory: the row cache (at most max(cache_bytes, 2 rows)), a dozen
    numbers per member of S (no copy of their features) and one
    position per store item; O(n) more during ``finish()`` (the final check
    keeps one gradient, radius and position per learned example), and blocks
    of at most a few MiB while computing kernel rows.  K(S, S) is never
    formed (``benchmarks/bench_lasvm_memory.py`` measures it).

    Speed: the steps run compiled (``_lasvm_compiled``, Numba), returning to
    Python only for kernel values; ``learn_sequence`` computes the rows of
    new examples in blocks.  While LASVM works, BLAS runs on one thread
    (``core.threads``, as libsvm does): its products are small, and threads
    mostly wait for each other, far worse on a busy machine (a 1 x 4,000 x 10
    row took 2 ms with two OpenBLAS threads on two loaded cores, 40 us on one).

    Where this follows the paper and where it does not (§3.2):

    * PROCESS and REPROCESS are the paper's steps, including "bail out" in
      PROCESS step 4 (k stays in S) and the removal of blatant non-support
      vectors after a REPROCESS step; b and delta of eq. 10 are also updated
      when REPROCESS bails out (finishing needs the current delta).  A
      removal criterion whose extreme does not exist (nobody can move that
      way) is not applied, and b is one-sided then (``set_bias``).
    * S starts empty rather than seeded with a few examples of each class:
      PROCESS finds no partner until both classes are present.
    * The curvature guard, shrinking during finishing, the exact
      recomputation of the gradients from kernel rows at the end of
      finishing, and the final check are additions (see the parameters).
    * The bias after ``finish()`` with the final check is not eq. 10's:
      eq. 10 takes b = (g_i + g_j) / 2 from the extremes over S, and the
      learned examples outside S (alpha = 0) bound b as well; with no
      coefficient strictly inside its box the midpoint of S's interval can lie
      far outside the interval of the whole learned set (b = -0.005 against
      SVC's -0.997 on 40 points with C = 1e-3).  b then follows the rule the
      solvers share (``base.admissible_bias``, LIBSVM's): the mean of g over
      the free members of S, else the midpoint of the interval over every
      learned example; the final gap includes the violation with that b
      (``_settle_bias``).  Online steps, ``unlearn`` and ``final_check=False``
      keep eq. 10 (S is all they know).
    * A step result's ``kkt_gap`` is max(0, delta); ``delta_`` keeps the
      signed delta of eq. 10, which is negative when S is optimal with room
      to spare.

    Known limitation: the paper's first-order pair choice (the most violating
    pair) converges slowly when C is large on a low-rank kernel matrix (linear
    or polynomial kernels on few features, duplicated points): each step is
    short and the iterates zigzag.  Such runs can reach ``max_iter``, which
    warns (or raises), never stops silently.
    """

    name: ClassVar[str] = "lasvm"
    exact_unlearn: ClassVar[bool] = False
    has_bias: ClassVar[bool] = True
    check_block_bytes: ClassVar[int] = 128 * 2**20  # at most this much of cache_bytes for the final check's block
    # the members' arrays (made by ``_allocate``; named here for the type checker): M floats, MI integers, R the
    # row cache and SL its slots (None only while ``_allocate`` / ``_resize_rows`` replace them)
    _M: np.ndarray
    _MI: np.ndarray
    _R: np.ndarray | None
    _SL: np.ndarray | None

    def __init__(
        self,
        X: np.ndarray | None = None,
        *,
        curvature_floor: float = 1e-12,
        shrinking: bool = True,
        final_check: bool = True,
        class_weight: None | str | dict = None,
        **params: Any,
    ):
        if not (np.isfinite(curvature_floor) and curvature_floor > 0):
            raise ValueError(f"curvature_floor must be a positive finite number, got {curvature_floor!r}")
        self.curvature_floor = float(curvature_floor)
        self.shrinking = bool(shrinking)
        self.final_check = bool(final_check)
        self._views: tuple[np.ndarray, np.ndarray] | None = None
        self._pos = np.empty(0, dtype=np.int64)  # store index -> position in S (-1: not in S)
        self._full_gap: float | None = None  # gap over every learned example (final check)
        self._init_class_weight(class_weight)
        super().__init__(X, **params)
        self._st = np.zeros(nb.N_ST, dtype=np.int64)
        self._fs = np.zeros(nb.N_FS)
        self._fs[nb.TOL], self._fs[nb.FLOOR] = self.tol, self.curvature_floor
        self._class_bounds_changed()
        self._allocate(0)

    def _class_bounds_changed(self) -> None:
        """The boxes of members that enter S from now on: B = C w_+ for a positive, A = -C w_- for a
        negative (``ClassWeights``; the members already in S keep theirs)."""
        self._fs[nb.C], self._fs[nb.C_NEG] = self.class_bounds_

    # ------------------------------------------------------------------
    # the current set S (positions 0..n-1; 0..n_active-1 are not shrunk)
    # ------------------------------------------------------------------
    def _allocate(self, cap: int) -> None:
        """Arrays for ``cap`` members, keeping the first n members (rows of the cache: the most recent)."""
        n = int(self._st[nb.N])
        old = getattr(self, "_M", None)
        M = np.zeros((nb.N_FLOAT, cap + _PAD))
        MI = np.full((nb.N_INT, cap + _PAD), -1, dtype=np.int64)
        if n:
            assert old is not None  # (members: the arrays were made before)
            M[:, :n] = old[:, :n]
            MI[:, :n] = self._MI[:, :n]
        # (the compiled steps can keep the members' feature vectors; they are not kept: every
        # kernel value comes from the kernel layer by store index, dense or sparse, so XS has no columns)
        self._M, self._MI, self._XS = M, MI, np.zeros((cap, 0))
        self._rowbuf = np.empty(cap)
        self._cap = cap
        self._resize_rows()

    def _resize_rows(self) -> None:
        """Make the row cache fit the capacity: max(2, cache_bytes / row bytes) rows (most recent kept)."""
        cap, n = self._cap, int(self._st[nb.N])
        width = cap + _PAD
        n_slots = max(_MIN_ROWS, min(max(cap, _MIN_ROWS), self.cache_bytes // (8 * width)))
        old_R, old_SL = getattr(self, "_R", None), getattr(self, "_SL", None)
        if old_R is not None and old_R.nbytes + 8 * n_slots * width > max(self.cache_bytes, 2 * 8 * _MIN_ROWS * width):
            # keeping the rows while the new cache is made would take more than the budget:
            # they are dropped first and computed again when needed
            old_R = old_SL = self._R = self._SL = None
        # (pages never touched are never resident; rows padded so that walking down a column of
        # R does not stride by a power of two, which maps every entry to the same cache set)
        R = np.empty((n_slots, width))
        SL = np.full((3, n_slots), -1, dtype=np.int64)
        self._MI[nb.SLOT, :] = -1
        kept = 0
        if old_SL is not None and n:
            assert old_R is not None  # (kept or dropped with old_SL)
            owned = np.flatnonzero(old_SL[nb.OWNER] >= 0)
            keep = owned[np.argsort(-old_SL[nb.STAMP, owned], kind="stable")[:n_slots]]
            kept = len(keep)
            R[:kept, :n] = old_R[keep, :n]
            SL[nb.OWNER, :kept] = old_SL[nb.OWNER, keep]
            SL[nb.STAMP, :kept] = old_SL[nb.STAMP, keep]
            self._MI[nb.SLOT, SL[nb.OWNER, :kept]] = np.arange(kept)
        free = np.arange(n_slots - 1, kept - 1, -1)  # (popped from the end: lowest slot first)
        SL[nb.FREE, : len(free)] = free
        self._st[nb.N_FREE] = len(free)
        self._R, self._SL = R, SL

    def _reserve(self, need: int) -> None:
        if need > self._cap:
            self._allocate(max(need, 2 * self._cap, _INITIAL_CAPACITY))

    def _on_store_grown(self, n_new: int) -> None:
        self._pos = np.concatenate([self._pos, np.full(n_new, -1, dtype=np.int64)])

    # per-member views (positions 0..n-1 are the members)
    @property
    def _n(self) -> int:
        return int(self._st[nb.N])

    @property
    def _n_active(self) -> int:
        return int(self._st[nb.NA])

    @property
    def _S(self) -> np.ndarray:
        return self._MI[nb.STORE]

    @property
    def _alpha(self) -> np.ndarray:
        return self._M[nb.ALPHA]

    @property
    def _g(self) -> np.ndarray:
        return self._M[nb.G]

    @property
    def _ys(self) -> np.ndarray:
        return self._M[nb.Y]

    @property
    def _lo(self) -> np.ndarray:
        return self._M[nb.LO]

    @property
    def _hi(self) -> np.ndarray:
        return self._M[nb.HI]

    @property
    def _b(self) -> float:
        return float(self._fs[nb.B])

    @property
    def _delta(self) -> float:
        return float(self._fs[nb.DELTA])

    # Views of the store's arrays are kept between steps and renewed when the
    # store has grown.  They are not part of the solver's state (see
    # ``__getstate__``).
    def _store_views(self) -> tuple[np.ndarray, np.ndarray]:
        views = self._views
        if views is None or len(views[1]) != len(self.store):
            # (no feature columns: the compiled steps copy none, see _allocate; the row terms are
            # squared norms, or feature sums for tanimoto)
            n = len(self.store)
            terms = self.store.row_terms(self.kernel) if self.kernel is not None else np.zeros(n)  # (no data yet)
            views = self._views = (np.zeros((n, 0)), terms)
        return views

    # ------------------------------------------------------------------
    # copies: what a copy holds (the active-learning loop keeps one per label for undo)
    # ------------------------------------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        """The solver's state without anything it can recompute from the data store.

        Left out: the kernel rows (the row cache starts empty and refills on
        demand; results do not depend on it), the members' feature vectors and
        the store-sized position index (rebuilt from the store), views of the
        store; the labels ``y`` are kept for the learned examples only.  So a
        copy sharing the store (``copy.deepcopy`` with the store in the memo,
        or the loop's undo copies) holds O(|S| + labels) numbers, nothing of
        the size of the pool and nothing quadratic in |S|.
        """
        state = self.__dict__.copy()
        n = self._n
        for name in ("_views", "_R", "_SL", "_XS", "_pos", "_rowbuf", "y"):
            state[name] = None
        state["_M"] = self._M[: nb.ACC, :n]
        state["_MI"] = self._MI[: nb.SLOT, :n]
        state["_y_learned"] = self.y[self.labelled_]
        state["_cap"] = 0
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        # Arrays may arrive read-only (unpickled from a read-only memory map): the solver writes
        # into its own, so those are copied.
        state = {
            name: value.copy() if isinstance(value, np.ndarray) and not value.flags.writeable else value
            for name, value in state.items()
        }
        y_learned = state.pop("_y_learned")
        self.__dict__.update(state)
        self.y = np.zeros(len(self.store))
        self.y[self.labelled_] = y_learned
        n = self._n
        M = np.zeros((nb.N_FLOAT, n))
        M[: nb.ACC] = state["_M"]
        MI = np.full((nb.N_INT, n), -1, dtype=np.int64)
        MI[: nb.SLOT] = state["_MI"]
        self._M, self._MI, self._R, self._SL = M, MI, None, None
        self._XS = np.zeros((n, 0))
        self._pos = np.full(len(self.store), -1, dtype=np.int64)
        self._pos[MI[nb.STORE]] = np.arange(n)
        self._allocate(max(n, _INITIAL_CAPACITY))

    # ------------------------------------------------------------------
    # kernel values (all through the kernel layer)
    # ------------------------------------------------------------------
    def _count_evals(self, k: int) -> None:
        assert self.cache is not None  # (kernel values: data came, and the kernel cache with them)
        self.cache.n_evals += int(k)

    def _rows_against_S(self, ks: np.ndarray, n: int) -> np.ndarray:
        """K(x_k, x_t) for store examples ks and the first n members t, counted."""
        if n == 0 or len(ks) == 0:
            return np.empty((len(ks), n))
        self._count_evals(len(ks) * n)
        assert self.cache is not None  # (members: data came, and the kernel cache with them)
        return self.cache.compute(ks, self._MI[nb.STORE, :n])

    def _diag(self, ks: np.ndarray) -> np.ndarray:
        """K(x_k, x_k), counted."""
        self._count_evals(len(ks))
        assert self.cache is not None  # (examples: data came, and the kernel cache with them)
        return self.cache.self_values(ks)

    def _cache_row(self, p: int) -> None:
        """Compute the row K(x_p, S) of member p and put it in the row cache."""
        n = self._n
        self._count_evals(n)
        S = self._MI[nb.STORE, :n]
        assert self.cache is not None  # (members: data came, and the kernel cache with them)
        row = self.cache.compute(S[p : p + 1], S)[0]
        nb.put_row(self._M, self._MI, self._R, self._SL, self._st, p, row)

    def _row(self, p: int) -> np.ndarray:
        """The cached row of member p (computed if needed); valid until the next row is cached."""
        if self._MI[nb.SLOT, p] < 0:
            self._cache_row(p)
        slot = int(self._MI[nb.SLOT, p])
        nb.touch(self._SL, self._st, slot)
        assert self._R is not None  # (made by _allocate)
        return self._R[slot]

    def _run(
        self,
        op: int,
        items: np.ndarray = _EMPTY_I,
        labels: np.ndarray = _EMPTY_F,
        block: np.ndarray = _EMPTY_2D,
        k_diag: np.ndarray = _EMPTY_F,
    ) -> int:
        """Run a compiled operation, computing the kernel rows it asks for, until it is done."""
        X, sq = self._store_views()
        while True:
            code = nb.run(
                op,
                self._M,
                self._MI,
                self._XS,
                self._pos,
                self._R,
                self._SL,
                self._st,
                self._fs,
                X,
                sq,
                items,
                labels,
                block,
                k_diag,
                self._rowbuf,
            )
            if code == nb.NEED_ROW:
                self._cache_row(int(self._st[nb.REQUEST]))
            elif code == nb.NEED_NEW_ROW:
                self._fill_block_row(int(self._st[nb.REQUEST]), items, block, k_diag)
            elif code == nb.NEED_GRADIENTS:
                self._gradients(int(self._st[nb.GRAD_FROM]))
            else:
                return code

    def _gradients(self, a: int) -> None:
        """g_s = y_s - sum_t alpha_t K(x_s, x_t) for positions s >= a, exactly; the shrunk members are back.

        The sums run over the support vectors t in increasing position: along
        a member's own cached row, or along the cached rows of the support
        vectors, else from blocks K(members, support vectors) of the kernel
        layer -- the same sums, so the same numbers.
        """
        st, M = self._st, self._M
        n = self._n
        sv = np.flatnonzero(M[nb.ALPHA, :n] != 0.0)
        if len(sv) == 0:
            M[nb.G, a:n] = M[nb.Y, a:n]
        else:
            left = nb.gradients_from_rows(M, self._MI, self._R, np.arange(a, n), sv)
            if len(left):
                assert self.cache is not None  # (support vectors: data came, and the kernel cache with them)
                S = self._MI[nb.STORE]
                coef = M[nb.ALPHA, sv]
                chunk = max(1, _BLOCK_ENTRIES // len(sv))
                for c in range(0, len(left), chunk):
                    part = left[c : c + chunk]
                    K = self.cache.compute(S[part], S[sv])
                    self._count_evals(K.size)
                    sums = np.empty(len(part))
                    nb.gradients_of_rows(K, coef, sums)
                    M[nb.G, part] = M[nb.Y, part] - sums
        st[nb.NA] = st[nb.N]
        st[nb.EXT_OK] = 0

    def _fill_block_row(self, t: int, items: np.ndarray, block: np.ndarray, k_diag: np.ndarray) -> None:
        """The block row of items[t] (it was in S when the block was made and has left S since).

        K(x_k, S) goes into the columns of the current members, and K(x_k', x_k)
        for the later items k' into k's own column (read once k has entered S).
        """
        n = self._n
        k = items[t : t + 1]
        block[t, self._MI[nb.COL, :n]] = self._rows_against_S(k, n)[0]
        k_diag[t] = self._diag(k)[0]
        later = items[t + 1 :]
        if len(later):
            self._count_evals(len(later))
            assert self.cache is not None  # (examples: data came, and the kernel cache with them)
            block[t + 1 :, block.shape[1] - len(items) + t] = self.cache.compute(later, k)[:, 0]

    def _extremes(self) -> tuple[int, int]:
        """(i, j) of §3.2 over the active members, -1 where none (see ``_lasvm_compiled.extremes``)."""
        i, j = nb.current_extremes(self._M, self._st)
        return int(i), int(j)

    def _set_bias(self, i: int, j: int) -> None:
        nb.set_bias(self._M, self._fs, i, j)

    def _gap_on_S(self) -> float:
        """The largest violating pair over S, max(0, delta): a step result's ``kkt_gap``.

        delta = g_i - g_j of eq. 10 is negative when S is optimal with room to
        spare (e.g. every member at a bound); ``delta_`` keeps that signed
        value, while a gap, like ``kkt_gap()``, is never negative.
        """
        return max(0.0, self._delta)

    # ------------------------------------------------------------------
    # PROCESS + REPROCESS over examples (learn, learn_sequence, revisit)
    # ------------------------------------------------------------------
    def _process_all(self, items: np.ndarray, labels: np.ndarray) -> int:
        """PROCESS(k) then one REPROCESS for each k of ``items`` in order; returns the steps taken.

        The kernel rows of the new examples are computed in blocks
        K(block, S at the block's start + block), so many examples cost a few
        calls of the kernel layer; the steps are those of ``learn`` one at a
        time (PROCESS reads K(x_k, S) from the block whatever happened to S in
        between).  A block row is not computed for an example already in S.
        """
        st = self._st
        steps = 0
        start = 0
        while start < len(items):
            n0 = self._n
            m = max(1, min(_MAX_BLOCK_ROWS, _BLOCK_ENTRIES // max(n0, 1), max(16, n0 // 4)))
            ks = items[start : start + m]
            ys = labels[start : start + m]
            m = len(ks)
            self._reserve(n0 + m)
            outside = self._pos[ks] < 0
            block = np.empty((m, n0 + m)) if outside.all() else np.zeros((m, n0 + m))
            k_diag = np.full(m, np.nan)  # (NaN: row not computed, see _lasvm_compiled.run)
            if outside.all():  # (the usual case: slices, no scattering)
                self._fill_block(ks, n0, block, k_diag)
            elif outside.any():
                at = np.flatnonzero(outside)
                part, part_diag = np.zeros((len(at), n0 + len(at))), np.empty(len(at))
                self._fill_block(ks[at], n0, part, part_diag)
                block[at, :n0] = part[:, :n0]
                block[np.ix_(at, n0 + at)] = part[:, n0:]
                k_diag[at] = part_diag
            self._MI[nb.COL, :n0] = np.arange(n0)
            st[nb.CURSOR], st[nb.PHASE], st[nb.STEPS] = 0, nb.PH_PROCESS, 0
            self._run(nb.OP_PROCESS, ks, ys, block, k_diag)
            steps += int(st[nb.STEPS])
            start += m
        return steps

    @single_threaded_blas
    def _fill_block(self, ks: np.ndarray, n0: int, block: np.ndarray, k_diag: np.ndarray) -> None:
        """block[:, :n0] = K(x_ks, S), block[:, n0:] = K(x_ks, x_ks), k_diag = K(x_k, x_k) (counted)."""
        m = len(ks)
        if n0:
            block[:, :n0] = self._rows_against_S(ks, n0)
        k_diag[:] = self._diag(ks)
        if m > 1:  # K(x_k, x_k') between the block's examples (for those that entered S before k)
            self._count_evals(m * m)
            assert self.cache is not None  # (examples: data came, and the kernel cache with them)
            block[:, n0:] = self.cache.compute(ks, ks)

    @single_threaded_blas
    def learn(self, i: int, y: float) -> StepResult:
        """One online LASVM iteration: PROCESS(i) followed by one REPROCESS (§3.2).

        Costs O(|S| · n_features) whatever the size of the store.  The
        result's ``kkt_gap`` is the largest violating pair over S, max(0,
        delta) with delta of eq. 10 (``delta_``); the gap over every learned
        example is ``kkt_gap()``.
        """
        i, y = self._check_learnable(i, y)
        # (StepTimer's bookkeeping inline: this is the online hot path)
        t0 = time.perf_counter()
        cache = self.cache
        assert cache is not None  # (a learnable example: data came, and the kernel cache with them)
        evals0 = cache.n_evals
        self.y[i] = y
        self.learned_order.append(i)
        stepped = self._process_all(np.array([i], dtype=np.int64), np.array([y]))
        result = StepResult(
            status="ok",
            iterations=stepped,
            kernel_evals=cache.n_evals - evals0,
            seconds=time.perf_counter() - t0,
            kkt_gap=self._gap_on_S(),
            extra={"n_set": self._n, "b": self._b},
        )
        return result if self.class_weight != "balanced" else self._rebalanced(result)

    @single_threaded_blas
    def learn_sequence(self, idx, y) -> StepResult:
        """``learn(i, y_i)`` for each i of ``idx`` in order, in one call: the same model, faster.

        The kernel rows K(x_i, S) that PROCESS needs are computed in blocks
        of a few MiB (one call of the kernel layer for up to 256 examples)
        and the steps run compiled without returning to Python, which is
        what one pass over a training set (``fit``) wants.  Refused as a
        whole, with nothing learned, if an index is out of range, repeated or
        already learned, or a label is not -1 / +1.
        """
        idx = np.asarray(idx).reshape(-1)
        labels = np.asarray(y, dtype=np.float64).reshape(-1)
        if len(idx) != len(labels):
            raise ValueError(f"learn_sequence got {len(idx)} indices and {len(labels)} labels")
        if len(idx) and not np.issubdtype(idx.dtype, np.integer):
            raise ValueError(f"indices must be integers, got dtype {idx.dtype}")
        idx = idx.astype(np.int64)
        if len(idx):
            bad = np.flatnonzero((idx < 0) | (idx >= len(self.store)))
            if len(bad):
                raise IndexError(f"example {idx[bad[0]]} is not in the store (size {len(self.store)})")
            bad = np.flatnonzero((labels != 1.0) & (labels != -1.0))
            if len(bad):
                raise ValueError(f"label must be -1 or +1, got {labels[bad[0]]!r} for example {idx[bad[0]]}")
            learned = np.flatnonzero(self.y[idx] != 0)
            if len(learned):
                raise ValueError(f"example {idx[learned[0]]} has already been learned")
            uniq, counts = np.unique(idx, return_counts=True)
            if np.any(counts > 1):
                raise ValueError(f"example {uniq[counts > 1][0]} appears more than once")
        timer = StepTimer(self)
        with timer:
            self.y[idx] = labels
            self.learned_order.extend(idx.tolist())
            steps = self._process_all(idx, labels)
        return self._rebalanced(
            timer.result(
                status="ok", iterations=steps, kkt_gap=self._gap_on_S(), extra={"n_set": self._n, "b": self._b}
            )
        )

    @single_threaded_blas
    def revisit(self, i: int) -> StepResult:
        """A later epoch: PROCESS(i) on an already-learned example, then one REPROCESS."""
        i = self._check_unlearnable(i)
        timer = StepTimer(self)
        with timer:
            stepped = self._process_all(np.array([i], dtype=np.int64), np.array([self.y[i]]))
        return timer.result(
            status="ok", iterations=stepped, kkt_gap=self._gap_on_S(), extra={"n_set": self._n, "b": self._b}
        )

    @single_threaded_blas
    def revisit_sequence(self, idx) -> StepResult:
        """``revisit(i)`` for each i of ``idx`` in order, in one call (a later epoch; the same model)."""
        idx = np.asarray(idx, dtype=np.int64).reshape(-1)
        for i in idx.tolist():
            self._check_unlearnable(i)
        timer = StepTimer(self)
        with timer:
            steps = self._process_all(idx, self.y[idx].copy())
        return timer.result(
            status="ok", iterations=steps, kkt_gap=self._gap_on_S(), extra={"n_set": self._n, "b": self._b}
        )

    # ------------------------------------------------------------------
    # unlearning
    # ------------------------------------------------------------------
    @single_threaded_blas
    def unlearn(self, i: int) -> StepResult:
        """Remove example ``i`` — approximately (LASVM is not an exact incremental method).

        If ``i`` is in S with a non-zero coefficient, its coefficient is driven
        to 0 by pair steps with other members of S that keep the equality
        constraint sum_s alpha_s = 0 (each step moves alpha_i towards 0 and the
        partner with the most favourable gradient the other way, up to the
        partner's bound); then ``i`` leaves S and REPROCESS runs until
        delta <= tau on S.  Learned examples outside S are not revisited, so
        the result is tau-optimal on S but is not guaranteed to equal training
        without ``i`` (``finish()`` afterwards makes the whole learned set
        tau-optimal again).  The active-learning loop undoes a label by
        restoring the saved pre-label state, which is exact.
        """
        i = self._check_unlearnable(i)
        timer = StepTimer(self)
        its = 0
        status, msg = "ok", ""
        with timer:
            if self._pos[i] >= 0:
                its += self._drive_to_zero(int(self._pos[i]))
                self._remove(int(self._pos[i]))
            self.y[i] = 0.0
            self.learned_order.remove(i)
            n_rep, status, msg = self._reprocess_until_tau("unlearn")
            its += n_rep
        return self._rebalanced(
            timer.result(
                status=status,
                iterations=its,
                kkt_gap=self._gap_on_S(),
                message=msg,
                extra={"n_set": self._n, "b": self._b},
            )
        )

    def _remove(self, p: int) -> None:
        nb.remove(self._M, self._MI, self._XS, self._pos, self._R, self._SL, self._st, p)

    def _drive_to_zero(self, p: int) -> int:
        """Pair steps that bring alpha_p to 0 while keeping sum alpha = 0 (used by ``unlearn``).

        (p keeps its position: no member leaves S during these steps.)
        """
        a, g, lo, hi = self._alpha, self._g, self._lo, self._hi
        n = self._n
        steps = 0
        while a[p] != 0.0 and steps <= n:
            others = np.ones(n, dtype=bool)
            others[p] = False
            if a[p] > 0:  # partner m goes up: alpha_m += lam, alpha_p -= lam
                cand = others & (a[:n] < hi[:n])
                if not cand.any():
                    break
                m = int(np.argmax(np.where(cand, g[:n], -np.inf)))
                room_m = hi[m] - a[m]
                lam = min(a[p], room_m)
                a[p] = 0.0 if lam >= a[p] else a[p] - lam
                a[m] = hi[m] if lam >= room_m else a[m] + lam
                K_m = self._row(m)
                K_p = self._row(p)
                g[:n] -= lam * (K_m[:n] - K_p[:n])
            else:  # partner m goes down: alpha_m -= lam, alpha_p += lam
                cand = others & (a[:n] > lo[:n])
                if not cand.any():
                    break
                m = int(np.argmin(np.where(cand, g[:n], np.inf)))
                room_m = a[m] - lo[m]
                lam = min(-a[p], room_m)
                a[p] = 0.0 if lam >= -a[p] else a[p] + lam
                a[m] = lo[m] if lam >= room_m else a[m] - lam
                K_m = self._row(m)
                K_p = self._row(p)
                g[:n] -= lam * (K_p[:n] - K_m[:n])
            steps += 1
        self._st[nb.EXT_OK] = 0
        if a[p] != 0.0:
            # sum alpha = 0 holds up to rounding only, so a remainder of the
            # order of rounding can be left with no partner: set it to 0 and
            # recompute the gradients exactly
            a[p] = 0.0
            self._refresh_gradients()
        return steps

    # ------------------------------------------------------------------
    # finishing
    # ------------------------------------------------------------------
    @single_threaded_blas
    def finish(self) -> StepResult:
        """Finishing step (§3.2): REPROCESS until delta <= tau, with shrinking.

        With ``final_check`` (default) learned examples that left S are checked
        afterwards and violators enter S again, and b is set over every learned
        example (see the class docstring).  The result's ``kkt_gap`` is then
        the largest violating pair over every learned example, or the
        violation with b if larger (what ``kkt_gap()`` recomputes), otherwise
        delta over S.  ``iterations`` counts the REPROCESS steps taken.
        """
        timer = StepTimer(self)
        self._full_gap = None
        with timer:
            its, status, msg, rounds = self._finish_loop()
        gap = self._gap_on_S() if self._full_gap is None or status not in ("ok", "inexact") else self._full_gap
        return timer.result(
            status=status,
            iterations=its,
            kkt_gap=gap,
            message=msg,
            extra={"n_set": self._n, "b": self._b, "delta": self._delta, "check_rounds": rounds},
        )

    def _reprocess_until_tau(self, what: str, its_done: int = 0) -> tuple[int, str, str]:
        """REPROCESS until delta <= tau (with shrinking if enabled); returns (steps, status, message)."""
        st = self._st
        st[nb.STEPS] = st[nb.PASSES] = st[nb.SINCE_SHRINK] = st[nb.UNSHRUNK_NEAR] = st[nb.STEPPED] = 0
        st[nb.SHRINK_EVERY] = max(10, min(self._n, 1000))
        st[nb.MAX_ITER], st[nb.SHRINKING], st[nb.STEPS_BEFORE] = self.max_iter, int(self.shrinking), its_done
        st[nb.PHASE] = nb.PH_LOOP
        code = self._run(nb.OP_REPROCESS_UNTIL_TAU)
        its = int(st[nb.STEPS])
        if code == nb.DONE:
            return its, "ok", ""
        if code == nb.DONE_NO_PAIR:
            return its, "ok", "no tau-violating pair although delta > tau"
        if code == nb.DONE_NAN:
            return its, "max_iter", self._iteration_cap(f"{what} (delta is {self._delta})", its_done + its)
        return its, "max_iter", self._iteration_cap(what, its_done + its)

    def _refresh_gradients(self) -> None:
        """Recompute every gradient of S exactly (and bring shrunk members back)."""
        self._gradients(0)

    def _finish_loop(self) -> tuple[int, str, str, int]:
        its = 0
        rounds = 0
        check = _FinalCheck(self) if self.final_check and self.learned_order else None
        passes = 0
        while True:
            passes += 1
            if passes > self.max_iter:  # (each pass normally takes steps; a cap that NaN cannot defeat)
                return its, "max_iter", self._iteration_cap("finishing", its), rounds
            n_rep, status, msg = self._reprocess_until_tau("finishing", its)
            its += n_rep
            if status != "ok":
                return its, status, msg, rounds
            # gradients were updated incrementally: recompute them exactly from the kernel rows
            self._refresh_gradients()
            self._set_bias(*self._extremes())
            if self._delta > self.tol:
                continue
            if check is None:
                return its, "ok", "", rounds
            rounds += 1
            violators, violation = check.violators()
            self._full_gap = check.full_gap
            if len(violators) == 0:
                status, msg = self._settle_bias(check)
                return its, status, msg, rounds
            if its >= self.max_iter:
                continue  # _reprocess_until_tau reports the cap
            # the violators enter S together with alpha = 0 (PROCESS step 2
            # for each), with K(violators, S) from the check's block where it
            # has them, and finishing resumes: REPROCESS picks the most
            # violating pair first, which takes fewer steps than pairing each
            # newcomer with an extreme (PROCESS steps 3-5).  When S was far
            # from the optimum over the learned set there can be many more
            # violators than members: then only the most violating ones enter
            # (at most ``_admission_limit()``), so that S stays of the size of
            # the solution; the next round finds the others again if they
            # still violate.
            limit = self._admission_limit()
            if len(violators) > limit:
                violators = violators[np.sort(np.argsort(-violation, kind="stable")[:limit])]
            self._admit(violators, check)

    def _settle_bias(self, check: _FinalCheck) -> tuple[str, str]:
        """b over every learned example once the final check found no violator; (status, message).

        Eq. 10 takes b from the extremes over S alone; learned examples outside S
        (alpha = 0) bound b too, and with no coefficient strictly inside its box
        the midpoint of S's interval can lie far outside the interval of the
        whole learned set.  b follows the rule shared by the solvers
        (``base.admissible_bias``): the mean of g over the free members of S,
        else the midpoint of the interval over every learned example.  As in
        ``kkt_gap()``, a coefficient within 1e-12 C of a bound is on it: a pair
        step can leave a remainder of 3e-17 where 0 was meant, which would pass
        for free and pin b at an end of its interval.  The check's extremes
        outside S bound the examples it skipped, by S's extremes in exact
        terms; where the two readings of S differ, the skipped examples are
        evaluated.  The final gap is the larger of the largest violating pair
        and the violation with that b; above tol (it cannot be, short of
        rounding) the status is "inexact".
        """
        n = self._n
        a, g, y = self._alpha[:n], self._g[:n], self._ys[:n]
        c_pos, c_neg = self.class_bounds_
        up, down = movable(a, y, np.where(y < 0, c_neg, c_pos))
        g_up_out, g_down_out = check.g_up_outside, check.g_down_outside
        if not (np.array_equal(up, a < self._hi[:n]) and np.array_equal(down, a > self._lo[:n])):
            g_skipped, y_skipped = check.skipped_gradients()
            g_up_out = max(g_up_out, float(g_skipped[y_skipped > 0].max(initial=-np.inf)))
            g_down_out = min(g_down_out, float(g_skipped[y_skipped < 0].min(initial=np.inf)))
        g_all = np.r_[g, g_up_out, g_down_out]
        up, down = np.r_[up, True, False], np.r_[down, False, True]
        b = admissible_bias(g_all, up, down)
        self._fs[nb.B] = b
        self._full_gap = max(check.full_gap, bias_violation(g_all, up, down, b))
        if self._full_gap > self.tol:
            return "inexact", self._not_tau_optimal(
                f"finishing left a KKT gap of {self._full_gap:.3g} with the bias (tol {self.tol:g})"
            )
        return "ok", ""

    def _admission_limit(self) -> int:
        """How many violators one round of the final check lets into S at most."""
        return max(_BATCH_ADMIT_MIN, self._n)

    def _admit(self, ks: np.ndarray, check: _FinalCheck) -> None:
        """Insert learned examples ks (outside S) into S in order, with alpha = 0 (PROCESS step 2 for each).

        K(ks, S) comes from the final check's block where it has the values;
        each newcomer's row also spans the newcomers before it.  Rows are
        computed in blocks of at most ``_BLOCK_ENTRIES`` values.
        """
        X, sq = self._store_views()
        self._reserve(self._n + len(ks))
        start = 0
        while start < len(ks):
            n0 = self._n
            m = max(1, min(len(ks) - start, _BLOCK_ENTRIES // max(n0, 1)))
            part = ks[start : start + m]
            K = np.empty((m, n0 + m))
            K[:, :n0] = check.kernel(part, self._S[:n0])
            assert self.cache is not None  # (learned examples: data came, and the kernel cache with them)
            K[:, n0:] = self.cache.compute(part, part)
            self._count_evals(m * m)
            nb.insert_all(
                self._M,
                self._MI,
                self._XS,
                self._pos,
                self._R,
                self._SL,
                self._st,
                self._fs,
                part.astype(np.int64),
                self.y[part],
                K,
                self._diag(part),
                X,
                sq,
            )
            start += m

    # ------------------------------------------------------------------
    # read-outs
    # ------------------------------------------------------------------
    @property
    def b_(self) -> float:
        """Current bias b of eq. 10."""
        return self._b

    @property
    def delta_(self) -> float:
        """Current gap delta = g_i - g_j of eq. 10 over S (0 when one side is empty)."""
        return self._delta

    @property
    def set_size_(self) -> int:
        """Number of examples in the current set S (support vectors and candidates)."""
        return self._n

    @property
    def set_indices_(self) -> np.ndarray:
        return self._S[: self._n].copy()

    @property
    def cached_rows_(self) -> int:
        """Kernel rows of members held in the row cache now."""
        assert self._SL is not None  # (made by _allocate)
        return int(np.sum(self._SL[nb.OWNER] >= 0))

    @property
    def row_cache_bytes_(self) -> int:
        """Bytes the row cache has reserved (at most max(cache_bytes, 2 rows))."""
        assert self._R is not None  # (made by _allocate)
        return int(self._R.nbytes)

    def coefficients(self) -> tuple[np.ndarray, np.ndarray, float]:
        n = self._n
        a = self._alpha[:n]
        nz = a != 0.0
        return self._S[:n][nz].copy(), a[nz].copy(), self._b

    def decision_function(self, idx=None, X=None) -> np.ndarray:
        """f = sum_s alpha_s K(x_s, x) + b for store indices ``idx`` (default: all) or new points ``X``.

        Kernel values K(x, S) come from ``cache.decision`` / ``decision_against``
        (counted, never cached rows over the store, summed in the fixed order),
        in blocks so that scoring a pool of millions of items never builds a
        huge matrix.
        """
        n = self._n
        a = self._alpha[:n]
        nz = a != 0.0
        sv, coef = self._S[:n][nz], a[nz]
        assert self.cache is not None, "no data yet"  # (the kernel cache is made with the first data)
        if X is not None:
            return self.cache.decision_against(X, sv, coef, self._b)
        idx = np.arange(len(self.store)) if idx is None else np.asarray(idx, dtype=np.intp).reshape(-1)
        return self.cache.decision(idx, sv, coef, self._b)

    # ------------------------------------------------------------------
    # state
    # ------------------------------------------------------------------
    def get_params(self) -> dict[str, Any]:
        params = super().get_params()
        params.update(
            curvature_floor=self.curvature_floor,
            shrinking=self.shrinking,
            final_check=self.final_check,
            class_weight=self.class_weight,
        )
        return params

    def _state_arrays(self) -> dict[str, np.ndarray]:
        n = self._n
        return {
            "set": self._S[:n].copy(),
            "alpha": self._alpha[:n].copy(),
            "grad": self._g[:n].copy(),
            "scalars": np.array([self._b, self._delta]),
        }

    def _load_state_arrays(self, arrays: dict[str, np.ndarray], meta: dict) -> None:
        """Members, coefficients, gradients, b and delta exactly as saved; no kernel row is computed.

        The row cache starts empty and every later step computes the rows it
        needs through the kernel layer, so a restored solver continues exactly
        as the saved one would have (given the same kernel values).
        """
        S = np.asarray(arrays["set"], dtype=np.int64)
        if len(S) and np.any(self.y[S] == 0):
            raise ValueError("state lists an unlearned example in the current set")
        alpha = np.asarray(arrays["alpha"], dtype=np.float64)
        grad = np.asarray(arrays["grad"], dtype=np.float64)
        if not (len(alpha) == len(grad) == len(S)) or len(np.unique(S)) != len(S):
            raise ValueError("state's current set, coefficients and gradients do not fit together")
        n = len(S)
        self._st[:] = 0
        self._allocate(max(n, _INITIAL_CAPACITY))
        self._pos[:] = -1
        if n:
            X, sq = self._store_views()
            y = self.y[S]
            M, MI = self._M, self._MI
            M[nb.ALPHA, :n], M[nb.G, :n], M[nb.Y, :n] = alpha, grad, y
            box = np.where(y < 0, self._fs[nb.C_NEG], self._fs[nb.C])
            M[nb.LO, :n], M[nb.HI, :n] = np.minimum(0.0, box * y), np.maximum(0.0, box * y)
            M[nb.KDIAG, :n] = self._diag(S)
            M[nb.SQ, :n] = sq[S]
            MI[nb.STORE, :n] = S
            self._pos[S] = np.arange(n)
        self._st[nb.N] = self._st[nb.NA] = n
        self._fs[nb.B], self._fs[nb.DELTA] = (float(v) for v in arrays["scalars"])


class _FinalCheck:
    """The final check of ``LASVM.finish()`` (one per call): gradients of the learned examples outside S.

    Outside S an example has alpha = 0, so it can take part in a
    tau-violating pair only one way: a positive one as i (it can go up), a
    negative one as j.  Round 1 computes every outside gradient exactly, with
    blocked products K(outside, support vectors).  Later rounds skip the
    examples that provably cannot matter, by a bound: with w = sum_s alpha_s
    phi(x_s), g_k = y_k - <w, phi(x_k)>, so between two rounds

        |g_k(now) - g_k(then)| <= ||w_now - w_then|| sqrt(K_kk),

    and ||w_now - w_then||^2 = ||w_now||^2 - 2 <w_now, w_then> + ||w_then||^2
    follows from quantities already known: ||w||^2 = sum_{s in S} alpha_s (y_s - g_s)
    and <w_now, w_then> = sum_{s in S_now} alpha_s^now (y_s - g_s^then), since
    every member of S now was in S at the last round or was one of that
    round's violators, whose gradients were computed exactly.  An example
    keeps the gradient of its last exact evaluation and the sum of these
    distances since; a positive one whose bound stays <= the largest g_i over
    S (a negative one: >= the smallest g_j) is neither a violator nor the
    extreme of the largest violating pair, so the gap over every learned
    example (``full_gap``) is still exact.  The others are evaluated again.

    Kernel values of round 1 are kept for later rounds when they fit in the
    part of the solver's ``cache_bytes`` that its row cache does not use (and
    in ``check_block_bytes``).  Gradients are sums in increasing position of
    S (``gradients_of_rows``), so they are the same numbers whether their
    kernel values were kept or computed again.
    """

    def __init__(self, solver: LASVM):
        self.s = solver
        self.L = solver.labelled_  # learning order
        self.sorter = np.argsort(self.L, kind="stable")
        self.g = np.zeros(len(self.L))  # gradient at the last exact evaluation
        self.radius = np.full(len(self.L), np.inf)  # bound on ||w_now - w_then|| since then
        self.w_sq = 0.0  # ||w||^2 at the last round
        self.w_abs = 0.0  # sum of |alpha_s (y_s - g_s)| (rounding scale of w_sq)
        self.full_gap = 0.0
        self.g_up_outside, self.g_down_outside = -np.inf, np.inf  # extremes of g outside S (last round)
        self.n_skipped = 0  # outside examples the last round proved harmless without evaluating them
        assert solver.kernel is not None and solver.cache is not None  # (learned examples: data came)
        if solver.kernel.name == "rbf":
            self.root_diag = None  # K_kk = 1
        else:
            diag = solver.cache.self_values(self.L)
            solver._count_evals(len(self.L))
            self.root_diag = np.sqrt(np.maximum(diag, 0.0))
        # the kept block: K[row_at[k], col_at[c]] for store indices k (rows) and c (columns)
        self.block: np.ndarray | None = None
        self.row_at: np.ndarray | None = None
        self.col_at: np.ndarray | None = None

    def _positions(self, idx: np.ndarray) -> np.ndarray:
        return self.sorter[np.searchsorted(self.L, idx, sorter=self.sorter)]

    def violators(self) -> tuple[np.ndarray, np.ndarray]:
        """Outside examples that violate tau-optimality (learning order) and by how much; sets ``full_gap``."""
        s = self.s
        n = s._n
        S, alpha, g_S, y_S = s._S[:n], s._alpha[:n], s._g[:n], s._ys[:n]
        pos_S = self._positions(S)
        # distance moved by w since the last round
        w_sq = float(alpha @ (y_S - g_S))
        w_abs = float(np.abs(alpha) @ np.abs(y_S - g_S))
        if np.all(self.radius[pos_S] == 0.0):
            before = y_S - self.g[pos_S]
            cross = float(alpha @ before)
            scale = w_abs + 2.0 * float(np.abs(alpha) @ np.abs(before)) + self.w_abs
            moved = np.sqrt(max(0.0, w_sq - 2.0 * cross + self.w_sq) + 1e-10 * scale)
        else:  # round 1 (or, defensively, a member with no exact gradient then)
            moved = np.inf
        self.radius += moved
        self.g[pos_S] = g_S
        self.radius[pos_S] = 0.0
        self.w_sq, self.w_abs = w_sq, w_abs

        i, j = s._extremes()
        g_up = float(s._g[i]) if i >= 0 else -np.inf
        g_down = float(s._g[j]) if j >= 0 else np.inf
        outside = np.ones(len(self.L), dtype=bool)
        outside[pos_S] = False
        out = np.flatnonzero(outside)  # positions in L, learning order
        y_out = s.y[self.L[out]]
        bound = self.radius[out]
        if self.root_diag is not None:
            # (K_kk = 0: phi(x_k) = 0, g_k = y_k never changes; but an
            # example not evaluated yet has an infinite radius and no value)
            bound = bound * np.where(bound == np.inf, 1.0, self.root_diag[out])
        g_then = self.g[out]
        slack = 1e-9 * (1.0 + np.abs(g_then))
        with np.errstate(invalid="ignore"):  # inf - inf never occurs: radius is finite or g_up/g_down is
            harmless = np.where(y_out > 0, g_then + bound + slack <= g_up, g_then - bound - slack >= g_down)
        ev = out[~harmless]
        self.n_skipped = int(harmless.sum())
        if len(ev):
            sv_pos = np.flatnonzero(alpha != 0.0)  # (increasing position)
            self.g[ev] = s.y[self.L[ev]] - self.scores(self.L[ev], S[sv_pos], alpha[sv_pos])
            self.radius[ev] = 0.0
        y_ev = s.y[self.L[ev]]
        g_ev = self.g[ev]
        pos, neg = y_ev > 0, y_ev < 0
        # (outside S: the evaluated extremes; the skipped examples lie within S's own)
        self.g_up_outside = float(g_ev[pos].max()) if pos.any() else -np.inf
        self.g_down_outside = float(g_ev[neg].min()) if neg.any() else np.inf
        g_up_all = max(g_up, self.g_up_outside)
        g_down_all = min(g_down, self.g_down_outside)
        excess = np.where(pos, g_ev - g_down_all, g_up_all - g_ev)
        viol = excess > s.tol
        gap = g_up_all - g_down_all
        self.full_gap = float(max(0.0, gap)) if np.isfinite(gap) else 0.0
        return self.L[ev[viol]], excess[viol]

    def skipped_gradients(self) -> tuple[np.ndarray, np.ndarray]:
        """(g, y) of the outside examples the last round skipped (proved harmless by a bound), evaluated."""
        s = self.s
        n = s._n
        S, alpha = s._S[:n], s._alpha[:n]
        outside = np.ones(len(self.L), dtype=bool)
        outside[self._positions(S)] = False
        rows = self.L[np.flatnonzero(outside & (self.radius > 0.0))]
        sv = np.flatnonzero(alpha != 0.0)
        return s.y[rows] - self.scores(rows, S[sv], alpha[sv]), s.y[rows]

    def scores(self, rows: np.ndarray, cols: np.ndarray, coef: np.ndarray) -> np.ndarray:
        """sum_c coef_c K(x_rows, x_c) over members ``cols`` of S (store indices, increasing position).

        In blocks of rows; the first call keeps its kernel values for later
        rounds when the whole block fits the budget (see the class docstring).
        """
        out = np.zeros(len(rows))
        if len(cols) == 0 or len(rows) == 0:
            return out
        s = self.s
        if self.block is not None:
            self._scores_with_block(rows, cols, coef, out)
            return out
        keep = None
        if self.block is None:
            assert s._R is not None  # (made by _allocate)
            budget = min(s.check_block_bytes, s.cache_bytes - s._R.nbytes)
            if 8 * len(rows) * len(cols) <= budget:
                keep = np.empty((len(rows), len(cols)))
        chunk = max(1, _CHECK_CHUNK_ENTRIES // len(cols))
        for a in range(0, len(rows), chunk):
            K = self.kernel(rows[a : a + chunk], cols)
            nb.gradients_of_rows(K, coef, out[a : a + chunk])
            if keep is not None:
                keep[a : a + chunk] = K
        if keep is not None:
            size = len(s.store)
            self.row_at = np.full(size, -1, dtype=np.int64)
            self.row_at[rows] = np.arange(len(rows))
            self.col_at = np.full(size, -1, dtype=np.int64)
            self.col_at[cols] = np.arange(len(cols))
            self.block = keep
        return out

    def _scores_with_block(self, rows: np.ndarray, cols: np.ndarray, coef: np.ndarray, out: np.ndarray) -> None:
        """``scores`` when a block is kept: its values are read in place, the others computed."""
        assert self.row_at is not None and self.col_at is not None  # (kept with the block)
        rpos, cpos = self.row_at[rows], self.col_at[cols]
        missing = np.flatnonzero(cpos < 0)
        extra_col = np.full(len(cols), -1, dtype=np.int64)
        extra_col[missing] = np.arange(len(missing))
        col_pos = self.s._pos[cols[missing]]
        kept = np.flatnonzero(rpos >= 0)
        chunk = max(1, _CHECK_CHUNK_ENTRIES // max(1, len(missing)))
        for a in range(0, len(kept), chunk):
            part = kept[a : a + chunk]
            extra = self._compute(rows[part], col_pos)
            sums = np.empty(len(part))
            nb.block_scores(self.block, rpos[part], cpos, extra, extra_col, coef, sums)
            out[part] = sums
        fresh = np.flatnonzero(rpos < 0)
        chunk = max(1, _CHECK_CHUNK_ENTRIES // len(cols))
        for a in range(0, len(fresh), chunk):
            part = fresh[a : a + chunk]
            sums = np.empty(len(part))
            nb.gradients_of_rows(self._compute(rows[part], self.s._pos[cols]), coef, sums)
            out[part] = sums

    def _compute(self, r: np.ndarray, cp: np.ndarray) -> np.ndarray:
        """K(x_r, x_{S_p}) for store indices r and positions cp of members, computed (counted) in blocks."""
        s = self.s
        out = np.empty((len(r), len(cp)))
        if len(r) == 0 or len(cp) == 0:
            return out
        cols = s._MI[nb.STORE][cp]
        chunk = max(1, _CHECK_CHUNK_ENTRIES // len(cp))
        assert s.cache is not None  # (members: data came, and the kernel cache with them)
        for a in range(0, len(r), chunk):
            out[a : a + chunk] = s.cache.compute(r[a : a + chunk], cols)
        s._count_evals(len(r) * len(cp))
        return out

    def kernel(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """K(x_rows, x_cols) for store indices (cols: members of S), from the kept block where it has them.

        Entries not in the block are computed (counted), in blocks of at most
        ``_CHECK_CHUNK_ENTRIES`` values.
        """
        col_pos = self.s._pos[cols]
        compute = self._compute
        if self.block is None:
            return compute(rows, col_pos)
        assert self.row_at is not None and self.col_at is not None  # (kept with the block)
        rpos, cpos = self.row_at[rows], self.col_at[cols]
        hr, hc = rpos >= 0, cpos >= 0
        K = np.empty((len(rows), len(cols)))
        nb.gather(self.block, rpos, cpos, K)
        if hr.any() and not hc.all():
            K[np.ix_(hr, ~hc)] = compute(rows[hr], col_pos[~hc])
        if not hr.all():
            K[~hr] = compute(rows[~hr], col_pos)
        return K


def warm_up() -> float:
    """Compile (or load from Numba's cache) LASVM's compiled loops with the argument types the
    solver passes; returns the seconds it took.  Part of ``core.solvers._compile``'s plan, so that a
    label does not wait for the compiler (several seconds; loading the cache takes well under one).
    A small cache evicts rows; with a larger one the final check keeps its kernel block for its later
    rounds (``block_scores``, ``gather``)."""
    t0 = time.perf_counter()
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 3))
    y = np.where(X[:, 0] + 0.3 * rng.standard_normal(60) > 0, 1.0, -1.0)
    for final_check, cache_bytes in ((False, 8 * 4 * 300), (True, 8 * 4 * 300), (True, 1 << 20)):
        s = LASVM(X, C=1.0, gamma=0.5, final_check=final_check, cache_bytes=cache_bytes)
        s.learn_sequence(np.arange(40), y[:40])
        for i in range(40, 60):
            s.learn(i, y[i])
        s.revisit(0)
        s.finish()
        s.unlearn(int(s.support_[0]))
    return time.perf_counter() - t0
