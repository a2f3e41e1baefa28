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

import logging
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import scipy.sparse as sp
from sqlalchemy.exc import SQLAlchemyError

from app.services.accounts import Accounts, Identity
from app.services.common import (
    VALUE_NAMES,
    Outcome,
    ServiceError,
    class_names,
    database_trouble,
    forwarded,
    numeric_columns,
    scaled_row_blocks,
)
from app.services.display import ItemDisplay
from app.services.errors import service_boundary
from app.services.history import RunHistory
from app.services.priors import RunPriors
from app.services.readouts import RunReadouts
from app.services.records import Answer, ShownItem, evaluation_split, undo_stored
from app.services.snapshots import SNAPSHOT_EVERY, RunSnapshots
from app.services.stopping import RunStopping, stopping_settings
from core.loop import ActiveLearningLoop
from core.settings import SessionSettings
from core.stopping import CHECK_STRATEGY
from storage import repository as repo
from storage.errors import DuplicateLabelError, StorageError

logger = logging.getLogger(__name__)

#: at most this many characters of an error's own text are shown in a message
CAUSE_CHARS = 300


class PoolPositions(Mapping[int, int]):
    """Dataset item -> its position in the labelling pool, for the pool's items only.

    A read-only mapping over one integer array (a million-item pool costs 8 MB and
    no Python objects, where a dict costs ~100 MB and a noticeable wait on open).
    """

    def __init__(self, pool_items: np.ndarray, n_items: int):
        self._items = np.asarray(pool_items, dtype=np.intp)
        self._position = np.full(n_items, -1, dtype=np.intp)
        self._position[self._items] = np.arange(len(self._items))

    def __getitem__(self, item: int) -> int:
        if isinstance(item, (bool, np.bool_)) or not isinstance(item, (int, np.integer)):
            raise KeyError(item)
        if not 0 <= item < len(self._position) or self._position[item] < 0:
            raise KeyError(item)
        return int(self._position[item])

    def __contains__(self, item: object) -> bool:
        try:
            self[item]  # type: ignore[index]
        except KeyError:
            return False
        return True

    def __iter__(self) -> Iterator[int]:
        return (int(item) for item in self._items)

    def __len__(self) -> int:
        return len(self._items)


class ScaledItems:
    """The scaled feature row of any dataset item, read from the pool and evaluation matrices
    (the loop's own arrays: the scaled features are held once, not also as a whole matrix)."""

    def __init__(self, pool_X, positions: PoolPositions, eval_X, eval_items: np.ndarray, n_items: int):
        self.pool_X, self.positions, self.eval_X = pool_X, positions, eval_X
        self.eval_items = np.asarray(eval_items, dtype=np.intp)  # ascending
        self.shape = (n_items, pool_X.shape[1])

    def _where(self, item: int) -> tuple[bool, int]:
        """(in the pool, row) of an item."""
        item = int(item)
        if item in self.positions:
            return True, self.positions[item]
        k = int(np.searchsorted(self.eval_items, item))
        if k < len(self.eval_items) and self.eval_items[k] == item:
            return False, k
        raise IndexError(f"item {item} is not in this dataset (0..{self.shape[0] - 1})")

    def __getitem__(self, item):
        """The row of one item, or the rows of an array of items (a new matrix, in that order)."""
        if np.ndim(item) == 0:
            in_pool, row = self._where(item)
            return (self.pool_X if in_pool else self.eval_X)[row]
        where = [self._where(i) for i in np.asarray(item).tolist()]
        pool_rows = [k for in_pool, k in where if in_pool]
        eval_rows = [k for in_pool, k in where if not in_pool]
        parts = [self.pool_X[np.asarray(pool_rows, dtype=np.intp)], self.eval_X[np.asarray(eval_rows, dtype=np.intp)]]
        stacked = sp.vstack(parts, format="csr") if sp.issparse(self.pool_X) else np.concatenate(parts)
        order = np.argsort([not in_pool for in_pool, _ in where], kind="stable")  # pool rows came first
        return stacked[np.argsort(order, kind="stable")]

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self[np.arange(self.shape[0])], dtype=dtype)

    def __len__(self) -> int:
        return self.shape[0]


