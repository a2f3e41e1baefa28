"""Exports: labelled items with provenance as CSV or JSONL (written by ``storage.export``)."""

from __future__ import annotations

import datetime as dt
import re
import unicodedata

from app.services.common import ServiceError
from app.services.datasets import Datasets
from app.services.errors import service_boundary
from storage import repository as repo


@service_boundary
class Exports:
    """Exports: ``MarginLab.exports`` (a session's model state is ``LabellingRun.model_state``)."""

    def __init__(self, engine, datasets: Datasets):
        self.engine, self.datasets = engine, datasets

    def annotators(self) -> list[str]:
        return repo.list_annotators(self.engine)

    def export_file_name(
        self,
        extension: str,
        *,
        dataset_id: int | None = None,
        session_id: int | None = None,
        today: dt.date | None = None,
    ) -> str:
        """The name of an export file: the dataset (every dataset when None), the session when one is
        chosen, and the date, e.g. ``digits-8-vs-rest-session-3-2026-11-28.csv``; letters, digits, dots,
        dashes and underscores only (a safe file name on every system)."""
        dataset = self.datasets.dataset(dataset_id).name if dataset_id is not None else "every-dataset"
        parts = [file_name_safe(dataset) or f"dataset-{dataset_id}"]
        if session_id is not None:
            parts.append(f"session-{int(session_id)}")
        parts.append((today or dt.date.today()).isoformat())
        return "-".join(parts) + "." + extension

    def export_labels(
        self,
        fmt: str,
        *,
        session_id: int | None = None,
        annotator: str | None = None,
        dataset_id: int | None = None,
        include_skips: bool = False,
        include_features: bool | None = True,
    ) -> bytes:
        """Labelled items with provenance as CSV or JSONL bytes (``storage.export``; ``include_features``
        None: the feature values of datasets stored dense only, not the terms of documents)."""
        from storage.export import export_labels

        out = export_labels(
            self.engine,
            fmt=fmt,
            session_id=session_id,
            annotator=annotator or None,
            dataset_id=dataset_id,
            include_skips=include_skips,
            include_features=include_features,
        )
        if isinstance(out, str):
            return out.encode("utf-8")
        if isinstance(out, bytes):
            return out
        if hasattr(out, "getvalue"):
            value = out.getvalue()
            return value.encode("utf-8") if isinstance(value, str) else value
        raise ServiceError(f"unexpected export result {type(out).__name__}")


def file_name_safe(text: str, limit: int = 60) -> str:
    """``text`` as part of a file name: runs of anything but ASCII letters, digits, dots, dashes and
    underscores become one dash (accents are dropped: é -> e); no leading or trailing dot or dash; at most
    ``limit`` characters."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[^A-Za-z0-9._-]+", "-", ascii_text)[:limit].strip("-.")
