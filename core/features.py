"""Feature builders for data as analysts bring it: documents, molecules, categories, mixed scales.

* :func:`tfidf_features` — text columns as TF-IDF rows (scikit-learn's
  ``TfidfVectorizer``: word unigrams and bigrams with sublinear tf by default,
  terms in more than 95% of the documents left out, character n-grams as an
  option), kept as a SciPy CSR matrix: no dense n x vocabulary array is ever
  built.  The vocabulary is fitted on the whole pool; no label is used.
* :func:`svd_reduce` — an optional dense reduction (truncated SVD) of such rows.
* :func:`morgan_fingerprints` — SMILES as Morgan (ECFP-like) bit vectors with
  RDKit, as CSR; invalid SMILES are returned by row, never silently skipped.
* :class:`Standardizer` — zero mean / unit variance of the numeric columns only,
  from pool statistics (no labels); sparse blocks (TF-IDF, fingerprints) are
  left as they are, so a sparse matrix stays sparse.
* :func:`detect_format` — the delimiter and decimal separator of a CSV text.
* :func:`term_contributions` — for a linear kernel the exact contribution
  w_t x_t of every term of a document to its score.

scikit-learn and RDKit are imported when first needed.
"""

from __future__ import annotations

import csv
import functools
import io
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

#: delimiters tried by :func:`detect_format`, most common first
DELIMITERS = (",", ";", "\t", "|")
DELIMITER_NAMES = {",": "comma", ";": "semicolon", "\t": "tab", "|": "vertical bar"}

#: TF-IDF defaults (ASReview's and most document-review tools' choice: word uni- and bigrams, sublinear tf,
#: terms in more than 95% of the documents left out)
TEXT_ANALYZERS = ("word", "char")
DEFAULT_WORD_NGRAMS = (1, 2)
DEFAULT_CHAR_NGRAMS = (2, 5)

#: Morgan fingerprint defaults (ECFP4-like: radius 2, 2048 bits)
DEFAULT_RADIUS = 2
DEFAULT_BITS = 2048


def _sparse(X) -> bool:
    return sp.issparse(X)


# --------------------------------------------------------------------------- CSV format


_NUMBER_DOT = re.compile(r"^[+-]?(\d+\.\d*|\.\d+)([eE][+-]?\d+)?$")
_NUMBER_COMMA = re.compile(r"^[+-]?(\d+,\d*|,\d+)([eE][+-]?\d+)?$")


def _field_counts(sample: str, sep: str, max_lines: int = 50) -> list[int]:
    counts = []
    try:
        for row in csv.reader(io.StringIO(sample), delimiter=sep):
            if row and any(cell.strip() for cell in row):
                counts.append(len(row))
            if len(counts) >= max_lines:
                break
    except csv.Error:
        return []
    return counts


def detect_format(text: str, sample_chars: int = 200_000) -> tuple[str, str]:
    """``(delimiter, decimal separator)`` of a CSV text.

    The delimiter is the candidate (comma, semicolon, tab, vertical bar) that
    splits the header into more than one field and gives the same number of
    fields on most of the first 50 rows (quotes respected); ties go to the
    earlier candidate.  The decimal separator is ``","`` when the delimiter is
    not a comma and the cells hold numbers written with a decimal comma
    (``3,14``) but none with a decimal point; otherwise ``"."``.
    """
    sample = text[:sample_chars]
    if len(text) > sample_chars:  # do not judge a row cut in the middle
        sample = sample[: sample.rfind("\n") + 1] or sample
    best, best_score = ",", (-1.0, -1)  # (the share of rows that agree, fields per row)
    for sep in DELIMITERS:
        counts = _field_counts(sample, sep)
        if not counts or counts[0] < 2:
            continue
        agree = sum(1 for c in counts[1:] if c == counts[0]) / max(len(counts) - 1, 1)
        score = (round(agree, 2), counts[0])
        if score > best_score:
            best, best_score = sep, score
    decimal = "."
    if best != ",":
        dot = comma = 0
        try:
            for k, row in enumerate(csv.reader(io.StringIO(sample), delimiter=best)):
                if k == 0:
                    continue
                for cell in row:
                    cell = cell.strip()
                    if _NUMBER_DOT.match(cell):
                        dot += 1
                    elif _NUMBER_COMMA.match(cell):
                        comma += 1
                if k > 200:
                    break
        except csv.Error:
            pass
        if comma > 0 and dot == 0:
            decimal = ","
    return best, decimal


