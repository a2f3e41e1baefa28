"""OnlineSVC facade: scikit-learn conventions, against scikit-learn's SVC and a dense QP.

The facade's plumbing (learning order, class mapping, row indices, attributes)
is first checked with a small test-only solver that re-solves the dual with
the dense QP of ``tests/reference.py`` after every label, so that it does not
depend on any one production solver; then every production solver is run
through the facade, compared with scikit-learn's SVC, and through
scikit-learn's own ``check_estimator`` suite (one test per check and solver).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
import sklearn.exceptions
from sklearn.svm import SVC
from sklearn.utils.estimator_checks import parametrize_with_checks

import core.estimator as estimator_module
import core.solvers as solvers_pkg
from core.datasets import make_banana, make_gaussians
from core.estimator import NotFittedError, OnlineSVC
from core.kernels import Kernel
from core.solvers.base import OnlineSolver, StepResult
from tests.reference import dense_svm_dual


class DenseReferenceSolver(OnlineSolver):
    """Test double: learn/unlearn record labels; the dual is re-solved densely (cvxopt)."""

    name = "dense-reference"
    exact_unlearn = True

    def learn(self, i, y):
        i, y = self._check_learnable(i, y)
        self.y[i] = y
        self.learned_order.append(i)
        self._solution = None
        return StepResult(status="ok")

    def unlearn(self, i):
        i = self._check_unlearnable(i)
        self.y[i] = 0
        self.learned_order.remove(i)
        self._solution = None
        return StepResult(status="ok")

    def coefficients(self):
        if getattr(self, "_solution", None) is None:
            L = self.labelled_
            y = self.y[L]
            if len(L) == 0 or len(set(y)) < 2:
                self._solution = (np.zeros(0, dtype=np.intp), np.zeros(0), 0.0)
            else:
                K = self.cache.block(L, L)
                sol = dense_svm_dual(K, y, self.C)
                keep = sol.alpha > 1e-8 * self.C
                self._solution = (L[keep], (sol.alpha * y)[keep], sol.b)
        return self._solution


@pytest.fixture
def reference_solver():
    solvers_pkg.register(solvers_pkg.Solver("dense-reference", DenseReferenceSolver, exact_unlearn=True))
    yield "dense-reference"
    solvers_pkg.unregister("dense-reference")


def toy(n=80, seed=0, sep=2.0):
    return make_gaussians(n, np.random.default_rng(seed), separation=sep)


def sk_svc(X, y, C=1.0, gamma=0.5):
    return SVC(kernel="rbf", C=C, gamma=gamma, tol=1e-8).fit(X, y)


# -- conventions (no production solver needed) --------------------------------


def test_init_stores_parameters_only():
    clf = OnlineSVC(solver="no-such-solver", C=-1, epochs=0)  # validated at fit time, as in scikit-learn
    assert clf.get_params()["solver"] == "no-such-solver"
    assert clf.set_params(C=2.0, solver="lasvm") is clf and clf.C == 2.0
    with pytest.raises(ValueError, match="Invalid parameter 'c' for estimator OnlineSVC"):
        clf.set_params(c=1)
    assert repr(OnlineSVC(C=3.0)) == "OnlineSVC(C=3.0)"
    assert set(OnlineSVC().get_params()) >= {"solver", "kernel", "C", "gamma", "tol", "epochs", "random_state"}


def test_unfitted_and_bad_input_errors(reference_solver):
    X, y = toy(20)
    clf = OnlineSVC(solver=reference_solver)
    assert NotFittedError is sklearn.exceptions.NotFittedError
    with pytest.raises(NotFittedError, match="call 'fit' or 'partial_fit' first"):
        clf.predict(X)
    with pytest.raises(NotFittedError):
        clf.unlearn(0)
    assert not hasattr(clf, "support_")  # scikit-learn's hasattr convention
    with pytest.raises(ValueError, match="unknown solver 'nope'"):
        OnlineSVC(solver="nope").fit(X, y)
    with pytest.raises(ValueError, match="only one class"):
        clf.fit(X, np.ones(len(X)))
    with pytest.raises(ValueError, match=r"Only binary classification is supported.*y has 3 classes \(0, 1, 2\)"):
        clf.fit(X, np.arange(len(X)) % 3)
    with pytest.raises(ValueError, match="Unknown label type: continuous"):
        clf.fit(X, np.linspace(0, 1, len(X)))
    Xbad = X.copy()
    Xbad[4, 1] = np.nan
    with pytest.raises(ValueError, match=r"Input X contains NaN.*first at row 4, column 1: nan"):
        clf.fit(Xbad, y)
    Xbad[4, 1] = -np.inf
    with pytest.raises(ValueError, match=r"Input X contains infinity.*first at row 4, column 1: -inf"):
        clf.fit(Xbad, y)
    yinf = np.where(y > 0, 1.0, 0.0)
    yinf[7] = np.inf
    with pytest.raises(ValueError, match=r"Input y contains infinity.*first at position 7: inf"):
        clf.fit(X, yinf)
    with pytest.raises(ValueError, match=r"inconsistent numbers of samples: \[20, 19\]"):
        clf.fit(X, y[:-1])
    with pytest.raises(ValueError, match="Expected 2D array, got 1D array instead"):
        clf.fit(X[:, 0], y)
    with pytest.raises(ValueError, match=r"0 sample\(s\)"):
        clf.fit(X[:0], y[:0])
    with pytest.raises(ValueError, match="Complex data not supported"):
        clf.fit(X + 1j, y)
    Xbig = X.copy()
    Xbig[13] = 1e200  # finite, but its squared norm is not: the solver's store names the row
    with pytest.raises(ValueError, match=r"example 13: its squared norm"):
        OnlineSVC(solver=reference_solver, gamma=0.5, random_state=0).fit(Xbig, y)
    with pytest.raises(ValueError, match="epochs"):
        OnlineSVC(solver=reference_solver, epochs=0).fit(X, y)
    with pytest.raises(ValueError, match="solver_params must be a dict"):
        OnlineSVC(solver=reference_solver, solver_params=[1]).fit(X, y)
    clf.fit(X, y)
    with pytest.raises(ValueError, match="X has 3 features, but OnlineSVC is expecting 2 features"):
        clf.predict(np.zeros((1, 3)))
    with pytest.raises(ValueError, match=r"Input X contains NaN.*first at row 1, column 0"):
        clf.decision_function(np.array([[0.0, 0.0], [np.nan, 1.0]]))
    with pytest.raises(ValueError, match=r"Found input variables with inconsistent numbers of samples"):
        clf.score(X, y[:-1])


def test_facade_matches_dense_qp_and_sklearn(reference_solver):
    X, y = toy(60, seed=1)
    labels = np.where(y > 0, "spam", "ham")
    clf = OnlineSVC(solver=reference_solver, C=1.0, gamma=0.5, random_state=3).fit(X, labels)
    np.testing.assert_array_equal(clf.classes_, ["ham", "spam"])
    sk = sk_svc(X, labels)
    Z = np.random.default_rng(9).normal(size=(50, 2))
    np.testing.assert_allclose(clf.decision_function(Z), sk.decision_function(Z), atol=1e-5)
    np.testing.assert_array_equal(clf.predict(Z), sk.predict(Z))
    # row indices into X, grouped by class and in the same order as scikit-learn's
    np.testing.assert_array_equal(clf.support_, sk.support_)
    assert clf.dual_coef_.shape == (1, len(clf.support_)) and clf.intercept_.shape == (1,)
    np.testing.assert_array_equal(clf.n_support_, sk.n_support_)
    assert clf.dual_objective_ > 0
    assert clf.score(X, labels) == pytest.approx(sk.score(X, labels))


def test_learning_order_is_seeded_and_the_store_holds_rows_in_order(reference_solver):
    X, y = toy(30, seed=2)
    a = OnlineSVC(solver=reference_solver, random_state=5).fit(X, y)
    b = OnlineSVC(solver=reference_solver, random_state=5).fit(X, y)
    c = OnlineSVC(solver=reference_solver, random_state=6).fit(X, y)
    np.testing.assert_array_equal(a.learning_order_, b.learning_order_)
    assert not np.array_equal(a.learning_order_, c.learning_order_)
    assert sorted(a.learning_order_) == list(range(30))
    assert not np.array_equal(a.learning_order_, np.arange(30))  # learned in a shuffled order ...
    np.testing.assert_array_equal(a.solver_.store.X, X)  # ... over a store that holds X's rows in order
    np.testing.assert_array_equal(a.solver_.learned_order, a.learning_order_)
    assert len(a.step_results_) == 31  # 30 learns + finish


def test_partial_fit_and_unlearn(reference_solver):
    X, y = toy(40, seed=4)
    clf = OnlineSVC(solver=reference_solver, gamma=0.5)
    with pytest.raises(ValueError, match="pass classes"):
        clf.partial_fit(X[y > 0][:3], y[y > 0][:3])
    assert clf.partial_fit(X[:1], y[:1], classes=[-1, 1]) is clf
    clf.partial_fit(X[1:25], y[1:25]).partial_fit(X[25:], y[25:])
    np.testing.assert_array_equal(clf.learning_order_, np.arange(40))
    sk = sk_svc(X, y)
    np.testing.assert_allclose(clf.decision_function(X), sk.decision_function(X), atol=1e-5)
    with pytest.raises(ValueError, match="not one of the classes"):
        clf.partial_fit(X[:1], [7])
    with pytest.raises(ValueError, match="differ from the fitted"):
        clf.partial_fit(X[:1], y[:1], classes=[0, 1])
    # unlearning row k equals training without row k
    k = int(clf.support_[0])
    clf.unlearn(k)
    keep = np.arange(40) != k
    np.testing.assert_allclose(clf.decision_function(X), sk_svc(X[keep], y[keep]).decision_function(X), atol=1e-5)
    with pytest.raises(IndexError):
        clf.unlearn(40)


# -- every production solver through the facade ---------------------------------

SOLVERS = {
    "incremental": "core.solvers.incremental",
    "lasvm": "core.solvers.lasvm",
    "ramp": "core.solvers.ramp",
    "active-set": "core.solvers.active_set",
}
EXACT = {"incremental", "active-set"}


def need(name):
    if importlib.util.find_spec(SOLVERS[name]) is None:
        pytest.skip(f"solver module {SOLVERS[name]} has not landed yet")
    return name


@pytest.fixture(params=list(SOLVERS))
def solver_name(request):
    return need(request.param)


def banana_split(seed=0):
    X, y = make_banana(400, np.random.default_rng(seed), noise=1.0)
    return X[:250], y[:250], X[250:], y[250:]


def test_solver_accuracy_close_to_sklearn(solver_name):
    Xtr, ytr, Xte, yte = banana_split()
    sk = SVC(kernel="rbf", C=1.0, gamma=0.1, tol=1e-3).fit(Xtr, ytr)
    clf = OnlineSVC(solver=solver_name, C=1.0, gamma=0.1, random_state=0).fit(Xtr, ytr)
    acc, sk_acc = clf.score(Xte, yte), sk.score(Xte, yte)
    if solver_name == "ramp":  # different (non-convex) loss, no bias: a looser check
        assert acc >= sk_acc - 0.05
    else:
        assert abs(acc - sk_acc) <= 0.02
        assert np.mean(clf.predict(Xte) == sk.predict(Xte)) >= 0.97
    assert acc > 0.8


def test_solver_attributes_are_consistent(solver_name):
    Xtr, ytr, _, _ = banana_split(1)
    clf = OnlineSVC(solver=solver_name, C=1.0, gamma=0.1, random_state=1).fit(Xtr, np.where(ytr > 0, 1, 0))
    np.testing.assert_array_equal(clf.classes_, [0, 1])
    sv, coef, b = clf.support_, clf.dual_coef_, clf.intercept_
    assert coef.shape == (1, len(sv)) and b.shape == (1,)
    assert sv.min() >= 0 and sv.max() < len(Xtr)
    assert np.all(np.abs(coef) <= 1.0 + 1e-9) and np.all(coef != 0)
    assert clf.n_support_.sum() == len(sv) and clf.n_support_.shape == (2,)
    # grouped by class as in SVC: classes_[0]'s support vectors first, each group ascending
    n0 = clf.n_support_[0]
    assert np.all(coef[0, :n0] < 0) and np.all(coef[0, n0:] > 0)
    assert np.all(np.diff(sv[:n0]) > 0) and np.all(np.diff(sv[n0:]) > 0)
    np.testing.assert_array_equal(np.where(ytr[sv] > 0, 1, 0), np.where(coef[0] > 0, 1, 0))
    if solver_name != "ramp":
        assert abs(coef.sum()) < 1e-8  # sum a_i y_i = 0 with a bias
    # decision values recomputed independently from the fitted attributes
    Z = np.random.default_rng(0).normal(size=(20, 2)) * 3
    K = Kernel("rbf", gamma=0.1)(Z, clf.support_vectors_)
    np.testing.assert_allclose(clf.decision_function(Z), K @ coef[0] + b[0], atol=1e-10)
    np.testing.assert_array_equal(clf.support_vectors_, Xtr[sv])
    assert clf.n_kernel_evals_ > 0 and np.isfinite(clf.dual_objective_)
    assert isinstance(clf.solver_, OnlineSolver)


def test_solver_seeded_fit_is_reproducible(solver_name):
    Xtr, ytr, Xte, _ = banana_split(2)
    a = OnlineSVC(solver=solver_name, gamma=0.1, random_state=4).fit(Xtr, ytr)
    b = OnlineSVC(solver=solver_name, gamma=0.1, random_state=4).fit(Xtr, ytr)
    np.testing.assert_array_equal(a.decision_function(Xte), b.decision_function(Xte))


def test_solver_partial_fit_then_predict(solver_name):
    Xtr, ytr, Xte, yte = banana_split(3)
    clf = OnlineSVC(solver=solver_name, gamma=0.1, random_state=0)
    for start in range(0, len(Xtr), 50):
        clf.partial_fit(Xtr[start : start + 50], ytr[start : start + 50], classes=[-1, 1])
    clf.finish()
    sk = SVC(kernel="rbf", C=1.0, gamma=0.1).fit(Xtr, ytr)
    assert clf.score(Xte, yte) >= sk.score(Xte, yte) - 0.05
    assert len(clf.learning_order_) == len(Xtr)


@pytest.mark.parametrize("name", sorted(EXACT))
def test_exact_solver_matches_sklearn_and_unlearns_exactly(name):
    need(name)
    X, y = toy(60, seed=5)
    clf = OnlineSVC(solver=name, C=1.0, gamma=0.5, tol=1e-8, random_state=0).fit(X, y)
    Z = np.random.default_rng(1).normal(size=(30, 2))
    np.testing.assert_allclose(clf.decision_function(Z), sk_svc(X, y).decision_function(Z), atol=1e-5)
    k = int(clf.support_[len(clf.support_) // 2])
    clf.unlearn(k)
    keep = np.ones(len(X), dtype=bool)
    keep[k] = False
    np.testing.assert_allclose(clf.decision_function(Z), sk_svc(X[keep], y[keep]).decision_function(Z), atol=1e-5)


def test_lasvm_epochs_revisit_each_example():
    need("lasvm")
    Xtr, ytr, Xte, yte = banana_split(4)
    one = OnlineSVC(solver="lasvm", gamma=0.1, random_state=0).fit(Xtr, ytr)
    two = OnlineSVC(solver="lasvm", gamma=0.1, epochs=2, random_state=0).fit(Xtr, ytr)
    assert len(one.step_results_) == len(Xtr) + 1
    assert len(two.step_results_) == 2 * len(Xtr) + 1
    sk = SVC(kernel="rbf", C=1.0, gamma=0.1).fit(Xtr, ytr)
    assert abs(two.score(Xte, yte) - sk.score(Xte, yte)) <= 0.02
    assert two.kkt_gap_ <= 1e-3 + 1e-9


def test_solver_unlearn_removes_the_example(solver_name):
    Xtr, ytr, Xte, yte = banana_split(5)
    clf = OnlineSVC(solver=solver_name, gamma=0.1, random_state=0).fit(Xtr, ytr)
    before = clf.score(Xte, yte)
    k = int(clf.support_[0])
    clf.unlearn(k)
    assert k not in clf.support_
    assert np.isfinite(clf.decision_function(Xte)).all()
    assert clf.score(Xte, yte) >= before - 0.05  # one example out of 250 barely matters
    with pytest.raises(ValueError, match="not been learned"):
        clf.unlearn(k)


# -- support_ and unlearn speak of rows of the training data (as SVC's support_) ---------


def dual_objective_from_rows(X, support, dual_coef, gamma):
    """W(a) = sum a_i - 1/2 a^T Q a recomputed from the user's X and the fitted attributes."""
    coef = dual_coef[0]
    return np.abs(coef).sum() - 0.5 * coef @ Kernel("rbf", gamma=gamma)(X[support], X[support]) @ coef


