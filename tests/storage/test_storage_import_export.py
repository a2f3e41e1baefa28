"""Storage import and export: malformed files change nothing, export -> re-import is lossless."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import storage
from core.datasets import load_bundled
from storage.export import FORMULA_TRIGGERS, escape_cell, unescape_cell
from tests.storage.test_storage_engine import file_digest
from tests.storage.test_storage_repository import database_digest, label, new_session, row_counts

# ``engine`` (tests/conftest.py) is a new MarginLab database, on SQLite and on PostgreSQL.


def database_state(engine) -> tuple[dict[str, int], str, str | None]:
    """Row counts, a digest of every row and, for a SQLite file, a digest of the file's bytes."""
    on_disk = file_digest(Path(engine.url.database)) if engine.dialect.name == "sqlite" else None
    return row_counts(engine), database_digest(engine), on_disk


GOOD_CSV = b"id,a,b,text,label\nr1,1.5,2,first,spam\nr2,-3,4e-3,second,ham\nr3,0,1,third,spam\n"

MALFORMED = {
    "wrong encoding": (b"a,b,label\n1,2,x\n3,4,caf\xe9\n", ["not UTF-8", "line 3"]),
    "row too long": (b"a,b,label\n1,2,x\n3,4,y,5\n", ["line 3", "4 fields", "header has 3"]),
    "row too short": (b"a,b,label\n1,2,x\n3,4\n", ["missing values", "'label' 1", "row 2"]),
    "non-numeric feature": (b"a,b,label\n1,2,x\n3,zz,y\n", ["'zz'", "column 'b'", "row 2"]),
    "missing value": (b"a,b,label\n1,2,x\n3,,y\n", ["missing value", "'b' 1", "row 2"]),
    "NA value": (b"a,b,label\n1,2,x\n3,4,y\nNA,4,x\n", ["missing value", "'a' 1", "row 3"]),
    "duplicate column names": (b"a,a,label\n1,2,x\n3,4,y\n", ["duplicate column name 'a'", "columns 1 and 2"]),
    "empty file": (b"", ["empty"]),
    "header only": (b"a,b,label\n", ["no data rows"]),
    "single class": (b"a,b,label\n1,2,x\n3,4,x\n", ["column 'label'", "one class"]),
    "infinite value": (b"a,b,label\n1,2,x\n3,inf,y\n", ["'inf'", "column 'b'", "row 2"]),
    "missing label column": (b"a,b,class\n1,2,x\n3,4,y\n", ["'label'", "not found"]),
}


@pytest.mark.parametrize("case", MALFORMED, ids=list(MALFORMED))
def test_malformed_csv_names_the_row_or_column_and_changes_nothing(engine, case):
    good = storage.import_csv(
        engine, GOOD_CSV, name="good", label_column="label", key_column="id", display_column="text"
    )
    session_id = storage.start_session(engine, dataset_id=good, annotator="ada", strategy="random", solver="lasvm")
    storage.record_label(engine, session_id, item_index=0, value=1, annotator="ada", strategy="random", solver="lasvm")
    before = database_state(engine)

    data, expected = MALFORMED[case]
    upload = io.BytesIO(data)
    upload.name = "upload.csv"
    with pytest.raises(storage.DatasetValidationError) as caught:
        storage.import_csv(engine, upload, label_column="label")
    message = str(caught.value)
    for fragment in expected:
        assert fragment in message, message
    assert database_state(engine) == before


