"""Reading a CSV file: bytes within bounds, UTF-8 text, delimiter and decimal separator, then a table of
text cells with each data row's line in the file."""

from __future__ import annotations

import csv
import gzip
import io
import os
import re
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from core import features as feats
from core.ingest.errors import DataError, DataTooLarge, NotText
from core.ingest.options import CsvOptions

#: bounds checked before a CSV is parsed.  The parser's time and memory grow with the cells, and with the
#: columns far beyond the file's size (a 40 MB file of 1,000,000 columns took minutes and 7.6 GB to
#: preview); a small compressed file can expand to any size (389 KB to 400 MB, 15.9 GB to load).
MAX_CSV_BYTES = 1 << 30  # the text, once decompressed
MAX_COLUMNS = 10_000
MAX_CELLS = 100_000_000  # columns x lines
_CHUNK = 1 << 20

# Cell contents read as "missing" (pandas' usual NA spellings).
MISSING_TOKENS = frozenset({"", "na", "n/a", "nan", "null", "none", "#n/a", "-nan", "<na>"})


@dataclass(frozen=True)
class Bounds:
    """The bounds a file is held to before it is parsed (``MAX_CSV_BYTES``, ``MAX_COLUMNS``, ``MAX_CELLS``)."""

    max_bytes: int
    max_columns: int
    max_cells: int


def current_bounds() -> Bounds:
    """This module's bounds as they are now."""
    return Bounds(MAX_CSV_BYTES, MAX_COLUMNS, MAX_CELLS)


@dataclass
class Table:
    """A CSV file read as text cells: the rows, the dialect they were read with, the file's name for
    messages and the line on which each row starts (None when it cannot be told)."""

    df: pd.DataFrame
    source_name: str
    sep: str
    decimal: str
    lines: list[int] | None


def _bytes_text(n: int) -> str:
    return f"{n / (1 << 30):g} GB" if n >= 1 << 30 else f"{n / (1 << 20):g} MB"


def _too_many_bytes(name: str, what: str, bounds: Bounds) -> DataTooLarge:
    return DataTooLarge(
        f"{name}: {what}; MarginLab reads CSV files of at most {_bytes_text(bounds.max_bytes)} "
        "(split the file, or leave out columns it does not need)"
    )


def read_bytes(source, bounds: Bounds | None = None) -> tuple[bytes, str]:
    """Raw bytes of a path, bytes object or file-like, and a name for messages; more than
    ``MAX_CSV_BYTES`` (decompressed) is refused before it is held."""
    bounds = bounds or current_bounds()
    limit = bounds.max_bytes
    if isinstance(source, (bytes, bytearray, memoryview)):
        if len(source) > limit:
            raise _too_many_bytes("data", f"{_bytes_text(len(source))}", bounds)
        return bytes(source), "data"
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if not path.exists():
            raise DataError(f"file not found: {path}")
        if path.is_dir():
            raise DataError(f"{path} is a folder, not a CSV file")
        if path.suffix == ".gz":
            return _gunzip(path, bounds), path.name
        if path.stat().st_size > limit:
            raise _too_many_bytes(path.name, _bytes_text(path.stat().st_size), bounds)
        return path.read_bytes(), path.name
    if hasattr(source, "read"):
        name = getattr(source, "name", "data") or "data"
        data = source.read(limit + 1)
        if isinstance(data, str):
            data = data.encode("utf-8")
        if len(data) > limit:
            raise _too_many_bytes(name, f"more than {_bytes_text(limit)}", bounds)
        return bytes(data), name
    raise TypeError(f"cannot read CSV from {type(source).__name__}")


def _gunzip(path: Path, bounds: Bounds) -> bytes:
    """A gzip file's contents, in two passes: the first only counts the decompressed bytes (one chunk in
    memory at a time), so a small file that expands beyond ``MAX_CSV_BYTES`` is refused before its text
    is held."""
    try:
        total = 0
        with gzip.open(path, "rb") as stream:
            while chunk := stream.read(_CHUNK):
                total += len(chunk)
                if total > bounds.max_bytes:
                    raise _too_many_bytes(
                        path.name,
                        f"more than {_bytes_text(bounds.max_bytes)} once decompressed "
                        f"(from {_bytes_text(path.stat().st_size)})",
                        bounds,
                    )
        with gzip.open(path, "rb") as stream:
            return stream.read()
    except (OSError, EOFError) as exc:
        raise DataError(f"{path.name}: not a valid gzip file ({exc})") from None


