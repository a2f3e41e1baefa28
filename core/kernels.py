"""Kernels, a growable data store and a kernel-row cache.

This is the layer every kernel value in MarginLab comes from.  Solvers, the
active-learning loop and the scorers obtain K(x_i, x_j) only through it.

Kernels (``Kernel(name=...)``)
------------------------------
=========== ================================================ =================================
name        K(x, z)                                          parameters
=========== ================================================ =================================
linear      <x, z>  (the cosine on L2-normalised rows)       —
rbf         exp(-gamma ||x - z||^2)                          gamma > 0
poly        (gamma <x, z> + coef0)^degree                    gamma > 0, coef0 >= 0, degree >= 1
tanimoto    sum_k min(x_k, z_k) / sum_k max(x_k, z_k)       — (non-negative features)
=========== ================================================ =================================

``tanimoto`` is the MinMax (generalised Tanimoto / Jaccard) similarity, the
standard similarity of molecular fingerprints: on binary vectors it is
|x AND z| / |x OR z|.  It is computed as m / (s_x + s_z - m) with
m = sum_k min(x_k, z_k) and s_x = sum_k x_k (for non-negative vectors
max(a, b) = a + b - min(a, b)).  K(0, 0) = 1 by definition (two empty
fingerprints are identical), so K(x, x) = 1 for every x; K(0, z) = 0 for
z != 0.  It is positive semi-definite on non-negative vectors: Ralaivola,
Swamidass, Saigo and Baldi, "Graph kernels for chemical informatics", Neural
Networks 18(8):1093-1110 (2005), prove it for the Tanimoto and MinMax kernels
(the binary case goes back to Gower, "A general coefficient of similarity and
some of its properties", Biometrics 27 (1971)); the zero vector, at K = 1 with
itself and 0 with everything else, keeps the kernel matrix block diagonal
with positive semi-definite blocks.  Negative features are refused.

Every kernel value is the same bits whatever the path
-----------------------------------------------------
A kernel value is a deterministic function of its two feature vectors alone:
the same bits whether it comes from a cached row, a block of any shape, a
single entry, a new point scored with ``against``, a dense or a CSR store,
one thread or many, on any IEEE-754 machine.  Inner products are summed in
one fixed order by compiled routines (:mod:`core._kernels_jit` explains the
order and why it holds; ``stripe_reference`` there is the plain-Python
definition the tests compare with, bit for bit), never by BLAS, whose order
depends on the CPU's kernels, the block edges and the thread split.  So a
value that was a cache hit before a restart and is recomputed after it,
through another path, is identical, and a solver resumed from a snapshot
continues exactly as if it had never stopped.  The squared norms and
feature sums the kernels use (``row_terms``) come from the same routine, so
K(x, x) computed as an entry of a block equals ``diag``, and an rbf K(x, x)
is exactly 1.  The rbf exp and the polynomial power are computed there too
(our own exp, not NumPy's, whose SIMD loops differ between CPUs).

Sums that feed solver state use the same order: :func:`dot` and
:func:`rows_dot` (decision values f = K(x, S) coef + b), and
:func:`add_weighted_rows` (the loop's pool-score update).

Data (``DataStore``)
--------------------
A growable matrix of examples whose indices never change:

* dense ``float64`` (default) or ``float32`` (``dtype="float32"``: half the
  memory; products and sums are still float64), or a ``scipy.sparse`` CSR
  matrix (e.g. TF-IDF rows) that is **never densified**: every kernel works on
  the CSR rows directly, with the same bits as on the dense rows.  A 10k x
  50k-term TF-IDF pool costs its nonzeros, never n x vocabulary.  rbf on
  sparse rows uses the stored squared norms; ``linear`` on L2-normalised
  TF-IDF rows is the cosine similarity.
* **The pool held once**: ``DataStore(X, copy=False)`` (and the first batch a
  solver receives when it is read-only, which is how the active-learning
  loop passes its pool) wraps the caller's matrix as a read-only view instead
  of copying it, so the loop, the solver and the scorer share one copy (a
  read-only ``numpy.memmap`` works too).  The caller must not modify a wrapped
  matrix.  Rows appended later go into a buffer the store owns, which grows in
  chunks (by half its size); the first append after wrapping copies the
  wrapped rows into it once.
* Non-finite values are refused, naming the example and the feature.
* A sparse store answers kernel rows over the whole store through an
  inverted index (``DataStore.inverted``: for each feature, the examples that
  have it; as many numbers as the nonzeros, made on first use), so a row costs
  the (feature, example) pairs it shares, not the size of the pool.

``as_data_matrix(X, dtype)`` gives the canonical read-only form the store
keeps (a view when nothing needs converting).  Solvers take ``dtype`` as a
parameter (``"float64"`` or ``"float32"``) and wrap the first batch given to
an empty store when it is read-only; ``ActiveLearningLoop`` passes its pool
that way, so pass ``solver_params={"dtype": "float32"}`` to the loop for a
float32 pool.

Kernel values (``KernelCache``)
-------------------------------
Every kernel value a solver uses goes through a :class:`KernelCache`, which
counts kernel evaluations (``n_evals``: one evaluation = one entry K(x_i, x_j)).

* ``row(i)`` — K(x_i, x_j) for every j in the store, cached with
  least-recently-used eviction under a byte budget; a cached row is extended
  when the store grows.  ``rows(idx)`` stacks rows.
* ``block(rows, cols)`` — a sub-matrix, computed (not cached).
* ``entries(i, cols)`` — from a cached row when there is one, else computed.
* ``against(Z, cols)`` — K(z, x_cols) for new points z (not in the store),
  converted to the store's dtype first.
* ``diag(idx)`` — K(x_i, x_i), kept once computed (counted once);
  ``self_values(idx)`` — the same values, neither kept nor counted.
* ``compute(rows, cols)`` — ``block`` without counting, for solvers that
  count their own evaluations (LASVM's K(x_k, S), the incremental solver's
  learned rows).
* ``decision(rows, sv, coef, b)`` / ``decision_against(Z, sv, coef, b)`` —
  f = sum_s coef_s K(x, x_s) + b in blocks, summed in the fixed order.

``Kernel.__call__(A, B, sq_a=None, sq_b=None)`` computes a kernel matrix of
any two matrices (dense or CSR) through the same routines; ``sq_a`` /
``sq_b`` may pass the rows' ``Kernel.row_terms`` (squared norms, or feature
sums for tanimoto) when already known.

A budget of 0 disables caching: results are identical bits, only slower.

Threads
-------
Large blocks run on every core, small ones on the calling thread
(:mod:`core.threads`, ``set_kernel_threads(n)``; the bits do not depend on
it).  The solvers' own per-label algebra runs on one BLAS thread (every
public solver method enters ``blas_single_thread``).  Nothing reads thread
environment variables.

The first call of each compiled routine compiles it (seconds; about 40 s for
all that a session uses on a 2-core machine) unless Numba's on-disk cache
(``cache=True``, in ``core/__pycache__`` or the user's cache folder) already
holds it; a process that finds them there loads them in well under a second.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from core import _kernels_jit as jit
from core.threads import run_chunks

KERNEL_NAMES = ("linear", "rbf", "poly", "tanimoto")
DTYPES = ("float64", "float32")
_FEW_ROWS = 4  # below this many rows on one side a block is computed one entry at a time
_SERIAL_COST = 1e6  # operations below which a block is computed in the calling thread (see core.threads)
_DECISION_CHUNK_ENTRIES = 1 << 22  # kernel entries per block when scoring many points


# ============================================================================ matrices
class Rows:
    """A dense 2-D array or the arrays of a CSR matrix: what the compiled routines read.

    Dense: ``dense`` is a C-contiguous float64 or float32 (n, d) array.
    Sparse: ``indptr``, ``indices`` (sorted within each row, no duplicates)
    and ``data`` of a CSR matrix with ``n_features`` columns.
    """

    __slots__ = ("dense", "indptr", "indices", "data", "n_rows", "n_features", "store", "_inverted")

    def __init__(self, dense=None, indptr=None, indices=None, data=None, n_rows=0, n_features=0, store=None):
        self.dense, self.indptr, self.indices, self.data = dense, indptr, indices, data
        self.n_rows, self.n_features = int(n_rows), int(n_features)
        self.store = store  # the DataStore these rows belong to (it keeps their inverted index)
        self._inverted = None

    def inverted(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The same sparse rows column by column (CSC arrays: int64 pointers, int32 sorted row indices, data)."""
        if self.store is not None:
            return self.store.inverted()
        if self._inverted is None:
            self._inverted = _to_columns(self.indptr, self.indices, self.data, self.n_rows, self.n_features)
        return self._inverted

    @property
    def sparse(self) -> bool:
        return self.dense is None

    def widened(self) -> Rows:
        """The same rows in float64 (exact)."""
        if self.sparse:
            return Rows(
                indptr=self.indptr,
                indices=self.indices,
                data=self.data.astype(np.float64),
                n_rows=self.n_rows,
                n_features=self.n_features,
            )
        return Rows(dense=self.dense.astype(np.float64), n_rows=self.n_rows, n_features=self.n_features)

    @classmethod
    def of(cls, X) -> Rows:
        """``X`` as Rows: a dense array or a CSR matrix in canonical form (see ``as_data_matrix``)."""
        if sp.issparse(X):
            return cls(
                indptr=np.asarray(X.indptr, dtype=np.int64),
                indices=np.asarray(X.indices, dtype=np.int32),
                data=X.data,
                n_rows=X.shape[0],
                n_features=X.shape[1],
            )
        return cls(dense=X, n_rows=X.shape[0], n_features=X.shape[1])


