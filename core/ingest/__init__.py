"""Data import: a CSV file into a :class:`core.datasets.Dataset`, one module a step.

``options`` (:class:`CsvOptions`, every choice of an import), ``reading`` (bytes within bounds, UTF-8
text, delimiter and decimal separator, a table of text cells), ``columns`` (which column is what),
``missing`` (missing values refused or their rows left out), ``numeric`` (numeric features and one-hot
columns), ``labels`` (y in {-1, +1}), ``molecules`` (SMILES as fingerprints), ``text`` (TF-IDF blocks)
and ``assembly`` (the matrix, what is shown of each item, keys, the options to import again).
:func:`load` runs them in that order; :func:`core.datasets.load_csv` takes the options as parameters.
"""

from core.ingest.assembly import load
from core.ingest.errors import DataError, DataTooLarge, NotText
from core.ingest.options import CHOICE_WORDS, MAX_FEATURE_VALUE, MISSING_POLICIES, ONE_HOT_MAX, CsvOptions

__all__ = [
    "CHOICE_WORDS",
    "MAX_FEATURE_VALUE",
    "MISSING_POLICIES",
    "ONE_HOT_MAX",
    "CsvOptions",
    "DataError",
    "DataTooLarge",
    "NotText",
    "load",
]
