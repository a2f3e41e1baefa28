"""The compiled minor iterations of the incremental solver against its NumPy implementation,
and results that do not depend on the BLAS thread count.

``IncrementalSVM(compiled=True)`` (the default) runs each drive of Algorithm 1
as one Numba call (core/solvers/_incremental_jit.py); ``compiled=False`` runs
the NumPy implementation the reference tests in test_incremental.py were
written against.  Both must take the same set changes (the cases of every
step) and reach the same coefficients up to rounding, and each must satisfy
the KKT conditions after every learn / unlearn.
"""

from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from threadpoolctl import ThreadpoolController, threadpool_limits

from core.solvers import ConvergenceWarning, IterationLimitError, make_solver
from core.solvers import _incremental_jit as jit
from core.solvers.incremental import IncrementalOneClassSVM, IncrementalSVM
from core.threads import blas_single_thread
from tests.core.test_incremental import SCENARIOS, make_problem, rel_close, two_blobs
from tests.reference import dense_svm_dual


class DriveSpy:
    """Counts calls of the compiled drive (to show which path ran)."""

    def __init__(self, monkeypatch):
        self.calls = 0
        original = jit.drive

        def spy(*args):
            self.calls += 1
            return original(*args)

        monkeypatch.setattr(jit, "drive", spy)


def traffic(s, X, y, order, unlearn_every=3, seed=0):
    """Learn ``order``, then unlearn every ``unlearn_every``-th of a shuffled copy; returns each
    step's cases and set, and checks the KKT conditions after every call."""
    log = []
    tol = 1e-8 * max(1.0, s.C)
    for i in order:
        r = s.learn(i, y[i])
        assert r.status == "ok", r.message
        assert s.kkt_violation() <= tol
        log.append(("learn", int(i), tuple(r.extra["cases"]), r.extra.get("set")))
    rng = np.random.default_rng(seed)
    for i in rng.permutation(order)[::unlearn_every]:
        r = s.unlearn(i)
        assert r.status == "ok", r.message
        assert s.kkt_violation() <= tol
        log.append(("unlearn", int(i), tuple(r.extra["cases"]), None))
    return log


def assert_same_optimum(a, b, rel=1e-9):
    """Both at the optimum of the same problem: equal dual objectives and decision values.

    In exact arithmetic two events of a step can tie (a margin vector reaching C at the very
    step the driven example does, duplicated points); rounding then decides between them, and
    the two implementations, whose sums round differently, may take the other branch.  Both
    branches lead to the optimum (the drive continues from either), which is what is compared
    where such ties occur."""
    wa, wb = a.dual_objective(), b.dual_objective()
    assert abs(wa - wb) <= rel * max(1.0, abs(wa))
    # w (the kernel part of f) is unique; b is not when no margin vector lies strictly inside the box
    fa = a.decision_function(a.labelled_) - a.intercept_
    fb = b.decision_function(b.labelled_) - b.intercept_
    np.testing.assert_allclose(fa, fb, rtol=0, atol=1e-6 * max(1.0, a.C))


def assert_same_model(a, b, rel=1e-9):
    sa, sb = a.sets(), b.sets()
    for key in ("S", "E", "O"):
        np.testing.assert_array_equal(sa[key], sb[key])
    np.testing.assert_array_equal(a.labelled_, b.labelled_)
    # (a margin vector can sit at a = 0 in one and at a rounding residue above 0 in the other)
    alpha_a, alpha_b = a.alpha_, b.alpha_
    scale = max(1.0, float(alpha_a.max(initial=0.0)))
    np.testing.assert_allclose(alpha_a, alpha_b, rtol=0, atol=rel * scale)
    b_a, b_b = a.intercept_, b.intercept_
    assert abs(b_a - b_b) <= rel * max(1.0, abs(b_a))


@pytest.mark.parametrize("kernel,C", [("rbf", 1.0), ("rbf", 100.0), ("linear", 3.0), ("poly", 2.0)])
def test_compiled_and_numpy_drives_take_the_same_steps(kernel, C, monkeypatch):
    X, y = two_blobs(80, seed=3, d=3)
    spy = DriveSpy(monkeypatch)
    fast = IncrementalSVM(X, kernel=kernel, C=C, gamma=0.5, degree=3)
    slow = IncrementalSVM(X, kernel=kernel, C=C, gamma=0.5, degree=3, compiled=False)
    order = np.random.default_rng(1).permutation(len(X))
    log_fast = traffic(fast, X, y, order)
    n_compiled = spy.calls
    log_slow = traffic(slow, X, y, order)
    assert n_compiled > 0 and spy.calls == n_compiled  # the default ran compiled, compiled=False did not
    assert log_fast == log_slow
    assert_same_model(fast, slow)
    learned = fast.labelled_
    if len(np.unique(y[learned])) == 2:  # and both are the optimum of the dense QP
        sol = dense_svm_dual(fast.kernel(X[learned], X[learned]), y[learned], C)
        assert rel_close(fast.dual_objective(), sol.objective, 1e-6)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario=st.sampled_from(SCENARIOS), seed=st.integers(0, 10_000), n=st.integers(3, 18))