def test_import_csv_keeps_keys_texts_and_label_mapping(engine):
    dataset_id = storage.import_csv(
        engine, GOOD_CSV, name="mail", label_column="label", positive="spam", key_column="id", display_column="text"
    )
    X, y, names, display = storage.load_dataset_arrays(engine, dataset_id)
    np.testing.assert_array_equal(X, [[1.5, 2.0], [-3.0, 4e-3], [0.0, 1.0]])
    np.testing.assert_array_equal(y, [1, -1, 1])
    assert names == ["a", "b"]
    assert display.kind == "text" and display.text_column == "text"
    assert display.item_keys == ("r1", "r2", "r3") and display.display_values == ("first", "second", "third")
    info = storage.get_dataset(engine, dataset_id)
    assert info.meta["classes"] == {"negative": "ham", "positive": "spam"}
    with pytest.raises(storage.DuplicateDatasetError) as caught:
        storage.import_csv(
            engine,
            GOOD_CSV,
            name="again",
            label_column="label",
            positive="spam",
            key_column="id",
            display_column="text",
        )
    assert caught.value.dataset_id == dataset_id


def test_a_dataset_without_keys_or_texts_is_loaded_without_a_row_per_item(engine):
    """Opening a session loads its dataset: a table of numbers without item keys or texts comes out
    without a row of NULLs per item (a million of them for a 1M-row dataset); keys without texts
    come out as keys."""
    from sqlalchemy import event

    numbers = "a,b,label\n" + "".join(f"{k},{k % 7},{k % 2}\n" for k in range(50))
    dataset_id = storage.import_csv(engine, numbers.encode(), name="numbers", label_column="label", positive="1")
    statements = []

    def record(conn, cursor, statement, *rest) -> None:
        statements.append(statement)

    event.listen(engine, "before_cursor_execute", record)
    try:
        X, y, _names, display = storage.load_dataset_arrays(engine, dataset_id)
    finally:
        event.remove(engine, "before_cursor_execute", record)
    assert X.shape == (50, 2) and display.item_keys is None and display.display_values is None
    per_item = [s for s in statements if "FROM items" in s and "ORDER BY" in s.upper()]  # (a row per item)
    assert per_item == [], per_item
    keyed = storage.import_csv(
        engine,
        GOOD_CSV,
        name="keyed",
        label_column="label",
        positive="spam",
        key_column="id",
        feature_columns=["a", "b"],
    )
    display = storage.load_dataset_arrays(engine, keyed)[3]
    assert display.item_keys == ("r1", "r2", "r3") and display.display_values is None


def test_import_a_bundled_image_dataset(engine):
    digits = load_bundled("digits")
    dataset_id = storage.import_loaded_dataset(engine, digits)
    X, y, _names, display = storage.load_dataset_arrays(engine, dataset_id)
    np.testing.assert_array_equal(X, digits.X)
    np.testing.assert_array_equal(y, digits.y)
    assert display.kind == "image" and display.image_shape == (8, 8)
    assert display.item_keys[:2] == ("digit-0000", "digit-0001")


# -- export ---------------------------------------------------------------------


def labelled_dataset(engine, *, feature_names=("x0", "x1", "x2"), n=40, seed=0, annotators=("ada", "bob")):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, len(feature_names))) * 10.0 ** rng.integers(-200, 200, (n, len(feature_names)))
    X[0, 0] = 0.1 + 0.2
    keys = [f"item,{i}" if i % 3 else f'"q{i}"' for i in range(n)]
    texts = [f"line one\nline two {i}" if i % 2 else f"ünïcødé {i}" for i in range(n)]
    dataset_id = storage.import_dataset(
        engine,
        name=f"set {seed}",
        X=X,
        feature_names=list(feature_names),
        item_keys=keys,
        display_kind="text",
        display_values=texts,
    )
    sessions = []
    for k, annotator in enumerate(annotators):
        # near-boundary with the incremental solver (the helpers' defaults)
        session_id = new_session(engine, dataset_id, annotator=annotator, params={"C": 1}, seed=None)
        sessions.append(session_id)
        for step, item in enumerate(range(k, n, 2)):
            value = (1, -1, 0)[step % 3] if step > 1 else (1, -1)[step]
            decision_value = None if step == 0 else step / 7
            label(
                engine,
                session_id,
                item,
                value=value,
                annotator=annotator,
                decision_value=decision_value,
                model_version=step,
                update_ms=0.5 * step,
                query_ms=None,
            )
    return dataset_id, sessions, X, keys, texts


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_export_then_reimport_gives_the_same_items_labels_and_features(engine, fmt):
    dataset_id, sessions, X, keys, texts = labelled_dataset(engine, feature_names=("x0", "label", "annotator"))
    session_id = sessions[0]
    exported = storage.export_labels(engine, fmt=fmt, session_id=session_id)
    events = storage.label_events(engine, session_id, include_skips=False)
    items = [e.item_index for e in events]

    new_id = storage.import_labelled_export(engine, exported.encode(), name="re-imported", fmt=fmt, display_kind="text")
    X2, y2, names, display = storage.load_dataset_arrays(engine, new_id)
    assert names == ["x0", "label", "annotator"]
    np.testing.assert_array_equal(X2, X[items])  # bit for bit
    np.testing.assert_array_equal(y2, [e.value for e in events])
    assert display.item_keys == tuple(keys[i] for i in items)
    assert display.display_values == tuple(texts[i] for i in items)


