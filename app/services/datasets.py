"""Datasets: the bundled ones and uploaded CSVs, previewed and checked before anything is stored."""

from __future__ import annotations

import csv
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from app.services.accounts import Accounts, Identity
from app.services.common import DEMO_NAME, ServiceError, scaling_name
from app.services.errors import service_boundary
from app.services.records import csv_text, eval_share
from core.settings import MAX_CLASSES
from storage import repository as repo
from storage.errors import DuplicateDatasetError

#: header names (any case) that say a column holds the answer: the upload suggests the first as its true-label
#: column and never suggests one as a feature; the labels upload of a session suggests one as its label column
LABEL_COLUMN_NAMES = (
    "label",
    "labels",
    "class",
    "target",
    "y",
    "included",
    "relevant",
    "answer",
    "decision",
    "true_label",
    "true label",
)


def _header_word(column: str) -> str:
    return column.strip().lstrip("\ufeff").casefold()


def looks_like_label(column: str) -> bool:
    """Whether a header names a column of answers (``LABEL_COLUMN_NAMES``, any case)."""
    return _header_word(column) in LABEL_COLUMN_NAMES


def label_column_guess(header: Sequence[str]) -> str | None:
    """The column of a header most likely to hold the answers (``LABEL_COLUMN_NAMES``, in its order), or None."""
    named = [c for c in header if looks_like_label(c)]
    return min(named, key=lambda c: LABEL_COLUMN_NAMES.index(_header_word(c)), default=None)


@dataclass
class ImportResult:
    dataset_id: int
    created: bool
    message: str


@dataclass
class CsvPreview:
    header: list[str]
    frame: pd.DataFrame
    n_rows: int
    notes: list[str] = field(default_factory=list)
    sep: str = ","
    decimal: str = "."
    detected_sep: str = ","
    detected_decimal: str = "."
    columns: list[Any] = field(default_factory=list)  # core.datasets.ColumnProfile per column

    def of(self, kind: str) -> list[str]:
        """Columns of one kind: number, category, text, smiles, empty."""
        return [c.name for c in self.columns if c.kind == kind]

    def label_like(self) -> list[str]:
        """The columns named like answers (``looks_like_label``): never suggested as features."""
        return [c for c in self.header if looks_like_label(c)]

    @property
    def missing(self) -> dict[str, int]:
        return {c.name: c.missing for c in self.columns if c.missing}

    def one_column_note(self, filename: str) -> str | None:
        """What a file of a single column holds and what can be done with it, or None (more columns)."""
        if len(self.header) != 1 or len(self.columns) != 1:
            return None
        column = self.columns[0]
        holds, use = {
            "number": ("numbers", "each item is then that one number, its only feature"),
            "category": (
                f"{column.distinct} distinct values",
                "choose it under 'One-hot encode' to make each value a 0/1 feature",
            ),
            "text": ("free text", "import it as documents: choose it under 'Documents: free-text features'"),
            "identifier": (
                "short texts, nearly all different",
                "it can name the items ('Item key column') but "
                "gives them nothing to learn from: add the columns that describe them",
            ),
            "smiles": ("SMILES", "import it as molecules: choose it under 'Molecules: SMILES'"),
        }.get(column.kind, ("nothing", "there is nothing to import"))
        return (
            f"{filename} holds one column only, '{column.name}' ({holds}, {self.n_rows} rows): {use}. With no "
            "true-label column its items can be labelled in a session, not compared on the Compare page. If "
            "the file has more columns, choose its delimiter above."
        )


#: the labels of the import form's choices (the Data page), named by the messages that suggest them
MISSING_CHOICES = {
    "error": "refuse the file",
    "drop": "leave the rows out",
    "impute": "fill in (median / most frequent)",
}
INVALID_SMILES_CHOICES = {"error": "refuse the file (rows listed)", "drop": "leave those rows out"}
CONSTANT_CHOICES = {"error": "refuse the file", "drop": "leave them out"}
#: the upload's scaling, in words (``standard``: zero mean and unit variance per numeric column)
SCALING_LABEL = "Numbers in the columns"
SCALING_CHOICES = {"standard": "put on one scale", "none": "keep as they are"}
FORM_CHOICE_WORDS = {
    "missing=drop": f"Missing values: '{MISSING_CHOICES['drop']}'",
    "missing=impute": f"Missing values: '{MISSING_CHOICES['impute']}'",
    "invalid_smiles=drop": f"Invalid SMILES: '{INVALID_SMILES_CHOICES['drop']}'",
    "constant_columns=drop": f"Constant columns: '{CONSTANT_CHOICES['drop']}'",
}


def _unique(names: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name} ({seen[name]})")
    return out


def _natural_key(text: str) -> tuple:
    try:
        return (0, float(text), text)
    except ValueError:
        return (1, 0.0, re.sub(r"\s+", " ", text.lower()))


