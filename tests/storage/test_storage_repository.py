"""Storage repository: datasets, sessions, labels with undo, snapshots, comparisons."""

from __future__ import annotations

import hashlib
import io
import re
import threading

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

import storage
from storage.models import Base, Label, ModelSnapshot

# ``engine`` (tests/conftest.py) is a new MarginLab database, on SQLite and on PostgreSQL.


def row_counts(engine) -> dict[str, int]:
    with engine.connect() as connection:
        return {
            table.name: connection.execute(select(func.count()).select_from(table)).scalar_one()
            for table in Base.metadata.sorted_tables
        }


def database_digest(engine) -> str:
    """sha256 over every row of every MarginLab table, in primary-key order: equal digests, equal contents."""
    digest = hashlib.sha256()
    with engine.connect() as connection:
        for table in Base.metadata.sorted_tables:
            digest.update(f"\0{table.name}\0".encode())
            for row in connection.execute(select(table).order_by(*table.primary_key.columns)):
                digest.update(repr(tuple(row)).encode())
    return digest.hexdigest()


def small_dataset(engine, n=30, d=3, seed=0, **kwargs) -> int:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.where(X[:, 0] > 0, 1, -1)
    y[0], y[1] = 1, -1
    kwargs.setdefault("name", f"demo-{seed}")
    return storage.import_dataset(engine, X=X, feature_names=[f"f{j}" for j in range(d)], y_true=y, **kwargs)


def label(engine, session_id, item_index, value=1, **kwargs):
    defaults = dict(
        annotator="ada",
        strategy="near-boundary",
        solver="incremental",
        decision_value=0.25,
        model_version=0,
        update_ms=1.5,
        query_ms=0.5,
    )
    defaults.update(kwargs)
    return storage.record_label(engine, session_id, item_index=item_index, value=value, **defaults)


def new_session(engine, dataset_id, **kwargs):
    defaults = dict(annotator="ada", strategy="near-boundary", solver="incremental", params={"C": 1.0}, seed=7)
    defaults.update(kwargs)
    return storage.start_session(engine, dataset_id=dataset_id, **defaults)


# -- datasets -------------------------------------------------------------------


def test_import_and_load_dataset_roundtrip(engine):
    rng = np.random.default_rng(1)
    X = rng.standard_normal((12, 4)) * 1e-300  # subnormal-ish values survive exactly
    X[0, 0] = np.nextafter(1.0, 2.0)
    y = np.array([1, -1] * 6)
    keys = [f"id-{i}" for i in range(12)]
    texts = [f"text {i}" for i in range(12)]
    dataset_id = storage.import_dataset(
        engine,
        name="  notes ",
        X=X,
        feature_names=["a", "b", "c", "d"],
        y_true=y,
        source="notes.csv",
        display_kind="text",
        text_column="body",
        display_values=texts,
        item_keys=keys,
    )
    X2, y2, names, display = storage.load_dataset_arrays(engine, dataset_id)
    assert X2.dtype == np.float64 and X2.flags.writeable
    np.testing.assert_array_equal(X2, X)
    np.testing.assert_array_equal(y2, y)
    assert names == ["a", "b", "c", "d"]
    assert display.kind == "text" and display.text_column == "body"
    assert display.item_keys == tuple(keys) and display.display_values == tuple(texts)
    info = storage.get_dataset(engine, dataset_id)
    assert (info.name, info.n_items, info.n_features, info.has_true_labels) == ("notes", 12, 4, True)
    assert [d.id for d in storage.list_datasets(engine)] == [dataset_id]
    assert info.created_at.tzinfo is not None


def test_image_dataset_and_no_true_labels(engine):
    X = np.arange(2 * 6, dtype=float).reshape(2, 6)
    dataset_id = storage.import_dataset(
        engine,
        name="tiny images",
        X=X,
        feature_names=[f"p{i}" for i in range(6)],
        display_kind="image",
        image_shape=(3, 2),
    )
    X2, y2, _names, display = storage.load_dataset_arrays(engine, dataset_id)
    assert y2 is None and display.image_shape == (3, 2) and display.item_keys is None
    assert storage.get_dataset(engine, dataset_id).has_true_labels is False
    np.testing.assert_array_equal(X2, X)


