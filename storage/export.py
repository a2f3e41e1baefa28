"""Export labelled items to CSV / JSON Lines.

An export row is one active label: the item (index, key, display text), its
features (one column per feature name), the label under the dataset's own
class name (``label``, e.g. ``malignant``; ``positive`` / ``negative`` for a
dataset imported without a label column; ``skipped`` for a skip) and as a
number (``label_value``: +1, -1, or 0 for a skip; in a session with named
classes the class's name and its number 1 to K, its answer key; in a multi-label session the names of its
classes joined by ``"; "`` in the session's order, ``(none)`` for none of them, and the classes as bits,
2**(key - 1) summed, 0 for none; a skip reads ``skipped``), and its provenance
(annotator, session, time, strategy, solver, the decision value the model
gave the item when it was asked, model version, timings). The decision value
is empty for items asked during the cold start (before the model had seen
both classes, its value is a placeholder such as 0.0 or -1.0, not a score). A
label changed later in the label history is exported as it stands, with who
changed it, when, and the answer as first given (``changed_by``,
``changed_at``, ``label_as_given``; empty for a label never changed).
Numbers are written as their shortest exact decimal, so they read back bit for bit:
``storage.importing.import_labelled_export`` turns an export back into a
dataset whose true labels are the exported labels.

CSV layout: the item columns, the feature columns under their own names (a
feature whose name clashes with another column, or itself starts with
``feature:``, is written as ``feature:<name>``, so that removing one prefix
always gives the name back), then the label and provenance columns. JSONL
layout: one object per line, the features nested under ``"features"``.

CSV cells are escaped against spreadsheet formula injection, as OWASP
recommends: a text cell (dataset name, item key, display text, annotator,
strategy, solver, feature name in the header) that starts with ``=``, ``+``,
``-``, ``@``, a tab or a carriage return gets a leading single quote, so that a
spreadsheet shows it as text instead of running it as a formula. A cell that
is a plain decimal number (``-1.5``, ``+2``, ``-3e-7``) is left as it is, and
so are the numbers MarginLab writes (features, labels, scores, timings). A
text whose first characters are single quotes followed by one of those
characters gets one more quote, so the escaping can always be undone:
``unescape_cell`` (used when an export is imported) removes exactly the
quote that was added. Open the file as comma-separated text (RFC 4180
quoting); JSONL is not meant for spreadsheets and is written unescaped.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
from collections.abc import Iterator, Sequence
from typing import IO, Any

import numpy as np
from sqlalchemy import select

from storage.errors import StorageError
from storage.models import (
    LABEL_PROVENANCE_COLUMNS,
    Annotator,
    Dataset,
    Item,
    Label,
    LabelCorrection,
    LabellingSession,
)
from storage.repository import EngineLike, events_query, reading, stored_features
from storage.repository.labels import bits_classes, session_classes, session_multi_label
from storage.validation import stored_dense

EXPORT_FORMATS = ("csv", "jsonl")

#: columns every export row has, in order (features come between these two groups)
ITEM_COLUMNS = ("dataset_id", "dataset_name", "session_id", "label_id", "item_index", "item_key", "display_text")
PROVENANCE_COLUMNS = ("label", "label_value", "annotator", "labelled_at", *LABEL_PROVENANCE_COLUMNS)
#: columns of a label changed later in the label history (empty when it never was)
CORRECTION_COLUMNS = ("changed_by", "changed_at", "label_as_given")
RESERVED_COLUMNS = frozenset(ITEM_COLUMNS + PROVENANCE_COLUMNS + CORRECTION_COLUMNS + ("features",))
#: names of the answers of a dataset without class names, and of a skip
DEFAULT_CLASS_NAMES = {1: "positive", -1: "negative"}
SKIP_NAME = "skipped"
#: a multi-label answer: its classes' names joined by this, in the session's order; none of them reads NONE_NAME
MULTI_LABEL_SEPARATOR = "; "
NONE_NAME = "(none)"
#: a strategy name with this in it asked during the cold start (its decision value is a placeholder); the
#: storage layer does not import core, so core.strategies.COLD_START_SUFFIX is written here once more
COLD_START_MARK = "(cold start)"
FEATURE_PREFIX = "feature:"

_CHUNK_ROWS = 5_000

#: first characters that make a spreadsheet read a cell as a formula (OWASP, "CSV Injection")
FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
_DECIMAL_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def _spreadsheet_would_run(text: str) -> bool:
    """True for a text that starts (after any single quotes) with a formula trigger and is not a plain number."""
    bare = text.lstrip("'")
    return bare[:1] in FORMULA_TRIGGERS and bare != "" and _DECIMAL_NUMBER.fullmatch(bare) is None


def escape_cell(text: str) -> str:
    """``text`` as a CSV cell a spreadsheet shows as text (a leading single quote where needed)."""
    return "'" + text if _spreadsheet_would_run(text) else text


def unescape_cell(cell: str) -> str:
    """The text ``escape_cell`` turned into ``cell``: removes the single quote it added, and only that one."""
    return cell[1:] if cell.startswith("'") and _spreadsheet_would_run(cell[1:]) else cell


def export_labels(
    engine: EngineLike,
    *,
    fmt: str = "csv",
    session_id: int | None = None,
    annotator: str | None = None,
    dataset_id: int | None = None,
    include_skips: bool = False,
    include_features: bool | None = True,
    out: str | os.PathLike[str] | IO[str] | None = None,
) -> str | None:
    """Export active labels (filtered by session, annotator and/or dataset).

    ``include_features``: True, every dataset's feature values (one column each); False, none;
    None, those of datasets stored dense only: a dataset stored sparse (documents as TF-IDF terms,
    molecules as fingerprint bits: tens of thousands of columns) is exported with its text in
    ``display_text`` and without its feature columns.

    Returns the text, or writes it to ``out`` (a path or a text stream) and
    returns None. Rows are ordered by dataset, session and labelling order.
    """
    if fmt not in EXPORT_FORMATS:
        raise StorageError(f"Export format '{fmt}' is not one of {', '.join(EXPORT_FORMATS)}.")
    query = (
        events_query()
        .add_columns(
            LabellingSession.dataset_id,
            Item.external_key,
            Item.display_text,
            Label.value.label("value_as_given"),
            Label.answer_class.label("class_as_given"),
            Label.answer_classes.label("classes_as_given"),
        )
        .join(LabellingSession, LabellingSession.id == Label.session_id)
        .where(Label.undone_at.is_(None))
        .order_by(LabellingSession.dataset_id, Label.session_id, Label.id)
    )
    if session_id is not None:
        query = query.where(Label.session_id == session_id)
    if annotator is not None:
        query = query.where(Annotator.name == annotator.strip())
    if dataset_id is not None:
        query = query.where(LabellingSession.dataset_id == dataset_id)
    if not include_skips:
        query = query.where(Label.value != 0)

    with reading(engine) as session:
        rows = session.execute(query).all()
        dataset_ids = sorted({row.dataset_id for row in rows})
        datasets: dict[int, tuple[str, list[str], np.ndarray | None]] = {}
        class_names: dict[int, dict[int, str]] = {}
        for did in dataset_ids:
            dataset = session.get(Dataset, did)
            assert dataset is not None
            take = include_features
            if take is None:
                take = stored_dense(dataset.meta)
            X = None
            if take:
                X = stored_features(session, dataset)
            datasets[did] = (dataset.name, list(dataset.feature_names) if take else [], X)
            class_names[did] = dataset_class_names(dataset.meta)
        changes = _latest_changes(session, sorted({row.session_id for row in rows}))
        session_ids = sorted({row.session_id for row in rows})
        named = (
            {
                sid: (session_classes(params), session_multi_label(params))
                for sid, params in session.execute(
                    select(LabellingSession.id, LabellingSession.solver_params).where(
                        LabellingSession.id.in_(session_ids)
                    )
                ).all()
            }
            if session_ids
            else {}
        )

    feature_names: list[str] = []
    if include_features is not False:
        for did in dataset_ids:
            for name in datasets[did][1]:
                if name not in feature_names:
                    feature_names.append(name)

    labels = _Labels(
        class_names,
        changes,
        {sid: names for sid, (names, _) in named.items() if names},
        {sid for sid, (_, multi) in named.items() if multi},
    )
    if out is None:
        buffer = io.StringIO(newline="")
        _write(buffer, fmt, rows, datasets, feature_names, labels)
        return buffer.getvalue()
    if isinstance(out, str | os.PathLike):
        with open(out, "w", encoding="utf-8", newline="") as stream:
            _write(stream, fmt, rows, datasets, feature_names, labels)
    else:
        _write(out, fmt, rows, datasets, feature_names, labels)
    return None


def dataset_class_names(meta: dict[str, Any] | None) -> dict[int, str]:
    """``{+1: positive class name, -1: negative class name, 0: "skipped"}`` of a dataset."""
    classes = (meta or {}).get("classes") or {}
    names = {
        1: str(classes.get("positive") or DEFAULT_CLASS_NAMES[1]),
        -1: str(classes.get("negative") or DEFAULT_CLASS_NAMES[-1]),
    }
    if names[1] == names[-1]:  # names that cannot tell the answers apart are no names
        names = dict(DEFAULT_CLASS_NAMES)
    return {**names, 0: SKIP_NAME}


def _latest_changes(session: Any, session_ids: list[int]) -> dict[int, tuple[str, Any]]:
    """``{label_id: (who, when)}`` of the newest change of each changed label of these sessions."""
    if not session_ids:
        return {}
    found = session.execute(
        select(LabelCorrection.label_id, Annotator.name, LabelCorrection.created_at)
        .join(Annotator, Annotator.id == LabelCorrection.annotator_id)
        .where(LabelCorrection.session_id.in_(session_ids), LabelCorrection.kind == "change")
        .order_by(LabelCorrection.id)
    ).all()
    return {label_id: (who, when) for label_id, who, when in found}


def answer_name(
    dataset_names: dict[int, str],
    classes: tuple[str, ...],
    value: int,
    answer_class: int | None,
    answer_classes: tuple[int, ...] | None,
    *,
    multi_label: bool = False,
) -> str:
    """How an answer reads, in the export and on the pages: a class's name in a session with named classes,
    the names of its classes joined by ``"; "`` in a multi-label one (``(none)``: none of them), the dataset's
    class name (``dataset_names``, as ``dataset_class_names`` gives them) in a two-class one; ``skipped`` for a skip."""
    if classes and multi_label:
        return (
            SKIP_NAME
            if answer_classes is None
            else MULTI_LABEL_SEPARATOR.join(classes[k] for k in answer_classes) or NONE_NAME
        )
    if classes:
        return SKIP_NAME if answer_class is None else classes[answer_class]
    return dataset_names[value]


class _Labels:
    """How a row's label reads: class name, number, correction, and whether its score is a placeholder.

    A session with named classes (``session_classes``): the label is the class's name and ``label_value``
    its number, 1 to K in the session's order (its answer key).  A multi-label session (``multi_label``): the
    names of its classes joined by ``"; "`` (``(none)``: none of them) and the classes' bits."""

    def __init__(
        self,
        class_names: dict[int, dict[int, str]],
        changes: dict[int, tuple[str, Any]],
        session_classes: dict[int, tuple[str, ...]] | None = None,
        multi_label: set[int] | None = None,
    ):
        self.class_names = class_names
        self.changes = changes
        self.session_classes = session_classes or {}
        self.multi_label = multi_label or set()

    def _named(self, row: Any, value: int, answer_class: int | None, answer_classes: Any = None) -> str:
        multi_label = row.session_id in self.multi_label
        return answer_name(
            self.class_names[row.dataset_id],
            self.session_classes.get(row.session_id, ()),
            value,
            answer_class,
            bits_classes(answer_classes) if multi_label else None,  # (the rows hold the stored bits)
            multi_label=multi_label,
        )

    def name(self, row: Any) -> str:
        return self._named(row, row.value, row.answer_class, row.answer_classes)

    def value(self, row: Any) -> int:
        if row.session_id in self.multi_label:
            return int(row.answer_classes or 0)
        if row.session_id in self.session_classes:
            return 0 if row.answer_class is None else int(row.answer_class) + 1
        return int(row.value)

    def decision_value(self, row: Any) -> float | None:
        return None if COLD_START_MARK in row.strategy else row.decision_value

    def correction(self, row: Any) -> tuple[str | None, str | None, str | None]:
        """(changed by, changed at, label as given) or three Nones."""
        change = self.changes.get(row.id)
        if change is None:
            return None, None, None
        return (
            change[0],
            change[1].isoformat(),
            self._named(row, row.value_as_given, row.class_as_given, row.classes_as_given),
        )