class StoredRows:
    """The stored (unscaled) feature rows of a dense dataset, read from the database when a page asks
    for one (``repository.load_feature_rows``): a run of a scaled dataset holds its scaled pool once and
    not also the raw matrix, which it needs only to show an item's values.  The last few rows are kept."""

    KEEP = 64

    def __init__(self, engine, dataset_id: int, n_items: int, n_features: int):
        self.engine, self.dataset_id = engine, int(dataset_id)
        self.shape = (int(n_items), int(n_features))
        self._kept: OrderedDict[int, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()  # (pages of several browser tabs may ask at once)

    def __getitem__(self, item):
        if np.ndim(item) != 0:
            return repo.load_feature_rows(self.engine, self.dataset_id, np.asarray(item).tolist())
        item = int(item)
        if not 0 <= item < self.shape[0]:
            raise IndexError(f"item {item} is not in this dataset (0..{self.shape[0] - 1})")
        with self._lock:
            row = self._kept.get(item)
            if row is not None:
                self._kept.move_to_end(item)
                return row
        row = repo.load_feature_rows(self.engine, self.dataset_id, [item])[0]
        row.flags.writeable = False  # shared by whoever asks next
        with self._lock:
            self._kept[item] = row
            while len(self._kept) > self.KEEP:
                self._kept.popitem(last=False)
        return row

    def __len__(self) -> int:
        return self.shape[0]


class LabellingRun:
    """A stored labelling session brought to life (see the module docstring).

    The run holds the session, its data, answers and model, and takes the three answers and undo; its
    parts, each given the run (as ``records.RunState``) and the other parts it uses, do the rest:
    ``readouts`` (counts, learning curve, ROC curve, the model's state), ``stopping`` (the stopping
    rules, recall checks), ``snapshots`` (model snapshots, to resume fast), ``label_history`` (the
    label history: corrections, labels imported from a file) and ``priors`` (known items).  The pages
    call the parts' methods on the run too (``FORWARDED``)."""

    def __init__(self, engine, session_id: int, *, accounts: Accounts, use_snapshots: bool = True):
        self.engine, self.accounts = engine, accounts
        #: resume from the latest snapshot (False: always replay every event)
        self.use_snapshots = bool(use_snapshots)
        self.session_id = int(session_id)
        self.lock = threading.RLock()
        self.info = repo.get_session(self.engine, self.session_id)
        self.dataset = repo.get_dataset(self.engine, self.info.dataset_id)
        #: the session's settings (core.settings); None when this version refuses one (``settings_refused``
        #: says why: the run opens, keeps its labels and says so, see _rebuild)
        self.settings: SessionSettings | None = None
        self.settings_refused: ValueError | None = None
        try:
            self.settings = settings = self.info.settings
        except ValueError as error:
            self.settings_refused = error
            # how the items are split and scaled is still read, so that the labels stay usable
            data = {k: v for k, v in (self.info.params or {}).items() if k in ("scaling", "eval_fraction", "find")}
            settings = SessionSettings.from_json(data, seed=self.info.seed)
        self.scaling = settings.scaling if settings.scaling is not None else self.dataset.meta.get("scaling", "none")
        self.seed = settings.seed
        self.eval_fraction = settings.eval_fraction
        #: what the analyst is looking for, in their words (None: the dataset's positive class)
        self.find: str | None = settings.find
        self.solver_params = settings.solver_params() if self.settings is not None else {}
        self.strategy_params = dict(settings.strategy_params)
        self.X_raw = self.X = self.y_true = self.display = None  # the arrays: see _load_arrays
        self.pool_X = self.eval_X = None  # the scaled pool and evaluation rows (the loop's data)
        self.feature_names: list[str] = []
        self.pool_items = self.eval_items = np.zeros(0, dtype=np.intp)
        self.pool_of_item: Mapping[int, int] = {}
        self.loop: ActiveLearningLoop | None = None
        #: how an item is shown (the same for a team project's run): see _load_arrays
        self.item_display: ItemDisplay | None = None
        #: why this session's model cannot be used (None while it can): see cannot_go_on
        self.problem: str | None = None
        self.problem_cause: str | None = None  # the error's own text, within ``problem``
        self.answers: list[Answer] = []
        self.shown: ShownItem | None = None
        self.last_update_ms: float | None = None
        self.last_message: Outcome | None = None
        #: answers the last rebuild took from a snapshot (None: every event was replayed)
        self.resumed_from: int | None = None
        #: how the last rebuild went (from a snapshot, or why every event was replayed)
        self.resume_note = ""
        self.version = 0  # changes with every label, skip, undo or rebuild (keys the cached read-outs)
        self.readouts = RunReadouts(self)
        self.stopping = RunStopping(self, self.readouts, stopping_settings(self.info.params))
        self.snapshots = RunSnapshots(self, self.readouts, self.stopping)
        self.label_history = RunHistory(self, self.readouts, self.stopping, self.snapshots)
        self.priors = RunPriors(self, self.readouts, self.stopping)
        self.rebuild()

    @property
    def class_names(self) -> dict[int, str]:
        """``{+1: positive class name, -1: negative class name, 0: "skipped"}`` of the session's dataset."""
        return class_names(self.dataset.meta)

    # -- construction -----------------------------------------------------
    def _load_arrays(self) -> None:
        """The dataset's features (scaled as the session asks) and the pool / evaluation split."""
        # read-only: only rows are gathered from it (the scaled pool and evaluation parts)
        X, y_true, feature_names, display = repo.load_dataset_arrays(self.engine, self.info.dataset_id, writable=False)
        self.y_true = None if y_true is None else np.asarray(y_true, dtype=np.int64)
        self.feature_names = list(feature_names)
        self.display = display
        if self.y_true is not None and self.eval_fraction > 0:
            self.pool_items, self.eval_items = evaluation_split(self.y_true, self.eval_fraction, self.seed)
        else:
            self.pool_items, self.eval_items = np.arange(X.shape[0], dtype=np.intp), np.zeros(0, dtype=np.intp)
        self.pool_of_item = PoolPositions(self.pool_items, X.shape[0])
        # only the pool's and the evaluation's rows are scaled (statistics from every row): the
        # scaled ones are held once, shared with the loop and solver
        self.pool_X, self.eval_X = scaled_row_blocks(
            X, self.scaling, numeric_columns(self.dataset.meta), self.pool_items, self.eval_items
        )
        self.X = ScaledItems(self.pool_X, self.pool_of_item, self.eval_X, self.eval_items, X.shape[0])
        # the raw values, for showing an item: unscaled, the pool and evaluation rows are the raw rows;
        # scaled and dense, they are read from the database when shown (the whole matrix is not kept);
        # scaled and sparse, the matrix read (a CSR matrix holds only its stored values)
        if self.scaling == "none":
            self.X_raw = self.X
        elif sp.issparse(X):
            self.X_raw = X
        else:
            self.X_raw = StoredRows(self.engine, self.info.dataset_id, X.shape[0], X.shape[1])
        self.item_display = ItemDisplay(
            display=display,
            meta=self.dataset.meta,
            feature_names=self.feature_names,
            raw_rows=self.X_raw,
            scaled_rows=self.X,
            pool_rows=self.pool_X,
            model=lambda: self.loop,
            lock=self.lock,
        )

    def _loop_config(self) -> dict[str, Any]:
        """The loop's keyword arguments (with the pool and evaluation data: ``_loop_data``)."""
        return self._loop_settings().loop_arguments()

    def _loop_settings(self) -> SessionSettings:
        """The settings the loop is built with (a setting this version refuses stops the rebuild here)."""
        if self.settings is None:
            raise self.settings_refused or ServiceError("The session's settings could not be read.")
        return self.settings

    def _loop_data(self) -> dict[str, Any]:
        """The pool, and the evaluation split the loop scores after every label (cheaply: it keeps
        the kernel columns of support vectors)."""
        data: dict[str, Any] = {"X": self.pool_X}
        if self.readouts.has_evaluation:
            data["eval_X"] = self.eval_X
            data["eval_y"] = self.y_true[self.eval_items].astype(np.float64)
        return data

    def rebuild(self) -> None:
        """Rebuild the loop from the stored label events (the database is the truth).

        From the latest snapshot plus the events after it when the snapshot matches
        the events; otherwise by replaying every event. When the model cannot be
        rebuilt (whatever the cause: data stored before today's import checks, a
        stored configuration this version refuses, a solver error) the run says so
        in ``problem`` and keeps its labels, instead of failing every page that opens it.
        """
        try:
            self._replay_events()
        except Exception as error:
            self._keep_stored_answers()
            self.cannot_go_on(
                error,
                f"Session {self.session_id}'s model could not be rebuilt from its {len(self.answers)} stored answers",
            )

    def _replay_events(self) -> None:
        if self.X is None:
            self._load_arrays()
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
            self.answers.append(
                Answer(event.item_index, int(event.value), event.decision_value, event.label_id, event.strategy)
            )
        self.readouts.forget_metrics()
        self.stopping.settings = stopping_settings(repo.get_session(self.engine, self.session_id).params)
        self.stopping.restore({}, 0)
        data = self._loop_data()
        settings = self._loop_settings()
        self.loop, self.resumed_from = self.snapshots.from_snapshot(pairs, data), None
        if self.loop is not None:
            self.resumed_from = len(self.loop.events)
            self.snapshots.label_ids = [a.label_id for a in self.answers[: self.resumed_from]]
        else:
            self.loop = ActiveLearningLoop.from_settings(settings, **data)
        positives = sum(1 for _, value in self.loop.events if value > 0)
        for pair in pairs[len(self.loop.events) :]:  # one at a time: the stability rule reads the model as it goes
            self.loop.replay([pair])
            positives += pair[1] > 0
            if pair[1] != 0:
                self.stopping.record_checkpoint_at(self.loop.n_labels, positives)
        self.check_decision_values([pool_index for pool_index, value in pairs if value != 0])
        self.last_update_ms = None
        self.version += 1
        self.ask()
        if self.use_snapshots and len(pairs) - (self.resumed_from or 0) >= SNAPSHOT_EVERY:
            self.snapshots.save_snapshot()  # the next resume need not replay these again

    def check_decision_values(self, pool_indices: list[int]) -> None:
        """Refuse a model whose decision values on these (labelled) items are not finite numbers."""
        if not pool_indices:
            return
        values = np.asarray(self.loop.solver.decision_function(np.asarray(pool_indices, dtype=np.intp)), dtype=float)
        if not np.all(np.isfinite(values)):
            raise ServiceError(
                "the model's decision values are not finite numbers (features too large for the kernel?)"
            )

    def _keep_stored_answers(self) -> None:
        """Read the answers again from the database (a failed rebuild may have stopped half-way)."""
        try:
            self.answers = [
                Answer(e.item_index, int(e.value), e.decision_value, e.label_id, e.strategy)
                for e in repo.label_events(self.engine, self.session_id)
            ]
        except Exception:  # the database too: keep what this run knew
            logger.exception("session %s: the stored answers could not be read", self.session_id)

    def cannot_go_on(self, error: Exception, what: str) -> Outcome:
        """Drop the model, keep the labels, and say why: ``what`` happened, and the error's own text."""
        logger.error("session %s: %s", self.session_id, what, exc_info=error)
        cause = (
            str(error).strip()
            if isinstance(error, ServiceError | StorageError)
            else f"{type(error).__name__}: {str(error).strip()}"
        )
        if len(cause) > CAUSE_CHARS:
            cause = cause[:CAUSE_CHARS] + "…"
        self.problem_cause = cause
        self.problem = (
            f"{what} ({cause}). Its labels are kept: export them on the Export page, or close "
            "this session and start a new one."
        )
        self.loop = None
        self.shown = None
        self.last_update_ms = None
        self.version += 1
        return self.tell(Outcome(False, self.problem, "error"))

    def ask(self) -> None:
        """Compute (or fetch: queries are a function of the events) the item to show next.

        During a recall check the item shown is a random draw (``app.services.stopping``); the loop
        is asked all the same, so its pending query is the one a replay of these events has.
        """
        query = self.loop.next_query()
        if self.stopping.checking:
            self.shown = self.stopping.random_draw()
            return
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
    def answer(self, value: int, *, item_index: int | None = None, by: Identity | None = None) -> Outcome:
        """Label the shown item +1 / -1, or skip it (0).

        ``by``: the signed-in person answering; nothing is stored once their sign-in has ended
        (``Accounts.sign_in_ended``: disabled, password or role changed), whatever their page shows.

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
            refused = self.refusal(by)
            if refused is not None:
                return refused
            shown = self.shown
            if shown is None:
                return self.tell(Outcome(False, "Every item in the pool has been answered.", "warning"))
            if value == 0 and shown.strategy == CHECK_STRATEGY:
                return self.tell(
                    Outcome(
                        False,
                        "Skip is not available during the random check: the test needs an "
                        "answer for every item it draws. Label it, or stop the check.",
                        "warning",
                    )
                )
            if item_index is not None and int(item_index) != shown.item_index:
                already = next((a for a in reversed(self.answers) if a.item_index == int(item_index)), None)
                if already is not None:
                    return self.tell(
                        Outcome(
                            False,
                            f"Item {item_index} was already answered ({VALUE_NAMES[already.value]}); "
                            "the second click was ignored.",
                            "warning",
                        )
                    )
                return self.tell(
                    Outcome(
                        False, f"Item {item_index} is no longer the item on screen; nothing was recorded.", "warning"
                    )
                )
            try:
                stored = repo.record_label(
                    self.engine,
                    self.session_id,
                    item_index=shown.item_index,
                    value=value,
                    annotator=self.info.annotator,
                    strategy=shown.strategy,
                    solver=self.info.solver,
                    decision_value=shown.score,
                    model_version=len(self.answers),
                    update_ms=self.last_update_ms,
                    query_ms=shown.query_ms,
                )
            except DuplicateLabelError as error:
                # stored once already (another tab or process): take the database's view
                self.rebuild()
                return self.tell(Outcome(False, f"{error} Nothing was recorded twice.", "warning"))
            except StorageError as error:  # e.g. the session was closed meanwhile
                return self.tell(Outcome(False, f"Nothing was recorded: {error}", "error"))
            except SQLAlchemyError as error:  # e.g. the disk is full
                return self.not_recorded(error)
            self.answers.append(
                Answer(shown.item_index, value, shown.score, getattr(stored, "label_id", None), shown.strategy)
            )
            try:
                self._learn(shown, value)
            except Exception as error:
                return self.cannot_go_on(
                    error,
                    f"Item {shown.item_index} ({VALUE_NAMES[value]}) is saved, but "
                    f"session {self.session_id}'s model could not learn it",
                )
            said = f"Item {shown.item_index}: {VALUE_NAMES[value]}"
            note = self.stopping.after_answer()
            if note:
                said = f"{said}. {note}"
            if (
                len(self.answers) % SNAPSHOT_EVERY == 0
                and self.snapshots.save_snapshot() is None
                and self.snapshots.snapshot_error
            ):
                return self.tell(
                    Outcome(
                        True,
                        f"{said} (saved). The model snapshot could not be stored ({self.snapshots.snapshot_error}); "
                        "labelling goes on, and the next start replays the answers since the last snapshot.",
                        "warning",
                    )
                )
            return self.tell(Outcome(True, f"{said}."))

    def refusal(self, by: Identity | None) -> Outcome | None:
        """Why nothing may be written now (the sign-in has ended, the model cannot be used), or None."""
        try:
            ended = self.accounts.sign_in_ended(by)  # (read from the database: it may be down too)
        except SQLAlchemyError as error:
            return self.not_recorded(error)
        if ended:
            return self.tell(Outcome(False, ended, "error"))
        if self.problem is not None:
            return self.tell(Outcome(False, self.problem, "error"))
        return None

    def not_recorded(self, error: SQLAlchemyError) -> Outcome:
        """The answer met a failing database (a full disk, a server restarting): nothing was stored."""
        logger.warning("session %s: the label was not stored: %s", self.session_id, error)
        return self.tell(
            Outcome(
                False, f"Nothing was recorded: the database could not be written ({database_trouble(error)}).", "error"
            )
        )

    def _learn(self, shown: ShownItem, value: int) -> None:
        """The loop learns a stored answer, then asks its next question."""
        if value == 0:
            self.loop.skip(shown.pool_index)
            self.last_update_ms = None  # a skip leaves the model as it is
        else:
            row = self.loop.teach(shown.pool_index, value)
            self.check_decision_values([shown.pool_index])
            self.last_update_ms = float(row.update_ms)  # solver update + pool scores kept current
            self.stopping.record_checkpoint_at(self.readouts.n_labels, self.readouts.n_positive)
        self.version += 1
        self.ask()

    def positive(self, item_index: int | None = None, *, by: Identity | None = None) -> Outcome:
        return self.answer(1, item_index=item_index, by=by)

    def negative(self, item_index: int | None = None, *, by: Identity | None = None) -> Outcome:
        return self.answer(-1, item_index=item_index, by=by)

    def skip(self, item_index: int | None = None, *, by: Identity | None = None) -> Outcome:
        return self.answer(0, item_index=item_index, by=by)

    def undo(self, *, last_item_index: int | None = None, by: Identity | None = None) -> Outcome:
        """Undo the last label or skip: storage first, then the loop; the item is shown again.

        ``last_item_index`` is the item whose answer the person saw as the last one
        when they pressed Undo; a second, stale Undo (a double click) is refused. ``by``: as for ``answer``.
        """
        with self.lock:
            if ended := self.accounts.sign_in_ended(by):
                return self.tell(Outcome(False, ended, "error"))
            if self.problem is not None:
                return self.tell(Outcome(False, self.problem, "error"))
            last = self.answers[-1] if self.answers else None
            event, refused = undo_stored(self, last_item_index)
            if refused is not None:
                return refused
            if event is None and last is not None:
                self.rebuild()  # follow the database
                return self.tell(
                    Outcome(
                        False,
                        f"Nothing was undone: another tab or process has answered since item "
                        f"{last.item_index}, or undone that answer; the session is shown as stored.",
                        "warning",
                    )
                )
            if event is None:
                return self.tell(Outcome(False, "Nothing to undo.", "warning"))
            if last is None or last.label_id != event.label_id:
                self.rebuild()  # an answer without its id (older run): follow the database
            else:
                self.answers.pop()
                self.loop.undo()  # exact: unlearn, or the solver state from before the label
                self.readouts.forget_metrics(after=self.readouts.n_labels)
                self.stopping.forget_after_undo()
                self.last_update_ms = None
                self.version += 1
                self.ask()  # the loop asks the same question again
            return self.tell(Outcome(True, f"Undid {VALUE_NAMES[event.value]} on item {event.item_index}."))

    def close(self, *, by: Identity | None = None) -> Outcome:
        """Close the session: store a snapshot of the model first, then mark the session closed."""
        with self.lock:
            if ended := self.accounts.sign_in_ended(by):
                return self.tell(Outcome(False, ended, "error"))
            if self.problem is None:
                self.snapshots.save_snapshot()
            try:
                repo.close_session(self.engine, self.session_id)
            except (StorageError, SQLAlchemyError) as error:
                return self.tell(Outcome(False, f"The session was not closed: {database_trouble(error)}", "error"))
            return self.tell(Outcome(True, f"Session {self.session_id} closed."))

    def tell(self, outcome: Outcome) -> Outcome:
        self.last_message = outcome
        return outcome


#: the parts' methods and read-outs the pages call on the run (``run.name`` is ``run.part.name``)
FORWARDED: dict[str, tuple[type, tuple[str, ...]]] = {
    "readouts": (
        RunReadouts,
        (
            "n_labels",
            "n_skips",
            "n_positive",
            "n_seen",
            "looking_for",
            "sparse_model",
            "has_evaluation",
            "history",
            "evaluation_scores",
            "roc",
            "model_state",
            "hyper_words",
            "hyper_words_for_screeners",
            "support_vector_words",
        ),
    ),
    "stopping": (RunStopping, ("checking", "stopping_status", "set_stopping", "start_check", "stop_check")),
    "snapshots": (RunSnapshots, ("save_snapshot", "snapshot_error", "snapshot_events", "snapshot_is_behind")),
    "label_history": (RunHistory, ("label_table", "change_label", "remove_label", "plan_import", "import_labels")),
    "priors": (RunPriors, ("search_how", "search_pool", "mark_known", "n_known")),
}
for _part, (_source, _names) in FORWARDED.items():
    for _name in _names:
        setattr(LabellingRun, _name, forwarded(_part, _name, _source))
# every call a page makes on a run, its own and its parts', at the service's boundary (``errors``)
service_boundary(LabellingRun)
