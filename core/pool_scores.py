"""The pool's kept decision values and the kernel rows kept to update them (the active-learning loop's,
:mod:`core.loop`; see its notes "Pool scores are kept current incrementally").

A :class:`PoolScores` belongs to one loop, which gives it the solver at each call (the loop replaces
its solver on undo and corrections); it holds the scores f, the coefficients they were computed from
(beta, b), the row buffer (a slot per item whose row is kept) and the kernel row computed ahead for the
queried item.
"""

from __future__ import annotations

from concurrent.futures import wait
from typing import Any

import numpy as np
import scipy.sparse as sp

from core.kernels import add_scaled_rows, add_weighted_rows, masked_count_abs_below
from core.threads import run_ahead, single_threaded_blas

ROW_BUFFER_BYTES = 128 * 2**20  # kernel rows kept contiguous for the pool-score update
KERNEL_ROW_DTYPES = ("float64", "float32")  # how those rows are held (ActiveLearningLoop(kernel_rows=...))
# pools of at least this many entries (n x d, or stored values when sparse) compute the queried
# item's kernel row while the analyst reads the item (see PoolScores.compute_row_ahead)
ROW_AHEAD_MIN_ENTRIES = 2**22


class PoolScores:
    """The kept decision values ``f`` of a pool of ``n`` items, kernel rows held as ``kernel_rows``.

    ``f`` is None while the scores are not kept (the loop's ``track_scores``, or before ``reset``).
    ``beta`` / ``b``: the coefficients (by pool item) and bias ``f`` is of; ``carried``: the items
    whose ``beta`` is not zero (ascending).  ``slots``: store index -> row of ``rowbuf``;
    ``slot_items``: row of ``rowbuf`` -> store index (the slots in order); ``rows_to_restore``:
    rows a restored state kept in the buffer, put back (in this order) before the next update;
    ``row_ahead``: (item, Future of its kernel row), see :meth:`compute_row_ahead`.
    """

    def __init__(self, n: int, kernel_rows: str = "float64"):
        if kernel_rows not in KERNEL_ROW_DTYPES:
            raise ValueError(f"kernel_rows must be one of {', '.join(KERNEL_ROW_DTYPES)}, got {kernel_rows!r}")
        self.n = n
        self.kernel_rows = kernel_rows
        self.beta = np.zeros(n)
        self.carried = np.zeros(0, dtype=np.intp)
        self.b = 0.0
        self.f: np.ndarray | None = None
        self.slots: dict[int, int] = {}
        self.slot_items: list[int] = []
        self.rowbuf: np.ndarray | None = None
        self.rows_to_restore: list[int] = []
        self.row_ahead: tuple[int, Any] | None = None
        self.row_ahead_min_entries = ROW_AHEAD_MIN_ENTRIES

    def reset(self, solver) -> None:
        """Score the pool from scratch with ``solver`` (the kept rows stay: they are of the same kernel)."""
        sv, coef, b = solver.coefficients()
        self.beta = np.zeros(self.n)
        self.beta[np.asarray(sv, dtype=np.intp)] = coef
        self.carried = np.flatnonzero(self.beta)
        self.b = float(b)
        self.f = np.asarray(solver.decision_function(np.arange(self.n)), dtype=np.float64).copy()

    def forget_rows(self) -> None:
        """Let go of every kept kernel row (they are of a kernel the solver no longer has)."""
        self.slots, self.slot_items, self.rowbuf, self.rows_to_restore = {}, [], None, []
        self.row_ahead = None

    def n_in_margin(self, available: np.ndarray) -> float:
        """Items of ``available`` with |f| < 1 (NaN when the scores are not kept)."""
        if self.f is None:
            return float("nan")
        return float(masked_count_abs_below(self.f, available, 1.0))

    # ------------------------------------------------------------------ the update after a change of the model
    @single_threaded_blas  # a rank-k update per label: one BLAS thread (see core.threads)
    def sync(self, solver) -> None:
        """f += K(pool, changed) @ delta_beta + delta_b for the solver's current coefficients.

        Kernel rows of items that have carried a coefficient are copied into a
        contiguous buffer (within ``ROW_BUFFER_BYTES``), so the update is one
        pass over the buffer (``add_weighted_rows``: summed in the kernel
        layer's fixed order, over the buffer's rows in slot order, the same
        bits whatever the threads or the CPU's vector width); once the buffer
        is full, a row that changes takes the slot of the first row that did
        not (``idle_slot``); rows that do not fit come from the solver's cache and are added in
        turn, first (the bits of f += delta * row, one row after the other), in the same pass over f
        as the buffer's rows (up to ``core.kernels.EXTRA_ROWS`` of them; any more before, four per pass: at 1M
        items and label 150 about 17 rows a label, which took five passes over f of their own; rows
        the cache does not keep are added as soon as four wait).  The cache spares the rows of this
        update when it makes room: on a large pool whose margin vectors' rows do not all fit, the
        margin vectors change at every label, and evicting the least recently used row would evict
        each just before it is needed again.
        """
        f = self.f
        assert f is not None  # (the loop updates kept scores only)
        if not solver.keeps_store_scores:  # (the rows are not needed when the solver keeps f itself)
            self.restore_buffered_rows(solver)
        sv, coef, b = solver.coefficients()
        # delta over the items that carry a coefficient before or after (ascending, as over the
        # whole pool): a label costs the support vectors, not passes over the pool
        sv = np.asarray(sv, dtype=np.intp)
        if solver.keeps_store_scores:
            # the solver's own f of every pool item, kept by it from the changes it made (the ramp
            # solver: with class weights that follow the labels, every bounded coefficient changes
            # at each label, and it moves them with one pass per class; the rows are not needed here,
            # nor the change of the coefficients: beta and carried as below, without merging the two sets)
            self.beta[self.carried] = 0.0
            self.beta[sv] = coef
            self.carried = np.sort(sv[np.asarray(coef) != 0.0])
            np.copyto(f, solver.store_scores()[: self.n])
            self.b = float(b)
            return
        carried = np.union1d(self.carried, sv)
        after = np.zeros(len(carried))
        after[np.searchsorted(carried, sv)] = coef
        delta_c = after - self.beta[carried]
        moved = delta_c != 0.0
        changed, delta = carried[moved], delta_c[moved]
        self.beta[carried] = after
        self.carried = carried[after != 0.0]
        if len(changed):
            self._add_changed_rows(solver, f, changed, delta)
        db = float(b) - self.b
        if db != 0.0:
            f += db
        self.b = float(b)

    def _add_changed_rows(self, solver, f: np.ndarray, changed: np.ndarray, delta: np.ndarray) -> None:
        """f += K(pool, changed) @ delta: the buffer's rows in one pass, the others in turn (see ``sync``)."""
        n, cache, slots = self.n, solver.cache, self.slots
        weights = np.zeros(len(slots) + len(changed))
        spare = frozenset(changed.tolist())
        rows, deltas = [], []  # rows outside the buffer, added in turn, in the pass over the buffer
        uncached = 0
        for j, dj in zip(changed.tolist(), delta.tolist(), strict=True):
            k = slots.get(j)
            if k is None:
                buffered = (len(slots) + 1) * n * self.row_bytes <= ROW_BUFFER_BYTES
                idle = None if buffered else self.idle_slot(spare)
                # a row going into the buffer is not also kept in the solver's cache (held once)
                row = cache.row(j, keep=not buffered and idle is None, computed=self.take_row_ahead(j), spare=spare)
                row = row if len(row) == n else row[:n]
                if buffered:
                    k = self.buffer_row(solver, j, row)
                elif idle is not None:
                    k = self.replace_row(solver, idle, j, row, spare)
                else:
                    rows.append(row)
                    deltas.append(dj)
                    # a row the cache did not keep is held here until added: at most four of them
                    # (8 MB each at 1M items); rows the cache keeps cost nothing to wait, however
                    # many (add_weighted_rows takes any number); the grouping changes no bit (each
                    # entry adds the rows in turn), so it may follow the cache's state
                    uncached += not cache.holds(j)
                    if uncached == 4:
                        add_scaled_rows(f, rows, deltas)
                        rows, deltas, uncached = [], [], 0
                    continue
            weights[k] = dj
        m = len(slots)
        add_weighted_rows(f, self.rowbuf, np.arange(m), weights[:m], rows, deltas)

    # ------------------------------------------------------------------ the row buffer
    def restore_buffered_rows(self, solver) -> None:
        """Put back the kernel rows a restored state had buffered, in the order the original kept
        them (so later updates sum in the same order).  Computed by ``cache.row`` as they were,
        and not counted as the solver's work (its counter is the saved one).  Done at the first
        update rather than on restore: opening a session shows its next item without them."""
        if not self.rows_to_restore:
            return
        cache, n = solver.cache, self.n
        evals = cache.n_evals
        for j in self.rows_to_restore:
            row = cache.row(j, keep=False)
            self.buffer_row(solver, j, row if len(row) == n else row[:n])
        cache.n_evals = evals
        self.rows_to_restore = []

    def idle_slot(self, changed: frozenset[int]) -> int | None:
        """The first slot of the full row buffer whose item's coefficient did not change in this
        update, or None.  A coefficient that stops changing (at its bound, or back to zero) rarely
        starts again, and the items whose coefficients change at every label (the margin vectors)
        are not the first ones kept: left in place, the buffer filled with rows that no longer
        change (at 1M items and label 150, 2-7 of its 16 rows were used; 40 of the changed rows
        came from the cache or were computed again, up to 9 per label).  A function of the
        changed items and the buffer's slots alone, both kept in the loop's state, so a resumed
        loop makes the same choices as one that never stopped."""
        for k, item in enumerate(self.slot_items):
            if item not in changed:
                return k
        return None

    def replace_row(self, solver, slot: int, j: int, row: np.ndarray, spare: frozenset[int]) -> int:
        """Keep item j's row in ``slot`` of the full buffer, in place of the row there (which goes
        to the solver's cache, where there is room after sparing ``spare``: it may change again;
        float32 rows cannot, the solver needs the float64 values)."""
        given_up = self.slot_items[slot]
        rowbuf = self.rowbuf
        assert rowbuf is not None  # a slot to replace: buffer_row made the buffer
        if rowbuf.dtype == np.float64:
            solver.cache.keep(given_up, rowbuf[slot].copy(), spare=spare)
        del self.slots[given_up]
        self.slot_items[slot] = j
        rowbuf[slot] = row
        self.slots[j] = slot
        solver.cache.release(j)  # (held once, as by buffer_row)
        return slot

    def buffer_row(self, solver, j: int, row: np.ndarray) -> int:
        """Keep item j's row in the next slot of the buffer; the solver's cache lets go of it
        (a row is held once)."""
        k = len(self.slot_items)
        if self.rowbuf is None:
            # the whole buffer at once, never grown: its pages become resident only as rows are
            # written, and growing meant copying every row kept so far (217 ms at 128 rows of a
            # 100k pool, in one label).  At most one row per item.
            cap = min(self.n, max(1, ROW_BUFFER_BYTES // (self.row_bytes * self.n)))
            self.rowbuf = np.empty((cap, self.n), dtype=self.kernel_rows)
        if k >= len(self.rowbuf):  # (only a restored state that kept more rows than fit here)
            grown = np.empty((k + 1, self.n), dtype=self.kernel_rows)
            grown[:k] = self.rowbuf[:k]
            self.rowbuf = grown
        self.rowbuf[k] = row  # (float32 rows: each value rounded to nearest, the same on every run)
        self.slots[j] = k
        self.slot_items.append(j)
        solver.cache.release(j)
        return k

    @property
    def row_bytes(self) -> int:
        return np.dtype(self.kernel_rows).itemsize

    # ------------------------------------------------------------------ the queried item's row, computed ahead
    def compute_row_ahead(self, solver, X, j: int) -> None:
        """Start computing K(pool, x_j) in the background: once labelled, the queried item joins
        the model (a near-boundary item nearly always does) and the score update needs its row.
        On a large pool that row is the label's main cost (one pass over the feature matrix), and
        it is computed while the analyst reads the item.  The row is what the solver's cache
        computes (``compute_row``: the same routine, so the same bits); it is used only for this
        item, and only by the update (``sync``), so the model and its history are the same
        whether or not it is ready in time: it only changes when the work is done."""
        self.row_ahead = None
        cache = getattr(solver, "cache", None)
        if self.f is None or cache is None or j in self.slots or j in self.rows_to_restore or solver.keeps_store_scores:
            return
        entries = X.nnz if sp.issparse(X) else X.shape[0] * X.shape[1]
        if entries < self.row_ahead_min_entries or cache.has_row(j):
            return
        cache.ready_for_rows()
        self.row_ahead = (int(j), run_ahead(cache.compute_row, int(j)))

    def finish_row_ahead(self, j: int) -> None:
        """Wait until item j's row computed ahead is done (if it is being computed).  Its
        computation uses every core; the solver's step, run beside it, was slowed to three times its
        time for the cores (2 cores, 100k x 784: 1 -> 3 ms), so the label waits for the row first."""
        if self.row_ahead is not None and self.row_ahead[0] == j:
            wait([self.row_ahead[1]])

    def take_row_ahead(self, j: int) -> np.ndarray | None:
        """The row computed ahead for item j (waiting for it if need be), or None."""
        ahead, self.row_ahead = self.row_ahead, None
        if ahead is None or ahead[0] != j:
            self.row_ahead = ahead
            return None
        try:
            return ahead[1].result()
        except Exception:  # (computed again in this thread, where an error is reported as usual)
            return None

    # ------------------------------------------------------------------ saved with the loop's state
    def save(self, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
        """Add the kept scores to a loop state (``pool_f``, ``pool_beta``, ``row_slots``; ``pool_b``)."""
        if self.f is None:
            return
        arrays["pool_f"] = self.f.copy()
        arrays["pool_beta"] = self.beta.copy()
        kept = [*self.slot_items, *self.rows_to_restore]  # (in slot order)
        arrays["row_slots"] = np.asarray(kept, dtype=np.int64)
        meta["pool_b"] = self.b

    def load(self, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
        """The kept scores of a loop state (written by ``save``); the rows it kept are put back at
        the next update (``restore_buffered_rows``)."""
        self.f = np.array(arrays["pool_f"], dtype=np.float64)
        self.beta = np.array(arrays["pool_beta"], dtype=np.float64)
        self.carried = np.flatnonzero(self.beta)
        self.b = float(meta["pool_b"])
        # (each item once, within the pool: a slot per row)
        kept = [int(j) for j in np.asarray(arrays["row_slots"], dtype=np.intp).tolist() if 0 <= j < self.n]
        self.rows_to_restore = list(dict.fromkeys(kept))


__all__ = ["KERNEL_ROW_DTYPES", "ROW_AHEAD_MIN_ENTRIES", "ROW_BUFFER_BYTES", "PoolScores"]
