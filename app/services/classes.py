"""A labelling session with K named classes (single choice) brought to life: ``ClassesRun``.

The session's settings name its classes (``SessionSettings.classes``, 3 to 9) and a K-class strategy of
``core.multiclass``; its answers are stored with their class (``labels.answer_class``).  The model is
``core.multiclass.OneVsRest``: K one-vs-rest machines of the session's solver sharing one kernel cache.

The order of an answer is the binary run's: stored first, then learned, then the next item is chosen.
Queries are a function of the answers: the item asked after k answers is chosen with a generator seeded
with (seed, k), at random until two classes have an answer, then by the session's strategy.  Corrections
rebuild the model from the stored answers in order, as opening the session after a restart does, so a
resumed session has the same model and asks the same next item, bit for bit.  Undo unlearns with an exact
solver (the model trained without the answer, to rounding: a resume after an undo has the same model to
about 1e-12, as the two-class loop's) and rebuilds with the others.  Every ``SNAPSHOT_EVERY`` answers, after a
correction and when the session is closed or the server stops, the model is stored as a snapshot
(``app.services.class_snapshots``): a rebuild starts from the latest one that covers the first stored answers
and learns only the answers after it.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy.exc import SQLAlchemyError

from app.services import priors
from app.services.accounts import Accounts, Identity
from app.services.class_snapshots import SessionSnapshots
from app.services.class_stopping import MOST_LIKELY, stop_class, target_stopping
from app.services.common import Outcome, ServiceError, database_trouble, numeric_columns, scaled_row_blocks
from app.services.display import ItemDisplay
from app.services.errors import service_boundary
from app.services.history import IMPORTED, items_by_key, nothing_new, plan_rows, refuse_problems, store_import
from app.services.records import undo_stored, written
from app.services.snapshots import SNAPSHOT_EVERY
from app.services.stopping import SETTING as STOPPING_SETTING
from app.services.stopping import RunStopping, stopping_settings
from app.services.vocabulary import CLASS_STRATEGY_WORDS, MULTI_LABEL_STRATEGY_WORDS, heuristic_words, strategy_words
from core import stopping as rules
from core.multiclass import MULTICLASS_STRATEGIES, OneVsRest, random_class_query
from core.priors import PRIOR
from core.settings import MAX_CLASSES, SessionSettings
from core.strategies import Pool
from storage import history as stored_history
from storage import repository as repo
from storage.errors import DuplicateLabelError, StorageError

logger = logging.getLogger(__name__)

#: what the strategy recorded for an item picked at random before two classes have an answer
CLASS_COLD_START = "random (until two classes have answers)"
#: a recall check's draw cannot be skipped (as in a two-class session)
SKIP_IN_CHECK = (
    "Skip is not available during the random check: the test needs an answer for every item it draws. "
    "Label it, or stop the check."
)
#: a skip among an import file's answers (the classes are 0 to K - 1)
SKIPPED = -1
#: stopping works on one class against the rest, once the session names it
NO_STOPPING = (
    "Stopping rules and the random check work on one class against the rest: first say which class you are "
    "looking for (under 'When can I stop?' on the Label page)."
)


def auc_column(k: int) -> str:
    """The column of ``rated_history`` with class k's AUC."""
    return f"auc_{k}"


def top_class_hits(member: np.ndarray, F: np.ndarray) -> np.ndarray:
    """Per rated answer (rows of ``member``, one class each): 1 when the model rated its class highest (``F``:
    the scores when asked), else 0; their mean is the accuracy."""
    return member[np.arange(len(F)), np.argmax(F, axis=1)].astype(float)


def rated_history(
    rated: Sequence[tuple[int, np.ndarray, np.ndarray]],
    n_labels: int,
    n_classes: int,
    hits: Callable[[np.ndarray, np.ndarray], np.ndarray],
) -> pd.DataFrame:
    """The live read-outs of a model with one machine per class, after each of ``n_labels`` answers: ``labels``,
    ``accuracy`` (the mean over the answers rated so far of ``hits(members, scores)``, each answer's share
    right), ``macro_auc`` and ``auc_<k>`` (``auc_column``: the AUC of class k's scores when asked against whether
    the answer held k, NaN until the answers rated so far hold items in k and out of it; ``macro_auc`` their
    mean where defined).  ``rated``:
    (answers so far when it was given, membership row, scores when asked) of each answer the model could rate,
    in order (each scored before the model learned it: an honest read-out, not the model's fit).

    Each AUC is ``core.metrics.roc_auc``'s (the share of (in, out) pairs the in item outscores, ties one half),
    kept up to date answer by answer: a new item adds its pairs with the items before it (counted in the sorted
    scores of each side), so the whole history costs about what one AUC per answer would, not one per answer
    and class over every answer before it."""
    columns = ["labels", "accuracy", "macro_auc", *(auc_column(k) for k in range(n_classes))]
    table = np.full((n_labels, len(columns)), np.nan)
    table[:, 0] = np.arange(1, n_labels + 1)
    if rated:
        members = np.array([member for _, member, _ in rated], dtype=bool)
        F = np.array([scores for _, _, scores in rated], dtype=float)
        right = np.cumsum(hits(members, F))
        sides: list[tuple[list[float], list[float]]] = [([], []) for _ in range(n_classes)]  # (in, out) sorted
        wins = np.zeros(n_classes)  # (in, out) pairs the in item outscores, ties one half
        r = 0
        for n in range(1, n_labels + 1):
            if r == len(rated) or rated[r][0] > n:
                if r:
                    table[n - 1, 1:] = table[n - 2, 1:]
                continue
            while r < len(rated) and rated[r][0] <= n:
                for k in range(n_classes):
                    f, (inside, outside) = F[r, k], sides[k]
                    if members[r, k]:
                        below, same = bisect.bisect_left(outside, f), bisect.bisect_right(outside, f)
                        wins[k] += below + (same - below) / 2
                        bisect.insort(inside, f)
                    else:
                        above, same = bisect.bisect_right(inside, f), bisect.bisect_left(inside, f)
                        wins[k] += len(inside) - above + (above - same) / 2
                        bisect.insort(outside, f)
                r += 1
            pairs = np.array([len(inside) * len(outside) for inside, outside in sides], dtype=float)
            aucs = np.divide(wins, pairs, out=np.full(n_classes, np.nan), where=pairs > 0)
            table[n - 1, 1] = right[r - 1] / r
            table[n - 1, 3:] = aucs
            if (pairs > 0).any():
                table[n - 1, 2] = float(np.mean(aucs[pairs > 0]))
    frame = pd.DataFrame(table, columns=columns)
    frame["labels"] = frame["labels"].astype(int)
    return frame


