"""The active-learning loop's evaluation set (:mod:`core.loop`): its items, true labels and the kernel
columns kept to score it after every label (see the loop's notes "Evaluation is cheap").

The kernel column K(evaluation items, x_j) of every pool item j that has carried a coefficient is
computed once (one item at a time, so its value does not depend on what else was computed with it)
and kept within ``EVAL_BUFFER_BYTES``; the evaluation scores are f = K(eval, sv) @ coef + b over the
current support vectors, gathered from the kept columns.
"""

from __future__ import annotations

import numpy as np

from core.kernels import add_weighted_rows
from core.metrics import accuracy, roc_auc

EVAL_BUFFER_BYTES = 64 * 2**20  # kernel columns K(evaluation items, x_j) kept for the evaluation


class EvaluationSet:
    """Evaluation items ``X`` (a data matrix of the pool's kind) with true labels ``y`` (+1 / -1).

    ``kernel``: the kernel whose row terms (squared norms; feature sums for tanimoto) the columns use.
    ``slot``: store index -> row of ``cols`` (the kept columns).
    """

    def __init__(self, X, y: np.ndarray, kernel):
        self.X = X
        self.y = y
        self.sq = kernel.row_terms(X)
        self.slot: dict[int, int] = {}
        self.cols = np.empty((0, X.shape[0]))

    def forget(self) -> None:
        """Let go of the kept columns (they are of a kernel the solver no longer has)."""
        self.slot = {}
        self.cols = np.empty((0, self.X.shape[0]))

    def scores(self, solver, pool_X) -> np.ndarray:
        """f(x) of the solver's model for every evaluation item (``pool_X``: the pool the solver learns on).

        K(eval, sv) @ coef + b from the kept kernel columns, summed in the kernel layer's fixed
        order: the same bits as ``solver.decision_function(X=eval_X)``.
        """
        sv, coef, b = solver.coefficients()
        sv = np.asarray(sv, dtype=np.intp)
        if len(sv) == 0:
            return np.full(self.X.shape[0], float(b))
        slots = self.columns(solver, pool_X, sv)
        if slots is None:  # beyond the buffer: computed for this call only
            cols, slots = solver.kernel(pool_X[sv], self.X, sq_b=self.sq), np.arange(len(sv))
        else:
            cols = self.cols
        f = np.zeros(self.X.shape[0])
        add_weighted_rows(f, cols, slots, coef)
        return f + float(b)

    def columns(self, solver, pool_X, sv: np.ndarray) -> np.ndarray | None:
        """Rows of ``cols`` holding K(x_j, eval) for j in ``sv`` (computed when missing), or None
        when the current support vectors' columns do not fit in ``EVAL_BUFFER_BYTES``."""
        slot = self.slot
        new = [int(j) for j in sv.tolist() if j not in slot]
        if new:
            eval_X = self.X
            n_eval = eval_X.shape[0]
            need = len(slot) + len(new)
            if need * n_eval * 8 > EVAL_BUFFER_BYTES:
                # keep only the current support vectors' columns, if they fit
                if len(sv) * n_eval * 8 > EVAL_BUFFER_BYTES:
                    return None
                keep = [int(j) for j in sv.tolist() if j in slot]
                self.cols = self.cols[[slot[j] for j in keep]]
                self.slot = slot = {j: k for k, j in enumerate(keep)}
                need = len(slot) + len(new)
            if need > len(self.cols):
                grown = np.empty((max(16, 2 * need), n_eval))
                grown[: len(slot)] = self.cols[: len(slot)]
                self.cols = grown
            kernel = solver.kernel
            for j in new:  # one item at a time: a column's value does not depend on the others
                k = len(slot)
                self.cols[k] = kernel(pool_X[j : j + 1], eval_X, sq_b=self.sq)[0]
                slot[j] = k
        return np.fromiter((slot[j] for j in sv.tolist()), dtype=np.intp, count=len(sv))

    def evaluate(self, solver, pool_X) -> tuple[float, float]:
        """ROC AUC and accuracy of the solver's model on the evaluation set."""
        f = self.scores(solver, pool_X)
        pred = np.where(f >= 0, 1.0, -1.0)
        return roc_auc(self.y, f), accuracy(self.y, pred)


__all__ = ["EVAL_BUFFER_BYTES", "EvaluationSet"]
