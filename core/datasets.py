"""Datasets: synthetic generators, the bundled demo sets and a checked CSV loader.

Every loader returns a :class:`Dataset` with a float64 feature matrix and, when
labels are known, ``y`` in {-1, +1}.  Every generator takes a
``numpy.random.Generator`` and returns ``(X, y)``.

Bad input raises :class:`DataError` (a ``ValueError``) whose message names the
row, column and value at fault, so that the app and the command line can show
it as it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

# data import is core.ingest's; its names stay importable from here, where callers have long found them
from core import ingest
from core.features import Standardizer
from core.ingest import reading
from core.ingest.errors import DataError, DataTooLarge, NotText  # noqa: F401
from core.ingest.options import (  # noqa: F401
    CHOICE_WORDS,
    MAX_FEATURE_VALUE,
    MISSING_POLICIES,
    ONE_HOT_MAX,
    CsvOptions,
)
from core.ingest.reading import MAX_CELLS, MAX_COLUMNS, MAX_CSV_BYTES, MISSING_TOKENS, Bounds  # noqa: F401

ASSETS_DIR = Path(__file__).resolve().parent.parent / "assets"


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
    Read with every value of the label column a class (``label_mode="classes"``), ``y`` and
    ``classes`` are None and ``class_y`` holds each item's class index into ``class_names``.
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
    class_y: np.ndarray | None = None
    class_names: tuple[str, ...] | None = None

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
        if (self.class_y is None) != (self.class_names is None):
            raise ValueError("class_y and class_names go together")
        if self.class_y is not None and self.class_names is not None:
            self.class_names = tuple(self.class_names)
            self.class_y = np.asarray(self.class_y, dtype=np.intp)
            if self.class_y.shape != (self.X.shape[0],):
                raise ValueError(f"class_y has shape {self.class_y.shape}, expected ({self.X.shape[0]},)")
            if len(self.class_y) and not (0 <= self.class_y.min() and self.class_y.max() < len(self.class_names)):
                raise ValueError(f"class_y must index the {len(self.class_names)} class names")
        if not self.feature_names:
            self.feature_names = [f"x{j}" for j in range(self.X.shape[1])]
        if self.display_kind not in ("table", "image", "text"):
            raise ValueError(f"display_kind must be 'table', 'image' or 'text', got {self.display_kind!r}")
        if self.display_kind == "image":
            if self.image_shape is None or int(self.image_shape[0]) * int(self.image_shape[1]) != self.X.shape[1]:
                raise ValueError(f"image_shape {self.image_shape} does not match {self.X.shape[1]} features")
        if self.display_kind == "text" and (self.display_values is None or len(self.display_values) != self.X.shape[0]):
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


def make_gaussians(
    n: int, rng: np.random.Generator, separation: float = 1.0, n_features: int = 2
) -> tuple[np.ndarray, np.ndarray]:
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


def make_checkerboard(
    n: int, rng: np.random.Generator, flip: float = 0.0, cells: int = 4
) -> tuple[np.ndarray, np.ndarray]:
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


def make_banana(
    n: int, rng: np.random.Generator, noise: float = 1.0, radius: float = 5.0
) -> tuple[np.ndarray, np.ndarray]:
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


def make_waveform(n: int, rng: np.random.Generator, task: str = "0-vs-rest", return_classes: bool = False):
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
    The statistics and values are ``core.features.Standardizer``'s (the importer's).
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be two-dimensional, got shape {X.shape}")
    scaler = Standardizer().fit(X)
    assert scaler.mean_ is not None and scaler.scale_ is not None  # (set by fit)
    return scaler.transform(X), scaler.mean_, scaler.scale_


def stratified_split(y: np.ndarray, test_fraction: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
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
# CSV loading (the steps are core.ingest's)
# ---------------------------------------------------------------------------


def _bounds() -> Bounds:
    """This module's bounds as they are now (a caller may set ``MAX_CSV_BYTES`` and the others here)."""
    return Bounds(MAX_CSV_BYTES, MAX_COLUMNS, MAX_CELLS)


def check_csv_shape(text: str, sep: str, source_name: str = "data") -> None:
    """Refuse a CSV text of more than ``MAX_COLUMNS`` columns or ``MAX_CELLS`` cells (its header's
    fields times its lines) before anything parses it."""
    reading.check_csv_shape(text, sep, source_name, _bounds())


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


def _column_kind(col: str, present: pd.Series, distinct: int, decimal: str) -> str:
    values = reading.numbers(present, decimal) if len(present) else np.zeros(0)
    if not len(present):
        return "empty"
    if np.isfinite(values).all():
        return "number"
    if "smiles" in col.lower():
        return "smiles"
    if present.str.split().str.len().mean() >= 4:  # sentences: documents, log lines
        return "text"
    if distinct <= ONE_HOT_MAX:
        return "category"
    return "identifier"  # short texts, mostly different: names, ids, keys


