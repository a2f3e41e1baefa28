"""Team projects with named classes in storage: each member's answer with its class, the owner's settled
class, refusals that write nothing, and the migration to schema version 9. On SQLite and PostgreSQL."""

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


def test_migration_0009_adds_the_settled_class_and_keeps_every_settlement(database_url):
    """Schema version 9 adds ``adjudications.answer_class`` (empty for every stored row) and changes nothing
    else, both ways."""
    from alembic import command

    engine = storage.make_engine(database_url)
    try:
        with engine.begin() as connection:
            command.upgrade(migrations.alembic_config(connection), "0008_answer_classes")
        with engine.begin() as connection:
            connection.execute(text("UPDATE schema_info SET version = 8"))
        with engine.connect() as connection:
            assert "answer_class" not in {c["name"] for c in inspect(connection).get_columns("adjudications")}
        project_id = class_project(engine, classes=None)
        with engine.begin() as connection:  # a settlement as version 8 wrote it
            connection.execute(
                text(
                    "INSERT INTO adjudications (project_id, item_id, value, note, created_at) "
                    "SELECT :p, items.id, -1, 'settled', CURRENT_TIMESTAMP FROM items WHERE items.position = 3"
                ).bindparams(p=project_id)
            )
        before = table_rows(engine, ["adjudications", "projects", "labels"])
        assert storage.init_db(engine) == SCHEMA_VERSION == 9
        assert schema_differences(engine) == []
        settled = teams.settlements(engine, project_id)[3]
        assert (settled.value, settled.answer_class, settled.note) == (-1, None, "settled")
        with engine.begin() as connection:
            command.downgrade(migrations.alembic_config(connection), "0008_answer_classes")
        with engine.connect() as connection:
            assert "answer_class" not in {c["name"] for c in inspect(connection).get_columns("adjudications")}
            assert connection.execute(text("SELECT version FROM schema_info")).scalar_one() == 8
        assert table_rows(engine, ["adjudications", "projects", "labels"]) == before
    finally:
        engine.dispose()
