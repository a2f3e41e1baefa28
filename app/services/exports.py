"""Exports: labelled items with provenance as CSV or JSONL (written by ``storage.export``)."""

from __future__ import annotations

from app.services.common import ServiceError
from storage import repository as repo


class Exports:
    """The export part of ``MarginLab`` (a session's model state is ``LabellingRun.model_state``)."""

    def annotators(self) -> list[str]:
        return repo.list_annotators(self.engine)

    def export_labels(self, fmt: str, *, session_id: int | None = None, annotator: str | None = None,
                      dataset_id: int | None = None, include_skips: bool = False,
                      include_features: bool | None = True) -> bytes:
        """Labelled items with provenance as CSV or JSONL bytes (``storage.export``; ``include_features``
        None: the feature values of datasets stored dense only, not the terms of documents)."""
        from storage.export import export_labels

        out = export_labels(self.engine, fmt=fmt, session_id=session_id, annotator=annotator or None,
                            dataset_id=dataset_id, include_skips=include_skips, include_features=include_features)
        if isinstance(out, str):
            return out.encode("utf-8")
        if isinstance(out, bytes):
            return out
        if hasattr(out, "getvalue"):
            value = out.getvalue()
            return value.encode("utf-8") if isinstance(value, str) else value
        raise ServiceError(f"unexpected export result {type(out).__name__}")