def test_csv_feature_names_that_look_like_other_columns_survive_export_and_reimport(engine):
    names = ["label", "feature:label", "feature:x", "x"]
    X = np.arange(16.0).reshape(4, 4)
    dataset_id = storage.import_dataset(engine, name="clashing names", X=X, feature_names=names)
    session_id = new_session(engine, dataset_id)
    for item in range(4):
        label(engine, session_id, item, value=1 if item % 2 else -1)
    exported = storage.export_labels(engine, session_id=session_id)
    header = exported.splitlines()[0].split(",")
    assert len(header) == len(set(header))  # one column per feature, none written twice
    new_id = storage.import_labelled_export(engine, exported.encode(), name="back", fmt="csv")
    X2, y2, names2, _display = storage.load_dataset_arrays(engine, new_id)
    assert names2 == names
    np.testing.assert_array_equal(X2, X)
    np.testing.assert_array_equal(y2, [-1, 1, -1, 1])


def test_csv_export_columns_and_provenance(engine):
    dataset_id, sessions, X, keys, _texts = labelled_dataset(engine)
    rows = list(csv.DictReader(io.StringIO(storage.export_labels(engine, session_id=sessions[1]))))
    events = storage.label_events(engine, sessions[1], include_skips=False)
    assert list(rows[0])[:7] == [
        "dataset_id",
        "dataset_name",
        "session_id",
        "label_id",
        "item_index",
        "item_key",
        "display_text",
    ]
    assert list(rows[0])[7:10] == ["x0", "x1", "x2"]
    assert len(rows) == len(events)
    for row, event in zip(rows, events, strict=True):
        assert int(row["item_index"]) == event.item_index and int(row["label_value"]) == event.value
        assert row["label"] == {1: "positive", -1: "negative"}[event.value]  # no class names given: these
        assert row["changed_by"] == row["changed_at"] == row["label_as_given"] == ""
        assert row["item_key"] == keys[event.item_index]
        assert float(row["x1"]) == X[event.item_index, 1]
        assert row["annotator"] == "bob" and int(row["session_id"]) == sessions[1]
        assert (row["strategy"], row["solver"]) == ("near-boundary", "incremental")
        assert int(row["model_version"]) == event.model_version
        assert row["labelled_at"] == event.created_at.isoformat()
        expected_decision = "" if event.decision_value is None else repr(event.decision_value)
        assert row["decision_value"] == expected_decision and row["query_ms"] == ""


