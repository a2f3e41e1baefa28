"""Exceptions raised by the storage layer.

Every message is written for the person using the app: it says what is wrong
and, where it applies, which row, column, item or session is involved.
"""

from __future__ import annotations


class StorageError(Exception):
    """Base class for every error the storage layer raises on purpose."""


class UnusableDatabaseError(StorageError):
    """The database cannot be opened as a MarginLab database; it was left exactly as it was."""


class SchemaVersionError(UnusableDatabaseError):
    """The database file was written by a different (usually newer) MarginLab."""


class NotMarginLabDatabaseError(UnusableDatabaseError):
    """The database holds tables, but not a MarginLab schema (another program's database)."""


class CorruptDatabaseError(UnusableDatabaseError):
    """The database file is damaged, truncated, or not a database at all."""


class NotFoundError(StorageError, LookupError):
    """A dataset, session, item or comparison that does not exist was asked for."""


class DatasetValidationError(StorageError, ValueError):
    """Input data is malformed; the message names the row and/or column."""


class DuplicateDatasetError(StorageError):
    """The same content was already imported; ``dataset_id`` is the existing one."""

    def __init__(self, message: str, dataset_id: int) -> None:
        super().__init__(message)
        self.dataset_id = dataset_id


class DuplicateLabelError(StorageError):
    """The item already has an active label in the session (e.g. a double submit)."""

    def __init__(self, message: str, *, session_id: int, item_index: int | None, label_id: int | None) -> None:
        super().__init__(message)
        self.session_id = session_id
        self.item_index = item_index
        self.label_id = label_id


class InvalidLabelError(StorageError, ValueError):
    """A label value or item index that cannot be recorded."""


class SessionClosedError(StorageError):
    """A label was recorded or undone in a session that has been closed."""
