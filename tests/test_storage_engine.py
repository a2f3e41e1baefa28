"""Storage engine: URL from the environment, SQLite settings, schema version, portability."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest
from sqlalchemy import text, update
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
        (SCHEMA_VERSION - 1, [f"needs version {SCHEMA_VERSION}", "no migration"]),
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
