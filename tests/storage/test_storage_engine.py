"""Storage engine: URL from the environment, SQLite settings, schema version, portability."""

from __future__ import annotations

import hashlib
import re
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import inspect, text, update
from sqlalchemy.dialects import postgresql
from sqlalchemy.schema import CreateIndex, CreateTable

import storage
from storage.engine import DATABASE_URL_ENV, SQLITE_BUSY_TIMEOUT_MS
from storage.models import SCHEMA_VERSION, Base, SchemaInfo

STORAGE_DIR = Path(storage.__file__).resolve().parent


def file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    for suffix in ("", "-wal"):
        part = Path(f"{path}{suffix}")
        digest.update(part.read_bytes() if part.exists() else b"<absent>")
    return digest.hexdigest()


def test_database_url_comes_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv(DATABASE_URL_ENV, f"sqlite:///{tmp_path / 'custom.db'}")
    assert storage.database_url() == f"sqlite:///{tmp_path / 'custom.db'}"


def test_default_database_lives_in_the_user_data_folder(monkeypatch, tmp_path):
    monkeypatch.delenv(DATABASE_URL_ENV, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    url = storage.database_url()
    assert url == f"sqlite:///{tmp_path / 'xdg' / 'marginlab' / 'marginlab.db'}"
    assert (tmp_path / "xdg" / "marginlab").is_dir()


def test_sqlite_connections_get_foreign_keys_wal_and_busy_timeout(tmp_path, monkeypatch):
    monkeypatch.delenv("MARGINLAB_SQLITE_SYNCHRONOUS", raising=False)
    engine = storage.make_engine(f"sqlite:///{tmp_path / 'nested' / 'folder' / 'm.db'}")
    # a connection's very first transaction, a read (a write transaction sets the busy timeout again as it ends)
    with engine.connect() as connection:
        assert connection.execute(text("PRAGMA busy_timeout")).scalar() == SQLITE_BUSY_TIMEOUT_MS
        assert connection.execute(text("PRAGMA foreign_keys")).scalar() == 1
    storage.init_db(engine)
    with engine.connect() as connection:
        assert connection.execute(text("PRAGMA foreign_keys")).scalar() == 1
        assert connection.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert connection.execute(text("PRAGMA busy_timeout")).scalar() == SQLITE_BUSY_TIMEOUT_MS
        assert connection.execute(text("PRAGMA synchronous")).scalar() == 2  # FULL: commits survive power loss
    engine.dispose()
    with pytest.raises(ValueError, match="sqlite_synchronous"):
        storage.make_engine(f"sqlite:///{tmp_path / 'x.db'}", sqlite_synchronous="OFF")
    monkeypatch.setenv("MARGINLAB_SQLITE_SYNCHRONOUS", "normal")
    engine = storage.make_engine(f"sqlite:///{tmp_path / 'normal.db'}")
    with engine.connect() as connection:
        assert connection.execute(text("PRAGMA synchronous")).scalar() == 1
    engine.dispose()


def test_init_db_is_idempotent_and_records_the_version(tmp_path):
    engine = storage.make_engine(f"sqlite:///{tmp_path / 'm.db'}")
    assert storage.schema_version(engine) is None
    assert storage.init_db(engine) == SCHEMA_VERSION
    assert storage.init_db(engine) == SCHEMA_VERSION
    assert storage.schema_version(engine) == SCHEMA_VERSION
    engine.dispose()


@pytest.mark.parametrize(
    "recorded, expected",
    [
        (SCHEMA_VERSION + 1, [f"only up to version {SCHEMA_VERSION}", "newer MarginLab"]),
        (0, [f"needs version {SCHEMA_VERSION}", "no migration"]),  # older than every migration
    ],
    ids=["newer", "older"],
)
def test_a_database_from_another_version_is_refused_clearly_and_left_alone(tmp_path, recorded, expected):
    path = tmp_path / "m.db"
    engine = storage.make_engine(f"sqlite:///{path}")
    storage.init_db(engine)
    with engine.begin() as connection:
        connection.execute(update(SchemaInfo).values(version=recorded))
    engine.dispose()
    before = file_digest(path)

    engine = storage.make_engine(f"sqlite:///{path}")
    with pytest.raises(storage.SchemaVersionError) as caught:
        storage.init_db(engine)
    message = str(caught.value)
    for fragment in [f"schema version {recorded}", *expected]:
        assert fragment in message, message
    engine.dispose()
    assert file_digest(path) == before


def test_schema_compiles_for_postgresql_with_the_partial_unique_index():
    dialect = postgresql.dialect()
    ddl = []
    for table in Base.metadata.sorted_tables:
        ddl.append(str(CreateTable(table).compile(dialect=dialect)))
        ddl.extend(str(CreateIndex(index).compile(dialect=dialect)) for index in table.indexes)
    joined = "\n".join(ddl)
    partial_index = (
        "CREATE UNIQUE INDEX uq_active_label_per_item ON labels (session_id, item_id) WHERE undone_at IS NULL"
    )
    assert partial_index in joined
    assert "ON DELETE CASCADE" in joined and "BYTEA" in joined


def test_nothing_sqlite_specific_outside_the_engine_module():
    pattern = re.compile(r"PRAGMA|BEGIN IMMEDIATE|sqlite3|sqlite_master|AUTOINCREMENT", re.IGNORECASE)
    for path in STORAGE_DIR.glob("*.py"):
        if path.name == "engine.py":
            continue
        source = path.read_text()
        assert not pattern.search(source), f"{path.name} uses SQLite-specific SQL"
        # the partial index is declared for both SQLite and PostgreSQL, nothing else names a dialect
        for line in source.splitlines():
            if "sqlite" in line.lower() and not line.strip().startswith("#"):
                assert "sqlite_where" in line, f"{path.name}: {line.strip()}"


def test_storage_imports_neither_streamlit_nor_the_solvers():
    for path in STORAGE_DIR.glob("*.py"):
        source = path.read_text()
        assert not re.search(r"^\s*(import|from)\s+(streamlit|core\.solvers|core\.loop|app)\b", source, re.M), path.name


def test_sessionmaker_units_of_work_and_repository_calls_share_the_engine(tmp_path):
    from storage.models import Annotator

    engine = storage.make_engine(f"sqlite:///{tmp_path / 'm.db'}")
    storage.init_db(engine)
    SessionLocal = storage.make_sessionmaker(engine)
    with SessionLocal.begin() as session:
        session.add(Annotator(name="grace"))
    with pytest.raises(RuntimeError), SessionLocal.begin() as session:
        session.add(Annotator(name="rolled back"))
        raise RuntimeError("the unit of work fails: nothing of it is kept")
    assert storage.list_annotators(SessionLocal) == ["grace"]
    assert storage.get_or_create_annotator(SessionLocal, " grace ") == storage.get_or_create_annotator(engine, "grace")
    engine.dispose()


# -- databases that are not MarginLab's, or damaged: refused, and left exactly as they were ----------------


def sqlite_files(path: Path) -> dict[str, bytes | None]:
    """The bytes of the database file and of every file SQLite may keep beside it (None: absent)."""
    parts = {}
    for suffix in ("", "-wal", "-shm", "-journal"):
        part = Path(f"{path}{suffix}")
        parts[suffix] = part.read_bytes() if part.exists() else None
    return parts


def other_programs_tables(connection) -> None:
    connection.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
    connection.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, customer INTEGER, total REAL)")
    connection.execute("INSERT INTO customers (name) VALUES ('Ada'), ('Grace')")


