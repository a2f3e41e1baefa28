"""K-class comparisons (core.class_experiment): the figures recomputed from the items each run asked."""

from __future__ import annotations

import numpy as np
import pytest

from core.class_experiment import macro_auc, run_class_comparison
from core.experiment import _split_rows
from core.metrics import roc_auc
from core.multiclass import OneVsRest
from tests.core.test_multiclass import CLASSES, PARAMS, three_blobs


def test_each_row_is_the_model_of_the_items_asked_scored_on_the_held_out_part():
    X, y = three_blobs()
    result = run_class_comparison(
        X,
        y,
        CLASSES,
        strategies=["smallest-margin", "random"],
        solver_params=PARAMS,
        budget=15,
        seeds=2,
        initial=4,
        test_fraction=0.25,
    )
    rows = result.rows
    assert len(rows) == 2 * 2 * 15 and set(rows["label"]) <= set(CLASSES)
    for (strategy, seed), run in rows.groupby(["strategy", "seed"]):
        assert run["n_labels"].tolist() == list(range(1, 16))
        train, test = _split_rows(y, seed, 0.25)
        assert not set(run["item"]) & set(test.tolist()) and run["item"].is_unique
        assert [CLASSES[y[i]] for i in run["item"]] == run["label"].tolist()  # the oracle's answers, by name
        # retrain from the items asked, in order: the same held-out accuracy and macro AUC after 9 and 15 labels
        for n in (9, 15):
            model = OneVsRest(CLASSES, "incremental", X[train], **PARAMS)
            for item, label in zip(run["item"][:n], run["label"][:n], strict=True):
                model.learn(int(np.flatnonzero(train == item)[0]), label)
            F = model.decision_function(X=X[test])
            row = run.iloc[n - 1]
            assert row["accuracy"] == pytest.approx(np.mean(np.argmax(F, axis=1) == y[test]), abs=1e-12)
            assert row["macro_auc"] == pytest.approx(
                np.mean([roc_auc(y[test] == k, F[:, k]) for k in range(3)]), abs=1e-12
            )
        assert (run["chosen_by"].iloc[:4] == "random").all() and (run["chosen_by"].iloc[4:] == strategy).all()
    # the random start of a seed is the same for every strategy, and a run is the same when run again
    by = {key: g["item"].tolist() for key, g in rows.groupby(["strategy", "seed"])}
    assert by[("smallest-margin", 0)][:4] == by[("random", 0)][:4]
    again = run_class_comparison(
        X,
        y,
        CLASSES,
        strategies=["smallest-margin"],
        solver_params=PARAMS,
        budget=15,
        seeds=[1],
        initial=4,
        test_fraction=0.25,
    )
    assert again.rows["item"].tolist() == by[("smallest-margin", 1)]


def test_summary_and_curve_are_means_over_the_seeds():
    X, y = three_blobs(seed=3)
    result = run_class_comparison(
        X,
        y,
        CLASSES,
        strategies=["least-certain-class"],
        solver_params=PARAMS,
        budget=12,
        seeds=3,
        initial=3,
        accuracy_levels=(0.5, 0.99),
    )
    rows, curve, summary = result.rows, result.curve, result.summary.iloc[0]
    at = rows[rows["n_labels"] == 12]
    assert summary["final_accuracy_mean"] == pytest.approx(at["accuracy"].mean())
    assert summary["final_accuracy_sd"] == pytest.approx(at["accuracy"].std(ddof=1))
    assert summary["final_macro_auc_mean"] == pytest.approx(at["macro_auc"].mean())
    point = curve[curve["n_labels"] == 7].iloc[0]
    seven = rows[rows["n_labels"] == 7]
    assert point["accuracy_mean"] == pytest.approx(seven["accuracy"].mean())
    assert point["macro_auc_sd"] == pytest.approx(seven["macro_auc"].std(ddof=1))
    first = [g.loc[g["accuracy"] >= 0.5, "n_labels"].min() for _, g in rows.groupby("seed")]
    reached = [v for v in first if np.isfinite(v)]
    assert summary["reached_acc_50"] == len(reached) and summary["labels_acc_50"] == pytest.approx(np.mean(reached))
    per_label = rows["update_ms"] + rows["query_ms"]
    assert summary["label_ms_median"] == pytest.approx(np.median(per_label))
    text = result.summary_text()
    assert "least-certain-class acc" in text and "to acc 0.5" in text and "±" in text


def test_target_class_screens_for_the_class_named():
    X, y = three_blobs(seed=4)
    result = run_class_comparison(
        X, y, CLASSES, strategies=["target-class"], solver_params=PARAMS, budget=10, seeds=1, initial=3, target="fox"
    )
    assert result.config["target"] == "fox"
    assert (result.rows["chosen_by"].iloc[3:] == "target-class").all()


def test_bad_input_is_refused_naming_what_is_wrong():
    X, y = three_blobs()
    lone = y.copy()
    lone[np.flatnonzero(y == 2)[1:]] = 0  # one fox left
    with pytest.raises(ValueError, match=r"every class needs at least 2 items .*'fox' \(1 item\)"):
        run_class_comparison(X, lone, CLASSES, strategies=["random"], budget=5)
    with pytest.raises(ValueError, match="unknown K-class strategy 'near-boundary'; choose from smallest-margin"):
        run_class_comparison(X, y, CLASSES, strategies=["near-boundary"], budget=5)
    with pytest.raises(ValueError, match="target-class strategy screens for one class"):
        run_class_comparison(X, y, CLASSES, strategies=["target-class"], budget=5)
    with pytest.raises(ValueError, match=r"target class 'wolf' is not one of the classes \(cat, dog, fox\)"):
        run_class_comparison(X, y, CLASSES, strategies=["target-class"], budget=5, target="wolf")
    with pytest.raises(ValueError, match="held-out part: test_fraction must lie in"):
        run_class_comparison(X, y, CLASSES, strategies=["random"], budget=5, test_fraction=0.0)
    with pytest.raises(ValueError, match="must index the 3 classes"):
        run_class_comparison(X, y + 1, CLASSES, strategies=["random"], budget=5)


def test_macro_auc_leaves_out_a_class_with_no_held_out_item():
    F = np.array([[2.0, 0.0, -1.0], [0.0, 1.0, -1.0], [1.5, -1.0, 0.0]])
    truth = np.array([0, 1, 0])
    # class 2 has no held-out item: the mean of the AUCs of classes 0 and 1 (both 1.0)
    assert macro_auc(truth, F, 3) == pytest.approx(1.0)
