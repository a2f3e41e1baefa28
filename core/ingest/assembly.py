"""Assembly: the feature blocks side by side (constant columns dropped), what is shown of each item,
its key, and the options to import the file again, as a :class:`core.datasets.Dataset`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from core.ingest.columns import Columns, resolve, values_shown
from core.ingest.errors import DataError
from core.ingest.labels import class_labels_of, labels
from core.ingest.matrix import Features
from core.ingest.missing import missing_values
from core.ingest.molecules import fingerprints
from core.ingest.numeric import Dense, dense_features
from core.ingest.options import CsvOptions
from core.ingest.reading import Bounds, Table, describe_row, read_table
from core.ingest.text import text_features, texts_kept

if TYPE_CHECKING:
    from core.datasets import Dataset


def dense_block(
    dense: Dense, keep_rows: np.ndarray, cols: Columns, options: CsvOptions, notices: list[str], source_name: str
) -> tuple[Features, list[str]]:
    """The numeric and one-hot features of the rows kept, constant columns dropped (or refused, or kept:
    ``constant_columns``), as the first blocks of the matrix; and the columns dropped."""
    X_dense = np.hstack([dense.X_num, *dense.onehot_blocks]) if dense.onehot_blocks else dense.X_num
    X_dense = X_dense[keep_rows]
    dense_names = list(dense.names) + dense.onehot_names
    n_numeric = len(dense.names)
    dropped: list[str] = list(dense.constant_text)
    if dense.constant_text:
        notices.append(
            f"dropped {len(dense.constant_text)} constant text column(s): {values_shown(dense.constant_text, 20)}"
        )
    if len(X_dense) > 1 and options.constant_columns != "keep" and X_dense.shape[1]:
        constant = [dense_names[j] for j in range(X_dense.shape[1]) if np.all(X_dense[:, j] == X_dense[0, j])]
        if constant:
            if options.constant_columns == "error":
                raise DataError(
                    f"{source_name}: constant column(s) carry no information: "
                    f"{', '.join(repr(c) for c in constant)}; "
                    f"remove them (or {options.words()['constant_columns=drop']})"
                )
            keep = [j for j, c in enumerate(dense_names) if c not in constant]
            if not keep and not cols.text and options.smiles_column is None:
                raise DataError(f"{source_name}: every feature column is constant")
            n_numeric = sum(1 for j in keep if j < n_numeric)
            X_dense = X_dense[:, keep]
            dense_names = [dense_names[j] for j in keep]
            dropped += constant
            notices.append(f"dropped {len(constant)} constant column(s): {values_shown(constant, 20)}")
    features = Features(parts=[X_dense] if X_dense.shape[1] else [], names=list(dense_names), width=X_dense.shape[1])
    if n_numeric:
        features.blocks.append({"kind": "numeric", "start": 0, "stop": n_numeric})
    if X_dense.shape[1] > n_numeric:
        features.blocks.append({"kind": "onehot", "start": n_numeric, "stop": X_dense.shape[1]})
    return features, dropped


def display(
    table: Table, cols: Columns, options: CsvOptions, keep_rows: np.ndarray, kept: dict[str, list[str]]
) -> tuple[list[str] | None, str, str | None]:
    """What is shown of each item: the display column, else the text columns (joined, each named), else
    the SMILES; with the display kind and the column of molecules."""
    df = table.df
    if options.display_column is not None:
        return [str(v) for v in df[options.display_column][keep_rows]], "text", None
    if cols.text:
        if len(cols.text) == 1:
            return kept[cols.text[0]], "text", None
        return (
            ["\n\n".join(f"{c}: {kept[c][i]}" for c in cols.text) for i in range(int(keep_rows.sum()))],
            "text",
            None,
        )
    if options.smiles_column is not None:
        return [str(v).strip() for v in df[options.smiles_column][keep_rows]], "text", options.smiles_column
    return None, "table", None


def image(image_shape, display_kind: str, n_features: int, source_name: str) -> tuple[tuple[int, int] | None, str]:
    """The items' image shape (width, height), checked against the features, and the display kind."""
    if image_shape is None:
        return None, display_kind
    w, h = (int(v) for v in image_shape)
    if w * h != n_features:
        raise DataError(f"{source_name}: image shape {w}x{h} needs {w * h} features, found {n_features}")
    return (w, h), display_kind if display_kind == "text" else "image"


