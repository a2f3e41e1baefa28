"""Sessions with named classes in storage: the class names in the session's settings, each answer's class
(undo, change, removal and the events read back as they stand), refusals that write nothing, and the
migration to schema version 8. On SQLite and PostgreSQL."""

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

CLASSES = ("cat", "dog", "**fox**")


def class_session(engine, classes=CLASSES):
    dataset_id = small_dataset(engine)
    settings = SessionSettings(strategy="smallest-margin", classes=classes, seed=3)
    return storage.start_session(engine, dataset_id=dataset_id, annotator="ada", settings=settings)


def test_the_class_names_travel_with_the_session_settings(engine):
    session_id = class_session(engine)
    settings = storage.get_session(engine, session_id).settings
    assert settings.classes == CLASSES and settings.strategy == "smallest-margin"
    assert settings.solver == "incremental"  # (a K-class session's own solver when none is named)
    assert storage.get_session(engine, session_id).params["classes"] == list(CLASSES)
    # a two-class session's JSON has no classes, as before
    assert "classes" not in SessionSettings().to_json()


@pytest.mark.parametrize(
    "classes, words",
    [
        (("a", "b"), "3 to 9"),
        (("a",) * 3, "named twice"),
        (tuple("abcdefghij"), "at most 9"),
        (("a", " b", "c"), "without spaces"),
        (("a", "", "c"), "non-empty"),
    ],
)
def test_bad_class_lists_are_refused_naming_the_problem(classes, words):
    with pytest.raises(SettingsError, match=words):
        SessionSettings(strategy="smallest-margin", classes=classes)


def test_a_k_class_strategy_and_its_target_are_checked():
    with pytest.raises(SettingsError, match="smallest-margin"):
        SessionSettings(strategy="near-boundary", classes=CLASSES)
    with pytest.raises(SettingsError, match="not one of the session's classes"):
        SessionSettings(strategy="target-class", classes=CLASSES, strategy_params={"target": "cow"})
    ok = SessionSettings(strategy="target-class", classes=CLASSES, strategy_params={"target": "dog"})
    assert SessionSettings.from_json(ok.to_json()) == ok


def test_each_answer_keeps_its_class_through_undo_change_and_removal(engine):
    session_id = class_session(engine)
    first = label(engine, session_id, 10, value=1, answer_class=0)
    label(engine, session_id, 11, value=1, answer_class=2)
    label(engine, session_id, 12, value=0)
    assert [(e.item_index, e.value, e.answer_class) for e in storage.label_events(engine, session_id)] == [
        (10, 1, 0),
        (11, 1, 2),
        (12, 0, None),
    ]
    # undo takes the last back; the row stays with undone_at
    undone = storage.undo_last_label(engine, session_id)
    assert (undone.item_index, undone.answer_class) == (12, None)
    # a change to another class: the label's row keeps the class as given
    change = storage.change_label(engine, session_id, first.label_id, value=1, answer_class=1, annotator="bea")
    assert (change.old_class, change.new_class, change.old_value, change.new_value) == (0, 1, 1, 1)
    assert [(e.item_index, e.answer_class) for e in storage.label_events(engine, session_id)] == [(10, 1), (11, 2)]
    with engine.connect() as connection:
        assert connection.execute(select(Label.answer_class).where(Label.id == first.label_id)).scalar_one() == 0
    assert [(c.old_class, c.new_class) for c in storage.label_corrections(engine, session_id)] == [(0, 1)]
    # a second change, and the history reads the newest
    storage.change_label(engine, session_id, first.label_id, value=1, answer_class=2, annotator="bea")
    assert storage.label_events(engine, session_id)[0].answer_class == 2
    with pytest.raises(InvalidLabelError, match="already"):
        storage.change_label(engine, session_id, first.label_id, value=1, answer_class=2, annotator="bea")
    storage.remove_label(engine, session_id, first.label_id, annotator="bea")
    assert [(e.item_index, e.answer_class) for e in storage.label_events(engine, session_id)] == [(11, 2)]
    history = storage.label_history(engine, session_id)
    assert [(e.item_index, e.answer_class, e.undone_at is not None) for e in history] == [
        (10, 2, True),
        (11, 2, False),
        (12, None, True),
    ]


