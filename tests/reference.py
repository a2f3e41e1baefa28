"""Independent references for solver tests: a dense QP solve of the SVM dual.

``dense_svm_dual`` solves the C-SVC dual (with or without the bias equality)
with cvxopt's interior-point QP on the full kernel matrix, then recovers the
bias from the free support vectors.  Used on small problems only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class DenseSolution:
    alpha: np.ndarray  # unsigned, 0 <= alpha <= C
    b: float
    objective: float  # W(alpha) = sum alpha - 1/2 alpha^T Q alpha

    def decision(self, K_test_train: np.ndarray, y: np.ndarray) -> np.ndarray:
        return K_test_train @ (self.alpha * y) + self.b


def dual_objective(alpha: np.ndarray, y: np.ndarray, K: np.ndarray) -> float:
    v = alpha * y
    return float(alpha.sum() - 0.5 * v @ K @ v)


def dense_svm_dual(K: np.ndarray, y: np.ndarray, C: float, bias: bool = True) -> DenseSolution:
    from cvxopt import matrix, solvers

    n = len(y)
    y = np.asarray(y, dtype=float)
    Q = (y[:, None] * y[None, :]) * K + 1e-12 * np.eye(n)
    P = matrix(Q)
    q = matrix(-np.ones(n))
    G = matrix(np.vstack([-np.eye(n), np.eye(n)]))
    h = matrix(np.concatenate([np.zeros(n), C * np.ones(n)]))
    opts = {"show_progress": False, "abstol": 1e-12, "reltol": 1e-12, "feastol": 1e-12, "maxiters": 200}
    if bias:
        A = matrix(y.reshape(1, -1))
        bvec = matrix(0.0)
        sol = solvers.qp(P, q, G, h, A, bvec, options=opts)
    else:
        sol = solvers.qp(P, q, G, h, options=opts)
    alpha = np.clip(np.array(sol["x"]).ravel(), 0.0, C)
    b = 0.0
    if bias:
        f0 = K @ (alpha * y)
        tol = 1e-6 * C
        free = (alpha > tol) & (alpha < C - tol)
        if free.any():
            b = float(np.median(y[free] - f0[free]))
        else:  # all bounded: b lies in an interval; take its midpoint
            up = ((alpha < C - tol) & (y > 0)) | ((alpha > tol) & (y < 0))
            lo = ((alpha < C - tol) & (y < 0)) | ((alpha > tol) & (y > 0))
            g = y - f0
            hi_b = g[lo].min() if lo.any() else np.inf
            lo_b = g[up].max() if up.any() else -np.inf
            b = (
                float((hi_b + lo_b) / 2)
                if np.isfinite(hi_b) and np.isfinite(lo_b)
                else float(lo_b if np.isfinite(lo_b) else hi_b)
            )
    return DenseSolution(alpha=alpha, b=b, objective=dual_objective(alpha, y, K))


def dense_l2_svm_dual(K: np.ndarray, y: np.ndarray, C) -> DenseSolution:
    """The squared-hinge (L2-loss) SVM without bias: max sum a - 1/2 a^T (Q + D) a, a >= 0, with
    D_ii = 1 / (2 C_i) (``C`` a number or one per example), by cvxopt's QP on the dense matrix.
    ``objective`` is that dual's value; ``decision`` gives f = K (a y), the model without D."""
    from cvxopt import matrix, solvers

    n = len(y)
    y = np.asarray(y, dtype=float)
    ridge = 0.5 / (np.asarray(C, dtype=float) * np.ones(n))
    Q = (y[:, None] * y[None, :]) * K + np.diag(ridge)
    opts = {"show_progress": False, "abstol": 1e-12, "reltol": 1e-12, "feastol": 1e-12, "maxiters": 200}
    sol = solvers.qp(matrix(Q), matrix(-np.ones(n)), matrix(-np.eye(n)), matrix(np.zeros(n)), options=opts)
    alpha = np.maximum(np.array(sol["x"]).ravel(), 0.0)
    objective = float(alpha.sum() - 0.5 * alpha @ Q @ alpha)
    return DenseSolution(alpha=alpha, b=0.0, objective=objective)
