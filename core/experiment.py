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
whether runs go one after another, in parallel processes (``n_jobs``) or as
tasks on a Dask cluster (``scheduler``; ``run_study`` runs several datasets
with the same options at once).

Recall (positives labelled / positives in the training pool) is recorded too:
the summary gives the labels needed to find 50%, 80% and 95% of the positives
and the work saved over sampling at 95% recall (WSS@95).  These need no
evaluation set, so ``test_fraction=0`` is allowed (the AUC-based measures are
then undefined and the full-data reference is not trained).

With ``stopping=[...]`` (``core.stopping``) every rule runs beside each
strategy: the heuristic rules watch the run and note the first label at which
they would stop; a statistical rule (``statistical``, ``statistical-run``) changes the session (random draws when
it asks for a check, back to the strategy when the draws show recall below
the target), so it runs
on a branch of the run that starts, from the loop's saved state, when the rule
first suggests a check.  ``ComparisonResult.stops`` has one row per (strategy,
seed, rule) with the labels at stop (every label counted, random draws
included; None when the rule did not stop within the budget) and the recall
then; ``stop_summary`` one row per (strategy, rule).
"""

from __future__ import annotations

import concurrent.futures as cf
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

from core import priors as prior_knowledge
from core import solvers as solver_registry
from core import stopping as stop_rules
from core.dask_runs import SCHEDULER_ENV, SchedulerError, collect_in_order, resolve_scheduler, run_on_dask
from core.datasets import stratified_split
from core.loop import ActiveLearningLoop
from core.metrics import (
    accuracy,
    labels_to_reach,
    labels_to_recall,
    learning_curve_area,
    roc_auc,
    work_saved_over_sampling,
)
from core.presets import taken_by
from core.solvers import make_solver
from core.strategies import BASELINE, COLD_START_SUFFIX, DEFAULT_COLD_START, DEFAULT_SOLVER, STRATEGY_NAMES

ROW_COLUMNS = ["strategy", "solver", "seed", "n_labels", "auc", "accuracy", "n_sv", "update_ms", "query_ms"]
EXTRA_COLUMNS = ["item", "label", "score", "n_bound", "n_in_margin", "seen", "cold_start", "recall", "prior"]
STOP_COLUMNS = ["strategy", "solver", "seed", "rule", "n_labels_at_stop", "recall_at_stop", "positives_total"]
#: recall levels whose labels the summary reports (document review's and ASReview's measures)
RECALL_LEVELS = (0.5, 0.8, 0.95)
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
    stops: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=STOP_COLUMNS))
    stop_summary: pd.DataFrame = field(default_factory=pd.DataFrame)

    def to_csv(self, path) -> None:
        """Write the tidy rows (the ``compare --out`` file)."""
        self.rows.to_csv(path, index=False)

    def stops_to_csv(self, path) -> None:
        """Write one row per (strategy, seed, rule) (the ``compare --stops-out`` file)."""
        self.stops.to_csv(path, index=False)

    def reference_note(self) -> str | None:
        """A sentence saying that the full-data reference learned a subsample, or None when it learned
        the whole training pool of every seed."""
        return reference_note(self.references.to_dict(orient="records"))

    def summary_text(self) -> str:
        text = format_summary(self.summary)
        if self.config.get("priors"):
            counts = self.config["prior"].split(",")
            which = (
                f"{counts[0]} known positive(s) and {counts[1]} known negative(s) drawn per seed"
                if len(counts) == 2
                else "the given items"
            )
            text += (
                f"\npriors: {which}, learned first; recall X% counts the labels after them, over the "
                "positives that are not priors (as ASReview counts them)."
            )
        note = self.reference_note()
        if note:
            text += "\n" + note
        if len(self.stop_summary):
            text += "\n\n" + format_stop_summary(self.stop_summary, self.config.get("target_recall"))
        return text


REFERENCE_COLUMNS = ["solver", "seed", "auc", "accuracy", "n_sv", "n_train", "n_pool", "seconds"]


def reference_note(references: list[dict]) -> str | None:
    """The sentence of :meth:`ComparisonResult.reference_note` from the references' records (a stored
    comparison's too; records without ``n_pool``, from before subsampling, learned the whole pool)."""
    cut = [r for r in references if r.get("n_pool") is not None and int(r["n_train"]) < int(r["n_pool"])]
    if not cut:
        return None
    learned, pools = {int(r["n_train"]) for r in cut}, {int(r["n_pool"]) for r in cut}
    of = f"{min(pools):,}" if len(pools) == 1 else f"{min(pools):,}-{max(pools):,}"
    return (
        f"The full-data reference learned a stratified random subsample of {min(learned):,} of the {of} "
        "training items (per seed): learning all of them would take far longer than the runs. The figures "
        "measured against the full-data model (ALC, 'to 95%', 'to 99%') are measured against this one."
    )


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


def _split_rows(y: np.ndarray, seed: int, test_fraction: float) -> tuple[np.ndarray, np.ndarray]:
    """(pool rows, evaluation rows) of a seed's split: the pool in its order."""
    return stratified_split(y, test_fraction, np.random.default_rng([seed, 0xE7A1]))


def _split(X: np.ndarray, y: np.ndarray, seed: int, test_fraction: float):
    """(pool X, pool y, evaluation X, evaluation y); the evaluation part is empty for test_fraction 0."""
    train, test = _split_rows(y, seed, test_fraction)
    return X[train], y[train], X[test], y[test]


@dataclass
class StoppingSetup:
    """The stopping rules a comparison runs beside each strategy (see ``core.stopping``)."""

    rules: list[stop_rules.RuleSpec]
    target_recall: float = stop_rules.DEFAULT_TARGET_RECALL
    confidence: float = stop_rules.DEFAULT_CONFIDENCE
    patience: float = 1.0


