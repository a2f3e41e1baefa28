"""LASVM (Bordes et al. 2005) against independent references.

References: the dense QP of ``tests/reference.py`` (cvxopt), scikit-learn's
SVC (same kernel, C, gamma, tolerance), analytic toy cases, and the base
class's ``kkt_gap`` which recomputes every gradient from scratch (so it checks
the gradients the solver maintains incrementally).
"""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.kernels import rows_dot
from core.solvers import ConvergenceWarning, IterationLimitError, make_solver
from core.solvers.base import OnlineSolver
from core.solvers.lasvm import LASVM
from tests.reference import dense_svm_dual

SVC = pytest.importorskip("sklearn.svm").SVC


def moons(n, noise=0.3, seed=0):
    rng = np.random.default_rng(seed)
    t = rng.uniform(0, np.pi, n)
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    X = np.where(y[:, None] > 0, np.c_[np.cos(t), np.sin(t)], np.c_[1 - np.cos(t), 0.5 - np.sin(t)])
    return X + noise * rng.standard_normal((n, 2)), y


def blobs(n, sep=2.0, d=2, seed=0):
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    X = rng.standard_normal((n, d)) + sep / 2 * y[:, None] * np.eye(d)[0]
    return X, y


def train(X, y, order=None, epochs=1, finish=True, **params):
    s = LASVM(X, **params)
    order = np.arange(len(X)) if order is None else order
    for i in order:
        s.learn(int(i), y[i])
    for _ in range(epochs - 1):
        for i in order:
            s.revisit(int(i))
    if finish:
        s.finish()
    return s


def gap_slack(s: LASVM) -> float:
    return s.tol * (1 + 1e-9) + 1e-12


def check_invariants(s: LASVM) -> None:
    """The solver's bookkeeping of S agrees with a recomputation from the store."""
    n = s.set_size_
    S = s._S[:n]
    X = s.store.X
    assert s._n_active == n
    inside = np.flatnonzero(s._pos >= 0)
    assert dict(zip(inside.tolist(), s._pos[inside].tolist(), strict=True)) == {int(k): p for p, k in enumerate(S)}
    assert np.all(s.y[S] != 0)
    if n == 0:
        return
    K = s.kernel(X[S], X[S])
    np.fill_diagonal(K, s.kernel.diag(X[S]))
    # every cached row is a complete, correct row of K(S, S), owned by the member whose slot it is
    owners = s._SL[0]
    for slot in np.flatnonzero(owners >= 0).tolist():
        p = int(owners[slot])
        assert p < n and s._MI[1, p] == slot
        np.testing.assert_array_equal(s._R[slot, :n], K[p])  # bit for bit: a row recomputed after a restart is the same
    assert np.all((s._MI[1, :n] < 0) | (owners[np.maximum(s._MI[1, :n], 0)] == np.arange(n)))
    a, lo, hi = s._alpha[:n], s._lo[:n], s._hi[:n]
    assert np.all((lo <= a) & (a <= hi))
    np.testing.assert_array_equal(lo, np.minimum(0.0, s.C * s.y[S]))
    np.testing.assert_array_equal(hi, np.maximum(0.0, s.C * s.y[S]))
    np.testing.assert_allclose(s._g[:n], s.y[S] - K @ a, atol=1e-9)


# ----------------------------------------------------------------------
# finishing: tau-optimality and agreement with the dense QP
# ----------------------------------------------------------------------
@pytest.mark.parametrize(
    "kernel,C,gamma", [("rbf", 1.0, 1.0), ("rbf", 10.0, 2.0), ("linear", 0.5, 1.0), ("poly", 1.0, 0.5)]
)
@pytest.mark.parametrize("tol", [1e-3, 1e-6])
def test_finish_matches_dense_qp(kernel, C, gamma, tol):
    X, y = moons(80, seed=1)
    order = np.random.default_rng(3).permutation(len(X))
    s = train(X, y, order, finish=False, kernel=kernel, C=C, gamma=gamma, degree=3, coef0=1.0, tol=tol)
    r = s.finish()
    assert r.status == "ok" and r.iterations > 0
    assert s.kkt_gap() <= gap_slack(s)  # recomputed from scratch
    assert r.kkt_gap == pytest.approx(s.kkt_gap(), abs=1e-9)
    assert s.delta_ <= s.tol
    K = s.kernel(X, X)
    ref = dense_svm_dual(K, y, C)
    W = s.dual_objective()
    assert W <= ref.objective + 1e-6 * max(1.0, abs(ref.objective))  # the QP optimum is an upper bound
    assert ref.objective - W <= 10 * tol * max(1.0, abs(ref.objective))
    sv, coef, b = s.coefficients()
    assert np.all(np.sign(coef) == y[sv])
    assert np.all(np.abs(coef) <= C * (1 + 1e-12))
    assert abs(coef.sum()) <= 1e-9 * C * len(X)
    f = s.decision_function(np.arange(len(X)))
    f_ref = ref.decision(K, y)
    assert np.max(np.abs(f - f_ref)) <= (2e-2 if tol == 1e-3 else 1e-4)


