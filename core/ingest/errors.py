"""The errors of data import: what is wrong with the input, and where."""

from __future__ import annotations


class DataError(ValueError):
    """Input data that cannot be used, with a message naming what is wrong and where."""


class NotText(DataError):
    """A file that is not UTF-8 text (a binary file, or text in another encoding): refused before it is parsed."""


class DataTooLarge(DataError):
    """A CSV beyond ``MAX_CSV_BYTES``, ``MAX_COLUMNS`` or ``MAX_CELLS``: refused before it is parsed."""