class _StopWatch:
    """Watches one run: the label at which each heuristic rule would first stop, and the branch
    point of each statistical rule (the loop's state when it first suggests a check)."""

    def __init__(self, setup: StoppingSetup, ytr: np.ndarray, seed: int):
        self.setup = setup
        self.ytr = ytr
        self.n_pool = len(ytr)
        self.positives = int(np.sum(ytr > 0))
        self.labels: list[int] = []
        self.fired: dict[str, tuple[int, float]] = {}
        self.passive = [r for r in setup.rules if r.name not in stop_rules.CHECK_STARTS]
        #: the statistical rules, by name: ``statistical`` (checks start at the knee) and ``statistical-run``
        self.statistical = [r.name for r in setup.rules if r.name in stop_rules.CHECK_STARTS]
        self.branches: dict[str, tuple[Any, list[int]]] = {}
        self.tracker = None
        if any(r.name == "stability" for r in setup.rules):
            self.tracker = stop_rules.StabilityTracker(stop_rules.stop_set(self.n_pool, seed))
        self._kappas: list[tuple[int, float]] = []

    def recall(self) -> float:
        return sum(v > 0 for v in self.labels) / self.positives if self.positives else float("nan")

    def after_label(self, loop: ActiveLearningLoop, row) -> None:
        self.labels.append(int(row.label))
        n = len(self.labels)
        both = 0 < sum(v > 0 for v in self.labels) < n
        if self.tracker is not None and self.tracker.due(n) and both:
            stop = self.tracker.stop_set
            scores = loop.pool_scores()[stop] if loop.track_scores else loop.solver.decision_function(stop)
            self.tracker.record(n, scores)
            self._kappas = self.tracker.kappas()
        for spec in self.passive:
            key = str(spec)
            if key in self.fired:
                continue
            if spec.name == "margin":
                state = stop_rules.margin_rule(row.n_in_margin, self.labels, tolerance=spec.param or 0)
            elif spec.name == "knee":
                state = stop_rules.knee_rule(self.labels)
            elif spec.name == "consecutive":
                state = stop_rules.consecutive_rule(self.labels, int(spec.param or 0))
            else:
                state = stop_rules.stability_rule(self._kappas)
            if state.stop:
                self.fired[key] = (n, self.recall())
        for name in self.statistical:
            if name not in self.branches and stop_rules.check_suggested(
                self.labels,
                self.n_pool,
                self.setup.target_recall,
                self.setup.patience,
                start=stop_rules.CHECK_STARTS[name],
                confidence=self.setup.confidence,
            ):
                self.branches[name] = (loop.to_state(), list(self.labels))

    def heuristic_exhausted(self, loop: ActiveLearningLoop) -> None:
        """The strategy has nothing more to ask: the statistical rules would check now."""
        for name in self.statistical:
            if name not in self.branches and loop.n_labels < self.n_pool:
                self.branches[name] = (loop.to_state(), list(self.labels))

    def run_statistical(
        self, Xtr: np.ndarray, budget: int, seed: int, name: str = "statistical"
    ) -> tuple[int, float] | None:
        """The session the statistical rule ``name`` makes of the run from its branch point; (labels, recall)
        at stop."""
        if name not in self.branches:
            return None
        start = stop_rules.CHECK_STARTS[name]
        (arrays, meta), labels = self.branches[name]
        setup, y = self.setup, self.ytr
        loop = ActiveLearningLoop.from_state(arrays, meta, Xtr, oracle_y=y)  # no evaluation: not reported
        drawn, checking = [False] * len(labels), False
        starts: list[int] = []
        rng = np.random.default_rng([seed, 0x57A7])
        exhausted = False
        while True:
            done = sum(1 for s in starts if s < len(labels) and drawn[s])  # checks that drew items
            if (
                not checking
                and not exhausted
                and not stop_rules.check_suggested(
                    labels,
                    self.n_pool,
                    setup.target_recall,
                    setup.patience,
                    start=start,
                    checks_done=done,
                    confidence=setup.confidence,
                )
            ):
                action = "heuristic"  # what recall_check says then, without computing its p-values
            else:
                check = stop_rules.recall_check(
                    labels,
                    drawn,
                    starts,
                    checking=checking,
                    pool_size=self.n_pool,
                    target_recall=setup.target_recall,
                    confidence=setup.confidence,
                    patience=setup.patience,
                    start=start,
                )
                action = stop_rules.simulated_analyst(check)
                checking = checking and check.phase != "failed"  # a failed check sends the session back
                if action == "heuristic" and exhausted:
                    action = "start"  # nothing left to ask: only random draws can go on
            if action == "stop":
                return len(labels), sum(v > 0 for v in labels) / self.positives
            if len(labels) >= budget:
                return None
            if action == "start":
                starts.append(len(labels))
                checking = True
                continue
            if action == "draw":
                item = int(rng.choice(np.flatnonzero(~loop.labelled_mask)))
            else:
                checking = False
                q = loop.next_query()
                if q is None:
                    exhausted = True
                    continue
                item = int(q.index)
            loop.teach(item, int(y[item]))
            labels.append(int(y[item]))
            drawn.append(action == "draw")

    def stop_rows(self, base: dict[str, Any], statistical: dict[str, tuple[int, float] | None]) -> list[dict[str, Any]]:
        out = []
        for spec in self.setup.rules:
            hit = statistical.get(spec.name) if spec.name in stop_rules.CHECK_STARTS else self.fired.get(str(spec))
            out.append(
                {
                    **base,
                    "rule": str(spec),
                    "n_labels_at_stop": None if hit is None else int(hit[0]),
                    "recall_at_stop": None if hit is None else float(hit[1]),
                    "positives_total": self.positives,
                }
            )
        return out


