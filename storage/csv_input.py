"""Reading a CSV file into a dataset, with messages that name the row and column.

Rows are numbered as a spreadsheet user counts them: "row 1" is the first data
row (the line after the header); the file line is given as well when it
differs (quoted fields may span lines). Parsing is exact: numbers are read
with Python's ``float``, so a value written with ``repr`` reads back bit for bit.
"""

from __future__ import annotations

import csv
import io
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np

from storage.errors import DatasetValidationError

#: cell texts read as a missing value
MISSING_TOKENS = frozenset({"", "na", "n/a", "nan", "null", "none", "-"})

CsvSource = str | os.PathLike[str] | bytes | IO[bytes] | IO[str]


@dataclass(frozen=True)
class CsvTable:
    """A rectangular CSV: header, rows of cell texts, and each row's file line."""

    header: tuple[str, ...]
    rows: list[list[str]]
    lines: list[int]

    def where(self, row_index: int) -> str:
        """'row 5' or 'row 5 (line 9)': how to name a data row in a message."""
        row_number = row_index + 1
        line = self.lines[row_index]
        return f"row {row_number}" if line == row_number + 1 else f"row {row_number} (line {line})"

    def column(self, name: str) -> list[str]:
        position = self.header.index(name)
        return [row[position] for row in self.rows]


@dataclass(frozen=True)
class ParsedDataset:
    """Arrays ready for ``import_dataset``."""

    X: np.ndarray
    feature_names: list[str]
    y_true: np.ndarray | None
    item_keys: list[str] | None
    display_values: list[str] | None
    text_column: str | None
    meta: dict[str, Any] = field(default_factory=dict)


def read_csv_table(source: CsvSource, *, encoding: str = "utf-8", delimiter: str = ",") -> CsvTable:
    """Decode and split a CSV file, checking that every row has as many cells as the header."""
    text = decode_text(read_source_bytes(source), encoding)
    if not text.strip():
        raise DatasetValidationError("The file is empty.")
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    try:
        header_cells = next(reader)
        header = _check_header(header_cells)
        rows: list[list[str]] = []
        lines: list[int] = []
        line_before = reader.line_num
        for cells in reader:
            first_line = line_before + 1
            line_before = reader.line_num
            if not cells or (len(cells) == 1 and not cells[0].strip() and len(header) > 1):
                continue  # blank line
            if len(cells) != len(header):
                where = f"row {len(rows) + 1}" + (f" (line {first_line})" if first_line != len(rows) + 2 else "")
                raise DatasetValidationError(
                    f"{where.capitalize()} has {len(cells)} values, but the header has {len(header)} columns."
                )
            rows.append(cells)
            lines.append(first_line)
    except csv.Error as error:
        raise DatasetValidationError(f"Line {reader.line_num} cannot be read as CSV: {error}.") from None
    if not rows:
        raise DatasetValidationError("The file has a header but no data rows.")
    return CsvTable(header=header, rows=rows, lines=lines)


def parse_csv(
    source: CsvSource,
    *,
    label_column: str | None = None,
    positive: Any = None,
    feature_columns: Sequence[str] | None = None,
    key_column: str | None = None,
    text_column: str | None = None,
    encoding: str = "utf-8",
    delimiter: str = ",",
) -> ParsedDataset:
    """Parse a CSV file into a feature matrix, optional +1/-1 labels, keys and texts.

    Feature columns default to every column except the label, key and text
    columns; each must hold finite numbers only. The label column must hold
    two classes; ``positive`` names the positive one (when omitted: 1 for
    0/1 or -1/+1 columns, otherwise the later of the two values in sorted order).
    """
    table = read_csv_table(source, encoding=encoding, delimiter=delimiter)
    for role, column in (("label", label_column), ("key", key_column), ("text", text_column)):
        if column is not None and column not in table.header:
            raise DatasetValidationError(
                f"The {role} column '{column}' is not in the file (columns: {_names(table.header)})."
            )
    special = {c for c in (label_column, key_column, text_column) if c is not None}
    if feature_columns is None:
        features = [name for name in table.header if name not in special]
    else:
        features = list(feature_columns)
        for name in features:
            if name not in table.header:
                raise DatasetValidationError(
                    f"The feature column '{name}' is not in the file (columns: {_names(table.header)})."
                )
    if not features:
        raise DatasetValidationError("The file has no feature columns.")
    X = numeric_matrix(table, features)
    meta: dict[str, Any] = {}
    y_true = None
    if label_column is not None:
        y_true, meta = binary_labels(table, label_column, positive)
    keys = None
    if key_column is not None:
        keys = table.column(key_column)
        first_row: dict[str, int] = {}
        for row_index, key in enumerate(keys):
            if key in first_row:
                raise DatasetValidationError(
                    f"Column '{key_column}': the key '{key}' appears in "
                    f"{table.where(first_row[key])} and {table.where(row_index)}."
                )
            first_row[key] = row_index
    texts = table.column(text_column) if text_column is not None else None
    return ParsedDataset(
        X=X,
        feature_names=features,
        y_true=y_true,
        item_keys=keys,
        display_values=texts,
        text_column=text_column,
        meta=meta,
    )


