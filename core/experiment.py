"""Side-by-side comparison of query strategies (``python -m core compare``).

``run_comparison(X, y, strategies=[...], budget=N, seeds=K)`` runs every
strategy (with its default solver, or the one given) on the same seeds.  For
each seed the data are split once, stratified, into a training pool and a
held-out evaluation set (``core.datasets.stratified_split`` seeded with the
seed); the true labels of the pool answer the queries (the oracle).  After
every label the run records the evaluation set's ROC AUC and accuracy, the
support vectors and the update / query milliseconds.

The full-data reference for a (solver, seed) is that solver trained on the
whole training pool (one pass in a seeded random order, then ``finish()``);
its evaluation AUC normalises the areas under the learning curves (0 = chance,
1 = the full-data AUC from the first label on; ``core.metrics``) and sets the
95% / 99% targets.

Everything is seeded: a run depends only on (data, strategy, solver and its
parameters, seed, budget, initial, test_fraction), so results are the same
whether runs go one after another or in parallel processes (``n_jobs``).
"""

from __future__ import annotations

import concurrent.futures as cf
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from core.datasets import stratified_split
from core.loop import ActiveLearningLoop
from core.metrics import accuracy, labels_to_reach, learning_curve_area, roc_auc
from core.solvers import make_solver
from core.strategies import DEFAULT_COLD_START, DEFAULT_SOLVER, STRATEGY_NAMES

ROW_COLUMNS = ["strategy", "solver", "seed", "n_labels", "auc", "accuracy", "n_sv", "update_ms", "query_ms"]
EXTRA_COLUMNS = ["item", "label", "score", "n_bound", "n_in_margin", "seen", "cold_start"]
BASELINE = "random"
# Two areas under the learning curve (normalised units) closer than this count as a tie.
TIE_TOLERANCE = 1e-3


@dataclass
class ComparisonResult:
    """The outcome of :func:`run_comparison`.

    ``rows``: tidy, one row per label step (``ROW_COLUMNS`` first, then
    ``EXTRA_COLUMNS``).  ``runs``: one row per (strategy, seed) with the
    areas under the learning curve and labels to reach 95% / 99% of the
    full-data AUC.  ``references``: the full-data AUC per (solver, seed).
    ``summary``: one row per strategy (see :func:`summarise`).
    """

    rows: pd.DataFrame
    runs: pd.DataFrame
    references: pd.DataFrame
    summary: pd.DataFrame
    config: dict[str, Any] = field(default_factory=dict)

    def to_csv(self, path) -> None:
        """Write the tidy rows (the ``compare --out`` file)."""
        self.rows.to_csv(path, index=False)

    def summary_text(self) -> str:
        return format_summary(self.summary)


def _binary_labels(y) -> np.ndarray:
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must be one-dimensional, got shape {y.shape}")
    if y.dtype == bool:
        out = np.where(y, 1.0, -1.0)
    else:
        yf = np.asarray(y, dtype=np.float64)
        values = set(np.unique(yf).tolist())
        if not values <= {-1.0, 1.0} and not values <= {0.0, 1.0}:
            raise ValueError(f"y must hold binary labels (+1/-1, 1/0 or booleans), got values {sorted(values)[:5]}")
        out = np.where(yf > 0, 1.0, -1.0)
    if len(np.unique(out)) < 2:
        raise ValueError("y has only one class; a comparison needs positive and negative items")
    return out


def _split(X: np.ndarray, y: np.ndarray, seed: int, test_fraction: float):
    train, test = stratified_split(y, test_fraction, np.random.default_rng([seed, 0xE7A1]))
    if len(test) == 0:
        raise ValueError("the evaluation split is empty: use a test fraction above 0")
    return X[train], y[train], X[test], y[test]


def _run_strategy(X, y, strategy: str, solver: str, solver_params: dict, strategy_params: dict, budget: int,
                  seed: int, initial: int, test_fraction: float, cold_start: str) -> list[dict[str, Any]]:
    """One active-learning run with the true labels as the oracle; one dict per label."""
    Xtr, ytr, Xte, yte = _split(X, y, seed, test_fraction)
    loop = ActiveLearningLoop(Xtr, strategy=strategy, solver=solver, solver_params=solver_params,
                              strategy_params=strategy_params, seed=seed, cold_start=cold_start,
                              initial=initial, eval_X=Xte, eval_y=yte, oracle_y=ytr)
    budget = min(int(budget), len(Xtr))
    while loop.n_labels < budget:
        q = loop.next_query()
        if q is None:  # pool exhausted, or ramp-region has nothing left in its ramp region
            break
        loop.teach(q.index, int(ytr[q.index]))
    out = []
    for r in loop.history:
        out.append({"strategy": strategy, "solver": solver, "seed": seed, "n_labels": r.n_labels, "auc": r.auc,
                    "accuracy": r.accuracy, "n_sv": r.n_sv, "update_ms": r.update_ms, "query_ms": r.query_ms,
                    "item": r.item, "label": r.label, "score": r.score, "n_bound": r.n_bound,
                    "n_in_margin": r.n_in_margin, "seen": r.seen, "cold_start": r.asked_by.endswith("(cold start)")})
    return out


