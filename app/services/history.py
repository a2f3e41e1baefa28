"""The label history of a session: every answer, changes and removals of earlier ones, labels from elsewhere.

The order is the one of an answer: storage first (the correction with who
and when, never overwriting the answer as given), then the loop
(``ActiveLearningLoop.change_label`` / ``remove_label``: exact unlearning for
incremental and active-set, a rebuild from the corrected events for the
others), then a model snapshot, so that a restart resumes from exactly the
corrected model instead of recomputing it.
"""

from __future__ import annotations

import csv
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from sqlalchemy.exc import SQLAlchemyError

from app.services.accounts import Identity
from app.services.common import Outcome, ServiceError, answer_words, database_trouble
from app.services.readouts import RunReadouts
from app.services.records import Answer, RunState, csv_text
from app.services.snapshots import RunSnapshots
from app.services.stopping import RunStopping
from core.strategies import COLD_START_SUFFIX
from storage import history as stored_history
from storage.errors import StorageError

logger = logging.getLogger(__name__)

#: the heuristic recorded for labels imported from a file
IMPORTED = "imported"
#: at most this many row problems are listed in an import's message
IMPORT_PROBLEMS_SHOWN = 20
#: words an import file may use for the answers (besides the dataset's class names, which come first)
ANSWER_WORDS = {
    "positive": 1,
    "pos": 1,
    "+1": 1,
    "1": 1,
    "1.0": 1,
    "+1.0": 1,
    "negative": -1,
    "neg": -1,
    "-1": -1,
    "-1.0": -1,
    "skipped": 0,
    "skip": 0,
}


@dataclass(frozen=True)
class ImportPlan:
    """What an import file holds for a session, checked row by row (nothing stored yet)."""

    answers: list[tuple[int, int]]  # (item index, +1 / -1 / 0), in the file's order
    already: int  # rows whose item already has that answer in the session
    problems: list[str]  # one message per row that cannot be imported (empty: it can)
    unknown: list[str] = field(default_factory=list)  # the labels that are no answer, each once, in order


def items_by_key(item_keys, n_items: int) -> dict[str, list[int]]:
    """Item key -> the items with that key (the item's index, as text, when the dataset has no keys)."""
    if item_keys is None:
        return {str(i): [i] for i in range(n_items)}
    found: dict[str, list[int]] = {}
    for i, key in enumerate(item_keys):
        if key is not None:
            found.setdefault(str(key).strip(), []).append(i)
    return found


def plan_rows(
    data: bytes,
    *,
    key_column: str,
    label_column: str,
    items: dict[str, list[int]],
    answer_of: Callable[[str], int | None],
    name_of: Callable[[int], str],
    unknown: Callable[[str, str], str],
    current: dict[int, int],
    in_pool: Callable[[int], bool],
    dataset: str,
) -> ImportPlan:
    """Check an import file (a CSV of item key → label) row by row; stores nothing.  ``items``: key -> items
    (``items_by_key``); ``answer_of``: a label's answer (None: not an answer, said by ``unknown``);
    ``name_of``: an answer in words; ``current``: the session's answers by item; ``in_pool``: whether an item
    can be labelled in the session."""
    rows = csv.reader(csv_text(data.decode("utf-8-sig", errors="replace").encode()))
    header = [h.strip() for h in next(rows, [])]
    for column in (key_column, label_column):
        if column not in header:
            raise ServiceError(f"The file has no column '{column}' (its columns: {', '.join(header) or 'none'}).")
    k_col, l_col = header.index(key_column), header.index(label_column)
    planned: dict[int, tuple[int, int]] = {}  # item -> (value, row)
    answers, problems, unknown_words, already = [], [], [], 0
    for row_number, cells in enumerate(rows, start=1):
        if not any(c.strip() for c in cells):
            continue
        key = cells[k_col].strip() if k_col < len(cells) else ""
        word = cells[l_col].strip() if l_col < len(cells) else ""
        where = f"row {row_number}"
        if not key:
            problems.append(f"{where}: no item key in column '{key_column}'.")
            continue
        found = items.get(key)
        if found is None or (isinstance(found, list) and len(found) != 1):
            problems.append(
                f"{where}: key '{key}' is not an item of dataset '{dataset}'."
                if not found
                else f"{where}: key '{key}' names {len(found)} items of the dataset."
            )
            continue
        item = found[0]
        value = answer_of(word)
        if value is None:
            problems.append(unknown(where, word))
            if word not in unknown_words:
                unknown_words.append(word)
            continue
        if not in_pool(item):
            problems.append(
                f"{where}: item '{key}' is held out to evaluate this session (the dataset's true "
                "labels are used there)."
            )
            continue
        if item in planned:
            if planned[item][0] != value:
                problems.append(
                    f"{where}: item '{key}' is '{name_of(planned[item][0])}' in row "
                    f"{planned[item][1]} and '{name_of(value)}' here."
                )
            continue
        if item in current:
            if current[item] == value:
                already += 1
            else:
                problems.append(
                    f"{where}: item '{key}' is already '{name_of(current[item])}' in this session "
                    "(change it in the label history)."
                )
            continue
        planned[item] = (value, row_number)
        answers.append((item, value))
    return ImportPlan(answers=answers, already=already, problems=problems, unknown=unknown_words)


