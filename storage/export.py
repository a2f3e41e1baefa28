"""Export labelled items to CSV / JSON Lines, and import CSV files.

An export row is one active label: the item (index, key, display text), its
features (one column per feature name), the label (+1, -1, or 0 for a skip)
and its provenance (annotator, session, time, strategy, solver, the decision
value the model gave the item when it was asked, model version, timings).
Numbers are written with ``repr`` so they read back exactly:
``storage.importing.import_labelled_export`` turns an export back into a
dataset whose true labels are the exported labels.

CSV layout: provenance columns, then the feature columns under their own
names (a feature whose name clashes with a provenance column is written as
``feature:<name>``). JSONL layout: one object per line with the features
nested under ``"features"``.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from collections.abc import Sequence
from typing import IO, Any

import numpy as np
from sqlalchemy import select

from storage.errors import StorageError
from storage.models import Annotator, Dataset, Item, Label, LabellingSession
from storage.repository import EngineLike, reading

EXPORT_FORMATS = ("csv", "jsonl")

#: columns every export row has, in order (features come between these two groups)
ITEM_COLUMNS = ("dataset_id", "dataset_name", "session_id", "label_id", "item_index", "item_key", "display_text")
PROVENANCE_COLUMNS = (
    "label",
    "annotator",
    "labelled_at",
    "strategy",
    "solver",
    "decision_value",
    "model_version",
    "update_ms",
    "query_ms",
)
RESERVED_COLUMNS = frozenset(ITEM_COLUMNS + PROVENANCE_COLUMNS + ("features",))
FEATURE_PREFIX = "feature:"

_CHUNK_ROWS = 5_000


def export_labels(
    engine: EngineLike,
    *,
    fmt: str = "csv",
    session_id: int | None = None,
    annotator: str | None = None,
    dataset_id: int | None = None,
    include_skips: bool = False,
    include_features: bool = True,
    out: str | os.PathLike[str] | IO[str] | None = None,
) -> str | None:
    """Export active labels (filtered by session, annotator and/or dataset).

    Returns the text, or writes it to ``out`` (a path or a text stream) and
    returns None. Rows are ordered by dataset, session and labelling order.
    """
    if fmt not in EXPORT_FORMATS:
        raise StorageError(f"Export format '{fmt}' is not one of {', '.join(EXPORT_FORMATS)}.")
    query = (
        select(
            Label.id,
            Label.session_id,
            LabellingSession.dataset_id,
            Item.position,
            Item.external_key,
            Item.display_text,
            Label.value,
            Annotator.name,
            Label.created_at,
            Label.strategy,
            Label.solver,
            Label.decision_value,
            Label.model_version,
            Label.update_ms,
            Label.query_ms,
        )
        .join(Item, Item.id == Label.item_id)
        .join(Annotator, Annotator.id == Label.annotator_id)
        .join(LabellingSession, LabellingSession.id == Label.session_id)
        .where(Label.undone_at.is_(None))
        .order_by(LabellingSession.dataset_id, Label.session_id, Label.id)
    )
    if session_id is not None:
        query = query.where(Label.session_id == session_id)
    if annotator is not None:
        query = query.where(Annotator.name == annotator.strip())
    if dataset_id is not None:
        query = query.where(LabellingSession.dataset_id == dataset_id)
    if not include_skips:
        query = query.where(Label.value != 0)

    with reading(engine) as session:
        rows = session.execute(query).all()
        dataset_ids = sorted({row.dataset_id for row in rows})
        datasets: dict[int, tuple[str, list[str], np.ndarray | None]] = {}
        for did in dataset_ids:
            dataset = session.get(Dataset, did)
            assert dataset is not None
            X = None
            if include_features:
                X = np.frombuffer(dataset.features, dtype="<f8").reshape(dataset.n_rows, dataset.n_features)
            datasets[did] = (dataset.name, list(dataset.feature_names), X)

    feature_names: list[str] = []
    if include_features:
        for did in dataset_ids:
            for name in datasets[did][1]:
                if name not in feature_names:
                    feature_names.append(name)

    if out is None:
        buffer = io.StringIO(newline="")
        _write(buffer, fmt, rows, datasets, feature_names)
        return buffer.getvalue()
    if isinstance(out, str | os.PathLike):
        with open(out, "w", encoding="utf-8", newline="") as stream:
            _write(stream, fmt, rows, datasets, feature_names)
    else:
        _write(out, fmt, rows, datasets, feature_names)
    return None


def _write(
    stream: IO[str],
    fmt: str,
    rows: Sequence[Any],
    datasets: dict[int, tuple[str, list[str], np.ndarray | None]],
    feature_names: list[str],
) -> None:
    if fmt == "csv":
        _write_csv(stream, rows, datasets, feature_names)
    else:
        _write_jsonl(stream, rows, datasets)


def _write_csv(stream: IO[str], rows: Sequence[Any], datasets: Any, feature_names: list[str]) -> None:
    writer = csv.writer(stream, lineterminator="\n")
    feature_headers = [FEATURE_PREFIX + n if n in RESERVED_COLUMNS else n for n in feature_names]
    writer.writerow([*ITEM_COLUMNS, *feature_headers, *PROVENANCE_COLUMNS])
    column_of: dict[int, list[int]] = {
        did: [feature_names.index(n) for n in names] for did, (_, names, _X) in datasets.items()
    }
    blank = [""] * len(feature_names)
    for start in range(0, len(rows), _CHUNK_ROWS):
        out_rows = []
        for row in rows[start : start + _CHUNK_ROWS]:
            name, _names, X = datasets[row.dataset_id]
            features = blank
            if X is not None and feature_names:
                features = list(blank)
                for position, value in zip(column_of[row.dataset_id], X[row.position].tolist(), strict=True):
                    features[position] = repr(value)
            out_rows.append(
                [
                    row.dataset_id,
                    name,
                    row.session_id,
                    row.id,
                    row.position,
                    _text(row.external_key),
                    _text(row.display_text),
                    *features,
                    row.value,
                    row.name,
                    row.created_at.isoformat(),
                    row.strategy,
                    row.solver,
                    _number(row.decision_value),
                    row.model_version,
                    _number(row.update_ms),
                    _number(row.query_ms),
                ]
            )
        writer.writerows(out_rows)


def _write_jsonl(stream: IO[str], rows: Sequence[Any], datasets: Any) -> None:
    dumps = json.JSONEncoder(ensure_ascii=False, allow_nan=False).encode
    for start in range(0, len(rows), _CHUNK_ROWS):
        lines = []
        for row in rows[start : start + _CHUNK_ROWS]:
            name, names, X = datasets[row.dataset_id]
            record: dict[str, Any] = {
                "dataset_id": row.dataset_id,
                "dataset_name": name,
                "session_id": row.session_id,
                "label_id": row.id,
                "item_index": row.position,
                "item_key": row.external_key,
                "display_text": row.display_text,
            }
            if X is not None:
                record["features"] = dict(zip(names, X[row.position].tolist(), strict=True))
            record.update(
                label=row.value,
                annotator=row.name,
                labelled_at=row.created_at.isoformat(),
                strategy=row.strategy,
                solver=row.solver,
                decision_value=_json_number(row.decision_value),
                model_version=row.model_version,
                update_ms=_json_number(row.update_ms),
                query_ms=_json_number(row.query_ms),
            )
            lines.append(dumps(record))
        if lines:
            stream.write("\n".join(lines) + "\n")


def _text(value: str | None) -> str:
    return "" if value is None else value


def _number(value: float | None) -> str:
    return "" if value is None else repr(float(value))


def _json_number(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else value
