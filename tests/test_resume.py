"""Resuming a loop from a snapshot (ActiveLearningLoop.to_state / from_state) and cheap evaluation.

A loop restored from a snapshot, given the events after it, must be the loop
that learned them all: the same decision values on the pool, the same next
query, the same history and the same undo behaviour, for every solver.
"""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

from core.datasets import make_banana
from core.loop import STATE_FORMAT, ActiveLearningLoop
from core.metrics import accuracy, roc_auc

# history columns that depend on timing or on what the kernel cache happened to hold
NOT_COMPARED = ["update_ms", "query_ms", "kernel_evals"]

CASES = [
    ("near-boundary", "incremental"),
    ("largest-positive", "incremental"),
    ("randomized-search", "lasvm"),
    ("autoactive", "lasvm"),
    ("ramp-region", "ramp"),
    ("near-boundary", "active-set"),
    ("random", "active-set"),
    ("near-boundary", "lasvm"),
]
IDS = [f"{s}-{v}" for s, v in CASES]
C_OF = {"incremental": 10.0, "lasvm": 10.0, "ramp": 1.0, "active-set": 10.0}


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    X, y = make_banana(220, rng, noise=0.8)
    Xe, ye = make_banana(150, rng, noise=0.8)
    return X / 5.0, y.astype(int), Xe / 5.0, ye


def answer(loop, y, n, rng=None):
    """Answer ``n`` queries with the true labels; with ``rng``, now and then skip or undo."""
    for _ in range(n):
        q = loop.next_query()
        if q is None:
            return loop
        u = rng.random() if rng is not None else 1.0
        if u < 0.08:
            loop.skip(q.index)
        elif u < 0.16 and loop.events:
            loop.undo()
        else:
            loop.teach(q.index, int(y[q.index]))
    return loop


def through_storage(arrays, meta):
    """What a database round trip does: numpy.savez without pickle, meta as JSON text."""
    for name, value in arrays.items():
        assert not np.asarray(value).dtype.hasobject, name
    buffer = io.BytesIO()
    np.savez(buffer, allow_pickle=False, **arrays)
    with np.load(io.BytesIO(buffer.getvalue()), allow_pickle=False) as z:
        loaded = {k: z[k] for k in z.files}
    return loaded, json.loads(json.dumps(meta))


def fresh_scores(loop):
    return loop.solver.decision_function(np.arange(loop.n_items))


def assert_same_loop(a, b):
    assert a.events == b.events
    assert np.array_equal(a.labels, b.labels) and np.array_equal(a.skipped_mask, b.skipped_mask)
    np.testing.assert_allclose(fresh_scores(a), fresh_scores(b), rtol=0, atol=1e-12)
    np.testing.assert_allclose(a.pool_scores(), b.pool_scores(), rtol=0, atol=1e-12)
    assert (a.seen, a.cursor, a.passes) == (b.seen, b.cursor, b.passes)
    ha = a.history_frame().drop(columns=NOT_COMPARED)
    hb = b.history_frame().drop(columns=NOT_COMPARED)
    assert list(ha.columns) == list(hb.columns)
    for column in ha.columns:
        if ha[column].dtype.kind == "f":
            np.testing.assert_allclose(ha[column], hb[column], rtol=0, atol=1e-12, err_msg=column)
        else:
            assert ha[column].tolist() == hb[column].tolist(), column
    qa, qb = a.next_query(), b.next_query()
    assert (qa is None) == (qb is None)
    if qa is not None:
        assert qa.index == qb.index and qa.strategy == qb.strategy


