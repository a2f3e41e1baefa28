"""Importing files as datasets: CSV files, loaded datasets, and label exports.

CSV parsing and checking is ``core.datasets.load_csv``'s job (imported when
first needed, with pandas, so that labelling processes start quickly); its ``DataError``
(which names the row, column and value) is re-raised as
``DatasetValidationError`` with the same message. Everything is checked
before anything is written, so a rejected file leaves the database unchanged.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np

from storage.errors import DatasetValidationError, StorageError
from storage.export import EXPORT_FORMATS, FEATURE_PREFIX, RESERVED_COLUMNS, unescape_cell
from storage.repository import EngineLike, import_dataset

FileSource = str | os.PathLike[str] | bytes | IO[bytes] | IO[str]


def import_csv(
    engine: EngineLike,
    source: FileSource,
    *,
    name: str | None = None,
    label_column: str | None = None,
    positive: Any = None,
    feature_columns: Sequence[str] | None = None,
    display_column: str | None = None,
    image_shape: tuple[int, int] | None = None,
    key_column: str | None = None,
    constant_columns: str = "drop",
    one_vs_rest: bool = False,
    sep: str | None = None,
    scaling: str = "standard",
    **options: Any,
) -> int:
    """Check and import a CSV file (path, bytes or file object) as a dataset; return its id.

    The options are those of ``core.datasets.load_csv`` (delimiter and decimal
    separator detected unless given; ``missing``, ``one_hot``, ``text_columns``,
    ``smiles_column``, ...); ``scaling`` (``standard`` or ``none``) is stored
    with the dataset and applied by sessions and comparisons. Raises
    ``DatasetValidationError`` naming the row/column for a malformed file and
    ``DuplicateDatasetError`` when the same data was imported before.
    """
    from core.datasets import DataError, load_csv

    try:
        dataset = load_csv(
            source,
            label_column=label_column,
            positive=positive,
            feature_columns=feature_columns,
            display_column=display_column,
            image_shape=image_shape,
            name=name,
            key_column=key_column,
            constant_columns=constant_columns,
            one_vs_rest=one_vs_rest,
            sep=sep,
            **options,
        )
    except DataError as error:
        raise DatasetValidationError(str(error)) from error
    extra: dict[str, Any] = {"label_column": label_column} if label_column else {}
    extra["scaling"] = scaling
    return import_loaded_dataset(engine, dataset, text_column=display_column, meta=extra)


def import_loaded_dataset(
    engine: EngineLike,
    dataset: Any,
    *,
    name: str | None = None,
    text_column: str | None = None,
    meta: dict[str, Any] | None = None,
) -> int:
    """Store a ``core.datasets.Dataset`` (from ``load_csv``, ``load_bundled``, ...); return its id."""
    info: dict[str, Any] = dict(meta or {})
    if getattr(dataset, "classes", None) is not None:
        negative, positive = dataset.classes
        info["classes"] = {"negative": _plain_value(negative), "positive": _plain_value(positive)}
    if getattr(dataset, "dropped_columns", None):
        info["dropped_columns"] = list(dataset.dropped_columns)
    if getattr(dataset, "description", ""):
        info["description"] = dataset.description
    info.update(dataset_meta(dataset))
    if text_column is None and getattr(dataset, "display_kind", "") == "text":
        blocks = getattr(dataset, "feature_blocks", None) or []
        text_column = getattr(dataset, "molecule_column", None) or next(
            (b["column"] for b in blocks if b.get("kind") in ("tfidf", "svd")), None
        )
    return import_dataset(
        engine,
        name=name or dataset.name,
        X=dataset.X,
        feature_names=dataset.feature_names,
        y_true=dataset.y,
        source=dataset.source,
        display_kind=dataset.display_kind,
        image_shape=dataset.image_shape,
        text_column=text_column,
        display_values=dataset.display_values,
        item_keys=dataset.item_keys,
        meta=info,
    )


def dataset_meta(dataset: Any) -> dict[str, Any]:
    """What a loaded dataset says about its features, kept with it: blocks (which columns came from
    which text, SMILES or numeric columns), the kernel that suits them, the molecule column, the
    import's options and notices (JSON values only)."""
    info: dict[str, Any] = {}
    if getattr(dataset, "feature_blocks", None):
        info["feature_blocks"] = [dict(b) for b in dataset.feature_blocks]
    if getattr(dataset, "default_kernel", "rbf") != "rbf":
        info["default_kernel"] = dataset.default_kernel
    if getattr(dataset, "molecule_column", None):
        info["molecule_column"] = dataset.molecule_column
    if getattr(dataset, "import_options", None):
        info["import_options"] = dict(dataset.import_options)
    if getattr(dataset, "notices", None):
        info["notices"] = list(dataset.notices)
    return info


