"""The contract every MarginLab solver follows (see docs/design.md, "Solvers").

A solver owns a growable :class:`~core.kernels.DataStore` of examples and a
:class:`~core.kernels.KernelCache`.  Examples are added to the store with
``add_points`` (unlabelled pool items, held-out points, ...) and *learned* one
at a time with ``learn(i, y)``; only learned examples can carry weight.

Conventions shared by all solvers (standard C-SVC dual, handbook §15.5):

    max_a  W(a) = sum_i a_i - 1/2 sum_ij a_i a_j y_i y_j K_ij
    s.t.   0 <= a_i <= C,  sum_i y_i a_i = 0   (the equality only with a bias)
    f(x)   = sum_i a_i y_i K(x_i, x) + b

With class weights the box is per example, 0 <= a_i <= C w_{y_i} (``ClassWeights``; the ramp
solver has its own), and C below stands for that bound.

``dual_coef_`` holds the signed coefficients a_i y_i of ``support_`` (a_i > 0).
``kkt_gap()`` is the largest violating pair of LASVM (Bordes et al. 2005,
eq. 5): with g_i = y_i - sum_j a_j y_j K_ij and signed bounds
A_i = min(0, C y_i), B_i = max(0, C y_i),

    gap = max_{i: a_i y_i < B_i} g_i  -  min_{j: a_j y_j > A_j} g_j

which is <= tau exactly when the solution is tau-approximate, or the largest
KKT violation with the model's own bias b where that is larger (see
``bias_violation``): a tau-approximate solution with a bias outside its
admissible interval is not a tau-approximate model.  Solvers without a bias
(``ramp``) override it with the single-variable violation.

The bias (one rule for every solver with one, ``admissible_bias``): an example
whose signed coefficient can grow (a_i y_i < B_i) needs g_i <= b, one whose
coefficient can shrink (a_i y_i > A_i) needs g_i >= b.  With a coefficient
strictly inside its box (a free one, both at once) b is the mean of g over the
free examples; otherwise b is only known to lie in the interval
[max of the first kind, min of the second] over every learned example, and the
solvers report its midpoint, as LIBSVM does (Chang & Lin, "LIBSVM: a library
for support vector machines", §4.1.5).

Parameters are checked when a solver is made, and each refusal is a
``ValueError`` that names the parameter and the value:

* C: a finite number in [1e-100, 1e100].
* tol (tau): a finite number in (0, 1).  It bounds the KKT violation in units
  of the margin y f(x) - 1.  Every example violates its condition by 1 at the
  model without support vectors (a = 0, b = 0), so a tol of 1 or more accepts
  that model for any data: such a tol is refused rather than answered with
  an empty model.  A tol below the rounding level of the decision values is
  accepted; each solver documents what it then does (the exact solvers stop at
  the rounding level, the iterative ones at ``max_iter`` with a warning).
* kernel parameters (``Kernel``): gamma > 0 and finite, coef0 finite (>= 0
  for ``poly``), degree an integer (>= 1 for ``poly``).
* max_iter an integer >= 1, cache_bytes an integer >= 0.

Data are checked when they enter the store (``add_points``, see
``check_kernel_range``): an example with ||x||^2 > 1e300, K(x, x) > 1e100,
C * K(x, x) > 1e100 or (rbf) gamma ||x||^2 > 1e9 is refused, naming the
example, and so is data whose largest K(x, x) is positive but below 1e-100, so
that decision values, dual objectives and the solvers' linear systems neither
overflow nor underflow.
"""

from __future__ import annotations

import io
import json
import math
import time
import warnings
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, TypeAlias

import numpy as np
import scipy.sparse as sp

from core.kernels import DTYPES, DataStore, Kernel, KernelCache, Rows, resolve_gamma, row_terms
from core.threads import single_threaded_blas

STATE_FORMAT = 1


# -- parameter and data checks at the solver's edge -----------------------------
C_RANGE = (1e-100, 1e100)
TOL_MAX = 1.0
TOL_RULE = (
    "tol bounds the KKT violation in units of the margin y f(x) - 1; at tol >= 1 the model "
    "without support vectors is accepted for any data"
)
# Largest K(x, x) and C * K(x, x) of an example: the decision values are sums of n terms of at
# most C * K(x, x), and kernel values and those sums enter products and squares (dual objective,
# curvatures, the solvers' KKT systems and factors) that must stay far from overflow.
MAX_KERNEL = 1e100
MAX_C_TIMES_K = 1e100
# Smallest largest K(x, x) of a store (unless every kernel value is exactly 0): below it the
# kernel values and their products underflow (the decision values are the bias alone).
MIN_KERNEL = 1e-100
# Largest squared norm ||x||^2: the rbf kernel forms ||x||^2 + ||z||^2 - 2 <x, z>.
MAX_SQ_NORM = 1e300
# Largest gamma ||x||^2 for the rbf kernel: that squared distance carries a rounding error of
# about 4 eps ||x||^2, so its kernel values are exact to about 4 eps gamma ||x||^2 (1e-6 here).
MAX_RBF_GAMMA_SQ = 1e9


def check_real(
    name: str,
    value,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
    why: str = "",
) -> float:
    """``value`` as a float, or a ValueError naming the parameter and the value."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a number, got {value!r}")
    v = float(value)
    if not np.isfinite(v):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    too_low = low is not None and (v <= low if low_open else v < low)
    too_high = high is not None and (v >= high if high_open else v > high)
    if too_low or too_high:
        lo = "" if low is None else f"{'>' if low_open else '>='} {low:g}"
        hi = "" if high is None else f"{'<' if high_open else '<='} {high:g}"
        rule = " and ".join(part for part in (lo, hi) if part)
        raise ValueError(f"{name} must be {rule}, got {value!r}" + (f" ({why})" if why else ""))
    return v


def check_integer(name: str, value, *, low: int | None = None) -> int:
    """``value`` as an int (integral floats accepted), or a ValueError naming the parameter and the value."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if not np.isfinite(value) or float(value) != int(value):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    v = int(value)
    if low is not None and v < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return v