def test_answers_that_do_not_fit_the_session_are_refused_and_nothing_is_written(engine):
    session_id = class_session(engine)
    for value, answer_class, words in [
        (1, None, "one of its classes"),
        (-1, None, "one of its classes"),
        (1, 3, "not one of the session's 3 classes"),
        (0, 1, "skip has no class"),
        (-1, 0, "one of its classes"),
    ]:
        with pytest.raises(InvalidLabelError, match=words):
            label(engine, session_id, 10, value=value, answer_class=answer_class)
    assert storage.label_events(engine, session_id) == []
    with pytest.raises(InvalidLabelError, match="one of its classes"):
        storage.record_labels(
            engine, session_id, [(10, 1)], annotator="ada", strategy="imported", solver="x", model_version=0
        )
    given = label(engine, session_id, 10, value=1, answer_class=1)
    with pytest.raises(InvalidLabelError, match="not one of the session's 3 classes"):
        storage.change_label(engine, session_id, given.label_id, value=1, answer_class=7, annotator="ada")
    with pytest.raises(InvalidLabelError, match="one of its classes"):
        storage.change_label(engine, session_id, given.label_id, value=-1, annotator="ada")
    assert storage.label_corrections(engine, session_id) == []
    # a two-class session takes no class
    binary = new_session(engine, storage.get_session(engine, session_id).dataset_id)
    with pytest.raises(InvalidLabelError, match="two classes"):
        label(engine, binary, 10, value=1, answer_class=0)
    assert storage.label_events(engine, binary) == []


def test_migration_0008_adds_the_answer_class_columns_and_keeps_every_label(database_url):
    """Schema version 8 adds ``labels.answer_class`` and ``label_corrections.old_class`` / ``new_class`` (empty
    for every stored row) and changes nothing else, both ways."""
    from alembic import command

    engine = storage.make_engine(database_url)
    try:
        with engine.begin() as connection:
            command.upgrade(migrations.alembic_config(connection), "0007_browser_sign_ins")
        with engine.begin() as connection:
            connection.execute(text("UPDATE schema_info SET version = 7"))
        dataset_id = small_dataset(engine)
        session_id = new_session(engine, dataset_id)
        with engine.begin() as connection:  # a label and a correction as version 7 wrote them
            connection.execute(
                text(
                    "INSERT INTO labels (session_id, item_id, annotator_id, value, created_at, strategy, solver, "
                    "model_version) SELECT :s, items.id, annotators.id, 1, CURRENT_TIMESTAMP, 'random', 'lasvm', 0 "
                    "FROM items, annotators WHERE items.position = 4 AND items.dataset_id = :d"
                ).bindparams(s=session_id, d=dataset_id)
            )
            connection.execute(
                text(
                    "INSERT INTO label_corrections (label_id, session_id, annotator_id, kind, old_value, new_value, "
                    "created_at) SELECT labels.id, :s, labels.annotator_id, 'change', 1, -1, CURRENT_TIMESTAMP "
                    "FROM labels"
                ).bindparams(s=session_id)
            )
        before = table_rows(engine, ["labels", "label_corrections"])
        assert storage.init_db(engine) == SCHEMA_VERSION >= 8
        assert schema_differences(engine) == []
        (event,) = storage.label_events(engine, session_id)
        assert (event.item_index, event.value, event.answer_class) == (4, -1, None)
        with engine.connect() as connection:
            assert connection.execute(select(LabelCorrection.old_class, LabelCorrection.new_class)).all() == [
                (None, None)
            ]
        with engine.begin() as connection:
            command.downgrade(migrations.alembic_config(connection), "0007_browser_sign_ins")
        with engine.connect() as connection:
            assert "answer_class" not in {c["name"] for c in inspect(connection).get_columns("labels")}
            assert "new_class" not in {c["name"] for c in inspect(connection).get_columns("label_corrections")}
            assert connection.execute(text("SELECT version FROM schema_info")).scalar_one() == 7
        assert table_rows(engine, ["labels", "label_corrections"]) == before
    finally:
        engine.dispose()


def test_several_answers_at_once_keep_their_classes_all_or_none(engine):
    """``record_labels`` (a file's import) with ``(item, 1, class)`` and skips ``(item, 0, None)``."""
    session_id = class_session(engine)
    with pytest.raises(InvalidLabelError, match="not one of the session's 3 classes"):
        storage.record_labels(
            engine,
            session_id,
            [(3, 1, 2), (4, 1, 3)],
            annotator="ada",
            strategy="imported",
            solver="x",
            model_version=0,
        )
    assert storage.label_events(engine, session_id) == []  # (the good first one was not written either)
    stored = storage.record_labels(
        engine,
        session_id,
        [(3, 1, 2), (4, 0, None), (5, 1, 0)],
        annotator="ada",
        strategy="imported",
        solver="x",
        model_version=0,
    )
    assert [(e.item_index, e.value, e.answer_class) for e in stored] == [(3, 1, 2), (4, 0, None), (5, 1, 0)]
    assert [(e.item_index, e.value, e.answer_class) for e in storage.label_events(engine, session_id)] == [
        (3, 1, 2),
        (4, 0, None),
        (5, 1, 0),
    ]
