"""Labelling sessions: start, list, open or close, their settings, and the lock on an open one."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session

from storage.errors import (
    NotFoundError,
    SessionClosedError,
    StorageError,
)
from storage.models import (
    SESSION_STATUSES,
    Annotator,
    Dataset,
    Label,
    LabellingSession,
    utc_now,
)
from storage.repository.annotators import _annotator_id, _annotator_name
from storage.repository.common import EngineLike, _jsonable, _non_empty, reading, writing
from storage.validation import rowcount

if TYPE_CHECKING:
    from core.settings import SessionSettings


@dataclass(frozen=True)
class SessionInfo:
    id: int
    dataset_id: int
    dataset_name: str
    annotator: str
    strategy: str
    solver: str
    params: dict[str, Any]
    seed: int | None
    status: str
    created_at: dt.datetime
    updated_at: dt.datetime
    n_labels: int  # active positive/negative labels
    n_skips: int  # active skips
    name: str | None = None  # the name the analyst gave the session, if any

    @property
    def settings(self) -> SessionSettings:
        """The session's settings as the typed record (``core.settings``): the stored JSON with the row's
        strategy, solver and seed; a dict stored before the record is read as it always was.  A
        ``core.settings.SettingsError`` (a ``ValueError``) names a stored setting this version refuses."""
        from core.settings import SessionSettings

        return SessionSettings.from_json(self.params, strategy=self.strategy, solver=self.solver, seed=self.seed)


def start_session(
    engine: EngineLike,
    *,
    dataset_id: int,
    annotator: str,
    strategy: str | None = None,
    solver: str | None = None,
    params: dict[str, Any] | None = None,
    seed: int | None = None,
    settings: SessionSettings | None = None,
) -> int:
    """Start a labelling session on a dataset; return its id.

    ``settings``: the session's settings record (``core.settings.SessionSettings``): its strategy, solver and
    seed go on the row's columns, and its JSON (``to_json``, with its version) into the settings column.
    Without it, ``strategy``, ``solver``, ``params`` and ``seed`` are stored as given."""
    if settings is not None:
        if (strategy, solver, params, seed) != (None, None, None, None):
            raise StorageError("Give a session's settings record, or its strategy, solver, params and seed: not both.")
        strategy, solver, seed, params = settings.strategy, settings.solver, settings.seed, settings.to_json()
    annotator = _annotator_name(annotator)
    strategy = _non_empty(strategy, "strategy")
    solver = _non_empty(solver, "solver")
    params_json = _jsonable(params or {}, "params")
    if seed is not None:
        seed = int(seed)
    with writing(engine) as session:
        if session.get(Dataset, dataset_id) is None:
            raise NotFoundError(f"Dataset {dataset_id} does not exist.")
        labelling_session = LabellingSession(
            dataset_id=dataset_id,
            annotator_id=_annotator_id(session, annotator),
            strategy=strategy,
            solver=solver,
            solver_params=params_json,
            seed=seed,
            status="active",
        )
        session.add(labelling_session)
        session.flush()
        return labelling_session.id


def _session_query() -> Any:
    label_counts = (
        select(
            Label.session_id,
            func.count().filter(Label.value != 0).label("n_labels"),
            func.count().filter(Label.value == 0).label("n_skips"),
        )
        .where(Label.undone_at.is_(None))
        .group_by(Label.session_id)
        .subquery()
    )
    return (
        select(
            LabellingSession,
            Dataset.name.label("dataset_name"),
            Annotator.name.label("annotator_name"),
            func.coalesce(label_counts.c.n_labels, 0).label("n_labels"),
            func.coalesce(label_counts.c.n_skips, 0).label("n_skips"),
        )
        .join(Dataset, Dataset.id == LabellingSession.dataset_id)
        .join(Annotator, Annotator.id == LabellingSession.annotator_id)
        .outerjoin(label_counts, label_counts.c.session_id == LabellingSession.id)
    )


def _session_info(row: Any) -> SessionInfo:
    s: LabellingSession = row.LabellingSession
    return SessionInfo(
        id=s.id,
        dataset_id=s.dataset_id,
        dataset_name=row.dataset_name,
        annotator=row.annotator_name,
        strategy=s.strategy,
        solver=s.solver,
        params=dict(s.solver_params or {}),
        seed=s.seed,
        status=s.status,
        created_at=s.created_at,
        updated_at=s.updated_at,
        n_labels=int(row.n_labels),
        n_skips=int(row.n_skips),
        name=s.name,
    )


def list_sessions(
    engine: EngineLike,
    dataset_id: int | None = None,
    status: str | None = None,
    annotator: str | None = None,
) -> list[SessionInfo]:
    """Sessions, most recently updated first, optionally filtered."""
    if status is not None and status not in SESSION_STATUSES:
        raise StorageError(f"Session status '{status}' is not one of {', '.join(SESSION_STATUSES)}.")
    query = _session_query()
    if dataset_id is not None:
        query = query.where(LabellingSession.dataset_id == dataset_id)
    if status is not None:
        query = query.where(LabellingSession.status == status)
    if annotator is not None:
        query = query.where(Annotator.name == annotator.strip())
    query = query.order_by(LabellingSession.updated_at.desc(), LabellingSession.id.desc())
    with reading(engine) as session:
        rows = session.execute(query).all()
        return [_session_info(row) for row in rows]


def get_session(engine: EngineLike, session_id: int) -> SessionInfo:
    with reading(engine) as session:
        row = session.execute(_session_query().where(LabellingSession.id == session_id)).first()
        if row is None:
            raise NotFoundError(f"Session {session_id} does not exist.")
        return _session_info(row)


def delete_session(engine: EngineLike, session_id: int) -> None:
    """Delete a session with everything that hangs off it (labels, corrections, snapshots)."""
    with writing(engine) as session:
        deleted = rowcount(session.execute(delete(LabellingSession).where(LabellingSession.id == session_id)))
    if not deleted:
        raise NotFoundError(f"Session {session_id} does not exist.")


def close_session(engine: EngineLike, session_id: int) -> None:
    _set_session_status(engine, session_id, "closed")


def reopen_session(engine: EngineLike, session_id: int) -> None:
    _set_session_status(engine, session_id, "active")


def _set_session_status(engine: EngineLike, session_id: int, status: str) -> None:
    with writing(engine) as session:
        changed = rowcount(
            session.execute(
                update(LabellingSession)
                .where(LabellingSession.id == session_id)
                .values(status=status, updated_at=utc_now())
            )
        )
    if not changed:
        raise NotFoundError(f"Session {session_id} does not exist.")


def set_session_setting(engine: EngineLike, session_id: int, key: str, value: Any) -> dict[str, Any]:
    """Set one top-level entry of an open session's settings (``SessionInfo.params``); returns the settings.

    The settings are JSON on the session row; the row is locked while they are
    read and written, so two changes at once do not lose one another.
    """
    if not isinstance(key, str) or not key.strip():
        raise StorageError("A session setting needs a non-empty name.")
    value = _jsonable({key: value}, f"The session setting '{key}'")[key]
    with writing(engine) as session:
        row = _active_session_row(session, session_id)
        params = dict(row.solver_params or {})
        params[key] = value
        row.solver_params = params
    return params


def _active_session_row(session: Session, session_id: int) -> LabellingSession:
    """The open session's row, locked until the transaction ends (raises if missing or closed).

    The lock makes changes to one session's labels take turns on servers
    whose writers run side by side (PostgreSQL: ``FOR NO KEY UPDATE``, which
    labels being inserted do not wait for); a file database's writers take turns anyway.
    """
    labelling_session = session.get(LabellingSession, session_id, with_for_update={"key_share": True})
    _check_open(session_id, None if labelling_session is None else labelling_session.status)
    assert labelling_session is not None  # (_check_open refused a missing one)
    return labelling_session


def _check_open(session_id: int, status: str | None) -> None:
    """Raise unless the session exists (``status`` is not None) and is active."""
    if status is None:
        raise NotFoundError(f"Session {session_id} does not exist.")
    if status != "active":
        raise SessionClosedError(f"Session {session_id} is closed; reopen it to change its labels.")