def refuse_problems(plan: ImportPlan, source: str) -> None:
    """A ``ServiceError`` listing the rows of ``plan`` that cannot be imported (the first few), if any."""
    if plan.problems:
        shown = plan.problems[:IMPORT_PROBLEMS_SHOWN]
        more = len(plan.problems) - len(shown)
        raise ServiceError(
            f"Nothing was imported from {source}: {len(plan.problems)} row"
            f"{'s' if len(plan.problems) != 1 else ''} cannot be used. "
            + " ".join(shown)
            + (f" … and {more} more." if more else "")
        )


def nothing_new(plan: ImportPlan, source: str) -> Outcome:
    """What an import file without a new answer says."""
    return Outcome(
        True, f"Nothing to import from {source}: its {plan.already} labels are already in this session.", "info"
    )


def store_import(run, answers, source: str, by: Identity | None) -> list:
    """Store an import file's ``answers`` in ``run``'s session (``storage.history.record_labels``: all or none,
    with the provenance ``imported``) under ``by``'s name (the session's annotator by default); the stored
    events, or a ``ServiceError`` saying why nothing was imported."""
    try:
        return stored_history.record_labels(
            run.engine,
            run.session_id,
            answers,
            annotator=by.name if by else run.info.annotator,
            strategy=IMPORTED,
            solver=run.info.solver,
            model_version=len(run.answers),
        )
    except StorageError as error:
        raise ServiceError(f"Nothing was imported from {source}: {error}") from None
    except SQLAlchemyError as error:
        raise ServiceError(
            f"Nothing was imported from {source}: the database could not be written ({database_trouble(error)})."
        ) from None


