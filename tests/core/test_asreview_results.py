"""Per-label times read from an ASReview results table (the benchmarks' parser; no ASReview needed)."""

import sqlite3

import numpy as np
import pytest

from benchmarks.bench_text_review import asreview_label_ms

SCHEMA = (
    "CREATE TABLE results (record_id INTEGER UNIQUE, label INTEGER, classifier TEXT, querier TEXT, "
    "balancer TEXT, feature_extractor TEXT, training_set INTEGER, time FLOAT, note TEXT, tags JSON, "
    "user_id INTEGER)"
)


def results_db(path, rows):
    with sqlite3.connect(path) as db:
        db.execute(SCHEMA)
        db.executemany("INSERT INTO results (record_id, label, training_set, time) VALUES (?, ?, ?, ?)", rows)
    return path


def test_each_label_after_the_priors_costs_the_time_since_the_label_before(tmp_path):
    db = results_db(
        tmp_path / "results.db",
        # two priors with one stamp, then three labels each after a retraining on all labels before it;
        # stored out of order: the stamps decide the order
        [(7, 1, None, 100.0), (3, 0, None, 100.0), (5, 0, 3, 100.52), (9, 1, 2, 100.5), (1, 0, 4, 100.55)],
    )
    labels, ms = asreview_label_ms(db)
    assert labels.tolist() == [1, -1, 1, -1, -1]
    assert np.isnan(ms[:2]).all()
    np.testing.assert_allclose(ms[2:], [500.0, 20.0, 30.0])


def test_labels_taken_in_batches_are_refused(tmp_path):
    db = results_db(
        tmp_path / "results.db",
        [(7, 1, None, 100.0), (3, 0, None, 100.0), (9, 1, 2, 100.5), (5, 0, 2, 100.5)],
    )
    with pytest.raises(ValueError, match="retrain"):
        asreview_label_ms(db)
