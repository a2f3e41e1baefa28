"""``OnlineSVC``: any MarginLab solver behind scikit-learn's classifier conventions.

>>> clf = OnlineSVC(solver="incremental", C=10.0, random_state=0).fit(X, y)   # doctest: +SKIP
>>> clf.predict(X_test), clf.decision_function(X_test), clf.n_support_         # doctest: +SKIP
>>> clf.partial_fit(X_more, y_more).unlearn(3)                                 # doctest: +SKIP

scikit-learn is not required.  Conventions followed: ``__init__`` only stores
its parameters; ``get_params``/``set_params``; fitted attributes end in an
underscore; ``classes_`` holds the two label values in sorted order and
``classes_[1]`` is the positive class (+1 to the solver); ``dual_coef_`` holds
a_i y_i with that sign convention.

Positions.  Every training example gets a *position*: its place in the order
in which it was given to the solver (``fit`` shuffles the training set with
``random_state`` first; ``partial_fit`` appends in the order given).
``support_`` and ``unlearn(k)`` speak of positions; ``learning_order_[k]``
is the row of the training data (counted over all ``partial_fit`` calls)
that sits at position k.  Internally the position is the solver's data-store
index.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from core.solvers import SOLVER_NAMES, make_solver, solver_class
from core.solvers.base import OnlineSolver, StepResult


class NotFittedError(ValueError, AttributeError):
    """The estimator is used before ``fit`` or ``partial_fit`` (as scikit-learn's)."""


def _check_X(X, n_features: int | None = None, what: str = "X") -> np.ndarray:
    try:
        X = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what} must be numeric: {exc}") from None
    if X.ndim == 1:
        raise ValueError(f"{what} must be two-dimensional (n_samples, n_features); got a 1-D array of "
                         f"{X.shape[0]} values — reshape it with X.reshape(-1, 1) or X.reshape(1, -1)")
    if X.ndim != 2:
        raise ValueError(f"{what} must be two-dimensional, got shape {X.shape}")
    if X.shape[1] == 0:
        raise ValueError(f"{what} has no features")
    bad = ~np.isfinite(X)
    if bad.any():
        i, j = (int(v) for v in np.argwhere(bad)[0])
        raise ValueError(f"{what} contains a non-finite value ({X[i, j]}) at row {i}, column {j}")
    if n_features is not None and X.shape[1] != n_features:
        raise ValueError(f"{what} has {X.shape[1]} features, but the model was fitted with {n_features}")
    return X


def _check_y(y, n: int) -> np.ndarray:
    y = np.asarray(y)
    if y.ndim != 1:
        y = y.reshape(-1) if y.ndim == 2 and 1 in y.shape else y
    if y.ndim != 1:
        raise ValueError(f"y must be one-dimensional, got shape {y.shape}")
    if len(y) != n:
        raise ValueError(f"X has {n} rows but y has {len(y)} labels")
    if y.dtype.kind == "f" and not np.isfinite(y).all():
        i = int(np.flatnonzero(~np.isfinite(y))[0])
        raise ValueError(f"y contains a non-finite value ({y[i]}) at position {i}")
    if y.dtype.kind == "O" and any(v is None for v in y):
        raise ValueError("y contains None")
    return y


def _describe(values) -> str:
    return ", ".join(repr(v.item() if hasattr(v, "item") else v) for v in values)


