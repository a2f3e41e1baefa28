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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, inspect, select, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker

from storage.errors import CorruptDatabaseError, NotMarginLabDatabaseError, SchemaVersionError
from storage.models import SCHEMA_VERSION, SchemaInfo

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
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
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
        _create_private(Path(database).expanduser())
    engine = create_engine(url, **engine_kwargs)
    _configure_sqlite(engine, sqlite_synchronous.upper())
    return engine


def _create_private(path: Path) -> None:
    """Create a new SQLite file readable and writable by its owner only (0600; its folder, when new, 0700).

    SQLite would create it with the process's umask, world-readable under the usual 022; its journal
    and write-ahead log take the database file's permissions. An existing file is left as it is."""
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except OSError:  # there already, or not creatable here: SQLite opens it or says why it cannot
        pass


def _configure_sqlite(engine: Engine, synchronous: str) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # SQLAlchemy emits BEGIN itself (see _on_begin); the driver must not.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
            cursor.execute("PRAGMA foreign_keys = ON")
            # none of these writes to the file; init_db switches a MarginLab database to WAL once
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
    another process holds the lock we poll (``_retry_while_locked``) instead
    of SQLite's busy handler, whose waits grow to 100 ms and let a busy writer
    starve the others for seconds.
    """
    dbapi_connection.execute("PRAGMA busy_timeout = 0")
    try:
        _retry_while_locked(lambda: dbapi_connection.execute("BEGIN IMMEDIATE"))
    finally:
        dbapi_connection.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")


def _retry_while_locked(attempt: Callable[[], Any]) -> None:
    """Run ``attempt`` until SQLite no longer answers "database is locked" (or busy), with short
    randomized waits between tries; re-raise once the busy timeout has passed."""
    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_MS / 1000
    longest_wait = 0.0005
    while True:
        try:
            attempt()
            return
        except sqlite3.OperationalError as error:
            if ("locked" not in str(error) and "busy" not in str(error)) or time.monotonic() >= deadline:
                raise
        time.sleep(random.uniform(0.0, longest_wait))
        longest_wait = min(longest_wait * 2, 0.004)


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
    """Make the database a MarginLab database at the newest schema; return its schema version.

    An empty database (a new or empty SQLite file, an empty PostgreSQL
    database) gets every table; a MarginLab database from an older version is
    migrated (Alembic, ``storage.migrations``), all in one transaction. Before
    anything is written, and then without changing a byte, it raises:

    - ``CorruptDatabaseError`` for a damaged, truncated or non-database file;
    - ``NotMarginLabDatabaseError`` for a database with tables but no MarginLab schema;
    - ``SchemaVersionError`` for a database written by a newer MarginLab.

    A SQLite file is switched to write-ahead logging only once it is known to be MarginLab's.
    """
    from storage import migrations  # Alembic loads where a database is opened, not in every process using one

    try:
        if is_sqlite(engine):
            _refuse_damaged_sqlite_file(engine)
        with engine.connect() as connection:  # a look that writes nothing
            _marginlab_state(connection, engine)
        if is_sqlite(engine):
            _use_write_ahead_log(engine)
        with writer(engine).begin() as connection:
            if connection.dialect.name == "postgresql":
                # processes starting together on an empty database create the tables once, one after the other
                connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK_KEY})
            state = _marginlab_state(connection, engine)
            if state.recorded is not None and state.revision is None:
                migrations.stamp_baseline(connection)  # created before migrations: schema version 1
            migrations.upgrade_to_head(connection)
    except DBAPIError as error:
        corrupt = corruption_error(engine, error)
        if corrupt is None:
            raise
        raise corrupt from error
    return SCHEMA_VERSION


#: key of the PostgreSQL advisory lock that init_db holds while it migrates
MIGRATION_LOCK_KEY = 0x4D4C_0001


@dataclass(frozen=True)
class _State:
    recorded: int | None  # schema_info.version, None for an empty database
    revision: str | None  # alembic_version, None before migrations or for an empty database


def _marginlab_state(connection: Connection, engine: Engine) -> _State:
    """What ``init_db`` finds; raises (having changed nothing) for a database it must not touch."""
    from storage import migrations

    tables = set(inspect(connection).get_table_names())
    if not tables:
        return _State(recorded=None, revision=None)
    where = _describe(engine)
    recorded = None
    if SchemaInfo.__tablename__ in tables:
        columns = {column["name"] for column in inspect(connection).get_columns(SchemaInfo.__tablename__)}
        if {"id", "version"} <= columns:
            recorded = connection.execute(select(SchemaInfo.version).where(SchemaInfo.id == 1)).scalar()
    if not isinstance(recorded, int):
        shown = ", ".join(sorted(tables)[:8]) + (", …" if len(tables) > 8 else "")
        raise NotMarginLabDatabaseError(
            f"The database {where} is not a MarginLab database: it has tables ({shown}) but no MarginLab "
            f"schema record. MarginLab has not changed it. Point {DATABASE_URL_ENV} at a new file or an "
            "empty database."
        )
    revision = migrations.current_revision(connection) if "alembic_version" in tables else None
    if recorded > SCHEMA_VERSION or (revision is not None and migrations.schema_version_of(revision) is None):
        raise SchemaVersionError(
            f"The database {where} has schema version {recorded}"
            + (f" (revision {revision})" if revision else "")
            + f", but this MarginLab understands only up to version {SCHEMA_VERSION}. "
            "It was written by a newer MarginLab: upgrade MarginLab, or point "
            f"{DATABASE_URL_ENV} at another database."
        )
    if recorded not in migrations.known_schema_versions():
        raise SchemaVersionError(
            f"The database {where} has schema version {recorded} and "
            f"this MarginLab needs version {SCHEMA_VERSION}; no migration from "
            f"version {recorded} exists."
        )
    if revision is None:
        missing = [table for table in migrations.baseline_tables() if table not in tables]
        if recorded != 1 or missing:
            raise NotMarginLabDatabaseError(
                f"The database {where} has a MarginLab schema record (version {recorded}) but not "
                f"MarginLab's tables{' (' + ', '.join(missing) + ' missing)' if missing else ''}. "
                f"MarginLab has not changed it. Point {DATABASE_URL_ENV} at a new file or an empty database."
            )
    return _State(recorded=recorded, revision=revision)


# --------------------------------------------------------------------------- damaged databases

SQLITE_HEADER = b"SQLite format 3\x00"
#: result codes (low byte) of a damaged file or one that is not a database
SQLITE_CORRUPT, SQLITE_NOTADB = 11, 26
#: SQLSTATEs of data or an index PostgreSQL found damaged
POSTGRESQL_CORRUPTION_STATES = ("XX001", "XX002")


def _sqlite_file(engine: Engine) -> Path | None:
    database = engine.url.database
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return Path(database).expanduser()


def _refuse_damaged_sqlite_file(engine: Engine) -> None:
    """Raise ``CorruptDatabaseError`` for a file that is not a SQLite database or is shorter than its header says.

    Reads the first 100 bytes only. A truncated database would otherwise
    open, and fail later on the first page past the cut. The length is not
    checked while a write-ahead log holds pages the file has yet to receive.
    """
    path = _sqlite_file(engine)
    if path is None or not path.is_file():
        return
    size = path.stat().st_size
    if size == 0:
        return  # a new, empty file
    with path.open("rb") as stream:
        header = stream.read(100)
    where = _describe(engine)
    if len(header) < 100 or not header.startswith(SQLITE_HEADER):
        raise _corrupt(where, "it is not a SQLite database (its first bytes are not a SQLite header)")
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    change_counter, page_count, valid_for = header[24:28], int.from_bytes(header[28:32], "big"), header[92:96]
    wal = Path(f"{path}-wal")
    wal_pending = wal.is_file() and wal.stat().st_size > 0
    if change_counter == valid_for and not wal_pending and size < page_count * page_size:
        raise _corrupt(
            where,
            f"it is truncated: its header counts {page_count} pages of {page_size} bytes "
            f"({page_count * page_size} bytes) but the file has {size} bytes",
        )


def corruption_error(engine: Engine, error: DBAPIError) -> CorruptDatabaseError | None:
    """A ``CorruptDatabaseError`` for a driver error that says the database is damaged, else None."""
    original = error.orig
    code = getattr(original, "sqlite_errorcode", None)
    if isinstance(code, int) and code & 0xFF in (SQLITE_CORRUPT, SQLITE_NOTADB):
        return _corrupt(_describe(engine), f"the database engine says: {original}")
    if getattr(original, "sqlstate", None) in POSTGRESQL_CORRUPTION_STATES:
        return _corrupt(_describe(engine), f"the database server says: {original}")
    return None


def _corrupt(where: str, why: str) -> CorruptDatabaseError:
    return CorruptDatabaseError(
        f"The database {where} is damaged or is not a MarginLab database: {why}. "
        f"MarginLab has not changed it. Restore it from a backup, or point {DATABASE_URL_ENV} at another database."
    )


def _use_write_ahead_log(engine: Engine) -> None:
    """Switch a SQLite database to write-ahead logging; it stays so for every later connection."""
    with engine.connect() as connection:
        # on the driver's connection, outside a transaction (the mode cannot change inside one)
        dbapi_connection = connection.connection.driver_connection
        assert dbapi_connection is not None, "an open connection has its driver's connection"
        if dbapi_connection.execute("PRAGMA journal_mode").fetchone()[0].lower() == "wal":
            return
        # The change needs the database to itself, and while another process is opening it too
        # SQLite can answer "database is locked" at once, without its busy handler: retry.
        _retry_while_locked(lambda: dbapi_connection.execute("PRAGMA journal_mode = WAL").fetchone())


def _describe(engine: Engine) -> str:
    """How a message names the database: a SQLite file by its name only (no server path reaches a page)."""
    url = engine.url
    if url.get_backend_name() == "sqlite":
        return f"file '{Path(url.database).name}'" if url.database and url.database != ":memory:" else "in memory"
    where = f"'{url.database}'" if url.database else "(default database)"
    return f"{where} on {url.host}" if url.host else where