def test_same_content_twice_is_refused_with_the_existing_id(engine):
    first = small_dataset(engine, name="first")
    before = row_counts(engine)
    with pytest.raises(storage.DuplicateDatasetError) as caught:
        small_dataset(engine, name="second name, same data")
    assert caught.value.dataset_id == first
    assert "dataset 1" in str(caught.value)
    assert row_counts(engine) == before
    small_dataset(engine, seed=1)  # different data is fine


BAD_ARRAYS = [
    (dict(X=[[1.0, 2.0], [3.0]]), "Row 1 has 1 values"),
    (dict(X=[[1.0, 2.0], [3.0, "abc"]]), "Row 1, column 'b': 'abc' is not a number"),
    (dict(X=[[1.0, 2.0], [3.0, None]]), "Row 1, column 'b': a missing value"),
    (dict(X=np.array([[1.0, 2.0], [3.0, np.nan]])), "Row 1, column 'b': a missing value"),
    (dict(X=np.array([[1.0, np.inf], [3.0, 4.0]])), "Row 0, column 'b': inf, not a finite number"),
    (dict(X=np.ones((2, 2)), feature_names=["a", "a"]), "Duplicate feature name 'a' (columns 0 and 1)"),
    (dict(X=np.ones((2, 2)), feature_names=["a", " "]), "Feature column 1 has an empty name"),
    (dict(X=np.ones((2, 2)), feature_names=["a"]), "2 columns but 1 feature names"),
    (dict(X=np.ones((0, 2))), "no rows"),
    (dict(X=np.ones(2)), "must be 2-D"),
    (dict(y_true=[1, 1]), "single class (+1)"),
    (dict(y_true=[1, 0]), "Row 1: true label 0 is not +1 or -1"),
    (dict(y_true=[1]), "1 true labels but 2 rows"),
    (dict(item_keys=["k", "k"]), "Duplicate item key 'k' in rows 0 and 1"),
    (dict(display_kind="video"), "Display kind 'video'"),
    (dict(display_kind="image", image_shape=(3, 3)), "need 9 feature columns"),
    (dict(display_kind="text"), "needs a display text"),
    (dict(name=""), "non-empty name"),
]


@pytest.mark.parametrize("override, message", BAD_ARRAYS)
def test_invalid_arrays_name_the_problem_and_write_nothing(engine, override, message):
    small_dataset(engine)
    before = row_counts(engine)
    arguments = dict(name="bad", X=np.array([[1.0, 2.0], [3.0, 4.0]]), feature_names=["a", "b"], y_true=None)
    arguments.update(override)
    with pytest.raises(storage.DatasetValidationError) as caught:
        storage.import_dataset(engine, **arguments)
    assert message in str(caught.value)
    assert row_counts(engine) == before


TEXT_EVERY_DATABASE_REFUSES = [
    (dict(name="n" * 201), storage.DatasetValidationError, "The dataset name is longer than 200 characters (201)"),
    (dict(name="a\x00b"), storage.DatasetValidationError, "The dataset name contains a NUL character"),
    (dict(item_keys=["k", "k" * 501]), storage.DatasetValidationError, "Row 1: the item key is longer than 500"),
    (dict(item_keys=["k\x00", "j"]), storage.DatasetValidationError, "Row 0: the item key contains a NUL character"),
    (
        dict(display_kind="text", display_values=["a", "b\x00"]),
        storage.DatasetValidationError,
        "Row 1: the display value contains a NUL character",
    ),
    (
        dict(display_kind="text", display_values=["a", "b"], text_column="t" * 201),
        storage.DatasetValidationError,
        "The text column name is longer than 200",
    ),
    (dict(source="file\x00.csv"), storage.DatasetValidationError, "The source name contains a NUL character"),
]


