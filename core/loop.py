"""The active-learning loop: a pool, a solver, a query strategy and a history.

>>> loop = ActiveLearningLoop(X, strategy="near-boundary")      # doctest: +SKIP
>>> q = loop.next_query()          # ask about item q.index
>>> row = loop.teach(q.index, +1)  # learned at once; the history grows by one row
>>> loop.undo()                    # exactly as if the label had never been given

The loop holds its parts, each in a module of its own and given what it works on at each call:
the kept pool scores and kernel-row buffer (``loop.scores``, :class:`core.pool_scores.PoolScores`),
the evaluation set and its kept kernel columns (``loop.evaluation``,
:class:`core.evaluation.EvaluationSet`), the copies of the solver kept for undo (:mod:`core.undo`),
its records (:mod:`core.loop_records`: ``HistoryRow``, ``Correction``, the undo record) and its saved
state (:mod:`core.loop_state`).

Design notes
------------
* **Queries are a function of the events.**  The generator used for the query
  after k events is seeded with ``(seed, k)``; ``next_query()`` is therefore
  idempotent until it is answered, comes back unchanged after ``undo()``, and
  a loop rebuilt with :meth:`ActiveLearningLoop.from_events` asks the same
  questions.  ``rng`` is the generator of the current step.
* **Pool scores are kept current incrementally.**  After every change of the
  model, with beta = signed coefficients before and after (``coefficients()``),
  f_pool += K(pool, changed) @ delta_beta + delta_b, the kernel rows coming
  from the solver's row cache (``cache.rows``; rows the solver has usually
  just computed itself).  This keeps ``near-boundary`` exact over the whole
  pool at the cost of one pass over the changed rows.  The strategies that
  read every pool item's score (``largest-positive``, ``near-boundary``) are
  tracked at any pool size: no path rescores the whole pool per query.  The
  sampling strategies score only what they draw, so pools larger than
  ``TRACK_LIMIT`` items are not tracked for them (``n_in_margin`` is then not
  recorded: NaN).
* **Undo is exact.**  Solvers with ``exact_unlearn`` (incremental,
  active-set) unlearn the example.  For the others the loop keeps, for each
  label, a copy of the solver from before it and restores it.  The copy
  shares the data store and kernel cache and holds what the solver's
  ``__getstate__`` gives (LASVM leaves out its kernel rows, which it
  recomputes on demand, and everything of the pool's size); the copies are
  kept within a memory budget that counts everything they hold, and making
  one is part of the label's measured ``update_ms``.  Beyond the budget (or
  for pools above ``UNDO_COPY_LIMIT``, where copying per-example arrays on
  every label would dominate the update time, or when scores are not
  tracked) the loop rebuilds the solver by
  re-learning the remaining labels in order, which gives the identical state
  because solvers are deterministic given their ``random_state``.  Labels applied by
  :meth:`ActiveLearningLoop.replay` (rebuilding) keep the solver's
  ``to_state`` instead of a copy, and so does a snapshot of the loop for the
  last labels before it (see below): undo restores those with ``from_state``.
* **Cold start.**  Until both classes have a label (and at least ``initial``
  labels have been given) the cold-start rule picks the items: ``random``,
  ``one-class`` or ``spread`` (k-means++ seeding, :mod:`core.cold_start`); see
  :mod:`core.strategies` for why ``random`` is the default.
  For a stream strategy (``ramp-region``) the cold start takes the next item of its stream, which
  is a random item.
* **Evaluation is cheap.**  With an evaluation set, the kernel column
  K(evaluation items, x_j) of every pool item j that has carried a coefficient
  is computed once (one item at a time, so its value does not depend on what
  else was computed with it) and kept within ``EVAL_BUFFER_BYTES``; after a
  label the evaluation scores are f = K(eval, sv) @ coef + b over the current
  support vectors, gathered from the kept columns: no kernel evaluation unless
  an item becomes a support vector for the first time.
* **Snapshots.**  :meth:`ActiveLearningLoop.to_state` saves the whole loop as
  plain arrays + JSON (the solver's own ``to_state(include_data=False)``, the
  events, history, undo records, stream position, cold-start ranking and the
  kept pool scores); :meth:`from_state` restores it without replaying, and the
  restored loop continues exactly as the original would (same decision values,
  queries and undo).  For non-exact solvers the snapshot also carries the
  solver state from before the most recent label(s) (``previous``), so undo
  right after a resume restores it; undo further back than that replays the
  remaining labels from scratch, as the original loop does beyond its undo
  memory.
* **Corrections.**  :meth:`ActiveLearningLoop.change_label` and
  :meth:`remove_label` correct an answer given at any earlier point: exact
  solvers unlearn it (and learn the new answer), the others relearn the
  corrected labels in order with a fresh solver; either way the model is the
  one that learned the corrected answers from the start.
* When there is nothing left to ask (every item labelled or skipped, or
  ``ramp-region`` finds no item in its ramp region in a whole pass)
  ``next_query()`` returns ``None``.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from core import strategies
from core.cold_start import spread_cold_start
from core.evaluation import EVAL_BUFFER_BYTES, EvaluationSet
from core.kernels import as_data_matrix
from core.loop_records import Correction, HistoryRow, UndoEntry
from core.loop_state import STATE_FORMAT, load_state, save_state, saved_solver, state_format
from core.pool_scores import KERNEL_ROW_DTYPES, ROW_AHEAD_MIN_ENTRIES, ROW_BUFFER_BYTES, PoolScores
from core.presets import solver_for
from core.solvers import make_solver, solver_class
from core.strategies import (
    COLD_START_SUFFIX,
    COLD_STARTS,
    DEFAULT_COLD_START,
    DEFAULT_STRATEGY,
    Pool,
    Query,
    one_class_cold_start,
    one_class_ranking,
    random_query,
)
from core.threads import single_threaded_blas
from core.undo import copy_solver as _copy_solver
from core.undo import held_bytes

if TYPE_CHECKING:
    from core.settings import SessionSettings

TRACK_LIMIT = 50_000  # largest pool whose decision values are kept current for the sampling strategies
UNDO_COPY_LIMIT = 50_000  # largest pool for which a non-exact solver is copied before each label (for undo)
DEFAULT_UNDO_MEMORY = 64 * 2**20  # bytes of solver snapshots kept for undo (non-exact solvers)


class ActiveLearningLoop:
    """Owns the pool, the solver, the query strategy, the random generator and the history.

    Parameters
    ----------
    X : (n, d) array or ``scipy.sparse`` matrix, the pool; item i is row i (and index i of
        the solver's store).  Held once: the loop keeps a read-only view of X (no copy when X
        is already float64 and C-contiguous, or a canonical CSR matrix; ``solver_params``
        ``dtype="float32"`` stores a float32 copy instead) and every solver it makes wraps
        that same matrix (see :mod:`core.kernels`).  Do not modify X while the loop uses it.
    strategy : the name of a registered strategy (:data:`core.strategies.STRATEGY_NAMES`).
    solver : a solver name; ``None`` takes the strategy's default (its entry's ``default_solver``).
    solver_params : keyword arguments of the solver (kernel, C, gamma, ...);
        ``random_state`` defaults to ``seed``.
    strategy_params : keyword arguments of the strategy (e.g. ``sample_size``).
    seed : seeds the queries (see the module notes) and the order of a stream strategy (ramp-region).
    cold_start : ``"random"`` (default), ``"one-class"`` or ``"spread"`` (:mod:`core.cold_start`).
    initial : at least this many labels are chosen by the cold-start rule.
    eval_X, eval_y : an evaluation set with true labels (+1/-1): ROC AUC and
        accuracy after every label.
    oracle_y : the pool's true labels, for simulations (needed by ``gradient``: its entry's ``needs_oracle``).
    track_scores : keep the pool's decision values current (default: always for
        the strategies that read every item's score, otherwise when the pool
        has at most ``TRACK_LIMIT`` items).
    undo_memory : bytes of solver snapshots kept for undo of non-exact solvers.
    kernel_rows : how the kernel rows kept for the pool-score update are held: ``"float64"``
        (default: a kept score is updated by f += K(x, changed) delta_beta + delta_b at every
        label, so it equals the solver's decision value up to the rounding of those updates, not
        bit for bit: on a 4,000-item pool, rbf kernel, 150 labels with each exact solver and
        LASVM, 88-93% of the scores differed in their last bits, by at most 4.4e-15, 3.5e-15 of
        max(|f|, 1); ``refresh_scores()`` recomputes them) or ``"float32"`` (half the memory per
        row, so twice as many fit in the row buffer; each kept row is the float64 row rounded to
        float32, so a score moves by about 1e-7 of the kernel values per margin vector).  Either
        way the same bits on every run, resumed or not.  The solver is not affected.
    """

    def __init__(
        self,
        X,
        *,
        strategy: str = DEFAULT_STRATEGY,
        solver: str | None = None,
        solver_params: dict | None = None,
        strategy_params: dict | None = None,
        seed: int = 0,
        cold_start: str = DEFAULT_COLD_START,
        initial: int = 0,
        eval_X=None,
        eval_y=None,
        oracle_y=None,
        track_scores: bool | None = None,
        undo_memory: int = DEFAULT_UNDO_MEMORY,
        kernel_rows: str = "float64",
        _solver_state: tuple[dict, dict] | None = None,
    ):
        # _solver_state: (arrays, meta) of a saved solver, for from_state only: the solver is then
        # rebuilt from it (not made empty first), and the pool scores are left to _load_state
        self.strategy = strategy
        self.strategy_entry = entry = strategies.get(strategy)
        if cold_start not in COLD_STARTS:
            raise ValueError(f"unknown cold start {cold_start!r}; choose one of {', '.join(COLD_STARTS)}")
        dtype = (solver_params or {}).get("dtype", "float64")
        shape = X.shape if sp.issparse(X) else np.shape(X)
        if len(shape) not in (1, 2) or (len(shape) == 2 and shape[0] == 0) or 0 in shape:
            raise ValueError(f"the pool must be a non-empty (n, d) array, got shape {shape}")
        self.X = as_data_matrix(X, dtype, what="the pool")
        n = self.X.shape[0]
        self.solver_name = solver or entry.default_solver
        solver_class(self.solver_name)  # unknown names fail here, with the list of names
        self.solver_params = dict(solver_params or {})
        self.solver_params.setdefault("random_state", int(seed))
        self.strategy_params = dict(strategy_params or {})
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
        self.seed = int(seed)
        self.cold_start = cold_start
        self.initial = int(initial)
        if oracle_y is not None:
            oracle_y = self._check_labels(oracle_y, n, "oracle_y")
        if entry.needs_oracle and oracle_y is None:
            raise ValueError(
                f"the {strategy!r} strategy needs the true labels (oracle_y): "
                "it reads them to choose an item and can only run in simulations"
            )
        self.oracle_y = oracle_y
        if (eval_X is None) != (eval_y is None):
            raise ValueError("give both eval_X and eval_y, or neither")
        self.eval_X = None if eval_X is None else as_data_matrix(eval_X, dtype, what="the evaluation items")
        # (eval_y is given exactly when eval_X is, checked above)
        self.eval_y = None if self.eval_X is None else self._check_labels(eval_y, self.eval_X.shape[0], "eval_y")
        if self.eval_X is not None and self.eval_X.shape[1] != self.X.shape[1]:
            raise ValueError(f"eval_X has {self.eval_X.shape[1]} features, the pool has {self.X.shape[1]}")
        self.track_scores = (entry.needs_whole_pool or n <= TRACK_LIMIT) if track_scores is None else bool(track_scores)
        self.undo_memory = int(undo_memory)
        # the kept pool scores and kernel rows (core.pool_scores; refuses an unknown kernel_rows)
        self.scores = PoolScores(n, kernel_rows)
        self.kernel_rows = kernel_rows

        # the solver that learns the model on this pool (``core.presets.solver_for``: the review model on
        # sparse rows is learned by dual-cd); a restored loop keeps the one its state was saved from
        self._made = solver_for(self.solver_name, self.solver_params, self.X)
        if _solver_state is not None and _solver_state[1].get("solver") != self._made[0]:
            self._made = (_solver_state[1]["solver"], self.solver_params)
        if _solver_state is None:
            self.solver = self._new_solver()
        else:
            self.solver = solver_class(self._made[0]).from_state(*_solver_state, X=self.X)
        self._label = np.zeros(n, dtype=np.int8)
        self._skipped = np.zeros(n, dtype=bool)
        self._available = np.ones(n, dtype=bool)
        self._n_pos = 0
        self._n_neg = 0
        self.events: list[tuple[int, int]] = []
        self.history: list[HistoryRow] = []
        self._undo: list[UndoEntry] = []
        self._snapshot_bytes = 0
        self._replaying = False
        self._pending: Query | None = None
        self._ranking: np.ndarray | None = None
        self.seen = 0
        self.cursor = 0
        self.passes = 0
        self._order = (
            np.random.default_rng([self.seed, 0x5EED]).permutation(n).astype(np.intp) if entry.streams else None
        )
        # the evaluation set and the kernel columns kept to score it (core.evaluation)
        self.evaluation = (
            None
            if self.eval_X is None or self.eval_y is None
            else EvaluationSet(self.eval_X, self.eval_y, self.solver.kernel)
        )
        self._scored_kernel = self.solver.kernel  # the kernel the kept scores, rows and columns are of
        if _solver_state is None:
            self._init_scores()
        self.rng = self._step_rng()

    def _init_scores(self) -> None:
        """Score the pool from scratch (the loop's start, or back to nothing learned)."""
        self._scored_kernel = self.solver.kernel
        if self.track_scores:
            self.scores.reset(self.solver)

    # ------------------------------------------------------------------
    def _new_solver(self):
        """A fresh solver of this loop's kind over the pool (nothing learned)."""
        name, params = self._made
        return make_solver(name, self.X, **params)

    @staticmethod
    def _check_labels(y, n: int, what: str) -> np.ndarray:
        y = np.asarray(y, dtype=np.float64).reshape(-1)
        if len(y) != n:
            raise ValueError(f"{what} has {len(y)} labels for {n} items")
        if not np.all(np.isin(y, (-1.0, 1.0))):
            bad = np.flatnonzero(~np.isin(y, (-1.0, 1.0)))[0]
            raise ValueError(f"{what} must contain only -1 and +1; item {bad} is {y[bad]!r}")
        return y

    def config(self) -> dict[str, Any]:
        """The keyword arguments that rebuild this loop (with X and the evaluation data)."""
        return dict(
            strategy=self.strategy,
            solver=self.solver_name,
            solver_params=dict(self.solver_params),
            strategy_params=dict(self.strategy_params),
            seed=self.seed,
            cold_start=self.cold_start,
            initial=self.initial,
            track_scores=self.track_scores,
            undo_memory=self.undo_memory,
            kernel_rows=self.kernel_rows,
        )

    def _step_rng(self) -> np.random.Generator:
        return np.random.default_rng([self.seed, len(self.events)])

    # ------------------------------------------------------------------ read-outs
    @property
    def n_labels(self) -> int:
        return self._n_pos + self._n_neg

    @property
    def n_items(self) -> int:
        return self.X.shape[0]

    @property
    def labelled_mask(self) -> np.ndarray:
        return self._label != 0

    @property
    def skipped_mask(self) -> np.ndarray:
        return self._skipped.copy()

    @property
    def labels(self) -> np.ndarray:
        """+1 / -1 for labelled items, 0 otherwise."""
        return self._label.copy()

    @property
    def in_cold_start(self) -> bool:
        return self._n_pos == 0 or self._n_neg == 0 or self.n_labels < self.initial

    def pool_scores(self) -> np.ndarray:
        """The current decision value of every pool item (a copy)."""
        if self.scores.f is not None:
            return self.scores.f.copy()
        return np.asarray(self.solver.decision_function(np.arange(self.n_items)), dtype=np.float64)

    def refresh_scores(self) -> None:
        """Recompute the kept pool scores from scratch (they are kept current anyway)."""
        if self.scores.f is not None:
            self.scores.f = np.asarray(self.solver.decision_function(np.arange(self.n_items)), dtype=np.float64).copy()

    def history_frame(self):
        """The history as a pandas DataFrame (one row per label)."""
        import pandas as pd

        cols = list(HistoryRow.__dataclass_fields__)
        return pd.DataFrame([r.to_dict() for r in self.history], columns=cols)

    def _pool(self) -> Pool:
        return Pool(self._available, scores=self.scores.f, oracle_y=self.oracle_y)

    # ------------------------------------------------------------------ queries
    def next_query(self) -> Query | None:
        """The item to ask about next (the same one until it is answered), or None."""
        if self._pending is not None:
            return self._pending
        if not self._available.any():
            return None
        self.rng = rng = self._step_rng()
        t0 = time.perf_counter()
        pool = self._pool()
        cold = self.in_cold_start
        entry = self.strategy_entry
        if entry.streams:
            q = entry.choose(
                self.solver,
                pool,
                rng,
                order=self._order,
                cursor=self.cursor,
                threshold=np.inf if cold else float(self.strategy_params.get("threshold", 1.0)),
            )
            if q is not None and cold:
                q.reason = "cold start: next item of the stream (random order)"
        elif cold and self.cold_start == "one-class":
            if self._ranking is None:
                self._ranking = one_class_ranking(
                    self.X, np.random.default_rng([self.seed, 0x0C5]), **self._one_class_params()
                )
            q = one_class_cold_start(self.solver, pool, rng, ranking=self._ranking)
        elif cold and self.cold_start == "spread":
            q = spread_cold_start(self.solver, pool, rng)
        elif cold:
            q = random_query(self.solver, pool, rng)
            if q is not None:
                q.reason = "cold start: " + q.reason
        else:
            if self.scores.f is None and entry.needs_whole_pool:
                pool.scores = self.pool_scores()
            q = entry.choose(self.solver, pool, rng, **self.strategy_params)
        if q is None:
            return None
        q.cold_start = cold
        if cold and not entry.streams:
            q.strategy = (
                q.strategy + COLD_START_SUFFIX if q.strategy != "one-class" else "one-class" + COLD_START_SUFFIX
            )
        elif cold:
            q.strategy = self.strategy + COLD_START_SUFFIX
        q.query_ms = 1e3 * (time.perf_counter() - t0)
        self._pending = q
        # the item's kernel row, computed while the analyst reads the item (on a large pool)
        self.scores.compute_row_ahead(self.solver, self.X, q.index)
        return q

    def _one_class_params(self) -> dict[str, Any]:
        keep = ("kernel", "gamma", "degree", "coef0", "tol", "cache_bytes")
        return {k: v for k, v in self.solver_params.items() if k in keep}

    # ------------------------------------------------------------------ answers
    def _check_item(self, i) -> int:
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
            raise TypeError(f"item must be an integer index, got {i!r}")
        i = int(i)
        if not 0 <= i < self.n_items:
            raise IndexError(f"item {i} is not in the pool (0..{self.n_items - 1})")
        if self._label[i] != 0:
            raise ValueError(f"item {i} is already labelled ({int(self._label[i]):+d})")
        return i

    def _answered(self, i: int) -> tuple[Query | None, UndoEntry]:
        """Bookkeeping shared by teach and skip: stream position and the undo record."""
        q = self._pending if (self._pending is not None and self._pending.index == i) else None
        entry = UndoEntry(
            kind="",
            item=i,
            label=0,
            was_skipped=bool(self._skipped[i]),
            cursor=self.cursor,
            seen=self.seen,
            passes=self.passes,
        )
        if q is not None:
            self.seen += q.passed_over + 1
            if q.cursor is not None:
                if q.cursor <= self.cursor:  # the walk went past the end of the order
                    self.passes += 1
                self.cursor = q.cursor
        return q, entry

    def teach(self, i, y, *, provenance: str | None = None) -> HistoryRow:
        """Learn label ``y`` (+1 / -1) for item ``i``; returns the new history row.

        ``provenance``: the history row's ``asked_by`` for an item the loop did not ask about (default
        ``"analyst"``; ``"prior"`` for a known item, ``core.priors``)."""
        i = self._check_item(i)
        if y not in (-1, 1) or isinstance(y, bool):
            raise ValueError(f"label must be -1 or +1, got {y!r}")
        y = int(y)
        f = self.scores.f
        score = float(f[i]) if f is not None else float(self.solver.decision_function([i])[0])
        q, entry = self._answered(i)
        entry.kind, entry.label = "teach", y
        k0 = self.solver.n_kernel_evals
        t0 = time.perf_counter()  # (the undo copy is part of the update's time)
        if (
            not self.solver.exact_unlearn
            and self.track_scores
            and self.n_items <= UNDO_COPY_LIMIT
            and self.undo_memory > 0
        ):
            if self._replaying:
                # rebuilding: the solver's own state (a few small arrays) instead of a full copy,
                # restored by from_state if this label is undone (as after a resume, see to_state)
                entry.state = self.solver.to_state(include_data=False)
                entry.snapshot_bytes = held_bytes(entry.state, set())
            else:
                entry.snapshot = _copy_solver(self.solver)
                entry.snapshot_bytes = entry.snapshot.nbytes
            self._snapshot_bytes += entry.snapshot_bytes
            self._trim_snapshots()
        self.scores.finish_row_ahead(i)
        step = self.solver.learn(i, y)
        self._sync_scores()
        update_ms = 1e3 * (time.perf_counter() - t0)
        kernel_evals = self.solver.n_kernel_evals - k0
        self._label[i] = y
        self._available[i] = False
        self._skipped[i] = False
        if y > 0:
            self._n_pos += 1
        else:
            self._n_neg += 1
        self.events.append((i, y))
        self._undo.append(entry)
        self._pending = None
        self.rng = self._step_rng()
        auc, acc = self._evaluate()
        sv, coef, _ = self.solver.coefficients()
        row = HistoryRow(
            step=len(self.events),
            item=i,
            label=y,
            n_labels=self.n_labels,
            asked_by=q.strategy if q is not None else (provenance or "analyst"),
            score=score,
            n_sv=int(len(sv)),
            n_bound=self.solver.count_at_bound(sv, coef, rel=1e-9),
            n_in_margin=self._n_in_margin(),
            update_ms=update_ms,
            query_ms=q.query_ms if q is not None else float("nan"),
            kernel_evals=int(kernel_evals),
            auc=auc,
            accuracy=acc,
            seen=self.seen,
            status=getattr(step, "status", "ok"),
        )
        self.history.append(row)
        return row

    def skip(self, i) -> None:
        """Pass over item ``i`` without a label; it is not asked about again (until undone)."""
        i = self._check_item(i)
        if self._skipped[i]:
            raise ValueError(f"item {i} is already skipped")
        q, entry = self._answered(i)
        entry.kind = "skip"
        self._skipped[i] = True
        self._available[i] = False
        self.events.append((i, 0))
        self._undo.append(entry)
        self._pending = None
        self.rng = self._step_rng()

    def undo(self) -> tuple[int, int]:
        """Take back the last label or skip, exactly; returns that event (item, label)."""
        if not self._undo:
            raise ValueError("nothing to undo")
        entry = self._undo.pop()
        i = entry.item
        if entry.kind == "teach":
            if entry.snapshot is not None or entry.state is not None:
                self._snapshot_bytes -= entry.snapshot_bytes  # the entry leaves the undo stack
            if self.n_labels == 1:
                # back to nothing learned: a fresh solver is exactly what a rebuild has (with no
                # examples the bias is arbitrary, and a solver may keep the one it last had)
                self.solver = self._new_solver()
                self._init_scores()
            elif self.solver.exact_unlearn:
                self.solver.unlearn(i)
            elif entry.snapshot is not None:
                self.solver = entry.snapshot.restore()
            elif entry.state is not None:  # kept as the solver's state (see replay and to_state)
                arrays, meta = entry.state
                self.solver = solver_class(self._made[0]).from_state(arrays, meta, X=self.X)
            else:
                self._replay_solver([e for e in self.events[:-1] if e[1] != 0])
            self._sync_scores()
            if entry.label > 0:
                self._n_pos -= 1
            else:
                self._n_neg -= 1
            self._label[i] = 0
            self.history.pop()
        self._skipped[i] = entry.was_skipped
        self._available[i] = not entry.was_skipped
        self.cursor, self.seen, self.passes = entry.cursor, entry.seen, entry.passes
        event = self.events.pop()
        self._pending = None
        self.rng = self._step_rng()
        return event

    # ------------------------------------------------------------------ corrections of earlier answers
    def change_label(self, i, y) -> Correction:
        """Change the label of item ``i`` (given earlier, at any point) to ``y`` (+1 / -1).

        The model becomes the one that had learned the corrected answers from
        the start.  Solvers with ``exact_unlearn`` (incremental, active-set)
        unlearn ``i`` and learn it with ``y``: the SVM solution of the corrected
        labels, to the solver's tolerance.  The others are rebuilt by a fresh
        solver that learns the corrected labels in their order, which is
        identical to replaying the corrected events (solvers are deterministic
        given their ``random_state``).  The event keeps its place; its history
        row keeps what was measured when it was learned, with the new label.
        """
        k, i, old = self._find_event(i)
        if y not in (-1, 1) or isinstance(y, bool):
            raise ValueError(f"label must be -1 or +1, got {y!r}")
        y = int(y)
        if old == 0:
            raise ValueError(f"item {i} was skipped, not labelled: remove the skip instead")
        if old == y:
            raise ValueError(f"item {i} is already labelled {y:+d}")
        t0 = time.perf_counter()
        self.events[k] = (i, y)
        self._undo[k].label = y
        if self.solver.exact_unlearn:
            if self.n_labels == 1:  # its only label: nothing else to keep
                self.solver = self._new_solver()
            else:
                self.solver.unlearn(i)
            self.solver.learn(i, y)
        else:
            self._replay_solver([e for e in self.events if e[1] != 0])
        self._forget_undo_states(after=k)
        self._label[i] = y
        self._n_pos += y
        self._n_neg -= y
        for row in self.history:
            if row.item == i:
                row.label = y
        return self._corrected(Correction(position=k, item=i, old=old, new=y, exact=self.solver.exact_unlearn), t0)

    def remove_label(self, i, *, labels_only: bool = False) -> Correction:
        """Take back the label or skip given to item ``i`` earlier; the item returns to the pool.

        As :meth:`change_label`: exact unlearning for solvers with
        ``exact_unlearn``, otherwise a fresh solver that learns the remaining
        labels in order.  The history row of a removed label goes; the later
        rows are renumbered (``step``, ``n_labels``) and keep what was measured.
        ``labels_only``: the item's latest label is removed, whatever skips of it came before.
        """
        k, i, old = self._find_event(i, labels_only=labels_only)
        t0 = time.perf_counter()
        del self.events[k]
        entry = self._undo.pop(k)
        if entry.snapshot is not None or entry.state is not None:
            self._snapshot_bytes -= entry.snapshot_bytes
        if old != 0:
            if self.n_labels == 1:
                self.solver = self._new_solver()
            elif self.solver.exact_unlearn:
                self.solver.unlearn(i)
            else:
                self._replay_solver([e for e in self.events if e[1] != 0])
            self._forget_undo_states(after=k - 1)
            if old > 0:
                self._n_pos -= 1
            else:
                self._n_neg -= 1
            self._label[i] = 0
        for row in self.history:
            if row.step > k + 1:
                row.step -= 1
                row.n_labels -= old != 0
        self.history = [row for row in self.history if not (row.item == i and old != 0)]
        self._skipped[i] = False
        self._available[i] = True
        return self._corrected(Correction(position=k, item=i, old=old, new=None, exact=self.solver.exact_unlearn), t0)

    def _find_event(self, i, labels_only: bool = False) -> tuple[int, int, int]:
        """(position in ``events``, item, answer) of the one event of item ``i`` (of its latest
        label with ``labels_only``)."""
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
            raise TypeError(f"item must be an integer index, got {i!r}")
        i = int(i)
        found = [k for k, (item, label) in enumerate(self.events) if item == i and (label != 0 or not labels_only)]
        if not found:
            raise ValueError(f"item {i} has no {'label' if labels_only else 'label or skip'} to correct")
        if labels_only:
            found = found[-1:]
        if len(found) > 1:
            raise ValueError(f"item {i} has {len(found)} events (skipped, then labelled); undo to change it")
        k = found[0]
        return k, i, int(self.events[k][1])

    def _forget_undo_states(self, after: int) -> None:
        """Drop the kept solver states from before the events after position ``after``: they hold
        the model with the earlier answer (their undo rebuilds from the corrected events instead)."""
        for entry in self._undo[after + 1 :]:
            if entry.snapshot is not None or entry.state is not None:
                self._snapshot_bytes -= entry.snapshot_bytes
                entry.snapshot = entry.state = None

    def _corrected(self, correction: Correction, t0: float) -> Correction:
        if self.n_labels == 0:
            self._init_scores()
        else:
            self._sync_scores()
        self._pending = None
        self.rng = self._step_rng()
        correction.update_ms = 1e3 * (time.perf_counter() - t0)
        return correction

    # ------------------------------------------------------------------ shared pools (team projects)
    def propose(self, exclude=None) -> Query | None:
        """The item the strategy would ask about if the items in ``exclude`` were not there.

        For several people labelling one pool: each is proposed an item the others
        do not hold. ``exclude`` is a boolean mask or an array of item indices. Unlike
        :meth:`next_query`, nothing is kept as pending: the answer is given to
        :meth:`teach` (or not at all) by whoever holds the item.
        """
        pending, self._pending = self._pending, None
        available = self._available
        try:
            if exclude is not None:
                excluded = np.asarray(exclude)
                mask = available.copy()
                if excluded.dtype == bool:
                    mask &= ~excluded
                elif excluded.size:
                    mask[excluded.astype(np.intp)] = False
                self._available = mask
            return self.next_query()
        finally:
            self._available = available
            self._pending = pending if pending is not None and available[pending.index] else None

    def unteach(self, i) -> None:
        """Take item ``i``'s label out of the model, wherever it lies among the labels.

        Exact for solvers with exact unlearning (``unlearn``: the result equals learning
        the other labels without it); for the others the remaining labels are learned
        again in their order, which is what a rebuild from them gives. The item becomes
        available again. Used where an answer is settled later (team projects); it is
        :meth:`remove_label` of the item's (latest) label, an earlier skip of it staying.
        """
        self.remove_label(i, labels_only=True)

    # ------------------------------------------------------------------ internals
    def _trim_snapshots(self) -> None:
        """Drop the oldest snapshots beyond the memory budget (their undo falls back to replay)."""
        for e in self._undo:
            if self._snapshot_bytes <= self.undo_memory:
                break
            if e.snapshot is not None or e.state is not None:
                e.snapshot = e.state = None
                self._snapshot_bytes -= e.snapshot_bytes

    def _replay_solver(self, labels: list[tuple[int, int]]) -> None:
        """A fresh solver that learns ``labels`` in order: the state the loop had after them."""
        solver = self._new_solver()
        for i, y in labels:
            solver.learn(i, y)
        self.solver = solver

    @single_threaded_blas  # a rank-k update per label: one BLAS thread (see core.threads)
    def _sync_scores(self) -> None:
        """Keep the pool scores current after a change of the model (``PoolScores.sync``: f_pool +=
        K(pool, changed) @ delta_beta + delta_b, see the module notes)."""
        if self.solver.kernel != self._scored_kernel:
            self._rescore_new_kernel()
            return
        if self.scores.f is None:
            return
        self.scores.sync(self.solver)

    def _rescore_new_kernel(self) -> None:
        """The solver's kernel changed (gamma chosen from the labels, ``core.solvers.auto_hyper``): the
        kept kernel rows and evaluation columns are of the old kernel, so they go and the pool is
        scored from scratch (a function of the solver's state alone, as after a resume)."""
        self.scores.forget_rows()
        if self.evaluation is not None:
            self.evaluation.forget()
        self._init_scores()

    def _n_in_margin(self) -> float:
        return self.scores.n_in_margin(self._available)

    def evaluation_scores(self) -> np.ndarray | None:
        """f(x) of the current model for every evaluation item (None without an evaluation set).

        K(eval, sv) @ coef + b from the kept kernel columns (see the module notes and
        :mod:`core.evaluation`), summed in the kernel layer's fixed order: the same bits as
        ``solver.decision_function(X=eval_X)``.
        """
        if self.evaluation is None:
            return None
        return self.evaluation.scores(self.solver, self.X)

    def _evaluate(self) -> tuple[float, float]:
        if self.evaluation is None:
            return float("nan"), float("nan")
        return self.evaluation.evaluate(self.solver, self.X)

    # ------------------------------------------------------------------ rebuilding
    @classmethod
    def from_settings(cls, settings: SessionSettings, X, **data) -> ActiveLearningLoop:
        """A loop over the pool ``X`` with a session's settings (``core.settings.SessionSettings``: strategy,
        solver and its parameters by name, strategy parameters, seed, cold start, initial labels); ``data``:
        the other keyword arguments (``eval_X``, ``eval_y``, ``oracle_y``, ``track_scores``, ...)."""
        return cls(X, **settings.loop_arguments(), **data)

    @classmethod
    def from_events(cls, events, X, **config) -> ActiveLearningLoop:
        """Rebuild a loop by replaying (item, label) events (label 0 = skip).

        With the same configuration the result equals the loop that produced
        the events: same labels, same solver state, same decision values and
        the same history (timings aside).  Each event is preceded by the query
        the loop would have shown, so stream positions are reproduced too.
        """
        loop = cls(X, **config)
        loop.replay(events)
        return loop

    def replay(self, events) -> None:
        """Apply (item, label) events in order (label 0 = skip).

        For non-exact solvers, the state kept for undoing each replayed label is
        the solver's ``to_state`` (a few small arrays) rather than a full copy
        of the solver, whose kernel matrices made copying the larger part of
        rebuilding; undo restores it with ``from_state``.
        """
        self._replaying = True
        try:
            for i, y in events:
                i, y = int(i), int(y)
                self.next_query()
                if y == 0:
                    self.skip(i)
                else:
                    self.teach(i, y)
        finally:
            self._replaying = False

    def to_state(self, *, previous: int = 1) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """The whole loop as plain arrays + a JSON-able dict (no pickle; the pool is not included;
        :mod:`core.loop_state`).

        ``previous``: for non-exact solvers, how many of the solver states from
        before the most recent labels to include (those the loop holds in
        memory), so that many undos after :meth:`from_state` restore a state
        instead of replaying every label.
        """
        return save_state(self, previous)

    @classmethod
    def from_state(cls, arrays: dict[str, np.ndarray], meta: dict[str, Any], X, **data) -> ActiveLearningLoop:
        """The loop saved by :meth:`to_state`, over the same pool ``X`` (and evaluation data, if any).

        ``data``: ``eval_X``, ``eval_y``, ``oracle_y`` as given to the original.
        A state of format 1 (events only) is rebuilt by replaying its events.
        """
        if state_format(meta, X) == 1:
            return cls.from_events(arrays["events"].tolist(), X, **meta["config"], **data)
        loop = cls(X, **meta["config"], **data, _solver_state=saved_solver(arrays, meta))
        loop._load_state(arrays, meta)
        return loop

    def _load_state(self, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
        load_state(self, arrays, meta)


# the names other modules import from here, wherever they are defined
__all__ = [
    "DEFAULT_UNDO_MEMORY",
    "EVAL_BUFFER_BYTES",
    "KERNEL_ROW_DTYPES",
    "ROW_AHEAD_MIN_ENTRIES",
    "ROW_BUFFER_BYTES",
    "STATE_FORMAT",
    "TRACK_LIMIT",
    "UNDO_COPY_LIMIT",
    "ActiveLearningLoop",
    "Correction",
    "HistoryRow",
]