def _write(
    stream: IO[str],
    fmt: str,
    rows: Sequence[Any],
    datasets: dict[int, tuple[str, list[str], np.ndarray | None]],
    feature_names: list[str],
    labels: _Labels,
) -> None:
    if fmt == "csv":
        _write_csv(stream, rows, datasets, feature_names, labels)
    else:
        _write_jsonl(stream, rows, datasets, labels, include_features=bool(feature_names))


def _dataset_runs(chunk: Sequence[Any]) -> Iterator[tuple[int, Sequence[Any]]]:
    """(dataset id, rows) for each run of consecutive rows from one dataset."""
    start = 0
    while start < len(chunk):
        dataset_id = chunk[start].dataset_id
        stop = start
        while stop < len(chunk) and chunk[stop].dataset_id == dataset_id:
            stop += 1
        yield dataset_id, chunk[start:stop]
        start = stop


def _feature_values(run: Sequence[Any], X: np.ndarray) -> np.ndarray:
    """The run's feature rows as decimal texts (numpy's shortest exact repr), in one vectorised step."""
    positions = np.fromiter((row.position for row in run), dtype=np.intp, count=len(run))
    rows = X[positions]
    return (rows.toarray() if hasattr(rows, "toarray") else rows).astype(str)  # sparse: only these rows made dense


