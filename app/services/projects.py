"""Projects shared by a team: several annotators, one shared model, reserved items, agreement.

A project is a dataset with a heuristic and a solver. Each member answers in a
labelling session of their own (``storage.teams``), and one model learns every
answer of every member:

- The shared model of a process (``ProjectRun``) is the active-learning loop
  taught, in label order, the *model label* of every answered item: the settled
  answer when the owner settled it, else the item's first positive/negative
  answer. Before each read it catches up with the database: when only new
  answers came (``projects.revision`` moved, ``edits`` did not) it learns those;
  when an answer was undone or settled (``edits`` moved) it takes back exactly
  what changed and learns it again (``unteach``: exact ``unlearn`` for the
  incremental and active-set solvers, whose optimum does not depend on the
  order); with the other solvers every label is learned again, in label order
  with the settled answers in place, so every process holds the same model.
- Items are handed out with a reservation in the database (``item_reservations``,
  one holder per item, with an expiry), so two processes never hand one item to two
  people; the answer itself is refused once an item has every answer it needs.
- On a share of the items (``overlap_share``) the project asks for
  ``labels_per_item`` answers from different members; those items go to the next
  member who has not answered them, before new items. Cohen's kappa (per pair of
  annotators) and Fleiss' kappa (all) are computed over them; the items whose
  answers differ wait for an owner to settle them, and the model learns the
  settled answer.
- The shared model is stored as a snapshot (``storage.teams.save_project_snapshot``:
  the loop's state, the labels it learned, the project's revision) every
  ``SNAPSHOT_EVERY`` labels it learns and when the server stops. A process opening
  the project starts from the latest snapshot made with its configuration and
  catches up from there as a running process does (``_sync_all``: what was undone or
  settled since is taken back, the rest learned), instead of learning every answer
  again; a snapshot that cannot be read or does not fit is passed over.
"""

from __future__ import annotations

import csv
import functools
import io
import itertools
import logging
import operator
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy.exc import SQLAlchemyError

from app.services.accounts import Accounts, Identity
from app.services.class_snapshots import ProjectSnapshots, store_project_snapshot
from app.services.classes import (
    CLASS_COLD_START,
    class_index,
    class_list,
    class_query,
    class_target,
    rated_history,
    strategy_words,
    top_class_hits,
)
from app.services.common import (
    DEFAULT_C,
    DEFAULT_GAMMA,
    LABEL_STRATEGIES,
    SOLVERS,
    VALUE_NAMES,
    Outcome,
    ServiceError,
    answer_words,
    class_names,
    find_words,
    gamma_value,
    penalty_value,
    positive_meaning,
    scale_features,
    scaling_name,
    whole_number,
)
from app.services.datasets import Datasets
from app.services.display import ItemDisplay
from app.services.errors import service_boundary
from app.services.multi_label import (
    CLASS_SET_COLD_START,
    MultiLabelRun,
    can_rate,
    class_places,
    set_words,
    why_set_chosen,
)
from app.services.snapshots import SNAPSHOT_EVERY, save_behind
from app.services.vocabulary import kappa_strength
from core.agreement import Kappa, cohen_kappa, fleiss_kappa, rating_counts
from core.loop import ActiveLearningLoop
from core.multiclass import MULTICLASS_STRATEGIES, MULTILABEL_STRATEGIES, MultiLabel, OneVsRest
from core.replay import final_class, settled_answers
from core.settings import CLASS_SOLVER, MAX_CLASSES, MIN_MULTI_LABEL_CLASSES, SessionSettings, SettingsError
from core.solvers import solver_class
from core.strategies import DEFAULT_SOLVER
from storage import repository as repo
from storage import teams
from storage.errors import DuplicateLabelError, StorageError
from storage.export import answer_name
from storage.repository.labels import bits_classes, session_classes, session_multi_label

logger = logging.getLogger(__name__)

#: attempts at reserving an item before giving up (each loses only to another member taking that item,
#: and each failure looks again at every reservation, so a few suffice even with many members)
RESERVE_ATTEMPTS = 50
#: default seconds an item stays reserved for the member it was handed to
RESERVATION_SECONDS = 600
#: format of the project's part of a project snapshot's meta
PROJECT_SNAPSHOT_FORMAT = 1


@dataclass(frozen=True)
class ProjectItem:
    """The item handed to a member, and why."""

    item_index: int
    score: float | None
    strategy: str
    reason: str
    query_ms: float | None
    second_opinion: bool  # asked because the project wants more than one answer on it


@dataclass
class Agreement:
    """Agreement on the items that got several answers."""

    fleiss: Kappa | None
    cohen: dict[tuple[str, str], Kappa]
    n_overlap_items: int  # items with at least 2 positive/negative answers
    disagreements: list[int]  # items whose answers differ and that nobody settled yet
    settled: dict[int, int]
    per_item: dict[int, dict[str, int]] = field(default_factory=dict)


