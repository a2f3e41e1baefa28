"""Labels: record, undo, and read a session's events (each answer as it stands after corrections)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from storage.errors import (
    DuplicateLabelError,
    InvalidLabelError,
    NotFoundError,
)
from storage.models import (
    LABEL_PROVENANCE_COLUMNS,
    LABEL_VALUES,
    Annotator,
    Dataset,
    Item,
    Label,
    LabelCorrection,
    LabellingSession,
    ModelSnapshot,
    utc_now,
)
from storage.repository.annotators import _annotator_id, _annotator_name
from storage.repository.common import EngineLike, _non_empty, _optional_float, reading, writing
from storage.repository.sessions import _active_session_row, _check_open


@dataclass(frozen=True)
class LabelEvent:
    label_id: int
    session_id: int
    item_index: int
    value: int  # +1, -1, or 0 for a skip
    annotator: str
    created_at: dt.datetime
    strategy: str
    solver: str
    decision_value: float | None
    model_version: int
    update_ms: float | None
    query_ms: float | None
    undone_at: dt.datetime | None = None
    #: in a session with named classes: the class answered as it stands (its place among the session's
    #: classes; ``value`` is 1), None for a skip and in a two-class session
    answer_class: int | None = None
    #: in a multi-label session: the classes answered as they stand (their places among the session's classes,
    #: in order; () for none of them; ``value`` is 1), None for a skip and in the other sessions
    answer_classes: tuple[int, ...] | None = None

    @property
    def is_skip(self) -> bool:
        return self.value == 0


def answer_columns(
    value: int,
    strategy: str,
    solver: str,
    decision_value: float | None,
    model_version: int,
    update_ms: float | None,
    query_ms: float | None,
    answer_class: int | None = None,
    answer_classes: Any = None,
) -> dict[str, Any]:
    """A label's own columns, checked (``InvalidLabelError`` otherwise), stored and returned alike: what a
    session's label (``record_label``) and a project member's answer (``teams.record_answer``) hold."""
    answer: dict[str, Any] = dict(
        value=value,
        created_at=utc_now(),
        strategy=_non_empty(strategy, "strategy"),
        solver=_non_empty(solver, "solver"),
        decision_value=_optional_float(decision_value, "decision_value"),
        model_version=int(model_version),
        update_ms=_optional_float(update_ms, "update_ms"),
        query_ms=_optional_float(query_ms, "query_ms"),
    )
    if answer_class is not None:
        answer["answer_class"] = _class_index(answer_class)
    if answer_classes is not None:
        answer["answer_classes"] = class_set(answer_classes)
    return answer


def record_label(
    engine: EngineLike,
    session_id: int,
    *,
    item_index: int,
    value: int,
    annotator: str,
    strategy: str,
    solver: str,
    decision_value: float | None = None,
    model_version: int = 0,
    update_ms: float | None = None,
    query_ms: float | None = None,
    answer_class: int | None = None,
    answer_classes: Any = None,
) -> LabelEvent:
    """Record +1, -1 or 0 (skip) for an item; committed when this returns.

    In a session with named classes (its settings' ``classes``) an answer is ``value=1`` with
    ``answer_class`` (the class's place among them), or a skip (``value=0``, no class); a two-class
    session's answers have no class. In a multi-label session (its settings' ``multi_label``) an answer is
    ``value=1`` with ``answer_classes``, the places of any of its classes (empty: none of them), or a skip.
    Anything else raises ``InvalidLabelError``, before any write.

    Raises ``DuplicateLabelError`` when the item already has an active label in
    the session (a double submit), ``SessionClosedError`` for a closed session.
    """
    value = _label_value(value)
    item_index = _item_index(item_index)
    annotator = _annotator_name(annotator)
    answer = answer_columns(
        value, strategy, solver, decision_value, model_version, update_ms, query_ms, answer_class, answer_classes
    )
    now = answer["created_at"]
    try:
        with writing(engine) as session:
            # one statement finds the session, checks it is open and finds the item
            target = session.execute(
                select(
                    LabellingSession.status,
                    LabellingSession.dataset_id,
                    LabellingSession.solver_params,
                    Item.id.label("item_id"),
                )
                .outerjoin(Item, (Item.dataset_id == LabellingSession.dataset_id) & (Item.position == item_index))
                .where(LabellingSession.id == session_id)
            ).first()
            _check_open(session_id, None if target is None else target.status)
            assert target is not None  # (_check_open refused a missing session)
            check_answer(
                session_classes(target.solver_params),
                value,
                answer_class,
                answer.get("answer_classes"),
                multi_label=session_multi_label(target.solver_params),
            )
            if target.item_id is None:
                _item_id(session, target.dataset_id, item_index)  # raises, naming the valid range
            # a second active label for the item violates the partial unique index
            label_id = session.execute(
                insert(Label)
                .values(
                    session_id=session_id,
                    item_id=target.item_id,
                    annotator_id=_annotator_id(session, annotator),
                    **{k: class_bits(v) if k == "answer_classes" else v for k, v in answer.items()},
                )
                .returning(Label.id)
            ).scalar_one()
            session.execute(update(LabellingSession).where(LabellingSession.id == session_id).values(updated_at=now))
    except IntegrityError:
        # most likely a double submit: say so plainly (nothing was written)
        with reading(engine) as session:
            dataset_id = session.execute(
                select(LabellingSession.dataset_id).where(LabellingSession.id == session_id)
            ).scalar_one()
            _raise_if_labelled(session, session_id, _item_id(session, dataset_id, item_index), item_index)
        raise
    return LabelEvent(label_id=label_id, session_id=session_id, item_index=item_index, annotator=annotator, **answer)


def _class_index(answer_class: Any) -> int:
    if isinstance(answer_class, bool | np.bool_) or not isinstance(answer_class, int | np.integer):
        raise InvalidLabelError(f"A class is given by its place among the session's classes, got {answer_class!r}.")
    return int(answer_class)


def session_classes(params: Any) -> tuple[str, ...]:
    """The class names a session's stored settings name (() for a two-class session)."""
    classes = (params or {}).get("classes") if isinstance(params, dict) else None
    return tuple(str(c) for c in classes) if isinstance(classes, list) else ()


def session_multi_label(params: Any) -> bool:
    """Whether a session's stored settings make it multi-label (any set of its classes per answer)."""
    return isinstance(params, dict) and params.get("multi_label") is True


def class_set(answer_classes: Any) -> tuple[int, ...]:
    """A multi-label answer (class places) as a sorted tuple; anything else raises ``InvalidLabelError``."""
    if isinstance(answer_classes, (str, bytes)) or not isinstance(answer_classes, (list, tuple, set, frozenset)):
        raise InvalidLabelError(
            f"A multi-label answer is a set of the session's classes (their places), got {answer_classes!r}."
        )
    places = [_class_index(k) for k in answer_classes]
    if len(set(places)) != len(places):
        raise InvalidLabelError(f"A multi-label answer names each class once, got {list(answer_classes)!r}.")
    return tuple(sorted(places))


def class_bits(places: tuple[int, ...] | None) -> int | None:
    """A multi-label answer as stored: bit k for class k (0: none of them); None for none given."""
    return None if places is None else sum(1 << k for k in places)


def bits_classes(bits: int | None) -> tuple[int, ...] | None:
    """The stored bits of a multi-label answer as its class places (``class_bits`` inverted)."""
    return None if bits is None else tuple(k for k in range(int(bits).bit_length()) if bits >> k & 1)


def check_answer(
    classes: tuple[str, ...],
    value: int,
    answer_class: int | None,
    answer_classes: tuple[int, ...] | None = None,
    *,
    multi_label: bool = False,
    what: str = "session",
) -> None:
    """Refuse an answer that does not fit the session (or project: ``what``): a class in a two-class one, +1 /
    -1 or a class outside its classes in one with named classes, a single class or a class outside them in
    a multi-label session, a set of classes in the others."""
    if multi_label:
        _check_multi_label_answer(classes, value, answer_class, answer_classes, what)
        return
    if answer_classes is not None:
        raise InvalidLabelError(
            f"This {what} takes one answer per item"
            + (f" (one of its classes: {', '.join(classes)})" if classes else " (+1 / -1)")
            + ", not a set of classes; nothing was recorded."
        )
    if not classes:
        if answer_class is not None:
            raise InvalidLabelError(f"This {what} has two classes (+1 / -1): an answer has no named class.")
        return
    if value == 0:
        if answer_class is not None:
            raise InvalidLabelError("A skip has no class.")
        return
    if value != 1 or answer_class is None:
        raise InvalidLabelError(
            f"This {what}'s answers are one of its classes ({', '.join(classes)}) or a skip, not {value:+d}."
        )
    if not 0 <= answer_class < len(classes):
        raise InvalidLabelError(
            f"Class number {answer_class} is not one of the {what}'s {len(classes)} classes ({', '.join(classes)})."
        )


def _check_multi_label_answer(
    classes: tuple[str, ...],
    value: int,
    answer_class: int | None,
    answer_classes: tuple[int, ...] | None,
    what: str = "session",
) -> None:
    if answer_class is not None:
        raise InvalidLabelError(
            f"This {what} is multi-label: an answer is a set of its classes ({', '.join(classes)}), not one class; "
            "nothing was recorded."
        )
    if value == 0:
        if answer_classes is not None:
            raise InvalidLabelError("A skip has no class.")
        return
    if value != 1 or answer_classes is None:
        raise InvalidLabelError(
            f"This {what}'s answers are a set of its classes ({', '.join(classes)}; none of them is an answer "
            f"too) or a skip, not {value:+d}."
        )
    outside = [k for k in answer_classes if not 0 <= k < len(classes)]
    if outside:
        raise InvalidLabelError(
            f"Class number {outside[0]} is not one of the {what}'s {len(classes)} classes ({', '.join(classes)})."
        )


def _label_value(value: Any) -> int:
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer | float):
        raise InvalidLabelError(f"A label must be +1, -1 or 0 (skip), got {value!r}.")
    if value not in LABEL_VALUES:
        raise InvalidLabelError(f"A label must be +1, -1 or 0 (skip), got {value!r}.")
    return int(value)


