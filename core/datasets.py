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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ASSETS_DIR = Path(__file__).resolve().parent.parent / "assets"

# Cell contents read as "missing" (pandas' usual NA spellings).
MISSING_TOKENS = frozenset({"", "na", "n/a", "nan", "null", "none", "#n/a", "-nan", "<na>"})


class DataError(ValueError):
    """Input data that cannot be used, with a message naming what is wrong and where."""


@dataclass
class Dataset:
    """A feature matrix with optional binary labels and what the app needs to show an item.

    ``display_kind`` says how one item is shown: ``"table"`` (a row of
    feature values), ``"image"`` (``X[i]`` reshaped to ``image_shape`` =
    (width, height), row-major) or ``"text"`` (``display_values[i]``).
    ``classes`` is (negative, positive): the original label values that map
    to -1 and +1.
    """

    name: str
    X: np.ndarray
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

    def __post_init__(self) -> None:
        self.X = np.asarray(self.X, dtype=np.float64)
        if self.X.ndim != 2:
            raise ValueError(f"X must be two-dimensional, got shape {self.X.shape}")
        if self.y is not None:
            self.y = np.asarray(self.y, dtype=np.float64)
            if self.y.shape != (len(self.X),):
                raise ValueError(f"y has shape {self.y.shape}, expected ({len(self.X)},)")
            if not np.all(np.isin(self.y, (-1.0, 1.0))):
                raise ValueError("y must contain only -1 and +1")
        if not self.feature_names:
            self.feature_names = [f"x{j}" for j in range(self.X.shape[1])]
        if self.display_kind not in ("table", "image", "text"):
            raise ValueError(f"display_kind must be 'table', 'image' or 'text', got {self.display_kind!r}")
        if self.display_kind == "image":
            if self.image_shape is None or int(self.image_shape[0]) * int(self.image_shape[1]) != self.X.shape[1]:
                raise ValueError(f"image_shape {self.image_shape} does not match {self.X.shape[1]} features")
        if self.display_kind == "text" and (self.display_values is None or len(self.display_values) != len(self.X)):
            raise ValueError("display_kind 'text' needs one display value per item")

    def __len__(self) -> int:
        return len(self.X)

    @property
    def n_features(self) -> int:
        return self.X.shape[1]

    def image(self, i: int) -> np.ndarray:
        """Item ``i`` as a (height, width) array, for ``display_kind == "image"``."""
        if self.image_shape is None:
            raise ValueError(f"dataset {self.name!r} has no image shape")
        w, h = (int(v) for v in self.image_shape)
        return self.X[i].reshape(h, w)


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