def kernel_bound(kernel: Kernel, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(||x||^2, B(x)) per row, with |K(x, z)| <= max(B(x), B(z)) for every z.

    The kernels are positive semi-definite (``Kernel`` refuses a negative
    coef0 for ``poly``), so |K(x, z)| <= sqrt(K(x, x) K(z, z)): B is K(x, x),
    which is 1 for rbf.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        R = Rows.of(X)
        sq = row_terms(R, np.arange(R.n_rows), False)
        if kernel.name in ("rbf", "tanimoto"):  # (tanimoto: |K| <= 1 on non-negative features)
            return sq, np.ones(len(sq))
        if kernel.name == "linear":
            return sq, sq.copy()
        return sq, (kernel.gamma * sq + kernel.coef0) ** int(kernel.degree)


def _largest_abs(X, i: int) -> float:
    row = X[i]
    return float(abs(row).max()) if sp.issparse(row) and row.nnz else float(np.abs(row).max(initial=0.0))


def _first_negative(X) -> tuple[int, int, float] | None:
    """(example, feature, value) of the first negative value of X (dense or CSR), or None."""
    if sp.issparse(X):
        bad = np.flatnonzero(X.data < 0)
        if not len(bad):
            return None
        row = int(np.searchsorted(X.indptr, bad[0], side="right") - 1)
        return row, int(X.indices[bad[0]]), float(X.data[bad[0]])
    at = np.argwhere(X < 0)
    if not len(at):
        return None
    return int(at[0][0]), int(at[0][1]), float(X[at[0][0], at[0][1]])


def check_kernel_range(
    kernel: Kernel, X: np.ndarray, C: float, first_index: int = 0, largest_so_far: float = 0.0
) -> float:
    """Refuse examples whose kernel values the solvers cannot compute with.

    Every solver works with decision values f(x) = sum_i a_i y_i K(x_i, x) + b,
    0 <= a_i <= C, and with their squares and products.  An example passes when
    ||x||^2 <= 1e300 (so that the rbf kernel's squared distance is finite),
    K(x, x) <= 1e100 and C * K(x, x) <= 1e100 (so that f, the dual objective and
    the solvers' linear systems stay far from overflow whatever the number of
    examples), and, for rbf, gamma ||x||^2 <= 1e9: the squared distance
    ||x||^2 + ||z||^2 - 2<x, z> carries a rounding error of about
    4 eps ||x||^2, so beyond that the kernel values (even K(x, x) = 1) lose
    more than 6 of their 16 digits.  Over the whole store, the largest K(x, x)
    must be 0 (every kernel value is then 0) or at least 1e-100, so that kernel
    values and their products do not underflow; ``largest_so_far`` is that
    largest value before X, and the new one is returned.  Outside these ranges
    no solver can certify a model: rescale the features, or change C or gamma.
    The message names the example (its store index), the value and the
    parameters.
    """
    if kernel.needs_nonnegative:
        neg = _first_negative(X)
        if neg is not None:
            raise ValueError(
                f"example {first_index + neg[0]}: the {kernel.name} kernel needs non-negative features "
                f"(fingerprint bits or counts; do not standardise them), but feature {neg[1]} is "
                f"{neg[2]!r}"
            )
    sq, bound = kernel_bound(kernel, X)
    with np.errstate(over="ignore", invalid="ignore"):
        bad_sq = ~(sq <= MAX_SQ_NORM)
        bad_k = ~((bound <= MAX_KERNEL) & (C * bound <= MAX_C_TIMES_K))
        bad_rbf = ~(kernel.gamma * sq <= MAX_RBF_GAMMA_SQ) if kernel.name == "rbf" else np.zeros_like(bad_sq)
    largest = max(largest_so_far, float(bound.max(initial=0.0)))
    kernel_text = f"the {kernel.name} kernel (gamma={kernel.gamma:g}, degree={kernel.degree}, coef0={kernel.coef0:g})"
    first = {
        name: int(np.flatnonzero(bad)[0]) for name, bad in (("sq", bad_sq), ("rbf", bad_rbf), ("k", bad_k)) if bad.any()
    }
    with np.errstate(over="ignore"):
        if "sq" in first:
            i = first["sq"]
            where, why = (
                i,
                (
                    f"its squared norm ||x||^2 = {sq[i]:.3g} is above {MAX_SQ_NORM:g} (largest |value| "
                    f"{_largest_abs(X, i):.3g}); rescale the features"
                ),
            )
        elif 0.0 < largest < MIN_KERNEL:
            where, why = (
                None,
                (
                    f"with {kernel_text} the largest K(x, x) of the data is {largest:.3g}, below "
                    f"{MIN_KERNEL:g}: the kernel values would underflow; rescale the features or "
                    f"raise gamma"
                ),
            )
        elif "rbf" in first:
            i = first["rbf"]
            where, why = (
                i,
                (
                    f"with the rbf kernel, gamma * ||x||^2 = {kernel.gamma * sq[i]:.3g} "
                    f"(gamma={kernel.gamma:g}) is above {MAX_RBF_GAMMA_SQ:g}: the squared distances "
                    f"||x||^2 + ||z||^2 - 2<x, z> would lose the kernel values to rounding; center or "
                    f"rescale the features, or lower gamma"
                ),
            )
        elif "k" in first:
            i = first["k"]
            what = (
                f"K(x, x) = {bound[i]:.3g} is above {MAX_KERNEL:g}"
                if not bound[i] <= MAX_KERNEL
                else f"K(x, x) = {bound[i]:.3g} and C = {C:g}, so C * K(x, x) = {C * bound[i]:.3g} is above "
                f"{MAX_C_TIMES_K:g}"
            )
            where, why = i, f"with {kernel_text} {what}; rescale the features or lower C or gamma"
        else:
            return largest
    label = f"examples {first_index}..{first_index + len(X) - 1}" if where is None else f"example {first_index + where}"
    raise ValueError(f"{label}: {why}")


# -- the bias ----------------------------------------------------------------------
def bias_interval(g: np.ndarray, up: np.ndarray, down: np.ndarray) -> tuple[float, float]:
    """[lo, hi]: the biases with which every example meets its KKT condition (see the module docstring).

    With g_i = y_i - sum_j a_j y_j K_ij, y_i f(x_i) - 1 = y_i (b - g_i): an example whose signed
    coefficient can grow (``up``) needs g_i <= b, one whose coefficient can shrink (``down``) needs
    g_i >= b.  lo = max g over ``up`` (-inf when none), hi = min g over ``down`` (+inf when none);
    lo > hi when no bias satisfies every condition (the largest violating pair is then lo - hi).
    """
    lo = float(g[up].max()) if up.any() else -np.inf
    hi = float(g[down].min()) if down.any() else np.inf
    return lo, hi


def admissible_bias(g: np.ndarray, up: np.ndarray, down: np.ndarray) -> float:
    """The bias by LIBSVM's rule: the mean of g over the free examples (``up & down``: a coefficient
    strictly inside its box, whose condition is g_i = b), else the midpoint of ``bias_interval``
    (its finite end when one side is open; 0 when both are)."""
    free = up & down
    if free.any():
        return float(np.mean(g[free]))
    lo, hi = bias_interval(g, up, down)
    if np.isfinite(lo) and np.isfinite(hi):
        return 0.5 * (lo + hi)
    if np.isfinite(lo):
        return lo
    return hi if np.isfinite(hi) else 0.0


def bias_violation(g: np.ndarray, up: np.ndarray, down: np.ndarray, b: float) -> float:
    """The largest KKT violation with the bias b, in units of the margin y f(x) - 1:
    max(0, max_up g - b, b - min_down g).  At most the largest violating pair (and 0 when
    that is <= 0) when b follows ``admissible_bias``."""
    lo, hi = bias_interval(g, up, down)
    return float(max(0.0, lo - b, b - hi))


def movable(beta: np.ndarray, y: np.ndarray, C, rel: float = 1e-12) -> tuple[np.ndarray, np.ndarray]:
    """(up, down): which signed coefficients beta = a y can grow (beta < B = max(0, C y)) and which
    can shrink (beta > A = min(0, C y)), a coefficient within ``rel`` C of a bound counting as on it
    (C: one number, or one per example, as with class weights)."""
    eps = rel * C
    return beta < np.maximum(0.0, C * y) - eps, beta > np.minimum(0.0, C * y) + eps


# -- class weights: per-class boxes 0 <= a_i <= C w_{y_i} ---------------------------
WEIGHT_RANGE = (1e-6, 1e6)


def check_class_weight(class_weight) -> tuple[float, float] | None:
    """(w_+, w_-) of a fixed ``class_weight`` dict, None for None / "balanced"; a clear error otherwise."""
    if class_weight is None or (isinstance(class_weight, str) and class_weight == "balanced"):
        return None
    if not isinstance(class_weight, dict):
        raise ValueError(
            f"class_weight must be None, 'balanced' or a dict of weights for the labels 1 and -1, got {class_weight!r}"
        )
    weights = {}
    for key, value in class_weight.items():
        plain_key = int(key) if isinstance(key, np.integer) else key
        label = (
            {"1": 1, "+1": 1, "-1": -1}.get(str(plain_key).strip())
            if not isinstance(plain_key, (bool, np.bool_))
            else None
        )
        if label is None:
            raise ValueError(f"class_weight keys must be the labels 1 and -1, got {key!r}")
        is_number = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))
        w = float(value) if is_number else float("nan")
        if not (np.isfinite(w) and WEIGHT_RANGE[0] <= w <= WEIGHT_RANGE[1]):
            raise ValueError(f"class_weight for label {label} must be a number between 1e-6 and 1e6, got {value!r}")
        weights[label] = w
    return weights.get(1, 1.0), weights.get(-1, 1.0)


