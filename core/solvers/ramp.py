"""OnlineSVMR: online training of a ramp-loss SVM (Wang & Vucetic, ICDM 2009).

The ramp loss with parameter s < 1 is the difference of two hinges,

    R_s(z) = H_1(z) - H_s(z),     H_t(z) = max(0, t - z),     z = y f(x),

so the primal  J(w) = 1/2 ||w||^2 + C sum_i R_s(y_i f(x_i))  is a convex part
(the hinge SVM) plus a concave part (- C sum H_s).  The Concave-Convex
Procedure (CCCP) linearises the concave part at the current solution:

    beta_i = C  if y_i f(x_i) < s,   beta_i = 0  otherwise          (eq. 10)

and the convex sub-problem is a hinge SVM in which an example with
beta_i = C carries the extra linear term C y_i f(x_i).  For such an example
C H_1(z) + C z = C max(1, z) is flat while z <= 1, so as long as it stays on
the wrong side of the margin its net weight (alpha_i - beta_i) is exactly 0:
it simply drops out of the sub-problem.  Following the paper we therefore
solve the hinge SVM on the active set

    V = {i : y_i f(x_i) >= s}

and give every example outside V the weight 0.  (The reduction is exact
unless an example with beta_i = C would be pushed past z = 1 within one
sub-problem, where its net weight could turn negative; the next CCCP
re-assignment of V puts such an example back into V anyway.)

The model has no bias (as in the paper), f(x) = sum_i a_i y_i K(x_i, x), so
the dual of the sub-problem on V,

    max_a  W(a) = sum_{i in V} a_i - 1/2 sum_{i,j in V} a_i a_j y_i y_j K_ij,
    0 <= a_i <= C,

has no equality constraint and is solved by single-variable SMO steps
(eqs. 12-15): pick one example and maximise W over its a_i alone,

    a_i <- clip(a_i + (1 - y_i f_i) / K_ii, 0, C),

then update every maintained decision value with the kernel row of i.

The working-set rule (eq. 13 or LIBSVM's), the online step (``learn``), the stopping rules, the
removal step (Algorithm 2, ``max_nonsv``), the status, the additions to the paper (class weights,
the hinge and squared-hinge losses, Newton steps, the hinge warm-up), the kept decision values and
the squared hinge's dual: docs/solvers/ramp.md.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from scipy.linalg import cho_factor, cho_solve

from core.solvers._ramp_jit import BUDGET, STALLED, smo_on_gram
from core.solvers.base import NumericalError, OnlineSolver, RatioClassWeights, StepResult, StepTimer

#: the losses the solver learns: the ramp (Wang & Vucetic), the hinge, the squared hinge (see above)
LOSSES = ("ramp", "hinge", "squared_hinge")

# SMO steps between attempts of the Newton step on the free variables, and the
# largest free set for which it is attempted (it costs |F|^3 + |F| store-length updates).
_NEWTON_AFTER = 20
_NEWTON_MAX_FREE = 1500
_NEWTON_REPEAT = 10
# Largest V whose Gram matrix the squared hinge keeps for the compiled SMO (8 |V|^2 bytes: 72 MB);
# above it, the SMO steps of the other losses (a pass over the store each).
_GRAM_MAX = 3000


class OnlineSVMR(RatioClassWeights, OnlineSolver):
    """Ramp-loss SVM trained online by SMO-style learning/unlearning under CCCP.

    Parameters (besides those of :class:`~core.solvers.base.OnlineSolver`)
    ----------
    ramp_s : float, default -1.0
        The ramp parameter s < 1 (eq. 10); examples with y f(x) < s get weight 0.
    max_nonsv : int or None, default 1000
        Algorithm 2, on by default: keep at most this many non-support vectors
        (the ones with the smallest |f(x)|) in the working set; the others are
        never re-examined (see the module docstring).  ``None`` keeps all.  Not
        applied with ``loss="hinge"`` or ``"squared_hinge"``, which keep every
        learned example.
    progress_tol : float, default 1e-5
        CCCP stops when the ramp objective changes by at most this fraction.
    max_cccp : int, default 100
        Cap on CCCP outer iterations per step (raises or warns via ``on_max_iter``).
    resync_every : int, default 50_000
        Recompute all decision values from scratch after this many weight updates.
    newton_steps : bool, default True
        Accelerate SMO with occasional Newton steps on the free variables (see
        ``_newton_free_step``; a documented deviation from the paper).  ``False``
        runs the paper's single-variable SMO alone.  Same model either way
        (same stopping rule); on a 3,000-point 15%-noise checkerboard with
        C = 10, gamma = 40 the Newton steps cut the SMO steps from 1.39 M to
        0.12 M and the time about fivefold; at C = 1 they change little.
    hinge_warmup : int, default 50
        While fewer than this many examples are learned, every example stays in
        V (beta = 0: the plain hinge SVM); CCCP starts from that solution once
        the count is reached (and again applies eq. 10 to every stored example).
        CCCP only finds a local optimum that depends on its starting point, and
        starting from the hinge solution is the usual choice (Collobert et al.);
        online, it keeps a few early noisy labels with large weights from
        pushing later correct examples below s for good (on the 15%-noise
        checkerboard with C = 10, gamma = 20 this is the difference between
        92% and 98% test accuracy, and the warm start ends at the lower ramp
        objective J, 37,561 against 45,373: a better local optimum, not a
        different problem; at C = 10, gamma = 40 and at C = 1, gamma = 80 both
        starts reach the same model).  0 gives the paper's algorithm.

    working_set : {"violation", "gain"}, default "violation"
        Which example an SMO step takes: the largest single-variable KKT
        violation, or the largest increase of W (the paper's eq. 13); see the
        module docstring for the measurement behind the default.

    loss : {"ramp", "hinge", "squared_hinge"}, default "ramp"
        ``"hinge"`` keeps every learned example in V whatever its margin (s = -inf):
        the convex hinge SVM without bias, solved by the same SMO steps, where CCCP
        has nothing to do.  A mislabelled-looking example then keeps its weight,
        which is what a review for rare positives wants (a surprising positive is
        news, not noise).  ``"squared_hinge"`` does the same with the squared hinge
        C_i max(0, 1 - y f)^2 (liblinear's L2-loss SVM, ASReview's default model;
        see the module notes): no upper bound on a_i, ``C w_{y_i}`` weighs the loss.
    class_weight : None, dict or "balanced", default None
        Per-class weights: example i has the box 0 <= a_i <= C w_{y_i} and carries
        C w_{y_i} times its loss in J.  A dict maps the labels 1 and -1 (or "1" and
        "-1") to fixed weights.  ``"balanced"`` recomputes both weights after every
        label from the counts of learned examples n_+ and n_-, so that the
        positives' total weight is ``balance_ratio`` times the negatives' and all
        weights sum to n = n_+ + n_-:

            w_+ = r n / ((1 + r) n_+),    w_- = n / ((1 + r) n_-)

        (r = 1 is scikit-learn's ``"balanced"``; document-review tools such as
        ASReview use r = 9.8).  While only one class is learned, both weights are 1.
        The weights are a function of the learned labels alone, so a restored
        solver recomputes them and nothing extra is stored.
    balance_ratio : float, default 1.0
        r above (only with ``class_weight="balanced"``).

    ``max_iter`` caps the SMO steps of one ``learn`` / ``unlearn`` call.
    """

    name: ClassVar[str] = "ramp"
    exact_unlearn: ClassVar[bool] = False
    has_bias: ClassVar[bool] = False
    keeps_store_scores: ClassVar[bool] = True  # f of every stored example is kept current (``store_scores``)

    def __init__(
        self,
        X: np.ndarray | None = None,
        *,
        ramp_s: float = -1.0,
        max_nonsv: int | None = 1000,
        progress_tol: float = 1e-5,
        max_cccp: int = 100,
        resync_every: int = 50_000,
        newton_steps: bool = True,
        hinge_warmup: int = 50,
        working_set: str = "violation",
        loss: str = "ramp",
        class_weight: None | str | dict = None,
        balance_ratio: float = 1.0,
        **params,
    ):
        ramp_s = float(ramp_s)
        if not (np.isfinite(ramp_s) and ramp_s < 1.0):
            raise ValueError(f"ramp_s must be a finite number below 1, got {ramp_s!r}")
        if max_nonsv is not None and (int(max_nonsv) != max_nonsv or max_nonsv < 0):
            raise ValueError(f"max_nonsv must be a non-negative integer or None, got {max_nonsv!r}")
        if not (np.isfinite(progress_tol) and progress_tol >= 0):
            raise ValueError(f"progress_tol must be a non-negative number, got {progress_tol!r}")
        if int(max_cccp) < 1 or int(resync_every) < 1:
            raise ValueError("max_cccp and resync_every must be at least 1")
        self.ramp_s = ramp_s
        self.max_nonsv = None if max_nonsv is None else int(max_nonsv)
        self.progress_tol = float(progress_tol)
        self.max_cccp = int(max_cccp)
        self.resync_every = int(resync_every)
        self.newton_steps = bool(newton_steps)
        if int(hinge_warmup) != hinge_warmup or hinge_warmup < 0:
            raise ValueError(f"hinge_warmup must be a non-negative integer, got {hinge_warmup!r}")
        self.hinge_warmup = int(hinge_warmup)
        if working_set not in ("violation", "gain"):
            raise ValueError(f"working_set must be 'violation' or 'gain', got {working_set!r}")
        self.working_set = working_set
        if loss not in LOSSES:
            raise ValueError(f"loss must be 'ramp', 'hinge' or 'squared_hinge', got {loss!r}")
        self.loss = loss
        self._squared = loss == "squared_hinge"
        self._init_ratio_weights(class_weight, balance_ratio)
        # per-store-index arrays (grown in _on_store_grown)
        self.alpha = np.zeros(0)  # unsigned weights a_i, 0 <= a_i <= C
        self.f = np.zeros(0)  # maintained f(x_j) for every stored example
        self.in_working = np.zeros(0, bool)  # learned and kept (not removed by Algorithm 2)
        self.in_V = np.zeros(0, bool)  # active set V of eq. 10 (subset of the working set)
        self.upper = np.zeros(0)  # the box bound C w_{y_i} of every learned example (0 otherwise;
        #                                     infinity with the squared hinge, which has no box)
        self.ridge = np.zeros(0)  # D_ii = 1 / (2 C w_{y_i}) of the squared hinge (0 otherwise)
        self.at_bound = np.zeros(0, bool)  # learned examples with a_i = C w_{y_i} > 0
        # u_c(x_j) = sum over the examples of class c at their bound of y_i K(x_i, x_j), for every stored
        # x_j (row 0: positives, row 1: negatives): when a class weight moves, every example of the class
        # at its bound moves with it, and f changes by (the bound's change) * u_c, one pass over the store
        self.bound_sums = np.zeros((2, 0))
        self._class_bounds = (0.0, 0.0)  # (C w_+, C w_-) that the bounds of the learned examples hold
        self._updates_since_sync = 0
        self.n_removed_ = 0  # examples dropped by the removal step so far
        self._gram: np.ndarray | None = None  # K over _gram_idx (V in learning order), squared hinge only
        self._gram_idx: np.ndarray | None = None  # (set with _gram)
        self._stalled = ""  # why SMO stopped short of tol in this step (floating point), if it did
        super().__init__(X, **params)

    # -- per-example arrays ------------------------------------------------
    def _on_store_grown(self, n_new: int) -> None:
        n_old = len(self.alpha)
        self.alpha = np.concatenate([self.alpha, np.zeros(n_new)])
        self.in_working = np.concatenate([self.in_working, np.zeros(n_new, bool)])
        self.in_V = np.concatenate([self.in_V, np.zeros(n_new, bool)])
        self.upper = np.concatenate([self.upper, np.zeros(n_new)])
        self.ridge = np.concatenate([self.ridge, np.zeros(n_new)])
        self.at_bound = np.concatenate([self.at_bound, np.zeros(n_new, bool)])
        f_new = np.zeros(n_new)
        sums_new = np.zeros((2, n_new))
        sv = np.flatnonzero(self.alpha[:n_old] > 0)
        if len(sv):
            assert self.cache is not None  # (support vectors: data came, and the kernel cache with them)
            block = self.cache.block(np.arange(n_old, n_old + n_new), sv)
            f_new = block @ (self.alpha[sv] * self.y[sv])
            bounded = self.at_bound[sv]
            for c, of_class in enumerate((self.y[sv] > 0, self.y[sv] < 0)):
                if np.any(bounded & of_class):
                    sums_new[c] = block[:, bounded & of_class] @ self.y[sv][bounded & of_class]
        self.f = np.concatenate([self.f, f_new])
        self.bound_sums = np.concatenate([self.bound_sums, sums_new], axis=1)

    def get_params(self) -> dict[str, Any]:
        params = super().get_params()
        params.update(
            ramp_s=self.ramp_s,
            max_nonsv=self.max_nonsv,
            progress_tol=self.progress_tol,
            max_cccp=self.max_cccp,
            resync_every=self.resync_every,
            newton_steps=self.newton_steps,
            hinge_warmup=self.hinge_warmup,
            working_set=self.working_set,
            loss=self.loss,
            class_weight=self.class_weight,
            balance_ratio=self.balance_ratio,
        )
        return params

    # -- per-class bounds (``class_weights_``: ``RatioClassWeights``) ------------------
    def _bounds_now(self) -> tuple[float, float]:
        """Set ``upper`` (and, for the squared hinge, ``ridge``) of every stored example for the labels now
        (0 when not learned); return (C w_+, C w_-)."""
        w_pos, w_neg = self.class_weights_
        bounds = (self.C * w_pos, self.C * w_neg)
        cost = np.where(self.y > 0, bounds[0], np.where(self.y < 0, bounds[1], 0.0))
        if self._squared:  # no box; the weights enter D_ii = 1 / (2 C_i) (see the module notes)
            learned = cost > 0.0
            self.upper = np.where(learned, np.inf, 0.0)
            self.ridge = np.zeros(len(cost))
            self.ridge[learned] = 0.5 / cost[learned]
        else:
            self.upper = cost
        return bounds

    def _refresh_bounds(self) -> None:
        """Set every learned example's bound C w_{y_i}; weights that moved move their examples with them.

        The examples at their old bound are put at the new one: per class, every a_i changes by
        the same amount, so f changes by that amount times the kept sum u_c (no kernel row).  An
        example above its new bound but not at the old one (a free example whose bound fell below
        it) comes down to the bound with its kernel row.  Any feasible start is valid for the SMO
        that follows, which restores the KKT conditions on V; this one keeps the bounded examples
        bounded, which they mostly remain.
        """
        bounds = self._bounds_now()
        for c, of_class in enumerate((self.y > 0, self.y < 0)):
            change = bounds[c] - self._class_bounds[c]
            if change == 0.0:
                continue
            members = self.at_bound & of_class
            if members.any():
                self.alpha[members] = bounds[c]
                self.f += change * self.bound_sums[c]
                self._updates_since_sync += 1
        self._class_bounds = bounds
        for i in np.flatnonzero(self.alpha > self.upper):
            self._set_alpha(int(i), float(self.upper[i]))

    def _upper_bounds(self, idx) -> np.ndarray:
        return self.upper[idx]

    # -- elementary operations ---------------------------------------------
    def _set_alpha(self, i: int, new: float) -> None:
        """Change a_i and update every maintained f with the kernel row of i."""
        delta = new - self.alpha[i]
        if delta == 0.0:
            return
        self.alpha[i] = new
        assert self.cache is not None  # (a learned example: data came, and the kernel cache with them)
        row = self.cache.row(i)
        self.f += (delta * self.y[i]) * row
        self._updates_since_sync += 1
        self._note_bound(i, row)

    def _note_bound(self, i: int, row: np.ndarray) -> None:
        """Keep ``at_bound`` and the sums u_c when example i reaches or leaves its bound (row: K(x_i, .))."""
        now = bool(0.0 < self.alpha[i] == self.upper[i])
        if now != self.at_bound[i]:
            self.at_bound[i] = now
            sign = self.y[i] if now else -self.y[i]
            self.bound_sums[0 if self.y[i] > 0 else 1] += sign * row

    def _violations(self, V: np.ndarray) -> np.ndarray:
        """Single-variable KKT violations on V (no bias): with g_i = 1 - y_i f_i,
        a_i < C needs g_i <= 0 and a_i > 0 needs g_i >= 0."""
        g = 1.0 - self.y[V] * self.f[V]
        a = self.alpha[V]
        if self._squared:
            g -= a * self.ridge[V]
        up = np.where(a < self.upper[V], g, 0.0)
        down = np.where(a > 0.0, -g, 0.0)
        return np.maximum(np.maximum(up, down), 0.0)

    def _smo(self, budget: int) -> tuple[int, bool]:
        """Single-variable SMO on V until the largest KKT violation is <= tol.

        Returns (steps taken, whether the step budget ran out).  The violation
        (the stopping test, and the default working-set rule) is evaluated on
        compact copies of V's labels and bound flags
        (``u`` = [a_i < C], ``dn`` = -[a_i > 0]) with preallocated buffers, so a
        step costs a handful of vector operations over V and one over the store.
        """
        V = np.flatnonzero(self.in_V)
        if len(V) == 0:
            return 0, False
        if self._squared and len(V) <= _GRAM_MAX:
            return self._smo_on_gram(budget)
        yV = self.y[V]
        aV = self.alpha[V]
        CV = self.upper[V]
        u = (aV < CV).astype(np.float64)
        dn = -(aV > 0).astype(np.float64)
        assert self.cache is not None  # (learned examples: data came, and the kernel cache with them)
        diag = self.cache.diag(V)
        rV = self.ridge[V] if self._squared else None
        if rV is not None:
            diag = diag + rV  # the curvature of the squared hinge's dual: K_ii + D_ii
        g = np.empty(len(V))
        viol = np.empty(len(V))
        tmp = np.empty(len(V))
        steps = 0
        since_newton = 0
        next_newton_check = _NEWTON_AFTER
        while True:
            if self.newton_steps and since_newton >= next_newton_check:
                aV = self.alpha[V]
                free = (aV > 0) & (aV < CV)
                n_free = int(free.sum())
                # only once SMO has spent, since the last one, more steps than the Newton step costs
                next_newton_check = max(_NEWTON_AFTER, 2 * n_free)
                if 0 < n_free <= _NEWTON_MAX_FREE and since_newton >= next_newton_check:
                    since_newton = 0
                    next_newton_check = _NEWTON_AFTER
                    # active-set fashion: a step blocked by a bound is followed by another on the
                    # smaller free set, a few times at most
                    for _ in range(_NEWTON_REPEAT):
                        done = self._newton_free_step(V[free])
                        if done != "blocked":
                            break
                        aV = self.alpha[V]
                        free = (aV > 0) & (aV < CV)
                        if not free.any():
                            break
                    aV = self.alpha[V]
                    u = (aV < CV).astype(np.float64)
                    dn = -(aV > 0).astype(np.float64)
            np.take(self.f, V, out=g)
            np.multiply(g, yV, out=g)
            np.subtract(1.0, g, out=g)  # g_i = 1 - y_i f_i
            if rV is not None:  # - a_i D_ii (squared hinge)
                np.multiply(np.take(self.alpha, V, out=tmp), rV, out=tmp)
                np.subtract(g, tmp, out=g)
            np.multiply(g, u, out=tmp)
            np.multiply(g, dn, out=viol)
            np.maximum(tmp, viol, out=viol)  # single-variable KKT violation
            k = int(viol.argmax())  # the most violating example (see working_set)
            if viol[k] <= self.tol:
                return steps, False
            if steps >= budget:
                return steps, True
            if self.working_set == "gain":  # eq. 13: the largest increase of W by one variable
                k = self._largest_gain(V, g, diag, CV)
            i = int(V[k])
            a = self.alpha[i]
            kii = diag[k]
            Ci = CV[k]
            if kii > 1e-12:
                new = min(max(a + g[k] / kii, 0.0), Ci)  # eqs. 14-15: clipped Newton step
            else:  # K_ii = 0: the example contributes nothing to f; W is linear in a_i
                new = Ci if g[k] > 0 else 0.0
            if new == a:  # no representable progress (extreme C): stop rather than spin (the step says so)
                self._stalled = f"SMO cannot make progress in floating point (a_i = {a:.3g}, violation {viol[k]:.3g})"
                return steps, False
            self._set_alpha(i, new)
            u[k] = 1.0 if new < Ci else 0.0
            dn[k] = -1.0 if new > 0 else 0.0
            steps += 1
            since_newton += 1

    def _smo_on_gram(self, budget: int) -> tuple[int, bool]:
        """The SMO steps of ``_smo`` (same working-set rule, same stopping rule), compiled, on V with its
        kept Gram matrix (V in learning order), with a Newton step after every ``_NEWTON_AFTER`` steps
        that did not reach tol; then f of the whole store from the weights that moved."""
        members = self._gram_members()
        G = self._gram_for(members)
        yV = self.y[members]
        old = self.alpha[members]
        aV = old.copy()
        fV = self.f[members]
        upper, ridge = self.upper[members], self.ridge[members]
        budget = max(int(budget), 0)
        # SMO crawls on strongly coupled weights, and with the squared hinge every weight above 0 is free
        # and moves at every label (the class weights move): after a few SMO steps (the new example takes
        # its weight) a Newton step on the free weights, which usually ends the step, then SMO again.
        # (SMO first for 2 |V| steps, as on the store, took 3.7 ms per label at 300-600 labels on the
        # bundled abstracts at tol 1e-6, against 2.5 ms.)
        chunk = _NEWTON_AFTER
        steps = 0
        while True:
            taken, status, viol = smo_on_gram(G, yV, aV, upper, ridge, fV, self.tol, min(chunk, budget - steps))
            steps += taken
            if status != BUDGET or steps >= budget:
                break
            if not self.newton_steps or not _newton_on_gram(G, yV, aV, upper, ridge, fV):
                chunk = budget - steps  # (nothing a Newton step can do: SMO alone up to the cap)
        moved = aV != old
        if moved.any():
            self._move_f(members[moved], (aV[moved] - old[moved]) * yV[moved])
            self.alpha[members[moved]] = aV[moved]
            self._updates_since_sync += int(moved.sum())
        if status == STALLED:  # (the step says so)
            self._stalled = f"SMO cannot make progress in floating point (violation {viol:.3g})"
        return steps, status == BUDGET and steps >= budget

    def _gram_members(self) -> np.ndarray:
        order = np.asarray(self.learned_order, dtype=np.intp)
        return order[self.in_V[order]] if len(order) else order

    def _gram_for(self, members: np.ndarray) -> np.ndarray:
        """K over ``members``, kept: a new member adds its kernel row (already needed for f), a removed
        one takes its row and column out; anything else (a restored or copied solver) computes it
        again without counting the evaluations (the solver's own count is unchanged)."""
        G, kept = self._gram, self._gram_idx
        m = len(members)
        if G is not None and kept is not None and len(kept) == m and np.array_equal(kept, members):
            return G
        if G is not None and kept is not None and len(kept) + 1 == m and np.array_equal(kept, members[:-1]):
            assert self.cache is not None  # (members are learned: data came, and the kernel cache with them)
            row = self.cache.row(int(members[-1]))[members]
            grown = np.empty((m, m))
            grown[:-1, :-1] = G
            grown[-1] = row
            grown[:, -1] = row
            G = grown
        elif G is not None and kept is not None and len(kept) > m and np.all(np.isin(members, kept)):
            sorter = np.argsort(kept, kind="stable")
            at = sorter[np.searchsorted(kept, members, sorter=sorter)]  # where each member sits in kept
            G = np.ascontiguousarray(G[np.ix_(at, at)])
        else:
            G = np.ascontiguousarray(self._uncounted_block(members, members)) if m else np.zeros((0, 0))
        self._gram, self._gram_idx = G, members.copy()
        return G

    def _move_f(self, idx: np.ndarray, dc: np.ndarray) -> None:
        """f += sum_k dc_k K(x_idx_k, .) over the store (dc: changes of the signed weights a y)."""
        k, cache = self.kernel, self.cache
        assert k is not None and cache is not None  # (weights that change: data came, and the kernel with them)
        if self.store.is_sparse and (k.name == "linear" or (k.name == "poly" and k.degree == 1)):
            X = self.store.X
            w = np.asarray(X[idx].T @ dc, dtype=np.float64).ravel()
            if k.name == "linear":
                self.f += X @ w
            else:  # (gamma <x, z> + coef0)^1
                self.f += k.gamma * (X @ w) + k.coef0 * float(dc.sum())
            return
        for i, c in zip(idx.tolist(), dc.tolist(), strict=True):
            self.f += c * cache.row(i)

    def __getstate__(self) -> dict[str, Any]:
        """A copy (the loop's undo copies) leaves out the kept Gram matrix: it is computed again when needed."""
        state = self.__dict__.copy()
        state["_gram"] = state["_gram_idx"] = None
        return state

    def _largest_gain(self, V: np.ndarray, g: np.ndarray, diag: np.ndarray, upper: np.ndarray) -> int:
        """Position in V of the example whose clipped single-variable step raises W the most (eq. 13).

        With d_i = clip(a_i + g_i / K_ii, 0, C_i) - a_i (``upper`` = C_i on V) the gain is d_i (g_i - K_ii d_i / 2); an
        example with K_ii = 0 moves to the bound g_i points at, with gain g_i d_i.
        """
        a = self.alpha[V]
        with np.errstate(divide="ignore", invalid="ignore"):
            step = np.where(diag > 1e-12, g / diag, np.where(g > 0, np.inf, -np.inf))
        d = np.clip(a + step, 0.0, upper)
        d -= a
        gain = d * (g - 0.5 * np.where(diag > 1e-12, diag, 0.0) * d)
        return int(gain.argmax())

    def _newton_free_step(self, F: np.ndarray) -> str:
        """Newton step on the free variables F (0 < a_i < C), the others fixed.

        Deviation from the paper, for speed: single-variable SMO crawls when the
        free variables are strongly coupled (nearby examples under an rbf kernel:
        thousands of steps spent on a few dozen variables).  The sub-problem
        restricted to F is an unconstrained concave quadratic in the signed
        weights c_F = a_F y_F with gradient r = y_F - f_F, so the Newton direction
        d solves K_FF d = r.  We move along d as far as the box 0 <= a <= C allows
        (t <= 1), which increases W by (t - t^2/2) d'K_FF d >= 0, and let SMO
        continue: the stopping rule is unchanged (KKT on V within tol), so the
        solution certified at the end is the same as with SMO alone.
        Returns "full" (t = 1), "blocked" (t < 1, a variable reached a bound) or
        "skipped" (nothing changed: the step would not help).
        """
        cache = self.cache
        assert cache is not None  # (free variables are learned examples: data came, and the kernel cache with them)
        rows = [cache.row(int(j)) for j in F]
        K = np.array([r[F] for r in rows])
        yF = self.y[F]
        r = yF - self.f[F]
        if self._squared:  # K + D and the gradient y - f - c D (c = a y): see the module notes
            K[np.diag_indices_from(K)] += self.ridge[F]
            r -= self.alpha[F] * yF * self.ridge[F]
        # Cholesky with a tiny jitter (K_FF is positive semi-definite; duplicates make it
        # singular); least squares only when that fails.  Any d with d'r > 0 is an ascent
        # direction, and SMO afterwards corrects whatever the jitter left.
        jitter = 1e-10 * max(float(np.trace(K)) / len(F), 1e-300)
        try:
            d = cho_solve(cho_factor(K + jitter * np.eye(len(F)), check_finite=False), r, check_finite=False)
        except (np.linalg.LinAlgError, ValueError):
            try:
                d = np.linalg.lstsq(K, r, rcond=1e-12)[0]
            except np.linalg.LinAlgError:
                return "skipped"
        gain_unit = float(d @ r)
        if not np.isfinite(gain_unit) or gain_unit <= 0:
            return "skipped"
        a = self.alpha[F]
        step = _step_in_box(a, self.upper[F], yF * d)  # (yF d: the change of the unsigned weights)
        if step is None:
            return "skipped"
        t, new = step
        changed = new != a
        if not changed.any():
            return "skipped"
        for k in np.flatnonzero(changed):
            self.f += ((new[k] - a[k]) * yF[k]) * rows[k]
        self.alpha[F] = new
        self._updates_since_sync += int(changed.sum())
        for k in np.flatnonzero(changed):
            self._note_bound(int(F[k]), rows[k])
        return "full" if t == 1.0 else "blocked"

    def _s_now(self) -> float:
        """The s of eq. 10, or -inf (V = everything) during the warm-up and with the (squared) hinge loss."""
        if self.loss != "ramp" or len(self.learned_order) < self.hinge_warmup:
            return -np.inf
        return self.ramp_s

    def _ramp_objective(self) -> float:
        """J = 1/2 ||w||^2 + sum_i C_i R_s(y_i f(x_i)) over all learned examples (C_i = C w_{y_i})."""
        sv = np.flatnonzero(self.alpha > 0)
        w2 = float((self.alpha[sv] * self.y[sv]) @ self.f[sv]) if len(sv) else 0.0  # no bias: ||w||^2 = sum_i c_i f_i
        L = self.y != 0
        z = self.y[L] * self.f[L]
        if self._squared:  # sum_i C_i max(0, 1 - z_i)^2, with C_i = 1 / (2 D_ii)
            return 0.5 * w2 + float((0.5 / self.ridge[L]) @ np.maximum(0.0, 1.0 - z) ** 2)
        s = -np.inf if self.loss == "hinge" else self.ramp_s
        ramp = np.maximum(0.0, 1.0 - z) - np.maximum(0.0, s - z)
        return 0.5 * w2 + float(self.upper[L] @ ramp)

    def _cccp(self) -> tuple[int, int, str, str]:
        """Alternate SMO on V and the CCCP re-assignment of V (eq. 10).

        Returns (SMO steps, CCCP iterations, status, message).
        """
        steps = 0
        J_prev = None
        grow = True  # False once the progress rule fired: V may then only shrink
        for outer in range(1, self.max_cccp + 1):
            taken, capped = self._smo(self.max_iter - steps)
            steps += taken
            if capped:
                return steps, outer, "max_iter", self._iteration_cap("SMO", steps)
            z = self.y * self.f
            keep = self.in_working & (z >= self._s_now())  # eq. 10: beta_i = 0
            leave = self.in_V & ~keep
            join = (keep & ~self.in_V) if grow else np.zeros_like(keep)
            if not leave.any() and not join.any():
                return steps, outer, "ok", "" if grow else "CCCP stopped on relative progress"
            if grow:
                J = self._ramp_objective()
                if J_prev is not None and abs(J_prev - J) <= self.progress_tol * max(abs(J_prev), 1e-300):
                    grow = False
                    join[:] = False
                    if not leave.any():
                        return steps, outer, "ok", "CCCP stopped on relative progress"
                J_prev = J
            # decremental unlearning of the examples leaving V (beta_i = C): a_i -> 0
            for i in np.flatnonzero(leave):
                self._set_alpha(int(i), 0.0)
            self.in_V[leave] = False
            self.in_V[join] = True  # entering examples start at a_i = 0
        return steps, self.max_cccp, "max_iter", self._iteration_cap("CCCP", self.max_cccp)

    def _remove_far_nonsv(self) -> int:
        """Algorithm 2: keep only the max_nonsv non-SVs with the smallest |f(x)|.

        Not with the (squared) hinge loss: that problem is the SVM on every learned example, and an example
        dropped for good could later be violated without anyone looking at it."""
        if self.max_nonsv is None or self.loss != "ramp":
            return 0
        nonsv = np.flatnonzero(self.in_working & (self.alpha == 0))
        if len(nonsv) <= self.max_nonsv:
            return 0
        order = np.argsort(np.abs(self.f[nonsv]), kind="stable")
        drop = nonsv[order[self.max_nonsv :]]
        self.in_working[drop] = False
        self.in_V[drop] = False
        self.n_removed_ += len(drop)
        return len(drop)

    def _resync(self) -> None:
        """Recompute every maintained f and the sums u_c from the current weights (bounds rounding drift)."""
        f, self.bound_sums = self._recomputed_sums(with_f=True)
        assert f is not None  # (asked for)
        self.f = f
        self._updates_since_sync = 0

    def _recomputed_sums(self, with_f: bool) -> tuple[np.ndarray | None, np.ndarray]:
        """f (when asked) and u_c over the store, from scratch, 256 kernel rows at a time."""
        n = len(self.store)
        f = np.zeros(n) if with_f else None
        sums = np.zeros((2, n))
        sv = np.flatnonzero(self.alpha > 0 if with_f else self.at_bound)
        for start in range(0, len(sv), 256):
            chunk = sv[start : start + 256]
            assert self.cache is not None  # (support vectors: data came, and the kernel cache with them)
            rows = self.cache.rows(chunk)
            if with_f:
                f += (self.alpha[chunk] * self.y[chunk]) @ rows
            for c, of_class in enumerate((self.y[chunk] > 0, self.y[chunk] < 0)):
                members = self.at_bound[chunk] & of_class
                if members.any():
                    sums[c] += self.y[chunk][members] @ rows[members]
        return f, sums

    def _restore(self) -> dict[str, Any]:
        """CCCP and SMO until the KKT conditions hold on V, then the removal step; the fields of the step
        record.  Status "ok" only with the largest KKT violation on V within tol: when SMO stalls in
        floating point (extreme C) the step is "inexact" (warned), as the base contract says."""
        self._stalled = ""
        steps, outer, status, msg = self._cccp()
        removed = self._remove_far_nonsv()
        if self._updates_since_sync >= self.resync_every:
            self._resync()
        if not np.isfinite(self.f.sum() + self.alpha.sum()):  # (one pass each; NaN or inf anywhere shows)
            raise NumericalError(f"{self.name}: non-finite decision values or weights (non-finite arithmetic)")
        gap = self._max_violation()
        if status == "ok" and gap > self.tol:
            status = "inexact"
            msg = self._not_tau_optimal(
                f"the largest KKT violation on V is {gap:.3g}, above tol {self.tol:g}"
                + (f" ({self._stalled})" if self._stalled else "")
            )
        return dict(
            iterations=steps,
            status=status,
            message=msg,
            kkt_gap=gap,
            extra=dict(
                cccp_iterations=outer,
                removed=removed,
                n_sv=int(np.sum(self.alpha > 0)),
                n_active=int(self.in_V.sum()),
                n_working=int(self.in_working.sum()),
            ),
        )

    # -- the contract --------------------------------------------------------
    def learn(self, i: int, y: float) -> StepResult:
        """OnlineSVMR step: add example i with label y, then restore optimality.

        The example enters V if y f(x_i) >= s (eq. 10), otherwise it is kept
        with weight 0; SMO/CCCP iterations then restore the KKT conditions on V.
        """
        i, y = self._check_learnable(i, y)
        with StepTimer(self) as timer:
            self.y[i] = y
            self.learned_order.append(i)
            self._refresh_bounds()
            self.in_working[i] = True
            entered = bool(y * self.f[i] >= self._s_now())
            self.in_V[i] = entered
            out = self._restore()
        out["extra"]["entered_V"] = entered
        return timer.result(**out)

    def learn_many(self, idx, ys) -> StepResult:
        """Learn several examples.  With the squared hinge (a convex problem: one optimum whatever the
        order) all are added and then optimised once, the Newton steps taking every violated example
        at once; with the other losses one ``learn`` after the other (the ramp's CCCP follows the order).
        Returns the last step's record (the batch's, with the squared hinge)."""
        idx, ys = self._check_batch(idx, ys)
        checked = [self._check_learnable(int(i), float(y)) for i, y in zip(idx, ys, strict=True)]
        if len(idx) == 0:
            with StepTimer(self) as timer:
                pass
            return timer.result(status="ok", iterations=0, kkt_gap=self._max_violation())
        if not self._squared:
            return [self.learn(i, y) for i, y in checked][-1]
        with StepTimer(self) as timer:
            for i, y in checked:
                self.y[i] = y
                self.learned_order.append(i)
            self.in_working[idx] = True
            self.in_V[idx] = True
            self._refresh_bounds()
            out = self._restore()
        return timer.result(**out)

    def unlearn(self, i: int) -> StepResult:
        """Remove example i: set its weight to 0 (updating f), forget its label,
        and re-optimise with SMO/CCCP.

        Not exact: the ramp-loss problem is non-convex and CCCP finds a local
        optimum that depends on the learning history, so the result is a
        KKT point of the remaining data but need not equal retraining without i.
        """
        i = self._check_unlearnable(i)
        with StepTimer(self) as timer:
            self._set_alpha(i, 0.0)
            self.in_working[i] = False
            self.in_V[i] = False
            self.y[i] = 0.0
            self.learned_order.remove(i)
            self._refresh_bounds()
            out = self._restore()
        return timer.result(**out)

    def coefficients(self) -> tuple[np.ndarray, np.ndarray, float]:
        sv = np.flatnonzero(self.alpha > 0)
        return sv, self.alpha[sv] * self.y[sv], 0.0

    def decision_function(self, idx=None, X: np.ndarray | None = None) -> np.ndarray:
        """f for stored indices ``idx`` (default: all; maintained, no kernel
        evaluations) or for new points ``X`` (computed against the SVs)."""
        if X is not None:
            return super().decision_function(X=X)
        if idx is None:
            return self.f.copy()
        return self.f[np.asarray(idx, dtype=np.intp).reshape(-1)].copy()

    def store_scores(self) -> np.ndarray:
        """The maintained f of every stored example (the solver's own array: read, do not change)."""
        return self.f

    def in_ramp_region(self, idx=None, X: np.ndarray | None = None) -> np.ndarray:
        """Boolean mask |f(x)| <= 1: where OnlineASVMR asks for a label."""
        return np.abs(self.decision_function(idx, X=X)) <= 1.0

    # -- diagnostics -------------------------------------------------------
    def _max_violation(self) -> float:
        V = np.flatnonzero(self.in_V)
        return float(self._violations(V).max()) if len(V) else 0.0

    def kkt_gap(self) -> float:
        """Largest single-variable KKT violation on V, with f recomputed from
        scratch (not from the maintained values): for a_i < C, max(0, 1 - y_i f_i);
        for a_i > 0, max(0, y_i f_i - 1) (with the squared hinge, y_i f_i + a_i D_ii in place
        of y_i f_i, and no upper bound)."""
        V = np.flatnonzero(self.in_V)
        if len(V) == 0:
            return 0.0
        sv, coef, _ = self.coefficients()
        fV = np.zeros(len(V))
        if len(sv):
            for start in range(0, len(V), 2048):
                fV[start : start + 2048] = self._uncounted_block(V[start : start + 2048], sv) @ coef
        a = self.alpha[V]
        g = 1.0 - self.y[V] * fV - (a * self.ridge[V] if self._squared else 0.0)
        viol = np.maximum(np.where(a < self.upper[V], g, 0.0), np.where(a > 0, -g, 0.0))
        return float(max(0.0, viol.max()))

    def dual_objective(self) -> float:
        """W(a) of the hinge sub-problem on V (every a_i > 0 belongs to V); with the squared hinge,
        minus sum_i a_i^2 D_ii / 2 (the dual of the module notes)."""
        if self._squared:
            return super().dual_objective() - 0.5 * float(self.alpha**2 @ self.ridge)
        return super().dual_objective()

    @property
    def active_set_(self) -> np.ndarray:
        """Indices of V (learned examples with y f(x) >= s that are still kept)."""
        return np.flatnonzero(self.in_V)

    # -- state -------------------------------------------------------------
    def _state_arrays(self) -> dict[str, np.ndarray]:
        return dict(
            alpha=self.alpha.copy(),
            f=self.f.copy(),
            in_working=self.in_working.copy(),
            in_V=self.in_V.copy(),
            at_bound=self.at_bound.copy(),
            bound_sums=self.bound_sums.copy(),
            counters=np.array([self._updates_since_sync, self.n_removed_], dtype=np.int64),
        )

    def _load_state_arrays(self, arrays: dict[str, np.ndarray], meta: dict) -> None:
        n = len(self.store)
        for key in ("alpha", "f", "in_working", "in_V"):
            if len(arrays[key]) != n:
                raise ValueError(f"state array {key!r} has length {len(arrays[key])}, expected {n}")
        self.alpha = np.array(arrays["alpha"], dtype=np.float64)
        self.f = np.array(arrays["f"], dtype=np.float64)
        self.in_working = np.array(arrays["in_working"], dtype=bool)
        self.in_V = np.array(arrays["in_V"], dtype=bool)
        self._updates_since_sync, self.n_removed_ = (int(v) for v in arrays["counters"])
        self._gram = self._gram_idx = None
        self._class_bounds = self._bounds_now()  # a function of the learned labels (see class_weight)
        if (
            "bound_sums" in arrays
            and np.shape(arrays["bound_sums"]) == (2, n)
            and "at_bound" in arrays
            and np.shape(arrays["at_bound"]) == (n,)
        ):
            self.at_bound = np.array(arrays["at_bound"], dtype=bool)
            self.bound_sums = np.array(arrays["bound_sums"], dtype=np.float64)
        else:  # a state saved before the sums were kept: computed once from its coefficients
            self.at_bound = (self.alpha > 0) & (self.alpha == self.upper)
            evals = self.cache.n_evals if self.cache is not None else 0
            self.bound_sums = self._recomputed_sums(with_f=False)[1] if n else np.zeros((2, 0))
            if self.cache is not None:
                self.cache.n_evals = evals


def _newton_on_gram(
    G: np.ndarray, y: np.ndarray, a: np.ndarray, upper: np.ndarray, ridge: np.ndarray, f: np.ndarray
) -> bool:
    """``OnlineSVMR._newton_free_step`` on the examples of a kept Gram matrix G (a, f updated in place).

    The free weights F (0 < a_i < upper_i), and the weights at 0 whose gradient would raise them
    (g_i > 0: a new example, or every example of a batch), move along the Newton direction of the
    dual restricted to them, (K_FF + D_F) d = y_F - f_F - c_F D_F in the signed weights c = a y, as
    far as the box allows (t <= 1); a weight at 0 that the direction would lower leaves F and the
    direction is computed again.  W does not decrease, and the SMO that follows keeps the same
    stopping rule.  Returns whether anything moved.
    """
    g = 1.0 - y * f - a * ridge
    F = np.flatnonzero(((a > 0) & (a < upper)) | ((a == 0) & (g > 0)))
    for _ in range(_NEWTON_REPEAT):
        if len(F) == 0 or len(F) > _NEWTON_MAX_FREE:
            return False
        every = len(F) == len(y)  # (often, with the squared hinge: a copy instead of a gather)
        K = G.copy() if every else G[np.ix_(F, F)]
        diagonal = np.diag_indices_from(K)
        K[diagonal] += ridge[F]
        yF = y[F]
        r = yF - f[F] - a[F] * yF * ridge[F]
        K[diagonal] += 1e-10 * max(float(np.trace(K)) / len(F), 1e-300)  # jitter: duplicates make K singular
        try:
            d = cho_solve(cho_factor(K, overwrite_a=True, check_finite=False), r, check_finite=False)
        except (np.linalg.LinAlgError, ValueError):
            return False
        stuck = (a[F] == 0) & (yF * d < 0)  # at 0 and pushed down: not free after all
        if not stuck.any():
            break
        F = F[~stuck]
    else:
        return False
    gain = float(d @ r)
    if not np.isfinite(gain) or gain <= 0:
        return False
    aF = a[F]
    step = _step_in_box(aF, upper[F], yF * d)
    if step is None:
        return False
    new = step[1]
    dc = (new - aF) * yF
    if not np.any(dc):
        return False
    f += (G if every else G[:, F]) @ dc
    a[F] = new
    return True


def _step_in_box(a: np.ndarray, upper: np.ndarray, da: np.ndarray) -> tuple[float, np.ndarray] | None:
    """The longest step t <= 1 along ``da`` that keeps 0 <= a <= upper, and the weights there (those
    that block a step t < 1 put exactly onto their bound); None when no step t > 0 is possible."""
    with np.errstate(divide="ignore", invalid="ignore"):
        t_up = np.where(da > 0, (upper - a) / da, np.inf)
        t_lo = np.where(da < 0, -a / da, np.inf)
    t = float(min(1.0, t_up.min(), t_lo.min()))
    if not t > 0:
        return None
    new = np.clip(a + t * da, 0.0, upper)
    if t < 1.0:  # snap the blocking variable(s) exactly onto their bound
        new[t_up <= t] = upper[t_up <= t]
        new[t_lo <= t] = 0.0
    return t, new
