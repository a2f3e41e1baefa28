"""``OnlineSVC``: any MarginLab solver behind scikit-learn's classifier API.

>>> clf = OnlineSVC(solver="incremental", C=10.0, random_state=0).fit(X, y)   # doctest: +SKIP
>>> clf.predict(X_test), clf.decision_function(X_test), clf.n_support_         # doctest: +SKIP
>>> clf.partial_fit(X_more, y_more).unlearn(3)                                 # doctest: +SKIP

``OnlineSVC`` is a scikit-learn estimator (``BaseEstimator`` + ``ClassifierMixin``):
input is checked with scikit-learn's own validation utilities, it declares
itself binary-only in its tags, and ``sklearn.utils.estimator_checks.check_estimator``
passes for every solver.  scikit-learn supplies the conventions and the checks
only; the model is always learned by a MarginLab solver.

Input: dense arrays, or ``scipy.sparse`` matrices of any format (taken as CSR, as
scikit-learn's ``SVC`` takes them, and kept sparse in the solver's store: the solvers
compute the same kernel values on CSR rows, so the model is the one of the same data
dense).

Labels: ``classes_`` holds the two label values in sorted order (any two
values: ints, strings, ...); ``classes_[1]`` is the positive class (+1 to the
solver) and ``dual_coef_`` holds a_i y_i with that sign convention.

Rows.  As in scikit-learn's ``SVC``, ``support_`` holds row indices into the
training data: the X given to ``fit``, or the rows of every ``partial_fit``
call since the first, counted on (the second call's first row is
``len(X_first)``).  ``unlearn(i)`` takes such a row index.  This holds by
construction: the solver's data store holds the training rows in that order
(store index = row index), and ``fit`` only *learns* them in a random order
(seeded by ``random_state``), which ``learning_order_`` records.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import NotFittedError
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import check_is_fitted, validate_data

from core.solvers import SOLVER_NAMES, make_solver, solver_class
from core.solvers.base import OnlineSolver, StepResult

# Sparse formats the solvers' data store takes as they are (scipy.sparse), e.g. ("csr",).
# Empty: dense input only, and scikit-learn's validate_data refuses sparse input with a
# TypeError that says so.  This one switch drives every validate_data call and the
# input_tags.sparse tag, so that check_estimator tests whichever is declared; X is passed
# to the solver exactly as validate_data returns it (no densifying in this module).
SPARSE_FORMATS: tuple[str, ...] = ("csr",)


def _accept_sparse() -> list[str] | bool:
    return list(SPARSE_FORMATS) if SPARSE_FORMATS else False


def _first_non_finite(values, name: str) -> str:
    """Where the first NaN/inf of ``values`` is ('' if it cannot be located), for an error message."""
    try:
        if hasattr(values, "tocoo"):  # scipy.sparse: only the stored entries can be non-finite
            coo = values.tocoo()
            bad = np.flatnonzero(~np.isfinite(coo.data))
            if len(bad) == 0:
                return ""
            order = np.lexsort((coo.col[bad], coo.row[bad]))
            k = bad[order[0]]
            return f"first at row {int(coo.row[k])}, column {int(coo.col[k])}: {coo.data[k]}"
        columns = getattr(values, "columns", None)
        arr = np.asarray(values, dtype=np.float64)
        cells = np.argwhere(~np.isfinite(arr))
        if len(cells) == 0:
            return ""
        if arr.ndim == 1:
            return f"first at position {int(cells[0][0])}: {arr[tuple(cells[0])]}"
        i, j = (int(v) for v in cells[0][:2])
        column = f"column {j}" + (f" ({columns[j]!r})" if columns is not None else "")
        return f"first at row {i}, {column}: {arr[i, j]}"
    except (TypeError, ValueError):
        return ""


def _describe(values) -> str:
    return ", ".join(repr(v.item() if hasattr(v, "item") else v) for v in values)


class OnlineSVC(ClassifierMixin, BaseEstimator):
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
    class_weight : None (default), a dict {class label: weight} or ``"balanced"``, as in
        scikit-learn's ``SVC``: example i gets the box 0 <= a_i <= C w_{y_i}; a class the dict
        leaves out has weight 1.  ``"balanced"`` is n / (2 n_c) from the labels given to
        ``fit`` (scikit-learn's meaning, fixed for that fit); with ``partial_fit`` the solver's
        own ``"balanced"`` weights follow the labels learned so far, re-set when their rounded
        class ratio changes (``core.solvers.base.ClassWeights``).

    Attributes
    ----------
    classes_ : the two labels, sorted; ``classes_[1]`` is the positive class.
    support_ : row indices of the support vectors into the training data (see
        the module docstring), grouped by class as in ``SVC`` (``classes_[0]``
        first), ascending within a class.
    support_vectors_, dual_coef_ (a_i y_i, shape (1, n_SV)), intercept_ (shape (1,)),
    n_support_ (per class, in the order of ``classes_``), dual_objective_,
    n_kernel_evals_, kkt_gap_, n_features_in_ (and feature_names_in_ for a DataFrame).
    learning_order_ : row indices in the order they were first learned.
    solver_ : the MarginLab solver; step_results_ : its step records.
    """

    def __init__(
        self,
        solver: str = "lasvm",
        kernel: str = "rbf",
        C: float = 1.0,
        gamma: float | str = "scale",
        tol: float = 1e-3,
        epochs: int = 1,
        random_state: int | None = None,
        degree: int = 3,
        coef0: float = 1.0,
        solver_params: dict | None = None,
        class_weight: dict | str | None = None,
    ):
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
        self.class_weight = class_weight

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False  # binary only: fit refuses a third class
        tags.input_tags.sparse = bool(SPARSE_FORMATS)
        return tags

    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "solver_")

    # -- input -----------------------------------------------------------------
    def _validate(self, X, y="no_validation", *, reset: bool):
        """scikit-learn's ``validate_data``; a NaN/inf message also says where the first one is."""
        try:
            return validate_data(self, X, y, reset=reset, accept_sparse=_accept_sparse(), dtype=np.float64)
        except ValueError as exc:
            message = str(exc)
            for name, values in (("X", X), ("y", y)):
                if message.startswith(f"Input {name} contains") and not isinstance(values, str):
                    where = _first_non_finite(values, name)
                    if where:  # on the first line, which says what is wrong
                        first, _, rest = message.partition("\n")
                        raise ValueError(f"{first.rstrip('.')} ({where}).\n{rest}".rstrip()) from exc
            raise

    @staticmethod
    def _check_two_classes(labels, what: str) -> np.ndarray:
        """The sorted distinct labels, which must be two: the message names what was found."""
        target_type = type_of_target(labels, input_name="y")
        found = np.unique(labels)
        if target_type != "binary":
            raise ValueError(
                f"Only binary classification is supported. The type of the target is {target_type}: "
                f"{what} has {len(found)} classes ({_describe(found[:10])}"
                f"{', ...' if len(found) > 10 else ''}); OnlineSVC learns exactly two"
            )
        if len(found) != 2:
            raise ValueError(
                f"{what} has only one class ({_describe(found)}); OnlineSVC needs two classes"
                + (
                    " (or pass classes=[negative, positive] on the first partial_fit call)"
                    if what == "the first partial_fit batch"
                    else ""
                )
            )
        return found

    def _solver_class_weight(self, classes: np.ndarray, signs: np.ndarray | None):
        """``class_weight`` for the solver, whose labels are -1 / +1 (classes[1] -> +1): None, a dict
        {1: w, -1: w}, or "balanced" (``signs``: the labels of ``fit``, whose balanced weights are fixed
        here; None with ``partial_fit``, where the solver's weights follow its labels)."""
        cw = self.class_weight
        if cw is None:
            return None
        if isinstance(cw, str):
            if cw != "balanced":
                raise ValueError(f"class_weight must be None, 'balanced' or a dict {{class label: weight}}, got {cw!r}")
            if signs is None:
                return "balanced"
            n_pos, n_neg = int(np.sum(signs > 0)), int(np.sum(signs < 0))
            n = n_pos + n_neg
            return {1: n / (2.0 * n_pos), -1: n / (2.0 * n_neg)}
        if not isinstance(cw, dict):
            raise ValueError(f"class_weight must be None, 'balanced' or a dict {{class label: weight}}, got {cw!r}")
        weights = {1: 1.0, -1: 1.0}
        for key, value in cw.items():
            matches = [k for k, c in ((-1, classes[0]), (1, classes[1])) if key == c]
            if not matches:
                raise ValueError(
                    f"class_weight has a weight for {key!r}, which is not one of the classes ({_describe(classes)})"
                )
            weights[matches[0]] = value
        return weights

    def _new_solver(self, X, class_weight=None) -> OnlineSolver:
        if not isinstance(self.solver, str):
            raise ValueError(f"solver must be a name ({', '.join(SOLVER_NAMES)}), got {self.solver!r}")
        if (
            isinstance(self.epochs, bool)
            or not isinstance(self.epochs, (int, np.integer, float, np.floating))
            or not float(self.epochs).is_integer()
            or self.epochs < 1
        ):
            raise ValueError(f"epochs must be a positive integer, got {self.epochs!r}")
        if self.solver_params is not None and not isinstance(self.solver_params, dict):
            raise ValueError(
                f"solver_params must be a dict of solver keyword arguments or None, got {self.solver_params!r}"
            )
        solver_class(self.solver)  # unknown names and import errors surface here, before any work
        params = dict(
            kernel=self.kernel,
            C=self.C,
            gamma=self.gamma,
            degree=self.degree,
            coef0=self.coef0,
            tol=self.tol,
            random_state=self.random_state,
        )
        params.update(self.solver_params or {})
        if class_weight is not None:
            if "class_weight" in (self.solver_params or {}):
                raise ValueError("class_weight is given both as a parameter and in solver_params: give it once")
            params["class_weight"] = class_weight
        return make_solver(self.solver, X, **params)

    @staticmethod
    def _encode(y: np.ndarray, classes: np.ndarray) -> np.ndarray:
        """Labels as -1/+1 (classes[1] -> +1); values that are not one of the classes are an error."""
        pos = y == classes[1]
        neg = y == classes[0]
        unknown = ~(pos | neg)
        if unknown.any():
            first = int(np.flatnonzero(unknown)[0])
            raise ValueError(
                f"y contains {_describe(np.unique(y[unknown])[:5])} (first at position {first}), "
                f"not one of the classes ({_describe(classes)})"
            )
        return np.where(pos, 1.0, -1.0)

    # -- fitting -----------------------------------------------------------------
    def fit(self, X, y) -> OnlineSVC:
        """Learn (X, y) from scratch: one example at a time in a random order seeded by ``random_state``.

        The solver's store holds X in row order; only the learning order is
        shuffled.  A solver with a batch path (``active-set``: ``learn_many``)
        learns the shuffled set in one call (a model as exact, to the same tolerance).
        """
        X, y = self._validate(X, y, reset=True)
        check_classification_targets(y)
        classes = self._check_two_classes(y, "y")
        rng = np.random.default_rng(self.random_state)
        order = rng.permutation(X.shape[0]).astype(np.intp)
        signs = self._encode(y, classes)
        solver = self._new_solver(X, self._solver_class_weight(classes, signs))  # store index = row index of X
        self.classes_ = classes
        self.solver_ = solver
        self.step_results_: list[StepResult] = []
        self.learning_order_ = order
        if hasattr(solver, "learn_many"):
            # a solver with a batch path (active-set) learns the whole shuffled set in one call:
            # as exact as one learn per example (same tolerance), far fewer iterations, one step record
            self.step_results_.append(solver.learn_many(order, signs[order]))
        else:
            self._learn(order, signs[order])
        for _ in range(1, int(self.epochs)):
            for i in rng.permutation(X.shape[0]):
                if solver.y[i] != 0:  # the solver may have skipped an example
                    self.step_results_.append(solver.revisit(int(i)))
        self.step_results_.append(solver.finish())
        return self

    def _learn(self, rows: np.ndarray, signs: np.ndarray) -> None:
        for i, s in zip(rows, signs, strict=True):
            self.step_results_.append(self.solver_.learn(int(i), float(s)))

    def partial_fit(self, X, y, classes=None) -> OnlineSVC:
        """Append (X, y) to the training data and learn each example in the order given.

        The first call fixes ``classes_``: from ``classes`` if given, else from
        the two values in ``y`` (a first batch with a single class needs
        ``classes``).  Rows are counted over the calls: this call's rows get
        the row indices that follow the previous calls' rows.  ``partial_fit``
        does not run the finishing step; call :meth:`finish` when the solver is
        LASVM and a tau-optimal model is wanted.
        """
        first_call = not hasattr(self, "solver_")
        X, y = self._validate(X, y, reset=first_call)
        check_classification_targets(y)
        if classes is not None:
            classes = np.asarray(classes)
            check_classification_targets(classes)
            given = self._check_two_classes(classes, "classes")
        if first_call:
            given = given if classes is not None else self._check_two_classes(y, "the first partial_fit batch")
            signs = self._encode(y, given)
            solver = self._new_solver(X, self._solver_class_weight(given, None))
            self.classes_ = given
            self.solver_ = solver
            self.step_results_ = []
            self.learning_order_ = np.zeros(0, dtype=np.intp)
            rows = np.arange(X.shape[0], dtype=np.intp)
        else:
            if classes is not None and not np.array_equal(given, self.classes_):
                raise ValueError(
                    f"classes ({_describe(given)}) differ from the fitted classes_ ({_describe(self.classes_)})"
                )
            signs = self._encode(y, self.classes_)  # before anything is added: a wrong label changes nothing
            rows = np.asarray(self.solver_.add_points(X), dtype=np.intp)
        self.learning_order_ = np.concatenate([self.learning_order_, rows])
        self._learn(rows, signs)
        return self

    def finish(self) -> OnlineSVC:
        """Run the solver's finishing step (LASVM; a no-op for exact solvers)."""
        self._check_fitted()
        self.step_results_.append(self.solver_.finish())
        return self

    def unlearn(self, i: int) -> OnlineSVC:
        """Remove training row ``i`` (a row index as in ``support_``) from the model.

        Exact for ``incremental`` and ``active-set`` (the model equals one trained
        without that row); for the other solvers as documented by the solver.
        """
        self._check_fitted()
        i = int(i)
        n_rows = self.solver_.n_points
        if not 0 <= i < n_rows:
            raise IndexError(f"row {i} is out of range: the model was trained on {n_rows} rows")
        self.step_results_.append(self.solver_.unlearn(i))
        return self

    # -- prediction -----------------------------------------------------------------
    def _check_fitted(self) -> None:
        check_is_fitted(self, msg="This %(name)s instance is not fitted yet: call 'fit' or 'partial_fit' first.")

    def decision_function(self, X) -> np.ndarray:
        """f(x) = sum_i a_i y_i K(x_i, x) + b; positive values predict ``classes_[1]``."""
        self._check_fitted()
        X = self._validate(X, reset=False)
        return self.solver_.decision_function(X=X)

    def predict(self, X) -> np.ndarray:
        scores = self.decision_function(X)
        return self.classes_[(scores > 0).astype(np.intp)]

    # -- fitted attributes (read live from the solver) ---------------------------------
    def _coefficients(self):
        """(rows, a_i y_i, b), rows grouped by class as in SVC: classes_[0] (a_i y_i < 0) first."""
        self._check_fitted()
        sv, coef, b = self.solver_.coefficients()
        sv = np.asarray(sv, dtype=np.intp)
        coef = np.asarray(coef, dtype=np.float64)
        order = np.lexsort((sv, coef > 0))
        return sv[order], coef[order], float(b)

    @property
    def support_(self) -> np.ndarray:
        """Row indices of the support vectors into the training data (``classes_[0]``'s first)."""
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
        """W(a) = sum_i a_i - 1/2 sum_ij a_i a_j y_i y_j K(x_i, x_j) over the support vectors."""
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


__all__ = ["NotFittedError", "OnlineSVC", "SPARSE_FORMATS"]
