"""Multi-label team projects in storage and in the service: each member's set of classes, the owner's settled
set, refusals that write nothing, the migration to schema version 11, and the shared model (a ``MultiLabel``
learning each item's final set) checked bit for bit. On SQLite and PostgreSQL."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest
from sqlalchemy import inspect, text

import storage
from storage import migrations, teams
from storage.errors import InvalidLabelError
from storage.models import SCHEMA_VERSION
from tests.storage.test_storage_migrations import schema_differences, table_rows
from tests.storage.test_storage_repository import small_dataset
from tests.storage.test_teams_classes import NAMES, answer, assert_a_new_process_agrees, blobs_project, class_project

CLASSES = ["cat", "dog", "**fox**"]


def multi_label_project(engine, members=("ann", "bob")) -> int:
    dataset_id = small_dataset(engine)
    for member in members:
        if teams.get_account(engine, member) is None:
            teams.create_account(engine, name=member, role="annotator", password_hash=None)
    project_id = teams.create_project(
        engine,
        name="sets",
        dataset_id=dataset_id,
        strategy="least-sure-class",
        solver="incremental",
        params={"classes": CLASSES, "multi_label": True, "strategy_params": {}},
        labels_per_item=2,
        overlap_share=1.0,
    )
    for member in members:
        teams.add_member(engine, project_id, member)
    return project_id


def answer_set(engine, project_id, annotator, item, classes, value=1):
    return teams.record_answer(
        engine,
        project_id,
        annotator=annotator,
        item_index=item,
        value=value,
        answer_classes=classes,
        strategy="least-sure-class",
        solver="incremental",
    )


def test_each_member_s_set_is_stored_and_read_back_with_the_settled_set(engine):
    project_id = multi_label_project(engine)
    given = answer_set(engine, project_id, "ann", 4, [2, 0])
    assert given.answer_classes == (0, 2)
    answer_set(engine, project_id, "bob", 4, [])
    answer_set(engine, project_id, "ann", 5, None, value=0)
    _, answers = teams.project_answers(engine, project_id)
    assert [(a.annotator, a.item_index, a.value, a.answer_class, a.answer_classes) for a in answers] == [
        ("ann", 4, 1, None, (0, 2)),
        ("bob", 4, 1, None, ()),
        ("ann", 5, 0, None, None),
    ]
    members = teams.project_members(engine, project_id)
    assert [(e.item_index, e.answer_classes) for e in storage.label_events(engine, members["bob"])] == [(4, ())]
    edits = teams.project_revision(engine, project_id)[1]
    teams.settle(engine, project_id, item_index=4, value=1, answer_classes=[1, 2], settled_by="ann", note="both")
    settled = teams.settlements(engine, project_id)[4]
    assert (settled.value, settled.answer_class, settled.answer_classes, settled.settled_by) == (1, None, (1, 2), "ann")
    assert teams.project_revision(engine, project_id)[1] == edits + 1
    teams.settle(engine, project_id, item_index=4, value=1, answer_classes=[], settled_by="ann")  # none: a set too
    assert teams.settlements(engine, project_id)[4].answer_classes == ()


def test_answers_and_settlements_that_do_not_fit_a_multi_label_project_are_refused_and_nothing_is_written(engine):
    project_id = multi_label_project(engine)
    revision = teams.project_revision(engine, project_id)
    for value, one, many, words in [
        (1, 0, None, "This project is multi-label: an answer is a set of its classes"),
        (1, None, None, "project's answers are a set of its classes"),
        (-1, None, [0], "project's answers are a set of its classes"),
        (1, None, [3], "not one of the project's 3 classes"),
        (1, None, [1, 1], "names each class once"),
        (0, None, [1], "skip has no class"),
    ]:
        with pytest.raises(InvalidLabelError, match=words):
            teams.record_answer(
                engine,
                project_id,
                annotator="ann",
                item_index=6,
                value=value,
                answer_class=one,
                answer_classes=many,
                strategy="least-sure-class",
                solver="incremental",
            )
    for value, one, many, words in [
        (1, 1, None, "is multi-label"),
        (1, None, None, "a set of its classes"),
        (1, None, [5], "not one of the project's 3"),
    ]:
        with pytest.raises(InvalidLabelError, match=words):
            teams.settle(
                engine, project_id, item_index=6, value=value, answer_class=one, answer_classes=many, settled_by="ann"
            )
    assert teams.project_answers(engine, project_id)[1] == [] and teams.settlements(engine, project_id) == {}
    assert teams.project_revision(engine, project_id) == revision
    # a set to a project with one class per item, or to a yes / no project: refused, nothing written
    dataset_id = teams.get_project(engine, project_id).dataset_id
    single = class_project(engine, name="single", dataset_id=dataset_id)
    binary = class_project(engine, classes=None, name="yes-no", dataset_id=dataset_id)
    for other in (single, binary):
        with pytest.raises(InvalidLabelError, match="takes one answer per item .*not a set of classes"):
            answer_set(engine, other, "ann", 6, [0])
        with pytest.raises(InvalidLabelError, match="not a set of classes"):
            teams.settle(engine, other, item_index=6, value=1, answer_classes=[0], settled_by="ann")
        assert teams.project_answers(engine, other)[1] == [] and teams.settlements(engine, other) == {}
    answer(engine, single, "ann", 6, answer_class=1)  # (as before)
    assert [(a.answer_class, a.answer_classes) for a in teams.project_answers(engine, single)[1]] == [(1, None)]


def test_migration_0011_adds_the_settled_set_and_keeps_every_settlement(database_url):
    """Schema version 11 adds ``adjudications.answer_classes`` (empty for every stored row) and changes nothing
    else, both ways."""
    from alembic import command

    engine = storage.make_engine(database_url)
    try:
        with engine.begin() as connection:
            command.upgrade(migrations.alembic_config(connection), "0010_project_classes")
        with engine.begin() as connection:
            connection.execute(text("UPDATE schema_info SET version = 10"))
        with engine.connect() as connection:
            assert "answer_classes" not in {c["name"] for c in inspect(connection).get_columns("adjudications")}
        project_id = class_project(engine)
        with engine.begin() as connection:  # a settlement on a class as version 10 wrote it
            connection.execute(
                text(
                    "INSERT INTO adjudications (project_id, item_id, value, answer_class, note, created_at) "
                    "SELECT :p, items.id, 1, 2, 'settled', CURRENT_TIMESTAMP FROM items WHERE items.position = 3"
                ).bindparams(p=project_id)
            )
        before = table_rows(engine, ["adjudications", "projects", "labels"])
        assert storage.init_db(engine) == SCHEMA_VERSION == 11
        assert schema_differences(engine) == []
        settled = teams.settlements(engine, project_id)[3]
        assert (settled.value, settled.answer_class, settled.answer_classes, settled.note) == (1, 2, None, "settled")
        with engine.begin() as connection:
            command.downgrade(migrations.alembic_config(connection), "0010_project_classes")
        with engine.connect() as connection:
            assert "answer_classes" not in {c["name"] for c in inspect(connection).get_columns("adjudications")}
            assert connection.execute(text("SELECT version FROM schema_info")).scalar_one() == 10
        assert table_rows(engine, ["adjudications", "projects", "labels"]) == before
    finally:
        engine.dispose()


# --------------------------------------------------------------------------- the service over both databases

#: each group's classes (places): none, the first, the first and the third
GROUP_SETS = ((), (0,), (0, 2))


def reference_model(run):
    """An independent MultiLabel taught, in the order of each item's first answer that is not a skip as stored,
    the set the owner settled on, else the first set answered (what the shared model must equal)."""
    from core.multiclass import MultiLabel

    _, answers = teams.project_answers(run.engine, run.project_id)
    settled = {i: s.answer_classes for i, s in teams.settlements(run.engine, run.project_id).items()}
    params = dict(run.solver_params, random_state=run.info.seed)
    model = MultiLabel(NAMES, run.info.solver, run.X, keep_scores=True, **params)
    taught = set()
    for a in answers:
        if a.answer_classes is not None and a.item_index not in taught:
            taught.add(a.item_index)
            chosen = settled.get(a.item_index, a.answer_classes)
            model.learn(a.item_index, [NAMES[k] for k in chosen])
    return model


def _set_cell(places) -> str:
    """A set as the files write it: the names joined by '; ', (none) for none, escaped against formulas."""
    from storage.export import escape_cell

    return escape_cell("; ".join(NAMES[k] for k in places) or "(none)")


@pytest.mark.parametrize("solver", ["incremental", "lasvm"])
def test_a_multi_label_project_learns_the_final_sets_settles_exports_and_resumes(engine, solver):
    from app.services import MarginLab
    from tests.storage.test_teams import owner

    svc = MarginLab(engine)
    project_id, group = blobs_project(svc, solver=solver, strategy="least-sure-class", multi_label=True)
    run = svc.open_project(project_id)
    assert run.has_classes and run.multi_label and run.classes == NAMES
    assert run.info.params["classes"] == list(NAMES) and run.info.params["multi_label"] is True
    disputed = None
    for turn in range(16):
        name = ("ann", "bob")[turn % 2]
        shown = run.next_item(name)
        chosen = [NAMES[k] for k in GROUP_SETS[group[shown.item_index]]]
        if name == "bob" and shown.second_opinion and disputed is None:
            chosen, disputed = [*chosen, "dog"], shown.item_index  # bob disagrees once
        assert run.answer(name, shown.item_index, chosen, shown).ok
    shown = run.next_item("ann")
    assert run.answer("ann", shown.item_index, None, shown).ok  # a skip
    assert disputed is not None
    assert run.next_item("bob").strategy == "least-sure-class"  # (once a class has answers with and without it)
    report = run.agreement()
    assert report.disagreements == [disputed]
    first = GROUP_SETS[group[disputed]]
    assert set(report.per_item[disputed].values()) == {
        sum(1 << k for k in first),
        sum(1 << k for k in {*first, 1}),
    }
    np.testing.assert_array_equal(run.model.decision_function(), reference_model(run).decision_function())
    assert run.model_labels[disputed] == first
    # the model's guess is not shown on an item it learned (it would tell a member another's answer)
    unlearned = next(i for i in range(len(group)) if i not in run.model_labels)
    assert run.predicted_class(disputed) is None and run.predicted_class(unlearned) is not None
    # the owner settles on a set: the model learns it in the item's place
    svc.settle(owner(svc), project_id, disputed, ["=fox", "dog"])
    assert teams.settlements(engine, project_id)[disputed].answer_classes == (1, 2)
    assert run.model_labels[disputed] == (1, 2) and run.agreement().disagreements == []
    np.testing.assert_array_equal(run.model.decision_function(), reference_model(run).decision_function())
    for bad, words in [("cat", "a set of classes"), (["cow"], "not a class of this project"), (2, "a set")]:
        with pytest.raises(Exception, match=words):
            svc.settle(owner(svc), project_id, disputed, bad)
    assert teams.settlements(engine, project_id)[disputed].answer_classes == (1, 2)
    # an undo takes the answer out; the model is the one that learned the others
    assert run.undo("ann").ok
    np.testing.assert_array_equal(run.model.decision_function(), reference_model(run).decision_function())
    # the exports name the sets (escaped against formulas; none of them: (none))
    rows = list(csv.DictReader(io.StringIO(svc.project_labels_csv(owner(svc), project_id).decode())))
    assert {int(r["item_index"]): r["classes"] for r in rows} == {
        i: _set_cell(places) for i, places in run.model_labels.items()
    }
    assert "(none)" in {r["classes"] for r in rows} and "cat; =fox" in {r["classes"] for r in rows}
    assert [r["settled"] for r in rows if int(r["item_index"]) == disputed] == ["1"]
    agreement = list(csv.reader(io.StringIO(svc.agreement_csv(owner(svc), project_id).decode())))
    (row,) = [r for r in agreement if r and r[0] == str(disputed)]
    assert row[3:] == [_set_cell(first), _set_cell(sorted({*first, 1})), "no", "dog; =fox"]
    assert not any(cell.startswith("=") for r in agreement for cell in r)
    # a new process has the same model and hands out the same next item
    assert_a_new_process_agrees(run)


def test_a_single_class_to_a_multi_label_project_or_a_set_to_another_is_refused_before_any_write(engine):
    from app.services import MarginLab, ServiceError

    svc = MarginLab(engine)
    project_id, _ = blobs_project(svc, strategy="least-sure-class", multi_label=True)
    run = svc.open_project(project_id)
    shown = run.next_item("ann")
    for bad in ("cat", 0, ["cow"], ["cat", "cat"]):
        with pytest.raises(ServiceError):
            run.answer("ann", shown.item_index, bad, shown)
    assert teams.project_answers(engine, project_id)[1] == []
    # a set to a project with one class per item, and to a yes / no project
    from tests.storage.test_teams import owner

    me = owner(svc)
    dataset_id = run.info.dataset_id
    single = svc.create_project(
        me, name="one", dataset_id=dataset_id, strategy="random", classes="a, b, c", members=["ann"]
    )
    binary = svc.create_project(me, name="yes-no", dataset_id=dataset_id, strategy="random", members=["ann"])
    for other in (single, binary):
        other_run = svc.open_project(other)
        shown = other_run.next_item("ann")
        with pytest.raises(ServiceError, match="one answer per item, not a set"):
            other_run.answer("ann", shown.item_index, ["a"], shown)
        assert teams.project_answers(engine, other)[1] == []


@pytest.mark.parametrize(
    "typed, strategy, extra, words",
    [
        ("cat", "least-sure-class", {}, "at least 2"),
        (", ".join(f"c{k}" for k in range(10)), "least-sure-class", {}, "At most 9"),
        ("cat, dog, cat", "least-sure-class", {}, "'cat' is named twice"),
        ("cat,, dog", "least-sure-class", {}, "empty"),
        ("", "least-sure-class", {}, "name the classes"),
        ("cat, dog", "smallest-margin", {}, "one of least-sure-class, random"),
        ("cat, dog", "target-class", {"target": "cat"}, "one of least-sure-class, random"),
        ("cat, dog", "random", {"target": "cat"}, "A multi-label project has no class to find first"),
        ("cat, dog", "random", {"find": "cats"}, "What to find is for yes / no projects"),
    ],
)
def test_bad_multi_label_projects_are_refused_and_nothing_is_stored(engine, typed, strategy, extra, words):
    from app.services import MarginLab, ServiceError
    from tests.storage.test_teams import owner

    svc = MarginLab(engine)
    dataset_id = small_dataset(engine)
    with pytest.raises(ServiceError, match=words):
        svc.create_project(
            owner(svc),
            name="p",
            dataset_id=dataset_id,
            members=["olga"],
            strategy=strategy,
            classes=typed,
            multi_label=True,
            **extra,
        )
    assert teams.list_projects(engine) == []


def test_two_classes_make_a_multi_label_project(engine):
    from app.services import MarginLab
    from tests.storage.test_teams import owner

    svc = MarginLab(engine)
    project_id = svc.create_project(
        owner(svc),
        name="p",
        dataset_id=small_dataset(engine),
        members=["olga"],
        strategy="random",
        classes="urgent, spam",
        multi_label=True,
    )
    run = svc.open_project(project_id)
    assert run.multi_label and run.classes == ("urgent", "spam")
