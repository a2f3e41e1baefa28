"""Multi-label comparison of query strategies (``python -m core compare --classes --multi-label``).

Each item carries any set of K classes (none of them too).  ``label_sets(cells, separator)`` reads them from
a label column whose cells hold class names separated by ``separator`` (``";"`` by default, spaces around a
name ignored; a cell ``(none)``, as the app's export writes it, or holding only separators: none of the
classes).  ``run_multi_label_comparison(X, Y, classes, strategies=[...], budget=N, seeds=K)`` runs the
strategies of :data:`core.multiclass.MULTILABEL_STRATEGIES` over the same seeds, as the K-class comparison
(:mod:`core.class_experiment`) does: per seed one split, stratified by the set of classes, into a pool and a
held-out part; ``initial`` labels at random, then the strategy; the true sets answer.  The model is
:class:`core.multiclass.MultiLabel` of one solver, with kept scores.

After every label, on the held-out part: ``accuracy``, the share of (item, class) yes / no that the sign of
the class's score gets right (Hamming accuracy), and ``macro_auc``, the mean over the classes of each score
column's ROC AUC (classes with every held-out item on one side left out).  At the last label, per class:
precision, recall, F1 (score > 0 as the model's yes) and AUC (``per_class``), and their means over the
classes (macro).  The runs, curve and summary tables are the K-class comparison's (accuracy read as above).
Everything is seeded: a run depends only on (data, strategy, solver and its parameters, seed, budget,
initial, test_fraction).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from core.class_experiment import (
    ACCURACY_LEVELS,
    CLASS_ROW_COLUMNS,
    DEFAULT_SOLVER,
    ClassComparisonResult,
    QueryOf,
    check_more,
    check_run_sizes,
    class_curve,
    class_run_table,
    format_class_summary,
    summarise_classes,
)
from core.metrics import roc_auc
from core.multiclass import MULTILABEL_STRATEGIES, MultiLabel, check_classes, random_class_query
from core.strategies import Pool

#: what separates the class names in a cell of a multi-label column, by default
SEPARATOR = ";"
#: a cell with none of the classes (what the app's export writes)
NONE_CELL = "(none)"
#: the per-class measures at the last label (``per_class``)
PER_CLASS_COLUMNS = ["strategy", "solver", "seed", "class", "precision", "recall", "f1", "auc"]


def label_sets(
    cells: Sequence[str], separator: str = SEPARATOR, classes: Sequence[str] | None = None
) -> tuple[np.ndarray, tuple[str, ...]]:
    """(membership (n, K) of bool, the class names) of a multi-label column's cells (see the module
    docstring).  Without ``classes`` the classes are the names found, sorted; with them, those in that
    order, and a name not among them (or a class that never occurs) is refused with its count."""
    if not separator or separator.strip() != separator:
        raise ValueError(f"the separator must be a non-empty mark without spaces around it, got {separator!r}")
    sets = []
    for cell in cells:
        text = str(cell).strip()
        names = [] if text == NONE_CELL else [n.strip() for n in text.split(separator)]
        sets.append({n for n in names if n})
    found = sorted(set().union(*sets)) if sets else []
    if classes is None:
        names_kept = check_classes(found)
    else:
        names_kept = check_classes(tuple(str(c).strip() for c in classes))
        unknown = [n for n in found if n not in names_kept]
        if unknown:
            counts = ", ".join(f"{n!r} ({sum(n in s for s in sets)} items)" for n in unknown[:10])
            raise ValueError(
                f"the label column names classes not among those given ({', '.join(names_kept)}): {counts}"
            )
    absent = [n for n in names_kept if not any(n in s for s in sets)]
    if absent:
        raise ValueError(f"class {absent[0]!r} does not occur in the label column")
    Y = np.array([[n in s for n in names_kept] for s in sets], dtype=bool).reshape(len(sets), len(names_kept))
    return Y, names_kept


def _set_codes(Y: np.ndarray) -> np.ndarray:
    """Each row's set as one whole number (bit k: class k): the strata of the split."""
    return (Y.astype(np.int64) << np.arange(Y.shape[1], dtype=np.int64)).sum(axis=1)


def _held_out_scores(truth: np.ndarray, F: np.ndarray) -> tuple[float, float]:
    """(Hamming accuracy, macro AUC) of the scores F against the held-out sets ``truth``."""
    aucs = [roc_auc(truth[:, k], F[:, k]) for k in range(truth.shape[1]) if 0 < truth[:, k].sum() < len(truth)]
    finite = [a for a in aucs if np.isfinite(a)]
    return float(np.mean((F > 0) == truth)), float(np.mean(finite)) if finite else float("nan")


