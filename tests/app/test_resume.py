"""Resuming a loop from a snapshot (ActiveLearningLoop.to_state / from_state) and cheap evaluation.

A loop restored from a snapshot, given the events after it, must be the loop
that learned them all: the same decision values on the pool, the same next
query, the same history and the same undo behaviour, for every solver.

By construction, not by luck: the live run and the resumed one are made to
differ in everything that must not matter — the kernel and BLAS thread
counts and the kernel-row cache (large, or none at all, so that every value
that was a cache hit is recomputed through another path).  Without undo the
resumed loop is the same loop bit for bit (``np.array_equal``).  An undo
unlearns (exact solvers) or takes back the pool-score update, which is exact
in arithmetic but not in rounding, so after an undo the comparison allows
1e-12.
"""

from __future__ import annotations

import contextlib
import io
import json

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from core.datasets import make_banana
from core.loop import STATE_FORMAT, ActiveLearningLoop
from core.metrics import accuracy, roc_auc
from core.presets import DOCUMENT_REVIEW
from core.threads import kernel_threads, set_kernel_threads

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
    ("random", "lasvm"),
    ("largest-positive", "ramp-review"),  # the review model: class bounds that move with every label
    # class_weight="balanced": boxes re-set (and the model relearned) when the rounded class ratio changes
    ("near-boundary", "incremental-balanced"),
    ("near-boundary", "active-set-balanced"),
    ("randomized-search", "lasvm-balanced"),
]
IDS = [f"{s}-{v}" for s, v in CASES]
C_OF = {"incremental": 10.0, "lasvm": 10.0, "ramp": 1.0, "active-set": 10.0}


def config(strategy: str, solver: str, seed: int, **solver_params) -> dict:
    """The loop's arguments for a case; "ramp-review" is the ramp solver with the review model's parameters
    (core.presets.DOCUMENT_REVIEW), "NAME-balanced" the solver NAME with class_weight="balanced"."""
    if solver == "ramp-review":
        params = dict(DOCUMENT_REVIEW["solver_params"], **solver_params)
        return dict(strategy=strategy, solver="ramp", seed=seed, solver_params=params)
    if solver.endswith("-balanced"):
        solver = solver.removesuffix("-balanced")
        solver_params = dict(solver_params, class_weight="balanced")
    return dict(strategy=strategy, solver=solver, seed=seed, solver_params={"C": C_OF[solver], **solver_params})


LARGE = 256 * 2**20
# (threads of the live run, threads of the resumed run, cache budget of the live run, of the resumed run)
VARIANTS = [(1, 2, LARGE, 0), (2, 1, 0, LARGE)]
VARIANT_IDS = ["threads-1-then-2-cache-large-then-none", "threads-2-then-1-cache-none-then-large"]


@contextlib.contextmanager
def threads(n):
    """n kernel threads and n BLAS threads (the library still runs a solver's own algebra on one)."""
    before = kernel_threads()
    set_kernel_threads(n)
    try:
        with threadpool_limits(n):
            yield
    finally:
        set_kernel_threads(before)


def with_cache(loop, budget):
    """The loop's solver with a cache of ``budget`` bytes, emptied (what it held must not matter)."""
    loop.solver.cache.budget_bytes = budget
    loop.solver.cache.clear()
    return loop


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


def assert_identical_loops(a, b):
    """``assert_same_loop`` bit for bit: decision values, kept scores, evaluation scores, history."""
    assert a.events == b.events
    assert np.array_equal(a.labels, b.labels) and np.array_equal(a.skipped_mask, b.skipped_mask)
    assert np.array_equal(fresh_scores(a), fresh_scores(b))
    assert np.array_equal(a.pool_scores(), b.pool_scores())
    if a.eval_X is not None:
        assert np.array_equal(a.evaluation_scores(), b.evaluation_scores())
        # kept columns summed like decision values: the same bits as scoring the evaluation items afresh
        assert np.array_equal(a.evaluation_scores(), a.solver.decision_function(X=a.eval_X))
    assert (a.seen, a.cursor, a.passes) == (b.seen, b.cursor, b.passes)
    ha = a.history_frame().drop(columns=NOT_COMPARED)
    hb = b.history_frame().drop(columns=NOT_COMPARED)
    for column in ha.columns:
        if ha[column].dtype.kind == "f":
            assert np.array_equal(ha[column], hb[column], equal_nan=True), column
        else:
            assert ha[column].tolist() == hb[column].tolist(), column
    qa, qb = a.next_query(), b.next_query()
    assert (qa is None) == (qb is None)
    if qa is not None:
        assert qa.index == qb.index and qa.score == qb.score