def _run_strategy(
    X,
    y,
    strategy: str,
    solver: str,
    solver_params: dict,
    strategy_params: dict,
    budget: int,
    seed: int,
    initial: int,
    test_fraction: float,
    cold_start: str,
    stopping: StoppingSetup | None = None,
    priors: np.ndarray | None = None,
    on_step: Callable[[int, int], None] | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One active-learning run with the true labels as the oracle: one dict per label, one per stopping rule.

    ``priors``: positions in the seed's pool of the items known before the run (``core.priors``), learned
    first, in this order, with their true labels.
    ``on_step(labels, budget)`` is called after every label (progress within the run)."""
    Xtr, ytr, Xte, yte = _split(X, y, seed, test_fraction)
    evaluation = dict(eval_X=Xte, eval_y=yte) if Xte.shape[0] else {}
    loop = ActiveLearningLoop(
        Xtr,
        strategy=strategy,
        solver=solver,
        solver_params=solver_params,
        strategy_params=strategy_params,
        seed=seed,
        cold_start=cold_start,
        initial=initial,
        oracle_y=ytr,
        **evaluation,
    )
    budget = min(int(budget), Xtr.shape[0])
    watch = _StopWatch(stopping, ytr, seed) if stopping is not None else None
    for i in () if priors is None else priors:
        row = loop.teach(int(i), int(ytr[i]), provenance=prior_knowledge.PRIOR)
        if watch is not None:
            watch.after_label(loop, row)
        if on_step is not None:
            on_step(loop.n_labels, budget)
    while loop.n_labels < budget:
        q = loop.next_query()
        if q is None:  # pool exhausted, or ramp-region has nothing left in its ramp region
            if watch is not None:
                watch.heuristic_exhausted(loop)
            break
        row = loop.teach(q.index, int(ytr[q.index]))
        if watch is not None:
            watch.after_label(loop, row)
        if on_step is not None:
            on_step(loop.n_labels, budget)
    known = np.zeros(0, dtype=np.intp) if priors is None else np.asarray(priors, dtype=np.intp)
    # recall as ASReview counts it: the priors are on neither side
    positives = max(int(np.sum(ytr > 0)) - int(np.sum(ytr[known] > 0)), 1)
    out, found = [], 0
    for r in loop.history:
        is_prior = r.asked_by == prior_knowledge.PRIOR
        found += r.label > 0 and not is_prior
        out.append(
            {
                "strategy": strategy,
                "solver": solver,
                "seed": seed,
                "n_labels": r.n_labels,
                "auc": r.auc,
                "accuracy": r.accuracy,
                "n_sv": r.n_sv,
                "update_ms": r.update_ms,
                "query_ms": r.query_ms,
                "item": r.item,
                "label": r.label,
                "score": r.score,
                "n_bound": r.n_bound,
                "n_in_margin": r.n_in_margin,
                "seen": r.seen,
                "cold_start": r.asked_by.endswith(COLD_START_SUFFIX),
                "recall": found / positives,
                "prior": is_prior,
            }
        )
    stops = []
    if watch is not None:
        statistical = {name: watch.run_statistical(Xtr, budget, seed, name) for name in watch.statistical}
        stops = watch.stop_rows({"strategy": strategy, "solver": solver, "seed": seed}, statistical)
    return out, stops


# The full-data reference learns the training pool of each seed's split with the comparison's
# solver.  On a large pool that costs far more than the runs themselves: the exact incremental
# solver took 0.9 s for 2,000 two-Gaussian items, 7.7 s for 4,000, and did not finish 35,000 in
# minutes, where 3 heuristics x 3 seeds x 100 labels take seconds.  Above this many training items
# the reference learns a stratified random subsample of this size (the same for every solver of
# a seed), and the result says so (``references.n_train`` < ``n_pool``).
REFERENCE_MAX_ITEMS = 4_000
# how the description of a reference's task starts (its progress counts training items, not labels)
REFERENCE_TASK = "full-data"


def reference_items(y_pool: np.ndarray, seed: int, limit: int | None = None) -> np.ndarray:
    """Positions in the training pool the full-data reference learns: all of them up to ``limit``
    (default ``REFERENCE_MAX_ITEMS``), else ``limit`` of them drawn at random per class in proportion
    (at least one of each), sorted."""
    limit = REFERENCE_MAX_ITEMS if limit is None else int(limit)
    n = len(y_pool)
    if n <= limit:
        return np.arange(n)
    rng = np.random.default_rng([seed, 0x5AB5])
    pos, neg = np.flatnonzero(y_pool > 0), np.flatnonzero(y_pool <= 0)
    k_pos = min(len(pos), max(1, int(round(limit * len(pos) / n))), limit - 1)
    picked = np.concatenate([rng.choice(pos, k_pos, replace=False), rng.choice(neg, limit - k_pos, replace=False)])
    return np.sort(picked)


def full_data_reference(
    X,
    y,
    solver: str,
    solver_params: dict,
    seed: int,
    test_fraction: float,
    on_step: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """The solver trained on the training pool of this seed's split (on a subsample of
    ``REFERENCE_MAX_ITEMS`` of it when larger), scored on its evaluation set.

    ``on_step(items, total)`` is called after every item learned (progress within the reference;
    an exception from it stops the work there)."""
    Xtr, ytr, Xte, yte = _split(X, y, seed, test_fraction)
    n_pool = int(Xtr.shape[0])
    learned = reference_items(ytr, seed)
    if len(learned) < n_pool:
        Xtr, ytr = Xtr[learned], ytr[learned]
    params = taken_by(solver, solver_params)  # (as the runs take them: core.presets.solver_for)
    params.setdefault("random_state", int(seed))
    t0 = time.perf_counter()
    model = make_solver(solver, Xtr, **params)
    order = np.random.default_rng([seed, 0xF011]).permutation(Xtr.shape[0])
    if solver_registry.get(solver).reference_at_once:  # (ramp: all at once, one optimum; OnlineSVMR.learn_many)
        model.learn_many(order, ytr[order])  # type: ignore[attr-defined]  # (the solvers learned at once have it)
        if on_step is not None:
            on_step(len(order), len(order))
    else:
        for k, i in enumerate(order, start=1):
            model.learn(int(i), float(ytr[i]))
            if on_step is not None:
                on_step(k, len(order))
    model.finish()
    seconds = time.perf_counter() - t0
    f = np.asarray(model.decision_function(X=Xte), dtype=np.float64)
    return {
        "solver": solver,
        "seed": seed,
        "auc": roc_auc(yte, f),
        "accuracy": accuracy(yte, np.where(f >= 0, 1.0, -1.0)),
        "n_sv": int(len(model.coefficients()[0])),
        "n_train": int(Xtr.shape[0]),
        "n_pool": n_pool,
        "seconds": seconds,
    }


def _as_list(strategies, known: Iterable[str] = STRATEGY_NAMES, kind: str = "strategy") -> list[str]:
    """The strategies named (a list, or a comma-separated string), once each, each one of ``known``."""
    if isinstance(strategies, str):
        strategies = [s.strip() for s in strategies.split(",") if s.strip()]
    strategies = list(dict.fromkeys(strategies))
    if not strategies:
        raise ValueError("give at least one strategy")
    known = list(known)
    for s in strategies:
        if s not in known:
            raise ValueError(f"unknown {kind} {s!r}; choose from {', '.join(known)}")
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


@dataclass
class _Plan:
    """The runs of one comparison (tasks) and what is needed to build its tables from their results."""

    y: np.ndarray
    tasks: list[tuple[str, Callable, tuple]]
    strategies: list[str]
    solvers: dict[str, str]
    seeds: list[int]
    config: dict[str, Any]
    setup: StoppingSetup | None

    def result(self, results: list[Any]) -> ComparisonResult:
        strategies, setup = self.strategies, self.setup
        refs, rows, stops = [], [], []
        for (_, fn, _), res in zip(self.tasks, results, strict=True):
            if fn is full_data_reference:
                refs.append(res)
            else:
                rows.extend(res[0])
                stops.extend(res[1])
        references = pd.DataFrame(refs, columns=REFERENCE_COLUMNS)
        rows_df = pd.DataFrame(rows, columns=ROW_COLUMNS + EXTRA_COLUMNS)
        order = {s: k for k, s in enumerate(strategies)}
        rows_df = rows_df.sort_values(
            ["strategy", "seed", "n_labels"], key=lambda c: c.map(order) if c.name == "strategy" else c, kind="stable"
        ).reset_index(drop=True)
        test_fraction, budget = self.config["test_fraction"], self.config["budget"]
        pools = {seed: _pool_counts(self.y, seed, test_fraction) for seed in self.seeds}
        runs = run_table(rows_df, references, budget, pools)
        summary = summarise(runs, rows_df, strategies)
        config = dict(self.config)
        stops_df = pd.DataFrame(stops, columns=STOP_COLUMNS)
        stop_summary = pd.DataFrame()
        if setup is not None:
            config.update(
                stopping=[str(r) for r in setup.rules], target_recall=setup.target_recall, confidence=setup.confidence
            )
            stops_df["n_labels_at_stop"] = stops_df["n_labels_at_stop"].astype("Int64")
            stops_df = stops_df.sort_values(
                ["strategy", "seed"], key=lambda c: c.map(order) if c.name == "strategy" else c, kind="stable"
            ).reset_index(drop=True)
            stop_summary = summarise_stops(
                stops_df, pools, setup.target_recall, strategies, [str(r) for r in setup.rules]
            )
        return ComparisonResult(
            rows=rows_df,
            runs=runs,
            references=references,
            summary=summary,
            config=config,
            stops=stops_df,
            stop_summary=stop_summary,
        )


def _plan(
    X,
    y,
    *,
    strategies: Iterable[str] | str,
    solver: str | dict[str, str] | None = None,
    solver_params: dict | None = None,
    budget: int,
    seeds: int | Iterable[int],
    initial: int = 10,
    test_fraction: float = 0.3,
    strategy_params: dict[str, dict] | None = None,
    cold_start: str = DEFAULT_COLD_START,
    stopping: str | list | None = None,
    target_recall: float = stop_rules.DEFAULT_TARGET_RECALL,
    confidence: float = stop_rules.DEFAULT_CONFIDENCE,
    baseline: bool = False,
    prior: tuple[int, int] | str | None = None,
    prior_items: Iterable[int] | None = None,
    prior_names: Iterable[str] | None = None,
) -> _Plan:
    """Check the arguments of a comparison and list its runs (see :func:`run_comparison`)."""
    # documents and fingerprints stay sparse (CSR rows, as the loop and the kernels take them)
    X = sp.csr_matrix(X, dtype=np.float64) if sp.issparse(X) else np.atleast_2d(np.asarray(X, dtype=np.float64))
    y = _binary_labels(y)
    if X.shape[0] != len(y):
        raise ValueError(f"X has {X.shape[0]} rows but y has {len(y)} labels")
    strategies = _as_list(strategies)
    if baseline and BASELINE not in strategies:
        strategies.append(BASELINE)
    seeds = _as_seeds(seeds)
    if int(budget) < 1:
        raise ValueError(f"budget must be at least 1 label, got {budget!r}")
    if int(initial) < 0:
        raise ValueError(f"initial must be >= 0, got {initial!r}")
    if not 0.0 <= float(test_fraction) < 1.0:
        raise ValueError(f"test_fraction must lie in [0, 1), got {test_fraction!r}")
    setup = None
    if stopping:
        target_recall, confidence = stop_rules.check_target(target_recall, confidence)
        setup = StoppingSetup(stop_rules.parse_rules(stopping), target_recall, confidence)
    solver_params = dict(solver_params or {})
    strategy_params = dict(strategy_params or {})
    if isinstance(solver, dict):
        solvers = {s: solver.get(s, DEFAULT_SOLVER[s]) for s in strategies}
    else:
        solvers = {s: solver or DEFAULT_SOLVER[s] for s in strategies}

    known = _priors_per_seed(y, seeds, float(test_fraction), prior, prior_items, prior_names)

    tasks: list[tuple[str, Callable, tuple]] = []
    for seed in seeds:
        for name in sorted(set(solvers.values())) if float(test_fraction) > 0 else ():
            tasks.append(
                (
                    f"{REFERENCE_TASK} {name}, seed {seed}",
                    full_data_reference,
                    (X, y, name, solver_params, seed, test_fraction),
                )
            )
        for s in strategies:
            tasks.append(
                (
                    f"{s} ({solvers[s]}), seed {seed}",
                    _run_strategy,
                    (
                        X,
                        y,
                        s,
                        solvers[s],
                        solver_params,
                        strategy_params.get(s, {}),
                        int(budget),
                        seed,
                        int(initial),
                        float(test_fraction),
                        cold_start,
                        setup,
                        None if known is None else known[seed][0],
                    ),
                )
            )
    config = dict(
        strategies=strategies,
        solvers=solvers,
        solver_params=solver_params,
        budget=int(budget),
        seeds=seeds,
        initial=int(initial),
        test_fraction=float(test_fraction),
        cold_start=cold_start,
    )
    if known is not None:  # which items were priors: dataset rows per seed (the same for every strategy)
        config["prior"] = f"{prior[0]},{prior[1]}" if prior is not None else "items"
        config["priors"] = {seed: [int(r) for r in known[seed][1]] for seed in seeds}
    return _Plan(y=y, tasks=tasks, strategies=strategies, solvers=solvers, seeds=seeds, config=config, setup=setup)


def _priors_per_seed(
    y: np.ndarray, seeds: list[int], test_fraction: float, prior, prior_items, prior_names
) -> dict[int, tuple[np.ndarray, np.ndarray]] | None:
    """seed -> (positions in the seed's pool, dataset rows) of its priors, checked; None without priors."""
    if prior is None and prior_items is None:
        return None
    if prior is not None and prior_items is not None:
        raise prior_knowledge.PriorError("give prior (counts drawn per seed) or prior_items (given items), not both")
    if isinstance(prior, str):
        prior = prior_knowledge.parse_counts(prior)
    rows = names = None
    if prior is None:
        rows = prior_knowledge.check_rows(list(prior_items), len(y))
        names = None if prior_names is None else [str(n) for n in prior_names]
        if names is not None and len(names) != len(rows):
            raise prior_knowledge.PriorError(f"prior_names has {len(names)} names for {len(rows)} prior items")
    else:
        if (
            len(prior) != 2
            or any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0 for v in prior)
            or sum(prior) == 0
        ):
            raise prior_knowledge.PriorError(
                f"prior must be (known positives, known negatives), whole numbers >= 0 and not both 0, got {prior!r}"
            )
    out = {}
    for seed in seeds:
        train, _ = _split_rows(y, seed, test_fraction)
        if rows is None:
            positions = prior_knowledge.draw(y[train], int(prior[0]), int(prior[1]), seed)
        else:
            positions = prior_knowledge.positions_in_pool(rows, train, len(y), seed, names)
        out[seed] = (positions, train[positions])
    return out