def full_data_reference(X, y, solver: str, solver_params: dict, seed: int, test_fraction: float) -> dict[str, Any]:
    """The solver trained on the whole training pool of this seed's split, scored on its evaluation set."""
    Xtr, ytr, Xte, yte = _split(X, y, seed, test_fraction)
    params = dict(solver_params)
    params.setdefault("random_state", int(seed))
    t0 = time.perf_counter()
    model = make_solver(solver, Xtr, **params)
    for i in np.random.default_rng([seed, 0xF011]).permutation(len(Xtr)):
        model.learn(int(i), float(ytr[i]))
    model.finish()
    seconds = time.perf_counter() - t0
    f = np.asarray(model.decision_function(X=Xte), dtype=np.float64)
    return {"solver": solver, "seed": seed, "auc": roc_auc(yte, f),
            "accuracy": accuracy(yte, np.where(f >= 0, 1.0, -1.0)), "n_sv": int(len(model.coefficients()[0])),
            "n_train": int(len(Xtr)), "seconds": seconds}


def _as_list(strategies) -> list[str]:
    if isinstance(strategies, str):
        strategies = [s.strip() for s in strategies.split(",") if s.strip()]
    strategies = list(dict.fromkeys(strategies))
    if not strategies:
        raise ValueError("give at least one strategy")
    for s in strategies:
        if s not in STRATEGY_NAMES:
            raise ValueError(f"unknown strategy {s!r}; choose from {', '.join(STRATEGY_NAMES)}")
    return strategies


def _as_seeds(seeds) -> list[int]:
    if isinstance(seeds, (int, np.integer)):
        if seeds < 1:
            raise ValueError(f"seeds must be a positive count or a list of seeds, got {seeds!r}")
        return list(range(int(seeds)))
    out = [int(s) for s in seeds]
    if not out:
        raise ValueError("give at least one seed")
    return list(dict.fromkeys(out))