def answer_without_undo(loop, y, n, rng):
    for _ in range(n):
        q = loop.next_query()
        if q is None:
            return loop
        if rng.random() < 0.1:
            loop.skip(q.index)
        else:
            loop.teach(q.index, int(y[q.index]))
    return loop


@pytest.mark.parametrize("variant", VARIANTS, ids=VARIANT_IDS)
@pytest.mark.parametrize(("strategy", "solver"), CASES, ids=IDS)
def test_a_resumed_loop_is_the_loop_that_never_stopped_bit_for_bit(data, strategy, solver, variant):
    """Other thread counts and another cache state after the restart change not a single bit."""
    X, y, Xe, ye = data
    live_threads, resumed_threads, live_cache, resumed_cache = variant
    cfg = config(strategy, solver, 4, cache_bytes=live_cache)
    with threads(live_threads):
        loop = ActiveLearningLoop(X, eval_X=Xe, eval_y=ye, **cfg)
        answer_without_undo(loop, y, 45, np.random.default_rng(1))
        arrays, meta = through_storage(*loop.to_state())
        n_snapshot = len(loop.events)
        answer_without_undo(loop, y, 40, np.random.default_rng(2))
    with threads(resumed_threads):
        restored = with_cache(ActiveLearningLoop.from_state(arrays, meta, X, eval_X=Xe, eval_y=ye), resumed_cache)
        restored.replay(loop.events[n_snapshot:])
        assert_identical_loops(restored, loop)
        # ... and both learn on alike
        answer_without_undo(restored, y, 8, np.random.default_rng(3))
    with threads(live_threads):
        answer_without_undo(loop, y, 8, np.random.default_rng(3))
    assert_identical_loops(restored, loop)


@pytest.mark.parametrize("variant", VARIANTS, ids=VARIANT_IDS)
@pytest.mark.parametrize("buffer_rows", [1000, 12])
@pytest.mark.parametrize(("strategy", "solver"), [("near-boundary", "incremental"), ("largest-positive", "lasvm")])
def test_float32_kernel_rows_resume_bit_for_bit_and_stay_close_to_the_decision_values(
    data, strategy, solver, buffer_rows, variant, monkeypatch
):
    """``kernel_rows="float32"``: the kept rows are rounded once, the same way on every run, so a
    resumed loop (other threads, other cache) is still the loop that never stopped, bit for bit; the
    kept scores stay within float32 rounding of the solver's decision values (rows in the buffer and,
    with a buffer of 12 rows, rows added from the solver's cache beside them)."""
    import core.pool_scores

    X, y, Xe, ye = data
    monkeypatch.setattr(core.pool_scores, "ROW_BUFFER_BYTES", buffer_rows * len(X) * 4)
    live_threads, resumed_threads, live_cache, resumed_cache = variant
    cfg = dict(config(strategy, solver, 4, cache_bytes=live_cache), kernel_rows="float32")
    with threads(live_threads):
        loop = ActiveLearningLoop(X, eval_X=Xe, eval_y=ye, **cfg)
        answer_without_undo(loop, y, 45, np.random.default_rng(1))
        assert loop.scores.rowbuf.dtype == np.float32 and len(loop.scores.slots) <= buffer_rows
        arrays, meta = through_storage(*loop.to_state())
        n_snapshot = len(loop.events)
        answer_without_undo(loop, y, 40, np.random.default_rng(2))
        if buffer_rows == 12:
            # the buffer is full: the rows of later margin vectors come from the cache (or take
            # the slot of a kept row that stopped changing: see the next test)
            assert len(loop.scores.slots) == 12 == len(loop.scores.slot_items)
    with threads(resumed_threads):
        restored = with_cache(ActiveLearningLoop.from_state(arrays, meta, X, eval_X=Xe, eval_y=ye), resumed_cache)
        assert restored.kernel_rows == "float32"
        restored.replay(loop.events[n_snapshot:])
        assert np.array_equal(restored.pool_scores(), loop.pool_scores())
        assert restored.next_query().index == loop.next_query().index
    exact = fresh_scores(loop)
    assert not np.array_equal(loop.pool_scores(), exact)  # (rounded rows: not the decision values' bits)
    np.testing.assert_allclose(loop.pool_scores(), exact, rtol=0, atol=1e-5)
    with pytest.raises(ValueError, match="kernel_rows"):
        ActiveLearningLoop(X, kernel_rows="float16")