def test_export_filters_and_skips(engine):
    dataset_id, sessions, *_ = labelled_dataset(engine)
    other_dataset, other_sessions, *_ = labelled_dataset(engine, seed=1, feature_names=("x0", "z"), annotators=("ada",))

    def exported(**kwargs):
        return [json.loads(line) for line in storage.export_labels(engine, fmt="jsonl", **kwargs).splitlines()]

    everything = exported(include_skips=True)
    total = sum(len(storage.label_events(engine, s)) for s in sessions + other_sessions)
    assert len(everything) == total
    assert {r["label_value"] for r in everything} == {-1, 0, 1}
    assert {r["label"] for r in everything} == {"positive", "negative", "skipped"}
    assert all(r["label_value"] != 0 for r in exported())
    assert {r["annotator"] for r in exported(annotator="bob")} == {"bob"}
    assert {r["dataset_id"] for r in exported(dataset_id=other_dataset)} == {other_dataset}
    assert {r["session_id"] for r in exported(session_id=sessions[0])} == {sessions[0]}
    assert "features" not in exported(include_features=False)[0]
    assert set(exported(dataset_id=other_dataset)[0]["features"]) == {"x0", "z"}

    header = storage.export_labels(engine).splitlines()[0].split(",")
    assert header[7:10] == ["x0", "x1", "x2"] and "z" in header  # union of both datasets' features
    undone = storage.undo_last_label(engine, sessions[0])
    assert undone.label_id not in {r["label_id"] for r in exported(include_skips=True)}


def test_export_to_a_file_and_reimport_from_the_path(engine, tmp_path):
    _dataset_id, sessions, X, *_ = labelled_dataset(engine)
    path = tmp_path / "labels.jsonl"
    assert storage.export_labels(engine, fmt="jsonl", session_id=sessions[0], out=path) is None
    new_id = storage.import_labelled_export(engine, path, name="from file")
    assert storage.get_dataset(engine, new_id).source == "labels.jsonl"
    with pytest.raises(storage.DatasetValidationError, match="not \\+1 or -1"):
        skipped = tmp_path / "with_skips.jsonl"
        storage.export_labels(engine, fmt="jsonl", session_id=sessions[0], include_skips=True, out=skipped)
        storage.import_labelled_export(engine, skipped, name="skips")
    with pytest.raises(storage.DatasetValidationError, match="not a MarginLab label export"):
        storage.import_labelled_export(engine, GOOD_CSV, name="not an export")


# -- CSV cells a spreadsheet would run as formulas ----------------------------------------------

ESCAPED = [
    ('=HYPERLINK("http://example.com","click")', '\'=HYPERLINK("http://example.com","click")'),
    ("+cmd|' /C calc'!A0", "'+cmd|' /C calc'!A0"),
    ("-2+3", "'-2+3"),
    ("@SUM(A1:A9)", "'@SUM(A1:A9)"),
    ("\t=1+1", "'\t=1+1"),
    ("\r=1+1", "'\r=1+1"),
    ("-", "'-"),
    ("-inf", "'-inf"),
    ("'=1+1", "''=1+1"),  # a quote the text already had is kept: one more is added
    ("''@x", "'''@x"),
    # left as they are
    ("-1.5", "-1.5"),
    ("+2", "+2"),
    ("-3e-7", "-3e-7"),
    ("-.5", "-.5"),
    ("'-1.5", "'-1.5"),
    ("'hello", "'hello"),
    ("'", "'"),
    ("", ""),
    ("a=b", "a=b"),
    (" =1+1", " =1+1"),
]


@pytest.mark.parametrize("text, cell", ESCAPED, ids=[repr(text) for text, _ in ESCAPED])
def test_csv_cells_that_a_spreadsheet_would_run_get_a_leading_quote_that_import_removes(text, cell):
    assert escape_cell(text) == cell
    assert unescape_cell(cell) == text


@given(st.text(alphabet=st.sampled_from(["'", "=", "+", "-", "@", "\t", "\r", "1", ".", "e", "x", " "]), max_size=8))
def test_escaping_is_undone_exactly_and_leaves_no_formula_at_the_start(text):
    cell = escape_cell(text)
    assert unescape_cell(cell) == text
    assert cell[:1] not in FORMULA_TRIGGERS or float(cell) == float(text)  # only plain numbers start so


