"""Strategy comparisons: their settings, tidy rows and summary, per dataset."""

from __future__ import annotations

import datetime as dt
import io
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy import select

from storage.errors import (
    NotFoundError,
    StorageError,
)
from storage.models import (
    ComparisonResult,
    Dataset,
)
from storage.repository.common import EngineLike, _jsonable, reading, writing

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class ComparisonInfo:
    id: int
    dataset_id: int | None
    config: dict[str, Any]
    summary: dict[str, Any]
    created_at: dt.datetime


@dataclass(frozen=True)
class Comparison:
    id: int
    dataset_id: int | None
    config: dict[str, Any]
    rows: pd.DataFrame = field(compare=False)
    summary: dict[str, Any]
    created_at: dt.datetime


def save_comparison(
    engine: EngineLike,
    dataset_id: int | None,
    config: dict[str, Any],
    rows: pd.DataFrame,
    summary: dict[str, Any],
) -> int:
    """Store a strategy comparison (tidy rows + summary); return its id."""
    import pandas as pd  # only comparisons need pandas; labelling processes start faster without it

    if not isinstance(rows, pd.DataFrame):
        raise StorageError("rows must be a pandas DataFrame.")
    config_json = _jsonable(config or {}, "config")
    summary_json = _jsonable(summary or {}, "summary")
    rows_csv = rows.to_csv(index=False)
    with writing(engine) as session:
        if dataset_id is not None and session.get(Dataset, dataset_id) is None:
            raise NotFoundError(f"Dataset {dataset_id} does not exist.")
        result = ComparisonResult(dataset_id=dataset_id, config=config_json, rows_csv=rows_csv, summary=summary_json)
        session.add(result)
        session.flush()
        return result.id


def list_comparisons(engine: EngineLike, dataset_id: int | None = None) -> list[ComparisonInfo]:
    """Stored comparisons, newest first."""
    query = select(
        ComparisonResult.id,
        ComparisonResult.dataset_id,
        ComparisonResult.config,
        ComparisonResult.summary,
        ComparisonResult.created_at,
    ).order_by(ComparisonResult.id.desc())
    if dataset_id is not None:
        query = query.where(ComparisonResult.dataset_id == dataset_id)
    with reading(engine) as session:
        rows = session.execute(query).all()
    return [
        ComparisonInfo(
            id=row.id,
            dataset_id=row.dataset_id,
            config=dict(row.config or {}),
            summary=dict(row.summary or {}),
            created_at=row.created_at,
        )
        for row in rows
    ]


def load_comparison(engine: EngineLike, comparison_id: int) -> Comparison:
    import pandas as pd

    with reading(engine) as session:
        result = session.get(ComparisonResult, comparison_id)
        if result is None:
            raise NotFoundError(f"Comparison {comparison_id} does not exist.")
        # only an empty cell is missing (to_csv writes a missing value so): a class named "NA" or "None" is a name
        rows = pd.read_csv(io.StringIO(result.rows_csv), keep_default_na=False, na_values=[""])
        return Comparison(
            id=result.id,
            dataset_id=result.dataset_id,
            config=dict(result.config or {}),
            rows=rows,
            summary=dict(result.summary or {}),
            created_at=result.created_at,
        )