@pytest.mark.parametrize("override, error, message", TEXT_EVERY_DATABASE_REFUSES)
def test_text_a_database_cannot_store_is_refused_alike_on_every_database(engine, override, error, message):
    """PostgreSQL refuses NUL characters and text longer than its columns; SQLite would keep them."""
    small_dataset(engine)
    before = database_digest(engine)
    arguments = dict(name="bad", X=np.array([[1.0, 2.0], [3.0, 4.0]]), feature_names=["a", "b"])
    arguments.update(override)
    with pytest.raises(error) as caught:
        storage.import_dataset(engine, **arguments)
    assert message in str(caught.value)
    assert database_digest(engine) == before


@pytest.mark.parametrize(
    "override, message",
    [
        (dict(annotator="a" * 201), "The annotator name is longer than 200 characters (201)"),
        (dict(annotator="ada\x00"), "The annotator name contains a NUL character"),
        (dict(strategy="s" * 65), "The strategy name is longer than 64 characters (65)"),
        (dict(solver="lasvm\x00"), "The solver name contains a NUL character"),
    ],
)
def test_annotator_strategy_and_solver_names_a_database_cannot_store_are_refused(engine, override, message):
    dataset_id = small_dataset(engine)
    session_id = new_session(engine, dataset_id)
    before = database_digest(engine)
    with pytest.raises(storage.StorageError, match=re.escape(message)):
        new_session(engine, dataset_id, **override)
    with pytest.raises(storage.StorageError, match=re.escape(message)):
        label(engine, session_id, 0, **override)
    assert database_digest(engine) == before


def test_a_matrix_of_several_pieces_round_trips_and_any_row_reads_alone(engine):
    """Stored in pieces of about 1 MB (whole rows each): the matrix comes back bit for bit, and one
    row, rows at a piece's edges or several rows read alone are the rows of the matrix."""
    from storage.models import DatasetChunk
    from storage.repository import FEATURE_CHUNK_BYTES

    rng = np.random.default_rng(3)
    X = rng.standard_normal((3001, 100))
    X[7, 3] = -0.0
    dataset_id = storage.import_dataset(engine, name="wide", X=X, feature_names=[f"f{j}" for j in range(100)])
    with Session(engine) as session:
        pieces = session.execute(
            select(DatasetChunk.start, func.length(DatasetChunk.data))
            .where(DatasetChunk.dataset_id == dataset_id)
            .order_by(DatasetChunk.start)
        ).all()
    rows_per_piece = FEATURE_CHUNK_BYTES // 800
    assert len(pieces) == 3 and [start for start, _ in pieces] == [0, rows_per_piece * 800, 2 * rows_per_piece * 800]
    assert all(length % 800 == 0 for _, length in pieces)  # whole rows in every piece
    X2, _, _, _ = storage.load_dataset_arrays(engine, dataset_id)
    assert X2.tobytes() == X.tobytes()
    view, _, _, _ = storage.load_dataset_arrays(engine, dataset_id, writable=False)
    assert not view.flags.writeable and view.tobytes() == X.tobytes()
    edges = [0, rows_per_piece - 1, rows_per_piece, 2 * rows_per_piece, 3000, 7]
    for i in edges:
        assert storage.load_feature_rows(engine, dataset_id, [i]).tobytes() == X[i].tobytes()
    assert storage.load_feature_rows(engine, dataset_id, edges + edges[:2]).tobytes() == X[edges + edges[:2]].tobytes()
    # a piece gone: reading says so, naming the dataset
    with Session(engine) as session, session.begin():
        session.execute(
            delete(DatasetChunk).where(
                DatasetChunk.dataset_id == dataset_id, DatasetChunk.start == rows_per_piece * 800
            )
        )
    with pytest.raises(storage.StorageError, match=f"dataset {dataset_id}"):
        storage.load_dataset_arrays(engine, dataset_id)
    with pytest.raises(storage.StorageError, match=f"dataset {dataset_id}"):
        storage.load_feature_rows(engine, dataset_id, [rows_per_piece + 5])
    assert storage.load_feature_rows(engine, dataset_id, [5]).tobytes() == X[5].tobytes()