HOSTILE_KEYS = ["=1+1", "+cmd|' /C calc'!A0", "-2+3", "@SUM(A1)", "\t=tab", "\r=cr", "-1.5", "'=quoted", "plain", None]
HOSTILE_TEXTS = ['=HYPERLINK("http://example.com","x")', "@me", "-", "+", "'@x", "fine", "-7", "\t", "=", "x"]
HOSTILE_FEATURES = ["=f", "+g", "-1.5", "@h", "'=i", "label"]


def test_hostile_cells_are_escaped_in_the_csv_and_come_back_unchanged_on_reimport(engine):
    n = len(HOSTILE_KEYS)
    rng = np.random.default_rng(5)
    X = rng.standard_normal((n, len(HOSTILE_FEATURES)))
    X[:, 0] = -np.abs(X[:, 0]) - 1.0  # negative numbers stay numbers
    dataset_id = storage.import_dataset(
        engine,
        name='=IMPORTXML("http://example.com","//a")',
        X=X,
        feature_names=HOSTILE_FEATURES,
        item_keys=HOSTILE_KEYS,
        display_kind="text",
        display_values=HOSTILE_TEXTS,
    )
    session_id = new_session(engine, dataset_id, annotator="@annotator", strategy="=strategy", solver="+solver")
    for item in range(n):
        label(engine, session_id, item, value=1 if item % 2 else -1, annotator="@annotator", strategy="=strategy",
              solver="+solver", decision_value=-0.25 - item, update_ms=1.0)  # fmt: skip
    exported = storage.export_labels(engine, session_id=session_id)

    header, *rows = list(csv.reader(io.StringIO(exported)))
    assert header[7:13] == ["'=f", "'+g", "-1.5", "'@h", "''=i", "feature:label"]
    for item, row in enumerate(rows):
        cells = dict(zip(header, row, strict=True))
        assert cells["dataset_name"] == '\'=IMPORTXML("http://example.com","//a")'
        assert cells["item_key"] == ("" if HOSTILE_KEYS[item] is None else escape_cell(HOSTILE_KEYS[item]))
        assert cells["display_text"] == escape_cell(HOSTILE_TEXTS[item])
        assert (cells["annotator"], cells["strategy"], cells["solver"]) == ("'@annotator", "'=strategy", "'+solver")
        assert cells["decision_value"] == repr(-0.25 - item) and float(cells["'=f"]) == X[item, 0] < 0
        for cell in row:  # nothing a spreadsheet would run, anywhere: what starts so is a plain number
            assert cell[:1] not in FORMULA_TRIGGERS or np.isfinite(float(cell)), (header, row)
    assert rows[6][header.index("item_key")] == "-1.5"  # a number-like key is left as it is

    new_id = storage.import_labelled_export(engine, exported.encode(), name="back", fmt="csv", display_kind="text")
    X2, y2, names, display = storage.load_dataset_arrays(engine, new_id)
    assert names == HOSTILE_FEATURES
    np.testing.assert_array_equal(X2, X)
    np.testing.assert_array_equal(y2, [1 if item % 2 else -1 for item in range(n)])
    assert display.item_keys == tuple(HOSTILE_KEYS)
    assert display.display_values == tuple(HOSTILE_TEXTS)


def test_jsonl_export_is_not_escaped(engine):
    dataset_id = storage.import_dataset(
        engine, name="=name", X=np.eye(2), feature_names=["=f", "g"], item_keys=["@k", "-j"]
    )
    session_id = new_session(engine, dataset_id, annotator="=ada")
    label(engine, session_id, 0, annotator="=ada")
    [record] = [json.loads(line) for line in storage.export_labels(engine, fmt="jsonl").splitlines()]
    assert (record["dataset_name"], record["item_key"], record["annotator"]) == ("=name", "@k", "=ada")
    assert list(record["features"]) == ["=f", "g"]
