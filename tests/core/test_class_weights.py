"""Per-class boxes 0 <= a_i <= C w_{y_i} (``class_weight``) in the incremental, active-set and LASVM solvers.

Checked against independent references: a dense QP of the dual with one upper bound per example
(cvxopt, tests/reference.py) and scikit-learn's ``SVC(class_weight=...)``; the KKT conditions with
per-example boxes written out here from the coefficients; unlearning == training without, with fixed and
with ``"balanced"`` weights (whose re-set relearns the model); a restored state continuing bit for bit; the
compiled incremental drive against its NumPy version; the estimator and the loop.  The ramp solver's own
class weights are tested in test_ramp.py.
"""

from __future__ import annotations

import io
import math

import numpy as np
import pytest
from sklearn.svm import SVC

from core.estimator import OnlineSVC
from core.loop import ActiveLearningLoop
from core.solvers import make_solver
from core.solvers.base import balanced_weights, stepped_balanced_weights
from core.solvers.incremental import IncrementalOneClassSVM
from tests.reference import dense_svm_dual

SOLVERS = ["incremental", "active-set", "lasvm"]
EXACT = ["incremental", "active-set"]
WEIGHTS = [{1: 5.0, -1: 0.5}, {-1: 3.0}, {"+1": 0.25, "-1": 2.0}]


def imbalanced(n, seed, share=0.15):
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < share, 1.0, -1.0)
    X = rng.normal(size=(n, 3)) + 1.0 * y[:, None] * np.array([1.0, 0.5, 0.0])
    return X, y


def plain(weights) -> tuple[float, float]:
    """(w_+, w_-) of a class_weight dict written with any of the accepted keys."""
    w_pos = next((v for k, v in weights.items() if str(k) in ("1", "+1")), 1.0)
    w_neg = next((v for k, v in weights.items() if str(k) == "-1"), 1.0)
    return float(w_pos), float(w_neg)


def learned(s, y, order=None):
    for i in range(len(y)) if order is None else order:
        r = s.learn(int(i), float(y[i]))
        assert r.success, r.message
    return s


def kkt_violation(s, X, y):
    """The largest violation of the KKT conditions with per-example boxes, from the coefficients alone:
    a_i = 0 needs y_i f_i >= 1, a_i = C_i needs y_i f_i <= 1, 0 < a_i < C_i needs y_i f_i = 1."""
    L = s.labelled_
    sv, coef, b = s.coefficients()
    a = np.zeros(len(X))
    a[sv] = np.abs(coef)
    w_pos, w_neg = s.class_weights_
    upper = s.C * np.where(y[L] > 0, w_pos, w_neg)
    margin = y[L] * (s.kernel(X[L], X[sv]) @ coef + b) - 1.0 if len(sv) else y[L] * b - 1.0
    aL = a[L]
    at0 = aL <= 1e-12 * upper
    atC = aL >= upper * (1 - 1e-12)
    assert np.all(aL <= upper * (1 + 1e-12))
    v = np.concatenate([np.maximum(0, -margin[at0]), np.maximum(0, margin[atC]), np.abs(margin[~at0 & ~atC])])
    return float(v.max(initial=0.0))


# -- the weights ------------------------------------------------------------------------------------
def test_stepped_balanced_weights_are_scikit_learns_at_powers_of_two_and_within_sqrt2_otherwise():
    assert stepped_balanced_weights(5, 0) == stepped_balanced_weights(0, 5) == (1.0, 1.0)
    for n_pos, n_neg in [(1, 1), (3, 12), (10, 80), (40, 5)]:  # ratios 1, 4, 8, 1/8
        assert stepped_balanced_weights(n_pos, n_neg) == pytest.approx(balanced_weights(n_pos, n_neg), rel=1e-15)
        n = n_pos + n_neg
        assert balanced_weights(n_pos, n_neg) == pytest.approx((n / (2 * n_pos), n / (2 * n_neg)))
    for n_pos in range(1, 30):
        for n_neg in range(1, 200, 7):
            rho = 2.0 ** round(math.log2(n_neg / n_pos))
            w_pos, w_neg = stepped_balanced_weights(n_pos, n_neg)
            assert (w_pos, w_neg) == ((1 + rho) / 2, (1 + rho) / (2 * rho))
            assert w_pos / w_neg == rho  # the positives' weight over the negatives' is the rounded ratio
            assert 2**-0.5 <= (n_neg / n_pos) / rho <= 2**0.5