def _to_columns(indptr, indices, data, n_rows, n_features):
    M = sp.csr_matrix((data, indices, indptr[: n_rows + 1]), shape=(n_rows, n_features), copy=False).tocsc()
    M.sort_indices()
    return (
        np.ascontiguousarray(M.indptr, dtype=np.int64),
        np.ascontiguousarray(M.indices, dtype=np.int32),
        np.ascontiguousarray(M.data),
    )


def _float_dtype(dtype) -> np.dtype:
    if dtype is None:
        return np.dtype(np.float64)
    dt = np.dtype(dtype)
    if dt.name not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    return dt


def as_data_matrix(X, dtype=None, *, what: str = "examples", first_index: int = 0):
    """``X`` as a read-only dense C-contiguous array or a canonical CSR matrix, copying only when needed.

    ``dtype``: float64 (default) or float32.  Dense input that already has the
    dtype and is C-contiguous is returned as a read-only *view* (no copy); a
    CSR matrix whose data have the dtype and whose indices are sorted without
    duplicates keeps its arrays (read-only views).  Other sparse formats are
    converted to CSR.  Raises ``ValueError`` naming the example and feature of
    a value that is not finite (``first_index`` numbers the examples).
    """
    dt = _float_dtype(dtype)
    if sp.issparse(X):
        M = X if X.format == "csr" else X.tocsr()
        if M.ndim != 2:
            raise ValueError(f"{what} must form a 2-D matrix (n_samples, n_features)")
        if not np.issubdtype(M.dtype, np.number) or np.issubdtype(M.dtype, np.complexfloating):
            raise ValueError(f"{what} must be real numbers, got dtype {M.dtype}")
        if M.shape[1] >= 2**31:
            raise ValueError(f"{what} have {M.shape[1]} features; at most 2**31 - 1 are supported")
        canonical = M.has_canonical_format
        if M.dtype != dt or not canonical:
            M = sp.csr_matrix(M, dtype=dt, copy=True)
            M.sum_duplicates()  # (also sorts the indices)
        data = M.data.view()
        bad = np.flatnonzero(~np.isfinite(data))
        if len(bad):
            row = int(np.searchsorted(M.indptr, bad[0], side="right") - 1)
            raise ValueError(f"example {first_index + row} has a non-finite value in feature {int(M.indices[bad[0]])}")
        views = []
        for a in (M.data, M.indices, M.indptr):
            v = a.view()
            v.flags.writeable = False
            views.append(v)
        out = sp.csr_matrix(M.shape, dtype=dt)
        out.data, out.indices, out.indptr = views
        return out
    A = np.asarray(X)
    if A.dtype == object or not (np.issubdtype(A.dtype, np.number) or A.dtype == bool):
        try:
            A = np.asarray(X, dtype=np.float64)
        except (TypeError, ValueError) as err:
            raise ValueError(f"{what} must be numbers: {err}") from None
    if np.issubdtype(A.dtype, np.complexfloating):
        raise ValueError(f"{what} must be real numbers, got complex values")
    A = np.atleast_2d(A)
    if A.ndim != 2:
        raise ValueError(f"{what} must form a 2-D array (n_samples, n_features), got {A.ndim} dimensions")
    A = np.ascontiguousarray(A, dtype=dt)
    if A.size and not np.isfinite(A).all():
        bad = np.argwhere(~np.isfinite(A))[0]
        raise ValueError(f"example {first_index + int(bad[0])} has a non-finite value in feature {int(bad[1])}")
    v = A.view()
    v.flags.writeable = False
    return v


def _same_format(A: Rows, B: Rows) -> tuple[Rows, Rows]:
    """Bring two operands to one format and dtype, without changing a single kernel value.

    A dense operand next to a sparse one becomes CSR (a sparse operand is
    never densified; the dense one is small: new points, or a dense query
    against a CSR store).  float32 next to float64 is widened to float64,
    which is exact, and the routines widen every factor anyway.
    """
    if A.sparse != B.sparse:
        if A.sparse:
            B = Rows.of(as_data_matrix(sp.csr_matrix(B.dense), B.dense.dtype))
        else:
            A = Rows.of(as_data_matrix(sp.csr_matrix(A.dense), A.dense.dtype))
    da = (A.data if A.sparse else A.dense).dtype
    db = (B.data if B.sparse else B.dense).dtype
    if da != db:
        A, B = (A if da == np.float64 else A.widened()), (B if db == np.float64 else B.widened())
    return A, B