def run_comparison(X, y, *, strategies: Iterable[str] | str, solver: str | dict[str, str] | None = None,
                   solver_params: dict | None = None, budget: int, seeds: int | Iterable[int],
                   initial: int = 10, test_fraction: float = 0.3, n_jobs: int = 1,
                   progress: Callable[[int, int, str], None] | None = None,
                   strategy_params: dict[str, dict] | None = None,
                   cold_start: str = DEFAULT_COLD_START) -> ComparisonResult:
    """Run query strategies side by side on the same seeds.

    Parameters
    ----------
    X : (n, d) features; y : binary labels (+1/-1, 1/0 or booleans), the oracle.
    strategies : names (list or comma-separated string).  ``random`` is added
        as the baseline for wins/ties/losses when it is not listed.
    solver : ``None`` (each strategy's default solver), one solver name for
        all, or a dict strategy -> solver.
    solver_params : solver keyword arguments (kernel, C, gamma, ...).
    budget : labels per run, the initial ones included (capped at the pool size).
    seeds : a count K (seeds 0..K-1) or a list of seeds; each seed fixes the
        split, the initial labels and every random choice of its runs.
    initial : labels chosen by the cold-start rule (random) before the
        strategy takes over; the strategy also waits until both classes are labelled.
    test_fraction : share of the data held out for evaluation (stratified).
    n_jobs : processes (``concurrent.futures.ProcessPoolExecutor``); 1 runs in-process.
    progress : called as ``progress(done, total, description)`` after each run.
    strategy_params : optional dict strategy -> keyword arguments.
    """
    X = np.atleast_2d(np.asarray(X, dtype=np.float64))
    y = _binary_labels(y)
    if len(X) != len(y):
        raise ValueError(f"X has {len(X)} rows but y has {len(y)} labels")
    strategies = _as_list(strategies)
    if BASELINE not in strategies:
        strategies.append(BASELINE)
    seeds = _as_seeds(seeds)
    if int(budget) < 1:
        raise ValueError(f"budget must be at least 1 label, got {budget!r}")
    if int(initial) < 0:
        raise ValueError(f"initial must be >= 0, got {initial!r}")
    solver_params = dict(solver_params or {})
    strategy_params = dict(strategy_params or {})
    if isinstance(solver, dict):
        solvers = {s: solver.get(s, DEFAULT_SOLVER[s]) for s in strategies}
    else:
        solvers = {s: solver or DEFAULT_SOLVER[s] for s in strategies}

    tasks: list[tuple[str, Callable, tuple]] = []
    for seed in seeds:
        for name in sorted(set(solvers.values())):
            tasks.append((f"full-data {name}, seed {seed}", full_data_reference,
                          (X, y, name, solver_params, seed, test_fraction)))
        for s in strategies:
            tasks.append((f"{s} ({solvers[s]}), seed {seed}", _run_strategy,
                          (X, y, s, solvers[s], solver_params, strategy_params.get(s, {}), int(budget), seed,
                           int(initial), float(test_fraction), cold_start)))

    results: list[Any] = [None] * len(tasks)
    done = 0
    if n_jobs is None or int(n_jobs) <= 1:
        for k, (desc, fn, args) in enumerate(tasks):
            results[k] = fn(*args)
            done += 1
            if progress:
                progress(done, len(tasks), desc)
    else:
        with cf.ProcessPoolExecutor(max_workers=int(n_jobs)) as pool:
            futures = {pool.submit(fn, *args): (k, desc) for k, (desc, fn, args) in enumerate(tasks)}
            for fut in cf.as_completed(futures):
                k, desc = futures[fut]
                results[k] = fut.result()
                done += 1
                if progress:
                    progress(done, len(tasks), desc)

    refs, rows = [], []
    for (_, fn, _), res in zip(tasks, results, strict=True):
        if fn is full_data_reference:
            refs.append(res)
        else:
            rows.extend(res)
    references = pd.DataFrame(refs)
    rows_df = pd.DataFrame(rows, columns=ROW_COLUMNS + EXTRA_COLUMNS)
    order = {s: k for k, s in enumerate(strategies)}
    rows_df = rows_df.sort_values(["strategy", "seed", "n_labels"], key=lambda c: c.map(order) if c.name == "strategy"
                                  else c, kind="stable").reset_index(drop=True)
    runs = run_table(rows_df, references, int(budget))
    summary = summarise(runs, rows_df, strategies)
    config = dict(strategies=strategies, solvers=solvers, solver_params=solver_params, budget=int(budget),
                  seeds=seeds, initial=int(initial), test_fraction=float(test_fraction), cold_start=cold_start)
    return ComparisonResult(rows=rows_df, runs=runs, references=references, summary=summary, config=config)


def run_table(rows: pd.DataFrame, references: pd.DataFrame, budget: int) -> pd.DataFrame:
    """One row per (strategy, seed): learning-curve areas and labels to reach 95% / 99%.

    A run that stopped before the budget (pool exhausted, or ramp-region found
    nothing in its ramp region) keeps its last model: its curve is extended
    flat to the budget, so all areas cover the same label axis.
    """
    ref = {(r.solver, int(r.seed)): float(r.auc) for r in references.itertuples()}
    out = []
    for (strategy, seed), g in rows.groupby(["strategy", "seed"], sort=False):
        g = g.sort_values("n_labels")
        n = g["n_labels"].to_numpy(dtype=float)
        auc = g["auc"].to_numpy(dtype=float)
        end = min(budget, int(n[-1]) if len(n) else 0)
        if len(n) and n[-1] < budget:
            n, auc, end = np.append(n, budget), np.append(auc, auc[-1]), budget
        solver = g["solver"].iloc[0]
        r = ref[(solver, int(seed))]
        out.append({
            "strategy": strategy, "solver": solver, "seed": int(seed), "n_labels": int(g["n_labels"].iloc[-1]),
            "budget": end, "reference_auc": r, "final_auc": float(auc[-1]),
            "final_accuracy": float(g["accuracy"].iloc[-1]), "final_n_sv": int(g["n_sv"].iloc[-1]),
            "alc": learning_curve_area(n, auc, reference=r),
            "alc_log2": learning_curve_area(n, auc, reference=r, log2=True),
            "labels_95": labels_to_reach(n, auc, 0.95 * r),
            "labels_99": labels_to_reach(n, auc, 0.99 * r),
            "labels_asked": int(g["n_labels"].iloc[-1]), "items_seen": int(g["seen"].iloc[-1]),
        })
    return pd.DataFrame(out)


def _mean_reached(values: pd.Series) -> tuple[float, int]:
    v = pd.to_numeric(values, errors="coerce").dropna()
    return (float(v.mean()) if len(v) else float("nan")), int(len(v))


