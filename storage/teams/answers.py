"""A project's answers and settled answers: recorded, undone and settled in turns (the project's row
locked first), and read back with the project's revision."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.orm import Session

from storage.errors import DuplicateLabelError, InvalidLabelError, NotFoundError, StorageError
from storage.models import (
    Adjudication,
    Annotator,
    Item,
    ItemReservation,
    Label,
    LabellingSession,
    Project,
    ProjectMember,
    utc_now,
)
from storage.repository.annotators import _annotator_id, _annotator_name
from storage.repository.common import EngineLike, reading, writing
from storage.repository.labels import (
    LabelEvent,
    _class_index,
    _item_id,
    _item_index,
    _label_event,
    _label_value,
    answer_columns,
    bits_classes,
    check_answer,
    class_bits,
    class_set,
    events_query,
    session_classes,
    session_multi_label,
)
from storage.teams.projects import _locked_project, _member, answers_needed
from storage.validation import storable_text


class ItemTakenError(StorageError):
    """The item has all the answers the project asks for (another annotator answered it)."""


@dataclass(frozen=True)
class ProjectAnswer:
    """One active answer of a project member (skips included, as value 0); in a project with named classes
    ``answer_class`` is the class answered (its place among the project's classes; None for a skip), in a
    multi-label project ``answer_classes`` the classes answered (their places in order; () for none of them;
    None for a skip)."""

    label_id: int
    item_index: int
    annotator: str
    value: int
    session_id: int
    created_at: dt.datetime
    answer_class: int | None = None
    answer_classes: tuple[int, ...] | None = None


@dataclass(frozen=True)
class Settlement:
    item_index: int
    value: int
    settled_by: str | None
    note: str
    created_at: dt.datetime
    answer_class: int | None = None  # the class settled on, in a project with named classes
    answer_classes: tuple[int, ...] | None = None  # the classes settled on, in a multi-label project


def _answers_query(project_id: int) -> Any:
    return (
        select(
            Label.id,
            Item.position,
            Annotator.name,
            Label.value,
            Label.session_id,
            Label.created_at,
            Label.answer_class,
            Label.answer_classes,
        )
        .join(ProjectMember, ProjectMember.session_id == Label.session_id)
        .join(Item, Item.id == Label.item_id)
        .join(Annotator, Annotator.id == Label.annotator_id)
        .where(ProjectMember.project_id == int(project_id), Label.undone_at.is_(None))
    )


def project_answers(
    engine: EngineLike, project_id: int, *, after_label_id: int | None = None
) -> tuple[tuple[int, int], list[ProjectAnswer]]:
    """The project's ``(revision, edits)`` and its active answers (after ``after_label_id``), in label order.

    Read in one transaction, so the answers are exactly those of that revision.
    """
    query = _answers_query(project_id)
    if after_label_id is not None:
        query = query.where(Label.id > int(after_label_id))
    with reading(engine) as session:
        row = session.execute(select(Project.revision, Project.edits).where(Project.id == int(project_id))).first()
        if row is None:
            raise NotFoundError(f"Project {project_id} does not exist.")
        rows = session.execute(query.order_by(Label.id)).all()
    answers = [
        ProjectAnswer(
            label_id=r.id,
            item_index=r.position,
            annotator=r.name,
            value=int(r.value),
            session_id=r.session_id,
            created_at=r.created_at,
            answer_class=r.answer_class,
            answer_classes=bits_classes(r.answer_classes),
        )
        for r in rows
    ]
    return (int(row.revision), int(row.edits)), answers


def settlements(engine: EngineLike, project_id: int) -> dict[int, Settlement]:
    """``{item index: settled answer}`` of a project."""
    with reading(engine) as session:
        rows = session.execute(
            select(
                Item.position,
                Adjudication.value,
                Adjudication.answer_class,
                Adjudication.answer_classes,
                Annotator.name,
                Adjudication.note,
                Adjudication.created_at,
            )
            .join(Item, Item.id == Adjudication.item_id)
            .outerjoin(Annotator, Annotator.id == Adjudication.annotator_id)
            .where(Adjudication.project_id == int(project_id))
        ).all()
    return {
        r.position: Settlement(
            r.position, int(r.value), r.name, r.note, r.created_at, r.answer_class, bits_classes(r.answer_classes)
        )
        for r in rows
    }


def _bump(session: Session, project: Project, *, edit: bool) -> None:
    now = utc_now()
    values: dict[str, Any] = {"revision": Project.revision + 1, "updated_at": now}
    if edit:
        values["edits"] = Project.edits + 1
    session.execute(update(Project).where(Project.id == project.id).values(**values))


def record_answer(
    engine: EngineLike,
    project_id: int,
    *,
    annotator: str,
    item_index: int,
    value: int,
    strategy: str,
    solver: str,
    decision_value: float | None = None,
    model_version: int = 0,
    update_ms: float | None = None,
    query_ms: float | None = None,
    answer_class: int | None = None,
    answer_classes: Any = None,
) -> LabelEvent:
    """Store a member's answer (+1, -1, or 0 to skip) to an item of the project; committed when this returns.
    In a project with named classes (``params["classes"]``) an answer is ``value=1`` with ``answer_class``
    (the class's place among them) or a skip; in a multi-label one (``params["multi_label"]``) ``value=1``
    with ``answer_classes`` (the places of any of its classes; empty: none of them) or a skip; a yes / no
    project's answers have no class (``InvalidLabelError`` otherwise, with nothing written).

    Refused, with nothing written: an item that already has every answer the project
    asks for (``ItemTakenError``: someone else answered it), an item this member has
    answered (``DuplicateLabelError``), a closed project, someone who is not a member.
    The member's reservation ends with the answer.
    """
    value = _label_value(value)
    item_index = _item_index(item_index)
    annotator = _annotator_name(annotator)
    answer = answer_columns(
        value, strategy, solver, decision_value, model_version, update_ms, query_ms, answer_class, answer_classes
    )
    now = answer["created_at"]
    with writing(engine) as session:
        project = _locked_project(session, project_id)
        if project.status != "active":
            raise StorageError(f"Project '{project.name}' is closed; it takes no more answers.")
        check_answer(
            session_classes(project.params),
            value,
            answer_class,
            answer.get("answer_classes"),
            multi_label=session_multi_label(project.params),
            what="project",
        )
        annotator_id, session_id = _member(session, project, annotator)
        item_id = _item_id(session, project.dataset_id, item_index)
        mine = session.execute(
            select(Label.value).where(
                Label.session_id == session_id, Label.item_id == item_id, Label.undone_at.is_(None)
            )
        ).first()
        if mine is not None:
            raise DuplicateLabelError(
                f"Item {item_index} already has your answer in project '{project.name}'; undo it first to change it.",
                session_id=session_id,
                item_index=item_index,
                label_id=None,
            )
        given = session.execute(
            select(func.count())
            .select_from(Label)
            .join(ProjectMember, ProjectMember.session_id == Label.session_id)
            .where(
                ProjectMember.project_id == project.id,
                Label.item_id == item_id,
                Label.undone_at.is_(None),
                Label.value != 0,
            )
        ).scalar_one()
        if given >= answers_needed(project, item_index):
            raise ItemTakenError(
                f"Item {item_index} was answered by another annotator meanwhile; nothing was recorded."
            )
        label_id = session.execute(
            insert(Label)
            .values(
                session_id=session_id,
                item_id=item_id,
                annotator_id=annotator_id,
                **{k: class_bits(v) if k == "answer_classes" else v for k, v in answer.items()},
            )
            .returning(Label.id)
        ).scalar_one()
        session.execute(
            delete(ItemReservation).where(
                ItemReservation.project_id == project.id, ItemReservation.annotator_id == annotator_id
            )
        )
        session.execute(update(LabellingSession).where(LabellingSession.id == session_id).values(updated_at=now))
        _bump(session, project, edit=False)
    return LabelEvent(label_id=label_id, session_id=session_id, item_index=item_index, annotator=annotator, **answer)


def undo_answer(engine: EngineLike, project_id: int, *, annotator: str, label_id: int) -> LabelEvent | None:
    """Undo a member's answer ``label_id`` if it is still their most recent active one; else None, changing nothing."""
    annotator = _annotator_name(annotator)
    with writing(engine) as session:
        project = _locked_project(session, project_id)
        if project.status != "active":
            raise StorageError(f"Project '{project.name}' is closed; its answers stay as they are.")
        _, session_id = _member(session, project, annotator)
        last_id = session.execute(
            select(func.max(Label.id)).where(Label.session_id == session_id, Label.undone_at.is_(None))
        ).scalar()
        if last_id is None or last_id != int(label_id):
            return None
        now = utc_now()
        session.execute(update(Label).where(Label.id == last_id).values(undone_at=now))
        session.execute(update(LabellingSession).where(LabellingSession.id == session_id).values(updated_at=now))
        _bump(session, project, edit=True)
        return _label_event(session.execute(events_query().where(Label.id == last_id)).one())


def settle(
    engine: EngineLike,
    project_id: int,
    *,
    item_index: int,
    value: int,
    settled_by: str,
    note: str = "",
    answer_class: int | None = None,
    answer_classes: Any = None,
) -> None:
    """Store (or replace) the settled answer of an item: +1 or -1, or in a project with named classes
    ``value=1`` and ``answer_class``, in a multi-label one ``value=1`` and ``answer_classes`` (a set of its
    classes' places; empty: none of them) (``InvalidLabelError`` for anything else, with nothing written)."""
    value = _label_value(value)
    if value == 0:
        raise InvalidLabelError("A settled answer is +1 or -1, not a skip.")
    if answer_class is not None:
        answer_class = _class_index(answer_class)
    if answer_classes is not None:
        answer_classes = class_set(answer_classes)
    item_index = _item_index(item_index)
    settled_by = _annotator_name(settled_by)
    note = storable_text(str(note or ""), "The note", error=StorageError)
    with writing(engine) as session:
        project = _locked_project(session, project_id)
        check_answer(
            session_classes(project.params),
            value,
            answer_class,
            answer_classes,
            multi_label=session_multi_label(project.params),
            what="project",
        )
        item_id = _item_id(session, project.dataset_id, item_index)
        by = _annotator_id(session, settled_by)
        session.execute(
            delete(Adjudication).where(Adjudication.project_id == project.id, Adjudication.item_id == item_id)
        )
        session.add(
            Adjudication(
                project_id=project.id,
                item_id=item_id,
                value=value,
                answer_class=answer_class,
                answer_classes=class_bits(answer_classes),
                annotator_id=by,
                note=note,
            )
        )
        session.flush()
        _bump(session, project, edit=True)