def _read_bytes(source) -> tuple[bytes, str]:
    """Raw bytes of a path, bytes object or file-like, and a name for messages."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source), "data"
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if not path.exists():
            raise DataError(f"file not found: {path}")
        if path.is_dir():
            raise DataError(f"{path} is a folder, not a CSV file")
        data = path.read_bytes()
        if path.suffix == ".gz":
            try:
                data = gzip.decompress(data)
            except OSError as exc:
                raise DataError(f"{path.name}: not a valid gzip file ({exc})") from None
        return data, path.name
    if hasattr(source, "read"):
        data = source.read()
        if isinstance(data, str):
            data = data.encode("utf-8")
        return bytes(data), getattr(source, "name", "data") or "data"
    raise TypeError(f"cannot read CSV from {type(source).__name__}")


def _decode(data: bytes, name: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        bad = data[exc.start: exc.start + 1]
        raise DataError(f"{name}: not UTF-8 text: byte 0x{bad.hex()} on line {line} (byte offset {exc.start}); "
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


def load_csv(source, label_column: str | None = None, positive=None, feature_columns=None,
             display_column: str | None = None, image_shape: tuple[int, int] | None = None,
             name: str | None = None, *, key_column: str | None = None, constant_columns: str = "error",
             one_vs_rest: bool = False, sep: str = ",") -> Dataset:
    """Read a CSV file into a :class:`Dataset`, checking it cell by cell.

    source: a path, the file's bytes, or a file-like object (text or binary).
    label_column: optional column of class labels.  It must hold exactly two
        distinct values (unless ``one_vs_rest`` and ``positive`` are given, in
        which case ``positive`` becomes +1 and every other value -1).
    positive: the label value that becomes +1.  Default: the larger of the two
        values (numbers compared as numbers, text alphabetically), as in
        scikit-learn's ``classes_[1]``.
    feature_columns: the numeric feature columns; default every column but the
        label, display and key columns.
    display_column: a column shown to the analyst as the item (``display_kind="text"``).
    image_shape: (width, height) to show items as images (``display_kind="image"``).
    key_column: a column of unique item identifiers (``item_keys``).
    constant_columns: what to do with feature columns holding one value only:
        ``"error"`` (default: reject, naming them), ``"drop"`` (leave them out,
        listed in ``dropped_columns``) or ``"keep"``.

    Raises :class:`DataError` naming the row/column/value for: text that is
    not UTF-8, an empty file, ragged rows, duplicate column names, a missing
    column, a non-numeric or infinite value, a missing value, constant columns,
    a label column with other than two classes, a positive value not present.
    """
    data, source_name = _read_bytes(source)
    name = name or (Path(source_name).name.split(".")[0] if source_name != "data" else "data")
    text = _decode(data, source_name)
    if not text.strip():
        raise DataError(f"{source_name}: the file is empty")

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
                         skipinitialspace=True, skip_blank_lines=True)
    except pd.errors.ParserError as exc:
        msg = str(exc)
        m = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", msg)
        if m:
            raise DataError(f"{source_name}: line {m.group(2)} has {m.group(3)} fields but the header has "
                            f"{m.group(1)}") from None
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
                        "check the delimiter and quoting")
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
    if len(columns) == 1 and sep == ",":
        for other, label in ((";", "semicolons"), ("\t", "tabs")):
            if other in columns[0]:
                raise DataError(f"{source_name}: the header has a single column {columns[0]!r}; the file seems to "
                                f"be separated by {label}, not commas")

    def require(col, role):
        if col not in columns:
            shown = ", ".join(repr(c) for c in columns[:12]) + (" ..." if len(columns) > 12 else "")
            raise DataError(f"{source_name}: {role} {col!r} not found; columns are: {shown}")

    special = []
    for col, role in ((label_column, "label column"), (display_column, "display column"),
                      (key_column, "key column")):
        if col is not None:
            require(col, role)
            special.append(col)
    if feature_columns is None:
        feature_columns = [c for c in columns if c not in special]
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
    if not feature_columns:
        raise DataError(f"{source_name}: no feature columns left")

    # Features: every cell must be a finite number.
    X = np.empty((len(df), len(feature_columns)))
    for j, col in enumerate(feature_columns):
        raw = df[col]
        missing = _is_missing(raw)
        if missing.any():
            i = int(np.flatnonzero(missing)[0])
            raise DataError(f"{source_name}: missing value in column {col!r}, {_describe_row(i, lines)}"
                            + (f" ({int(missing.sum())} missing in this column)" if missing.sum() > 1 else ""))
        values = pd.to_numeric(raw.str.strip(), errors="coerce").to_numpy(dtype=np.float64)
        bad = ~np.isfinite(values)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            what = "infinite" if np.isinf(values[i]) else "non-numeric"
            hint = ""
            if np.isnan(values).all():
                hint = " (a text column? leave it out of the features or use it as the display column)"
            raise DataError(f"{source_name}: {what} value {raw.iloc[i]!r} in column {col!r}, {_describe_row(i, lines)}"
                            + hint)
        X[:, j] = values

    if constant_columns not in ("error", "drop", "keep"):
        raise ValueError(f"constant_columns must be 'error', 'drop' or 'keep', got {constant_columns!r}")
    dropped: list[str] = []
    if len(X) > 1 and constant_columns != "keep":
        constant = [feature_columns[j] for j in range(X.shape[1]) if np.all(X[:, j] == X[0, j])]
        if constant:
            if constant_columns == "error":
                raise DataError(f"{source_name}: constant column(s) carry no information: "
                                f"{', '.join(repr(c) for c in constant)}; remove them (or drop constant columns)")
            keep = [j for j, c in enumerate(feature_columns) if c not in constant]
            if not keep:
                raise DataError(f"{source_name}: every feature column is constant")
            X = X[:, keep]
            feature_columns = [feature_columns[j] for j in keep]
            dropped = constant

    y = None
    classes = None
    if label_column is not None:
        y, classes = _binary_labels(df[label_column], label_column, positive, one_vs_rest, source_name, lines)

    display_values = None
    display_kind = "table"
    if display_column is not None:
        display_values = [str(v) for v in df[display_column]]
        display_kind = "text"
    if image_shape is not None:
        w, h = (int(v) for v in image_shape)
        if w * h != X.shape[1]:
            raise DataError(f"{source_name}: image shape {w}x{h} needs {w * h} features, found {X.shape[1]}")
        image_shape = (w, h)
        if display_column is None:
            display_kind = "image"

    item_keys = None
    if key_column is not None:
        item_keys = [str(v).strip() for v in df[key_column]]
        seen_keys: dict[str, int] = {}
        for i, key in enumerate(item_keys):
            if key in seen_keys:
                raise DataError(f"{source_name}: duplicate key {key!r} in column {key_column!r}, "
                                f"{_describe_row(seen_keys[key], lines)} and {_describe_row(i, lines)}")
            seen_keys[key] = i

    return Dataset(name=name, X=X, y=y, feature_names=list(feature_columns), display_kind=display_kind,
                   image_shape=image_shape, display_values=display_values, item_keys=item_keys,
                   source=source_name, description="", classes=classes, dropped_columns=dropped)


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
    if len(found) > 2 and not (one_vs_rest and pos_key is not None):
        raise DataError(f"{source_name}: label column {column!r} has {len(found)} classes ({shown}); "
                        "exactly two are needed (or choose a positive value, one vs the rest)")
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
}


def load_bundled(name: str, positive=None) -> Dataset:
    """One of the bundled datasets (names in :data:`BUNDLED`) as a binary problem.

    ``digits``: positive = one digit (default 8) vs the rest, shown as 8x8 images.
    ``breast-cancer``: positive = ``"malignant"`` (default) or ``"benign"``, shown as a table row.
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
    else:
        if str(positive) not in info.positive_values:
            raise DataError(f"breast-cancer: positive must be 'malignant' or 'benign', got {positive!r}")
        ds = load_csv(path, label_column="diagnosis", positive=str(positive), key_column="id",
                      name="breast-cancer")
        ds.description = f"{info.description} Positive: {positive}."
    ds.source = f"{info.source}; licence {info.licence}"
    return ds


__all__ = ["ASSETS_DIR", "BUNDLED", "BundledInfo", "DataError", "Dataset", "GENERATORS", "checkerboard_labels",
           "load_bundled", "load_csv", "make_banana", "make_checkerboard", "make_gaussians", "make_waveform",
           "standardize", "stratified_split", "waveform_bases"]