def _feature_texts(chunk: Sequence[Any], datasets: Any, feature_names: list[str]) -> list[list[str]]:
    """Each row's values for ``feature_names`` (the union over datasets), "" where absent."""
    texts: list[list[str]] = []
    for dataset_id, run in _dataset_runs(chunk):
        _name, names, X = datasets[dataset_id]
        if X is None:  # a dataset whose features are left out (see include_features)
            texts.extend([[""] * len(feature_names) for _ in run])
            continue
        values = _feature_values(run, X)
        if names != feature_names:
            full = np.full((len(run), len(feature_names)), "", dtype=values.dtype)
            full[:, [feature_names.index(n) for n in names]] = values
            values = full
        texts.extend(values.tolist())
    return texts


def _needs_prefix(feature_name: str) -> bool:
    return feature_name in RESERVED_COLUMNS or feature_name.startswith(FEATURE_PREFIX)


def _write_csv(stream: IO[str], rows: Sequence[Any], datasets: Any, feature_names: list[str], labels: _Labels) -> None:
    writer = csv.writer(stream, lineterminator="\r\n")  # RFC 4180; a lone CR in a cell is then quoted too
    feature_headers = [escape_cell(FEATURE_PREFIX + n if _needs_prefix(n) else n) for n in feature_names]
    writer.writerow([*ITEM_COLUMNS, *feature_headers, *PROVENANCE_COLUMNS, *CORRECTION_COLUMNS])
    escaped: dict[str, str] = {}

    def name(value: str) -> str:  # escaped, memoised (names repeat on every row)
        found = escaped.get(value)
        if found is None:
            found = escaped[value] = escape_cell(value)
        return found

    for start in range(0, len(rows), _CHUNK_ROWS):
        chunk = rows[start : start + _CHUNK_ROWS]
        features = _feature_texts(chunk, datasets, feature_names) if feature_names else [[]] * len(chunk)
        writer.writerows(
            [
                row.dataset_id,
                name(datasets[row.dataset_id][0]),
                row.session_id,
                row.id,
                row.position,
                _text(row.external_key),
                _text(row.display_text),
                *row_features,
                name(labels.name(row)),
                labels.value(row),
                name(row.name),
                row.created_at.isoformat(),
                name(row.strategy),
                name(row.solver),
                _number(labels.decision_value(row)),
                row.model_version,
                _number(row.update_ms),
                _number(row.query_ms),
                *(_text(cell) for cell in labels.correction(row)),
            ]
            for row, row_features in zip(chunk, features, strict=True)
        )


