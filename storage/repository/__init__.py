"""Repository functions: one short transaction per call, in a module per thing stored.

Every function takes the process's engine (or a sessionmaker bound to it),
opens its own transaction, and returns plain values: small frozen dataclasses,
dicts and numpy arrays, never ORM objects that would need a live session.
When a function that writes returns, its transaction has been committed.
The public names are re-exported by the ``storage`` package (see its ``__all__``)
and importable from here as they always were (``from storage import repository as repo``).

- ``common``: the transactions (``reading``, ``writing``) and the checks of stored values;
- ``datasets``: import, metadata, feature matrices and rows, deletion;
- ``annotators``: the names that give labels;
- ``sessions``: labelling sessions, their status and settings;
- ``labels``: record, undo, and the events of a session;
- ``snapshots``: model states kept to resume a session quickly;
- ``comparisons``: stored strategy comparisons.
"""

from __future__ import annotations

from storage.repository.annotators import (
    get_or_create_annotator,
    list_annotators,
)
from storage.repository.common import (
    EngineLike,
    as_engine,
    reading,
    writing,
)
from storage.repository.comparisons import (
    Comparison,
    ComparisonInfo,
    list_comparisons,
    load_comparison,
    save_comparison,
)
from storage.repository.datasets import (
    FEATURE_CHUNK_BYTES,
    DatasetInfo,
    DisplayInfo,
    delete_dataset,
    get_dataset,
    import_dataset,
    list_datasets,
    load_dataset_arrays,
    load_feature_rows,
    stored_features,
    update_dataset_meta,
)
from storage.repository.labels import (
    EVENT_LABEL_FIELDS,
    LabelEvent,
    current_value,
    events_query,
    label_events,
    labelled_items,
    record_label,
    undo_last_label,
)
from storage.repository.sessions import (
    SessionInfo,
    close_session,
    delete_session,
    get_session,
    list_sessions,
    reopen_session,
    set_session_setting,
    start_session,
)
from storage.repository.snapshots import (
    SNAPSHOTS_KEPT,
    Snapshot,
    latest_snapshot,
    save_snapshot,
)

__all__ = [
    "Comparison",
    "ComparisonInfo",
    "DatasetInfo",
    "DisplayInfo",
    "EVENT_LABEL_FIELDS",
    "EngineLike",
    "FEATURE_CHUNK_BYTES",
    "LabelEvent",
    "SNAPSHOTS_KEPT",
    "SessionInfo",
    "Snapshot",
    "as_engine",
    "close_session",
    "current_value",
    "delete_dataset",
    "delete_session",
    "events_query",
    "get_dataset",
    "get_or_create_annotator",
    "get_session",
    "import_dataset",
    "label_events",
    "labelled_items",
    "latest_snapshot",
    "list_annotators",
    "list_comparisons",
    "list_datasets",
    "list_sessions",
    "load_comparison",
    "load_dataset_arrays",
    "load_feature_rows",
    "reading",
    "record_label",
    "reopen_session",
    "save_comparison",
    "save_snapshot",
    "set_session_setting",
    "start_session",
    "stored_features",
    "undo_last_label",
    "update_dataset_meta",
    "writing",
]
