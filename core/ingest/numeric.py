"""Numeric feature columns (each cell a finite number within ``max_value``; missing cells filled with
the median under ``impute``) and one-hot columns (one 0/1 feature per value)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from core import features as feats
from core.formatting import for_people
from core.ingest.columns import Columns, values_shown
from core.ingest.errors import DataError
from core.ingest.options import ONE_HOT_MAX, CsvOptions
from core.ingest.reading import Table, describe_row, numbers


@dataclass
class Dense:
    """The dense features: numeric columns then one-hot blocks, over every row of the file."""

    X_num: np.ndarray
    names: list[str]  # the numeric columns kept
    onehot_blocks: list[np.ndarray]
    onehot_names: list[str]
    constant_text: list[str]  # text columns of one value, left out as constant


def category_order(values) -> list[str]:
    def key(v):
        try:
            return (0, float(v), v)
        except ValueError:
            return (1, 0.0, v)

    return sorted(set(values), key=key)


def _column(table: Table, col: str, m: np.ndarray, max_value: float | None) -> np.ndarray | None:
    """A feature column's numbers, or None when it holds text throughout (not numbers at all)."""
    raw, source_name, lines, decimal = table.df[col], table.source_name, table.lines, table.decimal
    values = numbers(raw, decimal)
    bad = ~np.isfinite(values) & ~m
    if bad.any():
        if np.isnan(values[~m]).all():
            cells = raw[~m].str.strip()
            if (
                decimal == "."
                and cells.str.match(feats._NUMBER_COMMA.pattern).any()
                and cells.str.match(r"^[+-]?(\d+|\d+,\d*|,\d+)([eE][+-]?\d+)?$").all()
            ):
                i = int(np.flatnonzero(bad)[0])
                raise DataError(
                    f"{source_name}: non-numeric value {raw.iloc[i]!r} in column {col!r}, "
                    f"{describe_row(i, lines)}: numbers with decimal commas? set the decimal "
                    "separator to ','"
                )
            return None
        i = int(np.flatnonzero(bad)[0])
        what = "infinite" if np.isinf(values[i]) else "non-numeric"
        hint = (
            " (decimal commas? the decimal separator is '.')"
            if decimal == "." and feats._NUMBER_COMMA.match(str(raw.iloc[i]).strip())
            else ""
        )
        raise DataError(
            f"{source_name}: {what} value {raw.iloc[i]!r} in column {col!r}, {describe_row(i, lines)}{hint}"
        )
    huge = ~m & (np.abs(values) > max_value) if max_value is not None else np.zeros(len(values), dtype=bool)
    if huge.any():
        i = int(np.flatnonzero(huge)[0])
        raise DataError(
            f"{source_name}: value {raw.iloc[i]!r} in column {col!r}, {describe_row(i, lines)} is "
            f"too large: feature values must lie within ±{max_value:g} (the solvers square and add "
            "them); rescale the column"
        )
    return values


def _refuse_text(df: pd.DataFrame, textual: list[str], miss: dict[str, np.ndarray], source_name: str) -> None:
    """Text in a numeric feature column: offer one-hot encoding (few values) or a text column."""
    parts = []
    for col in textual:
        distinct = category_order(v.strip() for v, mm in zip(df[col], miss[col], strict=True) if not mm)
        if len(distinct) <= ONE_HOT_MAX:
            parts.append(f"column {col!r} ({len(distinct)} categories: {values_shown(distinct)}; one-hot encode it)")
        else:
            parts.append(
                f"column {col!r} ({len(distinct)} distinct texts; use it as a text column, "
                "TF-IDF features, or as the display column)"
            )
    raise DataError(
        f"{source_name}: text instead of numbers in {', '.join(parts)}; or leave "
        f"{'it' if len(textual) == 1 else 'them'} out of the features"
    )


def numeric_features(
    table: Table,
    cols: Columns,
    options: CsvOptions,
    miss: dict[str, np.ndarray],
    keep_rows: np.ndarray,
    imputed: list[str],
) -> tuple[np.ndarray, list[str], list[str]]:
    """The numeric feature matrix, its columns, and the text columns of one value left out as constant
    (unless ``constant_columns="error"``); any other text column is refused."""
    df, feature_columns = table.df, list(cols.features)
    X_num = np.empty((len(df), len(feature_columns)))
    textual = []
    for j, col in enumerate(feature_columns):
        m = miss[col]
        values = _column(table, col, m, options.max_value)
        if values is None:
            textual.append(col)
            continue
        if m.any() and options.missing == "impute":
            fill = float(np.median(values[~m & keep_rows])) if (~m & keep_rows).any() else 0.0
            values[m] = fill
            imputed.append(f"{col!r} {int(m.sum())} with the median {for_people(fill)}")
        X_num[:, j] = values
    constant_text = [
        c for c in textual if len({v.strip() for v, mm in zip(df[c], miss[c], strict=True) if not mm}) <= 1
    ]
    if constant_text and options.constant_columns != "error":  # one text value throughout: a constant column
        keep_cols = [j for j, c in enumerate(feature_columns) if c not in constant_text]
        X_num = X_num[:, keep_cols]
        feature_columns = [feature_columns[j] for j in keep_cols]
        textual = [c for c in textual if c not in constant_text]
    else:
        constant_text = []
    if textual:
        _refuse_text(df, textual, miss, table.source_name)
    return X_num, feature_columns, constant_text


def one_hot_features(
    table: Table, cols: Columns, missing: str, miss: dict[str, np.ndarray], keep_rows: np.ndarray, imputed: list[str]
) -> tuple[list[np.ndarray], list[str]]:
    """One 0/1 block per one-hot column (its values in order: numbers, then texts) and the feature names
    ``column=value``."""
    n = len(table.df)
    onehot_blocks: list[np.ndarray] = []
    onehot_names: list[str] = []
    for col in cols.one_hot:
        values = table.df[col].str.strip().to_numpy(dtype=object)
        m = miss[col]
        if m.any() and missing == "impute":
            fill = feats.most_frequent([v for v, mm, k in zip(values, m, keep_rows, strict=True) if not mm and k])
            values = np.where(m, fill, values)
            imputed.append(f"{col!r} {int(m.sum())} with the most frequent value {fill!r}")
        cats = category_order(
            v for v, mm, k in zip(values, m, keep_rows, strict=True) if k and (not mm or missing == "impute")
        )
        if len(cats) > max(ONE_HOT_MAX * 5, 100):
            raise DataError(
                f"{table.source_name}: column {col!r} has {len(cats)} distinct values, too many to "
                "one-hot encode; use it as a text column instead"
            )
        block = np.zeros((n, len(cats)))
        index = {c: k for k, c in enumerate(cats)}
        for i, v in enumerate(values):
            if v in index:
                block[i, index[v]] = 1.0
        onehot_blocks.append(block)
        onehot_names.extend(f"{col}={c}" for c in cats)
    return onehot_blocks, onehot_names


def dense_features(
    table: Table,
    cols: Columns,
    options: CsvOptions,
    miss: dict[str, np.ndarray],
    keep_rows: np.ndarray,
    notices: list[str],
) -> Dense:
    """Numeric and one-hot features, with a notice of the missing values filled in."""
    imputed: list[str] = []
    X_num, names, constant_text = numeric_features(table, cols, options, miss, keep_rows, imputed)
    blocks, onehot_names = one_hot_features(table, cols, options.missing, miss, keep_rows, imputed)
    if imputed:
        notices.append("filled in missing values: " + ", ".join(imputed))
    return Dense(X_num=X_num, names=names, onehot_blocks=blocks, onehot_names=onehot_names, constant_text=constant_text)