def test_support_rows_index_the_training_data(solver_name):
    Xtr, ytr, _, _ = banana_split(6)
    clf = OnlineSVC(solver=solver_name, C=1.0, gamma=0.1, random_state=2).fit(Xtr, ytr)
    assert not np.array_equal(clf.learning_order_, np.arange(len(Xtr)))  # the rows were learned shuffled
    sv, coef, b = clf.support_, clf.dual_coef_, clf.intercept_
    assert clf.dual_objective_ > 1.0
    assert dual_objective_from_rows(Xtr, sv, coef, 0.1) == pytest.approx(clf.dual_objective_, rel=1e-10)
    Z = np.random.default_rng(3).normal(size=(25, 2)) * 3
    np.testing.assert_allclose(
        clf.decision_function(Z), Kernel("rbf", gamma=0.1)(Z, Xtr[sv]) @ coef[0] + b[0], atol=1e-10
    )
    np.testing.assert_array_equal(np.sign(coef[0]), np.where(ytr[sv] > 0, 1.0, -1.0))  # each row's own label


def svc_without(X, y, row):
    """SVC trained without ``row``, its support_ mapped back to row indices of X."""
    keep = np.arange(len(X)) != row
    sk = sk_svc(X[keep], y[keep])
    return sk, np.flatnonzero(keep)[sk.support_]


