"""Model snapshots of a labelling session: resume without replaying every label.

Every ``SNAPSHOT_EVERY`` answers (and when a session is closed) the whole loop
is saved as a model snapshot (``ActiveLearningLoop.to_state``: plain arrays +
JSON). A session is rebuilt from its latest snapshot plus the events after it;
when there is no snapshot, or it does not cover exactly the stored events
(count, label ids, items and values, configuration, pool), every event is
replayed instead.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from typing import Any

import numpy as np
from sqlalchemy.exc import SQLAlchemyError

from app.services.common import database_trouble
from app.services.readouts import RunReadouts
from app.services.records import RunState
from app.services.stopping import RunStopping
from core.loop import ActiveLearningLoop
from storage import repository as repo
from storage.errors import StorageError

#: a snapshot of the loop is stored after every this many answers (labels and skips)
SNAPSHOT_EVERY = 25
#: ... with the solver states from before this many of the last labels (lasvm, ramp: see save_snapshot)
SNAPSHOT_UNDO_STATES = 5
#: format of the service's part of a snapshot's meta
SNAPSHOT_FORMAT = 1

logger = logging.getLogger(__name__)


def save_behind(runs: dict[int, Any], runs_lock: threading.Lock, wait_s: float) -> int:
    """Store a snapshot of every run in ``runs`` (labelling sessions' or team projects': each with a
    ``lock``, ``snapshot_is_behind`` and ``save_snapshot()``) whose latest snapshot is behind its
    answers, as the app does when its server stops; returns how many were stored.  A run busy for
    longer than ``wait_s`` in all (``runs_lock`` included: a run being opened holds it) is left as it is."""
    deadline = time.monotonic() + wait_s
    if not runs_lock.acquire(timeout=wait_s):
        return 0
    try:
        open_runs = list(runs.values())
    finally:
        runs_lock.release()
    stored = 0
    for run in open_runs:
        if not run.lock.acquire(timeout=max(0.0, deadline - time.monotonic())):
            continue
        try:
            if run.snapshot_is_behind and run.save_snapshot() is not None:
                stored += 1
        finally:
            run.lock.release()
    return stored


class RunSnapshots:
    """A run's model snapshots: ``LabellingRun.snapshots``, of the ``run``'s loop and answers (``RunState``),
    with the stability rule's checkpoints of ``stopping`` and the counts of ``readouts``."""

    #: why the last snapshot could not be stored (None when it was)
    snapshot_error: str | None = None

    def __init__(self, run: RunState, readouts: RunReadouts, stopping: RunStopping):
        self.run, self.readouts, self.stopping = run, readouts, stopping
        #: label ids of the answers the last snapshot this run saved or resumed from covers (None: none,
        #: or not known since a correction): see ``snapshot_events``, ``snapshot_is_behind``
        self.label_ids: list[int] | None = None

    def _pool_digest(self) -> str:
        return hashlib.sha256(np.ascontiguousarray(self.run.pool_items, dtype=np.int64).tobytes()).hexdigest()

    def from_snapshot(self, pairs: list[tuple[int, int]], data: dict[str, Any]) -> ActiveLearningLoop | None:
        """The loop restored from the latest snapshot, if it covers exactly the first events; else None."""
        snapshot = repo.latest_snapshot(self.run.engine, self.run.session_id) if self.run.use_snapshots else None
        if snapshot is None:
            self.run.resume_note = "no snapshot: every event replayed"
            return None
        try:
            return self._restore(snapshot, pairs, data)
        except Exception as error:  # whatever is wrong with it, the stored events rebuild the model
            self.run.resume_note = (
                f"the snapshot could not be read ({type(error).__name__}: {error}): every event replayed"
            )
            return None

    def _restore(self, snapshot, pairs: list[tuple[int, int]], data: dict[str, Any]) -> ActiveLearningLoop | None:
        n, arrays, meta = snapshot
        mine, loop_meta = meta.get("service", {}), meta.get("loop", {})
        covered = np.asarray(arrays.get("events", np.zeros((0, 2))), dtype=np.int64).reshape(-1, 2)
        solver_params = dict(self.run.solver_params)
        solver_params.setdefault("random_state", self.run.seed)  # as the loop completes it
        expected = dict(
            strategy=self.run.info.strategy,
            solver=self.run.info.solver,
            solver_params=solver_params,
            strategy_params=self.run.strategy_params,
            seed=self.run.seed,
        )
        saved = loop_meta.get("config", {})
        problem = None
        if mine.get("format") != SNAPSHOT_FORMAT:
            problem = "unknown snapshot format"
        elif n > len(pairs) or len(covered) != n:
            problem = f"the snapshot covers {n} answers, the session has {len(pairs)}"
        elif mine.get("label_ids") != [a.label_id for a in self.run.answers[:n]]:
            problem = "the snapshot's label ids are not the session's first labels"
        elif covered.tolist() != [list(p) for p in pairs[:n]]:
            problem = "the snapshot's items or values are not the session's"
        elif mine.get("pool_digest") != self._pool_digest():
            problem = "the snapshot is for another labelling pool"
        elif any(saved.get(k) != v for k, v in expected.items()):
            problem = "the snapshot is for another configuration"
        if problem is not None:
            self.run.resume_note = f"{problem}: every event replayed"
            return None
        loop = ActiveLearningLoop.from_state(arrays, loop_meta, **data)
        self.stopping.restore(arrays, sum(1 for _, value in pairs[:n] if value != 0))
        self.run.resume_note = f"resumed from the snapshot after {n} answers"
        return loop

    def save_snapshot(self) -> int | None:
        """Store the loop as a model snapshot covering the answers so far; returns its id.

        Called every ``SNAPSHOT_EVERY`` answers and when the session is closed. A
        failure to store it (a full disk) changes nothing else: the next resume
        replays more events; ``snapshot_error`` says what went wrong.
        """
        with self.run.lock:
            if self.run.loop is None:  # no model to store (see LabellingRun.problem)
                return None
            # with the solver states from before the last few labels (non-exact solvers), so
            # that many undos after a resume restore a state instead of replaying every label
            arrays, loop_meta = self.run.loop.to_state(previous=SNAPSHOT_UNDO_STATES)
            arrays.update(self.stopping.arrays())  # the stability rule's checkpoints (app.services.stopping)
            n = len(self.run.answers)
            meta = {
                "loop": loop_meta,
                "service": {
                    "format": SNAPSHOT_FORMAT,
                    "label_ids": [a.label_id for a in self.run.answers],
                    "pool_digest": self._pool_digest(),
                    "n_labels": self.readouts.n_labels,
                },
            }
        try:
            snapshot_id = repo.save_snapshot(self.run.engine, self.run.session_id, n_events=n, arrays=arrays, meta=meta)
        except (StorageError, SQLAlchemyError, OSError) as error:  # e.g. the disk is full
            logger.warning("session %s: the model snapshot was not stored: %s", self.run.session_id, error)
            self.snapshot_error = database_trouble(error)
            return None
        self.snapshot_error = None
        self.label_ids = meta["service"]["label_ids"]
        return snapshot_id

    @property
    def snapshot_events(self) -> int | None:
        """Answers covered by the last snapshot this run saved or resumed from."""
        return None if self.label_ids is None else len(self.label_ids)

    @property
    def snapshot_is_behind(self) -> bool:
        """Whether the run has answers (or changed ones) that its latest snapshot does not cover."""
        return (
            self.run.loop is not None
            and bool(self.run.answers)
            and ([a.label_id for a in self.run.answers] != self.label_ids)
        )