def schema_info_without_a_row(connection) -> None:
    connection.execute("CREATE TABLE schema_info (id INTEGER PRIMARY KEY, version INTEGER)")
    connection.execute("CREATE TABLE notes (body TEXT)")


def schema_info_row_without_marginlab_tables(connection) -> None:
    connection.execute("CREATE TABLE schema_info (id INTEGER PRIMARY KEY, version INTEGER)")
    connection.execute("INSERT INTO schema_info VALUES (1, 1)")


@pytest.mark.parametrize(
    "make, expected",
    [
        (other_programs_tables, ["not a MarginLab database", "customers, orders", "no MarginLab schema record"]),
        (schema_info_without_a_row, ["not a MarginLab database", "notes, schema_info"]),
        (schema_info_row_without_marginlab_tables, ["not MarginLab's tables", "datasets"]),
    ],
    ids=["other tables", "schema_info without its row", "schema_info without the tables"],
)
def test_another_programs_sqlite_file_is_refused_without_changing_a_byte(tmp_path, make, expected):
    path = tmp_path / "shop.db"
    with sqlite3.connect(path) as connection:
        make(connection)
    connection.close()
    before = sqlite_files(path)
    assert before[""][18:20] == b"\x01\x01"  # a rollback-journal database

    engine = storage.make_engine(f"sqlite:///{path}")
    with pytest.raises(storage.NotMarginLabDatabaseError) as caught:
        storage.init_db(engine)
    engine.dispose()
    message = str(caught.value)
    for fragment in [*expected, "has not changed it", DATABASE_URL_ENV]:
        assert fragment in message, message
    assert isinstance(caught.value, storage.UnusableDatabaseError)
    assert sqlite_files(path) == before  # not a byte changed: no table added, not switched to WAL


def test_another_programs_postgresql_database_is_refused_and_left_alone(postgresql_database):
    engine = storage.make_engine(postgresql_database)
    try:
        with engine.begin() as connection:
            connection.execute(text("CREATE TABLE customers (id SERIAL PRIMARY KEY, name TEXT)"))
            connection.execute(text("INSERT INTO customers (name) VALUES ('Ada')"))
        with pytest.raises(storage.NotMarginLabDatabaseError, match=r"tables \(customers\) but no MarginLab"):
            storage.init_db(engine)
        with engine.connect() as connection:
            assert inspect(connection).get_table_names() == ["customers"]
            assert connection.execute(text("SELECT name FROM customers")).scalars().all() == ["Ada"]
    finally:
        engine.dispose()


