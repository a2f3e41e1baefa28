"""compare --classes --multi-label: the label cells read as sets, each run's rows the model of the items asked
(checked against a MultiLabel retrained from them), per-class measures from their definitions, the CLI's
printout, JSON and refusals."""

from __future__ import annotations

import json

import numpy as np
import pytest

from core.experiment import _split_rows
from core.metrics import roc_auc
from core.multi_label_experiment import _set_codes, label_sets, per_class_measures, run_multi_label_comparison
from core.multiclass import MultiLabel

PARAMS = {"kernel": "rbf", "C": 2.0, "gamma": 0.5}
NAMES = ("billing", "urgent", "spam")
#: each group's classes: none, billing, urgent, billing and urgent and spam
GROUP_CELLS = ("(none)", "billing", "urgent", "urgent ; billing;spam")


def four_groups(n_per: int = 14):
    rng = np.random.default_rng(7)
    centres = np.array([[0.0, 0.0], [3.0, 0.0], [0.0, 3.0], [3.0, 3.0]])
    group = np.repeat(np.arange(4), n_per)
    X = centres[group] + rng.normal(0, 0.5, (len(group), 2))
    return X, [GROUP_CELLS[g] for g in group]


def test_cells_are_read_as_sets_of_the_classes():
    Y, names = label_sets(["a;b", " b ", "(none)", ";", "c;a"])
    assert names == ("a", "b", "c")
    assert Y.tolist() == [[True, True, False], [False, True, False], [False] * 3, [False] * 3, [True, False, True]]
    Y2, names2 = label_sets(["a|b", "c"], "|", classes=["c", "b", "a"])
    assert names2 == ("c", "b", "a") and Y2.tolist() == [[False, True, True], [True, False, False]]
    with pytest.raises(ValueError, match=r"not among those given \(a, b\): 'c' \(1 items\)"):
        label_sets(["a;b", "c"], classes=["a", "b"])
    with pytest.raises(ValueError, match="class 'd' does not occur"):
        label_sets(["a;b", "c"], classes=["a", "b", "c", "d"])
    with pytest.raises(ValueError, match="separator"):
        label_sets(["a"], " ; ")


def test_each_row_is_the_model_of_the_items_asked_scored_on_the_held_out_part():
    X, cells = four_groups()
    Y, names = label_sets(cells, classes=NAMES)
    result = run_multi_label_comparison(
        X,
        Y,
        names,
        strategies=["least-sure-class", "random"],
        solver_params=PARAMS,
        budget=14,
        seeds=2,
        initial=4,
        test_fraction=0.25,
    )
    rows = result.rows
    assert len(rows) == 2 * 2 * 14
    for (strategy, seed), run in rows.groupby(["strategy", "seed"]):
        train, test = _split_rows(_set_codes(Y), seed, 0.25)
        assert not set(run["item"]) & set(test.tolist()) and run["item"].is_unique
        expected = ["; ".join(n for n, on in zip(names, Y[i], strict=True) if on) or "(none)" for i in run["item"]]
        assert run["label"].tolist() == expected  # the oracle's sets, by name
        for n in (8, 14):  # retrained from the items asked, in order: the same held-out measures
            model = MultiLabel(names, "incremental", X[train], **PARAMS)
            for item in run["item"][:n]:
                model.learn(
                    int(np.flatnonzero(train == item)[0]), [c for c, on in zip(names, Y[item], strict=True) if on]
                )
            F = model.decision_function(X=X[test])
            row = run.iloc[n - 1]
            assert row["accuracy"] == pytest.approx(np.mean((F > 0) == Y[test]), abs=1e-12)
            assert row["macro_auc"] == pytest.approx(np.mean([roc_auc(Y[test][:, k], F[:, k]) for k in range(3)]))
        last = result.per_class[(result.per_class["strategy"] == strategy) & (result.per_class["seed"] == seed)]
        assert last["class"].tolist() == list(names)
        assert last[["precision", "recall", "f1", "auc"]].to_dict(orient="records") == [
            {k: pytest.approx(v, nan_ok=True) for k, v in m.items() if k != "class"}
            for m in per_class_measures(Y[test], F, names)
        ]
        assert (run["chosen_by"].iloc[:4] == "random").all() and (run["chosen_by"].iloc[4:] == strategy).all()
    text = result.summary_text()
    assert "per class at the last label" in text and "(macro)" in text and "Hamming" in text