class OnlineSVC:
    """Binary support vector classifier learned one example at a time by a MarginLab solver.

    Parameters
    ----------
    solver : ``"lasvm"`` (default), ``"incremental"``, ``"ramp"`` or ``"active-set"``.
    kernel : ``"rbf"``, ``"linear"`` or ``"poly"``.
    C : box constraint (> 0).
    gamma : kernel width; ``"scale"`` = 1 / (n_features Var(X)) over the first
        data the model sees (all of X in ``fit``, the first batch in ``partial_fit``).
    tol : stopping tolerance of the solver (LASVM's tau).
    epochs : passes over the training data in ``fit``; the first learns each
        example (``solver.learn``), later ones present them again in a new
        random order (``solver.revisit``), then ``solver.finish()`` runs.
    random_state : seed of the learning order and of the solver's own randomness.
    degree, coef0 : polynomial-kernel parameters.
    solver_params : extra keyword arguments for the solver (e.g. ``cache_bytes``, ``max_iter``).
    """

    def __init__(self, solver: str = "lasvm", kernel: str = "rbf", C: float = 1.0, gamma: float | str = "scale",
                 tol: float = 1e-3, epochs: int = 1, random_state: int | None = None, degree: int = 3,
                 coef0: float = 1.0, solver_params: dict | None = None):
        self.solver = solver
        self.kernel = kernel
        self.C = C
        self.gamma = gamma
        self.tol = tol
        self.epochs = epochs
        self.random_state = random_state
        self.degree = degree
        self.coef0 = coef0
        self.solver_params = solver_params

    # -- parameters --------------------------------------------------------
    _PARAM_NAMES = ("solver", "kernel", "C", "gamma", "tol", "epochs", "random_state", "degree", "coef0",
                    "solver_params")

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self._PARAM_NAMES}

    def set_params(self, **params) -> OnlineSVC:
        for name, value in params.items():
            if name not in self._PARAM_NAMES:
                raise ValueError(f"invalid parameter {name!r} for OnlineSVC; valid: {', '.join(self._PARAM_NAMES)}")
            setattr(self, name, value)
        return self

    def __repr__(self) -> str:
        defaults = OnlineSVC().get_params()
        changed = [f"{k}={v!r}" for k, v in self.get_params().items() if v != defaults[k]]
        return f"OnlineSVC({', '.join(changed)})"

    # -- fitting -------------------------------------------------------------
    def _new_solver(self, X: np.ndarray) -> OnlineSolver:
        if not isinstance(self.solver, str):
            raise ValueError(f"solver must be a name ({', '.join(SOLVER_NAMES)}), got {self.solver!r}")
        if int(self.epochs) != self.epochs or self.epochs < 1:
            raise ValueError(f"epochs must be a positive integer, got {self.epochs!r}")
        solver_class(self.solver)  # unknown names and import errors surface here, before any work
        params = dict(kernel=self.kernel, C=self.C, gamma=self.gamma, degree=self.degree, coef0=self.coef0,
                      tol=self.tol, random_state=self.random_state)
        params.update(self.solver_params or {})
        return make_solver(self.solver, X, **params)

    def _encode(self, y: np.ndarray) -> np.ndarray:
        """Labels as -1/+1 (classes_[1] -> +1); unknown values are an error."""
        pos = y == self.classes_[1]
        neg = y == self.classes_[0]
        unknown = ~(pos | neg)
        if unknown.any():
            raise ValueError(f"y contains {_describe(np.unique(y[unknown])[:5])}, not one of the classes "
                             f"({_describe(self.classes_)})")
        return np.where(pos, 1.0, -1.0)

    def _learn_range(self, first: int, signs: np.ndarray) -> None:
        for k, s in enumerate(signs):
            self.step_results_.append(self.solver_.learn(first + k, float(s)))

    def fit(self, X, y) -> OnlineSVC:
        """Learn (X, y) from scratch: one example at a time in a random order seeded by ``random_state``.

        A solver with a batch path (``active-set``: ``learn_many``) learns the
        permuted set in one call (a model as exact, to the same tolerance).
        """
        X = _check_X(X)
        y = _check_y(y, len(X))
        classes = np.unique(y)
        if len(classes) != 2:
            what = "only one class" if len(classes) == 1 else f"{len(classes)} classes"
            raise ValueError(f"y has {what} ({_describe(classes[:10])}); OnlineSVC needs exactly two")
        rng = np.random.default_rng(self.random_state)
        order = rng.permutation(len(X))
        solver = self._new_solver(X[order])
        self._reset(classes)
        self.solver_ = solver
        self.n_features_in_ = X.shape[1]
        self.learning_order_ = order.astype(np.intp)
        self._n_seen = len(X)
        signs = self._encode(y[order])
        if hasattr(solver, "learn_many"):
            # a solver with a batch path (active-set) learns the whole permuted set in one call:
            # as exact as one learn per example (same tolerance), far fewer iterations, one step record
            self.step_results_.append(solver.learn_many(np.arange(len(X)), signs))
        else:
            self._learn_range(0, signs)
        for _ in range(1, int(self.epochs)):
            for k in rng.permutation(len(X)):
                if self.solver_.y[k] != 0:  # the solver may have skipped an example
                    self.step_results_.append(self.solver_.revisit(int(k)))
        self.step_results_.append(self.solver_.finish())
        return self

    def _reset(self, classes: np.ndarray) -> None:
        self.classes_ = np.asarray(classes)
        self.step_results_: list[StepResult] = []
        self.n_features_in_ = None
        self.learning_order_ = np.zeros(0, dtype=np.intp)
        self._n_seen = 0

    def partial_fit(self, X, y, classes=None) -> OnlineSVC:
        """Append (X, y) to the training data and learn each example in the order given.

        The first call fixes ``classes_``: from ``classes`` if given, else from
        the two values in ``y`` (a first batch with a single class needs
        ``classes``).  ``partial_fit`` does not run the finishing step; call
        :meth:`finish` when the solver is LASVM and a tau-optimal model is wanted.
        """
        first_call = not hasattr(self, "solver_")
        X = _check_X(X, None if first_call else self.n_features_in_)
        y = _check_y(y, len(X))
        if first_call:
            given = np.unique(np.asarray(classes)) if classes is not None else np.unique(y)
            if len(given) != 2:
                if classes is None and len(given) == 1:
                    raise ValueError(f"the first partial_fit batch has only one class ({_describe(given)}); "
                                     "pass classes=[negative, positive] on the first call")
                raise ValueError(f"OnlineSVC needs exactly two classes, got {len(given)} ({_describe(given[:10])})")
            solver = self._new_solver(X)
            self._reset(given)
            signs = self._encode(y)
            self.solver_ = solver
            first = 0
        else:
            if classes is not None and not np.array_equal(np.unique(np.asarray(classes)), self.classes_):
                raise ValueError(f"classes {_describe(np.unique(classes))} differ from the fitted classes_ "
                                 f"({_describe(self.classes_)})")
            signs = self._encode(y)
            first = int(self.solver_.add_points(X)[0]) if len(X) else self.solver_.n_points
        self.n_features_in_ = X.shape[1]
        self.learning_order_ = np.concatenate([self.learning_order_,
                                               np.arange(self._n_seen, self._n_seen + len(X))]).astype(np.intp)
        self._n_seen += len(X)
        self._learn_range(first, signs)
        return self

    def finish(self) -> OnlineSVC:
        """Run the solver's finishing step (LASVM; a no-op for exact solvers)."""
        self._check_fitted()
        self.step_results_.append(self.solver_.finish())
        return self

    def unlearn(self, k: int) -> OnlineSVC:
        """Remove the example at position ``k`` (see the module docstring) from the model.

        Exact for ``incremental`` and ``active-set`` (the model equals one trained
        without it); for the other solvers as documented by the solver.
        """
        self._check_fitted()
        k = int(k)
        if not 0 <= k < self.solver_.n_points:
            raise IndexError(f"position {k} is out of range: {self.solver_.n_points} training examples")
        self.step_results_.append(self.solver_.unlearn(k))
        return self

    # -- prediction ---------------------------------------------------------
    def _check_fitted(self) -> None:
        if not hasattr(self, "solver_"):
            raise NotFittedError("this OnlineSVC is not fitted yet; call fit or partial_fit first")

    def decision_function(self, X) -> np.ndarray:
        """f(x) = sum_i a_i y_i K(x_i, x) + b; positive values predict ``classes_[1]``."""
        self._check_fitted()
        X = _check_X(X, self.n_features_in_)
        return self.solver_.decision_function(X=X)

    def predict(self, X) -> np.ndarray:
        scores = self.decision_function(X)
        return self.classes_[(scores > 0).astype(np.intp)]

    def score(self, X, y) -> float:
        """Mean accuracy on (X, y)."""
        X = _check_X(X, self.n_features_in_ if hasattr(self, "solver_") else None)
        y = _check_y(y, len(X))
        return float(np.mean(self.predict(X) == y))

    # -- fitted attributes (read live from the solver) ------------------------
    def _coefficients(self):
        self._check_fitted()
        sv, coef, b = self.solver_.coefficients()
        sv = np.asarray(sv, dtype=np.intp)
        order = np.argsort(sv, kind="stable")
        return sv[order], np.asarray(coef, dtype=np.float64)[order], float(b)

    @property
    def support_(self) -> np.ndarray:
        """Positions (learning order) of the support vectors, ascending."""
        return self._coefficients()[0]

    @property
    def support_vectors_(self) -> np.ndarray:
        return self.solver_.store.X[self.support_]

    @property
    def dual_coef_(self) -> np.ndarray:
        """a_i y_i of the support vectors, shape (1, n_SV); y_i = +1 for ``classes_[1]``."""
        return self._coefficients()[1].reshape(1, -1)

    @property
    def intercept_(self) -> np.ndarray:
        return np.array([self._coefficients()[2]])

    @property
    def n_support_(self) -> np.ndarray:
        """Support vectors per class, in the order of ``classes_``."""
        coef = self._coefficients()[1]
        return np.array([np.sum(coef < 0), np.sum(coef > 0)], dtype=np.int32)

    @property
    def dual_objective_(self) -> float:
        self._check_fitted()
        return float(self.solver_.dual_objective())

    @property
    def n_kernel_evals_(self) -> int:
        self._check_fitted()
        return int(self.solver_.n_kernel_evals)

    @property
    def kkt_gap_(self) -> float:
        self._check_fitted()
        return float(self.solver_.kkt_gap())


__all__ = ["NotFittedError", "OnlineSVC"]
