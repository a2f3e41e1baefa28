"""MarginLab storage: the whole labelling state in one SQLAlchemy database.

Typical use, once per process::

    from storage import make_engine, init_db
    engine = make_engine()          # $MARGINLAB_DATABASE_URL or the user's data folder
    init_db(engine)

then call the repository functions with that engine; each runs its own short
transaction and returns plain values.
"""

from storage.engine import (
    DATABASE_URL_ENV,
    database_url,
    init_db,
    make_engine,
    make_sessionmaker,
    schema_version,
)
from storage.errors import (
    CorruptDatabaseError,
    DatasetValidationError,
    DuplicateDatasetError,
    DuplicateLabelError,
    InvalidLabelError,
    NotFoundError,
    NotMarginLabDatabaseError,
    SchemaVersionError,
    SessionClosedError,
    StorageError,
    UnusableDatabaseError,
)
from storage.export import EXPORT_FORMATS, export_labels
from storage.importing import import_csv, import_labelled_export, import_loaded_dataset
from storage.models import SCHEMA_VERSION
from storage.repository import (
    Comparison,
    ComparisonInfo,
    DatasetInfo,
    DisplayInfo,
    LabelEvent,
    SessionInfo,
    Snapshot,
    close_session,
    delete_dataset,
    get_dataset,
    get_or_create_annotator,
    get_session,
    import_dataset,
    label_events,
    labelled_items,
    latest_snapshot,
    list_annotators,
    list_comparisons,
    list_datasets,
    list_sessions,
    load_comparison,
    load_dataset_arrays,
    record_label,
    reopen_session,
    save_comparison,
    save_snapshot,
    start_session,
    undo_last_label,
    update_dataset_meta,
)

__all__ = [
    "DATABASE_URL_ENV",
    "EXPORT_FORMATS",
    "SCHEMA_VERSION",
    "Comparison",
    "ComparisonInfo",
    "CorruptDatabaseError",
    "DatasetInfo",
    "DatasetValidationError",
    "DisplayInfo",
    "DuplicateDatasetError",
    "DuplicateLabelError",
    "InvalidLabelError",
    "LabelEvent",
    "NotFoundError",
    "NotMarginLabDatabaseError",
    "SchemaVersionError",
    "SessionClosedError",
    "SessionInfo",
    "Snapshot",
    "StorageError",
    "UnusableDatabaseError",
    "close_session",
    "database_url",
    "delete_dataset",
    "export_labels",
    "get_dataset",
    "get_or_create_annotator",
    "get_session",
    "import_csv",
    "import_dataset",
    "import_labelled_export",
    "import_loaded_dataset",
    "init_db",
    "label_events",
    "labelled_items",
    "latest_snapshot",
    "list_annotators",
    "list_comparisons",
    "list_datasets",
    "list_sessions",
    "load_comparison",
    "load_dataset_arrays",
    "update_dataset_meta",
    "make_engine",
    "make_sessionmaker",
    "record_label",
    "reopen_session",
    "save_comparison",
    "save_snapshot",
    "schema_version",
    "start_session",
    "undo_last_label",
]
