"""Validation of a dataset before anything is written.

``validate_dataset`` turns whatever the caller passed (lists, arrays) into the
exact arrays that are stored, or raises ``DatasetValidationError`` with a
message naming the row and column. Row numbers here are item indices
(0-based), the same numbers the rest of the app uses for items.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import scipy.sparse as sp
from sqlalchemy import CursorResult, Result, String
from sqlalchemy.sql.elements import KeyedColumnElement

from storage.errors import DatasetValidationError, StorageError
from storage.models import DISPLAY_KINDS, Dataset, Item


def text_length(column: KeyedColumnElement[Any]) -> int:
    """The most characters the string column ``column`` stores."""
    length = cast(String, column.type).length
    assert length is not None, f"the column {column.key} is a string of a given length"
    return int(length)


def rowcount(result: Result) -> int:
    """How many rows an UPDATE or DELETE executed in a session matched."""
    return int(cast(CursorResult, result).rowcount)


MAX_NAME_LENGTH = text_length(Dataset.__table__.c.name)
MAX_ITEM_KEY_LENGTH = text_length(Item.__table__.c.external_key)
MAX_TEXT_COLUMN_LENGTH = text_length(Dataset.__table__.c.text_column)


def storable_text(
    value: str, what: str, *, max_length: int | None = None, error: type[StorageError] = DatasetValidationError
) -> str:
    """``value`` itself when every supported database stores it as it is; else ``error`` naming ``what``.

    PostgreSQL refuses NUL characters in text and text longer than its
    column; a file database would keep both: both are refused everywhere.
    """
    if "\x00" in value:
        raise error(f"{what} contains a NUL character (\\x00), which cannot be stored.")
    if max_length is not None and len(value) > max_length:
        raise error(f"{what} is longer than {max_length} characters ({len(value)}).")
    return value


@dataclass(frozen=True)
class ValidDataset:
    """A dataset that passed validation, ready to be stored."""

    name: str
    X: Any  # float64, C-contiguous, shape (n, d), all finite; or a canonical float64 CSR matrix
    feature_names: tuple[str, ...]
    y_true: np.ndarray | None  # int8 of +1/-1, or None
    display_kind: str
    image_shape: tuple[int, int] | None  # (width, height)
    text_column: str | None
    item_keys: tuple[str | None, ...] | None
    display_values: tuple[str | None, ...] | None
    content_hash: str


def validate_dataset(
    *,
    name: str,
    X: Any,
    feature_names: Sequence[str],
    y_true: Any = None,
    display_kind: str = "table",
    image_shape: tuple[int, int] | None = None,
    text_column: str | None = None,
    display_values: Sequence[Any] | None = None,
    item_keys: Sequence[Any] | None = None,
) -> ValidDataset:
    name = _validate_name(name)
    names = _validate_feature_names(feature_names)
    matrix = _validate_matrix(X, names)
    n_rows = matrix.shape[0]
    labels = None if y_true is None else _validate_true_labels(y_true, n_rows)
    keys = None if item_keys is None else _validate_item_keys(item_keys, n_rows)
    values = None if display_values is None else _validate_texts(display_values, n_rows)
    kind, shape, text_col = _validate_display(display_kind, image_shape, text_column, names, values)
    return ValidDataset(
        name=name,
        X=matrix,
        feature_names=names,
        y_true=labels,
        display_kind=kind,
        image_shape=shape,
        text_column=text_col,
        item_keys=keys,
        display_values=values,
        content_hash=content_hash(matrix, names, labels, keys, values),
    )


def content_hash(
    X: Any,  # a NumPy array or a scipy.sparse matrix
    feature_names: Sequence[str],
    y_true: np.ndarray | None,
    item_keys: Sequence[str | None] | None,
    display_values: Sequence[str | None] | None,
) -> str:
    """sha256 over everything that makes two datasets "the same data"."""
    digest = hashlib.sha256(b"marginlab-dataset-v1\0")
    digest.update(json.dumps([list(X.shape), list(feature_names)]).encode())
    if sp.issparse(X):  # the same values as a dense matrix hash differently: the stored form differs
        digest.update(b"\0csr" + np.asarray(X.indptr, "<i8").tobytes() + np.asarray(X.indices, "<i8").tobytes())
        digest.update(np.asarray(X.data, "<f8").tobytes())
    else:
        digest.update(np.ascontiguousarray(X, dtype="<f8").tobytes())
    digest.update(b"\0y" + (b"-" if y_true is None else np.asarray(y_true, "<i1").tobytes()))
    digest.update(b"\0k" + json.dumps(None if item_keys is None else list(item_keys)).encode())
    digest.update(b"\0t" + json.dumps(None if display_values is None else list(display_values)).encode())
    return digest.hexdigest()


def _validate_name(name: Any) -> str:
    if not isinstance(name, str) or not name.strip():
        raise DatasetValidationError("The dataset needs a non-empty name.")
    return storable_text(name.strip(), "The dataset name", max_length=MAX_NAME_LENGTH)


def _validate_feature_names(feature_names: Any) -> tuple[str, ...]:
    if feature_names is None or isinstance(feature_names, str):
        raise DatasetValidationError("feature_names must be a list of column names.")
    names = list(feature_names)
    if not names:
        raise DatasetValidationError("The dataset has no feature columns.")
    seen: dict[str, int] = {}
    cleaned = []
    for column, raw in enumerate(names):
        if not isinstance(raw, str) or not raw.strip():
            raise DatasetValidationError(f"Feature column {column} has an empty name.")
        feature = raw.strip()
        if feature in seen:
            raise DatasetValidationError(f"Duplicate feature name '{feature}' (columns {seen[feature]} and {column}).")
        seen[feature] = column
        cleaned.append(feature)
    return tuple(cleaned)


def _validate_sparse(X: Any, names: tuple[str, ...]) -> sp.csr_matrix:
    """A canonical float64 CSR copy (sorted indices, no duplicates, no stored zeros), all values finite."""
    matrix = sp.csr_matrix(X, dtype=np.float64, copy=True)
    matrix.sum_duplicates()
    matrix.eliminate_zeros()
    matrix.sort_indices()
    if matrix.shape[0] == 0:
        raise DatasetValidationError("The dataset has no rows.")
    if matrix.shape[1] != len(names):
        raise DatasetValidationError(
            f"The feature matrix has {matrix.shape[1]} columns but {len(names)} feature names were given."
        )
    finite = np.isfinite(matrix.data)
    if not finite.all():
        k = int(np.flatnonzero(~finite)[0])
        row_index = int(np.searchsorted(matrix.indptr, k, side="right") - 1)
        value = matrix.data[k]
        what = "a missing value" if math.isnan(value) else f"{value}, not a finite number"
        raise DatasetValidationError(f"Row {row_index}, column '{names[matrix.indices[k]]}': {what}.")
    return matrix


#: ``Dataset.meta`` key saying how ``features`` is stored: absent or "dense" (raw little-endian float64,
#: row-major), "csr" (a ``numpy.savez`` archive of data, indices, indptr and shape; loaded without pickle)
FEATURE_FORMAT_KEY = "feature_format"


def encode_features(X: Any) -> tuple[bytes, str]:
    """The bytes stored for a validated feature matrix and its format ("dense" or "csr")."""
    if sp.issparse(X):
        buffer = io.BytesIO()
        np.savez(
            buffer,
            allow_pickle=False,
            data=np.asarray(X.data, "<f8"),
            indices=np.asarray(X.indices, "<i4"),
            indptr=np.asarray(X.indptr, "<i8"),
            shape=np.asarray(X.shape, "<i8"),
        )
        return buffer.getvalue(), "csr"
    return np.ascontiguousarray(X, dtype="<f8").tobytes(), "dense"


def stored_dense(meta: dict[str, Any] | None) -> bool:
    """Whether a matrix stored with this dataset meta is the dense row-major float64 bytes (no feature
    format named, or "dense")."""
    return (meta or {}).get(FEATURE_FORMAT_KEY, "dense") == "dense"


def decode_features(
    blob: bytes | bytearray, n_rows: int, n_features: int, meta: dict[str, Any] | None, writable: bool = True
) -> Any:
    """The feature matrix as stored: a fresh writable float64 array, or a float64 CSR matrix.

    ``writable=False``: a dense matrix is a read-only view of ``blob`` (no copy), for a reader that
    only gathers rows from it."""
    fmt = (meta or {}).get(FEATURE_FORMAT_KEY, "dense")
    if fmt == "dense":
        view = np.frombuffer(blob, dtype="<f8").reshape(n_rows, n_features)
        if writable:  # (a bytearray put together for this call is the reader's own: no second copy)
            return view if isinstance(blob, bytearray) else view.astype(np.float64, copy=True)
        view.flags.writeable = False  # (over a bytearray too)
        return view
    if fmt != "csr":
        raise StorageError(f"Unknown feature format '{fmt}' (this MarginLab reads dense and csr).")
    try:
        with np.load(io.BytesIO(blob), allow_pickle=False) as archive:
            shape = tuple(int(v) for v in archive["shape"])
            matrix = sp.csr_matrix(
                (
                    archive["data"].astype(np.float64),
                    archive["indices"].astype(np.int32),
                    archive["indptr"].astype(np.int64),
                ),
                shape=shape,
            )
    except (KeyError, ValueError, OSError, EOFError, zipfile.BadZipFile) as error:
        raise StorageError(f"The stored sparse feature matrix cannot be read ({error}).") from None
    if shape != (n_rows, n_features):
        raise StorageError(f"The stored sparse feature matrix has shape {shape}, not ({n_rows}, {n_features}).")
    return matrix


def _validate_matrix(X: Any, names: tuple[str, ...]) -> Any:
    if sp.issparse(X):
        return _validate_sparse(X, names)
    n_features = len(names)
    if not isinstance(X, np.ndarray) and hasattr(X, "to_numpy"):  # pandas
        X = X.to_numpy()
    if isinstance(X, np.ndarray) and X.dtype.kind in "fiu" and X.ndim == 2:
        matrix = X.astype(np.float64, copy=True)
    else:
        if isinstance(X, np.ndarray) and X.ndim != 2:
            raise DatasetValidationError(f"The feature matrix must be 2-D (rows x columns), got {X.ndim}-D.")
        rows = X.tolist() if isinstance(X, np.ndarray) else list(X)
        for row_index, row in enumerate(rows):
            if isinstance(row, str) or not isinstance(row, Sequence | np.ndarray):
                raise DatasetValidationError(
                    f"Row {row_index} is not a list of values; the feature matrix must be 2-D."
                )
            if len(row) != n_features:
                raise DatasetValidationError(
                    f"Row {row_index} has {len(row)} values, but there are {n_features} feature columns."
                )
        matrix = np.empty((len(rows), n_features), dtype=np.float64)
        for row_index, row in enumerate(rows):
            for column, value in enumerate(row):
                matrix[row_index, column] = _to_number(value, row_index, names[column])
    if matrix.ndim != 2:
        raise DatasetValidationError(f"The feature matrix must be 2-D, got {matrix.ndim}-D.")
    if matrix.shape[0] == 0:
        raise DatasetValidationError("The dataset has no rows.")
    if matrix.shape[1] != n_features:
        raise DatasetValidationError(
            f"The feature matrix has {matrix.shape[1]} columns but {n_features} feature names were given."
        )
    finite = np.isfinite(matrix)
    if not finite.all():
        row_index, column = (int(v) for v in np.argwhere(~finite)[0])
        value = matrix[row_index, column]
        what = "a missing value" if math.isnan(value) else f"{value}, not a finite number"
        raise DatasetValidationError(f"Row {row_index}, column '{names[column]}': {what}.")
    return np.ascontiguousarray(matrix)


def _to_number(value: Any, row_index: int, column: str) -> float:
    if value is None:
        raise DatasetValidationError(f"Row {row_index}, column '{column}': a missing value.")
    if isinstance(value, bool | np.bool_):
        raise DatasetValidationError(f"Row {row_index}, column '{column}': {value!r} is a boolean, not a number.")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise DatasetValidationError(f"Row {row_index}, column '{column}': {value!r} is not a number.") from None
    return number


def _validate_true_labels(y_true: Any, n_rows: int) -> np.ndarray:
    values = list(y_true.tolist() if isinstance(y_true, np.ndarray) else y_true)
    if len(values) != n_rows:
        raise DatasetValidationError(f"There are {len(values)} true labels but {n_rows} rows.")
    labels = np.empty(n_rows, dtype=np.int8)
    for row_index, value in enumerate(values):
        if isinstance(value, bool | np.bool_) or value not in (1, -1):
            raise DatasetValidationError(f"Row {row_index}: true label {value!r} is not +1 or -1.")
        labels[row_index] = int(value)
    classes = set(labels.tolist())
    if len(classes) < 2:
        only = "+1" if classes == {1} else "-1"
        raise DatasetValidationError(f"The true labels have a single class ({only}); at least two classes are needed.")
    return labels


def _validate_item_keys(item_keys: Sequence[Any], n_rows: int) -> tuple[str | None, ...]:
    keys = _validate_texts(item_keys, n_rows, what="item keys")
    first_row: dict[str, int] = {}
    for row_index, key in enumerate(keys):
        if key is None:
            continue
        if len(key) > MAX_ITEM_KEY_LENGTH:
            storable_text(key, f"Row {row_index}: the item key", max_length=MAX_ITEM_KEY_LENGTH)
        if key in first_row:
            raise DatasetValidationError(f"Duplicate item key '{key}' in rows {first_row[key]} and {row_index}.")
        first_row[key] = row_index
    return keys


def _validate_texts(values: Sequence[Any], n_rows: int, what: str = "display values") -> tuple[str | None, ...]:
    texts = list(values.tolist() if isinstance(values, np.ndarray) else values)
    if len(texts) != n_rows:
        raise DatasetValidationError(f"There are {len(texts)} {what} but {n_rows} rows.")
    cleaned: list[str | None] = []
    for row_index, value in enumerate(texts):
        if value is None or (isinstance(value, float) and math.isnan(value)):
            cleaned.append(None)
            continue
        text = str(value)
        if "\x00" in text:
            storable_text(text, f"Row {row_index}: the {what.removesuffix('s')}")
        cleaned.append(text)
    return tuple(cleaned)


def _validate_display(
    display_kind: str,
    image_shape: Any,
    text_column: str | None,
    names: tuple[str, ...],
    display_values: tuple[str | None, ...] | None,
) -> tuple[str, tuple[int, int] | None, str | None]:
    if display_kind not in DISPLAY_KINDS:
        raise DatasetValidationError(f"Display kind '{display_kind}' is not one of {', '.join(DISPLAY_KINDS)}.")
    shape = None
    if display_kind == "image":
        if image_shape is None or len(image_shape) != 2:
            raise DatasetValidationError("An image dataset needs image_shape=(width, height).")
        width, height = (int(v) for v in image_shape)
        if width <= 0 or height <= 0 or width * height != len(names):
            raise DatasetValidationError(
                f"Images of {width}x{height} need {width * height} feature columns, the dataset has {len(names)}."
            )
        shape = (width, height)
    if display_kind == "text":
        if display_values is None:
            raise DatasetValidationError("A text dataset needs a display text for every item.")
        text_column = (text_column or "text").strip() or "text"
    else:
        text_column = text_column.strip() if text_column else None
    if text_column is not None:
        storable_text(text_column, "The text column name", max_length=MAX_TEXT_COLUMN_LENGTH)
    return display_kind, shape, text_column