def numeric_matrix(table: CsvTable, columns: Sequence[str]) -> np.ndarray:
    """The named columns as a float64 matrix; the first bad cell is reported."""
    X = np.empty((len(table.rows), len(columns)), dtype=np.float64)
    first_problem: tuple[int, int, str] | None = None
    for j, name in enumerate(columns):
        position = table.header.index(name)
        try:
            X[:, j] = [float(row[position]) for row in table.rows]
        except ValueError:
            problem = _first_bad_cell(table, position)
        else:
            problem = _first_non_finite(X[:, j], table, position)
        if problem is not None and (first_problem is None or problem[0] < first_problem[0]):
            first_problem = (problem[0], j, problem[1])
    if first_problem is not None:
        row_index, j, what = first_problem
        raise DatasetValidationError(f"Column '{columns[j]}', {table.where(row_index)}: {what}.")
    return X


def binary_labels(table: CsvTable, column: str, positive: Any = None) -> tuple[np.ndarray, dict[str, Any]]:
    """The label column as +1/-1 (int8) and a description of the mapping."""
    cells = [cell.strip() for cell in table.column(column)]
    for row_index, cell in enumerate(cells):
        if cell.lower() in MISSING_TOKENS - {"-"}:
            raise DatasetValidationError(f"Column '{column}', {table.where(row_index)}: the label is missing.")
    classes = sorted(set(cells), key=_sort_key)
    if len(classes) < 2:
        raise DatasetValidationError(f"Column '{column}' has a single class ('{classes[0]}'); two classes are needed.")
    if positive is None:
        if len(classes) > 2:
            shown = ", ".join(f"'{c}'" for c in classes[:5]) + (", ..." if len(classes) > 5 else "")
            raise DatasetValidationError(
                f"Column '{column}' has {len(classes)} classes ({shown}); choose which one is positive."
            )
        numeric = {_as_number(c) for c in classes}
        positive_text = classes[1]
        if numeric in ({0.0, 1.0}, {-1.0, 1.0}):
            positive_text = next(c for c in classes if _as_number(c) == 1.0)
    else:
        positive_text = _matching_class(classes, positive)
        if positive_text is None:
            raise DatasetValidationError(
                f"Column '{column}' has no row with the positive value '{positive}' (values: {_names(classes[:10])})."
            )
    is_positive = np.array([cell == positive_text for cell in cells])
    y = np.where(is_positive, 1, -1).astype(np.int8)
    negatives = [c for c in classes if c != positive_text]
    meta = {"label_column": column, "positive": positive_text, "negative": negatives}
    return y, meta


def _matching_class(classes: list[str], positive: Any) -> str | None:
    wanted = str(positive).strip()
    if wanted in classes:
        return wanted
    number = _as_number(wanted)
    if number is not None:
        for candidate in classes:
            if _as_number(candidate) == number:
                return candidate
    return None


def _as_number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _sort_key(text: str) -> tuple[int, float, str]:
    number = _as_number(text)
    return (0, number, text) if number is not None and math.isfinite(number) else (1, 0.0, text)


def _first_bad_cell(table: CsvTable, position: int) -> tuple[int, str]:
    for row_index, row in enumerate(table.rows):
        cell = row[position]
        try:
            value = float(cell)
        except ValueError:
            if cell.strip().lower() in MISSING_TOKENS:
                return row_index, "missing value"
            return row_index, f"'{_shorten(cell)}' is not a number"
        if not math.isfinite(value):
            return row_index, _non_finite_message(cell, value)
    raise AssertionError("no bad cell found")  # pragma: no cover


def _first_non_finite(values: np.ndarray, table: CsvTable, position: int) -> tuple[int, str] | None:
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size == 0:
        return None
    row_index = int(bad[0])
    return row_index, _non_finite_message(table.rows[row_index][position], values[row_index])


def _non_finite_message(cell: str, value: float) -> str:
    if math.isnan(value):
        return "missing value"
    return f"'{_shorten(cell)}' is not a finite number"


def _check_header(cells: list[str]) -> tuple[str, ...]:
    names = [cell.strip() for cell in cells]
    seen: dict[str, int] = {}
    for position, name in enumerate(names, start=1):
        if not name:
            raise DatasetValidationError(f"Column {position} of the header has no name.")
        if name in seen:
            raise DatasetValidationError(f"Duplicate column name '{name}' (columns {seen[name]} and {position}).")
        seen[name] = position
    return tuple(names)


def read_source_bytes(source: CsvSource) -> bytes:
    if isinstance(source, bytes):
        return source
    if isinstance(source, str | os.PathLike):
        return Path(source).read_bytes()
    if hasattr(source, "getvalue"):
        data = source.getvalue()
    elif hasattr(source, "read"):
        data = source.read()
    else:
        raise TypeError("expected a path, bytes, or a file object")
    return data.encode("utf-8") if isinstance(data, str) else bytes(data)


def decode_text(data: bytes, encoding: str) -> str:
    if encoding.lower().replace("_", "-") in ("utf-8", "utf8"):
        encoding = "utf-8-sig"  # accept a byte-order mark
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        byte = data[error.start]
        raise DatasetValidationError(
            f"The file is not valid {encoding.removesuffix('-sig').upper()} text: line {line} "
            f"has the byte 0x{byte:02x}. Save it as UTF-8 (or choose its encoding) and import again."
        ) from None
    except LookupError:
        raise DatasetValidationError(f"Unknown text encoding '{encoding}'.") from None


def _names(names: Sequence[str]) -> str:
    return ", ".join(f"'{name}'" for name in names)


def _shorten(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
