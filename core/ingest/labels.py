"""The label column as y in {-1, +1} (the positive class given, or the larger of two values), or, in the
``classes`` mode, as class indices 0..K-1 with the K class names."""

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


def _label_keys(
    raw: pd.Series, column: str, source_name: str, lines: list[int] | None
) -> tuple[list[Any], bool, list[Any], str]:
    """(each row's label key, whether the column is numeric, the keys found sorted, them shown)."""
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
    return keys, numeric, found, shown


def class_labels(
    raw: pd.Series, column: str, source_name: str, lines: list[int] | None = None, names=None
) -> tuple[np.ndarray, tuple[str, ...]]:
    """The ``classes`` mode: (class index per row, the class names), every value of the column a class.

    Without ``names`` the classes are the values found, sorted (numbers as numbers); with ``names`` they
    are those, in that order, and a value of the column that is not one of them, or a name that does not
    occur in the column, is refused with its name (and count)."""
    keys, numeric, found, shown = _label_keys(raw, column, source_name, lines)
    if names is None:
        ordered, shown_names = found, tuple(pretty(k) for k in found)
    else:
        shown_names = tuple(str(n).strip() for n in names)
        ordered = [normalise_label(n) if numeric else n for n in shown_names]
        if any(not n for n in shown_names) or len(set(ordered)) != len(ordered):
            raise DataError(
                f"{source_name}: the classes must be distinct non-empty names, got "
                f"{', '.join(repr(n) for n in shown_names)}"
            )
        unknown = [k for k in found if k not in ordered]
        if unknown:
            counts = ", ".join(f"{pretty(k)!r} ({keys.count(k)} items)" for k in unknown[:10])
            raise DataError(
                f"{source_name}: label column {column!r} has values that are not among the classes "
                f"given ({', '.join(shown_names)}): {counts}" + (" ..." if len(unknown) > 10 else "")
            )
        absent = [n for n, k in zip(shown_names, ordered, strict=True) if k not in found]
        if absent:
            raise DataError(
                f"{source_name}: class {absent[0]!r} does not occur in label column {column!r}; values found: {shown}"
            )
    if len(ordered) < 2:
        raise DataError(
            f"{source_name}: label column {column!r} has only one class ({shown}); K classes need at least two"
        )
    index = {k: c for c, k in enumerate(ordered)}
    return np.array([index[k] for k in keys], dtype=np.intp), shown_names


def binary_labels(
    raw: pd.Series, column: str, positive, one_vs_rest: bool, source_name: str, lines: list[int] | None = None
) -> tuple[np.ndarray, tuple[Any, Any]]:
    keys, numeric, found, shown = _label_keys(raw, column, source_name, lines)
    pos_key = None
    if positive is not None:
        pos_key = normalise_label(positive) if numeric else str(positive).strip()
        if pos_key not in found:
            raise DataError(
                f"{source_name}: positive value {pretty(positive)!r} does not occur in label column "
                f"{column!r}; values found: {shown}"
            )
    if len(found) < 2:
        raise DataError(f"{source_name}: label column {column!r} has only one class ({shown}); two classes are needed")
    if len(found) > 2 and pos_key is None:
        raise DataError(
            f"{source_name}: label column {column!r} has {len(found)} classes ({shown}); "
            "choose the positive value (that value against the rest)"
        )
    if pos_key is None:
        pos_key = found[-1]
    y = np.array([1.0 if k == pos_key else -1.0 for k in keys])
    if len(found) == 2:
        negative = pretty(found[0] if found[1] == pos_key else found[1])
    else:
        negative = "rest"
    return y, (negative, pretty(pos_key))


def labels(
    table: Table, column: str | None, positive, one_vs_rest: bool, keep_rows: np.ndarray
) -> tuple[np.ndarray | None, tuple[Any, Any] | None]:
    """y for every row of the file (0 in the rows left out) and the classes (negative, positive); None
    without a label column."""
    if column is None:
        return None, None
    lines = table.lines
    raw = table.df[column][keep_rows]
    kept_lines = None if lines is None else [ln for ln, k in zip(lines, keep_rows, strict=True) if k]
    y, classes = binary_labels(raw.reset_index(drop=True), column, positive, one_vs_rest, table.source_name, kept_lines)
    y_full = np.zeros(len(table.df))
    y_full[keep_rows] = y
    return y_full, classes


def class_labels_of(
    table: Table, column: str | None, keep_rows: np.ndarray, names=None
) -> tuple[np.ndarray | None, tuple[str, ...] | None]:
    """:func:`class_labels` of the rows kept (None, None without a label column)."""
    if column is None:
        return None, None
    lines = table.lines
    raw = table.df[column][keep_rows]
    kept_lines = None if lines is None else [ln for ln, k in zip(lines, keep_rows, strict=True) if k]
    return class_labels(raw.reset_index(drop=True), column, table.source_name, kept_lines, names)