# --------------------------------------------------------------------------- scaling


def column_means(X: np.ndarray, columns: Sequence[int] | np.ndarray | None = None) -> np.ndarray:
    """The mean of each of ``columns`` (default: all) of a dense X, column by column on views: no
    gathered copy of the matrix; each column is one 1-D reduction, as over a column-ordered copy."""
    return _by_column(X, columns, np.mean)


def column_stds(X: np.ndarray, columns: Sequence[int] | np.ndarray | None = None) -> np.ndarray:
    """The standard deviation of each column, as :func:`column_means` (a 100k x 784 matrix: 0.65 s
    where the whole-matrix ``std(axis=0)`` of a gathered copy takes 3 s)."""
    return _by_column(X, columns, np.std)


def _by_column(X, columns, stat) -> np.ndarray:
    X = np.asarray(X, dtype=np.float64)
    cols = range(X.shape[1]) if columns is None else np.asarray(columns, dtype=np.intp).tolist()
    return np.array([stat(X[:, j]) for j in cols], dtype=np.float64)


def _every_column(cols: np.ndarray, n_columns: int) -> bool:
    return len(cols) == n_columns and bool(np.array_equal(cols, np.arange(n_columns)))


@dataclass
class Standardizer:
    """Zero mean, unit variance for the columns ``columns`` (default: all); the others stay as they are.

    Statistics come from the rows given to :meth:`fit` (the pool: no labels).
    Constant columns get scale 1 (they become 0, never NaN).  A sparse matrix
    stays sparse: only its numeric columns (few, dense by nature) are centred.
    """

    columns: Sequence[int] | None = None
    mean_: np.ndarray | None = None
    scale_: np.ndarray | None = None

    def _cols(self, X) -> np.ndarray:
        if self.columns is None:
            return np.arange(X.shape[1])
        return np.asarray(self.columns, dtype=np.intp)

    def fit(self, X) -> Standardizer:
        cols = self._cols(X)
        if X.shape[0] == 0:
            self.mean_, self.scale_ = np.zeros(len(cols)), np.ones(len(cols))
            return self
        if _sparse(X):
            block = X[:, cols].toarray() if len(cols) else np.zeros((X.shape[0], 0))
            mean, scale = block.mean(axis=0), block.std(axis=0)
        else:
            mean, scale = column_means(X, cols), column_stds(X, cols)
        scale[~(scale > 1e-12 * np.maximum(1.0, np.abs(mean)))] = 1.0
        self.mean_, self.scale_ = mean, scale
        return self

    def transform(self, X, copy: bool = True):
        """X scaled; ``copy=False`` scales a writable float64 dense X in place (same values)."""
        if self.mean_ is None:
            raise ValueError("Standardizer.transform before fit")
        cols = self._cols(X)
        if len(cols) == 0:
            return X.copy() if copy else X
        if _sparse(X):
            X = sp.csr_matrix(X, dtype=np.float64)
            rest = np.setdiff1d(np.arange(X.shape[1]), cols)
            scaled = (X[:, cols].toarray() - self.mean_) / self.scale_
            if np.array_equal(cols, np.arange(len(cols))):  # numeric columns first (as load_csv builds them)
                return sp.hstack([sp.csr_matrix(scaled), X[:, len(cols) :]], format="csr")
            out = sp.hstack([sp.csr_matrix(scaled), X[:, rest]], format="csr")
            order = np.argsort(np.concatenate([cols, rest]))
            return out[:, order].tocsr()
        if _every_column(cols, X.shape[1]):  # every column: no gathered copies
            in_place = not copy and isinstance(X, np.ndarray) and X.dtype == np.float64 and X.flags.writeable
            out = np.subtract(X, self.mean_, out=X if in_place else None, dtype=np.float64)
            out /= self.scale_
            return out
        X = np.array(X, dtype=np.float64, copy=True)
        X[:, cols] = (X[:, cols] - self.mean_) / self.scale_
        return X

    def fit_transform(self, X):
        return self.fit(X).transform(X)


