"""Datasets: the bundled ones and uploaded CSVs, previewed and checked before anything is stored."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from app.services.common import DEMO_NAME, ServiceError, scaling_name
from storage import repository as repo
from storage.errors import DuplicateDatasetError


@dataclass
class ImportResult:
    dataset_id: int
    created: bool
    message: str


@dataclass
class CsvPreview:
    header: list[str]
    frame: pd.DataFrame
    n_rows: int
    notes: list[str] = field(default_factory=list)


def _csv_text(data: bytes) -> io.StringIO:
    """An uploaded file as text for ``csv.reader``, whose cells may be as long as the file.

    Python's csv module refuses cells over ``csv.field_size_limit()`` (128 KiB by
    default) while the import (pandas) takes them; no cell can be longer than the
    file, so the limit is raised to the file's length (never lowered: it is per process).
    """
    text = data.decode("utf-8", errors="replace")
    if csv.field_size_limit() < len(text):
        csv.field_size_limit(len(text))
    return io.StringIO(text, newline="")


def _unique(names: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name} ({seen[name]})")
    return out


def _natural_key(text: str) -> tuple:
    try:
        return (0, float(text), text)
    except ValueError:
        return (1, 0.0, re.sub(r"\s+", " ", text.lower()))


class Datasets:
    """The dataset part of ``MarginLab`` (``self.engine`` is the service's engine)."""

    def datasets(self) -> list[repo.DatasetInfo]:
        return repo.list_datasets(self.engine)

    def dataset(self, dataset_id: int) -> repo.DatasetInfo:
        return repo.get_dataset(self.engine, dataset_id)

    def ensure_demo_dataset(self) -> int | None:
        """On first start (no dataset at all) import the bundled digits, 8 vs rest."""
        if self.datasets():
            return None
        return self.import_bundled("digits", positive=8, name=DEMO_NAME).dataset_id

    def bundled_names(self) -> list[str]:
        from core.datasets import BUNDLED

        return list(BUNDLED)

    def import_bundled(self, key: str, *, positive: Any = None, name: str | None = None,
                       scaling: str = "none") -> ImportResult:
        from core.datasets import load_bundled

        return self._import_loaded(load_bundled(key, positive=positive), name=name, scaling=scaling,
                                   extra_meta={"bundled": key})

    def preview_csv(self, data: bytes, n: int = 20) -> CsvPreview:
        """Header and the first rows of an uploaded CSV as text cells (checked only on import)."""
        reader = csv.reader(_csv_text(data))
        header = next(reader, [])
        rows = []
        n_rows = 0
        for cells in reader:
            if not cells:
                continue
            n_rows += 1
            if len(rows) < n:
                rows.append((cells + [""] * len(header))[: len(header)])
        names = [h if h else f"(column {k + 1})" for k, h in enumerate(header)]
        frame = pd.DataFrame(rows, columns=_unique(names))
        return CsvPreview(header=list(header), frame=frame, n_rows=n_rows)

    def column_values(self, data: bytes, column: str, limit: int = 50) -> list[str]:
        """Distinct values of one column of an uploaded CSV (to choose the positive class)."""
        reader = csv.DictReader(_csv_text(data))
        seen: dict[str, None] = {}
        for row in reader:
            value = (row.get(column) or "").strip()
            if value and value not in seen:
                seen[value] = None
                if len(seen) >= limit:
                    break
        return sorted(seen, key=_natural_key)

    def import_csv(self, data: bytes, *, name: str, feature_columns: Sequence[str] | None = None,
                   label_column: str | None = None, positive: Any = None, display: str = "table",
                   image_shape: tuple[int, int] | None = None, text_column: str | None = None,
                   key_column: str | None = None, scaling: str = "none", constant_columns: str = "error",
                   source: str = "") -> ImportResult:
        """Check and import an uploaded CSV; errors name the row or column and change nothing.

        Raises ``core.datasets.DataError`` / ``storage.errors.DatasetValidationError``
        (bad file) or ``ServiceError`` (inconsistent choices).
        """
        from core.datasets import load_csv

        if display == "text" and not text_column:
            raise ServiceError("Choose the text column to show for each item.")
        if display == "image" and not image_shape:
            raise ServiceError("Give the image width and height.")
        if positive in ("", None) and label_column:
            positive = None
        loaded = load_csv(data, label_column=label_column or None, positive=positive,
                          feature_columns=list(feature_columns) if feature_columns else None,
                          display_column=text_column if display == "text" else None,
                          image_shape=tuple(image_shape) if display == "image" else None,
                          name=name, key_column=key_column or None, constant_columns=constant_columns,
                          one_vs_rest=bool(label_column) and positive is not None)
        if display == "image":
            width, height = image_shape
            if width * height != loaded.X.shape[1]:
                raise ServiceError(
                    f"An image of {width}×{height} needs {width * height} feature columns; "
                    f"{loaded.X.shape[1]} are chosen.")
        extra = {"label_column": label_column} if label_column else {}
        return self._import_loaded(loaded, name=name, scaling=scaling, source=source, extra_meta=extra,
                                   text_column=text_column if display == "text" else None)

    def _import_loaded(self, data, *, name: str | None, scaling: str, source: str = "",
                       extra_meta: dict | None = None, text_column: str | None = None) -> ImportResult:
        scaling = scaling_name(scaling)
        kind = data.display_kind or "table"
        meta: dict[str, Any] = dict(extra_meta or {}, scaling=scaling)
        if data.classes:
            meta["classes"] = {"negative": str(data.classes[0]), "positive": str(data.classes[1])}
        if data.description:
            meta["description"] = str(data.description)
        if getattr(data, "dropped_columns", None):
            meta["dropped_columns"] = list(data.dropped_columns)
        return self._import(
            name=name or data.name, X=data.X, feature_names=list(data.feature_names), y_true=data.y,
            source=source or str(data.source or ""), display_kind=kind,
            image_shape=tuple(data.image_shape) if data.image_shape else None,
            display_values=data.display_values, item_keys=data.item_keys, meta=meta,
            text_column=(text_column or "text") if kind == "text" else None)

    def _import(self, **kw) -> ImportResult:
        try:
            dataset_id = repo.import_dataset(self.engine, **kw)
        except DuplicateDatasetError as error:
            return ImportResult(error.dataset_id, False, str(error))
        return ImportResult(dataset_id, True, f"Imported '{kw['name']}' as dataset {dataset_id}.")
