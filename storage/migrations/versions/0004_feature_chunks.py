"""Feature matrices stored in pieces of about 1 MB (schema version 4).

Up to version 3 each dataset's feature matrix was one blob in ``datasets.features``. A database
reads a column stored after a blob of hundreds of MB (``display_kind``, ``meta``) or a byte range
of it (one item's row, to show it) by walking the whole blob: about 0.15 s per read at
1,000,000 x 20 on SQLite. ``dataset_chunks`` holds the same bytes in pieces (a dense matrix cut
at row boundaries); every dataset's matrix is moved there, one dataset at a time, and
``datasets.features`` is left empty. Nothing else changes.
Written out here, not taken from the models, so that it stays what it was.

Revision ID: 0004_feature_chunks
Revises: 0003_teams
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004_feature_chunks"
down_revision = "0003_teams"
branch_labels = None
depends_on = None

#: the ``schema_info.version`` this revision brings the database to
schema_version = 4

#: bytes per piece (a dense matrix: the most whole rows that fit, at least one)
CHUNK_BYTES = 1 << 20


def pieces(blob: bytes, n_features: int, dense: bool):
    """(start, bytes) of the pieces of one stored matrix."""
    step = max(1, CHUNK_BYTES // (8 * n_features)) * 8 * n_features if dense else CHUNK_BYTES
    view = memoryview(blob)
    for start in range(0, len(view), step):
        yield start, bytes(view[start : start + step])


def upgrade() -> None:
    op.create_table(
        "dataset_chunks",
        sa.Column("dataset_id", sa.Integer(), nullable=False),
        sa.Column("start", sa.BigInteger(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(["dataset_id"], ["datasets.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("dataset_id", "start"),
    )
    bind = op.get_bind()
    datasets = sa.table(
        "datasets",
        sa.column("id", sa.Integer()),
        sa.column("n_features", sa.Integer()),
        sa.column("features", sa.LargeBinary()),
        sa.column("meta", sa.JSON()),
    )
    chunks = sa.table(
        "dataset_chunks",
        sa.column("dataset_id", sa.Integer()),
        sa.column("start", sa.BigInteger()),
        sa.column("data", sa.LargeBinary()),
    )
    ids = [row[0] for row in bind.execute(sa.select(datasets.c.id).order_by(datasets.c.id))]
    for dataset_id in ids:  # one matrix in memory at a time
        n_features, blob, meta = bind.execute(
            sa.select(datasets.c.n_features, datasets.c.features, datasets.c.meta).where(datasets.c.id == dataset_id)
        ).one()
        dense = (meta or {}).get("feature_format", "dense") == "dense"
        batch = []
        for start, data in pieces(blob, n_features, dense):
            batch.append({"dataset_id": dataset_id, "start": start, "data": data})
            if len(batch) == 16:
                bind.execute(chunks.insert(), batch)
                batch = []
        if batch:
            bind.execute(chunks.insert(), batch)
        del blob
        bind.execute(datasets.update().where(datasets.c.id == dataset_id).values(features=b""))
    op.execute(sa.text("UPDATE schema_info SET version = :version").bindparams(version=schema_version))


def downgrade() -> None:
    bind = op.get_bind()
    datasets = sa.table("datasets", sa.column("id", sa.Integer()), sa.column("features", sa.LargeBinary()))
    chunks = sa.table(
        "dataset_chunks",
        sa.column("dataset_id", sa.Integer()),
        sa.column("start", sa.BigInteger()),
        sa.column("data", sa.LargeBinary()),
    )
    ids = [row[0] for row in bind.execute(sa.select(datasets.c.id).order_by(datasets.c.id))]
    for dataset_id in ids:
        parts = bind.execute(
            sa.select(chunks.c.data).where(chunks.c.dataset_id == dataset_id).order_by(chunks.c.start)
        ).scalars()
        bind.execute(datasets.update().where(datasets.c.id == dataset_id).values(features=b"".join(parts)))
    op.drop_table("dataset_chunks")
    op.execute(sa.text("UPDATE schema_info SET version = 3"))
