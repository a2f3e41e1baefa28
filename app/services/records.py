"""The records the service's modules share, below all of them: an answer as a run keeps it, the item
shown and why, what a labelling run's parts read of it (``RunState``), the evaluation split and
share, and the text of an uploaded CSV.

Nothing here imports another service module but ``common``: the datasets, sessions, a labelling
run and its parts (history, stopping, known items) all read these, and none of them needs another
to do so.
"""

from __future__ import annotations

import csv
import io
import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from sqlalchemy.exc import SQLAlchemyError

from app.services.accounts import Accounts, Identity
from app.services.common import EVAL_MAX_ITEMS, Outcome, ServiceError, database_trouble


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
    strategy: str | None = None  # the heuristic that asked (core.stopping.CHECK_STRATEGY: a recall check's draw)


class RunState(Protocol):
    """What the parts of a labelling run (``LabellingRun``: its history, stopping, read-outs, snapshots and
    known items) read and change of the run: the session, its data, answers and model, and the run's own
    steps.  Each part is given the run as this, and the other parts it uses, when the run is made."""

    engine: Any
    accounts: Accounts  # whether a signed-in person may still write
    use_snapshots: bool
    session_id: int
    lock: threading.RLock
    info: Any  # storage.repository.SessionInfo
    dataset: Any  # storage.repository.DatasetInfo
    scaling: str
    seed: int
    find: str | None
    solver_params: dict[str, Any]
    strategy_params: dict[str, Any]
    X: Any  # every item's scaled features (by dataset row)
    X_raw: Any  # every item's stored features
    y_true: np.ndarray | None
    display: Any
    feature_names: list[str]
    pool_items: np.ndarray
    eval_items: np.ndarray
    pool_of_item: Mapping[int, int]
    loop: Any  # core.loop.ActiveLearningLoop, None while the model cannot be used
    problem: str | None
    answers: list[Answer]
    last_update_ms: float | None
    resume_note: str
    version: int

    @property
    def class_names(self) -> dict[int, str]: ...

    def ask(self) -> None: ...

    def tell(self, outcome: Outcome) -> Outcome: ...

    def rebuild(self) -> None: ...

    def cannot_go_on(self, error: Exception, what: str) -> Outcome: ...

    def check_decision_values(self, pool_indices: list[int]) -> None: ...

    def refusal(self, by: Identity | None) -> Outcome | None: ...

    def not_recorded(self, error: Exception) -> Outcome: ...


def evaluation_split(
    y_true: np.ndarray, fraction: float, seed: int, max_items: int = EVAL_MAX_ITEMS
) -> tuple[np.ndarray, np.ndarray]:
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
    in_pool = np.ones(len(y_true), dtype=bool)
    in_pool[np.concatenate(held)] = False
    return np.flatnonzero(in_pool).astype(np.intp), np.flatnonzero(~in_pool).astype(np.intp)


def eval_share(value) -> float:
    """The evaluation share as a number in [0, 1); otherwise a ``ServiceError`` naming the value."""
    try:
        share = float(value)
    except (TypeError, ValueError):
        share = float("nan")
    if isinstance(value, bool) or not 0.0 <= share < 1.0:
        raise ServiceError(f"The evaluation share must be at least 0 and less than 1, not {value!r}.")
    return share


def csv_text(data: bytes, sep: str = ",") -> io.StringIO:
    """An uploaded file as text for ``csv.reader``, whose cells may be as long as the file; one beyond
    the columns and cells ``core.datasets`` reads is refused (``DataTooLarge``) before it is read.

    Python's csv module refuses cells over ``csv.field_size_limit()`` (128 KiB by
    default) while the import (pandas) takes them; no cell can be longer than the
    file, so the limit is raised to the file's length (never lowered: it is per process).
    """
    from core.datasets import check_csv_shape

    text = data.decode("utf-8", errors="replace")
    check_csv_shape(text, sep)
    if csv.field_size_limit() < len(text):
        csv.field_size_limit(len(text))
    return io.StringIO(text, newline="")


__all__ = ["Answer", "RunState", "ShownItem", "csv_text", "eval_share", "evaluation_split"]


def written(run: Any, write, what: str, *, kind: str = "error") -> tuple[Any, Outcome | None]:
    """``(write(), None)``; or, when storage refuses it or the database cannot be written, ``(None, the
    outcome the run tells)``: "Nothing was ``what``: ..." (``run.tell``)."""
    from storage.errors import StorageError

    try:
        return write(), None
    except StorageError as error:
        return None, run.tell(Outcome(False, f"Nothing was {what}: {error}", kind))
    except SQLAlchemyError as error:
        logging.getLogger(__name__).warning("session %s: nothing was %s: %s", run.session_id, what, error)
        return None, run.tell(
            Outcome(
                False, f"Nothing was {what}: the database could not be written ({database_trouble(error)}).", "error"
            )
        )


def undo_stored(run: Any, last_item_index: int | None) -> tuple[Any, Outcome | None]:
    """Undo the run's last answer in the database: ``(the event undone, or None when another tab or process
    answered or undid meanwhile, None)``, or ``(None, the refusal the run tells)``: a second, stale Undo (the
    answer on ``last_item_index`` is no longer the run's last), or a failed write."""
    from storage import repository as repo

    if last_item_index is not None and (not run.answers or run.answers[-1].item_index != int(last_item_index)):
        return None, run.tell(
            Outcome(
                False,
                f"The answer on item {last_item_index} was already undone; the second click was ignored.",
                "warning",
            )
        )
    last = run.answers[-1] if run.answers else None
    # only if the answer this run knows as the last is still the session's last: an
    # answer given meanwhile by another process is not this person's to undo
    return written(
        run,
        lambda: repo.undo_last_label(run.engine, run.session_id, label_id=None if last is None else last.label_id),
        "undone",
    )
