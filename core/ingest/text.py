"""Text columns as TF-IDF features (or their truncated SVD): several columns joined into one document
per row with one vocabulary, or one vocabulary per column (``text_blocks``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from core import features as feats
from core.ingest.errors import DataError
from core.ingest.matrix import Features
from core.ingest.options import CsvOptions
from core.ingest.reading import is_missing


def texts_kept(df: pd.DataFrame, text_columns: list[str], keep_rows: np.ndarray) -> dict[str, list[str]]:
    """Each text column's cells in the rows kept, missing cells as ""."""
    kept: dict[str, list[str]] = {}
    for col in text_columns:
        empty = is_missing(df[col])[keep_rows]
        kept[col] = ["" if e else str(v) for v, e in zip(df[col][keep_rows], empty, strict=True)]
    return kept


def documents(kept: dict[str, list[str]], text_columns: list[str], separate: bool) -> list[tuple[str, list[str]]]:
    """One document per row of all the text columns (title, then abstract: the record as a screener reads
    it), or one per column (``separate``)."""
    if separate:
        return [(col, kept[col]) for col in text_columns]
    return [
        (
            text_columns[0],
            [" ".join(part for part in parts if part) for parts in zip(*(kept[c] for c in text_columns), strict=True)],
        )
    ]


def text_features(
    features: Features, kept: dict[str, list[str]], text_columns: list[str], options: CsvOptions, source_name: str
) -> None:
    """Add a TF-IDF block (or an SVD block) per document of ``documents`` to ``features``."""
    separate = options.text_blocks or len(text_columns) < 2
    docs_by_column = documents(kept, text_columns, separate)
    joined = {} if separate else {"columns": list(text_columns)}
    for col, docs in docs_by_column:
        prefix = f"{col}:" if len(docs_by_column) > 1 else ""
        try:
            T, terms = feats.tfidf_features(
                docs,
                analyzer=options.text_analyzer,
                min_df=options.text_min_df,
                max_features=options.text_max_features,
                prefix=prefix,
            )
        except ValueError as exc:
            raise DataError(f"{source_name}: text column {col!r}: {exc}") from None
        if options.text_svd:
            try:
                Z = feats.svd_reduce(T, options.text_svd, seed=options.seed)
            except ValueError as exc:
                raise DataError(f"{source_name}: text column {col!r}: {exc}") from None
            features.add(Z, (f"{prefix}svd{k}" for k in range(Z.shape[1])), "svd", col, terms=len(terms), **joined)
        else:
            features.add(T, terms, "tfidf", col, analyzer=options.text_analyzer, **joined)