def per_class_measures(truth: np.ndarray, F: np.ndarray, classes: Sequence[str]) -> list[dict]:
    """Per class: precision, recall and F1 of score > 0 against the truth, and the AUC (NaN where undefined)."""
    out = []
    for k, name in enumerate(classes):
        said, real = F[:, k] > 0, truth[:, k]
        tp = int(np.sum(said & real))
        precision = tp / int(said.sum()) if said.any() else float("nan")
        recall = tp / int(real.sum()) if real.any() else float("nan")
        f1 = 2 * tp / (int(said.sum()) + int(real.sum())) if said.any() or real.any() else float("nan")
        auc = roc_auc(real, F[:, k]) if 0 < real.sum() < len(real) else float("nan")
        out.append({"class": name, "precision": precision, "recall": recall, "f1": f1, "auc": float(auc)})
    return out


def run_multi_label_strategy(
    X,
    Y: np.ndarray,
    classes: tuple[str, ...],
    strategy: str,
    solver: str,
    solver_params: dict,
    budget: int,
    seed: int,
    initial: int,
    test_fraction: float,
    query_of: QueryOf | None = None,
) -> tuple[list[dict], list[dict]]:
    """One multi-label run with the true sets ``Y`` as the oracle: (a dict per label, a dict per class at
    the last label).  ``query_of``: a strategy outside the registry, named ``strategy`` (:data:`QueryOf`)."""
    from core.experiment import _split_rows

    train, test = _split_rows(_set_codes(Y), seed, test_fraction)
    choose = MULTILABEL_STRATEGIES[strategy] if query_of is None else query_of(train)
    rng = np.random.default_rng(seed)
    model = MultiLabel(classes, solver, X[train], keep_scores=True, **solver_params)
    available = np.ones(len(train), dtype=bool)
    Xte, truth = X[test], Y[test]
    budget = min(int(budget), len(train))
    rows: list[dict] = []
    F = np.zeros((len(test), len(classes)))
    for t in range(1, budget + 1):
        t0 = time.perf_counter()
        q = random_class_query(model, Pool(available), rng) if t <= initial else choose(model, Pool(available), rng)
        t1 = time.perf_counter()
        if q is None:  # (only a strategy's own refusal: the budget is capped at the pool)
            break
        answer = [c for c, on in zip(classes, Y[train[q.index]], strict=True) if on]
        model.learn(q.index, answer)
        t2 = time.perf_counter()
        available[q.index] = False
        F = model.decision_function(X=Xte)
        acc, auc = _held_out_scores(truth, F)
        rows.append(
            {
                "strategy": strategy,
                "solver": solver,
                "seed": seed,
                "n_labels": t,
                "accuracy": acc,
                "macro_auc": auc,
                "update_ms": 1e3 * (t2 - t1),
                "query_ms": 1e3 * (t1 - t0),
                "item": int(train[q.index]),
                "label": "; ".join(answer) or NONE_CELL,
                "chosen_by": q.strategy,
            }
        )
    last = [{"strategy": strategy, "solver": solver, "seed": seed, **m} for m in per_class_measures(truth, F, classes)]
    return rows, last


@dataclass
class MultiLabelComparisonResult(ClassComparisonResult):
    """:class:`~core.class_experiment.ClassComparisonResult` and ``per_class``: one row per (strategy, seed,
    class) at the last label (precision, recall, F1, AUC)."""

    per_class: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=PER_CLASS_COLUMNS))

    def summary_text(self) -> str:
        return format_class_summary(self.summary, self.curve, self.config) + "\n\n" + format_per_class(self.per_class)


def format_per_class(per_class: pd.DataFrame) -> str:
    """Per strategy and class, mean over the seeds at the last label: precision, recall, F1, AUC; then the
    macro means (over the classes) of each."""
    head = f"{'strategy':<20} {'class':<20} {'precision':>9} {'recall':>9} {'F1':>9} {'AUC':>9}"
    lines = ["per class at the last label on the held-out part, mean over the seeds (score > 0: the class)", head]
    lines.append("-" * len(head))
    measures = ["precision", "recall", "f1", "auc"]
    for strategy, g in per_class.groupby("strategy", sort=False):
        means = g.groupby("class", sort=False)[measures].mean()
        for name, r in means.iterrows():
            lines.append(f"{strategy:<20} {str(name):<20} " + " ".join(f"{r[m]:>9.3f}" for m in measures))
        macro = means.mean()
        lines.append(f"{strategy:<20} {'(macro)':<20} " + " ".join(f"{macro[m]:>9.3f}" for m in measures))
    lines.append(
        "accuracy above: the share of item-class yes / no the scores' signs got right (Hamming accuracy); "
        "macro: the mean over the classes."
    )
    return "\n".join(lines)