@service_boundary
class ProjectRun:
    """One project's shared model in this process, kept in step with the database."""

    #: what the pages test to tell a project with named classes (``ClassProjectRun``) from a yes / no one
    has_classes = False
    #: any set of the classes per item (``MultiLabelProjectRun``), not one
    multi_label = False

    def __init__(self, engine, project_id: int, *, accounts: Accounts, use_snapshots: bool = True):
        self.engine, self.accounts, self.use_snapshots = engine, accounts, bool(use_snapshots)
        self.project_id = int(project_id)
        self.lock = threading.RLock()
        self.info = teams.get_project(self.engine, self.project_id)
        params = dict(self.info.params or {})
        X, _, self.feature_names, self.display = repo.load_dataset_arrays(self.engine, self.info.dataset_id)
        self.dataset_meta = repo.get_dataset(self.engine, self.info.dataset_id).meta
        self.X_raw = X
        self.X = scale_features(X, params.get("scaling", "none"))
        self.solver_params = dict(params.get("solver_params", {}))
        self.strategy_params = dict(params.get("strategy_params", {}))
        self.resume_note = "no snapshot: every answer learned"
        #: the item last handed to each member by the model's pick, as shown then (``_held``: shown again)
        self.handed: dict[str, ProjectItem] = {}
        resumed = self._from_snapshot()
        self._reset(None if resumed is None else resumed[0])
        if resumed is not None:
            _, self.model_labels, self.snapshot_seen = resumed
        #: how an item is shown: the same as in a labelling session (the loop's pool is every item)
        self.item_display = ItemDisplay(
            display=self.display,
            meta=self.dataset_meta,
            feature_names=self.feature_names,
            raw_rows=self.X_raw,
            scaled_rows=self.X,
            pool_rows=self.X,
            model=lambda: self.loop,
            lock=self.lock,
        )

    @property
    def looking_for(self) -> str | None:
        """What a Positive answer means (``common.positive_meaning``): the owner's words when the project
        has them, read from the database each time (an owner may change them while this process holds the
        project), else the dataset's positive class when it has one."""
        return positive_meaning(teams.get_project(self.engine, self.project_id).find, class_names(self.dataset_meta))

    def _reset(self, loop: ActiveLearningLoop | None = None) -> None:
        """The model and its bookkeeping before the first look at the database (``loop``: one restored
        from a snapshot, else a new one)."""
        self.loop = loop if loop is not None else self._new_loop()
        self.seen: tuple[int, int] = (-1, -1)  # (revision, edits) the model reflects
        self.last_label_id = 0
        self.answers: dict[int, list[teams.ProjectAnswer]] = {}  # item -> active answers in label order
        self.settled: dict[int, int] = {}
        self.model_labels: dict[int, int] = {}  # item -> label the loop learned
        self.last_update_ms: float | None = None
        self.snapshot_seen: tuple[int, int] | None = None  # (revision, edits) of the last snapshot stored or read
        self.learned_since_snapshot = 0

    def _new_loop(self) -> ActiveLearningLoop:
        return ActiveLearningLoop(
            self.X,
            strategy=self.info.strategy,
            solver=self.info.solver,
            solver_params=self.solver_params or None,
            strategy_params=self.strategy_params or None,
            seed=self.info.seed,
        )

    # -- snapshots of the shared model
    def _from_snapshot(self) -> tuple[ActiveLearningLoop, dict[int, int], tuple[int, int]] | None:
        """The loop, its labels and the project's (revision, edits) from the latest stored snapshot of
        the project's model, when it was made with this configuration over this pool; None (and
        ``resume_note`` says why) when there is none to use.  The next ``sync`` catches up from it (see
        the module notes) as a process that had been running would: the answers after it learned in
        label order (the same bits as that process), what was undone or settled since unlearned
        exactly; with a solver that cannot unlearn exactly, a snapshot older than an undo or
        settlement is passed over."""
        if not self.use_snapshots:
            return None
        try:
            snapshot = teams.latest_project_snapshot(self.engine, self.project_id)
        except (StorageError, SQLAlchemyError) as error:
            self.resume_note = f"the snapshots could not be read ({error}): every answer learned"
            return None
        if snapshot is None:
            return None
        solver_params = dict(self.solver_params)
        solver_params.setdefault("random_state", self.info.seed)  # (as the loop completes them)
        expected = dict(
            strategy=self.info.strategy,
            solver=self.info.solver,
            solver_params=solver_params,
            strategy_params=self.strategy_params,
            seed=self.info.seed,
        )
        try:
            mine, loop_meta = snapshot.meta.get("project", {}), snapshot.meta.get("loop", {})
            saved = loop_meta.get("config", {})
            if mine.get("format") != PROJECT_SNAPSHOT_FORMAT:
                problem = "unknown snapshot format"
            elif any(saved.get(key) != value for key, value in expected.items()):
                problem = "the snapshot is for another configuration"
            elif (
                not solver_class(self.info.solver).exact_unlearn
                and teams.project_revision(self.engine, self.project_id)[1] != snapshot.edits
            ):
                # answers were undone or settled since: without exact unlearning a running process
                # learns every label again in label order, and so does this one
                problem = "answers were undone or settled since the snapshot"
            else:
                loop = ActiveLearningLoop.from_state(snapshot.arrays, loop_meta, X=self.X)
                labels = {int(item): int(value) for item, value in mine["model_labels"]}
                learned = loop.labels
                problem = (
                    None
                    if {int(i): int(learned[i]) for i in np.flatnonzero(learned)} == labels
                    else "the snapshot's labels are not its model's"
                )
        except Exception as error:  # whatever is wrong with it, the stored answers rebuild the model
            problem = f"the snapshot could not be read ({type(error).__name__}: {error})"
        if problem is not None:
            self.resume_note = f"{problem}: every answer learned"
            return None
        self.resume_note = f"resumed from the snapshot after {len(labels)} labels"
        return loop, labels, (snapshot.revision, snapshot.edits)

    @property
    def snapshot_is_behind(self) -> bool:
        """Whether the model has learned from answers its latest snapshot does not cover."""
        return self.seen[0] >= 0 and bool(self.model_labels) and self.seen != self.snapshot_seen

    def save_snapshot(self) -> int | None:
        """Store the shared model as it is (the project at ``self.seen``); returns the snapshot id, or
        None when there is nothing to store or storing failed (nothing else changes: the next process
        learns more answers again)."""
        with self.lock:
            if self.seen[0] < 0:  # (not caught up with the database yet)
                return None
            arrays, loop_meta = self.loop.to_state()
            meta = {
                "loop": loop_meta,
                "project": {
                    "format": PROJECT_SNAPSHOT_FORMAT,
                    "model_labels": [[i, v] for i, v in self.model_labels.items()],
                },
            }
            return store_project_snapshot(self, arrays, meta)

    # -- keeping up with the database
    def sync(self) -> None:
        """Learn what the other members answered since the last look (one cheap read when nothing happened)."""
        with self.lock:
            revision = teams.project_revision(self.engine, self.project_id)
            if revision == self.seen:
                return
            if revision[1] != self.seen[1]:  # answers were undone or settled: look at everything
                self._sync_all()
            else:
                seen, new = teams.project_answers(self.engine, self.project_id, after_label_id=self.last_label_id)
                if seen[1] != self.seen[1]:
                    self._sync_all()
                else:
                    for answer in new:
                        self.answers.setdefault(answer.item_index, []).append(answer)
                        self.last_label_id = max(self.last_label_id, answer.label_id)
                    self._teach_missing([a.item_index for a in new])
                    self.seen = seen
            if self.use_snapshots and self.learned_since_snapshot >= SNAPSHOT_EVERY:
                self.save_snapshot()  # the next process need not learn these again

    def _sync_all(self) -> None:
        seen, answers = teams.project_answers(self.engine, self.project_id)
        self.settled = settled_answers(teams.settlements(self.engine, self.project_id), classes=False)
        self.answers = {}
        for answer in answers:
            self.answers.setdefault(answer.item_index, []).append(answer)
        self.last_label_id = max((a.label_id for a in answers), default=0)
        wanted = {item: self.model_label(item) for item in self.answers}
        wanted.update(self.settled)
        wanted = {item: value for item, value in wanted.items() if value}
        changed = [item for item, value in self.model_labels.items() if wanted.get(item) != value]
        if changed and not self.loop.solver.exact_unlearn:
            # no exact unlearning: learn every label again, in label order with the settled answers in
            # place, so that every process holds the same model whatever it saw happen
            self.loop = ActiveLearningLoop(self.X, **self.loop.config())
            self.model_labels = {}
            changed = []
        for item in changed:
            self.loop.unteach(item)
            del self.model_labels[item]
        self._teach_missing([a.item_index for a in answers] + list(self.settled))
        self.seen = seen

    def model_label(self, item: int) -> int:
        """What the model learns for an item: the settled answer, else the first positive/negative answer, else 0."""
        if item in self.settled:
            return self.settled[item]
        return next((a.value for a in self.answers.get(item, ()) if a.value != 0), 0)

    def _teach_missing(self, items: list[int]) -> None:
        """Teach, in the given order, the items whose model label the loop does not have yet."""
        for item in items:
            value = self.model_label(item)
            if value and item not in self.model_labels:
                t0 = time.perf_counter()
                self.loop.teach(item, value)
                self.last_update_ms = 1e3 * (time.perf_counter() - t0)
                self.model_labels[item] = value
                self.learned_since_snapshot += 1

    # -- what a member sees
    def needed(self, item: int) -> int:
        return teams.answers_needed(self.info, item)

    def given(self, item: int) -> int:
        return sum(1 for a in self.answers.get(item, ()) if a.value != 0)

    def answered_by(self, name: str) -> set[int]:
        return {item for item, answers in self.answers.items() if any(a.annotator == name for a in answers)}

    def next_item(self, name: str) -> ProjectItem | None:
        """The item for member ``name``: the one they hold, else a second opinion owed, else the model's pick.

        The item is reserved for them in the database before it is returned.
        """
        with self.lock:
            self.sync()
            mine = self.answered_by(name)
            reserved = teams.reserved_items(self.engine, self.project_id)  # one read: mine and the others'
            held = next((item for item, holder in reserved.items() if holder == name), None)
            excluded = {item for item, holder in reserved.items() if holder != name} | mine
            if held is not None and held not in mine and self.given(held) < self.needed(held):
                return self._held(name, held, excluded)
            for _ in range(RESERVE_ATTEMPTS):
                item, second, query = self._candidate(excluded)
                if item is None:
                    return None
                if teams.reserve_item(
                    self.engine, self.project_id, annotator=name, item_index=item, seconds=self.info.reservation_seconds
                ):
                    # An answer ends its reservation in the transaction that stores it: an item answered
                    # since the last look could be reserved again, and the look after reserving shows it.
                    self.sync()
                    if self.given(item) < self.needed(item) and item not in self.answered_by(name):
                        shown = self._shown(item, second=second, query=query)
                        self.handed[name] = shown
                        return shown
                else:  # someone holds it: look again at what everyone holds and has answered
                    self.sync()
                    excluded |= {
                        i for i, holder in teams.reserved_items(self.engine, self.project_id).items() if holder != name
                    }
                excluded.add(item)
                excluded |= self.answered_by(name)
            raise ServiceError("Every item offered was taken by another annotator at the same moment; try again.")

    def _held(self, name: str, item: int, excluded: set[int]) -> ProjectItem:
        """The item member ``name`` holds, shown again (a rerun, another tab): with the reason the model had when it
        chose it (remembered; else the model's pick now, when it is that item), or as a second opinion's."""
        if self.given(item) > 0:  # (a second opinion: its reason tells nothing of the other member's answer)
            return self._shown(item, second=True)
        handed = self.handed.get(name)
        if handed is not None and handed.item_index == item:
            return handed
        candidate, second, query = self._candidate(excluded)
        if candidate == item and query is not None:  # (another process chose it: the model picks it again)
            self.handed[name] = self._shown(item, second=second, query=query)
            return self.handed[name]
        return self._shown(item, second=False)

    def _owed(self, excluded: set[int]) -> int | None:
        """The oldest item that waits for another answer (a second opinion), outside ``excluded``."""
        owed = [
            item
            for item, answers in self.answers.items()
            if item not in excluded and 0 < self.given(item) < self.needed(item) and item not in self.settled
        ]
        return min(owed, key=lambda item: self.answers[item][0].label_id) if owed else None  # oldest first

    def _unavailable(self, excluded: set[int]) -> np.ndarray:
        """The items not to hand out now: ``excluded``, and those with every answer they need (also when
        settled)."""
        mask = np.zeros(self.X_raw.shape[0], dtype=bool)
        if excluded:
            mask[np.fromiter(excluded, dtype=np.intp)] = True
        for item in self.answers:
            if self.given(item) >= self.needed(item):
                mask[item] = True
        return mask

    def _candidate(self, excluded: set[int]) -> tuple[int | None, bool, Any]:
        first = self._owed(excluded)
        if first is not None:
            return first, True, None
        query = self.loop.propose(self._unavailable(excluded))
        return (None, False, None) if query is None else (int(query.index), False, query)

    def _shown(self, item: int, *, second: bool, query: Any = None) -> ProjectItem:
        if query is not None:
            score, strategy, reason, ms = (
                float(query.score),
                str(query.strategy),
                str(query.reason or ""),
                float(query.query_ms),
            )
        else:
            score = float(self.loop.pool_scores()[item]) if self.loop.n_labels else float("nan")
            strategy = self.info.strategy
            reason = (
                "another annotator answered it; the project asks for a second opinion" if second else "reserved for you"
            )
            ms = float("nan")
        return ProjectItem(
            item, score if np.isfinite(score) else None, strategy, reason, ms if np.isfinite(ms) else None, second
        )

    def answer(
        self, name: str, item: int, value: int, shown: ProjectItem | None = None, *, by: Identity | None = None
    ) -> Outcome:
        """Store member ``name``'s answer to ``item`` (+1, -1, 0 = skip), then learn it with everyone else's.
        ``by``: the signed-in person answering; nothing is stored once their sign-in has ended."""
        refuse_a_set(value)
        value = int(value)
        if value not in (1, -1, 0):
            raise ServiceError(f"A label is +1, -1 or 0 (skip), not {value}.")
        return self._record(name, item, value, shown, by=by, said=VALUE_NAMES[value])

    def _record(
        self,
        name: str,
        item: int,
        value: int,
        shown: ProjectItem | None,
        *,
        by: Identity | None,
        said: str,
        answer_class: int | None = None,
        answer_classes: tuple[int, ...] | None = None,
    ) -> Outcome:
        """Store an answer (refusals said, nothing stored), then learn what changed."""
        with self.lock:
            if ended := self.accounts.sign_in_ended(by):
                return Outcome(False, ended, "error")
            try:
                teams.record_answer(
                    self.engine,
                    self.project_id,
                    annotator=name,
                    item_index=int(item),
                    value=value,
                    strategy=shown.strategy if shown else self.info.strategy,
                    solver=self.info.solver,
                    decision_value=shown.score if shown else None,
                    model_version=len(self.model_labels),
                    update_ms=self.last_update_ms,
                    query_ms=shown.query_ms if shown else None,
                    answer_class=answer_class,
                    answer_classes=answer_classes,
                )
            except DuplicateLabelError as error:
                self.sync()
                return Outcome(False, f"{error} Nothing was recorded twice.", "warning")
            except teams.ItemTakenError as error:
                self.sync()
                return Outcome(False, str(error), "warning")
            except StorageError as error:
                return Outcome(False, f"Nothing was recorded: {error}", "error")
            self.sync()
            return Outcome(True, f"Item {item}: {said}.")

    def undo(self, name: str, *, by: Identity | None = None) -> Outcome:
        """Undo member ``name``'s most recent answer (only theirs, and only if it is still their last);
        ``by``: as for ``answer``."""
        with self.lock:
            if ended := self.accounts.sign_in_ended(by):
                return Outcome(False, ended, "error")
            self.sync()
            last = max(
                (a for answers in self.answers.values() for a in answers if a.annotator == name),
                key=lambda a: a.label_id,
                default=None,
            )
            if last is None:
                return Outcome(False, "Nothing to undo.", "warning")
            try:
                event = teams.undo_answer(self.engine, self.project_id, annotator=name, label_id=last.label_id)
            except StorageError as error:
                return Outcome(False, f"Nothing was undone: {error}", "error")
            self.sync()
            if event is None:
                return Outcome(
                    False, "Nothing was undone: your last answer changed meanwhile (another tab?).", "warning"
                )
            teams.reserve_item(
                self.engine,
                self.project_id,
                annotator=name,
                item_index=event.item_index,
                seconds=self.info.reservation_seconds,
            )
            return Outcome(True, f"Undid {self._answer_words(event)} on item {event.item_index}.")

    def _answer_words(self, event) -> str:
        return VALUE_NAMES[event.value]

    def settle(self, item: int, value: int, by: str, note: str = "") -> Outcome:
        with self.lock:
            teams.settle(self.engine, self.project_id, item_index=int(item), value=int(value), settled_by=by, note=note)
            self.sync()
        return Outcome(True, f"Item {item} settled as {VALUE_NAMES[int(value)]}; the model learned it.")

    # -- read-outs
    def agreement(self) -> Agreement:
        with self.lock:
            self.sync()
            per_item = {
                item: {a.annotator: self._vote(a) for a in answers if a.value != 0}
                for item, answers in self.answers.items()
            }
            settled = dict(self.settled)
        overlap = {item: votes for item, votes in per_item.items() if len(votes) >= 2}
        k = int(self.info.labels_per_item)
        fleiss = None
        if k >= 2:
            rows = [list(votes.values())[:k] for votes in overlap.values() if len(votes) >= k]
            fleiss = fleiss_kappa(rating_counts(rows, self._categories())) if rows else Kappa(None, 0, None, None, k)
        cohen = {}
        names = sorted({name for votes in overlap.values() for name in votes})
        for first, second in itertools.combinations(names, 2):
            both = [votes for votes in overlap.values() if first in votes and second in votes]
            if both:
                cohen[(first, second)] = cohen_kappa([v[first] for v in both], [v[second] for v in both])
        disagreements = sorted(
            item for item, votes in overlap.items() if len(set(votes.values())) > 1 and item not in settled
        )
        return Agreement(fleiss, cohen, len(overlap), disagreements, settled, overlap)

    def _vote(self, answer: teams.ProjectAnswer) -> int:
        """An answer as agreement counts it: +1 / -1 (a class's place in a project with named classes)."""
        return answer.value

    def _categories(self) -> tuple[int, ...]:
        return (-1, 1)

    def _vote_cell(self, vote: int | str) -> int | str:
        """A vote or settled answer as the agreement file writes it: the dataset's class name (positive / negative
        unless it names them, as the session export writes ``label``), escaped; a class's name in a project with
        named classes."""
        from storage.export import escape_cell

        return escape_cell(class_names(self.dataset_meta)[vote]) if isinstance(vote, int) else vote

    def progress(self) -> dict[str, Any]:
        with self.lock:
            self.sync()
            by_member: dict[str, int] = {}
            for answers in self.answers.values():
                for a in answers:
                    by_member[a.annotator] = by_member.get(a.annotator, 0) + 1
            done = sum(1 for item in self.answers if self.given(item) >= self.needed(item))
            return {
                "answers": sum(by_member.values()),
                "by_member": by_member,
                "items_done": done,
                "items": self.X_raw.shape[0],
                "learned": len(self.model_labels),
                **self._learned_counts(),
            }

    def _learned_counts(self) -> dict[str, Any]:
        """``positive``: how many items the model learned as positive."""
        return {"positive": sum(1 for v in self.model_labels.values() if v > 0)}

    def agreement_csv(self) -> bytes:
        """One row per item with several answers, and nothing else (the same columns on every row): its key and
        display text (as the other exports name them), each member's answer in words (the dataset's class names, as
        the session export writes them; a class's name, a set's names), ``agree`` (yes / no), the settled answer;
        every text escaped against formulas.  The kappas are in ``agreement_summary_csv``."""
        from storage.export import escape_cell

        report = self.agreement()
        names = sorted({name for votes in report.per_item.values() for name in votes})
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\r\n")
        writer.writerow(
            ["item_index", "item_key", "display_text", *[escape_cell(n) for n in names], "agree", "settled"]
        )
        for item in sorted(report.per_item):
            votes = report.per_item[item]
            writer.writerow(
                [
                    item,
                    escape_cell(self.item_display.key(item) or ""),
                    escape_cell(self.item_display.text(item) or ""),
                    *[self._vote_cell(votes.get(n, "")) for n in names],
                    "yes" if len(set(votes.values())) == 1 else "no",
                    self._vote_cell(report.settled.get(item, "")),
                ]
            )
        return out.getvalue().encode("utf-8")

    def agreement_summary_csv(self) -> bytes:
        """The agreement in one small table (the same columns on every row): ``statistic`` (``fleiss_kappa`` over
        all members, ``cohen_kappa`` for each pair), the pair (``member_a``, ``member_b``; empty for Fleiss'),
        ``value`` (empty when undefined), ``strength`` (Landis & Koch's 1977 word, ``vocabulary.kappa_strength``),
        ``items`` it counted, ``observed_agreement`` (Cohen's p_o, Fleiss' P-bar); names escaped against formulas."""
        from storage.export import escape_cell

        def number(x: float | None) -> str:
            return "" if x is None else f"{x:.6f}"

        report = self.agreement()
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\r\n")
        writer.writerow(["statistic", "member_a", "member_b", "value", "strength", "items", "observed_agreement"])
        pairs: list[tuple[str, str, str, Kappa | None]] = [("fleiss_kappa", "", "", report.fleiss)]
        pairs += [("cohen_kappa", a, b, kappa) for (a, b), kappa in report.cohen.items()]
        for statistic, a, b, kappa in pairs:
            value = None if kappa is None else kappa.value
            writer.writerow(
                [
                    statistic,
                    escape_cell(a),
                    escape_cell(b),
                    number(value),
                    kappa_strength(value),
                    0 if kappa is None else kappa.n_items,
                    number(None if kappa is None else kappa.observed),
                ]
            )
        return out.getvalue().encode("utf-8")