@dataclass(frozen=True)
class ClassShown:
    """The item the panel shows, why it was chosen (in words) and the model's scores for it."""

    item_index: int
    pool_index: int
    score: float | None
    strategy: str
    reason: str
    query_ms: float | None
    scores: tuple[float, ...]


@dataclass(frozen=True)
class ClassAnswer:
    """One current answer: its item, class (None: a skip), label id, who asked and the scores when asked; in a
    multi-label run the set of classes (``answer_classes``, their places; None: a skip) and no class."""

    item_index: int
    answer_class: int | None
    label_id: int | None
    strategy: str
    scores: tuple[float, ...]
    answer_classes: tuple[int, ...] | None = None

    @property
    def answered(self) -> bool:
        """An answer, not a skip."""
        return self.answer_class is not None or self.answer_classes is not None

    @property
    def value(self) -> int:
        return 1 if self.answered else 0

    def holds(self, k: int) -> bool:
        """The answer is class ``k`` (in a multi-label run: its set holds ``k``)."""
        return self.answer_class == k or (self.answer_classes is not None and k in self.answer_classes)


def class_list(
    classes: str | Sequence[str] | None, what: str = "session", *, multi_label: bool = False
) -> tuple[str, ...]:
    """Class names typed by a person (``"cat, dog, fox"``) or given as a list, checked: 3 to ``MAX_CLASSES``
    distinct non-empty names (2 to ``MAX_CLASSES`` for several classes per item); () for none.  A ServiceError
    says what is wrong (``what``: a session or a project)."""
    if classes is None:
        return ()
    pieces = str(classes).split(",") if isinstance(classes, str) else [str(c) for c in classes]
    names = tuple(p.strip() for p in pieces)
    if all(not n for n in names):
        return ()
    if any(not n for n in names):
        raise ServiceError("A class name is empty: separate the class names with single commas.")
    if len(names) < 2:
        raise ServiceError(f"Name at least 2 classes, separated by commas (got only {names[0]!r}).")
    if len(names) == 2 and not multi_label:
        raise ServiceError(
            f"Two classes are a yes / no {what}: leave Classes empty and say what a Positive "
            "answer means under 'What to find'. Named classes are 3 to "
            f"{MAX_CLASSES}."
        )
    if len(names) > MAX_CLASSES:
        raise ServiceError(f"At most {MAX_CLASSES} classes (one answer key each, 1 to 9); got {len(names)}.")
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ServiceError(f"Each class needs its own name: {', '.join(repr(n) for n in twice)} is named twice.")
    return names


def class_target(strategy: str, target: str | None, names: Sequence[str], *, refuse_unused: bool = False) -> str | None:
    """The class a "target-class" session or project looks for: ``target`` as typed (surrounding spaces
    dropped), the first of ``names`` when empty; None for another strategy.  A ServiceError names the classes
    when ``target`` is not one of them (``refuse_unused``: and refuses a class typed for a strategy that does
    not use one, as a person typing it means it to be used)."""
    typed = "" if target is None else str(target).strip()
    if strategy != "target-class":
        if typed and refuse_unused:
            raise ServiceError(
                f"A class to find first ({typed!r}) is only for {strategy_words('target-class', '<class>')}: "
                "choose that way to pick items, or leave the class to find empty."
            )
        return None
    typed = typed or names[0]
    if typed not in names:
        raise ServiceError(f"The class to find first, '{typed}', is not one of the classes ({', '.join(names)}).")
    return typed


def class_looked_for(strategy: str, typed: str | None, names: Sequence[str]) -> tuple[str | None, str | None]:
    """The class a new session looks for, as typed on the New session form (surrounding spaces dropped): (the
    class "Most likely <class>" asks about first, the class to stop on when it is not that one).  For "Most
    likely <class>" it is both (the first class when empty); for another way to pick items, with one class or
    several per item, it is the class the stopping rules work on (None when empty: no stopping until one is
    named).  A ServiceError names the classes when it is not one of them (nothing is dropped unsaid)."""
    text = "" if typed is None else str(typed).strip()
    if strategy == MOST_LIKELY:
        return class_target(strategy, text, names), None
    if text and text not in names:
        raise ServiceError(f"The class you are looking for, '{text}', is not one of the classes ({', '.join(names)}).")
    return None, text or None


def class_query(
    model: OneVsRest,
    available: np.ndarray,
    rng: np.random.Generator,
    strategy: str,
    target: str | None,
    n_answered: int,
    *,
    rated: bool | None = None,
    strategies: Mapping[str, Callable[..., Any]] = MULTICLASS_STRATEGIES,
    cold_start: str = CLASS_COLD_START,
    why: Callable[[str, dict, int], str] | None = None,
) -> ClassShown | None:
    """The item a K-class model asks about among the ``available`` ones (a mask), with ``rng``: at random until
    the model can rate items (``rated``; by default once ``n_answered``, the classes with an answer, is two),
    then by ``strategy`` (one of ``strategies``); None when there is none.  ``why`` says why in words
    (``why_chosen`` by default).  What a session (``ClassesRun``, ``MultiLabelRun``) and a team project with
    named classes ask."""
    t0 = time.perf_counter()
    if not (n_answered >= 2 if rated is None else rated):
        query = random_class_query(model, Pool(available), rng)
        strategy = cold_start
    else:
        params = {"target": target} if strategy == "target-class" else {}
        query = strategies[strategy](model, Pool(available), rng, **params)
    query_ms = (time.perf_counter() - t0) * 1000.0
    if query is None:
        return None
    return ClassShown(
        item_index=int(query.index),
        pool_index=int(query.index),
        # (before the model can rate items its machines hold placeholders, not scores: stored as none, as a
        # two-class session's cold-start items are exported without one)
        score=float(query.score) if np.isfinite(query.score) and strategy != cold_start else None,
        strategy=strategy,
        reason=(why or functools.partial(why_chosen, n_answered_classes=n_answered))(
            strategy, query.extra, int(available.sum())
        ),
        query_ms=query_ms,
        scores=tuple(float(f) for f in query.extra["scores"].values()),
    )


