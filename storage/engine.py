"""Database URL, engine and schema-version handling.

This is the only module that knows which database is behind the URL. SQLite
gets foreign keys, write-ahead logging and a busy timeout on every new
connection, and transactions that are going to write take the write lock up
front (``BEGIN IMMEDIATE``) so that concurrent writers wait for each other
instead of failing with "database is locked". Any other SQLAlchemy URL (for
example PostgreSQL) is used as it is.

Use one engine per process (``make_engine``), created after any fork, and one
short session per unit of work::

    engine = make_engine()
    init_db(engine)
    SessionLocal = make_sessionmaker(engine)
    with SessionLocal.begin() as session:
        ...
"""

from __future__ import annotations

import os
import random
import sqlite3
import time
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, inspect, select
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

from storage.errors import SchemaVersionError
from storage.models import SCHEMA_VERSION, Base, SchemaInfo

DATABASE_URL_ENV = "MARGINLAB_DATABASE_URL"
SQLITE_SYNCHRONOUS_ENV = "MARGINLAB_SQLITE_SYNCHRONOUS"
DATABASE_FILENAME = "marginlab.db"

#: milliseconds a SQLite connection waits for another writer before giving up
SQLITE_BUSY_TIMEOUT_MS = 60_000

#: accepted values of ``make_engine(sqlite_synchronous=...)``
SQLITE_SYNCHRONOUS_MODES = ("FULL", "EXTRA", "NORMAL")

#: execution option marking a transaction that will write (see ``writer``)
WRITE_OPTION = "marginlab_writes"


def default_data_dir() -> Path:
    """The per-user data folder (XDG on Linux), created if missing."""
    from platformdirs import user_data_dir

    folder = Path(user_data_dir("marginlab", appauthor=False))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def database_url() -> str:
    """The database URL: ``$MARGINLAB_DATABASE_URL`` or a SQLite file in the data folder."""
    url = os.environ.get(DATABASE_URL_ENV, "").strip()
    if url:
        return url
    return f"sqlite:///{default_data_dir() / DATABASE_FILENAME}"


def is_sqlite(engine_or_url: Engine | str) -> bool:
    if isinstance(engine_or_url, Engine):
        return engine_or_url.dialect.name == "sqlite"
    return make_url(engine_or_url).get_backend_name() == "sqlite"


def make_engine(url: str | None = None, *, sqlite_synchronous: str | None = None, **engine_kwargs: Any) -> Engine:
    """Create the process's engine for ``url`` (default: ``database_url()``).

    ``sqlite_synchronous`` (default ``$MARGINLAB_SQLITE_SYNCHRONOUS`` or
    ``FULL``): with ``FULL`` every commit that returned survives a power cut
    (one fsync per commit); ``NORMAL`` survives any crash of the process but
    may lose the last commits on a power cut or OS crash, for a faster commit.
    """
    url = url or database_url()
    sqlite_synchronous = (sqlite_synchronous or os.environ.get(SQLITE_SYNCHRONOUS_ENV) or "FULL").strip()
    if sqlite_synchronous.upper() not in SQLITE_SYNCHRONOUS_MODES:
        raise ValueError(
            f"sqlite_synchronous ({SQLITE_SYNCHRONOUS_ENV}) must be one of {', '.join(SQLITE_SYNCHRONOUS_MODES)}, "
            f"not {sqlite_synchronous!r}"
        )
    if not is_sqlite(url):
        engine_kwargs.setdefault("pool_pre_ping", True)
        return create_engine(url, **engine_kwargs)

    database = make_url(url).database
    if database and database != ":memory:" and not database.startswith("file:"):
        Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url, **engine_kwargs)
    _configure_sqlite(engine, sqlite_synchronous.upper())
    return engine


def _configure_sqlite(engine: Engine, synchronous: str) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # SQLAlchemy emits BEGIN itself (see _on_begin); the driver must not.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
            cursor.execute("PRAGMA foreign_keys = ON")
            cursor.execute("PRAGMA journal_mode = WAL")
            cursor.execute(f"PRAGMA synchronous = {synchronous}")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        if connection.get_execution_options().get(WRITE_OPTION):
            _begin_immediate(connection.connection.driver_connection)
        else:
            connection.exec_driver_sql("BEGIN")


def _begin_immediate(dbapi_connection: Any) -> None:
    """Start a write transaction, taking SQLite's write lock up front.

    Taking the lock at BEGIN means a writer never has to upgrade a read
    snapshot later (which fails at once with "database is locked"). While
    another process holds the lock we poll with short randomized waits instead
    of SQLite's busy handler, whose waits grow to 100 ms and let a busy writer
    starve the others for seconds; we give up only after the busy timeout.
    """
    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_MS / 1000
    longest_wait = 0.0005
    dbapi_connection.execute("PRAGMA busy_timeout = 0")
    try:
        while True:
            try:
                dbapi_connection.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as error:
                if "locked" not in str(error) and "busy" not in str(error):
                    raise
                if time.monotonic() >= deadline:
                    raise
            time.sleep(random.uniform(0.0, longest_wait))
            longest_wait = min(longest_wait * 2, 0.004)
    finally:
        dbapi_connection.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")


def writer(engine: Engine) -> Engine:
    """A view of ``engine`` whose transactions are marked as writing.

    On SQLite they start with ``BEGIN IMMEDIATE``; elsewhere the mark is ignored.
    """
    if engine.get_execution_options().get(WRITE_OPTION):
        return engine
    return engine.execution_options(**{WRITE_OPTION: True})


def make_sessionmaker(engine: Engine, *, writes: bool = True) -> sessionmaker[Session]:
    """A sessionmaker for short units of work (``with SessionLocal.begin() as s:``).

    ``writes=True`` (the default) makes each transaction take the write lock at
    its start on SQLite, which is what a unit of work that writes wants.
    """
    bind = writer(engine) if writes else engine
    return sessionmaker(bind=bind, expire_on_commit=False)


def schema_version(engine: Engine) -> int | None:
    """The schema version recorded in the database, or None for an empty database."""
    with engine.connect() as connection:
        if not inspect(connection).has_table(SchemaInfo.__tablename__):
            return None
        return connection.execute(select(SchemaInfo.version)).scalar()


def init_db(engine: Engine) -> int:
    """Create missing tables and record/check the schema version; return it.

    Raises ``SchemaVersionError`` (before changing anything) when the database
    was written by a newer MarginLab.
    """
    with writer(engine).begin() as connection:
        recorded: int | None = None
        if inspect(connection).has_table(SchemaInfo.__tablename__):
            recorded = connection.execute(select(SchemaInfo.version)).scalar()
        if recorded is not None and recorded > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"The database {_describe(engine)} has schema version {recorded}, "
                f"but this MarginLab understands only up to version {SCHEMA_VERSION}. "
                "It was written by a newer MarginLab: upgrade MarginLab, or point "
                f"{DATABASE_URL_ENV} at another database."
            )
        if recorded is not None and recorded < SCHEMA_VERSION:
            raise SchemaVersionError(
                f"The database {_describe(engine)} has schema version {recorded} and "
                f"this MarginLab needs version {SCHEMA_VERSION}; no migration from "
                f"version {recorded} exists."
            )
        Base.metadata.create_all(connection)
        if recorded is None:
            connection.execute(SchemaInfo.__table__.insert().values(id=1, version=SCHEMA_VERSION))
    return SCHEMA_VERSION


def _describe(engine: Engine) -> str:
    return engine.url.render_as_string(hide_password=True)