@pytest.mark.parametrize("variant", VARIANTS, ids=VARIANT_IDS)
@pytest.mark.parametrize(("strategy", "solver"), CASES, ids=IDS)
def test_snapshot_plus_later_events_equals_the_loop_that_learned_them_all(data, strategy, solver, variant):
    X, y, Xe, ye = data
    live_threads, resumed_threads, live_cache, resumed_cache = variant
    cfg = config(strategy, solver, 4, cache_bytes=live_cache)
    with threads(live_threads):
        loop = ActiveLearningLoop(X, eval_X=Xe, eval_y=ye, **cfg)
        answer(loop, y, 45, np.random.default_rng(1))
        arrays, meta = through_storage(*loop.to_state())
        assert meta["format"] == STATE_FORMAT and "events" in arrays and "pool_f" in arrays
        n_snapshot = len(loop.events)
        answer(loop, y, 25, np.random.default_rng(2))

    with threads(resumed_threads):
        restored = with_cache(ActiveLearningLoop.from_state(arrays, meta, X, eval_X=Xe, eval_y=ye), resumed_cache)
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
    cfg = config(strategy, solver, 9)
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
    loop = ActiveLearningLoop(
        X, strategy="near-boundary", solver=solver, seed=6, eval_X=Xe, eval_y=ye, solver_params={"C": 10.0}
    )
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
    assert len(loop.evaluation.slot) <= loop.n_labels


def test_evaluation_beyond_the_column_budget(data, monkeypatch):
    import core.evaluation

    X, y, Xe, ye = data
    monkeypatch.setattr(core.evaluation, "EVAL_BUFFER_BYTES", 8 * len(Xe) * 6)  # room for six columns
    loop = ActiveLearningLoop(X, strategy="near-boundary", seed=6, eval_X=Xe, eval_y=ye, solver_params={"C": 10.0})
    answer(loop, y, 30)
    assert loop.history[-1].n_sv > 6
    np.testing.assert_allclose(loop.evaluation_scores(), loop.solver.decision_function(X=Xe), rtol=0, atol=1e-9)
    assert len(loop.evaluation.slot) <= 6


# --------------------------------------------------------------------------- the app's sessions


@pytest.fixture
def lab(tmp_path):
    from app.services import MarginLab

    url = f"sqlite:///{tmp_path / 'resume.db'}"
    svc = MarginLab.from_url(url)
    svc.ensure_demo_dataset()
    return url, svc


def label_session(svc, strategy, solver, n, seed=0):
    """Answer ``n`` items with the true labels, skipping every 11th and undoing after every 17th."""
    dataset_id = svc.datasets()[0].id
    run = svc.start_session(dataset_id=dataset_id, annotator="ida", strategy=strategy, solver=solver, seed=seed)
    for k in range(n):
        item = run.shown.item_index
        assert run.answer(0 if k % 11 == 10 else int(run.y_true[item]), item_index=item).ok
        if k % 17 == 16:
            assert run.undo().ok
    return run


def assert_same_run(a, b):
    assert [(x.item_index, x.value, x.label_id) for x in a.answers] == [
        (x.item_index, x.value, x.label_id) for x in b.answers
    ]
    np.testing.assert_allclose(a.loop.pool_scores(), b.loop.pool_scores(), rtol=0, atol=1e-12)
    np.testing.assert_allclose(
        a.loop.solver.decision_function(np.arange(a.loop.n_items)),
        b.loop.solver.decision_function(np.arange(b.loop.n_items)),
        rtol=0,
        atol=1e-12,
    )
    np.testing.assert_allclose(a.evaluation_scores(), b.evaluation_scores(), rtol=0, atol=1e-12)
    assert a.shown.item_index == b.shown.item_index
    ha, hb = a.history().drop(columns=NOT_COMPARED), b.history().drop(columns=NOT_COMPARED)
    for column in ha.columns:
        if ha[column].dtype.kind == "f":
            np.testing.assert_allclose(ha[column], hb[column], rtol=0, atol=1e-12, err_msg=column)
        else:
            assert ha[column].tolist() == hb[column].tolist(), column


