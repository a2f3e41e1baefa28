"""The kernel layer: every kernel value is the same bits whatever the path, the storage or the threads.

* Every routine follows one summation order, checked bit for bit against the
  plain-Python definition (``stripe_reference``) on small inputs of every
  length remainder (so a fused multiply-add or a reordered sum anywhere fails).
* The same pair of examples gives the same bits through ``row``, ``block`` at
  many shapes and offsets, ``entries`` (cached or not), ``against``, ``diag``,
  the solvers' own paths, dense float64 / float32 / CSR storage, and with 1 or
  more kernel and BLAS threads (``np.array_equal``, never ``allclose``).
* The tanimoto kernel, sparse data that are never densified, the pool held
  once, and the sums that feed solver state (decision values, pool scores).
"""

from __future__ import annotations

import math
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

from core import _kernels_jit as jit
from core.kernels import (
    EXTRA_ROWS,
    DataStore,
    Kernel,
    KernelCache,
    add_weighted_rows,
    as_data_matrix,
    dot,
    resolve_gamma,
    rows_dot,
)
from core.solvers import SOLVER_NAMES, make_solver
from core.threads import kernel_threads, set_kernel_threads

KERNELS = ["linear", "rbf", "poly", "tanimoto"]


def sample(n, d, seed, *, density=0.5, nonnegative=False, dtype=np.float64):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * rng.choice([0.01, 1.0, 30.0], size=(n, 1))
    X[rng.random((n, d)) > density] = 0.0
    if nonnegative:
        X = np.abs(X)
    else:
        X[rng.random((n, d)) < 0.02] = -0.0  # signed zeros must not matter
    return X.astype(dtype)


def reference_kernel(kernel: Kernel, a, b) -> float:
    """K(a, b) from the plain-Python stripe sums, with the same final formula as the compiled code."""
    minsum = kernel.name == "tanimoto"
    g = jit.stripe_reference(a, b, minsum)
    ta, tb = jit.stripe_reference(a, a, minsum), jit.stripe_reference(b, b, minsum)
    return float(jit.kernel_value(g, ta, tb, jit.KIND[kernel.name], kernel.gamma, kernel.coef0, kernel.degree))


def make_kernel(name):
    return Kernel(name, gamma=0.05, degree=3, coef0=1.0)


# --------------------------------------------------------------------------- the summation order
@pytest.mark.parametrize("d", list(range(0, 18)) + [31, 64, 100])
@pytest.mark.parametrize("minsum", [False, True])
def test_inner_products_follow_the_reference_order_bit_for_bit(d, minsum):
    X = sample(11, d, seed=d, nonnegative=minsum)
    Y = sample(9, d, seed=100 + d, nonnegative=minsum)
    kernel = Kernel("tanimoto" if minsum else "linear")
    K = kernel(X, Y)
    if minsum:  # K = g / (t_a + t_b - g): compare the min-sums themselves through the formula
        expected = np.array([[reference_kernel(kernel, a, b) for b in Y] for a in X])
    else:
        expected = np.array([[jit.stripe_reference(a, b) for b in Y] for a in X])
    assert np.array_equal(K, expected.reshape(K.shape))
    # the same through the CSR routine and in float32 storage
    assert np.array_equal(kernel(sp.csr_matrix(X), sp.csr_matrix(Y)), K)
    X32, Y32 = X.astype(np.float32), Y.astype(np.float32)
    expected32 = np.array(
        [[reference_kernel(kernel, a, b) if minsum else jit.stripe_reference(a, b) for b in Y32] for a in X32]
    ).reshape(K.shape)
    assert np.array_equal(kernel(X32, Y32), expected32)


@pytest.mark.parametrize("d", [3001, 3008])
def test_blocks_wider_than_the_cache_block_follow_the_reference(d):
    """Many features: the block routine walks B in several column blocks (about 256 KB each)."""
    X = sample(23, d, seed=d, density=0.9)
    Y = sample(41, d, seed=d + 1, density=0.9)
    expected = np.array([[jit.stripe_reference(a, b) for b in Y] for a in X])
    assert np.array_equal(Kernel("linear")(X, Y), expected)
    assert np.array_equal(Kernel("linear")(Y, X), expected.T)


@pytest.mark.parametrize("name", KERNELS)
def test_kernel_values_follow_the_reference_for_every_kernel(name):
    kernel = make_kernel(name)
    X = sample(13, 21, seed=4, nonnegative=name == "tanimoto")
    expected = np.array([[reference_kernel(kernel, a, b) for b in X] for a in X])
    assert np.array_equal(kernel(X, X), expected)