def _item_index(item_index: Any) -> int:
    if isinstance(item_index, bool | np.bool_) or not isinstance(item_index, int | np.integer):
        raise InvalidLabelError(f"An item index must be an integer, got {item_index!r}.")
    return int(item_index)


def _item_id(session: Session, dataset_id: int, item_index: int) -> int:
    item_id = session.execute(
        select(Item.id).where(Item.dataset_id == dataset_id, Item.position == item_index)
    ).scalar()
    if item_id is None:
        n_items = session.execute(select(Dataset.n_rows).where(Dataset.id == dataset_id)).scalar()
        raise InvalidLabelError(
            f"Item {item_index} does not exist: dataset {dataset_id} has items 0 to {(n_items or 0) - 1}."
        )
    return item_id


def _raise_if_labelled(session: Session, session_id: int, item_id: int, item_index: int) -> None:
    existing = session.execute(
        select(Label.id, Label.value).where(
            Label.session_id == session_id, Label.item_id == item_id, Label.undone_at.is_(None)
        )
    ).first()
    if existing is not None:
        answer = {1: "positive", -1: "negative", 0: "skipped"}[existing.value]
        raise DuplicateLabelError(
            f"Item {item_index} already has a label in session {session_id} "
            f"({answer}, label {existing.id}); undo it first to change it.",
            session_id=session_id,
            item_index=item_index,
            label_id=existing.id,
        )