@pytest.mark.parametrize(
    ("strategy", "solver"),
    [
        ("near-boundary", "incremental"),
        ("randomized-search", "lasvm"),
        ("ramp-region", "ramp"),
        ("near-boundary", "active-set"),
        ("autoactive", "lasvm"),
        ("random", "lasvm"),
        ("near-boundary", "lasvm"),
    ],
)
def test_a_restarted_app_resumes_from_the_latest_snapshot(lab, strategy, solver):
    from app.services import SNAPSHOT_EVERY, MarginLab
    from storage import repository as repo

    url, svc = lab
    run = label_session(svc, strategy, solver, 2 * SNAPSHOT_EVERY + 12)
    n = len(run.answers)
    snapshot = repo.latest_snapshot(svc.engine, run.session_id)
    assert snapshot is not None and snapshot.n_events == run.snapshot_events
    assert snapshot.n_events % SNAPSHOT_EVERY == 0 and n - SNAPSHOT_EVERY < snapshot.n_events < n

    restarted = MarginLab.from_url(url).open_session(run.session_id)
    assert restarted.resumed_from == snapshot.n_events  # from the snapshot, not a full replay
    assert_same_run(restarted, run)
    # undo back past the snapshot goes as in the live run (which has every state in memory)
    for _ in range(n - snapshot.n_events + 2):
        assert restarted.undo().ok
        run.loop.undo()  # the live run follows without touching the database
        run.answers.pop()
    run.readouts.forget_metrics(after=run.n_labels)  # as undo trims the AUCs of the scores when asked (no split)
    run.ask()
    run.version += 1  # its cached read-outs are stale
    assert_same_run(restarted, run)
    # the undo removed the stale snapshot: the next resume starts from an older one (or replays)
    third = MarginLab.from_url(url).open_session(run.session_id)
    assert third.resumed_from is None or third.resumed_from < snapshot.n_events
    assert_same_run(third, run)
    # labelling goes on alike
    for other in (third, run):
        for _ in range(5):
            item = other.shown.item_index
            if other is run:  # the live run learns what the third process stored
                run.loop.next_query()
                run.loop.teach(other.shown.pool_index, int(run.y_true[item]))
                run.answers.append(third.answers[len(run.answers)])
                run.ask()
                run.version += 1
            else:
                assert other.answer(int(other.y_true[item]), item_index=item).ok
    assert_same_run(third, run)


