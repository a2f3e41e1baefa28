"""Team projects with named classes in storage: each member's answer with its class, the owner's settled
class, refusals that write nothing, and the migration to schema version 10. On SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from sqlalchemy import inspect, text

import storage
from storage import migrations, teams
from storage.errors import InvalidLabelError
from storage.models import SCHEMA_VERSION
from tests.storage.test_storage_migrations import schema_differences, table_rows
from tests.storage.test_storage_repository import small_dataset

CLASSES = ["cat", "dog", "**fox**"]


def class_project(engine, classes=CLASSES, members=("ann", "bob"), name="team", dataset_id=None) -> int:
    dataset_id = dataset_id if dataset_id is not None else small_dataset(engine)
    for member in members:
        if teams.get_account(engine, member) is None:
            teams.create_account(engine, name=member, role="annotator", password_hash=None)
    params = {"solver_params": {"kernel": "rbf", "C": 1.0, "gamma": "scale"}, "strategy_params": {}}
    if classes:
        params["classes"] = list(classes)
    project_id = teams.create_project(
        engine,
        name=name,
        dataset_id=dataset_id,
        strategy="smallest-margin",
        solver="incremental",
        params=params,
        labels_per_item=2,
        overlap_share=1.0,
    )
    for member in members:
        teams.add_member(engine, project_id, member)
    return project_id


def answer(engine, project_id, annotator, item, value=1, answer_class=None):
    return teams.record_answer(
        engine,
        project_id,
        annotator=annotator,
        item_index=item,
        value=value,
        answer_class=answer_class,
        strategy="smallest-margin",
        solver="incremental",
    )


def test_each_member_s_class_is_stored_and_read_back_with_the_settled_class(engine):
    project_id = class_project(engine)
    given = answer(engine, project_id, "ann", 4, answer_class=2)
    assert given.answer_class == 2
    answer(engine, project_id, "bob", 4, answer_class=0)
    answer(engine, project_id, "ann", 5, value=0)
    _, answers = teams.project_answers(engine, project_id)
    assert [(a.annotator, a.item_index, a.value, a.answer_class) for a in answers] == [
        ("ann", 4, 1, 2),
        ("bob", 4, 1, 0),
        ("ann", 5, 0, None),
    ]
    # the member's own session reads the class too (its settings are the project's: the same classes)
    (ann_session,) = [s for n, s in teams.project_members(engine, project_id).items() if n == "ann"]
    assert [(e.item_index, e.answer_class) for e in storage.label_events(engine, ann_session)] == [(4, 2), (5, None)]
    edits = teams.project_revision(engine, project_id)[1]
    teams.settle(engine, project_id, item_index=4, value=1, answer_class=1, settled_by="ann", note="both wrong")
    settled = teams.settlements(engine, project_id)[4]
    assert (settled.value, settled.answer_class, settled.settled_by) == (1, 1, "ann")
    assert teams.project_revision(engine, project_id)[1] == edits + 1  # (a settlement is an edit)
    # settled again: replaced
    teams.settle(engine, project_id, item_index=4, value=1, answer_class=2, settled_by="ann")
    assert teams.settlements(engine, project_id)[4].answer_class == 2


def test_answers_and_settlements_that_do_not_fit_the_project_are_refused_and_nothing_is_written(engine):
    project_id = class_project(engine)
    revision = teams.project_revision(engine, project_id)
    for value, answer_class, words in [
        (1, None, "project's answers are one of its classes"),
        (-1, None, "one of its classes"),
        (1, 3, "not one of the project's 3 classes"),
        (0, 1, "skip has no class"),
        (-1, 0, "one of its classes"),
    ]:
        with pytest.raises(InvalidLabelError, match=words):
            answer(engine, project_id, "ann", 6, value=value, answer_class=answer_class)
    for value, answer_class, words in [(-1, None, "one of its classes"), (1, 7, "not one of the project's 3")]:
        with pytest.raises(InvalidLabelError, match=words):
            teams.settle(engine, project_id, item_index=6, value=value, answer_class=answer_class, settled_by="ann")
    assert teams.project_answers(engine, project_id)[1] == [] and teams.settlements(engine, project_id) == {}
    assert teams.project_revision(engine, project_id) == revision
    # a yes / no project takes no class
    binary = class_project(
        engine, classes=None, name="yes-no", dataset_id=teams.get_project(engine, project_id).dataset_id
    )
    with pytest.raises(InvalidLabelError, match="project has two classes"):
        answer(engine, binary, "ann", 6, answer_class=0)
    with pytest.raises(InvalidLabelError, match="project has two classes"):
        teams.settle(engine, binary, item_index=6, value=1, answer_class=0, settled_by="ann")
    assert teams.project_answers(engine, binary)[1] == [] and teams.settlements(engine, binary) == {}
    answer(engine, binary, "ann", 6, value=-1)  # (as before)
    assert [(a.value, a.answer_class) for a in teams.project_answers(engine, binary)[1]] == [(-1, None)]


def test_migration_0010_adds_the_settled_class_and_keeps_every_settlement(database_url):
    """Schema version 10 adds ``adjudications.answer_class`` (empty for every stored row) and changes nothing
    else, both ways."""
    from alembic import command

    engine = storage.make_engine(database_url)
    try:
        with engine.begin() as connection:
            command.upgrade(migrations.alembic_config(connection), "0009_multi_label_answers")
        with engine.begin() as connection:
            connection.execute(text("UPDATE schema_info SET version = 9"))
        with engine.connect() as connection:
            assert "answer_class" not in {c["name"] for c in inspect(connection).get_columns("adjudications")}
        project_id = class_project(engine, classes=None)
        with engine.begin() as connection:  # a settlement as version 9 wrote it
            connection.execute(
                text(
                    "INSERT INTO adjudications (project_id, item_id, value, note, created_at) "
                    "SELECT :p, items.id, -1, 'settled', CURRENT_TIMESTAMP FROM items WHERE items.position = 3"
                ).bindparams(p=project_id)
            )
        before = table_rows(engine, ["adjudications", "projects", "labels"])
        assert storage.init_db(engine) == SCHEMA_VERSION >= 10
        assert schema_differences(engine) == []
        settled = teams.settlements(engine, project_id)[3]
        assert (settled.value, settled.answer_class, settled.note) == (-1, None, "settled")
        with engine.begin() as connection:
            command.downgrade(migrations.alembic_config(connection), "0009_multi_label_answers")
        with engine.connect() as connection:
            assert "answer_class" not in {c["name"] for c in inspect(connection).get_columns("adjudications")}
            assert connection.execute(text("SELECT version FROM schema_info")).scalar_one() == 9
        assert table_rows(engine, ["adjudications", "projects", "labels"]) == before
    finally:
        engine.dispose()


# --------------------------------------------------------------------------- the service over both databases

NAMES = ("cat", "dog", "=fox")  # (a class name a spreadsheet would read as a formula: escaped in the files)


def assert_a_new_process_agrees(run) -> None:
    """A new process opening ``run``'s project has the same model, bit for bit, and hands out the same next
    item."""
    import numpy as np

    from app.services import MarginLab

    scores, excluded = run.model.decision_function(), set(teams.reserved_items(run.engine, run.project_id))
    expected = run._candidate(set(excluded))
    again = MarginLab(run.engine).open_project(run.project_id)
    again.sync()
    assert type(again) is type(run)
    np.testing.assert_array_equal(again.model.decision_function(), scores)
    assert again.model_labels == run.model_labels
    got = again._candidate(set(excluded))
    assert (got[0], got[1], got[2].strategy if got[2] else None) == (
        expected[0],
        expected[1],
        expected[2].strategy if expected[2] else None,
    )


def blobs_project(svc, solver="incremental", strategy="smallest-margin", **kw):
    """A project with three named classes (``NAMES``) over three well separated groups (``kw``: other options,
    ``multi_label=True`` among them); its id and each item's group."""
    import numpy as np

    from tests.storage.test_teams import owner

    rng = np.random.default_rng(4)
    group = np.repeat([0, 1, 2], 15)
    X = np.array([[0.0, 0.0], [4.0, 0.0], [0.0, 4.0]])[group] + rng.normal(0, 0.6, (45, 2))
    dataset_id = storage.import_dataset(svc.engine, name="blobs", X=X, feature_names=["a", "b"])
    me = owner(svc)
    for name in ("ann", "bob"):
        if teams.get_account(svc.engine, name) is None:
            svc.create_account(me, name=name, password="a long enough password")
    kw.setdefault("labels_per_item", 2)
    kw.setdefault("overlap_share", 0.5)
    project_id = svc.create_project(
        me,
        name="classes",
        dataset_id=dataset_id,
        strategy=strategy,
        solver=solver,
        classes=", ".join(NAMES),
        members=["ann", "bob"],
        seed=3,
        **kw,
    )
    return project_id, group


