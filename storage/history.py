"""Label history and session housekeeping: corrections of earlier labels, labels brought in
from elsewhere, session names, and what deleting a dataset removes.

A correction never overwrites the label as it was given. A **change** (+1 to -1
or back) adds a ``label_corrections`` row and leaves the label's row as it is;
the session's events (``repository.label_events``) read the newest change. A
**removal** adds a ``label_corrections`` row and takes the label back as undo
does (``labels.undone_at``), so that the item can be asked about and labelled
again. A skip can be removed, not changed (a change keeps the numbers of labels
and skips as they are). Each correction says who made it and when.

Snapshots of the model that reflected the label as it was are deleted in the
same transaction: a session resumes from an older snapshot, or from the one
the app stores right after the correction.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from storage.errors import DuplicateLabelError, InvalidLabelError, NotFoundError, StorageError
from storage.models import (
    Annotator,
    ComparisonResult,
    Dataset,
    Item,
    Label,
    LabelCorrection,
    LabellingSession,
    ModelSnapshot,
    utc_now,
)
from storage.repository.annotators import _annotator_id, _annotator_name
from storage.repository.common import EngineLike, _non_empty, reading, writing
from storage.repository.labels import (
    LabelEvent,
    _class_index,
    _item_index,
    _label_event,
    _label_value,
    bits_classes,
    check_answer,
    class_bits,
    class_set,
    current_class,
    current_classes,
    current_value,
    events_query,
    session_classes,
    session_multi_label,
)
from storage.repository.sessions import _active_session_row
from storage.validation import rowcount, storable_text, text_length

ANSWER_NAMES = {1: "positive", -1: "negative", 0: "skipped"}


@dataclass(frozen=True)
class LabelCorrectionInfo:
    """One change or removal of a label."""

    id: int
    label_id: int
    session_id: int
    item_index: int
    kind: str  # "change" or "remove"
    old_value: int  # the answer just before (+1, -1, or 0 for a skip)
    new_value: int | None  # the answer after a change; None for a removal
    annotator: str  # who made it
    created_at: dt.datetime
    #: the label's place among the session's current events just before the correction (0-based)
    position: int
    #: in a session with named classes: the class just before (None: a skip) and after a change
    old_class: int | None = None
    new_class: int | None = None
    #: in a multi-label session: the set of classes (their places) just before (None: a skip) and after a change
    old_classes: tuple[int, ...] | None = None
    new_classes: tuple[int, ...] | None = None


def change_label(
    engine: EngineLike,
    session_id: int,
    label_id: int,
    *,
    value: int,
    annotator: str,
    answer_class: int | None = None,
    answer_classes: Any = None,
) -> LabelCorrectionInfo:
    """Change an earlier label of an open session to ``value`` (+1 or -1); committed when this returns.
    In a session with named classes: to ``value=1`` and ``answer_class`` (another of its classes); in a
    multi-label session to ``value=1`` and ``answer_classes`` (another set of its classes, maybe empty).

    Raises ``InvalidLabelError`` for a skip (remove it instead), for a value
    other than +1/-1 and for the value the label already has (a repeated
    click changes nothing); ``StorageError`` when the label is not one of the
    session's current labels (undone or removed meanwhile);
    ``SessionClosedError`` for a closed session.
    """
    value = _label_value(value)
    if value == 0:
        raise InvalidLabelError("A label can be changed to +1 or -1; to take it back, remove it.")
    return _correct(
        engine,
        session_id,
        label_id,
        kind="change",
        value=value,
        annotator=annotator,
        answer_class=None if answer_class is None else _class_index(answer_class),
        answer_classes=None if answer_classes is None else class_set(answer_classes),
    )


def remove_label(engine: EngineLike, session_id: int, label_id: int, *, annotator: str) -> LabelCorrectionInfo:
    """Remove an earlier label or skip of an open session (the item can be labelled again)."""
    return _correct(engine, session_id, label_id, kind="remove", value=None, annotator=annotator)


def _correct(
    engine: EngineLike,
    session_id: int,
    label_id: int,
    *,
    kind: str,
    value: int | None,
    annotator: str,
    answer_class: int | None = None,
    answer_classes: tuple[int, ...] | None = None,
) -> LabelCorrectionInfo:
    annotator = _annotator_name(annotator)
    label_id = int(label_id)
    with writing(engine) as session:
        row = _active_session_row(session, session_id)  # open, and corrections of one session take turns
        classes = session_classes(row.solver_params)
        if kind == "change":
            check_answer(
                classes,
                int(value or 0),
                answer_class,
                answer_classes,
                multi_label=session_multi_label(row.solver_params),
            )
        label = session.execute(
            select(
                Label.id,
                Label.undone_at,
                Item.position,
                current_value().label("value"),
                current_class().label("answer_class"),
                current_classes().label("answer_classes"),
            )
            .join(Item, Item.id == Label.item_id)
            .where(Label.id == label_id, Label.session_id == session_id)
        ).first()
        if label is None:
            raise NotFoundError(f"Label {label_id} is not a label of session {session_id}.")
        if label.undone_at is not None:
            raise StorageError(f"Label {label_id} (item {label.position}) was undone or removed; nothing was changed.")
        old = int(label.value)
        old_class = label.answer_class
        old_classes = bits_classes(label.answer_classes)
        new_classes = answer_classes if kind == "change" else None
        if kind == "change":
            if old == 0:
                raise InvalidLabelError(f"Item {label.position} was skipped: a skip can be removed, not changed.")
            if classes and answer_class is not None and old_class == answer_class:
                raise InvalidLabelError(
                    f"Item {label.position} is already {classes[answer_class]!r}; nothing was changed."
                )
            if answer_classes is not None and old_classes == answer_classes:
                names = ", ".join(repr(classes[k]) for k in answer_classes) or "none of the classes"
                raise InvalidLabelError(f"Item {label.position} is already {names}; nothing was changed.")
            if not classes and old == value:
                raise InvalidLabelError(f"Item {label.position} is already {ANSWER_NAMES[old]}; nothing was changed.")
        position = session.execute(
            select(func.count()).where(Label.session_id == session_id, Label.undone_at.is_(None), Label.id < label_id)
        ).scalar_one()
        now = utc_now()
        correction_id = session.execute(
            insert(LabelCorrection)
            .values(
                label_id=label_id,
                session_id=session_id,
                annotator_id=_annotator_id(session, annotator),
                kind=kind,
                old_value=old,
                new_value=value,
                created_at=now,
                old_class=old_class,
                new_class=answer_class if kind == "change" else None,
                old_classes=class_bits(old_classes),
                new_classes=class_bits(new_classes),
            )
            .returning(LabelCorrection.id)
        ).scalar_one()
        if kind == "remove":
            session.execute(update(Label).where(Label.id == label_id).values(undone_at=now))
        # snapshots that learned the label as it was (it is event number position + 1)
        session.execute(
            delete(ModelSnapshot).where(ModelSnapshot.session_id == session_id, ModelSnapshot.n_events > position)
        )
        session.execute(update(LabellingSession).where(LabellingSession.id == session_id).values(updated_at=now))
    return LabelCorrectionInfo(
        id=correction_id,
        label_id=label_id,
        session_id=session_id,
        item_index=int(label.position),
        kind=kind,
        old_value=old,
        new_value=value,
        annotator=annotator,
        created_at=now,
        position=int(position),
        old_class=old_class,
        new_class=answer_class if kind == "change" else None,
        old_classes=old_classes,
        new_classes=new_classes,
    )


def label_corrections(engine: EngineLike, session_id: int) -> list[LabelCorrectionInfo]:
    """Every correction of the session's labels, oldest first (``position`` is not known afterwards: -1)."""
    with reading(engine) as session:
        if session.get(LabellingSession, session_id) is None:
            raise NotFoundError(f"Session {session_id} does not exist.")
        rows = session.execute(
            select(LabelCorrection, Item.position, Annotator.name)
            .join(Label, Label.id == LabelCorrection.label_id)
            .join(Item, Item.id == Label.item_id)
            .join(Annotator, Annotator.id == LabelCorrection.annotator_id)
            .where(LabelCorrection.session_id == session_id)
            .order_by(LabelCorrection.id)
        ).all()
    return [
        LabelCorrectionInfo(
            id=c.id,
            label_id=c.label_id,
            session_id=c.session_id,
            item_index=int(position),
            kind=c.kind,
            old_value=int(c.old_value),
            new_value=None if c.new_value is None else int(c.new_value),
            annotator=name,
            created_at=c.created_at,
            position=-1,
            old_class=c.old_class,
            new_class=c.new_class,
            old_classes=bits_classes(c.old_classes),
            new_classes=bits_classes(c.new_classes),
        )
        for c, position, name in rows
    ]