@service_boundary
class ClassProjectRun(ProjectRun):
    """A team project with K named classes (``params["classes"]``, 3 to 9; single choice).

    Each member answers an item with one class, or skips it.  The shared model is a session's with named
    classes (``core.multiclass.OneVsRest`` of the project's solver), taught every answered item's *final
    class* in the order of the item's first class answer: the class the owner settled on, else the first
    class answered.  New answers are learned as they come; an undo or a settlement learns every item again
    in that order, as a process opening the project does, so every process holds the same model and hands
    out the same next item: from the latest snapshot when the items it learned are the first ones
    (``app.services.class_snapshots.ProjectSnapshots``), then the rest.  A settlement
    waits for the item's first class answer.  Items are chosen as a session with named classes chooses them
    (``classes.class_query``: at random until two classes are learned, then by the project's strategy), with
    a generator seeded with (seed, items learned); second opinions come first, as in a yes / no project.
    """

    has_classes = True
    #: the shared model: K one-vs-rest machines (``MultiLabelProjectRun``: K independent ones)
    model_class: type[OneVsRest] = OneVsRest

    def __init__(self, engine, project_id: int, *, accounts: Accounts, use_snapshots: bool = True):
        self.snapshots = ProjectSnapshots(self)
        super().__init__(engine, project_id, accounts=accounts, use_snapshots=use_snapshots)

    @property
    def classes(self) -> tuple[str, ...]:
        return tuple(str(c) for c in self.info.params["classes"])

    @property
    def target(self) -> str | None:
        return self.strategy_params.get("target")

    @property
    def strategy_name(self) -> str:
        """The project's way of choosing items, in a screener's words."""
        return strategy_words(self.info.strategy, self.target)

    def heuristic_words(self, strategy: str) -> str:
        if strategy == CLASS_COLD_START:
            return "Random (until two classes have answers)"
        return strategy_words(strategy, self.target)

    def _new_loop(self):  # type: ignore[override]
        return None

    def _reset(self, loop=None) -> None:
        super()._reset(None)
        self.model = self._new_model()
        #: (items learned so far, membership row, scores just before) of each item learned once the model could
        #: rate items (two classes learned), in the order learned: ``history``
        self.rated: list[tuple[int, np.ndarray, np.ndarray]] = []

    def _new_model(self) -> OneVsRest:
        params = {k: v for k, v in self.solver_params.items() if k != "auto"}
        params.setdefault("random_state", self.info.seed)
        return self.model_class(self.classes, self.info.solver, self.X, keep_scores=True, **params)

    # -- snapshots (``class_snapshots.ProjectSnapshots``: read at the first sync, whose answers they must fit)
    def _from_snapshot(self) -> None:  # type: ignore[override]
        return None

    def save_snapshot(self) -> int | None:
        return self.snapshots.save()

    def _resume(self, order: list[int]) -> None:
        """Start from the latest snapshot when the items it learned are the first of ``order``'s."""
        snapshot = self.snapshots.latest()
        if snapshot is not None:
            wanted, seen = [], set()
            for item in order:
                if item not in seen and self.model_label(item) is not None:
                    seen.add(item)
                    wanted.append((item, self.model_label(item)))
            self.snapshots.restore(snapshot, wanted)

    # -- the final classes and the model
    def _given(self, answer: teams.ProjectAnswer | teams.Settlement) -> Any:
        """What an answer or settlement gave: a class's place (None: a skip)."""
        return answer.answer_class

    def _learned_as(self, given: Any) -> Any:
        """What the model learns for what was given: the class's name."""
        return self.classes[given]

    def _member(self, given: Any) -> np.ndarray:
        """What was given as a row of K booleans (class k in it): the charts' read-outs."""
        member = np.zeros(len(self.classes), dtype=bool)
        member[given] = True
        return member

    def _can_rate(self) -> bool:
        """Whether the model can rate items: two classes learned."""
        return len(set(self.model_labels.values())) >= 2

    def model_label(self, item: int) -> Any:
        """What the model learns for an item (a class's place): the settled one, else the first answered
        (skips passed over); None before the item has such an answer."""
        # (the project's replay reads an item's class with the same rule)
        return final_class(self.answers.get(item, ()), self.settled.get(item), given=self._given)

    def _sync_all(self) -> None:
        seen, answers = teams.project_answers(self.engine, self.project_id)
        settled = {
            item: self._given(s)
            for item, s in teams.settlements(self.engine, self.project_id).items()
            if self._given(s) is not None
        }
        self._reset()
        self.settled = settled
        for answer in answers:
            self.answers.setdefault(answer.item_index, []).append(answer)
        self.last_label_id = max((a.label_id for a in answers), default=0)
        self._resume([a.item_index for a in answers if self._given(a) is not None])
        self._teach_missing([a.item_index for a in answers if self._given(a) is not None])
        self.seen = seen

    def _teach_missing(self, items: list[int]) -> None:
        for item in items:
            k = self.model_label(item)
            if k is not None and item not in self.model_labels:
                if self._can_rate():  # scored before it is learned (as when asked)
                    scores = np.asarray(self.model.decision_function(np.array([int(item)]))[0], dtype=float)
                    self.rated.append((len(self.model_labels) + 1, self._member(k), scores))
                step = self.model.learn(item, self._learned_as(k))
                self.last_update_ms = float(step.seconds) * 1000.0
                self.model_labels[item] = k
                self.learned_since_snapshot += 1

    # -- what a member sees
    def _candidate(self, excluded: set[int]) -> tuple[int | None, bool, Any]:
        first = self._owed(excluded)
        if first is not None:
            return first, True, None
        available = ~self._unavailable(excluded)
        if not available.any():
            return None, False, None
        rng = np.random.default_rng([self.info.seed, len(self.model_labels)])
        shown = class_query(self.model, available, rng, self.info.strategy, self.target, **self._query_options())
        return (None, False, None) if shown is None else (shown.item_index, False, shown)

    def _query_options(self) -> dict[str, Any]:
        """How ``class_query`` picks the next item: at random until two classes are learned."""
        return {"n_answered": len(set(self.model_labels.values()))}

    def _shown(self, item: int, *, second: bool, query: Any = None) -> ProjectItem:
        if query is not None:
            return ProjectItem(item, query.score, query.strategy, query.reason, query.query_ms, False)
        return ProjectItem(
            item,
            None,
            self.info.strategy,
            "another annotator answered it; the project asks for a second opinion" if second else "reserved for you",
            None,
            second,
        )

    def predicted_class(self, item: int) -> str | None:
        """The class the model rates highest for an item (None before it learned anything, and for an item it
        learned: its guess would tell another member's answer)."""
        if not self.model_labels or int(item) in self.model_labels:
            return None
        with self.lock:
            return self.classes[int(np.argmax(self.model.decision_function(np.array([int(item)]))[0]))]

    # -- answers
    def answer(  # type: ignore[override]
        self, name: str, item: int, answer_class: Any, shown: ProjectItem | None = None, *, by: Identity | None = None
    ) -> Outcome:
        """Store member ``name``'s class (a name or place; None: a skip) for ``item``, then learn it with
        everyone else's (``MultiLabelProjectRun``: a set of classes)."""
        given = self._checked(answer_class)
        fields = {} if given is None else self._fields(given)
        return self._record(name, item, 0 if given is None else 1, shown, by=by, said=self._words(given), **fields)

    def _checked(self, answer: Any) -> Any:
        """An answer as given (a class by name or place) as stored (its place); None: a skip.  A ServiceError
        for anything else, before any write."""
        refuse_a_set(answer)
        return None if answer is None else class_index(self.classes, answer, "project")

    def _fields(self, given: Any) -> dict[str, Any]:
        """The stored columns of what was given."""
        return {"answer_class": given}

    def _words(self, given: Any) -> str:
        """What was given, in words."""
        return "skipped" if given is None else self.classes[given]

    def _answer_words(self, event) -> str:
        return self._words(self._given(event))

    def settle(self, item: int, value: Any, by: str, note: str = "") -> Outcome:  # type: ignore[override]
        """Settle an item on a class (name or place; ``MultiLabelProjectRun``: a set): the model learns it in
        the item's place."""
        given = self._checked(value)
        if given is None:
            raise ServiceError("A settled answer is an answer of the project, not a skip.")
        with self.lock:
            self.sync()
            if not any(self._given(a) is not None for a in self.answers.get(int(item), ())):
                raise ServiceError(f"Item {item} has no answer yet that is not a skip; there is nothing to settle.")
            teams.settle(
                self.engine,
                self.project_id,
                item_index=int(item),
                value=1,
                settled_by=by,
                note=note,
                **self._fields(given),
            )
            self.sync()
        return Outcome(True, f"Item {item} settled as {self._words(given)}; the model learned it.")

    # -- read-outs
    def _vote(self, answer: teams.ProjectAnswer) -> int:
        assert answer.answer_class is not None
        return answer.answer_class

    def _categories(self) -> tuple[int, ...]:
        return tuple(range(len(self.classes)))

    def _vote_cell(self, vote: int | str) -> int | str:
        return self._cell(vote) if isinstance(vote, int) else vote

    def class_counts(self) -> dict[str, int]:
        """How many items the model learned in each class (their final class), in the project's order."""
        with self.lock:
            self.sync()
            return self._learned_counts()["per_class"]

    def class_agreement(self) -> pd.DataFrame:
        """Agreement counts of the items answered with a class at least twice: rows the class of an item's
        first class answer, columns the class of its second (the diagonal: the two agree); skips left out."""
        table = pd.DataFrame(0, index=list(self.classes), columns=list(self.classes))
        with self.lock:
            self.sync()
            for answers in self.answers.values():
                given = [a.answer_class for a in answers if a.answer_class is not None]
                if len(given) >= 2:
                    table.iloc[given[0], given[1]] += 1
        table.index.name = "first answer"
        return table

    def history(self) -> pd.DataFrame:
        """After each item the shared model learned (its final class), as a session's ``ClassesRun.history``:
        ``labels`` (items learned), ``accuracy``, ``macro_auc`` and ``auc_<k>`` of the scores the model gave each
        item just before it learned it, against the items' final classes (``classes.rated_history``)."""
        with self.lock:
            self.sync()
            return rated_history(self.rated, len(self.model_labels), len(self.classes), self._hits)

    #: per rated item, the share of it the model's scores got right (the top class; a set: each class's sign)
    _hits = staticmethod(top_class_hits)

    def _learned_counts(self) -> dict[str, Any]:
        """``per_class``: how many items the model learned in each class."""
        counts = dict.fromkeys(self.classes, 0)
        for k in self.model_labels.values():
            counts[self.classes[k]] += 1
        return {"per_class": counts}

    #: the column of ``labels_csv`` that holds each item's final answer
    labels_column = "class"

    def _cell(self, given: Any) -> str:
        """What was given as the files write it: the class's name, escaped against formulas."""
        from storage.export import escape_cell

        return escape_cell(self.classes[given])

    def labels_csv(self) -> bytes:
        """One row per item the model learned: its key and display text (a document, a molecule's SMILES; as a
        session's export names them), its final class by name (``MultiLabelProjectRun``: its set), whether the owner
        settled it, and each member's (skips left out); every text escaped against formulas."""
        from storage.export import escape_cell

        with self.lock:
            self.sync()
            names = sorted({a.annotator for answers in self.answers.values() for a in answers})
            out = io.StringIO()
            writer = csv.writer(out, lineterminator="\r\n")
            writer.writerow(
                [
                    "item_index",
                    "item_key",
                    "display_text",
                    self.labels_column,
                    "settled",
                    *[escape_cell(n) for n in names],
                ]
            )
            for item, final in sorted(self.model_labels.items()):
                given = {a.annotator: self._given(a) for a in self.answers.get(item, ())}
                writer.writerow(
                    [
                        item,
                        escape_cell(self.item_display.key(item) or ""),
                        escape_cell(self.item_display.text(item) or ""),
                        self._cell(final),
                        int(item in self.settled),
                        *[self._cell(given[n]) if given.get(n) is not None else "" for n in names],
                    ]
                )
        return out.getvalue().encode("utf-8")


