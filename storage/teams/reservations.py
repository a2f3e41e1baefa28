"""Item reservations: the item a member holds while answering it, until it expires."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import delete, insert, select
from sqlalchemy.exc import IntegrityError

from storage.errors import NotFoundError
from storage.models import (
    Annotator,
    Item,
    ItemReservation,
    Project,
    utc_now,
)
from storage.repository.annotators import _annotator_name
from storage.repository.common import EngineLike, reading, writing
from storage.repository.labels import _item_id, _item_index
from storage.teams.projects import _member


def reserve_item(engine: EngineLike, project_id: int, *, annotator: str, item_index: int, seconds: int) -> bool:
    """Hand an item to a member until ``seconds`` from now; False when someone else holds it.

    Expired reservations are cleared first; the member's previous reservation ends.
    """
    annotator = _annotator_name(annotator)
    now = utc_now()
    with writing(engine) as session:
        project = session.get(Project, int(project_id))
        if project is None:
            raise NotFoundError(f"Project {project_id} does not exist.")
        annotator_id, _ = _member(session, project, annotator)
        item_id = _item_id(session, project.dataset_id, _item_index(item_index))
        session.execute(
            delete(ItemReservation).where(
                ItemReservation.project_id == project.id,
                (ItemReservation.expires_at <= now) | (ItemReservation.annotator_id == annotator_id),
            )
        )
        try:
            with session.begin_nested():
                session.execute(
                    insert(ItemReservation).values(
                        project_id=project.id,
                        item_id=item_id,
                        annotator_id=annotator_id,
                        expires_at=now + dt.timedelta(seconds=int(seconds)),
                        created_at=now,
                    )
                )
        except IntegrityError:
            return False
        return True


def reservation_of(engine: EngineLike, project_id: int, annotator: str) -> int | None:
    """The item a member holds (not expired), or None."""
    with reading(engine) as session:
        return session.execute(
            select(Item.position)
            .join(ItemReservation, ItemReservation.item_id == Item.id)
            .join(Annotator, Annotator.id == ItemReservation.annotator_id)
            .where(
                ItemReservation.project_id == int(project_id),
                Annotator.name == annotator.strip(),
                ItemReservation.expires_at > utc_now(),
            )
        ).scalar()


def reserved_items(engine: EngineLike, project_id: int, *, except_annotator: str | None = None) -> dict[int, str]:
    """``{item index: holder}`` of the project's reservations that have not expired."""
    query = (
        select(Item.position, Annotator.name)
        .join(ItemReservation, ItemReservation.item_id == Item.id)
        .join(Annotator, Annotator.id == ItemReservation.annotator_id)
        .where(ItemReservation.project_id == int(project_id), ItemReservation.expires_at > utc_now())
    )
    if except_annotator is not None:
        query = query.where(Annotator.name != except_annotator.strip())
    with reading(engine) as session:
        return {row.position: row.name for row in session.execute(query).all()}


def release_reservation(engine: EngineLike, project_id: int, annotator: str) -> None:
    with writing(engine) as session:
        annotator_id = session.execute(select(Annotator.id).where(Annotator.name == annotator.strip())).scalar()
        if annotator_id is not None:
            session.execute(
                delete(ItemReservation).where(
                    ItemReservation.project_id == int(project_id), ItemReservation.annotator_id == annotator_id
                )
            )
