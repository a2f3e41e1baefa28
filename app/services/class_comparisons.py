"""Comparisons with several classes: the K-class heuristics (``core.class_experiment``, each item one class) or
the multi-label ones (``core.multi_label_experiment``, each item a set of classes), the dataset's classes as
the oracle, as ``python -m core compare --classes [--multi-label]`` runs them; stored as a comparison.

A dataset offers its classes when its label column kept every value (``meta["class_names"]``, each item's in
``meta["class_labels"]``: 3 to ``MAX_CLASSES``) or when it has yes / no true labels (its two classes, named as
``meta["classes"]`` says).  Several classes per item: the class names split on ``separator`` (``;``).  A stored
one says which kind it is in ``config["class_kind"]`` (:data:`ONE_CLASS` or :data:`SEVERAL_CLASSES`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from app.services.classes import strategy_words
from app.services.common import ServiceError, class_names
from core.class_experiment import DEFAULT_SOLVER as CLASS_SOLVER
from core.multi_label_experiment import SEPARATOR
from core.multiclass import MULTICLASS_STRATEGIES, MULTILABEL_STRATEGIES, target_class
from core.settings import MAX_CLASSES

#: ``config["class_kind"]`` of a comparison whose items have one class each
ONE_CLASS = "classes"
#: ``config["class_kind"]`` of a comparison whose items have any set of the classes
SEVERAL_CLASSES = "multi-label"
#: the kinds in words (the page says which kind a stored comparison was)
KIND_WORDS = {ONE_CLASS: "one class per item", SEVERAL_CLASSES: "several classes per item"}
#: the K-class heuristic that looks for one class (its class: the comparison's ``target``)
TARGET_STRATEGY = next(name for name, choose in MULTICLASS_STRATEGIES.items() if choose is target_class)


def class_kind(comparison: Any) -> str | None:
    """:data:`ONE_CLASS` or :data:`SEVERAL_CLASSES` for a stored comparison with several classes, else None."""
    kind = comparison.config.get("class_kind")
    return kind if kind in KIND_WORDS else None


def dataset_classes(dataset: Any) -> tuple[tuple[str, ...], np.ndarray]:
    """(class names, each item's class as an index into them) of a dataset, or a ServiceError saying why it has
    none: a label column kept as classes, else the two classes of its yes / no true labels."""
    names = dataset.meta.get("class_names")
    if names:
        return tuple(str(n) for n in names), np.asarray(dataset.meta.get("class_labels") or [], dtype=np.int64)
    if not dataset.has_true_labels:
        raise ServiceError(
            f"Dataset '{dataset.name}' has no label column to compare with: import it with its label column "
            "(every value kept as a class)."
        )
    words = class_names(dataset.meta)
    return (words[-1], words[1]), np.empty(0, dtype=np.int64)  # (the indices: from the stored true labels)


def check_class_values(dataset_name: str, names: Sequence[str], y: np.ndarray) -> None:
    """Refuse, naming the column's values, a label column with one value or more than ``MAX_CLASSES``."""
    present = [names[k] for k in np.unique(y)] if len(y) else []
    if len(present) < 2:
        shown = f" ({present[0]})" if present else ""
        raise ServiceError(
            f"The label column of '{dataset_name}' has {len(present)} value{shown}: a comparison with several "
            "classes needs at least two."
        )
    if len(names) > MAX_CLASSES:
        raise ServiceError(
            f"The label column of '{dataset_name}' has {len(names)} values; a comparison here takes up to "
            f"{MAX_CLASSES} classes: run larger ones with `python -m core compare --classes`."
        )


def multi_label_sets(dataset_name: str, names: Sequence[str], y: np.ndarray, separator: str):
    """(membership (n, K), class names) of each item's cell split on ``separator`` (``core.multi_label_experiment``)."""
    from core.multi_label_experiment import label_sets

    try:
        return label_sets([names[k] for k in y], separator)
    except ValueError as error:
        raise ServiceError(
            f"The label column of '{dataset_name}' read as sets of classes (split on {separator!r}): {error}."
        ) from None


def chosen_strategies(strategies: Sequence[str], multi_label: bool) -> list[str]:
    known = MULTILABEL_STRATEGIES if multi_label else MULTICLASS_STRATEGIES
    chosen = list(strategies)
    if not chosen or any(s not in known for s in chosen):
        raise ServiceError("Choose at least one heuristic among " + ", ".join(known) + ".")
    return chosen


def stored_parts(result: Any) -> dict[str, Any]:
    """What a comparison with several classes stores beside its rows: the CLI's tables as records."""
    parts = {
        "summary": result.summary.to_dict(orient="records"),
        "runs": result.runs.to_dict(orient="records"),
        "curve": result.curve.to_dict(orient="records"),
    }
    per_class = getattr(result, "per_class", None)
    if per_class is not None:
        parts["per_class"] = per_class.to_dict(orient="records")
    return parts


def rows_csv(comparison: Any) -> bytes:
    """A stored comparison's tidy rows as CSV, the class names (the ``label`` column) escaped against
    spreadsheet formulas."""
    from storage.export import escape_cell

    rows = comparison.rows
    if "label" in rows:
        rows = rows.assign(label=[escape_cell(str(v)) for v in rows["label"]])
    return rows.to_csv(index=False).encode()


def _mean_sd(mean: Any, sd: Any) -> str:
    return "–" if mean is None or pd.isna(mean) else f"{float(mean):.3f} ± {float(sd or 0.0):.3f}"


def class_summary_table(comparison: Any, words: Callable[[str], str]) -> pd.DataFrame:
    """The per-heuristic summary of a stored comparison with several classes, in plain headers: accuracy and
    macro AUC at the last label (mean ± sd over the seeds), labels to reach each accuracy level (mean over the
    seeds that reached it, and how many did: the CLI's figures), the median milliseconds per label."""
    from core.class_experiment import _reached

    records = comparison.summary.get("summary", [])
    levels = comparison.config.get("accuracy_levels", [])
    rows = []
    for r in records:
        row: dict[str, Any] = {
            "heuristic": words(r["strategy"]),
            "accuracy at the end": _mean_sd(r.get("final_accuracy_mean"), r.get("final_accuracy_sd")),
            "macro AUC at the end": _mean_sd(r.get("final_macro_auc_mean"), r.get("final_macro_auc_sd")),
        }
        for level in levels:
            row[f"labels to {100 * level:g}% accuracy"] = _reached(r, level)
        row["ms per label (median)"] = f"{float(r.get('label_ms_median', float('nan'))):.1f}"
        row["heuristic, for engineers"] = r["strategy"]
        rows.append(row)
    return pd.DataFrame(rows)


def per_class_table(comparison: Any, words: Callable[[str], str]) -> pd.DataFrame:
    """Per heuristic and class at the last label, mean over the seeds: precision, recall, F1 and AUC, then the
    mean over the classes (as ``compare --classes --multi-label`` prints them); empty for one class per item."""
    frame = pd.DataFrame(comparison.summary.get("per_class", []))
    if frame.empty:
        return frame
    measures = ["precision", "recall", "f1", "auc"]
    out = []
    for strategy, g in frame.groupby("strategy", sort=False):
        means = g.groupby("class", sort=False)[measures].mean()
        for name, r in [*means.iterrows(), ("(mean over the classes)", means.mean())]:
            out.append({"heuristic": words(str(strategy)), "class": str(name), **{m: r[m] for m in measures}})
    return pd.DataFrame(out).rename(columns={"f1": "F1", "auc": "AUC"})


__all__ = [
    "CLASS_SOLVER",
    "MULTICLASS_STRATEGIES",
    "MULTILABEL_STRATEGIES",
    "SEPARATOR",
    "KIND_WORDS",
    "ONE_CLASS",
    "SEVERAL_CLASSES",
    "TARGET_STRATEGY",
    "check_class_values",
    "chosen_strategies",
    "class_kind",
    "class_summary_table",
    "dataset_classes",
    "multi_label_sets",
    "per_class_table",
    "rows_csv",
    "stored_parts",
    "strategy_words",
]
