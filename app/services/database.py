"""What a page says when the database cannot be opened or used, and which database the app opens.

Storage refuses another program's database, a damaged file and a newer schema
before it changes anything (``storage.engine.init_db``); its messages name a
SQLite file by its name only, so they can be shown as they are.
"""

from __future__ import annotations

from sqlalchemy.exc import InterfaceError, OperationalError

from app.services.common import ServiceError, database_trouble
from storage.engine import DATABASE_URL_ENV
from storage.engine import database_url as database_url  # the app's database ($MARGINLAB_DATABASE_URL)
from storage.errors import StorageError


def database_problem(error: Exception) -> str:
    """The message for a database that cannot be opened or used (for the page, without server paths)."""
    if isinstance(error, ServiceError | StorageError):  # the service's and storage's own words
        return str(error)
    trouble = database_trouble(error)
    if isinstance(error, OperationalError | InterfaceError):
        # the server went away or restarts, the disk is full, a lock was held too long: it passes
        space = "; free some disk space first" if "full" in trouble.lower() else ""
        return (
            f"The database could not be used just now ({trouble}). Everything saved before is kept, and "
            f"nothing half-done was stored. Try again in a moment{space}."
        )
    return (
        f"The database cannot be used: {trouble}. Restore it from a backup, or set "
        f"{DATABASE_URL_ENV} to another database."
    )
