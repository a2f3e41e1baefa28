"""The errors a page catches from the service, as the service names them.

A call refuses with a message for the person (``ServiceError``: a check of the service; storage's own
error: a name taken, a session closed meanwhile, a dataset gone), or the database fails under it (a server
restarting, a full disk, a damaged page).  The pages catch these tuples rather than storage's classes.
"""

from __future__ import annotations

from sqlalchemy.exc import SQLAlchemyError

from app.services.common import ServiceError
from storage.errors import StorageError

#: refused, with a message for the person who asked
REFUSED = (ServiceError, StorageError)
#: refused, or the database failed
DATABASE_FAILED = (ServiceError, StorageError, SQLAlchemyError)

__all__ = ["DATABASE_FAILED", "REFUSED", "ServiceError"]