def _execute(
    tasks: list[tuple[str, Callable, tuple]],
    n_jobs: int | None,
    scheduler: str | None,
    progress: Callable[[int, int, str], None] | None,
    label_progress: Callable[[int, int, str, int, int], None] | None,
) -> list[Any]:
    """The result of every task, in the tasks' order, wherever they ran."""
    if scheduler is not None:
        return run_on_dask(tasks, scheduler, n_jobs, progress)
    if n_jobs is not None and int(n_jobs) > 1:
        with cf.ProcessPoolExecutor(max_workers=int(n_jobs)) as pool:
            futures = {pool.submit(fn, *args): (k, desc) for k, (desc, fn, args) in enumerate(tasks)}
            try:
                return collect_in_order(cf.as_completed(futures), futures, progress)
            except BaseException:
                pool.shutdown(wait=True, cancel_futures=True)  # a cancel or a failure: start no further run
                raise
    results: list[Any] = [None] * len(tasks)
    for k, (desc, fn, args) in enumerate(tasks):  # (k runs done before this one)
        if label_progress is not None:  # (a run's labels, or the items a reference learns: both take on_step)

            def on_step(steps: int, of: int, _done=k, _desc=desc) -> None:
                label_progress(_done, len(tasks), _desc, steps, of)

            results[k] = fn(*args, on_step=on_step)
        else:
            results[k] = fn(*args)
        if progress:
            progress(k + 1, len(tasks), desc)
    return results