def test_our_exp_is_within_one_ulp_of_the_c_library():
    rng = np.random.default_rng(0)
    xs = -np.concatenate(
        [
            rng.uniform(0, 1, 4000),
            rng.uniform(0, 60, 4000),
            rng.uniform(700, 746, 4000),
            [0.0, 5e-324, 1e-300, 708.39, 708.4, 744.44, 745.13, 745.2, 800.0, 1e300],
        ]
    )
    K = Kernel("rbf", gamma=1.0)
    # exp(-gamma * d) with d = ||a - b||^2 = x for a = (sqrt(x)), b = 0: compute through the kernel itself
    ours = np.array([jit.kernel_value(0.0, x, 0.0, jit.RBF, 1.0, 0.0, 1) for x in -xs])
    libm = np.array([math.exp(x) for x in xs])
    ulp = np.abs(ours - libm) / np.spacing(np.maximum(libm, 5e-324))
    assert ulp.max() <= 1.0
    assert ours[xs == 0.0][0] == 1.0
    assert K(np.zeros((1, 3)), np.zeros((1, 3)))[0, 0] == 1.0


def test_the_integer_power_is_a_fixed_product_sequence():
    for x in (0.3, -1.7, 12.5):
        assert jit.int_power(x, 1) == x
        assert jit.int_power(x, 2) == x * x
        assert jit.int_power(x, 3) == x * (x * x)
        assert jit.int_power(x, 5) == x * ((x * x) * (x * x))


