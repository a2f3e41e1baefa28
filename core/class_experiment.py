"""K-class comparison of query strategies (``python -m core compare --classes``).

``run_class_comparison(X, y, classes, strategies=[...], budget=N, seeds=K)`` runs every K-class
strategy of :data:`core.multiclass.MULTICLASS_STRATEGIES` over the same seeds, as
:func:`core.experiment.run_comparison` runs the binary ones: for each seed the data are split once,
stratified by class, into a pool and a held-out part (the binary compare's split, seeded with the
seed); the first ``initial`` labels are drawn at random, then the strategy chooses; the true classes
answer (the oracle).  The model is :class:`core.multiclass.OneVsRest` of one solver, with kept scores.

After every label the run records, on the held-out part, the accuracy (the top class against the true
one) and the macro AUC (the mean over the classes of the one-vs-rest ROC AUC of each score column),
and the milliseconds of the query and of the update.  ``ClassComparisonResult``: ``rows`` one per label
(the class learned by name), ``runs`` one per (strategy, seed) with the labels to reach each accuracy of
``accuracy_levels``, ``curve`` mean and standard deviation over the seeds per label count, ``summary``
one row per strategy.  Everything is seeded: a run depends only on (data, strategy, solver and its
parameters, seed, budget, initial, test_fraction).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from core.metrics import accuracy, labels_to_reach, roc_auc
from core.multiclass import MULTICLASS_STRATEGIES, OneVsRest, check_classes, random_class_query
from core.strategies import Pool

CLASS_ROW_COLUMNS = [
    "strategy",
    "solver",
    "seed",
    "n_labels",
    "accuracy",
    "macro_auc",
    "update_ms",
    "query_ms",
    "item",
    "label",
    "chosen_by",
]
#: accuracies whose labels the summary reports by default
ACCURACY_LEVELS = (0.8, 0.9, 0.95)
DEFAULT_SOLVER = "incremental"
#: label counts at which the printed learning curve is shown (at most this many, the budget last)
CURVE_POINTS = 8
#: a strategy outside the registry (``more_strategies``): a function of a seed's pool (its rows of X, in the
#: model's store order) giving the query over (model, pool, rng); its run draws no initial labels at random
QueryOf = Callable[[np.ndarray], Callable[..., Any]]


def _level_name(level: float) -> str:
    return f"labels_acc_{round(100 * level)}"


def _reached_name(level: float) -> str:
    return f"reached_acc_{round(100 * level)}"


def macro_auc(truth: np.ndarray, F: np.ndarray, n_classes: int) -> float:
    """The mean over the classes of the one-vs-rest ROC AUC of each column of F (classes without a
    held-out item, or with every held-out item, left out; NaN when none is left)."""
    aucs = [roc_auc(truth == k, F[:, k]) for k in range(n_classes)]
    finite = [a for a in aucs if np.isfinite(a)]
    return float(np.mean(finite)) if finite else float("nan")


def run_class_strategy(
    X,
    y: np.ndarray,
    classes: tuple[str, ...],
    strategy: str,
    solver: str,
    solver_params: dict,
    strategy_params: dict,
    budget: int,
    seed: int,
    initial: int,
    test_fraction: float,
    on_step: Callable[[int, int], None] | None = None,
    query_of: QueryOf | None = None,
) -> list[dict]:
    """One K-class run with the true classes ``y`` (indices into ``classes``) as the oracle: a dict per label.
    ``query_of``: a strategy outside the registry, named ``strategy`` (see :data:`QueryOf`)."""
    from core.experiment import _split_rows

    train, test = _split_rows(y, seed, test_fraction)
    choose = MULTICLASS_STRATEGIES[strategy] if query_of is None else query_of(train)
    rng = np.random.default_rng(seed)
    model = OneVsRest(classes, solver, X[train], keep_scores=True, **solver_params)
    available = np.ones(len(train), dtype=bool)
    Xte, truth = X[test], y[test]
    budget = min(int(budget), len(train))
    rows: list[dict] = []
    for t in range(1, budget + 1):
        t0 = time.perf_counter()
        q = (
            random_class_query(model, Pool(available), rng)
            if t <= initial
            else choose(model, Pool(available), rng, **strategy_params)
        )
        t1 = time.perf_counter()
        if q is None:  # (only a strategy's own refusal: the budget is capped at the pool)
            break
        label = int(y[train[q.index]])
        model.learn(q.index, classes[label])
        t2 = time.perf_counter()
        available[q.index] = False
        F = model.decision_function(X=Xte)
        rows.append(
            {
                "strategy": strategy,
                "solver": solver,
                "seed": seed,
                "n_labels": t,
                "accuracy": accuracy(truth, np.argmax(F, axis=1)),
                "macro_auc": macro_auc(truth, F, len(classes)),
                "update_ms": 1e3 * (t2 - t1),
                "query_ms": 1e3 * (t1 - t0),
                "item": int(train[q.index]),
                "label": classes[label],
                "chosen_by": q.strategy,
            }
        )
        if on_step is not None:
            on_step(t, budget)
    return rows


@dataclass
class ClassComparisonResult:
    """The outcome of :func:`run_class_comparison` (see the module's docstring)."""

    rows: pd.DataFrame
    runs: pd.DataFrame
    curve: pd.DataFrame
    summary: pd.DataFrame
    config: dict[str, Any] = field(default_factory=dict)

    def to_csv(self, path) -> None:
        """Write the tidy rows (the ``compare --classes --out`` file)."""
        self.rows.to_csv(path, index=False)

    def summary_text(self) -> str:
        return format_class_summary(self.summary, self.curve, self.config)


def _check(
    y, classes, strategies, seeds, budget, initial, test_fraction, target
) -> tuple[np.ndarray, tuple[str, ...], list[str], list[int]]:
    from core.experiment import _as_list, _as_seeds

    y = np.asarray(y)
    if y.ndim != 1 or (len(y) and not np.issubdtype(y.dtype, np.integer)):
        raise ValueError("y must hold class indices (whole numbers 0..K-1), one per row")
    classes = check_classes(classes)
    if len(y) and (y.min() < 0 or y.max() >= len(classes)):
        raise ValueError(f"y must index the {len(classes)} classes (0..{len(classes) - 1})")
    counts = np.bincount(y, minlength=len(classes))
    few = [f"{c!r} ({int(n)} item{'s' if n != 1 else ''})" for c, n in zip(classes, counts, strict=True) if n < 2]
    if few:
        raise ValueError(f"every class needs at least 2 items (one to learn from, one held out): {', '.join(few)}")
    strategies = _as_list(strategies, MULTICLASS_STRATEGIES, "K-class strategy")
    if "target-class" in strategies:
        if target is None:
            raise ValueError("the target-class strategy screens for one class: name it (target)")
        if target not in classes:
            raise ValueError(f"target class {target!r} is not one of the classes ({', '.join(classes)})")
    seed_list = _as_seeds(seeds)
    check_run_sizes(budget, initial, test_fraction, "K-class")
    return y, classes, strategies, seed_list


def check_more(more: Mapping[str, QueryOf], registry: Mapping[str, Any], chosen: Sequence[str]) -> list[str]:
    """The names of ``more_strategies``, refused when one is a registered strategy's or chosen already."""
    clash = [name for name in more if name in registry or name in chosen]
    if clash:
        raise ValueError(f"{clash[0]!r} names a strategy of the registry: another strategy needs another name")
    return list(more)


def check_run_sizes(budget, initial, test_fraction, kind: str) -> None:
    """Refuse a budget under 1, a negative ``initial`` or a ``test_fraction`` outside (0, 1), naming it."""
    if int(budget) < 1:
        raise ValueError(f"budget must be at least 1 label, got {budget!r}")
    if int(initial) < 0:
        raise ValueError(f"initial must be >= 0, got {initial!r}")
    if not 0.0 < float(test_fraction) < 1.0:
        raise ValueError(
            f"a {kind} comparison measures accuracy on a held-out part: test_fraction must lie in "
            f"(0, 1), got {test_fraction!r}"
        )


def run_class_comparison(
    X,
    y,
    classes: Sequence[str],
    *,
    strategies: Iterable[str] | str,
    solver: str = DEFAULT_SOLVER,
    solver_params: dict | None = None,
    budget: int,
    seeds: int | Iterable[int] = 3,
    initial: int = 10,
    test_fraction: float = 0.3,
    target: str | None = None,
    accuracy_levels: Sequence[float] = ACCURACY_LEVELS,
    n_jobs: int = 1,
    progress: Callable[[int, int, str], None] | None = None,
    label_progress: Callable[[int, int, str, int, int], None] | None = None,
    more_strategies: Mapping[str, QueryOf] | None = None,
) -> ClassComparisonResult:
    """Every K-class strategy over the same seeds (see the module's docstring).

    ``y``: the class of each row of X as an index into ``classes``; ``target``: the class the
    ``target-class`` strategy screens for; ``n_jobs`` > 1 runs the (strategy, seed) runs in processes.
    ``more_strategies``: name -> :data:`QueryOf`, run after the registry's on the same seeds and splits (a
    replay's session order); they choose from the first label (no initial labels at random).
    ``progress(done, total, run)`` after each run and ``label_progress(done, total, run, label, of)`` after
    each label of a run in this process (as ``core.experiment.run_comparison``'s)."""
    from core.experiment import _execute

    y, names, chosen, seed_list = _check(y, classes, strategies, seeds, budget, initial, test_fraction, target)
    more = dict(more_strategies or {})
    chosen += check_more(more, MULTICLASS_STRATEGIES, chosen)
    X = np.atleast_2d(np.asarray(X, dtype=np.float64)) if not hasattr(X, "tocsr") else X.tocsr()
    if X.shape[0] != len(y):
        raise ValueError(f"X has {X.shape[0]} rows but y has {len(y)} labels")
    solver_params = dict(solver_params or {})
    tasks: list[tuple[str, Callable, tuple]] = []
    for seed in seed_list:
        for s in chosen:
            params = {"target": target} if s == "target-class" else {}
            query_of = more.get(s)
            tasks.append(
                (
                    f"{s} ({solver}), seed {seed}",
                    run_class_strategy if query_of is None else partial(run_class_strategy, query_of=query_of),
                    (
                        X,
                        y,
                        names,
                        s,
                        solver,
                        solver_params,
                        params,
                        int(budget),
                        seed,
                        0 if query_of is not None else int(initial),
                        float(test_fraction),
                    ),
                )
            )
    results = _execute(tasks, n_jobs, None, progress, label_progress)
    rows = pd.DataFrame([r for res in results for r in res], columns=CLASS_ROW_COLUMNS)
    order = {s: k for k, s in enumerate(chosen)}
    rows = rows.sort_values(
        ["strategy", "seed", "n_labels"], key=lambda c: c.map(order) if c.name == "strategy" else c, kind="stable"
    ).reset_index(drop=True)
    levels = tuple(float(v) for v in accuracy_levels)
    runs = class_run_table(rows, levels)
    curve = class_curve(rows, chosen, int(budget))
    config = dict(
        classes=list(names),
        strategies=chosen,
        solver=solver,
        solver_params=solver_params,
        budget=int(budget),
        seeds=seed_list,
        initial=int(initial),
        test_fraction=float(test_fraction),
        accuracy_levels=list(levels),
        **({"target": target} if "target-class" in chosen else {}),
    )
    return ClassComparisonResult(
        rows=rows, runs=runs, curve=curve, summary=summarise_classes(runs, rows, chosen, levels), config=config
    )


def _flat_to(g: pd.DataFrame, budget: int) -> pd.DataFrame:
    """A run's rows indexed by label count 1..budget, a run that stopped early kept flat at its last value."""
    g = g.set_index("n_labels")[["accuracy", "macro_auc"]]
    return g.reindex(range(1, budget + 1)).ffill()


def class_run_table(rows: pd.DataFrame, levels: Sequence[float]) -> pd.DataFrame:
    """One row per (strategy, seed): final accuracy and macro AUC, and the labels to reach each accuracy
    of ``levels`` (None when not reached within the run)."""
    out = []
    for (strategy, seed), g in rows.groupby(["strategy", "seed"], sort=False):
        n, acc = g["n_labels"].to_numpy(dtype=float), g["accuracy"].to_numpy(dtype=float)
        record = {
            "strategy": strategy,
            "solver": g["solver"].iloc[0],
            "seed": int(seed),
            "n_labels": int(n[-1]),
            "final_accuracy": float(acc[-1]),
            "final_macro_auc": float(g["macro_auc"].iloc[-1]),
        }
        for level in levels:
            record[_level_name(level)] = labels_to_reach(n, acc, level)
        out.append(record)
    return pd.DataFrame(out)


def class_curve(rows: pd.DataFrame, strategies: Sequence[str], budget: int) -> pd.DataFrame:
    """Per strategy and label count 1..budget: accuracy and macro AUC, mean and standard deviation over
    the seeds (a run that stopped early counted at its last value)."""
    frames = []
    for s in strategies:
        runs = [_flat_to(g, budget) for _, g in rows[rows["strategy"] == s].groupby("seed", sort=True)]
        if not runs:
            continue
        acc = np.column_stack([r["accuracy"].to_numpy(dtype=float) for r in runs])
        auc = np.column_stack([r["macro_auc"].to_numpy(dtype=float) for r in runs])
        sd = (lambda a: np.std(a, axis=1, ddof=1)) if len(runs) > 1 else (lambda a: np.zeros(len(a)))
        frames.append(
            pd.DataFrame(
                {
                    "strategy": s,
                    "n_labels": np.arange(1, budget + 1),
                    "accuracy_mean": np.nanmean(acc, axis=1),
                    "accuracy_sd": sd(acc),
                    "macro_auc_mean": np.nanmean(auc, axis=1),
                    "macro_auc_sd": sd(auc),
                    "n_seeds": len(runs),
                }
            )
        )
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def summarise_classes(
    runs: pd.DataFrame, rows: pd.DataFrame, strategies: Sequence[str], levels: Sequence[float]
) -> pd.DataFrame:
    """One row per strategy: final accuracy and macro AUC (mean, standard deviation over the seeds),
    labels to reach each accuracy level (mean over the seeds that reached it, and how many did), and the
    median and 95th-percentile milliseconds per label (query + update, and each)."""
    out = []
    for s in strategies:
        r, st = runs[runs["strategy"] == s], rows[rows["strategy"] == s]
        if r.empty:
            continue
        sd = (lambda v: float(v.std(ddof=1))) if len(r) > 1 else (lambda v: 0.0)
        record: dict[str, Any] = {
            "strategy": s,
            "solver": r["solver"].iloc[0],
            "n_seeds": len(r),
            "final_accuracy_mean": float(r["final_accuracy"].mean()),
            "final_accuracy_sd": sd(r["final_accuracy"]),
            "final_macro_auc_mean": float(r["final_macro_auc"].mean()),
            "final_macro_auc_sd": sd(r["final_macro_auc"]),
        }
        for level in levels:
            reached = pd.to_numeric(r[_level_name(level)], errors="coerce").dropna()
            record[_level_name(level)] = float(reached.mean()) if len(reached) else float("nan")
            record[_reached_name(level)] = int(len(reached))
        per_label = (st["update_ms"] + st["query_ms"]).to_numpy(dtype=float)
        for name, v in (
            ("label_ms", per_label),
            ("update_ms", st["update_ms"].to_numpy(dtype=float)),
            ("query_ms", st["query_ms"].to_numpy(dtype=float)),
        ):
            record[f"{name}_median"] = float(np.median(v)) if len(v) else float("nan")
            record[f"{name}_p95"] = float(np.percentile(v, 95)) if len(v) else float("nan")
        out.append(record)
    return pd.DataFrame(out)


def _reached(record: dict[str, Any], level: float) -> str:
    """Labels to reach an accuracy in a summary line: "never", or the mean and how many seeds got there."""
    k = record[_reached_name(level)]
    return "never" if k == 0 else f"{record[_level_name(level)]:.0f} ({k}/{record['n_seeds']})"


def _curve_points(budget: int, initial: int) -> list[int]:
    start = max(1, min(initial, budget))
    return sorted({int(round(v)) for v in np.linspace(start, budget, CURVE_POINTS)})


def format_class_summary(summary: pd.DataFrame, curve: pd.DataFrame, config: dict[str, Any]) -> str:
    """What ``compare --classes`` prints: the learning curves (accuracy and macro AUC, mean ± sd over the
    seeds) at a few label counts, then one line per strategy."""
    levels = config.get("accuracy_levels", ACCURACY_LEVELS)
    points = _curve_points(int(config["budget"]), int(config.get("initial", 1)))
    lines = [
        f"learning curves on the held-out part, mean ± sd over {len(config['seeds'])} seed(s): accuracy / macro AUC"
    ]
    width = max(len(s) for s in config["strategies"]) + 5
    head = f"{'labels':<{width}}" + "".join(f"{p:>16}" for p in points)
    lines += [head, "-" * len(head)]
    for s in config["strategies"]:
        c = curve[curve["strategy"] == s].set_index("n_labels")
        for what, name in (("accuracy", "acc"), ("macro_auc", "AUC")):
            cells = "".join(f"{c.at[p, what + '_mean']:>10.3f}±{c.at[p, what + '_sd']:<5.3f}" for p in points)
            lines.append(f"{s + ' ' + name:<{width}}{cells}")
    lines.append("")
    head = (
        f"{'strategy':<20} {'solver':<12} {'accuracy':>12} {'macro AUC':>12} "
        + "".join(f"{'to acc ' + format(level, 'g'):>13}" for level in levels)
        + f" {'ms/label p50/p95':>17} {'upd ms p50':>10} {'qry ms p50':>10}"
    )
    lines += [head, "-" * len(head)]
    for r in summary.to_dict(orient="records"):
        reach = "".join(f"{_reached(r, level):>13}" for level in levels)
        lines.append(
            f"{r['strategy']:<20} {r['solver']:<12} "
            f"{r['final_accuracy_mean']:>6.3f}±{r['final_accuracy_sd']:<5.3f} "
            f"{r['final_macro_auc_mean']:>6.3f}±{r['final_macro_auc_sd']:<5.3f}{reach} "
            f"{r['label_ms_median']:>8.2f}/{r['label_ms_p95']:<8.2f} {r['update_ms_median']:>10.2f} "
            f"{r['query_ms_median']:>10.2f}"
        )
    lines.append(
        "accuracy, macro AUC: at the last label (macro AUC: mean over the classes of each class against "
        "the rest); to acc X: labels until the held-out accuracy first reached X, mean over the seeds "
        "that got there; ms/label: query + update."
    )
    return "\n".join(lines)


__all__ = [
    "ACCURACY_LEVELS",
    "CLASS_ROW_COLUMNS",
    "ClassComparisonResult",
    "QueryOf",
    "check_more",
    "check_run_sizes",
    "class_curve",
    "class_run_table",
    "format_class_summary",
    "macro_auc",
    "run_class_comparison",
    "run_class_strategy",
    "summarise_classes",
]
