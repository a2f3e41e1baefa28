"""The active-learning loop (core.loop): queries, teach/skip/undo, kept pool scores, rebuilding."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import core.pool_scores
from core.datasets import make_banana, make_gaussians
from core.loop import ActiveLearningLoop
from core.metrics import accuracy, roc_auc

TIMING = ["update_ms", "query_ms"]

# (strategy, solver, extra loop options): an exact solver (unlearn), non-exact
# solvers with kept snapshots, and a non-exact solver that must rebuild by replay.
CASES = [
    ("near-boundary", "incremental", {}),
    ("randomized-search", "lasvm", {}),
    ("autoactive", "lasvm", {"undo_memory": 0}),
    ("ramp-region", "ramp", {}),
]
C_OF = {"incremental": 10.0, "lasvm": 10.0, "ramp": 1.0}
IDS = [f"{s}-{v}-{'replay' if o else 'default'}" for s, v, o in CASES]


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    X, y = make_banana(240, rng, noise=0.8)
    Xe, ye = make_banana(200, rng, noise=0.8)
    return X / 5.0, y, Xe / 5.0, ye


def run(loop, y, n, undo_every=None):
    for t in range(n):
        q = loop.next_query()
        if q is None:
            break
        loop.teach(q.index, int(y[q.index]))
        if undo_every and t % undo_every == undo_every - 1:
            loop.undo()
            loop.undo()
    return loop


def fresh_scores(loop):
    return loop.solver.decision_function(np.arange(loop.n_items))


def same_history(a, b):
    ha, hb = a.history_frame().drop(columns=TIMING), b.history_frame().drop(columns=TIMING)
    assert ha.equals(hb)


@pytest.mark.parametrize(("strategy", "solver", "opts"), CASES, ids=IDS)
def test_kept_pool_scores_equal_a_fresh_decision_function(data, strategy, solver, opts):
    X, y, Xe, ye = data
    loop = ActiveLearningLoop(X, strategy=strategy, solver=solver, seed=3, solver_params={"C": C_OF[solver]}, **opts)
    run(loop, y, 70, undo_every=9)
    assert loop.n_labels >= 40
    np.testing.assert_allclose(loop.pool_scores(), fresh_scores(loop), rtol=0, atol=1e-9)


@pytest.mark.parametrize(("strategy", "solver", "opts"), CASES, ids=IDS)
def test_rebuild_from_events_equals_the_original(data, strategy, solver, opts):
    X, y, Xe, ye = data
    cfg = dict(strategy=strategy, solver=solver, seed=5, solver_params={"C": C_OF[solver]}, **opts)
    loop = run(ActiveLearningLoop(X, eval_X=Xe, eval_y=ye, **cfg), y, 30)
    q = loop.next_query()
    loop.skip(q.index)
    run(loop, y, 5)
    assert loop.n_labels == 35
    again = ActiveLearningLoop.from_events(loop.events, X, eval_X=Xe, eval_y=ye, **cfg)
    assert again.events == loop.events
    assert np.array_equal(again.labels, loop.labels) and np.array_equal(again.skipped_mask, loop.skipped_mask)
    assert np.array_equal(fresh_scores(again), fresh_scores(loop))  # identical, not just close
    assert np.array_equal(again.pool_scores(), loop.pool_scores())
    assert again.seen == loop.seen
    same_history(again, loop)
    assert again.next_query().index == loop.next_query().index
    # the same through to_state / from_state (plain arrays + JSON)
    arrays, meta = loop.to_state()
    restored = ActiveLearningLoop.from_state(arrays, meta, X, eval_X=Xe, eval_y=ye)
    assert np.array_equal(fresh_scores(restored), fresh_scores(loop))


@pytest.mark.parametrize(("strategy", "solver", "opts"), CASES, ids=IDS)
def test_undo_is_exact(data, strategy, solver, opts):
    X, y, Xe, ye = data
    cfg = dict(strategy=strategy, solver=solver, seed=11, solver_params={"C": C_OF[solver]}, **opts)
    loop = run(ActiveLearningLoop(X, **cfg), y, 40)
    before = fresh_scores(loop)
    events = list(loop.events)
    query = loop.next_query()
    seen = loop.seen
    run(loop, y, 12)
    q = loop.next_query()
    loop.skip(q.index)
    for _ in range(13):
        loop.undo()
    assert loop.events == events and loop.n_labels == 40 and loop.seen == seen
    assert len(loop.history) == 40
    after = fresh_scores(loop)
    rebuilt = ActiveLearningLoop.from_events(events, X, **cfg)
    if loop.solver.exact_unlearn:  # unlearning: equal to training without, up to rounding
        np.testing.assert_allclose(after, before, rtol=0, atol=1e-9)
        np.testing.assert_allclose(after, fresh_scores(rebuilt), rtol=0, atol=1e-9)
    else:  # the state from before the labels is restored (or replayed): identical
        assert np.array_equal(after, before)
        assert np.array_equal(after, fresh_scores(rebuilt))
    np.testing.assert_allclose(loop.pool_scores(), after, rtol=0, atol=1e-9)
    assert loop.next_query().index == query.index  # the same question comes back


def test_next_query_is_idempotent_until_answered(data):
    X, y, _, _ = data
    loop = run(ActiveLearningLoop(X, strategy="randomized-search", seed=2), y, 10)
    q1, q2 = loop.next_query(), loop.next_query()
    assert q1 is q2
    loop.teach(q1.index, int(y[q1.index]))
    assert loop.next_query() is not q1


def test_near_boundary_asks_the_exact_minimum_and_history_records_what_was_asked(data):
    X, y, Xe, ye = data
    loop = ActiveLearningLoop(X, strategy="near-boundary", seed=1, eval_X=Xe, eval_y=ye, solver_params={"C": 10.0})
    for _ in range(30):
        q = loop.next_query()
        f = fresh_scores(loop)
        if not loop.in_cold_start:
            cand = np.flatnonzero(~loop.labelled_mask)
            assert abs(f[q.index]) == pytest.approx(np.min(np.abs(f[cand])), abs=1e-12)
        row = loop.teach(q.index, int(y[q.index]))
        assert row.score == pytest.approx(f[q.index], abs=1e-9)  # the value when it was asked
        assert row.n_labels == loop.n_labels and row.item == q.index
        sv, coef, _ = loop.solver.coefficients()
        assert row.n_sv == len(sv) and row.n_bound == int(np.sum(np.abs(coef) >= 10.0 * (1 - 1e-9)))
        f = fresh_scores(loop)
        assert row.n_in_margin == np.sum(np.abs(f[~loop.labelled_mask]) < 1)
        fe = loop.solver.decision_function(X=Xe)
        assert row.auc == pytest.approx(roc_auc(ye, fe)) and row.accuracy == accuracy(ye, np.where(fe >= 0, 1, -1))
    assert loop.history[-1].auc > 0.9
    frame = loop.history_frame()
    assert list(frame["n_labels"]) == list(range(1, 31))


def test_cold_start_lasts_until_both_classes_and_the_initial_labels(data):
    X, y, _, _ = data
    loop = ActiveLearningLoop(X, strategy="near-boundary", seed=4, initial=6)
    order = np.argsort(y)  # all negatives first
    for i in order[:8]:
        q = loop.next_query()
        assert q.cold_start
        loop.teach(int(i), int(y[i]))
    loop.teach(int(order[-1]), int(y[order[-1]]))  # now both classes and >= 6 labels
    assert not loop.next_query().cold_start
    assert loop.history[0].asked_by == "analyst"  # taught without being asked


def test_one_class_cold_start_asks_the_most_anomalous_first():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 2))
    X[17] = [9.0, 9.0]  # a far outlier
    loop = ActiveLearningLoop(X, strategy="near-boundary", cold_start="one-class", seed=0)
    q = loop.next_query()
    assert q.index == 17 and q.strategy == "one-class (cold start)"


def test_ramp_region_never_asks_outside_the_ramp_region_and_sees_more_than_it_asks(data):
    X, y, _, _ = data
    loop = ActiveLearningLoop(X, strategy="ramp-region", seed=2, solver_params={"C": 10.0})
    for _ in range(80):
        q = loop.next_query()
        if q is None:
            break
        if not q.cold_start:
            assert abs(fresh_scores(loop)[q.index]) <= 1.0
        loop.teach(q.index, int(y[q.index]))
    assert loop.seen > loop.n_labels
    assert loop.history[-1].seen == loop.seen


def test_skip_and_undo_skip(data):
    X, y, _, _ = data
    loop = run(ActiveLearningLoop(X, strategy="near-boundary", seed=0), y, 15)
    q = loop.next_query()
    loop.skip(q.index)
    assert loop.events[-1] == (q.index, 0) and loop.skipped_mask[q.index]
    assert loop.next_query().index != q.index
    assert loop.undo() == (q.index, 0)
    assert not loop.skipped_mask[q.index] and loop.next_query().index == q.index


def test_large_pool_mode_matches_the_tracked_mode(data):
    X, y, _, _ = data
    kept = run(ActiveLearningLoop(X, strategy="randomized-search", seed=9), y, 40, undo_every=7)
    untracked = run(
        ActiveLearningLoop(X, strategy="randomized-search", seed=9, track_scores=False), y, 40, undo_every=7
    )
    assert kept.events == untracked.events
    assert np.array_equal(fresh_scores(kept), fresh_scores(untracked))
    assert np.isnan(untracked.history[-1].n_in_margin)


@pytest.mark.parametrize(
    "strategy, solver",
    [("near-boundary", "incremental"), ("largest-positive", "incremental"), ("near-boundary", "lasvm")],
)
def test_whole_pool_strategies_keep_scores_above_the_track_limit(data, monkeypatch, strategy, solver):
    """Above TRACK_LIMIT a whole-pool strategy still keeps its scores (no rescoring per query): the same
    queries and scores as a loop that rescores the pool for every query, with rows beyond the row
    buffer added from the cache, and (for a non-exact solver, which is not copied above
    UNDO_COPY_LIMIT) undo by replaying."""
    import core.loop as loop_module

    X, y, _, _ = data
    monkeypatch.setattr(loop_module, "TRACK_LIMIT", 10)
    monkeypatch.setattr(loop_module, "UNDO_COPY_LIMIT", 10)
    monkeypatch.setattr(core.pool_scores, "ROW_BUFFER_BYTES", 6 * len(X) * 8)  # six rows; the others from the cache
    kept = ActiveLearningLoop(X, strategy=strategy, solver=solver, seed=4)
    assert kept.track_scores
    sampled = ActiveLearningLoop(X, strategy="randomized-search", solver=solver, seed=4)
    assert not sampled.track_scores  # a sampling strategy scores only what it draws
    rescored = ActiveLearningLoop(X, strategy=strategy, solver=solver, seed=4, track_scores=False)
    run(kept, y, 45, undo_every=9)
    run(rescored, y, 45, undo_every=9)
    assert kept.events == rescored.events
    assert len(kept.scores.slots) == 6 and len(kept.solver.coefficients()[0]) > 6
    assert not any(u.snapshot is not None for u in kept._undo)
    np.testing.assert_allclose(kept.pool_scores(), fresh_scores(kept), rtol=0, atol=1e-9)
    assert np.isfinite(kept.history[-1].n_in_margin)


def test_the_row_buffer_is_made_once_and_never_copied(data, monkeypatch):
    """The kept kernel rows' buffer is allocated whole at the first row (its pages become resident as
    rows are written) and never replaced by a larger copy: growing it had copied every row kept so far
    within one label."""
    X, y, _, _ = data
    monkeypatch.setattr(core.pool_scores, "ROW_BUFFER_BYTES", 40 * len(X) * 8)
    loop = ActiveLearningLoop(X, strategy="near-boundary", solver="incremental", seed=1)
    buffers = []
    for _ in range(80):
        run(loop, y, 1)
        if loop.scores.rowbuf is not None:
            buffers.append(loop.scores.rowbuf)
    assert buffers and all(b is buffers[0] for b in buffers)
    assert buffers[0].shape == (40, len(X)) and len(loop.scores.slots) > 16  # past the old first growth
    np.testing.assert_allclose(loop.pool_scores(), fresh_scores(loop), rtol=0, atol=1e-9)


def test_rows_the_cache_does_not_keep_are_held_four_at_most_and_change_no_bit(data, monkeypatch):
    """Rows outside the row buffer wait to be added in the buffer's pass; those the solver's cache
    does not keep (no room) are held only until four of them are waiting.  When they are added
    changes no bit: a loop whose cache keeps nothing has the scores of one whose cache keeps all."""
    X, y, _, _ = data
    monkeypatch.setattr(core.pool_scores, "ROW_BUFFER_BYTES", 2 * len(X) * 8)  # two rows; the others outside
    given = core.pool_scores.add_weighted_rows
    waiting = []

    def add_weighted_rows(f, rows, slots, weights, extra_rows=(), extra_deltas=()):
        if cacheless.solver.cache is not None and f is cacheless.scores.f:
            waiting.append(sum(not any(r is c for c in cacheless.solver.cache._rows.values()) for r in extra_rows))
        return given(f, rows, slots, weights, extra_rows, extra_deltas)

    monkeypatch.setattr(core.pool_scores, "add_weighted_rows", add_weighted_rows)
    cacheless = ActiveLearningLoop(
        X, strategy="near-boundary", solver="incremental", seed=2, solver_params={"cache_bytes": 0}
    )
    cached = ActiveLearningLoop(X, strategy="near-boundary", solver="incremental", seed=2)
    run(cacheless, y, 40)
    run(cached, y, 40)
    assert cacheless.events == cached.events
    assert max(waiting) == 3  # (rows were waiting, never four)
    assert np.array_equal(cacheless.pool_scores().view(np.int64), cached.pool_scores().view(np.int64))


def test_bad_input_is_refused(data):
    X, y, _, _ = data
    loop = ActiveLearningLoop(X, strategy="near-boundary")
    loop.teach(3, 1)
    with pytest.raises(ValueError, match="already labelled"):
        loop.teach(3, -1)
    with pytest.raises(ValueError, match="label must be"):
        loop.teach(4, 2)
    with pytest.raises(IndexError):
        loop.teach(len(X), 1)
    with pytest.raises(ValueError, match="true labels"):
        ActiveLearningLoop(X, strategy="gradient")
    with pytest.raises(ValueError, match="unknown strategy"):
        ActiveLearningLoop(X, strategy="nearest")
    with pytest.raises(ValueError, match="unknown solver"):
        ActiveLearningLoop(X, solver="svmlight")
    with pytest.raises(ValueError, match="seed"):
        ActiveLearningLoop(X, seed=-1)
    with pytest.raises(ValueError, match="features"):
        ActiveLearningLoop(X, eval_X=np.zeros((3, 5)), eval_y=np.ones(3))
    with pytest.raises(ValueError, match="only -1 and \\+1"):
        ActiveLearningLoop(X, eval_X=X[:3], eval_y=[0, 1, 1])
    assert loop.undo() == (3, 1)
    with pytest.raises(ValueError, match="nothing to undo"):
        loop.undo()


def test_gradient_runs_with_an_oracle():
    X, y = make_gaussians(150, np.random.default_rng(1), separation=3.0)
    loop = run(ActiveLearningLoop(X, strategy="gradient", oracle_y=y, seed=1), y, 25)
    assert loop.n_labels == 25
    # after the cold start each query was the most misclassified unlabelled item
    assert loop.history[-1].asked_by == "gradient"


@settings(max_examples=8, deadline=None)
@given(
    st.lists(st.sampled_from(["ask", "ask", "ask", "other", "skip", "undo"]), min_size=5, max_size=60),
    st.sampled_from(["incremental", "lasvm"]),
)
def test_random_sequences_of_answers_keep_scores_current_and_rebuildable(data, ops, solver):
    X, y, _, _ = data
    cfg = dict(strategy="near-boundary", solver=solver, seed=1, solver_params={"C": 10.0})
    loop = ActiveLearningLoop(X, **cfg)
    rng = np.random.default_rng(len(ops))
    for op in ops:
        q = loop.next_query()
        if op == "undo":
            if loop.events:
                loop.undo()
        elif op == "skip":
            loop.skip(q.index)
        elif op == "other":  # the analyst labels an item of their own choosing
            i = int(rng.choice(np.flatnonzero(~loop.labelled_mask)))
            loop.teach(i, int(y[i]))
        else:
            loop.teach(q.index, int(y[q.index]))
    np.testing.assert_allclose(loop.pool_scores(), fresh_scores(loop), rtol=0, atol=1e-9)
    again = ActiveLearningLoop.from_events(loop.events, X, **cfg)
    assert np.array_equal(again.labels, loop.labels)
    np.testing.assert_allclose(fresh_scores(again), fresh_scores(loop), rtol=0, atol=1e-9)


@pytest.mark.parametrize("solver", ["incremental", "lasvm", "ramp"])
def test_undoing_every_label_gives_back_the_initial_loop(data, solver):
    X, y, _, _ = data
    loop = ActiveLearningLoop(X, strategy="random", solver=solver, seed=2)
    first = loop.next_query()
    run(loop, y, 6)
    for _ in range(6):
        loop.undo()
    fresh = ActiveLearningLoop(X, strategy="random", solver=solver, seed=2)
    assert loop.n_labels == 0 and loop.events == []
    assert np.array_equal(fresh_scores(loop), fresh_scores(fresh))
    assert np.array_equal(loop.pool_scores(), fresh.pool_scores())
    assert loop.next_query().index == first.index


# ----------------------------------------------------------------------
# undo copies of non-exact solvers: size, budget, timing
# ----------------------------------------------------------------------
def test_an_undo_copy_holds_nothing_of_the_pool_size_and_its_size_counts_everything_it_holds():
    import tracemalloc

    from core.loop import _copy_solver

    rng = np.random.default_rng(31)
    X = rng.standard_normal((20_000, 40))  # 6.4 MB
    y = np.where(X[:, 0] + 0.5 * X[:, 1] > 0, 1, -1)
    loop = run(ActiveLearningLoop(X, strategy="randomized-search", solver="lasvm", seed=3), y, 25)
    tracemalloc.start()
    try:
        snapshot = _copy_solver(loop.solver)
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < X.nbytes / 20  # nothing of the pool's size, not even for a moment
    assert held <= 1.05 * snapshot.nbytes + 4096  # the size the undo budget counts is what the copy holds
    # the restored copy continues exactly as the solver it was copied from
    then = loop.solver.decision_function(np.arange(500))
    restored = snapshot.restore()
    for i in np.flatnonzero(~loop.labelled_mask)[:15].tolist():
        loop.solver.learn(i, int(y[i]))
        restored.learn(i, int(y[i]))
    assert np.array_equal(restored.decision_function(np.arange(500)), loop.solver.decision_function(np.arange(500)))
    # and the kept copy did not change: restored again, it is the solver as it was
    assert np.array_equal(snapshot.restore().decision_function(np.arange(500)), then)


def test_undo_copies_grow_with_the_model_not_with_the_pool():
    rng = np.random.default_rng(32)
    X = rng.standard_normal((40_000, 5))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] > 0, 1, -1)
    items = rng.permutation(5_000)[:60]  # the same labels, in the same order, on both pools
    kept, support = [], []
    for n in (5_000, 40_000):
        loop = ActiveLearningLoop(
            X[:n], strategy="randomized-search", solver="lasvm", seed=3, solver_params={"gamma": 0.2}
        )  # (not "scale": the same kernel on both)
        for i in items.tolist():
            loop.teach(i, int(y[i]))
        kept.append(loop._snapshot_bytes)
        support.append(loop.solver.support_)
    assert np.array_equal(support[0], support[1])
    assert kept[1] <= 1.05 * kept[0]  # 8x the pool, the same model: the same undo memory


def test_update_time_includes_the_undo_copy(monkeypatch, data):
    from types import SimpleNamespace

    import core.loop as loop_module

    copy_solver = loop_module._copy_solver
    clock = [0.0]  # the loop's clock stands still but while the undo copy is made, which "takes" 50 ms

    def slow_copy(solver):
        clock[0] += 0.05
        return copy_solver(solver)

    monkeypatch.setattr(loop_module, "_copy_solver", slow_copy)
    monkeypatch.setattr(loop_module, "time", SimpleNamespace(perf_counter=lambda: clock[0]))
    X, y, _, _ = data
    loop = run(ActiveLearningLoop(X, strategy="randomized-search", solver="lasvm", seed=5), y, 3)
    assert len(loop.history) == 3
    assert all(row.update_ms == pytest.approx(50.0, abs=1e-9) for row in loop.history)