def test_delete_dataset_removes_everything_hanging_off_it(engine):
    keep = small_dataset(engine, seed=5)
    keep_session = new_session(engine, keep)
    label(engine, keep_session, 0)
    before = row_counts(engine)

    doomed = small_dataset(engine, seed=6)
    session_id = new_session(engine, doomed)
    for i in range(5):
        label(engine, session_id, i, value=1 if i % 2 else -1)
    storage.save_snapshot(engine, session_id, n_events=5, arrays={"alpha": np.ones(3)}, meta={})
    storage.save_comparison(engine, doomed, {"budget": 10}, pd.DataFrame({"auc": [0.5]}), {})
    storage.delete_dataset(engine, doomed)

    assert row_counts(engine) == before
    with pytest.raises(storage.NotFoundError):
        storage.get_dataset(engine, doomed)
    with pytest.raises(storage.NotFoundError):
        storage.delete_dataset(engine, doomed)
    assert [e.item_index for e in storage.label_events(engine, keep_session)] == [0]


# -- sessions and labels --------------------------------------------------------------


def test_sessions_list_filter_and_close(engine):
    dataset_id = small_dataset(engine)
    other = small_dataset(engine, seed=2)
    first = new_session(engine, dataset_id, params={"C": np.float64(2.0), "gamma": "scale"})
    second = new_session(engine, dataset_id, annotator="bob", strategy="random", solver="lasvm")
    third = new_session(engine, other)
    label(engine, first, 3, value=1)
    label(engine, first, 4, value=0)

    info = storage.get_session(engine, first)
    assert (info.annotator, info.strategy, info.solver, info.seed) == ("ada", "near-boundary", "incremental", 7)
    assert info.params == {"C": 2.0, "gamma": "scale"}
    assert (info.n_labels, info.n_skips, info.status) == (1, 1, "active")
    assert {s.id for s in storage.list_sessions(engine, dataset_id=dataset_id)} == {first, second}
    assert [s.id for s in storage.list_sessions(engine, annotator="bob")] == [second]

    storage.close_session(engine, second)
    assert {s.id for s in storage.list_sessions(engine, status="active")} == {first, third}
    assert storage.get_session(engine, second).status == "closed"
    with pytest.raises(storage.SessionClosedError):
        label(engine, second, 0)
    storage.reopen_session(engine, second)
    label(engine, second, 0)
    with pytest.raises(storage.NotFoundError):
        storage.get_session(engine, 999)
    assert set(storage.list_annotators(engine)) == {"ada", "bob"}


def test_record_label_keeps_provenance(engine):
    dataset_id = small_dataset(engine)
    session_id = new_session(engine, dataset_id)
    event = label(
        engine,
        session_id,
        17,
        value=-1,
        annotator="carol",
        strategy="randomized-search",
        solver="lasvm",
        decision_value=-0.75,
        model_version=4,
        update_ms=2.5,
        query_ms=1.25,
    )
    [stored] = storage.label_events(engine, session_id)
    assert stored == event
    assert (stored.item_index, stored.value, stored.annotator) == (17, -1, "carol")
    assert (stored.strategy, stored.solver, stored.decision_value) == ("randomized-search", "lasvm", -0.75)
    assert (stored.model_version, stored.update_ms, stored.query_ms) == (4, 2.5, 1.25)
    assert stored.created_at.tzinfo is not None and stored.undone_at is None


def test_double_submit_stores_one_label_and_says_so(engine):
    dataset_id = small_dataset(engine)
    session_id = new_session(engine, dataset_id)
    first = label(engine, session_id, 17, value=1)
    with pytest.raises(storage.DuplicateLabelError) as caught:
        label(engine, session_id, 17, value=-1)
    assert str(caught.value).startswith(f"Item 17 already has a label in session {session_id}")
    assert caught.value.label_id == first.label_id and caught.value.item_index == 17
    assert [(e.item_index, e.value) for e in storage.label_events(engine, session_id)] == [(17, 1)]
    assert row_counts(engine)["labels"] == 1
    # the same item in another session is a different label
    other = new_session(engine, dataset_id)
    label(engine, other, 17, value=-1)


