"""What the Data page needs of reading data files: the bundled datasets, the missing-value policies and
the delimiters' names (a file that cannot be read is a ``ServiceError``, as every refusal: ``errors``).

Importing it loads the CSV reader (``core.datasets``); the pages that read files import it, the others
do not.
"""

from __future__ import annotations

from core.datasets import BUNDLED, MISSING_POLICIES
from core.features import DELIMITER_NAMES

__all__ = ["BUNDLED", "DELIMITER_NAMES", "MISSING_POLICIES"]
