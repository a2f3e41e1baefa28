"""Snapshots of projects' shared models (schema version 5).

A process opening a team project learned every answer of it again; ``project_snapshots`` holds
the shared model as a process last stored it (the loop's state, the labels it learned, the
project's revision), so that the next process starts from there.  Only a new table: nothing of
schema version 4 changes, and every row of it is kept.
Written out here, not taken from the models, so that it stays what it was.

Revision ID: 0005_project_snapshots
Revises: 0004_feature_chunks
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005_project_snapshots"
down_revision = "0004_feature_chunks"
branch_labels = None
depends_on = None

#: the ``schema_info.version`` this revision brings the database to
schema_version = 5


def upgrade() -> None:
    op.create_table(
        "project_snapshots",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("edits", sa.Integer(), nullable=False),
        sa.Column("arrays", sa.LargeBinary(), nullable=False),
        sa.Column("meta", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["project_id"], ["projects.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_project_snapshot_revision", "project_snapshots", ["project_id", "revision"], unique=False)
    op.execute(sa.text("UPDATE schema_info SET version = :version").bindparams(version=schema_version))


def downgrade() -> None:
    op.drop_index("ix_project_snapshot_revision", table_name="project_snapshots")
    op.drop_table("project_snapshots")
    op.execute(sa.text("UPDATE schema_info SET version = 4"))