def balanced_weights(n_pos: int, n_neg: int) -> tuple[float, float]:
    """scikit-learn's ``"balanced"`` weights (w_+, w_-) = (n / (2 n_+), n / (2 n_-)); (1, 1) with one class."""
    if n_pos <= 0 or n_neg <= 0:
        return 1.0, 1.0
    n = n_pos + n_neg
    return n / (2.0 * n_pos), n / (2.0 * n_neg)


def stepped_balanced_weights(n_pos: int, n_neg: int) -> tuple[float, float]:
    """The ``"balanced"`` weights of the online solvers: scikit-learn's for the ratio n_- / n_+ rounded
    to the nearest power of 2, rho = 2^round(log2(n_- / n_+)),

        w_+ = (1 + rho) / 2,    w_- = (1 + rho) / (2 rho)

    (scikit-learn's own whenever the ratio is a power of 2, within a factor sqrt(2) of them
    otherwise); (1, 1) while only one class is learned.  They change only when the rounded ratio
    does, which is when ``ClassWeights`` relearns the model with the new boxes.
    """
    if n_pos <= 0 or n_neg <= 0:
        return 1.0, 1.0
    rho = 2.0 ** round(math.log2(n_neg / n_pos))
    return (1.0 + rho) / 2.0, (1.0 + rho) / (2.0 * rho)


if TYPE_CHECKING:
    # The class weights' mixins below come before ``OnlineSolver`` in a solver's bases and use its
    # attributes: the type checker checks them as its subclasses (at run time they derive from object).
    _Solver: TypeAlias = "OnlineSolver"
else:
    _Solver = object