def run_multi_label_comparison(
    X,
    Y,
    classes: Sequence[str],
    *,
    strategies: Iterable[str] | str,
    solver: str = DEFAULT_SOLVER,
    solver_params: dict | None = None,
    budget: int,
    seeds: int | Iterable[int] = 3,
    initial: int = 10,
    test_fraction: float = 0.3,
    accuracy_levels: Sequence[float] = ACCURACY_LEVELS,
    n_jobs: int = 1,
    progress: Callable[[int, int, str], None] | None = None,
    more_strategies: Mapping[str, QueryOf] | None = None,
) -> MultiLabelComparisonResult:
    """Every multi-label strategy over the same seeds (see the module's docstring).  ``Y``: (n, K) of bool,
    row i's classes; ``n_jobs`` > 1 runs the (strategy, seed) runs in processes; ``more_strategies`` as for
    :func:`core.class_experiment.run_class_comparison` (no initial labels at random)."""
    from core.experiment import _as_list, _as_seeds, _execute

    names = check_classes(classes)
    Y = np.asarray(Y)
    if Y.ndim != 2 or Y.shape[1] != len(names) or Y.dtype != bool:
        raise ValueError(f"Y must be (items, {len(names)}) of true / false, one column per class")
    chosen = _as_list(strategies, MULTILABEL_STRATEGIES, "multi-label strategy")
    more = dict(more_strategies or {})
    chosen += check_more(more, MULTILABEL_STRATEGIES, chosen)
    seed_list = _as_seeds(seeds)
    check_run_sizes(budget, initial, test_fraction, "multi-label")
    X = np.atleast_2d(np.asarray(X, dtype=np.float64)) if not hasattr(X, "tocsr") else X.tocsr()
    if X.shape[0] != len(Y):
        raise ValueError(f"X has {X.shape[0]} rows but Y has {len(Y)}")
    solver_params = dict(solver_params or {})
    tasks: list[tuple[str, Callable, tuple]] = [
        (
            f"{s} ({solver}), seed {seed}",
            run_multi_label_strategy,
            (
                X,
                Y,
                names,
                s,
                solver,
                solver_params,
                int(budget),
                seed,
                0 if s in more else int(initial),
                float(test_fraction),
                more.get(s),
            ),
        )
        for seed in seed_list
        for s in chosen
    ]
    results = _execute(tasks, n_jobs, None, progress, None)
    order = {s: k for k, s in enumerate(chosen)}

    def ordered(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
        return frame.sort_values(
            keys, key=lambda c: c.map(order) if c.name == "strategy" else c, kind="stable"
        ).reset_index(drop=True)

    rows = ordered(
        pd.DataFrame([r for res, _ in results for r in res], columns=CLASS_ROW_COLUMNS),
        ["strategy", "seed", "n_labels"],
    )
    per_class = ordered(
        pd.DataFrame([r for _, last in results for r in last], columns=PER_CLASS_COLUMNS), ["strategy", "seed"]
    )
    levels = tuple(float(v) for v in accuracy_levels)
    runs = class_run_table(rows, levels)
    config = dict(
        classes=list(names),
        multi_label=True,
        strategies=chosen,
        solver=solver,
        solver_params=solver_params,
        budget=int(budget),
        seeds=seed_list,
        initial=int(initial),
        test_fraction=float(test_fraction),
        accuracy_levels=list(levels),
    )
    return MultiLabelComparisonResult(
        rows=rows,
        runs=runs,
        curve=class_curve(rows, chosen, int(budget)),
        summary=summarise_classes(runs, rows, chosen, levels),
        config=config,
        per_class=per_class,
    )


__all__ = [
    "NONE_CELL",
    "PER_CLASS_COLUMNS",
    "SEPARATOR",
    "MultiLabelComparisonResult",
    "format_per_class",
    "label_sets",
    "per_class_measures",
    "run_multi_label_comparison",
    "run_multi_label_strategy",
]
