"""The L2-loss linear SVM by dual coordinate descent (Hsieh, Chang, Lin, Keerthi & Sundararajan, ICML 2008).

The review model (``core.presets.DOCUMENT_REVIEW``) is the squared-hinge SVM without bias on the kernel
gamma <x, z> + coef0 (degree 1): a linear model over the features [sqrt(gamma) x, sqrt(coef0)], so
the model is one weight vector.  The ramp solver learns it through the kernel matrix of the labelled
examples (its Newton steps factorise it: cubic in the labels).  This solver keeps the dual weights a
and the weight vector w = sum_i a_i y_i x_i together, as liblinear does, on sparse CSR rows:

    max_a  sum_i a_i - 1/2 ||sum_i a_i y_i x~_i||^2 - sum_i a_i^2 D_ii / 2,   a_i >= 0,
    D_ii = 1 / (2 C_i),   f(x) = gamma <w, x> + coef0 s,   s = sum_i a_i y_i

(the ramp solver's squared-hinge dual, the same problem: ``core/solvers/ramp.py``).  A coordinate step
(the paper's Algorithm 1 with U = infinity) reads one row, G = y_i f(x_i) - 1 + D_ii a_i, moves a_i to
max(a_i - G / Q_ii, 0) with Q_ii = gamma ||x_i||^2 + coef0 + D_ii, and adds the change into w: one pass
costs one read of the learned rows (compiled, ``_dual_cd_jit``).

After every label the weights a of the previous label are the warm start: with ``"balanced"`` class
weights every C_i moves, so D moves, and the passes restore the KKT conditions from there (a stays
feasible: the squared hinge has no upper bound).  The passes stop when a whole pass meets every
learned example with |projected gradient| <= tol (the single-variable KKT violation that ``kkt_gap``
reports, as for the ramp solver).  The passes read the learned rows from a block, their features
renumbered, that the solver keeps between labels and extends by the rows learned since
(``_block_for``; made again after an unlearning and by a restored copy: the same block either way);
at its end the compiled call makes w again from a in a fixed order over that block (the bits
``weight_vector`` gives over the store's rows, without reading them again), so that rounding cannot
build up over a long run and a restored state continues bit for bit; the KKT conditions are checked
again with it, and the decision values of the whole store are one sparse product, f = gamma X w +
coef0 s.  A label thus costs a few passes over the learned rows and one product over the store,
whatever the number of labels.

No shrinking (Hsieh et al. 2008, section 3.2: coordinates at a_i = 0 with a large gradient left out
of the passes until a full pass checks them): with the squared hinge and the review model's small C
almost every learned example keeps a_i > 0 (7 of 2,700 at 2,700 labels on the Debian package
descriptions of ``benchmarks/bench_review_scale.py``), so there is nothing to leave out; every
coordinate moves in every pass, and a late label's passes are about 13 (from a KKT violation of about
1.7 at the new example, 5e-4 elsewhere after the class weights follow the labels, to tol 1e-6; about 7
without the constant feature of coef0, whose coupling of all the examples is the slow part).

The dual is strictly concave (the D_ii), so its optimum is unique: unlearning (a_i -> 0, then the
passes from the warm start) gives the model of retraining without the example, to the tolerance.
It is not bit for bit, so the loop restores copies for undo as with the ramp solver
(``exact_unlearn`` False).

Only the squared hinge, the ``linear`` and degree-1 ``poly`` kernels and sparse float64 rows; the
review preset picks this solver for those (``core.presets.solver_for``) and the ramp solver otherwise.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from core.solvers._dual_cd_jit import BUDGET, block_append, dcd_passes, weight_vector
from core.solvers.base import NumericalError, OnlineSolver, RatioClassWeights, StepResult, StepTimer

# times w is recomputed from a and the KKT conditions checked with it before a step gives up as inexact
# (the passes met tol with the w they carried; a recomputed w differs from it by rounding only)
_CHECKS = 8


class DualCDSVM(RatioClassWeights, OnlineSolver):
    """L2-loss (squared hinge) linear SVM without bias, by dual coordinate descent over sparse rows.

    Parameters (besides those of :class:`~core.solvers.base.OnlineSolver`)
    ----------
    kernel : "linear" or "poly" with ``degree=1``: K(x, z) = gamma <x, z> + coef0 (the constant
        feature sqrt(coef0) carries the intercept, penalised like the other weights).
    loss : "squared_hinge" (the only loss; accepted so that the review preset's parameters pass).
    class_weight : None, a dict {1: w_+, -1: w_-}, or "balanced": as the ramp solver's, the weights
        follow the labels after every label with ``balance_ratio`` r (w_+ = r n / ((1 + r) n_+),
        w_- = n / ((1 + r) n_-); 1 and 1 while one class is learned), C_i = C w_{y_i}.
    balance_ratio : float, default 1.0.

    ``max_iter`` caps the passes over the learned rows of one ``learn`` / ``unlearn`` call.
    """

    name: ClassVar[str] = "dual-cd"
    exact_unlearn: ClassVar[bool] = False
    has_bias: ClassVar[bool] = False
    keeps_store_scores: ClassVar[bool] = True

    def __init__(
        self,
        X=None,
        *,
        loss: str = "squared_hinge",
        class_weight: None | str | dict = None,
        balance_ratio: float = 1.0,
        **params,
    ):
        if loss != "squared_hinge":
            raise ValueError(f"the dual-cd solver learns the squared hinge only, got loss={loss!r}")
        self.loss = loss
        self._init_ratio_weights(class_weight, balance_ratio)
        kernel = params.get("kernel", "rbf")
        if kernel not in ("linear", "poly") or (kernel == "poly" and int(params.get("degree", 3)) != 1):
            raise ValueError(
                f"the dual-cd solver learns a linear model: kernel 'linear', or 'poly' with degree 1; "
                f"got kernel={kernel!r}" + (f", degree={params.get('degree', 3)!r}" if kernel == "poly" else "")
            )
        if isinstance(params.get("gamma", "scale"), str) and kernel == "poly":
            raise ValueError(f"the dual-cd solver needs a number for gamma, not {params.get('gamma', 'scale')!r}")
        self.alpha = np.zeros(0)  # a_i >= 0 of every stored example (0 unless learned)
        self.f = np.zeros(0)  # f of every stored example, from w after every step
        self.w = np.zeros(0)  # sum_i a_i y_i x_i over the learned examples (n_features)
        self.s = 0.0  # sum_i a_i y_i (the constant feature's weight, before sqrt(coef0))
        self.n_passes_ = 0  # coordinate passes over the learned rows, since made or loaded
        self._local: np.ndarray | None = None  # the compiled passes' scratch space (``_scratch``)
        self._touched = np.zeros(0, dtype=np.int64)  # the features of the labelled rows (where w is not 0)
        self._block: tuple | None = None  # the learned rows copied for the passes (``_block_for``)
        self._block_map: np.ndarray | None = None  # the block's number of each feature (-1: not in it)
        super().__init__(X, **params)
        if self.dtype != "float64":
            raise ValueError(f"the dual-cd solver works on float64 rows, got dtype={self.dtype!r}")

    # -- the data ----------------------------------------------------------
    @property
    def _map(self) -> tuple[float, float]:
        """(gamma, coef0) of K(x, z) = gamma <x, z> + coef0."""
        k = self.kernel
        assert k is not None, "the kernel is set in __init__"
        return (1.0, 0.0) if k.name == "linear" else (float(k.gamma), float(k.coef0))

    def add_points(self, X) -> np.ndarray:
        if not sp.issparse(X) and (len(self.store) == 0 or not self.store.is_sparse):
            raise ValueError("the dual-cd solver learns sparse (CSR) rows; pass a scipy.sparse matrix")
        return super().add_points(X)

    def _on_store_grown(self, n_new: int) -> None:
        d = int(self.store.n_features or 0)
        if len(self.w) != d:
            self.w = np.zeros(d)
        self.alpha = np.concatenate([self.alpha, np.zeros(n_new)])
        gamma, coef0 = self._map
        new = self.store.X[len(self.f) :]
        self.f = np.concatenate([self.f, gamma * (new @ self.w) + coef0 * self.s])

    def get_params(self) -> dict[str, Any]:
        params = super().get_params()
        params.update(loss=self.loss, class_weight=self.class_weight, balance_ratio=self.balance_ratio)
        return params

    # -- class weights (``class_weights_``: ``RatioClassWeights``, as the ramp solver's) ------------
    def _ridge(self, idx: np.ndarray) -> np.ndarray:
        """D_ii = 1 / (2 C w_{y_i}) of the examples ``idx`` (learned ones)."""
        w_pos, w_neg = self.class_weights_
        return np.where(self.y[idx] > 0, 0.5 / (self.C * w_pos), 0.5 / (self.C * w_neg))

    def _upper_bounds(self, idx) -> np.ndarray:
        return np.full(len(np.asarray(idx).reshape(-1)), np.inf)

    # -- solving ---------------------------------------------------------------
    def _learned(self) -> np.ndarray:
        return np.asarray(self.learned_order, dtype=np.intp)

    def _recompute(self, L: np.ndarray | None = None, w_done: bool = False) -> None:
        """w and s from a (learned examples ``L``, default all, in learning order), then f of the whole
        store; ``w_done``: w is already so (the passes recompute it over the learned rows at their end)."""
        if L is None:
            L = self._learned()
        X = self.store.X
        c = self.alpha[L] * self.y[L]
        if len(self.w) != X.shape[1]:
            self.w, self._touched = np.zeros(X.shape[1]), np.zeros(0, dtype=np.int64)
            w_done = False
        if not w_done:
            # (over the labelled rows' features only: w is as long as the vocabulary, not copied per label)
            self._touched = weight_vector(X.indptr, X.indices, X.data, L, c, self.w, self._touched, self._scratch())
        self.s = float(c.sum()) if len(L) else 0.0
        gamma, coef0 = self._map
        self.f = gamma * (X @ self.w) + coef0 * self.s

    def _block_for(self, L: np.ndarray) -> tuple:
        """The block of the learned rows ``L`` for the passes (``block_append``): the one of the previous
        call extended by the rows learned since, or made again when the rows before changed (unlearning)
        or the vocabulary did; the same block either way.  Returns (ptr, idx, val, feats, n_feats)."""
        X = self.store.X
        d = X.shape[1]
        block = self._block
        start = 0
        if block is not None:
            rows, ptr, idx, val, feats, n_feats = block
            m = len(rows)
            # (a stored row never changes: the store only grows)
            if len(self._block_map) == d and m <= len(L) and np.array_equal(rows, L[:m]):  # type: ignore[arg-type]
                start = m
            else:
                if len(self._block_map) == d:  # type: ignore[arg-type]
                    self._block_map[feats[:n_feats]] = -1  # type: ignore[index]
                block = None
        if block is None:
            if self._block_map is None or len(self._block_map) != d:
                self._block_map = np.full(d, -1, dtype=np.int32)
            ptr, idx, val = np.zeros(len(L) + 1, dtype=np.int64), np.zeros(0, dtype=np.int32), np.zeros(0)
            feats, n_feats = np.zeros(0, dtype=np.int64), 0
        ptr, idx, val, feats, n_feats = block_append(
            X.indptr, X.indices, X.data, L, start, ptr, idx, val, feats, n_feats, self._block_map
        )
        self._block = (L.copy(), ptr, idx, val, feats, n_feats)
        return ptr, idx, val, feats, n_feats

    def _scratch(self) -> np.ndarray:
        """The compiled passes' renumbering space: -1 for every feature (they leave it so)."""
        d = len(self.w)
        if self._local is None or len(self._local) != d:
            self._local = np.full(d, -1, dtype=np.int64)
        return self._local

    def _violations(self, L: np.ndarray) -> np.ndarray:
        """|projected gradient| of the learned examples L with the kept f (the single-variable KKT violation)."""
        a = self.alpha[L]
        G = self.y[L] * self.f[L] - 1.0 + self._ridge(L) * a
        return np.where(a > 0.0, np.abs(G), np.maximum(-G, 0.0))

    def _solve(self) -> dict[str, Any]:
        """Coordinate passes from the current a until the KKT conditions hold within tol; the step's fields."""
        L = self._learned()
        status, message, passes = "ok", "", 0
        gap = 0.0
        if len(L):
            gamma, coef0 = self._map
            ridge = self._ridge(L)
            qdiag = gamma * self.store.sq_norms[L] + coef0 + ridge
            yL = self.y[L]
            aL = self.alpha[L]
            s = np.array([self.s])
            w = self.w  # (moved in place by the passes, then recomputed from a)
            for _ in range(_CHECKS):
                budget = self.max_iter - passes
                seed = int(self.rng.integers(1, 2**62))
                ptr, idx, val, feats, n_feats = self._block_for(L)
                taken, code, _moved = dcd_passes(
                    ptr,
                    idx,
                    val,
                    feats,
                    n_feats,
                    yL,
                    aL,
                    qdiag,
                    ridge,
                    w,
                    s,
                    gamma,
                    coef0,
                    self.tol,
                    budget,
                    seed,
                )
                passes += taken
                self.alpha[L] = aL
                # w (recomputed from a by the passes), s and f from a: no drift, a state restores bit for bit
                # (w's nonzeros: the learned rows' features, a superset of the last ones: the same store)
                self._touched = feats[:n_feats]
                self._recompute(L, w_done=True)
                gap = float(self._violations(L).max())
                if code == BUDGET:
                    status, message = "max_iter", self._iteration_cap("coordinate descent", passes)
                    break
                if gap <= self.tol:
                    break
                w, s = self.w, np.array([self.s])
            else:
                status = "inexact"
                message = self._not_tau_optimal(
                    f"the largest KKT violation is {gap:.3g}, above tol {self.tol:g} "
                    f"after recomputing w {_CHECKS} times"
                )
        else:
            self._recompute()
        self.n_passes_ += passes
        if not np.isfinite(self.f.sum() + self.alpha.sum()):
            raise NumericalError(f"{self.name}: non-finite decision values or weights (non-finite arithmetic)")
        return dict(
            iterations=passes,
            status=status,
            message=message,
            kkt_gap=gap,
            extra=dict(n_sv=int(np.count_nonzero(self.alpha > 0))),
        )

    # -- the contract --------------------------------------------------------
    def learn(self, i: int, y: float) -> StepResult:
        """Learn example i with label y: it joins with a_i = 0, the class weights follow the labels, and the
        coordinate passes restore the KKT conditions from the previous weights."""
        i, y = self._check_learnable(i, y)
        with StepTimer(self) as timer:
            self.y[i] = y
            self.learned_order.append(i)
            out = self._solve()
        return timer.result(**out)

    def learn_many(self, idx, ys) -> StepResult:
        """Learn several examples at once (one convex problem: the same optimum in any order)."""
        idx, ys = self._check_batch(idx, ys)
        checked = [self._check_learnable(int(i), float(y)) for i, y in zip(idx, ys, strict=True)]
        with StepTimer(self) as timer:
            for i, y in checked:
                self.y[i] = y
                self.learned_order.append(i)
            out = self._solve()
        return timer.result(**out)

    def unlearn(self, i: int) -> StepResult:
        """Remove example i (a_i -> 0, its label forgotten) and restore the KKT conditions from the warm start:
        the model of training without it, to the tolerance (the optimum is unique)."""
        i = self._check_unlearnable(i)
        with StepTimer(self) as timer:
            self.alpha[i] = 0.0
            self.y[i] = 0.0
            self.learned_order.remove(i)
            self._recompute()  # (w without the example: the passes start from it)
            out = self._solve()
        return timer.result(**out)

    def coefficients(self) -> tuple[np.ndarray, np.ndarray, float]:
        sv = np.flatnonzero(self.alpha > 0)
        return sv, self.alpha[sv] * self.y[sv], 0.0

    def decision_function(self, idx=None, X=None) -> np.ndarray:
        """f for stored indices ``idx`` (default: all; kept, no kernel evaluations) or for new rows ``X``
        (gamma X w + coef0 s)."""
        if X is not None:
            gamma, coef0 = self._map
            M = X if sp.issparse(X) else np.atleast_2d(np.asarray(X, dtype=np.float64))
            return np.asarray(gamma * (M @ self.w) + coef0 * self.s, dtype=np.float64).ravel()
        if idx is None:
            return self.f.copy()
        return self.f[np.asarray(idx, dtype=np.intp).reshape(-1)].copy()

    def store_scores(self) -> np.ndarray:
        """The kept f of every stored example (the solver's own array: read, do not change)."""
        return self.f

    # -- diagnostics -------------------------------------------------------
    def kkt_gap(self) -> float:
        """Largest single-variable KKT violation over the learned examples, with f from the coefficients
        (w recomputed, not the kept values): for a_i = 0, max(0, -G_i); for a_i > 0, |G_i|, with
        G_i = y_i f(x_i) - 1 + a_i D_ii."""
        L = self._learned()
        if len(L) == 0:
            return 0.0
        X = self.store.X
        c = self.alpha[L] * self.y[L]
        gamma, coef0 = self._map
        fL = gamma * (X[L] @ np.asarray(X[L].T @ c).ravel()) + coef0 * float(c.sum())
        a = self.alpha[L]
        G = self.y[L] * fL - 1.0 + self._ridge(L) * a
        return float(np.where(a > 0.0, np.abs(G), np.maximum(-G, 0.0)).max())

    def dual_objective(self) -> float:
        """sum a_i - 1/2 ||w~||^2 - 1/2 sum a_i^2 D_ii, with ||w~||^2 = gamma ||w||^2 + coef0 s^2."""
        L = self._learned()
        if len(L) == 0:
            return 0.0
        gamma, coef0 = self._map
        a = self.alpha[L]
        return float(a.sum() - 0.5 * (gamma * self.w @ self.w + coef0 * self.s**2) - 0.5 * (a**2) @ self._ridge(L))

    def __getstate__(self) -> dict[str, Any]:
        """A copy (the loop's undo copies) leaves out the scratch space and w (as long as the vocabulary):
        w is a function of a, recomputed when the copy is brought back (the same bits)."""
        state = self.__dict__.copy()
        state["_local"] = None
        state["_block"] = state["_block_map"] = None  # (made again by the next passes: the same block)
        state["w"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._block = self._block_map = None
        if self.w is None:
            self.w = np.zeros(0)
            if self.store is not None and self.store.n_features:
                self._recompute()

    # -- state -------------------------------------------------------------
    def _state_arrays(self) -> dict[str, np.ndarray]:
        return dict(alpha=self.alpha.copy(), counters=np.array([self.n_passes_], dtype=np.int64))

    def _load_state_arrays(self, arrays: dict[str, np.ndarray], meta: dict) -> None:
        n = len(self.store)
        if len(arrays["alpha"]) != n:
            raise ValueError(f"state array 'alpha' has length {len(arrays['alpha'])}, expected {n}")
        self.alpha = np.array(arrays["alpha"], dtype=np.float64)
        self.n_passes_ = int(np.asarray(arrays.get("counters", [0]))[0])
        self._recompute()  # w, s and f are functions of a (the same bits as after the step that saved it)


__all__ = ["DualCDSVM"]
