"""Which column is what: label, display, key, SMILES, text, one-hot and numeric feature columns, each
named column checked to exist and to have one role only."""

from __future__ import annotations

from dataclasses import dataclass, field

from core.ingest.errors import DataError
from core.ingest.options import CsvOptions


@dataclass
class Columns:
    """The columns of each use (``label`` and ``smiles`` None when not used)."""

    features: list[str]
    one_hot: list[str]
    text: list[str]
    label: str | None = None
    smiles: str | None = None
    notices: list[str] = field(default_factory=list)


def values_shown(values, limit: int = 6) -> str:
    values = list(values)
    shown = ", ".join(repr(v) for v in values[:limit])
    return shown + (f", ... ({len(values)} in all)" if len(values) > limit else "")


def _require(columns: list[str], col: str, role: str, source_name: str) -> None:
    if col not in columns:
        shown = ", ".join(repr(c) for c in columns[:12]) + (" ..." if len(columns) > 12 else "")
        raise DataError(f"{source_name}: {role} {col!r} not found; columns are: {shown}")


def _roles(
    options: CsvOptions, text_columns: list[str], one_hot: list[str], columns: list[str], source_name: str
) -> tuple[list[str], dict[str, str]]:
    """The columns given a use other than a numeric feature, each checked to exist, none listed twice
    and none given two uses; and the role of each that may not also be a feature."""
    special = []
    for col, role in (
        (options.label_column, "label column"),
        (options.display_column, "display column"),
        (options.key_column, "key column"),
        (options.smiles_column, "SMILES column"),
        *((c, "text column") for c in text_columns),
        *((c, "one-hot column") for c in one_hot),
    ):
        if col is not None:
            _require(columns, col, role, source_name)
            special.append(col)
    for group, what in ((text_columns, "text column"), (one_hot, "one-hot column")):
        dups = sorted({c for c in group if group.count(c) > 1})
        if dups:
            raise DataError(f"{source_name}: {what}(s) listed twice: {', '.join(repr(c) for c in dups)}")
    roles: dict[str, str] = {}
    for col, role in (
        (options.label_column, "the label column"),
        (options.smiles_column, "the SMILES column"),
        *((c, "a text column") for c in text_columns),
        *((c, "a one-hot column") for c in one_hot),
    ):
        if col is None:
            continue
        if col in roles:
            raise DataError(f"{source_name}: column {col!r} cannot be both {roles[col]} and {role}")
        roles[col] = role
    return special, roles


def _named_features(
    feature_columns, options: CsvOptions, roles: dict[str, str], columns: list[str], source_name: str
) -> list[str]:
    """The feature columns the user named, checked."""
    feature_columns = list(feature_columns)
    for col in feature_columns:
        _require(columns, col, "feature column", source_name)
    dups = {c for c in feature_columns if feature_columns.count(c) > 1}
    if dups:
        raise DataError(f"{source_name}: feature column(s) listed twice: {', '.join(sorted(dups))}")
    clash = [c for c in feature_columns if c == options.label_column]
    if clash:
        raise DataError(f"{source_name}: the label column {options.label_column!r} cannot also be a feature")
    clash = [c for c in feature_columns if c in roles]
    if clash:
        raise DataError(f"{source_name}: column {clash[0]!r} is {roles[clash[0]]} and cannot also be a numeric feature")
    return feature_columns


def resolve(columns: list[str], options: CsvOptions, source_name: str) -> Columns:
    """The use of each column; by default every column without another use is a numeric feature, or
    none when text or SMILES columns are given (said in a notice)."""
    text_columns = [c for c in (options.text_columns or []) if c]
    one_hot = [c for c in (options.one_hot or []) if c]
    special, roles = _roles(options, text_columns, one_hot, columns, source_name)
    notices: list[str] = []
    if options.feature_columns is None:
        rest = [c for c in columns if c not in special]
        if text_columns or options.smiles_column:
            feature_columns = []
            if rest:
                notices.append(f"not used as features: {values_shown(rest)} (name them as feature columns to add them)")
        else:
            feature_columns = rest
    else:
        feature_columns = _named_features(options.feature_columns, options, roles, columns, source_name)
    if not feature_columns and not one_hot and not text_columns and not options.smiles_column:
        raise DataError(f"{source_name}: no feature columns left")
    return Columns(
        features=feature_columns,
        one_hot=one_hot,
        text=text_columns,
        label=options.label_column,
        smiles=options.smiles_column,
        notices=notices,
    )
