"""Repository functions: one short transaction per call.

Every function takes the process's engine (or a sessionmaker bound to it),
opens its own transaction, and returns plain values: small frozen dataclasses,
dicts and numpy arrays, never ORM objects that would need a live session.
When a function that writes returns, its transaction has been committed.
The public names are re-exported by the ``storage`` package (see its ``__all__``).
"""

from __future__ import annotations

import datetime as dt
import io
import json
import zipfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlalchemy import Engine, delete, func, insert, select, update
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from storage.engine import corruption_error, writer
from storage.errors import (
    DuplicateDatasetError,
    DuplicateLabelError,
    InvalidLabelError,
    NotFoundError,
    SessionClosedError,
    StorageError,
)
from storage.models import (
    LABEL_PROVENANCE_COLUMNS,
    LABEL_VALUES,
    SESSION_STATUSES,
    Annotator,
    ComparisonResult,
    Dataset,
    DatasetChunk,
    Item,
    Label,
    LabelCorrection,
    LabellingSession,
    ModelSnapshot,
    utc_now,
)
from storage.validation import (
    FEATURE_FORMAT_KEY,
    decode_features,
    encode_features,
    storable_text,
    stored_dense,
    validate_dataset,
)

if TYPE_CHECKING:
    import pandas as pd

    from core.settings import SessionSettings

EngineLike = Engine | sessionmaker[Session]

#: model snapshots kept per session (older ones are deleted when a new one is saved)
SNAPSHOTS_KEPT = 3


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class DatasetInfo:
    id: int
    name: str
    source: str
    n_items: int
    n_features: int
    feature_names: tuple[str, ...]
    has_true_labels: bool
    display_kind: str
    image_shape: tuple[int, int] | None  # (width, height)
    text_column: str | None
    content_hash: str
    meta: dict[str, Any]
    created_at: dt.datetime


@dataclass(frozen=True)
class DisplayInfo:
    """How the items of a dataset are shown."""

    kind: str  # "table" | "image" | "text"
    image_shape: tuple[int, int] | None  # (width, height)
    text_column: str | None
    item_keys: tuple[str | None, ...] | None  # None when no item has a key
    display_values: tuple[str | None, ...] | None  # None when no item has a text


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

    @property
    def is_skip(self) -> bool:
        return self.value == 0


@dataclass(frozen=True)
class Snapshot:
    n_events: int
    arrays: dict[str, np.ndarray]
    meta: dict[str, Any]
    last_label_id: int | None
    created_at: dt.datetime

    def __iter__(self) -> Iterator[Any]:  # allows ``n, arrays, meta = latest_snapshot(...)``
        return iter((self.n_events, self.arrays, self.meta))


@dataclass(frozen=True)
class ComparisonInfo:
    id: int
    dataset_id: int | None
    config: dict[str, Any]
    summary: dict[str, Any]
    created_at: dt.datetime


@dataclass(frozen=True)
class Comparison:
    id: int
    dataset_id: int | None
    config: dict[str, Any]
    rows: pd.DataFrame = field(compare=False)
    summary: dict[str, Any]
    created_at: dt.datetime


# --------------------------------------------------------------------------- transactions


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


# --------------------------------------------------------------------------- datasets


def import_dataset(
    engine: EngineLike,
    *,
    name: str,
    X: Any,
    feature_names: Sequence[str],
    y_true: Any = None,
    source: str = "",
    display_kind: str = "table",
    image_shape: tuple[int, int] | None = None,
    text_column: str | None = None,
    display_values: Sequence[Any] | None = None,
    item_keys: Sequence[Any] | None = None,
    meta: dict[str, Any] | None = None,
) -> int:
    """Validate and store a dataset with one item per row; return its id.

    Nothing is written when validation fails (``DatasetValidationError`` names
    the row/column). Importing identical content again raises
    ``DuplicateDatasetError`` carrying the existing dataset's id.
    """
    valid = validate_dataset(
        name=name,
        X=X,
        feature_names=feature_names,
        y_true=y_true,
        display_kind=display_kind,
        image_shape=image_shape,
        text_column=text_column,
        display_values=display_values,
        item_keys=item_keys,
    )
    meta_json = _jsonable(meta or {}, "meta")
    features, feature_format = encode_features(valid.X)
    meta_json.pop(FEATURE_FORMAT_KEY, None)
    if feature_format != "dense":  # a dense matrix is stored as it always was (no key: older readers agree)
        meta_json[FEATURE_FORMAT_KEY] = feature_format
    source_text = storable_text(str(source or ""), "The source name")
    try:
        with writing(engine) as session:
            _raise_if_duplicate(session, valid.content_hash)
            n_rows, n_features = valid.X.shape
            dataset = Dataset(
                name=valid.name,
                source=source_text,
                feature_names=list(valid.feature_names),
                n_rows=n_rows,
                n_features=n_features,
                features=b"",  # (the matrix is stored in pieces: below)
                true_labels=None if valid.y_true is None else valid.y_true.astype("<i1").tobytes(),
                display_kind=valid.display_kind,
                image_width=valid.image_shape[0] if valid.image_shape else None,
                image_height=valid.image_shape[1] if valid.image_shape else None,
                text_column=valid.text_column,
                content_hash=valid.content_hash,
                meta=meta_json,
            )
            session.add(dataset)
            session.flush()
            _store_feature_chunks(session, dataset.id, features, n_features, feature_format == "dense")
            keys = valid.item_keys or (None,) * n_rows
            texts = valid.display_values or (None,) * n_rows
            session.execute(
                insert(Item),
                [
                    {
                        "dataset_id": dataset.id,
                        "position": position,
                        "external_key": keys[position],
                        "display_text": texts[position],
                    }
                    for position in range(n_rows)
                ],
            )
            return dataset.id
    except IntegrityError:
        # another process imported the same content between our check and insert
        with reading(engine) as session:
            _raise_if_duplicate(session, valid.content_hash)
        raise