@pytest.mark.parametrize("variant", VARIANTS, ids=VARIANT_IDS)
@pytest.mark.parametrize("strategy", ["randomized-search", "autoactive", "random", "near-boundary"])
def test_a_restarted_lasvm_session_has_the_same_model_and_next_item_bit_for_bit(lab, strategy, variant):
    """The issue's symptom: lasvm sessions resumed after a restart with another model and next item.

    The restarted process resumes from the latest snapshot plus the answers after it, with other
    thread counts and another kernel-cache state than the process that labelled; the model, the
    kept scores, the evaluation and the item on screen are the same bits.
    """
    from app.services import MarginLab
    from app.services.snapshots import SNAPSHOT_EVERY

    url, svc = lab
    live_threads, resumed_threads, live_cache, resumed_cache = variant
    # real-valued features (the bundled digits are small integers, whose inner products are exact in
    # any summation order and so cannot show a fault of the kind the issue reported)
    rng = np.random.default_rng(8)
    X, y = make_banana(400, rng, noise=0.8)
    X = np.hstack([X, rng.normal(size=(400, 6))]) / 3.0
    csv = "a,b,c,d,e,f,g,h,label\n" + "\n".join(
        ",".join(repr(float(v)) for v in row) + f",{int(t)}" for row, t in zip(X, y, strict=True)
    )
    dataset_id = svc.import_csv(csv.encode(), name="real-valued", label_column="label", positive="1").dataset_id
    with threads(live_threads):
        run = svc.start_session(dataset_id=dataset_id, annotator="ida", strategy=strategy, solver="lasvm", seed=3)
        with_cache(run.loop, live_cache)
        for k in range(2 * SNAPSHOT_EVERY + SNAPSHOT_EVERY - 1):  # (the most answers after a snapshot)
            item = run.shown.item_index
            assert run.answer(0 if k % 11 == 10 else int(run.y_true[item]), item_index=item).ok
    with threads(resumed_threads):
        restarted = MarginLab.from_url(url).open_session(run.session_id)
        with_cache(restarted.loop, resumed_cache)
        assert restarted.resumed_from == 2 * SNAPSHOT_EVERY  # from the snapshot, then the answers after it
        a, b = run.loop, restarted.loop
        assert a.events == b.events
        assert np.array_equal(a.solver.decision_function(), b.solver.decision_function())
        assert np.array_equal(a.pool_scores(), b.pool_scores())
        assert np.array_equal(run.evaluation_scores(), restarted.evaluation_scores())
        assert restarted.shown.item_index == run.shown.item_index
        ha, hb = run.history().drop(columns=NOT_COMPARED), restarted.history().drop(columns=NOT_COMPARED)
        for column in ha.columns:
            if ha[column].dtype.kind == "f":
                assert np.array_equal(ha[column], hb[column], equal_nan=True), column
            else:
                assert ha[column].tolist() == hb[column].tolist(), column
        # and the next labels go alike
        for _ in range(15):
            item = restarted.shown.item_index
            assert restarted.answer(int(restarted.y_true[item]), item_index=item).ok
            run.loop.next_query()
            run.loop.teach(run.shown.pool_index, int(run.y_true[item]))
            run.answers.append(restarted.answers[len(run.answers)])
            run.ask()
            run.version += 1
            assert restarted.shown.item_index == run.shown.item_index
        assert np.array_equal(a.solver.decision_function(), b.solver.decision_function())


def test_a_snapshot_that_does_not_match_the_events_is_not_used(lab):
    from app.services import MarginLab
    from storage import repository as repo

    url, svc = lab
    run = label_session(svc, "randomized-search", "lasvm", 20)
    run.save_snapshot()
    n, arrays, meta = repo.latest_snapshot(svc.engine, run.session_id)
    assert n == len(run.answers)

    def resume_with(arrays, meta):
        repo.save_snapshot(svc.engine, run.session_id, n_events=n, arrays=arrays, meta=meta)
        return MarginLab.from_url(url).open_session(run.session_id)

    flipped = dict(arrays, events=arrays["events"] * np.array([1, -1]))  # other values, same count
    other_ids = json.loads(json.dumps(meta))
    other_ids["service"]["label_ids"][3] += 1000
    other_config = json.loads(json.dumps(meta))
    other_config["loop"]["config"]["seed"] += 1
    for bad_arrays, bad_meta, why in [
        (flipped, meta, "items or values"),
        (arrays, other_ids, "label ids"),
        (arrays, other_config, "configuration"),
    ]:
        resumed = resume_with(bad_arrays, bad_meta)
        assert resumed.resumed_from is None and why in resumed.resume_note
        assert_same_run(resumed, run)
    good = resume_with(arrays, meta)
    assert good.resumed_from == n
    assert_same_run(good, run)


def test_closing_a_session_stores_a_snapshot_of_everything(lab):
    from app.services import MarginLab
    from storage import repository as repo

    url, svc = lab
    run = label_session(svc, "near-boundary", "incremental", 13)
    assert repo.latest_snapshot(svc.engine, run.session_id) is None  # fewer answers than SNAPSHOT_EVERY
    assert svc.close_session(run.session_id).ok
    snapshot = repo.latest_snapshot(svc.engine, run.session_id)
    assert snapshot.n_events == len(run.answers)
    assert repo.get_session(svc.engine, run.session_id).status == "closed"
    reopened = MarginLab.from_url(url).open_session(run.session_id)
    assert reopened.resumed_from == len(run.answers)
    assert_same_run(reopened, run)