@pytest.mark.parametrize("name", SOLVERS)
@pytest.mark.parametrize("bad", ["auto", {2: 1.0}, {1: -1.0}, {1: np.nan}, {-1: "x"}, [1, 2], {True: 1.0}, {1: 1e7}])
def test_bad_class_weights_are_refused_naming_them(name, bad):
    with pytest.raises(ValueError, match="class_weight"):
        make_solver(name, np.zeros((3, 2)), class_weight=bad)


def test_the_one_class_svm_refuses_class_weights():
    with pytest.raises(ValueError, match="class_weight must be None"):
        IncrementalOneClassSVM(np.zeros((3, 2)), nu=0.5, class_weight={1: 2.0})


# -- against the dense QP and SVC -------------------------------------------------------------------
@pytest.mark.parametrize("weights", WEIGHTS, ids=["5-0.5", "neg-3", "0.25-2"])
@pytest.mark.parametrize("name", SOLVERS)
def test_fixed_weights_give_the_dense_qp_with_per_example_bounds(name, weights):
    X, y = imbalanced(90, seed=4)
    C = 0.8
    s = learned(make_solver(name, X, kernel="rbf", gamma=0.5, C=C, tol=1e-7, class_weight=weights), y)
    assert s.finish().success
    w_pos, w_neg = plain(weights)
    assert s.class_weights_ == (w_pos, w_neg) and s.class_weight == {1: w_pos, -1: w_neg}
    bounds = C * np.where(y > 0, w_pos, w_neg)
    K = s.kernel(X, X)
    ref = dense_svm_dual(K, y, bounds)
    np.testing.assert_allclose(s.decision_function(), ref.decision(K, y), atol=1e-5)
    assert s.dual_objective() == pytest.approx(ref.objective, rel=1e-7)
    assert kkt_violation(s, X, y) <= 2 * s.tol
    assert s.kkt_gap() <= s.tol
    assert s.n_bound_ == int(np.sum(ref.alpha >= bounds * (1 - 1e-6)))


@pytest.mark.parametrize("name", SOLVERS)
@pytest.mark.parametrize("weights", [{1: 4.0, -1: 0.6}, "balanced"])
def test_decision_values_equal_svc_with_the_same_class_weights(name, weights):
    X, y = imbalanced(70, seed=11, share=0.2)
    s = learned(make_solver(name, X, kernel="rbf", gamma=0.4, C=2.0, tol=1e-6, class_weight=weights), y)
    s.finish()
    w_pos, w_neg = s.class_weights_
    if weights == "balanced":  # the labels' ratio rounded to a power of 2 (stepped_balanced_weights)
        assert (w_pos, w_neg) == stepped_balanced_weights(int(np.sum(y > 0)), int(np.sum(y < 0)))
        assert (w_pos, w_neg) != (1.0, 1.0) and s.n_reweighted_ >= 1
    ref = SVC(C=2.0, kernel="rbf", gamma=0.4, tol=1e-10, class_weight={1: w_pos, -1: w_neg}).fit(X, y)
    atol = 1e-5 if name in EXACT else 5e-3  # (LASVM after finish(): to its tolerance)
    np.testing.assert_allclose(s.decision_function(), ref.decision_function(X), atol=atol)


@pytest.mark.parametrize("name", EXACT)
def test_kkt_conditions_with_per_example_boxes_hold_after_every_step(name):
    X, y = imbalanced(50, seed=2, share=0.25)
    s = make_solver(name, X, kernel="rbf", gamma=0.6, C=1.5, tol=1e-6, class_weight="balanced")
    for i in np.random.default_rng(0).permutation(len(y)):
        assert s.learn(int(i), y[i]).success
        assert kkt_violation(s, X, y) <= 2 * s.tol
    for i in s.labelled_[::4].tolist():
        assert s.unlearn(i).success
        assert kkt_violation(s, X, y) <= 2 * s.tol


