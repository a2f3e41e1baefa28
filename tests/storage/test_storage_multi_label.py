"""Multi-label sessions in storage: the flag and the class names in the session's settings, each answer's set of
classes (bits in ``labels.answer_classes``; undo, change, removal and the events read back as they stand),
refusals that write nothing, and the migration to schema version 9. On SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from sqlalchemy import inspect, select, text

import storage
from core.settings import SessionSettings, SettingsError
from storage import migrations
from storage.errors import InvalidLabelError
from storage.models import SCHEMA_VERSION, Label, LabelCorrection
from tests.storage.test_storage_migrations import schema_differences, table_rows
from tests.storage.test_storage_repository import label, new_session, small_dataset

CLASSES = ("urgent", "**billing**", "=SUM(A1)")


def multi_label_session(engine, classes=CLASSES):
    dataset_id = small_dataset(engine)
    settings = SessionSettings(strategy="least-sure-class", classes=classes, multi_label=True, seed=3)
    return storage.start_session(engine, dataset_id=dataset_id, annotator="ada", settings=settings)


def test_the_flag_and_the_class_names_travel_with_the_session_settings(engine):
    session_id = multi_label_session(engine)
    settings = storage.get_session(engine, session_id).settings
    assert settings.multi_label is True and settings.classes == CLASSES and settings.strategy == "least-sure-class"
    assert storage.get_session(engine, session_id).params["multi_label"] is True
    # two classes are a multi-label session of their own (each item may have both, one or neither)
    two = SessionSettings(strategy="random", classes=("a", "b"), multi_label=True)
    assert SessionSettings.from_json(two.to_json()) == two
    # a single-choice session's JSON has no flag, as before
    assert "multi_label" not in SessionSettings(strategy="random", classes=("a", "b", "c")).to_json()


@pytest.mark.parametrize(
    "fields, words",
    [
        ({"classes": ("a",)}, "2 to 9"),
        ({"classes": ()}, "names 2 to 9"),
        ({"classes": tuple("abcdefghij")}, "at most 9"),
        ({"classes": ("a", "b"), "strategy": "smallest-margin"}, "a multi-label session picks items by one of"),
        ({"classes": ("a", "b"), "multi_label": "yes"}, "true or false"),
    ],
)
def test_bad_multi_label_settings_are_refused_naming_the_problem(fields, words):
    with pytest.raises(SettingsError, match=words):
        SessionSettings(**{"strategy": "least-sure-class", "multi_label": True, **fields})


def test_each_answer_keeps_its_set_through_undo_change_and_removal(engine):
    session_id = multi_label_session(engine)
    first = label(engine, session_id, 10, value=1, answer_classes=[2, 0])
    label(engine, session_id, 11, value=1, answer_classes=())  # none of them
    label(engine, session_id, 12, value=0)
    assert [
        (e.item_index, e.value, e.answer_classes, e.answer_class) for e in storage.label_events(engine, session_id)
    ] == [
        (10, 1, (0, 2), None),
        (11, 1, (), None),
        (12, 0, None, None),
    ]
    with engine.connect() as connection:  # bits: class k is bit k
        assert connection.execute(select(Label.answer_classes).where(Label.id == first.label_id)).scalar_one() == 5
    undone = storage.undo_last_label(engine, session_id)
    assert (undone.item_index, undone.answer_classes) == (12, None)
    change = storage.change_label(engine, session_id, first.label_id, value=1, answer_classes={1}, annotator="bea")
    assert (change.old_classes, change.new_classes, change.old_value, change.new_value) == ((0, 2), (1,), 1, 1)
    assert [(e.item_index, e.answer_classes) for e in storage.label_events(engine, session_id)] == [
        (10, (1,)),
        (11, ()),
    ]
    with engine.connect() as connection:  # the label's row keeps the set as given
        assert connection.execute(select(Label.answer_classes).where(Label.id == first.label_id)).scalar_one() == 5
    assert [(c.old_classes, c.new_classes) for c in storage.label_corrections(engine, session_id)] == [((0, 2), (1,))]
    # to none of them, then the same again: refused
    storage.change_label(engine, session_id, first.label_id, value=1, answer_classes=[], annotator="bea")
    assert storage.label_events(engine, session_id)[0].answer_classes == ()
    with pytest.raises(InvalidLabelError, match="already none of the classes"):
        storage.change_label(engine, session_id, first.label_id, value=1, answer_classes=[], annotator="bea")
    storage.remove_label(engine, session_id, first.label_id, annotator="bea")
    assert [(e.item_index, e.answer_classes) for e in storage.label_events(engine, session_id)] == [(11, ())]
    history = storage.label_history(engine, session_id)
    assert [(e.item_index, e.answer_classes, e.undone_at is not None) for e in history] == [
        (10, (), True),
        (11, (), False),
        (12, None, True),
    ]


def test_answers_that_do_not_fit_the_session_are_refused_and_nothing_is_written(engine):
    session_id = multi_label_session(engine)
    for value, fields, words in [
        (1, {}, "a set of its classes"),
        (-1, {}, "a set of its classes"),
        (1, {"answer_class": 0}, "multi-label: an answer is a set of its classes"),
        (1, {"answer_classes": (0, 3)}, "Class number 3 is not one of the session's 3 classes"),
        (1, {"answer_classes": (1, 1)}, "names each class once"),
        (1, {"answer_classes": "urgent"}, "a set of the session's classes"),
        (0, {"answer_classes": ()}, "skip has no class"),
    ]:
        with pytest.raises(InvalidLabelError, match=words):
            label(engine, session_id, 10, value=value, **fields)
    assert storage.label_events(engine, session_id) == []
    with pytest.raises(InvalidLabelError, match="a set of its classes"):
        storage.record_labels(
            engine, session_id, [(10, 1)], annotator="ada", strategy="imported", solver="x", model_version=0
        )
    given = label(engine, session_id, 10, value=1, answer_classes=[1])
    with pytest.raises(InvalidLabelError, match="not one of the session's 3 classes"):
        storage.change_label(engine, session_id, given.label_id, value=1, answer_classes=[7], annotator="ada")
    with pytest.raises(InvalidLabelError, match="not one class"):
        storage.change_label(engine, session_id, given.label_id, value=1, answer_class=0, annotator="ada")
    assert storage.label_corrections(engine, session_id) == []
    # a single-choice session and a two-class one take no set
    dataset_id = storage.get_session(engine, session_id).dataset_id
    single = storage.start_session(
        engine,
        dataset_id=dataset_id,
        annotator="ada",
        settings=SessionSettings(strategy="random", classes=("a", "b", "c")),
    )
    with pytest.raises(InvalidLabelError, match="one of its classes: a, b, c.*not a set of classes"):
        label(engine, single, 10, value=1, answer_classes=[0, 1])
    binary = new_session(engine, dataset_id)
    with pytest.raises(InvalidLabelError, match=r"\+1 / -1\), not a set of classes"):
        label(engine, binary, 10, value=1, answer_classes=[0])
    assert storage.label_events(engine, single) == storage.label_events(engine, binary) == []


def test_migration_0009_adds_the_answer_set_columns_and_keeps_every_label(database_url):
    """Schema version 9 adds ``labels.answer_classes`` and ``label_corrections.old_classes`` / ``new_classes``
    (empty for every stored row) and changes nothing else, both ways."""
    from alembic import command

    engine = storage.make_engine(database_url)
    try:
        with engine.begin() as connection:
            command.upgrade(migrations.alembic_config(connection), "0008_answer_classes")
        dataset_id = small_dataset(engine)
        session_id = new_session(engine, dataset_id)
        with engine.begin() as connection:  # a K-class label and a correction as version 8 wrote them
            connection.execute(
                text(
                    "INSERT INTO labels (session_id, item_id, annotator_id, value, created_at, strategy, solver, "
                    "model_version, answer_class) SELECT :s, items.id, annotators.id, 1, CURRENT_TIMESTAMP, "
                    "'random', 'lasvm', 0, 2 FROM items, annotators WHERE items.position = 4 AND items.dataset_id = :d"
                ).bindparams(s=session_id, d=dataset_id)
            )
            connection.execute(
                text(
                    "INSERT INTO label_corrections (label_id, session_id, annotator_id, kind, old_value, new_value, "
                    "created_at, old_class, new_class) SELECT labels.id, :s, labels.annotator_id, 'change', 1, 1, "
                    "CURRENT_TIMESTAMP, 2, 1 FROM labels"
                ).bindparams(s=session_id)
            )
        before = table_rows(engine, ["labels", "label_corrections"])
        assert storage.init_db(engine) == SCHEMA_VERSION >= 9  # (to the head: version 9 is this migration's)
        assert schema_differences(engine) == []
        (event,) = storage.label_events(engine, session_id)
        assert (event.item_index, event.answer_class, event.answer_classes) == (4, 1, None)
        with engine.connect() as connection:
            assert connection.execute(select(LabelCorrection.old_classes, LabelCorrection.new_classes)).all() == [
                (None, None)
            ]
        with engine.begin() as connection:
            command.downgrade(migrations.alembic_config(connection), "0008_answer_classes")
        with engine.connect() as connection:
            assert "answer_classes" not in {c["name"] for c in inspect(connection).get_columns("labels")}
            columns = {c["name"] for c in inspect(connection).get_columns("label_corrections")}
            assert not {"old_classes", "new_classes"} & columns and "new_class" in columns
            assert connection.execute(text("SELECT version FROM schema_info")).scalar_one() == 8
        assert table_rows(engine, ["labels", "label_corrections"]) == before
    finally:
        engine.dispose()
