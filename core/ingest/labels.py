"""The label column as y in {-1, +1}: the positive class given, or the larger of two values; or, with
``keep_classes``, every value kept as a class (y: each row's class number, 0 to K-1, in the classes' order)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from core.ingest.errors import DataError
from core.ingest.reading import Table, describe_row, is_missing


def normalise_label(value) -> Any:
    """A label value as a comparable key: numbers as floats, anything else as stripped text."""
    text = str(value).strip()
    try:
        number = float(text)
    except ValueError:
        return text
    return number if np.isfinite(number) else text


def pretty(value) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


#: the most classes a label column keeps (one answer key each, 1 to 9)
MAX_KEPT_CLASSES = 9


def binary_labels(raw: pd.Series, column: str, positive, one_vs_rest: bool, source_name: str,
                  lines: list[int] | None = None,
                  keep_classes: bool = False) -> tuple[np.ndarray, tuple[Any, ...]]:
    missing = is_missing(raw)
    if missing.any():
        i = int(np.flatnonzero(missing)[0])
        raise DataError(f"{source_name}: missing label in column {column!r}, {describe_row(i, lines)}")
    keys = [normalise_label(v) for v in raw]
    numeric = all(isinstance(k, float) for k in keys)
    if not numeric:  # mixed columns compare as text ("1" and "a")
        keys = [str(v).strip() for v in raw]
    found = sorted(set(keys))
    shown = ", ".join(repr(pretty(c)) for c in found[:10]) + (" ..." if len(found) > 10 else "")
    pos_key = None
    if positive is not None:
        pos_key = normalise_label(positive) if numeric else str(positive).strip()
        if pos_key not in found:
            raise DataError(f"{source_name}: positive value {pretty(positive)!r} does not occur in label column "
                            f"{column!r}; values found: {shown}")
    if len(found) < 2:
        raise DataError(f"{source_name}: label column {column!r} has only one class ({shown}); "
                        "two classes are needed")
    if keep_classes and len(found) > 2:
        if len(found) > MAX_KEPT_CLASSES:
            raise DataError(f"{source_name}: label column {column!r} has {len(found)} values ({shown}); every "
                            f"value can be kept as a class for up to {MAX_KEPT_CLASSES}: choose the positive value "
                            "instead (that value against the rest)")
        names = [pretty(c) for c in found]
        if len(set(names)) < len(names):
            raise DataError(f"{source_name}: label column {column!r} has values that read alike ({shown}); "
                            "they cannot be told apart as classes")
        where = {c: k for k, c in enumerate(found)}
        return np.array([float(where[k]) for k in keys]), tuple(names)
    if len(found) > 2 and pos_key is None:
        raise DataError(f"{source_name}: label column {column!r} has {len(found)} classes ({shown}); "
                        "choose the positive value (that value against the rest)")
    if pos_key is None:
        pos_key = found[-1]
    y = np.array([1.0 if k == pos_key else -1.0 for k in keys])
    if len(found) == 2:
        negative = pretty(found[0] if found[1] == pos_key else found[1])
    else:
        negative = "rest"
    return y, (negative, pretty(pos_key))


def labels(table: Table, column: str | None, positive, one_vs_rest: bool,
           keep_rows: np.ndarray, keep_classes: bool = False) -> tuple[np.ndarray | None, tuple[Any, ...] | None]:
    """y for every row of the file (0 in the rows left out) and the classes (negative, positive); None
    without a label column.  ``keep_classes`` (no ``positive``) and more than two values: every value is a
    class (3 to ``MAX_KEPT_CLASSES``), y each row's class number and the classes all the names."""
    if column is None:
        return None, None
    lines = table.lines
    raw = table.df[column][keep_rows]
    kept_lines = None if lines is None else [ln for ln, k in zip(lines, keep_rows, strict=True) if k]
    y, classes = binary_labels(raw.reset_index(drop=True), column, positive, one_vs_rest, table.source_name,
                               kept_lines, keep_classes=keep_classes and positive is None)
    y_full = np.zeros(len(table.df))
    y_full[keep_rows] = y
    return y_full, classes
