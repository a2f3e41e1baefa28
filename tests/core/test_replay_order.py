"""The session's own order as one more run of a replay with named classes or sets (core.replay
``run_class_replay`` / ``run_multi_label_replay``): in each seed the model learns the seed's pool in the
order the items were labelled and is scored on the seed's held-out part after each label."""

from __future__ import annotations

import numpy as np
import pytest

from core.class_experiment import macro_auc
from core.experiment import _split_rows
from core.metrics import accuracy
from core.multi_label_experiment import _held_out_scores, _set_codes
from core.multiclass import MultiLabel, OneVsRest
from core.replay import SESSION_ORDER, LabelledItems, run_class_replay, run_multi_label_replay
from tests.core.test_replay_models import _blobs

CLASSES = ("cat", "dog", "cow")


def _by_hand(X, strata, rows, seed, budget, learn_one, score):
    """The order run written out: the seed's split of the replayed items (``X[rows]``, in the order labelled),
    the pool learned in that order (``learn_one(model, place)``), the held-out part scored after each label
    (``score(model, test)``): [(item, accuracy, macro AUC)] per label."""
    train, test = _split_rows(strata, seed, 0.3)
    out = []
    model = None
    for place in sorted(train.tolist())[:budget]:  # (a replayed item's row is its place in the order)
        model = learn_one(model, train, place)
        out.append((place, *score(model, test)))
    return out


def test_a_class_replay_has_the_session_order_as_a_run_per_seed_as_a_hand_written_loop():
    X, group = _blobs()
    rows = np.random.default_rng(5).permutation(45)
    labelled = LabelledItems(
        rows, group[rows], strategy="smallest-margin", solver="incremental", classes=CLASSES, source="session 4"
    )
    model = {"kernel": "rbf", "C": 2.0}
    result = run_class_replay(
        X, labelled, strategies=["random"], seeds=[0, 1], initial=4, solver="lasvm", solver_params=model
    )
    Xr, y = X[rows], group[rows]
    assert list(result.summary["strategy"]) == ["random", "smallest-margin", SESSION_ORDER]
    assert SESSION_ORDER in result.config["strategies"]
    budget = result.config["budget"]
    for seed in (0, 1):

        def learn_one(m, train, place):
            m = OneVsRest(CLASSES, "lasvm", Xr[train], keep_scores=True, **model) if m is None else m
            m.learn(int(np.flatnonzero(train == place)[0]), CLASSES[y[place]])
            return m

        def score(m, test):
            F = m.decision_function(X=Xr[test])
            return accuracy(y[test], np.argmax(F, axis=1)), macro_auc(y[test], F, 3)

        expected = _by_hand(Xr, y, rows, seed, budget, learn_one, score)
        run = result.rows[(result.rows.strategy == SESSION_ORDER) & (result.rows.seed == seed)]
        assert list(run["n_labels"]) == list(range(1, budget + 1))
        assert list(run["item"]) == [e[0] for e in expected]  # every item in the order labelled, from the first
        assert list(run["label"]) == [CLASSES[y[e[0]]] for e in expected]
        assert set(run["solver"]) == {"lasvm"} and set(run["chosen_by"]) == {SESSION_ORDER}
        np.testing.assert_allclose(run["accuracy"], [e[1] for e in expected])
        np.testing.assert_allclose(run["macro_auc"], [e[2] for e in expected])
    curve = result.curve[result.curve.strategy == SESSION_ORDER]
    assert len(curve) == budget and set(curve["n_seeds"]) == {2}
    with pytest.raises(ValueError, match="not a strategy for named classes"):
        run_class_replay(X, labelled, strategies=[SESSION_ORDER], seeds=1, initial=4)


def test_a_multi_label_replay_has_the_session_order_as_a_run_per_seed_as_a_hand_written_loop():
    X, group = _blobs()
    Y = np.array([[True, False, False], [False, True, False], [True, False, True]])[group]
    rows = np.random.default_rng(6).permutation(45)
    labelled = LabelledItems(
        rows, Y[rows], strategy="least-sure-class", solver="incremental", classes=("a", "b", "c"), multi_label=True
    )
    result = run_multi_label_replay(X, labelled, strategies=["random"], seeds=[3], initial=4, solver="incremental")
    Xr, Yr = X[rows], Y[rows]
    budget = result.config["budget"]

    def learn_one(m, train, place):
        m = MultiLabel(("a", "b", "c"), "incremental", Xr[train], keep_scores=True) if m is None else m
        answer = [c for c, on in zip(("a", "b", "c"), Yr[place], strict=True) if on]
        m.learn(int(np.flatnonzero(train == place)[0]), answer)
        return m

    def score(m, test):
        return _held_out_scores(Yr[test], m.decision_function(X=Xr[test]))

    expected = _by_hand(Xr, _set_codes(Yr), rows, 3, budget, learn_one, score)
    run = result.rows[result.rows.strategy == SESSION_ORDER]
    assert list(run["item"]) == [e[0] for e in expected]
    np.testing.assert_allclose(run["accuracy"], [e[1] for e in expected])
    np.testing.assert_allclose(run["macro_auc"], [e[2] for e in expected])
    assert list(result.summary["strategy"]) == ["random", "least-sure-class", SESSION_ORDER]
    assert set(result.per_class["strategy"]) == {"random", "least-sure-class", SESSION_ORDER}


def test_cli_text_of_a_class_replay_lists_the_session_order(tmp_path, capsys):
    import pandas as pd

    from core.cli import main
    from tests.core.test_replay_models import _data_file

    data, group = _data_file(tmp_path)
    labels = tmp_path / "labels.csv"
    pd.DataFrame({"item_index": range(45), "label": [CLASSES[g] for g in group[:45]]}).to_csv(labels, index=False)
    command = ["replay", "--labels", str(labels), "--data", str(data), "--key-column", "id", "--strategies", "random"]
    assert main([*command, "--seeds", "1", "--classes", "cat,dog,cow", "--initial", "4"]) == 0
    text = capsys.readouterr().out
    assert f"{SESSION_ORDER} acc" in text and f"{SESSION_ORDER} AUC" in text  # its curve
    assert any(line.startswith(SESSION_ORDER) for line in text.splitlines())  # its summary line
    assert "not a curve here" not in text and "scored on the same held-out part" in text


def test_a_strategy_outside_the_registry_may_not_take_a_registered_name():
    from core.class_experiment import run_class_comparison
    from core.multi_label_experiment import run_multi_label_comparison
    from core.multiclass import MULTICLASS_STRATEGIES, MULTILABEL_STRATEGIES
    from core.replay import InOrder

    X, group = _blobs(30)
    name = list(MULTICLASS_STRATEGIES)[0]
    with pytest.raises(ValueError, match=f"'{name}' names a strategy of the registry"):
        run_class_comparison(X, group, CLASSES, strategies=[name], budget=5, seeds=1, more_strategies={name: InOrder})
    Y = np.eye(3, dtype=bool)[group]
    name = list(MULTILABEL_STRATEGIES)[0]
    with pytest.raises(ValueError, match=f"'{name}' names a strategy of the registry"):
        run_multi_label_comparison(
            X, Y, ("a", "b", "c"), strategies=[name], budget=5, seeds=1, more_strategies={name: InOrder}
        )