def test_bookkeeping_stays_consistent_through_every_operation():
    X, y = moons(90, seed=20)
    rng = np.random.default_rng(9)
    s = LASVM(X, C=3.0, gamma=1.0)
    for i in rng.permutation(60):
        s.learn(int(i), y[i])
        check_invariants(s)
    for i in rng.permutation(60)[:20]:
        s.revisit(int(i))
    check_invariants(s)
    s.finish()
    check_invariants(s)
    for i in list(s.support_[:5]) + [int(k) for k in s.learned_order[:3]]:
        if s.y[i] != 0:
            s.unlearn(int(i))
            check_invariants(s)
    t = OnlineSolver.load(io.BytesIO(s.state_bytes()))
    check_invariants(t)
    for i in range(60, 90):
        t.learn(i, y[i])
    t.finish()
    check_invariants(t)


def test_maintained_gradients_match_recomputed_ones_online():
    X, y = moons(120, seed=2)
    s = train(X, y, np.random.default_rng(0).permutation(len(X)), finish=False, C=5.0, gamma=1.0)
    S = s.set_indices_
    sv, coef, b = s.coefficients()
    g = y[S] - s.kernel(X[S], X[sv]) @ coef
    np.testing.assert_allclose(s._g[: len(S)], g, atol=1e-10)
    # delta_ and b_ (eq. 10) are the extreme pair over S
    pos = {k: p for p, k in enumerate(S)}
    beta = np.array([coef[list(sv).index(k)] if k in set(sv) else 0.0 for k in S])
    up = beta < np.maximum(0, s.C * y[S])
    down = beta > np.minimum(0, s.C * y[S])
    assert s.delta_ == pytest.approx(g[up].max() - g[down].min(), abs=1e-10)
    assert s.b_ == pytest.approx((g[up].max() + g[down].min()) / 2, abs=1e-10)
    assert len(pos) == len(S)


def test_analytic_two_points():
    # x = -1 (y = -1), x = +1 (y = +1), linear kernel, C large: alpha = 1/2, f(x) = x
    X = np.array([[-1.0], [1.0]])
    s = train(X, np.array([-1.0, 1.0]), kernel="linear", C=100.0, tol=1e-9)
    sv, coef, b = s.coefficients()
    np.testing.assert_allclose(coef[np.argsort(sv)], [-0.5, 0.5], atol=1e-12)
    assert b == pytest.approx(0.0, abs=1e-12)
    np.testing.assert_allclose(s.decision_function(X=np.array([[-3.0], [0.25], [2.0]])), [-3.0, 0.25, 2.0])
    assert s.dual_objective() == pytest.approx(0.5)


@pytest.mark.parametrize("final_check", [True, False])
def test_reported_gap_is_never_negative_when_delta_is(final_check):
    # x = -1 (y = -1), x = +1 (y = +1), linear kernel, C = 0.01: both at the
    # bound, g_i = -1 + 2C, g_j = 1 - 2C, so delta = g_i - g_j = -2 + 4C < 0;
    # no pair violates, the gap is 0
    s = LASVM(np.array([[-1.0], [1.0]]), kernel="linear", C=0.01, final_check=final_check)
    s.learn(0, -1.0)
    r_learn = s.learn(1, 1.0)
    r = s.finish()
    assert s.delta_ == pytest.approx(-2.0 + 4 * 0.01)  # eq. 10 keeps its sign
    assert r_learn.kkt_gap == 0.0 and r.kkt_gap == 0.0 == s.kkt_gap()
    np.testing.assert_allclose(s.dual_coef_[np.argsort(s.support_)], [-0.01, 0.01])


def test_paper_finishing_without_final_check_is_tau_optimal_on_S():
    X, y = moons(150, seed=4)
    s = train(X, y, np.random.default_rng(1).permutation(len(X)), C=10.0, gamma=1.0, final_check=False)
    assert s.delta_ <= s.tol
    S = s.set_indices_
    sv, coef, _ = s.coefficients()
    g = y[S] - s.kernel(X[S], X[sv]) @ coef
    beta = dict(zip(sv.tolist(), coef.tolist(), strict=True))
    a = np.array([beta.get(int(k), 0.0) for k in S])
    up = a < np.maximum(0, s.C * y[S])
    down = a > np.minimum(0, s.C * y[S])
    assert g[up].max() - g[down].min() <= s.tol + 1e-12


def test_shrinking_does_not_change_the_optimum():
    X, y = moons(200, seed=5)
    order = np.random.default_rng(2).permutation(len(X))
    a = train(X, y, order, C=10.0, gamma=2.0, tol=1e-6, shrinking=True)
    b = train(X, y, order, C=10.0, gamma=2.0, tol=1e-6, shrinking=False)
    assert a.kkt_gap() <= gap_slack(a) and b.kkt_gap() <= gap_slack(b)
    assert a.dual_objective() == pytest.approx(b.dual_objective(), rel=1e-6)