def why_chosen(strategy: str, extra: dict, n_available: int, n_answered_classes: int = 0) -> str:
    """Why the item was chosen, in words, after the strategy's own words (``heuristic_words``); class names
    are the user's: the page shows this as plain text."""
    if strategy == CLASS_COLD_START:
        return (
            f"one of {n_available:,} unlabelled items; the model picks by its own rule once two classes "
            f"have answers ({n_answered_classes} so far)."
        )
    if strategy == "smallest-margin":
        a, b = extra["classes"]
        gap = extra["scores"][a] - extra["scores"][b]
        return (
            f"the model rates '{a}' and '{b}' almost alike for this item (scores {gap:.2f} apart), the "
            f"closest call among {n_available:,} unlabelled items."
        )
    if strategy == "least-certain-class":
        return (
            f"the model is least sure about '{extra['class']}' over the whole pool, and this item is the "
            f"one it is least sure of for that class among {n_available:,} unlabelled items."
        )
    if strategy == "target-class":
        return f"the highest score for '{extra['class']}' among {n_available:,} unlabelled items."
    return f"one of {n_available:,} unlabelled items, drawn at random."


def class_index(classes: tuple[str, ...], name_or_index: Any, what: str = "session") -> int:
    """A class by name or place; a ServiceError naming the classes otherwise."""
    if isinstance(name_or_index, (int, np.integer)) and not isinstance(name_or_index, bool):
        if 0 <= int(name_or_index) < len(classes):
            return int(name_or_index)
    elif name_or_index in classes:
        return classes.index(name_or_index)
    raise ServiceError(f"{name_or_index!r} is not a class of this {what} (its classes: {', '.join(classes)}).")


