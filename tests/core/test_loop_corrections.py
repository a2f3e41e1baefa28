"""Changing or removing an earlier label in the active-learning loop (core.loop): the model becomes the one
that learned the corrected answers from the start.

Exact solvers (incremental, active-set) unlearn and learn again: compared with a loop that learned the
corrected answers from the start, to tolerance, with the KKT conditions checked, and with scikit-learn's SVC
on the corrected labels as an independent reference. The other solvers are rebuilt from the corrected events:
identical, coefficient for coefficient, to a replay of those events.
"""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from core.datasets import make_banana
from core.loop import ActiveLearningLoop

C = 10.0
EXACT = [("near-boundary", "incremental"), ("near-boundary", "active-set")]
REBUILT = [("randomized-search", "lasvm"), ("ramp-region", "ramp"), ("random", "lasvm")]


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(21)
    X, y = make_banana(260, rng, noise=0.8)
    return X / 5.0, y


def labelled_loop(X, y, strategy, solver, n=45, skip_at=(7, 30), seed=4, **opts):
    loop = ActiveLearningLoop(X, strategy=strategy, solver=solver, seed=seed, solver_params={"C": C}, **opts)
    while loop.n_labels < n:
        q = loop.next_query()
        if len(loop.events) in skip_at:
            loop.skip(q.index)
        else:
            loop.teach(q.index, int(y[q.index]))
    return loop


def config(loop):
    return {k: v for k, v in loop.config().items()}


def scores(loop):
    return loop.solver.decision_function(np.arange(loop.n_items))


def label_made_ago(loop, labels_ago):
    """The item labelled ``labels_ago`` labels before the last one (skips not counted)."""
    taught = [(i, v) for i, v in loop.events if v != 0]
    return taught[-1 - labels_ago]


def assert_optimal_for(loop, X, labels):
    """The solver solves the SVM of exactly these labels: KKT within tol, and SVC (a reference) agrees."""
    from sklearn.svm import SVC

    learned = np.flatnonzero(loop.solver.y)
    assert sorted(learned.tolist()) == sorted(labels)
    assert loop.solver.kkt_gap() <= max(loop.solver.tol, 1e-8)
    items = np.array(sorted(labels))
    y_l = np.array([labels[i] for i in items], dtype=float)
    gamma = loop.solver.kernel.gamma
    reference = SVC(C=C, kernel="rbf", gamma=gamma, tol=1e-10).fit(X[items], y_l)
    np.testing.assert_allclose(scores(loop), reference.decision_function(X), rtol=0, atol=1e-3)


@pytest.mark.parametrize(("strategy", "solver"), EXACT)
def test_exact_solvers_change_a_label_made_20_labels_ago_by_unlearning_and_learning(data, strategy, solver):
    X, y = data
    loop = labelled_loop(X, y, strategy, solver)
    item, old = label_made_ago(loop, 20)
    events_before = list(loop.events)
    correction = loop.change_label(item, -old)
    assert (correction.item, correction.old, correction.new, correction.exact) == (item, old, -old, True)
    assert correction.position == events_before.index((item, old))
    corrected = [(i, -v if i == item else v) for i, v in events_before]
    assert loop.events == corrected  # the event keeps its place
    assert loop.labels[item] == -old and loop.n_labels == 45

    from_start = ActiveLearningLoop.from_events(corrected, X, **config(loop))
    np.testing.assert_allclose(scores(loop), scores(from_start), rtol=0, atol=1e-8)
    assert loop.solver.dual_objective() == pytest.approx(from_start.solver.dual_objective(), rel=1e-9, abs=1e-9)
    assert_optimal_for(loop, X, {i: v for i, v in corrected if v != 0})
    np.testing.assert_allclose(loop.pool_scores(), scores(loop), rtol=0, atol=1e-9)  # the kept pool scores too
    # the history row of that label now says the corrected answer; the others are as they were
    assert [r.label for r in loop.history] == [v for _, v in corrected if v != 0]


@pytest.mark.parametrize(("strategy", "solver"), REBUILT)
def test_other_solvers_change_a_label_to_exactly_a_replay_of_the_corrected_events(data, strategy, solver):
    X, y = data
    loop = labelled_loop(X, y, strategy, solver)
    item, old = label_made_ago(loop, 20)
    correction = loop.change_label(item, -old)
    assert correction.exact is False
    replayed = ActiveLearningLoop.from_events(loop.events, X, **config(loop))
    sv, coef, b = loop.solver.coefficients()
    sv2, coef2, b2 = replayed.solver.coefficients()
    assert np.array_equal(sv, sv2) and np.array_equal(coef, coef2) and b == b2  # identical, not close
    assert np.array_equal(scores(loop), scores(replayed))
    np.testing.assert_allclose(loop.pool_scores(), scores(loop), rtol=0, atol=1e-9)


