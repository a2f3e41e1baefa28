"""K classes as K one-vs-rest machines over one store (core.multiclass)."""

from __future__ import annotations

import numpy as np
import pytest

from core.multiclass import (
    MULTICLASS_STRATEGIES,
    OneVsRest,
    least_certain_class,
    random_class_query,
    smallest_margin,
    target_class,
)
from core.solvers import make_solver

CLASSES = ("cat", "dog", "fox")
PARAMS = dict(C=2.0, gamma=0.5)


def three_blobs(n_per: int = 20, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = np.array([[0.0, 0.0], [2.0, 0.0], [1.0, 1.8]])
    X = np.vstack([c + 0.7 * rng.standard_normal((n_per, 2)) for c in centres])
    y = np.repeat(np.arange(3), n_per)
    order = rng.permutation(len(y))
    return X[order], y[order]


def binary_reference(solver: str, X, y, order) -> np.ndarray:
    """K separately trained binary solvers, one per class (+1 for the class, -1 for the rest):
    their decision values over X, (n, K)."""
    out = []
    for k in range(len(CLASSES)):
        s = make_solver(solver, X, **PARAMS)
        for i in order:
            s.learn(int(i), 1.0 if y[i] == k else -1.0)
        out.append(s.decision_function())
    return np.column_stack(out)


@pytest.mark.parametrize("solver", ["incremental", "active-set"])
def test_matches_independent_binary_solvers(solver):
    X, y = three_blobs()
    order = np.arange(30)
    model = OneVsRest(CLASSES, solver, X, **PARAMS)
    for i in order:
        model.learn(int(i), CLASSES[y[i]])
    F = model.decision_function()
    assert F.shape == (len(X), 3)
    np.testing.assert_allclose(F, binary_reference(solver, X, y, order), rtol=0, atol=1e-9)
    # per-machine read-out agrees with the shared one
    for k, m in enumerate(model.machines):
        np.testing.assert_allclose(F[:, k], m.decision_function(), rtol=0, atol=1e-9)


@pytest.mark.parametrize("solver", ["incremental", "active-set"])
def test_unlearn_equals_retraining_without(solver):
    X, y = three_blobs(seed=1)
    order = np.arange(36)
    model = OneVsRest(CLASSES, solver, X, **PARAMS)
    for i in order:
        model.learn(int(i), CLASSES[y[i]])
    gone = [3, 17, 30]
    for i in gone:
        model.unlearn(i)
    kept = [i for i in order if i not in gone]
    np.testing.assert_allclose(model.decision_function(), binary_reference(solver, X, y, kept), rtol=0, atol=1e-9)
    assert model.label_of(3) is None
    assert model.label_of(4) == CLASSES[y[4]]


def test_machines_share_one_store_and_kernel_cache():
    X, y = three_blobs()
    model = OneVsRest(CLASSES, "incremental", X, **PARAMS)
    first = model.machines[0]
    for m in model.machines[1:]:
        assert m.store is first.store and m.cache is first.cache and m.kernel is first.kernel
    separate = [make_solver("incremental", X, **PARAMS) for _ in CLASSES]
    for i in range(15):
        model.learn(i, CLASSES[y[i]])
        for k, s in enumerate(separate):
            s.learn(i, 1.0 if y[i] == k else -1.0)
    # scoring the pool: one kernel block against the union of the support vectors serves all K columns
    e0, s0 = model.n_kernel_evals, [s.n_kernel_evals for s in separate]
    model.decision_function()
    for s in separate:
        s.decision_function()
    shared = model.n_kernel_evals - e0
    apart = sum(s.n_kernel_evals - e for s, e in zip(separate, s0, strict=True))
    assert 0 < shared < apart
    # a store row one machine had computed is a hit for every other
    row = model.machines[0].cache.row(20)
    hits = model.cache.hits
    assert model.machines[2].cache.row(20) is row and model.cache.hits == hits + 1


@pytest.mark.parametrize("solver", ["incremental", "active-set"])
def test_kept_scores_follow_learn_and_unlearn(solver):
    X, y = three_blobs(seed=2)
    model = OneVsRest(CLASSES, solver, X, keep_scores=True, **PARAMS)
    for i in range(30):
        model.learn(i, CLASSES[y[i]])
    model.unlearn(7)
    model.unlearn(22)
    kept = [i for i in range(30) if i not in (7, 22)]
    assert model.scores_ is not None and np.count_nonzero(model._slot_of >= 0) > 0  # (updated, not rescored)
    np.testing.assert_allclose(model.scores_, binary_reference(solver, X, y, kept), rtol=0, atol=1e-9)


def test_add_points_grows_every_machine():
    X, y = three_blobs()
    model = OneVsRest(CLASSES, "incremental", X[:40], **PARAMS)
    idx = model.add_points(X[40:])
    assert list(idx) == list(range(40, len(X)))
    for i in range(len(X)):
        if i % 3 == 0:
            model.learn(i, CLASSES[y[i]])
    order = [i for i in range(len(X)) if i % 3 == 0]
    np.testing.assert_allclose(
        model.decision_function(), binary_reference("incremental", X, y, order), rtol=0, atol=1e-9
    )


def test_predict_names_the_top_class():
    X, y = three_blobs()
    model = OneVsRest(CLASSES, "incremental", X, **PARAMS)
    for i in range(45):
        model.learn(i, CLASSES[y[i]])
    F = model.decision_function(np.arange(45, 60))
    assert list(model.predict(np.arange(45, 60))) == [CLASSES[k] for k in np.argmax(F, axis=1)]


def test_bad_input_has_clear_messages():
    X, _ = three_blobs()
    with pytest.raises(ValueError, match="at least two classes"):
        OneVsRest(("cat",), "incremental", X)
    with pytest.raises(ValueError, match="'cat' is named twice"):
        OneVsRest(("cat", "dog", "cat"), "incremental", X)
    model = OneVsRest(CLASSES, "incremental", X, **PARAMS)
    with pytest.raises(ValueError, match=r"class 'wolf' is not in the model \(classes: cat, dog, fox\)"):
        model.learn(0, "wolf")
    model.learn(0, "cat")
    with pytest.raises(ValueError, match="item 0 already has the label 'cat'.*unlearn"):
        model.learn(0, "dog")
    with pytest.raises(ValueError, match="single-choice.*one class"):
        model.learn(1, ["cat", "dog"])
    with pytest.raises(ValueError, match="item 2 has no label"):
        model.unlearn(2)
    with pytest.raises(ValueError, match=r"class 'wolf' is not in the model"):
        target_class(model, np.arange(1, 10), None, target="wolf")
    # nothing half-written: the failed calls left the machines as they were
    assert [int(np.count_nonzero(m.y)) for m in model.machines] == [1, 1, 1]


class TableModel:
    """A stand-in model whose decision values are a fixed table (n, K)."""

    def __init__(self, F, classes):
        self.F = np.asarray(F, dtype=float)
        self.classes = tuple(classes)
        self.n_points = len(self.F)

    def decision_function(self, idx=None):
        return self.F if idx is None else self.F[np.asarray(idx, dtype=np.intp)]


F_HAND = [
    [2.0, -1.0, -1.0],  # 0: sure 'cat'
    [0.3, 0.25, -2.0],  # 1: cat vs dog, margin 0.05 (the smallest)
    [-0.9, -0.5, 1.5],  # 2: fox
    [-0.2, -1.5, 0.9],  # 3: margin 1.1
    [-1.0, 2.5, -0.05],  # 4: the largest dog; fox's nearest to its boundary
]


def test_smallest_margin_picks_the_closest_top_two():
    q = smallest_margin(TableModel(F_HAND, CLASSES), np.arange(5), None)
    assert q.index == 1 and q.strategy == "smallest-margin"
    assert q.score == pytest.approx(0.05)
    assert "'cat'" in q.reason and "'dog'" in q.reason and "smallest margin" in q.reason
    # only the pool is considered
    assert smallest_margin(TableModel(F_HAND, CLASSES), [0, 2, 3, 4], None).index == 3


def test_least_certain_class_then_near_its_boundary():
    # mean |f| over the pool: cat 0.88, dog 1.15, fox 1.09 -> cat is least certain; its smallest |f| is item 3
    q = least_certain_class(TableModel(F_HAND, CLASSES), np.arange(5), None)
    assert q.index == 3 and q.extra["class"] == "cat"
    assert "least certain class 'cat'" in q.reason
    # without items 1 and 3: cat 1.3, dog 1.333, fox 0.85 -> fox, nearest its boundary is item 4
    q = least_certain_class(TableModel(F_HAND, CLASSES), [0, 2, 4], None)
    assert q.index == 4 and q.extra["class"] == "fox"


def test_target_class_screens_for_one_class():
    q = target_class(TableModel(F_HAND, CLASSES), np.arange(5), None, target="dog")
    assert q.index == 4 and q.score == pytest.approx(2.5) and "class 'dog'" in q.reason
    assert target_class(TableModel(F_HAND, CLASSES), np.arange(5), None, target="fox").index == 2


def test_random_is_seeded_and_stays_in_the_pool():
    model = TableModel(F_HAND, CLASSES)
    a = [random_class_query(model, [1, 2, 4], np.random.default_rng(5)).index for _ in range(3)]
    b = [random_class_query(model, [1, 2, 4], np.random.default_rng(5)).index for _ in range(3)]
    assert a == b and set(a) <= {1, 2, 4}
    assert "uniformly" in random_class_query(model, [1, 2, 4], np.random.default_rng(0)).reason


def test_empty_pool_gives_none_and_registry_lists_all():
    model = TableModel(F_HAND, CLASSES)
    for name, fn in MULTICLASS_STRATEGIES.items():
        kw = {"target": "cat"} if name == "target-class" else {}
        assert fn(model, np.zeros(0, dtype=np.intp), np.random.default_rng(0), **kw) is None
    assert set(MULTICLASS_STRATEGIES) == {"smallest-margin", "least-certain-class", "target-class", "random"}


def test_kept_scores_with_a_full_row_buffer(monkeypatch):
    import core.multiclass

    X, y = three_blobs(seed=3)
    monkeypatch.setattr(core.multiclass, "ROW_BUFFER_BYTES", 8 * len(X) * 5)  # room for 5 store rows
    model = OneVsRest(CLASSES, "incremental", X, keep_scores=True, **PARAMS)
    for i in range(25):
        model.learn(i, CLASSES[y[i]])
    model.unlearn(4)
    assert len(model._rowbuf) == 5
    kept = [i for i in range(25) if i != 4]
    np.testing.assert_allclose(model.scores_, binary_reference("incremental", X, y, kept), rtol=0, atol=1e-9)


def named_blobs(n_per: int = 30, seed: int = 4):
    X, y = three_blobs(n_per, seed)
    return X, np.asarray(CLASSES, dtype=object)[y]


def test_simulation_reports_accuracy_and_macro_auc_on_the_held_out_part():
    from core.metrics import accuracy, roc_auc
    from core.multiclass import simulate

    X, labels = named_blobs()
    run = simulate(X, labels, strategy="smallest-margin", budget=30, seed=1, initial=6, eval_every=10, **PARAMS)
    assert [r["labels"] for r in run.rows] == [10, 20, 30]
    assert len(set(run.test.tolist()) & set(run.asked)) == 0 and len(set(run.asked)) == 30
    # every class is held out in proportion (stratified)
    assert sorted(np.unique(labels[run.test], return_counts=True)[1].tolist()) == [8, 8, 8]
    F = run.model.decision_function(X=X[run.test])
    last = run.rows[-1]
    assert last["accuracy"] == accuracy(labels[run.test], run.model.predict(X=X[run.test]))
    assert last["macro_auc"] == pytest.approx(
        np.mean([roc_auc(labels[run.test] == c, F[:, k]) for k, c in enumerate(CLASSES)])
    )
    assert run.rows[0]["chosen_by"] == "smallest-margin"
    again = simulate(X, labels, strategy="smallest-margin", budget=30, seed=1, initial=6, eval_every=10, **PARAMS)
    assert again.asked == run.asked


def test_simulation_refuses_unknown_classes_and_strategies():
    from core.multiclass import simulate

    X, labels = named_blobs()
    with pytest.raises(ValueError, match=r"labels name classes not in classes: 'fox' \(30 items\)"):
        simulate(X, labels, classes=("cat", "dog"), budget=5)
    with pytest.raises(ValueError, match="unknown K-class strategy 'near-boundary'; choose one of smallest-margin"):
        simulate(X, labels, strategy="near-boundary", budget=5)


# -- multi-label -------------------------------------------------------------------


def label_sets(y: np.ndarray, seed: int = 7) -> list[set[str]]:
    """Each item's own class, plus every other class with probability 0.3, and some items with none."""
    rng = np.random.default_rng(seed)
    out = []
    for k in y:
        s = {CLASSES[k]} if rng.random() > 0.15 else set()
        s |= {c for c in CLASSES if rng.random() < 0.3}
        out.append(s)
    return out


def multilabel_reference(solver: str, X, sets, order) -> np.ndarray:
    """K separately trained binary solvers, class k +1 when it is in the item's set: (n, K)."""
    out = []
    for c in CLASSES:
        s = make_solver(solver, X, **PARAMS)
        for i in order:
            s.learn(int(i), 1.0 if c in sets[i] else -1.0)
        out.append(s.decision_function())
    return np.column_stack(out)


@pytest.mark.parametrize("solver", ["incremental", "active-set"])
def test_multilabel_matches_independent_binary_solvers_and_unlearns_exactly(solver):
    from core.multiclass import MultiLabel

    X, y = three_blobs(seed=5)
    sets = label_sets(y)
    assert any(len(s) == 0 for s in sets[:36]) and any(len(s) >= 2 for s in sets[:36])
    model = MultiLabel(CLASSES, solver, X, keep_scores=True, **PARAMS)
    for i in range(36):
        model.learn(i, sets[i])
    np.testing.assert_allclose(
        model.decision_function(), multilabel_reference(solver, X, sets, range(36)), rtol=0, atol=1e-9
    )
    gone = [2, 11, 29]
    for i in gone:
        model.unlearn(i)
    kept = [i for i in range(36) if i not in gone]
    np.testing.assert_allclose(model.scores_, multilabel_reference(solver, X, sets, kept), rtol=0, atol=1e-9)
    fresh = MultiLabel(CLASSES, solver, X, **PARAMS)  # (no kept scores: one kernel block)
    for i in kept:
        fresh.learn(i, sets[i])
    np.testing.assert_allclose(fresh.decision_function(), model.scores_, rtol=0, atol=1e-9)
    assert model.label_of(2) is None
    assert model.label_of(0) == tuple(c for c in CLASSES if c in sets[0])
    assert model.labels_[2].tolist() == [0, 0, 0]
    assert model.labels_[0].tolist() == [1 if c in sets[0] else -1 for c in CLASSES]


def test_multilabel_predicts_the_classes_with_positive_scores():
    from core.multiclass import MultiLabel

    X, y = three_blobs(seed=6)
    sets = label_sets(y, seed=8)
    model = MultiLabel(CLASSES, "incremental", X, **PARAMS)
    for i in range(45):
        model.learn(i, sets[i])
    F = model.decision_function(np.arange(45, 60))
    assert [set(p) for p in model.predict(np.arange(45, 60))] == [
        {c for c, f in zip(CLASSES, row, strict=True) if f > 0} for row in F
    ]


def test_single_choice_and_multi_label_answers_are_refused_by_the_other_model():
    from core.multiclass import MultiLabel

    X, _ = three_blobs()
    multi = MultiLabel(CLASSES, "incremental", X, **PARAMS)
    with pytest.raises(
        ValueError,
        match=r"multi-label model takes a set of classes.*single class 'cat': "
        r"give it as \['cat'\]",
    ):
        multi.learn(0, "cat")
    with pytest.raises(ValueError, match=r"class 'wolf' is not in the model"):
        multi.learn(0, ["cat", "wolf"])
    multi.learn(0, ["cat", "fox"])
    with pytest.raises(ValueError, match=r"item 0 already has the labels \['cat', 'fox'\]; unlearn"):
        multi.learn(0, ["dog"])
    assert [int(np.count_nonzero(m.y)) for m in multi.machines] == [1, 1, 1]  # nothing half-written
    single = OneVsRest(CLASSES, "incremental", X, **PARAMS)
    with pytest.raises(ValueError, match=r"single-choice model takes one class per item, got 2"):
        single.learn(0, {"cat", "fox"})


def test_least_sure_class_picks_the_smallest_score_on_any_class():
    from core.multiclass import MULTILABEL_STRATEGIES, least_sure_class

    # smallest |f| over all items and classes: item 4, class fox (0.05); without item 4: item 1, dog (0.25)
    q = least_sure_class(TableModel(F_HAND, CLASSES), np.arange(5), None)
    assert q.index == 4 and q.extra["class"] == "fox" and q.strategy == "least-sure-class"
    assert q.score == pytest.approx(-0.05) and "least sure on any class" in q.reason and "'fox'" in q.reason
    q = least_sure_class(TableModel(F_HAND, CLASSES), [0, 1, 2, 3], None)
    assert q.index == 3 and q.extra["class"] == "cat"
    assert least_sure_class(TableModel(F_HAND, CLASSES), [0, 1, 2], None).index == 1
    assert set(MULTILABEL_STRATEGIES) == {"least-sure-class", "random"}
    for fn in MULTILABEL_STRATEGIES.values():
        assert fn(TableModel(F_HAND, CLASSES), np.zeros(0, dtype=np.intp), np.random.default_rng(0)) is None


def test_multilabel_learn_failing_midway_leaves_every_machine_and_the_labels_as_they_were(monkeypatch):
    from core.multiclass import MultiLabel

    X, y = three_blobs()
    model = MultiLabel(CLASSES, "incremental", X, **PARAMS)
    model.learn(0, ["dog"])
    third = model.machines[2]

    def broken(i, label):
        raise RuntimeError("machine failed")

    monkeypatch.setattr(third, "learn", broken)
    with pytest.raises(RuntimeError, match="machine failed"):
        model.learn(1, ["cat", "fox"])
    assert [int(np.count_nonzero(m.y)) for m in model.machines] == [1, 1, 1]
    assert model.label_of(1) is None and model.labels_[1].tolist() == [0, 0, 0]
    monkeypatch.undo()
    model.learn(1, ["cat"])
    assert model.label_of(1) == ("cat",)