def marginlab_file(path: Path, n_items: int = 3000) -> None:
    """A MarginLab database with a dataset of some hundred kilobytes, a session and labels, all in the file."""
    engine = storage.make_engine(f"sqlite:///{path}")
    storage.init_db(engine)
    X = np.random.default_rng(0).standard_normal((n_items, 12))
    dataset_id = storage.import_dataset(engine, name="big", X=X, feature_names=[f"f{j}" for j in range(12)])
    session_id = storage.start_session(
        engine, dataset_id=dataset_id, annotator="ada", strategy="random", solver="lasvm"
    )
    for item in range(40):
        storage.record_label(engine, session_id, item_index=item, value=1, annotator="ada", strategy="random",
                             solver="lasvm")  # fmt: skip
    engine.dispose()  # the last connection closes: the write-ahead log is copied into the file and removed
    assert not Path(f"{path}-wal").exists()


def random_bytes(path: Path) -> None:
    path.write_bytes(np.random.default_rng(1).bytes(8192))


def csv_text(path: Path) -> None:
    path.write_text("id,name\n1,Ada\n2,Grace\n")


def truncated(path: Path) -> None:
    marginlab_file(path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def cut_inside_the_header(path: Path) -> None:
    marginlab_file(path)
    path.write_bytes(path.read_bytes()[:60])


@pytest.mark.parametrize(
    "make, reason",
    [
        (random_bytes, "not a SQLite database"),
        (csv_text, "not a SQLite database"),
        (truncated, "truncated"),
        (cut_inside_the_header, "not a SQLite database"),
    ],
    ids=["random bytes", "a CSV file", "truncated", "cut inside the header"],
)
def test_a_damaged_or_foreign_file_is_refused_as_corrupt_without_changing_a_byte(tmp_path, make, reason):
    path = tmp_path / "marginlab.db"
    make(path)
    before = sqlite_files(path)
    engine = storage.make_engine(f"sqlite:///{path}")
    with pytest.raises(storage.CorruptDatabaseError) as caught:
        storage.init_db(engine)
    engine.dispose()
    message = str(caught.value)
    for fragment in ["is damaged or is not a MarginLab database", reason, "has not changed it", DATABASE_URL_ENV]:
        assert fragment in message, message
    assert sqlite_files(path) == before


def test_a_damaged_page_found_later_is_reported_as_corrupt(tmp_path):
    path = tmp_path / "marginlab.db"
    marginlab_file(path)
    with sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True) as connection:
        page_size = connection.execute("PRAGMA page_size").fetchone()[0]
        root = connection.execute("SELECT rootpage FROM sqlite_master WHERE name = 'labels'").fetchone()[0]
    connection.close()
    with path.open("r+b") as stream:  # the labels table's first page becomes noise
        stream.seek((root - 1) * page_size)
        stream.write(np.random.default_rng(2).bytes(page_size))

    engine = storage.make_engine(f"sqlite:///{path}")
    storage.init_db(engine)  # the schema and the datasets are intact
    assert [d.name for d in storage.list_datasets(engine)] == ["big"]
    with pytest.raises(storage.CorruptDatabaseError, match="is damaged or is not a MarginLab database") as caught:
        storage.label_events(engine, 1)
    assert "malformed" in str(caught.value)
    engine.dispose()


def test_an_empty_file_becomes_a_new_marginlab_database(tmp_path):
    path = tmp_path / "marginlab.db"
    path.touch()
    engine = storage.make_engine(f"sqlite:///{path}")
    assert storage.init_db(engine) == SCHEMA_VERSION
    assert storage.list_datasets(engine) == []
    with engine.connect() as connection:
        assert connection.execute(text("PRAGMA journal_mode")).scalar() == "wal"
    engine.dispose()


def test_a_new_sqlite_database_is_readable_by_its_owner_only(tmp_path):
    """The file holds every label and the password hashes: created 0600 (its new folder 0700) whatever the
    umask, and its write-ahead log and shared-memory files follow it; an existing file is left as it is."""
    import os
    import stat

    old_umask = os.umask(0o022)  # the usual umask: SQLite alone would create the file world-readable
    try:
        folder = tmp_path / "data"
        path = folder / "marginlab.db"
        engine = storage.make_engine(f"sqlite:///{path}")
        storage.init_db(engine)
        with engine.connect() as connection:
            connection.execute(text("SELECT 1"))
            modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in folder.iterdir()}
        engine.dispose()
        assert modes and set(modes) >= {"marginlab.db", "marginlab.db-wal"}, modes
        assert set(modes.values()) == {0o600}, {name: oct(mode) for name, mode in modes.items()}
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        shared = tmp_path / "shared.db"
        shared.touch(mode=0o640)
        os.chmod(shared, 0o640)
        storage.make_engine(f"sqlite:///{shared}").dispose()
        assert stat.S_IMODE(shared.stat().st_mode) == 0o640  # the owner's choice for an existing file
    finally:
        os.umask(old_umask)