def test_property_compiled_equals_numpy(scenario, seed, n):
    # duplicates (dependent points), collinear points, tiny and huge C, one class first
    X, y, C, kernel, order = make_problem(scenario, seed, n)
    models = [
        IncrementalSVM(X, kernel=kernel, C=C, gamma=0.5, compiled=flag, max_iter=5_000, on_max_iter="raise")
        for flag in (True, False)
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for s in models:  # (each learn / unlearn: status ok and KKT conditions, see traffic)
            traffic(s, X, y, order, unlearn_every=2, seed=seed)
    # these small problems are full of exact ties (two margin vectors of opposite labels move
    # together, duplicates), which rounding breaks either way: compared is the optimum reached
    assert_same_optimum(*models, rel=1e-9)


def test_one_class_and_window_run_compiled_and_agree(monkeypatch):
    X, _ = two_blobs(60, seed=5)
    spy = DriveSpy(monkeypatch)
    oc = [IncrementalOneClassSVM(X, kernel="rbf", gamma=0.5, nu=0.2, compiled=f) for f in (True, False)]
    for s in oc:
        for i in range(len(X)):
            assert s.learn(i).status == "ok"
        assert s.kkt_violation() <= 1e-8
    assert spy.calls > 0
    np.testing.assert_allclose(oc[0].alpha_, oc[1].alpha_, rtol=0, atol=1e-10)
    assert abs(oc[0].rho_ - oc[1].rho_) <= 1e-10
    Xb, yb = two_blobs(60, seed=6)
    win = [IncrementalSVM(Xb, kernel="rbf", C=2.0, gamma=0.5, max_learned=15, compiled=f) for f in (True, False)]
    for s in win:
        for i in range(len(Xb)):
            assert s.learn(i, yb[i]).status == "ok"
            assert s.kkt_violation() <= 1e-8
    assert_same_model(*win)


def test_margin_set_and_buffers_grow_inside_one_drive(monkeypatch):
    # a linear kernel in 40 dimensions: |S| passes the initial capacity of 16 (and 32), and the
    # cases / blocked buffers start tiny here, so the compiled drive must return to Python to grow
    # them in the middle of a drive and continue where it stopped
    rng = np.random.default_rng(7)
    X = rng.normal(size=(120, 40))
    y = np.where(X[:, :3].sum(axis=1) + 0.5 * rng.normal(size=120) > 0, 1.0, -1.0)
    monkeypatch.setattr(IncrementalSVM, "_compiled_buffer", 2)
    fast = IncrementalSVM(X, kernel="linear", C=10.0)
    slow = IncrementalSVM(X, kernel="linear", C=10.0, compiled=False)
    order = rng.permutation(len(X))
    assert traffic(fast, X, y, order) == traffic(slow, X, y, order)
    assert fast._Spos.shape[0] > 16  # S outgrew its first capacity (only the compiled drive grows it here)
    assert_same_model(fast, slow)


def test_learned_kernel_over_budget_runs_compiled_with_rows_from_the_kernel_layer(monkeypatch):
    # without the learned-kernel matrix, the compiled drive returns for the kernel row of every
    # example entering S (computed by the kernel layer) and continues where it stopped
    X, y = two_blobs(50, seed=8)
    spy = DriveSpy(monkeypatch)
    s = IncrementalSVM(X, kernel="rbf", C=1.0, gamma=0.5, learned_kernel_bytes=0)
    ref = IncrementalSVM(X, kernel="rbf", C=1.0, gamma=0.5, compiled=False)
    order = np.arange(len(X))
    log = traffic(s, X, y, order)
    assert log == traffic(ref, X, y, order)
    assert s._KLL is None and any("enter" in cases for _, _, cases, _ in log)
    assert spy.calls > sum(1 for *_, cases, _ in log if cases)  # (more calls than drives: rows were fetched)
    assert_same_model(s, ref)


def test_compiled_iteration_cap_warns_or_raises():
    X, y = two_blobs(40, seed=15)
    s = IncrementalSVM(X, kernel="rbf", C=10.0, gamma=0.5, max_iter=1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        statuses = [s.learn(i, y[i]).status for i in range(len(X))]
    assert "max_iter" in statuses
    assert any(issubclass(w.category, ConvergenceWarning) for w in caught)
    assert np.all(np.isfinite(s.decision_function()))
    r = IncrementalSVM(X, kernel="rbf", C=10.0, gamma=0.5, max_iter=1, on_max_iter="raise")
    with pytest.raises(IterationLimitError):
        for i in range(len(X)):
            r.learn(i, y[i])


def test_compiled_flag_is_checked_and_kept_in_the_state():
    with pytest.raises(ValueError, match="compiled"):
        IncrementalSVM(compiled="yes")
    X, y = two_blobs(20, seed=9)
    s = IncrementalSVM(X, kernel="rbf", C=1.0, gamma=0.5, compiled=False)
    for i in range(10):
        s.learn(i, y[i])
    t = IncrementalSVM.from_state(*s.to_state())
    assert t.compiled is False and t.get_params()["compiled"] is False


# ------------------------------------------------------------------ threads
def blas_threads() -> list[int]:
    return [lib.num_threads for lib in ThreadpoolController().select(user_api="blas").lib_controllers]


def run_sequence(solver: str, X, y, **params):
    s = make_solver(solver, X, **params)
    rng = np.random.default_rng(4)
    order = rng.permutation(len(X))
    for i in order:
        s.learn(i, y[i])
    for i in order[::4]:
        s.unlearn(i)
    s.finish()
    return s


@pytest.mark.parametrize(
    "solver,params",
    [
        ("incremental", dict(compiled=True)),
        ("incremental", dict(compiled=False)),
        ("active-set", {}),
    ],
)
def test_results_do_not_depend_on_the_blas_thread_count(solver, params):
    # 120 examples in 300 dimensions: the products of the per-label algebra are large enough
    # for OpenBLAS to split them across threads if it were allowed to
    rng = np.random.default_rng(11)
    X = rng.normal(size=(160, 300))
    y = np.where(X[:, 0] + X[:, 1] + 0.8 * rng.normal(size=160) > 0, 1.0, -1.0)
    runs = []
    for n in (1, 2):
        with threadpool_limits(n, user_api="blas"):
            runs.append(run_sequence(solver, X, y, kernel="rbf", C=10.0, gamma=1.0 / 300, **params))
    (sv1, c1, b1), (sv2, c2, b2) = (s.coefficients() for s in runs)
    np.testing.assert_array_equal(sv1, sv2)
    assert c1.tobytes() == c2.tobytes() and b1 == b2  # the same bits
    if solver == "incremental":  # and the same maintained margins and inverse
        assert runs[0].margins().tobytes() == runs[1].margins().tobytes()
        assert runs[0]._R.tobytes() == runs[1]._R.tobytes()
    else:
        assert runs[0]._fc.tobytes() == runs[1]._fc.tobytes()
        assert runs[0]._R.tobytes() == runs[1]._R.tobytes()
    # (decision values of a large pool are a kernel block, computed in the same setting here)
    assert runs[0].decision_function().tobytes() == runs[1].decision_function().tobytes()


def test_blas_single_thread_is_reentrant_restores_and_is_thread_safe():
    with threadpool_limits(2, user_api="blas"):
        before = blas_threads()
        assert max(before) == 2  # (a library built single-threaded, as cvxopt's, stays at 1)
        with blas_single_thread():
            assert all(n == 1 for n in blas_threads())
            with blas_single_thread():
                assert all(n == 1 for n in blas_threads())
            assert all(n == 1 for n in blas_threads())  # the outer context still holds
        assert blas_threads() == before
        errors = []
        inside = threading.Barrier(4)

        def worker():
            try:
                for _ in range(200):
                    with blas_single_thread():
                        if any(n != 1 for n in blas_threads()):
                            errors.append("a thread ran inside the context with more than one BLAS thread")
            except Exception as exc:  # noqa: BLE001  (reported below)
                errors.append(repr(exc))
            finally:
                inside.wait()  # no thread leaves before all have been through their contexts

        threads = [threading.Thread(target=worker) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors
        assert blas_threads() == before  # restored when the last thread left


def test_learn_runs_on_one_blas_thread_and_restores(monkeypatch):
    X, y = two_blobs(30, seed=10)
    seen = []
    original = IncrementalSVM._drive

    def spy(self, *args, **kwargs):
        seen.append(blas_threads())
        return original(self, *args, **kwargs)

    monkeypatch.setattr(IncrementalSVM, "_drive", spy)
    with threadpool_limits(2, user_api="blas"):
        s = IncrementalSVM(X, kernel="rbf", C=1.0, gamma=0.5)
        for i in range(len(X)):
            s.learn(i, y[i])
        assert max(blas_threads()) == 2
    assert seen and all(all(n == 1 for n in threads) for threads in seen)


def test_an_exact_tie_between_two_events_reaches_the_same_optimum():
    # poly kernel of degree 2 in 3-D, C = 0.5: at the 12th label a margin vector reaches C at
    # the same step (in exact arithmetic) as the driven example does; the implementations may
    # break the tie differently (their sums round differently) but end at the same optimum
    X, y = two_blobs(80, seed=3, d=3)
    order = np.random.default_rng(1).permutation(len(X))
    models = [IncrementalSVM(X, kernel="poly", C=0.5, gamma=0.5, degree=2, compiled=f) for f in (True, False)]
    for s in models:
        traffic(s, X, y, order)
    assert_same_optimum(*models)
    learned = models[0].labelled_
    sol = dense_svm_dual(models[0].kernel(X[learned], X[learned]), y[learned], 0.5)
    assert rel_close(models[0].dual_objective(), sol.objective, 1e-6)


@pytest.mark.parametrize("kernel,C", [("rbf", 1.0), ("linear", 100.0)])
def test_compiled_checks_equal_the_numpy_ones_on_the_same_state(kernel, C):
    # the drift probes, the largest maintained violation and the maintained gap that end every
    # learn / unlearn, computed both ways on one state (perturbed so that none of them is 0)
    X, y = two_blobs(70, seed=12, d=3)
    s = IncrementalSVM(X, kernel=kernel, C=C, gamma=0.5)
    for i in range(60):
        s.learn(i, y[i])
    assert s._m > 2
    rng = np.random.default_rng(0)
    nL = s._nL
    s._pg[:nL] += 1e-6 * rng.normal(size=nL)
    s._R = s._R + 1e-9 * rng.normal(size=s._R.shape)
    s._b += 1e-7
    values = {}
    for flag in (True, False):
        s.compiled = flag
        values[flag] = (s._margin_drift(), s._probe_drift(), s._max_violation(), s._gap_maintained())
    for compiled_value, numpy_value in zip(values[True], values[False], strict=True):
        assert compiled_value > 0
        assert compiled_value == pytest.approx(numpy_value, rel=1e-9)


@pytest.mark.parametrize("seed", [0, 1, 3])
def test_ill_conditioned_updates_recompute_R_in_python_and_reach_the_same_optimum(seed, monkeypatch):
    # near-duplicate points (1e-7 apart) and C = 1e4: kappa (eq. 17) is a small difference of large
    # terms, so R is recomputed from scratch, which the compiled drive hands back to Python
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(40, 2))
    X[20:] = X[:20] + 1e-7 * rng.normal(size=(20, 2))
    y = np.where(rng.random(40) < 0.5, 1.0, -1.0)
    refreshes = []
    original = IncrementalSVM._refresh_R

    def spy(self):
        refreshes.append(self.compiled)
        return original(self)

    monkeypatch.setattr(IncrementalSVM, "_refresh_R", spy)
    models = [IncrementalSVM(X, kernel="rbf", C=1e4, gamma=0.5, compiled=f) for f in (True, False)]
    for s in models:
        for i in range(len(X)):
            assert s.learn(i, y[i]).status == "ok"
        assert s.kkt_violation() <= 1e-6 * s.C
    assert refreshes.count(True) > 0 and refreshes.count(False) > 0
    assert_same_optimum(*models, rel=1e-9)


def test_preload_in_the_background_then_learn_compiled(monkeypatch):
    from core.solvers import _compile

    thread = _compile.preload()
    spy = DriveSpy(monkeypatch)
    X, y = two_blobs(30, seed=2)
    s = IncrementalSVM(X, kernel="rbf", C=1.0, gamma=0.5)
    for i in range(len(X)):  # (possibly while the preload runs: the path never depends on timing)
        assert s.learn(i, y[i]).status == "ok"
    thread.join()
    assert spy.calls > 0
