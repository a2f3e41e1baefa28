"""Storage durability: labels survive SIGKILL, concurrent writers lose nothing.

The labelling workers are this module run as a script in child processes
(``python -m tests.storage.test_storage_durability WORKER ...``), each with its own
engine, as the app's processes would have.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import text

import storage

pytestmark = pytest.mark.processes  # worker processes killed mid-write or racing (a slow lane)

REPO_ROOT = Path(__file__).resolve().parents[2]
N_ITEMS = 5000


def expected_label(item_index: int) -> dict:
    """What the worker records for an item: every field is a function of the index."""
    return dict(
        value=(1, -1, 0)[item_index % 3],
        decision_value=item_index / 8.0 - 3.0,
        model_version=item_index,
        update_ms=item_index / 4.0,
        query_ms=1.0 + item_index,
        strategy="near-boundary" if item_index % 2 else "randomized-search",
        solver="incremental",
    )


# -- workers (child processes) -------------------------------------------------------


def label_forever(url: str, session_id: int, start: int, stop: int, annotator: str) -> None:
    """Label items start..stop-1; print "begin i" before and "done i label_id" after each commit."""
    engine = storage.make_engine(url)
    out = sys.stdout
    for item_index in range(start, stop):
        out.write(f"begin {item_index}\n")
        out.flush()
        event = storage.record_label(
            engine, session_id, item_index=item_index, annotator=annotator, **expected_label(item_index)
        )
        out.write(f"done {item_index} {event.label_id}\n")
        out.flush()
    out.write("finished\n")
    out.flush()


def loop_config(info: storage.SessionInfo) -> dict:
    return dict(strategy=info.strategy, solver=info.solver, seed=info.seed, solver_params=info.params)


def skip_or_true_label(item_index: int, y_true: np.ndarray) -> int:
    return 0 if item_index % 7 == 0 else int(y_true[item_index])


def label_with_the_loop(url: str, session_id: int) -> None:
    """Resume the session as the app does (rebuild from the events), then label what the loop asks.

    Prints "begin i" before and "done i label_id" after each ``record_label``
    returned; the label is committed before the loop learns it and asks again.
    """
    from core.loop import ActiveLearningLoop

    engine = storage.make_engine(url)
    info = storage.get_session(engine, session_id)
    X, y_true, _names, _display = storage.load_dataset_arrays(engine, info.dataset_id)
    events = [(e.item_index, e.value) for e in storage.label_events(engine, session_id)]
    loop = ActiveLearningLoop.from_events(events, X, **loop_config(info))
    out = sys.stdout
    update_ms = None
    while (query := loop.next_query()) is not None:
        value = skip_or_true_label(query.index, y_true)
        out.write(f"begin {query.index}\n")
        out.flush()
        event = storage.record_label(
            engine,
            session_id,
            item_index=query.index,
            value=value,
            annotator=info.annotator,
            strategy=query.strategy,
            solver=info.solver,
            decision_value=query.score,
            model_version=len(loop.events),
            update_ms=update_ms,
            query_ms=query.query_ms,
        )
        out.write(f"done {query.index} {event.label_id}\n")
        out.flush()
        started = time.perf_counter()
        if value == 0:
            loop.skip(query.index)
        else:
            loop.teach(query.index, value)
        update_ms = (time.perf_counter() - started) * 1e3
    out.write("finished\n")
    out.flush()


def worker_main(argv: list[str]) -> None:
    command, url, session_id = argv[:3]
    if command == "loop":
        label_with_the_loop(url, int(session_id))
        return
    start, stop, annotator = argv[3:6]
    if command == "label-when-go":
        go_file = Path(argv[6])
        while not go_file.exists():
            time.sleep(0.005)
        label_forever(url, int(session_id), int(start), int(stop), annotator)
    else:
        raise SystemExit(f"unknown worker command {command}")


def spawn_worker(*args: object) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.storage.test_storage_durability", *map(str, args)],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )


# -- tests --------------------------------------------------------------------------


@pytest.fixture
def database(database_url):
    """(url, engine, id of a 5000-item dataset) of a new database, on SQLite and on PostgreSQL."""
    url = database_url
    engine = storage.make_engine(url)
    storage.init_db(engine)
    rng = np.random.default_rng(0)
    dataset_id = storage.import_dataset(
        engine, name="big", X=rng.standard_normal((N_ITEMS, 4)), feature_names=["a", "b", "c", "d"]
    )
    yield url, engine, dataset_id
    engine.dispose()


def check_events_are_complete(events, annotator: str) -> None:
    for event in events:
        expected = expected_label(event.item_index)
        assert event.annotator == annotator
        for name, value in expected.items():
            assert getattr(event, name) == value, (event, name)


def kill_and_read_the_rest(worker: subprocess.Popen) -> tuple[str, str]:
    """SIGKILL ``worker`` and return (stdout, stderr) that it wrote and the caller has not read yet.

    Not ``communicate()``: it reads the pipes' file descriptors directly, so
    whatever an earlier ``readline()`` had already pulled into the pipe
    object's buffer (lines the worker wrote in the same moment as the one
    read) would be lost, and a label reported done would look unreported.
    The worker is dead before the pipes are read to their end, so reading
    one after the other cannot block.
    """
    worker.send_signal(signal.SIGKILL)
    worker.wait()
    return worker.stdout.read(), worker.stderr.read()


def worker_url(url: str, name: str) -> str:
    """The database URL for a worker; on PostgreSQL its connections carry ``name`` (see ``wait_until_gone``)."""
    if not url.startswith("postgresql"):
        return url
    return f"{url}{'&' if '?' in url else '?'}application_name={name}"


def wait_until_gone(engine, name: str) -> None:
    """Wait until the server has finished with every connection of a killed worker.

    A client killed just after sending COMMIT does not stop the server from
    carrying it out: until the server process serving that connection has
    ended, the label in flight may still appear. (A SQLite commit happens in
    the killed process itself: there is nothing to wait for.)
    """
    if engine.dialect.name != "postgresql":
        return
    query = text("SELECT count(*) FROM pg_stat_activity WHERE application_name = :name")
    deadline = time.monotonic() + 120  # only a guard against a server that never lets go
    while True:
        with engine.connect() as connection:
            if connection.execute(query, {"name": name}).scalar_one() == 0:
                return
        assert time.monotonic() < deadline, f"the server still serves the killed worker {name}"
        time.sleep(0.01)


def read_reports(lines) -> tuple[list[tuple[int, int]], int | None]:
    """``(item, label id)`` of every "done" line, and the item begun but not reported done (None: none)."""
    returned, in_flight = [], None
    for line in lines:
        if not line.endswith("\n"):
            continue  # cut off by the kill: not a report that the commit returned
        parts = line.split()
        if parts[0] == "begin":
            in_flight = int(parts[1])
        elif parts[0] == "done":
            returned.append((int(parts[1]), int(parts[2])))
            in_flight = None
    return returned, in_flight


def follow(reference, events, y_true) -> None:
    """The reference loop learns ``events`` one by one; each is what it asks next, with its score."""
    for event in events:
        query = reference.next_query()
        assert event.item_index == query.index
        assert event.value == skip_or_true_label(query.index, y_true)
        assert event.model_version == len(reference.events)
        assert (event.strategy, event.solver, event.annotator) == (query.strategy, "incremental", "ada")
        if np.isfinite(query.score):
            assert event.decision_value == query.score
        else:
            assert event.decision_value is None or not np.isfinite(event.decision_value)
        if event.value == 0:
            reference.skip(query.index)
        else:
            reference.teach(query.index, event.value)


def test_sigkill_leaves_exactly_the_labels_whose_commit_returned(database):
    """Kill a process labelling with a real loop, five times, at moments drawn from a seeded generator.

    After each kill (and once the server has finished with the killed process's
    connection), the labels stored in that round are exactly the ones whose
    ``record_label`` returned, in order, plus at most the one in flight (its
    commit completed before the kill but after the last report); nothing stored
    before is lost or changed; complete rows only. The stored labels are what a
    loop learning them one by one asks, with the same scores, in the same order.
    """
    from core.datasets import make_gaussians
    from core.loop import ActiveLearningLoop

    url, engine, _big = database
    X, y = make_gaussians(2000, np.random.default_rng(3), separation=2.0)
    dataset_id = storage.import_dataset(engine, name="gaussians", X=X, feature_names=["x1", "x2"], y_true=y)
    session_id = storage.start_session(
        engine,
        dataset_id=dataset_id,
        annotator="ada",
        strategy="near-boundary",
        solver="incremental",
        params={"kernel": "rbf", "C": 10.0, "gamma": 0.5},
        seed=11,
    )
    info = storage.get_session(engine, session_id)
    reference = ActiveLearningLoop(X, **loop_config(info))
    rng = random.Random(1234)
    stored: list[tuple[int, int]] = []  # (item_index, label_id) in the database after the rounds so far
    for round_ in range(5):
        name = f"marginlab-sigkill-{round_}"
        worker = spawn_worker("loop", worker_url(url, name), session_id)
        # The kill comes after 1 to 3 reported labels: right after a report (the worker is learning or
        # choosing), or right after the next "begin" (its commit is under way).
        reports, during_commit = rng.randint(1, 3), rng.random() < 0.5
        seen, done = [], 0
        while done < reports or (during_commit and not seen[-1].startswith("begin")):
            line = worker.stdout.readline()
            assert line, "the worker ended before it was killed: " + worker.stderr.read()
            seen.append(line)
            done += line.startswith("done")
        output, errors = kill_and_read_the_rest(worker)
        assert worker.returncode == -signal.SIGKILL, errors
        wait_until_gone(engine, name)
        returned, in_flight = read_reports(seen + output.splitlines(keepends=True))
        assert len(returned) >= reports

        now = [(e.item_index, e.label_id) for e in storage.label_events(engine, session_id)]
        assert now[: len(stored)] == stored  # nothing stored before was lost or changed
        added = now[len(stored) :]
        assert added[: len(returned)] == returned  # every label whose commit returned, in order
        extra = added[len(returned) :]
        assert extra == [] or (len(extra) == 1 and extra[0][0] == in_flight), (extra, in_flight)
        # complete rows, each the item a loop that learned the labels before it asks (the same score, ...)
        follow(reference, storage.label_events(engine, session_id)[len(stored) :], y)
        stored = now

    if engine.dialect.name == "sqlite":
        with engine.connect() as connection:
            assert connection.execute(text("PRAGMA integrity_check")).scalar() == "ok"
    events = storage.label_events(engine, session_id)
    rebuilt = ActiveLearningLoop.from_events([(e.item_index, e.value) for e in events], X, **loop_config(info))
    np.testing.assert_array_equal(rebuilt.labels, reference.labels)
    np.testing.assert_array_equal(rebuilt.skipped_mask, reference.skipped_mask)
    for got, want in zip(rebuilt.solver.coefficients(), reference.solver.coefficients(), strict=True):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(rebuilt.pool_scores(), reference.pool_scores())
    assert rebuilt.next_query().index == reference.next_query().index


def test_killing_a_worker_keeps_the_lines_a_readline_read_ahead():
    """Three lines arrive in one write; reading the first may buffer the other two (atomic pipe write)."""
    child = "import sys, time; sys.stdout.write('a\\nb\\nc\\n'); sys.stdout.flush(); time.sleep(600)"
    worker = subprocess.Popen(
        [sys.executable, "-c", child],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert worker.stdout.readline() == "a\n"
    output, errors = kill_and_read_the_rest(worker)
    assert (output, errors) == ("b\nc\n", "")
    assert worker.returncode == -signal.SIGKILL


def test_four_processes_labelling_at_once_lose_nothing(database, tmp_path):
    url, engine, dataset_id = database
    per_worker = 60
    go_file = tmp_path / "go"
    sessions = [
        storage.start_session(
            engine, dataset_id=dataset_id, annotator=f"annotator {k}", strategy="random", solver="lasvm"
        )
        for k in range(4)
    ]
    workers = [
        spawn_worker("label-when-go", url, session_id, k * per_worker, (k + 1) * per_worker, f"annotator {k}", go_file)
        for k, session_id in enumerate(sessions)
    ]
    go_file.touch()
    results = [worker.communicate(timeout=120) for worker in workers]
    for worker, (output, errors) in zip(workers, results, strict=True):
        assert worker.returncode == 0, errors
        assert "locked" not in errors.lower() and "locked" not in output.lower()
        assert output.splitlines()[-1] == "finished"
    for k, session_id in enumerate(sessions):
        events = storage.label_events(engine, session_id)
        assert [e.item_index for e in events] == list(range(k * per_worker, (k + 1) * per_worker))
        check_events_are_complete(events, f"annotator {k}")
        returned = {int(line.split()[2]) for line in results[k][0].splitlines() if line.startswith("done")}
        assert returned == {e.label_id for e in events}


if __name__ == "__main__":
    worker_main(sys.argv[1:])
