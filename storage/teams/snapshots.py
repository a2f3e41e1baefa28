"""A project's shared model, stored as plain arrays with the revision it was learned at."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, select

from storage.errors import NotFoundError, StorageError
from storage.models import (
    Project,
    ProjectSnapshot,
)
from storage.repository.common import EngineLike, _jsonable, reading, writing
from storage.repository.snapshots import SNAPSHOTS_KEPT, _load_arrays, _save_arrays


@dataclass(frozen=True)
class ProjectModelSnapshot:
    """A stored project model: the loop's ``arrays`` and ``meta``, and the project's ``(revision, edits)``
    when it was stored."""

    revision: int
    edits: int
    arrays: dict[str, Any]
    meta: dict[str, Any]
    created_at: dt.datetime


def save_project_snapshot(
    engine: EngineLike,
    project_id: int,
    *,
    revision: int,
    edits: int,
    arrays: dict[str, Any],
    meta: dict[str, Any] | None = None,
    keep: int = SNAPSHOTS_KEPT,
) -> int:
    """Store a project's shared model (plain arrays, as ``repository.save_snapshot``; ``meta`` JSON-able)
    as the project was at ``revision`` / ``edits``; only the ``keep`` most advanced snapshots of the
    project are kept.  Returns the snapshot id."""
    blob = _save_arrays(arrays)
    meta_json = _jsonable(meta or {}, "meta")
    with writing(engine) as session:
        if session.get(Project, int(project_id)) is None:
            raise NotFoundError(f"Project {project_id} does not exist.")
        snapshot = ProjectSnapshot(
            project_id=int(project_id), revision=int(revision), edits=int(edits), arrays=blob, meta=meta_json
        )
        session.add(snapshot)
        session.flush()
        stale = list(
            session.execute(
                select(ProjectSnapshot.id)
                .where(ProjectSnapshot.project_id == int(project_id))
                .order_by(ProjectSnapshot.revision.desc(), ProjectSnapshot.id.desc())
                .offset(max(int(keep), 1))
            ).scalars()
        )
        if stale:
            session.execute(delete(ProjectSnapshot).where(ProjectSnapshot.id.in_(stale)))
        return snapshot.id


def latest_project_snapshot(engine: EngineLike, project_id: int) -> ProjectModelSnapshot | None:
    """The project's most advanced stored model whose arrays can be read (never unpickled), or None."""
    with reading(engine) as session:
        candidates = session.execute(
            select(ProjectSnapshot)
            .where(ProjectSnapshot.project_id == int(project_id))
            .order_by(ProjectSnapshot.revision.desc(), ProjectSnapshot.id.desc())
        ).scalars()
        for snapshot in candidates:
            try:
                arrays = _load_arrays(snapshot.arrays)
            except StorageError:
                continue  # not plain arrays: an older snapshot, or learning every answer again, serves
            return ProjectModelSnapshot(
                revision=snapshot.revision,
                edits=snapshot.edits,
                arrays=arrays,
                meta=dict(snapshot.meta or {}),
                created_at=snapshot.created_at,
            )
    return None