@pytest.mark.parametrize("name", sorted(EXACT))
def test_exact_solver_support_is_svc_support(name):
    need(name)
    X, y = toy(60, seed=5)
    labels = np.where(y > 0, 7, 3)  # any two labels
    clf = OnlineSVC(solver=name, C=1.0, gamma=0.5, tol=1e-8, random_state=0).fit(X, labels)
    sk = sk_svc(X, labels)
    np.testing.assert_array_equal(clf.classes_, [3, 7])
    np.testing.assert_array_equal(clf.support_, sk.support_)  # the solution is unique here: same rows, same order
    np.testing.assert_array_equal(clf.n_support_, sk.n_support_)
    np.testing.assert_allclose(clf.dual_coef_, sk.dual_coef_, atol=1e-6)
    np.testing.assert_allclose(clf.intercept_, sk.intercept_, atol=1e-6)
    assert dual_objective_from_rows(X, sk.support_, sk.dual_coef_, 0.5) == pytest.approx(clf.dual_objective_, rel=1e-8)


@pytest.mark.parametrize("name", sorted(EXACT))
def test_exact_solver_unlearn_takes_a_row(name):
    need(name)
    X, y = toy(60, seed=5)
    clf = OnlineSVC(solver=name, C=1.0, gamma=0.5, tol=1e-8, random_state=0).fit(X, y)
    # a support vector (by SVC) whose row differs from its place in the learning order
    row = next(int(r) for r in sk_svc(X, y).support_ if clf.learning_order_[r] != r)
    clf.unlearn(row)
    sk_rest, rest_support = svc_without(X, y, row)
    Z = np.random.default_rng(1).normal(size=(30, 2))
    np.testing.assert_allclose(clf.decision_function(Z), sk_rest.decision_function(Z), atol=1e-5)
    np.testing.assert_array_equal(clf.support_, rest_support)
    with pytest.raises(ValueError, match=f"example {row} has not been learned"):
        clf.unlearn(row)
    with pytest.raises(IndexError, match="row 60 is out of range: the model was trained on 60 rows"):
        clf.unlearn(60)
    with pytest.raises(IndexError, match="row -1 is out of range"):
        clf.unlearn(-1)


