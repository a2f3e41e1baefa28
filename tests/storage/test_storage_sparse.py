"""Sparse feature matrices (TF-IDF terms, fingerprint bits) are stored sparse and come back identical."""

from __future__ import annotations

import io

import numpy as np
import pytest
import scipy.sparse as sp
from sqlalchemy import select

import storage
from storage.models import Dataset, DatasetChunk
from storage.repository import reading

DOCS = b"""id,abstract,included
d1,"Exposure to trauma and PTSD trajectories in adults",yes
d2,"A survey of software fault prediction models",no
d3,"Latent growth mixture modelling of PTSD symptoms",yes
d4,"Deep learning for source code defect prediction",no
d5,"Resilience after trauma: a longitudinal study",no
"""


def test_a_text_dataset_is_stored_as_csr_arrays_and_loaded_without_densifying(engine):
    from core.datasets import load_csv

    expected = load_csv(DOCS, label_column="included", positive="yes", text_columns=["abstract"], key_column="id")
    dataset_id = storage.import_csv(
        engine, DOCS, name="docs", label_column="included", positive="yes", text_columns=["abstract"], key_column="id"
    )
    X, y, names, display = storage.load_dataset_arrays(engine, dataset_id)
    assert sp.isspmatrix_csr(X) and X.dtype == np.float64 and X.shape == expected.X.shape
    assert (X != expected.X).nnz == 0 and names == expected.feature_names
    np.testing.assert_array_equal(y, [1, -1, 1, -1, -1])
    assert display.kind == "text" and display.display_values[0].startswith("Exposure to trauma")
    assert display.text_column == "abstract" and display.item_keys == ("d1", "d2", "d3", "d4", "d5")
    info = storage.get_dataset(engine, dataset_id)
    assert info.meta["feature_format"] == "csr" and info.meta["default_kernel"] == "linear"
    assert info.meta["feature_blocks"][0]["kind"] == "tfidf" and info.meta["scaling"] == "standard"
    with reading(engine) as session:
        assert session.get(Dataset, dataset_id).features == b""  # (the matrix is stored in pieces)
        blob = b"".join(
            session.execute(
                select(DatasetChunk.data).where(DatasetChunk.dataset_id == dataset_id).order_by(DatasetChunk.start)
            ).scalars()
        )
    # the stored bytes are a plain-array archive of the nonzeros, far smaller than the dense matrix
    with np.load(io.BytesIO(blob), allow_pickle=False) as archive:
        assert sorted(archive.files) == ["data", "indices", "indptr", "shape"]
        assert len(archive["data"]) == expected.X.nnz
    assert len(blob) < X.shape[0] * X.shape[1] * 8


def test_a_large_sparse_matrix_round_trips_and_the_hash_tells_sparse_from_dense(engine):
    rng = np.random.default_rng(0)
    X = sp.random(2000, 50_000, density=0.001, format="csr", random_state=rng)
    names = [f"t{j}" for j in range(X.shape[1])]
    y = np.where(rng.random(2000) < 0.05, 1, -1)
    dataset_id = storage.import_dataset(engine, name="big", X=X, feature_names=names, y_true=y)
    loaded, y_loaded, loaded_names, _ = storage.load_dataset_arrays(engine, dataset_id)
    assert sp.isspmatrix_csr(loaded) and (loaded != X).nnz == 0 and loaded_names == names
    np.testing.assert_array_equal(y_loaded, y)
    small = sp.csr_matrix(np.array([[0.0, 1.5], [2.0, 0.0]]))
    sparse_id = storage.import_dataset(engine, name="small", X=small, feature_names=["a", "b"], y_true=[1, -1])
    dense_id = storage.import_dataset(
        engine, name="small dense", X=small.toarray(), feature_names=["a", "b"], y_true=[1, -1]
    )
    assert sparse_id != dense_id
    assert isinstance(storage.load_dataset_arrays(engine, dense_id)[0], np.ndarray)
    with pytest.raises(storage.DuplicateDatasetError):
        storage.import_dataset(engine, name="again", X=small.copy(), feature_names=["a", "b"], y_true=[1, -1])


def test_sparse_values_are_checked_before_anything_is_written(engine):
    bad = sp.csr_matrix(np.array([[0.0, 1.0], [np.nan, 0.0]]))
    before = storage.list_datasets(engine)
    with pytest.raises(storage.DatasetValidationError, match=r"Row 1, column 'b': a missing value|Row 1, column 'a'"):
        storage.import_dataset(engine, name="bad", X=bad, feature_names=["a", "b"])
    assert storage.list_datasets(engine) == before


def test_labels_on_a_sparse_dataset_export_with_their_feature_values(engine):
    dataset_id = storage.import_csv(
        engine, DOCS, name="docs", label_column="included", positive="yes", text_columns=["abstract"], key_column="id"
    )
    X, _, names, _ = storage.load_dataset_arrays(engine, dataset_id)
    session_id = storage.start_session(
        engine, dataset_id=dataset_id, annotator="ada", strategy="largest-positive", solver="incremental"
    )
    storage.record_label(
        engine, session_id, item_index=2, value=1, annotator="ada", strategy="largest-positive", solver="incremental"
    )
    import json

    record = json.loads(storage.export_labels(engine, fmt="jsonl", session_id=session_id).splitlines()[0])
    np.testing.assert_array_equal([record["features"][n] for n in names], X[2].toarray().ravel())


def test_an_export_of_documents_and_table_rows_can_leave_the_terms_out(engine):
    """include_features=None: a dense dataset's values are exported, a sparse one's text without its term columns."""
    import csv
    import json

    docs_id = storage.import_csv(
        engine, DOCS, name="docs", label_column="included", positive="yes", text_columns=["abstract"], key_column="id"
    )
    table_id = storage.import_dataset(
        engine, name="table", X=np.array([[1.5, -2.0], [0.25, 8.0]]), feature_names=["width", "height"], y_true=[1, -1]
    )
    for dataset_id, item in ((docs_id, 2), (table_id, 1)):
        session_id = storage.start_session(
            engine, dataset_id=dataset_id, annotator="ada", strategy="random", solver="incremental"
        )
        storage.record_label(
            engine, session_id, item_index=item, value=1, annotator="ada", strategy="random", solver="incremental"
        )
    rows = list(csv.DictReader(io.StringIO(storage.export_labels(engine, include_features=None))))
    assert [r["dataset_name"] for r in rows] == ["docs", "table"]
    terms = storage.load_dataset_arrays(engine, docs_id)[2]
    header = list(rows[0])
    assert "width" in header and "height" in header
    assert not set(terms) & set(header)  # no term columns
    assert rows[0]["display_text"] and rows[0]["width"] == "" and rows[1]["width"] == "0.25"
    records = [
        json.loads(line) for line in storage.export_labels(engine, fmt="jsonl", include_features=None).splitlines()
    ]
    assert "features" not in records[0] and records[1]["features"] == {"width": 0.25, "height": 8.0}
    every = list(csv.DictReader(io.StringIO(storage.export_labels(engine, include_features=True))))
    assert set(terms) <= set(every[0])  # asked for: every term, one column each