@service_boundary
class ClassesRun:
    """A stored K-class session brought to life (see the module docstring).  The Label, History and Export
    pages read ``classes``, ``shown``, ``answers``, the counts and charts' read-outs, and call ``answer``,
    ``skip``, ``undo``, ``change_label`` and ``remove_label``."""

    #: what the pages test to tell a K-class run from a two-class one
    has_classes = True
    #: the strategies a session of this kind picks items by
    strategies = MULTICLASS_STRATEGIES
    #: one class per answer (``MultiLabelRun``: any set of them)
    multi_label = False
    #: the model: K one-vs-rest machines
    model_class: type[OneVsRest] = OneVsRest
    #: how the model file's machines read (``model_state``)
    model_layout = (
        "one-vs-rest: machine k (arrays class{k}/...) learns class k against the rest; the stored points are class0's"
    )
    #: what the strategy recorded for an item picked at random before the model can rate items
    cold_start = CLASS_COLD_START

    def __init__(self, engine, session_id: int, *, accounts: Accounts, use_snapshots: bool = True):
        self.engine, self.accounts = engine, accounts
        #: resume from the latest model snapshot (``app.services.class_snapshots``); ``resume_note`` says how
        #: the last rebuild went, ``resumed_from`` how many answers its snapshot covered (None: none)
        self.use_snapshots = bool(use_snapshots)
        self.resume_note = ""
        self.resumed_from: int | None = None
        self.snapshots = SessionSnapshots(self)
        self.session_id = int(session_id)
        self.lock = threading.RLock()
        self.info = repo.get_session(self.engine, self.session_id)
        self.dataset = repo.get_dataset(self.engine, self.info.dataset_id)
        #: the session's settings; None when this version refuses them (``settings_refused`` says why: the run
        #: opens with its answers and says so, as a two-class run does)
        self.settings: SessionSettings | None = None
        self.settings_refused: ValueError | None = None
        try:
            self.settings = settings = self.info.settings
        except ValueError as error:
            self.settings_refused = error
            params = self.info.params or {}
            settings = SessionSettings(
                strategy="random",
                classes=tuple(str(c) for c in params["classes"]),
                multi_label=self.multi_label,
                seed=self.info.seed or 0,
                scaling=params.get("scaling"),
            )
        self.classes: tuple[str, ...] = settings.classes
        self.strategy = settings.strategy
        self.target: str | None = settings.strategy_params.get("target")
        self.seed = settings.seed
        self.scaling = settings.scaling if settings.scaling is not None else self.dataset.meta.get("scaling", "none")
        self.model: OneVsRest | None = None
        self.answers: list[ClassAnswer] = []
        self.shown: ClassShown | None = None
        self.problem: str | None = None
        self.problem_cause: str | None = None  # the error's own text, within ``problem``
        self.last_message: Outcome | None = None
        self.last_update_ms: float | None = None
        self.version = 0
        X, _, feature_names, display = repo.load_dataset_arrays(self.engine, self.info.dataset_id, writable=False)
        self.feature_names = list(feature_names)
        self.display = display
        self.pool_items = np.arange(X.shape[0], dtype=np.intp)
        self.eval_items = np.zeros(0, dtype=np.intp)
        (self.pool_X,) = scaled_row_blocks(X, self.scaling, numeric_columns(self.dataset.meta), self.pool_items)
        self.item_display = ItemDisplay(
            display=display,
            meta=self.dataset.meta,
            feature_names=self.feature_names,
            raw_rows=X,
            scaled_rows=self.pool_X,
            pool_rows=self.pool_X,
            model=lambda: None,
            lock=self.lock,
        )
        #: the class the analyst is looking for, stopped on against the rest (``app.services.class_stopping``):
        #: the stopping settings' class, else the class of "Most likely <class>"; None: no stopping
        self.stop_class: str | None = None
        #: the two-class stopping part over ``stop_class`` against the rest; None without a class
        self.stopping: RunStopping | None = None
        self._stop_on(stop_class(self.strategy, self.target, self.info.params))
        self.rebuild()

    def _stop_on(self, name: str | None) -> None:
        """Stopping on class ``name`` against the rest (None: no stopping), with the stored stopping settings."""
        self.stop_class = name if name in self.classes else None
        self.stopping = (
            None
            if self.stop_class is None
            else target_stopping(self, self.classes.index(self.stop_class), self.info.params)
        )

    # -- words ------------------------------------------------------------------------------------
    @property
    def strategy_name(self) -> str:
        """The session's strategy in a screener's words."""
        return strategy_words(self.strategy, self.target)

    def class_index(self, name_or_index: Any) -> int:
        """A class of the session by name or place; a ServiceError naming the classes otherwise."""
        return class_index(self.classes, name_or_index)

    # -- the model -----------------------------------------------------------------------------
    def _new_model(self) -> OneVsRest:
        if self.settings is None:
            raise self.settings_refused or ServiceError("The session's settings could not be read.")
        params = {k: v for k, v in self.settings.solver_params().items() if k != "auto"}
        return self.model_class(self.classes, self.settings.solver, self.pool_X, keep_scores=True, **params)

    def rebuild(self) -> None:
        """The model learned again from the stored answers in order (the database is the truth)."""
        with self.lock:
            try:
                events = repo.label_events(self.engine, self.session_id)
                self.model, self.answers = None, []
                if self.stopping is not None:  # the stability rule's checkpoints, read again while learning
                    self.stopping.restore({}, 0)
                self.snapshots.label_ids = None
                self.resumed_from = self.snapshots.restore(events)  # the model and first answers, or None
                if self.resumed_from is None:
                    self.model, self.answers = self._new_model(), []
                    if self.stopping is not None:
                        self.stopping.restore({}, 0)
                for event in events[len(self.answers) :]:
                    self._learn(event.item_index, self._stored(event), event.label_id, event.strategy)
                self.problem = self.problem_cause = None
            except Exception as error:  # the labels are kept: say why the model cannot be used
                logger.exception("session %s: the model could not be rebuilt", self.session_id)
                self.model, self.shown = None, None
                try:
                    self.answers = [
                        self._kept(e.item_index, self._stored(e), e.label_id, e.strategy, ())
                        for e in repo.label_events(self.engine, self.session_id)
                    ]
                except Exception:  # the database too: keep what this run knew
                    logger.exception("session %s: the stored answers could not be read", self.session_id)
                self.problem_cause = f"{type(error).__name__}: {error}"
                self.problem = (
                    f"Session {self.session_id}'s model could not be rebuilt from its stored answers "
                    f"({type(error).__name__}: {error}). Its labels are kept: export them on the "
                    "Export page."
                )
                return
            self.version += 1
            self.ask()
            if self.use_snapshots and len(self.answers) - (self.resumed_from or 0) >= SNAPSHOT_EVERY:
                self.save_snapshot()  # the next resume need not learn these again

    # -- model snapshots (``app.services.class_snapshots``) ----------------------------------------------
    def save_snapshot(self) -> int | None:
        """Store the model as a snapshot covering the answers so far; its id, or None (``snapshot_error``)."""
        return self.snapshots.save()

    @property
    def snapshot_error(self) -> str | None:
        """Why the last snapshot could not be stored (None when it was)."""
        return self.snapshots.error

    @property
    def snapshot_events(self) -> int | None:
        """Answers covered by the last snapshot this run saved or resumed from."""
        return None if self.snapshots.label_ids is None else len(self.snapshots.label_ids)

    @property
    def snapshot_is_behind(self) -> bool:
        """Whether the run has answers (or changed ones) that its latest snapshot does not cover."""
        return self.snapshots.is_behind

    def _snapshot_note(self, said: str) -> str:
        """``said``, and that the snapshot could not be stored when it could not."""
        if self.snapshot_error is None:
            return said
        return (
            f"{said} The model snapshot could not be stored ({self.snapshot_error}); labelling goes on, and the "
            "next start learns the answers since the last snapshot again."
        )

    # -- what an answer is (``MultiLabelRun``: a set of classes) --------------------------------------
    def _stored(self, event: Any) -> Any:
        """The answer a stored event holds: its class (None: a skip)."""
        return event.answer_class

    def _kept(self, item_index: int, answer: Any, label_id: int | None, strategy: str, scores) -> ClassAnswer:
        """An answer as the run keeps it."""
        return ClassAnswer(item_index, answer, label_id, strategy, scores)

    def _answer_of(self, kept: ClassAnswer) -> Any:
        """What ``_kept`` was given (None: a skip)."""
        return kept.answer_class

    def _checked(self, answer: Any) -> Any:
        """A person's answer checked against the session (None: a skip); a ServiceError says what is wrong."""
        return None if answer is None else self.class_index(answer)

    def _stored_fields(self, answer: Any) -> dict[str, Any]:
        """The answer as ``repo.record_label`` and ``change_label`` take it."""
        return {"answer_class": answer}

    def _corrected(self, correction: Any) -> tuple[Any, Any]:
        """A correction's answer before and after."""
        return correction.old_class, correction.new_class

    def _model_label(self, answer: Any) -> Any:
        """An answer as the model learns it."""
        return self.classes[answer]

    def _can_rate(self, answers: list[ClassAnswer]) -> bool:
        """Whether the model can rate items after these answers (two classes have answers)."""
        return len({a.answer_class for a in answers if a.answer_class is not None}) >= 2

    def _learn(self, item_index: int, answer: Any, label_id: int | None, strategy: str) -> None:
        """The model learns one stored answer (a skip teaches nothing), keeping its scores when asked."""
        assert self.model is not None
        if not 0 <= item_index < len(self.pool_items):
            raise ServiceError(f"item {item_index} is not in this dataset")
        scores = tuple(float(f) for f in self.model.decision_function(np.array([item_index]))[0])
        if answer is not None:
            step = self.model.learn(item_index, self._model_label(answer))
            self.last_update_ms = float(step.seconds) * 1000.0
        self.answers.append(self._kept(item_index, answer, label_id, strategy, scores))
        if self.stopping is not None and answer is not None:
            t = self.classes.index(self.stop_class)
            labels = [a for a in self.answers if a.answered]
            self.stopping.record_checkpoint_at(len(labels), sum(a.holds(t) for a in labels))

    def ask(self) -> None:
        """The item to show next: a function of the answers (see the module docstring)."""
        if self.model is None:
            self.shown = None
            return
        available = np.ones(len(self.pool_items), dtype=bool)
        for a in self.answers:
            available[a.item_index] = False
        if not available.any():
            self.shown = None
            return
        if self.stopping is not None and self.stopping.checking:  # a recall check: drawn at random
            drawn = self.stopping.random_draw()
            self.shown = (
                None
                if drawn is None
                else ClassShown(
                    item_index=drawn.item_index,
                    pool_index=drawn.pool_index,
                    score=drawn.score,
                    strategy=rules.CHECK_STRATEGY,
                    reason=drawn.reason,
                    query_ms=None,
                    scores=tuple(float(f) for f in self.model.decision_function(np.array([drawn.pool_index]))[0]),
                )
            )
            return
        rng = np.random.default_rng([self.seed, len(self.answers)])
        self.shown = class_query(
            self.model,
            available,
            rng,
            self.strategy,
            self.target,
            0,
            rated=self._can_rate(self.answers),
            strategies=self.strategies,
            cold_start=self.cold_start,
            why=self._why,
        )

    def _cold_start_words(self, n_available: int) -> str:
        """Why an item was drawn at random before the model can rate items."""
        answered = {a.answer_class for a in self.answers if a.answer_class is not None}
        return why_chosen(CLASS_COLD_START, {}, n_available, n_answered_classes=len(answered))

    def _why(self, strategy: str, extra: dict, n_available: int) -> str:
        """Why the item was chosen, in words (``why_chosen``; a multi-label run says its cold start its way)."""
        if strategy == self.cold_start:
            return self._cold_start_words(n_available)
        return why_chosen(strategy, extra, n_available)

    def predicted_class(self) -> str | None:
        """The class the model gives the item shown (None: no item, or before any answer)."""
        if self.shown is None or not any(a.answered for a in self.answers):
            return None
        return self.classes[int(np.argmax(self.shown.scores))]

    # -- answers ---------------------------------------------------------------------------------
    def answer(self, answer_class: Any, *, item_index: int | None = None, by: Identity | None = None) -> Outcome:
        """Answer the shown item with a class (name or place); None: skip it.

        ``item_index``: the item the person saw; an answer for another item (a double click, a second tab)
        is refused.  ``by``: the signed-in person (nothing is stored once their sign-in has ended).
        """
        k = self._checked(answer_class)
        with self.lock:
            refused = self._refusal(by)
            if refused is not None:
                return refused
            shown = self.shown
            if shown is None:
                return self.tell(Outcome(False, "Every item in the pool has been answered.", "warning"))
            if k is None and shown.strategy == rules.CHECK_STRATEGY:
                return self.tell(Outcome(False, SKIP_IN_CHECK, "warning"))
            if item_index is not None and int(item_index) != shown.item_index:
                return self.tell(
                    Outcome(
                        False,
                        f"Item {item_index} is no longer the item on screen (or was "
                        "already answered); nothing was recorded.",
                        "warning",
                    )
                )
            failed = self._store_and_learn(shown.item_index, k, shown.strategy, shown.score, shown.query_ms)
            if failed is not None:
                return failed
            self.version += 1
            self.ask()
            said = f"Item {shown.item_index}: {self._name(k)}."
            note = self.stopping.after_answer() if self.stopping is not None else None
            said = f"{said} {note}" if note else said
            if self.snapshot_error is not None and len(self.answers) % SNAPSHOT_EVERY == 0:
                return self.tell(Outcome(True, self._snapshot_note(said), "warning"))
            return self.tell(Outcome(True, said))

    def _store_and_learn(
        self, item: int, k: Any, strategy: str, score: float | None, query_ms: float | None
    ) -> Outcome | None:
        """Store an answer (class ``k``, or a multi-label run's set; None: a skip), then the model learns it; the
        refusal said, or None."""
        try:
            stored = repo.record_label(
                self.engine,
                self.session_id,
                item_index=item,
                value=0 if k is None else 1,
                **self._stored_fields(k),
                annotator=self.info.annotator,
                strategy=strategy,
                solver=self.info.solver,
                decision_value=score,
                model_version=len(self.answers),
                update_ms=self.last_update_ms,
                query_ms=query_ms,
            )
        except DuplicateLabelError as error:
            self.rebuild()
            return self.tell(Outcome(False, f"{error} Nothing was recorded twice.", "warning"))
        except StorageError as error:
            return self.tell(Outcome(False, f"Nothing was recorded: {error}", "error"))
        except SQLAlchemyError as error:
            return self.tell(
                Outcome(
                    False,
                    f"Nothing was recorded: the database could not be written ({database_trouble(error)}).",
                    "error",
                )
            )
        try:
            self._learn(item, k, stored.label_id, strategy)
        except Exception as error:
            return self._cannot_learn(f"Item {item} is", error)
        if self.use_snapshots and len(self.answers) % SNAPSHOT_EVERY == 0:
            self.save_snapshot()
        return None

    def _cannot_learn(self, what: str, error: Exception, them: str = "it") -> Outcome:
        """Answers stored (``what``: "Item 3 is") that the model could not learn: said, and no more answers."""
        logger.exception("session %s: the model could not learn what was stored", self.session_id)
        self.model, self.shown = None, None
        self.problem = f"{what} saved, but the model could not learn {them} ({type(error).__name__}: {error})."
        return self.tell(Outcome(False, self.problem, "error"))

    # -- known items (the Label page's search: ``app.services.priors``) ------------------------------
    @property
    def pool_of_item(self) -> range:
        """Dataset item -> its place in the pool (every item: a K-class session holds none out)."""
        return range(len(self.pool_items))

    @property
    def search_how(self) -> str:
        """``words``, ``substructure`` or ``column filter``: how this session's pool is searched."""
        return priors.pool_search_how(self)

    def search_pool(self, query: str) -> priors.SearchResult:
        """The pool's items that match ``query``; a hit answered says its class (or skipped)."""
        return priors.search_items(self, query, {a.item_index: self._name(self._answer_of(a)) for a in self.answers})

    @property
    def n_known(self) -> int:
        """Answers stored as known items (provenance ``prior``)."""
        return sum(1 for a in self.answers if a.strategy == PRIOR)

    def mark_known(self, item_index: int, answer_class: Any, *, by: Identity | None = None) -> Outcome:
        """Store item ``item_index`` as known to be of a class (name or place) with the provenance ``prior``;
        the model learns it at once (before the first question, known items are what it learns first) and
        asks its next question."""
        k = self.class_index(answer_class)
        with self.lock:
            refused = self._refusal(by)
            if refused is not None:
                return refused
            item = int(item_index)
            if not 0 <= item < len(self.pool_items):
                return self.tell(
                    Outcome(False, f"There is no item {item} in this dataset (0..{len(self.pool_items) - 1}).", "error")
                )
            already = next((a for a in self.answers if a.item_index == item), None)
            if already is not None:
                return self.tell(
                    Outcome(
                        False,
                        f"Item {item} is already answered ({self._name(self._answer_of(already))}); change it on the "
                        "History page.",
                        "warning",
                    )
                )
            if self.checking:
                return self.tell(Outcome(False, priors.NOT_DURING_CHECK, "warning"))
            failed = self._store_and_learn(item, k, PRIOR, None, None)
            if failed is not None:
                return failed
            self.version += 1
            self.ask()
            return self.tell(Outcome(True, f"Item {item}: known {self.classes[k]}, learned."))

    def skip(self, item_index: int | None = None, *, by: Identity | None = None) -> Outcome:
        return self.answer(None, item_index=item_index, by=by)

    def undo(self, *, last_item_index: int | None = None, by: Identity | None = None) -> Outcome:
        """Undo the last answer: stored first, then taken out of the model, by unlearning it with an exact
        solver (``incremental``, ``active-set``: the model trained without it, to rounding), else by learning
        the answers left again."""
        with self.lock:
            refused = self._refusal(by)
            if refused is not None:
                return refused
            last = self.answers[-1] if self.answers else None
            event, refused = undo_stored(self, last_item_index)
            if refused is not None:
                return refused
            if (
                event is not None
                and last is not None
                and last.label_id == event.label_id
                and self.model is not None
                and self.model.machines[0].exact_unlearn
            ):
                if last.answered:
                    self.model.unlearn(last.item_index)
                self.answers.pop()
                self.last_update_ms = None
                if self.stopping is not None:
                    self.stopping.forget_after_undo()
                self.version += 1
                self.ask()  # (the same question again: queries are a function of the answers)
            else:
                self.rebuild()
                if self.stopping is not None:  # (the checks started after the answers left go)
                    self.stopping.forget_after_undo()
                    self.ask()
            if event is None:
                return self.tell(
                    Outcome(
                        False,
                        "Nothing was undone: another tab or process has answered or "
                        "undone meanwhile; the session is shown as stored.",
                        "warning",
                    )
                )
            said = self._name(self._stored(event))
            return self.tell(Outcome(True, f"Undid {said} on item {event.item_index}."))

    def _refusal(self, by: Identity | None) -> Outcome | None:
        try:
            ended = self.accounts.sign_in_ended(by)
        except SQLAlchemyError as error:
            return self.tell(Outcome(False, f"Nothing was recorded: {database_trouble(error)}", "error"))
        if ended:
            return self.tell(Outcome(False, ended, "error"))
        if self.problem is not None:
            return self.tell(Outcome(False, self.problem, "error"))
        return None

    def tell(self, outcome: Outcome) -> Outcome:
        self.last_message = outcome
        return outcome

    def close(self, *, by: Identity | None = None) -> Outcome:
        if ended := self.accounts.sign_in_ended(by):
            return self.tell(Outcome(False, ended, "error"))
        with self.lock:
            if self.problem is None and self.use_snapshots:
                self.save_snapshot()
        try:
            repo.close_session(self.engine, self.session_id)
        except (StorageError, SQLAlchemyError) as error:
            return self.tell(Outcome(False, f"The session was not closed: {database_trouble(error)}", "error"))
        return self.tell(Outcome(True, f"Session {self.session_id} closed."))

    # -- corrections (History) ------------------------------------------------------------------------
    def change_label(self, label_id: int, answer_class: Any, *, by: Identity | None = None) -> Outcome:
        """Change an earlier answer to another class; the model then is the one that learned the corrected
        answers from the start."""
        k = self._checked(answer_class)
        if k is None:
            raise ServiceError("An answer is changed to another answer; to take it back, remove it.")
        return self._correct(
            lambda who: stored_history.change_label(
                self.engine, self.session_id, label_id, value=1, annotator=who, **self._stored_fields(k)
            ),
            by,
            lambda c: f"Item {c.item_index}: changed from {self._name(self._corrected(c)[0])} to {self._name(k)}.",
        )

    def remove_label(self, label_id: int, *, by: Identity | None = None) -> Outcome:
        """Take an earlier answer back (the item can be asked about again); the recall checks' starts after
        it move up with the labels."""
        labelled = [a.label_id for a in self.answers if a.answered]
        position = labelled.index(label_id) if label_id in labelled else None

        def said(c) -> str:
            if self.stopping is not None and position is not None:
                self.stopping.forget_after_removal(position)
                self.ask()
            return f"Item {c.item_index}: the answer {self._name(self._corrected(c)[0])} was removed."

        return self._correct(
            lambda who: stored_history.remove_label(self.engine, self.session_id, label_id, annotator=who), by, said
        )

    def _name(self, answer: Any) -> str:
        """An answer in words: its class's name (the analyst's text), or skipped."""
        return "skipped" if answer is None else self.classes[answer]

    def _correct(self, store, by: Identity | None, said) -> Outcome:
        with self.lock:
            if ended := self.accounts.sign_in_ended(by):
                return self.tell(Outcome(False, ended, "error"))
            correction, refused = written(
                self, lambda: store(by.name if by is not None else self.info.annotator), "changed", kind="warning"
            )
            if refused is not None:
                return refused
            self.rebuild()
            said_now = said(correction)
            if self.problem is None and self.use_snapshots and self.snapshot_is_behind:
                self.save_snapshot()  # (the corrected answer keeps its label id: the snapshot covering it is stale)
                if self.snapshot_error is not None:
                    return self.tell(Outcome(True, self._snapshot_note(said_now), "warning"))
            return self.tell(Outcome(True, said_now))

    def label_table(self) -> pd.DataFrame:
        """Every answer of the session in the order given, also removed and undone ones: ``label_id``, ``#``,
        ``item``, ``key``, ``answer`` (the class as it stands, or skipped), ``as given``, ``status`` (current, removed,
        undone), ``when``, ``heuristic`` (in words), ``changes``."""
        events = stored_history.label_history(self.engine, self.session_id)
        corrections: dict[int, list] = {}
        for c in stored_history.label_corrections(self.engine, self.session_id):
            corrections.setdefault(c.label_id, []).append(c)
        keys = getattr(self.display, "item_keys", None)
        rows, position = [], 0
        for event in events:
            mine = corrections.get(event.label_id, [])
            removed = any(c.kind == "remove" for c in mine)
            current = event.undone_at is None
            position += current
            first = self._corrected(mine[0])[0] if mine else self._stored(event)
            rows.append(
                {
                    "label_id": event.label_id,
                    "#": position if current else None,
                    "item": event.item_index,
                    "key": (keys[event.item_index] if keys is not None else None) or "",
                    "answer": self._name(self._stored(event)),
                    "as given": self._name(first),
                    "status": "current" if current else "removed" if removed else "undone",
                    "when": event.created_at,
                    "heuristic": self.heuristic_words(event.strategy),
                    "changes": "; ".join(self._change_words(c) for c in mine),
                }
            )
        columns = ["label_id", "#", "item", "key", "answer", "as given", "status", "when", "heuristic", "changes"]
        return pd.DataFrame(rows, columns=columns)

    def _change_words(self, c) -> str:
        what = "removed it" if c.kind == "remove" else f"changed it to {self._name(self._corrected(c)[1])}"
        return f"{c.annotator} {what} ({c.created_at:%Y-%m-%d %H:%M})"

    def heuristic_words(self, strategy: str) -> str:
        """A strategy recorded with an answer (or of the item shown), in a screener's words."""
        if strategy == self.cold_start:
            return self.cold_start[0].upper() + self.cold_start[1:]
        known = strategy in CLASS_STRATEGY_WORDS or strategy in MULTI_LABEL_STRATEGY_WORDS
        return strategy_words(strategy, self.target) if known else heuristic_words(strategy)

    def import_labels(
        self, data: bytes, *, key_column: str, label_column: str, source: str = "the file", by: Identity | None = None
    ) -> Outcome:
        """Add the answers of an import file (a CSV of item key → class name, or ``skipped``) to the session, all
        or none, under ``by``'s name (the session's annotator by default); the model learns them in the file's
        order.  Raises ``ServiceError`` naming the labels that are not classes of the session, or listing the
        rows that cannot be imported (as a two-class session's import: ``app.services.history``); nothing is
        stored then."""
        by_word = {name.strip().lower(): k for k, name in enumerate(self.classes)}
        by_word |= {word: SKIPPED for word in ("skipped", "skip") if word not in by_word}
        with self.lock:
            self.accounts.acting(by)
            if self.problem is not None:
                raise ServiceError(self.problem)
            plan = plan_rows(
                data,
                key_column=key_column,
                label_column=label_column,
                items=items_by_key(getattr(self.display, "item_keys", None), len(self.pool_items)),
                answer_of=lambda word: by_word.get(word.strip().lower()),
                name_of=lambda k: "skipped" if k == SKIPPED else self.classes[k],
                unknown=lambda where, word: f"{where}: '{word}' is not a class of this session.",
                current={a.item_index: SKIPPED if a.answer_class is None else a.answer_class for a in self.answers},
                in_pool=lambda item: 0 <= item < len(self.pool_items),
                dataset=self.dataset.name,
            )
            if plan.unknown:
                words = ", ".join(f"'{w}'" for w in plan.unknown)
                raise ServiceError(
                    f"Nothing was imported from {source}: {words} "
                    + ("is not a class" if len(plan.unknown) == 1 else "are not classes")
                    + f" of this session (its classes: {', '.join(self.classes)}; 'skipped' for a skip)."
                )
            refuse_problems(plan, source)
            if not plan.answers:
                return self.tell(nothing_new(plan, source))
            stored = store_import(
                self, [(item, 0, None) if k == SKIPPED else (item, 1, k) for item, k in plan.answers], source, by
            )
            try:
                for event in stored:
                    self._learn(event.item_index, event.answer_class, event.label_id, IMPORTED)
            except Exception as error:
                return self._cannot_learn(f"The {len(stored)} imported answers are", error, them="them")
            self.last_update_ms = None
            self.version += 1
            self.ask()
            if self.use_snapshots:
                self.save_snapshot()
            counts = [(name, sum(e.answer_class == k for e in stored)) for k, name in enumerate(self.classes)]
            skipped = sum(e.answer_class is None for e in stored)
            said = ", ".join(f"{name} {n}" for name, n in counts if n) + (f", {skipped} skipped" if skipped else "")
            return self.tell(Outcome(True, f"Imported {len(stored)} answers from {source} ({said.lstrip(', ')})."))

    def model_state(self) -> bytes:
        """The session's K machines as an .npz file (no pickle): machine k's arrays under ``class{k}/``, the
        shared data once, and a JSON ``__meta__`` naming the classes in order."""
        import io
        import json

        if self.model is None:
            raise ServiceError(self.problem or f"Session {self.session_id} has no model.")
        arrays: dict[str, np.ndarray] = {}
        metas = []
        for k, machine in enumerate(self.model.machines):
            got, meta = machine.to_state(include_data=k == 0)
            arrays.update({f"class{k}/{name}": value for name, value in got.items()})
            metas.append(meta)
        meta = {
            "classes": list(self.classes),
            "machines": metas,
            "session_id": self.session_id,
            "dataset_id": self.info.dataset_id,
            "dataset": self.dataset.name,
            "strategy": self.strategy,
            "n_events": len(self.answers),
            "n_labels": self.n_labels,
            "scaling": self.scaling,
            "layout": self.model_layout,
        }
        buffer = io.BytesIO()
        np.savez(buffer, __meta__=np.array(json.dumps(meta)), pool_items=self.pool_items, **arrays)
        return buffer.getvalue()

    # -- read-outs ---------------------------------------------------------------------------------
    @property
    def n_labels(self) -> int:
        return sum(a.answered for a in self.answers)

    @property
    def n_skips(self) -> int:
        return sum(not a.answered for a in self.answers)

    def class_counts(self) -> dict[str, int]:
        """How many current answers each class has, in the session's order."""
        counts = dict.fromkeys(self.classes, 0)
        for a in self.answers:
            if a.answer_class is not None:
                counts[self.classes[a.answer_class]] += 1
        return counts

    # -- stopping (the class looked for against the rest, ``app.services.class_stopping``) --------
    @property
    def checking(self) -> bool:
        """A recall check is on: the items shown are drawn at random."""
        return self.stopping is not None and self.stopping.checking

    def set_stop_class(self, name: Any, *, by: Identity | None = None) -> Outcome:
        """Say which class the analyst is looking for (name or place): the stopping rules, the estimate and the
        recall check work on it against the rest from now on (stored with the stopping settings, so a restart
        and an undo keep it).  Refused, nothing stored, during a recall check."""
        with self.lock:
            if ended := self.accounts.sign_in_ended(by):
                return self.tell(Outcome(False, ended, "error"))
            try:
                k = self.class_index(name)
            except ServiceError as error:
                return self.tell(Outcome(False, str(error), "error"))
            chosen = self.classes[k]
            if chosen == self.stop_class:
                return self.tell(Outcome(True, f"Stopping already works on {chosen}."))
            if self.checking:
                return self.tell(
                    Outcome(False, "Stop the random check first: its draws test the class it started on.", "warning")
                )
            stored = {**stopping_settings(self.info.params), "class": chosen}
            try:
                params = repo.set_session_setting(self.engine, self.session_id, STOPPING_SETTING, stored)
            except StorageError as error:
                return self.tell(Outcome(False, f"The class was not changed: {error}", "error"))
            except SQLAlchemyError as error:
                return self.tell(Outcome(False, f"The class was not changed: {database_trouble(error)}", "error"))
            self.info = dataclasses.replace(self.info, params=params)
            self._stop_on(chosen)
            self.rebuild()  # (the stability rule's checkpoints are read off that class's machine)
            return self.tell(Outcome(True, f"Stopping works on {chosen} against the other classes."))

    def stopping_status(self):
        """The two-class stopping status over the class looked for against the rest (None: no class named, or no
        model)."""
        return None if self.stopping is None else self.stopping.stopping_status()

    def _no_stopping(self) -> Outcome:
        return self.tell(Outcome(False, NO_STOPPING, "warning"))

    def set_stopping(self, **settings) -> Outcome:
        return self._no_stopping() if self.stopping is None else self.stopping.set_stopping(**settings)

    def start_check(self, *, by: Identity | None = None) -> Outcome:
        return self._no_stopping() if self.stopping is None else self.stopping.start_check(by=by)

    def stop_check(self, *, by: Identity | None = None) -> Outcome:
        return self._no_stopping() if self.stopping is None else self.stopping.stop_check(by=by)

    def _members(self, a: ClassAnswer) -> tuple[int, ...]:
        """The classes an answer holds (their places): the one class of a single-choice answer."""
        assert a.answer_class is not None
        return (a.answer_class,)

    def _rated(self) -> list[tuple[int, np.ndarray, np.ndarray]]:
        """(answers so far, membership row, scores when asked) of each answer the model could rate (asked once
        it could: ``_can_rate``), in order; skips left out."""
        rated: list[tuple[int, np.ndarray, np.ndarray]] = []
        before: list[ClassAnswer] = []
        for a in self.answers:
            if not a.answered:
                continue
            if self._can_rate(before):
                member = np.zeros(len(self.classes), dtype=bool)
                member[list(self._members(a))] = True
                rated.append((len(before) + 1, member, np.asarray(a.scores, dtype=float)))
            before.append(a)
        return rated

    _hits = staticmethod(top_class_hits)

    def history(self) -> pd.DataFrame:
        """After each answer (skips left out): ``labels``, ``accuracy`` (the share of the answers so far whose
        class the model rated highest when it asked), ``auc_<k>`` for each class k (the AUC of class k's scores
        when asked, against the answers: undefined until the answers rated hold items in it and out of it) and
        ``macro_auc`` (their mean over the classes where defined); NaN where undefined.  Answers given before
        the model had seen two classes are not counted (it could not rate them): ``rated_history``."""
        return rated_history(self._rated(), sum(a.answered for a in self.answers), len(self.classes), self._hits)

    def confusion(self) -> pd.DataFrame:
        """Confusion counts of the answers the model could rate (see ``history``): rows the class answered,
        columns the class the model rated highest when it asked."""
        table = pd.DataFrame(0, index=list(self.classes), columns=list(self.classes))
        seen: set[int] = set()
        for a in self.answers:
            if a.answer_class is None:
                continue
            if len(seen) >= 2:
                table.iloc[a.answer_class, int(np.argmax(a.scores))] += 1
            seen.add(a.answer_class)
        table.index.name = "answered"
        return table


__all__ = [
    "CLASS_COLD_START",
    "CLASS_STRATEGY_WORDS",
    "MULTI_LABEL_STRATEGY_WORDS",
    "ClassAnswer",
    "ClassShown",
    "ClassesRun",
    "auc_column",
    "class_index",
    "class_list",
    "class_looked_for",
    "class_query",
    "class_target",
    "rated_history",
    "strategy_words",
    "top_class_hits",
    "why_chosen",
]
