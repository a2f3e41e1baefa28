"""The transactions every repository function runs in, and the checks of the values they store.

``reading`` / ``writing``: one short unit of work each (a damaged database raises
``CorruptDatabaseError``); ``_jsonable`` and the other checks turn a caller's values into
what the columns hold, or raise ``StorageError``.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker

from storage.engine import corruption_error, writer
from storage.errors import (
    StorageError,
)
from storage.models import (
    Label,
)
from storage.validation import storable_text, text_length

#: an engine, or a sessionmaker bound to one
EngineLike = Engine | sessionmaker[Session]


def as_engine(engine: EngineLike) -> Engine:
    if isinstance(engine, Engine):
        return engine
    if isinstance(engine, sessionmaker):
        bind = engine.kw.get("bind")
        if isinstance(bind, Engine):
            return bind
    raise TypeError("expected an Engine or a sessionmaker bound to one")


@contextmanager
def reading(engine: EngineLike) -> Iterator[Session]:
    """A short read-only unit of work."""
    with _damage_named(engine), Session(as_engine(engine), expire_on_commit=False) as session, session.begin():
        yield session


@contextmanager
def writing(engine: EngineLike) -> Iterator[Session]:
    """A short unit of work that writes; committed when the block ends without error."""
    with _damage_named(engine), Session(writer(as_engine(engine)), expire_on_commit=False) as session:
        with session.begin():
            yield session


@contextmanager
def _damage_named(engine: EngineLike) -> Iterator[None]:
    """Turn a driver error that says the database is damaged into ``CorruptDatabaseError``; others pass."""
    try:
        yield
    except DBAPIError as error:
        corrupt = corruption_error(as_engine(engine), error)
        if corrupt is None:
            raise
        raise corrupt from error


def _non_empty(value: Any, what: str) -> str:
    """A strategy or solver name: non-empty, as long as the ``labels``/``labelling_sessions`` columns allow."""
    if not isinstance(value, str) or not value.strip():
        raise StorageError(f"{what} must be a non-empty name.")
    length = text_length(Label.__table__.c[what])
    return storable_text(value.strip(), f"The {what} name", max_length=length, error=StorageError)


def _optional_float(value: Any, what: str) -> float | None:
    if value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise StorageError(f"{what} must be a number or None, got {value!r}.") from None
    if not np.isfinite(number):
        return None if np.isnan(number) else number
    return number


def _plain(value: Any) -> Any:
    """``value`` as plain JSON types; numpy values unwrapped, NaN/inf become None."""
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, np.ndarray):
        return _plain(value.tolist())
    if isinstance(value, np.generic):
        return _plain(value.item())
    if isinstance(value, float) and not np.isfinite(value):
        return None
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    return value


def _jsonable(value: dict[str, Any], what: str) -> dict[str, Any]:
    """A JSON round-trip copy of ``value`` (numpy values unwrapped, NaN/inf as null)."""
    if not isinstance(value, dict):
        raise StorageError(f"{what} must be a dict.")
    try:
        return json.loads(json.dumps(_plain(value), allow_nan=False))
    except (TypeError, ValueError) as error:
        raise StorageError(f"{what} cannot be stored as JSON: {error}") from None
