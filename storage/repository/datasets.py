"""Datasets: import (validated, stored in pieces), metadata, feature matrices and rows, deletion."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import delete, func, insert, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from storage.errors import (
    DuplicateDatasetError,
    NotFoundError,
    StorageError,
)
from storage.models import (
    Dataset,
    DatasetChunk,
    Item,
)
from storage.repository.common import EngineLike, _jsonable, reading, writing
from storage.validation import (
    FEATURE_FORMAT_KEY,
    decode_features,
    encode_features,
    rowcount,
    storable_text,
    stored_dense,
    validate_dataset,
)


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
        session.execute(
            insert(DatasetChunk),
            [
                {"dataset_id": dataset_id, "start": start, "data": bytes(view[start : start + step])}
                for start in range(first, min(len(view), first + 16 * step), step)
            ],
        )


def _stored_matrix(
    session: Session, dataset_id: int, n_rows: int, n_features: int, meta: dict[str, Any] | None, writable: bool = True
) -> Any:
    """A dataset's feature matrix as stored (``storage.validation.decode_features``), put together from
    its pieces in one buffer of its size (one copy of the matrix in memory, plus one piece)."""
    mine = DatasetChunk.dataset_id == dataset_id
    size = int(
        session.execute(select(func.coalesce(func.sum(func.length(DatasetChunk.data)), 0)).where(mine)).scalar_one()
    )
    blob, end = bytearray(size), 0
    pieces = session.execute(
        select(DatasetChunk.start, DatasetChunk.data)
        .where(mine)
        .order_by(DatasetChunk.start)
        .execution_options(yield_per=8)
    )
    for start, data in pieces:
        if start != end:
            raise StorageError(
                f"The stored feature matrix of dataset {dataset_id} is incomplete or damaged "
                f"(a piece at byte {start}, where {end} was expected)."
            )
        blob[end : end + len(data)] = data
        end += len(data)
    if stored_dense(meta) and size != 8 * n_rows * n_features:
        raise StorageError(
            f"The stored feature matrix of dataset {dataset_id} holds {size:,} bytes, not the "
            f"{8 * n_rows * n_features:,} of its {n_rows} x {n_features} values."
        )
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
            image_shape=(
                (dataset.image_width, dataset.image_height)
                if dataset.image_width is not None and dataset.image_height is not None
                else None
            ),
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
        row = session.execute(
            select(Dataset.n_rows, Dataset.n_features, Dataset.meta).where(Dataset.id == dataset_id)
        ).one_or_none()
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
                piece = session.execute(
                    select(DatasetChunk.start, DatasetChunk.data)
                    .where(DatasetChunk.dataset_id == dataset_id, DatasetChunk.start <= at)
                    .order_by(DatasetChunk.start.desc())
                    .limit(1)
                ).one_or_none()
                if piece is None or not at + width <= piece[0] + len(piece[1]):
                    raise StorageError(
                        f"The stored feature matrix of dataset {dataset_id} is shorter than its "
                        f"{n_rows} x {n_features} values."
                    )
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
    out: list[tuple[str | None, ...] | None] = []
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
        deleted = rowcount(session.execute(delete(Dataset).where(Dataset.id == dataset_id)))
    if not deleted:
        raise NotFoundError(f"Dataset {dataset_id} does not exist.")