class RatioClassWeights(_Solver):
    """Class weights that follow every label with a ratio (mixin of the solvers without a bias: ``ramp``,
    ``dual-cd``).  ``class_weight``: None (1 and 1), a dict of fixed weights for the labels 1 and -1, or
    ``"balanced"``: after every label the positives together weigh ``balance_ratio`` r times the
    negatives and all weights sum to the number of labels n = n_+ + n_-,

        w_+ = r n / ((1 + r) n_+),    w_- = n / ((1 + r) n_-)

    (r = 1 is scikit-learn's ``"balanced"``; 1 and 1 while one class is learned).  A function of the
    learned labels alone, so a restored solver recomputes them."""

    def _init_ratio_weights(self, class_weight, balance_ratio) -> None:
        self._fixed_weights = check_class_weight(class_weight)
        # kept as a plain copy (labels 1 / -1, floats): the caller's dict may change later, and the
        # parameters go into the saved state as JSON
        self.class_weight = (
            class_weight if self._fixed_weights is None else {1: self._fixed_weights[0], -1: self._fixed_weights[1]}
        )
        balance_ratio = float(balance_ratio)
        if not (np.isfinite(balance_ratio) and 1e-6 <= balance_ratio <= 1e6):
            raise ValueError(f"balance_ratio must be a number between 1e-6 and 1e6, got {balance_ratio!r}")
        self.balance_ratio = balance_ratio

    @property
    def class_weights_(self) -> tuple[float, float]:
        """(w_+, w_-) for the labels learned now (see ``class_weight``)."""
        if self.class_weight is None:
            return 1.0, 1.0
        if self._fixed_weights is not None:
            return self._fixed_weights
        n_pos = int(np.count_nonzero(self.y > 0))
        n_neg = int(np.count_nonzero(self.y < 0))
        if n_pos == 0 or n_neg == 0:
            return 1.0, 1.0
        r, n = self.balance_ratio, n_pos + n_neg
        return r * n / ((1.0 + r) * n_pos), n / ((1.0 + r) * n_neg)


class ClassWeights(_Solver):
    """Per-class boxes 0 <= a_i <= C w_{y_i} for a solver with a bias (mixin of ``OnlineSolver``).

    The dual becomes the C-SVC dual with one upper bound per example, 0 <= a_i <= C_i, with
    C_i = C w_+ for the positives and C w_- for the negatives (scikit-learn's ``SVC(class_weight=...)``,
    LIBSVM's -wi).  Each solver's algorithm only ever compares a coefficient with its own bound, so the
    same steps solve it: in Laskov et al. (2006) the bound enters through the set E and eqs. 10 and 13
    (a margin vector, or the example being learned, reaching its bound); in Bordes et al. (2005) through
    the signed bounds A_i = min(0, C_i y_i), B_i = max(0, C_i y_i) of §3.1; in Scheinberg (2006) through
    the set Ic and the ratio test of Step 1.

    ``class_weight``: None (w = 1, the problem without weights, bit for bit), a dict of fixed
    weights for the labels 1 and -1 (the box is then fixed for the solver's life), or
    ``"balanced"``: the weights follow the learned labels (``stepped_balanced_weights``).  With
    ``"balanced"`` the weights are re-set at these moments only: after a ``learn``, ``learn_many``
    or ``unlearn`` whose labels change the rounded class ratio.  The model is then relearned with
    the new boxes, in learning order (``_relearn``), so that it is always the model of the learned
    labels under the weights of those labels: a function of the labels alone, which makes undo,
    corrections and unlearning exact for the exact solvers, and a restored state recompute its
    weights (nothing extra is stored).
    """

    def _init_class_weight(self, class_weight) -> None:
        self._fixed_weights = check_class_weight(class_weight)
        # kept as a plain copy (labels 1 / -1, floats): the caller's dict may change later, and the
        # parameters go into the saved state as JSON
        self.class_weight = (
            class_weight if self._fixed_weights is None else {1: self._fixed_weights[0], -1: self._fixed_weights[1]}
        )
        self._weights = self._fixed_weights or (1.0, 1.0)  # the weights the boxes hold now
        self._relearning = False
        self.n_reweighted_ = 0  # "balanced" weights re-set (model relearned) since this object was made or loaded

    @property
    def class_weights_(self) -> tuple[float, float]:
        """(w_+, w_-) for the labels learned now (see ``class_weight``)."""
        if self._fixed_weights is not None:
            return self._fixed_weights
        if self.class_weight is None:
            return 1.0, 1.0
        return stepped_balanced_weights(int(np.count_nonzero(self.y > 0)), int(np.count_nonzero(self.y < 0)))

    @property
    def class_bounds_(self) -> tuple[float, float]:
        """(C w_+, C w_-): the upper bounds of the positives' and the negatives' coefficients."""
        return self.C * self._weights[0], self.C * self._weights[1]

    def _box_limit(self) -> float:
        """The largest box bound any example can get (for ``check_kernel_range``)."""
        if self._fixed_weights is not None:
            return self.C * max(self._fixed_weights)
        return self.C

    def _upper_bounds(self, idx) -> np.ndarray:
        c_pos, c_neg = self.class_bounds_
        return np.where(self.y[np.asarray(idx, dtype=np.intp)] < 0, c_neg, c_pos)

    def _class_bounds_changed(self) -> None:
        """Hook: the solver's own copies of the bounds follow ``_weights`` (none by default)."""

    def _sync_class_weights(self) -> None:
        """Set the weights the boxes hold to those of the labels now (a restored state)."""
        self._weights = self.class_weights_
        self._class_bounds_changed()

    def _rebalanced(self, result: StepResult) -> StepResult:
        """After a step that changed the labels: with ``"balanced"``, re-set the weights if the labels
        moved them and relearn every learned example with the new boxes."""
        if self.class_weight != "balanced" or self._relearning:
            return result
        weights = self.class_weights_
        if weights == self._weights:
            return result
        t0 = time.perf_counter()
        evals0 = self.n_kernel_evals
        self._weights = weights
        relearned = self._relearn()
        self.n_reweighted_ += 1
        worst = relearned if not relearned.success else result
        message = (
            f"class weights re-set to w+ = {weights[0]:.6g}, w- = {weights[1]:.6g}; "
            f"{len(self.learned_order)} examples relearned"
        )
        return StepResult(
            status=worst.status,
            iterations=result.iterations + relearned.iterations,
            kernel_evals=result.kernel_evals + self.n_kernel_evals - evals0,
            seconds=result.seconds + time.perf_counter() - t0,
            kkt_gap=relearned.kkt_gap,
            message="; ".join(m for m in (worst.message, message) if m),
            extra=dict(result.extra, reweighted=True),
        )

    def _relearn(self, C: float | None = None, gamma: float | None = None) -> StepResult:
        """The model of the learned examples with the current boxes: a fresh solver with the same
        parameters, store, kernel cache and generator learns them in their learning order, and
        takes this one's place.  With ``C`` or ``gamma`` (``core.solvers.auto_hyper``), the fresh
        solver has those instead (and, for a new gamma, its own kernel and kernel cache)."""
        # (called after labels, so after data: the kernel and its cache are made)
        assert self.kernel is not None and self.cache is not None
        order = self.labelled_.copy()
        labels = self.y[order].copy()
        params = self.get_params()
        if C is not None:
            params["C"] = float(C)
        new_gamma = None if gamma is None or float(gamma) == self.kernel.gamma else float(gamma)
        if new_gamma is not None:
            params["gamma"] = new_gamma
        kernel = params.pop("kernel")
        fresh = type(self)(kernel=kernel, **params)
        fresh.store, fresh.kernel, fresh.cache = self.store, self.kernel, self.cache
        if new_gamma is not None:
            fresh.kernel = Kernel(**{**self.kernel.to_dict(), "gamma": new_gamma})
            fresh.cache = KernelCache(fresh.kernel, self.store, self.cache_bytes)
            fresh.cache.n_evals = self.cache.n_evals
        fresh._largest_kernel_diag = self._largest_kernel_diag
        fresh.rng = self.rng
        fresh.y = np.zeros(len(self.store))
        fresh._on_store_grown(len(self.store))
        fresh._weights = self._weights
        fresh.n_reweighted_ = self.n_reweighted_
        fresh._class_bounds_changed()
        fresh._relearning = True
        last, failed, iterations = StepResult(status="ok", kkt_gap=0.0), None, 0
        try:
            for i, y in zip(order.tolist(), labels.tolist(), strict=True):
                last = fresh.learn(i, y)
                iterations += last.iterations
                if not last.success and failed is None:
                    failed = last  # (reported even if later steps end "ok")
        finally:
            fresh._relearning = False
        self.__dict__.update(fresh.__dict__)
        return StepResult(
            status=failed.status if failed else "ok",
            iterations=iterations,
            kkt_gap=last.kkt_gap,
            message=failed.message if failed else "",
        )


