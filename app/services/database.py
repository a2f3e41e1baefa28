"""Opening the database: a file that is not MarginLab's is refused before anything touches it.

Opening a SQLite file through the storage engine already changes it (write-ahead
logging is switched on) and creating MarginLab's tables changes it more; so an
existing file is first read through a read-only connection: a file that is not
SQLite at all, or a SQLite database of another program (tables, none of them
MarginLab's), is refused with a message and left exactly as it was.
"""

from __future__ import annotations

import logging
import sqlite3
from contextlib import closing
from pathlib import Path

from sqlalchemy.engine import make_url

from app.services.common import ServiceError, database_trouble
from storage.engine import DATABASE_URL_ENV, is_sqlite
from storage.models import SchemaInfo

logger = logging.getLogger(__name__)

#: at most this many of another program's tables are named in the refusal
TABLES_NAMED = 5


class DatabaseRefusedError(ServiceError):
    """The database is not MarginLab's, or cannot be read at all; it was left as it was."""


def sqlite_file(url: str) -> Path | None:
    """The existing, non-empty SQLite file behind ``url``; None for other databases and new files."""
    if not is_sqlite(url):
        return None
    database = make_url(url).database
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    path = Path(database).expanduser()
    return path if path.is_file() and path.stat().st_size > 0 else None


def refuse_foreign_database(url: str) -> None:
    """Raise ``DatabaseRefusedError`` unless ``url`` is new, not SQLite, or a MarginLab database."""
    path = sqlite_file(url)
    if path is None:
        return
    try:
        with closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as connection:
            tables = [row[0] for row in connection.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")]
    except sqlite3.Error as error:
        logger.error("the database %s cannot be read: %s", path, error)
        raise DatabaseRefusedError(
            f"The database file '{path.name}' is not a SQLite database, or it is damaged "
            f"({database_trouble(error)}). MarginLab has not changed it. Restore it from a backup, or set "
            f"{DATABASE_URL_ENV} to another file.") from None
    if tables and SchemaInfo.__tablename__ not in tables:
        named = ", ".join(tables[:TABLES_NAMED]) + (", …" if len(tables) > TABLES_NAMED else "")
        logger.error("the database %s is not MarginLab's (tables: %s)", path, ", ".join(tables))
        raise DatabaseRefusedError(
            f"The database file '{path.name}' belongs to another program (its tables: {named}). MarginLab has "
            f"not changed it. Set {DATABASE_URL_ENV} to a MarginLab database or to a new file.")


def database_problem(error: Exception) -> str:
    """The message for a database that cannot be opened or used (for the page, without server paths)."""
    if isinstance(error, ServiceError):
        return str(error)
    return (f"The database cannot be used: {database_trouble(error)}. Restore it from a backup, or set "
            f"{DATABASE_URL_ENV} to another database.")