def undo_last_label(engine: EngineLike, session_id: int, *, label_id: int | None = None) -> LabelEvent | None:
    """Mark the session's most recent active label as undone; return it (None if none).

    The row stays (with ``undone_at`` set) for the audit trail. Snapshots that
    reflected it are deleted.

    ``label_id``: undo only if that label is still the session's most recent
    active one. A repeated or stale Undo (a double click, a second tab that
    has not seen the first Undo) then changes nothing and returns None, in the
    same transaction as the check, instead of undoing the label before it.
    """
    with writing(engine) as session:
        _active_session_row(session, session_id)
        last_id = session.execute(
            select(func.max(Label.id)).where(Label.session_id == session_id, Label.undone_at.is_(None))
        ).scalar()
        if last_id is None or (label_id is not None and last_id != label_id):
            return None
        now = utc_now()
        session.execute(update(Label).where(Label.id == last_id).values(undone_at=now))
        remaining = _count_active_events(session, session_id)
        session.execute(
            delete(ModelSnapshot).where(ModelSnapshot.session_id == session_id, ModelSnapshot.n_events > remaining)
        )
        session.execute(update(LabellingSession).where(LabellingSession.id == session_id).values(updated_at=now))
        row = session.execute(events_query().where(Label.id == last_id)).one()
        return _label_event(row)


