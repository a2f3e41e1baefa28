"""Model snapshots: a session's model state after its first n events, the newest few kept."""

from __future__ import annotations

import datetime as dt
import io
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from storage.errors import (
    NotFoundError,
    StorageError,
)
from storage.models import (
    Label,
    LabellingSession,
    ModelSnapshot,
)
from storage.repository.common import EngineLike, _jsonable, reading, writing
from storage.repository.labels import _count_active_events

#: model snapshots kept per session (older ones are deleted when a new one is saved)
SNAPSHOTS_KEPT = 3


@dataclass(frozen=True)
class Snapshot:
    n_events: int
    arrays: dict[str, np.ndarray]
    meta: dict[str, Any]
    last_label_id: int | None
    created_at: dt.datetime

    def __iter__(self) -> Iterator[Any]:  # allows ``n, arrays, meta = latest_snapshot(...)``
        return iter((self.n_events, self.arrays, self.meta))


def save_snapshot(
    engine: EngineLike,
    session_id: int,
    *,
    n_events: int,
    arrays: dict[str, np.ndarray],
    meta: dict[str, Any] | None = None,
    keep: int = SNAPSHOTS_KEPT,
) -> int:
    """Store the model state after the first ``n_events`` active events of a session.

    ``n_events`` counts events as ``label_events(include_skips=True)`` lists
    them. Arrays are saved with ``numpy.savez`` (object arrays are refused);
    ``meta`` must be JSON-able. Only the ``keep`` most recent snapshots of the
    session are kept. Returns the snapshot id.
    """
    blob = _save_arrays(arrays)
    meta_json = _jsonable(meta or {}, "meta")
    n_events = int(n_events)
    if n_events < 0:
        raise StorageError("n_events cannot be negative.")
    with writing(engine) as session:
        if session.get(LabellingSession, session_id) is None:
            raise NotFoundError(f"Session {session_id} does not exist.")
        active = _count_active_events(session, session_id)
        if n_events > active:
            raise StorageError(f"Session {session_id} has {active} label events; a snapshot cannot reflect {n_events}.")
        last_label_id = _nth_active_label_id(session, session_id, n_events)
        snapshot = ModelSnapshot(
            session_id=session_id,
            n_events=n_events,
            last_label_id=last_label_id,
            arrays=blob,
            meta=meta_json,
        )
        session.add(snapshot)
        session.flush()
        stale = (
            select(ModelSnapshot.id)
            .where(ModelSnapshot.session_id == session_id)
            .order_by(ModelSnapshot.n_events.desc(), ModelSnapshot.id.desc())
            .offset(max(int(keep), 1))
        )
        stale_ids = list(session.execute(stale).scalars())
        if stale_ids:
            session.execute(delete(ModelSnapshot).where(ModelSnapshot.id.in_(stale_ids)))
        return snapshot.id


def latest_snapshot(engine: EngineLike, session_id: int) -> Snapshot | None:
    """The most advanced snapshot that still matches the session's events, or None.

    A snapshot whose data are not plain arrays (objects would need unpickling,
    which is never done) or cannot be read is passed over.

    Unpacks as ``n_events, arrays, meta``; rebuild by loading it and replaying
    ``label_events(...)[n_events:]``.
    """
    with reading(engine) as session:
        candidates = session.execute(
            select(ModelSnapshot)
            .where(ModelSnapshot.session_id == session_id)
            .order_by(ModelSnapshot.n_events.desc(), ModelSnapshot.id.desc())
        ).scalars()
        for snapshot in candidates:
            if _nth_active_label_id(session, session_id, snapshot.n_events) != snapshot.last_label_id:
                continue
            try:
                arrays = _load_arrays(snapshot.arrays)
            except StorageError:
                continue  # not plain arrays (never unpickled): an older snapshot, or replaying the events, serves
            return Snapshot(
                n_events=snapshot.n_events,
                arrays=arrays,
                meta=dict(snapshot.meta or {}),
                last_label_id=snapshot.last_label_id,
                created_at=snapshot.created_at,
            )
    return None


def _nth_active_label_id(session: Session, session_id: int, n_events: int) -> int | None:
    if n_events == 0:
        return None
    return session.execute(
        select(Label.id)
        .where(Label.session_id == session_id, Label.undone_at.is_(None))
        .order_by(Label.id)
        .offset(n_events - 1)
        .limit(1)
    ).scalar()


def _save_arrays(arrays: dict[str, np.ndarray]) -> bytes:
    if not isinstance(arrays, dict):
        raise StorageError("arrays must be a dict of name -> numpy array.")
    checked: dict[str, np.ndarray] = {}
    for name, value in arrays.items():
        if not isinstance(name, str) or not name or name in ("file", "allow_pickle"):
            raise StorageError(f"{name!r} cannot be used as a snapshot array name.")
        array = np.asarray(value)
        if array.dtype.hasobject:
            raise StorageError(f"Snapshot array '{name}' holds Python objects; only plain arrays are stored.")
        checked[name] = array
    buffer = io.BytesIO()
    np.savez(buffer, allow_pickle=False, **checked)
    return buffer.getvalue()


def _load_arrays(blob: bytes) -> dict[str, np.ndarray]:
    """The arrays of a ``numpy.savez`` archive; ``StorageError`` if it holds objects or is not an archive."""
    try:
        with np.load(io.BytesIO(blob), allow_pickle=False) as archive:
            return {name: archive[name] for name in archive.files}
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as error:
        raise StorageError(f"A model snapshot is not a plain-array archive ({error}).") from None
