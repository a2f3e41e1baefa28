"""Kernels, a growable data store and a kernel-row cache.

Every kernel value a solver uses goes through a :class:`KernelCache`, which
counts kernel evaluations (one evaluation = one entry K(x_i, x_j)).

* ``KernelCache.row(i)`` returns K(x_i, x_j) for every j in the store, cached
  with least-recently-used eviction under a byte budget.  Rows are invalidated
  (extended lazily) when the store grows.
* ``KernelCache.block(rows, cols)`` computes a sub-matrix without caching,
  for solvers that must not touch the whole store (LASVM on a large pool).

A budget of 0 disables caching: results are identical, only slower.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

KERNEL_NAMES = ("linear", "rbf", "poly")


@dataclass(frozen=True)
class Kernel:
    """A positive semi-definite kernel: ``linear``, ``rbf`` or ``poly``.

    rbf:    K(x, z) = exp(-gamma * ||x - z||^2)
    poly:   K(x, z) = (gamma * <x, z> + coef0) ** degree
    linear: K(x, z) = <x, z>
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
            raise ValueError(f"kernel coef0 must be >= 0 for the poly kernel (a negative coef0 makes it "
                             f"indefinite), got {self.coef0!r}")
        degree = real("degree", self.degree)
        lowest = 1 if self.name == "poly" else 0
        if degree != int(degree) or degree < lowest:
            raise ValueError(f"kernel degree must be an integer >= {lowest}, got {self.degree!r}")

    def __call__(self, A: np.ndarray, B: np.ndarray, *, sq_a: np.ndarray | None = None,
                 sq_b: np.ndarray | None = None) -> np.ndarray:
        """Kernel matrix K(A, B) of shape (len(A), len(B)), float64."""
        A = np.atleast_2d(np.asarray(A, dtype=np.float64))
        B = np.atleast_2d(np.asarray(B, dtype=np.float64))
        G = A @ B.T
        if self.name == "linear":
            return G
        if self.name == "poly":
            return (self.gamma * G + self.coef0) ** int(self.degree)
        if sq_a is None:
            sq_a = np.einsum("ij,ij->i", A, A)
        if sq_b is None:
            sq_b = np.einsum("ij,ij->i", B, B)
        D = sq_a[:, None] + sq_b[None, :] - 2.0 * G
        np.maximum(D, 0.0, out=D)  # rounding can make a squared distance slightly negative
        np.multiply(D, -self.gamma, out=D)
        return np.exp(D, out=D)

    def diag(self, A: np.ndarray) -> np.ndarray:
        """K(a, a) for every row a of A."""
        A = np.atleast_2d(np.asarray(A, dtype=np.float64))
        if self.name == "rbf":
            return np.ones(len(A))
        sq = np.einsum("ij,ij->i", A, A)
        if self.name == "linear":
            return sq
        return (self.gamma * sq + self.coef0) ** int(self.degree)

    def to_dict(self) -> dict:
        return {"name": self.name, "gamma": float(self.gamma), "degree": int(self.degree),
                "coef0": float(self.coef0)}

    @classmethod
    def from_dict(cls, d: dict) -> Kernel:
        return cls(name=d["name"], gamma=float(d["gamma"]), degree=int(d["degree"]),
                   coef0=float(d["coef0"]))


def resolve_gamma(gamma: float | str, X: np.ndarray) -> float:
    """``"scale"`` → 1 / (n_features · Var(X)) as in scikit-learn; ``"auto"`` → 1 / n_features."""
    X = np.asarray(X, dtype=np.float64)
    if isinstance(gamma, str):
        if gamma == "scale":
            var = float(X.var()) if X.size else 0.0
            return 1.0 / (X.shape[1] * var) if var > 0 else 1.0
        if gamma == "auto":
            return 1.0 / X.shape[1]
        raise ValueError(f"gamma must be a positive number, 'scale' or 'auto', got {gamma!r}")
    return float(gamma)


