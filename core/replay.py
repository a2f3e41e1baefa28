"""Replay a labelled session under other heuristics (``python -m core replay``).

An analyst who labelled items by hand has no true-label column, yet may ask whether another heuristic
(or model) would have found the same positives with fewer labels.  A replay answers it with the
comparison's own simulation (``core.experiment.run_comparison``): the pool is the items that were
labelled (skips left out), the oracle is their final answers (corrections applied; for a team project
the settled answers, see :func:`project_items`), nothing is held out (``test_fraction=0``: recall
measures only), and every run labels the whole pool unless a budget is given.  The result is a
:class:`~core.experiment.ComparisonResult` with two more things:

- the heuristic that chose the items (the session's own, when known) runs as one of the heuristics,
  with the session's model: the **reference**.  Its curve under the replay, not the session's raw
  order, is what the others are fairly measured against;
- the session's own order is one more curve, ``SESSION_ORDER`` (one run: recall is the cumulative
  positives of the stored order; latency the session's own, when stored).

A replay with named classes or sets (:func:`run_class_replay`, :func:`run_multi_label_replay`) holds out a
part of the labelled items per seed; there the session's own order is one more run per seed: the model
learns the seed's pool in the order labelled (:class:`InOrder`, from the first label: no initial labels at
random) and is scored on the held-out part after each label, as the heuristics' runs are.

What a replay cannot tell (``CAVEAT``): its pool was chosen by the original heuristic, so it favours
heuristics that pick items like it, and says nothing of the positives among the items never labelled.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from core.experiment import EXTRA_COLUMNS, ROW_COLUMNS, ComparisonResult, run_comparison, run_table, summarise
from core.strategies import DEFAULT_COLD_START, STRATEGY_NAMES

#: the name of the session's own order among the heuristics of a replay
SESSION_ORDER = "session order"
#: what a replay can and cannot tell (printed with every replay, shown on the Compare page)
CAVEAT = (
    "What a replay can tell: its pool is the items the session labelled, chosen by the session's own "
    "heuristic, so it favours heuristics that pick items like it, and it knows nothing of the positives "
    "among the items never labelled. Compare the heuristics with the session's heuristic under the same "
    "replay (the reference), not with the session's own order."
)
# the seed the session order's one run is filed under (its order has none)
SESSION_ORDER_SEED = 0
POSITIVE_WORDS = ("1", "+1", "positive", "pos", "yes", "true", "relevant", "included")
NEGATIVE_WORDS = ("-1", "negative", "neg", "no", "false", "irrelevant", "excluded")
SKIP_WORDS = ("", "skip", "skipped")
KEY_COLUMNS = ("item_key", "key")
INDEX_COLUMNS = ("item_index", "index", "item")


class ReplayError(ValueError):
    """The labelled items cannot be replayed; the message says why."""


@dataclass
class LabelledItems:
    """What a replay replays: dataset rows in the order they were labelled and their final answers (+1/-1).

    ``strategy``, ``solver``, ``solver_params``: the heuristic that chose the items and the session's model,
    when known.  ``skipped``: skips left out; ``unsettled``: items of a team project whose answers differ
    and that nobody settled (their first answer stands).  ``update_ms`` / ``query_ms``: the session's own
    latency per label, when stored."""

    rows: np.ndarray
    labels: np.ndarray
    strategy: str | None = None
    solver: str | None = None
    solver_params: dict[str, Any] = field(default_factory=dict)
    source: str = "the labelled items"
    skipped: int = 0
    unsettled: int = 0
    update_ms: np.ndarray | None = None
    query_ms: np.ndarray | None = None
    strategy_params: dict[str, Any] = field(default_factory=dict)
    #: a session with named classes: their names, and ``labels`` the class of each item (0..K-1)
    classes: tuple[str, ...] = ()
    #: the labelled items of a team project (its members' answers), not of one session
    team: bool = False
    #: a multi-label session or project: ``labels`` is (items, K) of bool, each item's set of classes
    multi_label: bool = False

    def checked(self, n_items: int) -> tuple[np.ndarray, np.ndarray]:
        """(rows, labels) as arrays, or :class:`ReplayError` naming what is wrong."""
        rows, labels = np.asarray(self.rows), np.asarray(self.labels)
        if len(rows) != len(labels):
            raise ReplayError(f"{self.source}: {len(labels)} answers for {len(rows)} items")
        if rows.dtype.kind not in "iu" and len(rows):
            raise ReplayError(f"{self.source}: items must be item numbers")
        bad = [int(r) for r in rows if not 0 <= int(r) < n_items]
        if bad:
            raise ReplayError(f"{self.source}: item {bad[0]} does not exist: the data have items 0 to {n_items - 1}")
        values, counts = np.unique(rows, return_counts=True)
        if np.any(counts > 1):
            raise ReplayError(f"{self.source}: item {int(values[counts > 1][0])} is labelled twice")
        if not set(np.unique(labels).tolist()) <= {-1, 1}:
            raise ReplayError(
                f"{self.source}: every answer must be +1 or -1 (skips left out), got "
                f"{sorted(set(np.unique(labels).tolist()) - {-1, 1})[:3]}"
            )
        if not (np.any(labels > 0) and np.any(labels < 0)):
            raise ReplayError(
                f"{self.source}: a replay needs positive and negative answers; "
                f"all {len(labels)} are {'positive' if np.all(labels > 0) else 'negative'}"
            )
        return rows.astype(np.intp), labels.astype(int)


def final_class(answers: Iterable[Any], settled: Any, given: Callable[[Any], Any] | None = None) -> Any:
    """The class a team project with named classes learns for an item (its place among the classes): the
    class the owner settled on, else the first class a member answered; None while the item has no class
    answer (only skips).  ``answers``: the item's answers (``answer_class``, None for a skip) in label order;
    ``settled``: its settled class, if any.  ``given``: what an answer gave, when not its ``answer_class`` (a
    multi-label project's set of classes).  The project's model (``ClassProjectRun``) and its replay
    (:func:`project_items`) both read an item's class here."""
    read = given or (lambda a: a.answer_class)
    first = next((read(a) for a in answers if read(a) is not None), None)
    if first is None:
        return None
    return first if settled is None else settled


def settled_answers(settlements: dict[int, Any], *, classes: bool, multi_label: bool = False) -> dict[int, Any]:
    """item -> the owner's settled answer of a team project (``storage.teams.settlements``): the class
    settled on (``answer_class``) in a project with named classes, the set settled on (``answer_classes``, a
    tuple of places) in a multi-label one, else the yes / no ``value``."""
    if multi_label:
        return {item: tuple(s.answer_classes) for item, s in settlements.items() if s.answer_classes is not None}
    if classes:
        return {item: int(s.answer_class) for item, s in settlements.items() if s.answer_class is not None}
    return {item: int(s.value) for item, s in settlements.items()}


def session_items(
    events: Iterable[Any],
    *,
    strategy: str | None = None,
    solver: str | None = None,
    params: dict[str, Any] | None = None,
    source: str = "the session",
) -> LabelledItems:
    """A stored session's labelled items: ``events`` with ``item_index``, ``value`` (+1, -1, 0 for a skip: the
    answer as it stands, corrections applied), ``update_ms`` and ``query_ms``, in the order given (what
    ``storage.label_events`` returns); ``params``: the session's settings (``solver_params``,
    ``strategy_params``).  A session with named classes (``params["classes"]``): ``labels`` are the classes
    as they stand (``answer_class``, 0..K-1) and ``classes`` their names (``run_class_replay``); a multi-label
    one (``params["multi_label"]``): ``labels`` the sets as they stand (``answer_classes``), (items, K) of
    bool (``run_multi_label_replay``)."""
    params = dict(params or {})
    multi_label = params.get("multi_label") is True
    events = list(events)
    answered = [e for e in events if int(e.value) != 0]
    classes = tuple(str(c) for c in params.get("classes") or ())

    def timing(name):
        return np.array([np.nan if getattr(e, name) is None else float(getattr(e, name)) for e in answered])

    return LabelledItems(
        np.array([int(e.item_index) for e in answered], dtype=np.intp),
        _memberships([e.answer_classes for e in answered], len(classes))
        if multi_label
        else np.array([int(e.answer_class if classes else e.value) for e in answered], dtype=int),
        strategy=strategy,
        solver=solver,
        solver_params=dict(params.get("solver_params") or {}),
        source=source,
        skipped=len(events) - len(answered),
        update_ms=timing("update_ms"),
        query_ms=timing("query_ms"),
        strategy_params=dict(params.get("strategy_params") or {}),
        classes=classes,
        multi_label=multi_label,
    )


def _memberships(sets: Sequence[Iterable[int]], n_classes: int) -> np.ndarray:
    """(items, K) of bool: row i holds the classes (places) of ``sets[i]``."""
    Y = np.zeros((len(sets), n_classes), dtype=bool)
    for i, places in enumerate(sets):
        Y[i, list(places)] = True
    return Y


def session_features(X, scaling: str | None, feature_blocks: Sequence[dict] | None):
    """A stored dataset's features as its sessions see them: ``scaling`` (``standard`` or ``none``) on the
    numeric columns of ``feature_blocks`` (all columns of a dense matrix when there are no blocks)."""
    from core.features import scale_features

    numeric = (
        None
        if not feature_blocks
        else [j for b in feature_blocks if b.get("kind") == "numeric" for j in range(int(b["start"]), int(b["stop"]))]
    )
    return scale_features(X, scaling or "none", numeric)


def project_items(
    answers: Iterable[Any],
    settled: dict[int, int],
    *,
    strategy: str | None = None,
    solver: str | None = None,
    params: dict[str, Any] | None = None,
    source: str = "the project",
) -> LabelledItems:
    """A team project's labelled items: ``answers`` with ``item_index`` and ``value`` (skips as 0) in label
    order (what ``storage.teams.project_answers`` gives), ``settled`` item -> settled answer
    (:func:`settled_answers`).  An item's answer is the settled one, else its first positive or negative
    answer (what the project's model learns); items come in the order first answered.  ``params``: the
    project's settings (``solver_params``, ...).  A project with named classes (``params["classes"]``): each
    item's class is :func:`final_class` (``answer_class``; ``settled`` item -> settled class), items in the
    order of their first class answer, as its model learns them (``run_class_replay``).  A multi-label project
    (``params["multi_label"]``): each item's set is :func:`final_class` of ``answer_classes`` (``settled`` item
    -> settled set), ``labels`` (items, K) of bool (``run_multi_label_replay``)."""
    params = dict(params or {})
    multi_label = params.get("multi_label") is True
    classes = tuple(str(c) for c in params.get("classes") or ())
    answers = list(answers)
    by_item: dict[int, list[Any]] = {}
    for answer in answers:
        by_item.setdefault(int(answer.item_index), []).append(answer)

    def given(answer) -> Any:  # (a set of places, a class's place, or +1 / -1; None for a skip)
        if multi_label:
            return None if answer.answer_classes is None else tuple(answer.answer_classes)
        if classes:
            return None if answer.answer_class is None else int(answer.answer_class)
        return int(answer.value) or None

    # items in the order of their first answer that is not a skip (dicts keep the insertion order)
    rows = list(dict.fromkeys(int(a.item_index) for a in answers if given(a) is not None))
    labels: Any
    if multi_label:
        labels = _memberships([final_class(by_item[i], settled.get(i), given=given) for i in rows], len(classes))
    elif classes:
        labels = [final_class(by_item[i], settled.get(i)) for i in rows]
    else:
        labels = [settled.get(i, next(v for a in by_item[i] if (v := given(a)) is not None)) for i in rows]
    votes = {i: {v for a in by_item[i] if (v := given(a)) is not None} for i in rows}
    return LabelledItems(
        np.asarray(rows, dtype=np.intp),
        labels if multi_label else np.asarray(labels, dtype=int),
        strategy=strategy,
        solver=solver,
        solver_params=dict(params.get("solver_params") or {}),
        source=source,
        skipped=len(by_item) - len(rows),
        unsettled=sum(1 for i in rows if len(votes[i]) > 1 and i not in settled),
        strategy_params=dict(params.get("strategy_params") or {}),
        classes=classes,
        team=True,
        multi_label=multi_label,
    )


# --------------------------------------------------------------------------- labels files


def _column(header: list[str], names: Sequence[str]) -> int | None:
    lowered = [h.strip().lower() for h in header]
    return next((lowered.index(n) for n in names if n in lowered), None)


def _label_cells(
    path: str | Path, item_keys: Sequence[Any] | None, n_items: int, key_column: str | None, answers: Sequence[str]
) -> tuple[Path, list[str], list[tuple[int, int, str]]]:
    """(path, header, [(line, item number, answer cell)]) of a labels CSV file in the order given, every item checked
    (a key or number of the data, given once).  The item column is ``item_key`` / ``key`` (or ``key_column``),
    else ``item_index`` / ``index`` / ``item``, else the first column; the answer column the first of
    ``answers`` found, else the second column."""
    path = Path(path)
    if not path.is_file():
        raise ReplayError(f"labels file not found: {path}" if not path.exists() else f"{path} is not a file")
    try:
        with path.open(newline="", encoding="utf-8-sig") as handle:
            table = list(csv.reader(handle))
    except (UnicodeDecodeError, csv.Error) as error:
        raise ReplayError(f"{path} is not a UTF-8 CSV file ({error})") from None
    if not table or len(table[0]) < 2:
        raise ReplayError(
            f"{path} needs two columns with a header row: the item (item_key or item_index) and its label"
        )
    header, body = table[0], table[1:]
    key_at = _column(header, ([key_column.lower()] if key_column else []) + list(KEY_COLUMNS))
    index_at = _column(header, INDEX_COLUMNS)
    by_key = key_at is not None or (index_at is None and item_keys is not None)
    item_at = key_at if key_at is not None else index_at if index_at is not None else 0
    if by_key and item_keys is None:
        raise ReplayError(
            f"{path}: column {header[item_at]!r} holds item keys, but the data have no key column "
            "(give --key-column, or item numbers in an item_index column)"
        )
    value_at = next((at for name in answers if (at := _column(header, (name,))) is not None), None)
    if value_at is None:
        value_at = 1 if item_at == 0 else 0
    keys = [str(k) for k in item_keys] if by_key and item_keys is not None else None
    index = {k: i for i, k in enumerate(keys)} if keys is not None else {str(i): i for i in range(n_items)}
    seen: dict[str, int] = {}
    cells_read: list[tuple[int, int, str]] = []
    for line, cells in enumerate(body, start=2):
        if not any(c.strip() for c in cells):
            continue
        if len(cells) <= max(item_at, value_at):
            raise ReplayError(f"{path}, line {line}: {len(cells)} cells, fewer than the header's {len(header)}")
        key, value = cells[item_at].strip(), cells[value_at].strip()
        if key not in index:
            what = f"the key of no item (keys such as {keys[0]!r})" if keys else f"not an item number 0..{n_items - 1}"
            raise ReplayError(f"{path}, line {line}: {key!r} is {what}")
        if key in seen:
            raise ReplayError(f"{path}, line {line}: {key!r} is given twice (first on line {seen[key]})")
        seen[key] = line
        cells_read.append((line, index[key], value))
    return path, header, cells_read


def read_labels(
    path: str | Path,
    item_keys: Sequence[Any] | None,
    n_items: int,
    classes: tuple[Any, Any] | None = None,
    key_column: str | None = None,
) -> LabelledItems:
    """The labelled items of a CSV file: a header row, then one row per label in the order given.

    The item column is ``item_key`` / ``key`` (or ``key_column``: matched against ``item_keys``), else
    ``item_index`` / ``index`` / ``item`` (item numbers 0..n-1), else the first column (keys when the data
    have keys, else item numbers).  The answer column is ``label_value`` (+1, -1, 0 for a skip: a MarginLab
    export), else ``label``, else the second column: the data's class names ``classes`` (negative,
    positive), or +1/-1, 1/0, positive/negative, yes/no; empty or ``skipped`` is a skip (left out)."""
    path, header, cells = _label_cells(path, item_keys, n_items, key_column, ("label_value", "label"))
    numeric = _column(header, ("label_value",)) is not None
    words = {w: 1 for w in POSITIVE_WORDS} | {w: -1 for w in NEGATIVE_WORDS} | {"0": -1}
    if numeric:
        words["0"] = 0
    if classes is not None:
        words.update({str(classes[0]).strip().lower(): -1, str(classes[1]).strip().lower(): 1})
    rows: list[int] = []
    labels: list[int] = []
    skipped = 0
    for line, row, value in cells:
        answer = 0 if value.lower() in SKIP_WORDS else words.get(value.lower())
        if answer is None:
            named = (
                f"{classes[1]!r} (positive) or {classes[0]!r} (negative)"
                if classes is not None
                else "+1/-1, 1/0, positive/negative or yes/no"
            )
            raise ReplayError(
                f"{path}, line {line}: {value!r} is not a class: give {named}, or leave it empty for a skip"
            )
        if answer == 0:
            skipped += 1
            continue
        rows.append(row)
        labels.append(answer)
    return LabelledItems(
        np.asarray(rows, dtype=np.intp), np.asarray(labels, dtype=int), source=path.name, skipped=skipped
    )


def read_class_labels(
    path: str | Path,
    item_keys: Sequence[Any] | None,
    n_items: int,
    *,
    names: Sequence[str] | None = None,
    multi_label: bool = False,
    separator: str = ";",
    key_column: str | None = None,
) -> LabelledItems:
    """The labelled items of a CSV file of named classes (read as :func:`read_labels` reads its items): the
    ``label`` column (else the second) holds each item's class, or with ``multi_label`` its classes separated
    by ``separator`` (``(none)``: none of them, as ``compare --classes --multi-label`` reads them); empty or
    ``skipped`` is a skip (left out).  The classes are ``names`` in that order (a class not among them
    refused), else those found, sorted.  ``labels``: each item's class (0..K-1), or (items, K) of bool."""
    from core.multi_label_experiment import label_sets

    path, _, cells = _label_cells(path, item_keys, n_items, key_column, ("label",))
    kept = [(line, row, value) for line, row, value in cells if value.lower() not in SKIP_WORDS]
    try:
        if multi_label:
            labels, classes = label_sets([value for _, _, value in kept], separator, names)
        else:
            found = sorted({value for _, _, value in kept})
            classes = tuple(str(n).strip() for n in names) if names else tuple(found)
            line, value = next(((ln, v) for ln, _, v in kept if v not in classes), (0, ""))
            if line:
                raise ReplayError(f"{path}, line {line}: {value!r} is not a class: give one of {', '.join(classes)}")
            labels = np.array([classes.index(value) for _, _, value in kept], dtype=int)
    except ValueError as error:
        if isinstance(error, ReplayError):
            raise
        raise ReplayError(f"{path}: {error}") from None
    return LabelledItems(
        np.array([row for _, row, _ in kept], dtype=np.intp),
        labels,
        source=path.name,
        skipped=len(cells) - len(kept),
        classes=tuple(classes),
        multi_label=multi_label,
    )


# --------------------------------------------------------------------------- the replay


def _session_order_rows(labels: np.ndarray, labelled: LabelledItems) -> pd.DataFrame:
    """The session's own order as the rows of one run (no model: no AUC, no support vectors)."""
    n = len(labels)
    positives = int(np.sum(labels > 0))

    def latency(values):
        return np.full(n, np.nan) if values is None or len(values) != n else np.asarray(values, dtype=float)

    frame = pd.DataFrame(
        {
            "strategy": SESSION_ORDER,
            "solver": labelled.solver or "–",
            "seed": SESSION_ORDER_SEED,
            "n_labels": np.arange(1, n + 1),
            "auc": np.nan,
            "accuracy": np.nan,
            "n_sv": np.nan,
            "update_ms": latency(labelled.update_ms),
            "query_ms": latency(labelled.query_ms),
            "item": np.arange(n),
            "label": labels,
            "score": np.nan,
            "n_bound": np.nan,
            "n_in_margin": np.nan,
            "seen": np.arange(1, n + 1),
            "cold_start": False,
            "recall": np.cumsum(labels > 0) / positives,
            "prior": False,
        }
    )
    return frame[ROW_COLUMNS + EXTRA_COLUMNS]


def run_replay(
    X,
    labelled: LabelledItems,
    *,
    strategies: Iterable[str] | str,
    seeds: int | Iterable[int] = 3,
    solver: str | dict[str, str] | None = None,
    solver_params: dict | None = None,
    budget: int | None = None,
    initial: int = 10,
    cold_start: str = DEFAULT_COLD_START,
    strategy_params: dict[str, dict] | None = None,
    n_jobs: int = 1,
    progress: Callable[[int, int, str], None] | None = None,
    label_progress: Callable[[int, int, str, int, int], None] | None = None,
    scheduler: str | None = None,
) -> ComparisonResult:
    """Replay ``labelled`` (rows of ``X`` and their final answers) under ``strategies`` on ``seeds``.

    The runs are ``run_comparison(X[rows], answers, test_fraction=0, budget=budget or len(rows))``; when
    ``labelled.strategy`` is a heuristic it runs too (the reference).  Every heuristic runs with the
    session's model (``labelled.solver``, ``labelled.solver_params``) unless ``solver`` / ``solver_params``
    are given; with neither, each heuristic's default solver.  The session order is added as one
    more run (``SESSION_ORDER``).  ``config["replay"]`` says what was replayed."""
    if isinstance(strategies, str):
        strategies = [s.strip() for s in strategies.split(",") if s.strip()]
    strategies = list(dict.fromkeys(strategies))
    if SESSION_ORDER in strategies:
        raise ReplayError(f"{SESSION_ORDER!r} is the session's own order, drawn with every replay: not a heuristic")
    n_items = X.shape[0]
    rows, labels = labelled.checked(n_items)
    reference = labelled.strategy if labelled.strategy in STRATEGY_NAMES else None
    if reference is not None and reference not in strategies:
        strategies.append(reference)
    if solver is None and labelled.solver:
        solver = labelled.solver
    strategy_params = dict(strategy_params or {})
    if reference is not None and labelled.strategy_params:
        strategy_params.setdefault(reference, dict(labelled.strategy_params))
    params = dict(labelled.solver_params if solver_params is None else solver_params)
    budget = len(rows) if budget is None else min(int(budget), len(rows))
    if int(initial) >= budget:
        raise ReplayError(
            f"{labelled.source}: the {initial} initial labels would be every one of the {budget} labels "
            "of a run, all drawn at random: lower the initial labels"
        )
    result = run_comparison(
        X[rows],
        labels,
        strategies=strategies,
        solver=solver,
        solver_params=params,
        budget=budget,
        seeds=seeds,
        initial=initial,
        test_fraction=0.0,
        cold_start=cold_start,
        strategy_params=strategy_params,
        n_jobs=n_jobs,
        progress=progress,
        label_progress=label_progress,
        scheduler=scheduler,
    )
    order = _session_order_rows(labels, labelled).iloc[:budget]
    pools = {SESSION_ORDER_SEED: (len(rows), int(np.sum(labels > 0)))}
    # run_table reads a final support-vector count: the session order has none (NaN in its row)
    runs = run_table(order.assign(n_sv=0), result.references, budget, pools).assign(final_n_sv=np.nan)
    summary = summarise(runs, order, [SESSION_ORDER])
    config = dict(result.config)
    config["replay"] = {
        "source": labelled.source,
        "pool": int(len(rows)),
        "positives": int(np.sum(labels > 0)),
        "skipped": int(labelled.skipped),
        "unsettled": int(labelled.unsettled),
        "reference": reference,
        "session_strategy": labelled.strategy,
        "session_solver": labelled.solver,
        "rows": [int(r) for r in rows],
    }
    return ComparisonResult(
        rows=pd.concat([result.rows, order], ignore_index=True),
        runs=pd.concat([result.runs, runs], ignore_index=True),
        references=result.references,
        summary=pd.concat([result.summary, summary], ignore_index=True),
        config=config,
        stops=result.stops,
        stop_summary=result.stop_summary,
    )


def replay_said(replay: dict[str, Any]) -> str:
    """One line on what was replayed, e.g. "session 3: 412 labelled items (58 positive), 3 skips left out"."""
    parts = [f"{replay['source']}: {replay['pool']} labelled items ({replay['positives']} positive)"]
    if replay.get("skipped"):
        parts.append(f"{replay['skipped']} skip{'s' if replay['skipped'] != 1 else ''} left out")
    if replay.get("unsettled"):
        parts.append(
            f"{replay['unsettled']} item{'s' if replay['unsettled'] != 1 else ''} whose answers differ "
            "and were not settled (the first answer stands)"
        )
    return ", ".join(parts)


def reference_said(replay: dict[str, Any]) -> str:
    """Which heuristic is the reference, or why there is none."""
    if replay.get("reference"):
        return (
            f"reference: {replay['reference']}, the heuristic that chose these items, under the same replay; "
            f"'{SESSION_ORDER}' is the session's own order."
        )
    why = (
        f"the session's heuristic {replay['session_strategy']!r} cannot be replayed"
        if replay.get("session_strategy")
        else "the heuristic that chose these items is not known"
    )
    return f"no reference: {why}; '{SESSION_ORDER}' is the session's own order."


def format_replay_summary(summary: pd.DataFrame, reference: str | None) -> str:
    """The summary of a replay as a plain-text table: the recall measures (a replay holds nothing out, so
    it has no AUC), the labels to 95% against the reference's, and the latency."""
    head = (
        f"{'heuristic':<28} {'solver':<12} {'recall 50%':>11} {'recall 80%':>11} {'recall 95%':>11} "
        f"{'WSS@95':>7} {'95% vs ref':>10} {'upd ms p50/p95':>15} {'qry ms p50/p95':>15}"
    )
    lines = [head, "-" * len(head)]
    by_name = summary.set_index("strategy")
    ref95 = by_name.loc[reference, "labels_recall_95"] if reference in by_name.index else float("nan")
    for r in summary.itertuples():

        def reach(v, k, n=r.n_seeds):
            return "never" if k == 0 else f"{v:.0f} ({k}/{n})"

        def ms(a, b):
            return "n/a" if not np.isfinite(a) else f"{a:>7.2f}/{b:<7.2f}"

        name = r.strategy + (" (reference)" if r.strategy == reference else "")
        diff = r.labels_recall_95 - ref95
        versus = "–" if r.strategy == reference or not np.isfinite(diff) else f"{diff:+.0f}"
        wss = "n/a" if r.wss_95 is None or not np.isfinite(r.wss_95) else f"{r.wss_95:.3f}"
        lines.append(
            f"{name:<28} {r.solver:<12} {reach(r.labels_recall_50, r.reached_recall_50):>11} "
            f"{reach(r.labels_recall_80, r.reached_recall_80):>11} "
            f"{reach(r.labels_recall_95, r.reached_recall_95):>11} {wss:>7} {versus:>10} "
            f"{ms(r.update_ms_median, r.update_ms_p95):>15} {ms(r.query_ms_median, r.query_ms_p95):>15}"
        )
    lines.append(
        "recall X%: labels (initial ones included) until X% of the positives among the labelled items "
        "were found, mean over the seeds that got there (k/n); WSS@95 = (pool - labels to 95%) / pool - "
        "0.05; 95% vs ref: labels to 95% minus the reference's (fewer is better)."
    )
    return "\n".join(lines)


def replay_text(result: ComparisonResult) -> str:
    """What ``python -m core replay`` prints: what was replayed, the summary, the reference, the caveat."""
    replay = result.config["replay"]
    return "\n".join(
        [
            replay_said(replay),
            format_replay_summary(result.summary, replay.get("reference")),
            reference_said(replay),
            CAVEAT,
        ]
    )


# --------------------------------------------------------------------------- sessions with named classes

#: what a replay of a session with named classes can and cannot tell (printed with it)
CLASS_CAVEAT = (
    "What a replay of named classes can tell: its pool is the items the session labelled, chosen by the "
    "session's own strategy, so it favours strategies that pick items like it; accuracy and macro AUC are "
    "measured on a held-out part of those labelled items (as compare --classes holds out a part), so they "
    "say nothing of the items never labelled. Compare the strategies with the session's strategy under the "
    "same replay (the reference). '" + SESSION_ORDER + "' is the session's own order: in each seed the model "
    "learns the items not held out in the order they were labelled, from the first (no initial labels at "
    "random), and is scored on the same held-out part; it favours nothing: it is what happened."
)


@dataclass(frozen=True)
class InOrder:
    """The session's own order as a query over (model, pool, rng), modAL-style: the available item that came
    first in the order labelled.  ``rows``: a seed's pool as rows of the replayed items (``X[labelled.rows]``,
    in the order labelled, so a row is its place in the order), in the model's store order
    (``core.class_experiment.QueryOf``: the replays with named classes pass this class itself)."""

    rows: np.ndarray

    def __call__(self, model, pool, rng) -> Any:
        from core.strategies import Query

        candidates = pool.candidates
        if not len(candidates):
            return None
        i = int(candidates[np.argmin(np.asarray(self.rows)[candidates])])
        F = np.asarray(model.decision_function(np.array([i])), dtype=np.float64).reshape(-1)
        return Query(i, float(F.max()), SESSION_ORDER, "the next item in the order the items were labelled")


def _class_runs(
    labelled: LabelledItems,
    strategies: Iterable[str] | str,
    known: Sequence[str],
    what: str,
    strata: np.ndarray,
    split: bool,
    *,
    budget: int | None,
    initial: int,
    test_fraction: float,
) -> tuple[list[str], str | None, int]:
    """(strategies, reference, budget) of a replay with named classes or sets: the ``strategies`` checked
    against ``known`` (``what`` they must be), the session's own added as the reference when it is one; the
    budget at most a seed's pool: the labelled items not held out, ``strata`` split as the runs split them
    (when ``split``; else every labelled item)."""
    from core.experiment import _split_rows

    if isinstance(strategies, str):
        strategies = [s.strip() for s in strategies.split(",") if s.strip()]
    strategies = list(dict.fromkeys(strategies))
    wrong = [s for s in strategies if s not in known]
    if wrong or not strategies:
        raise ReplayError(
            f"{wrong[0]!r} is not {what}; choose from {', '.join(known)}" if wrong else "no strategy to replay"
        )
    rows = np.asarray(labelled.rows, dtype=np.intp)
    if len(rows) != len(labelled.labels) or len(np.unique(rows)) != len(rows):
        raise ReplayError(f"{labelled.source}: each labelled item once, with its answer")
    reference = labelled.strategy if labelled.strategy in known else None
    if reference is not None and reference not in strategies:
        strategies.append(reference)
    pool = len(_split_rows(strata, 0, test_fraction)[0]) if split else len(rows)
    budget = pool if budget is None else min(int(budget), pool)
    if int(initial) >= budget:
        raise ReplayError(
            f"{labelled.source}: the {initial} initial labels would be every one of the {budget} labels "
            "of a run, all drawn at random: lower the initial labels"
        )
    return strategies, reference, budget


def _replay_model(
    labelled: LabelledItems, solver: str | None, solver_params: dict | None
) -> tuple[str, dict[str, Any]]:
    """(solver, solver parameters) of every run of a replay with named classes or sets (one-vs-rest machines
    of that solver, the reference's too): ``solver`` / ``solver_params`` when given, else the session's own
    (``labelled.solver``, ``labelled.solver_params``; the K-class default solver when it has none).  C and
    gamma chosen from the labels (``auto``) are for two classes: the starting values stand."""
    from core.class_experiment import DEFAULT_SOLVER
    from core.solvers import SOLVER_NAMES

    chosen = solver or labelled.solver or DEFAULT_SOLVER
    if chosen not in SOLVER_NAMES:
        raise ReplayError(f"{chosen!r} is not a solver; choose from {', '.join(SOLVER_NAMES)}")
    params = dict(labelled.solver_params if solver_params is None else solver_params)
    return chosen, {k: v for k, v in params.items() if k not in ("auto", "auto_lag")}


def _model_record(labelled: LabelledItems, solver: str, params: dict[str, Any]) -> dict[str, Any]:
    """What ``config["replay"]`` says of the model every run used: its solver and parameters, and whether it
    is the session's own (``own_model``)."""
    own = solver == (labelled.solver or solver) and params == {
        k: v for k, v in labelled.solver_params.items() if k not in ("auto", "auto_lag")
    }
    return {"solver": solver, "solver_params": dict(params), "own_model": own}


def _class_record(labelled: LabelledItems, counts, reference: str | None, **more: Any) -> dict[str, Any]:
    """The ``config["replay"]`` of a replay with named classes: what was replayed (``counts``: the items of
    each class, or with it), its reference, and ``more``."""
    return {
        "source": labelled.source,
        "pool": int(len(labelled.rows)),
        "classes": {name: int(n) for name, n in zip(labelled.classes, counts, strict=True)},
        **more,
        "skipped": int(labelled.skipped),
        "unsettled": int(labelled.unsettled),
        "team": bool(labelled.team),
        "reference": reference,
        "session_strategy": labelled.strategy,
        "session_solver": labelled.solver,
        "rows": [int(r) for r in labelled.rows],
    }


def run_class_replay(
    X,
    labelled: LabelledItems,
    *,
    strategies: Iterable[str] | str,
    seeds: int | Iterable[int] = 3,
    budget: int | None = None,
    initial: int = 10,
    test_fraction: float = 0.3,
    solver: str | None = None,
    solver_params: dict | None = None,
    n_jobs: int = 1,
    progress: Callable[[int, int, str], None] | None = None,
    label_progress: Callable[[int, int, str, int, int], None] | None = None,
):
    """Replay ``labelled`` (a session with named classes: rows of ``X`` and their classes as they stand) under
    the K-class ``strategies`` (``core.multiclass.MULTICLASS_STRATEGIES``) on ``seeds``, with the session's
    model: ``core.class_experiment.run_class_comparison(X[rows], classes, ...)``, the session's strategy added
    as the reference (with its class to find, for ``target-class``), the session's own order as one more run
    (``SESSION_ORDER``, :class:`InOrder`).  ``budget`` defaults to every item of a seed's pool (the labelled
    items not held out).  ``config["replay"]`` says what was replayed; ``progress`` and ``label_progress`` as
    for ``run_class_comparison``."""
    from core.class_experiment import run_class_comparison
    from core.multiclass import MULTICLASS_STRATEGIES

    rows, classes = np.asarray(labelled.rows, dtype=np.intp), labelled.classes
    labels = np.asarray(labelled.labels, dtype=int)
    counts = np.bincount(labels, minlength=len(classes)) if len(labels) else np.zeros(len(classes), dtype=int)
    strategies, reference, budget = _class_runs(
        labelled,
        strategies,
        list(MULTICLASS_STRATEGIES),
        "a strategy for named classes",
        labels,
        counts.min() >= 2,
        budget=budget,
        initial=initial,
        test_fraction=test_fraction,
    )
    solver, params = _replay_model(labelled, solver, solver_params)
    try:
        result = run_class_comparison(
            X[rows],
            labels,
            classes,
            strategies=strategies,
            solver=solver,
            solver_params=params,
            budget=budget,
            seeds=seeds,
            initial=initial,
            test_fraction=test_fraction,
            target=labelled.strategy_params.get("target"),
            n_jobs=n_jobs,
            progress=progress,
            label_progress=label_progress,
            more_strategies={SESSION_ORDER: InOrder},
        )
    except ValueError as error:
        raise ReplayError(f"{labelled.source}: {error}") from None
    result.config["replay"] = _class_record(labelled, counts, reference, **_model_record(labelled, solver, params))
    return result


def class_replay_said(replay: dict[str, Any]) -> str:
    """What a replay of a session with named classes (or a multi-label one) replayed (its
    ``config["replay"]``), in one line."""
    counts = ", ".join(f"{name} {n}" for name, n in replay["classes"].items())
    sets = bool(replay.get("multi_label"))
    said = f"{replay['source']}: {replay['pool']} labelled items " + (
        f"(items with each class: {counts}; with none {replay.get('none', 0)})" if sets else f"({counts})"
    )
    if replay.get("skipped"):
        said += f", {replay['skipped']} skip{'s' if replay['skipped'] != 1 else ''} left out"
    if replay.get("unsettled"):
        n, what = replay["unsettled"], ("sets", "set") if sets else ("classes", "class")
        said += (
            f", {n} item{'s' if n != 1 else ''} whose {what[0]} differ and were not settled (the first {what[1]} "
            "stands)"
        )
    return said


def class_reference_said(replay: dict[str, Any]) -> str:
    """The reference of a replay of a session with named classes, in one line."""
    whose = "project's" if replay.get("team") else "session's"
    kind = "multi-label" if replay.get("multi_label") else "K-class"
    return (
        f"reference: the {whose} own strategy ({replay['reference']}) under the same replay"
        if replay.get("reference")
        else f"no reference: the {whose} strategy is not a {kind} strategy this version runs"
    )


#: what a replay of a team project with named classes adds to ``CLASS_CAVEAT``: whose answers are the oracle
TEAM_CLASS_CAVEAT = (
    "A team project's items are those its members labelled, each with its final class: the class the owner "
    "settled on, else the first class a member answered (what the project's model learns); an item whose "
    "members' classes differ and that the owner did not settle counts with the first class answered."
)


def class_replay_caveat(replay: dict[str, Any]) -> str:
    """What a replay with named classes can and cannot tell (its ``config["replay"]``): ``CLASS_CAVEAT``, and
    for a team project ``TEAM_CLASS_CAVEAT``; a multi-label one's ``MULTI_LABEL_CAVEAT`` and ``TEAM_SET_CAVEAT``."""
    if replay.get("multi_label"):
        return MULTI_LABEL_CAVEAT + (" " + TEAM_SET_CAVEAT if replay.get("team") else "")
    return CLASS_CAVEAT + (" " + TEAM_CLASS_CAVEAT if replay.get("team") else "")


def class_replay_text(result) -> str:
    """What ``python -m core replay`` prints for a session or team project with named classes (or a
    multi-label one)."""
    replay = result.config["replay"]
    return "\n".join(
        [
            class_replay_said(replay),
            class_model_said(replay),
            result.summary_text(),
            class_reference_said(replay),
            class_replay_caveat(replay),
        ]
    )


def class_model_said(replay: dict[str, Any]) -> str:
    """The model every run of a replay with named classes used (its ``config["replay"]``), in one line."""
    params = replay.get("solver_params") or {}
    settings = ", ".join(f"{k} {v:g}" if isinstance(v, float) else f"{k} {v}" for k, v in params.items())
    whose = "project's" if replay.get("team") else "session's"
    return (
        f"model: {replay.get('solver')} one-vs-rest"
        + (f" ({settings})" if settings else "")
        + (f", the {whose} own" if replay.get("own_model") else f", in place of the {whose} own")
    )


# --------------------------------------------------------------------------- multi-label sessions and projects

#: what a replay of a multi-label session or project can and cannot tell (printed with it)
MULTI_LABEL_CAVEAT = (
    "What a multi-label replay can tell: its pool is the items the session labelled, chosen by the session's "
    "own strategy, so it favours strategies that pick items like it; accuracy (the share of item-class yes / no "
    "the model gets right) and macro AUC are measured on a held-out part of those labelled items (as compare "
    "--classes --multi-label holds out a part), so they say nothing of the items never labelled. Compare the "
    "strategies with the session's strategy under the same replay (the reference). '" + SESSION_ORDER + "' is the "
    "session's own order: in each seed the model learns the items not held out in the order they were labelled, "
    "from the first (no initial labels at random), and is scored on the same held-out part; it favours nothing: "
    "it is what happened."
)
#: what a replay of a multi-label team project adds to ``MULTI_LABEL_CAVEAT``: whose answers are the oracle
TEAM_SET_CAVEAT = (
    "A team project's items are those its members labelled, each with its final set of classes: the set the "
    "owner settled on, else the first set a member answered (what the project's model learns); an item whose "
    "members' sets differ and that the owner did not settle counts with the first set answered."
)


def run_multi_label_replay(
    X,
    labelled: LabelledItems,
    *,
    strategies: Iterable[str] | str,
    seeds: int | Iterable[int] = 3,
    budget: int | None = None,
    initial: int = 10,
    test_fraction: float = 0.3,
    solver: str | None = None,
    solver_params: dict | None = None,
    n_jobs: int = 1,
    progress: Callable[[int, int, str], None] | None = None,
):
    """Replay ``labelled`` (a multi-label session or team project: rows of ``X`` and their sets as they stand,
    (items, K) of bool) under the multi-label ``strategies`` (``core.multiclass.MULTILABEL_STRATEGIES``) on
    ``seeds``, with the session's model unless ``solver`` / ``solver_params`` are given (``_replay_model``):
    ``core.multi_label_experiment.run_multi_label_comparison(X[rows], sets,
    classes, ...)`` (Hamming accuracy and macro AUC on a held-out part of the labelled items, per-class
    measures at the last label), the session's strategy added as the reference, its own order as one more
    run (``SESSION_ORDER``).  ``budget`` defaults to every
    item of a seed's pool (the labelled items not held out).  ``config["replay"]`` says what was replayed
    (``multi_label``: True)."""
    from core.multi_label_experiment import _set_codes, run_multi_label_comparison
    from core.multiclass import MULTILABEL_STRATEGIES

    rows, classes = np.asarray(labelled.rows, dtype=np.intp), labelled.classes
    Y = np.asarray(labelled.labels, dtype=bool).reshape(len(rows), len(classes))
    codes = _set_codes(Y)
    strategies, reference, budget = _class_runs(
        labelled,
        strategies,
        list(MULTILABEL_STRATEGIES),
        "a multi-label strategy",
        codes,
        True,  # (a set given once stays in the pool: the split holds out only sets given twice or more)
        budget=budget,
        initial=initial,
        test_fraction=test_fraction,
    )
    solver, params = _replay_model(labelled, solver, solver_params)
    try:
        result = run_multi_label_comparison(
            X[rows],
            Y,
            classes,
            strategies=strategies,
            solver=solver,
            solver_params=params,
            budget=budget,
            seeds=seeds,
            initial=initial,
            test_fraction=test_fraction,
            n_jobs=n_jobs,
            progress=progress,
            more_strategies={SESSION_ORDER: InOrder},
        )
    except ValueError as error:
        raise ReplayError(f"{labelled.source}: {error}") from None
    result.config["replay"] = _class_record(
        labelled,
        Y.sum(axis=0),
        reference,
        none=int(np.sum(~Y.any(axis=1))),
        multi_label=True,
        **_model_record(labelled, solver, params),
    )
    return result


__all__ = [
    "CAVEAT",
    "CLASS_CAVEAT",
    "SESSION_ORDER",
    "TEAM_CLASS_CAVEAT",
    "MULTI_LABEL_CAVEAT",
    "TEAM_SET_CAVEAT",
    "InOrder",
    "LabelledItems",
    "ReplayError",
    "class_model_said",
    "class_reference_said",
    "class_replay_caveat",
    "class_replay_said",
    "class_replay_text",
    "final_class",
    "format_replay_summary",
    "project_items",
    "read_class_labels",
    "read_labels",
    "reference_said",
    "replay_said",
    "replay_text",
    "run_class_replay",
    "run_multi_label_replay",
    "run_replay",
    "session_features",
    "session_items",
    "settled_answers",
]