def _write_jsonl(stream: IO[str], rows: Sequence[Any], datasets: Any, labels: _Labels, include_features: bool) -> None:
    encoded: dict[str | None, str] = {None: "null"}

    def text(value: str | None) -> str:  # JSON string literal, memoised (names repeat on every row)
        found = encoded.get(value)
        if found is None:
            found = encoded[value] = json.dumps(value, ensure_ascii=False)
        return found

    for start in range(0, len(rows), _CHUNK_ROWS):
        chunk = rows[start : start + _CHUNK_ROWS]
        features = [""] * len(chunk)
        if include_features:
            features = []
            for dataset_id, run in _dataset_runs(chunk):
                _name, names, X = datasets[dataset_id]
                if X is None:  # a dataset whose features are left out (see include_features)
                    features.extend([""] * len(run))
                    continue
                keys = [text(name) + ": " for name in names]
                features.extend(
                    ', "features": {' + ", ".join(k + v for k, v in zip(keys, row_values, strict=True)) + "}"
                    for row_values in _feature_values(run, X).tolist()
                )
        lines = [
            f'{{"dataset_id": {row.dataset_id}, "dataset_name": {text(datasets[row.dataset_id][0])}, '
            f'"session_id": {row.session_id}, "label_id": {row.id}, "item_index": {row.position}, '
            f'"item_key": {text(row.external_key)}, "display_text": {text(row.display_text)}{row_features}, '
            f'"label": {text(labels.name(row))}, "label_value": {labels.value(row)}, "annotator": {text(row.name)}, '
            f'"labelled_at": "{row.created_at.isoformat()}", '
            f'"strategy": {text(row.strategy)}, "solver": {text(row.solver)}, '
            f'"decision_value": {_json_number(labels.decision_value(row))}, "model_version": {row.model_version}, '
            f'"update_ms": {_json_number(row.update_ms)}, "query_ms": {_json_number(row.query_ms)}, '
            + ", ".join(
                f'"{column}": {text(cell)}'
                for column, cell in zip(CORRECTION_COLUMNS, labels.correction(row), strict=True)
            )
            + "}\n"
            for row, row_features in zip(chunk, features, strict=True)
        ]
        stream.write("".join(lines))


def _text(value: str | None) -> str:
    return "" if value is None else escape_cell(value)


def _number(value: float | None) -> str:
    return "" if value is None else repr(float(value))


def _json_number(value: float | None) -> str:
    return "null" if value is None or not math.isfinite(value) else repr(float(value))