@pytest.mark.parametrize("name", sorted(EXACT))
def test_partial_fit_counts_rows_across_calls(name):
    need(name)
    X, y = toy(90, seed=7)
    clf = OnlineSVC(solver=name, C=1.0, gamma=0.5, tol=1e-8, random_state=0)
    for start in (0, 30, 60):
        clf.partial_fit(X[start : start + 30], y[start : start + 30], classes=[-1, 1])
    np.testing.assert_array_equal(clf.learning_order_, np.arange(90))
    sk = sk_svc(X, y)
    np.testing.assert_array_equal(clf.support_, sk.support_)
    assert clf.support_.max() >= 60  # the third call's rows are counted on from 60
    assert dual_objective_from_rows(X, clf.support_, clf.dual_coef_, 0.5) == pytest.approx(
        clf.dual_objective_, rel=1e-10
    )
    row = int(clf.support_[clf.support_ >= 60][0])
    clf.unlearn(row)
    sk_rest, rest_support = svc_without(X, y, row)
    np.testing.assert_array_equal(clf.support_, rest_support)
    np.testing.assert_allclose(clf.decision_function(X), sk_rest.decision_function(X), atol=1e-5)
    # fit, then partial_fit: the fit's rows come first, the new rows follow them
    grown = OnlineSVC(solver=name, C=1.0, gamma=0.5, tol=1e-8, random_state=0).fit(X[:50], y[:50])
    grown.partial_fit(X[50:], y[50:])
    np.testing.assert_array_equal(grown.support_, sk.support_)
    np.testing.assert_array_equal(np.sort(grown.learning_order_[:50]), np.arange(50))
    np.testing.assert_array_equal(grown.learning_order_[50:], np.arange(50, 90))


