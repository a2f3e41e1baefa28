"""Comparisons of heuristics with the true labels as the oracle, stored and reloaded."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from app.services.accounts import Accounts, Identity
from app.services.common import (
    COMPARE_STRATEGIES,
    DEFAULT_C,
    DEFAULT_GAMMA,
    ServiceError,
    gamma_value,
    model_choice,
    numeric_columns,
    penalty_value,
    scale_features,
    whole_number,
)
from app.services.datasets import Datasets
from app.services.errors import at_the_boundary, service_boundary
from app.services.sessions import Sessions
from app.services.vocabulary import heuristic_words, rule_words, solver_words
from core.dask_runs import resolve_scheduler
from storage import repository as repo

# What one comparison started from the app may cost. It runs inside a request of a server
# others share: every seed of every heuristic labels up to the budget, keeping the training items'
# scores current after each label, and every seed also trains the full-data reference (on at most
# core.experiment.REFERENCE_MAX_ITEMS of the training items). Measured on a 2-core machine: a
# 50,000-item dataset (two Gaussians, 20 features; 35,000 training items), 3 heuristics × 3 seeds
# × 100 labels and the random baseline: 28 s; the bundled digits at the label limit (4 heuristics
# × 10 seeds × 500 labels): 10 s. Larger ones: ``python -m core compare``.
#: labels per run (the initial ones included)
COMPARE_MAX_BUDGET = 500
#: seeds per heuristic
COMPARE_MAX_SEEDS = 10
#: training items (the dataset less its evaluation share)
COMPARE_MAX_TRAINING_ITEMS = 50_000
#: heuristics × seeds × budget: the labels given in all
COMPARE_MAX_LABELS = 20_000
#: heuristics × seeds × budget × training items
COMPARE_MAX_WORK = 50_000_000

LARGER = "run larger comparisons with `python -m core compare`"


def _clock(seconds: float) -> str:
    """0:42, 12:05 or 1:02:03."""
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


def with_decimals(frame: pd.DataFrame, decimals: dict[str, int]) -> pd.DataFrame:
    """``frame`` with these numeric columns written out to so many decimals, and "–" where a value is
    missing (a stopping rule that never stopped, a recall never reached): a table never shows None or NaN."""
    out = frame.copy()
    for column, places in decimals.items():
        if column in out:
            out[column] = [
                "–" if value is None or pd.isna(value) else f"{float(value):.{places}f}" for value in out[column]
            ]
    return out


def runs_said(n_strategies: int, n_references: int, n_seeds: int) -> str:
    """What the runs of a comparison are, e.g. "3 heuristics and 1 full-data reference, each × 10 seeds":
    the count of runs is then no surprise (40 for 3 heuristics × 10 seeds)."""
    parts = [f"{n_strategies} heuristic{'s' if n_strategies != 1 else ''}"]
    if n_references:
        parts.append(f"{n_references} full-data reference{'s' if n_references != 1 else ''}")
    return f"{' and '.join(parts)}, each × {n_seeds} seed{'s' if n_seeds != 1 else ''}"


@service_boundary
class Comparisons:
    """Heuristics side by side: ``MarginLab.comparisons`` (``comparisons(dataset_id)`` lists the stored
    ones); the labelling sessions of ``sessions`` are drawn beside them."""

    def __init__(self, engine, accounts: Accounts, datasets: Datasets, sessions: Sessions):
        self.engine, self.accounts, self.datasets, self.sessions = engine, accounts, datasets, sessions

    @staticmethod
    def comparison_scheduler() -> str | None:
        """Where comparisons run: ``None`` (in this server's process), ``"local"`` (a Dask cluster
        started on this machine for each comparison) or the address of a Dask scheduler, from
        ``$MARGINLAB_DASK_SCHEDULER``."""
        return resolve_scheduler(None)

    @staticmethod
    def _check_comparison(
        n_items: int, n_strategies: int, budget: int, seeds: int, test_fraction: float, n_classes: int = 1
    ) -> None:
        """Refuse, naming the limit, a comparison this server should not run (see COMPARE_MAX_*); ``n_classes``:
        the models each label updates (one per class with several classes)."""
        if not 0.0 < test_fraction < 1.0:
            raise ServiceError(f"The evaluation share must be between 0 and 1, not {test_fraction!r}.")
        training = n_items - int(round(test_fraction * n_items))
        labels = n_strategies * seeds * budget
        work = labels * training * n_classes
        if training > COMPARE_MAX_TRAINING_ITEMS:
            raise ServiceError(
                f"A comparison here may use at most {COMPARE_MAX_TRAINING_ITEMS:,} training items; "
                f"this dataset has {training:,} after the evaluation share. {LARGER.capitalize()}."
            )
        if labels > COMPARE_MAX_LABELS:
            raise ServiceError(
                f"heuristics × seeds × budget = {n_strategies} × {seeds} × {budget} = {labels:,} labels is over the "
                f"{COMPARE_MAX_LABELS:,} a comparison here may give: lower one of them, or {LARGER}."
            )
        if work > COMPARE_MAX_WORK:
            raise ServiceError(
                f"heuristics × seeds × budget × training items{' × classes' if n_classes > 1 else ''} = "
                f"{n_strategies} × {seeds} × {budget} × {training:,}{f' × {n_classes}' if n_classes > 1 else ''} "
                f"= {work:,} is over the {COMPARE_MAX_WORK:,} a comparison here may use: lower "
                f"one of them, or {LARGER}."
            )

    def _run_sizes(
        self, n_items: int, n_strategies: int, budget, seeds, initial, test_fraction, n_classes: int = 1
    ) -> tuple[int, int, int]:
        """(budget, seeds, initial) checked as whole numbers within the limits, and the comparison's size."""
        budget = whole_number(
            budget, f"The budget (at most {COMPARE_MAX_BUDGET} labels per run)", low=2, high=COMPARE_MAX_BUDGET
        )
        seeds = whole_number(
            seeds, f"The number of seeds (at most {COMPARE_MAX_SEEDS} seeds)", low=1, high=COMPARE_MAX_SEEDS
        )
        initial = whole_number(initial, "The initial labels", high=budget)
        self._check_comparison(n_items, n_strategies, budget, seeds, float(test_fraction), n_classes)
        return budget, seeds, initial

    @at_the_boundary(also=(ValueError,))  # (core refusing the settings on this data: said as it is)
    def run_comparison(
        self,
        dataset_id: int,
        *,
        strategies: Sequence[str],
        solver: str | None = None,
        budget: int = 60,
        seeds: int = 3,
        initial: int = 10,
        C: float = DEFAULT_C,
        gamma: float | str = DEFAULT_GAMMA,
        test_fraction: float = 0.3,
        progress: Callable[[float, str], None] | None = None,
        stopping: Sequence[str] | None = None,
        target_recall: float = 0.95,
        confidence: float = 0.95,
        model: str | None = None,
        by: Identity | None = None,
    ) -> int:
        """Run a comparison with the true labels as the oracle; store it and return its id.

        ``progress(fraction, description)`` is called after each run and, within a heuristic's
        run, after its labels (at most about four times a second): the description says which run,
        how many labels of it are done, the time elapsed and an estimate of the time left.  An
        exception raised by ``progress`` (Streamlit's, when the page's Cancel is clicked or the tab
        is closed) stops the comparison there; nothing is stored.  ``stopping``: rules
        (``core.stopping``) run beside each heuristic; their stops are stored with the summary.
        With ``$MARGINLAB_DASK_SCHEDULER`` set (:meth:`comparison_scheduler`) the runs go to that
        Dask scheduler, and progress is told after each run only.  ``model="review"``: every heuristic
        runs with the review model (``core.presets``; C and gamma are not used), as in a session.
        ``by``: the signed-in person running it; nothing runs, or is stored, once their sign-in has ended.
        """
        from core.experiment import SchedulerError, run_comparison

        self.accounts.acting(by)
        dataset = self.datasets.dataset(dataset_id)
        if not dataset.has_true_labels:
            raise ServiceError(f"Dataset '{dataset.name}' has no true labels; a comparison needs them.")
        strategies = [s for s in strategies]
        unknown = [s for s in strategies if s not in COMPARE_STRATEGIES]
        if unknown or not strategies:
            raise ServiceError("Choose at least one heuristic among " + ", ".join(COMPARE_STRATEGIES) + ".")
        C, gamma = penalty_value(C), gamma_value(gamma)
        solver, solver_params = model_choice(model, solver or None, dataset.meta, C, gamma)
        budget, seeds, initial = self._run_sizes(
            dataset.n_items, len(strategies), budget, seeds, initial, test_fraction
        )
        X, y, _, _ = repo.load_dataset_arrays(self.engine, dataset_id)
        X = scale_features(X, dataset.meta.get("scaling", "none"), numeric_columns(dataset.meta))

        report = _ProgressReport(progress, len(strategies), seeds)

        stop_options = {}
        if stopping:
            from core.stopping import check_target, parse_rules

            try:
                stop_options = dict(
                    stopping=[str(r) for r in parse_rules(list(stopping))],
                    target_recall=check_target(target_recall, confidence)[0],
                    confidence=confidence,
                )
            except ValueError as error:
                raise ServiceError(f"{str(error)[:1].upper()}{str(error)[1:]}.") from None
        scheduler = self.comparison_scheduler()
        try:
            result = run_comparison(
                X,
                np.asarray(y, dtype=float),
                strategies=strategies,
                solver=solver,
                solver_params=solver_params,
                budget=budget,
                seeds=seeds,
                initial=initial,
                test_fraction=float(test_fraction),
                progress=report,
                label_progress=report,
                scheduler=scheduler or "none",
                **stop_options,
            )
        except SchedulerError as error:
            raise ServiceError(f"The comparison could not run on Dask: {error}.") from None
        config = dict(
            result.config, dataset=dataset.name, dataset_id=dataset_id, scaling=dataset.meta.get("scaling", "none")
        )
        summary = {
            "summary": result.summary.to_dict(orient="records"),
            "runs": result.runs.to_dict(orient="records"),
            "references": result.references.to_dict(orient="records"),
            "stop_summary": result.stop_summary.to_dict(orient="records"),
            "stops": result.stops.astype(object).where(result.stops.notna(), None).to_dict(orient="records"),
        }
        self.accounts.acting(by)  # (it may have run for minutes)
        return repo.save_comparison(self.engine, dataset_id, config, result.rows, summary)

    @at_the_boundary(also=(ValueError,))  # (core refusing the settings on this data: said as it is)
    def run_class_comparison(
        self,
        dataset_id: int,
        *,
        strategies: Sequence[str],
        solver: str | None = None,
        budget: int = 60,
        seeds: int = 3,
        initial: int = 10,
        test_fraction: float = 0.3,
        multi_label: bool = False,
        separator: str | None = None,
        target: str | None = None,
        C: float = DEFAULT_C,
        gamma: float | str = DEFAULT_GAMMA,
        progress: Callable[[float, str], None] | None = None,
        by: Identity | None = None,
    ) -> int:
        """Run a comparison with several classes, the dataset's classes as the oracle (``app.services.
        class_comparisons``): the K-class heuristics (``core.class_experiment.run_class_comparison``) or, with
        ``multi_label``, the multi-label ones on each item's class names split on ``separator`` (None: ``;``)
        (``core.multi_label_experiment.run_multi_label_comparison``); store it and return its id.  ``solver``:
        one for every heuristic (None: the K-class default); ``target``: the class ``target-class`` looks for
        (None: the first).  ``progress`` and Cancel as :meth:`run_comparison` (within a run only for one class
        per item: the multi-label runs tell it after each run)."""
        from app.services import class_comparisons as kc
        from core.class_experiment import run_class_comparison
        from core.multi_label_experiment import run_multi_label_comparison

        self.accounts.acting(by)
        dataset = self.datasets.dataset(dataset_id)
        names, y = kc.dataset_classes(dataset)
        X, y_true, _, _ = repo.load_dataset_arrays(self.engine, dataset_id)
        if not len(y):  # (a yes / no dataset: its two classes)
            y = (np.asarray(y_true) > 0).astype(np.int64)
        kc.check_class_values(dataset.name, names, y)
        if multi_label:  # (each item's set of classes: its cell split on the separator)
            separator = kc.SEPARATOR if separator is None else separator
            Y, names = kc.multi_label_sets(dataset.name, names, y, separator)
        chosen = kc.chosen_strategies(strategies, multi_label)
        solver, solver_params = model_choice(
            "standard", solver or kc.CLASS_SOLVER, dataset.meta, penalty_value(C), gamma_value(gamma)
        )
        budget, seeds, initial = self._run_sizes(
            dataset.n_items, len(chosen), budget, seeds, initial, test_fraction, len(names)
        )
        X = scale_features(X, dataset.meta.get("scaling", "none"), numeric_columns(dataset.meta))
        report = _ProgressReport(progress, len(chosen), seeds, words=kc.strategy_words)
        common: dict[str, Any] = dict(
            strategies=chosen,
            solver=solver,
            solver_params=solver_params,
            budget=budget,
            seeds=seeds,
            initial=initial,
            test_fraction=float(test_fraction),
            progress=report,
        )
        if multi_label:
            result = run_multi_label_comparison(X, Y, names, **common)
        else:
            if kc.TARGET_STRATEGY in chosen:
                target = names[0] if target is None else target
            result = run_class_comparison(X, y, names, target=target, label_progress=report, **common)
        config = dict(
            result.config,
            class_kind=kc.SEVERAL_CLASSES if multi_label else kc.ONE_CLASS,
            dataset=dataset.name,
            dataset_id=dataset_id,
            scaling=dataset.meta.get("scaling", "none"),
            **({"separator": separator} if multi_label else {}),
        )
        self.accounts.acting(by)  # (it may have run for minutes)
        return repo.save_comparison(self.engine, dataset_id, config, result.rows, kc.stored_parts(result))

    @staticmethod
    def summary_frame(comparison: repo.Comparison) -> pd.DataFrame:
        """The per-heuristic summary table of a stored comparison."""
        frame = pd.DataFrame(comparison.summary.get("summary", []))
        return frame

    @staticmethod
    def reference_note(comparison: repo.Comparison) -> str | None:
        """Says when the full-data reference of a stored comparison learned a subsample of the training
        items (``core.experiment.REFERENCE_MAX_ITEMS``), else None."""
        from core.experiment import reference_note

        return reference_note(comparison.summary.get("references", []))

    @staticmethod
    def stop_summary_frame(comparison: repo.Comparison) -> pd.DataFrame:
        """The per-rule summary of a stored comparison, with readable headers (empty without stopping rules)."""
        frame = pd.DataFrame(comparison.summary.get("stop_summary", []))
        if frame.empty:
            return frame
        target = comparison.config.get("target_recall", 0.95)
        out = pd.DataFrame(
            {
                "heuristic": frame["strategy"].map(run_words),
                "rule": frame["rule"].map(rule_words),
                "stopped": [f"{s}/{n}" for s, n in zip(frame["stopped"], frame["n_seeds"], strict=True)],
                "labels at stop": frame["labels_at_stop"],
                "recall at stop": frame["recall_at_stop"],
                "lowest recall at stop": frame["min_recall_at_stop"],
                f"recall ≥ {100 * target:g}%": [
                    f"{r}/{n}" for r, n in zip(frame["reached_target"], frame["n_seeds"], strict=True)
                ],
                "work saved": frame["work_saved"],
                "rule, for engineers": frame["rule"],
            }
        )  # (the code name, as the command line takes it)
        return out

    def __call__(self, dataset_id: int | None = None) -> list[repo.ComparisonInfo]:
        """The stored comparisons (of one dataset, or of all)."""
        return repo.list_comparisons(self.engine, dataset_id)

    def comparison(self, comparison_id: int) -> repo.Comparison:
        return repo.load_comparison(self.engine, comparison_id)

    def session_curves(self, dataset_id: int) -> pd.DataFrame:
        """Learning curves of the stored labelling sessions on a dataset (for the Compare overlay)."""
        frames = []
        for info in self.sessions(dataset_id=dataset_id):
            if info.n_labels < 2:
                continue
            run = self.sessions.open_session(info.id)
            if run.problem is not None:  # no model to draw (the Label page says why)
                continue
            history = run.history()
            if "auc" not in history or history["auc"].isna().all():
                continue
            frames.append(
                pd.DataFrame(
                    {
                        "session": f"session {info.id} ({info.annotator}, {info.strategy})",
                        "n_labels": history["n_labels"].to_numpy(),
                        "auc": history["auc"].to_numpy(),
                        "n_sv": history["n_sv"].to_numpy() if "n_sv" in history else np.nan,
                    }
                )
            )
        return (
            pd.concat(frames, ignore_index=True)
            if frames
            else pd.DataFrame(columns=["session", "n_labels", "auc", "n_sv"])
        )