class ConvergenceWarning(UserWarning):
    """An iteration cap was hit; the solution is usable but not tau-optimal."""


class NumericalError(ValueError):
    """A solver's arithmetic produced a non-finite value although its inputs passed every check.

    Raised instead of returning a model with NaN or infinite coefficients, bias or
    decision values (a solver never reports "ok" with such a state).  The checks at
    the edge (``check_kernel_range``) are meant to make this unreachable; the solver
    object that raised it must not be used further (restore a saved state).
    """


class IterationLimitError(RuntimeError):
    """An iteration cap was hit and the solver was asked to raise (``on_max_iter="raise"``)."""


@dataclass
class StepResult:
    """What one ``learn`` / ``unlearn`` / ``finish`` call did (cf. scipy's OptimizeResult).

    status: ``"ok"``, ``"unchanged"`` (nothing to do), ``"max_iter"`` (cap hit,
    warned), ``"inexact"`` (the solver could not bring its KKT gap within tol in
    floating point, warned) or ``"skipped"`` (the solver chose not to take the
    example in).  Every status but ``"max_iter"`` and ``"inexact"`` comes with a
    finite model, whose KKT gap, for the exact solvers, is within tol (or within
    the rounding level of the decision values where that is larger, as each
    solver documents).
    """

    status: str = "ok"
    iterations: int = 0
    kernel_evals: int = 0
    seconds: float = 0.0
    kkt_gap: float = float("nan")
    message: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def success(self) -> bool:
        return self.status in ("ok", "unchanged", "skipped")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class StepTimer:
    """Fills the timing and kernel-evaluation fields of a StepResult."""

    def __init__(self, solver: OnlineSolver):
        self.solver = solver

    def __enter__(self) -> StepTimer:
        self.t0 = time.perf_counter()
        self.k0 = self.solver.n_kernel_evals
        return self

    def __exit__(self, *exc) -> None:
        self.seconds = time.perf_counter() - self.t0
        self.kernel_evals = self.solver.n_kernel_evals - self.k0

    def result(self, **kw) -> StepResult:
        return StepResult(seconds=self.seconds, kernel_evals=self.kernel_evals, **kw)


