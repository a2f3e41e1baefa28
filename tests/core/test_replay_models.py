"""Replays of sessions, team projects and label files with named classes or sets under a model of one's
choice (core.replay ``run_class_replay`` / ``run_multi_label_replay``, ``python -m core replay``)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from core.replay import (
    SESSION_ORDER,
    LabelledItems,
    ReplayError,
    read_class_labels,
    run_class_replay,
    run_multi_label_replay,
)
from tests.core.test_replay import GROUP_SETS, _three_blobs

COLUMNS = ["strategy", "solver", "seed", "n_labels", "accuracy", "macro_auc", "item", "label"]


def _blobs(n: int = 60):
    """(X, group) of ``n`` items in three groups."""
    rng = np.random.default_rng(11)
    group = np.arange(n) % 3
    return np.array([[0.0, 0.0], [3.0, 0.0], [0.0, 3.0]])[group] + rng.normal(0, 0.9, (n, 2)), group


def test_a_class_replay_under_another_model_is_the_class_comparison_with_that_model():
    """``solver`` / ``solver_params``: every run (the reference's too) has K one-vs-rest machines of that
    solver: the same numbers as ``run_class_comparison`` with that model; the replay records it."""
    from core.class_experiment import run_class_comparison

    X, group = _blobs()
    rows = np.random.default_rng(1).permutation(45)
    labelled = LabelledItems(
        rows,
        group[rows],
        strategy="smallest-margin",
        solver="incremental",
        solver_params={"kernel": "rbf", "C": 1.0},
        classes=("cat", "dog", "cow"),
        source="session 4",
    )
    model = {"kernel": "linear", "C": 10.0}
    result = run_class_replay(
        X, labelled, strategies=["random"], seeds=2, initial=4, solver="lasvm", solver_params=model
    )
    pool = 45 - 3 * round(0.3 * 15)
    direct = run_class_comparison(
        X[rows],
        group[rows],
        ("cat", "dog", "cow"),
        strategies=["random", "smallest-margin"],
        solver="lasvm",
        solver_params=model,
        budget=pool,
        seeds=2,
        initial=4,
    )
    heuristics = result.rows["strategy"] != SESSION_ORDER  # (the session order: one more run, test_replay_order)
    pd.testing.assert_frame_equal(result.rows.loc[heuristics, COLUMNS], direct.rows[COLUMNS])
    assert set(result.rows["solver"]) == {"lasvm"}
    replay = result.config["replay"]
    assert (replay["solver"], replay["solver_params"], replay["own_model"]) == ("lasvm", model, False)
    assert result.config["solver"] == "lasvm" and result.config["solver_params"] == model
    # no model given: the session's own, said so
    own = run_class_replay(X, labelled, strategies=["random"], seeds=1, initial=4)
    assert own.config["replay"]["solver"] == "incremental" and own.config["replay"]["own_model"] is True
    assert own.config["replay"]["solver_params"] == {"kernel": "rbf", "C": 1.0}


def test_a_multi_label_replay_under_another_model_is_the_multi_label_comparison_with_that_model():
    from core.multi_label_experiment import run_multi_label_comparison
    from core.multiclass import MULTILABEL_STRATEGIES

    X, group = _blobs()
    Y = np.array([[True, False, False], [False, True, False], [True, False, True]])[group]
    rows = np.random.default_rng(2).permutation(45)
    reference = list(MULTILABEL_STRATEGIES)[0]
    labelled = LabelledItems(
        rows, Y[rows], strategy=reference, solver="incremental", classes=("a", "b", "c"), multi_label=True
    )
    model = {"kernel": "rbf", "C": 5.0, "gamma": 0.5}
    result = run_multi_label_replay(
        X, labelled, strategies=["random"], seeds=2, initial=4, solver="lasvm", solver_params=model
    )
    direct = run_multi_label_comparison(
        X[rows],
        Y[rows],
        ("a", "b", "c"),
        strategies=["random", reference],
        solver="lasvm",
        solver_params=model,
        budget=result.config["budget"],
        seeds=2,
        initial=4,
    )
    heuristics = result.rows["strategy"] != SESSION_ORDER  # (the session order: one more run, test_replay_order)
    pd.testing.assert_frame_equal(result.rows.loc[heuristics, COLUMNS], direct.rows[COLUMNS])
    pd.testing.assert_frame_equal(result.per_class.iloc[: len(direct.per_class)], direct.per_class)
    assert result.config["replay"]["solver"] == "lasvm" and result.config["replay"]["own_model"] is False


def test_a_replay_with_named_classes_refuses_a_solver_that_does_not_exist():
    X, group = _blobs(30)
    labelled = LabelledItems(np.arange(30), group, classes=("a", "b", "c"), source="session 4")
    with pytest.raises(ReplayError, match="'svc' is not a solver"):
        run_class_replay(X, labelled, strategies=["random"], seeds=1, initial=4, solver="svc")


def _k_session(tmp_path):
    """A stored K-class session (smallest-margin, incremental, rbf, C 1) of 40 answers: (url, session id)."""
    from storage import repository as repo

    url, engine, dataset_id, group, rng = _three_blobs(tmp_path / "k.db")
    session_id = repo.start_session(
        engine,
        dataset_id=dataset_id,
        annotator="ann",
        strategy="smallest-margin",
        solver="incremental",
        params={"classes": ["cat", "dog", "cow"], "solver_params": {"kernel": "rbf", "C": 1.0}},
        seed=0,
    )
    for item in rng.choice(90, 40, replace=False):
        repo.record_label(
            engine,
            session_id,
            item_index=int(item),
            value=1,
            answer_class=int(group[item]),
            annotator="ann",
            strategy="smallest-margin",
            solver="incremental",
        )
    engine.dispose()
    return url, session_id


def test_cli_replays_a_k_class_session_under_the_model_given(tmp_path, capsys):
    """--solver / --C for a session with named classes: every run uses them (an option left out keeps the
    session's: its kernel), recorded in --json and in the rows; a two-class-only model is refused by name."""
    from core.cli import main

    url, session_id = _k_session(tmp_path)
    out = tmp_path / "rows.csv"
    args = ["replay", "--session", str(session_id), "--database", url, "--strategies", "random", "--seeds", "1"]
    assert main([*args, "--initial", "4", "--solver", "lasvm", "--C", "5", "--json", "--out", str(out)]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["replay"]["solver"] == "lasvm" and payload["replay"]["own_model"] is False
    assert payload["replay"]["solver_params"]["C"] == 5.0 and payload["replay"]["solver_params"]["kernel"] == "rbf"
    assert payload["config"]["solver"] == "lasvm"
    assert set(pd.read_csv(out)["solver"]) == {"lasvm"}
    assert main([*args, "--initial", "4", "--solver", "lasvm", "--C", "5"]) == 0  # the model said in the text
    assert "model: lasvm one-vs-rest (kernel rbf, C 5), in place of the session's own" in capsys.readouterr().out
    assert main([*args, "--classes", "a,b"]) == 2  # (a stored session names its own classes)
    assert "--classes, --multi-label and --label-separator go with --labels FILE" in capsys.readouterr().err
    assert main([*args, "--initial", "4", "--json"]) == 0  # no model options: the session's own
    payload = json.loads(capsys.readouterr().out)
    assert payload["replay"]["solver"] == "incremental" and payload["replay"]["own_model"] is True
    for flags, named in (
        (["--model", "review"], "--model review"),
        (["--class-weight", "balanced"], "--class-weight"),
        (["--C", "auto"], "--C auto"),
    ):
        assert main([*args, *flags]) == 2
        err = capsys.readouterr().err
        assert f"{named}: for two classes only" in err and "has named classes" in err, err


def test_cli_replays_a_multi_label_project_under_the_model_given(tmp_path, capsys):
    from core.cli import main
    from core.multiclass import MULTILABEL_STRATEGIES
    from tests.core.test_replay import _answerer, _two_member_project

    reference = list(MULTILABEL_STRATEGIES)[0]

    url, engine, dataset_id, group, rng = _three_blobs(tmp_path / "sets.db")
    project = _two_member_project(
        engine, dataset_id, reference, {"classes": ["cat", "dog", "cow"], "multi_label": True}
    )
    answer = _answerer(engine, project, reference, "answer_classes")
    for n, item in enumerate(rng.choice(90, 36, replace=False)):
        answer("ann" if n % 2 else "bo", item, GROUP_SETS[group[item]])
    engine.dispose()
    args = ["replay", "--project", str(project), "--database", url, "--strategies", "random", "--seeds", "1"]
    assert main([*args, "--initial", "4", "--solver", "lasvm", "--kernel", "linear", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["replay"]["multi_label"] is True and payload["replay"]["solver"] == "lasvm"
    assert payload["replay"]["solver_params"]["kernel"] == "linear" and payload["config"]["solver"] == "lasvm"
    assert main([*args, "--model", "review"]) == 2
    err = capsys.readouterr().err
    assert "--model review: for two classes only" in err and "has several classes per item" in err


def _data_file(tmp_path, n: int = 60):
    X, group = _blobs(n)
    path = tmp_path / "data.csv"
    pd.DataFrame({"id": [f"k{i}" for i in range(n)], "x": X[:, 0], "y": X[:, 1]}).to_csv(path, index=False)
    return path, group


def test_cli_replays_a_multi_label_labels_file_against_data(tmp_path, capsys):
    """--labels FILE --classes --multi-label: a label cell holds an item's classes separated by ';' (empty: a
    skip, '(none)': none of them); replayed with the multi-label strategies under the model given."""
    from core.cli import main

    data, group = _data_file(tmp_path)
    names = ("a", "b", "a;c")
    labels = tmp_path / "labels.csv"
    cells = [names[g] for g in group[:45]]
    cells[3], cells[5] = "", "(none)"
    pd.DataFrame({"item_key": [f"k{i}" for i in range(45)], "label": cells}).to_csv(labels, index=False)
    base = ["replay", "--labels", str(labels), "--data", str(data), "--key-column", "id", "--strategies", "random"]
    command = [*base, "--classes", "--multi-label", "--seeds", "1", "--initial", "4", "--solver", "lasvm", "--json"]
    assert main(command) == 0
    payload = json.loads(capsys.readouterr().out)
    replay = payload["replay"]
    assert replay["multi_label"] is True and replay["pool"] == 44 and replay["skipped"] == 1 and replay["none"] == 1
    assert replay["classes"] == {"a": sum("a" in c for c in cells), "b": cells.count("b"), "c": cells.count("a;c")}
    assert replay["solver"] == "lasvm"
    # with the classes named: one not among them is refused, naming it
    assert main([*base, "--classes", "a,b", "--multi-label"]) == 2
    assert "'c'" in capsys.readouterr().err
    assert main([*base, "--multi-label"]) == 2
    assert "--multi-label goes with --classes" in capsys.readouterr().err


def test_cli_replays_a_k_class_labels_file_against_data(tmp_path, capsys):
    from core.cli import main

    data, group = _data_file(tmp_path)
    labels = tmp_path / "labels.csv"
    pd.DataFrame({"item_index": range(45), "label": [("cat", "dog", "cow")[g] for g in group[:45]]}).to_csv(
        labels, index=False
    )
    base = ["replay", "--labels", str(labels), "--data", str(data), "--key-column", "id", "--strategies", "random"]
    assert main([*base, "--seeds", "1", "--classes", "cat,dog,cow", "--initial", "4", "--C", "3", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["replay"]["classes"] == {"cat": 15, "dog": 15, "cow": 15}
    assert payload["replay"]["solver_params"]["C"] == 3.0
    assert main([*base, "--classes", "cat,dog"]) == 2
    assert "'cow' is not a class" in capsys.readouterr().err


def test_read_class_labels_reads_a_class_or_a_set_per_item(tmp_path):
    path = tmp_path / "labels.csv"
    path.write_text("item_index,label\n2,b\n0,\n1,a;b\n3,(none)\n")
    labelled = read_class_labels(path, None, 5, multi_label=True)
    assert labelled.classes == ("a", "b") and list(labelled.rows) == [2, 1, 3] and labelled.skipped == 1
    assert labelled.labels.tolist() == [[False, True], [True, True], [False, False]]
    path.write_text("item_index,label\n2,b\n0,skipped\n1,a\n")
    labelled = read_class_labels(path, None, 5, names=["b", "a"])
    assert labelled.classes == ("b", "a") and labelled.labels.tolist() == [0, 1] and not labelled.multi_label
