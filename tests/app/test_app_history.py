"""The label history behind the pages (``LabellingRun.change_label`` / ``remove_label`` / ``import_labels``):
stored with provenance first, then learned; the model equals one that learned the corrected answers from the
start; a restart resumes the corrected session exactly."""

from __future__ import annotations

import numpy as np
import pytest

from app.services import MarginLab, ServiceError
from core.loop import ActiveLearningLoop
from storage import history as stored_history
from storage import repository as repo
from tests.app import test_app
from tests.storage.test_storage_repository import database_digest

pytestmark = pytest.mark.app  # pages through Streamlit's AppTest (a slow lane)

db_url = test_app.db_url  # a temporary SQLite file in MARGINLAB_DATABASE_URL

# (strategy, solver): one exact solver, one rebuilt from the events
SOLVERS = [("near-boundary", "incremental"), ("randomized-search", "lasvm")]


def labelled_run(svc: MarginLab, strategy: str, solver: str, n: int = 30, seed: int = 0):
    dataset_id = svc.ensure_demo_dataset() or svc.datasets()[0].id
    run = svc.start_session(dataset_id=dataset_id, annotator="cy", strategy=strategy, solver=solver, seed=seed)
    while run.n_labels < n:
        item = run.shown.item_index
        assert run.answer(int(run.y_true[item]), item_index=item).ok
    return run


def from_start(run, events):
    """A loop that learned ``events`` (pool index, answer) from the start, with the run's configuration."""
    return ActiveLearningLoop.from_events(events, **run._loop_data(), **run._loop_config())


def scores(loop):
    return loop.solver.decision_function(np.arange(loop.n_items))


def assert_model_of(run, loop):
    if run.loop.solver.exact_unlearn:
        np.testing.assert_allclose(scores(run.loop), scores(loop), rtol=0, atol=1e-8)
        assert run.loop.solver.kkt_gap() <= max(run.loop.solver.tol, 1e-8)
    else:
        assert np.array_equal(scores(run.loop), scores(loop))


@pytest.mark.parametrize(("strategy", "solver"), SOLVERS)
def test_changing_a_label_made_20_labels_ago(db_url, strategy, solver):
    svc = MarginLab.from_url(db_url)
    run = labelled_run(svc, strategy, solver)
    target = [a for a in run.answers if a.value != 0][-21]
    old = target.value
    outcome = run.change_label(target.label_id, -old)
    assert outcome.ok, outcome.message
    assert ("exact" in outcome.message) == (solver == "incremental")
    # stored: the events as they stand, the answer as given, who and when
    events = repo.label_events(svc.engine, run.session_id)
    assert [(e.item_index, e.value) for e in events] == [(a.item_index, a.value) for a in run.answers]
    assert next(e.value for e in events if e.label_id == target.label_id) == -old
    assert stored_history.labels_as_given(svc.engine, run.session_id)[target.label_id] == old
    (correction,) = stored_history.label_corrections(svc.engine, run.session_id)
    assert (correction.annotator, correction.old_value, correction.new_value) == ("cy", old, -old)
    # the model is the one that learned the corrected answers from the start
    corrected = [(run.pool_of_item[a.item_index], a.value) for a in run.answers]
    assert_model_of(run, from_start(run, corrected))
    # a second click on the same change changes nothing
    again = run.change_label(target.label_id, -old)
    assert not again.ok and "already" in again.message
    assert len(stored_history.label_corrections(svc.engine, run.session_id)) == 1

    # a restart resumes exactly this model (from the snapshot stored with the correction) ...
    restarted = MarginLab.from_url(db_url).open_session(run.session_id)
    assert restarted.resumed_from == len(run.answers)
    assert np.array_equal(scores(restarted.loop), scores(run.loop))
    assert np.array_equal(restarted.loop.pool_scores(), run.loop.pool_scores())
    assert restarted.shown.item_index == run.shown.item_index
    # ... and replaying every stored event gives the model of the corrected answers too
    replayed = MarginLab(svc.engine, use_snapshots=False).open_session(run.session_id)
    assert replayed.resumed_from is None
    assert_model_of(run, replayed.loop)
    # labelling goes on, and so does the table of answers
    item = run.shown.item_index
    assert run.answer(int(run.y_true[item]), item_index=item).ok
    table = run.label_table()
    row = table[table["label_id"] == target.label_id].iloc[0]
    assert (row["answer"], row["as given"], row["status"]) == (run.class_names[-old], run.class_names[old], "current")
    assert "by cy at" in row["changes"]
    assert table["#"].tolist() == list(range(1, len(run.answers) + 1))