# -- scikit-learn's own checks ---------------------------------------------------------------


@parametrize_with_checks([OnlineSVC(solver=name) for name in SOLVERS])
def test_sklearn_check_estimator(estimator, check):
    """One test per scikit-learn check and solver (check_array_api_input runs only with
    SCIPY_ARRAY_API=1, which must be set before scipy is imported: see the next test)."""
    check(estimator)


@pytest.mark.processes  # python -m core (or python -c) in a subprocess
def test_check_estimator_reports_no_failure_for_any_solver():
    """check_estimator in a fresh process with SCIPY_ARRAY_API=1, so that no check is skipped."""
    script = textwrap.dedent("""
        import json, warnings
        from sklearn.utils.estimator_checks import check_estimator
        from core.estimator import OnlineSVC
        from core.solvers import SOLVER_NAMES
        report = {}
        for name in SOLVER_NAMES:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                results = check_estimator(OnlineSVC(solver=name), on_fail=None)
            report[name] = [[r["check_name"], r["status"], str(r["exception"] or "")[:300]] for r in results]
        print(json.dumps(report))
    """)
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "SCIPY_ARRAY_API": "1"},
        cwd=Path(__file__).resolve().parents[2],
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert sorted(report) == sorted(SOLVERS)
    for name, results in report.items():
        assert len(results) >= 55, name
        assert {r[0] for r in results} >= {
            "check_classifier_not_supporting_multiclass",
            "check_estimators_nan_inf",
            "check_estimator_sparse_tag",
            "check_estimators_unfitted",
            "check_classifiers_regression_target",
            "check_array_api_input",
        }
        not_passed = [r for r in results if r[1] != "passed"]
        assert not_passed == [], f"{name}: {not_passed}"


