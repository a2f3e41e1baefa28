"""The app when things go wrong: sessions whose model cannot be rebuilt, failures of the database
or the disk, parameters that are not numbers. Each test stores the trouble directly (as an older
version, another process or a full disk would leave it) and drives the real entry point with
``streamlit.testing.v1.AppTest`` or the service the pages call.
"""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest
from sqlalchemy import text

from app.services import EVAL_FRACTION, MarginLab, evaluation_split
from app.services.datasets import Datasets
from storage import repository as repo
from tests.app import test_app
from tests.app.test_app import shown, start_app

pytestmark = pytest.mark.app  # pages through Streamlit's AppTest (a slow lane)

db_url = test_app.db_url  # the same fixture: a temporary SQLite file in MARGINLAB_DATABASE_URL

N_LABELS = 6


def two_blobs(n: int = 80, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(-1, 1, (n // 2, 3)), rng.normal(1, 1, (n // 2, 3))])
    y = np.repeat([-1, 1], n // 2)
    return X, y


def stored_session(
    engine,
    *,
    strategy: str = "near-boundary",
    solver: str = "incremental",
    name: str = "blobs",
    true_labels: bool = False,
    n_labels: int = N_LABELS,
) -> int:
    """Two blobs and a session with ``n_labels`` labels (alternating the blobs), written straight to the database.

    With ``true_labels`` the dataset has them, and the session holds out an evaluation split.
    """
    X, y = two_blobs()
    dataset_id = repo.import_dataset(
        engine, name=name, X=X, feature_names=["a", "b", "c"], y_true=y if true_labels else None
    )
    eval_fraction = EVAL_FRACTION if true_labels else 0.0
    session_id = repo.start_session(
        engine,
        dataset_id=dataset_id,
        annotator="ada",
        strategy=strategy,
        solver=solver,
        params={
            "solver_params": {"kernel": "rbf", "C": 1.0, "gamma": "scale"},
            "scaling": "none",
            "eval_fraction": eval_fraction,
        },
        seed=0,
    )
    pool = evaluation_split(y, eval_fraction, 0)[0] if true_labels else np.arange(len(y))
    negatives, positives = pool[y[pool] == -1], pool[y[pool] == 1]
    for k in range(n_labels):
        item = int(negatives[k // 2] if k % 2 == 0 else positives[k // 2])
        repo.record_label(
            engine, session_id, item_index=item, value=int(y[item]), annotator="ada", strategy=strategy, solver=solver
        )
    return session_id


def overwrite_features(engine, dataset_id: int, X: np.ndarray) -> None:
    """Replace a dataset's stored feature matrix, as a version without today's import checks could have left it."""
    with engine.begin() as connection:
        connection.execute(
            text("UPDATE datasets SET features = :blob WHERE id = :id"),
            {"blob": np.ascontiguousarray(X, dtype="<f8").tobytes(), "id": dataset_id},
        )


def error_texts(at) -> list[str]:
    return shown(at.error)


# --------------------------------------------------------------------------- a model that cannot be rebuilt


def _retired_heuristic(engine) -> int:
    """A session stored with a heuristic this version does not know (the loop refuses to build)."""
    session_id = stored_session(engine)
    with engine.begin() as connection:
        connection.execute(
            text("UPDATE labelling_sessions SET strategy = 'retired-heuristic' WHERE id = :id"), {"id": session_id}
        )
    return session_id


def _solver_error_during_replay(engine, monkeypatch) -> int:
    """The solver fails while the stored labels are replayed."""
    from core.solvers.incremental import IncrementalSVM

    def failing_learn(self, i, y):
        raise FloatingPointError("overflow in the kernel row")

    monkeypatch.setattr(IncrementalSVM, "learn", failing_learn)
    return stored_session(engine)


def _poisoned_data(engine) -> int:
    """Features near the largest double, stored before the import refused them (squares overflow)."""
    session_id = stored_session(engine, strategy="near-boundary", solver="lasvm", true_labels=True)
    X, _ = two_blobs()
    dataset_id = repo.get_session(engine, session_id).dataset_id
    overwrite_features(engine, dataset_id, np.clip(X, -1.7, 1.7) * 1e308)
    return session_id


CAUSES = {
    "retired heuristic": lambda engine, mp: _retired_heuristic(engine),
    "solver error during replay": _solver_error_during_replay,
    "poisoned data": lambda engine, mp: _poisoned_data(engine),
}


@pytest.mark.parametrize("cause", list(CAUSES))
def test_a_session_whose_model_cannot_be_rebuilt_opens_with_a_message_and_keeps_its_labels(db_url, monkeypatch, cause):
    svc = MarginLab.from_url(db_url)
    svc.ensure_demo_dataset()
    session_id = CAUSES[cause](svc.engine, monkeypatch)  # the most recent session: the one `/` opens

    at = start_app()
    assert not at.exception, at.exception
    run = svc.open_session(session_id)
    if run.problem is None:
        # the model was rebuilt after all (a solver that copes with the data): it must then be usable
        assert cause == "poisoned data"
        assert np.all(np.isfinite(run.loop.pool_scores()))
        return
    (message,) = error_texts(at)
    assert f"Session {session_id}" in message and "could not be rebuilt" in message
    assert f"{N_LABELS} stored answers" in message and "Export" in message
    # nothing to answer: no answer buttons, no charts
    assert not [b for b in at.button if b.key and b.key.startswith(("positive_", "negative_", "skip_"))]
    assert not at.get("plotly_chart")
    # the labels are intact and exportable
    assert len(repo.label_events(svc.engine, session_id)) == N_LABELS
    exported = pd.read_csv(io.BytesIO(svc.export_labels("csv", session_id=session_id, include_features=False)))
    assert len(exported) == N_LABELS
    # a label or an undo on it is refused with the same message, and changes nothing
    assert not run.answer(1).ok and "could not be rebuilt" in run.answer(1).message
    assert not run.undo().ok
    assert len(repo.label_events(svc.engine, session_id)) == N_LABELS
    # the other pages still render (Compare overlays the sessions of a dataset; Export lists them)
    for page in ("views/export.py", "views/compare.py", "views/data.py"):
        at.switch_page(page).run()
        assert not at.exception, (page, at.exception)
        if page == "views/export.py":  # its model state cannot be offered: the page says why
            assert at.selectbox(key="model_session").value == session_id
            assert error_texts(at) == [message]

    # closing it lets `/` open the next session instead
    at.switch_page("views/label.py").run()
    at.button(key="close_broken_session").click().run()
    assert not at.exception, at.exception
    assert repo.get_session(svc.engine, session_id).status == "closed"
    assert len(repo.label_events(svc.engine, session_id)) == N_LABELS
    assert not error_texts(start_app())


def test_a_snapshot_that_cannot_be_read_is_passed_over_and_the_labels_replayed(db_url):
    svc = MarginLab.from_url(db_url)
    session_id = stored_session(svc.engine)
    repo.save_snapshot(
        svc.engine,
        session_id,
        n_events=N_LABELS,
        arrays={"events": np.zeros((N_LABELS, 2))},
        meta={"service": ["not", "a", "mapping"], "loop": 7},
    )
    run = svc.open_session(session_id)
    assert run.problem is None
    assert "every event replayed" in run.resume_note
    assert run.n_labels == N_LABELS and run.shown is not None
    assert run.answer(1, item_index=run.shown.item_index).ok


def test_a_label_the_model_cannot_learn_is_kept_and_the_session_says_why(db_url, monkeypatch):
    from core.solvers.incremental import IncrementalSVM

    svc = MarginLab.from_url(db_url)
    session_id = stored_session(svc.engine)
    run = svc.open_session(session_id)
    item = run.shown.item_index

    def failing_learn(self, i, y):
        raise FloatingPointError("overflow in the kernel row")

    monkeypatch.setattr(IncrementalSVM, "learn", failing_learn)
    outcome = run.answer(1, item_index=item)
    assert not outcome.ok and outcome.kind == "error"
    assert outcome.message.startswith(f"Item {item} (positive) is saved, but session {session_id}'s model could not")
    assert "FloatingPointError: overflow in the kernel row" in outcome.message
    assert run.problem == outcome.message and run.shown is None
    events = repo.label_events(svc.engine, session_id)
    assert len(events) == N_LABELS + 1 and events[-1].item_index == item
    assert run.n_labels == N_LABELS + 1


# --------------------------------------------------------------------------- parameters that are not numbers


@pytest.mark.parametrize(
    "field, value",
    [
        ("C", float("nan")),
        ("C", float("inf")),
        ("C", -1.0),
        ("C", 0.0),
        ("C", "abc"),
        ("C", 1e308),
        ("C", 1e-300),
        ("gamma", float("nan")),
        ("gamma", float("-inf")),
        ("gamma", 0.0),
        ("gamma", "often"),
        ("seed", float("nan")),
        ("seed", -1),
        ("seed", 1.5),
    ],
)
def test_a_parameter_that_is_not_a_valid_number_is_refused_before_a_session_is_stored(db_url, field, value):
    from app.services import ServiceError

    svc = MarginLab.from_url(db_url)
    dataset_id = svc.ensure_demo_dataset()
    with pytest.raises(ServiceError) as refused:
        svc.start_session(dataset_id=dataset_id, annotator="ada", strategy="near-boundary", **{field: value})
    message = str(refused.value)
    assert message.startswith(f"{field} must be "), message
    assert repr(value) in message or str(value) in message, message
    assert svc.sessions() == []  # nothing stored, not even a closed session


def test_a_session_refused_once_stored_leaves_nothing_behind(db_url):
    """gamma = 1e300 passes the form's checks, but no rbf model can be built with it: the start is refused and
    the stored session goes too (it would be a closed session nobody asked for, failing on every reopening)."""
    from app.services import ServiceError

    svc = MarginLab.from_url(db_url)
    dataset_id = svc.ensure_demo_dataset()
    with pytest.raises(ServiceError, match=r"^The session could not start: .*gamma"):
        svc.start_session(dataset_id=dataset_id, annotator="ada", strategy="near-boundary", gamma=1e300)
    assert svc.sessions() == [] and repo.list_sessions(svc.engine) == []
    assert svc.start_session(dataset_id=dataset_id, annotator="ada", strategy="near-boundary").problem is None


def test_a_dataset_with_values_near_1e308_is_refused_at_import(db_url):
    """Such values imported, and then no session could ever start on the dataset (standardising overflows,
    ||x||^2 is infinite): they are refused at import, as NaN is, naming the cell."""
    from app.services import ServiceError

    svc = MarginLab.from_url(db_url)
    before = [d.id for d in svc.datasets()]
    rows = "".join(f"{0.1 * k if k != 3 else 1e308},{k % 2}\n" for k in range(40))
    with pytest.raises(
        ServiceError,
        match=r"value '1e\+308' in column 'x', row 4 \(line 5 of the file\) is too large: "
        r"feature values must lie within ±1e\+150",
    ):
        svc.import_csv(f"x,y\n{rows}".encode(), name="huge", label_column="y", positive="1")
    assert [d.id for d in svc.datasets()] == before
    fine = "".join(f"{1e140 * k},{k % 2}\n" for k in range(40))  # large, but a session can start on it
    dataset_id = svc.import_csv(f"x,y\n{fine}".encode(), name="large", label_column="y", positive="1").dataset_id
    assert svc.start_session(dataset_id=dataset_id, annotator="ada", strategy="near-boundary").problem is None


# --------------------------------------------------------------------------- uploads


def test_a_csv_cell_longer_than_128_kib_is_previewed_like_any_other(db_url):
    import csv

    long_text = "word " * 40_000  # 200,000 characters in one quoted cell
    rows = [f'{k},{k % 2},"{long_text if k == 1 else "short"}"' for k in range(6)]
    data = ("a,label,text\n" + "\n".join(rows) + "\n").encode()
    svc = MarginLab.from_url(db_url)
    limit = csv.field_size_limit()
    preview = svc.preview_csv(data)
    assert preview.n_rows == 6 and preview.header == ["a", "label", "text"]
    assert preview.frame["text"].iloc[1] == long_text
    assert svc.column_values(data, "label") == ["0", "1"]
    assert svc.column_values(data, "text")[-1] == long_text.strip()
    assert csv.field_size_limit() >= limit  # never lowered for the rest of the process
    # and the import agrees with the preview
    result = svc.import_csv(
        data, name="long", feature_columns=["a"], label_column="label", display="text", text_column="text", positive="1"
    )
    assert result.created


# --------------------------------------------------------------------------- a full disk


def fill_the_disk_before(engine, monkeypatch, function_name: str) -> None:
    """Let the database grow no more while ``repo.<function_name>`` runs.

    SQLite's ``max_page_count`` set to the current size on every connection: whatever
    needs a new page fails with SQLite's own "database or disk is full".
    """
    from sqlalchemy import event

    original = getattr(repo, function_name)

    def full_while_it_runs(*args, **kwargs):
        with engine.connect() as connection:
            pages = connection.execute(text("PRAGMA page_count")).scalar()

        def limit(dbapi_connection, _record):
            dbapi_connection.execute(f"PRAGMA max_page_count = {pages}")

        event.listen(engine, "connect", limit)
        engine.dispose()  # every connection from now on is a new one, limited
        try:
            return original(*args, **kwargs)
        finally:  # room again afterwards
            event.remove(engine, "connect", limit)
            engine.dispose()

    monkeypatch.setattr(repo, function_name, full_while_it_runs)


def test_a_full_disk_when_the_snapshot_is_stored_keeps_the_label_and_says_so(db_url, monkeypatch):
    from app.services import SNAPSHOT_EVERY

    svc = MarginLab.from_url(db_url)
    session_id = stored_session(svc.engine, n_labels=SNAPSHOT_EVERY - 1)
    run = svc.open_session(session_id)
    assert repo.latest_snapshot(svc.engine, session_id) is None
    fill_the_disk_before(svc.engine, monkeypatch, "save_snapshot")
    item = run.shown.item_index
    outcome = run.answer(1, item_index=item)  # the 25th answer: a snapshot is due
    assert outcome.ok and outcome.kind == "warning", outcome
    assert outcome.message.startswith(f"Item {item}: positive (saved).")
    assert "model snapshot could not be stored" in outcome.message
    assert "database or disk is full" in outcome.message
    assert "OperationalError" not in outcome.message and "INSERT" not in outcome.message
    events = repo.label_events(svc.engine, session_id)
    assert len(events) == SNAPSHOT_EVERY and events[-1].item_index == item
    assert repo.latest_snapshot(svc.engine, session_id) is None
    # labelling goes on: the next answer is stored and learned
    assert run.problem is None and run.shown is not None
    nxt = run.shown.item_index
    assert run.answer(-1, item_index=nxt).ok
    assert len(repo.label_events(svc.engine, session_id)) == SNAPSHOT_EVERY + 1
    # the Label page shows such an outcome as a warning, not as the usual small caption
    at = start_app()
    at.session_state["outcome"] = outcome
    at.run()
    assert shown(at.warning) == [outcome.message]


def test_a_full_disk_when_the_label_is_stored_records_nothing_and_says_so(db_url, monkeypatch):
    import sqlite3

    from sqlalchemy.exc import OperationalError

    svc = MarginLab.from_url(db_url)
    session_id = stored_session(svc.engine)
    run = svc.open_session(session_id)
    item = run.shown.item_index

    def full(*args, **kwargs):
        raise OperationalError("INSERT INTO labels ...", {}, sqlite3.OperationalError("database or disk is full"))

    monkeypatch.setattr(repo, "record_label", full)
    outcome = run.answer(1, item_index=item)
    assert not outcome.ok and outcome.kind == "error"
    assert outcome.message == ("Nothing was recorded: the database could not be written (database or disk is full).")
    assert run.shown.item_index == item and len(run.answers) == N_LABELS  # still asked, nothing learned
    monkeypatch.undo()
    assert run.answer(1, item_index=item).ok


# --------------------------------------------------------------------------- the database failing under a page


class Outage:
    """Every statement on every engine fails with the driver's error while ``down`` (``writes_only``: those
    that write, as on a full disk), as when a PostgreSQL server restarts under the app."""

    def __init__(self, message: str, *, writes_only: bool = False):
        self.message, self.writes_only, self.down = message, writes_only, False

    def __call__(self, connection, cursor, statement, parameters, context, executemany):
        import sqlite3

        if self.down and (
            not self.writes_only or statement.lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE"))
        ):
            raise sqlite3.OperationalError(self.message)

    def __enter__(self):
        from sqlalchemy import event
        from sqlalchemy.engine import Engine

        event.listen(Engine, "before_cursor_execute", self)
        return self

    def __exit__(self, *exc):
        from sqlalchemy import event
        from sqlalchemy.engine import Engine

        event.remove(Engine, "before_cursor_execute", self)


def try_again(at) -> None:
    (button,) = [b for b in at.button if b.key and b.key.startswith("try_again_")]
    button.click().run()


def test_the_database_going_away_mid_labelling_is_said_with_a_way_on(db_url):
    at = start_app()
    test_app.start_session(at, "ada", "random")
    test_app.click(at, "positive")
    with Outage("server closed the connection unexpectedly") as outage:
        outage.down = True
        test_app.click(at, "negative")  # (click asserts that no error box came up)
        said = error_texts(at)
        assert any(
            "could not be used just now (server closed the connection unexpectedly)" in e and "Try again" in e
            for e in said
        ), said
        outage.down = False
        try_again(at)
    assert not at.exception and not any("just now" in e for e in error_texts(at)), error_texts(at)
    # the answer given during the outage was refused and said so; the one before it is kept
    assert error_texts(at) == [
        "Nothing was recorded: the database could not be written (server closed the connection unexpectedly)."
    ]
    assert test_app.progress(at) == (1, 0)
    test_app.click(at, "positive")  # labelling goes on
    assert test_app.progress(at) == (2, 0) and not error_texts(at)


def test_signing_in_while_the_disk_is_full_says_so_and_the_form_stays(db_url):
    test_app.ensure_account(db_url, "ada")
    at = test_app.anonymous_app()
    with Outage("database or disk is full", writes_only=True) as outage:
        outage.down = True
        at.text_input(key="sign_in_name").input("ada")
        at.text_input(key="sign_in_password").input(test_app.PASSWORD)
        at.button(key="sign_in_submit").click().run()
        assert not at.exception, at.exception
        said = error_texts(at)
        assert any(
            "could not be used just now (database or disk is full)" in e and "free some disk space" in e for e in said
        ), said
        assert [t.value for t in at.title] == ["Sign in"] and "identity" not in at.session_state
    test_app.sign_in(at, "ada")  # room again: the same form signs in


def damage_the_labels(path) -> None:
    """Spoil the second half of the page that holds the labels table (the file's header and schema stay intact,
    so the database passes the checks at start-up)."""
    import sqlite3

    with sqlite3.connect(path) as connection:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        root = connection.execute("SELECT rootpage FROM sqlite_master WHERE name = 'labels'").fetchone()[0]
        page = connection.execute("PRAGMA page_size").fetchone()[0]
    connection.close()
    with open(path, "r+b") as handle:
        handle.seek((root - 1) * page + page // 2)
        handle.write(b"\xa5" * (page // 2))


def test_a_damaged_page_of_labels_is_said_on_every_page_that_reads_them(db_url, tmp_path):
    svc = MarginLab.from_url(db_url)
    session_id = stored_session(svc.engine, n_labels=30)
    svc.engine.dispose()
    damage_the_labels(tmp_path / "app.db")
    at = test_app.anonymous_app()
    test_app.ensure_account(db_url, "ada")
    at.text_input(key="sign_in_name").input("ada")
    at.text_input(key="sign_in_password").input(test_app.PASSWORD)
    at.button(key="sign_in_submit").click().run()
    assert not at.exception, at.exception
    for page in ("views/label.py", "views/history.py", "views/export.py", "views/sessions.py"):
        at.switch_page(page).run()
        assert not at.exception, (page, at.exception)
        said = error_texts(at)
        assert (
            len(said) == 1
            and "is damaged" in said[0]
            and "database disk image is malformed" in said[0]
            and "Restore it from a backup" in said[0]
        ), (page, said)
        assert [b for b in at.button if b.key == "try_again_page"], page  # a way on: try again, or the menu
    at.switch_page("views/data.py").run()  # the pages that do not read the labels still work
    assert not at.exception and not error_texts(at)
    assert session_id


# --------------------------------------------------------------------------- a database that is not MarginLab's


def files_beside(path) -> dict[str, bytes]:
    """Every file in the database's folder with its bytes (a -wal or -shm file appearing is a change too)."""
    return {p.name: p.read_bytes() for p in sorted(path.parent.iterdir()) if p.is_file()}


def every_page_says(at, words: str) -> None:
    for page in ("views/label.py", "views/data.py", "views/compare.py", "views/export.py"):
        at.switch_page(page).run()
        assert not at.exception, (page, at.exception)
        errors = error_texts(at)
        assert len(errors) == 1 and words in errors[0], (page, errors)


def test_a_file_that_is_not_a_database_gets_a_clear_page_and_is_left_as_it_was(tmp_path, monkeypatch):
    path = tmp_path / "marginlab.db"
    path.write_bytes(b"these are the minutes of the meeting, not a database\n" * 200)
    monkeypatch.setenv("MARGINLAB_DATABASE_URL", f"sqlite:///{path}")
    before = files_beside(path)
    at = test_app.anonymous_app()  # the database fails before anyone can sign in
    every_page_says(at, "is not a SQLite database")
    assert "marginlab.db" in error_texts(at)[0] and str(tmp_path) not in error_texts(at)[0]
    assert files_beside(path) == before
    from storage.errors import CorruptDatabaseError

    with pytest.raises(CorruptDatabaseError, match="is not a SQLite database"):
        MarginLab.from_url(f"sqlite:///{path}")
    assert files_beside(path) == before


def test_another_program_s_sqlite_file_is_refused_without_being_touched(tmp_path, monkeypatch):
    import sqlite3

    path = tmp_path / "contacts.sqlite"
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE contacts (name TEXT, phone TEXT)")
        connection.execute("INSERT INTO contacts VALUES ('Ada', '555-0100')")
    connection.close()
    monkeypatch.setenv("MARGINLAB_DATABASE_URL", f"sqlite:///{path}")
    before = files_beside(path)
    at = test_app.anonymous_app()  # the database fails before anyone can sign in
    every_page_says(at, "is not a MarginLab database")
    assert "contacts" in error_texts(at)[0]
    assert files_beside(path) == before  # no MarginLab table, no switch to WAL, no -wal/-shm file
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as connection:
        assert [r[0] for r in connection.execute("SELECT name FROM sqlite_master")] == ["contacts"]
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    connection.close()


def test_a_damaged_marginlab_database_gets_a_clear_page(tmp_path, monkeypatch):
    path = tmp_path / "marginlab.db"
    url = f"sqlite:///{path}"
    svc = MarginLab.from_url(url)
    svc.ensure_demo_dataset()
    svc.engine.dispose()
    with open(path, "r+b") as handle:  # keep the header and the schema page, spoil every page after them
        size = handle.seek(0, 2)
        handle.seek(4096)
        handle.write(b"\xa5" * (size - 4096))
    monkeypatch.setenv("MARGINLAB_DATABASE_URL", url)
    at = test_app.anonymous_app()  # the database fails before anyone can sign in
    every_page_says(at, "database disk image is malformed")


def test_an_unexpected_error_shows_no_details_in_the_browser_and_is_logged(db_url, monkeypatch, caplog):
    def broken(self):
        raise RuntimeError("secret detail at /srv/marginlab/secret.py")

    monkeypatch.setattr(Datasets, "__call__", broken)  # (``service.datasets()``)
    monkeypatch.chdir("/")  # AppTest reads no config file beside the script: the code must set it
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(test_app.MAIN, default_timeout=test_app.TIMEOUT).run()
    (shown,) = at.exception
    assert "secret" not in shown.message and "/srv" not in shown.message
    assert not shown.stack_trace and "RuntimeError" not in str(shown.proto)
    assert "secret detail at /srv/marginlab/secret.py" in caplog.text  # the server's log keeps it


# --------------------------------------------------------------------------- what a comparison may cost


@pytest.fixture
def no_comparison_runs(monkeypatch):
    """Fail at once if a comparison starts (instead of letting a refused one run for hours)."""
    import core.experiment

    def started(*args, **kwargs):
        raise AssertionError("the comparison started")

    monkeypatch.setattr(core.experiment, "run_comparison", started)


@pytest.mark.parametrize(
    "asked, named",
    [
        (dict(budget=10_000), "at most 500 labels per run"),
        (dict(seeds=1_000), "at most 10 seeds"),
        (
            dict(
                budget=500,
                seeds=10,
                strategies=["near-boundary", "random", "gradient", "autoactive", "largest-positive"],
            ),
            "heuristics × seeds × budget = 5 × 10 × 500 = 25,000 labels is over the 20,000",
        ),
        (dict(C=float("nan")), "C must be a positive finite number"),
        (dict(gamma=float("inf")), "gamma must be"),
        (dict(test_fraction=1.0), "evaluation share"),
        (dict(initial=-1), "initial labels must be a whole number"),
    ],
)
def test_a_comparison_over_the_limits_is_refused_before_it_starts(db_url, no_comparison_runs, asked, named):
    from app.services import ServiceError

    svc = MarginLab.from_url(db_url)
    dataset_id = svc.ensure_demo_dataset()
    request = dict(strategies=["near-boundary", "random"], budget=60, seeds=3) | asked
    with pytest.raises(ServiceError) as refused:
        svc.run_comparison(dataset_id, **request)
    assert named in str(refused.value), str(refused.value)
    assert svc.comparisons() == []


def test_a_large_dataset_is_refused_by_the_training_items_and_the_work_limits(db_url, no_comparison_runs):
    """The limits that depend on the dataset's size; a 50,000-item study of 3 heuristics x 3 seeds x 100
    labels (the size the app is measured at) passes them."""
    from app.services import ServiceError

    svc = MarginLab.from_url(db_url)
    rng = np.random.default_rng(0)

    def dataset(n: int) -> int:
        X = rng.standard_normal((n, 2))
        frame = pd.DataFrame(X, columns=["a", "b"]).assign(label=(X[:, 0] > 0).astype(int))
        return svc.import_csv(
            frame.to_csv(index=False).encode(), name=f"g{n}", label_column="label", positive="1"
        ).dataset_id

    too_many = dataset(72_000)  # 50,400 training items after the evaluation share
    with pytest.raises(ServiceError, match="at most 50,000 training items; this dataset has 50,400"):
        svc.run_comparison(too_many, strategies=["near-boundary"], budget=10, seeds=1)
    fifty = dataset(50_000)  # 35,000 training items
    with pytest.raises(ServiceError) as refused:  # 2 x 10 x 100 = 2,000 labels, x 35,000 = 70,000,000
        svc.run_comparison(fifty, strategies=["near-boundary", "random"], budget=100, seeds=10)
    assert "heuristics × seeds × budget × training items" in str(refused.value)
    assert "70,000,000 is over the 50,000,000" in str(refused.value)
    with pytest.raises(AssertionError, match="the comparison started"):  # 31,500,000: within the limits
        svc.run_comparison(
            fifty, strategies=["near-boundary", "randomized-search", "largest-positive"], budget=100, seeds=3
        )
    assert svc.comparisons() == []


def test_the_compare_page_offers_no_more_than_the_limits_and_names_the_one_exceeded(db_url, no_comparison_runs):
    from app.services.comparisons import COMPARE_MAX_BUDGET, COMPARE_MAX_SEEDS

    at = start_app()
    at.switch_page("views/compare.py").run()
    numbers = {n.label: n for n in at.number_input}
    assert numbers["Label budget"].max == COMPARE_MAX_BUDGET and numbers["Seeds"].max == COMPARE_MAX_SEEDS
    numbers["Label budget"].set_value(COMPARE_MAX_BUDGET)
    numbers["Seeds"].set_value(COMPARE_MAX_SEEDS)
    at.multiselect[0].set_value(["near-boundary", "random", "gradient", "autoactive", "largest-positive"])
    [b for b in at.button if b.label == "Run the comparison"][0].click().run()
    assert not at.exception, at.exception
    (error,) = error_texts(at)
    assert "heuristics × seeds × budget = 5 × 10 × 500" in error and "python -m core compare" in error
    assert MarginLab.from_url(db_url).comparisons() == []