SCALINGS = ("standard", "none")


def scale_features(X, scaling: str, numeric_columns: Sequence[int] | None = None):
    """``X`` scaled as the dataset says: ``standard`` (on ``numeric_columns``; all columns of a dense
    matrix when None, none of a sparse one) or ``none``."""
    if scaling in (None, "", "none"):
        return X if _sparse(X) else np.asarray(X, dtype=np.float64)
    if scaling != "standard":
        raise ValueError(f"unknown scaling {scaling!r}; choose 'standard' or 'none'")
    if numeric_columns is None and _sparse(X):
        return X
    return Standardizer(numeric_columns).fit_transform(X)


def scaled_row_blocks(X, scaling: str, numeric_columns: Sequence[int] | None, *row_sets):
    """``scale_features(X, scaling, numeric_columns)[rows]`` for each of ``row_sets`` (the same
    values), without a scaled copy of the whole of X: the statistics come from every row of X,
    and only the rows asked for are gathered and scaled (in place)."""
    if scaling in (None, "", "none") or (numeric_columns is None and _sparse(X)):
        base = scale_features(X, scaling, numeric_columns)
        return [base[np.asarray(rows, dtype=np.intp)] for rows in row_sets]
    if scaling != "standard":
        raise ValueError(f"unknown scaling {scaling!r}; choose 'standard' or 'none'")
    scaler = Standardizer(numeric_columns).fit(X)
    return [scaler.transform(X[np.asarray(rows, dtype=np.intp)], copy=False) for rows in row_sets]


# --------------------------------------------------------------------------- text


def tfidf_features(
    texts: Sequence[str],
    *,
    analyzer: str = "word",
    ngram_range: tuple[int, int] | None = None,
    sublinear_tf: bool = True,
    min_df: int | float = 1,
    max_df: float = 0.95,
    max_features: int | None = None,
    prefix: str = "",
) -> tuple[sp.csr_matrix, list[str]]:
    """TF-IDF rows of ``texts`` (CSR, float64, each row of unit length) and their term names.

    ``analyzer="word"``: unigrams and bigrams (default ``ngram_range=(1, 2)``);
    ``"char"``: character n-grams within word boundaries (default (2, 5)), for
    URLs, log lines and identifiers.  The vocabulary is fitted on all ``texts``.
    Terms found in more than ``max_df`` of the documents (95%: "the", "of" in a
    collection of abstracts) say nothing about any one document and are left out,
    as ASReview's default features do; when that would leave no term at all (a
    handful of near-identical documents), they are kept.
    An empty document becomes an all-zero row.  Term names are ``prefix + term``.
    """
    from sklearn.feature_extraction.text import TfidfVectorizer

    if analyzer not in TEXT_ANALYZERS:
        raise ValueError(f"text analyzer must be one of {', '.join(TEXT_ANALYZERS)}, got {analyzer!r}")
    if ngram_range is None:
        ngram_range = DEFAULT_WORD_NGRAMS if analyzer == "word" else DEFAULT_CHAR_NGRAMS
    docs = ["" if t is None else str(t) for t in texts]

    def fitted(max_df: float):
        vectorizer = TfidfVectorizer(
            analyzer="word" if analyzer == "word" else "char_wb",
            ngram_range=tuple(ngram_range),
            sublinear_tf=sublinear_tf,
            min_df=min_df,
            max_df=max_df,
            max_features=max_features,
            dtype=np.float64,
        )
        return vectorizer, vectorizer.fit_transform(docs)

    try:
        try:
            vectorizer, X = fitted(float(max_df))
        except ValueError:  # nothing left after leaving out the common terms (or max_df below min_df): keep them
            vectorizer, X = fitted(1.0)
    except ValueError as exc:  # "empty vocabulary; perhaps the documents only contain stop words"
        raise ValueError(f"no terms found in the text ({exc})") from None
    X = sp.csr_matrix(X, dtype=np.float64)
    X.sort_indices()
    names = [prefix + str(t) for t in vectorizer.get_feature_names_out()]
    return X, names


