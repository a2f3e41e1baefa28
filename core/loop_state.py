"""The active-learning loop's saved state (:meth:`core.loop.ActiveLearningLoop.to_state` and
``from_state``; see the loop's notes "Snapshots"): the whole loop as plain arrays + a JSON-able dict.

The functions here read and write the fields of the loop they are given (an ``ActiveLearningLoop``,
not imported here: :mod:`core.loop` imports this module); the format is ``STATE_FORMAT``.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import scipy.sparse as sp

from core.loop_records import UNDO_FIELDS, HistoryRow, UndoEntry

STATE_FORMAT = 2  # 1: events only (rebuilt by replay); 2: the full loop state


def save_state(loop: Any, previous: int) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """``loop.to_state(previous=...)``: arrays + meta of the loop (the pool is not included)."""
    arrays: dict[str, np.ndarray] = {
        "events": np.asarray(loop.events, dtype=np.int64).reshape(-1, 2),
        "label": loop._label.copy(),
        "skipped": loop._skipped.copy(),
        "undo": np.array(
            [[e.kind == "teach", e.item, e.label, e.was_skipped, e.cursor, e.seen, e.passes] for e in loop._undo],
            dtype=np.int64,
        ).reshape(-1, len(UNDO_FIELDS)),
    }
    numeric = [f for f in HistoryRow.__dataclass_fields__ if f not in ("asked_by", "status")]
    arrays["history"] = np.array([[getattr(r, f) for f in numeric] for r in loop.history], dtype=np.float64).reshape(
        -1, len(numeric)
    )
    solver_arrays, solver_meta = loop.solver.to_state(include_data=False)
    arrays.update({f"solver.{k}": v for k, v in solver_arrays.items()})
    meta: dict[str, Any] = {
        "format": STATE_FORMAT,
        "config": loop.config(),
        "n_items": loop.n_items,
        "n_features": int(loop.X.shape[1]),
        "solver": solver_meta,
        "seen": loop.seen,
        "cursor": loop.cursor,
        "passes": loop.passes,
        "history_fields": numeric,
        "asked_by": [r.asked_by for r in loop.history],
        "status": [r.status for r in loop.history],
        "previous": [],
    }
    loop.scores.save(arrays, meta)
    if loop._ranking is not None:
        arrays["ranking"] = np.asarray(loop._ranking)
    if not loop.solver.exact_unlearn:
        _save_previous(loop._undo, previous, arrays, meta)
    json.dumps(meta)  # fail early if anything is not JSON-able
    return arrays, meta


def _save_previous(undo: list[UndoEntry], previous: int, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
    """The solver states from before the most recent labels (at most ``previous``, those held)."""
    for pos in range(len(undo) - 1, -1, -1):
        if len(meta["previous"]) >= previous:
            break
        entry = undo[pos]
        if entry.kind != "teach":
            continue
        if entry.snapshot is not None:
            prev_arrays, prev_meta = entry.snapshot.restore().to_state(include_data=False)
        elif entry.state is not None:
            prev_arrays, prev_meta = entry.state
        else:
            break  # older states are not held either: undo replays, as in the original
        k = len(meta["previous"])
        arrays.update({f"previous{k}.{name}": v for name, v in prev_arrays.items()})
        meta["previous"].append({"undo_position": pos, "solver": prev_meta})


def state_format(meta: dict[str, Any], X) -> int:
    """The format of a saved state over the pool ``X`` (1 or ``STATE_FORMAT``), after checking that
    it is for a pool of X's size (and, in the full format, of X's features)."""
    n_x = X.shape[0] if sp.issparse(X) else len(np.atleast_2d(np.asarray(X)))
    if int(meta.get("n_items", n_x)) != n_x:
        raise ValueError(f"the state is for a pool of {meta['n_items']} items, X has {n_x}")
    if int(meta.get("format", 1)) == 1:
        return 1
    if int(meta["format"]) != STATE_FORMAT:
        raise ValueError(f"unknown loop state format {meta['format']!r}")
    n_features = X.shape[1] if sp.issparse(X) else np.atleast_2d(np.asarray(X)).shape[1]
    if int(meta["n_features"]) != n_features:
        raise ValueError(f"the state is for {meta['n_features']} features, X has {n_features}")
    return STATE_FORMAT


def saved_solver(arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> tuple[dict[str, np.ndarray], dict]:
    """(arrays, meta) of the solver saved in a loop state."""
    prefix = "solver."
    return {k[len(prefix) :]: v for k, v in arrays.items() if k.startswith(prefix)}, meta["solver"]


def load_state(loop: Any, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
    """Put a saved state into ``loop``, made with its configuration and its solver (``saved_solver``);
    a state that does not fit its events, or its solver, is refused."""
    n = loop.n_items
    events = [(int(i), int(y)) for i, y in np.asarray(arrays["events"]).reshape(-1, 2)]
    label = np.asarray(arrays["label"], dtype=np.int8)
    skipped = np.asarray(arrays["skipped"], dtype=bool)
    # the masks must be those the events give (a snapshot that does not fit its events is refused)
    expect_label, expect_skip = np.zeros(n, dtype=np.int8), np.zeros(n, dtype=bool)
    for i, y in events:
        if y == 0:
            expect_skip[i] = True
        else:
            expect_label[i], expect_skip[i] = y, False
    if len(label) != n or not (np.array_equal(label, expect_label) and np.array_equal(skipped, expect_skip)):
        raise ValueError("the loop state's labels do not match its events")
    solver = loop.solver  # rebuilt from the state by the loop's __init__
    learned = np.flatnonzero(solver.y)
    if len(solver.y) != n or not np.array_equal(solver.y[learned], label[learned].astype(np.float64)):
        raise ValueError("the solver state's learned examples do not match the loop's labels")
    loop.events = events
    loop._label, loop._skipped = label.copy(), skipped.copy()
    loop._available = (label == 0) & ~skipped
    loop._n_pos, loop._n_neg = int(np.sum(label > 0)), int(np.sum(label < 0))
    loop._undo = _load_undo(arrays, meta, len(events))
    loop.history = _load_history(arrays, meta)
    loop.seen, loop.cursor, loop.passes = int(meta["seen"]), int(meta["cursor"]), int(meta["passes"])
    if "ranking" in arrays:
        loop._ranking = np.asarray(arrays["ranking"]).copy()
    if loop.track_scores and "pool_f" in arrays:
        loop.scores.load(arrays, meta)
    else:
        loop._init_scores()
    loop._pending = None
    loop.rng = loop._step_rng()


def _load_undo(arrays: dict[str, np.ndarray], meta: dict[str, Any], n_events: int) -> list[UndoEntry]:
    """The undo records of a saved state (one per event), with the solver states it kept from before
    its last labels."""
    undo = [
        UndoEntry(
            kind="teach" if r[0] else "skip",
            item=int(r[1]),
            label=int(r[2]),
            was_skipped=bool(r[3]),
            cursor=int(r[4]),
            seen=int(r[5]),
            passes=int(r[6]),
        )
        for r in np.asarray(arrays["undo"], dtype=np.int64).reshape(-1, len(UNDO_FIELDS))
    ]
    if len(undo) != n_events:
        raise ValueError("the loop state has one undo record per event")
    for k, prev in enumerate(meta.get("previous", [])):
        name = f"previous{k}."
        undo[int(prev["undo_position"])].state = (
            {key[len(name) :]: v for key, v in arrays.items() if key.startswith(name)},
            prev["solver"],
        )
    return undo


def _load_history(arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> list[HistoryRow]:
    fields = list(meta["history_fields"])
    rows = np.asarray(arrays["history"], dtype=np.float64).reshape(-1, len(fields))
    ints = {f for f, spec in HistoryRow.__dataclass_fields__.items() if spec.type in ("int", int)}
    history = []
    for row, asked, status in zip(rows, meta["asked_by"], meta["status"], strict=True):
        values: dict[str, Any] = {f: (int(v) if f in ints else float(v)) for f, v in zip(fields, row, strict=True)}
        history.append(HistoryRow(**values, asked_by=str(asked), status=str(status)))
    return history


__all__ = ["STATE_FORMAT", "load_state", "save_state", "saved_solver", "state_format"]