# -- unlearning, resume, compiled path ---------------------------------------------------------------
@pytest.mark.parametrize("name", EXACT)
@pytest.mark.parametrize("weights", [{1: 6.0, -1: 0.4}, "balanced"])
def test_unlearning_equals_training_without_with_class_weights(name, weights):
    X, y = imbalanced(60, seed=8, share=0.2)
    kw = dict(kernel="rbf", gamma=0.5, C=1.0, tol=1e-8, class_weight=weights)
    order = np.random.default_rng(5).permutation(len(y))
    s = learned(make_solver(name, X, **kw), y, order)
    reweighted = s.n_reweighted_
    positives = [int(i) for i in order if y[i] > 0]
    removed = positives[:4] + [int(i) for i in order if y[i] < 0][:3]  # the class ratio moves
    for i in removed:
        assert s.unlearn(i).success
    if weights == "balanced":
        assert s.n_reweighted_ > reweighted  # at least one removal re-set the weights
    rest = [i for i in order if i not in removed]
    ref = learned(make_solver(name, X, **kw), y, rest)
    assert s.class_weights_ == ref.class_weights_
    np.testing.assert_allclose(s.decision_function(), ref.decision_function(), rtol=0, atol=1e-8)
    svc = SVC(
        C=1.0, kernel="rbf", gamma=0.5, tol=1e-10, class_weight=dict(zip((1, -1), s.class_weights_, strict=True))
    ).fit(X[rest], y[rest])
    np.testing.assert_allclose(s.decision_function(), svc.decision_function(X), atol=1e-5)


@pytest.mark.parametrize("name", SOLVERS)
@pytest.mark.parametrize("weights", [{1: 3.0, -1: 0.5}, "balanced"])
def test_a_restored_state_continues_bit_for_bit_with_class_weights(name, weights):
    X, y = imbalanced(80, seed=6, share=0.2)
    s = make_solver(name, X, kernel="rbf", gamma=0.5, C=1.0, class_weight=weights, random_state=0)
    learned(s, y, range(40))
    t = type(s).load(io.BytesIO(s.state_bytes()))
    assert t.class_weight == s.class_weight and t.class_weights_ == s.class_weights_
    for i in range(40, 80):
        rs, rt = s.learn(i, y[i]), t.learn(i, y[i])
        assert rs.status == rt.status
        assert rs.extra.get("reweighted", False) == rt.extra.get("reweighted", False)
    if name in EXACT:
        for i in (3, 17, 41):
            s.unlearn(i), t.unlearn(i)
    assert s.decision_function().tobytes() == t.decision_function().tobytes()
    (arrays_s, meta_s), (arrays_t, meta_t) = s.to_state(), t.to_state()
    assert sorted(arrays_s) == sorted(arrays_t)
    for key in arrays_s:  # every array of the state, bit for bit
        assert arrays_s[key].tobytes() == arrays_t[key].tobytes(), key
    assert {**meta_s, "kernel_evals": 0} == {**meta_t, "kernel_evals": 0}  # (the restored cache started empty)
    assert weights != "balanced" or s.n_reweighted_ >= 1


@pytest.mark.parametrize("weights", [None, {1: 1.0, -1: 1.0}])
@pytest.mark.parametrize("name", SOLVERS)
def test_weights_of_one_are_the_problem_without_weights_bit_for_bit(name, weights):
    X, y = imbalanced(60, seed=9, share=0.3)
    plain_solver = learned(make_solver(name, X, kernel="rbf", gamma=0.5, C=3.0), y)
    weighted = learned(make_solver(name, X, kernel="rbf", gamma=0.5, C=3.0, class_weight=weights), y)
    assert plain_solver.decision_function().tobytes() == weighted.decision_function().tobytes()


@pytest.mark.parametrize("weights", [{1: 5.0, -1: 0.3}, "balanced"])
def test_compiled_and_numpy_incremental_drives_take_the_same_steps_with_class_weights(weights, monkeypatch):
    from tests.core.test_incremental_compiled import DriveSpy, assert_same_model, traffic

    X, y = imbalanced(70, seed=13, share=0.25)
    spy = DriveSpy(monkeypatch)
    fast = make_solver("incremental", X, kernel="rbf", gamma=0.5, C=2.0, class_weight=weights)
    slow = make_solver("incremental", X, kernel="rbf", gamma=0.5, C=2.0, class_weight=weights, compiled=False)
    order = np.random.default_rng(2).permutation(len(X))
    log_fast = traffic(fast, X, y, order)
    n_compiled = spy.calls
    log_slow = traffic(slow, X, y, order)
    assert n_compiled > 0 and spy.calls == n_compiled
    assert log_fast == log_slow
    assert_same_model(fast, slow)
    assert fast.class_weights_ == slow.class_weights_ and fast.n_reweighted_ == slow.n_reweighted_


