"""Molecules: a SMILES column as Morgan fingerprints (RDKit, sparse); invalid SMILES refused with their
rows, or those rows left out (``invalid_smiles="drop"``)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from core import features as feats
from core.ingest.errors import DataError
from core.ingest.options import CsvOptions
from core.ingest.reading import Table, describe_row


def fingerprints(table: Table, options: CsvOptions, keep_rows: np.ndarray, notices: list[str]) -> sp.csr_matrix | None:
    """The fingerprints of the rows kept (None without a SMILES column); ``keep_rows`` loses the rows
    whose SMILES do not parse."""
    column = options.smiles_column
    if column is None:
        return None
    source_name, lines = table.source_name, table.lines
    n = len(table.df)
    try:
        fps = feats.morgan_fingerprints(table.df[column].tolist(), options.fingerprint_radius, options.fingerprint_bits)
    except ValueError as exc:
        raise DataError(f"{source_name}: {exc}") from None
    bad_rows = [(i, s) for i, s in fps.invalid if keep_rows[i]]
    if bad_rows:
        listing = "; ".join(
            f"{describe_row(i, lines)}: {s!r}" if s else f"{describe_row(i, lines)}: empty" for i, s in bad_rows[:10]
        )
        more = f" and {len(bad_rows) - 10} more" if len(bad_rows) > 10 else ""
        if options.invalid_smiles == "error":
            raise DataError(
                f"{source_name}: {len(bad_rows)} invalid SMILES in column {column!r}: "
                f"{listing}{more}. Fix them, or leave those rows out "
                f"({options.words()['invalid_smiles=drop']})"
            )
        notices.append(f"left out {len(bad_rows)} row(s) with invalid SMILES in {column!r}: {listing}{more}")
    parsed = np.zeros(n, dtype=bool)
    parsed[fps.valid] = True
    keep_rows &= parsed
    if not keep_rows.any():
        raise DataError(f"{source_name}: no row left with a valid SMILES in {column!r}")
    position = np.full(n, -1)
    position[fps.valid] = np.arange(len(fps.valid))
    return fps.X[position[keep_rows]]