@pytest.mark.parametrize(("strategy", "solver"), EXACT + REBUILT[:2])
def test_removing_an_earlier_label_or_skip(data, strategy, solver):
    X, y = data
    loop = labelled_loop(X, y, strategy, solver)
    item, old = label_made_ago(loop, 20)
    skipped = next(i for i, v in loop.events if v == 0)
    n_history = len(loop.history)
    correction = loop.remove_label(item)
    assert (correction.old, correction.new) == (old, None)
    assert item not in [i for i, _ in loop.events] and loop.n_labels == 44 and len(loop.history) == n_history - 1
    assert [r.n_labels for r in loop.history] == list(range(1, 45))  # renumbered
    assert [r.step for r in loop.history] == [k + 1 for k, (_, v) in enumerate(loop.events) if v != 0]
    loop.remove_label(skipped)
    assert loop.labels[item] == 0 and not loop.skipped_mask[skipped]
    remaining = list(loop.events)
    from_start = ActiveLearningLoop.from_events(remaining, X, **config(loop))
    if loop.solver.exact_unlearn:
        np.testing.assert_allclose(scores(loop), scores(from_start), rtol=0, atol=1e-8)
        assert_optimal_for(loop, X, {i: v for i, v in remaining if v != 0})
    else:
        assert np.array_equal(scores(loop), scores(from_start))
    np.testing.assert_allclose(loop.pool_scores(), scores(loop), rtol=0, atol=1e-9)
    # both items can be asked about and labelled again
    loop.teach(item, old)
    loop.teach(skipped, int(y[skipped]))
    assert loop.n_labels == 46


@pytest.mark.parametrize(("strategy", "solver"), EXACT + REBUILT[:2])
def test_labelling_and_undo_after_a_correction_go_on_from_the_corrected_model(data, strategy, solver):
    X, y = data
    loop = labelled_loop(X, y, strategy, solver)
    item, old = label_made_ago(loop, 20)
    loop.change_label(item, -old)
    after_change = scores(loop)
    for _ in range(6):
        q = loop.next_query()
        loop.teach(q.index, int(y[q.index]))
    reference = ActiveLearningLoop.from_events(loop.events, X, **config(loop))
    for _ in range(6):
        loop.undo()  # the kept states from before the correction are not used: they held the old answer
    if loop.solver.exact_unlearn:
        np.testing.assert_allclose(scores(loop), after_change, rtol=0, atol=1e-8)
    else:
        assert np.array_equal(scores(loop), after_change)
    for _ in range(5):
        loop.undo()  # answers given after the corrected one but before the correction
    replayed = ActiveLearningLoop.from_events(loop.events, X, **config(loop))
    assert (item, -old) in loop.events
    if loop.solver.exact_unlearn:
        np.testing.assert_allclose(scores(loop), scores(replayed), rtol=0, atol=1e-8)
    else:
        assert np.array_equal(scores(loop), scores(replayed))
    assert len(reference.events) == len(loop.events) + 11
    # and the saved state of a corrected loop continues as the loop does
    arrays, meta = loop.to_state(previous=3)
    restored = ActiveLearningLoop.from_state(arrays, meta, X)
    assert np.array_equal(scores(restored), scores(loop))
    assert restored.next_query().index == loop.next_query().index
    restored.undo()
    loop.undo()
    np.testing.assert_allclose(scores(restored), scores(loop), rtol=0, atol=1e-12)


def test_the_only_label_and_a_double_change_and_bad_requests(data):
    X, y = data
    loop = ActiveLearningLoop(X, strategy="near-boundary", seed=0, solver_params={"C": C})
    q = loop.next_query()
    loop.teach(q.index, 1)
    loop.change_label(q.index, -1)  # the only label: a fresh solver learns it
    fresh = ActiveLearningLoop.from_events([(q.index, -1)], X, **config(loop))
    np.testing.assert_allclose(scores(loop), scores(fresh), rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="already labelled -1"):
        loop.change_label(q.index, -1)  # a second click changes nothing
    with pytest.raises(ValueError, match="label must be -1 or \\+1"):
        loop.change_label(q.index, 0)
    with pytest.raises(ValueError, match="no label or skip"):
        loop.change_label(q.index + 1, 1)
    with pytest.raises(TypeError):
        loop.remove_label(True)
    s = loop.next_query()
    loop.skip(s.index)
    with pytest.raises(ValueError, match="remove the skip"):
        loop.change_label(s.index, 1)
    loop.remove_label(q.index)
    assert loop.n_labels == 0 and np.allclose(loop.pool_scores(), scores(loop))


@pytest.mark.parametrize("threads", [1, None])
def test_a_rebuilt_correction_equals_the_replay_under_each_thread_count(data, threads):
    """Identity by construction (the same solver code learns the same labels in the same order), whatever
    BLAS does with its threads."""
    X, y = data
    with threadpool_limits(limits=threads):
        loop = labelled_loop(X, y, "randomized-search", "lasvm", n=30)
        item, old = label_made_ago(loop, 20)
        loop.change_label(item, -old)
        replayed = ActiveLearningLoop.from_events(loop.events, X, **config(loop))
        assert np.array_equal(scores(loop), scores(replayed))
