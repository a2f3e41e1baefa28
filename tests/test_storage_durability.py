"""Storage durability: labels survive SIGKILL, concurrent writers lose nothing.

The labelling workers are this module run as a script in child processes
(``python -m tests.test_storage_durability WORKER ...``), each with its own
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

REPO_ROOT = Path(__file__).resolve().parent.parent
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


def worker_main(argv: list[str]) -> None:
    command, url, session_id, start, stop, annotator = argv[:6]
    if command == "label":
        label_forever(url, int(session_id), int(start), int(stop), annotator)
    elif command == "label-when-go":
        go_file = Path(argv[6])
        while not go_file.exists():
            time.sleep(0.005)
        label_forever(url, int(session_id), int(start), int(stop), annotator)
    else:
        raise SystemExit(f"unknown worker command {command}")


def spawn_worker(*args: object) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.test_storage_durability", *map(str, args)],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )


# -- tests --------------------------------------------------------------------------


@pytest.fixture
def database(tmp_path):
    url = f"sqlite:///{tmp_path / 'marginlab.db'}"
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


def test_sigkill_leaves_exactly_the_labels_whose_commit_returned(database):
    url, engine, dataset_id = database
    session_id = storage.start_session(
        engine, dataset_id=dataset_id, annotator="ada", strategy="near-boundary", solver="incremental"
    )
    rng = random.Random(1234)
    returned: list[tuple[int, int]] = []  # (item_index, label_id) whose record_label returned
    start = 0
    kills = 0
    for _round in range(5):
        worker = spawn_worker("label", url, session_id, start, N_ITEMS, "ada")
        # wait until it is labelling, then kill it at a random moment
        first = worker.stdout.readline()
        assert first.startswith("begin"), first + worker.stderr.read()
        time.sleep(rng.uniform(0.0, 0.2))
        worker.send_signal(signal.SIGKILL)
        kills += 1
        output, _errors = worker.communicate()
        in_flight = None
        lines = (first + output).splitlines(keepends=True)
        for line in lines:
            if not line.endswith("\n"):
                continue  # cut off by the kill: not a report that the commit returned
            parts = line.split()
            if parts and parts[0] == "begin":
                in_flight = int(parts[1])
            elif parts and parts[0] == "done":
                returned.append((int(parts[1]), int(parts[2])))
                in_flight = None
        assert worker.returncode == -signal.SIGKILL

        events = storage.label_events(engine, session_id)
        stored = [(e.item_index, e.label_id) for e in events]
        # every returned label is there; at most the one in flight when the kill came is extra
        assert stored[: len(returned)] == returned
        extra = stored[len(returned) :]
        assert len(extra) <= 1
        if extra:
            assert extra[0][0] == in_flight
            returned.append(extra[0])  # its commit completed; the print did not
        check_events_are_complete(events, "ada")
        start = returned[-1][0] + 1 if returned else 0

    assert kills == 5 and len(returned) > 0
    with engine.connect() as connection:
        assert connection.execute(text("PRAGMA integrity_check")).scalar() == "ok"
    # the database stays usable: labelling resumes where it stopped
    event = storage.record_label(engine, session_id, item_index=start, annotator="ada", **expected_label(start))
    assert storage.label_events(engine, session_id)[-1] == event


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
