"""core.explain: which features matter most to the model's decision about an item.

Linear kernel: |w_j x_j| against scikit-learn's SVC (its coef_ is w). rbf and poly: the analytic gradient
against central differences of the decision function, times the feature's spread.
"""

from __future__ import annotations

import numpy as np
import pytest

from core.explain import feature_relevance, most_relevant
from core.solvers import make_solver


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(80, 6)) * np.array([1.0, 5.0, 0.2, 1.0, 3.0, 0.5])
    y = np.where(2.0 * X[:, 0] - 0.5 * X[:, 1] + 4.0 * X[:, 2] + 0.3 * rng.normal(size=80) > 0, 1, -1)
    return X, y


def trained(X, y, **params):
    solver = make_solver("incremental", X, C=1.0, **params)
    for i in range(len(X)):
        solver.learn(i, int(y[i]))
    return solver


def test_linear_kernel_relevance_is_the_contribution_of_each_feature(data):
    from sklearn.svm import SVC

    X, y = data
    solver = trained(X, y, kernel="linear")
    w = SVC(kernel="linear", C=1.0, tol=1e-10).fit(X, y).coef_.ravel()
    for i in (0, 7, 31):
        np.testing.assert_allclose(feature_relevance(solver, X[i]), np.abs(w * X[i]), rtol=1e-4, atol=1e-6)
    top = most_relevant(feature_relevance(solver, X[7]), 6)
    assert sorted(top.tolist()) == list(range(6))
    assert top[0] == int(np.argmax(np.abs(w * X[7])))


@pytest.mark.parametrize("params", [{"kernel": "rbf", "gamma": 0.1}, {"kernel": "poly", "gamma": 0.2, "degree": 3}])
def test_rbf_and_poly_relevance_is_the_gradient_times_the_spread(data, params):
    X, y = data
    solver = trained(X, y, **params)
    spread = X.std(axis=0)
    for i in (2, 40):
        x = X[i]
        h = 1e-6
        numeric = np.array(
            [
                (solver.decision_function(X=x + h * e[None, :])[0] - solver.decision_function(X=x - h * e[None, :])[0])
                / (2 * h)
                for e in np.eye(6)
            ]
        )
        relevance = feature_relevance(solver, x, spread=spread)
        np.testing.assert_allclose(relevance, np.abs(numeric) * spread, rtol=1e-5, atol=1e-8)
        # without a spread the gradient itself
        np.testing.assert_allclose(feature_relevance(solver, x), np.abs(numeric), rtol=1e-5, atol=1e-8)


def test_no_model_yet_means_no_ranking():
    X = np.eye(3)
    solver = make_solver("lasvm", X)
    assert feature_relevance(solver, X[0]) is None
    assert most_relevant(None, 3).tolist() == [0, 1, 2]


def test_another_kernel_falls_back_to_central_differences(data):
    """A kernel without an analytic gradient here (e.g. one added later) is differentiated numerically."""
    from types import SimpleNamespace

    X, y = data
    solver = trained(X, y, kernel="rbf", gamma=0.1)
    other = SimpleNamespace(
        coefficients=solver.coefficients,
        store=solver.store,
        decision_function=solver.decision_function,
        kernel=SimpleNamespace(name="other"),
    )
    spread = X.std(axis=0)
    np.testing.assert_allclose(
        feature_relevance(other, X[5], spread=spread),
        feature_relevance(solver, X[5], spread=spread),
        rtol=1e-5,
        atol=1e-7,
    )
