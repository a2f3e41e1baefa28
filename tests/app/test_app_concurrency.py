"""Several processes labelling one session through the service, as several app servers would.

Each worker is a separate Python process (``multiprocessing`` with ``spawn``) with its own
``MarginLab`` and engine on the same SQLite file.
"""

from __future__ import annotations

import multiprocessing
import random
import time

import pytest

from app.services import MarginLab
from storage import repository as repo
from tests.app import test_app
from tests.app.test_app_robustness import stored_session

pytestmark = pytest.mark.app  # pages through Streamlit's AppTest (a slow lane)

db_url = test_app.db_url  # the same fixture: a temporary SQLite file in MARGINLAB_DATABASE_URL

N_WORKERS = 4
ROUNDS = 15  # labels (each followed by an undo) every worker makes
ATTEMPTS = 50 * ROUNDS  # an answer refused because another process answered the item first is tried again


def label_then_undo(url: str, session_id: int, worker: int, start, results) -> None:
    """Label the item on screen, then undo, until ``ROUNDS`` labels of this worker were stored. Report
    each label's id, whether the undo said it worked, its message, and whether that label was undone
    when the undo returned."""
    run = MarginLab.from_url(url).open_session(session_id)
    rng = random.Random(worker)
    start.wait()
    reports = []
    for _ in range(ATTEMPTS):
        if len(reports) == ROUNDS:
            break
        shown = run.shown
        if shown is None:
            break
        if not run.answer(rng.choice((1, -1)), item_index=shown.item_index).ok:
            continue  # another process answered this item first
        mine = run.answers[-1].label_id
        time.sleep(rng.uniform(0.0, 0.01))  # the others label meanwhile
        undo = run.undo(last_item_index=shown.item_index)
        trail = {e.label_id: e for e in repo.label_events(run.engine, session_id, include_undone=True)}
        reports.append((mine, undo.ok, undo.message, trail[mine].undone_at is not None))
    results.put((worker, reports))


def test_an_undo_never_removes_another_process_s_label(db_url):
    svc = MarginLab.from_url(db_url)
    session_id = stored_session(svc.engine, strategy="random", solver="lasvm", n_labels=4)
    before = {e.label_id for e in repo.label_events(svc.engine, session_id)}
    context = multiprocessing.get_context("spawn")
    start, results = context.Barrier(N_WORKERS), context.Queue()
    workers = [
        context.Process(target=label_then_undo, args=(db_url, session_id, k, start, results)) for k in range(N_WORKERS)
    ]
    for worker in workers:
        worker.start()
    try:
        reports = dict(results.get(timeout=300) for _ in workers)
    finally:
        for worker in workers:
            worker.join(timeout=60)
            if worker.is_alive():
                worker.kill()
    assert all(worker.exitcode == 0 for worker in workers)

    rows = [row for worker_rows in reports.values() for row in worker_rows]
    assert len(rows) == N_WORKERS * ROUNDS  # every worker labelled (and undid) as often as it was told
    # every Undo that said it worked had removed the label its own process had just made ...
    missed = [message for mine, ok, message, gone in rows if ok and not gone]
    assert not missed, f"{len(missed)} of {len(rows)} undos removed another process's label instead: {missed[:3]}"
    # ... and no other: the labels undone are exactly those
    trail = {e.label_id: e for e in repo.label_events(svc.engine, session_id, include_undone=True)}
    undone = {label_id for label_id, event in trail.items() if event.undone_at is not None}
    assert undone == {mine for mine, ok, _, _ in rows if ok}
    assert before.isdisjoint(undone)
    # an Undo that was refused says why, and the label it would have removed is still there
    for mine, ok, message, _ in rows:
        if not ok:
            assert "another tab or process" in message, message
            assert trail[mine].undone_at is None
