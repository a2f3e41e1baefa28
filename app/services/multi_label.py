"""A multi-label session brought to life: ``MultiLabelRun``, an item answered with any set of the session's
classes (none of them is an answer too).

The session's settings name its classes (2 to 9) with ``multi_label`` set and a strategy of
``core.multiclass.MULTILABEL_STRATEGIES`` (least sure on any class, or random); its answers are stored as
sets (``labels.answer_classes``).  The model is ``core.multiclass.MultiLabel``: K independent machines of the
session's solver, machine k learning +1 where class k is in the answer and -1 where it is not.

Everything else is ``ClassesRun``'s: an answer is stored first, then learned, then the next item is chosen
with a generator seeded with (seed, answers); at random until the model can rate items (a class has an
answer with it and one without it), then by the session's strategy.  Undo unlearns with an exact solver
(the K machines trained without the answer, to rounding) and learns the answers left again with the others;
a change in History learns the stored answers again from the start, as a resume does, so a resumed session
has the same model and next item, bit for bit.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from app.services.accounts import Identity
from app.services.classes import ClassAnswer, ClassesRun, class_index, why_chosen
from app.services.common import Outcome, ServiceError
from app.services.errors import service_boundary
from core.multiclass import MULTILABEL_STRATEGIES, MultiLabel

#: what the strategy recorded for an item picked at random before the model can rate items
CLASS_SET_COLD_START = "random (until a class has answers with and without it)"
#: an answer with none of the session's classes, in words
NONE_WORDS = "none of these"
#: what a multi-label session refuses of what sessions with one class per item do
NOT_FOR_SETS = "{what} is for sessions with one class per item (not several); nothing was stored."
#: the columns of ``MultiLabelRun.confusion``: the answer and the model's call when it asked, per class
AGREEMENT_COLUMNS = ("both yes", "you yes, model no", "you no, model yes", "both no")


def class_places(classes: tuple[str, ...], answer: Any, what: str = "session") -> tuple[int, ...] | None:
    """A set of ``classes`` (names or places) as their sorted places; None: a skip.  A single class (not in a
    set), a class not among them or one named twice: a ServiceError saying so (``what``: a session or a
    project)."""
    if answer is None:
        return None
    if isinstance(answer, (str, bytes, int, np.integer)) or not isinstance(answer, (list, tuple, set, frozenset)):
        raise ServiceError(
            f"This {what} takes a set of classes per item (any of {', '.join(classes)}; an empty set for none of "
            f"them), not {answer!r}; nothing was recorded."
        )
    places = [class_index(classes, a, what) for a in answer]
    if len(set(places)) != len(places):
        raise ServiceError(f"Each class is named once in an answer, got {list(answer)!r}; nothing was recorded.")
    return tuple(sorted(places))


def can_rate(sets: Any, n_classes: int) -> bool:
    """Whether a multi-label model can rate items after the answers ``sets`` (class places; None: a skip): a
    class has an answer with it and one without it (its machine has seen both sides)."""
    given = [set(s) for s in sets if s is not None]
    return any(any(k in s for s in given) and any(k not in s for s in given) for k in range(n_classes))


def set_words(classes: tuple[str, ...], answer: Any) -> str:
    """An answer in words: its classes' names joined by "; " (the person's text), none of these, or skipped."""
    if answer is None:
        return "skipped"
    return "; ".join(classes[k] for k in answer) or NONE_WORDS


def cold_start_words(n_available: int) -> str:
    """Why an item was drawn at random before a multi-label model can rate items."""
    return (
        f"one of {n_available:,} unlabelled items; the model picks by its own rule once a class has an answer "
        "with it and one without it."
    )


def why_set_chosen(strategy: str, extra: dict, n_available: int) -> str:
    """Why a multi-label model asked about an item, in words (a session's and a project's)."""
    if strategy == CLASS_SET_COLD_START:
        return cold_start_words(n_available)
    if strategy == "least-sure-class":
        return (
            f"the model is least sure whether this item is '{extra['class']}': the closest call on any class "
            f"among {n_available:,} unlabelled items."
        )
    return why_chosen(strategy, extra, n_available)


@service_boundary
class MultiLabelRun(ClassesRun):
    """A stored multi-label session brought to life (see the module docstring).  ``answer`` takes a set of
    classes (names or places; empty: none of them) or None (a skip); ``change_label`` another set."""

    multi_label = True
    model_class = MultiLabel
    strategies = MULTILABEL_STRATEGIES
    cold_start = CLASS_SET_COLD_START
    model_layout = (
        "multi-label: machine k (arrays class{k}/...) learns class k (in the answer) against not in it; the stored "
        "points are class0's"
    )

    # -- what an answer is: a set of classes ---------------------------------------------------------
    def _stored(self, event: Any) -> Any:
        return event.answer_classes

    def _kept(self, item_index: int, answer: Any, label_id: int | None, strategy: str, scores) -> ClassAnswer:
        return ClassAnswer(item_index, None, label_id, strategy, scores, answer_classes=answer)

    def _answer_of(self, kept: ClassAnswer) -> Any:
        return kept.answer_classes

    def _checked(self, answer: Any) -> Any:
        """A set of the session's classes (names or places) as their sorted places; None: a skip.  A single class
        (not in a set), a class not in the session or one named twice: a ServiceError saying so."""
        return class_places(self.classes, answer)

    def _stored_fields(self, answer: Any) -> dict[str, Any]:
        return {"answer_classes": answer}

    def _corrected(self, correction: Any) -> tuple[Any, Any]:
        return correction.old_classes, correction.new_classes

    def _model_label(self, answer: Any) -> Any:
        return [self.classes[k] for k in answer]

    def _can_rate(self, answers: list[ClassAnswer]) -> bool:
        """A class has an answer with it and one without it (its machine has seen both sides)."""
        return can_rate((a.answer_classes for a in answers), len(self.classes))

    def _name(self, answer: Any) -> str:
        """An answer in words: its classes' names joined by "; " (the analyst's text), none of these, or skipped."""
        return set_words(self.classes, answer)

    def _cold_start_words(self, n_available: int) -> str:
        return cold_start_words(n_available)

    def _why(self, strategy: str, extra: dict, n_available: int) -> str:
        return why_set_chosen(strategy, extra, n_available)

    def predicted_class(self) -> str | None:
        """The classes the model gives the item shown (positive scores; none of these), None before it can rate."""
        if self.shown is None or not self._can_rate(self.answers):
            return None
        return self._name(tuple(k for k, f in enumerate(self.shown.scores) if f > 0))

    # -- read-outs ------------------------------------------------------------------------------------
    def class_counts(self) -> dict[str, int]:
        """How many current answers hold each class, in the session's order."""
        counts = dict.fromkeys(self.classes, 0)
        for a in self.answers:
            for k in a.answer_classes or ():
                counts[self.classes[k]] += 1
        return counts

    @property
    def n_none(self) -> int:
        """Answers with none of the classes."""
        return sum(a.answer_classes == () for a in self.answers)

    def _members(self, a: ClassAnswer) -> tuple[int, ...]:
        """The classes an answer holds (none of these: none)."""
        assert a.answer_classes is not None
        return a.answer_classes

    @staticmethod
    def _hits(member: np.ndarray, F: np.ndarray) -> np.ndarray:
        """Per rated answer, the share of its yes / no per class that the sign of the class's score when asked
        agreed with (``history``: ``ClassesRun.history``'s columns, the AUC of class k against whether the
        answer held k)."""
        return np.mean((F > 0) == member, axis=1)

    def confusion(self) -> pd.DataFrame:
        """Per class (rows), the answers the model could rate by your answer and the model's call when it asked
        (score above 0): both yes, you yes and the model no, you no and the model yes, both no."""
        table = pd.DataFrame(0, index=list(self.classes), columns=list(AGREEMENT_COLUMNS))
        for _, member, scores in self._rated():
            said = scores > 0
            for k in range(len(self.classes)):
                column = AGREEMENT_COLUMNS[(0 if member[k] else 2) + (0 if said[k] else 1)]
                table.iloc[k, AGREEMENT_COLUMNS.index(column)] += 1
        table.index.name = "class"
        return table

    # -- what is for one class per item only --------------------------------------------------------
    def mark_known(self, item_index: int, answer_class: Any, *, by: Identity | None = None) -> Outcome:
        """Known items are one class each: refused plainly in a multi-label session, nothing stored."""
        return self.tell(Outcome(False, NOT_FOR_SETS.format(what="Marking known items"), "warning"))

    def import_labels(self, *args: Any, **kwargs: Any) -> Outcome:
        """Labels from a file name one class each: refused plainly in a multi-label session, nothing stored."""
        return self.tell(Outcome(False, NOT_FOR_SETS.format(what="Importing labels from a file"), "warning"))


__all__ = [
    "AGREEMENT_COLUMNS",
    "CLASS_SET_COLD_START",
    "NONE_WORDS",
    "MultiLabelRun",
    "can_rate",
    "class_places",
    "cold_start_words",
    "set_words",
    "why_set_chosen",
]