def run_words(name: str) -> str:
    """A comparison's series in words: a heuristic ("Most uncertain first"), a replay's reference
    ("Most uncertain first (reference)"); what is neither stays as it is (a replayed session's order)."""
    base, reference, _ = str(name).partition(" (reference)")
    return heuristic_words(base) + (" (reference)" if reference else "")


def _task_words(description: str, words: Callable[[str], str] = heuristic_words) -> str:
    """A run's name in a comparison's progress line in words: "near-boundary (incremental), seed 1" ->
    "Most uncertain first (the exact model), seed 1"; "full-data incremental, seed 1" -> "every training item
    (the exact model), seed 1"."""
    from core.experiment import REFERENCE_TASK

    what, comma, seed = description.rpartition(", seed ")
    if not comma:
        return description
    if what.startswith(f"{REFERENCE_TASK} "):
        return f"every training item ({solver_words(what.removeprefix(f'{REFERENCE_TASK} '))}), seed {seed}"
    strategy, paren, solver = what.partition(" (")
    return (
        f"{words(strategy)} ({solver_words(solver.removesuffix(')'))}), seed {seed}"
        if paren
        else f"{words(what)}, seed {seed}"
    )


class _ProgressReport:
    """A comparison's ``progress`` and ``label_progress`` callback: which run, how far, time left.

    Within a run it tells the page a few times a second at most (a label takes milliseconds); the
    text names the run (a heuristic's, or the full-data reference's training items learned), the runs
    in all (per seed: the heuristics chosen and a reference per solver) and the time elapsed and left.
    """

    def __init__(
        self,
        progress: Callable[[float, str], None] | None,
        n_strategies: int,
        seeds: int,
        words: Callable[[str], str] = heuristic_words,
    ) -> None:
        from core.experiment import REFERENCE_TASK  # (core.experiment is loaded when a comparison runs)

        self.progress, self.n_strategies, self.seeds, self.words = progress, n_strategies, seeds, words
        self.reference_task = REFERENCE_TASK
        self.started = time.monotonic()
        self.last_shown = -math.inf

    def __call__(
        self, done: int, total: int, description: str, labels: int | None = None, run_budget: int | None = None
    ) -> None:
        if self.progress is None:
            return
        now = time.monotonic()
        if labels is None:
            within, text = 0.0, f"{done}/{total} runs done · {_task_words(description, self.words)}"
        else:
            if now - self.last_shown < 0.25 and labels < (run_budget or 0):
                return  # (a label takes milliseconds: the page is told a few times a second)
            within = labels / max(run_budget or 0, 1)
            if description.startswith(self.reference_task):  # (a reference: the training items it has learned)
                step = f"{labels:,}/{run_budget:,} training items learned"
            else:
                step = f"label {labels}/{run_budget}"
            text = f"run {done + 1}/{total}: {_task_words(description, self.words)} · {step}"
        self.last_shown = now
        fraction = min((done + within) / max(total, 1), 1.0)
        elapsed = now - self.started
        references = total // self.seeds - self.n_strategies  # per solver
        text += f" · runs: {runs_said(self.n_strategies, references, self.seeds)} · {_clock(elapsed)} elapsed"
        if 0.02 <= fraction < 1.0:
            text += f", about {_clock(elapsed / fraction * (1.0 - fraction))} left"
        self.progress(fraction, text)