#: ``LabelEvent`` fields that are columns of ``Label`` under the same name
EVENT_LABEL_FIELDS = (
    "value",
    "created_at",
    *LABEL_PROVENANCE_COLUMNS,
    "undone_at",
    "answer_class",
    "answer_classes",
)


def _as_it_stands(changed_column: Any, given_column: Any) -> Any:
    """A column of the label as it stands: its newest change's (``label_corrections``), else as it was given."""
    changed = (
        select(changed_column)
        .where(LabelCorrection.label_id == Label.id, LabelCorrection.new_value.is_not(None))
        .order_by(LabelCorrection.id.desc())
        .limit(1)
        .correlate(Label)
        .scalar_subquery()
    )
    return func.coalesce(changed, given_column)


def current_value() -> Any:
    """The label's answer as it stands: its newest change (``label_corrections``), else as it was given."""
    return _as_it_stands(LabelCorrection.new_value, Label.value)


def current_class() -> Any:
    """The label's class as it stands (sessions with named classes): its newest change's, else as given."""
    return _as_it_stands(LabelCorrection.new_class, Label.answer_class)


def current_classes() -> Any:
    """The label's set of classes as it stands, as bits (multi-label sessions): its newest change's, else as
    given."""
    return _as_it_stands(LabelCorrection.new_classes, Label.answer_classes)


#: the event columns read as they stand (after corrections)
_AS_IT_STANDS = {"value": current_value, "answer_class": current_class, "answer_classes": current_classes}


def events_query() -> Any:
    """Select every label event with its item index and annotator name (rows for ``_label_event``).

    ``value`` is the answer as it stands (a changed label gives its newest value;
    ``Label.value`` keeps the answer as it was given). Add ``where``/``order_by``
    clauses, or further columns and joins (the export does).
    """
    return (
        select(
            Label.id,
            Label.session_id,
            Item.position,
            Annotator.name,
            *(
                _AS_IT_STANDS[name]().label(name) if name in _AS_IT_STANDS else getattr(Label, name)
                for name in EVENT_LABEL_FIELDS
            ),
        )
        .join(Item, Item.id == Label.item_id)
        .join(Annotator, Annotator.id == Label.annotator_id)
    )


def _label_event(row: Any) -> LabelEvent:
    return LabelEvent(
        label_id=row.id,
        session_id=row.session_id,
        item_index=row.position,
        annotator=row.name,
        **_event_fields(row),
    )


def _event_fields(row: Any) -> dict[str, Any]:
    """The ``EVENT_LABEL_FIELDS`` of an events row (a multi-label answer's bits as its class places)."""
    return {
        name: bits_classes(getattr(row, name)) if name == "answer_classes" else getattr(row, name)
        for name in EVENT_LABEL_FIELDS
    }


def label_events(
    engine: EngineLike,
    session_id: int,
    include_skips: bool = True,
    include_undone: bool = False,
) -> list[LabelEvent]:
    """The session's label events in the order they were given.

    By default only active (not undone) events; ``include_undone=True`` gives
    the full audit trail.
    """
    query = events_query().where(Label.session_id == session_id)
    if not include_undone:
        query = query.where(Label.undone_at.is_(None))
    if not include_skips:
        query = query.where(Label.value != 0)
    with reading(engine) as session:
        if session.get(LabellingSession, session_id) is None:
            raise NotFoundError(f"Session {session_id} does not exist.")
        rows = session.execute(query.order_by(Label.id)).all()
    return [_label_event(row) for row in rows]


def labelled_items(engine: EngineLike, session_id: int) -> dict[int, int]:
    """``{item_index: value}`` of the session's active events (skips as 0)."""
    return {event.item_index: event.value for event in label_events(engine, session_id)}


def _count_active_events(session: Session, session_id: int) -> int:
    return session.execute(
        select(func.count()).where(Label.session_id == session_id, Label.undone_at.is_(None))
    ).scalar_one()