def profile_csv(source, sep: str | None = None, decimal: str | None = None, n_preview: int = 20) -> CsvProfile:
    """Delimiter, decimal separator and a profile of every column (missing cells, numbers, categories,
    free text, SMILES by name) of a CSV file; raises :class:`DataError` for a file that cannot be read."""
    from core import features as feats

    text, source_name = reading.read_text(source, _bounds())
    detected_sep, detected_decimal = feats.detect_format(text)
    sep = sep if sep not in (None, "", "auto") else detected_sep
    decimal = decimal if decimal not in (None, "", "auto") else (detected_decimal if sep == detected_sep else ".")
    reading.check_csv_shape(text, sep, source_name, _bounds())
    df = reading.preview_frame(text, sep, source_name)
    columns = []
    for col in df.columns:
        raw = df[col]
        m = reading.is_missing(raw)
        present = raw[~m].str.strip()
        distinct = int(present.nunique())
        columns.append(
            ColumnProfile(
                col, int(m.sum()), _column_kind(col, present, distinct, decimal), distinct, present.head(3).tolist()
            )
        )
    return CsvProfile(
        sep=sep,
        decimal=decimal,
        detected_sep=detected_sep,
        detected_decimal=detected_decimal,
        n_rows=len(df),
        columns=columns,
        frame=df.head(n_preview),
    )