class DataStore:
    """A growable float64 matrix of examples; indices never change once given."""

    def __init__(self, X: np.ndarray | None = None, n_features: int | None = None):
        self._X = np.empty((0, n_features or 0))
        self._sq = np.empty(0)
        self._n = 0
        self.n_features = n_features
        if X is not None:
            self.append(X)

    def append(self, X: np.ndarray) -> np.ndarray:
        """Add rows; return their store indices."""
        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        if X.ndim != 2:
            raise ValueError("examples must form a 2-D array (n_samples, n_features)")
        if not np.all(np.isfinite(X)):
            bad = np.argwhere(~np.isfinite(X))[0]
            raise ValueError(f"example {bad[0]} has a non-finite value in feature {bad[1]}")
        if self.n_features is None:
            self.n_features = X.shape[1]
            self._X = np.empty((0, self.n_features))
        if X.shape[1] != self.n_features:
            raise ValueError(f"expected {self.n_features} features, got {X.shape[1]}")
        need = self._n + len(X)
        if need > len(self._X):
            cap = max(need, 2 * len(self._X), 16)
            grown = np.empty((cap, self.n_features))
            grown[: self._n] = self._X[: self._n]
            sq = np.empty(cap)
            sq[: self._n] = self._sq[: self._n]
            self._X, self._sq = grown, sq
        self._X[self._n:need] = X
        self._sq[self._n:need] = np.einsum("ij,ij->i", X, X)
        idx = np.arange(self._n, need)
        self._n = need
        return idx

    def __len__(self) -> int:
        return self._n

    @property
    def X(self) -> np.ndarray:
        """Read-only view of the stored examples."""
        v = self._X[: self._n]
        v.flags.writeable = False
        return v

    @property
    def sq_norms(self) -> np.ndarray:
        return self._sq[: self._n]


class KernelCache:
    """LRU cache of kernel rows over a :class:`DataStore`, with a byte budget.

    ``n_evals`` counts every kernel entry computed (cache hits cost nothing).
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

    # -- evaluation -------------------------------------------------------
    def block(self, rows, cols) -> np.ndarray:
        """K(x_rows, x_cols), computed (not cached) and counted."""
        rows = np.asarray(rows, dtype=np.intp).reshape(-1)
        cols = np.asarray(cols, dtype=np.intp).reshape(-1)
        X, sq = self.store.X, self.store.sq_norms
        self.n_evals += len(rows) * len(cols)
        return self.kernel(X[rows], X[cols], sq_a=sq[rows], sq_b=sq[cols])

    def against(self, Z: np.ndarray, cols) -> np.ndarray:
        """K(z, x_cols) for new points z (not in the store), counted."""
        cols = np.asarray(cols, dtype=np.intp).reshape(-1)
        Z = np.atleast_2d(np.asarray(Z, dtype=np.float64))
        self.n_evals += len(Z) * len(cols)
        return self.kernel(Z, self.store.X[cols], sq_b=self.store.sq_norms[cols])

    def diag(self, idx) -> np.ndarray:
        """K(x_i, x_i); computed once per example and kept (not counted against the budget)."""
        n = len(self.store)
        if len(self._diag) < n:
            start = len(self._diag)
            self.n_evals += n - start
            self._diag = np.concatenate([self._diag, self.kernel.diag(self.store.X[start:n])])
        return self._diag[idx]

    def row(self, i: int, keep: bool = True) -> np.ndarray:
        """K(x_i, x_j) for all j in the store (read-only; do not modify).

        ``keep=False`` returns a cached row when there is one but does not
        cache a newly computed row (for rows that are unlikely to be needed again).
        """
        i = int(i)
        n = len(self.store)
        r = self._rows.get(i)
        if r is not None and len(r) == n:
            self._rows.move_to_end(i)
            self.hits += 1
            return r
        self.misses += 1
        if r is not None:  # the store grew since this row was cached: extend it
            ext = self.block([i], np.arange(len(r), n))[0]
            new = np.concatenate([r, ext])
            self._forget(i)
        else:
            # the whole store as it is (a view): gathering X[arange(n)] would copy it on every new row
            X, sq = self.store.X, self.store.sq_norms
            self.n_evals += n
            new = self.kernel(X[i:i + 1], X, sq_a=sq[i:i + 1], sq_b=sq)[0]
        new.flags.writeable = False
        if keep:
            self._remember(i, new)
        return new

    def rows(self, idx) -> np.ndarray:
        """Stack of ``row(i)`` for i in idx, shape (len(idx), n)."""
        idx = np.asarray(idx, dtype=np.intp).reshape(-1)
        if len(idx) == 0:
            return np.empty((0, len(self.store)))
        return np.vstack([self.row(i) for i in idx])

    def entries(self, i: int, cols) -> np.ndarray:
        """K(x_i, x_cols): from a cached row when there is one, else computed."""
        r = self._rows.get(int(i))
        cols = np.asarray(cols, dtype=np.intp).reshape(-1)
        if r is not None and (len(cols) == 0 or cols.max() < len(r)):
            self._rows.move_to_end(int(i))
            self.hits += 1
            return r[cols]
        return self.block([i], cols)[0]

    # -- bookkeeping ------------------------------------------------------
    def _remember(self, i: int, r: np.ndarray) -> None:
        if r.nbytes > self.budget_bytes:
            return
        while self._bytes + r.nbytes > self.budget_bytes and self._rows:
            self._forget(next(iter(self._rows)))
        self._rows[i] = r
        self._bytes += r.nbytes

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