def summarise(runs: pd.DataFrame, rows: pd.DataFrame, strategies: list[str]) -> pd.DataFrame:
    """One row per strategy.

    Columns: mean and standard deviation over seeds of the normalised area
    under the learning curve (``alc``: linear label axis; ``alc_log2``: log2
    axis); labels to reach 95% / 99% of the full-data AUC (mean over the seeds
    that reached it, and how many did); final AUC and support vectors;
    median and 95th-percentile update and query milliseconds over all label
    steps; wins / ties / losses of ``alc`` against ``random`` seed by seed
    (|difference| <= ``TIE_TOLERANCE`` is a tie).
    """
    base = runs[runs["strategy"] == BASELINE].set_index("seed")["alc"]
    out = []
    for s in strategies:
        r = runs[runs["strategy"] == s]
        st = rows[rows["strategy"] == s]
        if r.empty:
            continue
        l95, n95 = _mean_reached(r["labels_95"])
        l99, n99 = _mean_reached(r["labels_99"])
        w = t = lo = 0
        for seed, a in zip(r["seed"], r["alc"], strict=True):
            if s == BASELINE or seed not in base.index:
                continue
            d = a - base[seed]
            if d > TIE_TOLERANCE:
                w += 1
            elif d < -TIE_TOLERANCE:
                lo += 1
            else:
                t += 1
        upd = st["update_ms"].to_numpy(dtype=float)
        qry = st["query_ms"].to_numpy(dtype=float)
        qry = qry[np.isfinite(qry)]
        out.append({
            "strategy": s, "solver": r["solver"].iloc[0], "n_seeds": len(r),
            "alc_mean": float(r["alc"].mean()), "alc_std": float(r["alc"].std(ddof=1)) if len(r) > 1 else 0.0,
            "alc_log2_mean": float(r["alc_log2"].mean()),
            "alc_log2_std": float(r["alc_log2"].std(ddof=1)) if len(r) > 1 else 0.0,
            "labels_95": l95, "reached_95": n95, "labels_99": l99, "reached_99": n99,
            "final_auc": float(r["final_auc"].mean()), "reference_auc": float(r["reference_auc"].mean()),
            "final_n_sv": float(r["final_n_sv"].mean()),
            "labels_asked": float(r["labels_asked"].mean()), "items_seen": float(r["items_seen"].mean()),
            "update_ms_median": float(np.median(upd)) if len(upd) else float("nan"),
            "update_ms_p95": float(np.percentile(upd, 95)) if len(upd) else float("nan"),
            "query_ms_median": float(np.median(qry)) if len(qry) else float("nan"),
            "query_ms_p95": float(np.percentile(qry, 95)) if len(qry) else float("nan"),
            "wins": None if s == BASELINE else w, "ties": None if s == BASELINE else t,
            "losses": None if s == BASELINE else lo,
        })
    df = pd.DataFrame(out)
    for c in ("wins", "ties", "losses"):  # whole numbers, None for the baseline itself
        df[c] = pd.Series([d[c] for d in out], dtype=object)
    return df


def format_summary(summary: pd.DataFrame) -> str:
    """A plain-text table of the summary (what ``compare`` prints)."""
    head = (f"{'strategy':<18} {'solver':<12} {'ALC':>13} {'ALC log2':>13} {'to 95%':>10} {'to 99%':>10} "
            f"{'AUC':>6} {'SV':>7} {'upd ms p50/p95':>15} {'qry ms p50/p95':>15} {'vs random W/T/L':>16}")
    lines = [head, "-" * len(head)]
    for r in summary.itertuples():
        def reach(v, k, n=r.n_seeds):
            return "never" if k == 0 else f"{v:.0f} ({k}/{n})"
        wtl = "baseline" if r.wins is None or (isinstance(r.wins, float) and np.isnan(r.wins)) \
            else f"{int(r.wins)}/{int(r.ties)}/{int(r.losses)}"
        lines.append(
            f"{r.strategy:<18} {r.solver:<12} {r.alc_mean:>6.3f}±{r.alc_std:<6.3f} "
            f"{r.alc_log2_mean:>6.3f}±{r.alc_log2_std:<6.3f} {reach(r.labels_95, r.reached_95):>10} "
            f"{reach(r.labels_99, r.reached_99):>10} {r.final_auc:>6.3f} {r.final_n_sv:>7.1f} "
            f"{r.update_ms_median:>7.2f}/{r.update_ms_p95:<7.2f} {r.query_ms_median:>7.2f}/{r.query_ms_p95:<7.2f} "
            f"{wtl:>16}")
    lines.append("ALC: area under the test-AUC learning curve, normalised (0 = chance, 1 = full-data AUC "
                 "from the first label); mean ± std over seeds.")
    return "\n".join(lines)


__all__ = ["BASELINE", "ComparisonResult", "EXTRA_COLUMNS", "ROW_COLUMNS", "TIE_TOLERANCE", "format_summary",
           "full_data_reference", "run_comparison", "run_table", "summarise"]