def item_keys(table: Table, key_column: str | None, keep_rows: np.ndarray) -> list[str] | None:
    """The key column's keys (unique), or the file's row of each item when rows were left out."""
    if key_column is None:
        if not keep_rows.all():  # rows were left out: say which row of the file each item is
            return [f"row {i + 1}" for i in np.flatnonzero(keep_rows)]
        return None
    keys = [str(v).strip() for v in table.df[key_column]]
    seen_keys: dict[str, int] = {}
    for i, key in enumerate(keys):
        if not keep_rows[i]:
            continue
        if key in seen_keys:
            raise DataError(
                f"{table.source_name}: duplicate key {key!r} in column {key_column!r}, "
                f"{describe_row(seen_keys[key], table.lines)} and {describe_row(i, table.lines)}"
            )
        seen_keys[key] = i
    return [k for k, keep in zip(keys, keep_rows, strict=True) if keep]


def import_options(table: Table, cols: Columns, options: CsvOptions) -> dict[str, Any]:
    """The choices to import the file again as it was (those that change its features)."""
    result: dict[str, Any] = {"sep": table.sep, "decimal": table.decimal, "missing": options.missing}
    if cols.text:
        result.update(
            text_columns=list(cols.text),
            text_analyzer=options.text_analyzer,
            text_min_df=options.text_min_df,
            text_max_features=options.text_max_features,
            text_svd=options.text_svd,
            text_blocks=bool(options.text_blocks),
        )
    if options.smiles_column:
        result.update(
            smiles_column=options.smiles_column,
            fingerprint_radius=int(options.fingerprint_radius),
            fingerprint_bits=int(options.fingerprint_bits),
            invalid_smiles=options.invalid_smiles,
        )
    if cols.one_hot:
        result["one_hot"] = list(cols.one_hot)
    return result


def load(source, options: CsvOptions | None = None, bounds: Bounds | None = None) -> Dataset:
    """Read a CSV file into a :class:`core.datasets.Dataset` as ``options`` say, step by step (see
    :func:`core.datasets.load_csv`, which takes the options as its parameters)."""
    from core.datasets import Dataset  # (core.datasets imports this package)

    options = options or CsvOptions()
    table = read_table(source, options, bounds)
    source_name = table.source_name
    cols = resolve(list(table.df.columns), options, source_name)
    notices = cols.notices
    miss, keep_rows = missing_values(table, cols, options, notices)
    dense = dense_features(table, cols, options, miss, keep_rows, notices)
    class_y, class_names = None, None
    if options.label_mode == "classes":
        y, classes = None, None
        class_y, class_names = class_labels_of(table, cols.label, keep_rows, options.class_names)
    else:
        y, classes = labels(table, cols.label, options.positive, options.one_vs_rest, keep_rows)
    fingerprint = fingerprints(table, options, keep_rows, notices)
    features, dropped = dense_block(dense, keep_rows, cols, options, notices, source_name)
    kept = texts_kept(table.df, cols.text, keep_rows)
    text_features(features, kept, cols.text, options, source_name)
    if fingerprint is not None and options.smiles_column is not None:  # (fingerprints exist only then)
        features.add(
            fingerprint,
            (f"bit{k}" for k in range(fingerprint.shape[1])),
            "morgan",
            options.smiles_column,
            radius=int(options.fingerprint_radius),
            bits=int(options.fingerprint_bits),
        )
    if not features.parts:
        raise DataError(
            f"{source_name}: every feature column is constant" + (f" ({values_shown(dropped, 20)})" if dropped else "")
        )
    X = features.matrix()
    display_values, display_kind, molecule_column = display(table, cols, options, keep_rows, kept)
    image_shape, display_kind = image(options.image_shape, display_kind, X.shape[1], source_name)
    keys = item_keys(table, options.key_column, keep_rows)
    kernel = (
        "tanimoto"
        if fingerprint is not None and features.width == fingerprint.shape[1]
        else ("linear" if any(b["kind"] in ("tfidf", "svd") for b in features.blocks) else "rbf")
    )  # cosine: unit rows
    name = options.name or (Path(source_name).name.split(".")[0] if source_name != "data" else "data")
    return Dataset(
        name=name,
        X=X,
        y=None if y is None else y[keep_rows],
        feature_names=features.names,
        display_kind=display_kind,
        image_shape=image_shape,
        display_values=display_values,
        item_keys=keys,
        source=source_name,
        description="",
        classes=classes,
        dropped_columns=dropped,
        feature_blocks=features.blocks,
        notices=notices,
        default_kernel=kernel,
        molecule_column=molecule_column,
        import_options=import_options(table, cols, options),
        class_y=class_y,
        class_names=class_names,
    )