def _raise_if_duplicate(session: Session, digest: str) -> None:
    existing = session.execute(select(Dataset.id, Dataset.name).where(Dataset.content_hash == digest)).first()
    if existing is not None:
        raise DuplicateDatasetError(
            f"This data was already imported as dataset {existing.id} ('{existing.name}').",
            dataset_id=existing.id,
        )


_DATASET_COLUMNS = (
    Dataset.id,
    Dataset.name,
    Dataset.source,
    Dataset.n_rows,
    Dataset.n_features,
    Dataset.feature_names,
    Dataset.true_labels.is_not(None).label("has_true_labels"),
    Dataset.display_kind,
    Dataset.image_width,
    Dataset.image_height,
    Dataset.text_column,
    Dataset.content_hash,
    Dataset.meta,
    Dataset.created_at,
)


def _dataset_info(row: Any) -> DatasetInfo:
    shape = (row.image_width, row.image_height) if row.image_width is not None else None
    return DatasetInfo(
        id=row.id,
        name=row.name,
        source=row.source,
        n_items=row.n_rows,
        n_features=row.n_features,
        feature_names=tuple(row.feature_names),
        has_true_labels=bool(row.has_true_labels),
        display_kind=row.display_kind,
        image_shape=shape,
        text_column=row.text_column,
        content_hash=row.content_hash,
        meta=dict(row.meta or {}),
        created_at=row.created_at,
    )


def list_datasets(engine: EngineLike) -> list[DatasetInfo]:
    """All datasets, oldest first (metadata only, no feature matrices)."""
    with reading(engine) as session:
        rows = session.execute(select(*_DATASET_COLUMNS).order_by(Dataset.id)).all()
    return [_dataset_info(row) for row in rows]


def get_dataset(engine: EngineLike, dataset_id: int) -> DatasetInfo:
    with reading(engine) as session:
        row = session.execute(select(*_DATASET_COLUMNS).where(Dataset.id == dataset_id)).first()
    if row is None:
        raise NotFoundError(f"Dataset {dataset_id} does not exist.")
    return _dataset_info(row)


#: bytes per stored piece of a feature matrix (a dense one: the most whole rows that fit, at least one)
FEATURE_CHUNK_BYTES = 1 << 20


