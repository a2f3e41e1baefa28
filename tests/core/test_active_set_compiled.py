"""The active-set solver's compiled loops (core/solvers/_active_set_jit.py) against the NumPy /
BLAS formulas they replace, and the finish() gap against the gap recomputed from scratch.

The solver itself is checked against dense QP and SVC in test_active_set.py; these tests pin
each compiled routine to an independent formula, including the edge cases the ratio test
must get right (variables that do not move, exact ties, NaN reduced costs).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.linalg import blas, solve_triangular

from core.solvers import _active_set_jit as jit
from core.solvers.active_set import _TINY, ActiveSetSVM
from tests.core.test_active_set import two_gaussians


def random_factor(n, rng):
    A = rng.normal(size=(n, n))
    H = A @ A.T + n * np.eye(n)
    return np.asfortranarray(np.linalg.cholesky(H).T), H


@pytest.mark.parametrize("n,yj", [(1, 1.0), (5, -1.0), (40, 1.0)])
def test_enter_direction_matches_triangular_solves(n, yj):
    rng = np.random.default_rng(n)
    R, H = random_factor(n, rng)
    ns = n + 7
    S = rng.permutation(ns)[:n].astype(np.intp)
    row = rng.normal(size=ns)
    yS = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    a = rng.uniform(0, 1, size=ns)
    w = np.linalg.solve(H, yS)
    yw = float(yS @ w)
    rho, Hjj, fcj, aj, aj0, kdj, linj, b = 0.7, 9.0, 0.3, 0.4, 0.1, 1.2, -1.0, 0.05
    r_col, u, dS = np.empty(n), np.empty(n), np.empty(n)
    pivot_sq, c, r_j = jit.enter_direction(
        R, n, row, S, yS, w, yw, a, rho, yj, Hjj, fcj, aj, aj0, kdj, linj, b, r_col, u, dS
    )
    # the formulas of ActiveSetSVM._enter, with BLAS / LAPACK
    h = yS * yj * (row[S] + rho)
    r_ref = blas.dtrsv(R, h, trans=1)
    u_ref = solve_triangular(R, r_ref)
    np.testing.assert_allclose(r_col, r_ref, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(u, u_ref, rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(u, np.linalg.solve(H, h), rtol=1e-10, atol=1e-12)  # u = H^{-1} h_j
    assert pivot_sq == pytest.approx(Hjj - r_ref @ r_ref, rel=1e-12)
    c_ref = (yS @ u_ref - yj) / yw
    assert c == pytest.approx(c_ref, rel=1e-11)
    f_j = (a[S] * yS) @ row[S] + fcj + (aj - aj0) * yj * kdj
    assert r_j == pytest.approx(yj * (f_j + b) + linj, rel=1e-12, abs=1e-14)
    np.testing.assert_allclose(dS, w * c_ref - u_ref, rtol=1e-10, atol=1e-12)
    assert abs(yS @ dS + yj) <= 1e-10  # y^T v = 0 along v = (dS, 1) when a_j moves up


def ratio_reference(aS, dS, C):
    t = C - aS  # (C: one bound, or the bound of each free variable)
    np.copyto(t, aS, where=dS < 0)
    t /= np.maximum(np.abs(dS), _TINY)
    np.copyto(t, np.inf, where=dS == 0.0)
    return int(t.argmin()), float(t.min())


@pytest.mark.parametrize("class_bounds", [(2.0, 2.0), (3.0, 0.5)])
@pytest.mark.parametrize("sigma", [1.0, -1.0])
def test_ratio_test_matches_numpy_with_ties_and_still_variables(sigma, class_bounds):
    rng = np.random.default_rng(3)
    for trial in range(200):
        n = int(rng.integers(1, 12))
        S = rng.permutation(n + 3)[:n].astype(np.intp)
        ub = rng.choice(class_bounds, size=n + 3)  # each slot's bound: C w_+ or C w_- (class weights)
        a = np.zeros(n + 3)
        a[S] = rng.choice([0.0, 0.5, 1.0, 2.0], size=n) * (ub[S] / 2.0)  # exact ties of distances
        dS = rng.choice([-1.0, -0.5, 0.0, -0.0, 0.5, 1.0, 1e-250], size=n)
        ref_pos, ref_t = ratio_reference(a[S], sigma * dS, ub[S])
        d = dS.copy()
        pos, t = jit.ratio_test(n, S, a, d, ub, np.empty(n), sigma)
        np.testing.assert_array_equal(d, sigma * dS)  # turned into the direction a_j moves
        assert (pos, t) == (ref_pos, ref_t), trial


def test_price_full_matches_the_dense_product_and_marks_the_shrinking_subset():
    rng = np.random.default_rng(5)
    n, ns = 7, 50
    KS = rng.normal(size=(10, 64))
    coef = rng.normal(size=n)
    fc, sgn_y, sgn_lin = rng.normal(size=64), rng.choice([-1.0, 0.0, 1.0], size=64), rng.normal(size=64)
    priced = np.zeros(64, dtype=bool)
    p, v = jit.price_full(KS, coef, n, ns, fc, 0.25, sgn_y, sgn_lin, priced, 0.5, True)
    ref = (coef @ KS[:n, :ns] + fc[:ns] + 0.25) * sgn_y[:ns] + sgn_lin[:ns]
    assert p == int(ref.argmax()) and v == pytest.approx(ref.max(), rel=1e-12)
    np.testing.assert_array_equal(priced[:ns], ref >= -0.5)
    assert not priced[ns:].any()
    fc[11] = np.nan  # a NaN reduced cost is returned (first NaN, as argmax), never passed over
    p, v = jit.price_full(KS, coef, n, ns, fc, 0.25, sgn_y, sgn_lin, priced, 0.5, False)
    assert p == 11 and np.isnan(v)


@pytest.mark.parametrize("kernel,C", [("rbf", 1.0), ("linear", 10.0)])
def test_finish_reports_the_gap_recomputed_from_scratch(kernel, C):
    X, y = two_gaussians(150, 0.4, seed=21)
    s = ActiveSetSVM(X, kernel=kernel, C=C, gamma=0.5, tol=1e-3)
    res = s.learn_many(np.arange(100), y[:100])
    assert res.success
    for i in range(100, 150):
        s.learn(i, y[i])
    s.unlearn(int(s.support_[0]))
    out = s.finish()
    n_evals = s.n_kernel_evals
    gap = s.kkt_gap()  # from scratch (not counted)
    assert out.kkt_gap == pytest.approx(gap, abs=1e-9 * max(1.0, C))
    assert out.kkt_gap <= s.tol and s.n_kernel_evals == n_evals


@pytest.mark.parametrize("class_bounds", [(1.5, 1.5), (4.5, 0.25)])
def test_move_free_and_add_scaled_match_numpy(class_bounds):
    rng = np.random.default_rng(8)
    ub = rng.choice(class_bounds, size=30)  # each slot's bound (class weights: C w_+ or C w_-)
    a = rng.uniform(0, 1, size=30) * ub
    S = rng.permutation(30)[:12].astype(np.intp)
    dS = rng.normal(size=12) * 3
    ref = a.copy()
    ref[S] = np.clip(a[S] + dS * 0.4, 0.0, ub[S])  # (dS *= step; dS += a_S; into the box)
    jit.move_free(12, S, a, dS, 0.4, ub)
    assert a.tobytes() == ref.tobytes()
    fc, row = rng.normal(size=40), rng.normal(size=40)
    ref = fc.copy()
    ref[:33] += -0.7 * row[:33]
    jit.add_scaled(fc, 33, -0.7, row)
    assert fc.tobytes() == ref.tobytes()