#: the columns of ``MultiLabelProjectRun.class_agreement``: per class, the item's first two sets
SET_AGREEMENT_COLUMNS = ("both with it", "first only", "second only", "neither")


def refuse_a_set(answer: Any) -> None:
    """A set of classes given to a project with one answer per item: a ServiceError, before any write."""
    if isinstance(answer, (list, tuple, set, frozenset)):
        raise ServiceError(
            f"This project takes one answer per item, not a set of classes ({list(answer)!r}); nothing was recorded."
        )


@service_boundary
class MultiLabelProjectRun(ClassProjectRun):
    """A multi-label team project (``params["multi_label"]``; 2 to 9 named classes): each member answers an item
    with any set of the classes (none of them is an answer too), or skips it.

    Everything is ``ClassProjectRun``'s with a set in place of a class: the shared model is a
    ``core.multiclass.MultiLabel`` of the project's solver taught every answered item's *final set* (the set the
    owner settled on, else the first set answered) in the order of the item's first answer that is not a skip;
    an undo or a settlement learns every item again in that order, as a process opening the project does.  Two
    members agree on an item when their sets are equal.  Items are chosen as a multi-label session chooses them:
    at random until a class has an answer with it and one without it, then by the project's strategy.
    """

    multi_label = True
    model_class = MultiLabel

    def _given(self, answer: teams.ProjectAnswer | teams.Settlement) -> Any:
        return answer.answer_classes

    def _learned_as(self, given: Any) -> Any:
        return [self.classes[k] for k in given]

    def _checked(self, answer: Any) -> Any:
        return class_places(self.classes, answer, "project")

    def _member(self, given: Any) -> np.ndarray:
        member = np.zeros(len(self.classes), dtype=bool)
        member[list(given)] = True
        return member

    def _can_rate(self) -> bool:
        return can_rate(self.model_labels.values(), len(self.classes))

    _hits = staticmethod(MultiLabelRun._hits)

    def _fields(self, given: Any) -> dict[str, Any]:
        return {"answer_classes": given}

    def _words(self, given: Any) -> str:
        return set_words(self.classes, given)

    def _query_options(self) -> dict[str, Any]:
        return {
            "n_answered": 0,
            "rated": can_rate(self.model_labels.values(), len(self.classes)),
            "strategies": MULTILABEL_STRATEGIES,
            "cold_start": CLASS_SET_COLD_START,
            "why": why_set_chosen,
        }

    def heuristic_words(self, strategy: str) -> str:
        if strategy == CLASS_SET_COLD_START:
            return "Random (until a class has answers with and without it)"
        return strategy_words(strategy)

    def predicted_class(self, item: int) -> str | None:
        """The classes the model gives an item (positive scores; none of these): None before it can rate items,
        and for an item it learned (its guess would tell another member's answer)."""
        with self.lock:
            if int(item) in self.model_labels or not can_rate(self.model_labels.values(), len(self.classes)):
                return None
            scores = self.model.decision_function(np.array([int(item)]))[0]
        return set_words(self.classes, tuple(k for k, f in enumerate(scores) if f > 0))

    # -- read-outs
    def _vote(self, answer: teams.ProjectAnswer) -> int:
        """A set as agreement counts it: its bits (two members agree when their sets are equal)."""
        assert answer.answer_classes is not None
        return sum(1 << k for k in answer.answer_classes)

    def _categories(self) -> tuple[int, ...]:
        return tuple(range(1 << len(self.classes)))

    labels_column = "classes"

    def _vote_cell(self, vote: Any) -> int | str:
        """A vote (its bits) or a settled set (its places) as the agreement file writes it."""
        if isinstance(vote, tuple):
            return self._cell(vote)
        return self._cell(bits_classes(vote)) if isinstance(vote, int) else vote

    def _cell(self, given: Any) -> str:
        """A set as the files write it: the names joined by "; ", (none) for none of them; escaped."""
        from storage.export import escape_cell

        return escape_cell(answer_name({}, self.classes, 1, None, tuple(given), multi_label=True))

    def agreed_classes(self, votes: dict[str, int]) -> tuple[int, ...]:
        """The classes (places) every one of an item's answers has (``Agreement.per_item``'s votes, as bits): what
        settling the item starts from."""
        bits = functools.reduce(operator.and_, votes.values(), (1 << len(self.classes)) - 1)
        return tuple(bits_classes(bits) or ())

    def vote_words(self, vote: int) -> str:
        """A vote (``Agreement.per_item``'s bits) in words, as the pages show it."""
        return set_words(self.classes, bits_classes(vote))

    def _learned_counts(self) -> dict[str, Any]:
        """``per_class``: how many items the model learned with each class; ``none``: with none of them."""
        counts = dict.fromkeys(self.classes, 0)
        for places in self.model_labels.values():
            for k in places:
                counts[self.classes[k]] += 1
        return {"per_class": counts, "none": sum(1 for places in self.model_labels.values() if not places)}

    def class_agreement(self) -> pd.DataFrame:
        """Agreement counts per class (rows) of the items answered with a set at least twice, by the item's
        first two sets: both with the class, the first only, the second only, neither; skips left out."""
        table = pd.DataFrame(0, index=list(self.classes), columns=list(SET_AGREEMENT_COLUMNS))
        with self.lock:
            self.sync()
            for answers in self.answers.values():
                given = [set(a.answer_classes) for a in answers if a.answer_classes is not None]
                if len(given) >= 2:
                    for k in range(len(self.classes)):
                        column = (0 if k in given[0] else 2) + (0 if k in given[1] else 1)
                        table.iloc[k, column] += 1
        table.index.name = "class"
        return table