# ----------------------------------------------------------------------
# against scikit-learn's SVC
# ----------------------------------------------------------------------
def test_accuracy_and_decision_values_match_svc():
    X, y = moons(2300, noise=0.35, seed=7)
    Xtr, ytr, Xte, yte = X[:300], y[:300], X[300:], y[300:]
    s = train(Xtr, ytr, np.random.default_rng(0).permutation(300), C=10.0, gamma=1.0, tol=1e-3)
    clf = SVC(C=10.0, gamma=1.0, tol=1e-3).fit(Xtr, ytr)
    f = s.decision_function(X=Xte)
    acc = np.mean(np.where(f >= 0, 1.0, -1.0) == yte)
    acc_svc = clf.score(Xte, yte)
    assert abs(acc - acc_svc) <= 0.005
    np.testing.assert_allclose(f, clf.decision_function(Xte), atol=2e-2)
    assert abs(s.n_support_ - clf.n_support_.sum()) <= 0.05 * clf.n_support_.sum() + 2


@pytest.mark.parametrize("seed", range(10, 30))
def test_bias_comes_from_every_learned_example_when_no_coefficient_is_free(seed):
    """The review's case: with C = 1e-3 no support vector is strictly inside the box, and eq. 10
    took b from the extremes of S alone; learned examples outside S bound b too.  In 3 of these
    20 orders b was -0.005 against SVC's -0.997 (9 of 40 training predictions differed) while
    finish() said "ok": the final check looked at the pair gap only, not at the bias."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 3)) / 2
    y = np.sign(X[:, 0] + rng.standard_normal(40) - 0.3)
    params = dict(kernel="poly", gamma=0.5, coef0=1.0, degree=3, C=1e-3)
    clf = SVC(tol=1e-10, **params).fit(X, y)
    s = train(X, y, np.random.default_rng(seed).permutation(len(X)), finish=False, **params)
    r = s.finish()
    assert r.status == "ok" and r.kkt_gap <= s.tol
    assert s.kkt_gap() <= gap_slack(s)  # with the bias, recomputed from scratch
    assert s.intercept_ == pytest.approx(clf.intercept_[0], abs=5e-3)
    np.testing.assert_allclose(s.decision_function(), clf.decision_function(X), atol=5e-3)
    np.testing.assert_array_equal(np.sign(s.decision_function()), clf.predict(X))


@pytest.mark.parametrize("seed,C", [(53, 0.1), (109, 0.01)])
def test_a_coefficient_left_by_rounding_is_not_free_when_b_is_settled(seed, C):
    """A pair step left a remainder of 3e-17 in S where 0 was meant; read as a free coefficient it
    pinned b at an end of its interval (decision values 0.01 and 0.89 away from SVC's at tol 1e-6).
    As in kkt_gap(), a coefficient within 1e-12 C of its bound is on it."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((40, 3)) / 2
    y = np.sign(X[:, 0] + rng.standard_normal(40) - 0.3)
    params = dict(kernel="poly", gamma=0.5, coef0=1.0, degree=3, C=C)
    s = train(X, y, tol=1e-6, **params)
    clf = SVC(tol=1e-12, **params).fit(X, y)
    assert s.kkt_gap() <= 1e-6
    np.testing.assert_allclose(s.decision_function(), clf.decision_function(X), atol=1e-6)


def test_kkt_gap_counts_the_violation_with_the_bias():
    """kkt_gap() is the largest violating pair or the largest violation of y f(x) >= 1 (a < C) and
    y f(x) <= 1 (a > 0) with the model's own b, whichever is larger.  The paper's finishing step
    (no final check) keeps eq. 10's b from S, which here misses the learned examples outside S."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 3)) / 2
    y = np.sign(X[:, 0] + rng.standard_normal(40) - 0.3)
    s = train(
        X,
        y,
        np.random.default_rng(13).permutation(len(X)),
        kernel="poly",
        gamma=0.5,
        coef0=1.0,
        degree=3,
        C=1e-3,
        final_check=False,
    )
    sv, coef, b = s.coefficients()
    a = np.zeros(len(y))
    a[sv] = np.abs(coef)
    margin = y * s.decision_function() - 1.0
    violation = np.where(a < s.C * (1 - 1e-12), -margin, 0.0)  # a < C needs y f >= 1
    violation = np.maximum(violation, np.where(a > 1e-12 * s.C, margin, 0.0))  # a > 0 needs y f <= 1
    assert violation.max() > 0.9  # b is far outside the interval the outside examples allow
    assert s.kkt_gap() == pytest.approx(violation.max(), rel=1e-9)


def test_single_epoch_without_finishing_is_already_accurate():
    X, y = blobs(1500, sep=3.0, seed=8)
    Xtr, ytr, Xte, yte = X[:500], y[:500], X[500:], y[500:]
    s = train(Xtr, ytr, finish=False, C=1.0, gamma=0.5)
    acc = np.mean(np.where(s.decision_function(X=Xte) >= 0, 1, -1) == yte)
    acc_svc = SVC(C=1.0, gamma=0.5).fit(Xtr, ytr).score(Xte, yte)
    assert acc >= acc_svc - 0.03


def test_more_epochs_reduce_the_gap_before_finishing():
    X, y = moons(300, seed=9)
    order = np.random.default_rng(4).permutation(len(X))
    one = train(X, y, order, epochs=1, finish=False, C=10.0, gamma=1.0)
    three = train(X, y, order, epochs=3, finish=False, C=10.0, gamma=1.0)
    assert three.kkt_gap() < one.kkt_gap()
    r = three.finish()
    assert r.status == "ok" and three.kkt_gap() <= gap_slack(three)


# ----------------------------------------------------------------------
# kernel access: cache budget, large stores
# ----------------------------------------------------------------------
def same_model(a: LASVM, b: LASVM) -> None:
    """Bit for bit: members of S in the same positions, coefficients, gradients, b and delta."""
    n = a.set_size_
    assert b.set_size_ == n
    assert np.array_equal(a._S[:n], b._S[:n])
    assert np.array_equal(a._alpha[:n], b._alpha[:n])
    assert np.array_equal(a._g[:n], b._g[:n])
    assert (a.b_, a.delta_) == (b.b_, b.delta_)
    idx = np.arange(len(a.store))
    assert np.array_equal(a.decision_function(idx), b.decision_function(idx))


@pytest.mark.parametrize("kernel", ["rbf", "poly"])
@pytest.mark.parametrize("final_check", [True, False])
def test_the_cache_budget_changes_the_kernel_evaluations_not_the_model(kernel, final_check):
    # no cache (the two working rows only), a few rows, every row; one epoch, a second epoch,
    # finishing with shrinking and the final check (whose block is kept only with a budget)
    X, y = moons(300, seed=10)
    order = np.random.default_rng(5).permutation(len(X))
    runs = []
    for budget in (0, 8 * 12 * 400, 1 << 30):
        s = LASVM(X, C=3.0, gamma=1.5, kernel=kernel, degree=3, coef0=1.0, cache_bytes=budget, final_check=final_check)
        for i in order:
            s.learn(int(i), y[i])
        for i in order[::3]:
            s.revisit(int(i))
        r = s.finish()
        assert r.status == "ok"
        assert s.row_cache_bytes_ <= max(budget, 2 * s._R.itemsize * s._R.shape[1])  # (two rows at least)
        check_invariants(s)
        runs.append(s)
    none, few, every = runs
    evals = [s.n_kernel_evals for s in runs]
    same_model(none, every)
    same_model(few, every)
    assert evals[0] >= evals[1] > evals[2]
    assert every.cached_rows_ == every.set_size_ and none.cached_rows_ <= 2


def test_learn_sequence_is_learn_one_at_a_time(monkeypatch):
    X, y = moons(700, noise=0.5, seed=3)
    order = np.random.default_rng(8).permutation(len(X))
    one = LASVM(X, C=5.0, gamma=1.0)
    for i in order:
        one.learn(int(i), y[i])
    many = LASVM(X, C=5.0, gamma=1.0, cache_bytes=8 * 40 * 600)  # (and a small cache: rows recomputed)
    r = many.learn_sequence(order, y[order])
    assert r.status == "ok" and r.kernel_evals == many.n_kernel_evals
    same_model(one, many)
    assert list(many.labelled_) == list(order)
    # a second epoch: examples that were in S when their block was made may have left S before
    # their turn; their rows are computed then (_fill_block_row)
    fills = []
    fill = LASVM._fill_block_row
    monkeypatch.setattr(LASVM, "_fill_block_row", lambda self, *a: fills.append(a[0]) or fill(self, *a))
    for i in order:
        one.revisit(int(i))
    many.revisit_sequence(order)
    same_model(one, many)
    assert fills  # the path was taken
    one.finish()
    many.finish()
    same_model(one, many)
    check_invariants(many)


def test_learn_sequence_refuses_bad_input_and_learns_nothing():
    X, y = moons(40, seed=1)
    s = LASVM(X, C=1.0, gamma=1.0)
    s.learn(0, y[0])
    for idx, labels, error in [
        ([1, 2], [1.0], ValueError),
        ([1, 40], [1.0, -1.0], IndexError),
        ([1, 0], [1.0, 1.0], ValueError),
        ([1, 1], [1.0, 1.0], ValueError),
        ([1, 2], [1.0, 0.5], ValueError),
        ([1.5], [1.0], ValueError),
    ]:
        with pytest.raises(error):
            s.learn_sequence(idx, labels)
        assert list(s.labelled_) == [0] and np.count_nonzero(s.y) == 1
    assert s.learn_sequence([], []).iterations == 0


def test_a_one_pass_fit_with_thousands_of_members_stays_within_its_cache_budget():
    # noisy labels keep most examples in S: K(S, S) would take |S|^2 x 8 bytes (30 MB here);
    # the rows kept stay within cache_bytes and the whole fit's peak within a few MiB of it
    import tracemalloc

    rng = np.random.default_rng(4)
    X = rng.standard_normal((2500, 3))
    y = np.where(rng.random(2500) < 0.5, 1.0, -1.0)
    budget = 512 * 2**10
    tracemalloc.start()
    try:
        s = LASVM(X, C=1.0, gamma=0.5, cache_bytes=budget)
        s.learn_sequence(np.arange(len(X)), y)
        r = s.finish()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert r.status == "ok" and s.kkt_gap() <= gap_slack(s)
    n = s.set_size_
    assert n > 1500 and 8 * n * n > 20 * 2**20
    assert s.row_cache_bytes_ <= budget
    assert peak < budget + 10 * 2**20


def test_learn_never_touches_the_whole_store():
    rng = np.random.default_rng(11)
    pool = rng.standard_normal((50_000, 5))
    s = LASVM(pool, C=1.0, gamma=0.2)
    y = np.where(pool[:, 0] > 0, 1.0, -1.0)
    for i in range(40):
        before = s.set_size_
        r = s.learn(i, y[i])
        assert r.kernel_evals <= before + 1  # K(x_i, S) and K(x_i, x_i) only
    cand = rng.choice(len(pool), 59, replace=False)
    k0 = s.n_kernel_evals
    f = s.decision_function(cand)
    assert s.n_kernel_evals - k0 == 59 * s.n_support_
    sv, coef, b = s.coefficients()
    np.testing.assert_allclose(f, s.kernel(pool[cand], pool[sv]) @ coef + b, atol=1e-12)
    assert s.cache.n_cached_rows == 0


def test_registry_name():
    s = make_solver("lasvm", np.zeros((2, 1)))
    assert isinstance(s, LASVM) and s.name == "lasvm" and not s.exact_unlearn


# ----------------------------------------------------------------------
# unlearn, revisit, errors, caps
# ----------------------------------------------------------------------
def test_unlearn_then_finish_matches_retraining_without():
    X, y = moons(70, seed=12)
    s = train(X, y, np.random.default_rng(6).permutation(len(X)), C=2.0, gamma=1.0, tol=1e-6)
    sv, coef, _ = s.coefficients()
    k = int(sv[np.argmax(np.abs(coef))])
    r = s.unlearn(k)
    assert r.success and k not in s.support_ and s.y[k] == 0 and k not in s.learned_order
    assert abs(s.dual_coef_.sum()) <= 1e-9 * len(X)  # equality constraint kept
    assert s.delta_ <= s.tol
    s.finish()
    keep = np.array([i for i in range(len(X)) if i != k])
    ref = dense_svm_dual(s.kernel(X[keep], X[keep]), y[keep], 2.0)
    assert s.dual_objective() == pytest.approx(ref.objective, rel=1e-6)
    assert s.kkt_gap() <= gap_slack(s)


def test_unlearn_everything_and_relearn():
    X, y = moons(30, seed=13)
    s = train(X, y, C=1.0, gamma=1.0)
    for i in np.random.default_rng(7).permutation(len(X)):
        s.unlearn(int(i))
        assert np.all(np.isfinite(s.decision_function()))
        assert abs(s.dual_coef_.sum()) <= 1e-9 * len(X)
    assert s.n_support_ == 0 and s.set_size_ == 0 and len(s.learned_order) == 0
    for i in range(len(X)):
        s.learn(i, y[i])
    s.finish()
    assert s.kkt_gap() <= gap_slack(s)


def test_single_class_first():
    X, y = moons(60, seed=14)
    order = np.argsort(-y, kind="stable")  # every positive example before any negative one
    s = LASVM(X, C=1.0, gamma=1.0)
    for i in order[y[order] > 0]:
        s.learn(int(i), 1.0)
        assert np.all(s.decision_function() > 0)  # one class seen: f is the positive constant b
        assert s.n_support_ == 0
    for i in order[y[order] < 0]:
        s.learn(int(i), -1.0)
    s.finish()
    assert s.kkt_gap() <= gap_slack(s)


def test_finish_with_nothing_learned():
    assert LASVM().finish().status == "ok"
    s = LASVM(np.zeros((3, 2)))
    assert s.finish().status == "ok" and s.kkt_gap() == 0.0


def test_revisit_and_errors():
    X, y = moons(20, seed=15)
    s = LASVM(X, C=1.0, gamma=1.0)
    s.learn(0, y[0])
    with pytest.raises(ValueError, match="already been learned"):
        s.learn(0, y[0])
    with pytest.raises(ValueError, match="has not been learned"):
        s.unlearn(5)
    with pytest.raises(ValueError, match="has not been learned"):
        s.revisit(5)
    with pytest.raises(ValueError, match="label"):
        s.learn(1, 0.5)
    with pytest.raises(ValueError, match="curvature_floor"):
        LASVM(X, curvature_floor=0.0)
    assert s.revisit(0).iterations == 0  # in S: PROCESS bails out, nothing to REPROCESS


def test_iteration_cap_warns_or_raises():
    X, y = moons(200, seed=16)
    s = train(X, y, finish=False, C=10.0, gamma=1.0, max_iter=2)
    assert s.kkt_gap() > s.tol
    with pytest.warns(ConvergenceWarning):
        r = s.finish()
    assert r.status == "max_iter" and not r.success and "cap" in r.message
    s2 = train(X, y, finish=False, C=10.0, gamma=1.0, max_iter=2, on_max_iter="raise")
    with pytest.raises(IterationLimitError):
        s2.finish()


# ----------------------------------------------------------------------
# state round trip
# ----------------------------------------------------------------------
@pytest.mark.parametrize("finish", [False, True])
def test_state_round_trip(finish):
    X, y = moons(120, seed=17)
    s = train(X, y, np.random.default_rng(8).permutation(len(X)), finish=finish, C=4.0, gamma=1.3, shrinking=False)
    buf = io.BytesIO()
    s.save(buf)
    buf.seek(0)
    t = OnlineSolver.load(buf)
    assert isinstance(t, LASVM) and t.shrinking is False
    idx = np.arange(len(X))
    assert np.array_equal(s.decision_function(idx), t.decision_function(idx))
    assert (t.b_, t.delta_) == (s.b_, s.delta_)
    assert np.array_equal(s.set_indices_, t.set_indices_)
    assert t.n_kernel_evals == s.n_kernel_evals
    # both carry on: K(S, S) is recomputed on load, so rounding may change a
    # pair choice; both end tau-optimal on the same problem
    extra = np.random.default_rng(1).standard_normal((5, 2))
    for solver in (s, t):
        new = solver.add_points(extra)
        for k in new:
            solver.learn(int(k), 1.0 if extra[k - len(X), 0] > 0.5 else -1.0)
        solver.finish()
        assert solver.kkt_gap() <= gap_slack(solver)
    assert t.dual_objective() == pytest.approx(s.dual_objective(), rel=1e-3)
    np.testing.assert_allclose(s.decision_function(), t.decision_function(), atol=2e-2)
    # saved without data
    arrays, meta = s.to_state(include_data=False)
    u = LASVM.from_state(arrays, meta, X=np.vstack([X, extra]))
    assert np.array_equal(u.decision_function(), s.decision_function())


# ----------------------------------------------------------------------
# property tests
# ----------------------------------------------------------------------
@st.composite
def problems(draw):
    n = draw(st.integers(2, 14))
    d = draw(st.integers(1, 3))
    shape = draw(st.sampled_from(["grid", "collinear", "duplicates"]))
    ints = st.integers(-3, 3)
    if shape == "collinear":
        t = np.array(draw(st.lists(ints, min_size=n, max_size=n)), dtype=float)
        X = t[:, None] * np.linspace(0.5, 1.0, d)[None, :]
    else:
        X = np.array(draw(st.lists(st.lists(ints, min_size=d, max_size=d), min_size=n, max_size=n)), dtype=float) / 2
        if shape == "duplicates":
            X[n // 2 :] = X[: n - n // 2]
    y = np.array(draw(st.lists(st.sampled_from([-1.0, 1.0]), min_size=n, max_size=n)))
    order = np.array(draw(st.permutations(range(n))))
    if draw(st.booleans()):  # a single class first
        order = order[np.argsort(-y[order], kind="stable")]
    C = draw(st.sampled_from([1e-6, 1e-3, 1.0, 1e3, 1e6]))
    kernel = draw(st.sampled_from(["linear", "rbf", "poly"]))
    return X, y, order, C, kernel


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_property_no_nan_terminates_and_is_tau_optimal(problem):
    X, y, order, C, kernel = problem
    s = LASVM(X, C=C, kernel=kernel, gamma=0.5, degree=2, max_iter=5_000)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for i in order:
            r = s.learn(int(i), y[i])
            assert np.isfinite(r.kkt_gap)
            assert np.all(np.isfinite(s.decision_function()))
        r = s.finish()
    # the only warning is the documented iteration cap, and it only happens with
    # a huge C: first-order pair selection then needs ~C / (step size) steps
    # (e.g. duplicate points with opposite labels next to a single other point)
    assert all(issubclass(w.category, ConvergenceWarning) for w in caught)
    assert r.status == "ok" or (r.status == "max_iter" and C >= 1e3 and len(caught) == 1)
    sv, coef, b = s.coefficients()
    assert np.isfinite(b) and np.all(np.isfinite(coef))
    assert np.all(np.abs(coef) <= C * (1 + 1e-12)) and np.all(np.sign(coef) == y[sv])
    Kmax = float(np.max(np.abs(s.kernel(X, X))))
    assert abs(coef.sum()) <= 1e-9 * C * len(X)
    if r.status == "ok":
        assert s.kkt_gap() <= s.tol + 1e-12 * C * Kmax * len(X) + 1e-12
    # unlearn half of them: still finite, constraint kept
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for i in order[: len(order) // 2]:
            s.unlearn(int(i))
            assert np.all(np.isfinite(s.decision_function()))
    assert abs(s.dual_coef_.sum()) <= 1e-9 * C * len(X)


def test_huge_C_degenerate_case_hits_the_cap_with_a_warning():
    # x = 0.5 (y = -1) and three copies of x = 0 with labels -1, -1, +1 (linear kernel):
    # the optimum puts C on the conflicting duplicates; first-order pair
    # selection climbs there in steps of 8, so with C = 1e6 the cap is reached
    X = np.array([[0.5], [0.0], [0.0], [0.0]])
    y = np.array([-1.0, -1.0, -1.0, 1.0])
    s = LASVM(X, C=1e6, kernel="linear", max_iter=200)
    for i in range(4):
        s.learn(i, y[i])
    with pytest.warns(ConvergenceWarning, match="iteration cap"):
        r = s.finish()
    assert r.status == "max_iter" and np.all(np.isfinite(s.decision_function()))
    t = LASVM(X, C=16.0, kernel="linear")
    for i in range(4):
        t.learn(i, y[i])
    assert t.finish().status == "ok" and t.kkt_gap() <= t.tol


def test_decision_function_in_chunks_and_for_new_points(monkeypatch):
    import core.kernels

    X, y = moons(150, seed=21)
    s = train(X, y, C=2.0, gamma=1.0)
    whole = s.decision_function()
    monkeypatch.setattr(core.kernels, "_DECISION_CHUNK_ENTRIES", 7)  # a few rows per block
    # the same bits in any chunking, for stored indices and for the same points given as new data
    np.testing.assert_array_equal(s.decision_function(), whole)
    np.testing.assert_array_equal(s.decision_function(X=X), whole)
    sv, coef, b = s.coefficients()
    np.testing.assert_array_equal(whole, rows_dot(s.kernel(X, X[sv]), coef) + b)
    np.testing.assert_allclose(whole, s.kernel(X, X[sv]) @ coef + b, atol=1e-12)
    assert s.decision_function([]).shape == (0,)


def test_copy_sharing_the_store_is_small_and_independent():
    # a copy that shares the store (deepcopy with the store in the memo; the active-learning loop
    # keeps such copies for undo) holds O(|S| + labels) numbers: no kernel rows, nothing of the
    # pool's size; restored, it refills its rows on demand and continues exactly as the original
    # (kernel values have the same bits however they are computed: see core.kernels)
    import copy

    rng = np.random.default_rng(22)
    pool = rng.standard_normal((20_000, 4))
    y = np.where(pool[:, 0] + pool[:, 1] > 0, 1.0, -1.0)
    s = LASVM(pool, C=1.0, gamma=0.3)
    for i in range(40):
        s.learn(i, y[i])
    state = s.__getstate__()
    held = sum(v.nbytes for v in state.values() if isinstance(v, np.ndarray))
    assert held < 8 * 12 * s.set_size_ + 8 * 60  # a dozen numbers per member of S, the labels, scalars
    memo = {id(s.store): s.store, id(s.cache): s.cache, id(s.kernel): s.kernel}
    clone = copy.deepcopy(s, memo)
    assert clone.cached_rows_ == 0 and s.cached_rows_ == s.set_size_
    same_model(clone, s)
    cand = np.arange(100, 200)
    before = s.decision_function(cand)
    for i in range(40, 80):
        clone.learn(i, y[i])
    np.testing.assert_array_equal(s.decision_function(cand), before)
    for i in range(40, 80):
        s.learn(i, y[i])
    same_model(clone, s)


# ----------------------------------------------------------------------
# the final check of finish(): bounds, exhaustive agreement, admission
# ----------------------------------------------------------------------
def exhaustive_outside(s: LASVM):
    """Largest violating pair over every learned example and the violators outside S, from scratch."""
    L = s.labelled_
    n = s.set_size_
    S = s._S[:n]
    sv, coef, _ = s.coefficients()
    X = s.store.X
    g_all = s.y[L] - s.kernel(X[L], X[sv]) @ coef
    alpha = np.zeros(len(s.store))
    alpha[S] = s._alpha[:n]
    a, yl = alpha[L], s.y[L]
    up = a < np.maximum(0.0, s.C * yl)
    down = a > np.minimum(0.0, s.C * yl)
    g_up, g_down = g_all[up].max(), g_all[down].min()
    outside = ~np.isin(L, S)
    viol = outside & (((yl > 0) & (g_all - g_down > s.tol)) | ((yl < 0) & (g_up - g_all > s.tol)))
    return max(0.0, g_up - g_down), set(L[viol].tolist()), dict(zip(L.tolist(), g_all.tolist(), strict=True))


def test_final_check_skips_by_a_valid_bound_and_agrees_with_an_exhaustive_check(monkeypatch):
    import core.solvers.lasvm as lasvm_module

    rounds = []
    original = lasvm_module._FinalCheck.violators

    def checked(self):
        found, excess = original(self)
        s = self.s
        gap, viol, g_true = exhaustive_outside(s)
        assert self.full_gap == pytest.approx(gap, abs=1e-9)
        assert set(found.tolist()) == viol
        assert np.all(excess > s.tol)
        # every outside example's recorded gradient is within its bound of the true one
        inside = set(s.set_indices_.tolist())
        for p, k in enumerate(self.L.tolist()):
            if k not in inside:
                assert abs(g_true[k] - self.g[p]) <= self.radius[p] + 1e-9
        rounds.append((len(found), self.n_skipped))
        return found, excess

    monkeypatch.setattr(lasvm_module._FinalCheck, "violators", checked)
    X, y = moons(400, seed=0)
    s = train(X, y, np.random.default_rng(0).permutation(len(X)), C=10.0, gamma=1.0)
    assert len(rounds) >= 3 and rounds[0][0] > 0 and rounds[-1][0] == 0
    assert rounds[0][1] == 0 and sum(skipped for _, skipped in rounds[1:]) > 0  # later rounds skip
    assert s.kkt_gap() <= gap_slack(s)
    check_invariants(s)


@pytest.mark.parametrize("limit", [None, 3])
@pytest.mark.parametrize("kernel", ["rbf", "poly"])
def test_final_check_admits_violators_all_or_the_most_violating_first(monkeypatch, limit, kernel):
    if limit is not None:  # a few per round: the others must be found again by later rounds
        monkeypatch.setattr(LASVM, "_admission_limit", lambda self: limit)
    X, y = moons(300, seed=23)
    order = np.random.default_rng(2).permutation(len(X))
    s = train(X, y, order, finish=False, C=10.0, gamma=1.0, kernel=kernel, degree=3)
    assert s.kkt_gap() > s.tol
    r = s.finish()
    assert r.status == "ok" and r.extra["check_rounds"] >= (2 if limit is None else 4)  # violators admitted
    assert s.kkt_gap() <= gap_slack(s) and r.kkt_gap == pytest.approx(s.kkt_gap(), abs=1e-9)
    check_invariants(s)
    ref = dense_svm_dual(s.kernel(X, X), y, 10.0)
    assert ref.objective - s.dual_objective() <= 10 * s.tol * max(1.0, abs(ref.objective))


def test_copy_sharing_the_store_allocates_nothing_of_the_pool_size():
    # the solver keeps views of the store's arrays and a store-sized position index between steps;
    # a copy that shares the store must not duplicate them, not even for a moment
    import copy
    import tracemalloc

    rng = np.random.default_rng(24)
    pool = rng.standard_normal((40_000, 8))  # 2.56 MB (labels and position index: 0.32 MB each)
    y = np.where(pool[:, 0] > 0, 1.0, -1.0)
    s = LASVM(pool, C=1.0, gamma=0.3)
    for i in range(30):
        s.learn(i, y[i])
    memo = {id(s.store): s.store, id(s.cache): s.cache, id(s.kernel): s.kernel}
    tracemalloc.start()
    try:
        state = copy.deepcopy(s.__getstate__(), memo)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 100_000
    clone = LASVM.__new__(LASVM)
    clone.__setstate__(state)
    for i in range(30, 60):
        clone.learn(i, y[i])
        s.learn(i, y[i])
    same_model(clone, s)


@pytest.mark.parametrize("seed", range(20, 36))
def test_random_operation_sequences_keep_finish_tau_optimal(seed):
    # learn / revisit / unlearn / finish in random order on small problems with
    # duplicate and zero vectors (a zero vector has K_kk = 0 under the linear
    # and, with coef0 = 0, polynomial kernels); after every finish the whole
    # learned set is tau-optimal
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(3, 40)), int(rng.integers(1, 4))
    X = np.round(rng.standard_normal((n, d)) * 2) / 2
    if rng.random() < 0.3:
        X[n // 2 :] = X[: n - n // 2]
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    kernel = str(rng.choice(["rbf", "linear", "poly"]))
    C = float(rng.choice([0.01, 1.0, 10.0, 100.0]))
    s = LASVM(
        X, C=C, kernel=kernel, gamma=0.7, degree=2, coef0=0.0, max_iter=20_000, shrinking=bool(rng.random() < 0.7)
    )
    Kmax = float(np.max(np.abs(s.kernel(X, X))))
    learned: set[int] = set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for _ in range(3 * n):
            op = rng.random()
            new = [i for i in range(n) if i not in learned]
            if op < 0.6 and new:
                i = int(rng.choice(new))
                s.learn(i, y[i])
                learned.add(i)
            elif op < 0.75 and learned:
                s.revisit(int(rng.choice(sorted(learned))))
            elif op < 0.85 and learned:
                i = int(rng.choice(sorted(learned)))
                s.unlearn(i)
                learned.discard(i)
            else:
                r = s.finish()
                if r.status == "ok":
                    slack = s.tol + 1e-12 * C * Kmax * n + 1e-12
                    assert s.kkt_gap() <= slack and r.kkt_gap <= slack
            check_invariants(s)
    assert np.all(np.isfinite(s.decision_function()))


# ----------------------------------------------------------------------
# BLAS threads: one while LASVM works, the caller's setting afterwards
# ----------------------------------------------------------------------
def _blas_threads() -> list[int]:
    from threadpoolctl import threadpool_info

    return [d["num_threads"] for d in threadpool_info() if d["user_api"] == "blas"]


def test_lasvm_runs_blas_on_one_thread_and_gives_the_setting_back(monkeypatch):
    # also from threads other than the one that set the process's BLAS threads last (threadpoolctl
    # alone would ignore them: OpenBLAS's setting is process-wide; see core.threads)
    import threading

    from threadpoolctl import threadpool_limits

    from core.kernels import KernelCache

    seen = []  # BLAS threads during every kernel call LASVM made
    call = KernelCache.compute

    def spy(self, rows, cols):
        seen.append(max(_blas_threads()))
        return call(self, rows, cols)

    monkeypatch.setattr(KernelCache, "compute", spy)
    X, y = blobs(700, d=40, seed=3)
    errors = []

    def fit(seed):
        try:
            order = np.random.default_rng(seed).permutation(len(X))
            s = LASVM(X, C=1.0, gamma=0.02)
            s.learn_sequence(order[:600], y[order[:600]])
            for i in order[600:]:
                s.learn(int(i), y[i])
            assert s.finish().status == "ok"
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    with threadpool_limits(limits=2, user_api="blas"):
        before = _blas_threads()  # (2 where a BLAS can run two; some are built single-threaded)
        assert max(before) == 2
        fit(0)  # in this thread
        workers = [threading.Thread(target=fit, args=(seed,)) for seed in (1, 2, 3)]  # in others, at once
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        assert not errors
        assert _blas_threads() == before  # given back
    assert seen and set(seen) == {1}
