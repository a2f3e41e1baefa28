"""One labelling session brought to life: ``LabellingRun``.

A run holds the dataset's arrays, the active-learning loop rebuilt from the
stored label events, and the item currently shown.

The order of a label is fixed: the label is committed through ``storage``
first, then the loop learns it, then the next query is computed. A label is
therefore durable before the screen moves on, and a crash between the two
leaves a database from which the same model is rebuilt. Resuming is fast: see
``app.services.snapshots``.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from app.services.common import EVAL_FRACTION, EVAL_MAX_ITEMS, VALUE_NAMES, Outcome, ServiceError, scale_features
from app.services.readouts import RunReadouts
from app.services.snapshots import SNAPSHOT_EVERY, RunSnapshots
from core.loop import ActiveLearningLoop
from storage import repository as repo
from storage.errors import DuplicateLabelError, StorageError

if TYPE_CHECKING:
    from app.services.marginlab import MarginLab


@dataclass(frozen=True)
class ShownItem:
    """The item the panel shows and why it was chosen."""

    item_index: int  # row of the dataset
    pool_index: int  # index in the loop's pool
    score: float | None  # decision value f(x) the model gave the item when it was asked
    strategy: str
    reason: str
    query_ms: float | None


@dataclass
class Answer:
    """One active label event as the service keeps it (mirrors the database)."""

    item_index: int
    value: int
    score: float | None
    label_id: int | None = None  # the stored label's id (checks that a snapshot covers these events)


def evaluation_split(y_true: np.ndarray, fraction: float, seed: int,
                     max_items: int = EVAL_MAX_ITEMS) -> tuple[np.ndarray, np.ndarray]:
    """(pool items, evaluation items): a stratified split drawn with ``seed``.

    ``fraction`` of each class is held out, at most ``max_items`` in all. Each
    class keeps at least one item on each side, so the ROC curve on the
    evaluation items is defined and both classes can still be found in the pool.
    """
    rng = np.random.default_rng(seed)
    fraction = min(float(fraction), max_items / max(len(y_true), 1))
    held = []
    for cls in (-1, 1):
        members = np.flatnonzero(y_true == cls)
        rng.shuffle(members)
        k = int(round(fraction * len(members)))
        k = min(max(k, 1), len(members) - 1) if len(members) > 1 else 0
        held.append(members[:k])
    eval_items = np.sort(np.concatenate(held)).astype(np.intp)
    pool_items = np.setdiff1d(np.arange(len(y_true)), eval_items).astype(np.intp)
    return pool_items, eval_items


class LabellingRun(RunSnapshots, RunReadouts):
    """A stored labelling session brought to life (see the module docstring)."""

    def __init__(self, service: MarginLab, session_id: int):
        self.service = service
        self.engine = service.engine
        self.session_id = int(session_id)
        self.lock = threading.RLock()
        self.info = repo.get_session(self.engine, self.session_id)
        self.dataset = repo.get_dataset(self.engine, self.info.dataset_id)
        X, y_true, feature_names, display = repo.load_dataset_arrays(self.engine, self.info.dataset_id)
        self.X_raw = X
        self.y_true = None if y_true is None else np.asarray(y_true, dtype=np.int64)
        self.feature_names = list(feature_names)
        self.display = display
        params = dict(self.info.params or {})
        self.scaling = params.get("scaling", self.dataset.meta.get("scaling", "none"))
        self.X = scale_features(X, self.scaling)
        self.seed = 0 if self.info.seed is None else int(self.info.seed)
        self.eval_fraction = float(params.get("eval_fraction", EVAL_FRACTION))
        if self.y_true is not None and self.eval_fraction > 0:
            self.pool_items, self.eval_items = evaluation_split(self.y_true, self.eval_fraction, self.seed)
        else:
            self.pool_items, self.eval_items = np.arange(len(X), dtype=np.intp), np.zeros(0, dtype=np.intp)
        self.pool_of_item = {int(item): k for k, item in enumerate(self.pool_items)}
        self.solver_params = dict(params.get("solver_params", {}))
        self.strategy_params = dict(params.get("strategy_params", {}))
        self.answers: list[Answer] = []
        self.shown: ShownItem | None = None
        self.last_update_ms: float | None = None
        self.last_message: Outcome | None = None
        #: answers the last rebuild took from a snapshot (None: every event was replayed)
        self.resumed_from: int | None = None
        #: how the last rebuild went (from a snapshot, or why every event was replayed)
        self.resume_note = ""
        self._asked_metrics: list[tuple[float, float]] = []  # see _history
        #: answers covered by the last snapshot this run saved or resumed from
        self.snapshot_events: int | None = None
        self.version = 0  # changes with every label, skip, undo or rebuild (keys the cached read-outs)
        self._cache: dict[str, tuple[int, Any]] = {}
        self._rebuild()

    # -- construction -----------------------------------------------------
    def _loop_config(self) -> dict[str, Any]:
        return dict(
            strategy=self.info.strategy,
            solver=self.info.solver,
            solver_params=self.solver_params or None,
            strategy_params=self.strategy_params or None,
            seed=self.seed,
        )

    def _loop_data(self) -> dict[str, Any]:
        """The pool, and the evaluation split the loop scores after every label (cheaply: it keeps
        the kernel columns of support vectors)."""
        data: dict[str, Any] = {"X": self.X[self.pool_items]}
        if self.has_evaluation:
            data["eval_X"] = self.X[self.eval_items]
            data["eval_y"] = self.y_true[self.eval_items].astype(np.float64)
        return data

    def _rebuild(self) -> None:
        """Rebuild the loop from the stored label events (the database is the truth).

        From the latest snapshot plus the events after it when the snapshot matches
        the events; otherwise by replaying every event.
        """
        events = repo.label_events(self.engine, self.session_id)
        pairs = []
        self.answers = []
        for event in events:
            if event.item_index not in self.pool_of_item:
                raise ServiceError(
                    f"Session {self.session_id}: item {event.item_index} is labelled but is not in the "
                    "labelling pool (it belongs to the evaluation split)."
                )
            pairs.append((self.pool_of_item[event.item_index], int(event.value)))
            self.answers.append(Answer(event.item_index, int(event.value), event.decision_value, event.label_id))
        self._asked_metrics = []
        data = self._loop_data()
        self.loop, self.resumed_from = self._from_snapshot(pairs, data), None
        if self.loop is not None:
            self.resumed_from = len(self.loop.events)
            self.snapshot_events = self.resumed_from
        else:
            self.loop = ActiveLearningLoop(**data, **self._loop_config())
        self.loop.replay(pairs[len(self.loop.events):])
        self.last_update_ms = None
        self.version += 1
        self._ask()
        if self.service.use_snapshots and len(pairs) - (self.resumed_from or 0) >= SNAPSHOT_EVERY:
            self.save_snapshot()  # the next resume need not replay these again

    def _ask(self) -> None:
        """Compute (or fetch: queries are a function of the events) the item to show next."""
        query = self.loop.next_query()
        if query is None:
            self.shown = None
            return
        pool_index = int(query.index)
        score = float(query.score)
        query_ms = float(query.query_ms)
        self.shown = ShownItem(
            item_index=int(self.pool_items[pool_index]),
            pool_index=pool_index,
            score=score if np.isfinite(score) else None,
            strategy=str(query.strategy),
            reason=str(query.reason or ""),
            query_ms=query_ms if np.isfinite(query_ms) else None,
        )

    # -- the three answers and undo -----------------------------------------
    def answer(self, value: int, *, item_index: int | None = None) -> Outcome:
        """Label the shown item +1 / -1, or skip it (0).

        ``item_index`` is the item the person saw when they pressed the button;
        when it is no longer the shown item (a double click, a second tab), the
        request is refused with a message instead of labelling an item nobody saw.

        The stored provenance describes the model that asked: its decision value
        for the item, its version (the number of answers it had learned), the
        milliseconds its last update took and those it took to choose this item.
        (The label is committed before its own update runs, so that update's
        time is stored with the next label.)
        """
        value = int(value)
        if value not in (1, -1, 0):
            raise ServiceError(f"A label is +1, -1 or 0 (skip), not {value}.")
        with self.lock:
            shown = self.shown
            if shown is None:
                return self._tell(Outcome(False, "Every item in the pool has been answered.", "warning"))
            if item_index is not None and int(item_index) != shown.item_index:
                already = next((a for a in reversed(self.answers) if a.item_index == int(item_index)), None)
                if already is not None:
                    return self._tell(Outcome(
                        False,
                        f"Item {item_index} was already answered ({VALUE_NAMES[already.value]}); "
                        "the second click was ignored.", "warning"))
                return self._tell(Outcome(False, f"Item {item_index} is no longer the item on screen; "
                                                 "nothing was recorded.", "warning"))
            try:
                stored = repo.record_label(
                    self.engine, self.session_id, item_index=shown.item_index, value=value,
                    annotator=self.info.annotator, strategy=shown.strategy, solver=self.info.solver,
                    decision_value=shown.score, model_version=len(self.answers),
                    update_ms=self.last_update_ms, query_ms=shown.query_ms)
            except DuplicateLabelError as error:
                # stored once already (another tab or process): take the database's view
                self._rebuild()
                return self._tell(Outcome(False, f"{error} Nothing was recorded twice.", "warning"))
            except StorageError as error:  # e.g. the session was closed meanwhile
                return self._tell(Outcome(False, f"Nothing was recorded: {error}", "error"))
            self.answers.append(Answer(shown.item_index, value, shown.score, getattr(stored, "label_id", None)))
            if value == 0:
                self.loop.skip(shown.pool_index)
                self.last_update_ms = None  # a skip leaves the model as it is
            else:
                row = self.loop.teach(shown.pool_index, value)
                self.last_update_ms = float(row.update_ms)  # solver update + pool scores kept current
            self.version += 1
            self._ask()
            if len(self.answers) % SNAPSHOT_EVERY == 0:
                self.save_snapshot()
            return self._tell(Outcome(True, f"Item {shown.item_index}: {VALUE_NAMES[value]}."))

    def positive(self, item_index: int | None = None) -> Outcome:
        return self.answer(1, item_index=item_index)

    def negative(self, item_index: int | None = None) -> Outcome:
        return self.answer(-1, item_index=item_index)

    def skip(self, item_index: int | None = None) -> Outcome:
        return self.answer(0, item_index=item_index)

    def undo(self, *, last_item_index: int | None = None) -> Outcome:
        """Undo the last label or skip: storage first, then the loop; the item is shown again.

        ``last_item_index`` is the item whose answer the person saw as the last one
        when they pressed Undo; a second, stale Undo (a double click) is refused.
        """
        with self.lock:
            if last_item_index is not None and (not self.answers
                                                or self.answers[-1].item_index != int(last_item_index)):
                return self._tell(Outcome(False, f"The answer on item {last_item_index} was already undone; "
                                                 "the second click was ignored.", "warning"))
            try:
                event = repo.undo_last_label(self.engine, self.session_id)
            except StorageError as error:
                return self._tell(Outcome(False, f"Nothing was undone: {error}", "error"))
            if event is None:
                return self._tell(Outcome(False, "Nothing to undo.", "warning"))
            last = self.answers[-1] if self.answers else None
            if last is None or last.item_index != event.item_index:
                self._rebuild()  # another tab labelled meanwhile: follow the database
            else:
                self.answers.pop()
                self.loop.undo()  # exact: unlearn, or the solver state from before the label
                del self._asked_metrics[self.n_labels:]
                self.last_update_ms = None
                self.version += 1
                self._ask()  # the loop asks the same question again
            return self._tell(Outcome(True, f"Undid {VALUE_NAMES[event.value]} on item {event.item_index}."))

    def close(self) -> Outcome:
        """Close the session: store a snapshot of the model first, then mark the session closed."""
        with self.lock:
            self.save_snapshot()
            try:
                repo.close_session(self.engine, self.session_id)
            except StorageError as error:
                return self._tell(Outcome(False, f"The session was not closed: {error}", "error"))
            return self._tell(Outcome(True, f"Session {self.session_id} closed."))

    def _tell(self, outcome: Outcome) -> Outcome:
        self.last_message = outcome
        return outcome
