"""When can the analyst stop?  The stopping part of a labelling run (the rules are ``core.stopping``).

What is stored: the session's stopping settings on its row (``params["stopping"]``:
the rule that says "you can stop", the target recall and confidence, the label
counts at which recall checks were started, and whether one is on), and in every
label's provenance whether it was a random draw of a check (its heuristic is
``core.stopping.CHECK_STRATEGY``).  Everything else is derived from the stored
events, so a restarted app shows the same state.  The stability rule's
checkpoints (the model's predictions on a fixed stop set every few labels) are
read off the model while labelling and while replaying events, and are kept in
the model snapshots, so a resume from a snapshot has them too.

While a check is on, the item shown is drawn at random from the unlabelled
pool items (skipped ones included) with a generator seeded by the session's
seed and the number of answers, so the same item comes back after a restart or
an undo.  The loop is still asked for its own query first: a replay asks it
before every event, and its pending query must be the same live and replayed.
Skip is refused during a check (the test needs an answer for every draw).  When
the draws show recall below the target, the session goes back to its heuristic
on its own.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy.exc import SQLAlchemyError

from app.services.accounts import Identity
from app.services.common import Outcome, ServiceError
from app.services.readouts import RunReadouts
from app.services.records import RunState, ShownItem
from core import stopping as rules
from core.settings import StoppingSettings
from core.strategies import strategy_words
from storage import repository as repo
from storage.errors import StorageError

logger = logging.getLogger(__name__)

#: the session setting that holds the stopping state
SETTING = "stopping"
#: the rules the Label page reports, in this order
RULE_CHOICES = ("statistical", "knee", "margin", "stability", "consecutive:50")
#: the rules a session may choose (the earlier statistical rules too: checks from the knee, after a run of negatives)
RULE_OPTIONS = (*RULE_CHOICES, "statistical-knee", "statistical-run")
DEFAULTS: dict[str, Any] = StoppingSettings().to_json()
#: snapshot arrays of the stability rule's checkpoints start with this
SNAPSHOT_PREFIX = "stopping."
#: seeds the random draws of a recall check (with the session's seed and the number of answers)
DRAW_STREAM = 0x57A7


@dataclass(frozen=True)
class StoppingStatus:
    """What the Label page shows about stopping, after the latest answer."""

    rule: str  # the rule that says "you can stop"
    target_recall: float
    confidence: float
    states: list[rules.RuleState]  # every rule, in RULE_CHOICES order (and the chosen one if it is not there)
    chosen: rules.RuleState
    estimate: rules.RecallEstimate
    check: rules.RecallCheck
    gain: pd.DataFrame  # n_labels, found, drawn (one row per label)
    outlook: str = ""  # how many more labels the guarantee will probably need, in words

    @property
    def can_stop(self) -> bool:
        return self.chosen.stop

    @property
    def checking(self) -> bool:
        return self.check.checking


def stopping_settings(params: dict[str, Any] | None) -> dict[str, Any]:
    """The session's stopping settings with the defaults filled in (sessions from before stopping rules have none),
    read as the settings record reads them (``core.settings.StoppingSettings``)."""
    return StoppingSettings.from_json((params or {}).get(SETTING) or None).to_json()


def check_settings(rule: str, target_recall: float, confidence: float) -> tuple[str, float, float]:
    """A rule name and a target / confidence pair, or a ``ServiceError`` that names what is wrong."""
    try:
        (spec,) = rules.parse_rules(str(rule))
        target_recall, confidence = rules.check_target(target_recall, confidence)
    except ValueError as error:
        raise ServiceError(f"{str(error)[:1].upper()}{str(error)[1:]}.") from None
    return str(spec), target_recall, confidence


class RunStopping:
    """When the analyst can stop: ``LabellingRun.stopping``, over the ``run``'s answers and model
    (``RunState``) and its ``readouts`` (the counts; the status is cached with them).  ``settings``: the
    session's stopping settings (``stopping_settings``); ``stability``: the stability rule's checkpoints;
    ``heuristic_words``: a heuristic that asked, in words, for the estimate's reasons (the registry's words)."""

    def __init__(
        self,
        run: RunState,
        readouts: RunReadouts,
        settings: dict[str, Any],
        heuristic_words: Callable[[str], str] = strategy_words,
    ):
        self.run, self.readouts = run, readouts
        self.settings = settings
        self.heuristic_words = heuristic_words
        self.stability: rules.StabilityTracker | None = None  # see restore

    # -- reading ---------------------------------------------------------------
    @property
    def checking(self) -> bool:
        """A recall check is on: the items shown are drawn at random."""
        return (
            bool(self.settings["checking"])
            and bool(self.settings["checks"])
            and self.settings["checks"][-1] <= self.readouts.n_labels
        )

    def _labelled_answers(self):
        return [a for a in self.run.answers if a.value != 0]

    def view(self) -> rules.SessionView:
        answers = self._labelled_answers()
        n_in_margin = float("nan")
        if self.run.loop is not None and self.run.loop.track_scores:
            f = self.run.loop.pool_scores()
            available = ~self.run.loop.labelled_mask & ~self.run.loop.skipped_mask
            n_in_margin = float(np.count_nonzero(np.abs(f[available]) < 1.0))
        return rules.SessionView(
            labels=np.array([a.value for a in answers], dtype=np.int64),
            drawn=np.array([a.strategy == rules.CHECK_STRATEGY for a in answers], dtype=bool),
            check_starts=tuple(self.settings["checks"]),
            checking=self.checking,
            pool_size=len(self.run.pool_items),
            n_in_margin=n_in_margin,
            kappas=tuple(self.stability.kappas()),
            stop_set_size=len(self.stability.stop_set),
            stability_step=self.stability.step,
        )

    def stopping_status(self) -> StoppingStatus | None:
        """Every rule's state, the estimate of the positives still unlabelled and the gain curve (None without a
        model)."""
        return self.readouts.cached("stopping", self._stopping_status)

    def _stopping_status(self) -> StoppingStatus | None:
        if self.run.loop is None:
            return None
        view = self.view()
        settings = self.settings
        names = list(RULE_CHOICES) + ([settings["rule"]] if settings["rule"] not in RULE_CHOICES else [])
        target, confidence = float(settings["target_recall"]), float(settings["confidence"])
        states = rules.evaluate(names, view, target_recall=target, confidence=confidence)
        chosen = states[names.index(settings["rule"])]
        check = rules.recall_check(
            view.labels,
            view.drawn,
            view.check_starts,
            checking=view.checking,
            pool_size=view.pool_size,
            target_recall=target,
            confidence=confidence,
            start=rules.CHECK_STARTS.get(settings["rule"], rules.CHECK_STARTS["statistical"]),
        )
        unlabelled = asked = None
        if self.run.loop.track_scores:
            unlabelled = self.run.loop.pool_scores()[~self.run.loop.labelled_mask]
            asked = np.array([np.nan if a.score is None else a.score for a in self._labelled_answers()])
        estimate = rules.estimate_remaining(
            view.labels,
            view.drawn,
            view.check_starts,
            pool_size=view.pool_size,
            unlabelled_scores=unlabelled,
            asked_scores=asked,
            asked_by=[a.strategy for a in self._labelled_answers()],
            target_recall=target,
            confidence=confidence,
            heuristic_words=self.heuristic_words,
            checking=view.checking,
        )
        gain = pd.DataFrame(
            {"n_labels": np.arange(1, len(view.labels) + 1), "found": np.cumsum(view.labels > 0), "drawn": view.drawn}
        )
        return StoppingStatus(
            rule=settings["rule"],
            target_recall=target,
            confidence=confidence,
            states=states,
            chosen=chosen,
            estimate=estimate,
            check=check,
            gain=gain,
            outlook=rules.outlook(check),
        )

    # -- changing ----------------------------------------------------------------
    def _store_stopping(self, **changes) -> None:
        """Store changed settings on the session row first, then take them (raises ServiceError)."""
        settings = {**self.settings, **changes}
        try:
            repo.set_session_setting(self.run.engine, self.run.session_id, SETTING, settings)
        except StorageError as error:
            raise ServiceError(f"The stopping settings were not changed: {error}") from None
        except SQLAlchemyError as error:
            raise ServiceError("The stopping settings were not changed: the database could not be written.") from error
        self.settings = stopping_settings({SETTING: settings})
        self.run.version += 1

    def set_stopping(
        self,
        *,
        rule: str | None = None,
        target_recall: float | None = None,
        confidence: float | None = None,
        by: Identity | None = None,
    ) -> Outcome:
        """Choose the rule that says "you can stop", and the statistical rule's target recall and confidence
        (``by``: the signed-in person, as for ``answer``)."""
        with self.run.lock:
            if ended := self.run.accounts.sign_in_ended(by):
                return self.run.tell(Outcome(False, ended, "error"))
            try:
                rule, target_recall, confidence = check_settings(
                    self.settings["rule"] if rule is None else rule,
                    self.settings["target_recall"] if target_recall is None else target_recall,
                    self.settings["confidence"] if confidence is None else confidence,
                )
                self._store_stopping(rule=rule, target_recall=target_recall, confidence=confidence)
            except ServiceError as error:
                return self.run.tell(Outcome(False, str(error), "error"))
            return self.run.tell(
                Outcome(
                    True,
                    f"Stopping rule: {rules.rule_words(rule)}; target recall "
                    f"{target_recall:g} at {confidence:g} confidence.",
                )
            )

    def start_check(self, *, by: Identity | None = None) -> Outcome:
        """Start a recall check: from now on the items shown are drawn at random from the unlabelled rest."""
        with self.run.lock:
            if ended := self.run.accounts.sign_in_ended(by):
                return self.run.tell(Outcome(False, ended, "error"))
            if self.run.problem is not None:
                return self.run.tell(Outcome(False, self.run.problem, "error"))
            if self.checking:
                return self.run.tell(Outcome(False, "A random check is already on.", "warning"))
            if not any(a.value > 0 for a in self.run.answers):
                return self.run.tell(
                    Outcome(False, "A random check needs at least one positive label first.", "warning")
                )
            try:
                self._store_stopping(checks=[*self.settings["checks"], self.readouts.n_labels], checking=True)
            except ServiceError as error:
                return self.run.tell(Outcome(False, str(error), "error"))
            self.run.ask()
            return self.run.tell(
                Outcome(
                    True,
                    "Random check started: the next items are drawn at random from the "
                    "unlabelled ones. Label each one; Skip is not available.",
                )
            )

    def stop_check(
        self, message: str = "Random check stopped: back to the model's picks.", *, by: Identity | None = None
    ) -> Outcome:
        """End the recall check on the analyst's word (or when its draws show recall below the target)."""
        with self.run.lock:
            if ended := self.run.accounts.sign_in_ended(by):
                return self.run.tell(Outcome(False, ended, "error"))
            if not self.checking:
                return self.run.tell(Outcome(False, "No random check is on.", "warning"))
            try:
                self._store_stopping(checking=False)
            except ServiceError as error:
                return self.run.tell(Outcome(False, str(error), "error"))
            self.run.ask()
            return self.run.tell(Outcome(True, message))

    def after_answer(self) -> str | None:
        """After a label: a check whose draws show recall below the target ends (the session goes back)."""
        if not self.checking:
            return None
        status = self.stopping_status()
        if status is not None and status.check.phase == "failed":
            try:
                self._store_stopping(checking=False)
            except ServiceError as error:  # the state is derived anyway: the check shows as failed
                logger.warning("session %s: %s", self.run.session_id, error)
            self.run.ask()
            return (
                "The random draws show recall below the target: back to the model's picks. Start a new check "
                "when it stops finding positives."
            )
        if status is not None and status.check.phase == "passed":
            return "The random check passed: you can stop."
        return None

    def forget_after_undo(self) -> None:
        """An undo took labels back: checkpoints after them go, and so does a check started after them."""
        self.stability.forget_after(self.readouts.n_labels)
        kept = [c for c in self.settings["checks"] if c <= self.readouts.n_labels]
        if kept != self.settings["checks"]:
            checking = self.settings["checking"] and len(kept) == len(self.settings["checks"])
            try:
                self._store_stopping(checks=kept, checking=checking)
            except ServiceError as error:  # derived anyway: starts beyond the labels are ignored
                logger.warning("session %s: %s", self.run.session_id, error)

    def forget_after_removal(self, position: int) -> None:
        """History removed the label at ``position`` (0-based among the labels): the labels after it move up
        by one, and so do the stored starts of the checks after it; the stability rule's checkpoints after it
        (counted in labels, of models that had learned the removed one) go."""
        self.stability.forget_after(position)
        checks = [c - 1 if c > position else c for c in self.settings["checks"]]
        if checks != self.settings["checks"]:
            try:
                self._store_stopping(checks=checks)
            except ServiceError as error:  # the starts stay as they were; the next change stores them
                logger.warning("session %s: %s", self.run.session_id, error)

    # -- the random draws ----------------------------------------------------------------
    def random_draw(self) -> ShownItem | None:
        """The item a recall check shows now: uniform over the unlabelled pool items, seeded by the answers."""
        unlabelled = np.flatnonzero(~self.run.loop.labelled_mask)
        if not len(unlabelled):
            return None
        pool_index = int(np.random.default_rng([self.run.seed, len(self.run.answers), DRAW_STREAM]).choice(unlabelled))
        score = (
            float(self.run.loop.pool_scores()[pool_index])
            if self.run.loop.track_scores
            else float(self.run.loop.solver.decision_function([pool_index])[0])
        )
        check = self.stopping_status().check if self.run.loop is not None else None
        needed = f"; at least {check.needed} more to draw" if check is not None and check.needed else ""
        return ShownItem(
            item_index=int(self.run.pool_items[pool_index]),
            pool_index=pool_index,
            score=score if np.isfinite(score) else None,
            strategy=rules.CHECK_STRATEGY,
            reason=f"drawn at random from the {len(unlabelled):,} unlabelled items for the random check{needed}",
            query_ms=None,
        )

    # -- the stability rule's checkpoints ----------------------------------------------------
    def record_checkpoint_at(self, n: int, positives: int) -> None:
        """The model's predictions on the stop set after label ``n`` (``positives`` of them), at a checkpoint."""
        if self.run.loop is None or not self.stability.due(n) or not (0 < positives < n):
            return
        stop = self.stability.stop_set
        scores = (
            self.run.loop.pool_scores()[stop]
            if self.run.loop.track_scores
            else self.run.loop.solver.decision_function(stop)
        )
        self.stability.record(n, scores)

    def arrays(self) -> dict[str, np.ndarray]:
        return {SNAPSHOT_PREFIX + k: v for k, v in self.stability.to_arrays().items()}

    def restore(self, arrays: dict[str, np.ndarray], n_labels: int) -> None:
        """The checkpoints a snapshot kept (covering its first ``n_labels`` labels), if it kept them."""
        self.stability = rules.StabilityTracker(rules.stop_set(len(self.run.pool_items), self.run.seed))
        mine = {k[len(SNAPSHOT_PREFIX) :]: v for k, v in arrays.items() if k.startswith(SNAPSHOT_PREFIX)}
        if not mine:
            return
        kept = rules.StabilityTracker.from_arrays(mine)
        if np.array_equal(kept.stop_set, self.stability.stop_set) and kept.step == self.stability.step:
            kept.forget_after(n_labels)
            self.stability = kept


#: why a recall check cannot start now, in words, or None (``core.stopping.check_blocked``)
check_blocked = rules.check_blocked
#: one line for the start button when a check now would read (nearly) all that is left, or None
check_caution = rules.check_caution

__all__ = [
    "DEFAULTS",
    "RULE_CHOICES",
    "RULE_OPTIONS",
    "SETTING",
    "RunStopping",
    "StoppingStatus",
    "check_blocked",
    "check_caution",
    "check_settings",
    "stopping_settings",
]