def test_compiled_and_numpy_checks_agree_with_class_weights():
    X, y = imbalanced(70, seed=12, share=0.3)
    s = learned(make_solver("incremental", X, kernel="rbf", gamma=0.5, C=1.0, class_weight={1: 4.0, -1: 0.5}), y)
    rng = np.random.default_rng(0)
    nL = s._nL
    s._pg[:nL] += 1e-6 * rng.normal(size=nL)
    values = {}
    for flag in (True, False):
        s.compiled = flag
        values[flag] = (s._max_violation(), s._gap_maintained())
    for compiled_value, numpy_value in zip(values[True], values[False], strict=True):
        assert compiled_value > 0 and compiled_value == pytest.approx(numpy_value, rel=1e-9)


# -- the estimator and the loop ---------------------------------------------------------------------
@pytest.mark.parametrize("name", SOLVERS)
@pytest.mark.parametrize("class_weight", ["balanced", {"no": 0.5, "yes": 4.0}, {"yes": 3.0}])
def test_the_estimator_takes_scikit_learns_class_weight(name, class_weight):
    X, y01 = imbalanced(80, seed=3, share=0.2)
    y = np.where(y01 > 0, "yes", "no")
    clf = OnlineSVC(solver=name, C=1.0, gamma=0.5, tol=1e-6, random_state=0, class_weight=class_weight).fit(X, y)
    ref = SVC(C=1.0, gamma=0.5, tol=1e-10, class_weight=class_weight).fit(X, y)
    atol = 1e-5 if name in EXACT else 5e-3
    np.testing.assert_allclose(clf.decision_function(X), ref.decision_function(X), atol=atol)
    if class_weight == "balanced":  # scikit-learn's n / (2 n_c) from the labels of fit, exactly
        n_pos = int(np.sum(y == "yes"))
        assert clf.solver_.class_weights_ == (80 / (2 * n_pos), 80 / (2 * (80 - n_pos)))


def test_the_estimator_refuses_unknown_classes_and_a_weight_given_twice():
    X, y = imbalanced(30, seed=1, share=0.3)
    with pytest.raises(ValueError, match="class_weight has a weight for 2, which is not one of the classes"):
        OnlineSVC(solver="incremental", class_weight={2: 1.0}).fit(X, y)
    with pytest.raises(ValueError, match="given both"):
        OnlineSVC(solver="incremental", class_weight={1: 2.0}, solver_params={"class_weight": None}).fit(X, y)
    with pytest.raises(ValueError, match="class_weight must be None, 'balanced' or a dict"):
        OnlineSVC(solver="incremental", class_weight="auto").fit(X, y)
    clf = OnlineSVC(solver="active-set", class_weight="balanced").partial_fit(X[:10], y[:10], classes=[-1, 1])
    assert clf.solver_.class_weight == "balanced"  # partial_fit: the weights follow the labels learned


@pytest.mark.parametrize("solver", EXACT)
def test_the_loop_undoes_and_corrects_exactly_with_balanced_weights(solver):
    X, y = imbalanced(150, seed=21, share=0.12)
    params = {"C": 5.0, "class_weight": "balanced"}
    loop = ActiveLearningLoop(X, strategy="near-boundary", solver=solver, seed=3, solver_params=params)
    while loop.n_labels < 40:
        q = loop.next_query()
        loop.teach(q.index, int(y[q.index]))
    assert loop.solver.n_reweighted_ >= 1
    before = loop.solver.decision_function(np.arange(150))
    q = loop.next_query()
    loop.teach(q.index, int(y[q.index]))
    loop.undo()
    np.testing.assert_allclose(loop.solver.decision_function(np.arange(150)), before, rtol=0, atol=1e-8)
    item = next(i for i, v in loop.events if v > 0)  # the first positive, corrected to a negative
    loop.change_label(item, -1)
    from_start = ActiveLearningLoop.from_events(loop.events, X, **loop.config())
    assert loop.solver.class_weights_ == from_start.solver.class_weights_
    np.testing.assert_allclose(
        loop.solver.decision_function(np.arange(150)),
        from_start.solver.decision_function(np.arange(150)),
        rtol=0,
        atol=1e-8,
    )
