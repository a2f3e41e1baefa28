"""What the Data and Sessions pages need of reading data files: the bundled datasets, the missing-value
policies, the delimiters' names, and ``DataError`` (a file that cannot be read, or a bundled set refused).

Importing it loads the CSV reader (``core.datasets``); the pages that read files import it, the others
do not.
"""

from __future__ import annotations

from app.services.errors import REFUSED
from core.datasets import BUNDLED, MISSING_POLICIES, DataError
from core.features import DELIMITER_NAMES

#: an import refused: the file (or the bundled set) could not be read, or the service or storage refused it
IMPORT_REFUSED = (DataError, *REFUSED)

__all__ = ["BUNDLED", "DELIMITER_NAMES", "IMPORT_REFUSED", "MISSING_POLICIES", "DataError"]