@pytest.mark.parametrize(("strategy", "solver"), CASES, ids=IDS)
def test_snapshot_plus_later_events_equals_the_loop_that_learned_them_all(data, strategy, solver):
    X, y, Xe, ye = data
    cfg = dict(strategy=strategy, solver=solver, seed=4, solver_params={"C": C_OF[solver]})
    loop = ActiveLearningLoop(X, eval_X=Xe, eval_y=ye, **cfg)
    answer(loop, y, 45, np.random.default_rng(1))
    arrays, meta = through_storage(*loop.to_state())
    assert meta["format"] == STATE_FORMAT and "events" in arrays and "pool_f" in arrays
    n_snapshot = len(loop.events)
    answer(loop, y, 25, np.random.default_rng(2))

    restored = ActiveLearningLoop.from_state(arrays, meta, X, eval_X=Xe, eval_y=ye)
    assert restored.events == loop.events[:n_snapshot]
    restored.replay(loop.events[n_snapshot:])
    assert_same_loop(restored, loop)

    # ... and it undoes the same way, back past the snapshot (unlearning, a kept state, or replay)
    for _ in range(len(loop.events) - n_snapshot + 4):
        assert restored.undo() == loop.undo()
        np.testing.assert_allclose(fresh_scores(restored), fresh_scores(loop), rtol=0, atol=1e-12)
        np.testing.assert_allclose(restored.pool_scores(), fresh_scores(loop), rtol=0, atol=1e-9)
    assert_same_loop(restored, loop)
    # and then learns on as the original does
    answer(loop, y, 6)
    answer(restored, y, 6)
    assert_same_loop(restored, loop)


@pytest.mark.parametrize(("strategy", "solver"), CASES, ids=IDS)
def test_snapshot_equals_a_replay_of_all_events(data, strategy, solver):
    X, y, _, _ = data
    cfg = dict(strategy=strategy, solver=solver, seed=9, solver_params={"C": C_OF[solver]})
    loop = answer(ActiveLearningLoop(X, **cfg), y, 30, np.random.default_rng(5))
    restored = ActiveLearningLoop.from_state(*through_storage(*loop.to_state()), X)
    replayed = ActiveLearningLoop.from_events(loop.events, X, **cfg)
    assert_same_loop(restored, replayed)
    assert_same_loop(restored, loop)


@pytest.mark.parametrize("solver", ["lasvm", "ramp"])
def test_undo_right_after_a_resume_restores_the_saved_previous_state(data, solver):
    X, y, _, _ = data
    strategy = "ramp-region" if solver == "ramp" else "randomized-search"
    cfg = dict(strategy=strategy, solver=solver, seed=2, solver_params={"C": C_OF[solver]})
    loop = answer(ActiveLearningLoop(X, **cfg), y, 30)
    q = loop.next_query()
    loop.skip(q.index)  # the most recent label is behind a skip
    arrays, meta = through_storage(*loop.to_state(previous=2))
    assert [p["undo_position"] for p in meta["previous"]] == [29, 28]
    restored = ActiveLearningLoop.from_state(arrays, meta, X)
    assert restored._undo[-2].state is not None and restored._undo[-4].state is None
    for _ in range(4):  # skip, two saved states, then a replay from scratch
        assert restored.undo() == loop.undo()
        assert np.array_equal(fresh_scores(restored), fresh_scores(loop))
        assert restored.next_query().index == loop.next_query().index
    # without saved previous states undo replays, with the same result
    loop2 = answer(ActiveLearningLoop(X, **cfg), y, 20)
    bare = ActiveLearningLoop.from_state(*loop2.to_state(previous=0), X)
    assert bare._undo[-1].state is None
    assert bare.undo() == loop2.undo()
    assert np.array_equal(fresh_scores(bare), fresh_scores(loop2))


def test_one_class_cold_start_ranking_is_kept(data):
    X, y, _, _ = data
    cfg = dict(strategy="near-boundary", cold_start="one-class", seed=0, initial=5, solver_params={"C": 10.0})
    loop = answer(ActiveLearningLoop(X, **cfg), y, 3)
    assert loop.in_cold_start
    arrays, meta = through_storage(*loop.to_state())
    assert "ranking" in arrays
    restored = ActiveLearningLoop.from_state(arrays, meta, X)
    assert_same_loop(restored, loop)
    answer(loop, y, 10)
    answer(restored, y, 10)
    assert_same_loop(restored, loop)