def label_history(engine: EngineLike, session_id: int) -> list[LabelEvent]:
    """Every label and skip of the session in the order given, also those undone or removed
    (``undone_at`` set), with ``value`` the answer as it stands (see ``label_corrections``)."""
    with reading(engine) as session:
        if session.get(LabellingSession, session_id) is None:
            raise NotFoundError(f"Session {session_id} does not exist.")
        rows = session.execute(events_query().where(Label.session_id == session_id).order_by(Label.id)).all()
    return [_label_event(row) for row in rows]


def labels_as_given(engine: EngineLike, session_id: int) -> dict[int, int]:
    """``{label_id: value}``: each of the session's labels as it was given, before any change."""
    with reading(engine) as session:
        return dict(session.execute(select(Label.id, Label.value).where(Label.session_id == session_id)).all())


# --------------------------------------------------------------------------- labels from elsewhere


def record_labels(
    engine: EngineLike,
    session_id: int,
    answers: Sequence[tuple[int, int]] | Sequence[tuple[int, int, int | None]],
    *,
    annotator: str,
    strategy: str,
    solver: str,
    model_version: int,
) -> list[LabelEvent]:
    """Record several answers ``(item_index, value)`` at once, all or none; committed when this returns.
    In a session with named classes an answer is ``(item_index, 1, class)`` or a skip ``(item_index, 0, None)``
    (``record_label``'s ``answer_class``).

    For labels given elsewhere (an import): no decision value, ``model_version``
    counting on from ``model_version``. Raises ``DuplicateLabelError`` when an
    item already has an active label in the session or appears twice, and
    ``InvalidLabelError`` for an item that does not exist; nothing is written then.
    """
    given = [
        (_item_index(a[0]), _label_value(a[1]), None if len(a) < 3 or a[2] is None else _class_index(a[2]))
        for a in answers
    ]
    seen: set[int] = set()
    for item_index, _, _ in given:
        if item_index in seen:
            raise DuplicateLabelError(
                f"Item {item_index} appears twice among the labels to record.",
                session_id=session_id,
                item_index=item_index,
                label_id=None,
            )
        seen.add(item_index)
    annotator = _annotator_name(annotator)
    strategy, solver = _non_empty(strategy, "strategy"), _non_empty(solver, "solver")
    now = utc_now()
    try:
        with writing(engine) as session:
            target = _active_session_row(session, session_id)
            for _, value, answer_class in given:
                check_answer(
                    session_classes(target.solver_params),
                    value,
                    answer_class,
                    multi_label=session_multi_label(target.solver_params),
                )
            items = (
                dict(
                    session.execute(
                        select(Item.position, Item.id).where(
                            Item.dataset_id == target.dataset_id, Item.position.in_(sorted(seen))
                        )
                    ).all()
                )
                if seen
                else {}
            )
            missing = sorted(seen - set(items))
            if missing:
                raise InvalidLabelError(f"Items {', '.join(map(str, missing[:10]))} do not exist in the dataset.")
            taken = (
                session.execute(
                    select(Item.position)
                    .join(Label, Label.item_id == Item.id)
                    .where(Label.session_id == session_id, Label.undone_at.is_(None), Item.id.in_(list(items.values())))
                )
                .scalars()
                .all()
                if items
                else []
            )
            if taken:
                raise DuplicateLabelError(
                    f"Items {', '.join(map(str, sorted(taken)[:10]))} already have a label in session {session_id}.",
                    session_id=session_id,
                    item_index=int(min(taken)),
                    label_id=None,
                )
            annotator_id = _annotator_id(session, annotator)
            events = []
            for k, (item_index, value, answer_class) in enumerate(given):
                answer: dict[str, Any] = dict(
                    value=value,
                    created_at=now,
                    strategy=strategy,
                    solver=solver,
                    decision_value=None,
                    model_version=int(model_version) + k,
                    update_ms=None,
                    query_ms=None,
                )
                if answer_class is not None:
                    answer["answer_class"] = answer_class
                label_id = session.execute(
                    insert(Label)
                    .values(session_id=session_id, item_id=items[item_index], annotator_id=annotator_id, **answer)
                    .returning(Label.id)
                ).scalar_one()
                events.append(
                    LabelEvent(
                        label_id=label_id, session_id=session_id, item_index=item_index, annotator=annotator, **answer
                    )
                )
            session.execute(update(LabellingSession).where(LabellingSession.id == session_id).values(updated_at=now))
    except IntegrityError:  # another process labelled one of the items meanwhile: nothing was written
        raise DuplicateLabelError(
            f"An item was labelled in session {session_id} meanwhile; nothing was recorded.",
            session_id=session_id,
            item_index=None,
            label_id=None,
        ) from None
    return events


