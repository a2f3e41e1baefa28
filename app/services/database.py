"""What a page says when the database cannot be opened or used.

Storage refuses another program's database, a damaged file and a newer schema
before it changes anything (``storage.engine.init_db``); its messages name a
SQLite file by its name only, so they can be shown as they are.
"""

from __future__ import annotations

from app.services.common import ServiceError, database_trouble
from storage.engine import DATABASE_URL_ENV
from storage.errors import UnusableDatabaseError


def database_problem(error: Exception) -> str:
    """The message for a database that cannot be opened or used (for the page, without server paths)."""
    if isinstance(error, ServiceError | UnusableDatabaseError):
        return str(error)
    return (f"The database cannot be used: {database_trouble(error)}. Restore it from a backup, or set "
            f"{DATABASE_URL_ENV} to another database.")
