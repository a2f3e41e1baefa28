"""What a CSV import is asked to do: every choice of :func:`core.datasets.load_csv` in one record."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

#: the largest |value| of a numeric feature: the solvers need every ||x||^2 <= 1e300
#: (``core.solvers.base.MAX_SQ_NORM``) and standardising sums the squares of a column; a larger value
#: imported fine and then no session could start on the dataset
MAX_FEATURE_VALUE = 1e150

#: a text-valued feature column with at most this many distinct values is offered for one-hot encoding
ONE_HOT_MAX = 20
MISSING_POLICIES = ("error", "drop", "impute")
#: how the label column is read (``CsvOptions.label_mode``)
LABEL_MODES = ("binary", "classes")
#: how messages name a choice of ``load_csv`` ("option=value"); the app passes the labels of its form
CHOICE_WORDS = {
    "missing=drop": "missing: drop",
    "missing=impute": "missing: impute",
    "invalid_smiles=drop": "invalid SMILES: drop",
    "constant_columns=drop": "drop constant columns",
}


@dataclass(frozen=True)
class CsvOptions:
    """The options of a CSV import, with :func:`core.datasets.load_csv`'s defaults (its docstring says
    what each one means)."""

    label_column: str | None = None
    positive: Any = None
    #: "binary": y in {-1, +1} (``positive`` against the rest); "classes": every value a class
    #: (``Dataset.class_y`` and ``class_names``; ``class_names`` given: those classes, in that order)
    label_mode: str = "binary"
    class_names: Sequence[str] | None = None
    feature_columns: Sequence[str] | None = None
    display_column: str | None = None
    image_shape: tuple[int, int] | None = None
    name: str | None = None
    key_column: str | None = None
    constant_columns: str = "drop"
    one_vs_rest: bool = False
    sep: str | None = None
    decimal: str | None = None
    missing: str = "error"
    one_hot: Sequence[str] | None = None
    text_columns: Sequence[str] | None = None
    text_analyzer: str = "word"
    text_min_df: int = 1
    text_max_features: int | None = None
    text_svd: int | None = None
    text_blocks: bool = False
    smiles_column: str | None = None
    fingerprint_radius: int = 2
    fingerprint_bits: int = 2048
    invalid_smiles: str = "error"
    seed: int = 0
    max_value: float | None = MAX_FEATURE_VALUE
    choice_words: dict[str, str] | None = None

    def validate(self) -> None:
        """Refuse a choice outside its values (``ValueError``: a caller's mistake, not the data's)."""
        if self.missing not in MISSING_POLICIES:
            raise ValueError(f"missing must be one of {', '.join(MISSING_POLICIES)}, got {self.missing!r}")
        if self.invalid_smiles not in ("error", "drop"):
            raise ValueError(f"invalid_smiles must be 'error' or 'drop', got {self.invalid_smiles!r}")
        if self.label_mode not in LABEL_MODES:
            raise ValueError(f"label_mode must be one of {', '.join(LABEL_MODES)}, got {self.label_mode!r}")
        if self.label_mode == "classes" and self.positive is not None:
            raise ValueError(
                "positive (one class against the rest) and label_mode 'classes' (every class kept) "
                "exclude each other: give one"
            )
        if self.class_names is not None and self.label_mode != "classes":
            raise ValueError("class_names go with label_mode 'classes'")
        if self.constant_columns not in ("error", "drop", "keep"):
            raise ValueError(f"constant_columns must be 'error', 'drop' or 'keep', got {self.constant_columns!r}")

    def words(self) -> dict[str, str]:
        """How messages name the choice that would get past them."""
        return {**CHOICE_WORDS, **(self.choice_words or {})}