# ============================================================================ evaluation
def _dtype_name(a: np.ndarray) -> str:
    return "float32" if a.dtype.char == "f" else "float64"


def _intp(idx) -> np.ndarray:
    return np.ascontiguousarray(idx, dtype=np.intp).reshape(-1)


def row_terms(R: Rows, rows, tanimoto: bool) -> np.ndarray:
    """Squared norms (or, for tanimoto, feature sums) of rows ``rows`` of R, in the fixed order."""
    rows = _intp(rows)
    out = np.empty(len(rows))
    if len(rows) == 0:
        return out
    if R.sparse:
        jit.routine("csr_row_terms", _dtype_name(R.data))(R.indptr, R.indices, R.data, rows, tanimoto, out)
    else:
        jit.routine("dense_row_terms", _dtype_name(R.dense))(R.dense, rows, tanimoto, out)
    return out


def evaluate(kernel: Kernel, A: Rows, ia, ta, B: Rows, ib, tb) -> np.ndarray:
    """K(A[ia], B[ib]) of shape (len(ia), len(ib)), float64; ``ta`` / ``tb`` are the rows' terms.

    Chooses the routine (register tiles for blocks, one entry at a time when
    a side has few rows, CSR rows when the operands are sparse) and the
    threads; every choice gives the same bits.
    """
    ia, ib = _intp(ia), _intp(ib)
    ta = np.ascontiguousarray(ta, dtype=np.float64)
    tb = np.ascontiguousarray(tb, dtype=np.float64)
    m, n = len(ia), len(ib)
    if m == 0 or n == 0:
        return np.empty((m, n))
    A, B = _same_format(A, B)
    if A.sparse:
        return _evaluate_sparse(kernel, A, ia, ta, B, ib, tb)
    if m < n:  # the longer side is split across threads: it makes the rows of the output
        return np.ascontiguousarray(_evaluate_dense(kernel, B, ib, tb, A, ia, ta).T)
    return _evaluate_dense(kernel, A, ia, ta, B, ib, tb)


def _evaluate_dense(kernel: Kernel, A: Rows, ia, ta, B: Rows, ib, tb) -> np.ndarray:
    m, n = len(ia), len(ib)
    out = np.empty((m, n))
    d = A.n_features
    # (fewer than 8 features: one short sum per entry; else register tiles, or one entry at a time
    # against a few rows; the same bits either way)
    name = "dense_small" if d < 8 else "dense_rows" if n < _FEW_ROWS else "dense_block"
    routine = jit.routine(name + ("_min" if kernel.name == "tanimoto" else ""), _dtype_name(A.dense))
    args = kernel.routine_args
    cost = float(m) * n * max(1, d)
    if cost < _SERIAL_COST:
        routine(A.dense, ia, ta, B.dense, ib, tb, *args, out)
        return out

    def work(a: int, b: int) -> None:
        routine(A.dense, ia[a:b], ta[a:b], B.dense, ib, tb, *args, out[a:b])

    run_chunks(work, m, cost)
    return out


_INVERTED_WIDTH = 1 << 16  # rows of the answering side visited per pass of the inverted-index routine


def _evaluate_sparse(kernel: Kernel, A: Rows, ia, ta, B: Rows, ib, tb) -> np.ndarray:
    """``evaluate`` for CSR rows: the side with fewer rows asks, the other answers.

    When most of the answering side's rows are wanted (a kernel row over a
    pool, decision values over a pool), it is read through its inverted index
    (``Rows.inverted``: the work is the number of shared (feature, row)
    pairs, not the size of the pool); otherwise each asking row is scattered
    into a work vector and the answering rows' nonzeros are visited.  Both
    give the bits of the dense sum.
    """
    if len(ia) > len(ib):
        return np.ascontiguousarray(_evaluate_sparse(kernel, B, ib, tb, A, ia, ta).T)
    m, n = len(ia), len(ib)
    out = np.empty((m, n))
    args = (kernel.kind, float(kernel.gamma), float(kernel.coef0), int(kernel.degree))
    dtype = _dtype_name(A.data)
    if 8 * n < B.n_rows:  # a few answering rows: scatter each asking row, visit their nonzeros
        csr_rows = jit.routine("csr_rows", dtype)

        def scatter(a: int, b: int) -> None:
            csr_rows(
                A.indptr,
                A.indices,
                A.data,
                ia[a:b],
                ta[a:b],
                B.indptr,
                B.indices,
                B.data,
                ib,
                tb,
                A.n_features,
                *args,
                out[a:b],
            )

        nnz_b = float(np.sum(B.indptr[ib + 1] - B.indptr[ib]))
        run_chunks(scatter, m, float(m) * (nnz_b + 4 * n))
        return out
    ptr, row_of, values = B.inverted()
    routine = jit.routine("csr_rows_inverted", dtype)
    order = np.argsort(ib, kind="stable")
    in_order = bool(np.array_equal(order, np.arange(n)))
    wanted = ib[order]
    sorted_out = out if in_order else np.empty((m, n))
    # (work estimate: the shared (feature, row) pairs of the first asking row, times the rows)
    first = A.indices[A.indptr[ia[0]] : A.indptr[ia[0] + 1]]
    pairs = float(np.sum(ptr[first + 1] - ptr[first]))
    start = 0
    while start < n:
        j0 = int(wanted[start])
        stop = int(np.searchsorted(wanted, j0 + _INVERTED_WIDTH, side="left"))
        cols, t_cols = wanted[start:stop], tb[order[start:stop]]
        j1 = int(cols[-1]) + 1
        target = sorted_out if (start, stop) == (0, n) else np.empty((m, stop - start))

        def inverted(a: int, b: int, cols=cols, t_cols=t_cols, target=target, j0=j0, j1=j1) -> None:
            routine(
                A.indptr,
                A.indices,
                A.data,
                ia[a:b],
                ta[a:b],
                ptr,
                row_of,
                values,
                j0,
                j1,
                cols,
                t_cols,
                *args,
                target[a:b],
            )

        run_chunks(inverted, m, float(m) * (pairs + 2 * (stop - start)))
        if target is not sorted_out:
            sorted_out[:, start:stop] = target
        start = stop
    if not in_order:
        out[:, order] = sorted_out
    return out


def rows_dot(M: np.ndarray, v: np.ndarray) -> np.ndarray:
    """M @ v with each entry summed in the fixed order (not BLAS): decision values from kernel blocks."""
    M = np.ascontiguousarray(M, dtype=np.float64)
    v = np.ascontiguousarray(v, dtype=np.float64)
    if M.ndim != 2 or v.ndim != 1 or M.shape[1] != len(v):
        raise ValueError(f"rows_dot needs an (m, n) matrix and an n-vector, got {M.shape} and {v.shape}")
    out = np.empty(M.shape[0])
    if M.shape[0]:
        jit.routine("rows_dot")(M, v, out)
    return out


def dot(a: np.ndarray, b: np.ndarray) -> float:
    """<a, b> of two vectors summed in the fixed order (not BLAS)."""
    a = np.ascontiguousarray(a, dtype=np.float64).reshape(-1)
    b = np.ascontiguousarray(b, dtype=np.float64).reshape(-1)
    if len(a) != len(b):
        raise ValueError(f"dot needs vectors of one length, got {len(a)} and {len(b)}")
    return float(jit.routine("dot")(a, b))


