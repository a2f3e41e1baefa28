"""LASVM: online SVM with PROCESS / REPROCESS and a finishing step.

Bordes, Ertekin, Weston, Bottou, "Fast Kernel Classifiers with Online and
Active Learning", JMLR 6 (2005), §3.

Notation of the paper (§3.1).  The solver works with *signed* coefficients
alpha_i = a_i y_i, box bounds

    A_i = min(0, C y_i) <= alpha_i <= B_i = max(0, C y_i),    sum_i alpha_i = 0,

and gradients of the dual W(alpha) = sum_i alpha_i y_i - 1/2 sum_ij alpha_i alpha_j K_ij,

    g_i = y_i - sum_j alpha_j K_ij .

A pair (i, j) is *tau-violating* when alpha_i < B_i, alpha_j > A_j and
g_i - g_j > tau.  The solution is tau-approximate when no such pair exists.

The solver keeps a current set S of examples (the potential support vectors)
together with everything that is needed to update it without touching the rest
of the data store, so that one online step costs O(|S| · n_features):

* the signed coefficients and gradients of the members of S;
* the kernel matrix K(S, S), grown and shrunk as examples enter and leave S.

Kernel values come from the kernel layer (``cache.compute`` over store
indices), where each value is a function of its two examples alone: a K(S, S)
recomputed after a restart is the same bits as the one grown online.

``learn(i, y)`` is one iteration of online LASVM (§3.2): PROCESS(i) then one
REPROCESS.  ``revisit(i)`` is the same on an already-learned example (later
epochs).  ``finish()`` is the finishing step: REPROCESS until delta <= tau,
with LIBSVM-style shrinking.  The current bias ``b_`` and gap ``delta_``
(eq. 10) and ``decision_function`` on arbitrary store indices are what the
selection criteria of §4 (gradient, active, autoactive, randomized search)
need.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

import numpy as np

from core.kernels import dot, rows_dot
from core.solvers.base import OnlineSolver, StepResult, StepTimer

_INITIAL_CAPACITY = 64
_FEW_ZEROS = 32  # up to this many members at alpha = 0, the removal test loops over them
_BATCH_ADMIT_MIN = 256  # one round of the final check admits up to max(this, 2 |S|) violators to S


class LASVM(OnlineSolver):
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
        gradients recomputed from K(S, S), before convergence is declared.
    final_check : bool, default True
        At the end of ``finish()``, recompute the gradients of the learned
        examples that REPROCESS removed from S (one blocked product
        K(outside, support vectors)); the ones that now violate the
        tau-optimality conditions enter S again, together (or, when there are
        many more of them than members of S, one by one through PROCESS +
        REPROCESS, an extra epoch restricted to them), then finishing resumes.
        Later rounds skip the examples that a bound proves harmless (see
        ``_FinalCheck``).  This goes beyond the paper (whose finishing step
        only makes S tau-optimal), so that after ``finish()`` the whole
        learned set is tau-optimal (the largest violating pair over every
        learned example is <= tol).  ``final_check=False`` gives the paper's
        finishing step exactly.

    ``tol`` is the paper's tau.  ``max_iter`` caps the number of REPROCESS
    steps of one ``finish()`` / ``unlearn()`` call; reaching it warns or raises
    (``on_max_iter``).

    ``unlearn`` is approximate (LASVM is not an exact incremental method); see
    its docstring.

    Memory: K(S, S) is kept dense, O(|S|^2) (with 1.5x headroom); nothing
    is kept per store item beyond the base class's labels.

    Kernel values.  The paper's implementation reads kernel rows through a
    row cache.  Here every value the direction search needs, K(s, t) for s, t
    in S, is kept in K(S, S) itself, grown by PROCESS (one row K(x_k, S) per
    new member) and shrunk by REPROCESS's removals, so the search never
    recomputes a kernel value and never misses; the store-wide
    ``KernelCache`` is not used for learning (``cache_bytes`` changes
    nothing, as the tests check).  Only the final check computes values
    outside K(S, S), in blocks of its own.

    Where this follows the paper and where it does not (§3.2):

    * PROCESS and REPROCESS are the paper's steps, including "bail out" in
      PROCESS step 4 (k stays in S) and the removal of blatant non-support
      vectors after a REPROCESS step; b and delta of eq. 10 are also updated
      when REPROCESS bails out (finishing needs the current delta).  A
      removal criterion whose extreme does not exist (nobody can move that
      way) is not applied, and b is one-sided then (``_set_bias``).
    * S starts empty rather than seeded with a few examples of each class:
      PROCESS finds no partner until both classes are present.
    * The curvature guard, shrinking during finishing, the exact
      recomputation of the gradients from K(S, S) at the end of finishing,
      and the final check are additions (see the parameters).
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
    check_block_bytes: ClassVar[int] = 128 * 2**20

    def __init__(self, X: np.ndarray | None = None, *, curvature_floor: float = 1e-12,
                 shrinking: bool = True, final_check: bool = True, **params: Any):
        if not (np.isfinite(curvature_floor) and curvature_floor > 0):
            raise ValueError(f"curvature_floor must be a positive finite number, got {curvature_floor!r}")
        self.curvature_floor = float(curvature_floor)
        self.shrinking = bool(shrinking)
        self.final_check = bool(final_check)
        self._reset_set()
        super().__init__(X, **params)

    # ------------------------------------------------------------------
    # the current set S (positions 0..n-1; 0..n_active-1 are not shrunk)
    # ------------------------------------------------------------------
    def _reset_set(self) -> None:
        self._cap = 0
        self._n = 0
        self._n_active = 0
        self._S = np.empty(0, dtype=np.intp)  # store index of each position
        self._alpha = np.empty(0)  # signed coefficients alpha_s = a_s y_s
        self._g = np.empty(0)  # gradients g_s = y_s - sum_t alpha_t K_st
        self._ys = np.empty(0)
        self._lo = np.empty(0)  # A_s = min(0, C y_s)
        self._hi = np.empty(0)  # B_s = max(0, C y_s)
        # 0 where alpha_s < B_s (resp. alpha_s > A_s), -inf (resp. +inf) otherwise:
        # argmax(g + up_pen) is the i of §3.2, argmin(g + down_pen) the j
        self._up_pen = np.empty(0)
        self._down_pen = np.empty(0)
        self._buf = np.empty(0)
        self._K = np.empty((0, 0))  # K(S, S)
        self._where: dict[int, int] = {}  # store index -> position in S
        self._b = 0.0
        self._delta = 0.0
        self._ext = None  # cached (i, j) of _extremes
        self._full_gap: float | None = None  # gap over every learned example (final check)
        self._zeros: set[int] = set()  # store indices of the members with alpha = 0

    def _per_member(self) -> tuple[np.ndarray, ...]:
        return (self._S, self._alpha, self._g, self._ys, self._lo, self._hi, self._up_pen, self._down_pen)

    def _reserve(self, need: int) -> None:
        if need <= self._cap:
            return
        cap = max(need, self._cap + self._cap // 2, _INITIAL_CAPACITY)  # K(S, S) is cap x cap
        n = self._n

        def grow(a: np.ndarray) -> np.ndarray:
            out = np.zeros(cap, dtype=a.dtype)
            out[:n] = a[:n]
            return out

        (self._S, self._alpha, self._g, self._ys, self._lo, self._hi, self._up_pen,
         self._down_pen) = (grow(a) for a in self._per_member())
        self._buf = np.empty(cap)
        K = np.zeros((cap, cap))
        K[:n, :n] = self._K[:n, :n]
        self._K = K
        self._cap = cap

    def _set_pen(self, p: int) -> None:
        a = self._alpha[p]
        self._up_pen[p] = 0.0 if a < self._hi[p] else -np.inf
        self._down_pen[p] = 0.0 if a > self._lo[p] else np.inf

    def _note_zero(self, p: int) -> None:
        if self._alpha[p] == 0.0:
            self._zeros.add(int(self._S[p]))
        else:
            self._zeros.discard(int(self._S[p]))

    def _count_evals(self, k: int) -> None:
        self.cache.n_evals += int(k)

    def _kernel_row(self, k: int, n: int) -> np.ndarray:
        """K(x_k, S[:n]) (the online hot path; not counted here).

        Computed over store indices by the kernel layer, never a row over the
        whole store (the store may be a pool of millions of items), and never a
        gathered copy of the members' features.
        """
        return self.cache.compute(k, self._S[:n])[0]

    def _kernel_rows(self, ks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """K(x_ks, S) and K(x_ks, x_ks), counted as kernel evaluations."""
        n = self._n
        m = len(ks)
        K_kS = self.cache.compute(ks, self._S[:n]) if n else np.empty((m, 0))
        K_kk = self.cache.compute(ks, ks)  # (symmetric, with K(x, x) on its diagonal, bit for bit)
        self._count_evals(m * n + m * (m + 1) // 2)
        return K_kS, K_kk

    def _insert(self, ks: np.ndarray, K_kS: np.ndarray, K_kk: np.ndarray) -> None:
        """Add examples ks to S with alpha = 0 and their gradient (PROCESS step 2)."""
        if self._n_active != self._n:  # pragma: no cover - internal invariant
            raise RuntimeError("insertion into S while members are shrunk")
        m = len(ks)
        if m == 1:
            self._insert_one(int(ks[0]), K_kS[0], float(K_kk[0, 0]))
            return
        n = self._n
        self._reserve(n + m)
        K = self._K
        K[n:n + m, :n] = K_kS
        K[:n, n:n + m] = K_kS.T
        K[n:n + m, n:n + m] = K_kk
        y = self.y[ks]
        self._S[n:n + m] = ks
        self._alpha[n:n + m] = 0.0
        self._ys[n:n + m] = y
        self._lo[n:n + m] = np.minimum(0.0, self.C * y)
        self._hi[n:n + m] = np.maximum(0.0, self.C * y)
        # alpha = 0: a positive example can only go up, a negative one only down
        self._up_pen[n:n + m] = np.where(y > 0, 0.0, -np.inf)
        self._down_pen[n:n + m] = np.where(y > 0, np.inf, 0.0)
        # g_k = y_k - sum_{s in S} alpha_s K_ks (PROCESS step 2)
        self._g[n:n + m] = y - rows_dot(K_kS, self._alpha[:n]) if n else y
        for t in range(m):
            self._where[int(ks[t])] = n + t
            self._zeros.add(int(ks[t]))
        self._n = self._n_active = n + m
        self._ext = None

    def _insert_one(self, k: int, K_kS: np.ndarray, K_kk: float) -> None:
        """``_insert`` for a single example, with scalar bookkeeping (the online hot path)."""
        n = self._n
        if n == self._cap:
            self._reserve(n + 1)
        K = self._K
        K[n, :n] = K_kS
        K[:n, n] = K_kS
        K[n, n] = K_kk
        y = float(self.y[k])
        self._S[n] = k
        self._alpha[n] = 0.0
        self._ys[n] = y
        if y > 0:  # alpha = 0 = A_k: can only go up
            self._lo[n], self._hi[n], self._up_pen[n], self._down_pen[n] = 0.0, self.C, 0.0, np.inf
        else:  # alpha = 0 = B_k: can only go down
            self._lo[n], self._hi[n], self._up_pen[n], self._down_pen[n] = -self.C, 0.0, -np.inf, 0.0
        # g_k = y_k - sum_{s in S} alpha_s K_ks (PROCESS step 2)
        self._g[n] = y - dot(K_kS, self._alpha[:n]) if n else y
        self._where[k] = n
        self._zeros.add(k)
        self._n = self._n_active = n + 1
        if self._ext is not None:
            # the extremes over S + {k} follow from those over S: k can only
            # move up (y_k = +1) or only down (y_k = -1); on a tie the earlier
            # position wins, as with argmax/argmin
            i, j = self._ext
            g_k = self._g[n]
            if y > 0 and (i < 0 or g_k > self._g[i]):
                self._ext = (n, j)
            elif y < 0 and (j < 0 or g_k < self._g[j]):
                self._ext = (i, n)

    def _move(self, src: int, dst: int) -> None:
        """Copy everything of position src into position dst (src becomes free)."""
        n = self._n
        K = self._K
        K[dst, :n] = K[src, :n]
        K[:n, dst] = K[:n, src]  # K[dst, dst] now holds the old K[src, src]
        for arr in self._per_member():
            arr[dst] = arr[src]
        self._where[int(self._S[dst])] = dst

    def _swap(self, p: int, q: int) -> None:
        if p == q:
            return
        n = self._n
        K = self._K
        K[[p, q], :n] = K[[q, p], :n]
        K[:n, [p, q]] = K[:n, [q, p]]
        for arr in self._per_member():
            arr[p], arr[q] = arr[q], arr[p]
        self._ext = None
        self._where[int(self._S[p])] = p
        self._where[int(self._S[q])] = q

    def _remove(self, p: int) -> None:
        """Take position p out of S (its coefficient must be 0)."""
        k = int(self._S[p])
        del self._where[k]
        self._zeros.discard(k)
        na, n = self._n_active, self._n
        ext = self._ext
        if p < na:
            if p != na - 1:
                self._move(na - 1, p)
            if na - 1 != n - 1:
                self._move(n - 1, na - 1)
            self._n_active = na - 1
        elif p != n - 1:
            self._move(n - 1, p)
        self._n = n - 1
        # the extremes stay the same members unless p was one of them (the
        # blatant non-support vectors of REPROCESS never are); only the
        # member that moved from na - 1 into p changes position (extremes are
        # never shrunk).  On a tie, argmax / argmin take the earliest position:
        # so does the kept pair, so that it is the pair _extremes() would
        # compute from scratch (as it does after a restart).
        if ext is not None and p < na and p not in ext:
            i, j = (p if q == na - 1 else q for q in ext)
            if p != na - 1:  # a member moved into p
                g = self._g
                if 0 <= p < i and g[p] + self._up_pen[p] == g[i] + self._up_pen[i]:
                    i = p
                if 0 <= p < j and g[p] + self._down_pen[p] == g[j] + self._down_pen[j]:
                    j = p
            self._ext = (i, j)
        else:
            self._ext = None

    # ------------------------------------------------------------------
    # the direction search of §3.2
    # ------------------------------------------------------------------
    def _extremes(self) -> tuple[int, int]:
        """(i, j) of §3.2, -1 where none (kept until S, a coefficient or a gradient changes).

        i = argmax g_s over s in S with alpha_s < B_s, j = argmin g_s over s
        in S with alpha_s > A_s: argmax(g + up_pen), argmin(g + down_pen) over
        the maintained arrays (ties: the earlier position).
        """
        ext = self._ext
        if ext is None:
            na = self._n_active
            if na == 0:
                ext = (-1, -1)
            else:
                g, buf = self._g[:na], self._buf[:na]
                np.add(g, self._up_pen[:na], out=buf)
                i = int(buf.argmax())
                if buf.item(i) == -np.inf:
                    i = -1
                np.add(g, self._down_pen[:na], out=buf)
                j = int(buf.argmin())
                if buf.item(j) == np.inf:
                    j = -1
                ext = (i, j)
            self._ext = ext
        return ext

    def _step(self, i: int, j: int) -> None:
        """alpha_i += lambda, alpha_j -= lambda and the gradient update (§3.2, PROCESS 5 / REPROCESS 3)."""
        K, a, g = self._K, self._alpha, self._g
        K_i, K_j = K[i], K[j]
        curvature = K_i.item(i) + K_j.item(j) - 2.0 * K_i.item(j)
        if not curvature > self.curvature_floor:  # curvature guard (see class docstring)
            curvature = self.curvature_floor
        a_i, a_j = a.item(i), a.item(j)
        lo, hi = self._lo, self._hi
        hi_i, lo_j = hi.item(i), lo.item(j)
        room_i = hi_i - a_i
        room_j = a_j - lo_j
        lam = min((g.item(i) - g.item(j)) / curvature, room_i, room_j)
        # coefficients that reach a bound are set to it exactly, so that
        # "alpha_s = 0" of the removal test and the bound tests stay exact
        a_i = hi_i if lam >= room_i else a_i + lam
        a_j = lo_j if lam >= room_j else a_j - lam
        a[i] = a_i
        a[j] = a_j
        # (a step below the rounding of alpha can leave it unchanged: the
        # flags are recomputed from the values rather than assumed)
        up, down = self._up_pen, self._down_pen
        up[i] = 0.0 if a_i < hi_i else -np.inf
        down[i] = 0.0 if a_i > lo.item(i) else np.inf
        up[j] = 0.0 if a_j < hi.item(j) else -np.inf
        down[j] = 0.0 if a_j > lo_j else np.inf
        zeros, S = self._zeros, self._S
        if a_i == 0.0:
            zeros.add(S.item(i))
        else:
            zeros.discard(S.item(i))
        if a_j == 0.0:
            zeros.add(S.item(j))
        else:
            zeros.discard(S.item(j))
        self._ext = None
        na = self._n_active
        # g_s <- g_s - lambda (K_is - K_js) for every (non-shrunk) s in S
        buf, g_a = self._buf[:na], g[:na]
        np.subtract(K_i[:na], K_j[:na], out=buf)
        buf *= lam
        np.subtract(g_a, buf, out=g_a)  # (not g[:na] -= buf, which also copies the result back)

    def _gap_on_S(self) -> float:
        """The largest violating pair over S, max(0, delta): a step result's ``kkt_gap``.

        delta = g_i - g_j of eq. 10 is negative when S is optimal with room to
        spare (e.g. every member at a bound); ``delta_`` keeps that signed
        value, while a gap, like ``kkt_gap()``, is never negative.
        """
        return max(0.0, self._delta)

    def _set_bias(self, i: int, j: int) -> None:
        """b and delta of eq. 10 from the extreme pair (one-sided when a side is empty)."""
        g = self._g
        if i >= 0 and j >= 0:
            g_i, g_j = g.item(i), g.item(j)
            self._b = 0.5 * (g_i + g_j)
            self._delta = g_i - g_j
        elif i >= 0:  # nothing can decrease (e.g. one class only): b in [g_i, +inf)
            self._b = g.item(i)
            self._delta = 0.0
        elif j >= 0:  # nothing can increase: b in (-inf, g_j]
            self._b = g.item(j)
            self._delta = 0.0
        else:
            self._delta = 0.0

    def _process(self, k: int) -> bool:
        """LASVM PROCESS(k) (§3.2); returns whether a step was taken."""
        if k in self._where:  # 1) bail out if k in S
            return False
        n = self._n
        K_kS = self._kernel_row(k, n) if n else np.empty(0)
        K_kk = 1.0 if self.kernel.name in ("rbf", "tanimoto") else float(self.cache.self_values(k)[0])
        self._count_evals(n + 1)
        self._insert_one(k, K_kS, K_kk)  # 2) alpha_k = 0, g_k, S = S + {k}
        # 3) pair k with the extreme of the other side
        if self._ys.item(n) > 0:
            i, j = n, self._extremes()[1]
        else:
            i, j = self._extremes()[0], n
        # 4) bail out if (i, j) is not a tau-violating pair
        if i < 0 or j < 0 or not self._g.item(i) - self._g.item(j) > self.tol:
            return False
        self._step(i, j)  # 5) direction search
        return True

    def _reprocess(self) -> bool:
        """LASVM REPROCESS (§3.2); returns whether a step was taken.

        b and delta (eq. 10) are also refreshed when REPROCESS bails out
        (no tau-violating pair): the finishing loop "repeat REPROCESS until
        delta <= tau" needs the current delta either way.
        """
        i, j = self._extremes()  # 1)
        if i < 0 or j < 0 or not self._g.item(i) - self._g.item(j) > self.tol:  # 2) bail out
            self._set_bias(i, j)
            return False
        self._step(i, j)  # 3)
        i, j = self._extremes()  # 4) new extremes ...
        self._set_bias(i, j)  # 5) eq. 10 with g_i, g_j of step 4 (taken before positions move)
        if self._zeros:
            self._remove_blatant(i, j)  # 4) ... and removal of blatant non support vectors
        return True

    def _remove_blatant(self, i: int, j: int) -> int:
        """REPROCESS step 4: drop s with alpha_s = 0 and y_s = -1, g_s >= g_i or y_s = +1, g_s <= g_j.

        A criterion whose extreme does not exist (no member can move that way)
        is not applied, so a single-class S is kept.  i and j themselves are
        never dropped (alpha_i < B_i rules out a negative example at 0, and
        likewise for j).
        """
        zeros = self._zeros
        if not zeros:
            return 0
        na = self._n_active
        g, ys = self._g, self._ys
        g_i = g.item(i) if i >= 0 else np.inf  # an absent extreme disables its criterion
        g_j = g.item(j) if j >= 0 else -np.inf
        if len(zeros) <= _FEW_ZEROS:  # usually: a handful of members at alpha = 0
            where = self._where
            positions = []
            for k in zeros:
                p = where[k]
                if p < na:
                    g_p = g.item(p)
                    if (g_p >= g_i) if ys.item(p) < 0 else (g_p <= g_j):
                        positions.append(p)
            if not positions:
                return 0
            positions.sort(reverse=True)  # highest position first: moved-in members are never pending
        else:  # many (e.g. after the final check admitted a batch): over the arrays
            g_a, y_a = g[:na], ys[:na]
            drop = (self._alpha[:na] == 0.0) & np.where(y_a < 0, g_a >= g_i, g_a <= g_j)
            positions = np.flatnonzero(drop)[::-1].tolist()
        for p in positions:
            self._remove(p)
        return len(positions)

    # ------------------------------------------------------------------
    # the contract
    # ------------------------------------------------------------------
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
        evals0 = cache.n_evals
        self.y[i] = y
        self.learned_order.append(i)
        stepped = int(self._process(i))
        stepped += int(self._reprocess())
        return StepResult(status="ok", iterations=stepped, kernel_evals=cache.n_evals - evals0,
                          seconds=time.perf_counter() - t0, kkt_gap=self._gap_on_S(),
                          extra={"n_set": self._n, "b": self._b})

    def revisit(self, i: int) -> StepResult:
        """A later epoch: PROCESS(i) on an already-learned example, then one REPROCESS."""
        i = self._check_unlearnable(i)
        timer = StepTimer(self)
        with timer:
            stepped = int(self._process(i))
            stepped += int(self._reprocess())
        return timer.result(status="ok", iterations=stepped, kkt_gap=self._gap_on_S(),
                            extra={"n_set": self._n, "b": self._b})

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
            p = self._where.get(i, -1)
            if p >= 0:
                its += self._drive_to_zero(p)
                self._remove(self._where[i])
            self.y[i] = 0.0
            self.learned_order.remove(i)
            n_rep, status, msg = self._reprocess_until_tau("unlearn")
            its += n_rep
        return timer.result(status=status, iterations=its, kkt_gap=self._gap_on_S(), message=msg,
                            extra={"n_set": self._n, "b": self._b})

    def _drive_to_zero(self, p: int) -> int:
        """Pair steps that bring alpha_p to 0 while keeping sum alpha = 0 (used by ``unlearn``)."""
        a, g, K = self._alpha, self._g, self._K
        n = self._n
        steps = 0
        while a[p] != 0.0 and steps <= n:
            others = np.ones(n, dtype=bool)
            others[p] = False
            if a[p] > 0:  # partner m goes up: alpha_m += lam, alpha_p -= lam
                cand = others & (a[:n] < self._hi[:n])
                if not cand.any():
                    break
                m = int(np.argmax(np.where(cand, g[:n], -np.inf)))
                room_m = self._hi[m] - a[m]
                lam = min(a[p], room_m)
                a[p] = 0.0 if lam >= a[p] else a[p] - lam
                a[m] = self._hi[m] if lam >= room_m else a[m] + lam
                g[:n] -= lam * (K[m, :n] - K[p, :n])
                self._set_pen(m)
                self._note_zero(m)
            else:  # partner m goes down: alpha_m -= lam, alpha_p += lam
                cand = others & (a[:n] > self._lo[:n])
                if not cand.any():
                    break
                m = int(np.argmin(np.where(cand, g[:n], np.inf)))
                room_m = a[m] - self._lo[m]
                lam = min(-a[p], room_m)
                a[p] = 0.0 if lam >= -a[p] else a[p] + lam
                a[m] = self._lo[m] if lam >= room_m else a[m] - lam
                g[:n] -= lam * (K[p, :n] - K[m, :n])
                self._set_pen(m)
                self._note_zero(m)
            steps += 1
        self._ext = None
        if a[p] != 0.0:
            # sum alpha = 0 holds up to rounding only, so a remainder of the
            # order of rounding can be left with no partner: set it to 0 and
            # recompute the gradients exactly
            a[p] = 0.0
            self._refresh_gradients()
        return steps

    def finish(self) -> StepResult:
        """Finishing step (§3.2): REPROCESS until delta <= tau, with shrinking.

        With ``final_check`` (default) learned examples that left S are checked
        afterwards and violators go through PROCESS + REPROCESS again (see the
        class docstring).  The result's ``kkt_gap`` is then the largest
        violating pair over every learned example (what ``kkt_gap()``
        recomputes), otherwise delta over S.  ``iterations`` counts the
        PROCESS / REPROCESS steps taken.
        """
        timer = StepTimer(self)
        self._full_gap = None
        with timer:
            its, status, msg, rounds = self._finish_loop()
        gap = self._gap_on_S() if self._full_gap is None or status != "ok" else self._full_gap
        return timer.result(status=status, iterations=its, kkt_gap=gap, message=msg,
                            extra={"n_set": self._n, "b": self._b, "delta": self._delta, "check_rounds": rounds})

    def _reprocess_until_tau(self, what: str, its_done: int = 0) -> tuple[int, str, str]:
        """REPROCESS until delta <= tau (with shrinking if enabled); returns (steps, status, message)."""
        its = 0
        shrink_every = max(10, min(self._n, 1000))
        since_shrink = 0
        unshrunk_near = False
        passes = 0  # (every pass counts towards the cap, also one that takes no step)
        while True:
            passes += 1
            if its_done + its >= self.max_iter or passes > self.max_iter:
                self._unshrink()
                self._set_bias(*self._extremes())
                return its, "max_iter", self._iteration_cap(what, its_done + its)
            if self.shrinking and since_shrink >= shrink_every:
                self._shrink()
                since_shrink = 0
            stepped = self._reprocess()
            its += stepped
            since_shrink += 1
            if self._delta <= self.tol:
                if self._n_active == self._n:
                    return its, "ok", ""
                self._unshrink()
                self._set_bias(*self._extremes())
                if self._delta <= self.tol:
                    return its, "ok", ""
            elif not unshrunk_near and self._n_active < self._n and self._delta <= 10 * self.tol:
                self._unshrink()  # once near the end, as LIBSVM does
                unshrunk_near = True
            if not stepped and self._delta > self.tol:  # cannot happen; guards an endless loop
                return its, "ok", "no tau-violating pair although delta > tau"
            if not stepped and not self._delta <= self.tol:  # delta is NaN: no step will ever be taken
                self._unshrink()
                return its, "max_iter", self._iteration_cap(f"{what} (delta is {self._delta})", its_done + its)

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
            # gradients were updated incrementally: recompute them exactly from K(S, S)
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
                return its, "ok", "", rounds
            if its >= self.max_iter:
                continue  # _reprocess_until_tau reports the cap
            # the violators enter S together with alpha = 0 (PROCESS step 2
            # for each), with K(violators, S) from the check's block, and
            # finishing resumes: REPROCESS picks the most violating pair
            # first, which takes fewer steps than pairing each newcomer with
            # an extreme (PROCESS steps 3-5).  When S was far from the optimum
            # over the learned set there can be many more violators than
            # members: then only the most violating ones enter (at most
            # ``_admission_limit()``), so that K(S, S) stays of the size of
            # the solution; the next round finds the others again if they
            # still violate.
            limit = self._admission_limit()
            if len(violators) > limit:
                violators = violators[np.sort(np.argsort(-violation, kind="stable")[:limit])]
            self._admit(violators, check)

    def _admission_limit(self) -> int:
        """How many violators one round of the final check lets into S at most."""
        return max(_BATCH_ADMIT_MIN, 2 * self._n)

    def _admit(self, ks: np.ndarray, check: _FinalCheck) -> None:
        """Insert learned examples ks into S (alpha = 0), K(ks, S) from the final check's block."""
        n = self._n
        K_kS = check.kernel(ks, self._S[:n])
        m = len(ks)
        K_kk = self.cache.compute(ks, ks)
        self._count_evals(m * (m + 1) // 2)
        self._insert(ks, K_kS, K_kk)

    def _shrink(self) -> None:
        """Set aside bounded members of the active part whose gradient is beyond the extremes."""
        i, j = self._extremes()
        if i < 0 or j < 0:
            return
        na = self._n_active
        a, g = self._alpha[:na], self._g[:na]
        g_max, g_min = self._g[i], self._g[j]
        only_down = a >= self._hi[:na]  # at B: can only decrease
        only_up = a <= self._lo[:na]  # at A: can only increase
        out = (only_down & (g > g_max)) | (only_up & (g < g_min))
        for p in np.flatnonzero(out)[::-1]:
            self._swap(int(p), self._n_active - 1)
            self._n_active -= 1
        self._ext = None

    def _unshrink(self) -> None:
        """Bring shrunk members back with their gradients recomputed from K(S, S)."""
        na, n = self._n_active, self._n
        if na < n:
            self._g[na:n] = self._ys[na:n] - rows_dot(self._K[na:n, :n], self._alpha[:n])
            self._n_active = n
            self._ext = None

    def _refresh_gradients(self) -> None:
        n = self._n
        self._n_active = n
        self._ext = None
        if n:
            self._g[:n] = self._ys[:n] - rows_dot(self._K[:n, :n], self._alpha[:n])

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

    def coefficients(self) -> tuple[np.ndarray, np.ndarray, float]:
        n = self._n
        a = self._alpha[:n]
        nz = a != 0.0
        return self._S[:n][nz].copy(), a[nz].copy(), self._b

    def decision_function(self, idx=None, X=None) -> np.ndarray:
        """f = sum_s alpha_s K(x_s, x) + b for store indices ``idx`` (default: all) or new points ``X``.

        Kernel values K(x, S) come from ``cache.decision`` / ``decision_against``
        (counted, never cached rows over the store), in blocks so that scoring
        a pool of millions of items never builds a huge matrix.
        """
        n = self._n
        a = self._alpha[:n]
        nz = a != 0.0
        sv, coef = self._S[:n][nz], a[nz]
        if X is not None:
            return self.cache.decision_against(X, sv, coef, self._b) if self.cache is not None else np.full(
                X.shape[0], self._b)
        idx = np.arange(len(self.store)) if idx is None else np.asarray(idx, dtype=np.intp).reshape(-1)
        return self.cache.decision(idx, sv, coef, self._b)

    # ------------------------------------------------------------------
    # state
    # ------------------------------------------------------------------
    def get_params(self) -> dict[str, Any]:
        params = super().get_params()
        params.update(curvature_floor=self.curvature_floor, shrinking=self.shrinking,
                      final_check=self.final_check)
        return params

    def _state_arrays(self) -> dict[str, np.ndarray]:
        n = self._n
        return {"set": self._S[:n].copy(), "alpha": self._alpha[:n].copy(), "grad": self._g[:n].copy(),
                "scalars": np.array([self._b, self._delta])}

    def _load_state_arrays(self, arrays: dict[str, np.ndarray], meta: dict) -> None:
        self._reset_set()
        S = np.asarray(arrays["set"], dtype=np.intp)
        if len(S):
            if np.any(self.y[S] == 0):
                raise ValueError("state lists an unlearned example in the current set")
            # K(S, S) is recomputed (not saved, to keep states small): every
            # kernel value is a function of its two examples alone (see
            # core.kernels), so it is the K(S, S) the solver had, bit for bit;
            # the coefficients, gradients, b and delta are restored exactly, and
            # the solver continues exactly as it would have.
            _, K_SS = self._kernel_rows(S)
            self._insert(S, np.empty((len(S), 0)), K_SS)
            self._alpha[: len(S)] = arrays["alpha"]
            self._g[: len(S)] = arrays["grad"]
            for p in range(len(S)):
                self._set_pen(p)
                self._note_zero(p)
            self._ext = None
        self._b, self._delta = (float(v) for v in arrays["scalars"])


class _FinalCheck:
    """The final check of ``LASVM.finish()`` (one per call): gradients of the learned examples outside S.

    Outside S an example has alpha = 0, so it can take part in a
    tau-violating pair only one way: a positive one as i (it can go up), a
    negative one as j.  Round 1 computes every outside gradient exactly, with
    one blocked product K(outside, support vectors).  Later rounds skip the
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
    example (``full_gap``) is still exact.  The others are evaluated again;
    kernel values of the round-1 block are reused (within
    ``LASVM.check_block_bytes``, a fixed budget separate from the kernel-row
    cache, so ``cache_bytes`` never changes results).
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
        self.n_skipped = 0  # outside examples the last round proved harmless without evaluating them
        if solver.kernel.name in ("rbf", "tanimoto"):
            self.root_diag = None  # K_kk = 1
        else:
            solver._count_evals(len(self.L))
            self.root_diag = np.sqrt(np.maximum(solver.cache.self_values(self.L), 0.0))
        self.block: tuple[dict[int, int], dict[int, int], np.ndarray] | None = None

    def _positions(self, idx: np.ndarray) -> np.ndarray:
        return self.sorter[np.searchsorted(self.L, idx, sorter=self.sorter)]

    def violators(self) -> tuple[np.ndarray, np.ndarray]:
        """Outside examples that violate tau-optimality (learning order) and by how much; sets ``full_gap``."""
        s = self.s
        n = s._n
        S, alpha, g_S, y_S = s._S[:n], s._alpha[:n], s._g[:n], s._ys[:n]
        pos_S = self._positions(S)
        # distance moved by w since the last round
        w_sq = dot(alpha, y_S - g_S)
        w_abs = dot(np.abs(alpha), np.abs(y_S - g_S))
        if np.all(self.radius[pos_S] == 0.0):
            before = y_S - self.g[pos_S]
            cross = dot(alpha, before)
            scale = w_abs + 2.0 * dot(np.abs(alpha), np.abs(before)) + self.w_abs
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
            sv_pos = np.flatnonzero(alpha != 0.0)
            self.g[ev] = s.y[self.L[ev]] - self.scores(self.L[ev], S[sv_pos], alpha[sv_pos])
            self.radius[ev] = 0.0
        y_ev = s.y[self.L[ev]]
        g_ev = self.g[ev]
        pos, neg = y_ev > 0, y_ev < 0
        g_up_all = max(g_up, float(g_ev[pos].max())) if pos.any() else g_up
        g_down_all = min(g_down, float(g_ev[neg].min())) if neg.any() else g_down
        excess = np.where(pos, g_ev - g_down_all, g_up_all - g_ev)
        viol = excess > s.tol
        gap = g_up_all - g_down_all
        self.full_gap = float(max(0.0, gap)) if np.isfinite(gap) else 0.0
        return self.L[ev[viol]], excess[viol]

    def scores(self, rows: np.ndarray, cols: np.ndarray, coef: np.ndarray) -> np.ndarray:
        """sum_c coef_c K(x_rows, x_c) for members ``cols`` of S (store indices), reusing the kept block."""
        if len(cols) == 0:
            return np.zeros(len(rows))
        if self.block is None:
            return rows_dot(self.kernel(rows, cols), coef)
        rows_at, cols_at, Kb = self.block
        rpos = np.fromiter((rows_at.get(k, -1) for k in rows.tolist()), dtype=np.intp, count=len(rows))
        cpos = np.fromiter((cols_at.get(k, -1) for k in cols.tolist()), dtype=np.intp, count=len(cols))
        hr, hc = rpos >= 0, cpos >= 0
        out = np.zeros(len(rows))
        if hr.any():
            if hc.any():  # one product over the whole kept block, then the rows wanted
                kept = np.zeros(Kb.shape[1])
                kept[cpos[hc]] = coef[hc]
                out[hr] = rows_dot(Kb, kept)[rpos[hr]]
            if not hc.all():
                out[hr] += rows_dot(self.kernel(rows[hr], cols[~hc]), coef[~hc])
        if not hr.all():
            out[~hr] = rows_dot(self.kernel(rows[~hr], cols), coef)
        return out

    def kernel(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """K(x_rows, x_cols) for store indices (cols: members of S), from the kept block where it has them.

        Entries not in the block are computed (counted).  The first call
        keeps its block when it fits ``check_block_bytes``.
        """
        s = self.s

        def compute(r: np.ndarray, c: np.ndarray) -> np.ndarray:
            s._count_evals(len(r) * len(c))
            return s.cache.compute(r, c)

        if self.block is None:
            K = compute(rows, cols)
            if K.nbytes <= s.check_block_bytes:
                self.block = ({k: r for r, k in enumerate(rows.tolist())},
                              {k: c for c, k in enumerate(cols.tolist())}, K)
            return K
        rows_at, cols_at, Kb = self.block
        rpos = np.fromiter((rows_at.get(k, -1) for k in rows.tolist()), dtype=np.intp, count=len(rows))
        cpos = np.fromiter((cols_at.get(k, -1) for k in cols.tolist()), dtype=np.intp, count=len(cols))
        hr, hc = rpos >= 0, cpos >= 0
        K = np.empty((len(rows), len(cols)))
        if hr.any() and hc.any():
            K[np.ix_(hr, hc)] = Kb[np.ix_(rpos[hr], cpos[hc])]
        if hr.any() and not hc.all():
            K[np.ix_(hr, ~hc)] = compute(rows[hr], cols[~hc])
        if not hr.all():
            K[~hr] = compute(rows[~hr], cols)
        return K