def svd_reduce(X, n_components: int, seed: int = 0) -> np.ndarray:
    """Dense reduction of (sparse) rows by truncated SVD (LSA), rows scaled to unit length."""
    from sklearn.decomposition import TruncatedSVD

    n_components = int(n_components)
    limit = min(X.shape) - 1
    if n_components < 1:
        raise ValueError(f"SVD components must be at least 1, got {n_components}")
    if n_components > limit:
        raise ValueError(f"SVD components must be fewer than min(rows, terms) = {limit + 1}, got {n_components}")
    Z = TruncatedSVD(n_components=n_components, random_state=seed).fit_transform(X)
    norms = np.linalg.norm(Z, axis=1)
    norms[norms == 0] = 1.0
    return Z / norms[:, None]


def term_contributions(x_row, weights: np.ndarray, names: Sequence[str], k: int = 10) -> list[tuple[str, float]]:
    """The ``k`` terms with the largest |w_t x_t| in one row, largest first, as (name, w_t x_t).

    For a linear kernel f(x) = sum_t w_t x_t + b with w = sum_i coef_i x_i over
    the support vectors, so these contributions add up exactly to f(x) - b.
    """
    if _sparse(x_row):
        row = sp.csr_matrix(x_row)
        idx, val = row.indices, row.data
    else:
        dense = np.asarray(x_row, dtype=np.float64).reshape(-1)
        idx = np.flatnonzero(dense)
        val = dense[idx]
    contrib = np.asarray(weights, dtype=np.float64)[idx] * val
    keep = contrib != 0
    idx, contrib = idx[keep], contrib[keep]
    order = np.argsort(-np.abs(contrib), kind="stable")[:k]
    return [(str(names[idx[j]]), float(contrib[j])) for j in order]


def linear_weights(X, support: np.ndarray, coef: np.ndarray) -> np.ndarray:
    """w = sum_i coef_i x_i over the support vectors (rows ``support`` of X): the linear model's weights."""
    support = np.asarray(support, dtype=np.intp)
    coef = np.asarray(coef, dtype=np.float64)
    if len(support) == 0:
        return np.zeros(X.shape[1])
    rows = X[support]
    w = rows.T @ coef
    return np.asarray(w, dtype=np.float64).reshape(-1)


# --------------------------------------------------------------------------- molecules


@dataclass(frozen=True)
class Fingerprints:
    X: sp.csr_matrix  # one row per valid molecule, in input order
    valid: np.ndarray  # indices of the input rows that parsed
    invalid: list[tuple[int, str]]  # (input row, SMILES) that RDKit could not parse


def morgan_fingerprints(
    smiles: Sequence[str], radius: int = DEFAULT_RADIUS, n_bits: int = DEFAULT_BITS
) -> Fingerprints:
    """Morgan fingerprints (RDKit) of SMILES strings as a binary CSR matrix (``n_bits`` columns)."""
    from rdkit import Chem, RDLogger
    from rdkit.Chem import rdFingerprintGenerator

    radius, n_bits = int(radius), int(n_bits)
    if radius < 0 or radius > 10:
        raise ValueError(f"fingerprint radius must be 0-10, got {radius}")
    if n_bits < 8 or n_bits > 1 << 20:
        raise ValueError(f"fingerprint bits must be 8-1048576, got {n_bits}")
    generator = rdFingerprintGenerator.GetMorganGenerator(radius=radius, fpSize=n_bits)
    indptr, indices, valid, invalid = [0], [], [], []
    RDLogger.DisableLog("rdApp.*")  # type: ignore[attr-defined]  # parse errors: reported per row below
    try:
        for i, text in enumerate(smiles):
            text = "" if text is None else str(text).strip()
            mol = Chem.MolFromSmiles(text) if text else None
            if mol is None:
                invalid.append((i, text))
                continue
            bits = np.asarray(list(generator.GetFingerprint(mol).GetOnBits()), dtype=np.int32)
            indices.append(np.sort(bits))
            indptr.append(indptr[-1] + len(bits))
            valid.append(i)
    finally:
        RDLogger.EnableLog("rdApp.*")  # type: ignore[attr-defined]
    data_idx = np.concatenate(indices) if indices else np.zeros(0, dtype=np.int32)
    X = sp.csr_matrix((np.ones(len(data_idx)), data_idx, np.asarray(indptr)), shape=(len(valid), n_bits))
    return Fingerprints(X=X, valid=np.asarray(valid, dtype=np.intp), invalid=invalid)