# --------------------------------------------------------------------------- sessions and datasets


def rename_session(engine: EngineLike, session_id: int, name: str | None) -> None:
    """Give a session a name (``None`` or blank: back to its number)."""
    text = (
        None
        if name is None or not str(name).strip()
        else storable_text(
            str(name).strip(),
            "The session name",
            max_length=text_length(LabellingSession.__table__.c.name),
            error=StorageError,
        )
    )
    with writing(engine) as session:
        changed = rowcount(
            session.execute(update(LabellingSession).where(LabellingSession.id == session_id).values(name=text))
        )
    if not changed:
        raise NotFoundError(f"Session {session_id} does not exist.")


@dataclass(frozen=True)
class DatasetContents:
    """What deleting a dataset removes with it."""

    dataset_id: int
    name: str
    n_items: int
    n_sessions: int
    n_labels: int  # every stored answer of its sessions (labels and skips, undone ones too)
    n_comparisons: int
    annotators: tuple[str, ...]


def dataset_contents(engine: EngineLike, dataset_id: int) -> DatasetContents:
    with reading(engine) as session:
        dataset = session.get(Dataset, dataset_id)
        if dataset is None:
            raise NotFoundError(f"Dataset {dataset_id} does not exist.")
        sessions = select(LabellingSession.id).where(LabellingSession.dataset_id == dataset_id)
        n_sessions = session.execute(select(func.count()).select_from(sessions.subquery())).scalar_one()
        n_labels = session.execute(
            select(func.count()).select_from(Label).where(Label.session_id.in_(sessions))
        ).scalar_one()
        n_comparisons = session.execute(
            select(func.count()).select_from(ComparisonResult).where(ComparisonResult.dataset_id == dataset_id)
        ).scalar_one()
        annotators = (
            session.execute(
                select(Annotator.name)
                .join(LabellingSession, LabellingSession.annotator_id == Annotator.id)
                .where(LabellingSession.dataset_id == dataset_id)
                .distinct()
                .order_by(Annotator.name)
            )
            .scalars()
            .all()
        )
        return DatasetContents(
            dataset_id=dataset_id,
            name=dataset.name,
            n_items=dataset.n_rows,
            n_sessions=int(n_sessions),
            n_labels=int(n_labels),
            n_comparisons=int(n_comparisons),
            annotators=tuple(annotators),
        )
