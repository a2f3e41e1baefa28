"""Label history in storage: changes and removals of earlier labels with provenance, the original row kept;
labels recorded in bulk (all or none); session names; what deleting a dataset removes. On SQLite and PostgreSQL."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pandas as pd
import pytest
from sqlalchemy import select

import storage
from storage.models import Label, LabelCorrection
from tests.storage.test_storage_repository import database_digest, label, new_session, row_counts, small_dataset

# ``engine`` (tests/conftest.py) is a new MarginLab database, on SQLite and on PostgreSQL.


def labelled_session(engine, values=(1, -1, 1, -1, 0, 1), **dataset_kw):
    dataset_id = small_dataset(engine, **dataset_kw)
    session_id = new_session(engine, dataset_id)
    events = [
        label(engine, session_id, item, value=value, model_version=k, decision_value=k / 10)
        for k, (item, value) in enumerate(zip(range(10, 10 + len(values)), values, strict=True))
    ]
    return dataset_id, session_id, events


def stored_label_rows(engine, session_id):
    with engine.connect() as connection:
        return [
            tuple(row)
            for row in connection.execute(
                select(Label.id, Label.value, Label.created_at, Label.annotator_id, Label.decision_value)
                .where(Label.session_id == session_id)
                .order_by(Label.id)
            )
        ]


def save_snapshots(engine, session_id, counts):
    for n in counts:
        storage.save_snapshot(engine, session_id, n_events=n, arrays={"n": np.array([n])}, keep=10)


def snapshot_counts(engine, session_id):
    with engine.connect() as connection:
        from storage.models import ModelSnapshot

        return sorted(
            connection.execute(select(ModelSnapshot.n_events).where(ModelSnapshot.session_id == session_id)).scalars()
        )


def test_a_change_is_recorded_beside_the_label_as_given(engine):
    _dataset_id, session_id, events = labelled_session(engine)
    rows_before = stored_label_rows(engine, session_id)
    save_snapshots(engine, session_id, [1, 2, 3, 5])
    target = events[2]  # item 12, positive, the third event

    change = storage.change_label(engine, session_id, target.label_id, value=-1, annotator="bea")
    assert (change.kind, change.old_value, change.new_value, change.annotator) == ("change", 1, -1, "bea")
    assert change.item_index == 12 and change.position == 2 and change.created_at.tzinfo is not None
    # the session's events read the answer as it stands, in the order given
    now = storage.label_events(engine, session_id)
    assert [(e.item_index, e.value) for e in now] == [(10, 1), (11, -1), (12, -1), (13, -1), (14, 0), (15, 1)]
    assert [e.label_id for e in now] == [e.label_id for e in events]
    assert now[2].decision_value == pytest.approx(0.2)  # the provenance of the answer stays
    # the label's own row is exactly as it was given
    assert stored_label_rows(engine, session_id) == rows_before
    assert storage.labels_as_given(engine, session_id)[target.label_id] == 1
    # snapshots that learned the label as it was are gone; those from before it stay
    assert snapshot_counts(engine, session_id) == [1, 2]
    (recorded,) = storage.label_corrections(engine, session_id)
    assert (recorded.label_id, recorded.kind, recorded.old_value, recorded.new_value, recorded.annotator) == (
        target.label_id,
        "change",
        1,
        -1,
        "bea",
    )
    # counts are unchanged by a change
    info = storage.get_session(engine, session_id)
    assert (info.n_labels, info.n_skips) == (5, 1)

    # changing it back is a second correction; the first stays
    storage.change_label(engine, session_id, target.label_id, value=1, annotator="ada")
    assert storage.label_events(engine, session_id)[2].value == 1
    assert [(c.old_value, c.new_value) for c in storage.label_corrections(engine, session_id)] == [(1, -1), (-1, 1)]


def test_a_change_that_changes_nothing_or_touches_a_skip_or_a_closed_session_is_refused(engine):
    _dataset_id, session_id, events = labelled_session(engine)
    other = new_session(engine, small_dataset(engine, seed=3))
    before = database_digest(engine)
    with pytest.raises(storage.InvalidLabelError, match="already positive"):
        storage.change_label(engine, session_id, events[0].label_id, value=1, annotator="ada")  # a second click
    with pytest.raises(storage.InvalidLabelError, match="skip can be removed, not changed"):
        storage.change_label(engine, session_id, events[4].label_id, value=1, annotator="ada")
    with pytest.raises(storage.InvalidLabelError, match=r"\+1 or -1"):
        storage.change_label(engine, session_id, events[0].label_id, value=0, annotator="ada")
    with pytest.raises(storage.NotFoundError, match="does not exist"):
        storage.change_label(engine, session_id + 99, events[0].label_id, value=-1, annotator="ada")
    with pytest.raises(storage.NotFoundError, match="not a label of session"):
        storage.change_label(engine, other, events[0].label_id, value=-1, annotator="ada")
    assert database_digest(engine) == before
    undone = storage.undo_last_label(engine, session_id)
    after_undo = database_digest(engine)
    with pytest.raises(storage.StorageError, match="undone or removed"):
        storage.change_label(engine, session_id, undone.label_id, value=-1, annotator="ada")
    assert database_digest(engine) == after_undo
    storage.close_session(engine, session_id)
    closed = database_digest(engine)
    with pytest.raises(storage.SessionClosedError):
        storage.change_label(engine, session_id, events[0].label_id, value=-1, annotator="ada")
    with pytest.raises(storage.SessionClosedError):
        storage.remove_label(engine, session_id, events[0].label_id, annotator="ada")
    assert database_digest(engine) == closed


def test_a_removal_takes_the_label_back_and_the_item_can_be_labelled_again(engine):
    _dataset_id, session_id, events = labelled_session(engine)
    save_snapshots(engine, session_id, [1, 4, 6])
    removal = storage.remove_label(engine, session_id, events[1].label_id, annotator="bea")
    assert (removal.kind, removal.old_value, removal.new_value, removal.position) == ("remove", -1, None, 1)
    assert [e.item_index for e in storage.label_events(engine, session_id)] == [10, 12, 13, 14, 15]
    assert snapshot_counts(engine, session_id) == [1]
    # the row is kept, as given, with the time it was taken back
    history = storage.label_history(engine, session_id)
    assert [(e.item_index, e.value, e.undone_at is not None) for e in history][1] == (11, -1, True)
    with pytest.raises(storage.StorageError, match="undone or removed"):  # removing twice removes once
        storage.remove_label(engine, session_id, events[1].label_id, annotator="bea")
    again = label(engine, session_id, 11, value=1)
    assert storage.label_events(engine, session_id)[-1].label_id == again.label_id
    # a skip can be removed too
    storage.remove_label(engine, session_id, events[4].label_id, annotator="ada")
    info = storage.get_session(engine, session_id)
    assert (info.n_labels, info.n_skips) == (5, 0)
    assert [c.kind for c in storage.label_corrections(engine, session_id)] == ["remove", "remove"]


def test_export_writes_class_names_blank_cold_start_scores_and_who_changed_a_label(engine):
    dataset_id = small_dataset(engine, meta={"classes": {"negative": "benign", "positive": "malignant"}})
    session_id = new_session(engine, dataset_id)
    first = label(engine, session_id, 3, value=1, strategy="random (cold start)", decision_value=0.0)
    second = label(engine, session_id, 4, value=-1, strategy="random (cold start)", decision_value=-1.0)
    third = label(engine, session_id, 5, value=1, strategy="near-boundary", decision_value=0.125)
    label(engine, session_id, 6, value=0, strategy="near-boundary", decision_value=0.5)
    storage.change_label(engine, session_id, third.label_id, value=-1, annotator="bea")

    rows = list(csv.DictReader(io.StringIO(storage.export_labels(engine, dataset_id=dataset_id, include_skips=True))))
    assert [r["label"] for r in rows] == ["malignant", "benign", "benign", "skipped"]
    assert [r["label_value"] for r in rows] == ["1", "-1", "-1", "0"]
    assert [r["decision_value"] for r in rows] == ["", "", "0.125", "0.5"]
    assert [r["changed_by"] for r in rows] == ["", "", "bea", ""]
    assert [r["label_as_given"] for r in rows] == ["", "", "malignant", ""]
    assert rows[2]["changed_at"] == storage.label_corrections(engine, session_id)[0].created_at.isoformat()
    records = [
        json.loads(line) for line in storage.export_labels(engine, fmt="jsonl", dataset_id=dataset_id).splitlines()
    ]
    assert [(r["label"], r["label_value"], r["decision_value"]) for r in records] == [
        ("malignant", 1, None),
        ("benign", -1, None),
        ("benign", -1, 0.125),
    ]
    assert (records[2]["changed_by"], records[2]["label_as_given"], records[0]["changed_by"]) == (
        "bea",
        "malignant",
        None,
    )
    # an export still imports back as a dataset whose true labels are the labels as they stand
    new_id = storage.import_labelled_export(
        engine, storage.export_labels(engine, dataset_id=dataset_id).encode(), name="again", fmt="csv"
    )
    assert storage.load_dataset_arrays(engine, new_id)[1].tolist() == [1, -1, -1]
    assert first.label_id < second.label_id


def test_record_labels_stores_all_or_nothing(engine):
    dataset_id = small_dataset(engine)
    session_id = new_session(engine, dataset_id)
    label(engine, session_id, 2, value=1)
    before = row_counts(engine), database_digest(engine)
    kw = dict(annotator="ada", strategy="imported", solver="incremental", model_version=1)
    with pytest.raises(storage.DuplicateLabelError, match="already have a label"):
        storage.record_labels(engine, session_id, [(5, 1), (2, -1)], **kw)
    with pytest.raises(storage.InvalidLabelError, match="do not exist"):
        storage.record_labels(engine, session_id, [(5, 1), (999, -1)], **kw)
    with pytest.raises(storage.DuplicateLabelError, match="appears twice"):
        storage.record_labels(engine, session_id, [(5, 1), (5, -1)], **kw)
    assert (row_counts(engine), database_digest(engine)) == before
    stored = storage.record_labels(engine, session_id, [(5, 1), (7, -1), (8, 0)], **kw)
    assert [(e.item_index, e.value, e.decision_value, e.model_version, e.strategy) for e in stored] == [
        (5, 1, None, 1, "imported"),
        (7, -1, None, 2, "imported"),
        (8, 0, None, 3, "imported"),
    ]
    assert [e.item_index for e in storage.label_events(engine, session_id)] == [2, 5, 7, 8]


def test_sessions_get_names_and_a_dataset_deletion_says_what_goes(engine):
    dataset_id, session_id, events = labelled_session(engine)
    storage.rename_session(engine, session_id, "  first pass  ")
    assert storage.get_session(engine, session_id).name == "first pass"
    storage.rename_session(engine, session_id, " ")
    assert storage.get_session(engine, session_id).name is None
    with pytest.raises(storage.StorageError, match="session name"):
        storage.rename_session(engine, session_id, "x" * 201)
    with pytest.raises(storage.NotFoundError):
        storage.rename_session(engine, session_id + 50, "nope")
    second = new_session(engine, dataset_id, annotator="bea")
    label(engine, second, 1, annotator="bea")
    storage.change_label(engine, session_id, events[0].label_id, value=-1, annotator="ada")
    storage.save_comparison(engine, dataset_id, {"budget": 4}, pd.DataFrame({"a": [1]}), {})
    other = small_dataset(engine, seed=9)
    contents = storage.dataset_contents(engine, dataset_id)
    assert (contents.n_sessions, contents.n_labels, contents.n_comparisons, contents.annotators) == (
        2,
        7,
        1,
        ("ada", "bea"),
    )
    storage.delete_dataset(engine, dataset_id)
    counts = row_counts(engine)
    assert counts["labels"] == counts["label_corrections"] == counts["labelling_sessions"] == 0
    assert counts["comparison_results"] == 0 and [d.id for d in storage.list_datasets(engine)] == [other]
    with engine.connect() as connection:
        assert connection.execute(select(LabelCorrection.id)).first() is None