def load_csv(
    source,
    label_column: str | None = None,
    positive=None,
    feature_columns=None,
    display_column: str | None = None,
    image_shape: tuple[int, int] | None = None,
    name: str | None = None,
    *,
    key_column: str | None = None,
    constant_columns: str = "drop",
    one_vs_rest: bool = False,
    sep: str | None = None,
    decimal: str | None = None,
    missing: str = "error",
    one_hot: Sequence[str] | None = None,
    text_columns: Sequence[str] | None = None,
    text_analyzer: str = "word",
    text_min_df: int = 1,
    text_max_features: int | None = None,
    text_svd: int | None = None,
    text_blocks: bool = False,
    smiles_column: str | None = None,
    fingerprint_radius: int = 2,
    fingerprint_bits: int = 2048,
    invalid_smiles: str = "error",
    seed: int = 0,
    max_value: float | None = MAX_FEATURE_VALUE,
    choice_words: dict[str, str] | None = None,
    label_mode: str = "binary",
    class_names: Sequence[str] | None = None,
) -> Dataset:
    """Read a CSV file into a :class:`Dataset`, checking it cell by cell.

    source: a path, the file's bytes, or a file-like object (text or binary).
    choice_words: how a message names the choice that would get past it (``CHOICE_WORDS``'s keys).
    label_column: optional column of class labels.  With two values, ``positive``
        (default: the larger value, as scikit-learn's ``classes_[1]``) becomes +1;
        with more, ``positive`` must be given and is taken against the rest
        (``one_vs_rest`` is still accepted and changes nothing).
    label_mode: ``"binary"`` (default: as above) or ``"classes"``: every value of the label column
        is a class, kept by name (``class_y``, ``class_names``; no ``positive``); ``class_names``
        names the classes expected, in their order (a value that is not one of them is refused).
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
    options = CsvOptions(
        label_column=label_column,
        positive=positive,
        feature_columns=feature_columns,
        display_column=display_column,
        image_shape=image_shape,
        name=name,
        key_column=key_column,
        constant_columns=constant_columns,
        one_vs_rest=one_vs_rest,
        sep=sep,
        decimal=decimal,
        missing=missing,
        one_hot=one_hot,
        text_columns=text_columns,
        text_analyzer=text_analyzer,
        text_min_df=text_min_df,
        text_max_features=text_max_features,
        text_svd=text_svd,
        text_blocks=text_blocks,
        smiles_column=smiles_column,
        fingerprint_radius=fingerprint_radius,
        fingerprint_bits=fingerprint_bits,
        invalid_smiles=invalid_smiles,
        seed=seed,
        max_value=max_value,
        choice_words=choice_words,
        label_mode=label_mode,
        class_names=class_names,
    )
    return ingest.load(source, options, _bounds())


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
        raise DataError(
            f"arxiv: positive must be a category of the set (e.g. {', '.join(info.positive_values)}), got {category!r}"
        )
    table = pd.DataFrame(
        {
            "key": frame["key"],
            "document": frame["title"] + "\n\n" + frame["abstract"],
            "label": ["yes" if category in cats.split() else "no" for cats in frame["categories"]],
        }
    )
    ds = load_csv(
        table.to_csv(index=False).encode(),
        label_column="label",
        positive="yes",
        key_column="key",
        text_columns=["document"],
        name="arxiv",
    )
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
    RDLogger.DisableLog("rdApp.*")  # type: ignore[attr-defined]  # (rdkit's stubs lack it)
    try:
        for smiles, *_ in rows:
            mol = Chem.MolFromSmiles(smiles)
            labels.append("" if mol is None else ("yes" if mol.HasSubstructMatch(query) else "no"))
    finally:
        RDLogger.EnableLog("rdApp.*")  # type: ignore[attr-defined]
    table = pd.DataFrame(
        {
            "key": [f"nci-{r[1] if len(r) > 1 else i + 1}" for i, r in enumerate(rows)],
            "smiles": [r[0] for r in rows],
            "label": labels,
        }
    )
    unreadable = table[table["label"] == ""]
    table = table[table["label"] != ""]
    ds = load_csv(
        table.to_csv(index=False).encode(),
        label_column="label",
        positive="yes",
        key_column="key",
        smiles_column="smiles",
        name="nci-molecules",
    )
    if len(unreadable):
        ds.notices.insert(
            0, f"left out {len(unreadable)} SMILES that RDKit cannot read: " + ", ".join(unreadable["key"].tolist())
        )
    ds.classes = ("rest", substructure)
    ds.description = f"{info.description} Positive: {substructure}."
    return ds


def load_bundled(
    name: str, positive=None, label_mode: str = "binary", class_names: Sequence[str] | None = None
) -> Dataset:
    """One of the bundled datasets (names in :data:`BUNDLED`) as a binary problem, or with
    ``label_mode="classes"`` with every class kept (digits: ten classes "0".."9"; breast-cancer: two;
    ``class_names`` as :func:`load_csv` takes them).

    ``digits``: positive = one digit (default 8) vs the rest, shown as 8x8 images.
    ``breast-cancer``: positive = ``"malignant"`` (default) or ``"benign"``, shown as a table row.
    ``arxiv``: positive = an arXiv category (default ``cs.RO``) against the rest, TF-IDF of title + abstract.
    ``nci-molecules``: positive = a substructure of :data:`SUBSTRUCTURES`, Morgan fingerprints, drawn.
    """
    if name not in BUNDLED:
        raise DataError(f"unknown bundled dataset {name!r}; choose one of {', '.join(BUNDLED)}")
    info = BUNDLED[name]
    path = ASSETS_DIR / info.file
    if label_mode == "classes":
        return _bundled_classes(name, positive, info, path, class_names)
    positive = info.default_positive if positive is None else positive
    if name == "digits":
        try:
            digit = int(positive)
        except (TypeError, ValueError):
            digit = -1
        if digit not in info.positive_values or float(positive) != digit:
            raise DataError(f"digits: positive must be a digit 0-9, got {positive!r}")
        ds = load_csv(
            path,
            label_column="digit",
            positive=digit,
            image_shape=(8, 8),
            name="digits",
            one_vs_rest=True,
            constant_columns="keep",
        )
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
        ds = load_csv(path, label_column="diagnosis", positive=str(positive), key_column="id", name="breast-cancer")
        ds.description = f"{info.description} Positive: {positive}."
    ds.source = f"{info.source}; licence {info.licence}"
    return ds


def _bundled_classes(name: str, positive, info: BundledInfo, path: Path, class_names) -> Dataset:
    """A bundled dataset with every class kept (``load_bundled(..., label_mode="classes")``)."""
    if positive is not None:
        raise DataError(
            f"{name}: a positive value (one class against the rest) and every class kept exclude each other: give one"
        )
    if name == "digits":
        ds = load_csv(
            path,
            label_column="digit",
            image_shape=(8, 8),
            name="digits",
            constant_columns="keep",
            label_mode="classes",
            class_names=class_names,
        )
        ds.item_keys = [f"digit-{i:04d}" for i in range(len(ds))]
    elif name == "breast-cancer":
        ds = load_csv(
            path,
            label_column="diagnosis",
            key_column="id",
            name="breast-cancer",
            label_mode="classes",
            class_names=class_names,
        )
    else:
        raise DataError(
            f"{name}: its classes are one against the rest only; every class kept is available "
            "for digits and breast-cancer"
        )
    ds.description = f"{info.description} Every class kept: {', '.join(ds.class_names or ())}."
    ds.source = f"{info.source}; licence {info.licence}"
    return ds


__all__ = [
    "ASSETS_DIR",
    "BUNDLED",
    "BundledInfo",
    "ColumnProfile",
    "CsvProfile",
    "DataError",
    "DataTooLarge",
    "Dataset",
    "GENERATORS",
    "MAX_CELLS",
    "MAX_COLUMNS",
    "MAX_CSV_BYTES",
    "MAX_FEATURE_VALUE",
    "MISSING_POLICIES",
    "ONE_HOT_MAX",
    "check_csv_shape",
    "checkerboard_labels",
    "load_bundled",
    "load_csv",
    "make_banana",
    "make_checkerboard",
    "make_gaussians",
    "make_waveform",
    "profile_csv",
    "standardize",
    "stratified_split",
    "waveform_bases",
]