def test_a_stopping_server_stores_a_snapshot_of_the_sessions_behind_theirs(lab):
    """``save_snapshots`` (what the app runs when its server stops): a snapshot for each session in
    memory with answers its latest snapshot does not cover, none for one that is up to date; the
    next start resumes from it without learning any answer again."""
    from app.services import SNAPSHOT_EVERY, MarginLab
    from storage import repository as repo

    url, svc = lab
    run = label_session(svc, "near-boundary", "incremental", SNAPSHOT_EVERY + 7)
    assert repo.latest_snapshot(svc.engine, run.session_id).n_events == SNAPSHOT_EVERY
    assert run.snapshot_is_behind
    assert svc.save_snapshots() == 1
    assert repo.latest_snapshot(svc.engine, run.session_id).n_events == len(run.answers)
    assert not run.snapshot_is_behind and svc.save_snapshots() == 0  # nothing new: nothing stored
    restarted = MarginLab.from_url(url)
    reopened = restarted.open_session(run.session_id)
    assert reopened.resumed_from == len(run.answers)
    assert_same_run(reopened, run)
    assert not reopened.snapshot_is_behind and restarted.save_snapshots() == 0
    # an undo and a new answer: as many answers as the snapshot covers, but not the same ones
    assert reopened.undo().ok
    item = reopened.shown.item_index
    assert reopened.answer(-int(reopened.y_true[item]) or 1, item_index=item).ok
    assert len(reopened.answers) == len(run.answers) and reopened.snapshot_is_behind
    assert restarted.save_snapshots() == 1
    third = MarginLab.from_url(url).open_session(run.session_id)
    assert third.resumed_from == len(third.answers)
    assert_same_run(third, reopened)


def test_a_corrected_answer_whose_snapshot_was_not_stored_leaves_the_session_behind(lab, monkeypatch):
    """A correction keeps the answer's label id; when the snapshot after it cannot be stored, the
    session is still behind its snapshots, and the stopping server stores one."""
    from app.services import MarginLab
    from storage import repository as repo
    from storage.errors import StorageError

    url, svc = lab
    run = label_session(svc, "near-boundary", "incremental", 9)
    assert svc.save_snapshots() == 1 and not run.snapshot_is_behind
    answer = run.answers[3]
    real = repo.save_snapshot

    def full_disk(*args, **kwargs):
        raise StorageError("disk full")

    monkeypatch.setattr(repo, "save_snapshot", full_disk)
    assert run.change_label(answer.label_id, -answer.value or 1).ok
    assert run.snapshot_is_behind
    monkeypatch.setattr(repo, "save_snapshot", real)
    assert svc.save_snapshots() == 1
    reopened = MarginLab.from_url(url).open_session(run.session_id)
    assert reopened.resumed_from == len(run.answers)
    assert_same_run(reopened, run)


def test_the_label_is_stored_before_the_loop_learns_it(lab, monkeypatch):
    from storage import repository as repo

    url, svc = lab
    run = label_session(svc, "near-boundary", "incremental", 3)
    seen = []
    teach = run.loop.teach

    def spy(i, y):
        seen.append(len(repo.label_events(svc.engine, run.session_id)))
        return teach(i, y)

    monkeypatch.setattr(run.loop, "teach", spy)
    item = run.shown.item_index
    assert run.answer(1, item_index=item).ok
    assert seen == [len(run.answers)]


def test_without_true_labels_the_curve_is_the_auc_of_the_scores_when_asked(lab):
    from app.services import MarginLab

    url, svc = lab
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(-1, 1, (40, 3)), rng.normal(1, 1, (40, 3))])
    truth = np.repeat([-1, 1], 40)
    csv = "a,b,c\n" + "\n".join(f"{x[0]},{x[1]},{x[2]}" for x in X)
    dataset_id = svc.import_csv(csv.encode(), name="plain").dataset_id
    run = svc.start_session(dataset_id=dataset_id, annotator="jo", strategy="near-boundary")
    assert not run.has_evaluation
    for k in range(14):
        item = run.shown.item_index
        run.answer(0 if k == 5 else int(truth[item]), item_index=item)
        if k in (8, 9):
            run.history()  # read while labelling, then undo: the kept values must follow
            run.undo()
    history = run.history()
    labelled = [a for a in run.answers if a.value != 0]
    assert len(history) == len(labelled)
    for k in range(len(labelled)):
        y = np.array([a.value for a in labelled[: k + 1]], dtype=float)
        s = np.array([a.score for a in labelled[: k + 1]], dtype=float)
        expected = roc_auc(y, s) if len(np.unique(y)) == 2 else np.nan
        np.testing.assert_allclose(history["auc"].iloc[k], expected, rtol=0, atol=1e-12)
    run.save_snapshot()
    resumed = MarginLab.from_url(url).open_session(run.session_id)
    assert resumed.resumed_from == len(run.answers)
    assert_same_run(resumed, run)