_NO_ROWS = np.empty((0, 0))  # (the buffer of add_weighted_rows when it has no rows)
EXTRA_ROWS = jit.EXTRA_ROWS  # the rows outside the buffer that add_weighted_rows adds in its one pass


def add_weighted_rows(
    f: np.ndarray,
    rows: np.ndarray | None,
    slots,
    weights,
    extra_rows: Sequence[np.ndarray] = (),
    extra_deltas: Sequence[float] = (),
) -> None:
    """f += extra_deltas[t] * extra_rows[t] for t = 0, 1, ... in turn (as ``add_scaled_rows``), then
    f += sum_t weights[t] * rows[slots[t]] summed over t in the fixed (stripe) order, in place.

    Each f[j] gets exactly what ``rows_dot`` gives for the column j of the
    rows with the weights, plus f[j]: decision values kept current from kernel
    rows are summed like decision values computed from a block.  Both parts in
    one pass over f (the last ``EXTRA_ROWS`` extra rows; any before them first,
    by ``add_scaled_rows``): the same bits as ``add_scaled_rows`` followed by
    the weighted sum.  ``rows`` may be None when no weight is given.
    """
    if f.dtype != np.float64 or not f.flags.c_contiguous:
        raise ValueError("add_weighted_rows needs a contiguous float64 f")
    rows = _NO_ROWS if rows is None else rows
    if rows.dtype not in (np.float64, np.float32):
        raise ValueError("add_weighted_rows needs float64 or float32 rows")
    slots = _intp(slots)
    weights = np.ascontiguousarray(weights, dtype=np.float64)
    if len(slots) != len(weights):
        raise ValueError("add_weighted_rows needs one weight per slot")
    n = len(f)
    extra = [np.ascontiguousarray(r, dtype=np.float64) for r in extra_rows]
    if any(len(r) != n for r in extra) or len(extra) != len(extra_deltas):
        raise ValueError("add_weighted_rows needs one delta per extra row and extra rows as long as f")
    lead = max(0, len(extra) - jit.EXTRA_ROWS)
    if lead:
        add_scaled_rows(f, extra[:lead], extra_deltas[:lead])
    used_extra, k = extra[lead:], len(extra) - lead
    used = np.count_nonzero(weights)
    if not (k or used):
        return
    d = np.zeros(jit.EXTRA_ROWS)
    d[:k] = extra_deltas[lead:]
    padded = tuple(used_extra) + (f,) * (jit.EXTRA_ROWS - k)  # (unused beyond the first k)
    add = jit.routine("add_weighted_rows")
    run_chunks(lambda a, b: add(f, rows, slots, weights, padded, d, k, a, b), n, float(n) * (used + k))


def add_scaled_rows(f: np.ndarray, rows: Sequence[np.ndarray], deltas: Sequence[float]) -> None:
    """f += deltas[t] * rows[t] for t = 0, 1, ... in turn, in place: the bits of those NumPy
    updates made one after the other (each product and sum rounded, no fused multiply-add), in
    one pass over f per four rows and without a temporary per row."""
    if f.dtype != np.float64 or not f.flags.c_contiguous:
        raise ValueError("add_scaled_rows needs a contiguous float64 f")
    add, n = jit.routine("add_scaled_rows"), len(f)
    rows = [np.ascontiguousarray(r, dtype=np.float64) for r in rows]
    if any(len(r) != n for r in rows) or len(rows) != len(deltas):
        raise ValueError("add_scaled_rows needs one delta per row and rows as long as f")
    for t in range(0, len(rows), 4):
        group = rows[t : t + 4]
        k = len(group)
        d = np.zeros(4)
        d[:k] = deltas[t : t + 4]
        group = group + [group[0]] * (4 - k)  # (unused when k < 4)

        def chunk(a: int, b: int, g: list[np.ndarray] = group, d: np.ndarray = d, k: int = k) -> None:
            add(f, g[0], g[1], g[2], g[3], d, k, a, b)

        run_chunks(chunk, n, float(n) * k)


