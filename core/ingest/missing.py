"""Missing values in the feature, one-hot and label columns: refused (every affected column at once, with
its count), or their rows left out; filling them in is the feature steps' (``impute``)."""

from __future__ import annotations

import numpy as np

from core.ingest.columns import Columns
from core.ingest.errors import DataError
from core.ingest.options import CsvOptions
from core.ingest.reading import Table, describe_row, is_missing


def first_row(mask: np.ndarray, lines: list[int] | None) -> str:
    return describe_row(int(np.flatnonzero(mask)[0]), lines)


def missing_values(
    table: Table, cols: Columns, options: CsvOptions, notices: list[str]
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The missing cells of each checked column, and the rows kept (all but those left out with
    ``missing="drop"``)."""
    source_name, lines, missing, say = table.source_name, table.lines, options.missing, options.words()
    n = len(table.df)
    checked = [*cols.features, *cols.one_hot] + ([cols.label] if cols.label else [])
    miss = {col: is_missing(table.df[col]) for col in checked}
    affected = {col: m for col, m in miss.items() if m.any()}
    keep_rows = np.ones(n, dtype=bool)
    if not affected:
        return miss, keep_rows
    rows_hit = np.zeros(n, dtype=bool)
    for m in affected.values():
        rows_hit |= m
    listing = ", ".join(f"{col!r} {int(m.sum())} (first: {first_row(m, lines)})" for col, m in affected.items())
    label_miss = affected.get(cols.label) if cols.label else None
    if missing == "error":
        raise DataError(
            f"{source_name}: missing values in {len(affected)} column(s), {int(rows_hit.sum())} row(s): "
            f"{listing}. Leave those rows out ({say['missing=drop']}) or fill the gaps in "
            f"({say['missing=impute']}, the median of a numeric column, the most frequent value of a category)"
        )
    if missing == "impute" and label_miss is not None:
        raise DataError(
            f"{source_name}: missing label in column {cols.label!r}: {int(label_miss.sum())} "
            f"row(s) (first: {first_row(label_miss, lines)}); labels are not imputed: leave those "
            f"rows out ({say['missing=drop']})"
        )
    if missing == "drop":
        keep_rows = ~rows_hit
        if not keep_rows.any():
            raise DataError(f"{source_name}: every row has a missing value ({listing})")
        notices.append(f"left out {int(rows_hit.sum())} row(s) with missing values: {listing}")
    return miss, keep_rows