@pytest.mark.parametrize("variant", VARIANTS, ids=VARIANT_IDS)
def test_kept_rows_that_stop_changing_give_their_slots_alike_in_a_resumed_loop(variant, monkeypatch):
    """Once the row buffer is full, the row of an item whose coefficient changes takes the slot of
    the first kept row whose coefficient did not; the choice depends on the loop's state alone, so a
    loop resumed from a snapshot (other threads, another cache) keeps the same rows in the same slots
    and has the same scores, bit for bit, as the loop that never stopped."""
    import core.pool_scores
    from core.datasets import make_gaussians

    X, y = make_gaussians(400, np.random.default_rng(5), separation=1.0, n_features=5)  # overlapping
    monkeypatch.setattr(core.pool_scores, "ROW_BUFFER_BYTES", 6 * len(X) * 8)
    live_threads, resumed_threads, live_cache, resumed_cache = variant
    cfg = dict(strategy="near-boundary", solver="incremental", seed=4, solver_params={"cache_bytes": live_cache})
    with threads(live_threads):
        loop = ActiveLearningLoop(X, **cfg)
        answer_without_undo(loop, y, 30, np.random.default_rng(1))
        arrays, meta = through_storage(*loop.to_state())
        n_snapshot = len(loop.events)
        given_up = set()
        for _ in range(40):
            before = list(loop.scores.slot_items)
            answer_without_undo(loop, y, 1, np.random.default_rng(len(loop.events)))
            given_up |= set(before) - set(loop.scores.slot_items)
        assert given_up and len(loop.scores.slot_items) == 6
        if live_cache:  # a row given up goes to the solver's cache
            assert any(loop.solver.cache.has_row(i) for i in given_up - set(loop.scores.slot_items))
    with threads(resumed_threads):
        restored = with_cache(ActiveLearningLoop.from_state(arrays, meta, X), resumed_cache)
        restored.replay(loop.events[n_snapshot:])
        assert restored.scores.slot_items == loop.scores.slot_items
        assert np.array_equal(restored.pool_scores().view(np.int64), loop.pool_scores().view(np.int64))
        assert restored.next_query().index == loop.next_query().index
    np.testing.assert_allclose(loop.pool_scores(), loop.solver.decision_function(np.arange(len(X))), rtol=0, atol=1e-9)


def test_a_state_naming_a_kept_row_twice_or_outside_the_pool_keeps_one_slot_per_row(data):
    """A saved list of kept rows is read as one slot per item within the pool (a state written by
    hand or damaged could repeat an item: its two slots would have overwritten each other's row)."""
    X, y, _, _ = data
    loop = ActiveLearningLoop(X, strategy="near-boundary", solver="incremental", seed=4)
    answer_without_undo(loop, y, 20, np.random.default_rng(1))
    arrays, meta = loop.to_state()
    first, second = arrays["row_slots"][:2].tolist()
    arrays = dict(arrays, row_slots=np.array([first, first, len(X) + 5, second], dtype=np.int64))
    restored = ActiveLearningLoop.from_state(arrays, meta, X)
    q = restored.next_query()
    restored.teach(q.index, int(y[q.index]))
    kept = restored.scores
    assert kept.slot_items[:2] == [first, second] and len(kept.slots) == len(kept.slot_items)
    assert all(kept.slots[j] == k for k, j in enumerate(kept.slot_items))
    np.testing.assert_allclose(
        restored.pool_scores(), restored.solver.decision_function(np.arange(len(X))), rtol=0, atol=1e-9
    )