@service_boundary
class Projects:
    """Team projects: ``MarginLab.projects`` (``projects(identity)`` lists them), with one
    ``ProjectRun`` per project and process (``use_snapshots``: as for ``Sessions``)."""

    def __init__(self, engine, accounts: Accounts, datasets: Datasets, *, use_snapshots: bool = True):
        self.engine, self.accounts, self.datasets = engine, accounts, datasets
        self.use_snapshots = bool(use_snapshots)
        self._projects: dict[int, ProjectRun] = {}
        self._projects_lock = threading.Lock()

    def __call__(self, identity: Identity | None = None) -> list[teams.ProjectInfo]:
        """Every project for an owner; the projects one belongs to for an annotator."""
        if identity is not None and not identity.is_owner:
            return teams.list_projects(self.engine, member=identity.name)
        return teams.list_projects(self.engine)

    def create_project(
        self,
        actor: Identity,
        *,
        name: str,
        dataset_id: int,
        strategy: str,
        solver: str | None = None,
        C: float = DEFAULT_C,
        gamma: float | str = DEFAULT_GAMMA,
        seed: int = 0,
        labels_per_item: int = 1,
        overlap_share: float = 0.0,
        members: list[str] | tuple[str, ...] = (),
        reservation_seconds: int = RESERVATION_SECONDS,
        scaling: str | None = None,
        find: str | None = None,
        classes: str | Sequence[str] | None = None,
        target: str | None = None,
        multi_label: bool = False,
    ) -> int:
        """Store a new project and add its members; return its id. ``find``: what a Positive answer means,
        in the owner's words (as a session's: shown beside the answer buttons; empty: the dataset's
        positive class).  ``classes``: 3 to 9 named classes (a list, or names separated by commas) for a
        project whose members answer with one of them (``ClassProjectRun``); its ``strategy`` is then one of
        ``core.multiclass.MULTICLASS_STRATEGIES`` (``target``: the class "target-class" looks for, the first
        by default) and its solver the K-class one by default.  ``multi_label``: any set of the classes per item
        (2 to 9 classes; ``MultiLabelProjectRun``), its ``strategy`` one of
        ``core.multiclass.MULTILABEL_STRATEGIES``, with no class to find.  Everything is checked, as for a
        session with named classes, before anything is stored."""
        self.accounts.require_owner(actor, "create projects")
        multi_label = bool(multi_label)
        names = class_list(classes, "project", multi_label=multi_label)
        if multi_label and not names:
            raise ServiceError(
                f"Several classes per item: name the classes ({MIN_MULTI_LABEL_CLASSES} to {MAX_CLASSES}, separated "
                "by commas)."
            )
        strategy_params: dict[str, Any] = {}
        if names:
            allowed = MULTILABEL_STRATEGIES if multi_label else MULTICLASS_STRATEGIES
            if strategy not in allowed:
                kind = "several classes per item" if multi_label else "named classes"
                raise ServiceError(
                    f"Unknown way to pick items for {kind} '{strategy}'; choose one of {', '.join(allowed)}."
                )
            if find_words(find):
                raise ServiceError(
                    "What to find is for yes / no projects: a project with named classes is answered with its classes."
                )
            if multi_label and target is not None and str(target).strip():
                raise ServiceError(
                    f"A multi-label project has no class to find first (got {str(target).strip()!r}): its items are "
                    "answered with any of its classes; leave the class to find empty."
                )
            target = class_target(strategy, target, names, refuse_unused=True)
            if target is not None:
                strategy_params["target"] = target
            solver = solver or CLASS_SOLVER
        elif strategy not in LABEL_STRATEGIES:
            raise ServiceError(f"Unknown heuristic '{strategy}'; choose one of {', '.join(LABEL_STRATEGIES)}.")
        solver = solver or DEFAULT_SOLVER[strategy]
        if solver not in SOLVERS:
            raise ServiceError(f"Unknown solver '{solver}'; choose one of {', '.join(SOLVERS)}.")
        C, gamma, seed = penalty_value(C), gamma_value(gamma), whole_number(seed, "seed")
        labels_per_item = whole_number(labels_per_item, "Answers per item", low=1, high=10)
        share = float(overlap_share)
        if not 0.0 <= share <= 1.0:
            raise ServiceError(f"The share of items answered several times must be from 0 to 1, not {share}.")
        dataset = self.datasets.dataset(dataset_id)
        scaling = scaling_name(scaling if scaling is not None else dataset.meta.get("scaling", "none"))
        known = {a.name for a in teams.list_accounts(self.engine)}
        unknown = [m for m in members if m not in known]
        if unknown:
            raise ServiceError(f"No account is named {', '.join(repr(m) for m in unknown)}; add it on the Team page.")
        params: dict[str, Any] = {
            "solver_params": {"kernel": "rbf", "C": C, "gamma": gamma},
            "strategy_params": strategy_params,
            "scaling": scaling,
        }
        if names:
            try:  # the checks of a session with named classes, on the same settings
                SessionSettings(
                    strategy=strategy,
                    solver=solver,
                    seed=seed,
                    classes=names,
                    strategy_params=strategy_params,
                    multi_label=multi_label,
                )
            except SettingsError as error:
                raise ServiceError(f"The project's settings are refused: {error}.") from None
            params["classes"] = list(names)
            if multi_label:
                params["multi_label"] = True
        find = find_words(find)
        if find:
            params["find"] = find
        project_id = teams.create_project(  # (storage refusing, e.g. a name taken: said as it is, ``errors``)
            self.engine,
            name=name,
            dataset_id=dataset_id,
            strategy=strategy,
            solver=solver,
            params=params,
            seed=seed,
            labels_per_item=labels_per_item,
            overlap_share=share,
            reservation_seconds=reservation_seconds,
            created_by=actor.name,
        )
        for member in members:
            teams.add_member(self.engine, project_id, member)
        return project_id

    def add_member(self, actor: Identity, project_id: int, name: str) -> None:
        self.accounts.require_owner(actor, "add project members")
        if teams.get_account(self.engine, name) is None:
            raise ServiceError(f"No account is named '{name}'; add it on the Team page first.")
        teams.add_member(self.engine, project_id, name)

    def set_project_find(self, actor: Identity, project_id: int, find: str | None) -> None:
        """Change what a Positive answer means in the project (empty: the dataset's positive class); the
        shared model is not touched."""
        self.accounts.require_owner(actor, "change projects")
        teams.set_project_find(self.engine, project_id, find_words(find))

    def members(self, project_id: int) -> dict[str, int]:
        return teams.project_members(self.engine, project_id)

    def save_project_snapshots(self, wait_s: float = 5.0) -> int:
        """Store a snapshot of every project model in memory that is behind its answers (what the app
        does when its server stops, as ``save_snapshots`` for sessions); returns how many were stored.
        A project busy for longer than ``wait_s`` in all is left as it is."""
        return save_behind(self._projects, self._projects_lock, wait_s)

    def open_project(self, project_id: int) -> ProjectRun:
        """The project's run in this process (a ``ClassProjectRun`` for a project with named classes, a
        ``MultiLabelProjectRun`` for a multi-label one)."""
        with self._projects_lock:
            run = self._projects.get(int(project_id))
            if run is None:
                params = teams.get_project(self.engine, project_id).params
                kind: type[ProjectRun] = ProjectRun
                if session_multi_label(params):
                    kind = MultiLabelProjectRun
                elif params.get("classes"):
                    kind = ClassProjectRun
                run = kind(self.engine, project_id, accounts=self.accounts, use_snapshots=self.use_snapshots)
                self._projects[int(project_id)] = run
        return run

    def project_for(self, identity: Identity, project_id: int) -> ProjectRun:
        """The project's run, for a member (or an owner); ``ServiceError`` for anyone else."""
        if not identity.is_owner and identity.name not in self.members(project_id):
            raise ServiceError("You are not a member of this project.")
        return self.open_project(project_id)

    def settle(self, actor: Identity, project_id: int, item: int, value: int, note: str = "") -> Outcome:
        self.accounts.require_owner(actor, "settle disagreements")
        return self.open_project(project_id).settle(item, value, actor.name, note)

    def agreement_csv(self, actor: Identity, project_id: int) -> bytes:
        self.accounts.require_owner(actor, "export agreement")
        return self.open_project(project_id).agreement_csv()

    def agreement_summary_csv(self, actor: Identity, project_id: int) -> bytes:
        self.accounts.require_owner(actor, "export agreement")
        return self.open_project(project_id).agreement_summary_csv()

    def project_labels_csv(self, actor: Identity, project_id: int) -> bytes:
        """The final class (a multi-label project: set) of every item a project with named classes learned
        (``ClassProjectRun.labels_csv``)."""
        self.accounts.require_owner(actor, "export project labels")
        run = self.open_project(project_id)
        if not isinstance(run, ClassProjectRun):
            raise ServiceError("This export is for projects with named classes; use the agreement file.")
        return run.labels_csv()

    def own_answer_words(self, identity: Identity, events: list[repo.LabelEvent]) -> list[str]:
        """How each of the person's ``events`` reads, as History says it: the class's name in a session with
        named classes, the names of its classes in a multi-label one, the Label page's answer with the dataset's
        class name ("Positive (8)" / "Negative (rest)") in a two-class one, "skipped" for a skip."""
        sessions = {s.id: s for s in repo.list_sessions(self.engine, annotator=identity.name)}
        datasets: dict[int, dict[int, str]] = {}
        words = []
        for event in events:
            session = sessions[event.session_id]
            if session.dataset_id not in datasets:
                datasets[session.dataset_id] = class_names(repo.get_dataset(self.engine, session.dataset_id).meta)
            classes = session_classes(session.params)
            words.append(
                answer_name(
                    datasets[session.dataset_id],
                    classes,
                    event.value,
                    event.answer_class,
                    event.answer_classes,
                    multi_label=session_multi_label(session.params),
                )
                if classes
                else answer_words(event.value, datasets[session.dataset_id])
            )
        return words

    def own_history(self, identity: Identity) -> list[repo.LabelEvent]:
        """Every active answer the signed-in person gave, newest first (theirs only)."""
        events = []
        for session in repo.list_sessions(self.engine, annotator=identity.name):
            events.extend(e for e in repo.label_events(self.engine, session.id) if e.annotator == identity.name)
        return sorted(events, key=lambda e: e.label_id, reverse=True)
