"""K-class models saved as plain arrays and put back (``OneVsRest.to_state`` / ``load_state``): the restored
model continues as the saved one, bit for bit, its machines sharing one store and kernel cache."""

from __future__ import annotations

import io

import numpy as np
import pytest

from core.multiclass import MultiLabel, OneVsRest

CLASSES = ("cat", "dog", "fox", "owl")
PARAMS = dict(C=2.0, gamma=0.5, random_state=3)
SOLVERS = ["incremental", "active-set", "lasvm"]


def blobs(n: int = 120, seed: int = 0):
    rng = np.random.default_rng(seed)
    centres = np.array([[0.0, 0.0], [2.0, 0.0], [1.0, 1.8], [2.5, 2.2]])
    group = rng.integers(0, 4, n)
    X = np.hstack([centres[group] + 0.8 * rng.standard_normal((n, 2)), rng.standard_normal((n, 3)) / 3])
    return X, group


def answer(model, group, i):
    if isinstance(model, MultiLabel):
        k = int(group[i])
        return [CLASSES[k]] + ([CLASSES[(k + 1) % 4]] if i % 3 == 0 else [])
    return CLASSES[int(group[i])]


def through_npz(arrays):
    """The arrays as a database stores them (numpy.savez, never pickled)."""
    buffer = io.BytesIO()
    np.savez(buffer, allow_pickle=False, **arrays)
    with np.load(io.BytesIO(buffer.getvalue()), allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def assert_same_model(a, b):
    np.testing.assert_array_equal(a.decision_function(), b.decision_function())  # kept scores
    np.testing.assert_array_equal(a._F, b._F)
    for ma, mb in zip(a.machines, b.machines, strict=True):
        sa, ca, ba = ma.coefficients()
        sb, cb, bb = mb.coefficients()
        np.testing.assert_array_equal(sa, sb)
        np.testing.assert_array_equal(ca, cb)
        assert ba == bb
        np.testing.assert_array_equal(ma.decision_function(), mb.decision_function())
    np.testing.assert_array_equal(a.labels_, b.labels_)


@pytest.mark.parametrize("kind", [OneVsRest, MultiLabel])
@pytest.mark.parametrize("solver", SOLVERS)
def test_a_restored_model_continues_as_the_one_that_learned_everything_bit_for_bit(solver, kind):
    X, group = blobs()
    order = np.random.default_rng(1).permutation(len(X))
    live = kind(CLASSES, solver, X, keep_scores=True, **PARAMS)
    for i in order[:50]:
        live.learn(int(i), answer(live, group, i))
    live.unlearn(int(order[7]))
    arrays, meta = live.to_state()
    restored = kind(CLASSES, solver, X, keep_scores=True, **PARAMS)
    restored.load_state(through_npz(arrays), meta)
    assert_same_model(restored, live)
    # one kernel cache and store for all K machines, as in a model made afresh
    assert all(m.cache is restored.cache and m.store is restored.machines[0].store for m in restored.machines)
    for model in (live, restored):
        for i in order[50:80]:
            model.learn(int(i), answer(model, group, i))
        model.unlearn(int(order[60]))
    assert_same_model(restored, live)


@pytest.mark.parametrize("solver", SOLVERS)
def test_a_state_that_does_not_fit_is_refused(solver):
    X, group = blobs()
    live = OneVsRest(CLASSES, solver, X, keep_scores=True, **PARAMS)
    for i in range(30):
        live.learn(i, CLASSES[int(group[i])])
    arrays, meta = live.to_state()
    other_labels = dict(arrays, labels=np.roll(arrays["labels"], 1))
    for model, a, why in [
        (OneVsRest(CLASSES[::-1], solver, X, keep_scores=True, **PARAMS), arrays, "other classes"),
        (OneVsRest(CLASSES, solver, X, keep_scores=True, **dict(PARAMS, C=3.0)), arrays, "other parameters"),
        (OneVsRest(CLASSES, solver, X[:-1], keep_scores=True, **PARAMS), arrays, "other points"),
        (MultiLabel(CLASSES, solver, X, keep_scores=True, **PARAMS), arrays, "another model"),
        (OneVsRest(CLASSES, solver, X, keep_scores=True, **PARAMS), other_labels, "not what its machines learned"),
    ]:
        with pytest.raises(ValueError, match=why):
            model.load_state(a, meta)
    learned = OneVsRest(CLASSES, solver, X, keep_scores=True, **PARAMS)
    learned.learn(0, CLASSES[0])
    with pytest.raises(ValueError, match="learned nothing"):
        learned.load_state(arrays, meta)
