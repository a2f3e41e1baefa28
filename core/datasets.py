"""Datasets: synthetic generators, the bundled demo sets and a checked CSV loader.

Every loader returns a :class:`Dataset` with a float64 feature matrix and, when
labels are known, ``y`` in {-1, +1}.  Every generator takes a
``numpy.random.Generator`` and returns ``(X, y)``.

Bad input raises :class:`DataError` (a ``ValueError``) whose message names the
row, column and value at fault, so that the app and the command line can show
it as it is.
"""

from __future__ import annotations

import csv
import gzip
import io
import os
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

from core.formatting import for_people

ASSETS_DIR = Path(__file__).resolve().parent.parent / "assets"

# Cell contents read as "missing" (pandas' usual NA spellings).
MISSING_TOKENS = frozenset({"", "na", "n/a", "nan", "null", "none", "#n/a", "-nan", "<na>"})


class DataError(ValueError):
    """Input data that cannot be used, with a message naming what is wrong and where."""


@dataclass
class Dataset:
    """A feature matrix with optional binary labels and what the app needs to show an item.

    ``X`` is a float64 array, or a SciPy CSR matrix when the features are
    sparse (TF-IDF terms, fingerprint bits): it is never densified here.
    ``display_kind`` says how one item is shown: ``"table"`` (a row of
    feature values), ``"image"`` (``X[i]`` reshaped to ``image_shape`` =
    (width, height), row-major) or ``"text"`` (``display_values[i]``; a
    molecule's SMILES when ``molecule_column`` is set).
    ``classes`` is (negative, positive): the original label values that map
    to -1 and +1.  ``feature_blocks`` says which columns came from what
    (``numeric``, ``onehot``, ``tfidf``, ``svd``, ``morgan``: dicts with
    ``kind``, ``start``, ``stop`` and the options used); ``notices`` says what
    the import did on its own (columns dropped, rows left out, gaps filled);
    ``default_kernel`` is the kernel that suits the features (``rbf``,
    ``linear`` for documents, ``tanimoto`` for fingerprints).
    """

    name: str
    X: Any
    y: np.ndarray | None = None
    feature_names: list[str] = field(default_factory=list)
    display_kind: str = "table"
    image_shape: tuple[int, int] | None = None
    display_values: list[str] | None = None
    item_keys: list[str] | None = None
    source: str = ""
    description: str = ""
    classes: tuple[Any, Any] | None = None
    dropped_columns: list[str] = field(default_factory=list)
    feature_blocks: list[dict[str, Any]] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    default_kernel: str = "rbf"
    molecule_column: str | None = None
    import_options: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if sp.issparse(self.X):
            self.X = sp.csr_matrix(self.X, dtype=np.float64)
            if not np.all(np.isfinite(self.X.data)):
                raise ValueError("X has a non-finite value")
        else:
            self.X = np.asarray(self.X, dtype=np.float64)
        if self.X.ndim != 2:
            raise ValueError(f"X must be two-dimensional, got shape {self.X.shape}")
        if self.y is not None:
            self.y = np.asarray(self.y, dtype=np.float64)
            if self.y.shape != (self.X.shape[0],):
                raise ValueError(f"y has shape {self.y.shape}, expected ({self.X.shape[0]},)")
            if not np.all(np.isin(self.y, (-1.0, 1.0))):
                raise ValueError("y must contain only -1 and +1")
        if not self.feature_names:
            self.feature_names = [f"x{j}" for j in range(self.X.shape[1])]
        if self.display_kind not in ("table", "image", "text"):
            raise ValueError(f"display_kind must be 'table', 'image' or 'text', got {self.display_kind!r}")
        if self.display_kind == "image":
            if self.image_shape is None or int(self.image_shape[0]) * int(self.image_shape[1]) != self.X.shape[1]:
                raise ValueError(f"image_shape {self.image_shape} does not match {self.X.shape[1]} features")
        if self.display_kind == "text" and (self.display_values is None
                                            or len(self.display_values) != self.X.shape[0]):
            raise ValueError("display_kind 'text' needs one display value per item")

    def __len__(self) -> int:
        return self.X.shape[0]

    @property
    def n_features(self) -> int:
        return self.X.shape[1]

    @property
    def is_sparse(self) -> bool:
        return sp.issparse(self.X)

    @property
    def numeric_columns(self) -> list[int] | None:
        """Columns that standard scaling applies to: the numeric block (None: every column, for data
        without blocks)."""
        if not self.feature_blocks:
            return None
        return [j for b in self.feature_blocks if b["kind"] == "numeric" for j in range(b["start"], b["stop"])]

    def image(self, i: int) -> np.ndarray:
        """Item ``i`` as a (height, width) array, for ``display_kind == "image"``."""
        if self.image_shape is None:
            raise ValueError(f"dataset {self.name!r} has no image shape")
        w, h = (int(v) for v in self.image_shape)
        row = self.X[i].toarray() if self.is_sparse else self.X[i]
        return np.asarray(row).reshape(h, w)


# ---------------------------------------------------------------------------
# Synthetic generators (the papers' toy problems)
# ---------------------------------------------------------------------------