@service_boundary
class Datasets:
    """Datasets: ``MarginLab.datasets`` (``datasets()`` lists them); ``accounts`` says who may import."""

    def __init__(self, engine, accounts: Accounts):
        self.engine, self.accounts = engine, accounts

    def __call__(self) -> list[repo.DatasetInfo]:
        """Every dataset."""
        return repo.list_datasets(self.engine)

    def dataset(self, dataset_id: int) -> repo.DatasetInfo:
        return repo.get_dataset(self.engine, dataset_id)

    def ensure_demo_dataset(self) -> int | None:
        """On first start (no dataset at all) import the bundled digits, 8 vs rest."""
        if self():
            return None
        return self.import_bundled("digits", positive=8, name=DEMO_NAME, scaling="none").dataset_id

    def bundled_names(self) -> list[str]:
        from core.datasets import BUNDLED

        return list(BUNDLED)

    def import_bundled(
        self,
        key: str,
        *,
        positive: Any = None,
        name: str | None = None,
        scaling: str = "standard",
        by: Identity | None = None,
    ) -> ImportResult:
        from core.datasets import load_bundled

        self.accounts.acting(by)
        return self._import_loaded(
            load_bundled(key, positive=positive), name=name, scaling=scaling, extra_meta={"bundled": key}
        )

    def preview_csv(
        self, data: bytes, n: int = 20, *, sep: str | None = None, decimal: str | None = None
    ) -> CsvPreview:
        """Header, the first rows as text cells, the delimiter and decimal separator (detected unless
        given) and what each column holds (checked only on import).  Raises ``DataTooLarge`` for a file
        beyond the bounds of ``core.datasets`` (columns, cells, bytes), before it is parsed."""
        from core.datasets import DataError, DataTooLarge, NotText, profile_csv

        try:
            profile = profile_csv(data, sep=sep, decimal=decimal, n_preview=n)
        except (DataTooLarge, NotText):
            raise  # (nothing of it is read: the page says why, before any choice is offered)
        except DataError:
            profile = None
        fallback = sep if sep not in (None, "", "auto") else ","
        used = profile.sep if profile else fallback
        reader = csv.reader(csv_text(data, used), delimiter=used)
        header = next(reader, [])
        rows = []
        n_rows = 0
        for cells in reader:
            if not cells:
                continue
            n_rows += 1
            if len(rows) < n:
                rows.append((cells + [""] * len(header))[: len(header)])
        names = [h if h else f"(column {k + 1})" for k, h in enumerate(header)]
        frame = pd.DataFrame(rows, columns=_unique(names))
        if profile is None:
            return CsvPreview(header=list(header), frame=frame, n_rows=n_rows)
        return CsvPreview(
            header=list(header),
            frame=frame,
            n_rows=n_rows,
            sep=profile.sep,
            decimal=profile.decimal,
            detected_sep=profile.detected_sep,
            detected_decimal=profile.detected_decimal,
            columns=profile.columns,
        )

    def column_values(self, data: bytes, column: str, limit: int = 50, *, sep: str = ",") -> list[str]:
        """Distinct values of one column of an uploaded CSV (to choose the positive class)."""
        reader = csv.DictReader(csv_text(data, sep), delimiter=sep)
        seen: dict[str, None] = {}
        for row in reader:
            value = (row.get(column) or "").strip()
            if value and value not in seen:
                seen[value] = None
                if len(seen) >= limit:
                    break
        return sorted(seen, key=_natural_key)

    def import_csv(
        self,
        data: bytes,
        *,
        name: str,
        feature_columns: Sequence[str] | None = None,
        label_column: str | None = None,
        positive: Any = None,
        display: str = "table",
        image_shape: tuple[int, int] | None = None,
        text_column: str | None = None,
        key_column: str | None = None,
        scaling: str = "standard",
        constant_columns: str = "drop",
        source: str = "",
        sep: str | None = None,
        decimal: str | None = None,
        missing: str = "error",
        one_hot: Sequence[str] | None = None,
        text_features: Sequence[str] | None = None,
        text_analyzer: str = "word",
        text_svd: int | None = None,
        text_blocks: bool = False,
        smiles_column: str | None = None,
        fingerprint_radius: int = 2,
        fingerprint_bits: int = 2048,
        invalid_smiles: str = "error",
        eval_fraction: float | None = None,
        keep_classes: bool = False,
        by: Identity | None = None,
    ) -> ImportResult:
        """Check and import an uploaded CSV; errors name the row or column and change nothing (``by``: the
        signed-in person importing it; ``SignedOutError`` once their sign-in has ended).

        ``text_features``: free-text columns turned into TF-IDF features (``text_column`` is
        the column *shown*); ``smiles_column``: molecules as Morgan fingerprints. The other
        options are those of ``core.datasets.load_csv``. ``eval_fraction`` is stored with the
        dataset: the share held out for evaluation when it has true labels (0: none).  ``keep_classes`` (no
        ``positive``): a label column of 3 to 9 values keeps every value as a class; sessions on the dataset
        then have those named classes (``meta["class_names"]``, each item's class in ``meta["class_labels"]``;
        the dataset has no yes / no true labels).

        Raises ``core.datasets.DataError`` / ``storage.errors.DatasetValidationError``
        (bad file) or ``ServiceError`` (inconsistent choices).
        """
        from core.datasets import load_csv

        self.accounts.acting(by)
        if display == "text" and not text_column:
            raise ServiceError("Choose the text column to show for each item.")
        if display == "image" and not image_shape:
            raise ServiceError("Give the image width and height.")
        if positive in ("", None) and label_column:
            positive = None
        meta_extra: dict[str, Any] = {"label_column": label_column} if label_column else {}
        if eval_fraction is not None:
            meta_extra["eval_fraction"] = eval_share(eval_fraction)
        options = dict(
            label_column=label_column or None,
            positive=positive,
            feature_columns=list(feature_columns) if feature_columns else None,
            display_column=text_column if display == "text" else None,
            image_shape=tuple(image_shape) if display == "image" else None,
            name=name,
            key_column=key_column or None,
            constant_columns=constant_columns,
            one_vs_rest=bool(label_column) and positive is not None,
            sep=sep,
            decimal=decimal,
            missing=missing,
            one_hot=list(one_hot or []),
            text_columns=list(text_features or []),
            text_analyzer=text_analyzer,
            text_svd=text_svd or None,
            text_blocks=bool(text_blocks),
            smiles_column=smiles_column or None,
            fingerprint_radius=fingerprint_radius,
            fingerprint_bits=fingerprint_bits,
            invalid_smiles=invalid_smiles,
            choice_words=FORM_CHOICE_WORDS,
        )
        loaded = None
        if keep_classes and label_column and positive is None:
            kept = load_csv(data, **options, label_mode="classes")  # every value of the column as a class
            n_classes = len(kept.class_names or ())
            if n_classes > MAX_CLASSES:
                raise ServiceError(
                    f"Label column {label_column!r} has {n_classes} values; every value can be kept "
                    f"as a class for up to {MAX_CLASSES}: choose the positive value instead (that "
                    "value against the rest)."
                )
            if n_classes > 2:  # (two values stay a yes / no dataset)
                loaded = kept
        if loaded is None:
            loaded = load_csv(data, **options)
        if display == "image":
            width, height = image_shape
            if width * height != loaded.X.shape[1]:
                raise ServiceError(
                    f"An image of {width}×{height} needs {width * height} feature columns; "
                    f"{loaded.X.shape[1]} are chosen."
                )
        shown = text_column if display == "text" else None
        result = self._import_loaded(
            loaded, name=name, scaling=scaling, source=source, extra_meta=meta_extra, text_column=shown
        )
        if result.created and loaded.notices:
            result.message += " " + " ".join(n[0].upper() + n[1:] + "." for n in loaded.notices)
        return result

    def set_eval_fraction(self, dataset_id: int, fraction: float, *, by: Identity | None = None) -> float:
        """The share of a dataset with true labels held out for evaluation by the sessions started after
        (0: every item is in the pool)."""
        self.accounts.acting(by)
        share = eval_share(fraction)
        repo.update_dataset_meta(self.engine, dataset_id, {"eval_fraction": share})
        return share

    def _import_loaded(
        self,
        data,
        *,
        name: str | None,
        scaling: str,
        source: str = "",
        extra_meta: dict | None = None,
        text_column: str | None = None,
    ) -> ImportResult:
        from storage.importing import dataset_meta

        scaling = scaling_name(scaling)
        kind = data.display_kind or "table"
        meta: dict[str, Any] = dict(extra_meta or {}, scaling=scaling)
        y_true = data.y
        if data.class_names is not None:  # every value of the label column kept as a class
            meta["class_names"] = [str(c) for c in data.class_names]
            meta["class_labels"] = [int(k) for k in data.class_y]
            meta.pop("eval_fraction", None)
            y_true = None
        elif data.classes:
            meta["classes"] = {"negative": str(data.classes[0]), "positive": str(data.classes[1])}
        if data.description:
            meta["description"] = str(data.description)
        if getattr(data, "dropped_columns", None):
            meta["dropped_columns"] = list(data.dropped_columns)
        meta.update(dataset_meta(data))
        if kind == "text" and not text_column:
            blocks = getattr(data, "feature_blocks", None) or []
            text_column = getattr(data, "molecule_column", None) or next(
                (b["column"] for b in blocks if b.get("kind") in ("tfidf", "svd")), None
            )
        return self._import(
            name=name or data.name,
            X=data.X,
            feature_names=list(data.feature_names),
            y_true=y_true,
            source=source or str(data.source or ""),
            display_kind=kind,
            image_shape=tuple(data.image_shape) if data.image_shape else None,
            display_values=data.display_values,
            item_keys=data.item_keys,
            meta=meta,
            text_column=(text_column or "text") if kind == "text" else None,
        )

    def _import(self, **kw) -> ImportResult:
        try:
            dataset_id = repo.import_dataset(self.engine, **kw)
        except DuplicateDatasetError as error:
            return ImportResult(error.dataset_id, False, str(error))
        return ImportResult(dataset_id, True, f"Imported '{kw['name']}' as dataset {dataset_id}.")
