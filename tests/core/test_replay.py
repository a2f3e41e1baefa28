"""Replaying a labelled session under other heuristics (core.replay, ``python -m core replay``)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from core.datasets import make_gaussians
from core.experiment import run_comparison
from core.replay import (
    CAVEAT,
    SESSION_ORDER,
    LabelledItems,
    ReplayError,
    project_items,
    read_labels,
    replay_text,
    run_replay,
)

TIMING = ["update_ms", "query_ms"]


@pytest.fixture(scope="module")
def data():
    X, y = make_gaussians(80, np.random.default_rng(3), separation=2.0, n_features=4)
    return X, y


@pytest.fixture(scope="module")
def session(data):
    """30 of the 80 items, in the order an analyst labelled them, with their answers (4 of them corrected:
    the final answers differ from the true labels, as a replay's oracle may)."""
    _, y = data
    rows = np.random.default_rng(5).choice(len(y), 30, replace=False)
    labels = y[rows].astype(int).copy()
    labels[[2, 9, 15, 21]] *= -1
    return rows, labels


def test_random_replay_is_compare_on_the_labelled_items_with_their_answers(data, session):
    X, _ = data
    rows, labels = session
    replay = run_replay(X, LabelledItems(rows, labels), strategies=["random"], seeds=[0, 1], initial=4)
    direct = run_comparison(
        X[rows], labels, strategies=["random"], seeds=[0, 1], initial=4, test_fraction=0, budget=len(rows)
    )
    got = replay.rows[replay.rows.strategy == "random"].drop(columns=TIMING).reset_index(drop=True)
    # (the session order has no support vectors: n_sv is a float column in a replay)
    pd.testing.assert_frame_equal(got, direct.rows.drop(columns=TIMING), check_dtype=False)
    # every run labels the whole pool: the answers end at recall 1
    assert (got.groupby("seed")["recall"].last() == 1.0).all()
    assert (got.groupby("seed")["n_labels"].max() == len(rows)).all()


def test_the_session_order_is_one_more_curve_its_cumulative_positives(data):
    X, _ = data
    rows = np.arange(10, 30)
    # positives at the 1st, 4th, 7th, 10th and 20th label: 5 in 20
    labels = np.full(20, -1)
    labels[[0, 3, 6, 9, 19]] = 1
    result = run_replay(X, LabelledItems(rows, labels), strategies=["random"], seeds=[0], initial=4)
    order = result.rows[result.rows.strategy == SESSION_ORDER]
    assert list(order["n_labels"]) == list(range(1, 21))
    assert np.allclose(order["recall"], np.cumsum(labels > 0) / 5)
    summary = result.summary.set_index("strategy").loc[SESSION_ORDER]
    # 50% of 5 = 3 positives: the 7th label; 80% = 4: the 10th; 95% -> 5: the 20th
    assert (summary["labels_recall_50"], summary["labels_recall_80"], summary["labels_recall_95"]) == (7, 10, 20)
    assert summary["wss_95"] == pytest.approx((20 - 20) / 20 - 0.05)
    assert result.config["replay"]["pool"] == 20 and result.config["replay"]["positives"] == 5


def test_the_original_heuristic_runs_as_the_reference_with_the_sessions_model(data, session):
    X, _ = data
    rows, labels = session
    labelled = LabelledItems(
        rows, labels, strategy="near-boundary", solver="lasvm", solver_params={"C": 2.0}, source="session 7"
    )
    result = run_replay(X, labelled, strategies=["random"], seeds=[0], initial=4)
    assert list(result.summary["strategy"]) == ["random", "near-boundary", SESSION_ORDER]
    assert result.config["replay"]["reference"] == "near-boundary"
    assert set(result.rows[result.rows.strategy != SESSION_ORDER]["solver"]) == {"lasvm"}
    text = replay_text(result)
    assert "session 7" in text and CAVEAT in text
    assert "near-boundary" in text and "reference" in text


def test_a_replay_without_a_known_heuristic_says_there_is_no_reference(data, session):
    X, _ = data
    rows, labels = session
    result = run_replay(
        X, LabelledItems(rows, labels, source="labels.csv"), strategies=["random"], seeds=[0], initial=4
    )
    assert result.config["replay"]["reference"] is None
    assert "no reference" in replay_text(result)


@pytest.mark.parametrize(
    "rows, labels, message",
    [
        ([1, 2, 2, 3], [1, -1, 1, -1], "item 2 is labelled twice"),
        ([1, 2, 3], [1, 1, 1], "positive and negative"),
        ([1, 2, 99], [1, -1, 1], "item 99"),
        ([1, 2, 3], [1, -1, 2], "+1 or -1"),
        ([1, 2], [1, -1, 1], "3 answers for 2 items"),
    ],
)
def test_bad_labelled_items_are_refused_with_a_clear_message(data, rows, labels, message):
    X, _ = data
    with pytest.raises(ReplayError, match=message.replace("+", r"\+")):
        run_replay(X, LabelledItems(np.array(rows), np.array(labels)), strategies=["random"], seeds=[0])


def test_initial_labels_that_would_be_the_whole_run_are_refused(data, session):
    X, _ = data
    rows, labels = session
    with pytest.raises(ReplayError, match="the 30 initial labels would be every one of the 30 labels"):
        run_replay(X, LabelledItems(rows, labels), strategies=["random"], seeds=[0], initial=30)


def test_a_project_replays_its_settled_answers_in_the_order_first_answered():
    # (item, annotator, value) in label order; item 4 is answered twice and differs, settled negative
    from types import SimpleNamespace

    answers = [(4, "ann", 1), (7, "bo", -1), (4, "bo", -1), (2, "ann", 0), (9, "ann", 1), (7, "ann", 1)]
    answers = [SimpleNamespace(item_index=i, annotator=who, value=v) for i, who, v in answers]
    labelled = project_items(answers, settled={4: -1})
    assert list(labelled.rows) == [4, 7, 9]
    assert list(labelled.labels) == [-1, -1, 1]  # 4 settled; 7's answers differ, unsettled: the first stands
    assert labelled.skipped == 1 and labelled.unsettled == 1


# --------------------------------------------------------------------------- labels files


def _write(path, text):
    path.write_text(text)
    return path


def test_a_labels_file_is_read_by_key_in_its_order_skips_left_out(tmp_path):
    path = _write(tmp_path / "labels.csv", "item_key,label\nc,yes\na,no\nb,skipped\nd,yes\n")
    labelled = read_labels(path, item_keys=["a", "b", "c", "d"], n_items=4, classes=("no", "yes"))
    assert list(labelled.rows) == [2, 0, 3] and list(labelled.labels) == [1, -1, 1] and labelled.skipped == 1


def test_a_labels_file_by_item_number_with_label_values(tmp_path):
    path = _write(tmp_path / "labels.csv", "item_index,label_value\n3,1\n0,-1\n1,0\n")
    labelled = read_labels(path, item_keys=None, n_items=4)
    assert list(labelled.rows) == [3, 0] and list(labelled.labels) == [1, -1] and labelled.skipped == 1


@pytest.mark.parametrize(
    "text, message",
    [
        ("item_key,label\na,yes\nzz,no\n", "line 3: 'zz' is the key of no item"),
        ("item_key,label\na,yes\nb,maybe\n", "line 3: 'maybe' is not a class"),
        ("item_key,label\na,yes\na,no\n", "line 3: 'a' is given twice"),
        ("item_key\na\n", "needs two columns"),
    ],
)
def test_a_bad_labels_file_gets_a_clear_message(tmp_path, text, message):
    path = _write(tmp_path / "labels.csv", text)
    with pytest.raises(ReplayError, match=message):
        read_labels(path, item_keys=["a", "b"], n_items=2, classes=("no", "yes"))


def test_a_missing_labels_file_is_named(tmp_path):
    with pytest.raises(ReplayError, match="not found"):
        read_labels(tmp_path / "none.csv", item_keys=None, n_items=3)


# --------------------------------------------------------------------------- python -m core replay


@pytest.fixture
def stored_session(tmp_path, data):
    """A SQLite database with the data and one session: 24 labels, a skip, a corrected label."""
    import storage
    from storage import repository as repo
    from storage.history import change_label

    X, y = data
    url = f"sqlite:///{tmp_path / 'replay.db'}"
    engine = storage.make_engine(url)
    storage.init_db(engine)
    dataset_id = repo.import_dataset(
        engine,
        name="gauss",
        X=X,
        feature_names=[f"f{j}" for j in range(4)],
        y_true=y.astype(int),
        item_keys=[f"k{i}" for i in range(len(y))],
    )
    session_id = repo.start_session(
        engine,
        dataset_id=dataset_id,
        annotator="ann",
        strategy="near-boundary",
        solver="incremental",
        params={"solver_params": {"kernel": "rbf", "C": 1.0}},
        seed=0,
    )
    order = np.random.default_rng(1).choice(len(y), 25, replace=False)
    events = []
    for k, item in enumerate(order):
        value = 0 if k == 5 else int(y[item])
        events.append(
            repo.record_label(
                engine,
                session_id,
                item_index=int(item),
                value=value,
                annotator="ann",
                strategy="near-boundary",
                solver="incremental",
                update_ms=1.5,
                query_ms=0.5,
            )
        )
    corrected = events[7]
    change_label(engine, session_id, corrected.label_id, value=-corrected.value, annotator="ann")
    engine.dispose()
    return url, session_id, order, y, corrected


def test_cli_replays_a_stored_session_with_its_corrections(stored_session, tmp_path, capsys):
    from core.cli import main

    url, session_id, order, y, corrected = stored_session
    out = tmp_path / "rows.csv"
    code = main(
        [
            "replay",
            "--session",
            str(session_id),
            "--database",
            url,
            "--strategies",
            "random",
            "--seeds",
            "2",
            "--initial",
            "4",
            "--out",
            str(out),
        ]
    )
    text = capsys.readouterr().out
    assert code == 0
    assert f"session {session_id}" in text and "24 labelled items" in text and "1 skip left out" in text
    assert CAVEAT.split(":")[0] in text and "reference" in text
    rows = pd.read_csv(out)
    assert set(rows["strategy"]) == {"random", "near-boundary", SESSION_ORDER}
    # the session order is the stored order, skip left out, with the corrected answer
    answers = [int(y[i]) for k, i in enumerate(order) if k != 5]
    answers[6] = -corrected.value  # the 8th label given is the 7th once the skip is left out
    session_rows = rows[rows.strategy == SESSION_ORDER]
    assert list(session_rows["label"]) == answers
    assert session_rows["update_ms"].eq(1.5).all()  # the session's own latency


def test_cli_replay_json_and_a_labels_file_against_data(tmp_path, data, capsys):
    from core.cli import main

    X, y = data
    csv = tmp_path / "data.csv"
    pd.DataFrame(
        {
            "id": [f"k{i}" for i in range(len(y))],
            **{f"f{j}": X[:, j] for j in range(4)},
            "truth": np.where(y > 0, "yes", "no"),
        }
    ).to_csv(csv, index=False)
    picked = np.random.default_rng(2).choice(len(y), 20, replace=False)
    labels = tmp_path / "labels.csv"
    pd.DataFrame({"item_key": [f"k{i}" for i in picked], "label": np.where(y[picked] > 0, "yes", "no")}).to_csv(
        labels, index=False
    )
    code = main(
        [
            "replay",
            "--labels",
            str(labels),
            "--data",
            str(csv),
            "--key-column",
            "id",
            "--label-column",
            "truth",
            "--strategies",
            "random,near-boundary",
            "--seeds",
            "2",
            "--initial",
            "4",
            "--json",
        ]
    )
    assert code == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["replay"]["pool"] == 20 and payload["replay"]["reference"] is None
    assert [r["strategy"] for r in payload["summary"]] == ["random", "near-boundary", SESSION_ORDER]
    assert payload["caveat"] == CAVEAT


def test_cli_replay_bad_input_one_line(stored_session, tmp_path, capsys):
    from core.cli import main

    url, *_ = stored_session
    assert main(["replay", "--session", "99", "--database", url, "--strategies", "random"]) == 2
    assert "error: Session 99 does not exist" in capsys.readouterr().err
    assert main(["replay", "--strategies", "random"]) == 2
    assert "--session N or --labels FILE" in capsys.readouterr().err
    labels = _write(tmp_path / "labels.csv", "item_index,label\n0,1\n5,frog\n")
    csv = _write(tmp_path / "d.csv", "a,b\n" + "".join(f"{i},{i % 3}\n" for i in range(8)))
    assert main(["replay", "--labels", str(labels), "--data", str(csv), "--strategies", "random"]) == 2
    assert "line 3: 'frog' is not a class" in capsys.readouterr().err


def _two_member_project(engine, dataset_id: int, strategy: str, params: dict) -> int:
    """A stored team project (the incremental solver) whose members ann and bo both answer every item."""
    from storage import teams

    project = teams.create_project(
        engine,
        name="screen",
        dataset_id=dataset_id,
        strategy=strategy,
        solver="incremental",
        params=params,
        labels_per_item=2,
        overlap_share=1.0,
    )
    for name in ("ann", "bo"):
        teams.add_member(engine, project, name)
    return project


def test_cli_replays_a_team_project_with_its_settled_answers(tmp_path, data, capsys):
    import storage
    from core.cli import main
    from storage import repository as repo
    from storage import teams

    X, y = data
    url = f"sqlite:///{tmp_path / 'team.db'}"
    engine = storage.make_engine(url)
    storage.init_db(engine)
    dataset_id = repo.import_dataset(engine, name="gauss", X=X, feature_names=[f"f{j}" for j in range(4)])
    project = _two_member_project(engine, dataset_id, "near-boundary", {"solver_params": {"kernel": "rbf"}})
    items = np.random.default_rng(4).choice(len(y), 16, replace=False)
    for k, item in enumerate(items):
        teams.record_answer(
            engine,
            project,
            annotator="ann" if k % 2 else "bo",
            item_index=int(item),
            value=int(y[item]),
            strategy="near-boundary",
            solver="incremental",
        )
    disputed = int(items[0])
    teams.record_answer(
        engine,
        project,
        annotator="ann",
        item_index=disputed,
        value=-int(y[disputed]),
        strategy="near-boundary",
        solver="incremental",
    )
    teams.settle(engine, project, item_index=disputed, value=-int(y[disputed]), settled_by="ann")
    engine.dispose()
    out = tmp_path / "rows.csv"
    assert (
        main(
            [
                "replay",
                "--project",
                str(project),
                "--database",
                url,
                "--strategies",
                "random",
                "--seeds",
                "1",
                "--initial",
                "4",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert f"project {project}: 16 labelled items" in capsys.readouterr().out
    order = pd.read_csv(out).query("strategy == @SESSION_ORDER")
    assert order["label"].iloc[0] == -int(y[disputed])  # the settled answer, not the first one given
    assert list(order["label"].iloc[1:]) == [int(y[i]) for i in items[1:]]


def _three_blobs(path):
    """A new database file at ``path`` holding a dataset of three groups of 30 items: (url, engine,
    dataset id, each item's group, the generator that drew them, for the answers' order)."""
    import storage
    from storage import repository as repo

    rng = np.random.default_rng(5)
    group = np.repeat([0, 1, 2], 30)
    X = np.array([[0.0, 0.0], [4.0, 0.0], [0.0, 4.0]])[group] + rng.normal(0, 0.7, (90, 2))
    url = f"sqlite:///{path}"
    engine = storage.make_engine(url)
    storage.init_db(engine)
    dataset_id = repo.import_dataset(engine, name="blobs", X=X, feature_names=["a", "b"])
    return url, engine, dataset_id, group, rng


def test_cli_replays_a_session_with_named_classes_with_its_final_classes(tmp_path, capsys):
    """A K-class session: the pool is its labelled items (skips left out), the oracle their classes as they
    stand (a correction applied), the K-class strategies run as ``compare --classes`` runs them (accuracy on a
    held-out part of the labelled items), the session's own strategy as the reference."""
    from core.cli import main
    from core.replay import CLASS_CAVEAT
    from storage import repository as repo
    from storage.history import change_label

    url, engine, dataset_id, group, rng = _three_blobs(tmp_path / "classes.db")
    session_id = repo.start_session(
        engine,
        dataset_id=dataset_id,
        annotator="ann",
        strategy="smallest-margin",
        solver="incremental",
        params={"classes": ["cat", "dog", "cow"], "solver_params": {"kernel": "rbf", "C": 1.0}},
        seed=0,
    )
    order = rng.choice(90, 40, replace=False)
    events = [
        repo.record_label(
            engine,
            session_id,
            item_index=int(item),
            value=0 if k == 3 else 1,
            answer_class=None if k == 3 else int(group[item]),
            annotator="ann",
            strategy="smallest-margin",
            solver="incremental",
        )
        for k, item in enumerate(order)
    ]
    corrected = events[6]
    change_label(
        engine, session_id, corrected.label_id, value=1, answer_class=(group[order[6]] + 1) % 3, annotator="ann"
    )
    engine.dispose()
    final = {int(i): int(group[i]) for k, i in enumerate(order) if k != 3}
    final[int(order[6])] = int((group[order[6]] + 1) % 3)
    out = tmp_path / "rows.csv"
    args = ["replay", "--session", str(session_id), "--database", url, "--strategies", "random", "--seeds", "2"]
    assert main([*args, "--initial", "4", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    counts = np.bincount(list(final.values()), minlength=3)
    assert f"session {session_id}: 39 labelled items (cat {counts[0]}, dog {counts[1]}, cow {counts[2]})" in text
    assert "1 skip left out" in text and CLASS_CAVEAT in text
    assert "reference: the session's own strategy (smallest-margin)" in text
    rows = pd.read_csv(out)
    assert set(rows["strategy"]) == {"random", "smallest-margin", SESSION_ORDER} and set(rows["seed"]) == {0, 1}
    # every item asked is one the session labelled, answered with its class as it stands
    labelled = [i for k, i in enumerate(order) if k != 3]
    names = ("cat", "dog", "cow")
    assert all(names[final[int(labelled[r.item])]] == r.label for r in rows.itertuples())
    # a K-class replay takes K-class strategies, names the wrong ones, and no two-class-only model
    assert main([*args[:-4], "--strategies", "near-boundary"]) == 2
    assert "'near-boundary' is not a strategy for named classes" in capsys.readouterr().err
    assert main([*args, "--model", "review"]) == 2
    assert "--model review: for two classes only" in capsys.readouterr().err
    assert main([*args, "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["replay"]["pool"] == 39 and payload["replay"]["classes"] == {
        "cat": int(counts[0]),
        "dog": int(counts[1]),
        "cow": int(counts[2]),
    }
    assert [r["strategy"] for r in payload["summary"]] == ["random", "smallest-margin", SESSION_ORDER]
    assert payload["caveat"] == CLASS_CAVEAT


def _answerer(engine, project: int, strategy: str, field: str):
    """``answer(who, item, given)``: store a member's answer to the project, ``given`` its ``field``
    (``answer_class`` or ``answer_classes``; None: a skip)."""
    from storage import teams

    def answer(who, item, given):
        teams.record_answer(
            engine,
            project,
            annotator=who,
            item_index=int(item),
            value=0 if given is None else 1,
            strategy=strategy,
            solver="incremental",
            **{field: given},
        )

    return answer


def _class_project(tmp_path, params=None):
    """A stored team project with three named classes (ann and bo; two answers per item): 30 items answered
    with their group by turns, one skipped, two answered twice with a different class (the first settled on
    the second class, the other unsettled).  (url, project id, each item's final class in order)."""
    from storage import teams

    url, engine, dataset_id, group, rng = _three_blobs(tmp_path / "team-classes.db")
    params = params or {"classes": ["cat", "dog", "cow"], "solver_params": {"kernel": "rbf", "C": 1.0}}
    project = _two_member_project(engine, dataset_id, "smallest-margin", params)

    answer = _answerer(engine, project, "smallest-margin", "answer_class")

    order = rng.choice(90, 31, replace=False)
    for n, item in enumerate(order):
        answer("ann" if n % 2 else "bo", item, None if n == 3 else int(group[item]))
    settled, unsettled = int(order[0]), int(order[1])
    answer("ann", settled, int((group[settled] + 1) % 3))
    answer("bo", unsettled, int((group[unsettled] + 2) % 3))
    teams.settle(
        engine, project, item_index=settled, value=1, answer_class=int((group[settled] + 1) % 3), settled_by="ann"
    )
    engine.dispose()
    final = {int(i): int(group[i]) for n, i in enumerate(order) if n != 3}
    final[settled] = int((group[settled] + 1) % 3)  # the class settled on; the unsettled item keeps its first
    return url, project, final


def test_cli_replays_a_team_project_with_named_classes_with_its_final_classes(tmp_path, capsys):
    """A K-class team project: the pool is the items answered with a class, the oracle each item's final class
    (settled, else the first class answered), the project's strategy the reference; the caveat says how an
    unsettled disagreement counts."""
    from core.cli import main
    from core.replay import CLASS_CAVEAT, TEAM_CLASS_CAVEAT

    url, project, final = _class_project(tmp_path)
    out = tmp_path / "rows.csv"
    args = ["replay", "--project", str(project), "--database", url, "--strategies", "random", "--seeds", "2"]
    assert main([*args, "--initial", "4", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    counts = np.bincount(list(final.values()), minlength=3)
    said = f"project {project}: 30 labelled items (cat {counts[0]}, dog {counts[1]}, cow {counts[2]}), 1 skip left out"
    assert said in text and "1 item whose classes differ and were not settled (the first class stands)" in text
    assert f"{CLASS_CAVEAT} {TEAM_CLASS_CAVEAT}" in text
    assert "reference: the project's own strategy (smallest-margin)" in text
    rows = pd.read_csv(out)
    assert set(rows["strategy"]) == {"random", "smallest-margin", SESSION_ORDER}
    # every item asked is one the project labelled, answered with its final class, in first-answered order
    labelled = list(final)
    names = ("cat", "dog", "cow")
    assert all(names[final[labelled[r.item]]] == r.label for r in rows.itertuples())
    assert main([*args, "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["replay"]["unsettled"] == 1 and payload["replay"]["team"] is True
    assert payload["caveat"] == f"{CLASS_CAVEAT} {TEAM_CLASS_CAVEAT}"
    assert main([*args, "--loss", "hinge"]) == 2
    assert "--loss: for two classes only; project" in capsys.readouterr().err


#: the sets of classes (places among cat, dog, cow) of each of the three blobs' groups in the multi-label tests
GROUP_SETS = ((0,), (1,), (0, 2))


def test_cli_replays_a_multi_label_project_with_its_final_sets(tmp_path, capsys):
    """A multi-label team project: the pool is the items answered with a set (none of the classes is one), the
    oracle each item's final set (settled, else the first set answered), the project's strategy the
    reference; the Hamming accuracy and per-class measures printed, with the caveat of a team's sets."""
    from core.cli import main
    from core.multiclass import MULTILABEL_STRATEGIES
    from core.replay import MULTI_LABEL_CAVEAT, TEAM_SET_CAVEAT
    from storage import teams

    reference = list(MULTILABEL_STRATEGIES)[0]
    url, engine, dataset_id, group, rng = _three_blobs(tmp_path / "team-sets.db")
    project = _two_member_project(
        engine, dataset_id, reference, {"classes": ["cat", "dog", "cow"], "multi_label": True}
    )

    answer = _answerer(engine, project, reference, "answer_classes")

    order = rng.choice(90, 31, replace=False)
    for n, item in enumerate(order):
        answer("ann" if n % 2 else "bo", item, None if n == 3 else GROUP_SETS[group[item]])
    settled, unsettled = int(order[0]), int(order[1])
    answer("ann", settled, ())
    answer("bo", unsettled, (1, 2))
    teams.settle(engine, project, item_index=settled, value=1, answer_classes=(), settled_by="ann")
    engine.dispose()
    out = tmp_path / "rows.csv"
    args = ["replay", "--project", str(project), "--database", url, "--strategies", "random", "--seeds", "2"]
    assert main([*args, "--initial", "4", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    final = {int(i): GROUP_SETS[group[i]] for n, i in enumerate(order) if n != 3} | {settled: ()}
    with_cat = sum(0 in s for s in final.values())
    assert f"project {project}: 30 labelled items (items with each class: cat {with_cat}," in text
    assert "with none 1), 1 skip left out" in text
    assert "1 item whose sets differ and were not settled (the first set stands)" in text
    assert f"{MULTI_LABEL_CAVEAT} {TEAM_SET_CAVEAT}" in text
    assert f"reference: the project's own strategy ({reference})" in text and "per class at the last label" in text
    rows = pd.read_csv(out)
    assert set(rows["strategy"]) == {"random", reference, SESSION_ORDER}
    # every item asked is one the project labelled, answered with its final set
    labelled, names = list(final), ("cat", "dog", "cow")
    assert all("; ".join(names[k] for k in final[labelled[r.item]]) or "(none)" == r.label for r in rows.itertuples())
    assert main([*args, "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["replay"]["multi_label"] is True and payload["replay"]["unsettled"] == 1
    assert payload["caveat"] == f"{MULTI_LABEL_CAVEAT} {TEAM_SET_CAVEAT}"
    # a two-class heuristic, or a K-class one, is not a multi-label strategy: one line, named
    assert main([*args[:-4], "--strategies", "near-boundary"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'near-boundary' is not a multi-label strategy" in err, err


def test_cli_replays_a_multi_label_session_with_its_sets_as_they_stand(tmp_path, capsys):
    """A multi-label session: its answered items (a skip left out) with their sets as they stand (a correction
    applied), replayed as ``compare --classes --multi-label`` runs on them."""
    from core.cli import main
    from core.multiclass import MULTILABEL_STRATEGIES
    from core.replay import MULTI_LABEL_CAVEAT
    from core.settings import SessionSettings
    from storage import repository as repo
    from storage.history import change_label

    reference = list(MULTILABEL_STRATEGIES)[0]
    url, engine, dataset_id, group, rng = _three_blobs(tmp_path / "sets.db")
    settings = SessionSettings(strategy=reference, classes=("cat", "dog", "cow"), multi_label=True)
    session_id = repo.start_session(engine, dataset_id=dataset_id, annotator="ann", settings=settings)
    order = rng.choice(90, 36, replace=False)
    ids = {}
    for n, item in enumerate(order):
        event = repo.record_label(
            engine,
            session_id,
            item_index=int(item),
            value=0 if n == 5 else 1,
            answer_classes=None if n == 5 else ((1,) if n == 7 else GROUP_SETS[group[item]]),
            annotator="ann",
            strategy=reference,
            solver="incremental",
        )
        ids[n] = event.label_id
    change_label(engine, session_id, ids[7], value=1, annotator="ann", answer_classes=GROUP_SETS[group[order[7]]])
    engine.dispose()
    command = f"replay --session {session_id} --database {url} --strategies random --seeds 1 --initial 4 --json"
    assert main(command.split()) == 0
    payload = json.loads(capsys.readouterr().out)
    sets = [GROUP_SETS[group[i]] for n, i in enumerate(order) if n != 5]
    assert payload["replay"]["pool"] == 35 and payload["replay"]["skipped"] == 1
    assert payload["replay"]["classes"] == {
        name: sum(k in s for s in sets) for k, name in enumerate(("cat", "dog", "cow"))
    }
    assert payload["caveat"] == MULTI_LABEL_CAVEAT and payload["replay"]["reference"] == reference


def test_a_project_with_named_classes_replays_each_items_final_class_in_the_order_first_answered():
    """A team project with named classes: each item's class is the owner's settled one, else the first class
    a member answered (what the project's model learns); items in the order of their first class answer, an
    item with only skips left out, an unsettled disagreement counted."""
    from types import SimpleNamespace

    # (item, annotator, class) in label order; None: a skip
    given = [(4, "ann", 0), (7, "bo", 2), (4, "bo", 1), (2, "ann", None), (5, "ann", None), (5, "bo", 1), (7, "ann", 1)]
    answers = [SimpleNamespace(item_index=i, annotator=who, value=1, answer_class=k) for i, who, k in given]
    labelled = project_items(answers, {4: 1}, params={"classes": ["cat", "dog", "fox"]}, source="project 3")
    assert labelled.classes == ("cat", "dog", "fox") and labelled.team
    assert list(labelled.rows) == [4, 7, 5]  # 5: its first class answer came after 7's
    assert list(labelled.labels) == [1, 2, 1]  # 4 settled on dog; 7's classes differ, unsettled: fox stands
    assert labelled.skipped == 1 and labelled.unsettled == 1


def test_final_class_is_the_settled_class_else_the_first_class_answered():
    from types import SimpleNamespace

    from core.replay import final_class

    answers = [SimpleNamespace(answer_class=k) for k in (None, 2, 0)]
    assert final_class(answers, None) == 2
    assert final_class(answers, 0) == 0
    assert final_class([SimpleNamespace(answer_class=None)], 1) is None  # no class answer yet: nothing learned


def test_a_multi_label_project_replays_each_items_final_set_in_the_order_first_answered():
    """A multi-label team project: each item's set is the settled one, else the first set answered (none of
    the classes is a set too); items in the order of their first answer that is not a skip."""
    from types import SimpleNamespace

    given = [(4, "ann", (0,)), (7, "bo", ()), (4, "bo", (1,)), (2, "ann", None), (7, "ann", (0, 1)), (5, "bo", (1,))]
    answers = [
        SimpleNamespace(item_index=i, annotator=who, value=0 if k is None else 1, answer_classes=k)
        for i, who, k in given
    ]
    labelled = project_items(
        answers, {4: (0, 1)}, params={"classes": ["a", "b"], "multi_label": True}, source="project 3"
    )
    assert labelled.multi_label and labelled.team and list(labelled.rows) == [4, 7, 5]
    assert labelled.labels.tolist() == [[True, True], [False, False], [False, True]]
    assert labelled.skipped == 1 and labelled.unsettled == 1


def _sets(n: int = 60):
    """(X, Y, classes) of ``n`` items in three groups: {a}, {b}, {a, c}."""
    rng = np.random.default_rng(7)
    group = np.arange(n) % 3
    X = np.array([[0.0, 0.0], [4.0, 0.0], [0.0, 4.0]])[group] + rng.normal(0, 0.6, (n, 2))
    Y = np.array([[True, False, False], [False, True, False], [True, False, True]])[group]
    return X, Y, ("a", "b", "c")


def test_a_multi_label_replay_is_the_multi_label_comparison_on_the_labelled_items():
    """``run_multi_label_replay`` runs ``run_multi_label_comparison`` on the labelled rows and their sets, the
    session's strategy added as the reference, every item of a seed's pool labelled: the same numbers."""
    from core.multi_label_experiment import run_multi_label_comparison
    from core.multiclass import MULTILABEL_STRATEGIES
    from core.replay import MULTI_LABEL_CAVEAT, class_replay_text, run_multi_label_replay

    X, Y, classes = _sets()
    rows = np.random.default_rng(2).permutation(45)  # (15 items of each set)
    reference = list(MULTILABEL_STRATEGIES)[0]
    labelled = LabelledItems(
        rows,
        Y[rows],
        strategy=reference,
        solver="incremental",
        classes=classes,
        multi_label=True,
        source="session 9",
        skipped=2,
    )
    result = run_multi_label_replay(X, labelled, strategies=["random"], seeds=2, initial=4)
    pool = 45 - round(0.3 * 15) * 3  # (each of the three sets holds out 30 % of its 15 items)
    direct = run_multi_label_comparison(
        X[rows],
        Y[rows],
        classes,
        strategies=["random", reference],
        solver="incremental",
        budget=pool,
        seeds=2,
        initial=4,
    )
    columns = ["strategy", "seed", "n_labels", "accuracy", "macro_auc", "item", "label"]
    heuristics = result.rows["strategy"] != SESSION_ORDER  # (the session order: one more run, test_replay_order)
    pd.testing.assert_frame_equal(result.rows.loc[heuristics, columns], direct.rows[columns])
    pd.testing.assert_frame_equal(result.per_class.iloc[: len(direct.per_class)], direct.per_class)
    assert result.rows.groupby(["strategy", "seed"]).size().eq(pool).all()
    replay = result.config["replay"]
    assert replay["multi_label"] is True and replay["reference"] == reference and replay["pool"] == 45
    assert replay["classes"] == {"a": int(Y[rows, 0].sum()), "b": int(Y[rows, 1].sum()), "c": int(Y[rows, 2].sum())}
    text = class_replay_text(result)
    assert "session 9: 45 labelled items" in text and "2 skips left out" in text and MULTI_LABEL_CAVEAT in text


def test_a_multi_label_replay_with_a_set_given_once_labels_the_whole_pool_of_a_seed():
    """A set given once stays in every seed's pool (it cannot be held out and learned both): the budget is
    that pool, every run labels all of it."""
    from core.replay import run_multi_label_replay

    X, Y, classes = _sets(40)
    Y[0] = True  # (the only item with all three classes)
    labelled = LabelledItems(np.arange(40), Y, classes=classes, multi_label=True, source="session 9")
    result = run_multi_label_replay(X, labelled, strategies=["random"], seeds=2, initial=4)
    pool = 1 + sum(n - round(0.3 * n) for n in (13, 13, 13))  # (the sets a, b and a-c: 13 items each)
    assert result.config["budget"] == pool
    assert result.rows.groupby(["strategy", "seed"]).size().tolist() == [pool] * 4  # (random, the order)


@pytest.mark.parametrize("strategy", ["near-boundary", "smallest-margin"])
def test_a_multi_label_replay_refuses_a_strategy_that_is_not_multi_label(strategy):
    from core.replay import run_multi_label_replay

    X, Y, classes = _sets(30)
    labelled = LabelledItems(np.arange(30), Y, classes=classes, multi_label=True, source="session 9")
    with pytest.raises(ReplayError, match=f"'{strategy}' is not a multi-label strategy"):
        run_multi_label_replay(X, labelled, strategies=[strategy], seeds=1, initial=4)