#: the largest molecule drawn, in heavy atoms.  RDKit's layout of a long chain grows with the cube of its
#: size (2,000 atoms 11 s, 4,000 atoms 88 s) and holds Python's lock meanwhile, so every other page of the
#: server would wait; up to a few hundred atoms it takes milliseconds.  Larger ones are shown as SMILES.
MAX_DRAWN_ATOMS = 200
#: atoms as a SMILES string writes them: bracket atoms and the organic subset (counted before parsing)
_SMILES_ATOM = re.compile(r"\[[^\]]*\]|Br|Cl|[BCNOPSFIbcnops]")


@dataclass(frozen=True)
class MoleculeDrawing:
    """RDKit's SVG of a molecule, or why there is none (``note``, for the reader)."""

    svg: str | None
    note: str | None = None


def molecule_drawing(smiles: str, size: tuple[int, int] = (360, 260)) -> MoleculeDrawing:
    """The drawing of a molecule, made once per SMILES and size and kept (the Label page asks on every
    rerun); a molecule of more than ``MAX_DRAWN_ATOMS`` heavy atoms is not drawn, and the note says so."""
    return _drawing(str(smiles), int(size[0]), int(size[1]))


@functools.lru_cache(maxsize=256)
def _drawing(smiles: str, width: int, height: int) -> MoleculeDrawing:
    from rdkit import Chem, RDLogger
    from rdkit.Chem.Draw import rdMolDraw2D

    written = len(_SMILES_ATOM.findall(smiles))  # (an upper bound of the heavy atoms: no parse of a huge string)
    if written > MAX_DRAWN_ATOMS:
        return MoleculeDrawing(None, _too_large(written))
    RDLogger.DisableLog("rdApp.*")  # type: ignore[attr-defined]  # (rdkit's stubs lack it)
    try:
        mol = Chem.MolFromSmiles(smiles)
    finally:
        RDLogger.EnableLog("rdApp.*")  # type: ignore[attr-defined]
    if mol is None:
        return MoleculeDrawing(None, "RDKit cannot read this SMILES, so it is not drawn.")
    if mol.GetNumHeavyAtoms() > MAX_DRAWN_ATOMS:
        return MoleculeDrawing(None, _too_large(mol.GetNumHeavyAtoms()))
    drawer = rdMolDraw2D.MolDraw2DSVG(width, height)
    drawer.DrawMolecule(mol)
    drawer.FinishDrawing()
    return MoleculeDrawing(drawer.GetDrawingText())


def _too_large(atoms: int) -> str:
    return (
        f"Not drawn: this molecule has {atoms:,} atoms, and molecules are drawn up to {MAX_DRAWN_ATOMS} "
        "(a larger drawing would hold the server for seconds to minutes). Its SMILES:"
    )


def molecule_svg(smiles: str, size: tuple[int, int] = (360, 260)) -> str | None:
    """RDKit's SVG depiction of a molecule, or None when the SMILES does not parse or the molecule is
    too large to draw (``molecule_drawing`` says which)."""
    return molecule_drawing(smiles, size).svg


def most_frequent(values: Sequence[str]) -> str:
    """The most frequent value (ties: the first in sorted order)."""
    counts = Counter(values)
    top = max(counts.values())
    return sorted(v for v, c in counts.items() if c == top)[0]


__all__ = [
    "DEFAULT_BITS",
    "DEFAULT_RADIUS",
    "DELIMITERS",
    "DELIMITER_NAMES",
    "MAX_DRAWN_ATOMS",
    "Fingerprints",
    "MoleculeDrawing",
    "SCALINGS",
    "Standardizer",
    "detect_format",
    "linear_weights",
    "molecule_drawing",
    "molecule_svg",
    "morgan_fingerprints",
    "most_frequent",
    "scale_features",
    "svd_reduce",
    "term_contributions",
    "tfidf_features",
]