def run_comparison(
    X,
    y,
    *,
    strategies: Iterable[str] | str,
    solver: str | dict[str, str] | None = None,
    solver_params: dict | None = None,
    budget: int,
    seeds: int | Iterable[int],
    initial: int = 10,
    test_fraction: float = 0.3,
    n_jobs: int = 1,
    progress: Callable[[int, int, str], None] | None = None,
    label_progress: Callable[[int, int, str, int, int], None] | None = None,
    strategy_params: dict[str, dict] | None = None,
    cold_start: str = DEFAULT_COLD_START,
    stopping: str | list | None = None,
    target_recall: float = stop_rules.DEFAULT_TARGET_RECALL,
    confidence: float = stop_rules.DEFAULT_CONFIDENCE,
    baseline: bool = False,
    scheduler: str | None = None,
    prior: tuple[int, int] | str | None = None,
    prior_items: Iterable[int] | None = None,
    prior_names: Iterable[str] | None = None,
) -> ComparisonResult:
    """Run query strategies side by side on the same seeds.

    Parameters
    ----------
    X : (n, d) features; y : binary labels (+1/-1, 1/0 or booleans), the oracle.
    strategies : names (list or comma-separated string): the runs are these and no other (with
        ``random`` among them, every other one's wins/ties/losses against it, seed by seed).
    solver : ``None`` (each strategy's default solver), one solver name for
        all, or a dict strategy -> solver.
    solver_params : solver keyword arguments (kernel, C, gamma, ...).
    budget : labels per run, the initial ones included (capped at the pool size).
    seeds : a count K (seeds 0..K-1) or a list of seeds; each seed fixes the
        split, the initial labels and every random choice of its runs.
    initial : labels chosen by the cold-start rule (random) before the
        strategy takes over; the strategy also waits until both classes are labelled.
    test_fraction : share of the data held out for evaluation (stratified);
        0 keeps every item in the pool (no AUC then, recall measures only).
    n_jobs : processes (``concurrent.futures.ProcessPoolExecutor``); 1 runs in-process.
        With ``scheduler="local"``: the local cluster's workers (default: one per core).
    progress : called as ``progress(done, total, description)`` after each run.
    label_progress : called as ``label_progress(done, total, description, labels, budget)``
        after every label of a heuristic's run, and as ``(done, total, description, items,
        of)`` after every training item a full-data reference learns (in-process runs only,
        ``n_jobs=1`` and no scheduler): progress within a run.  An exception raised by either callback stops the
        comparison there (a Cancel): nothing is returned and no run goes on in the background
        (on a Dask cluster the runs not yet done are cancelled; one already under way on a
        worker finishes there and its result is dropped).
    strategy_params : optional dict strategy -> keyword arguments.
    baseline : add ``random`` when it is not listed (off by default: a comparison runs what it is given).
    stopping : stopping rules to run beside each strategy (``core.stopping``:
        e.g. ``"statistical,knee,margin,stability,consecutive:50"``), with the
        statistical rule's ``target_recall`` and ``confidence``.
    scheduler : run on Dask distributed, one task per run: ``"local"`` starts a
        ``LocalCluster`` of processes on this machine (closed afterwards), any other string is
        a scheduler address (``tcp://host:8786``); its workers need MarginLab and its
        requirements.  ``None`` (the default) reads ``$MARGINLAB_DASK_SCHEDULER``; an explicit
        value wins over it, and ``""`` or ``"none"`` runs here.  The results are the same as
        in this process (the timing columns aside).  An unreachable scheduler raises
        :class:`SchedulerError` after ``core.dask_runs.SCHEDULER_TIMEOUT`` (10) seconds.  With
        ``"local"`` the program that calls this needs the ``if __name__ == "__main__":`` guard
        (the workers are started as new Python processes).
    prior : ``(P, N)`` or ``"P,N"``: P known positives and N known negatives drawn per seed from the true
        labels of the seed's pool (ASReview's ``--n-prior-included`` / ``--n-prior-excluded``), the same
        items for every strategy of the seed, learned before the first question (``core.priors``).
    prior_items : instead, the dataset rows of the known items (the same for every seed; an item held
        out for evaluation is refused: use ``test_fraction=0``); ``prior_names`` names them in messages.
        With priors, ``config["priors"]`` holds each seed's prior rows, the rows' ``prior`` column marks
        them, and recall is counted as ASReview counts it: without the priors on either side.  The priors
        count towards ``budget`` and ``initial`` (pass ``initial=0`` for no random labels after them).
    """
    plan = _plan(
        X,
        y,
        strategies=strategies,
        solver=solver,
        solver_params=solver_params,
        budget=budget,
        seeds=seeds,
        initial=initial,
        test_fraction=test_fraction,
        strategy_params=strategy_params,
        cold_start=cold_start,
        stopping=stopping,
        target_recall=target_recall,
        confidence=confidence,
        baseline=baseline,
        prior=prior,
        prior_items=prior_items,
        prior_names=prior_names,
    )
    return plan.result(_execute(plan.tasks, n_jobs, resolve_scheduler(scheduler), progress, label_progress))