def test_a_restored_loop_puts_its_kept_kernel_rows_back_at_the_first_update(data):
    """Opening a snapshot computes no pool-wide kernel row (the next item needs only the kept
    scores); the rows the original had buffered come back, in its order, before the next update."""
    X, y, _, _ = data
    loop = ActiveLearningLoop(
        X, strategy="near-boundary", solver="incremental", seed=4, solver_params={"C": C_OF["incremental"]}
    )
    answer_without_undo(loop, y, 30, np.random.default_rng(1))
    arrays, meta = through_storage(*loop.to_state())
    assert len(arrays["row_slots"]) > 0
    restored = ActiveLearningLoop.from_state(arrays, meta, X)
    evals = restored.solver.cache.n_evals
    assert restored.scores.rowbuf is None and not restored.scores.slots
    np.testing.assert_array_equal(restored.pool_scores(), loop.pool_scores())
    assert restored.next_query().index == loop.next_query().index
    # a snapshot of the restored loop before any update keeps the rows and their order
    np.testing.assert_array_equal(through_storage(*restored.to_state())[0]["row_slots"], arrays["row_slots"])
    restored.scores.restore_buffered_rows(restored.solver)  # (what the first update does first)
    assert restored.solver.cache.n_evals == evals  # not counted as the solver's work
    kept = len(loop.scores.slots)
    assert restored.scores.slot_items == loop.scores.slot_items
    np.testing.assert_array_equal(restored.scores.rowbuf[:kept], loop.scores.rowbuf[:kept])
    item = loop.next_query().index
    loop.teach(item, int(y[item]))
    restored2 = ActiveLearningLoop.from_state(arrays, meta, X)
    for other in (restored, restored2):  # rows put back before, or by, the update
        other.teach(item, int(y[item]))
        assert other.scores.slot_items == loop.scores.slot_items
        np.testing.assert_array_equal(other.pool_scores(), loop.pool_scores())


@pytest.mark.parametrize(("live_threads", "ahead_threads"), [(1, 2), (2, 1)])
def test_a_row_computed_ahead_changes_when_the_work_is_done_not_a_bit_of_the_result(data, live_threads, ahead_threads):
    """The queried item's kernel row, computed in the background while the analyst reads the
    item (large pools), gives the loop the same bits as computing it at the update, whatever
    the thread counts; answers to other items, skips and undos leave it unused or unharmed."""
    X, y, Xe, ye = data
    cfg = dict(strategy="near-boundary", solver="incremental", seed=2, solver_params={"C": C_OF["incremental"]})
    with threads(live_threads):
        plain = ActiveLearningLoop(X, eval_X=Xe, eval_y=ye, **cfg)
        plain.scores.row_ahead_min_entries = 2**62  # never
    with threads(ahead_threads):
        ahead = ActiveLearningLoop(X, eval_X=Xe, eval_y=ye, **cfg)
        ahead.scores.row_ahead_min_entries = 0  # always (the pool is small)
    rng, used = np.random.default_rng(7), 0
    for _ in range(70):
        moves = []
        for loop, n in ((plain, live_threads), (ahead, ahead_threads)):
            with threads(n):
                q = loop.next_query()
                if loop is ahead and ahead.scores.row_ahead is not None:
                    used += 1
                    assert ahead.scores.row_ahead[0] == q.index
                draw = rng.random() if loop is plain else moves[0]
                moves.append(draw)
                if draw < 0.08 and loop.n_labels:
                    loop.undo()
                elif draw < 0.15:
                    loop.skip(q.index)
                elif draw < 0.35:  # an answer to another item than the one asked (as near the boundary)
                    free = np.flatnonzero(loop._available & (np.arange(loop.n_items) != q.index))
                    other = int(free[np.argmin(np.abs(loop.pool_scores()[free]))])
                    loop.teach(other, int(y[other]))
                else:
                    loop.teach(q.index, int(y[q.index]))
        # the same work counted (a row computed ahead is counted when used, as if computed then)
        assert ahead.solver.cache.n_evals == plain.solver.cache.n_evals
        assert_identical_loops(ahead, plain)
        plain.solver.cache.n_evals = ahead.solver.cache.n_evals  # (the check above scored only one of them)
    assert used > 30  # (the rows were computed ahead, not skipped)