def _balanced_labels(n: int, rng: np.random.Generator) -> np.ndarray:
    """n labels, half +1 and half -1 (the odd one +1), in random order."""
    y = np.where(np.arange(n) < (n + 1) // 2, 1.0, -1.0)
    rng.shuffle(y)
    return y


def make_gaussians(n: int, rng: np.random.Generator, separation: float = 1.0,
                   n_features: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Two overlapping isotropic unit-variance Gaussians, balanced classes.

    The class means are ``separation`` apart along the first axis
    (+separation/2 for y = +1, -separation/2 for y = -1), so the Bayes error is
    Phi(-separation/2) (about 31% for the default separation 1).
    """
    if n < 0 or n_features < 1:
        raise ValueError("n must be >= 0 and n_features >= 1")
    y = _balanced_labels(n, rng)
    X = rng.standard_normal((n, n_features))
    X[:, 0] += y * (separation / 2.0)
    return X, y


def checkerboard_labels(X: np.ndarray, cells: int = 4) -> np.ndarray:
    """+1 where the cell (floor(cells x1), floor(cells x2)) has an even index sum, else -1."""
    ij = np.clip(np.floor(np.asarray(X)[:, :2] * cells), 0, cells - 1).astype(int)
    return np.where((ij[:, 0] + ij[:, 1]) % 2 == 0, 1.0, -1.0)


def make_checkerboard(n: int, rng: np.random.Generator, flip: float = 0.0,
                      cells: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """Points uniform on [0, 1]^2 labelled by the parity of their cell in a cells x cells board.

    ``flip`` is the fraction of labels flipped: exactly ``round(flip * n)``
    examples, chosen at random, get the opposite label (the ramp-loss paper's
    noisy checkerboard uses flip = 0.15).
    """
    if not 0.0 <= flip <= 1.0:
        raise ValueError(f"flip must lie in [0, 1], got {flip!r}")
    if cells < 1:
        raise ValueError("cells must be at least 1")
    X = rng.uniform(0.0, 1.0, size=(n, 2))
    y = checkerboard_labels(X, cells)
    n_flip = int(round(flip * n))
    if n_flip:
        idx = rng.choice(n, size=n_flip, replace=False)
        y[idx] = -y[idx]
    return X, y


def make_banana(n: int, rng: np.random.Generator, noise: float = 1.0,
                radius: float = 5.0) -> tuple[np.ndarray, np.ndarray]:
    """Two interleaved banana-shaped classes (the construction of PRTools' ``gendatb``).

    Each class lies along an arc of a circle of the given ``radius``, spanning
    1.25 pi; the second arc is turned the other way and shifted by
    (-0.75, -0.75) x radius so that the two bananas interlock.  Isotropic
    Gaussian noise with standard deviation ``noise`` is added; balanced classes.
    """
    y = _balanced_labels(n, rng)
    u = rng.uniform(0.0, 1.0, n)
    X = np.empty((n, 2))
    pos = y > 0
    angle_pos = 0.125 * np.pi + u[pos] * 1.25 * np.pi
    X[pos] = radius * np.column_stack([np.sin(angle_pos), np.cos(angle_pos)])
    angle_neg = 0.375 * np.pi - u[~pos] * 1.25 * np.pi
    X[~pos] = radius * np.column_stack([np.sin(angle_neg), np.cos(angle_neg)]) - 0.75 * radius
    X += noise * rng.standard_normal((n, 2))
    return X, y


def waveform_bases() -> np.ndarray:
    """Breiman's three triangular base waves h1, h2, h3 on 21 points (rows)."""
    t = np.arange(1, 22)
    h1 = np.maximum(6 - np.abs(t - 11), 0).astype(np.float64)
    h2 = np.maximum(6 - np.abs(t - 15), 0).astype(np.float64)  # h1 shifted right by 4
    h3 = np.maximum(6 - np.abs(t - 7), 0).astype(np.float64)  # h1 shifted left by 4
    return np.vstack([h1, h2, h3])


def make_waveform(n: int, rng: np.random.Generator, task: str = "0-vs-rest",
                  return_classes: bool = False):
    """Breiman's waveform (Breiman et al., CART, 1984): 21 features, unit Gaussian noise.

    The three-class problem mixes two of three triangular waves with a uniform
    weight u: class 0 = u h1 + (1-u) h2, class 1 = u h1 + (1-u) h3,
    class 2 = u h2 + (1-u) h3, plus N(0, 1) noise on each of the 21 features.
    As a binary problem:

    * ``task="0-vs-rest"`` (default): classes 0, 1, 2 equally likely;
      y = +1 for class 0, -1 for classes 1 and 2 (about one third positive).
    * ``task="1-vs-2"``: only classes 1 and 2 are drawn, equally likely;
      y = +1 for class 1, -1 for class 2.

    With ``return_classes=True`` the three-class labels are returned as well.
    """
    H = waveform_bases()
    if task == "0-vs-rest":
        cls = rng.integers(0, 3, size=n)
    elif task == "1-vs-2":
        cls = rng.integers(1, 3, size=n)
    else:
        raise ValueError(f"task must be '0-vs-rest' or '1-vs-2', got {task!r}")
    pairs = np.array([[0, 1], [0, 2], [1, 2]])
    first, second = pairs[cls, 0], pairs[cls, 1]
    u = rng.uniform(0.0, 1.0, size=(n, 1))
    X = u * H[first] + (1.0 - u) * H[second] + rng.standard_normal((n, 21))
    positive_class = 0 if task == "0-vs-rest" else 1
    y = np.where(cls == positive_class, 1.0, -1.0)
    return (X, y, cls) if return_classes else (X, y)


GENERATORS = {
    "gaussians": make_gaussians,
    "checkerboard": make_checkerboard,
    "banana": make_banana,
    "waveform": make_waveform,
}


# ---------------------------------------------------------------------------
# Splitting and scaling
# ---------------------------------------------------------------------------

def standardize(X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Zero mean, unit variance per column: returns (Xs, mean, scale).

    Constant columns get scale 1 (so they become 0, never NaN or inf).
    Apply the same transform to new data with ``(Z - mean) / scale``.
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be two-dimensional, got shape {X.shape}")
    if len(X) == 0:
        return X.copy(), np.zeros(X.shape[1]), np.ones(X.shape[1])
    mean = X.mean(axis=0)
    scale = X.std(axis=0)
    scale[~(scale > 1e-12 * np.maximum(1.0, np.abs(mean)))] = 1.0
    return (X - mean) / scale, mean, scale


def stratified_split(y: np.ndarray, test_fraction: float, rng: np.random.Generator
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Indices (train, test): each class split in the ratio ``test_fraction``, shuffled.

    Every class keeps at least one example on each side when it has two or
    more; ``test_fraction = 0`` gives an empty test set.
    """
    y = np.asarray(y)
    if not 0.0 <= test_fraction < 1.0:
        raise ValueError(f"test fraction must lie in [0, 1), got {test_fraction!r}")
    train, test = [], []
    for c in np.unique(y):
        idx = np.flatnonzero(y == c)
        rng.shuffle(idx)
        k = int(round(test_fraction * len(idx)))
        if test_fraction > 0 and len(idx) >= 2:
            k = min(max(k, 1), len(idx) - 1)
        test.append(idx[:k])
        train.append(idx[k:])
    train_idx = np.concatenate(train) if train else np.zeros(0, dtype=np.intp)
    test_idx = np.concatenate(test) if test else np.zeros(0, dtype=np.intp)
    rng.shuffle(train_idx)
    rng.shuffle(test_idx)
    return train_idx.astype(np.intp), test_idx.astype(np.intp)


# ---------------------------------------------------------------------------
# CSV loading
# ---------------------------------------------------------------------------

#: bounds checked before a CSV is parsed.  The parser's time and memory grow with the cells, and with the
#: columns far beyond the file's size (a 40 MB file of 1,000,000 columns took minutes and 7.6 GB to
#: preview); a small compressed file can expand to any size (389 KB to 400 MB, 15.9 GB to load).
MAX_CSV_BYTES = 1 << 30  # the text, once decompressed
MAX_COLUMNS = 10_000
MAX_CELLS = 100_000_000  # columns x lines
_CHUNK = 1 << 20


#: the largest |value| of a numeric feature: the solvers need every ||x||^2 <= 1e300
#: (``core.solvers.base.MAX_SQ_NORM``) and standardising sums the squares of a column; a larger value
#: imported fine and then no session could start on the dataset
MAX_FEATURE_VALUE = 1e150


class NotText(DataError):
    """A file that is not UTF-8 text (a binary file, or text in another encoding): refused before it is parsed."""


class DataTooLarge(DataError):
    """A CSV beyond ``MAX_CSV_BYTES``, ``MAX_COLUMNS`` or ``MAX_CELLS``: refused before it is parsed."""


def _bytes_text(n: int) -> str:
    return f"{n / (1 << 30):g} GB" if n >= 1 << 30 else f"{n / (1 << 20):g} MB"


def _too_many_bytes(name: str, what: str) -> DataTooLarge:
    return DataTooLarge(f"{name}: {what}; MarginLab reads CSV files of at most {_bytes_text(MAX_CSV_BYTES)} "
                        "(split the file, or leave out columns it does not need)")


def _read_bytes(source) -> tuple[bytes, str]:
    """Raw bytes of a path, bytes object or file-like, and a name for messages; more than
    ``MAX_CSV_BYTES`` (decompressed) is refused before it is held."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        if len(source) > MAX_CSV_BYTES:
            raise _too_many_bytes("data", f"{_bytes_text(len(source))}")
        return bytes(source), "data"
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if not path.exists():
            raise DataError(f"file not found: {path}")
        if path.is_dir():
            raise DataError(f"{path} is a folder, not a CSV file")
        if path.suffix == ".gz":
            return _gunzip(path), path.name
        if path.stat().st_size > MAX_CSV_BYTES:
            raise _too_many_bytes(path.name, _bytes_text(path.stat().st_size))
        return path.read_bytes(), path.name
    if hasattr(source, "read"):
        name = getattr(source, "name", "data") or "data"
        data = source.read(MAX_CSV_BYTES + 1)
        if isinstance(data, str):
            data = data.encode("utf-8")
        if len(data) > MAX_CSV_BYTES:
            raise _too_many_bytes(name, f"more than {_bytes_text(MAX_CSV_BYTES)}")
        return bytes(data), name
    raise TypeError(f"cannot read CSV from {type(source).__name__}")


def _gunzip(path: Path) -> bytes:
    """A gzip file's contents, in two passes: the first only counts the decompressed bytes (one chunk in
    memory at a time), so a small file that expands beyond ``MAX_CSV_BYTES`` is refused before its text
    is held."""
    try:
        total = 0
        with gzip.open(path, "rb") as stream:
            while chunk := stream.read(_CHUNK):
                total += len(chunk)
                if total > MAX_CSV_BYTES:
                    raise _too_many_bytes(path.name, f"more than {_bytes_text(MAX_CSV_BYTES)} once decompressed "
                                                     f"(from {_bytes_text(path.stat().st_size)})")
        with gzip.open(path, "rb") as stream:
            return stream.read()
    except (OSError, EOFError) as exc:
        raise DataError(f"{path.name}: not a valid gzip file ({exc})") from None


def check_csv_shape(text: str, sep: str, source_name: str = "data") -> None:
    """Refuse a CSV text of more than ``MAX_COLUMNS`` columns or ``MAX_CELLS`` cells (its header's
    fields times its lines) before anything parses it."""
    end = text.find("\n")
    first = text if end < 0 else text[:end]
    columns = first.count(sep) + 1
    if columns > MAX_COLUMNS and '"' in first:  # a quoted header may hold the delimiter: count its fields
        columns = len(next(csv.reader([first], delimiter=sep), []))
    if columns > MAX_COLUMNS:
        raise DataTooLarge(f"{source_name}: {columns:,} columns; MarginLab reads CSV files of at most "
                           f"{MAX_COLUMNS:,} columns (leave out the columns it does not need)")
    lines = text.count("\n") + 1
    if columns * lines > MAX_CELLS:
        raise DataTooLarge(f"{source_name}: {columns:,} columns by {lines:,} lines, {columns * lines:,} cells; "
                           f"MarginLab reads CSV files of at most {MAX_CELLS:,} cells (split the file, or leave "
                           "out columns it does not need)")


def _decode(data: bytes, name: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        bad = data[exc.start: exc.start + 1]
        raise NotText(f"{name}: not UTF-8 text: byte 0x{bad.hex()} on line {line} (byte offset {exc.start}); "
                        "save the file as UTF-8 CSV") from None


def _is_missing(values: pd.Series) -> np.ndarray:
    return values.str.strip().str.lower().isin(MISSING_TOKENS).to_numpy()


def _describe_row(i: int, lines: list[int] | None = None) -> str:
    """Data row i (0-based) as users count it: row i+1, and its line in the file (line 1 = header)."""
    if lines is None:
        return f"row {i + 1}"
    return f"row {i + 1} (line {lines[i]} of the file)"


def _row_lines(text: str, sep: str, n_rows: int) -> list[int] | None:
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


def _normalise_label(value) -> Any:
    """A label value as a comparable key: numbers as floats, anything else as stripped text."""
    text = str(value).strip()
    try:
        number = float(text)
    except ValueError:
        return text
    return number if np.isfinite(number) else text


def _pretty(value) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


#: a text-valued feature column with at most this many distinct values is offered for one-hot encoding
ONE_HOT_MAX = 20
MISSING_POLICIES = ("error", "drop", "impute")
#: how messages name a choice of ``load_csv`` ("option=value"); the app passes the labels of its form
CHOICE_WORDS = {"missing=drop": "missing: drop", "missing=impute": "missing: impute",
                "invalid_smiles=drop": "invalid SMILES: drop", "constant_columns=drop": "drop constant columns"}


def _values_shown(values, limit: int = 6) -> str:
    values = list(values)
    shown = ", ".join(repr(v) for v in values[:limit])
    return shown + (f", ... ({len(values)} in all)" if len(values) > limit else "")


def _first_row(mask: np.ndarray, lines: list[int] | None) -> str:
    return _describe_row(int(np.flatnonzero(mask)[0]), lines)


def _numbers(raw: pd.Series, decimal: str) -> np.ndarray:
    text = raw.str.strip()
    if decimal == ",":
        text = text.str.replace(",", ".", regex=False)
    return np.array(pd.to_numeric(text, errors="coerce"), dtype=np.float64)


def _category_order(values) -> list[str]:
    def key(v):
        try:
            return (0, float(v), v)
        except ValueError:
            return (1, 0.0, v)
    return sorted(set(values), key=key)


@dataclass
class ColumnProfile:
    """What a column of a CSV file holds, to offer the right use for it before import."""

    name: str
    missing: int
    kind: str  # "number", "category" (few distinct texts), "text" (sentences), "identifier" (short, many
    # distinct), "smiles" (by the column's name), "empty"
    distinct: int
    examples: list[str]


@dataclass
class CsvProfile:
    sep: str
    decimal: str
    detected_sep: str
    detected_decimal: str
    n_rows: int
    columns: list[ColumnProfile]
    frame: pd.DataFrame  # the first rows as text cells

    def of(self, kind: str) -> list[str]:
        return [c.name for c in self.columns if c.kind == kind]


def profile_csv(source, sep: str | None = None, decimal: str | None = None, n_preview: int = 20) -> CsvProfile:
    """Delimiter, decimal separator and a profile of every column (missing cells, numbers, categories,
    free text, SMILES by name) of a CSV file; raises :class:`DataError` for a file that cannot be read."""
    from core import features as feats

    data, source_name = _read_bytes(source)
    text = _decode(data, source_name)
    if not text.strip():
        raise DataError(f"{source_name}: the file is empty")
    detected_sep, detected_decimal = feats.detect_format(text)
    sep = sep if sep not in (None, "", "auto") else detected_sep
    decimal = decimal if decimal not in (None, "", "auto") else (detected_decimal if sep == detected_sep else ".")
    check_csv_shape(text, sep, source_name)
    if csv.field_size_limit() < len(text):
        csv.field_size_limit(len(text))
    try:
        with warnings.catch_warnings():  # ragged rows are the import's to report, with their line
            warnings.simplefilter("ignore", pd.errors.ParserWarning)
            df = pd.read_csv(io.StringIO(text), sep=sep, dtype=str, keep_default_na=False, na_filter=False,
                             skipinitialspace=True, skip_blank_lines=True, index_col=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as exc:
        raise DataError(f"{source_name}: cannot parse the CSV ({str(exc).strip()})") from None
    df.columns = [str(c).strip() for c in df.columns]
    columns = []
    for col in df.columns:
        raw = df[col]
        m = _is_missing(raw)
        present = raw[~m].str.strip()
        distinct = int(present.nunique())
        values = _numbers(present, decimal) if len(present) else np.zeros(0)
        if not len(present):
            kind = "empty"
        elif np.isfinite(values).all():
            kind = "number"
        elif "smiles" in col.lower():
            kind = "smiles"
        elif present.str.split().str.len().mean() >= 4:  # sentences: documents, log lines
            kind = "text"
        elif distinct <= ONE_HOT_MAX:
            kind = "category"
        else:  # short texts, mostly different: names, ids, keys
            kind = "identifier"
        columns.append(ColumnProfile(col, int(m.sum()), kind, distinct, present.head(3).tolist()))
    return CsvProfile(sep=sep, decimal=decimal, detected_sep=detected_sep, detected_decimal=detected_decimal,
                      n_rows=len(df), columns=columns, frame=df.head(n_preview))


def load_csv(source, label_column: str | None = None, positive=None, feature_columns=None,
             display_column: str | None = None, image_shape: tuple[int, int] | None = None,
             name: str | None = None, *, key_column: str | None = None, constant_columns: str = "drop",
             one_vs_rest: bool = False, sep: str | None = None, decimal: str | None = None,
             missing: str = "error", one_hot: Sequence[str] | None = None,
             text_columns: Sequence[str] | None = None, text_analyzer: str = "word", text_min_df: int = 1,
             text_max_features: int | None = None, text_svd: int | None = None, text_blocks: bool = False,
             smiles_column: str | None = None, fingerprint_radius: int = 2, fingerprint_bits: int = 2048,
             invalid_smiles: str = "error", seed: int = 0, max_value: float | None = MAX_FEATURE_VALUE,
             choice_words: dict[str, str] | None = None) -> Dataset:
    """Read a CSV file into a :class:`Dataset`, checking it cell by cell.

    source: a path, the file's bytes, or a file-like object (text or binary).
    choice_words: how a message names the choice that would get past it (``CHOICE_WORDS``'s keys).
    label_column: optional column of class labels.  With two values, ``positive``
        (default: the larger value, as scikit-learn's ``classes_[1]``) becomes +1;
        with more, ``positive`` must be given and is taken against the rest
        (``one_vs_rest`` is still accepted and changes nothing).
    feature_columns: the numeric feature columns; default every column but the
        label, display, key, text, SMILES and one-hot columns, or none when text
        or SMILES columns are given (documents and molecules rarely come with
        numeric features; name them to add them).
    display_column: a column shown to the analyst as the item (``display_kind="text"``);
        default the text columns (joined) or the SMILES column.
    image_shape: (width, height) to show items as images (``display_kind="image"``).
    key_column: a column of unique item identifiers (``item_keys``).
    constant_columns: feature columns holding one value only: ``"drop"`` (default:
        left out, named in ``dropped_columns`` and ``notices``), ``"error"`` or ``"keep"``.
    sep, decimal: delimiter and decimal separator; detected when None (see
        :func:`core.features.detect_format`).
    missing: empty or NA cells in feature, category and label columns:
        ``"error"`` (default: the message lists every affected column with its
        count), ``"drop"`` (leave those rows out) or ``"impute"`` (median of a
        numeric column, most frequent value of a category; labels are never imputed).
    one_hot: text-valued columns to one-hot encode (one 0/1 feature per value).
        A text-valued feature column not listed is refused with a message that
        offers this (or a text feature when it has many distinct values).
    text_columns: columns of free text, as TF-IDF features (sparse; see
        :func:`core.features.tfidf_features`); ``text_analyzer`` ``"word"``
        (uni- and bigrams) or ``"char"``; ``text_svd`` components for a dense
        reduction (truncated SVD) instead.  Several text columns (a title and an
        abstract) are joined into one document per row, one vocabulary for all, as
        screening tools read a record; ``text_blocks=True`` gives each column its own
        vocabulary instead (its terms named ``column:term``).
    smiles_column: molecules as SMILES, as Morgan fingerprints (RDKit, sparse,
        ``fingerprint_radius``, ``fingerprint_bits``).  Invalid SMILES are refused
        with their rows unless ``invalid_smiles="drop"``.
    max_value: the largest |value| of a numeric feature (``MAX_FEATURE_VALUE``: beyond it no session can
        start on the data); None takes any finite value (re-importing MarginLab's own export as it was).

    Raises :class:`DataError` naming the row/column/value for: text that is
    not UTF-8, an empty file, ragged rows, duplicate column names, a missing
    column, a non-numeric or infinite value, missing values, constant columns
    (with ``"error"``), a label column with one class or more than two and no
    positive value, a positive value not present, invalid SMILES.
    """
    from core import features as feats

    data, source_name = _read_bytes(source)
    say = {**CHOICE_WORDS, **(choice_words or {})}
    name = name or (Path(source_name).name.split(".")[0] if source_name != "data" else "data")
    text = _decode(data, source_name)
    if not text.strip():
        raise DataError(f"{source_name}: the file is empty")
    if missing not in MISSING_POLICIES:
        raise ValueError(f"missing must be one of {', '.join(MISSING_POLICIES)}, got {missing!r}")
    if invalid_smiles not in ("error", "drop"):
        raise ValueError(f"invalid_smiles must be 'error' or 'drop', got {invalid_smiles!r}")
    if constant_columns not in ("error", "drop", "keep"):
        raise ValueError(f"constant_columns must be 'error', 'drop' or 'keep', got {constant_columns!r}")
    detected_sep, detected_decimal = feats.detect_format(text)
    sep_given = sep not in (None, "", "auto")
    sep = sep if sep_given else detected_sep
    decimal = decimal if decimal not in (None, "", "auto") else (detected_decimal if sep == detected_sep else ".")
    if decimal not in (".", ","):
        raise DataError(f"decimal separator must be '.' or ',', got {decimal!r}")
    if decimal == sep:
        raise DataError(f"the decimal separator {decimal!r} cannot also be the delimiter")
    delimiter_hint = "check the delimiter and quoting"
    if sep != detected_sep:
        delimiter_hint = (f"the file seems to be separated by {feats.DELIMITER_NAMES[detected_sep]}s, not "
                          f"{feats.DELIMITER_NAMES.get(sep, repr(sep))}s")
    check_csv_shape(text, sep, source_name)
    if csv.field_size_limit() < len(text):  # a cell can be as long as the file (long documents)
        csv.field_size_limit(len(text))

    # Duplicate names are checked on the raw header: pandas would silently rename them.
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

    try:
        df = pd.read_csv(io.StringIO(text), sep=sep, dtype=str, keep_default_na=False, na_filter=False,
                         skipinitialspace=True, skip_blank_lines=True, engine="c" if len(sep) == 1 else "python")
    except pd.errors.ParserError as exc:
        msg = str(exc)
        m = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", msg)
        if m:
            raise DataError(f"{source_name}: line {m.group(2)} has {m.group(3)} fields but the header has "
                            f"{m.group(1)}; {delimiter_hint}") from None
        raise DataError(f"{source_name}: cannot parse the CSV ({msg.strip()})") from None
    except pd.errors.EmptyDataError:
        raise DataError(f"{source_name}: the file is empty") from None
    df.columns = [str(c).strip() for c in df.columns]
    if len(df) == 0:
        raise DataError(f"{source_name}: the file has a header but no data rows")
    lines = _row_lines(text, sep, len(df))
    # pandas pads short rows with empty cells (found below as missing values) and
    # keeps an over-long row's extra fields as an index; catch the latter here.
    if not isinstance(df.index, pd.RangeIndex):
        where = ""
        for line_no, row in enumerate(csv.reader(io.StringIO(text), delimiter=sep), start=1):
            if len(row) > len(header):
                where = f"line {line_no} has {len(row)} fields but the header has {len(header)}"
                break
        raise DataError(f"{source_name}: {where or 'some rows have more fields than the header'}; "
                        f"{delimiter_hint}")
    # Columns without a name: drop them when they are empty throughout (trailing
    # separators, as spreadsheets write them), otherwise ask for a name.
    if len(header) == df.shape[1]:
        for pos, (col, title) in enumerate(zip(list(df.columns), header, strict=True), start=1):
            if title == "":
                if _is_missing(df[col]).all():
                    df = df.drop(columns=col)
                else:
                    raise DataError(f"{source_name}: column {pos} has no name in the header line")
    columns = list(df.columns)
    if len(columns) == 1 and sep_given:
        for other, label in ((";", "semicolons"), ("\t", "tabs"), (",", "commas")):
            if other != sep and other in columns[0]:
                raise DataError(f"{source_name}: the header has a single column {columns[0]!r}; the file seems to "
                                f"be separated by {label}, not {feats.DELIMITER_NAMES.get(sep, repr(sep))}s")

    def require(col, role):
        if col not in columns:
            shown = ", ".join(repr(c) for c in columns[:12]) + (" ..." if len(columns) > 12 else "")
            raise DataError(f"{source_name}: {role} {col!r} not found; columns are: {shown}")

    text_columns = [c for c in (text_columns or []) if c]
    one_hot = [c for c in (one_hot or []) if c]
    special = []
    for col, role in ((label_column, "label column"), (display_column, "display column"),
                      (key_column, "key column"), (smiles_column, "SMILES column"),
                      *((c, "text column") for c in text_columns), *((c, "one-hot column") for c in one_hot)):
        if col is not None:
            require(col, role)
            special.append(col)
    for group, what in ((text_columns, "text column"), (one_hot, "one-hot column")):
        dups = sorted({c for c in group if group.count(c) > 1})
        if dups:
            raise DataError(f"{source_name}: {what}(s) listed twice: {', '.join(repr(c) for c in dups)}")
    roles = {}
    for col, role in ((label_column, "the label column"), (smiles_column, "the SMILES column"),
                      *((c, "a text column") for c in text_columns), *((c, "a one-hot column") for c in one_hot)):
        if col is None:
            continue
        if col in roles:
            raise DataError(f"{source_name}: column {col!r} cannot be both {roles[col]} and {role}")
        roles[col] = role
    notices: list[str] = []
    if feature_columns is None:
        rest = [c for c in columns if c not in special]
        if text_columns or smiles_column:
            feature_columns = []
            if rest:
                notices.append(f"not used as features: {_values_shown(rest)} (name them as feature columns to "
                               "add them)")
        else:
            feature_columns = rest
    else:
        feature_columns = list(feature_columns)
        for col in feature_columns:
            require(col, "feature column")
        dups = {c for c in feature_columns if feature_columns.count(c) > 1}
        if dups:
            raise DataError(f"{source_name}: feature column(s) listed twice: {', '.join(sorted(dups))}")
        clash = [c for c in feature_columns if c == label_column]
        if clash:
            raise DataError(f"{source_name}: the label column {label_column!r} cannot also be a feature")
        clash = [c for c in feature_columns if c in roles]
        if clash:
            raise DataError(f"{source_name}: column {clash[0]!r} is {roles[clash[0]]} and cannot also be a "
                            "numeric feature")
    if not feature_columns and not one_hot and not text_columns and not smiles_column:
        raise DataError(f"{source_name}: no feature columns left")

    # -- missing values: every affected column at once, with its count -------------------
    n = len(df)
    checked = [*feature_columns, *one_hot] + ([label_column] if label_column else [])
    miss = {col: _is_missing(df[col]) for col in checked}
    affected = {col: m for col, m in miss.items() if m.any()}
    keep_rows = np.ones(n, dtype=bool)
    if affected:
        rows_hit = np.zeros(n, dtype=bool)
        for m in affected.values():
            rows_hit |= m
        listing = ", ".join(f"{col!r} {int(m.sum())} (first: {_first_row(m, lines)})" for col, m in affected.items())
        label_miss = affected.get(label_column) if label_column else None
        if missing == "error":
            raise DataError(
                f"{source_name}: missing values in {len(affected)} column(s), {int(rows_hit.sum())} row(s): "
                f"{listing}. Leave those rows out ({say['missing=drop']}) or fill the gaps in "
                f"({say['missing=impute']}, the median of a numeric column, the most frequent value of a category)")
        if missing == "impute" and label_miss is not None:
            raise DataError(f"{source_name}: missing label in column {label_column!r}: {int(label_miss.sum())} "
                            f"row(s) (first: {_first_row(label_miss, lines)}); labels are not imputed: leave those "
                            f"rows out ({say['missing=drop']})")
        if missing == "drop":
            keep_rows = ~rows_hit
            if not keep_rows.any():
                raise DataError(f"{source_name}: every row has a missing value ({listing})")
            notices.append(f"left out {int(rows_hit.sum())} row(s) with missing values: {listing}")
    # -- numeric features -------------------------------------------------------------
    X_num = np.empty((n, len(feature_columns)))
    textual = []
    imputed = []
    for j, col in enumerate(feature_columns):
        raw = df[col]
        m = miss[col]
        values = _numbers(raw, decimal)
        bad = ~np.isfinite(values) & ~m
        if bad.any():
            if np.isnan(values[~m]).all():
                cells = raw[~m].str.strip()
                if decimal == "." and cells.str.match(feats._NUMBER_COMMA.pattern).any() and \
                        cells.str.match(r"^[+-]?(\d+|\d+,\d*|,\d+)([eE][+-]?\d+)?$").all():
                    i = int(np.flatnonzero(bad)[0])
                    raise DataError(f"{source_name}: non-numeric value {raw.iloc[i]!r} in column {col!r}, "
                                    f"{_describe_row(i, lines)}: numbers with decimal commas? set the decimal "
                                    "separator to ','")
                textual.append(col)
                continue
            i = int(np.flatnonzero(bad)[0])
            what = "infinite" if np.isinf(values[i]) else "non-numeric"
            hint = " (decimal commas? the decimal separator is '.')" if decimal == "." and \
                feats._NUMBER_COMMA.match(str(raw.iloc[i]).strip()) else ""
            raise DataError(f"{source_name}: {what} value {raw.iloc[i]!r} in column {col!r}, "
                            f"{_describe_row(i, lines)}{hint}")
        huge = ~m & (np.abs(values) > max_value) if max_value is not None else np.zeros(len(values), dtype=bool)
        if huge.any():
            i = int(np.flatnonzero(huge)[0])
            raise DataError(f"{source_name}: value {raw.iloc[i]!r} in column {col!r}, {_describe_row(i, lines)} is "
                            f"too large: feature values must lie within ±{max_value:g} (the solvers square and add "
                            "them); rescale the column")
        if m.any() and missing == "impute":
            fill = float(np.median(values[~m & keep_rows])) if (~m & keep_rows).any() else 0.0
            values[m] = fill
            imputed.append(f"{col!r} {int(m.sum())} with the median {for_people(fill)}")
        X_num[:, j] = values
    constant_text = [c for c in textual
                     if len({v.strip() for v, mm in zip(df[c], miss[c], strict=True) if not mm}) <= 1]
    if constant_text and constant_columns != "error":  # one text value throughout: a constant column
        keep_cols = [j for j, c in enumerate(feature_columns) if c not in constant_text]
        X_num = X_num[:, keep_cols]
        feature_columns = [feature_columns[j] for j in keep_cols]
        textual = [c for c in textual if c not in constant_text]
    else:
        constant_text = []
    if textual:
        parts = []
        for col in textual:
            distinct = _category_order(v.strip() for v, mm in zip(df[col], miss[col], strict=True) if not mm)
            if len(distinct) <= ONE_HOT_MAX:
                parts.append(f"column {col!r} ({len(distinct)} categories: {_values_shown(distinct)}; one-hot "
                             "encode it)")
            else:
                parts.append(f"column {col!r} ({len(distinct)} distinct texts; use it as a text column, "
                             "TF-IDF features, or as the display column)")
        raise DataError(f"{source_name}: text instead of numbers in {', '.join(parts)}; or leave "
                        f"{'it' if len(textual) == 1 else 'them'} out of the features")

    # -- one-hot categories ------------------------------------------------------------
    onehot_blocks, onehot_names = [], []
    for col in one_hot:
        values = df[col].str.strip().to_numpy(dtype=object)
        m = miss[col]
        if m.any() and missing == "impute":
            fill = feats.most_frequent([v for v, mm, k in zip(values, m, keep_rows, strict=True) if not mm and k])
            values = np.where(m, fill, values)
            imputed.append(f"{col!r} {int(m.sum())} with the most frequent value {fill!r}")
        cats = _category_order(v for v, mm, k in zip(values, m, keep_rows, strict=True)
                               if k and (not mm or missing == "impute"))
        if len(cats) > max(ONE_HOT_MAX * 5, 100):
            raise DataError(f"{source_name}: column {col!r} has {len(cats)} distinct values, too many to one-hot "
                            "encode; use it as a text column instead")
        block = np.zeros((n, len(cats)))
        index = {c: k for k, c in enumerate(cats)}
        for i, v in enumerate(values):
            if v in index:
                block[i, index[v]] = 1.0
        onehot_blocks.append(block)
        onehot_names.extend(f"{col}={c}" for c in cats)
    if imputed:
        notices.append("filled in missing values: " + ", ".join(imputed))

    # -- labels ------------------------------------------------------------------------
    y = None
    classes = None
    if label_column is not None:
        raw = df[label_column][keep_rows]
        kept_lines = None if lines is None else [ln for ln, k in zip(lines, keep_rows, strict=True) if k]
        y, classes = _binary_labels(raw.reset_index(drop=True), label_column, positive, one_vs_rest, source_name,
                                    kept_lines)
        y_full = np.zeros(n)
        y_full[keep_rows] = y
        y = y_full

    # -- molecules ---------------------------------------------------------------------
    fingerprint = None
    if smiles_column is not None:
        try:
            fps = feats.morgan_fingerprints(df[smiles_column].tolist(), fingerprint_radius, fingerprint_bits)
        except ValueError as exc:
            raise DataError(f"{source_name}: {exc}") from None
        bad_rows = [(i, s) for i, s in fps.invalid if keep_rows[i]]
        if bad_rows:
            listing = "; ".join(f"{_describe_row(i, lines)}: {s!r}" if s else f"{_describe_row(i, lines)}: empty"
                                for i, s in bad_rows[:10])
            more = f" and {len(bad_rows) - 10} more" if len(bad_rows) > 10 else ""
            if invalid_smiles == "error":
                raise DataError(f"{source_name}: {len(bad_rows)} invalid SMILES in column {smiles_column!r}: "
                                f"{listing}{more}. Fix them, or leave those rows out ({say['invalid_smiles=drop']})")
            notices.append(f"left out {len(bad_rows)} row(s) with invalid SMILES in {smiles_column!r}: "
                           f"{listing}{more}")
        parsed = np.zeros(n, dtype=bool)
        parsed[fps.valid] = True
        keep_rows &= parsed
        if not keep_rows.any():
            raise DataError(f"{source_name}: no row left with a valid SMILES in {smiles_column!r}")
        position = np.full(n, -1)
        position[fps.valid] = np.arange(len(fps.valid))
        fingerprint = fps.X[position[keep_rows]]

    # -- keep the rows that stay, then constant columns -------------------------------
    X_dense = np.hstack([X_num, *onehot_blocks]) if onehot_blocks else X_num
    X_dense = X_dense[keep_rows]
    dense_names = list(feature_columns) + onehot_names
    n_numeric = len(feature_columns)
    dropped: list[str] = list(constant_text)
    if constant_text:
        notices.append(f"dropped {len(constant_text)} constant text column(s): {_values_shown(constant_text, 20)}")
    if len(X_dense) > 1 and constant_columns != "keep" and X_dense.shape[1]:
        constant = [dense_names[j] for j in range(X_dense.shape[1]) if np.all(X_dense[:, j] == X_dense[0, j])]
        if constant:
            if constant_columns == "error":
                raise DataError(f"{source_name}: constant column(s) carry no information: "
                                f"{', '.join(repr(c) for c in constant)}; "
                                f"remove them (or {say['constant_columns=drop']})")
            keep = [j for j, c in enumerate(dense_names) if c not in constant]
            if not keep and not text_columns and smiles_column is None:
                raise DataError(f"{source_name}: every feature column is constant")
            n_numeric = sum(1 for j in keep if j < n_numeric)
            X_dense = X_dense[:, keep]
            dense_names = [dense_names[j] for j in keep]
            dropped += constant
            notices.append(f"dropped {len(constant)} constant column(s): {_values_shown(constant, 20)}")
    blocks: list[dict[str, Any]] = []
    if n_numeric:
        blocks.append({"kind": "numeric", "start": 0, "stop": n_numeric})
    if X_dense.shape[1] > n_numeric:
        blocks.append({"kind": "onehot", "start": n_numeric, "stop": X_dense.shape[1]})
    parts: list[Any] = [X_dense] if X_dense.shape[1] else []
    names = list(dense_names)
    width = X_dense.shape[1]

    # -- documents ---------------------------------------------------------------------
    texts_kept: dict[str, list[str]] = {}
    for col in text_columns:
        empty = _is_missing(df[col])[keep_rows]
        texts_kept[col] = ["" if e else str(v) for v, e in zip(df[col][keep_rows], empty, strict=True)]
    separate = text_blocks or len(text_columns) < 2
    # one document per row of all the text columns (title, then abstract: the record as a screener reads it),
    # or one vocabulary per column (``text_blocks``)
    documents = ([(col, texts_kept[col]) for col in text_columns] if separate else
                 [(text_columns[0], [" ".join(part for part in parts if part)
                                     for parts in zip(*(texts_kept[c] for c in text_columns), strict=True)])])
    for col, docs in documents:
        prefix = f"{col}:" if len(documents) > 1 else ""
        try:
            T, terms = feats.tfidf_features(docs, analyzer=text_analyzer, min_df=text_min_df,
                                            max_features=text_max_features, prefix=prefix)
        except ValueError as exc:
            raise DataError(f"{source_name}: text column {col!r}: {exc}") from None
        if text_svd:
            try:
                Z = feats.svd_reduce(T, text_svd, seed=seed)
            except ValueError as exc:
                raise DataError(f"{source_name}: text column {col!r}: {exc}") from None
            parts.append(Z)
            names.extend(f"{prefix}svd{k}" for k in range(Z.shape[1]))
            blocks.append({"kind": "svd", "column": col, "start": width, "stop": width + Z.shape[1],
                           "terms": len(terms), **({} if separate else {"columns": list(text_columns)})})
            width += Z.shape[1]
        else:
            parts.append(T)
            names.extend(terms)
            blocks.append({"kind": "tfidf", "column": col, "start": width, "stop": width + T.shape[1],
                           "analyzer": text_analyzer, **({} if separate else {"columns": list(text_columns)})})
            width += T.shape[1]
    if fingerprint is not None:
        parts.append(fingerprint)
        names.extend(f"bit{k}" for k in range(fingerprint.shape[1]))
        blocks.append({"kind": "morgan", "column": smiles_column, "start": width,
                       "stop": width + fingerprint.shape[1], "radius": int(fingerprint_radius),
                       "bits": int(fingerprint_bits)})
        width += fingerprint.shape[1]
    if not parts:
        raise DataError(f"{source_name}: every feature column is constant"
                        + (f" ({_values_shown(dropped, 20)})" if dropped else ""))
    if any(sp.issparse(p) for p in parts):
        X = sp.hstack([sp.csr_matrix(p) for p in parts], format="csr", dtype=np.float64)
        X.sort_indices()
    else:
        X = np.hstack(parts) if len(parts) > 1 else parts[0]

    display_values = None
    display_kind = "table"
    molecule_column = None
    if display_column is not None:
        display_values = [str(v) for v in df[display_column][keep_rows]]
        display_kind = "text"
    elif text_columns:
        if len(text_columns) == 1:
            display_values = texts_kept[text_columns[0]]
        else:
            display_values = ["\n\n".join(f"{c}: {texts_kept[c][i]}" for c in text_columns)
                              for i in range(int(keep_rows.sum()))]
        display_kind = "text"
    elif smiles_column is not None:
        display_values = [str(v).strip() for v in df[smiles_column][keep_rows]]
        display_kind = "text"
        molecule_column = smiles_column
    if image_shape is not None:
        w, h = (int(v) for v in image_shape)
        if w * h != X.shape[1]:
            raise DataError(f"{source_name}: image shape {w}x{h} needs {w * h} features, found {X.shape[1]}")
        image_shape = (w, h)
        if display_kind != "text":
            display_kind = "image"

    item_keys = None
    if key_column is not None:
        item_keys = [str(v).strip() for v in df[key_column]]
        seen_keys: dict[str, int] = {}
        for i, key in enumerate(item_keys):
            if not keep_rows[i]:
                continue
            if key in seen_keys:
                raise DataError(f"{source_name}: duplicate key {key!r} in column {key_column!r}, "
                                f"{_describe_row(seen_keys[key], lines)} and {_describe_row(i, lines)}")
            seen_keys[key] = i
        item_keys = [k for k, keep in zip(item_keys, keep_rows, strict=True) if keep]
    elif not keep_rows.all():  # rows were left out: say which row of the file each item is
        item_keys = [f"row {i + 1}" for i in np.flatnonzero(keep_rows)]

    kernel = "tanimoto" if fingerprint is not None and width == fingerprint.shape[1] else (
        "linear" if any(b["kind"] in ("tfidf", "svd") for b in blocks) else "rbf")  # cosine: rows of unit length
    options = {"sep": sep, "decimal": decimal, "missing": missing}
    if text_columns:
        options.update(text_columns=list(text_columns), text_analyzer=text_analyzer, text_min_df=text_min_df,
                       text_max_features=text_max_features, text_svd=text_svd, text_blocks=bool(text_blocks))
    if smiles_column:
        options.update(smiles_column=smiles_column, fingerprint_radius=int(fingerprint_radius),
                       fingerprint_bits=int(fingerprint_bits), invalid_smiles=invalid_smiles)
    if one_hot:
        options["one_hot"] = list(one_hot)
    return Dataset(name=name, X=X, y=None if y is None else y[keep_rows], feature_names=names,
                   display_kind=display_kind, image_shape=image_shape, display_values=display_values,
                   item_keys=item_keys, source=source_name, description="", classes=classes,
                   dropped_columns=dropped, feature_blocks=blocks, notices=notices, default_kernel=kernel,
                   molecule_column=molecule_column, import_options=options)


def _binary_labels(raw: pd.Series, column: str, positive, one_vs_rest: bool, source_name: str,
                   lines: list[int] | None = None) -> tuple[np.ndarray, tuple[Any, Any]]:
    missing = _is_missing(raw)
    if missing.any():
        i = int(np.flatnonzero(missing)[0])
        raise DataError(f"{source_name}: missing label in column {column!r}, {_describe_row(i, lines)}")
    keys = [_normalise_label(v) for v in raw]
    numeric = all(isinstance(k, float) for k in keys)
    if not numeric:  # mixed columns compare as text ("1" and "a")
        keys = [str(v).strip() for v in raw]
    found = sorted(set(keys))
    shown = ", ".join(repr(_pretty(c)) for c in found[:10]) + (" ..." if len(found) > 10 else "")
    pos_key = None
    if positive is not None:
        pos_key = _normalise_label(positive) if numeric else str(positive).strip()
        if pos_key not in found:
            raise DataError(f"{source_name}: positive value {_pretty(positive)!r} does not occur in label column "
                            f"{column!r}; values found: {shown}")
    if len(found) < 2:
        raise DataError(f"{source_name}: label column {column!r} has only one class ({shown}); "
                        "two classes are needed")
    if len(found) > 2 and pos_key is None:
        raise DataError(f"{source_name}: label column {column!r} has {len(found)} classes ({shown}); "
                        "choose the positive value (that value against the rest)")
    if pos_key is None:
        pos_key = found[-1]
    y = np.array([1.0 if k == pos_key else -1.0 for k in keys])
    if len(found) == 2:
        negative = _pretty(found[0] if found[1] == pos_key else found[1])
    else:
        negative = "rest"
    return y, (negative, _pretty(pos_key))


# ---------------------------------------------------------------------------
# Bundled datasets
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class BundledInfo:
    name: str
    title: str
    description: str
    file: str
    default_positive: Any
    positive_values: tuple
    source: str
    licence: str


BUNDLED: dict[str, BundledInfo] = {
    "digits": BundledInfo(
        name="digits",
        title="Handwritten digits (8x8)",
        description="1,797 handwritten digits as 8x8 grey-level images (64 pixel counts 0-16); "
                    "one digit (default 8) against the rest.",
        file="digits.csv.gz",
        default_positive=8,
        positive_values=tuple(range(10)),
        source="UCI Machine Learning Repository, Optical Recognition of Handwritten Digits "
               "(E. Alpaydin, C. Kaynak, 1998), test set as distributed with scikit-learn",
        licence="CC BY 4.0",
    ),
    "breast-cancer": BundledInfo(
        name="breast-cancer",
        title="Breast cancer (Wisconsin diagnostic)",
        description="569 breast-mass biopsies described by 30 measurements of cell nuclei; "
                    "malignant (positive) vs benign.",
        file="breast_cancer.csv",
        default_positive="malignant",
        positive_values=("malignant", "benign"),
        source="UCI Machine Learning Repository, Breast Cancer Wisconsin (Diagnostic) "
               "(W. H. Wolberg, W. N. Street, O. L. Mangasarian, 1995)",
        licence="CC BY 4.0",
    ),
    "arxiv": BundledInfo(
        name="arxiv",
        title="arXiv abstracts (documents)",
        description="993 titles and abstracts of machine-learning and vision papers from arXiv, as TF-IDF "
                    "features; one category (default cs.RO, robotics: 34 papers, 3.4%) against the rest.",
        file="arxiv_abstracts.csv.gz",
        default_positive="cs.RO",
        positive_values=("cs.RO", "cs.CL", "eess.IV", "cs.AI", "stat.ML", "cs.NE"),
        source="arXiv metadata (titles, abstracts, categories), a sample of 1,000 papers as collected in the "
               "'arXiv Paper Abstracts' set (S. Paul, S. Rakshit, 2021)",
        licence="CC0 1.0 (arXiv metadata)",
    ),
    "nci-molecules": BundledInfo(
        name="nci-molecules",
        title="NCI molecules (SMILES)",
        description="4,991 molecules of the NCI open database as Morgan fingerprints (radius 2, 2048 bits; the "
                    "8 SMILES RDKit cannot read are left out); positive = has a substructure (default: a "
                    "carboxylic acid, 11%).",
        file="rdkit:NCI/first_5K.smi",
        default_positive="carboxylic acid",
        positive_values=("carboxylic acid", "nitro group", "sulfonamide", "pyridine ring"),
        source="NCI Open Database, first 5,000 structures as shipped in RDKit's package data "
               "(rdkit/Data/NCI/first_5K.smi)",
        licence="public domain (U.S. National Cancer Institute); RDKit BSD-3-Clause",
    ),
}

#: substructures (SMARTS) that define the positive class of the bundled molecules
SUBSTRUCTURES = {
    "carboxylic acid": "[CX3](=O)[OX2H1]",
    "nitro group": "[N+](=O)[O-]",
    "sulfonamide": "S(=O)(=O)N",
    "pyridine ring": "n1ccccc1",
}


def _load_arxiv(path: Path, category: str, info: BundledInfo) -> Dataset:
    """The bundled abstracts: title and abstract as one document, ``category`` against the rest."""
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    found = sorted({c for cats in frame["categories"] for c in cats.split()})
    if category not in found:
        raise DataError(f"arxiv: positive must be a category of the set (e.g. {', '.join(info.positive_values)}), "
                        f"got {category!r}")
    table = pd.DataFrame({"key": frame["key"], "document": frame["title"] + "\n\n" + frame["abstract"],
                          "label": ["yes" if category in cats.split() else "no" for cats in frame["categories"]]})
    ds = load_csv(table.to_csv(index=False).encode(), label_column="label", positive="yes", key_column="key",
                  text_columns=["document"], name="arxiv")
    ds.classes = ("rest", category)
    ds.description = f"{info.description} Positive: {category}."
    return ds


def _load_nci(substructure: str, info: BundledInfo) -> Dataset:
    """The NCI molecules RDKit ships, labelled by a substructure match (RDKit), as fingerprints."""
    from rdkit import Chem, RDConfig, RDLogger

    if substructure not in SUBSTRUCTURES:
        raise DataError(f"nci-molecules: positive must be one of {', '.join(SUBSTRUCTURES)}, got {substructure!r}")
    path = Path(RDConfig.RDDataDir) / "NCI" / "first_5K.smi"
    rows = [line.split() for line in path.read_text().splitlines() if line.strip()]
    query = Chem.MolFromSmarts(SUBSTRUCTURES[substructure])
    labels = []
    RDLogger.DisableLog("rdApp.*")
    try:
        for smiles, *_ in rows:
            mol = Chem.MolFromSmiles(smiles)
            labels.append("" if mol is None else ("yes" if mol.HasSubstructMatch(query) else "no"))
    finally:
        RDLogger.EnableLog("rdApp.*")
    table = pd.DataFrame({"key": [f"nci-{r[1] if len(r) > 1 else i + 1}" for i, r in enumerate(rows)],
                          "smiles": [r[0] for r in rows], "label": labels})
    unreadable = table[table["label"] == ""]
    table = table[table["label"] != ""]
    ds = load_csv(table.to_csv(index=False).encode(), label_column="label", positive="yes", key_column="key",
                  smiles_column="smiles", name="nci-molecules")
    if len(unreadable):
        ds.notices.insert(0, f"left out {len(unreadable)} SMILES that RDKit cannot read: "
                             + ", ".join(unreadable["key"].tolist()))
    ds.classes = ("rest", substructure)
    ds.description = f"{info.description} Positive: {substructure}."
    return ds


def load_bundled(name: str, positive=None) -> Dataset:
    """One of the bundled datasets (names in :data:`BUNDLED`) as a binary problem.

    ``digits``: positive = one digit (default 8) vs the rest, shown as 8x8 images.
    ``breast-cancer``: positive = ``"malignant"`` (default) or ``"benign"``, shown as a table row.
    ``arxiv``: positive = an arXiv category (default ``cs.RO``) against the rest, TF-IDF of title + abstract.
    ``nci-molecules``: positive = a substructure of :data:`SUBSTRUCTURES`, Morgan fingerprints, drawn.
    """
    if name not in BUNDLED:
        raise DataError(f"unknown bundled dataset {name!r}; choose one of {', '.join(BUNDLED)}")
    info = BUNDLED[name]
    positive = info.default_positive if positive is None else positive
    path = ASSETS_DIR / info.file
    if name == "digits":
        try:
            digit = int(positive)
        except (TypeError, ValueError):
            digit = -1
        if digit not in info.positive_values or float(positive) != digit:
            raise DataError(f"digits: positive must be a digit 0-9, got {positive!r}")
        ds = load_csv(path, label_column="digit", positive=digit, image_shape=(8, 8), name="digits",
                      one_vs_rest=True, constant_columns="keep")
        ds.item_keys = [f"digit-{i:04d}" for i in range(len(ds))]
        ds.classes = ("rest", str(digit))
        ds.description = f"{info.description} Positive: digit {digit}."
    elif name == "arxiv":
        ds = _load_arxiv(path, str(positive), info)
    elif name == "nci-molecules":
        ds = _load_nci(str(positive), info)
    else:
        if str(positive) not in info.positive_values:
            raise DataError(f"breast-cancer: positive must be 'malignant' or 'benign', got {positive!r}")
        ds = load_csv(path, label_column="diagnosis", positive=str(positive), key_column="id",
                      name="breast-cancer")
        ds.description = f"{info.description} Positive: {positive}."
    ds.source = f"{info.source}; licence {info.licence}"
    return ds


__all__ = ["ASSETS_DIR", "BUNDLED", "BundledInfo", "ColumnProfile", "CsvProfile", "DataError", "DataTooLarge",
           "Dataset", "GENERATORS", "MAX_CELLS", "MAX_COLUMNS", "MAX_CSV_BYTES", "MAX_FEATURE_VALUE",
           "MISSING_POLICIES", "ONE_HOT_MAX", "check_csv_shape", "checkerboard_labels", "load_bundled", "load_csv",
           "make_banana", "make_checkerboard", "make_gaussians", "make_waveform", "profile_csv", "standardize",
           "stratified_split", "waveform_bases"]