def run_study(
    datasets: Mapping[str, tuple[Any, Any]],
    *,
    n_jobs: int = 1,
    progress: Callable[[int, int, str], None] | None = None,
    label_progress: Callable[[int, int, str, int, int], None] | None = None,
    scheduler: str | None = None,
    dataset_options: Mapping[str, dict] | None = None,
    **options,
) -> dict[str, ComparisonResult]:
    """:func:`run_comparison` on several datasets (name -> (X, y)) with the same options
    (``dataset_options``: name -> options that replace some of them for that dataset, e.g. its kernel).

    The runs of all datasets go to the same place (this process, ``n_jobs`` processes or one Dask
    scheduler) together; progress counts them all, and with more than one dataset each description
    starts with the dataset's name.  Returns name -> result, each the same as
    ``run_comparison(X, y, **options)`` (see :func:`study_table` for one table of them all)."""
    if not datasets:
        raise ValueError("give at least one dataset")
    dataset_options = dataset_options or {}
    plans = {name: _plan(X, y, **{**options, **dataset_options.get(name, {})}) for name, (X, y) in datasets.items()}
    tasks: list[tuple[str, Callable, tuple]] = []
    for name, plan in plans.items():
        prefix = f"{name}: " if len(plans) > 1 else ""
        tasks.extend((prefix + desc, fn, args) for desc, fn, args in plan.tasks)
    results = _execute(tasks, n_jobs, resolve_scheduler(scheduler), progress, label_progress)
    out, start = {}, 0
    for name, plan in plans.items():
        out[name] = plan.result(results[start : start + len(plan.tasks)])
        start += len(plan.tasks)
    return out


def study_table(results: Mapping[str, ComparisonResult], table: str = "rows") -> pd.DataFrame:
    """One of the results' tables (``rows``, ``runs``, ``summary``, ``stops``, ...) of every dataset of
    :func:`run_study`, one after another, with the dataset's name in a first column ``dataset``."""
    frames = [getattr(result, table).assign(dataset=name) for name, result in results.items()]
    frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["dataset"])
    return frame[["dataset", *[c for c in frame.columns if c != "dataset"]]]


def _pool_counts(y: np.ndarray, seed: int, test_fraction: float) -> tuple[int, int]:
    """(items, positives) in the pool of a seed's split (as ``_split`` draws it)."""
    train, _ = stratified_split(y, test_fraction, np.random.default_rng([seed, 0xE7A1]))
    return int(len(train)), int(np.sum(y[train] > 0))