def reference_model(run):
    """An independent OneVsRest taught, in the order of each item's first class answer as stored, the class
    the owner settled on, else the first class answered (what the shared model must equal)."""
    from core.multiclass import OneVsRest

    _, answers = teams.project_answers(run.engine, run.project_id)
    settled = {i: s.answer_class for i, s in teams.settlements(run.engine, run.project_id).items()}
    params = dict(run.solver_params, random_state=run.info.seed)
    model = OneVsRest(NAMES, run.info.solver, run.X, keep_scores=True, **params)
    taught = set()
    for a in answers:
        if a.answer_class is not None and a.item_index not in taught:
            taught.add(a.item_index)
            model.learn(a.item_index, NAMES[settled.get(a.item_index, a.answer_class)])
    return model


@pytest.mark.parametrize("solver", ["incremental", "lasvm"])
def test_a_class_project_learns_the_final_classes_settles_exports_and_resumes(engine, solver):
    import csv
    import io

    import numpy as np

    from app.services import MarginLab
    from tests.storage.test_teams import owner

    svc = MarginLab(engine)
    project_id, group = blobs_project(svc, solver=solver)
    run = svc.open_project(project_id)
    assert run.has_classes and run.classes == NAMES and run.info.params["classes"] == list(NAMES)
    disputed = None
    for turn in range(16):
        name = ("ann", "bob")[turn % 2]
        shown = run.next_item(name)
        k = int(group[shown.item_index])
        if name == "bob" and shown.second_opinion and disputed is None:
            k, disputed = (k + 1) % 3, shown.item_index  # bob disagrees once
        assert run.answer(name, shown.item_index, NAMES[k], shown).ok
    shown = run.next_item("ann")
    assert run.answer("ann", shown.item_index, None, shown).ok  # a skip
    assert disputed is not None
    # the items are chosen by the project's strategy once two classes are learned, and say why in words
    assert "f(" not in run.next_item("bob").reason
    report = run.agreement()
    assert report.disagreements == [disputed]
    assert set(report.per_item[disputed].values()) == {int(group[disputed]), (int(group[disputed]) + 1) % 3}
    np.testing.assert_array_equal(run.model.decision_function(), reference_model(run).decision_function())
    # the model's guess is not shown on an item it learned (it would tell a member another's answer)
    unlearned = next(i for i in range(len(group)) if i not in run.model_labels)
    assert run.predicted_class(disputed) is None and run.predicted_class(unlearned) in NAMES
    # the owner settles on a class: the model learns it in the item's place
    svc.settle(owner(svc), project_id, disputed, NAMES[2])
    assert teams.settlements(engine, project_id)[disputed].answer_class == 2
    assert run.model_labels[disputed] == 2 and run.agreement().disagreements == []
    np.testing.assert_array_equal(run.model.decision_function(), reference_model(run).decision_function())
    with pytest.raises(Exception, match="not a class of this project"):
        svc.settle(owner(svc), project_id, disputed, "cow")
    # an undo takes the answer out; the model is the one that learned the others
    assert run.undo("ann").ok
    np.testing.assert_array_equal(run.model.decision_function(), reference_model(run).decision_function())
    # the exports name the classes (escaped against formulas)
    rows = list(csv.DictReader(io.StringIO(svc.project_labels_csv(owner(svc), project_id).decode())))
    assert {int(r["item_index"]): r["class"] for r in rows} == {
        i: ("'" + NAMES[k] if NAMES[k].startswith("=") else NAMES[k]) for i, k in run.model_labels.items()
    }
    assert [r["settled"] for r in rows if int(r["item_index"]) == disputed] == ["1"]
    agreement = svc.agreement_csv(owner(svc), project_id).decode()
    assert "dog" in agreement and "'=fox" in agreement and ",=fox" not in agreement
    # a new process has the same model and hands out the same next item
    assert_a_new_process_agrees(run)


