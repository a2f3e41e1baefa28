"""Projects and their members: a project's settings, status and revision, each member's labelling
session, and the locked project row that makes a project's changes take turns."""

from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from storage.errors import NotFoundError, StorageError
from storage.models import (
    PROJECT_STATUSES,
    Annotator,
    Dataset,
    LabellingSession,
    Project,
    ProjectMember,
    utc_now,
)
from storage.repository.annotators import _annotator_id, _annotator_name
from storage.repository.common import EngineLike, _jsonable, _non_empty, reading, writing
from storage.validation import rowcount, storable_text, text_length


@dataclass(frozen=True)
class ProjectInfo:
    id: int
    name: str
    dataset_id: int
    dataset_name: str
    strategy: str
    solver: str
    params: dict[str, Any]
    seed: int
    labels_per_item: int
    overlap_share: float
    reservation_seconds: int
    status: str
    revision: int
    edits: int
    created_at: dt.datetime

    @property
    def find(self) -> str | None:
        """The owner's words for what a Positive answer means in the project (``params["find"]``), or None."""
        return self.params.get("find") or None


def in_overlap(seed: int, share: float, item_index: int) -> bool:
    """Whether an item is among the share of a project's items that get several answers.

    A hash of (seed, item), so every process and database agrees without storing a list.
    """
    if share <= 0:
        return False
    if share >= 1:
        return True
    digest = hashlib.sha256(f"marginlab-overlap:{int(seed)}:{int(item_index)}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < share


def answers_needed(project: ProjectInfo | Project, item_index: int) -> int:
    """How many answers (positive or negative) the item needs in the project."""
    if project.labels_per_item > 1 and in_overlap(project.seed, project.overlap_share, item_index):
        return int(project.labels_per_item)
    return 1


def _project_query() -> Any:
    return select(Project, Dataset.name.label("dataset_name")).join(Dataset, Dataset.id == Project.dataset_id)


def _project_info(row: Any) -> ProjectInfo:
    p: Project = row.Project
    return ProjectInfo(
        id=p.id,
        name=p.name,
        dataset_id=p.dataset_id,
        dataset_name=row.dataset_name,
        strategy=p.strategy,
        solver=p.solver,
        params=dict(p.params or {}),
        seed=p.seed,
        labels_per_item=p.labels_per_item,
        overlap_share=float(p.overlap_share),
        reservation_seconds=p.reservation_seconds,
        status=p.status,
        revision=p.revision,
        edits=p.edits,
        created_at=p.created_at,
    )


def create_project(
    engine: EngineLike,
    *,
    name: str,
    dataset_id: int,
    strategy: str,
    solver: str,
    params: dict[str, Any] | None = None,
    seed: int = 0,
    labels_per_item: int = 1,
    overlap_share: float = 0.0,
    reservation_seconds: int = 600,
    created_by: str | None = None,
) -> int:
    """Create a project; return its id. ``StorageError`` names what is wrong, and nothing is written."""
    if not isinstance(name, str) or not name.strip():
        raise StorageError("A project needs a non-empty name.")
    name = storable_text(
        name.strip(), "The project name", max_length=text_length(Project.__table__.c.name), error=StorageError
    )
    strategy, solver = _non_empty(strategy, "strategy"), _non_empty(solver, "solver")
    params_json = _jsonable(params or {}, "params")
    if params_json.get("find") is not None:
        _find_text(params_json["find"])
    labels_per_item, seed, reservation_seconds = int(labels_per_item), int(seed), int(reservation_seconds)
    overlap_share = float(overlap_share)
    if labels_per_item < 1:
        raise StorageError(f"Answers per item must be at least 1, not {labels_per_item}.")
    if not 0.0 <= overlap_share <= 1.0:
        raise StorageError(f"The share of items answered several times must be from 0 to 1, not {overlap_share}.")
    if reservation_seconds < 1:
        raise StorageError(f"An item must stay reserved at least 1 second, not {reservation_seconds}.")
    try:
        with writing(engine) as session:
            if session.get(Dataset, dataset_id) is None:
                raise NotFoundError(f"Dataset {dataset_id} does not exist.")
            if session.execute(select(Project.id).where(Project.name == name)).first():
                raise StorageError(f"A project named '{name}' exists already.")
            project = Project(
                name=name,
                dataset_id=dataset_id,
                strategy=strategy,
                solver=solver,
                params=params_json,
                seed=seed,
                labels_per_item=labels_per_item,
                overlap_share=overlap_share,
                reservation_seconds=reservation_seconds,
                status="active",
                revision=0,
                edits=0,
                created_by=None if created_by is None else _annotator_id(session, _annotator_name(created_by)),
            )
            session.add(project)
            session.flush()
            return project.id
    except IntegrityError:
        raise StorageError(f"A project named '{name}' exists already.") from None


def get_project(engine: EngineLike, project_id: int) -> ProjectInfo:
    with reading(engine) as session:
        row = session.execute(_project_query().where(Project.id == int(project_id))).first()
    if row is None:
        raise NotFoundError(f"Project {project_id} does not exist.")
    return _project_info(row)


def list_projects(engine: EngineLike, *, member: str | None = None, status: str | None = None) -> list[ProjectInfo]:
    """Projects, newest first; ``member``: only those the annotator of that name belongs to."""
    query = _project_query().order_by(Project.id.desc())
    if member is not None:
        query = (
            query.join(ProjectMember, ProjectMember.project_id == Project.id)
            .join(Annotator, Annotator.id == ProjectMember.annotator_id)
            .where(Annotator.name == member.strip())
        )
    if status is not None:
        if status not in PROJECT_STATUSES:
            raise StorageError(f"Project status '{status}' is not one of {', '.join(PROJECT_STATUSES)}.")
        query = query.where(Project.status == status)
    with reading(engine) as session:
        return [_project_info(row) for row in session.execute(query).all()]


def set_project_status(engine: EngineLike, project_id: int, status: str) -> None:
    if status not in PROJECT_STATUSES:
        raise StorageError(f"Project status '{status}' is not one of {', '.join(PROJECT_STATUSES)}.")
    with writing(engine) as session:
        changed = rowcount(
            session.execute(
                update(Project)
                .where(Project.id == int(project_id))
                .values(status=status, updated_at=utc_now(), revision=Project.revision + 1)
            )
        )
    if not changed:
        raise NotFoundError(f"Project {project_id} does not exist.")


def _find_text(find: object) -> str:
    if not isinstance(find, str):
        raise StorageError(f"What to find must be text, not {find!r}.")
    return storable_text(find, "What to find", error=StorageError)


def set_project_find(engine: EngineLike, project_id: int, find: str | None) -> None:
    """Store the project's words for what a Positive answer means (``params["find"]``; None or empty:
    none). The shared model's settings, the revision and the edits stay as they are: the model has
    nothing to learn again."""
    find = None if find is None else _find_text(find)
    with writing(engine) as session:
        project = _locked_project(session, project_id)
        params = {key: value for key, value in (project.params or {}).items() if key != "find"}
        if find:
            params["find"] = find
        project.params = params
        project.updated_at = utc_now()


def add_member(engine: EngineLike, project_id: int, annotator: str) -> int:
    """Make ``annotator`` a member of the project; return the labelling session holding their answers.

    A member added twice keeps the session they have.
    """
    name = _annotator_name(annotator)
    try:
        with writing(engine) as session:
            project = _locked_project(session, project_id)
            annotator_id = _annotator_id(session, name)
            found = session.execute(
                select(ProjectMember.session_id).where(
                    ProjectMember.project_id == project.id, ProjectMember.annotator_id == annotator_id
                )
            ).scalar()
            if found is not None:
                return found
            labelling_session = LabellingSession(
                dataset_id=project.dataset_id,
                annotator_id=annotator_id,
                strategy=project.strategy,
                solver=project.solver,
                solver_params=dict(project.params or {}),
                seed=project.seed,
                status="active",
            )
            session.add(labelling_session)
            session.flush()
            session.add(
                ProjectMember(project_id=project.id, annotator_id=annotator_id, session_id=labelling_session.id)
            )
            return labelling_session.id
    except IntegrityError:  # added by another transaction at the same moment
        with reading(engine) as session:
            return session.execute(
                select(ProjectMember.session_id)
                .join(Annotator, Annotator.id == ProjectMember.annotator_id)
                .where(ProjectMember.project_id == int(project_id), Annotator.name == name)
            ).scalar_one()


def project_members(engine: EngineLike, project_id: int) -> dict[str, int]:
    """``{annotator name: session id}`` of a project's members."""
    with reading(engine) as session:
        rows = session.execute(
            select(Annotator.name, ProjectMember.session_id)
            .join(Annotator, Annotator.id == ProjectMember.annotator_id)
            .where(ProjectMember.project_id == int(project_id))
            .order_by(Annotator.name)
        ).all()
    return {row.name: row.session_id for row in rows}


def project_session_ids(engine: EngineLike) -> set[int]:
    """The labelling sessions that hold project answers (not sessions of their own)."""
    with reading(engine) as session:
        return set(session.execute(select(ProjectMember.session_id)).scalars())


def project_revision(engine: EngineLike, project_id: int) -> tuple[int, int]:
    """``(revision, edits)`` of a project: one cheap read to learn whether anything changed."""
    with reading(engine) as session:
        row = session.execute(select(Project.revision, Project.edits).where(Project.id == int(project_id))).first()
    if row is None:
        raise NotFoundError(f"Project {project_id} does not exist.")
    return int(row.revision), int(row.edits)


def _locked_project(session: Session, project_id: int) -> Project:
    """The project's row, locked until the transaction ends: the project's changes take turns."""
    project = session.get(Project, int(project_id), with_for_update=True)
    if project is None:
        raise NotFoundError(f"Project {project_id} does not exist.")
    return project


def _member(session: Session, project: Project, annotator: str) -> tuple[int, int]:
    """``(annotator id, session id)`` of a member; ``StorageError`` for someone who is not one."""
    row = session.execute(
        select(ProjectMember.annotator_id, ProjectMember.session_id)
        .join(Annotator, Annotator.id == ProjectMember.annotator_id)
        .where(ProjectMember.project_id == project.id, Annotator.name == annotator)
    ).first()
    if row is None:
        raise StorageError(f"'{annotator}' is not a member of project '{project.name}'.")
    return row.annotator_id, row.session_id