def _scores_and_mask(f: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    f = np.ascontiguousarray(f, dtype=np.float64).reshape(-1)
    mask = np.ascontiguousarray(mask, dtype=bool).reshape(-1)
    if len(f) != len(mask):
        raise ValueError(f"scores and mask differ in length: {len(f)} and {len(mask)}")
    return f, mask


def _masked_scan(name: str, f: np.ndarray, mask: np.ndarray, key) -> int:
    """Routine ``name``'s pick over f where mask, on the kernel threads: each takes a range, and the
    ranges' picks are compared in order with a strict ``<`` of ``key`` (so the lowest index wins
    ties, as in one pass); when no pick has a finite key, the first range's pick that exists (the
    first item of the mask, as in one pass)."""
    f, mask = _scores_and_mask(f, mask)
    scan = jit.routine(name)
    picks: dict[int, int] = {}

    def work(a: int, b: int) -> None:
        k = int(scan(f[a:b], mask[a:b]))
        picks[a] = k + a if k >= 0 else -1

    run_chunks(work, len(f), float(len(f)), min_cost=_SCAN_SPLIT)
    best, found = np.inf, -1
    for a in sorted(picks):
        k = picks[a]
        if k >= 0 and key(f[k]) < best:
            best, found = key(f[k]), k
    if found < 0:
        found = next((picks[a] for a in sorted(picks) if picks[a] >= 0), -1)
    return found


_SCAN_SPLIT = 2.5e5  # items per thread below which a scan stays on the calling thread


def masked_argmin_abs(f: np.ndarray, mask: np.ndarray) -> int:
    """The i with mask[i] whose |f[i]| is smallest (the lowest such i on ties), or -1: one pass over
    the kept pool scores, where ``np.argmin(np.abs(f[mask]))`` gathers and copies them first."""
    return _masked_scan("masked_argmin_abs", f, mask, abs)


def masked_argmax(f: np.ndarray, mask: np.ndarray) -> int:
    """The i with mask[i] whose f[i] is largest (the lowest such i on ties), or -1."""
    return _masked_scan("masked_argmax", f, mask, lambda v: -v)


def masked_count_abs_below(f: np.ndarray, mask: np.ndarray, limit: float) -> int:
    """The number of i with mask[i] and |f[i]| < limit."""
    f, mask = _scores_and_mask(f, mask)
    count = jit.routine("masked_count_abs_below")
    counts: list[int] = []
    run_chunks(
        lambda a, b: counts.append(int(count(f[a:b], mask[a:b], float(limit)))),
        len(f),
        float(len(f)),
        min_cost=_SCAN_SPLIT,
    )
    return sum(counts)


# ============================================================================ the kernel
@dataclass(frozen=True)
class Kernel:
    """A positive semi-definite kernel: ``linear``, ``rbf``, ``poly`` or ``tanimoto``.

    rbf:      K(x, z) = exp(-gamma * ||x - z||^2)
    poly:     K(x, z) = (gamma * <x, z> + coef0) ** degree
    linear:   K(x, z) = <x, z>
    tanimoto: K(x, z) = sum min(x_k, z_k) / sum max(x_k, z_k), 1 for x = z = 0
    (non-negative features; see the module docstring)
    """

    name: str = "rbf"
    gamma: float = 1.0
    degree: int = 3
    coef0: float = 1.0

    def __post_init__(self) -> None:
        """Refuse parameters that are not numbers, not finite or outside the kernel's domain.

        gamma > 0 and finite; coef0 finite, and >= 0 for ``poly`` (with a negative
        coef0 the polynomial kernel is not positive semi-definite, which every
        solver assumes); degree an integer, >= 1 for ``poly``.  Each message
        names the parameter and the value.
        """
        if self.name not in KERNEL_NAMES:
            raise ValueError(f"unknown kernel {self.name!r}; choose one of {', '.join(KERNEL_NAMES)}")

        def real(param: str, value) -> float:
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
                raise ValueError(f"kernel {param} must be a number, got {value!r}")
            if not np.isfinite(value):
                raise ValueError(f"kernel {param} must be a finite number, got {value!r}")
            return float(value)

        if real("gamma", self.gamma) <= 0:
            raise ValueError(f"kernel gamma must be a positive finite number, got {self.gamma!r}")
        coef0 = real("coef0", self.coef0)
        if self.name == "poly" and coef0 < 0:
            raise ValueError(
                f"kernel coef0 must be >= 0 for the poly kernel (a negative coef0 makes it "
                f"indefinite), got {self.coef0!r}"
            )
        degree = real("degree", self.degree)
        lowest = 1 if self.name == "poly" else 0
        if degree != int(degree) or degree < lowest:
            raise ValueError(f"kernel degree must be an integer >= {lowest}, got {self.degree!r}")

    @property
    def kind(self) -> int:
        return jit.KIND[self.name]

    @property
    def routine_args(self) -> tuple[int, float, float, int]:
        """(kind, gamma, coef0, degree) as the compiled routines take them."""
        return jit.KIND[self.name], float(self.gamma), float(self.coef0), int(self.degree)

    @property
    def needs_nonnegative(self) -> bool:
        """Whether the kernel is defined (positive semi-definite) for non-negative features only."""
        return self.name == "tanimoto"

    def row_terms(self, X) -> np.ndarray:
        """The per-row terms the kernel combines with inner products: squared norms, or feature sums
        for ``tanimoto``.  This is what ``sq_a`` / ``sq_b`` of ``__call__`` and ``DataStore.sq_norms``
        (``DataStore.row_terms``) hold."""
        R = Rows.of(as_data_matrix(X))
        return row_terms(R, np.arange(R.n_rows), self.name == "tanimoto")

    def __call__(self, A, B, *, sq_a: np.ndarray | None = None, sq_b: np.ndarray | None = None) -> np.ndarray:
        """Kernel matrix K(A, B) of shape (len(A), len(B)), float64.

        A and B: dense arrays (float32 stays float32, other types become
        float64) or CSR matrices.  ``sq_a`` / ``sq_b`` may pass the rows'
        ``row_terms`` when already known (a store's ``row_terms``); they are
        computed otherwise.
        """
        A, B = self._operand(A), self._operand(B)
        RA, RB = Rows.of(A), Rows.of(B)
        if RA.n_features != RB.n_features:
            raise ValueError(f"A has {RA.n_features} features, B has {RB.n_features}")
        tanimoto = self.name == "tanimoto"
        ta = row_terms(RA, np.arange(RA.n_rows), tanimoto) if sq_a is None else sq_a
        tb = row_terms(RB, np.arange(RB.n_rows), tanimoto) if sq_b is None else sq_b
        return evaluate(self, RA, np.arange(RA.n_rows), ta, RB, np.arange(RB.n_rows), tb)

    @staticmethod
    def _operand(X):
        if sp.issparse(X):
            return as_data_matrix(X, X.dtype if X.dtype in (np.float32, np.float64) else None)
        A = np.asarray(X)
        return as_data_matrix(A, np.float32 if A.dtype == np.float32 else np.float64)

    def diag(self, A) -> np.ndarray:
        """K(a, a) for every row a of A (the same bits as the diagonal entries of a block)."""
        return self.diag_from_terms(self.row_terms(A))

    def diag_from_terms(self, terms: np.ndarray) -> np.ndarray:
        """K(x, x) from the rows' terms t (the inner product <x, x>, or min-sum for tanimoto, is t)."""
        terms = np.ascontiguousarray(terms, dtype=np.float64).reshape(-1)
        out = np.empty(len(terms))
        if len(terms):
            jit.routine("diag_values")(terms, self.kind, float(self.gamma), float(self.coef0), int(self.degree), out)
        return out

    def to_dict(self) -> dict:
        return {"name": self.name, "gamma": float(self.gamma), "degree": int(self.degree), "coef0": float(self.coef0)}

    @classmethod
    def from_dict(cls, d: dict) -> Kernel:
        return cls(name=d["name"], gamma=float(d["gamma"]), degree=int(d["degree"]), coef0=float(d["coef0"]))


# dense arrays of up to this many entries take NumPy's X.var() (scikit-learn's gamma="scale", bit for
# bit); larger ones the same two passes over blocks of about _VARIANCE_BLOCK entries
VARIANCE_WHOLE = 2**22
_VARIANCE_BLOCK = 2**18


def _entry_variance(X: np.ndarray) -> float:
    """The variance of every entry of a dense X, in float64.

    ``X.var()`` makes a temporary the size of X (X - mean), which on a 100k x 784 pool is a
    second 600 MiB at the moment the pool is wrapped; above ``VARIANCE_WHOLE`` entries the mean
    and the squared deviations are summed over blocks of rows instead (the same value to
    rounding, and a fixed order: the blocks do not depend on the machine).
    """
    if X.size <= VARIANCE_WHOLE:
        return float(np.asarray(X, dtype=np.float64).var())
    rows = max(1, _VARIANCE_BLOCK // X.shape[1])
    starts = range(0, X.shape[0], rows)
    mean = sum(float(X[s : s + rows].sum(dtype=np.float64)) for s in starts) / X.size
    squares = 0.0
    for s in starts:
        dev = X[s : s + rows].astype(np.float64)  # (a copy of the block: float32 rows become float64)
        dev -= mean
        squares += float(np.square(dev, out=dev).sum())
    return squares / X.size


def resolve_gamma(gamma: float | str, X) -> float:
    """``"scale"`` → 1 / (n_features · Var(X)) as in scikit-learn; ``"auto"`` → 1 / n_features.

    X may be dense or sparse (the variance over every entry, zeros included).
    """
    if isinstance(gamma, str):
        if sp.issparse(X):
            n_features = X.shape[1]
            size = X.shape[0] * X.shape[1]
            if gamma == "scale":
                if size == 0:
                    return 1.0
                mean = float(X.sum(dtype=np.float64)) / size
                var = float(X.multiply(X).sum(dtype=np.float64)) / size - mean * mean
                return 1.0 / (n_features * var) if var > 0 else 1.0
        else:
            X = np.asarray(X)
            n_features = X.shape[1]
            if gamma == "scale":
                var = _entry_variance(X) if X.size else 0.0
                return 1.0 / (n_features * var) if var > 0 else 1.0
        if gamma == "auto":
            return 1.0 / n_features
        raise ValueError(f"gamma must be a positive number, 'scale' or 'auto', got {gamma!r}")
    return float(gamma)


# ============================================================================ the store
class DataStore:
    """A growable matrix of examples (dense float64/float32, or CSR); indices never change once given.

    ``copy=False`` wraps the first matrix given (here or in the first
    ``append``) as a read-only view instead of copying it; see the module
    docstring ("The pool held once").
    """

    def __init__(self, X=None, n_features: int | None = None, *, dtype=None, copy: bool = True):
        self.dtype = _float_dtype(dtype)
        self.n_features = n_features
        self.copy = bool(copy)
        self._n = 0
        self._sparse: bool | None = None
        # dense: _dense is (capacity, d); sparse: _indptr (capacity + 1), _indices/_data (nnz capacity)
        self._dense: np.ndarray | None = None
        self._indptr: np.ndarray | None = None
        self._indices: np.ndarray | None = None
        self._data: np.ndarray | None = None
        self._owned = True  # False while the store wraps a caller's matrix
        self._sq = np.empty(0)  # squared norms (row terms of linear / poly / rbf)
        self._sums: np.ndarray | None = None  # feature sums (row terms of tanimoto), made when asked for
        self._arange = np.arange(0, dtype=np.intp)
        self._inv: tuple[int, tuple[np.ndarray, np.ndarray, np.ndarray]] | None = None  # (rows covered, CSC
        # arrays) of a sparse store, see inverted()
        self._rows_view: Rows | None = None
        if X is not None:
            self.append(X)

    # -- contents ---------------------------------------------------------
    def __len__(self) -> int:
        return self._n

    @property
    def is_sparse(self) -> bool:
        return bool(self._sparse)

    @property
    def wraps_caller_data(self) -> bool:
        """Whether the rows are (still) the caller's matrix, not a copy."""
        return self._n > 0 and not self._owned

    @property
    def nbytes(self) -> int:
        """Bytes of the stored rows (capacity included; a wrapped matrix and an inverted index count too)."""
        arrays = (self._dense, self._indptr, self._indices, self._data) + (self._inv[1] if self._inv else ())
        return int(sum(a.nbytes for a in arrays if a is not None))

    @property
    def X(self):
        """The stored examples: a read-only dense view, or a CSR matrix over the stored arrays."""
        n = self._n
        if self._sparse:
            nnz = int(self._indptr[n])
            return sp.csr_matrix(
                (self._ro(self._data[:nnz]), self._ro(self._indices[:nnz]), self._ro(self._indptr[: n + 1])),
                shape=(n, self.n_features),
                copy=False,
            )
        if self._dense is None:
            return np.empty((0, self.n_features or 0), dtype=self.dtype)
        return self._ro(self._dense[:n])

    @staticmethod
    def _ro(a: np.ndarray) -> np.ndarray:
        v = a.view()
        v.flags.writeable = False
        return v

    @property
    def rows(self) -> Rows:
        """The stored rows as the compiled routines read them."""
        cached = self._rows_view
        if cached is not None and cached.n_rows == self._n and (cached.dense is self._dense or self._sparse):
            return cached
        self._rows_view = self._make_rows()
        return self._rows_view

    def _make_rows(self) -> Rows:
        n = self._n
        if self._sparse:
            return Rows(
                indptr=self._indptr,
                indices=self._indices,
                data=self._data,
                n_rows=n,
                n_features=self.n_features,
                store=self,
            )
        return Rows(
            dense=self._dense if self._dense is not None else np.empty((0, self.n_features or 0)),
            n_rows=n,
            n_features=self.n_features or 0,
        )

    def inverted(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """A sparse store's rows column by column (CSC), kept for kernel rows over the whole store.

        Made on first use and again after the store grew; it holds as many
        numbers as the store's nonzeros (an inverted index: for each feature,
        the examples that have it).
        """
        if not self._sparse:
            raise ValueError("a dense store has no inverted index")
        if self._inv is None or self._inv[0] != self._n:
            self._inv = (self._n, _to_columns(self._indptr, self._indices, self._data, self._n, self.n_features))
        return self._inv[1]

    @property
    def sq_norms(self) -> np.ndarray:
        """||x||^2 of every stored example (summed in the kernels' fixed order)."""
        return self._sq[: self._n]

    @property
    def feature_sums(self) -> np.ndarray:
        """sum_k x_k of every stored example (the tanimoto kernel's row terms)."""
        if self._sums is None or len(self._sums) < self._n:
            start = 0 if self._sums is None else len(self._sums)
            new = row_terms(self.rows, np.arange(start, self._n), True)
            self._sums = new if self._sums is None else np.concatenate([self._sums, new])
        return self._sums[: self._n]

    def row_terms(self, kernel: Kernel) -> np.ndarray:
        """The row terms ``kernel`` needs: ``feature_sums`` for tanimoto, else ``sq_norms``."""
        return self.feature_sums if kernel.name == "tanimoto" else self._sq[: self._n]

    def indices(self) -> np.ndarray:
        """0..n-1 (a cached array; do not modify)."""
        if len(self._arange) < self._n:
            self._arange = np.arange(max(self._n, 2 * len(self._arange)), dtype=np.intp)
        return self._arange[: self._n]

    def take(self, idx):
        """Rows ``idx`` as a new dense array or CSR matrix (a copy)."""
        idx = _intp(idx)
        return self.X[idx]

    # -- growing -------------------------------------------------------------
    def prepare(self, X, first_index: int | None = None):
        """X in this store's format and dtype (``as_data_matrix``), without storing it."""
        first = self._n if first_index is None else first_index
        return as_data_matrix(X, self.dtype, first_index=first)

    def append(self, X, *, wrap: bool | None = None) -> np.ndarray:
        """Add rows; return their store indices.

        ``wrap``: keep a read-only view of X instead of a copy when the store is
        empty (default: ``not copy``).  Dense rows cannot join a sparse store
        nor the reverse; a dense batch for a sparse store is converted to CSR.
        """
        M = self.prepare(X)
        sparse_in = sp.issparse(M)
        if self._sparse is None:
            if self.n_features is not None and M.shape[1] != self.n_features:
                raise ValueError(f"expected {self.n_features} features, got {M.shape[1]}")
            self._sparse = sparse_in
            self.n_features = int(M.shape[1])
        if M.shape[1] != self.n_features:
            raise ValueError(f"expected {self.n_features} features, got {M.shape[1]}")
        if self._sparse and not sparse_in:
            M = sp.csr_matrix(M)
        elif not self._sparse and sparse_in:
            raise ValueError("this store holds dense rows; pass dense rows (a sparse batch would have to be densified)")
        m = M.shape[0]
        start = self._n
        if self._n == 0 and (not self.copy if wrap is None else wrap):
            self._wrap(M)
        else:
            self._append_owned(M)
        self._n = start + m
        self._rows_view = None
        idx = np.arange(start, self._n)
        sq = row_terms(self.rows, idx, False)
        if len(self._sq) < self._n:
            grown = np.empty(max(self._n, len(self._sq) + len(self._sq) // 2))
            grown[:start] = self._sq[:start]
            self._sq = grown
        self._sq[start : self._n] = sq
        if self._sums is not None:
            self._sums = self._sums[:start]  # extended when next asked for
        return idx

    def _wrap(self, M) -> None:
        self._owned = False
        if sp.issparse(M):
            R = Rows.of(M)  # (int64 row pointers, int32 column indices: converted if the caller's differ)
            self._indptr, self._indices, self._data = R.indptr, R.indices, R.data
        else:
            self._dense = M

    def _append_owned(self, M) -> None:
        n, m = self._n, M.shape[0]
        need = n + m
        if self._sparse:
            nnz_old = int(self._indptr[n]) if self._indptr is not None else 0
            nnz_new = nnz_old + M.nnz
            if (
                self._indptr is None
                or self._data is None
                or not self._owned
                or need + 1 > len(self._indptr)
                or nnz_new > len(self._data)
            ):
                old_rows = 0 if self._indptr is None else len(self._indptr)
                old_nnz = 0 if self._data is None else len(self._data)
                cap_rows = max(need + 1, old_rows + old_rows // 2, 16)
                cap_nnz = max(nnz_new, old_nnz + old_nnz // 2, 16)
                indptr = np.zeros(cap_rows, dtype=np.int64)
                indices = np.zeros(cap_nnz, dtype=np.int32)
                data = np.zeros(cap_nnz, dtype=self.dtype)
                if n:
                    assert self._indptr is not None and self._indices is not None and self._data is not None
                    indptr[: n + 1] = self._indptr[: n + 1]
                    indices[:nnz_old] = self._indices[:nnz_old]
                    data[:nnz_old] = self._data[:nnz_old]
                self._indptr, self._indices, self._data = indptr, indices, data
                self._owned = True
            assert self._indptr is not None and self._indices is not None and self._data is not None  # (above)
            self._indptr[n + 1 : need + 1] = nnz_old + M.indptr[1:].astype(np.int64)
            self._indices[nnz_old:nnz_new] = M.indices
            self._data[nnz_old:nnz_new] = M.data
            return
        if self._dense is None or not self._owned or need > len(self._dense):
            old = 0 if self._dense is None else len(self._dense)
            cap = max(need, old + old // 2, 16)
            assert self.n_features is not None, "a store with rows knows their width"
            grown = np.empty((cap, self.n_features), dtype=self.dtype)
            if n:
                assert self._dense is not None
                grown[:n] = self._dense[:n]
            self._dense = grown
            self._owned = True
        self._dense[n:need] = M


# ============================================================================ the cache
class KernelCache:
    """LRU cache of kernel rows over a :class:`DataStore`, with a byte budget.

    ``n_evals`` counts every kernel entry computed (cache hits cost nothing).
    Every method returns the same bits for the same pair of examples (see the
    module docstring), so what the cache holds never changes a result.
    """

    def __init__(self, kernel: Kernel, store: DataStore, budget_bytes: int = 256 * 2**20):
        if budget_bytes < 0:
            raise ValueError("cache budget must be >= 0 bytes")
        self.kernel = kernel
        self.store = store
        self.budget_bytes = int(budget_bytes)
        self.n_evals = 0
        self.hits = 0
        self.misses = 0
        self._rows: OrderedDict[int, np.ndarray] = OrderedDict()
        self._bytes = 0
        self._diag = np.empty(0)
        self._row_routine: tuple[Callable, tuple] | None = None  # (compiled routine, its kernel arguments)
        # of _one_row

    # -- evaluation -------------------------------------------------------
    def _terms(self) -> np.ndarray:
        return self.store.row_terms(self.kernel)

    def _store_block(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        t = self._terms()
        R = self.store.rows
        return evaluate(self.kernel, R, rows, t[rows], R, cols, t[cols])

    def block(self, rows, cols) -> np.ndarray:
        """K(x_rows, x_cols), computed (not cached) and counted."""
        rows, cols = _intp(rows), _intp(cols)
        self.n_evals += len(rows) * len(cols)
        return self._store_block(rows, cols)

    def compute(self, rows, cols) -> np.ndarray:
        """K(x_rows, x_cols) like ``block`` but not counted (for solvers that count their own evaluations)."""
        rows, cols = _intp(rows), _intp(cols)
        if len(rows) == 1 and not self.store.is_sparse and len(cols) * (self.store.n_features or 1) < _SERIAL_COST:
            return self._one_row(rows, cols)[None, :]
        return self._store_block(rows, cols)

    def _one_row(self, row: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """K(x_row, x_cols) of a dense store, straight to the compiled routine (the online hot path:
        the same routine ``evaluate`` takes for one row, without its choices)."""
        R = self.store.rows
        t = self._terms()
        out = np.empty((len(cols), 1))
        if len(cols):
            if self._row_routine is None:  # (the store's dtype and width are fixed once it has rows)
                name = "dense_small" if R.n_features < 8 else "dense_rows"
                self._row_routine = (
                    jit.routine(name + ("_min" if self.kernel.name == "tanimoto" else ""), _dtype_name(R.dense)),
                    self.kernel.routine_args,
                )
            routine, args = self._row_routine
            routine(R.dense, cols, t[cols], R.dense, row, t[row], *args, out)
        return out[:, 0]

    def self_values(self, idx) -> np.ndarray:
        """K(x_i, x_i) for store indices, computed from the stored row terms (not counted, not kept)."""
        return self.kernel.diag_from_terms(self._terms()[_intp(idx)])

    def _new_points(self, Z) -> tuple[Rows, np.ndarray]:
        M = self.store.prepare(Z, first_index=0)
        if M.shape[1] != self.store.n_features:
            raise ValueError(f"expected {self.store.n_features} features, got {M.shape[1]}")
        RZ = Rows.of(M)
        return RZ, row_terms(RZ, np.arange(RZ.n_rows), self.kernel.name == "tanimoto")

    def against(self, Z, cols) -> np.ndarray:
        """K(z, x_cols) for new points z (not in the store), counted.

        Z (dense or CSR) is converted to the store's dtype first, so a new point
        equal to a stored example gets that example's kernel values.
        """
        cols = _intp(cols)
        RZ, tz = self._new_points(Z)
        self.n_evals += RZ.n_rows * len(cols)
        t = self._terms()
        return evaluate(self.kernel, RZ, np.arange(RZ.n_rows), tz, self.store.rows, cols, t[cols])

    def diag(self, idx) -> np.ndarray:
        """K(x_i, x_i); computed once per example and kept (not counted against the budget)."""
        n = len(self.store)
        if len(self._diag) < n:
            start = len(self._diag)
            self.n_evals += n - start
            terms = self._terms()[start:n]
            self._diag = np.concatenate([self._diag, self.kernel.diag_from_terms(terms)])
        return self._diag[idx]

    def compute_row(self, i: int) -> np.ndarray:
        """K(x_i, x_j) for all j in the store, computed now: nothing cached or counted.

        What :meth:`row` computes on a miss (the same bits); safe to call from another
        thread while this one works, once the row terms exist (:meth:`ready_for_rows`)
        and while the store does not grow.
        """
        rows = np.array([int(i)], dtype=np.intp)
        t = self._terms()
        return evaluate(self.kernel, self.store.rows, rows, t[rows], self.store.rows, self.store.indices(), t)[0]

    def ready_for_rows(self) -> None:
        """Compute the store's row terms now (before :meth:`compute_row` runs in another thread)."""
        self._terms()

    def has_row(self, i: int) -> bool:
        r = self._rows.get(int(i))
        return r is not None and len(r) == len(self.store)

    def row(
        self,
        i: int,
        keep: bool = True,
        computed: np.ndarray | None = None,
        spare: frozenset[int] | set[int] = frozenset(),
    ) -> np.ndarray:
        """K(x_i, x_j) for all j in the store (read-only; do not modify).

        ``keep=False`` returns a cached row when there is one but does not
        cache a newly computed row (for rows that are unlikely to be needed again).
        ``computed``: the row as :meth:`compute_row` gave it ahead of time (e.g. while an
        analyst read the item); used, and counted, as if computed here on a miss.
        ``spare``: rows not to evict to make room for this one (when only they could make room,
        the new row is not kept).  A caller that goes through the same rows over and over, more
        of them than fit, spares them: least-recently-used eviction would then evict each row
        just before it is needed again, and every access would miss.
        """
        i = int(i)
        n = len(self.store)
        r = self._rows.get(i)
        if r is not None and len(r) == n:
            self._rows.move_to_end(i)
            self.hits += 1
            return r
        self.misses += 1
        rows = np.array([i], dtype=np.intp)
        if r is not None:  # the store grew since this row was cached: extend it
            ext = self.block(rows, np.arange(len(r), n))[0]
            new = np.concatenate([r, ext])
            self._forget(i)
        else:  # against the whole store: the store's own index range and row terms, nothing gathered
            self.n_evals += n
            new = computed if computed is not None and len(computed) == n else self.compute_row(i)
        new.flags.writeable = False
        if keep:
            self._remember(i, new, spare)
        return new

    def rows(self, idx) -> np.ndarray:
        """Stack of ``row(i)`` for i in idx, shape (len(idx), n)."""
        idx = _intp(idx)
        if len(idx) == 0:
            return np.empty((0, len(self.store)))
        return np.vstack([self.row(i) for i in idx])

    def entries(self, i: int, cols) -> np.ndarray:
        """K(x_i, x_cols): from a cached row when there is one, else computed."""
        r = self._rows.get(int(i))
        cols = _intp(cols)
        if r is not None and (len(cols) == 0 or cols.max() < len(r)):
            self._rows.move_to_end(int(i))
            self.hits += 1
            return r[cols]
        return self.block([i], cols)[0]

    def decision(self, rows, sv, coef, b: float = 0.0) -> np.ndarray:
        """f = sum_s coef_s K(x_rows, x_sv[s]) + b for store indices, in blocks; counted.

        Each value is summed over the support vectors in the given order with
        the fixed-order routine, so it is the same bits for any chunking.
        """
        rows, sv = _intp(rows), _intp(sv)
        coef = np.ascontiguousarray(coef, dtype=np.float64)
        out = np.full(len(rows), float(b))
        if len(sv) == 0 or len(rows) == 0:
            return out
        chunk = max(1, _DECISION_CHUNK_ENTRIES // len(sv))
        for s in range(0, len(rows), chunk):
            out[s : s + chunk] = rows_dot(self.block(rows[s : s + chunk], sv), coef) + float(b)
        return out

    def decision_against(self, Z, sv, coef, b: float = 0.0) -> np.ndarray:
        """``decision`` for new points Z (dense or CSR), counted."""
        sv = _intp(sv)
        coef = np.ascontiguousarray(coef, dtype=np.float64)
        RZ, tz = self._new_points(Z)
        out = np.full(RZ.n_rows, float(b))
        if len(sv) == 0 or RZ.n_rows == 0:
            return out
        t = self._terms()
        chunk = max(1, _DECISION_CHUNK_ENTRIES // len(sv))
        for s in range(0, RZ.n_rows, chunk):
            part = np.arange(s, min(RZ.n_rows, s + chunk))
            self.n_evals += len(part) * len(sv)
            K = evaluate(self.kernel, RZ, part, tz[part], self.store.rows, sv, t[sv])
            out[part] = rows_dot(K, coef) + float(b)
        return out

    # -- bookkeeping ------------------------------------------------------
    def _remember(self, i: int, r: np.ndarray, spare: frozenset[int] | set[int] = frozenset()) -> None:
        if r.nbytes > self.budget_bytes:
            return
        if spare and self._bytes + r.nbytes > self.budget_bytes:
            free = self.budget_bytes - self._bytes
            evictable = []
            for j, kept in self._rows.items():  # least recently used first
                if free >= r.nbytes:
                    break
                if j not in spare:
                    evictable.append(j)
                    free += kept.nbytes
            if free < r.nbytes:
                return
            for j in evictable:
                self._forget(j)
        while self._bytes + r.nbytes > self.budget_bytes and self._rows:
            self._forget(next(iter(self._rows)))
        self._rows[i] = r
        self._bytes += r.nbytes

    def holds(self, i: int) -> bool:
        """Whether item i's row is in the cache."""
        return int(i) in self._rows

    def keep(self, i: int, row: np.ndarray, spare: frozenset[int] | set[int] = frozenset()) -> None:
        """Keep row i as given (its whole row over the store, computed by :meth:`compute_row` or
        :meth:`row`: the same bits), when there is room after sparing ``spare``; nothing is counted.
        The array is kept as it is, not copied, and made read-only: the caller gives it up."""
        if len(row) == len(self.store) and int(i) not in self._rows:
            row.flags.writeable = False
            self._remember(int(i), row, spare)

    def release(self, i: int) -> None:
        """Stop keeping row i (its caller keeps it elsewhere); nothing is counted."""
        self._forget(int(i))

    def _forget(self, i: int) -> None:
        r = self._rows.pop(i, None)
        if r is not None:
            self._bytes -= r.nbytes

    def clear(self) -> None:
        self._rows.clear()
        self._bytes = 0

    @property
    def n_cached_rows(self) -> int:
        return len(self._rows)

    @property
    def cached_bytes(self) -> int:
        return self._bytes


__all__ = [
    "DTYPES",
    "DataStore",
    "EXTRA_ROWS",
    "KERNEL_NAMES",
    "Kernel",
    "KernelCache",
    "Rows",
    "add_scaled_rows",
    "add_weighted_rows",
    "as_data_matrix",
    "dot",
    "evaluate",
    "masked_argmax",
    "masked_argmin_abs",
    "masked_count_abs_below",
    "resolve_gamma",
    "row_terms",
    "rows_dot",
]