# --------------------------------------------------------------------------- every path, the same bits
def every_path(kernel: Kernel, X, full: np.ndarray, budget: int) -> None:
    """Each way the kernel layer has of computing an entry returns full[i, j] exactly."""
    n = full.shape[0]
    cache = KernelCache(kernel, DataStore(X), budget)
    rng = np.random.default_rng(7)
    for i in (0, 1, n // 2, n - 1):
        assert np.array_equal(cache.row(i), full[i])
        assert np.array_equal(cache.row(i), full[i])  # (a hit when the budget allows)
        cols = rng.permutation(n)[:17]
        assert np.array_equal(cache.entries(i, cols), full[i, cols])
    for rows, cols in [
        ((0,), range(n)),
        (range(n), (3,)),
        (range(1, 6), range(2, 9)),
        (range(3), range(4)),
        (range(4), range(3)),
        (range(5, 55), range(7, 70)),
        (range(n), range(n)),
        (rng.permutation(n)[:37], rng.permutation(n)[:29]),
        ((4, 4, 9), (9, 4)),
    ]:
        rows, cols = np.asarray(list(rows)), np.asarray(list(cols))
        assert np.array_equal(cache.block(rows, cols), full[np.ix_(rows, cols)]), (len(rows), len(cols))
    assert np.array_equal(cache.rows([5, 2, 5]), full[[5, 2, 5]])
    Z = X[[3, 8, 1]]
    assert np.array_equal(cache.against(Z, np.arange(n)), full[[3, 8, 1]])
    assert np.array_equal(cache.diag(np.arange(n)), np.diag(full))
    assert np.array_equal(cache.self_values(np.arange(n)), np.diag(full))
    assert np.array_equal(kernel.diag(X), np.diag(full))
    assert np.array_equal(full, full.T)  # symmetric, bit for bit


@pytest.mark.parametrize("name", KERNELS)
@pytest.mark.parametrize("storage", ["float64", "float32", "csr"])
@pytest.mark.parametrize("budget", [0, 64 * 2**20])
def test_every_path_gives_the_same_bits(name, storage, budget):
    kernel = make_kernel(name)
    X = sample(90, 37, seed=1, nonnegative=name == "tanimoto", dtype=np.float32 if storage == "float32" else np.float64)
    data = sp.csr_matrix(X) if storage == "csr" else X
    full = kernel(data, data)
    every_path(kernel, data, full, budget)
    # the same values whatever the storage: dense, CSR, float32 widened
    assert np.array_equal(full, kernel(X.astype(np.float64), X.astype(np.float64)))
    assert np.array_equal(full, kernel(sp.csr_matrix(X.astype(np.float64)), X.astype(np.float64)))


@pytest.mark.parametrize("name", KERNELS)
@pytest.mark.parametrize("d", [2, 5, 13])
def test_a_kernel_row_asked_for_as_a_column_has_the_rows_bits(name, d):
    """K(pool, x) as one column (transformed as one vector) equals K(x, pool) and the reference."""
    kernel = make_kernel(name)
    X = sample(301, d, seed=d, nonnegative=name == "tanimoto")
    x = X[[17]]
    column, row = kernel(X, x), kernel(x, X)
    assert column.shape == (301, 1) and row.shape == (1, 301)
    assert np.array_equal(column[:, 0], row[0])
    assert np.array_equal(row[0], [reference_kernel(kernel, x[0], b) for b in X])
    cache = KernelCache(kernel, DataStore(X), 0)
    assert np.array_equal(cache.row(17), row[0])
    assert np.array_equal(cache.block(np.arange(301), np.array([17])), column)
    # a pool large enough to be split across threads (chunks of the column), against two columns (each
    # row of the block transformed on its own: the per-row path)
    big = sample(400_003, d, seed=d + 1, nonnegative=name == "tanimoto")
    pair = big[[5, 17]]
    assert np.array_equal(kernel(big, pair[:1])[:, 0], kernel(big, pair)[:, 0])
    assert np.array_equal(kernel(big, pair[1:])[:, 0], kernel(big, pair)[:, 1])


@pytest.mark.parametrize("name", KERNELS)
def test_the_solvers_own_paths_give_the_kernel_layers_bits(name):
    kernel_name = name
    X = np.random.default_rng(3).random((60, 12))
    y = np.where(np.arange(60) % 3 == 0, 1.0, -1.0)
    lasvm = make_solver("lasvm", X, kernel=kernel_name, gamma=0.05, C=10.0)
    inc = make_solver("incremental", X, kernel=kernel_name, gamma=0.05, C=10.0, learned_kernel_bytes=0)
    full = lasvm.kernel(X, X)
    for i in range(0, 60, 2):
        lasvm.learn(i, y[i])
        inc.learn(i, y[i])
    lasvm.finish()
    n = lasvm.set_size_
    S = lasvm._S[:n]
    for p in range(n):  # every row of K(S, S) the solver computes, cached or not
        assert np.array_equal(lasvm._row(p)[:n], full[S[p], S])
    assert np.array_equal(lasvm._rows_against_S(np.array([1, 5]), n), full[np.ix_([1, 5], S)])
    assert np.array_equal(lasvm._diag(np.array([1, 5])), np.diag(full)[[1, 5]])
    L = inc._pidx[: inc._nL]
    assert np.array_equal(inc._kernel_row(int(L[0])), full[L[0], L])
    # decision values: a stored index, the same point given as new data, in any batch, the same bits
    for solver in (lasvm, inc):
        f = solver.decision_function()
        assert np.array_equal(f, solver.decision_function(X=X))
        assert np.array_equal(f[[7, 3]], solver.decision_function([7, 3]))
        sv, coef, b = solver.coefficients()
        assert np.array_equal(f, rows_dot(full[:, sv], coef) + b)


@pytest.mark.parametrize("name", KERNELS)
def test_thread_counts_do_not_change_a_bit(name):
    kernel = make_kernel(name)
    X = sample(700, 300, seed=5, nonnegative=name == "tanimoto")  # large enough to be split across threads
    S = sp.csr_matrix(X)
    before = kernel_threads()
    try:
        results = []
        for threads in (1, 2, 3):
            set_kernel_threads(threads)
            with threadpool_limits(1 if threads == 1 else 2):
                cache = KernelCache(kernel, DataStore(X), 0)
                results.append(
                    (kernel(X, X), kernel(S, S[:40]), cache.row(5), cache.block(np.arange(700), np.arange(9)))
                )
        for other in results[1:]:
            for a, b in zip(results[0], other, strict=True):
                assert np.array_equal(a, b)
    finally:
        set_kernel_threads(before)


# --------------------------------------------------------------------------- sparse rows
def test_sparse_rows_give_the_dense_bits_with_explicit_zeros_and_unsorted_indices():
    X = sample(40, 23, seed=9)
    M = sp.csr_matrix(X)
    # shuffle each row's entries and add explicit zeros: the store puts it in canonical form
    rng = np.random.default_rng(0)
    rows, cols, vals = [], [], []
    for i in range(40):
        start, stop = M.indptr[i], M.indptr[i + 1]
        order = rng.permutation(stop - start)
        rows += [i] * (stop - start + 1)
        cols += list(M.indices[start:stop][order]) + [int(rng.integers(0, 23))]
        vals += list(M.data[start:stop][order]) + [0.0]
    messy = sp.coo_matrix((vals, (rows, cols)), shape=X.shape).tocsr()
    messy.has_sorted_indices = False
    for name in KERNELS:
        data = np.abs(X) if name == "tanimoto" else X
        sparse = abs(messy) if name == "tanimoto" else messy
        kernel = make_kernel(name)
        assert np.array_equal(kernel(sparse, sparse), kernel(data, data))
        assert np.array_equal(KernelCache(kernel, DataStore(sparse), 0).row(3), kernel(data, data)[3])


def test_the_inverted_index_gives_the_same_bits_in_any_column_order_and_pass_width(monkeypatch):
    import core.kernels

    X = sample(120, 40, seed=10, density=0.2)
    kernel = make_kernel("rbf")
    full = kernel(X, X)
    cache = KernelCache(kernel, DataStore(sp.csr_matrix(X)), 0)
    monkeypatch.setattr(core.kernels, "_INVERTED_WIDTH", 7)  # many passes over narrow row ranges
    cols = np.random.default_rng(1).permutation(120)
    assert np.array_equal(cache.block([5, 9, 77], cols), full[np.ix_([5, 9, 77], cols)])
    assert np.array_equal(cache.row(11, keep=False), full[11])
    assert np.array_equal(
        cache.decision(np.arange(120), [3, 50], [0.5, -1.5], 0.25),
        rows_dot(full[:, [3, 50]], np.array([0.5, -1.5])) + 0.25,
    )


def test_a_tf_idf_pool_is_never_densified():
    """10k documents x 50k terms: kernel rows, blocks and decision values work on the CSR rows.

    A dense copy would take 4 GB; the whole run stays far below 200 MB of allocations.
    """
    rng = np.random.default_rng(0)
    n, vocab, per_doc = 10_000, 50_000, 60
    indptr = np.arange(0, (n + 1) * per_doc, per_doc)
    indices = np.sort(rng.integers(0, vocab, size=(n, per_doc)), axis=1).ravel()
    data = rng.random(n * per_doc)
    X = sp.csr_matrix((data, indices, indptr), shape=(n, vocab))
    X.sum_duplicates()
    X = sp.csr_matrix(X.multiply(1.0 / np.sqrt(X.multiply(X).sum(axis=1))))  # L2-normalised rows
    y = np.where(rng.random(n) < 0.1, 1.0, -1.0)
    tracemalloc.start()
    try:
        s = make_solver("incremental", X, kernel="linear", C=1.0)
        for i in range(30):
            s.learn(i, y[i])
        f = s.decision_function()
        row = s.cache.row(3)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 200 * 2**20, f"peak allocation {peak / 2**20:.0f} MiB"
    assert s.store.is_sparse and len(f) == n and np.isfinite(f).all()
    # the linear kernel on L2-normalised rows is the cosine, and K(x, x) = 1 up to rounding
    np.testing.assert_allclose(row[3], 1.0, rtol=1e-12)
    dense_pair = X[[3, 17]].toarray()
    assert row[17] == Kernel("linear")(dense_pair[:1], dense_pair[1:])[0, 0]


def test_resolve_gamma_on_sparse_data_equals_the_dense_value():
    X = sample(50, 20, seed=2)
    for how in ("scale", "auto"):
        assert resolve_gamma(how, sp.csr_matrix(X)) == pytest.approx(resolve_gamma(how, X), rel=1e-12)


# --------------------------------------------------------------------------- tanimoto
def tanimoto_reference(A, B):
    """sum min / sum max computed with NumPy (independent of the compiled routines); 1 for 0 vs 0."""
    mins = np.minimum(A[:, None, :], B[None, :, :]).sum(axis=2)
    maxs = np.maximum(A[:, None, :], B[None, :, :]).sum(axis=2)
    return np.where(maxs == 0, 1.0, mins / np.where(maxs == 0, 1.0, maxs))


def fingerprints(n, bits, seed, on=0.15):
    rng = np.random.default_rng(seed)
    return (rng.random((n, bits)) < on).astype(np.float64)


def test_tanimoto_on_bits_is_the_jaccard_index_and_k_of_zero_and_zero_is_one():
    F = fingerprints(30, 64, seed=1)
    F[0] = 0.0
    F[1] = 0.0
    K = Kernel("tanimoto")(F, F)
    inter = F @ F.T
    union = F.sum(1)[:, None] + F.sum(1)[None, :] - inter
    expected = np.where(union == 0, 1.0, inter / np.where(union == 0, 1.0, union))
    assert np.array_equal(K, expected)  # small integers: exact
    assert K[0, 1] == 1.0 and K[0, 2] == 0.0 and np.all(np.diag(K) == 1.0)
    counts = np.random.default_rng(2).poisson(0.4, (25, 40)).astype(float)
    np.testing.assert_allclose(
        Kernel("tanimoto")(counts, counts), tanimoto_reference(counts, counts), rtol=1e-15, atol=0
    )


def test_tanimoto_is_positive_semi_definite_on_non_negative_data():
    for X in (
        fingerprints(80, 32, seed=3),
        np.random.default_rng(4).random((80, 5)),
        np.vstack([np.zeros((3, 6)), np.random.default_rng(5).poisson(1.0, (40, 6))]).astype(float),
    ):
        eig = np.linalg.eigvalsh(Kernel("tanimoto")(X, X))
        assert eig.min() >= -1e-12 * eig.max()


@pytest.mark.parametrize("solver", SOLVER_NAMES)
def test_a_negative_feature_is_refused_under_the_tanimoto_kernel(solver):
    X = fingerprints(6, 8, seed=0)
    X[4, 3] = -0.5
    with pytest.raises(
        ValueError,
        match=r"example 4: the tanimoto kernel needs non-negative features.*feature 3 "
        r"is -0\.5",
    ):
        make_solver(solver, X, kernel="tanimoto")
    with pytest.raises(ValueError, match="example 4"):
        make_solver(solver, sp.csr_matrix(X), kernel="tanimoto")


def kkt_violation(K, y, coef, b, C, bias=True):
    """Largest violation of the C-SVC KKT conditions (y f - 1 >= 0 at 0, = 0 inside, <= 0 at C)."""
    alpha = coef * y
    yf = y * (K @ coef + (b if bias else 0.0)) - 1.0
    at0, atC = alpha <= 1e-9 * C, alpha >= C * (1 - 1e-9)
    free = ~at0 & ~atC
    v = np.concatenate([np.maximum(0.0, -yf[at0]), np.maximum(0.0, yf[atC]), np.abs(yf[free])])
    return float(v.max(initial=0.0))


@pytest.mark.parametrize("solver", SOLVER_NAMES)
@pytest.mark.parametrize("storage", ["dense", "csr"])
def test_every_solver_learns_fingerprints_with_the_tanimoto_kernel(solver, storage):
    """Binary fingerprint-like data, against a dense QP and scikit-learn's SVC on the precomputed kernel."""
    from tests.reference import dense_svm_dual

    svm = pytest.importorskip("sklearn.svm")
    rng = np.random.default_rng(11)
    F = fingerprints(70, 48, seed=12, on=0.2)
    y = np.where(F[:, :6].sum(1) + rng.normal(0, 0.6, 70) > 1.2, 1.0, -1.0)
    K = tanimoto_reference(F, F)
    C = 2.0
    data = sp.csr_matrix(F) if storage == "csr" else F
    params = dict(kernel="tanimoto", C=C, tol=1e-8)
    if solver == "ramp":
        params.update(max_nonsv=None)
    s = make_solver(solver, data, **params)
    for i in rng.permutation(70):
        s.learn(int(i), y[i])
    s.finish()
    sv, coef_sv, b = s.coefficients()
    coef = np.zeros(70)
    coef[sv] = coef_sv
    f = s.decision_function()
    np.testing.assert_allclose(f, K @ coef + b, atol=1e-9)
    if solver == "ramp":  # no bias and the ramp loss: the no-bias hinge QP when every example stays in V
        ref = dense_svm_dual(K, y, C, bias=False)
        assert s.in_V[s.labelled_].all()
        np.testing.assert_allclose(f, ref.decision(K, y), atol=1e-5)
        assert kkt_violation(K, y, coef, 0.0, C, bias=False) <= 1e-6
        return
    ref = dense_svm_dual(K, y, C)
    svc = svm.SVC(C=C, kernel="precomputed", tol=1e-10).fit(K, y)
    tol = 2e-3 if solver == "lasvm" else 1e-5  # LASVM stops at a tau-approximate solution (tol 1e-8 here)
    np.testing.assert_allclose(f, ref.decision(K, y), atol=tol)
    np.testing.assert_allclose(f, svc.decision_function(K), atol=tol)
    assert s.dual_objective() == pytest.approx(ref.objective, rel=1e-6)
    assert kkt_violation(K, y, coef, b, C) <= (1e-3 if solver == "lasvm" else 1e-6)
    # new fingerprints scored as new points
    G = fingerprints(5, 48, seed=13, on=0.2)
    np.testing.assert_allclose(s.decision_function(X=G), svc.decision_function(tanimoto_reference(G, F)), atol=tol)


# --------------------------------------------------------------------------- the store
def test_a_read_only_pool_is_wrapped_not_copied_and_growth_copies_once():
    X = np.random.default_rng(0).random((200, 7))
    view = X.view()
    view.flags.writeable = False
    store = DataStore(view, copy=False)
    assert np.shares_memory(store.X, X) and store.wraps_caller_data
    assert not store.X.flags.writeable
    with pytest.raises(ValueError):
        store.X[0, 0] = 1.0
    idx = store.append(np.ones((3, 7)))
    assert list(idx) == [200, 201, 202] and not store.wraps_caller_data
    assert not np.shares_memory(store.X, X)
    assert np.array_equal(store.X[:200], X) and np.array_equal(store.X[200:], np.ones((3, 7)))
    capacity = store.nbytes
    store.append(np.zeros((5, 7)))  # within the chunk of headroom: no reallocation
    assert store.nbytes == capacity
    # a writable array is copied by default
    assert not np.shares_memory(DataStore(X).X, X)


def test_a_solver_shares_the_loops_read_only_pool():
    from core.loop import ActiveLearningLoop

    X = np.random.default_rng(1).random((300, 5))
    loop = ActiveLearningLoop(X, strategy="near-boundary", seed=0)
    assert np.shares_memory(loop.X, X) and np.shares_memory(loop.solver.store.X, X)
    S = sp.csr_matrix(X)
    sparse_loop = ActiveLearningLoop(S, strategy="randomized-search", seed=0)
    assert np.shares_memory(sparse_loop.solver.store.X.data, S.data)


def test_float32_storage_halves_the_memory_and_computes_in_float64():
    X = np.random.default_rng(2).random((500, 16))
    s64 = make_solver("lasvm", X, gamma=0.5)
    s32 = make_solver("lasvm", X, gamma=0.5, dtype="float32")
    assert s32.store.X.dtype == np.float32 and s32.store.nbytes * 2 <= s64.store.nbytes
    X32 = X.astype(np.float32).astype(np.float64)  # (widening is exact)
    assert np.array_equal(s32.cache.row(4), Kernel("rbf", 0.5)(X32[4:5], X32)[0])
    with pytest.raises(ValueError, match="dtype must be one of float64, float32"):
        make_solver("lasvm", X, dtype="float16")


def test_non_finite_values_are_refused_naming_the_example_and_feature():
    X = np.ones((5, 4))
    X[3, 2] = np.nan
    with pytest.raises(ValueError, match="example 3 has a non-finite value in feature 2"):
        as_data_matrix(X)
    with pytest.raises(ValueError, match="example 3 has a non-finite value in feature 2"):
        as_data_matrix(sp.csr_matrix(X))
    s = make_solver("incremental", np.zeros((2, 4)) + 1.0)
    with pytest.raises(ValueError, match="example 5 has a non-finite value in feature 2"):
        s.add_points(X)
    assert s.n_points == 2


# --------------------------------------------------------------------------- sums that feed solver state
def test_the_fixed_order_sums_agree_with_each_other_and_the_reference():
    rng = np.random.default_rng(3)
    M = rng.standard_normal((13, 29))
    v = rng.standard_normal(29)
    expected = np.array([jit.stripe_reference(row, v) for row in M])
    assert np.array_equal(rows_dot(M, v), expected)
    assert dot(M[4], v) == expected[4]
    # add_weighted_rows over the columns is rows_dot of the transposed rows, plus what f held
    f = np.zeros(13)
    add_weighted_rows(f, np.ascontiguousarray(M.T), np.arange(29), v)
    assert np.array_equal(f, expected)
    f = np.full(13, 2.5)
    w = v.copy()
    w[::3] = 0.0  # zero weights are skipped without changing a bit
    add_weighted_rows(f, np.ascontiguousarray(M.T), np.arange(29), w)
    assert np.array_equal(f, 2.5 + rows_dot(M, w))
    big = rng.standard_normal((7, 5000))  # more entries than one chunk of the routine
    g = np.zeros(5000)
    add_weighted_rows(g, big, np.array([6, 0, 3]), np.array([0.5, -2.0, 1.25]))
    assert np.array_equal(g, rows_dot(np.ascontiguousarray(big[[6, 0, 3]].T), np.array([0.5, -2.0, 1.25])))
    # many rows per stripe (added four at a time, then the rest one by one), some weights zero, rows
    # given through slots out of order, float64 and float32 rows, chunks and a partial last chunk
    many = rng.standard_normal((47, 2600)) * 10.0 ** rng.uniform(-6, 6, (47, 2600))
    slots = rng.permutation(47)[:45]
    weights = rng.standard_normal(45)
    weights[[1, 9, 17, 18, 40]] = 0.0
    f0 = rng.standard_normal(2600)
    for rows in (many, many.astype(np.float32)):
        h = f0.copy()
        add_weighted_rows(h, rows, slots, weights)
        want = f0 + rows_dot(np.ascontiguousarray(rows[slots].T.astype(np.float64)), weights)
        assert np.array_equal(h.view(np.int64), want.view(np.int64))


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_pool_score_updates_have_the_same_bits_on_any_number_of_threads(threads):
    """The loop's two in-place updates of the pool scores: ``add_scaled_rows`` gives the bits of
    NumPy's f += d * row made row after row (every product and sum rounded: no fused multiply-add),
    and both it and ``add_weighted_rows`` give the same bits when the entries are split across
    threads (each entry summed on its own)."""
    import core.threads as threads_module
    from core.kernels import add_scaled_rows
    from core.threads import set_kernel_threads

    rng = np.random.default_rng(11)
    n = 1_500_007  # enough entries for the work to be split across the threads
    f0 = rng.standard_normal(n) * 1e3
    # magnitudes far apart, where a fused multiply-add or another order would round differently
    rows = [rng.standard_normal(n) * 10.0 ** rng.uniform(-8, 8, n) for _ in range(6)]
    deltas = list(rng.standard_normal(6) * 1e-3)
    expected = f0.copy()
    for row, d in zip(rows, deltas, strict=True):
        expected += d * row
    before = threads_module._n_threads
    try:
        set_kernel_threads(threads)
        for count in (1, 2, 3, 4, 6):  # groups of four rows, and the remainders
            f = f0.copy()
            add_scaled_rows(f, rows[:count], deltas[:count])
            want = f0.copy()
            for row, d in zip(rows[:count], deltas[:count], strict=True):
                want += d * row
            assert np.array_equal(f.view(np.int64), want.view(np.int64)), count
        R = np.stack(rows)
        slots, weights = np.array([4, 0, 5, 2]), np.array([0.25, -1.5, 0.0, 3.0])
        f = f0.copy()
        add_weighted_rows(f, R, slots, weights)
        set_kernel_threads(1)
        g = f0.copy()
        add_weighted_rows(g, R, slots, weights)
        assert np.array_equal(f.view(np.int64), g.view(np.int64))
        np.testing.assert_allclose(f, f0 + weights @ R[slots], rtol=1e-12, atol=1e-9)
        # float32 rows (the loop's kernel_rows="float32"): the bits of the float64 rows of the same
        # values, on any number of threads
        R32 = R.astype(np.float32)
        h, k = f0.copy(), f0.copy()
        set_kernel_threads(threads)
        add_weighted_rows(h, R32, slots, weights)
        add_weighted_rows(k, R32.astype(np.float64), slots, weights)
        assert np.array_equal(h.view(np.int64), k.view(np.int64))
        # rows outside the buffer added in the same pass, first: the bits of add_scaled_rows over
        # them followed by the weighted sum, for none, a few, exactly EXTRA_ROWS and more (the
        # leading ones then go through add_scaled_rows), with and without weights
        extra = rows + [r[::-1].copy() for r in rows] + [rows[0] * 0.5]
        extra_deltas = deltas + [-d for d in deltas] + [7.0]
        zero = np.zeros(4)
        for count in (0, 1, 3, EXTRA_ROWS, EXTRA_ROWS + 1, 13):
            for w in (weights, zero):
                f = f0.copy()
                add_weighted_rows(f, R, slots, w, extra[:count], extra_deltas[:count])
                want = f0.copy()
                if count:
                    add_scaled_rows(want, extra[:count], extra_deltas[:count])
                add_weighted_rows(want, R, slots, w)
                assert np.array_equal(f.view(np.int64), want.view(np.int64)), count
        f = f0.copy()
        add_weighted_rows(f, None, [], [], extra[:2], extra_deltas[:2])  # (no buffer yet)
        want = f0.copy()
        add_scaled_rows(want, extra[:2], extra_deltas[:2])
        assert np.array_equal(f.view(np.int64), want.view(np.int64))
    finally:
        set_kernel_threads(before)
    with pytest.raises(ValueError, match="one delta per row"):
        add_scaled_rows(f0.copy(), rows[:2], deltas[:1])
    with pytest.raises(ValueError, match="one delta per extra row"):
        add_weighted_rows(f0.copy(), None, [], [], rows[:2], deltas[:1])


def test_an_update_with_no_weight_leaves_a_negative_zero_score_as_it_is():
    """Adding the weighted sum of no rows would turn a score of -0.0 into +0.0: it is not added."""
    f = np.array([-0.0, 1.0, -0.0])
    row = np.array([-0.0, 2.0, -0.0])  # (-0.0 + 1.0 * -0.0 is -0.0)
    add_weighted_rows(f, np.ones((2, 3)), [0, 1], [0.0, 0.0], [row], [1.0])
    assert np.signbit(f[0]) and np.signbit(f[2]) and f[1] == 3.0


def test_the_cache_spares_the_rows_a_caller_goes_through_again():
    """Going through more rows than fit, over and over: least-recently-used eviction misses on
    every access; sparing the rows of the round keeps those that fit, and the rest are computed
    without being kept.  The values are the same either way."""
    X = sample(400, 5, seed=4)
    kernel = make_kernel("rbf")
    full = kernel(X, X)
    row_bytes = 400 * 8
    needed = list(range(10))  # ten rows a round, room for six
    plain = KernelCache(kernel, DataStore(X), 6 * row_bytes)
    spared = KernelCache(kernel, DataStore(X), 6 * row_bytes)
    for _ in range(3):
        for i in needed:
            assert np.array_equal(plain.row(i), full[i])
            assert np.array_equal(spared.row(i, spare=frozenset(needed)), full[i])
    assert plain.hits == 0  # every row evicted just before it came round again
    assert spared.hits == 2 * 6 and spared.misses == 10 + 2 * 4
    # rows outside the spared set are still evicted to make room (least recently used first)
    spared.row(50, spare=frozenset({0, 1, 2, 3, 4}))
    assert spared.has_row(50) and spared.has_row(0) and not spared.has_row(5)


def test_a_row_handed_to_the_cache_is_kept_uncounted_and_released_on_request():
    """``keep``: a whole row computed elsewhere (the loop's buffer gives one up) is kept as given,
    within the budget and sparing the rows asked for, without counting an evaluation; a row of the
    wrong length is not kept; ``release`` drops a row without counting anything."""
    X = sample(300, 4, seed=9)
    kernel = make_kernel("rbf")
    cache = KernelCache(kernel, DataStore(X), 2 * 300 * 8)
    given = cache.compute_row(7)
    cache.keep(7, given.copy())
    evals = cache.n_evals
    assert cache.has_row(7) and np.array_equal(cache.row(7), given)
    assert cache.n_evals == evals and cache.hits == 1 and cache.misses == 0
    cache.keep(8, given[:100].copy())
    assert not cache.has_row(8)
    cache.row(3)
    cache.keep(9, cache.compute_row(9), spare=frozenset({3, 7}))  # no room without evicting 3 or 7
    assert not cache.has_row(9) and cache.has_row(3) and cache.has_row(7)
    cache.release(7)
    assert not cache.has_row(7) and cache.n_evals == evals + 300


# --------------------------------------------------------------------------- BLAS threads
def blas_thread_counts():
    """Threads of NumPy's and SciPy's BLAS (the ones the solvers use; a test reference such as
    cvxopt may have loaded a BLAS of its own)."""
    from threadpoolctl import threadpool_info

    ours = [
        lib
        for lib in threadpool_info()
        if lib["user_api"] == "blas" and Path(lib["filepath"]).parent.name in ("numpy.libs", "scipy.libs")
    ]
    assert ours
    return [lib["num_threads"] for lib in ours]


def test_solver_steps_run_on_one_blas_thread_whatever_the_caller_set():
    """Per-label algebra on one BLAS thread, also while another thread holds threadpoolctl's control."""
    import threading

    from core.solvers.incremental import IncrementalSVM

    seen = []

    class Probe(IncrementalSVM):
        def learn(self, i, y):
            seen.append(blas_thread_counts())
            return super().learn(i, y)

    X = np.random.default_rng(0).random((30, 4))
    s = Probe(X, C=1.0)
    entered, release = threading.Event(), threading.Event()

    def other_thread():
        with threadpool_limits(2):  # threadpoolctl then obeys this thread only
            entered.set()
            release.wait()

    t = threading.Thread(target=other_thread)
    t.start()
    entered.wait()
    try:
        with threadpool_limits(2):
            for i in range(6):
                s.learn(i, 1.0 if i % 2 else -1.0)
            after = blas_thread_counts()
    finally:
        release.set()
        t.join()
    assert seen and all(counts and set(counts) == {1} for counts in seen)
    assert set(after) == {2}  # restored on the way out


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_gamma_scale_of_a_large_pool_makes_no_copy_of_it(dtype):
    """Above VARIANCE_WHOLE entries the variance is summed block by block: the value of X.var()
    (to rounding) without a temporary the size of X (a second 600 MiB on a 100k x 784 pool)."""
    import tracemalloc

    from core.kernels import VARIANCE_WHOLE

    rng = np.random.default_rng(5)
    X = (3.0 + 2.0 * rng.standard_normal((VARIANCE_WHOLE // 30 + 77, 30))).astype(dtype)
    expected = 1.0 / (30 * float(np.asarray(X, dtype=np.float64).var()))
    tracemalloc.start()
    try:
        got = resolve_gamma("scale", X)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert got == pytest.approx(expected, rel=1e-12)
    assert peak < X.nbytes / 4, f"{peak / 2**20:.0f} MiB allocated for a {X.nbytes / 2**20:.0f} MiB pool"
    small = X[:1000]  # small arrays keep NumPy's own computation, bit for bit
    assert resolve_gamma("scale", small) == 1.0 / (30 * float(np.asarray(small, dtype=np.float64).var()))


def test_a_batch_learned_at_once_runs_on_one_blas_thread():
    """``learn_many`` (the review model's Newton steps factorise the Gram matrix of all its labels; a
    comparison's full-data reference learns the whole training split at once) runs on one BLAS thread as the
    per-label steps do: with two threads on a loaded 2-core machine each small factorisation waited on the
    other thread, and the comparison's reference took minutes instead of seconds."""
    from core.solvers.ramp import OnlineSVMR

    seen = []

    class Probe(OnlineSVMR):
        def _restore(self, *args, **kwargs):
            seen.append(blas_thread_counts())
            return super()._restore(*args, **kwargs)

    rng = np.random.default_rng(1)
    X = rng.random((40, 3))
    y = np.where(X[:, 0] + 0.2 * rng.standard_normal(40) > 0.5, 1.0, -1.0)
    s = Probe(X, C=1.0, loss="squared_hinge")  # (the review model's loss: all learned, then optimised once)
    with threadpool_limits(2):
        result = s.learn_many(np.arange(40), y)
        after = blas_thread_counts()
    assert result.success and seen and all(counts and set(counts) == {1} for counts in seen)
    assert set(after) == {2}  # restored on the way out