def test_concurrent_double_submit_from_threads_stores_one_label(engine):
    dataset_id = small_dataset(engine)
    session_id = new_session(engine, dataset_id)
    barrier = threading.Barrier(6)
    outcomes: list[str] = []

    def submit():
        barrier.wait()
        try:
            label(engine, session_id, 5, value=1)
            outcomes.append("stored")
        except storage.DuplicateLabelError:
            outcomes.append("duplicate")

    threads = [threading.Thread(target=submit) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["duplicate"] * 5 + ["stored"]
    assert len(storage.label_events(engine, session_id)) == 1


def run_at_once(n_threads: int, work) -> list:
    """Call ``work(k)`` for k = 0..n-1 in n threads released together; return the results (or exceptions)."""
    barrier = threading.Barrier(n_threads)
    results: list = [None] * n_threads

    def run(k):
        barrier.wait()
        try:
            results[k] = work(k)
        except Exception as error:  # noqa: BLE001 - the test inspects what each thread got
            results[k] = error

    threads = [threading.Thread(target=run, args=(k,)) for k in range(n_threads)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def test_a_new_annotator_labelling_in_several_sessions_at_once_is_created_once(engine):
    dataset_id = small_dataset(engine)
    sessions = [new_session(engine, dataset_id, annotator="owner") for _ in range(6)]
    events = run_at_once(6, lambda k: label(engine, sessions[k], k, annotator="newcomer"))
    assert all(isinstance(event, storage.LabelEvent) for event in events), events
    assert sorted(storage.list_annotators(engine)) == ["newcomer", "owner"]
    for k, session_id in enumerate(sessions):
        assert [(e.item_index, e.annotator) for e in storage.label_events(engine, session_id)] == [(k, "newcomer")]
    ids = run_at_once(4, lambda k: storage.get_or_create_annotator(engine, "late arrival"))
    assert len(set(ids)) == 1 and isinstance(ids[0], int), ids


def test_concurrent_undos_each_undo_a_different_label(engine):
    session_id = new_session(engine, small_dataset(engine))
    labelled = [label(engine, session_id, item).label_id for item in range(6)]
    undone = run_at_once(6, lambda k: storage.undo_last_label(engine, session_id))
    assert sorted(event.label_id for event in undone) == labelled  # each label undone exactly once
    assert storage.label_events(engine, session_id) == []


def test_concurrent_guarded_undos_of_the_same_label_undo_it_once(engine):
    session_id = new_session(engine, small_dataset(engine))
    label(engine, session_id, 3)
    last = label(engine, session_id, 4)
    undone = run_at_once(6, lambda k: storage.undo_last_label(engine, session_id, label_id=last.label_id))
    assert [event.label_id for event in undone if event is not None] == [last.label_id], undone
    assert storage.labelled_items(engine, session_id) == {3: 1}


@pytest.mark.parametrize("value", [2, -2, 0.5, True, "1", None])
def test_label_value_must_be_plus_minus_one_or_skip(engine, value):
    session_id = new_session(engine, small_dataset(engine))
    with pytest.raises(storage.InvalidLabelError, match=r"\+1, -1 or 0"):
        label(engine, session_id, 0, value=value)
    assert row_counts(engine)["labels"] == 0


def test_item_index_out_of_range(engine):
    session_id = new_session(engine, small_dataset(engine, n=30))
    with pytest.raises(storage.InvalidLabelError, match="Item 30 does not exist: dataset 1 has items 0 to 29"):
        label(engine, session_id, 30)
    with pytest.raises(storage.NotFoundError, match="Session 99"):
        label(engine, 99, 0)


def test_undo_marks_the_last_label_and_allows_relabelling(engine):
    session_id = new_session(engine, small_dataset(engine))
    label(engine, session_id, 3, value=1)
    label(engine, session_id, 8, value=0)
    last = label(engine, session_id, 5, value=-1)

    undone = storage.undo_last_label(engine, session_id)
    assert undone.label_id == last.label_id and undone.undone_at is not None
    assert [(e.item_index, e.value) for e in storage.label_events(engine, session_id)] == [(3, 1), (8, 0)]
    assert [(e.item_index, e.value) for e in storage.label_events(engine, session_id, include_skips=False)] == [(3, 1)]
    trail = storage.label_events(engine, session_id, include_undone=True)
    assert [(e.item_index, e.undone_at is not None) for e in trail] == [(3, False), (8, False), (5, True)]

    label(engine, session_id, 5, value=1)  # the undone item can be labelled again
    assert storage.labelled_items(engine, session_id) == {3: 1, 8: 0, 5: 1}
    assert storage.undo_last_label(engine, session_id).item_index == 5
    assert storage.undo_last_label(engine, session_id).item_index == 8
    assert storage.undo_last_label(engine, session_id).item_index == 3
    assert storage.undo_last_label(engine, session_id) is None
    assert row_counts(engine)["labels"] == 4  # nothing deleted: the audit trail stays


def test_undo_of_a_given_label_happens_once_and_only_while_it_is_the_last(engine):
    session_id = new_session(engine, small_dataset(engine))
    first, second = label(engine, session_id, 3), label(engine, session_id, 8, value=-1)
    assert storage.undo_last_label(engine, session_id, label_id=first.label_id) is None  # not the last one
    assert storage.undo_last_label(engine, session_id, label_id=second.label_id).label_id == second.label_id
    assert storage.undo_last_label(engine, session_id, label_id=second.label_id) is None  # a second click
    assert storage.labelled_items(engine, session_id) == {3: 1}
    trail = storage.label_events(engine, session_id, include_undone=True)
    assert [(e.item_index, e.undone_at is not None) for e in trail] == [(3, False), (8, True)]


# -- snapshots ------------------------------------------------------------------


def test_snapshot_roundtrip_and_invalidation_by_undo(engine):
    session_id = new_session(engine, small_dataset(engine))
    assert storage.latest_snapshot(engine, session_id) is None
    for i in range(4):
        label(engine, session_id, i, value=1 if i % 2 else -1)
    arrays = {"alpha": np.linspace(0, 1, 5), "support": np.array([0, 2, 3], dtype=np.int64), "b": np.float64(0.5)}
    storage.save_snapshot(engine, session_id, n_events=2, arrays=arrays, meta={"solver": "incremental"})
    storage.save_snapshot(engine, session_id, n_events=4, arrays={"alpha": np.ones(4)}, meta={"k": 4})

    n_events, loaded, meta = storage.latest_snapshot(engine, session_id)
    assert n_events == 4 and meta == {"k": 4}
    np.testing.assert_array_equal(loaded["alpha"], np.ones(4))

    storage.undo_last_label(engine, session_id)  # the n_events=4 snapshot no longer applies
    snapshot = storage.latest_snapshot(engine, session_id)
    assert snapshot.n_events == 2 and snapshot.meta == {"solver": "incremental"}
    for name, array in arrays.items():
        np.testing.assert_array_equal(snapshot.arrays[name], array)
        assert snapshot.arrays[name].dtype == np.asarray(array).dtype

    label(engine, session_id, 10, value=1)
    assert storage.latest_snapshot(engine, session_id).n_events == 2
    with pytest.raises(storage.StorageError, match="cannot reflect 9"):
        storage.save_snapshot(engine, session_id, n_events=9, arrays={}, meta={})


def test_snapshots_refuse_objects_and_keep_only_recent_ones(engine):
    session_id = new_session(engine, small_dataset(engine))
    with pytest.raises(storage.StorageError, match="Python objects"):
        storage.save_snapshot(engine, session_id, n_events=0, arrays={"bad": np.array([{}, 1], dtype=object)})
    for i in range(6):
        label(engine, session_id, i, value=1)
        storage.save_snapshot(engine, session_id, n_events=i + 1, arrays={"n": np.array([i])}, meta={})
    with engine.connect() as connection:
        kept = connection.execute(select(ModelSnapshot.n_events).order_by(ModelSnapshot.n_events)).scalars().all()
    assert kept == [4, 5, 6]


UNPICKLED: list[str] = []


def _record_unpickling() -> str:
    UNPICKLED.append("unpickled")
    return "payload"


class Tripwire:
    """An object that notes when it is unpickled."""

    def __reduce__(self):
        return (_record_unpickling, ())


def test_a_snapshot_holding_pickled_objects_is_never_unpickled(engine):
    session_id = new_session(engine, small_dataset(engine))
    for i in range(2):
        label(engine, session_id, i)
    storage.save_snapshot(engine, session_id, n_events=1, arrays={"alpha": np.ones(2)}, meta={"plain": True})
    buffer = io.BytesIO()
    np.savez(buffer, alpha=np.array([Tripwire()], dtype=object), allow_pickle=True)
    last_label_id = storage.label_events(engine, session_id)[-1].label_id
    with Session(engine) as session, session.begin():  # as if written by something else
        session.add(
            ModelSnapshot(session_id=session_id, n_events=2, last_label_id=last_label_id, arrays=buffer.getvalue())
        )
    UNPICKLED.clear()
    snapshot = storage.latest_snapshot(engine, session_id)
    assert UNPICKLED == []
    assert snapshot.n_events == 1 and snapshot.meta == {"plain": True}  # the object snapshot is passed over
    np.testing.assert_array_equal(snapshot.arrays["alpha"], np.ones(2))


# -- comparisons ----------------------------------------------------------------


def test_comparison_roundtrip(engine):
    dataset_id = small_dataset(engine)
    rows = pd.DataFrame(
        {
            "strategy": ["random", "near-boundary"],
            "solver": ["lasvm", "incremental"],
            "seed": [0, 1],
            "n_labels": [10, 10],
            "auc": [0.1 + 0.2, np.nan],
            "update_ms": [1e-9, 3.5],
        }
    )
    config = {"strategies": ["random", "near-boundary"], "budget": np.int64(10)}
    comparison_id = storage.save_comparison(engine, dataset_id, config, rows, {"aulc": {"random": np.float64(0.7)}})
    loaded = storage.load_comparison(engine, comparison_id)
    pd.testing.assert_frame_equal(loaded.rows, rows, check_dtype=False)
    assert loaded.rows["auc"][0] == 0.1 + 0.2
    assert loaded.config == {"strategies": ["random", "near-boundary"], "budget": 10}
    assert loaded.summary == {"aulc": {"random": 0.7}}
    assert [c.id for c in storage.list_comparisons(engine, dataset_id)] == [comparison_id]
    assert storage.list_comparisons(engine, dataset_id + 1) == []


def test_a_comparisons_text_cells_come_back_as_written_even_when_they_read_like_missing_values(engine):
    """A class named "NA", "None" or "null" (a K-class comparison's or replay's rows name the classes) is a name,
    not a missing value: it comes back as written; a missing number still comes back missing."""
    dataset_id = small_dataset(engine)
    rows = pd.DataFrame({"label": ["NA", "None", "null", "n/a"], "seed": [0, 1, 2, 3], "auc": [0.5, np.nan, 1.0, 0.25]})
    loaded = storage.load_comparison(engine, storage.save_comparison(engine, dataset_id, {}, rows, {}))
    assert list(loaded.rows["label"]) == ["NA", "None", "null", "n/a"]
    pd.testing.assert_frame_equal(loaded.rows, rows, check_dtype=False)


# -- property: any sequence of labels and undos matches a plain list -------------

operations = st.lists(
    st.one_of(st.tuples(st.just("label"), st.integers(0, 9), st.sampled_from([-1, 0, 1])), st.just(("undo",))),
    max_size=25,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=operations)
def test_label_and_undo_sequences_match_a_reference_list(engine, ops):
    datasets = storage.list_datasets(engine)  # the engine fixture is shared by the examples
    dataset_id = datasets[0].id if datasets else small_dataset(engine, n=10)
    session_id = new_session(engine, dataset_id)
    expected: list[tuple[int, int]] = []
    for op in ops:
        if op[0] == "undo":
            undone = storage.undo_last_label(engine, session_id)
            assert (undone is None) == (not expected)
            if expected:
                assert (undone.item_index, undone.value) == expected.pop()
        else:
            _, item, value = op
            if any(i == item for i, _ in expected):
                with pytest.raises(storage.DuplicateLabelError):
                    label(engine, session_id, item, value=value)
            else:
                label(engine, session_id, item, value=value, model_version=len(expected))
                expected.append((item, value))
        events = storage.label_events(engine, session_id)
        assert [(e.item_index, e.value) for e in events] == expected
    with engine.connect() as connection:
        active_per_item = connection.execute(
            select(Label.item_id, func.count())
            .where(Label.session_id == session_id, Label.undone_at.is_(None))
            .group_by(Label.item_id)
        ).all()
    assert all(count == 1 for _, count in active_per_item)


def test_single_feature_rows_are_read_from_the_database_as_stored(engine):
    """Rows read one by one (a byte range of the stored matrix) are the stored values bit for bit; a sparse
    dataset's rows come from its decoded matrix; an item that does not exist is named."""
    import scipy.sparse as sp

    rng = np.random.default_rng(4)
    X = rng.normal(size=(30, 7)) * 10.0 ** rng.integers(-300, 300, size=(30, 7))  # awkward values, exact bits
    X[5] = [0.1, -0.0, np.finfo(float).tiny, 1e308, 123456789.0, -7.0, 2.5]
    dataset_id = storage.import_dataset(engine, name="rows", X=X, feature_names=list("abcdefg"))
    rows = storage.load_feature_rows(engine, dataset_id, [5, 0, 29, 5])
    assert rows.dtype == np.float64 and rows.shape == (4, 7)
    assert rows.tobytes() == X[[5, 0, 29, 5]].tobytes()
    with pytest.raises(storage.NotFoundError, match="has no item 30"):
        storage.load_feature_rows(engine, dataset_id, [30])
    with pytest.raises(storage.NotFoundError):
        storage.load_feature_rows(engine, dataset_id + 99, [0])
    S = sp.csr_matrix(np.array([[0.0, 1.5, 0.0], [2.0, 0.0, 0.0], [0.0, 0.0, -3.0]]))
    sparse_id = storage.import_dataset(engine, name="sparse rows", X=S, feature_names=["x", "y", "z"])
    np.testing.assert_array_equal(storage.load_feature_rows(engine, sparse_id, [2, 1]), S.toarray()[[2, 1]])


# the repository functions' module before it was cut into a module per thing stored
REPOSITORY_NAMES = (
    "Comparison",
    "ComparisonInfo",
    "DatasetInfo",
    "DisplayInfo",
    "EVENT_LABEL_FIELDS",
    "EngineLike",
    "FEATURE_CHUNK_BYTES",
    "LabelEvent",
    "SNAPSHOTS_KEPT",
    "SessionInfo",
    "Snapshot",
    "as_engine",
    "close_session",
    "current_value",
    "delete_dataset",
    "delete_session",
    "events_query",
    "get_dataset",
    "get_or_create_annotator",
    "get_session",
    "import_dataset",
    "label_events",
    "labelled_items",
    "latest_snapshot",
    "list_annotators",
    "list_comparisons",
    "list_datasets",
    "list_sessions",
    "load_comparison",
    "load_dataset_arrays",
    "load_feature_rows",
    "reading",
    "record_label",
    "reopen_session",
    "save_comparison",
    "save_snapshot",
    "set_session_setting",
    "start_session",
    "stored_features",
    "undo_last_label",
    "update_dataset_meta",
    "writing",
)


def test_the_repository_keeps_its_import_path_and_each_name_lives_in_one_entity_module():
    import importlib
    import pkgutil

    from storage import repository as repo

    assert sorted(repo.__all__) == sorted(REPOSITORY_NAMES)
    modules = {info.name for info in pkgutil.iter_modules(repo.__path__)}
    assert modules == {"common", "datasets", "annotators", "sessions", "labels", "snapshots", "comparisons"}
    homes = {}
    for module in modules:
        found = importlib.import_module(f"storage.repository.{module}")
        for name in REPOSITORY_NAMES:
            if getattr(getattr(found, name, None), "__module__", None) == found.__name__:
                homes.setdefault(name, []).append(module)
    for name in REPOSITORY_NAMES:
        value = getattr(repo, name)
        if callable(value) and hasattr(value, "__module__") and value.__module__.startswith("storage.repository"):
            assert homes.get(name) == [value.__module__.rsplit(".", 1)[1]], name
    storage_names = set(storage.__all__)
    for name in storage_names & set(REPOSITORY_NAMES):
        assert getattr(storage, name) is getattr(repo, name)