def run_table(
    rows: pd.DataFrame, references: pd.DataFrame, budget: int, pools: dict[int, tuple[int, int]] | None = None
) -> pd.DataFrame:
    """One row per (strategy, seed): learning-curve areas and labels to reach 95% / 99%.

    A run that stopped before the budget (pool exhausted, or ramp-region found
    nothing in its ramp region) keeps its last model: its curve is extended
    flat to the budget, so all areas cover the same label axis.  Without a
    full-data reference (no evaluation set) the AUC measures are NaN / None.
    With ``pools`` (seed -> (items, positives) of its pool): the labels needed
    to find 50% / 80% / 95% of the positives and WSS@95 (None when not reached).
    """
    ref = {(r.solver, int(r.seed)): float(r.auc) for r in references.itertuples()}
    pools = pools or {}
    out = []
    for (strategy, seed), g in rows.groupby(["strategy", "seed"], sort=False):
        g = g.sort_values("n_labels")
        n = g["n_labels"].to_numpy(dtype=float)
        auc = g["auc"].to_numpy(dtype=float)
        end = min(budget, int(n[-1]) if len(n) else 0)
        if len(n) and n[-1] < budget:
            n, auc, end = np.append(n, budget), np.append(auc, auc[-1]), budget
        solver = g["solver"].iloc[0]
        r = ref.get((solver, int(seed)), float("nan"))
        usable = np.isfinite(r) and r != 0.5
        record = {
            "strategy": strategy,
            "solver": solver,
            "seed": int(seed),
            "n_labels": int(g["n_labels"].iloc[-1]),
            "budget": end,
            "reference_auc": r,
            "final_auc": float(auc[-1]),
            "final_accuracy": float(g["accuracy"].iloc[-1]),
            "final_n_sv": int(g["n_sv"].iloc[-1]),
            "alc": learning_curve_area(n, auc, reference=r) if usable else float("nan"),
            "alc_log2": learning_curve_area(n, auc, reference=r, log2=True) if usable else float("nan"),
            "labels_95": labels_to_reach(n, auc, 0.95 * r) if usable else None,
            "labels_99": labels_to_reach(n, auc, 0.99 * r) if usable else None,
            "labels_asked": int(g["n_labels"].iloc[-1]),
            "items_seen": int(g["seen"].iloc[-1]),
        }
        if int(seed) in pools:
            n_items, n_pos = pools[int(seed)]
            labels = g["label"].to_numpy()
            if "prior" in g and g["prior"].astype(bool).any():  # counted as ASReview counts them (core.priors)
                known = g["prior"].astype(bool).to_numpy()
                n_items, n_pos = n_items - int(known.sum()), n_pos - int(np.sum(labels[known] > 0))
                labels = labels[~known]
            record.update(pool_size=n_items, positives_total=n_pos)
            for level in RECALL_LEVELS:
                record[f"labels_recall_{round(100 * level)}"] = labels_to_recall(labels, n_pos, level)
            record["wss_95"] = work_saved_over_sampling(record["labels_recall_95"], n_items, 0.95)
        out.append(record)
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
    base = runs[runs["strategy"] == BASELINE].set_index("seed")["alc"] if len(runs) else pd.Series(dtype=float)
    out = []
    for s in strategies:
        r = runs[runs["strategy"] == s]
        st = rows[rows["strategy"] == s]
        if r.empty:
            continue
        l95, n95 = _mean_reached(r["labels_95"])
        l99, n99 = _mean_reached(r["labels_99"])
        w = t = lo = 0
        compared = False
        for seed, a in zip(r["seed"], r["alc"], strict=True):
            if s == BASELINE or seed not in base.index or not np.isfinite(a - base[seed]):
                continue  # (no area without an evaluation set)
            compared = True
            d = a - base[seed]
            if d > TIE_TOLERANCE:
                w += 1
            elif d < -TIE_TOLERANCE:
                lo += 1
            else:
                t += 1
        recall_levels = {}
        for level in RECALL_LEVELS:
            column = f"labels_recall_{round(100 * level)}"
            if column in r:
                value, reached = _mean_reached(r[column])
                recall_levels[column], recall_levels[f"reached_recall_{round(100 * level)}"] = value, reached
        if "wss_95" in r:
            recall_levels["wss_95"] = _mean_reached(r["wss_95"])[0]
        upd = st["update_ms"].to_numpy(dtype=float)
        qry = st["query_ms"].to_numpy(dtype=float)
        qry = qry[np.isfinite(qry)]
        out.append(
            {
                "strategy": s,
                "solver": r["solver"].iloc[0],
                "n_seeds": len(r),
                "alc_mean": float(r["alc"].mean()),
                "alc_std": float(r["alc"].std(ddof=1)) if len(r) > 1 else 0.0,
                "alc_log2_mean": float(r["alc_log2"].mean()),
                "alc_log2_std": float(r["alc_log2"].std(ddof=1)) if len(r) > 1 else 0.0,
                "labels_95": l95,
                "reached_95": n95,
                "labels_99": l99,
                "reached_99": n99,
                "final_auc": float(r["final_auc"].mean()),
                "reference_auc": float(r["reference_auc"].mean()),
                "final_n_sv": float(r["final_n_sv"].mean()),
                "labels_asked": float(r["labels_asked"].mean()),
                "items_seen": float(r["items_seen"].mean()),
                "update_ms_median": float(np.median(upd)) if len(upd) else float("nan"),
                "update_ms_p95": float(np.percentile(upd, 95)) if len(upd) else float("nan"),
                "query_ms_median": float(np.median(qry)) if len(qry) else float("nan"),
                "query_ms_p95": float(np.percentile(qry, 95)) if len(qry) else float("nan"),
                "wins": None if s == BASELINE or not compared else w,
                "ties": None if s == BASELINE or not compared else t,
                "losses": None if s == BASELINE or not compared else lo,
                **recall_levels,
            }
        )
    df = pd.DataFrame(out)
    for c in ("wins", "ties", "losses"):  # whole numbers, None for the baseline itself
        df[c] = pd.Series([d[c] for d in out], dtype=object)
    return df


