"""The labelling-session service: what the pages do, without Streamlit.

``MarginLab`` is one per process and database. It imports datasets, starts and
resumes labelling sessions, runs comparisons and produces exports. A
``LabellingRun`` is one labelling session brought to life: the dataset's
arrays, the active-learning loop rebuilt from the stored label events, and the
item currently shown.

The order of a label is fixed: the label is committed through ``storage``
first, then the loop learns it, then the next query is computed. A label is
therefore durable before the screen moves on, and a crash between the two
leaves a database from which the same model is rebuilt.

Resuming is fast: every ``SNAPSHOT_EVERY`` answers (and when a session is
closed) the whole loop is saved as a model snapshot (``ActiveLearningLoop.to_state``:
plain arrays + JSON). A session is rebuilt from its latest snapshot plus the
events after it; when there is no snapshot, or it does not cover exactly the
stored events (count, label ids, items and values, configuration, pool), every
event is replayed instead.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from core.loop import ActiveLearningLoop
from core.metrics import roc_auc, roc_curve
from core.strategies import DEFAULT_SOLVER  # default solver of each heuristic (DESIGN.md)
from storage import repository as repo
from storage.engine import init_db, make_engine
from storage.errors import DuplicateDatasetError, DuplicateLabelError, StorageError

#: heuristics an analyst can label with (``gradient`` needs the true labels: simulation only)
LABEL_STRATEGIES = ("near-boundary", "largest-positive", "randomized-search", "autoactive", "ramp-region", "random")
#: heuristics the Compare page can simulate (the true labels play the oracle)
COMPARE_STRATEGIES = (*LABEL_STRATEGIES, "gradient")
#: solvers the Label page offers
SOLVERS = ("incremental", "lasvm", "ramp", "active-set")
#: defaults for the RBF kernel: C = 1 and gamma = 1 / (n_features * Var(X)) ("scale")
DEFAULT_C = 1.0
DEFAULT_GAMMA = "scale"
#: share of a dataset with true labels held out to draw the live ROC curve and AUC
EVAL_FRACTION = 0.3
#: ... and at most this many items (the live evaluation stays cheap on large datasets)
EVAL_MAX_ITEMS = 2000

#: a snapshot of the loop is stored after every this many answers (labels and skips)
SNAPSHOT_EVERY = 25
#: ... with the solver states from before this many of the last labels (lasvm, ramp: see save_snapshot)
SNAPSHOT_UNDO_STATES = 5
#: format of the service's part of a snapshot's meta
SNAPSHOT_FORMAT = 1

DEMO_NAME = "digits: 8 vs rest"

VALUE_NAMES = {1: "positive", -1: "negative", 0: "skip"}


class ServiceError(Exception):
    """Something the user asked for cannot be done; the message says why."""


# --------------------------------------------------------------------------- small results


@dataclass(frozen=True)
class ShownItem:
    """The item the panel shows and why it was chosen."""

    item_index: int  # row of the dataset
    pool_index: int  # index in the loop's pool
    score: float | None  # decision value f(x) the model gave the item when it was asked
    strategy: str
    reason: str
    query_ms: float | None


@dataclass(frozen=True)
class Outcome:
    """What happened to a Positive / Negative / Skip / Undo request."""

    ok: bool
    message: str
    kind: str = "info"  # "info", "warning" or "error"


@dataclass
class Answer:
    """One active label event as the service keeps it (mirrors the database)."""

    item_index: int
    value: int
    score: float | None
    label_id: int | None = None  # the stored label's id (checks that a snapshot covers these events)


# --------------------------------------------------------------------------- helpers


def scale_features(X: np.ndarray, scaling: str) -> np.ndarray:
    """``none`` or ``standard`` (zero mean, unit variance per column; constant columns left at 0)."""
    if scaling in (None, "", "none"):
        return np.asarray(X, dtype=np.float64)
    if scaling != "standard":
        raise ServiceError(f"Unknown scaling '{scaling}'; choose 'none' or 'standard'.")
    from core.datasets import standardize

    return standardize(X)[0]  # (scaled X, mean, scale)


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


def _unique(names: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name} ({seen[name]})")
    return out


def _natural_key(text: str) -> tuple:
    try:
        return (0, float(text), text)
    except ValueError:
        return (1, 0.0, re.sub(r"\s+", " ", text.lower()))


# --------------------------------------------------------------------------- one labelling session


class LabellingRun:
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

    def _pool_digest(self) -> str:
        return hashlib.sha256(np.ascontiguousarray(self.pool_items, dtype=np.int64).tobytes()).hexdigest()

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

    def _from_snapshot(self, pairs: list[tuple[int, int]], data: dict[str, Any]) -> ActiveLearningLoop | None:
        """The loop restored from the latest snapshot, if it covers exactly the first events; else None."""
        snapshot = repo.latest_snapshot(self.engine, self.session_id) if self.service.use_snapshots else None
        if snapshot is None:
            self.resume_note = "no snapshot: every event replayed"
            return None
        n, arrays, meta = snapshot
        mine, loop_meta = meta.get("service", {}), meta.get("loop", {})
        covered = np.asarray(arrays.get("events", np.zeros((0, 2))), dtype=np.int64).reshape(-1, 2)
        solver_params = dict(self.solver_params)
        solver_params.setdefault("random_state", self.seed)  # as the loop completes it
        expected = dict(strategy=self.info.strategy, solver=self.info.solver, solver_params=solver_params,
                        strategy_params=self.strategy_params, seed=self.seed)
        saved = loop_meta.get("config", {})
        problem = None
        if mine.get("format") != SNAPSHOT_FORMAT:
            problem = "unknown snapshot format"
        elif n > len(pairs) or len(covered) != n:
            problem = f"the snapshot covers {n} answers, the session has {len(pairs)}"
        elif mine.get("label_ids") != [a.label_id for a in self.answers[:n]]:
            problem = "the snapshot's label ids are not the session's first labels"
        elif covered.tolist() != [list(p) for p in pairs[:n]]:
            problem = "the snapshot's items or values are not the session's"
        elif mine.get("pool_digest") != self._pool_digest():
            problem = "the snapshot is for another labelling pool"
        elif any(saved.get(k) != v for k, v in expected.items()):
            problem = "the snapshot is for another configuration"
        if problem is None:
            try:
                loop = ActiveLearningLoop.from_state(arrays, loop_meta, **data)
            except (ValueError, KeyError, TypeError, IndexError) as error:
                problem = f"the snapshot could not be read ({error})"
        if problem is not None:
            self.resume_note = f"{problem}: every event replayed"
            return None
        self.resume_note = f"resumed from the snapshot after {n} answers"
        return loop

    def save_snapshot(self) -> int | None:
        """Store the loop as a model snapshot covering the answers so far; returns its id.

        Called every ``SNAPSHOT_EVERY`` answers and when the session is closed. A
        failure to store it changes nothing else (the next resume replays more events).
        """
        with self.lock:
            # with the solver states from before the last few labels (non-exact solvers), so
            # that many undos after a resume restore a state instead of replaying every label
            arrays, loop_meta = self.loop.to_state(previous=SNAPSHOT_UNDO_STATES)
            n = len(self.answers)
            meta = {"loop": loop_meta, "service": {
                "format": SNAPSHOT_FORMAT, "label_ids": [a.label_id for a in self.answers],
                "pool_digest": self._pool_digest(), "n_labels": self.n_labels}}
        try:
            snapshot_id = repo.save_snapshot(self.engine, self.session_id, n_events=n, arrays=arrays, meta=meta)
        except StorageError:
            return None
        self.snapshot_events = n
        return snapshot_id

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

    # -- read-outs ------------------------------------------------------------
    @property
    def n_labels(self) -> int:
        return sum(1 for a in self.answers if a.value != 0)

    @property
    def n_skips(self) -> int:
        return sum(1 for a in self.answers if a.value == 0)

    @property
    def n_positive(self) -> int:
        return sum(1 for a in self.answers if a.value == 1)

    @property
    def n_seen(self) -> int | None:
        """Items the stream walked past (ramp-region), or None for other heuristics."""
        return int(self.loop.seen) if self.info.strategy == "ramp-region" else None

    @property
    def has_evaluation(self) -> bool:
        return len(self.eval_items) > 0

    def _cached(self, name: str, compute):
        with self.lock:
            hit = self._cache.get(name)
            if hit is not None and hit[0] == self.version:
                return hit[1]
            value = compute()
            self._cache[name] = (self.version, value)
            return value

    def history(self) -> pd.DataFrame:
        """One row per label: n_labels, score, n_sv, n_bound, n_in_margin, auc, update/query ms, seen."""
        return self._cached("history", self._history)

    def _history(self) -> pd.DataFrame:
        frame = self.loop.history_frame()  # a new frame on every call: ours to change
        if len(frame) and not self.has_evaluation:
            # no true labels: the AUC of the scores given when asked, over the labels so far
            # (one entry per label, kept: answers are only appended, or popped by undo)
            metrics = self._asked_metrics
            if len(metrics) < len(frame):
                upto = [k + 1 for k, a in enumerate(self.answers) if a.value != 0]
                metrics.extend(self._metrics(upto=u) for u in upto[len(metrics):])
            frame["auc"] = [m[0] for m in metrics[: len(frame)]]
            frame["accuracy"] = [m[1] for m in metrics[: len(frame)]]
        return frame

    def evaluation_scores(self) -> np.ndarray:
        """f(x) of the current model for every evaluation item (kept by the loop)."""
        scores = self.loop.evaluation_scores()
        return np.zeros(0) if scores is None else scores

    def _asked_scores(self, upto: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(labels, scores the model gave the items when it asked) of the first ``upto`` answers."""
        pairs = [(a.value, a.score) for a in self.answers[:upto] if a.value != 0 and a.score is not None]
        return (np.array([p[0] for p in pairs], dtype=float), np.array([p[1] for p in pairs], dtype=float))

    def _metrics(self, upto: int) -> tuple[float, float]:
        """(AUC, accuracy) after the first ``upto`` answers without an evaluation split: the AUC
        of the scores given when asked over the labels so far (accuracy undefined then).
        With an evaluation split the loop records both after every label."""
        y, scores = self._asked_scores(upto)
        if len(y) < 2 or len(np.unique(y)) < 2:
            return float("nan"), float("nan")
        return float(roc_auc(y, scores)), float("nan")

    def roc(self) -> tuple[np.ndarray, np.ndarray, float, str] | None:
        """(fpr, tpr, auc, title) of the live ROC curve, or None while one class is missing.

        On the evaluation split when the dataset has true labels; otherwise from the
        scores the model gave each labelled item when it asked about it.
        """
        return self._cached("roc", self._roc)

    def _roc(self) -> tuple[np.ndarray, np.ndarray, float, str] | None:
        if self.has_evaluation:
            y = self.y_true[self.eval_items]
            scores = self.evaluation_scores()
            title = f"ROC · {len(y)} held-out items"
        else:
            y, scores = self._asked_scores()
            title = f"ROC · scores the model gave each item when it was asked<br>({len(y)} labels)"
        if len(y) < 2 or len(np.unique(y)) < 2 or not np.all(np.isfinite(scores)):
            return None
        fpr, tpr, _ = roc_curve(y, scores)
        return np.asarray(fpr), np.asarray(tpr), float(roc_auc(y, scores)), title

    def item_features(self, item_index: int) -> pd.DataFrame:
        """The item's raw feature values as a one-row frame (for the compact table view)."""
        return pd.DataFrame([self.X_raw[item_index]], columns=self.feature_names)

    def item_image(self, item_index: int) -> np.ndarray | None:
        """The item as a grey image in [0, 1] when the dataset is displayed as images."""
        if self.display.kind != "image" or not self.display.image_shape:
            return None
        width, height = self.display.image_shape
        pixels = np.asarray(self.X_raw[item_index], dtype=float)[: width * height]
        lo, hi = float(pixels.min()), float(pixels.max())
        pixels = (pixels - lo) / (hi - lo) if hi > lo else np.zeros_like(pixels)
        return pixels.reshape(height, width)

    def item_text(self, item_index: int) -> str | None:
        if self.display.display_values is None:
            return None
        return self.display.display_values[item_index]

    def item_key(self, item_index: int) -> str | None:
        if self.display.item_keys is None:
            return None
        return self.display.item_keys[item_index]

    def model_state(self) -> bytes:
        """The session's model as an .npz file: solver arrays + JSON meta (no pickle)."""
        arrays, meta = self.loop.solver.to_state(include_data=True)
        meta = dict(meta, session_id=self.session_id, dataset_id=self.info.dataset_id,
                    dataset=self.dataset.name, strategy=self.info.strategy, n_events=len(self.answers),
                    n_labels=self.n_labels, pool_items="array pool_items: dataset row of each store row",
                    scaling=self.scaling)
        buffer = io.BytesIO()
        np.savez(buffer, __meta__=np.array(json.dumps(meta)), pool_items=self.pool_items, **arrays)
        return buffer.getvalue()