def check_csv_shape(text: str, sep: str, source_name: str = "data", bounds: Bounds | None = None) -> None:
    """Refuse a CSV text of more than ``MAX_COLUMNS`` columns or ``MAX_CELLS`` cells (its header's
    fields times its lines) before anything parses it."""
    bounds = bounds or current_bounds()
    end = text.find("\n")
    first = text if end < 0 else text[:end]
    columns = first.count(sep) + 1
    if columns > bounds.max_columns and '"' in first:  # a quoted header may hold the delimiter: count its fields
        columns = len(next(csv.reader([first], delimiter=sep), []))
    if columns > bounds.max_columns:
        raise DataTooLarge(
            f"{source_name}: {columns:,} columns; MarginLab reads CSV files of at most "
            f"{bounds.max_columns:,} columns (leave out the columns it does not need)"
        )
    lines = text.count("\n") + 1
    if columns * lines > bounds.max_cells:
        raise DataTooLarge(
            f"{source_name}: {columns:,} columns by {lines:,} lines, {columns * lines:,} cells; "
            f"MarginLab reads CSV files of at most {bounds.max_cells:,} cells (split the file, or "
            "leave out columns it does not need)"
        )


def decode(data: bytes, name: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        bad = data[exc.start : exc.start + 1]
        raise NotText(
            f"{name}: not UTF-8 text: byte 0x{bad.hex()} on line {line} (byte offset {exc.start}); "
            "save the file as UTF-8 CSV"
        ) from None


def read_text(source, bounds: Bounds | None = None) -> tuple[str, str]:
    """The text of a CSV file and its name for messages; an empty file is refused."""
    data, source_name = read_bytes(source, bounds)
    text = decode(data, source_name)
    if not text.strip():
        raise DataError(f"{source_name}: the file is empty")
    return text, source_name


def allow_long_cells(text: str) -> None:
    if csv.field_size_limit() < len(text):  # a cell can be as long as the file (long documents)
        csv.field_size_limit(len(text))


def is_missing(values: pd.Series) -> np.ndarray:
    return values.str.strip().str.lower().isin(MISSING_TOKENS).to_numpy()


def describe_row(i: int, lines: list[int] | None = None) -> str:
    """Data row i (0-based) as users count it: row i+1, and its line in the file (line 1 = header)."""
    if lines is None:
        return f"row {i + 1}"
    return f"row {i + 1} (line {lines[i]} of the file)"


def row_lines(text: str, sep: str, n_rows: int) -> list[int] | None:
    """The file line on which each data row starts (blank lines skipped, quoted newlines allowed)."""
    lines = []
    reader = csv.reader(io.StringIO(text), delimiter=sep)
    start = 1
    try:
        for row in reader:
            if row and any(cell.strip() for cell in row):
                lines.append(start)
            start = reader.line_num + 1
    except csv.Error:
        return None
    lines = lines[1:]  # the header
    return lines if len(lines) == n_rows else None


def numbers(raw: pd.Series, decimal: str) -> np.ndarray:
    text = raw.str.strip()
    if decimal == ",":
        text = text.str.replace(",", ".", regex=False)
    return np.array(pd.to_numeric(text, errors="coerce"), dtype=np.float64)


def preview_frame(text: str, sep: str, source_name: str) -> pd.DataFrame:
    """Every cell as text, ragged rows let through (the import reports them, with their line)."""
    allow_long_cells(text)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", pd.errors.ParserWarning)
            df = pd.read_csv(
                io.StringIO(text),
                sep=sep,
                dtype=str,
                keep_default_na=False,
                na_filter=False,
                skipinitialspace=True,
                skip_blank_lines=True,
                index_col=False,
            )
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as exc:
        raise DataError(f"{source_name}: cannot parse the CSV ({str(exc).strip()})") from None
    df.columns = [str(c).strip() for c in df.columns]
    return df


# -- the dialect ------------------------------------------------------------------------


def dialect(text: str, sep: str | None, decimal: str | None) -> tuple[str, str, bool, str]:
    """The delimiter and decimal separator (detected where not given), whether the delimiter was given,
    and the hint a ragged row's message gives."""
    detected_sep, detected_decimal = feats.detect_format(text)
    sep_given = sep not in (None, "", "auto")
    sep = sep if sep and sep_given else detected_sep
    decimal = decimal if decimal not in (None, "", "auto") else (detected_decimal if sep == detected_sep else ".")
    if decimal not in (".", ","):
        raise DataError(f"decimal separator must be '.' or ',', got {decimal!r}")
    if decimal == sep:
        raise DataError(f"the decimal separator {decimal!r} cannot also be the delimiter")
    delimiter_hint = "check the delimiter and quoting"
    if sep != detected_sep:
        delimiter_hint = (
            f"the file seems to be separated by {feats.DELIMITER_NAMES[detected_sep]}s, not "
            f"{feats.DELIMITER_NAMES.get(sep, repr(sep))}s"
        )
    return sep, decimal, sep_given, delimiter_hint


def read_header(text: str, sep: str, source_name: str) -> list[str]:
    """The header's names; duplicate names are checked here, on the raw header: pandas would silently
    rename them."""
    try:
        header = next(csv.reader(io.StringIO(text), delimiter=sep, skipinitialspace=True))
    except (csv.Error, StopIteration) as exc:
        raise DataError(f"{source_name}: cannot read the header line ({exc})") from None
    header = [h.strip() for h in header]
    seen: dict[str, int] = {}
    for pos, col in enumerate(header, start=1):
        if col in seen:
            raise DataError(f"{source_name}: duplicate column name {col!r} (columns {seen[col]} and {pos})")
        seen[col] = pos
    return header


def parse(text: str, sep: str, source_name: str, delimiter_hint: str) -> pd.DataFrame:
    """Every cell as text; a row with more fields than the header is refused with its line."""
    try:
        df = pd.read_csv(
            io.StringIO(text),
            sep=sep,
            dtype=str,
            keep_default_na=False,
            na_filter=False,
            skipinitialspace=True,
            skip_blank_lines=True,
            engine="c" if len(sep) == 1 else "python",
        )
    except pd.errors.ParserError as exc:
        msg = str(exc)
        m = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", msg)
        if m:
            raise DataError(
                f"{source_name}: line {m.group(2)} has {m.group(3)} fields but the header has "
                f"{m.group(1)}; {delimiter_hint}"
            ) from None
        raise DataError(f"{source_name}: cannot parse the CSV ({msg.strip()})") from None
    except pd.errors.EmptyDataError:
        raise DataError(f"{source_name}: the file is empty") from None
    df.columns = [str(c).strip() for c in df.columns]
    if len(df) == 0:
        raise DataError(f"{source_name}: the file has a header but no data rows")
    return df


def refuse_long_rows(
    df: pd.DataFrame, text: str, sep: str, header: list[str], source_name: str, delimiter_hint: str
) -> None:
    """pandas pads short rows with empty cells (found later as missing values) and keeps an over-long
    row's extra fields as an index; catch the latter here."""
    if isinstance(df.index, pd.RangeIndex):
        return
    where = ""
    for line_no, row in enumerate(csv.reader(io.StringIO(text), delimiter=sep), start=1):
        if len(row) > len(header):
            where = f"line {line_no} has {len(row)} fields but the header has {len(header)}"
            break
    raise DataError(f"{source_name}: {where or 'some rows have more fields than the header'}; {delimiter_hint}")


def drop_unnamed(df: pd.DataFrame, header: list[str], source_name: str) -> pd.DataFrame:
    """Columns without a name: dropped when they are empty throughout (trailing separators, as
    spreadsheets write them), otherwise refused (they need a name)."""
    if len(header) == df.shape[1]:
        for pos, (col, title) in enumerate(zip(list(df.columns), header, strict=True), start=1):
            if title == "":
                if is_missing(df[col]).all():
                    df = df.drop(columns=col)
                else:
                    raise DataError(f"{source_name}: column {pos} has no name in the header line")
    return df


def refuse_one_column(columns: list[str], sep: str, sep_given: bool, source_name: str) -> None:
    """A single column read with a delimiter the user chose, when the header holds another: the wrong one."""
    if len(columns) == 1 and sep_given:
        for other, label in ((";", "semicolons"), ("\t", "tabs"), (",", "commas")):
            if other != sep and other in columns[0]:
                raise DataError(
                    f"{source_name}: the header has a single column {columns[0]!r}; the file seems to "
                    f"be separated by {label}, not {feats.DELIMITER_NAMES.get(sep, repr(sep))}s"
                )


def read_table(source, options: CsvOptions, bounds: Bounds | None = None) -> Table:
    """The file as a table of text cells, every check of the file itself done (in the order users meet
    them: size, encoding, options, dialect, shape, header, rows)."""
    text, source_name = read_text(source, bounds)
    options.validate()
    sep, decimal, sep_given, delimiter_hint = dialect(text, options.sep, options.decimal)
    check_csv_shape(text, sep, source_name, bounds)
    allow_long_cells(text)
    header = read_header(text, sep, source_name)
    df = parse(text, sep, source_name, delimiter_hint)
    lines = row_lines(text, sep, len(df))
    refuse_long_rows(df, text, sep, header, source_name, delimiter_hint)
    df = drop_unnamed(df, header, source_name)
    refuse_one_column(list(df.columns), sep, sep_given, source_name)
    return Table(df=df, source_name=source_name, sep=sep, decimal=decimal, lines=lines)