def test_untracked_pool_resumes_too(data):
    X, y, _, _ = data
    cfg = dict(strategy="randomized-search", seed=3, track_scores=False)
    loop = answer(ActiveLearningLoop(X, **cfg), y, 25)
    arrays, meta = through_storage(*loop.to_state())
    assert "pool_f" not in arrays
    restored = ActiveLearningLoop.from_state(arrays, meta, X)
    answer(loop, y, 10)
    answer(restored, y, 10)
    assert_same_loop(restored, loop)


def test_a_state_of_the_first_format_is_replayed(data):
    X, y, _, _ = data
    cfg = dict(strategy="near-boundary", seed=1, solver_params={"C": 10.0})
    loop = answer(ActiveLearningLoop(X, **cfg), y, 15)
    old = {"events": np.asarray(loop.events, dtype=np.int64).reshape(-1, 2)}
    meta = {"format": 1, "config": loop.config(), "n_items": loop.n_items}
    assert_same_loop(ActiveLearningLoop.from_state(old, meta, X), loop)


def test_a_state_that_does_not_fit_is_refused(data):
    X, y, _, _ = data
    loop = answer(ActiveLearningLoop(X, strategy="near-boundary", seed=1), y, 12)
    arrays, meta = loop.to_state()
    with pytest.raises(ValueError, match="items"):
        ActiveLearningLoop.from_state(arrays, meta, X[:-1])
    with pytest.raises(ValueError, match="features"):
        ActiveLearningLoop.from_state(arrays, meta, X[:, :1])
    bad = dict(arrays, events=arrays["events"][:-1])  # events missing the last label
    with pytest.raises(ValueError, match="do not match"):
        ActiveLearningLoop.from_state(bad, meta, X)
    with pytest.raises(ValueError, match="format"):
        ActiveLearningLoop.from_state(arrays, dict(meta, format=99), X)


@pytest.mark.parametrize("solver", ["incremental", "lasvm", "active-set"])
def test_evaluation_from_kept_columns_equals_a_fresh_evaluation(data, solver):
    X, y, Xe, ye = data
    loop = ActiveLearningLoop(X, strategy="near-boundary", solver=solver, seed=6, eval_X=Xe, eval_y=ye,
                              solver_params={"C": 10.0})
    rng = np.random.default_rng(0)
    for _ in range(40):
        answer(loop, y, 1, rng)
        if loop.n_labels:
            fresh = loop.solver.decision_function(X=Xe)
            np.testing.assert_allclose(loop.evaluation_scores(), fresh, rtol=0, atol=1e-9)
    row = loop.history[-1]
    fresh = loop.solver.decision_function(X=Xe)
    assert row.auc == pytest.approx(roc_auc(ye, fresh), abs=1e-12)
    assert row.accuracy == accuracy(ye, np.where(fresh >= 0, 1, -1))
    assert row.auc > 0.85
    # columns are computed once per item that becomes a support vector, not per label
    assert len(loop._eval_slot) <= loop.n_labels


def test_evaluation_beyond_the_column_budget(data, monkeypatch):
    import core.loop

    X, y, Xe, ye = data
    monkeypatch.setattr(core.loop, "EVAL_BUFFER_BYTES", 8 * len(Xe) * 6)  # room for six columns
    loop = ActiveLearningLoop(X, strategy="near-boundary", seed=6, eval_X=Xe, eval_y=ye, solver_params={"C": 10.0})
    answer(loop, y, 30)
    assert loop.history[-1].n_sv > 6
    np.testing.assert_allclose(loop.evaluation_scores(), loop.solver.decision_function(X=Xe), rtol=0, atol=1e-9)
    assert len(loop._eval_slot) <= 6