# --------------------------------------------------------------------------- the process-wide service


@dataclass
class ImportResult:
    dataset_id: int
    created: bool
    message: str


@dataclass
class CsvPreview:
    header: list[str]
    frame: pd.DataFrame
    n_rows: int
    notes: list[str] = field(default_factory=list)


class MarginLab:
    """Everything the pages do, over one engine (one per process and database)."""

    def __init__(self, engine, *, use_snapshots: bool = True):
        self.engine = engine
        #: resume sessions from their latest snapshot (False: always replay every event)
        self.use_snapshots = bool(use_snapshots)
        self._runs: dict[int, LabellingRun] = {}
        self._runs_lock = threading.Lock()

    @classmethod
    def from_url(cls, url: str | None = None) -> MarginLab:
        engine = make_engine(url)
        init_db(engine)
        return cls(engine)

    # -- datasets ---------------------------------------------------------------
    def datasets(self) -> list[repo.DatasetInfo]:
        return repo.list_datasets(self.engine)

    def dataset(self, dataset_id: int) -> repo.DatasetInfo:
        return repo.get_dataset(self.engine, dataset_id)

    def ensure_demo_dataset(self) -> int | None:
        """On first start (no dataset at all) import the bundled digits, 8 vs rest."""
        if self.datasets():
            return None
        return self.import_bundled("digits", positive=8, name=DEMO_NAME).dataset_id

    def bundled_names(self) -> list[str]:
        from core.datasets import BUNDLED

        return list(BUNDLED)

    def import_bundled(self, key: str, *, positive: Any = None, name: str | None = None,
                       scaling: str = "none") -> ImportResult:
        from core.datasets import load_bundled

        return self._import_loaded(load_bundled(key, positive=positive), name=name, scaling=scaling,
                                   extra_meta={"bundled": key})

    def preview_csv(self, data: bytes, n: int = 20) -> CsvPreview:
        """Header and the first rows of an uploaded CSV as text cells (checked only on import)."""
        text = data.decode("utf-8", errors="replace")
        reader = csv.reader(io.StringIO(text, newline=""))
        header = next(reader, [])
        rows = []
        n_rows = 0
        for cells in reader:
            if not cells:
                continue
            n_rows += 1
            if len(rows) < n:
                rows.append((cells + [""] * len(header))[: len(header)])
        names = [h if h else f"(column {k + 1})" for k, h in enumerate(header)]
        frame = pd.DataFrame(rows, columns=_unique(names))
        return CsvPreview(header=list(header), frame=frame, n_rows=n_rows)

    def column_values(self, data: bytes, column: str, limit: int = 50) -> list[str]:
        """Distinct values of one column of an uploaded CSV (to choose the positive class)."""
        reader = csv.DictReader(io.StringIO(data.decode("utf-8", errors="replace"), newline=""))
        seen: dict[str, None] = {}
        for row in reader:
            value = (row.get(column) or "").strip()
            if value and value not in seen:
                seen[value] = None
                if len(seen) >= limit:
                    break
        return sorted(seen, key=_natural_key)

    def import_csv(self, data: bytes, *, name: str, feature_columns: Sequence[str] | None = None,
                   label_column: str | None = None, positive: Any = None, display: str = "table",
                   image_shape: tuple[int, int] | None = None, text_column: str | None = None,
                   key_column: str | None = None, scaling: str = "none", constant_columns: str = "error",
                   source: str = "") -> ImportResult:
        """Check and import an uploaded CSV; errors name the row or column and change nothing.

        Raises ``core.datasets.DataError`` / ``storage.errors.DatasetValidationError``
        (bad file) or ``ServiceError`` (inconsistent choices).
        """
        from core.datasets import load_csv

        if display == "text" and not text_column:
            raise ServiceError("Choose the text column to show for each item.")
        if display == "image" and not image_shape:
            raise ServiceError("Give the image width and height.")
        if positive in ("", None) and label_column:
            positive = None
        loaded = load_csv(data, label_column=label_column or None, positive=positive,
                          feature_columns=list(feature_columns) if feature_columns else None,
                          display_column=text_column if display == "text" else None,
                          image_shape=tuple(image_shape) if display == "image" else None,
                          name=name, key_column=key_column or None, constant_columns=constant_columns,
                          one_vs_rest=bool(label_column) and positive is not None)
        if display == "image":
            width, height = image_shape
            if width * height != loaded.X.shape[1]:
                raise ServiceError(
                    f"An image of {width}×{height} needs {width * height} feature columns; "
                    f"{loaded.X.shape[1]} are chosen.")
        extra = {"label_column": label_column} if label_column else {}
        return self._import_loaded(loaded, name=name, scaling=scaling, source=source, extra_meta=extra,
                                   text_column=text_column if display == "text" else None)

    def _import_loaded(self, data, *, name: str | None, scaling: str, source: str = "",
                       extra_meta: dict | None = None, text_column: str | None = None) -> ImportResult:
        if scaling not in ("none", "standard"):
            raise ServiceError(f"Unknown scaling '{scaling}'; choose 'none' or 'standard'.")
        kind = data.display_kind or "table"
        meta: dict[str, Any] = dict(extra_meta or {}, scaling=scaling)
        if data.classes:
            meta["classes"] = {"negative": str(data.classes[0]), "positive": str(data.classes[1])}
        if data.description:
            meta["description"] = str(data.description)
        if getattr(data, "dropped_columns", None):
            meta["dropped_columns"] = list(data.dropped_columns)
        return self._import(
            name=name or data.name, X=data.X, feature_names=list(data.feature_names), y_true=data.y,
            source=source or str(data.source or ""), display_kind=kind,
            image_shape=tuple(data.image_shape) if data.image_shape else None,
            display_values=data.display_values, item_keys=data.item_keys, meta=meta,
            text_column=(text_column or "text") if kind == "text" else None)

    def _import(self, **kw) -> ImportResult:
        try:
            dataset_id = repo.import_dataset(self.engine, **kw)
        except DuplicateDatasetError as error:
            return ImportResult(error.dataset_id, False, str(error))
        return ImportResult(dataset_id, True, f"Imported '{kw['name']}' as dataset {dataset_id}.")

    # -- sessions ----------------------------------------------------------------
    def sessions(self, dataset_id: int | None = None, annotator: str | None = None,
                 status: str | None = None) -> list[repo.SessionInfo]:
        """Sessions, most recently updated first."""
        return repo.list_sessions(self.engine, dataset_id=dataset_id, annotator=annotator, status=status)

    def start_session(self, *, dataset_id: int, annotator: str, strategy: str, solver: str | None = None,
                      C: float = DEFAULT_C, gamma: float | str = DEFAULT_GAMMA, seed: int = 0,
                      scaling: str | None = None, eval_fraction: float = EVAL_FRACTION,
                      strategy_params: dict | None = None) -> LabellingRun:
        if strategy not in LABEL_STRATEGIES:
            raise ServiceError(f"Unknown heuristic '{strategy}'; choose one of {', '.join(LABEL_STRATEGIES)}.")
        solver = solver or DEFAULT_SOLVER[strategy]
        if solver not in SOLVERS:
            raise ServiceError(f"Unknown solver '{solver}'; choose one of {', '.join(SOLVERS)}.")
        if not annotator or not str(annotator).strip():
            raise ServiceError("Enter the annotator's name.")
        dataset = self.dataset(dataset_id)
        params = {
            "solver_params": {"kernel": "rbf", "C": float(C), "gamma": gamma},
            "strategy_params": dict(strategy_params or {}),
            "scaling": scaling if scaling is not None else dataset.meta.get("scaling", "none"),
            "eval_fraction": float(eval_fraction) if dataset.has_true_labels else 0.0,
        }
        session_id = repo.start_session(self.engine, dataset_id=dataset_id, annotator=str(annotator).strip(),
                                        strategy=strategy, solver=solver, params=params, seed=int(seed))
        try:
            return self.open_session(session_id)
        except Exception as error:
            # a session whose model cannot be built is closed at once, not left to fail on every resume
            repo.close_session(self.engine, session_id)
            raise ServiceError(f"The session could not start: {error}") from error

    def open_session(self, session_id: int) -> LabellingRun:
        """The live run of a session: the one in memory, or rebuilt from the database."""
        with self._runs_lock:
            run = self._runs.get(int(session_id))
            if run is None:
                run = LabellingRun(self, session_id)
                self._runs[int(session_id)] = run
            return run

    def close_session(self, session_id: int) -> Outcome:
        """Close a session (a snapshot of its model is stored first when it is in memory)."""
        with self._runs_lock:
            run = self._runs.pop(int(session_id), None)
        if run is not None:
            return run.close()
        repo.close_session(self.engine, session_id)
        return Outcome(True, f"Session {session_id} closed.")

    def is_open(self, session_id: int) -> bool:
        """Whether the session's run is in memory (opening it otherwise replays its labels)."""
        return int(session_id) in self._runs

    def forget_runs(self) -> None:
        """Drop the in-memory runs (the next open rebuilds from the database, as after a restart)."""
        with self._runs_lock:
            self._runs.clear()

    # -- comparisons -------------------------------------------------------------
    def run_comparison(self, dataset_id: int, *, strategies: Sequence[str], solver: str | None = None,
                       budget: int = 60, seeds: int = 3, initial: int = 10, C: float = DEFAULT_C,
                       gamma: float | str = DEFAULT_GAMMA, test_fraction: float = 0.3,
                       progress: Callable[[float, str], None] | None = None) -> int:
        """Run a comparison with the true labels as the oracle; store it and return its id.

        ``progress(fraction, description)`` is called after each run.
        """
        from core.experiment import run_comparison

        dataset = self.dataset(dataset_id)
        if not dataset.has_true_labels:
            raise ServiceError(f"Dataset '{dataset.name}' has no true labels; a comparison needs them.")
        strategies = [s for s in strategies]
        unknown = [s for s in strategies if s not in COMPARE_STRATEGIES]
        if unknown or not strategies:
            raise ServiceError("Choose at least one heuristic among " + ", ".join(COMPARE_STRATEGIES) + ".")
        X, y, _, _ = repo.load_dataset_arrays(self.engine, dataset_id)
        X = scale_features(X, dataset.meta.get("scaling", "none"))

        def report(done: int, total: int, description: str) -> None:
            if progress is not None:
                progress(done / max(total, 1), f"{done}/{total} runs · {description}")

        result = run_comparison(X, np.asarray(y, dtype=float), strategies=strategies, solver=solver or None,
                                solver_params={"kernel": "rbf", "C": float(C), "gamma": gamma},
                                budget=int(budget), seeds=int(seeds), initial=int(initial),
                                test_fraction=float(test_fraction), progress=report)
        config = dict(result.config, dataset=dataset.name, dataset_id=dataset_id,
                      scaling=dataset.meta.get("scaling", "none"))
        summary = {"summary": result.summary.to_dict(orient="records"),
                   "runs": result.runs.to_dict(orient="records"),
                   "references": result.references.to_dict(orient="records")}
        return repo.save_comparison(self.engine, dataset_id, config, result.rows, summary)

    @staticmethod
    def summary_frame(comparison: repo.Comparison) -> pd.DataFrame:
        """The per-heuristic summary table of a stored comparison."""
        frame = pd.DataFrame(comparison.summary.get("summary", []))
        return frame

    def comparisons(self, dataset_id: int | None = None) -> list[repo.ComparisonInfo]:
        return repo.list_comparisons(self.engine, dataset_id)

    def comparison(self, comparison_id: int) -> repo.Comparison:
        return repo.load_comparison(self.engine, comparison_id)

    def session_curves(self, dataset_id: int) -> pd.DataFrame:
        """Learning curves of the stored labelling sessions on a dataset (for the Compare overlay)."""
        frames = []
        for info in self.sessions(dataset_id=dataset_id):
            if info.n_labels < 2:
                continue
            run = self.open_session(info.id)
            history = run.history()
            if "auc" not in history or history["auc"].isna().all():
                continue
            frames.append(pd.DataFrame({
                "session": f"session {info.id} ({info.annotator}, {info.strategy})",
                "n_labels": history["n_labels"].to_numpy(),
                "auc": history["auc"].to_numpy(),
                "n_sv": history["n_sv"].to_numpy() if "n_sv" in history else np.nan,
            }))
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
            columns=["session", "n_labels", "auc", "n_sv"])

    # -- export ---------------------------------------------------------------------
    def annotators(self) -> list[str]:
        return repo.list_annotators(self.engine)

    def export_labels(self, fmt: str, *, session_id: int | None = None, annotator: str | None = None,
                      dataset_id: int | None = None, include_skips: bool = False,
                      include_features: bool = True) -> bytes:
        """Labelled items with provenance as CSV or JSONL bytes (``storage.export``)."""
        from storage.export import export_labels

        out = export_labels(self.engine, fmt=fmt, session_id=session_id, annotator=annotator or None,
                            dataset_id=dataset_id, include_skips=include_skips, include_features=include_features)
        if isinstance(out, str):
            return out.encode("utf-8")
        if isinstance(out, bytes):
            return out
        if hasattr(out, "getvalue"):
            value = out.getvalue()
            return value.encode("utf-8") if isinstance(value, str) else value
        raise ServiceError(f"unexpected export result {type(out).__name__}")