def format_summary(summary: pd.DataFrame) -> str:
    """A plain-text table of the summary (what ``compare`` prints)."""
    head = (
        f"{'strategy':<18} {'solver':<12} {'ALC':>13} {'ALC log2':>13} {'to 95%':>10} {'to 99%':>10} "
        f"{'AUC':>6} {'SV':>7} {'upd ms p50/p95':>15} {'qry ms p50/p95':>15}"
    )
    against_random = BASELINE in set(summary["strategy"]) if len(summary) else False
    if against_random:  # (wins/ties/losses need the random runs)
        head += f" {'vs random W/T/L':>16}"
    recall = "labels_recall_50" in summary
    if recall:
        head += f" {'recall 50%':>11} {'recall 80%':>11} {'recall 95%':>11} {'WSS@95':>7}"
    lines = [head, "-" * len(head)]
    for r in summary.itertuples():

        def reach(v, k, n=r.n_seeds):
            return "never" if k == 0 else f"{v:.0f} ({k}/{n})"

        def number(v, fmt):
            return "n/a" if v is None or not np.isfinite(v) else format(v, fmt)

        if r.wins is None or (isinstance(r.wins, float) and np.isnan(r.wins)):
            wtl = "baseline" if r.strategy == BASELINE else "n/a"
        else:
            wtl = f"{int(r.wins)}/{int(r.ties)}/{int(r.losses)}"
        alc = "n/a" if not np.isfinite(r.alc_mean) else f"{r.alc_mean:.3f}±{r.alc_std:.3f}"
        alc2 = "n/a" if not np.isfinite(r.alc_log2_mean) else f"{r.alc_log2_mean:.3f}±{r.alc_log2_std:.3f}"
        line = (
            f"{r.strategy:<18} {r.solver:<12} {alc:>13} {alc2:>13} {reach(r.labels_95, r.reached_95):>10} "
            f"{reach(r.labels_99, r.reached_99):>10} {number(r.final_auc, '.3f'):>6} {r.final_n_sv:>7.1f} "
            f"{r.update_ms_median:>7.2f}/{r.update_ms_p95:<7.2f} "
            f"{r.query_ms_median:>7.2f}/{r.query_ms_p95:<7.2f}" + (f" {wtl:>16}" if against_random else "")
        )
        if recall:
            line += (
                f" {reach(r.labels_recall_50, r.reached_recall_50):>11} "
                f"{reach(r.labels_recall_80, r.reached_recall_80):>11} "
                f"{reach(r.labels_recall_95, r.reached_recall_95):>11} {number(r.wss_95, '.3f'):>7}"
            )
        lines.append(line)
    lines.append(
        "ALC: area under the test-AUC learning curve, normalised (0 = chance, 1 = full-data AUC "
        "from the first label); mean ± std over seeds."
    )
    if recall:
        lines.append(
            "recall X%: labels (initial ones included) until X% of the pool's positives were labelled, "
            "mean over the seeds that got there; WSS@95 = (pool - labels to 95%) / pool - 0.05."
        )
    return "\n".join(lines)


def summarise_stops(
    stops: pd.DataFrame,
    pools: dict[int, tuple[int, int]],
    target_recall: float,
    strategies: list[str],
    rules: list[str],
) -> pd.DataFrame:
    """One row per (strategy, rule): how often it stopped within the budget, mean labels and recall at stop,
    how many stops reached the target recall, and the work saved against labelling the whole pool
    (1 - labels at stop / pool items, mean over the stops)."""
    out = []
    for strategy in strategies:
        for rule in rules:
            part = stops[(stops["strategy"] == strategy) & (stops["rule"] == rule)]
            if part.empty:
                continue
            hit = part.dropna(subset=["n_labels_at_stop"])
            labels = hit["n_labels_at_stop"].to_numpy(dtype=float)
            recall = hit["recall_at_stop"].to_numpy(dtype=float)
            pool = np.array([pools[int(seed)][0] for seed in hit["seed"]], dtype=float)
            reached = int(np.sum(recall >= target_recall - 1e-12))
            out.append(
                {
                    "strategy": strategy,
                    "rule": rule,
                    "n_seeds": int(len(part)),
                    "stopped": int(len(hit)),
                    "labels_at_stop": float(labels.mean()) if len(hit) else float("nan"),
                    "recall_at_stop": float(recall.mean()) if len(hit) else float("nan"),
                    "min_recall_at_stop": float(recall.min()) if len(hit) else float("nan"),
                    "reached_target": reached,
                    "share_reached_target": reached / len(part),
                    "work_saved": float(np.mean(1.0 - labels / pool)) if len(hit) else float("nan"),
                }
            )
    return pd.DataFrame(out)


def format_stop_summary(summary: pd.DataFrame, target_recall: float | None = None) -> str:
    """A plain-text table of the per-rule summary (what ``compare --stopping`` prints)."""
    target = "target" if target_recall is None else f"{100 * target_recall:g}%"
    head = (
        f"{'strategy':<18} {'rule':<16} {'stopped':>8} {'labels at stop':>15} {'recall at stop':>15} "
        f"{'min recall':>10} {'reached ' + target:>14} {'work saved':>11}"
    )
    lines = [head, "-" * len(head)]
    for r in summary.itertuples():

        def number(v, fmt):
            return "–" if not np.isfinite(v) else format(v, fmt)

        lines.append(
            f"{r.strategy:<18} {r.rule:<16} {f'{r.stopped}/{r.n_seeds}':>8} "
            f"{number(r.labels_at_stop, '.1f'):>15} {number(r.recall_at_stop, '.3f'):>15} "
            f"{number(r.min_recall_at_stop, '.3f'):>10} {f'{r.reached_target}/{r.n_seeds}':>14} "
            f"{number(r.work_saved, '.3f'):>11}"
        )
    lines.append(
        "stopped: seeds where the rule stopped within the budget; labels and recall at stop: mean over "
        "those (random draws are labels); reached: seeds that stopped with recall at or above the target; "
        "work saved: 1 - labels at stop / pool items, mean over the stops."
    )
    return "\n".join(lines)


__all__ = [
    "BASELINE",
    "RECALL_LEVELS",
    "REFERENCE_COLUMNS",
    "REFERENCE_MAX_ITEMS",
    "REFERENCE_TASK",
    "SCHEDULER_ENV",
    "STOP_COLUMNS",
    "ComparisonResult",
    "EXTRA_COLUMNS",
    "ROW_COLUMNS",
    "SchedulerError",
    "StoppingSetup",
    "TIE_TOLERANCE",
    "format_stop_summary",
    "format_summary",
    "full_data_reference",
    "reference_items",
    "reference_note",
    "resolve_scheduler",
    "run_comparison",
    "run_study",
    "run_table",
    "study_table",
    "summarise",
    "summarise_stops",
]