class OnlineSolver:
    """Base class: the data store, kernel cache, labels and the shared read-outs.

    Subclasses implement ``learn``, ``unlearn``, ``coefficients`` (support
    indices, signed coefficients, bias) and the ``_state_arrays`` /
    ``_load_state_arrays`` pair; ``finish`` defaults to a no-op.
    """

    name: ClassVar[str] = "base"
    exact_unlearn: ClassVar[bool] = False
    has_bias: ClassVar[bool] = True
    # the margin of the KKT conditions: y_i f(x_i) - offset (1 for the C-SVC; 0 for the one-class SVM,
    # whose labels are all +1)
    _offset: ClassVar[float] = 1.0
    # True when the solver keeps f of every stored example current itself (``store_scores()``): the
    # active-learning loop then reads those values instead of updating its own from changed coefficients
    keeps_store_scores: ClassVar[bool] = False

    # Methods that run with one BLAS thread (``core.threads``): per-label algebra is too small for
    # threads to pay, and a BLAS result may depend on how many threads shared it, which would make
    # the solver's state depend on the machine's load or settings.  Kernel blocks are threaded by
    # the kernel layer itself.  Applied to every subclass that defines them.
    _SINGLE_THREADED: ClassVar[tuple[str, ...]] = (
        "learn",
        "learn_many",  # (the review model's batch: one Newton factorisation after another, each small)
        "unlearn",
        "revisit",
        "finish",
        "decision_function",
        "kkt_gap",
        "dual_objective",
        "add_points",
        "_load_state_arrays",
    )

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        for name in OnlineSolver._SINGLE_THREADED:
            method = cls.__dict__.get(name)
            if callable(method) and not getattr(method, "__wrapped_single_thread__", False):
                setattr(cls, name, single_threaded_blas(method))

    def __init__(
        self,
        X: np.ndarray | None = None,
        *,
        kernel: str = "rbf",
        C: float = 1.0,
        gamma: float | str = "scale",
        degree: int = 3,
        coef0: float = 1.0,
        tol: float = 1e-3,
        cache_bytes: int = 256 * 2**20,
        max_iter: int = 100_000,
        on_max_iter: str = "warn",
        random_state: int | None = None,
        dtype: str = "float64",
    ):
        self.C = check_real("C", C, low=C_RANGE[0], high=C_RANGE[1])
        self.tol = check_real("tol", tol, low=0.0, high=TOL_MAX, low_open=True, high_open=True, why=TOL_RULE)
        if on_max_iter not in ("warn", "raise"):
            raise ValueError(f"on_max_iter must be 'warn' or 'raise', got {on_max_iter!r}")
        self.max_iter = check_integer("max_iter", max_iter, low=1)
        self.cache_bytes = check_integer("cache_bytes", cache_bytes, low=0)
        if not (gamma in ("scale", "auto") if isinstance(gamma, str) else True):
            raise ValueError(f"gamma must be a positive number, 'scale' or 'auto', got {gamma!r}")
        # the kernel itself is made when the first data arrive ("scale" needs them);
        # its parameters are checked now, with a stand-in gamma for "scale" / "auto"
        Kernel(name=kernel, gamma=1.0 if isinstance(gamma, str) else gamma, degree=degree, coef0=coef0)
        if dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
        self.dtype = dtype
        self.on_max_iter = on_max_iter
        self.random_state = random_state
        self.rng = np.random.default_rng(random_state)
        # (gamma stays "scale" or "auto" until the first data resolve it)
        self._kernel_spec: dict[str, Any] = dict(
            name=kernel, gamma=gamma if isinstance(gamma, str) else float(gamma), degree=int(degree), coef0=float(coef0)
        )
        self.store = DataStore(dtype=dtype)
        self._largest_kernel_diag = 0.0  # the largest K(x, x) in the store (see check_kernel_range)
        self.kernel: Kernel | None = None
        self.cache: KernelCache | None = None
        self.y = np.zeros(0)  # +1/-1 for learned examples, 0 otherwise
        self.learned_order: list[int] = []  # store indices in the order they were learned
        if X is not None:
            self.add_points(X)

    # -- data store -------------------------------------------------------
    def add_points(self, X) -> np.ndarray:
        """Append examples to the store (unlabelled); return their indices.

        X: a dense array or a ``scipy.sparse`` matrix (kept sparse, see
        :mod:`core.kernels`), stored in the solver's ``dtype``.  The first
        batch of an empty store is wrapped without a copy when it is read-only
        (the active-learning loop's pool); the caller must not change it.
        Raises ``ValueError`` (and adds nothing) for a value that is not finite,
        a negative feature under the tanimoto kernel, or an example whose kernel
        values leave the range the solvers compute in (see ``check_kernel_range``).
        """
        wrap = len(self.store) == 0 and not _writeable(X)
        X = self.store.prepare(X)
        kernel = self.kernel
        if kernel is None:
            spec = dict(self._kernel_spec)
            spec["gamma"] = resolve_gamma(spec["gamma"], X)
            kernel = Kernel(**spec)
        if X.shape[0] and X.shape[1]:
            largest = check_kernel_range(kernel, X, self._box_limit(), len(self.store), self._largest_kernel_diag)
        else:
            largest = self._largest_kernel_diag
        if self.kernel is None:
            self.kernel = kernel
            self.cache = KernelCache(self.kernel, self.store, self.cache_bytes)
        idx = self.store.append(X, wrap=wrap)
        self._largest_kernel_diag = largest
        self.y = np.concatenate([self.y, np.zeros(len(idx))])
        self._on_store_grown(len(idx))
        return idx

    def _on_store_grown(self, n_new: int) -> None:
        """Hook for subclasses that keep per-example arrays."""

    @property
    def n_points(self) -> int:
        return len(self.store)

    def _check_learnable(self, i: int, y: float) -> tuple[int, float]:
        i = int(i)
        if not 0 <= i < len(self.store):
            raise IndexError(f"example {i} is not in the store (size {len(self.store)})")
        if y not in (-1, 1, -1.0, 1.0):
            raise ValueError(f"label must be -1 or +1, got {y!r}")
        if self.y[i] != 0:
            raise ValueError(f"example {i} has already been learned")
        return i, float(y)

    @staticmethod
    def _check_batch(idx, ys) -> tuple[np.ndarray, np.ndarray]:
        """``learn_many``'s arguments as arrays: as many labels as indices, no index twice."""
        idx = np.asarray(idx, dtype=np.intp).reshape(-1)
        ys = np.asarray(ys, dtype=np.float64).reshape(-1)
        if len(idx) != len(ys):
            raise ValueError("idx and ys must have the same length")
        if len(np.unique(idx)) != len(idx):
            raise ValueError("an example appears twice in idx")
        return idx, ys

    def _check_unlearnable(self, i: int) -> int:
        i = int(i)
        if not 0 <= i < len(self.store) or self.y[i] == 0:
            raise ValueError(f"example {i} has not been learned")
        return i

    def _iteration_cap(self, what: str, iterations: int) -> str:
        """Called when a loop reaches ``max_iter``: raise or warn, never stop silently."""
        msg = f"{self.name}: {what} stopped at the iteration cap ({iterations}); the solution may not be tau-optimal"
        if self.on_max_iter == "raise":
            raise IterationLimitError(msg)
        warnings.warn(msg, ConvergenceWarning, stacklevel=3)
        return msg

    def _not_tau_optimal(self, what: str) -> str:
        """Called when a solver cannot bring its KKT gap within tol in floating point (status
        ``"inexact"``): warn, never stop silently.  (Not raised with ``on_max_iter="raise"``:
        no iteration cap was hit; the model is finite and usable.)"""
        msg = f"{self.name}: {what}; the solution is not tau-optimal"
        warnings.warn(msg, ConvergenceWarning, stacklevel=3)
        return msg

    # -- the contract -----------------------------------------------------
    def learn(self, i: int, y: float) -> StepResult:  # pragma: no cover - abstract
        raise NotImplementedError

    def unlearn(self, i: int) -> StepResult:  # pragma: no cover - abstract
        raise NotImplementedError

    def finish(self) -> StepResult:
        return StepResult(status="unchanged", message="nothing to finish")

    def revisit(self, i: int) -> StepResult:
        """Present an already-learned example again (a later epoch).

        Exact solvers are already optimal on what they learned, so the default
        does nothing; LASVM runs PROCESS on it again.
        """
        self._check_unlearnable(i)
        return StepResult(status="unchanged", message="solution already exact")

    def coefficients(self) -> tuple[np.ndarray, np.ndarray, float]:  # pragma: no cover
        """(support indices, signed coefficients a_i y_i, bias b)."""
        raise NotImplementedError

    @property
    def support_(self) -> np.ndarray:
        return self.coefficients()[0]

    @property
    def dual_coef_(self) -> np.ndarray:
        return self.coefficients()[1]

    @property
    def intercept_(self) -> float:
        return self.coefficients()[2]

    @property
    def n_support_(self) -> int:
        return len(self.support_)

    @property
    def n_bound_(self) -> int:
        """Support vectors at their upper bound (C, or C times the class weight where the solver has one)."""
        sv, coef, _ = self.coefficients()
        return self.count_at_bound(sv, coef)

    def count_at_bound(self, sv, coef, rel: float = 1e-12) -> int:
        """How many of the coefficients ``coef`` of the examples ``sv`` (as ``coefficients()`` gives
        them) are at their upper bound, to a relative ``rel``."""
        return int(np.sum(np.abs(coef) >= self._upper_bounds(sv) * (1 - rel)))

    def _upper_bounds(self, idx) -> np.ndarray:
        """The box bound of the examples ``idx`` (the same C for all; see ``ClassWeights``)."""
        return np.full(len(idx), self.C)

    def _box_limit(self) -> float:
        """The largest box bound any example can get (for ``check_kernel_range``)."""
        return self.C

    @property
    def n_kernel_evals(self) -> int:
        return 0 if self.cache is None else self.cache.n_evals

    @property
    def labelled_(self) -> np.ndarray:
        return np.asarray(self.learned_order, dtype=np.intp)

    def decision_function(self, idx=None, X=None) -> np.ndarray:
        """f for stored indices ``idx`` (default: all), or for new points ``X`` (dense or sparse).

        f = sum_s coef_s K(x, x_s) + b over the support vectors in
        ``coefficients()`` order, summed in the kernel layer's fixed order
        (``KernelCache.decision``): the same bits for a point however it is
        reached (a stored index, the same point given as X, in any batch).
        """
        sv, coef, b = self.coefficients()
        if X is not None:
            n = X.shape[0] if sp.issparse(X) else len(np.atleast_2d(np.asarray(X)))
            if len(sv) == 0 or self.cache is None:
                return np.full(n, b)
            return self.cache.decision_against(X, sv, coef, b)
        idx = np.arange(len(self.store)) if idx is None else np.asarray(idx, dtype=np.intp).reshape(-1)
        if len(sv) == 0 or len(idx) == 0:
            return np.full(len(idx), b)
        assert self.cache is not None  # (support vectors: data came, and the kernel cache with them)
        return self.cache.decision(idx, sv, coef, b)

    # -- diagnostics (not counted as kernel evaluations) -----------------
    def _uncounted_block(self, rows, cols) -> np.ndarray:
        cache = self.cache
        assert cache is not None  # (rows of the store: data came, and the kernel cache with them)
        n0 = cache.n_evals
        try:
            return cache.block(rows, cols)
        finally:
            cache.n_evals = n0

    def dual_objective(self) -> float:
        """W(a) = sum a_i - 1/2 a^T Q a at the current coefficients."""
        sv, coef, _ = self.coefficients()
        if len(sv) == 0:
            return 0.0
        K = self._uncounted_block(sv, sv)
        return float(np.sum(np.abs(coef)) - 0.5 * coef @ K @ coef)

    def kkt_gap(self) -> float:
        """Largest violating pair over the learned examples, or the largest KKT violation with the
        model's bias where that is larger (0 when nothing is learned; see the module docstring)."""
        L = self.labelled_
        if len(L) == 0:
            return 0.0
        sv, coef, b = self.coefficients()
        y = self.y[L]
        beta = np.zeros(len(self.store))
        beta[sv] = coef
        beta = beta[L]
        g = y.copy()
        if len(sv):
            g -= self._uncounted_block(L, sv) @ coef
        up, down = movable(beta, y, self._upper_bounds(L))
        lo, hi = bias_interval(g, up, down)
        pair = lo - hi if np.isfinite(lo) and np.isfinite(hi) else 0.0
        # (the margin y_i f(x_i) - 1 is y_i (b - g_i); the one-class SVM's f(x_i) - 0, with every
        # y_i = +1, is (b + 1) - g_i)
        with_bias = bias_violation(g, up, down, b + 1.0 - self._offset) if self.has_bias else 0.0
        return float(max(0.0, pair, with_bias))

    # -- state ------------------------------------------------------------
    def _state_arrays(self) -> dict[str, np.ndarray]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _load_state_arrays(self, arrays: dict[str, np.ndarray], meta: dict) -> None:  # pragma: no cover
        raise NotImplementedError

    def get_params(self) -> dict[str, Any]:
        return dict(
            kernel=self._kernel_spec["name"],
            C=self.C,
            gamma=self._kernel_spec["gamma"],
            degree=self._kernel_spec["degree"],
            coef0=self._kernel_spec["coef0"],
            tol=self.tol,
            cache_bytes=self.cache_bytes,
            max_iter=self.max_iter,
            on_max_iter=self.on_max_iter,
            random_state=self.random_state,
            dtype=self.dtype,
        )

    def to_state(self, include_data: bool = True) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Plain arrays + a JSON-able dict; ``include_data=False`` leaves out the store's X."""
        arrays = {f"s_{k}": np.asarray(v) for k, v in self._state_arrays().items()}
        arrays["y"] = self.y.copy()
        arrays["learned_order"] = self.labelled_.copy()
        if include_data:
            if self.store.is_sparse:
                Xs = self.store.X
                arrays.update(
                    X_data=np.array(Xs.data),
                    X_indices=np.array(Xs.indices),
                    X_indptr=np.array(Xs.indptr),
                    X_shape=np.array(Xs.shape, dtype=np.int64),
                )
            else:
                arrays["X"] = np.array(self.store.X)
        meta = {
            "format": STATE_FORMAT,
            "solver": self.name,
            "params": self.get_params(),
            "kernel": None if self.kernel is None else self.kernel.to_dict(),
            "n_points": len(self.store),
            "kernel_evals": self.n_kernel_evals,
            "rng": self.rng.bit_generator.state,
        }
        json.dumps(meta)  # fail early if anything is not JSON-able
        return arrays, meta

    @classmethod
    def from_state(
        cls, arrays: dict[str, np.ndarray], meta: dict[str, Any], X: np.ndarray | None = None
    ) -> OnlineSolver:
        """Rebuild a solver; pass ``X`` when the state was saved without data."""
        if meta.get("solver") != cls.name:
            raise ValueError(f"state is for solver {meta.get('solver')!r}, not {cls.name!r}")
        params = dict(meta["params"])
        params["gamma"] = meta["kernel"]["gamma"] if meta.get("kernel") else params["gamma"]
        kernel = params.pop("kernel")
        obj = cls(kernel=kernel, **params)
        if "X_data" in arrays:
            data = sp.csr_matrix(
                (arrays["X_data"], arrays["X_indices"], arrays["X_indptr"]),
                shape=tuple(int(v) for v in arrays["X_shape"]),
            )
        else:
            data = arrays["X"] if "X" in arrays else X
        if data is None and meta["n_points"] > 0:
            raise ValueError("this state was saved without its data: pass X")
        n_data = None if data is None else data.shape[0] if sp.issparse(data) else len(data)
        if n_data:
            if n_data != meta["n_points"]:
                raise ValueError(f"state has {meta['n_points']} points, X has {n_data}")
            obj.add_points(data)
        obj.load_state(arrays, meta)
        return obj

    def load_state(self, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
        """Put a state saved by ``to_state`` into this solver, made with the state's parameters, holding its
        points and having learned nothing (``from_state`` does the rest; ``core.multiclass`` restores its
        machines, which share one store and kernel cache, this way)."""
        if len(self.y) != int(meta["n_points"]) or len(np.asarray(arrays["y"])) != len(self.y):
            raise ValueError(f"state has {meta['n_points']} points, the solver holds {len(self.y)}")
        self.y = np.array(arrays["y"], dtype=np.float64)
        self.learned_order = [int(i) for i in arrays["learned_order"]]
        self.rng.bit_generator.state = meta["rng"]
        if isinstance(self, ClassWeights):
            self._sync_class_weights()  # a function of the labels (see ClassWeights)
        self._load_state_arrays({k[2:]: v for k, v in arrays.items() if k.startswith("s_")}, meta)
        if self.cache is not None:
            self.cache.n_evals = int(meta.get("kernel_evals", 0))

    def save(self, file, include_data: bool = True) -> None:
        """Write the state with ``numpy.savez`` (meta as a JSON string; no pickle)."""
        arrays, meta = self.to_state(include_data)
        # (numpy's stub: the arrays given by keyword could name its allow_pickle, a bool)
        np.savez(file, __meta__=np.array(json.dumps(meta)), **arrays)  # type: ignore[arg-type]

    @staticmethod
    def load(file, X: np.ndarray | None = None) -> OnlineSolver:
        from core.solvers import solver_class

        with np.load(file, allow_pickle=False) as z:
            meta = json.loads(str(z["__meta__"]))
            arrays = {k: z[k] for k in z.files if k != "__meta__"}
        return solver_class(meta["solver"]).from_state(arrays, meta, X)

    def state_bytes(self, include_data: bool = True) -> bytes:
        buf = io.BytesIO()
        self.save(buf, include_data)
        return buf.getvalue()


for _name in OnlineSolver._SINGLE_THREADED:
    if _name in OnlineSolver.__dict__:
        setattr(OnlineSolver, _name, single_threaded_blas(OnlineSolver.__dict__[_name]))


def _writeable(X) -> bool:
    """Whether the caller can change X through the object it gave (then the store copies it)."""
    if sp.issparse(X):
        return any(getattr(X, a).flags.writeable for a in ("data", "indices", "indptr") if hasattr(X, a))
    return not isinstance(X, np.ndarray) or bool(X.flags.writeable)