@pytest.mark.parametrize(
    "typed, words",
    [
        ("cat", "at least 2"),
        ("cat, dog", "Two classes are a yes / no project"),
        (", ".join(f"c{k}" for k in range(10)), "At most 9"),
        ("cat, dog, cat", "'cat' is named twice"),
        ("cat,, dog", "empty"),
    ],
)
def test_bad_class_lists_for_a_project_are_refused_and_nothing_is_stored(engine, typed, words):
    from app.services import MarginLab, ServiceError
    from tests.storage.test_teams import owner

    svc = MarginLab(engine)
    dataset_id = small_dataset(engine)
    me = owner(svc)
    create = dict(name="p", dataset_id=dataset_id, members=["olga"])
    with pytest.raises(ServiceError, match=words):
        svc.create_project(me, strategy="smallest-margin", classes=typed, **create)
    with pytest.raises(ServiceError, match="one of smallest-margin"):
        svc.create_project(me, strategy="near-boundary", classes="a, b, c", **create)
    with pytest.raises(ServiceError, match="not one of the classes"):
        svc.create_project(me, strategy="target-class", classes="a, b, c", target="d", **create)
    with pytest.raises(ServiceError, match="What to find is for yes / no projects"):
        svc.create_project(me, strategy="random", classes="a, b, c", find="cats", **create)
    assert teams.list_projects(engine) == []