def test_per_class_measures_follow_their_definitions():
    truth = np.array([[True, False], [True, True], [False, False], [False, True]])
    F = np.array([[0.5, -1.0], [-0.2, 0.3], [0.1, -0.4], [-0.9, -0.1]])
    first, second = per_class_measures(truth, F, ["a", "b"])
    # a: said yes to rows 0 and 2, truly rows 0 and 1: tp 1, precision 1/2, recall 1/2, F1 1/2
    assert (first["precision"], first["recall"], first["f1"]) == (0.5, 0.5, 0.5)
    assert first["auc"] == pytest.approx(0.75)  # pairs (0,2) (0,3) (1,3) right, (1,2) wrong
    # b: said yes to row 1 only, truly rows 1 and 3: precision 1, recall 1/2, F1 2/3
    assert (second["precision"], second["recall"]) == (1.0, 0.5) and second["f1"] == pytest.approx(2 / 3)


@pytest.fixture
def tickets_csv(tmp_path):
    X, cells = four_groups()
    path = tmp_path / "tickets.csv"
    path.write_text("a,b,topics\n" + "".join(f"{x:.4f},{y:.4f},{c}\n" for (x, y), c in zip(X, cells, strict=True)))
    return path


BASE = ["compare", "--label-column", "topics", "--classes", "--multi-label", "--budget", "10", "--seeds", "1"]


def test_compare_multi_label_prints_per_class_and_macro_measures_and_json(tickets_csv, tmp_path, capsys):
    from core.cli import main

    assert main([*BASE, "--data", str(tickets_csv), "--strategies", "least-sure-class,random", "--initial", "3"]) == 0
    text = capsys.readouterr().out
    assert "3 classes, several per item (billing 28, spam 14, urgent 28; none of them 14)" in text, text
    assert "per class at the last label" in text
    assert sum(line.startswith("least-sure-class") and "(macro)" in line for line in text.splitlines()) == 1
    out = tmp_path / "rows.csv"
    code = main([*BASE, "--data", str(tickets_csv), "--strategies", "random", "--json", "--out", str(out)])
    got = json.loads(capsys.readouterr().out)
    assert code == 0 and got["multi_label"] is True and got["separator"] == ";"
    assert got["classes"] == ["billing", "spam", "urgent"] and len(got["per_class"]) == 3
    assert out.read_text().splitlines()[0].startswith("strategy,solver,seed,n_labels,accuracy,macro_auc")
    # another separator
    other = tmp_path / "other.csv"
    other.write_text(tickets_csv.read_text().replace(";", "|"))
    assert main([*BASE, "--data", str(other), "--strategies", "random", "--label-separator", "|"]) == 0
    assert "3 classes, several per item" in capsys.readouterr().out


@pytest.mark.parametrize(
    "extra, message",
    [
        (
            ["--strategies", "smallest-margin"],
            "unknown multi-label strategy 'smallest-margin'; with --classes "
            "--multi-label choose from least-sure-class, random",
        ),
        (["--strategies", "random", "--target-class", "spam"], "--target-class screens for one class per item"),
        (
            ["--strategies", "random", "--classes", "billing,urgent"],
            "not among those given (billing, urgent): 'spam' (14 items)",
        ),
    ],
)
def test_compare_multi_label_refusals_name_what_is_wrong(tickets_csv, capsys, extra, message):
    from core.cli import main

    assert main([*BASE, "--data", str(tickets_csv), *extra]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err


def test_multi_label_flags_go_with_classes(tickets_csv, capsys):
    from core.cli import main

    base = ["compare", "--data", str(tickets_csv), "--label-column", "topics", "--budget", "5", "--strategies"]
    assert main([*base, "random", "--multi-label"]) == 2
    assert "--multi-label goes with --classes" in capsys.readouterr().err
    assert main([*base, "least-sure-class", "--classes", "--label-separator", "|"]) == 2
    assert "--label-separator goes with --multi-label" in capsys.readouterr().err