class SparseRecordingSolver(DenseReferenceSolver):
    """Test double for a data store that takes CSR: records what the facade hands over."""

    name = "sparse-recording"

    def add_points(self, X):
        self.inputs = [*getattr(self, "inputs", []), X]
        return super().add_points(X.toarray() if sp.issparse(X) else X)

    def decision_function(self, idx=None, X=None):
        if X is not None:
            self.inputs.append(X)
            X = X.toarray() if sp.issparse(X) else X
        return super().decision_function(idx, X)


@pytest.fixture
def sparse_recording_solver():
    solvers_pkg.register(solvers_pkg.Solver("sparse-recording", SparseRecordingSolver, exact_unlearn=True))
    yield "sparse-recording"
    solvers_pkg.unregister("sparse-recording")


def test_sparse_input_reaches_the_solver_unchanged_when_the_store_takes_it(monkeypatch, sparse_recording_solver):
    X, y = toy(30, seed=6)
    assert OnlineSVC().__sklearn_tags__().input_tags.sparse  # (the solvers' stores take CSR)
    monkeypatch.setattr(estimator_module, "SPARSE_FORMATS", ("csr",))
    clf = OnlineSVC(solver="sparse-recording", gamma=0.5)
    assert clf.__sklearn_tags__().input_tags.sparse
    clf.fit(sp.coo_matrix(X), y).partial_fit(sp.csr_matrix(X[:5]), y[:5])  # any scipy format arrives as CSR
    scores = clf.decision_function(sp.csr_array(X))
    inputs = clf.solver_.inputs
    assert len(inputs) == 3 and all(sp.issparse(v) and v.format == "csr" for v in inputs)
    dense = OnlineSVC(solver="sparse-recording", gamma=0.5).fit(X, y).partial_fit(X[:5], y[:5])
    assert not any(sp.issparse(v) for v in dense.solver_.inputs)
    np.testing.assert_allclose(scores, dense.decision_function(X), atol=1e-10)
    Xbad = sp.csr_matrix(X)
    Xbad.data[7] = np.nan
    row, col = Xbad.tocoo().row[7], Xbad.tocoo().col[7]
    with pytest.raises(ValueError, match=rf"Input X contains NaN.*first at row {row}, column {col}"):
        clf.fit(Xbad, y)