class RunHistory:
    """A session's label history: ``LabellingRun.label_history``.  A correction changes the ``run``'s
    answers and model (``RunState``), the ``stopping`` state and the AUCs ``readouts`` keeps, then
    stores a model snapshot (``snapshots``)."""

    def __init__(self, run: RunState, readouts: RunReadouts, stopping: RunStopping, snapshots: RunSnapshots):
        self.run, self.readouts, self.stopping, self.snapshots = run, readouts, stopping, snapshots

    # -- reading ---------------------------------------------------------------------------
    def label_table(self) -> pd.DataFrame:
        """Every answer of the session in the order given, also removed ones, with the changes made to it.

        Columns: ``label_id``, ``#`` (place among the current answers, None when
        removed or undone), ``item``, ``key``, ``answer`` (class name as it stands),
        ``as given``, ``status`` (current, removed or undone), ``when``, ``heuristic``,
        ``score when asked`` (None during the cold start), ``changes`` (who changed what, when).
        """
        events = stored_history.label_history(self.run.engine, self.run.session_id)
        given = stored_history.labels_as_given(self.run.engine, self.run.session_id)
        corrections: dict[int, list] = {}
        for c in stored_history.label_corrections(self.run.engine, self.run.session_id):
            corrections.setdefault(c.label_id, []).append(c)
        names = self.run.class_names
        keys = getattr(self.run.display, "item_keys", None)  # (none when the dataset could not be loaded)
        rows, position = [], 0
        for event in events:
            mine = corrections.get(event.label_id, [])
            removed = any(c.kind == "remove" for c in mine)
            current = event.undone_at is None
            if current:
                position += 1
            rows.append(
                {
                    "label_id": event.label_id,
                    "#": position if current else None,
                    "item": event.item_index,
                    "key": (keys[event.item_index] if keys is not None else None) or "",
                    "answer": names[event.value],
                    "as given": names[given.get(event.label_id, event.value)],
                    "status": "current" if current else ("removed" if removed else "undone"),
                    "when": event.created_at,
                    "heuristic": event.strategy,
                    "score when asked": None if COLD_START_SUFFIX in event.strategy else event.decision_value,
                    "changes": "; ".join(self._describe(c) for c in mine),
                }
            )
        return pd.DataFrame(
            rows,
            columns=[
                "label_id",
                "#",
                "item",
                "key",
                "answer",
                "as given",
                "status",
                "when",
                "heuristic",
                "score when asked",
                "changes",
            ],
        )

    def _answers_said(self) -> dict[int, str]:
        """``{value: words}``: how a change reads, as the Label page says a two-class answer ("Positive (8)")."""
        names = self.run.class_names
        if getattr(self.run, "has_classes", False):
            return names
        return {value: answer_words(value, names) for value in names}

    def _describe(self, correction) -> str:
        names = self._answers_said()
        when = f"{correction.created_at:%Y-%m-%d %H:%M:%S}"
        if correction.kind == "remove":
            return f"removed by {correction.annotator} at {when}"
        return f"{names[correction.old_value]} → {names[correction.new_value]} by {correction.annotator} at {when}"

    # -- changing ----------------------------------------------------------------------------
    def change_label(self, label_id: int, value: int, *, by: Identity | None = None) -> Outcome:
        """Change an earlier label to ``value`` (+1 / -1): recorded with who and when, then learned."""
        return self._correct(int(label_id), int(value), by=by)

    def remove_label(self, label_id: int, *, by: Identity | None = None) -> Outcome:
        """Remove an earlier label or skip: recorded with who and when; the item can be asked about again."""
        return self._correct(int(label_id), None, by=by)

    def _correct(self, label_id: int, value: int | None, *, by: Identity | None = None) -> Outcome:
        """``by``: who makes the correction (the signed-in person, refused once their sign-in ended); the
        session's annotator by default."""
        who = by.name if by is not None else self.run.info.annotator
        with self.run.lock:
            if ended := self.run.accounts.sign_in_ended(by):
                return self.run.tell(Outcome(False, ended, "error"))
            if self.run.problem is not None:
                return self.run.tell(Outcome(False, self.run.problem, "error"))
            answer = next((a for a in self.run.answers if a.label_id == label_id), None)
            if answer is None:
                self.run.rebuild()  # another tab or process may have changed the session: follow the database
                return self.run.tell(
                    Outcome(
                        False,
                        f"Label {label_id} is not one of this session's current answers "
                        "(undone or removed meanwhile?); nothing was changed.",
                        "warning",
                    )
                )
            names = self._answers_said()
            old = answer.value
            try:
                if value is None:
                    stored_history.remove_label(self.run.engine, self.run.session_id, label_id, annotator=who)
                else:
                    stored_history.change_label(
                        self.run.engine, self.run.session_id, label_id, value=value, annotator=who
                    )
            except StorageError as error:
                return self.run.tell(Outcome(False, f"Nothing was changed: {error}", "warning"))
            except SQLAlchemyError as error:
                logger.warning("session %s: the correction was not stored: %s", self.run.session_id, error)
                return self.run.tell(
                    Outcome(
                        False,
                        f"Nothing was changed: the database could not be written ({database_trouble(error)}).",
                        "error",
                    )
                )
            item, pool_index = answer.item_index, self.run.pool_of_item[answer.item_index]
            what = (
                f"The {names[old]} answer on item {item} was removed"
                if value is None
                else f"Item {item} changed from {names[old]} to {names[value]}"
            )
            position = sum(1 for a in self.run.answers[: self.run.answers.index(answer)] if a.value != 0)
            try:
                if value is None:
                    correction = self.run.loop.remove_label(pool_index)
                    self.run.answers.remove(answer)
                    if old != 0:
                        self.stopping.forget_after_removal(position)
                else:
                    correction = self.run.loop.change_label(pool_index, value)
                    answer.value = value
                if self.readouts.n_labels:
                    self.run.check_decision_values([p for p, v in self.run.loop.events if v != 0])
            except Exception as error:
                return self.run.cannot_go_on(
                    error, f"{what} (saved), but session {self.run.session_id}'s model could not learn the correction"
                )
            self.readouts.forget_metrics()  # the AUC of the scores when asked is taken over the labels as they stand
            self.run.last_update_ms = None
            self.run.version += 1
            self.snapshots.label_ids = None  # (the corrected answer keeps its id: the snapshots are behind)
            self.run.ask()
            how = (
                "the model is unchanged"
                if old == 0
                else f"the model was rebuilt from the {self.readouts.n_labels} labels"
                if not correction.exact
                else "unlearned (exact)"
                if value is None
                else "unlearned and learned again (exact)"
            )
            said = f"{what}: {how}, {correction.update_ms:.0f} ms."
            if value is None:
                said += " The item can be asked about again."
            if self.snapshots.save_snapshot() is None and self.snapshots.snapshot_error:
                return self.run.tell(
                    Outcome(
                        True,
                        f"{said} The model snapshot could not be stored "
                        f"({self.snapshots.snapshot_error}); the next start replays the "
                        "labels.",
                        "warning",
                    )
                )
            return self.run.tell(Outcome(True, said))

    # -- labels from elsewhere --------------------------------------------------------------------
    def plan_import(self, data: bytes, *, key_column: str, label_column: str) -> ImportPlan:
        """Check an import file (a CSV of item key → label) row by row against this session; stores nothing."""
        answers_by_word = {word: value for word, value in ANSWER_WORDS.items()}
        for value, name in self.run.class_names.items():
            answers_by_word[name.strip().lower()] = value  # the dataset's own class names come first
        names = self.run.class_names
        return plan_rows(
            data,
            key_column=key_column,
            label_column=label_column,
            items=items_by_key(self.run.display.item_keys, len(self.run.X_raw)),
            answer_of=lambda word: answers_by_word.get(word.lower()),
            name_of=names.__getitem__,
            unknown=lambda where, word: (
                f"{where}: label '{word}' is neither '{names[1]}' (positive) nor '{names[-1]}' (negative)."
            ),
            current={a.item_index: a.value for a in self.run.answers},
            in_pool=lambda item: item in self.run.pool_of_item,
            dataset=self.run.dataset.name,
        )

    def import_labels(
        self, data: bytes, *, key_column: str, label_column: str, source: str = "the file", by: Identity | None = None
    ) -> Outcome:
        """Add the labels of an import file to the session, all or none, under ``by``'s name (the session's
        annotator by default).

        Raises ``ServiceError`` listing the rows that cannot be imported (unknown
        key or label, an item held out for evaluation, an answer that contradicts
        one in the file or in the session), or saying that ``by``'s sign-in ended; nothing is stored then.
        """
        with self.run.lock:
            self.run.accounts.acting(by)
            if self.run.problem is not None:
                raise ServiceError(self.run.problem)
            plan = self.plan_import(data, key_column=key_column, label_column=label_column)
            refuse_problems(plan, source)
            if not plan.answers:
                return self.run.tell(nothing_new(plan, source))
            stored = store_import(self.run, plan.answers, source, by)
            self.run.answers.extend(Answer(e.item_index, e.value, None, e.label_id) for e in stored)
            try:
                self.run.loop.replay([(self.run.pool_of_item[e.item_index], e.value) for e in stored])
                self.run.check_decision_values([self.run.pool_of_item[e.item_index] for e in stored if e.value != 0])
            except Exception as error:
                return self.run.cannot_go_on(
                    error,
                    f"The {len(stored)} imported answers are saved, but session "
                    f"{self.run.session_id}'s model could not learn them",
                )
            self.run.last_update_ms = None
            self.run.version += 1
            self.run.ask()
            values = np.array([e.value for e in stored])
            said = (
                f"Imported {len(stored)} answers from {source} ({int((values == 1).sum())} "
                f"{self.run.class_names[1]}, {int((values == -1).sum())} {self.run.class_names[-1]}"
                + (f", {int((values == 0).sum())} skipped" if (values == 0).any() else "")
                + ")"
                + (f"; {plan.already} were already here" if plan.already else "")
                + "."
            )
            if self.snapshots.save_snapshot() is None and self.snapshots.snapshot_error:
                said += f" The model snapshot could not be stored ({self.snapshots.snapshot_error})."
            return self.run.tell(Outcome(True, said))