def _store_feature_chunks(session: Session, dataset_id: int, blob: bytes, n_features: int, dense: bool) -> None:
    """Store a matrix's bytes as ``DatasetChunk`` pieces (a dense matrix cut at row boundaries)."""
    width = 8 * n_features
    step = max(1, FEATURE_CHUNK_BYTES // width) * width if dense else FEATURE_CHUNK_BYTES
    view = memoryview(blob)
    for first in range(0, len(view), 16 * step):  # (16 pieces per statement: a few MB at a time)
        session.execute(insert(DatasetChunk), [
            {"dataset_id": dataset_id, "start": start, "data": bytes(view[start:start + step])}
            for start in range(first, min(len(view), first + 16 * step), step)])


def _stored_matrix(session: Session, dataset_id: int, n_rows: int, n_features: int, meta: dict[str, Any] | None,
                   writable: bool = True) -> Any:
    """A dataset's feature matrix as stored (``storage.validation.decode_features``), put together from
    its pieces in one buffer of its size (one copy of the matrix in memory, plus one piece)."""
    mine = DatasetChunk.dataset_id == dataset_id
    size = int(session.execute(select(func.coalesce(func.sum(func.length(DatasetChunk.data)), 0))
                               .where(mine)).scalar_one())
    blob, end = bytearray(size), 0
    pieces = session.execute(select(DatasetChunk.start, DatasetChunk.data).where(mine).order_by(DatasetChunk.start)
                             .execution_options(yield_per=8))
    for start, data in pieces:
        if start != end:
            raise StorageError(f"The stored feature matrix of dataset {dataset_id} is incomplete or damaged "
                               f"(a piece at byte {start}, where {end} was expected).")
        blob[end:end + len(data)] = data
        end += len(data)
    if stored_dense(meta) and size != 8 * n_rows * n_features:
        raise StorageError(f"The stored feature matrix of dataset {dataset_id} holds {size:,} bytes, not the "
                           f"{8 * n_rows * n_features:,} of its {n_rows} x {n_features} values.")
    return decode_features(blob, n_rows, n_features, meta, writable)


def stored_features(session: Session, dataset: Dataset, writable: bool = True) -> Any:
    """``dataset``'s feature matrix as stored, read from its pieces (see ``_stored_matrix``)."""
    return _stored_matrix(session, dataset.id, dataset.n_rows, dataset.n_features, dataset.meta, writable)


def load_dataset_arrays(
    engine: EngineLike, dataset_id: int, writable: bool = True
) -> tuple[np.ndarray, np.ndarray | None, list[str], DisplayInfo]:
    """``(X, y_true or None, feature_names, display_info)`` of a dataset.

    X is a fresh, writable float64 array of shape (n_items, n_features), or a
    float64 SciPy CSR matrix for a dataset stored sparse (TF-IDF terms,
    fingerprint bits); row i is item i. y_true holds +1/-1 as int8.
    ``writable=False``: a dense X is a read-only view of the bytes read (one
    copy of the matrix in memory instead of two while it is gathered from).
    """
    with reading(engine) as session:
        dataset = session.get(Dataset, dataset_id)
        if dataset is None:
            raise NotFoundError(f"Dataset {dataset_id} does not exist.")
        keys, texts = _item_keys_and_texts(session, dataset_id)
        X = stored_features(session, dataset, writable)
        y_true = None
        if dataset.true_labels is not None:
            y_true = np.frombuffer(dataset.true_labels, dtype="<i1").astype(np.int8, copy=True)
        display = DisplayInfo(
            kind=dataset.display_kind,
            image_shape=((dataset.image_width, dataset.image_height) if dataset.image_width is not None else None),
            text_column=dataset.text_column,
            item_keys=keys,
            display_values=texts,
        )
        return X, y_true, list(dataset.feature_names), display


def load_feature_rows(engine: EngineLike, dataset_id: int, items: Sequence[int]) -> np.ndarray:
    """The stored (unscaled) feature rows of ``items``, shape (len(items), n_features), float64.

    For a dataset stored dense, each row is read from the stored piece that holds it (about 1 MB),
    so that a reader needing a few rows for display does not hold the whole matrix.  A sparse
    dataset is decoded whole (its rows have no fixed place in the stored archive).
    """
    items = [int(i) for i in items]
    with reading(engine) as session:
        row = session.execute(select(Dataset.n_rows, Dataset.n_features, Dataset.meta)
                              .where(Dataset.id == dataset_id)).one_or_none()
        if row is None:
            raise NotFoundError(f"Dataset {dataset_id} does not exist.")
        n_rows, n_features, meta = row
        bad = [i for i in items if not 0 <= i < n_rows]
        if bad:
            raise NotFoundError(f"Dataset {dataset_id} has no item {bad[0]} (it has {n_rows} items).")
        if not stored_dense(meta):
            X = _stored_matrix(session, dataset_id, n_rows, n_features, meta)
            return np.asarray(X[items].toarray(), dtype=np.float64).reshape(len(items), n_features)
        width = 8 * n_features
        out = np.empty((len(items), n_features), dtype=np.float64)
        pieces: dict[int, tuple[int, bytes]] = {}  # (several items in one piece: read once)
        for k, i in enumerate(items):
            at = i * width
            piece = next((p for p in pieces.values() if p[0] <= at and at + width <= p[0] + len(p[1])), None)
            if piece is None:
                piece = session.execute(select(DatasetChunk.start, DatasetChunk.data)
                                        .where(DatasetChunk.dataset_id == dataset_id, DatasetChunk.start <= at)
                                        .order_by(DatasetChunk.start.desc()).limit(1)).one_or_none()
                if piece is None or not at + width <= piece[0] + len(piece[1]):
                    raise StorageError(f"The stored feature matrix of dataset {dataset_id} is shorter than its "
                                       f"{n_rows} x {n_features} values.")
                pieces[piece[0]] = piece
            start, data = piece
            out[k] = np.frombuffer(data, dtype="<f8", count=n_features, offset=at - start)
        return out


def _item_keys_and_texts(session: Session, dataset_id: int) -> tuple[tuple | None, tuple | None]:
    """The items' external keys and display texts in position order; None for a column no item fills.

    Each column is first asked whether any item fills it (one scan inside the database), and
    read only then, as plain rows rather than ORM objects: a million-item dataset of bare
    numbers opens without a million Python objects.
    """
    mine = Item.dataset_id == dataset_id
    out = []
    for column in (Item.external_key, Item.display_text):
        if session.execute(select(select(Item.id).where(mine, column.is_not(None)).exists())).scalar():
            rows = session.connection().execute(select(column).where(mine).order_by(Item.position))
            out.append(tuple(rows.scalars()))
        else:
            out.append(None)
    return out[0], out[1]


def update_dataset_meta(engine: EngineLike, dataset_id: int, changes: dict[str, Any]) -> dict[str, Any]:
    """Set entries of a dataset's ``meta`` (e.g. its evaluation share); returns the new meta.

    The keys that describe how the features are stored cannot be changed here.
    """
    changes = _jsonable(dict(changes), "meta")
    if FEATURE_FORMAT_KEY in changes:
        raise StorageError(f"'{FEATURE_FORMAT_KEY}' describes the stored features and cannot be changed.")
    with writing(engine) as session:
        dataset = session.get(Dataset, dataset_id)
        if dataset is None:
            raise NotFoundError(f"Dataset {dataset_id} does not exist.")
        meta = dict(dataset.meta or {})
        meta.update(changes)
        dataset.meta = meta
    return meta


def delete_dataset(engine: EngineLike, dataset_id: int) -> None:
    """Delete a dataset with its items, sessions, labels, snapshots and comparisons."""
    with writing(engine) as session:
        deleted = session.execute(delete(Dataset).where(Dataset.id == dataset_id)).rowcount
    if not deleted:
        raise NotFoundError(f"Dataset {dataset_id} does not exist.")


# --------------------------------------------------------------------------- annotators


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
        name.strip(), "The annotator name", max_length=Annotator.__table__.c.name.type.length, error=StorageError
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


# --------------------------------------------------------------------------- sessions


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
            raise StorageError("Give a session's settings record, or its strategy, solver, params and seed: "
                               "not both.")
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
        deleted = session.execute(delete(LabellingSession).where(LabellingSession.id == session_id)).rowcount
    if not deleted:
        raise NotFoundError(f"Session {session_id} does not exist.")


def close_session(engine: EngineLike, session_id: int) -> None:
    _set_session_status(engine, session_id, "closed")


def reopen_session(engine: EngineLike, session_id: int) -> None:
    _set_session_status(engine, session_id, "active")


def _set_session_status(engine: EngineLike, session_id: int, status: str) -> None:
    with writing(engine) as session:
        changed = session.execute(
            update(LabellingSession)
            .where(LabellingSession.id == session_id)
            .values(status=status, updated_at=utc_now())
        ).rowcount
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
    return labelling_session


def _check_open(session_id: int, status: str | None) -> None:
    """Raise unless the session exists (``status`` is not None) and is active."""
    if status is None:
        raise NotFoundError(f"Session {session_id} does not exist.")
    if status != "active":
        raise SessionClosedError(f"Session {session_id} is closed; reopen it to change its labels.")


# --------------------------------------------------------------------------- labels


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
) -> LabelEvent:
    """Record +1, -1 or 0 (skip) for an item; committed when this returns.

    Raises ``DuplicateLabelError`` when the item already has an active label in
    the session (a double submit), ``SessionClosedError`` for a closed session.
    """
    value = _label_value(value)
    item_index = _item_index(item_index)
    annotator = _annotator_name(annotator)
    now = utc_now()
    # the label's own columns, stored and returned alike
    answer = dict(
        value=value,
        created_at=now,
        strategy=_non_empty(strategy, "strategy"),
        solver=_non_empty(solver, "solver"),
        decision_value=_optional_float(decision_value, "decision_value"),
        model_version=int(model_version),
        update_ms=_optional_float(update_ms, "update_ms"),
        query_ms=_optional_float(query_ms, "query_ms"),
    )
    try:
        with writing(engine) as session:
            # one statement finds the session, checks it is open and finds the item
            target = session.execute(
                select(LabellingSession.status, LabellingSession.dataset_id, Item.id.label("item_id"))
                .outerjoin(Item, (Item.dataset_id == LabellingSession.dataset_id) & (Item.position == item_index))
                .where(LabellingSession.id == session_id)
            ).first()
            _check_open(session_id, None if target is None else target.status)
            if target.item_id is None:
                _item_id(session, target.dataset_id, item_index)  # raises, naming the valid range
            # a second active label for the item violates the partial unique index
            label_id = session.execute(
                insert(Label)
                .values(
                    session_id=session_id,
                    item_id=target.item_id,
                    annotator_id=_annotator_id(session, annotator),
                    **answer,
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
        raise InvalidLabelError(f"Item {item_index} does not exist: dataset {dataset_id} has items 0 to {n_items - 1}.")
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
EVENT_LABEL_FIELDS = ("value", "created_at", *LABEL_PROVENANCE_COLUMNS, "undone_at")


def current_value() -> Any:
    """The label's answer as it stands: its newest change (``label_corrections``), else as it was given."""
    changed = (
        select(LabelCorrection.new_value)
        .where(LabelCorrection.label_id == Label.id, LabelCorrection.new_value.is_not(None))
        .order_by(LabelCorrection.id.desc())
        .limit(1)
        .correlate(Label)
        .scalar_subquery()
    )
    return func.coalesce(changed, Label.value)


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
            *(current_value().label("value") if name == "value" else getattr(Label, name)
              for name in EVENT_LABEL_FIELDS),
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
        **{name: getattr(row, name) for name in EVENT_LABEL_FIELDS},
    )


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


# --------------------------------------------------------------------------- snapshots


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


# --------------------------------------------------------------------------- comparisons


def save_comparison(
    engine: EngineLike,
    dataset_id: int | None,
    config: dict[str, Any],
    rows: pd.DataFrame,
    summary: dict[str, Any],
) -> int:
    """Store a strategy comparison (tidy rows + summary); return its id."""
    import pandas as pd  # only comparisons need pandas; labelling processes start faster without it

    if not isinstance(rows, pd.DataFrame):
        raise StorageError("rows must be a pandas DataFrame.")
    config_json = _jsonable(config or {}, "config")
    summary_json = _jsonable(summary or {}, "summary")
    rows_csv = rows.to_csv(index=False)
    with writing(engine) as session:
        if dataset_id is not None and session.get(Dataset, dataset_id) is None:
            raise NotFoundError(f"Dataset {dataset_id} does not exist.")
        result = ComparisonResult(dataset_id=dataset_id, config=config_json, rows_csv=rows_csv, summary=summary_json)
        session.add(result)
        session.flush()
        return result.id


def list_comparisons(engine: EngineLike, dataset_id: int | None = None) -> list[ComparisonInfo]:
    """Stored comparisons, newest first."""
    query = select(
        ComparisonResult.id,
        ComparisonResult.dataset_id,
        ComparisonResult.config,
        ComparisonResult.summary,
        ComparisonResult.created_at,
    ).order_by(ComparisonResult.id.desc())
    if dataset_id is not None:
        query = query.where(ComparisonResult.dataset_id == dataset_id)
    with reading(engine) as session:
        rows = session.execute(query).all()
    return [
        ComparisonInfo(
            id=row.id,
            dataset_id=row.dataset_id,
            config=dict(row.config or {}),
            summary=dict(row.summary or {}),
            created_at=row.created_at,
        )
        for row in rows
    ]


def load_comparison(engine: EngineLike, comparison_id: int) -> Comparison:
    import pandas as pd

    with reading(engine) as session:
        result = session.get(ComparisonResult, comparison_id)
        if result is None:
            raise NotFoundError(f"Comparison {comparison_id} does not exist.")
        rows = pd.read_csv(io.StringIO(result.rows_csv))
        return Comparison(
            id=result.id,
            dataset_id=result.dataset_id,
            config=dict(result.config or {}),
            rows=rows,
            summary=dict(result.summary or {}),
            created_at=result.created_at,
        )


# --------------------------------------------------------------------------- helpers


def _non_empty(value: Any, what: str) -> str:
    """A strategy or solver name: non-empty, as long as the ``labels``/``labelling_sessions`` columns allow."""
    if not isinstance(value, str) or not value.strip():
        raise StorageError(f"{what} must be a non-empty name.")
    length = Label.__table__.c[what].type.length
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