@pytest.mark.parametrize("name", SOLVERS)
def test_sparse_input_gives_the_model_of_the_same_data_dense(name):
    """scipy.sparse input is taken as scikit-learn's estimators take it (accept_sparse: any format
    becomes CSR) and kept sparse in the solver's store; the solvers compute the same kernel
    values on CSR rows, so the model and every decision value are the same bits as from the dense
    array (with gamma given: "scale" takes the variance of a sparse X by another formula, which can
    differ in the last bits)."""
    rng = np.random.default_rng(4)
    X = rng.standard_normal((60, 6))
    X[rng.random(X.shape) < 0.6] = 0.0
    y = np.where(X[:, 0] + 0.3 * rng.standard_normal(60) > 0, "pos", "neg")
    params = dict(solver=name, kernel="rbf", C=2.0, gamma=0.4, random_state=0)
    dense = OnlineSVC(**params).fit(X, y)
    sparse = OnlineSVC(**params).fit(sp.csc_matrix(X), y)
    assert sp.issparse(sparse.solver_.store.X) and sparse.support_vectors_.format == "csr"
    np.testing.assert_array_equal(sparse.support_, dense.support_)
    np.testing.assert_array_equal(sparse.dual_coef_, dense.dual_coef_)
    np.testing.assert_array_equal(sparse.intercept_, dense.intercept_)
    np.testing.assert_array_equal(sparse.decision_function(sp.csr_array(X[:20])), dense.decision_function(X[:20]))
    np.testing.assert_array_equal(sparse.predict(X[20:]), dense.predict(sp.coo_matrix(X[20:])))
    assert sparse.score(sp.csr_matrix(X), y) == dense.score(X, y)
    grown = OnlineSVC(**params).partial_fit(sp.csr_matrix(X[:30]), y[:30], classes=["neg", "pos"])
    grown.partial_fit(X[30:], y[30:])  # dense rows join a sparse store
    reference = OnlineSVC(**params).partial_fit(X[:30], y[:30], classes=["neg", "pos"]).partial_fit(X[30:], y[30:])
    np.testing.assert_array_equal(grown.dual_coef_, reference.dual_coef_)
    np.testing.assert_array_equal(grown.decision_function(X), reference.decision_function(X))