def import_labelled_export(
    engine: EngineLike,
    source: FileSource,
    *,
    name: str,
    fmt: str | None = None,
    display_kind: str = "table",
    image_shape: tuple[int, int] | None = None,
) -> int:
    """Import an ``export_labels`` file as a new dataset whose true labels are its labels.

    The items keep their order, keys, display texts and exact feature values.
    Export without skips: a skip (label 0) is not a true label.
    """
    data, source_name = _read_source(source)
    if fmt is None:
        fmt = "jsonl" if source_name.lower().endswith((".jsonl", ".ndjson")) else "csv"
    if fmt not in EXPORT_FORMATS:
        raise StorageError(f"Export format '{fmt}' is not one of {', '.join(EXPORT_FORMATS)}.")
    reader = _read_export_csv if fmt == "csv" else _read_export_jsonl
    X, names, labels, keys, texts = reader(data, source_name)
    return import_dataset(
        engine,
        name=name,
        X=X,
        feature_names=names,
        y_true=labels,
        source=source_name,
        display_kind=display_kind,
        image_shape=image_shape,
        text_column="display_text" if display_kind == "text" else None,
        display_values=texts,
        item_keys=keys,
    )


def _read_export_csv(data: bytes, source_name: str) -> tuple[np.ndarray, list[str], Any, Any, Any]:
    header_line = data.decode("utf-8-sig", errors="replace").partition("\n")[0]
    header = [h.strip() for h in next(csv.reader([header_line]), [])]
    missing = [c for c in ("item_index", "label") if c not in header]
    if missing:
        raise DatasetValidationError(
            f"{source_name}: not a MarginLab label export (no column {', '.join(repr(c) for c in missing)})."
        )
    feature_headers = [h for h in header if h not in RESERVED_COLUMNS]
    if not feature_headers:
        raise DatasetValidationError(f"{source_name}: the export has no feature columns (exported without features).")
    import pandas as pd

    from core.datasets import DataError, load_csv

    named = io.BytesIO(data)
    named.name = source_name
    # +1 / -1 in label_value; exports from before class names had them in label
    label_column = "label_value" if "label_value" in header else "label"
    try:
        # an export comes back as it was, bit for bit (whatever magnitudes it was stored with)
        dataset = load_csv(
            named,
            label_column=label_column,
            positive=1,
            feature_columns=feature_headers,
            constant_columns="keep",
            max_value=None,
        )
    except DataError as error:
        raise DatasetValidationError(str(error)) from error
    texts = pd.read_csv(
        io.BytesIO(data), usecols=["item_key", "display_text"], dtype=str, keep_default_na=False, encoding="utf-8-sig"
    )
    # undo the export's escaping against spreadsheet formulas (storage.export.escape_cell)
    keys = [unescape_cell(key) if key != "" else None for key in texts["item_key"]]
    display = [unescape_cell(text) if text != "" else None for text in texts["display_text"]]
    names = [unescape_cell(h).removeprefix(FEATURE_PREFIX) for h in feature_headers]
    return (
        dataset.X,
        names,
        dataset.y,
        keys if any(k is not None for k in keys) else None,
        display if any(t is not None for t in display) else None,
    )


def _read_export_jsonl(data: bytes, source_name: str) -> tuple[np.ndarray, list[str], Any, Any, Any]:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line_number = data[: error.start].count(b"\n") + 1
        raise DatasetValidationError(f"{source_name}: line {line_number} is not UTF-8 text.") from None
    records = []
    for line_number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            message = f"{source_name}: line {line_number} is not valid JSON ({error.msg})."
            raise DatasetValidationError(message) from None
        if not isinstance(record, dict) or not isinstance(record.get("features"), dict) or "label" not in record:
            raise DatasetValidationError(
                f"{source_name}: line {line_number} is not a MarginLab export record with 'features' and 'label'."
            )
        records.append((line_number, record))
    if not records:
        raise DatasetValidationError(f"{source_name}: the file is empty.")
    names = list(records[0][1]["features"])
    X = np.empty((len(records), len(names)))
    labels = np.empty(len(records), dtype=np.int8)
    for row_index, (line_number, record) in enumerate(records):
        features = record["features"]
        if list(features) != names:
            raise DatasetValidationError(f"{source_name}: line {line_number} has other features than line 1.")
        for j, feature in enumerate(names):
            value = features[feature]
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise DatasetValidationError(
                    f"{source_name}: line {line_number}, feature '{feature}': {value!r} is not a finite number."
                )
            X[row_index, j] = value
        label = record.get("label_value", record["label"])  # exports from before class names: in label
        if isinstance(label, bool) or label not in (1, -1):
            raise DatasetValidationError(
                f"{source_name}: line {line_number}: label {label!r} is not +1 or -1 (export without skips)."
            )
        labels[row_index] = label
    keys = [record.get("item_key") for _, record in records]
    texts = [record.get("display_text") for _, record in records]
    return (
        X,
        names,
        labels,
        keys if any(k is not None for k in keys) else None,
        texts if any(t is not None for t in texts) else None,
    )


def _read_source(source: FileSource) -> tuple[bytes, str]:
    if isinstance(source, bytes | bytearray | memoryview):
        return bytes(source), "data"
    if isinstance(source, str | os.PathLike):
        path = Path(source)
        try:
            return path.read_bytes(), path.name
        except OSError as error:
            raise DatasetValidationError(f"{path.name}: cannot be read ({error.strerror}).") from None
    if hasattr(source, "read"):
        data = source.read()
        name = str(getattr(source, "name", "") or "data")
        return (data.encode("utf-8") if isinstance(data, str) else bytes(data)), Path(name).name
    raise TypeError(f"cannot read a file from {type(source).__name__}")


def _plain_value(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    return value if isinstance(value, str | int | float | bool) or value is None else str(value)