@pytest.mark.parametrize(("strategy", "solver"), SOLVERS)
def test_removing_an_earlier_label(db_url, strategy, solver):
    svc = MarginLab.from_url(db_url)
    run = labelled_run(svc, strategy, solver, n=25)
    target = [a for a in run.answers if a.value != 0][-20]
    outcome = run.remove_label(target.label_id)
    assert outcome.ok and "can be asked about again" in outcome.message
    assert target.item_index not in [e.item_index for e in repo.label_events(svc.engine, run.session_id)]
    assert run.n_labels == 24
    assert_model_of(run, from_start(run, [(run.pool_of_item[a.item_index], a.value) for a in run.answers]))
    restarted = MarginLab.from_url(db_url).open_session(run.session_id)
    assert np.array_equal(scores(restarted.loop), scores(run.loop))
    table = run.label_table()
    assert table.loc[table["label_id"] == target.label_id, "status"].item() == "removed"
    # a second removal of it is refused: it is no longer a current answer
    assert not run.remove_label(target.label_id).ok


def test_a_stale_page_cannot_change_what_another_changed(db_url):
    svc = MarginLab.from_url(db_url)
    run = labelled_run(svc, "near-boundary", "incremental", n=12)
    stale = MarginLab(svc.engine).open_session(run.session_id)
    target = run.answers[5]
    assert run.remove_label(target.label_id).ok
    outcome = stale.change_label(target.label_id, -target.value)
    assert not outcome.ok and "undone or removed" in outcome.message
    assert [c.kind for c in stored_history.label_corrections(svc.engine, run.session_id)] == ["remove"]


def import_file(rows, header="item_key,label") -> bytes:
    return ("\ufeff" + header + "\n" + "\n".join(",".join(r) for r in rows) + "\n").encode()


def cancer_run(svc, eval_fraction: float | None = None):
    result = svc.import_bundled("breast-cancer", scaling="standard")
    run = svc.start_session(
        dataset_id=result.dataset_id, annotator="ida", strategy="near-boundary", eval_fraction=eval_fraction
    )
    return run


def test_importing_labels_from_elsewhere(db_url):
    svc = MarginLab.from_url(db_url)
    svc.ensure_demo_dataset()
    run = cancer_run(svc)
    keys = run.display.item_keys
    names = run.class_names
    pool = [int(i) for i in run.pool_items[:40]]
    rows = [(keys[i], names[int(run.y_true[i])]) for i in pool]
    rows[3] = (rows[3][0], rows[3][1].upper())  # class names in any case
    rows[4] = (rows[4][0], "+1" if run.y_true[pool[4]] == 1 else "-1")
    outcome = run.import_labels(import_file(rows), key_column="item_key", label_column="label", source="review.csv")
    assert outcome.ok, outcome.message
    assert outcome.message.startswith("Imported 40 answers from review.csv")
    events = repo.label_events(svc.engine, run.session_id)
    assert [(e.item_index, e.value, e.strategy, e.decision_value) for e in events] == [
        (i, int(run.y_true[i]), "imported", None) for i in pool
    ]
    assert_model_of(run, from_start(run, [(run.pool_of_item[i], int(run.y_true[i])) for i in pool]))
    # the heuristic goes on from there, and the same file again adds nothing
    assert run.shown is not None and run.shown.item_index not in pool
    again = run.import_labels(import_file(rows), key_column="item_key", label_column="label")
    assert again.ok and "already in this session" in again.message
    assert len(repo.label_events(svc.engine, run.session_id)) == 40
    restarted = MarginLab.from_url(db_url).open_session(run.session_id)
    assert np.array_equal(scores(restarted.loop), scores(run.loop))


def test_an_import_with_bad_rows_names_each_and_imports_nothing(db_url):
    svc = MarginLab.from_url(db_url)
    svc.ensure_demo_dataset()
    run = cancer_run(svc, eval_fraction=0.3)  # an evaluation split asked for: its items cannot be imported
    keys, names = run.display.item_keys, run.class_names
    pool = [int(i) for i in run.pool_items[:6]]
    held_out = int(run.eval_items[0])
    assert run.answer(1, item_index=run.shown.item_index).ok
    labelled = run.answers[0].item_index
    before = database_digest(svc.engine)
    rows = [
        (keys[pool[1]], names[1]),
        ("case_999", names[1]),  # row 2: unknown key
        (keys[pool[2]], "maybe"),  # row 3: unknown label
        (keys[held_out], names[-1]),  # row 4: held out for evaluation
        (keys[pool[3]], names[1]),
        (keys[pool[3]], names[-1]),  # row 6 contradicts row 5
        (keys[labelled], names[-1]),  # row 7: already positive here
        ("", names[1]),
    ]  # row 8: no key
    with pytest.raises(ServiceError) as caught:
        run.import_labels(import_file(rows), key_column="item_key", label_column="label", source="bad.csv")
    message = str(caught.value)
    assert message.startswith("Nothing was imported from bad.csv: 6 rows cannot be used.")
    for expected in (
        "row 2: key 'case_999' is not an item",
        "row 3: label 'maybe' is neither 'malignant'",
        "row 4: item",
        "held out to evaluate",
        "row 6: item",
        "in row 5",
        "row 7: item",
        "already 'malignant'",
        "row 8: no item key",
    ):
        assert expected in message, (expected, message)
    assert database_digest(svc.engine) == before and len(run.answers) == 1
    with pytest.raises(ServiceError, match="no column 'verdict'"):
        run.import_labels(import_file(rows), key_column="item_key", label_column="verdict")