def test_the_agreement_counts_of_a_class_project_count_each_item_s_first_two_classes(engine):
    from app.services import MarginLab

    svc = MarginLab(engine)
    project_id, group = blobs_project(svc, overlap_share=1.0)
    run = svc.open_project(project_id)
    assert run.class_agreement().to_numpy().sum() == 0  # nothing answered twice yet
    for turn in range(14):
        name = ("ann", "bob")[turn % 2]
        shown = run.next_item(name)
        k = int(group[shown.item_index])
        if name == "bob" and turn % 4 == 3:
            k = (k + 1) % 3  # bob disagrees on every other item he is handed
        assert run.answer(name, shown.item_index, NAMES[k], shown).ok
    shown = run.next_item("ann")
    assert run.answer("ann", shown.item_index, None, shown).ok  # a skip counts nowhere
    # the reference: each item's class answers as stored, in order; its first two make one count
    _, answers = teams.project_answers(engine, project_id)
    by_item: dict[int, list[int]] = {}
    for a in answers:
        if a.answer_class is not None:
            by_item.setdefault(a.item_index, []).append(a.answer_class)
    expected = [[0] * 3 for _ in NAMES]
    for classes in by_item.values():
        if len(classes) >= 2:
            expected[classes[0]][classes[1]] += 1
    table = run.class_agreement()
    assert list(table.index) == list(NAMES) and list(table.columns) == list(NAMES)
    assert table.to_numpy().tolist() == expected
    assert sum(expected[k][k] for k in range(3)) > 0 and sum(map(sum, expected)) > sum(expected[k][k] for k in range(3))
