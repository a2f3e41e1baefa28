"""Annotators: the names that give labels, created the first time they are used."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from storage.errors import (
    StorageError,
)
from storage.models import (
    Annotator,
)
from storage.repository.common import EngineLike, reading, writing
from storage.validation import storable_text, text_length


def get_or_create_annotator(engine: EngineLike, name: str) -> int:
    """The id of the annotator called ``name`` (surrounding spaces ignored), created if new."""
    name = _annotator_name(name)
    with writing(engine) as session:
        return _annotator_id(session, name)


def list_annotators(engine: EngineLike) -> list[str]:
    with reading(engine) as session:
        return list(session.execute(select(Annotator.name).order_by(Annotator.name)).scalars())


def _annotator_name(name: Any) -> str:
    if not isinstance(name, str) or not name.strip():
        raise StorageError("An annotator needs a non-empty name.")
    return storable_text(
        name.strip(), "The annotator name", max_length=text_length(Annotator.__table__.c.name), error=StorageError
    )


def _annotator_id(session: Session, name: str) -> int:
    """The id of the annotator ``name``, created if new, within the caller's transaction.

    Two transactions may create the same new name at once where writers do not
    take turns (PostgreSQL): the insert runs in a savepoint, and the loser of
    the race rolls back only that and reads the winner's row.
    """
    query = select(Annotator.id).where(Annotator.name == name)
    found = session.execute(query).scalar()
    if found is not None:
        return found
    try:
        with session.begin_nested():
            annotator = Annotator(name=name)
            session.add(annotator)
        return annotator.id
    except IntegrityError:
        return session.execute(query).scalar_one()
